//! Ingest of a corpus made of copies, as a dedup store receives it: N exact
//! copies of one document, N near copies (each with 1-3% of its characters
//! replaced, inserted or deleted), N template pages (one boilerplate of
//! ~60% of the text around a body of their own) and, as the baseline, N
//! distinct documents of the same length. Each run is `simdb ingest` into
//! a fresh store, in a child process: the wall time, documents per second
//! and the child's own peak RSS (`wait4`), then a check of what the store
//! holds (documents, clusters, and the largest cluster).
//!
//! ```text
//! cargo build --release --bin simdb --example copies
//! target/release/examples/copies [--n 1000,10000,100000] [--kinds distinct,copies,near,template]
//!     [--simdb target/release/simdb] [--dir DIR] [--corpus FILE.jsonl] [--seed 1] [--keep]
//!     [--keep-policy first|priority|longest|newest]
//! ```
//!
//! Texts are generated from jieba's dictionary words (no files needed);
//! with `--corpus`, the copied document is the longest of the corpus's
//! first 200 and the distinct documents are the corpus's own (at most as
//! many as it has). The figure that matters is the last column: each
//! kind's rate over the distinct rate at the same N.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;
use common::Words;

struct Args {
    ns: Vec<usize>,
    kinds: Vec<String>,
    simdb: PathBuf,
    dir: Option<PathBuf>,
    corpus: Option<PathBuf>,
    seed: u64,
    /// The stores' keep policy (`simdb init --keep`).
    keep_policy: String,
    /// Keep the inputs (in --dir) for another look.
    keep: bool,
}

fn args() -> Args {
    let mut a = Args {
        ns: vec![1_000, 10_000, 100_000],
        kinds: ["distinct", "copies", "near", "template"]
            .map(String::from)
            .to_vec(),
        simdb: PathBuf::from("target/release/simdb"),
        dir: None,
        corpus: None,
        seed: 1,
        keep: false,
        keep_policy: "first".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--n" => {
                a.ns = v()
                    .split(',')
                    .map(|n| n.replace('_', "").parse().expect("--n"))
                    .collect()
            }
            "--kinds" => a.kinds = v().split(',').map(String::from).collect(),
            "--simdb" => a.simdb = PathBuf::from(v()),
            "--dir" => a.dir = Some(PathBuf::from(v())),
            "--corpus" => a.corpus = Some(PathBuf::from(v())),
            "--seed" => a.seed = v().parse().expect("--seed"),
            "--keep" => a.keep = true,
            "--keep-policy" => a.keep_policy = v(),
            other => panic!("unknown argument {other}"),
        }
    }
    for k in &a.kinds {
        assert!(
            ["distinct", "copies", "near", "template"].contains(&k.as_str()),
            "unknown kind {k}"
        );
    }
    a
}

fn read_corpus(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(String::from))
        .collect()
}

/// Writes the input of `kind` with `n` documents; returns its path and
/// how many documents it holds.
fn write_input(a: &Args, dir: &Path, kind: &str, n: usize, words: &Words) -> (PathBuf, usize) {
    let path = dir.join(format!("{kind}-{n}.jsonl"));
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed ^ 0x00c0_9e55);
    let corpus = a.corpus.as_deref().map(read_corpus);
    let base = match &corpus {
        Some(c) => c
            .iter()
            .take(200)
            .max_by_key(|t| t.chars().count())
            .expect("a non-empty corpus")
            .clone(),
        None => words.text(&mut rng, 400),
    };
    let pool: Vec<char> = base.chars().collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("input file"));
    let mut written = 0;
    for i in 0..n {
        let text = match kind {
            "copies" => base.clone(),
            "near" => {
                let rate: f64 = rng.random_range(0.01..=0.03);
                let n = ((pool.len() as f64 * rate).round() as usize).max(1);
                common::edit_chars(&base, n, &pool, &mut rng)
            }
            "template" => {
                // Header and footer of the boilerplate around a body of
                // 40% of the words, its own.
                let (head, tail) = base.split_at(
                    base.char_indices()
                        .nth(base.chars().count() * 3 / 10)
                        .map_or(base.len(), |(at, _)| at),
                );
                let tail_at = tail
                    .char_indices()
                    .nth(tail.chars().count() * 3 / 7)
                    .map_or(tail.len(), |(at, _)| at);
                format!("{head}{}{}", words.text(&mut rng, 160), &tail[tail_at..])
            }
            _ => match &corpus {
                Some(c) if i < c.len() => c[i].clone(),
                Some(_) => break,
                None => words.text(&mut rng, 400),
            },
        };
        writeln!(
            out,
            "{}",
            serde_json::json!({"id": format!("{kind}-{i:07}"), "text": text})
        )
        .expect("write input");
        written += 1;
    }
    out.flush().expect("write input");
    (path, written)
}

/// Runs `bin args` to completion; returns its wall seconds and peak RSS
/// in MiB (its own, from `wait4`).
#[allow(
    clippy::zombie_processes,
    reason = "the child is waited for with wait4, which also gives its rusage"
)]
fn run(bin: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> (f64, f64) {
    let start = Instant::now();
    let child = Command::new(bin)
        .args(args.iter().map(|a| a.as_ref()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn simdb");
    let pid = child.id() as libc::pid_t;
    // The child's stderr is read to the end first (it could fill the pipe).
    let mut err = String::new();
    if let Some(mut e) = child.stderr {
        std::io::Read::read_to_string(&mut e, &mut err).expect("stderr");
    }
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it in for the
    // child spawned above, which nothing else waits for.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut ru), pid, "wait4");
        ru
    };
    let secs = start.elapsed().as_secs_f64();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "simdb failed: {err}"
    );
    (secs, ru.ru_maxrss as f64 / 1024.0)
}

fn main() {
    let a = args();
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = a.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("dir");
    let words = Words::new();
    println!(
        "{:<9} {:>7} {:>8} {:>9} {:>9} {:>9} {:>13} {:>8}",
        "kind", "N", "seconds", "docs/s", "peak MiB", "clusters", "largest", "rate/dis"
    );
    for &n in &a.ns {
        let mut distinct_rate: Option<f64> = None;
        for kind in &a.kinds {
            let (input, docs) = write_input(&a, &dir, kind, n, &words);
            let store = dir.join(format!("store-{kind}-{n}"));
            let _ = std::fs::remove_dir_all(&store);
            run(&a.simdb, &[&"init", &store, &"--keep", &a.keep_policy]);
            let (secs, rss) = run(&a.simdb, &[&"ingest", &store, &input]);
            let rate = docs as f64 / secs;
            if kind == "distinct" {
                distinct_rate = Some(rate);
            }
            // What the store holds: every document, and its clusters.
            let out = Command::new(&a.simdb)
                .args(
                    [&"stats" as &dyn AsRef<std::ffi::OsStr>, &store, &"--json"]
                        .iter()
                        .map(|x| x.as_ref()),
                )
                .output()
                .expect("stats");
            let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
            assert_eq!(stats["documents"].as_u64(), Some(docs as u64), "{kind}");
            let out = Command::new(&a.simdb)
                .args(
                    [
                        &"clusters" as &dyn AsRef<std::ffi::OsStr>,
                        &store,
                        &"--json",
                    ]
                    .iter()
                    .map(|x| x.as_ref()),
                )
                .output()
                .expect("clusters");
            let largest = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|c| c["size"].as_u64())
                .max()
                .unwrap_or(1);
            println!(
                "{:<9} {:>7} {:>8.2} {:>9.0} {:>9.1} {:>9} {:>13} {:>8}",
                kind,
                docs,
                secs,
                rate,
                rss,
                stats["clusters"],
                largest,
                distinct_rate.map_or("-".into(), |d| format!("{:.2}", rate / d)),
            );
            let _ = std::fs::remove_dir_all(&store);
            if !a.keep {
                let _ = std::fs::remove_file(&input);
            }
        }
    }
}
