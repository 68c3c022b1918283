//! Test harness: temp stores deleted on drop, a command builder for the
//! binary, and deterministic generators (no network, no corpus files).
#![allow(dead_code)]

pub mod sites;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A temporary directory; the store lives at `dir/db`.
pub struct TempDb {
    pub dir: tempfile::TempDir,
}

impl TempDb {
    pub fn new() -> TempDb {
        TempDb {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("db")
    }
    pub fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }
}

/// Runs the simdb binary.
pub fn simdb(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    simdb_stdin(args, b"")
}

pub fn simdb_stdin(args: &[&dyn AsRef<std::ffi::OsStr>], stdin: &[u8]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_simdb"));
    for a in args {
        c.arg(a.as_ref());
    }
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn simdb");
    {
        use std::io::Write;
        let mut sin = child.stdin.take().unwrap();
        sin.write_all(stdin).unwrap();
    }
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// jieba's own dictionary words (the vendored IDF table's vocabulary).
pub fn vocab() -> Vec<&'static str> {
    simdb_vocab()
}

fn simdb_vocab() -> Vec<&'static str> {
    // Words of 2–4 CJK characters make plausible Chinese.
    simdb::fingerprint::vocabulary()
        .filter(|w| {
            let n = w.chars().count();
            (2..=4).contains(&n) && w.chars().all(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
        })
        .collect()
}

/// A Chinese article of `words` dictionary words with punctuation.
pub fn article(rng: &mut ChaCha8Rng, vocab: &[&str], words: usize) -> Vec<String> {
    (0..words)
        .map(|i| {
            let w = vocab.choose(rng).unwrap().to_string();
            if i % 12 == 11 {
                format!("{w}。")
            } else if i % 5 == 4 {
                format!("{w}，")
            } else {
                w
            }
        })
        .collect()
}

/// Replaces `n` random words of `words` with other dictionary words.
pub fn edit(rng: &mut ChaCha8Rng, vocab: &[&str], words: &[String], n: usize) -> Vec<String> {
    let mut out = words.to_vec();
    for _ in 0..n {
        let i = rng.random_range(0..out.len());
        out[i] = vocab.choose(rng).unwrap().to_string();
    }
    out
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// Opens a store's RocksDB directly, every family, to damage it on purpose.
pub fn raw_open(p: &Path) -> rocksdb::DB {
    let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), p).unwrap();
    // The block families fold posting operands with simdb's merge.
    let descs = cfs.into_iter().map(|name| {
        let mut o = rocksdb::Options::default();
        if name.starts_with("block") || name.starts_with("band") {
            o.set_merge_operator(
                "simdb-posting-v2",
                |_: &[u8], existing: Option<&[u8]>, ops: &rocksdb::MergeOperands| {
                    Some(simdb::index::merge_posting(existing, ops))
                },
                |_: &[u8], _: Option<&[u8]>, ops: &rocksdb::MergeOperands| {
                    Some(simdb::index::concat_operands(ops))
                },
            );
        }
        rocksdb::ColumnFamilyDescriptor::new(name, o)
    });
    rocksdb::DB::open_cf_descriptors(&rocksdb::Options::default(), p, descs).unwrap()
}

/// Every cluster of two or more of `db`: its members' ids (sorted) and its
/// representative, in order.
pub fn cluster_shapes(db: &simdb::Db) -> Vec<(Vec<String>, String)> {
    let mut v = Vec::new();
    db.clusters()
        .each(2, |c| {
            let mut ids: Vec<String> = c.members.into_iter().map(|m| m.id).collect();
            ids.sort();
            v.push((ids, c.representative));
            Ok(())
        })
        .unwrap();
    v.sort();
    v
}

/// The `.parquet` files of directory `dir` (an export's parts), in name
/// order.
pub fn parquet_parts(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    v.sort();
    v
}

/// Copies the files of directory `from` (a closed store) into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}
