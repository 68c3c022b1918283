//! Whole-process wall time of the commands a user runs from a shell, on a
//! store just ingested: median of 10 runs each (issue 11's figures).
//!
//! ```text
//! cargo build --release --bin simdb --example coldstart
//! target/release/examples/coldstart target/release/simdb ../shared/corpora/zh_news_xwlb.jsonl
//! ```
//!
//! The store is made in a temp directory with `simdb init` + `simdb ingest`
//! of the corpus. The text query is the first 400 characters of the first
//! document that has them.

use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "common.rs"]
#[allow(dead_code)]
mod common;

fn run(bin: &str, args: &[&str]) -> (bool, String) {
    let o = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{bin}: {e}"));
    let ok = o.status.code().is_some_and(|c| c == 0 || c == 1);
    if !ok {
        eprintln!("{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    (ok, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Median and min wall time of 10 runs, in ms.
fn time(bin: &str, args: &[&str]) -> (f64, f64) {
    let mut t: Vec<f64> = (0..10)
        .map(|_| {
            let s = Instant::now();
            let (ok, _) = run(bin, args);
            assert!(ok, "{args:?} failed");
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    ((t[4] + t[5]) / 2.0, t[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: coldstart SIMDB_BINARY CORPUS.jsonl");
        std::process::exit(2);
    }
    let (bin, corpus) = (args[1].as_str(), args[2].as_str());
    let docs = common::read_corpus(corpus);
    let (id, text) = docs
        .iter()
        .find(|(_, t)| t.chars().count() >= 400)
        .expect("a document of at least 400 characters");
    let query: String = text.chars().take(400).collect();

    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("db");
    let db = db.to_str().expect("a UTF-8 temp path");
    let s = Instant::now();
    assert!(run(bin, &["init", db]).0);
    assert!(run(bin, &["ingest", db, corpus]).0);
    println!(
        "store: {} documents of {corpus} ingested in {:.1} s",
        docs.len(),
        s.elapsed().as_secs_f64()
    );
    let (_, fp) = run(bin, &["fingerprint", "--text", text]);
    let fp = fp.trim().to_string();

    println!(
        "{:<48} {:>10} {:>10}",
        "command (whole process)", "median ms", "min ms"
    );
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("simdb --version", vec!["--version"]),
        ("simdb get DB ID", vec!["get", db, id]),
        ("simdb stats DB", vec!["stats", db]),
        (
            "simdb query DB --fingerprint HEX",
            vec!["query", db, "--fingerprint", &fp],
        ),
        ("simdb query DB --id ID", vec!["query", db, "--id", id]),
        (
            "simdb query DB --text (400 chars)",
            vec!["query", db, "--text", &query],
        ),
        (
            "simdb fingerprint --text (400 chars)",
            vec!["fingerprint", "--text", &query],
        ),
    ];
    for (name, a) in cases {
        let (med, min) = time(bin, &a);
        println!("{name:<48} {med:>10.1} {min:>10.1}");
    }
}
