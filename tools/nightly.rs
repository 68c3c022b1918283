//! Nightly ingest, as a dedup store receives it: real text from
//! `../shared/corpora` ingested with `simdb ingest` into an empty store and
//! into a store that already holds N documents (imported in the sketched
//! binary form: uniform random fingerprints and sketches, so the store has
//! its block and band families full), in the same run. Each ingest is a
//! child process; the figures are its wall time and documents per second,
//! and the ratios that matter:
//!
//! - the big store's rate over the empty store's (issue 36: >= 0.7 at 5M,
//!   >= 0.5 at 50M);
//! - on the big store, all cores (`--threads 2`, the default) over one core
//!   (`taskset -c 0 … --threads 1`): >= 1.7 on two cores.
//!
//! With `--baseline PATH` (another build's `simdb`, e.g. the commit before
//! the chunk prefetch) the big-store ingest is also run with it, on its own
//! copy of the same store, and its duplicate report compared with this
//! build's: the answers must be identical.
//!
//! ```text
//! cargo build --release --bin simdb --example nightly
//! target/release/examples/nightly [--n 5000000] [--docs 20000]
//!     [--corpus ../shared/corpora/zh_news_xwlb.jsonl,...] [--simdb target/release/simdb]
//!     [--baseline OTHER/simdb] [--dir DIR] [--reuse] [--keep] [--seed 1] [--cores 0,1]
//!     [--batch-size N]
//! ```
//!
//! `--reuse` keeps the imported big store of an earlier run in `--dir`
//! (`big.db`, never written to: each ingest works on a copy whose SST files
//! are hard links). Before the first ingest the big store's files are read
//! once into the OS cache, so no run is timed reading them from disk. The documents are taken round robin from the corpora
//! (default: xwlb, app_desc, bbc, 20newsgroups), `--docs` in all.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use simdb::import::{write_binary_sketched_record, BINARY_SKETCHED_MAGIC};
use simdb::{Fingerprint, Sketch};

mod common;

struct Args {
    n: usize,
    docs: usize,
    corpora: Vec<PathBuf>,
    simdb: PathBuf,
    baseline: Option<PathBuf>,
    dir: Option<PathBuf>,
    reuse: bool,
    keep: bool,
    seed: u64,
    cores: String,
    /// `ingest --batch-size` (none: ingest's default).
    batch_size: Option<usize>,
}

fn args() -> Args {
    let shared = Path::new("../shared/corpora");
    let mut a = Args {
        n: 5_000_000,
        docs: 20_000,
        corpora: [
            "zh_news_xwlb.jsonl",
            "zh_app_desc.jsonl",
            "en_bbc_news.jsonl",
            "en_20newsgroups.jsonl",
        ]
        .iter()
        .map(|f| shared.join(f))
        .collect(),
        simdb: PathBuf::from("target/release/simdb"),
        baseline: None,
        dir: None,
        reuse: false,
        keep: false,
        seed: 1,
        cores: "0,1".into(),
        batch_size: None,
    };
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        a.simdb = Path::new(&dir).join("release/simdb");
    }
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--n" => a.n = v().replace('_', "").parse().expect("--n"),
            "--docs" => a.docs = v().replace('_', "").parse().expect("--docs"),
            "--corpus" => a.corpora = v().split(',').map(PathBuf::from).collect(),
            "--simdb" => a.simdb = PathBuf::from(v()),
            "--baseline" => a.baseline = Some(PathBuf::from(v())),
            "--dir" => a.dir = Some(PathBuf::from(v())),
            "--seed" => a.seed = v().parse().expect("--seed"),
            "--cores" => a.cores = v(),
            "--batch-size" => a.batch_size = Some(v().parse().expect("--batch-size")),
            "--reuse" => a.reuse = true,
            "--keep" => a.keep = true,
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// One ingest: its wall time, and the summary it printed.
struct Run {
    seconds: f64,
    summary: serde_json::Value,
    report: PathBuf,
}

impl Run {
    fn rate(&self, docs: usize) -> f64 {
        docs as f64 / self.seconds
    }
}

/// `simdb ingest` of `input` into `store`, pinned to `cores` with
/// `threads` fingerprinting threads.
fn ingest(
    a: &Args,
    bin: &Path,
    store: &Path,
    input: &Path,
    threads: usize,
    cores: &str,
    name: &str,
) -> Run {
    let report = store.with_file_name(format!("{name}.report.jsonl"));
    let start = Instant::now();
    let mut cmd = Command::new("taskset");
    let out = cmd
        .arg("-c")
        .arg(cores)
        .arg(bin)
        .arg("ingest")
        .arg(store)
        .arg(input)
        .arg("--json")
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--report")
        .arg(&report)
        .args(
            a.batch_size
                .map(|b| vec!["--batch-size".to_string(), b.to_string()])
                .unwrap_or_default(),
        )
        .output()
        .expect("run taskset simdb ingest");
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "simdb ingest failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    Run {
        seconds,
        summary,
        report,
    }
}

/// `simdb VERB store [input]` into a fresh `store` (removed first), which
/// must succeed.
fn make_store(bin: &Path, verb: &str, store: &Path, input: Option<&Path>) {
    let _ = std::fs::remove_dir_all(store);
    let out = Command::new(bin)
        .arg(verb)
        .arg(store)
        .args(input)
        .output()
        .unwrap_or_else(|e| panic!("run simdb {verb}: {e}"));
    assert!(
        out.status.success(),
        "simdb {verb} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A copy of the store `from` at `to` that ingest may write: its SST files
/// and frozen index (immutable) as hard links, every other file copied.
fn copy_store(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("create the copy");
    for e in std::fs::read_dir(from).expect("read the big store") {
        let e = e.expect("entry");
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.extension().is_some_and(|x| x == "sst" || x == "idx") {
            std::fs::hard_link(&src, &dst).expect("link an SST file");
        } else {
            std::fs::copy(&src, &dst).expect("copy a file");
        }
    }
}

/// Reads every file of the big store once, so that the first ingest timed
/// does not read it from disk while the later ones find it in the OS cache
/// (right after an import or other large work, the first run was 6x slower
/// at 50M than the same run warm; every copy's SST files are hard links to
/// these, so they share the cached pages).
fn warm(store: &Path) {
    let t = Instant::now();
    let mut bytes = 0u64;
    for e in std::fs::read_dir(store).expect("read the big store") {
        let path = e.expect("entry").path();
        let mut f = std::fs::File::open(&path).expect("open a store file");
        bytes += std::io::copy(&mut f, &mut std::io::sink()).expect("read a store file");
    }
    println!(
        "big store: {:.0} MB read into the OS cache in {:.1}s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
}

/// The big store: `n` documents with uniform random fingerprints and
/// sketches, imported with `simdb import` (sketched binary form).
fn build_big(a: &Args, dir: &Path, store: &Path) {
    let input = dir.join("big.bin");
    let t = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&input).expect("big.bin"));
        w.write_all(BINARY_SKETCHED_MAGIC).unwrap();
        for i in 0..a.n {
            let mut s = [0u8; 32];
            rng.fill(&mut s[..]);
            write_binary_sketched_record(
                &mut w,
                &format!("b{i:09}"),
                Fingerprint(rng.random()),
                &Sketch(s),
            )
            .unwrap();
        }
        w.flush().unwrap();
    }
    let generated = t.elapsed().as_secs_f64();
    let t = Instant::now();
    make_store(&a.simdb, "import", store, Some(&input));
    println!(
        "big store: {} documents generated in {generated:.1}s, imported in {:.1}s",
        a.n,
        t.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_file(&input);
}

/// The input: `docs` documents round robin from the corpora (ids prefixed
/// by the corpus, so they never meet the big store's).
fn write_input(a: &Args, path: &Path) -> usize {
    let corpora: Vec<Vec<(String, String)>> = a
        .corpora
        .iter()
        .map(|p| common::load_corpus(p, 0))
        .collect();
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).expect("input"));
    let mut n = 0;
    let mut i = 0;
    while n < a.docs && corpora.iter().any(|c| i < c.len()) {
        for (c, docs) in corpora.iter().enumerate() {
            if let Some((id, text)) = docs.get(i) {
                if n < a.docs {
                    let line = serde_json::json!({"id": format!("c{c}-{id}"), "text": text});
                    writeln!(w, "{line}").unwrap();
                    n += 1;
                }
            }
        }
        i += 1;
    }
    w.flush().unwrap();
    n
}

/// The report's lines, sorted (the order of a run is the input's).
fn report_lines(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

fn main() {
    let a = args();
    let tmp;
    let dir = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d).expect("--dir");
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir().expect("temp dir");
            tmp.path().to_path_buf()
        }
    };
    let input = dir.join("night.jsonl");
    let docs = write_input(&a, &input);
    println!(
        "nightly: {docs} documents from {} corpora, big store of {} documents, simdb {}",
        a.corpora.len(),
        a.n,
        a.simdb.display()
    );
    let big = dir.join("big.db");
    if a.reuse && big.exists() {
        println!("big store: reusing {}", big.display());
    } else {
        build_big(&a, &dir, &big);
    }
    warm(&big);
    let one_core = a.cores.split(',').next().unwrap_or("0").to_string();
    let cores = a.cores.split(',').count();

    let empty_db = dir.join("empty.db");
    make_store(&a.simdb, "init", &empty_db, None);
    let empty = ingest(&a, &a.simdb, &empty_db, &input, cores, &a.cores, "empty");
    let work = dir.join("work.db");
    copy_store(&big, &work);
    let full = ingest(&a, &a.simdb, &work, &input, cores, &a.cores, "big");
    copy_store(&big, &work);
    let single = ingest(&a, &a.simdb, &work, &input, 1, &one_core, "big-one-core");
    let rows = [
        ("empty store", &empty, cores),
        ("big store", &full, cores),
        ("big store, one core", &single, 1),
    ];
    println!(
        "{:<24} {:>8} {:>10} {:>11} {:>10}",
        "ingest", "threads", "seconds", "docs/s", "near dups"
    );
    for (name, r, threads) in rows {
        println!(
            "{name:<24} {threads:>8} {:>10.2} {:>11.0} {:>10}",
            r.seconds,
            r.rate(docs),
            r.summary["near_duplicates"]
        );
    }
    println!(
        "big/empty: {:.2}   {cores} cores/1 core on the big store: {:.2}",
        full.rate(docs) / empty.rate(docs),
        full.rate(docs) / single.rate(docs)
    );
    let same = report_lines(&full.report) == report_lines(&single.report);
    println!("duplicate reports of the big-store runs identical: {same}");
    if let Some(base) = &a.baseline {
        let old_empty_db = dir.join("empty-baseline.db");
        make_store(base, "init", &old_empty_db, None);
        let old_empty = ingest(
            &a,
            base,
            &old_empty_db,
            &input,
            cores,
            &a.cores,
            "empty-baseline",
        );
        copy_store(&big, &work);
        let old = ingest(&a, base, &work, &input, cores, &a.cores, "big-baseline");
        println!(
            "baseline {}: empty {:.0} docs/s, big {:.0} docs/s (big/empty {:.2}); this build over baseline: empty {:.2}, big {:.2}",
            base.display(),
            old_empty.rate(docs),
            old.rate(docs),
            old.rate(docs) / old_empty.rate(docs),
            empty.rate(docs) / old_empty.rate(docs),
            full.rate(docs) / old.rate(docs),
        );
        let same_old = report_lines(&old.report) == report_lines(&full.report)
            && report_lines(&old_empty.report) == report_lines(&empty.report);
        println!("duplicate reports identical to the baseline's: {same_old}");
    }
    let _ = std::fs::remove_dir_all(&work);
    if !a.keep {
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_dir_all(&empty_db);
        if a.dir.is_none() || !a.reuse {
            let _ = std::fs::remove_dir_all(&big);
        }
    }
}
