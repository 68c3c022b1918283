//! End-to-end check on a real corpus, through the `simdb` binary:
//!
//! 1. `simdb init` + `simdb ingest` the corpus into a fresh store;
//! 2. replace 3 words of sampled stored articles (>= 200 chars) by words drawn from the corpus and `simdb query --text`
//!    each edited copy at the defaults: the original must be among the hits;
//! 3. perturb stored fingerprints by 0..=4 bits, run them through
//!    `simdb query --batch`, and compare every answer with a brute-force scan
//!    over all stored fingerprints (read back with `simdb fingerprint`).
//!
//! ```text
//! cargo build --release --bin simdb --example corpus_check
//! target/release/examples/corpus_check target/release/simdb ../shared/corpora/zh_news_xwlb.jsonl [EDITS] [QUERIES]
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "common.rs"]
mod common;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use simdb::index::brute_force;
use simdb::Fingerprint;

fn run(bin: &str, args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut c = Command::new(bin);
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = c.spawn().expect("spawn simdb");
    if let Some(data) = stdin {
        let mut sin = child.stdin.take().unwrap();
        let data = data.to_vec();
        std::thread::spawn(move || sin.write_all(&data));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: corpus_check SIMDB_BIN CORPUS.jsonl [EDITS=200] [QUERIES=2000]");
        std::process::exit(2);
    }
    let (bin, corpus) = (&a[1], &a[2]);
    let edits: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let nq: usize = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();

    let (c, _, e) = run(bin, &["init", db], None);
    assert_eq!(c, 0, "{e}");
    let t = Instant::now();
    let (c, _, e) = run(bin, &["ingest", db, corpus], None);
    assert_eq!(c, 0, "{e}");
    println!(
        "ingest: {} ({:.1}s)",
        e.lines().last().unwrap_or(""),
        t.elapsed().as_secs_f64()
    );

    // The stored texts, and their fingerprints as `simdb fingerprint --db` computes them.
    let docs = common::read_corpus(corpus);
    let input: String = docs
        .iter()
        .map(|(id, t)| serde_json::json!({"id": id, "text": t}).to_string() + "\n")
        .collect();
    let (_, out, _) = run(
        bin,
        &["fingerprint", "--db", db, "--json"],
        Some(input.as_bytes()),
    );
    let mut stored: BTreeMap<String, Fingerprint> = BTreeMap::new();
    for l in out.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        stored.insert(
            v["id"].as_str().unwrap().into(),
            v["fingerprint"].as_str().unwrap().parse().unwrap(),
        );
    }
    println!("stored fingerprints: {}", stored.len());

    // 2. Edited copies found by `query --text`.
    let jieba = jieba_rs::Jieba::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    // Replacement words are drawn from the corpus (its word frequencies).
    let vocab = common::corpus_words(&jieba, &docs, &mut rng);
    let long: Vec<&(String, String)> = docs
        .iter()
        .filter(|(id, t)| t.chars().count() >= 200 && stored.contains_key(id))
        .collect();
    let mut found = 0;
    let mut tried = 0;
    for (id, text) in long.choose_multiple(&mut rng, edits).map(|d| (&d.0, &d.1)) {
        let (mut toks, words) = common::word_tokens(&jieba, text);
        for &i in words.choose_multiple(&mut rng, 3) {
            toks[i] = vocab.choose(&mut rng).unwrap().clone();
        }
        let edited = toks.concat();
        let (c, out, e) = run(bin, &["query", db, "--text", &edited, "--json"], None);
        assert!(c == 0 || c == 1, "{e}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        tried += 1;
        if v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == id.as_str())
        {
            found += 1;
        }
    }
    println!("edited copies (3 words replaced by corpus words) found by query --text (defaults): {found}/{tried}");

    // 3. Perturbed fingerprints through `query --batch` vs brute force.
    let all: Vec<(&String, &Fingerprint)> = stored.iter().collect();
    let mut queries = Vec::new();
    let mut batch = String::new();
    for i in 0..nq {
        let (_, fp) = all[rng.random_range(0..all.len())];
        let mut q = fp.0;
        for _ in 0..(i % 5) {
            q ^= 1u64 << rng.random_range(0..64);
        }
        let q = Fingerprint(q);
        queries.push(q);
        batch += &format!("{}\n", serde_json::json!({"fingerprint": q.to_string()}));
    }
    let bf = dir.path().join("batch.jsonl");
    std::fs::write(&bf, batch).unwrap();
    let t = Instant::now();
    let (c, out, e) = run(bin, &["query", db, "--batch", bf.to_str().unwrap()], None);
    assert!(c == 0 || c == 1, "{e}");
    let secs = t.elapsed().as_secs_f64();
    let mut mismatches = 0;
    let mut hits = 0;
    for (q, line) in queries.iter().zip(out.lines()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let got: Vec<(String, u32)> = v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["id"].as_str().unwrap().to_string(),
                    h["distance"].as_u64().unwrap() as u32,
                )
            })
            .collect();
        let want: Vec<(String, u32)> =
            brute_force(all.iter().map(|(i, f)| (i.as_str(), **f)), *q, 3)
                .into_iter()
                .map(|h| (h.id, h.distance))
                .collect();
        hits += want.len();
        if got != want {
            mismatches += 1;
        }
    }
    assert_eq!(out.lines().count(), queries.len());
    println!(
        "query --batch: {} perturbed fingerprints (0-4 bits), {hits} hits, {mismatches} differ from brute force ({:.2}s)",
        queries.len(),
        secs
    );
    if mismatches > 0 || found == 0 {
        std::process::exit(1);
    }
}
