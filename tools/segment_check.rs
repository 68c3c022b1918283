//! Checks on real corpora that simdb's built-in dictionary segments Chinese
//! exactly as jieba-rs does (`Jieba::cut(run, false)`, the default recipe),
//! and prints what each costs: start-up (loading the dictionary) and
//! throughput.
//!
//! Every run of CJK ideographs of every document (after the fingerprinter's
//! normalisation) is cut both ways; the tool prints the runs that differ and
//! exits 1 if there is one.
//!
//! ```text
//! cargo run --release --example segment_check -- ../shared/corpora/zh_news_xwlb.jsonl ../shared/corpora/zh_app_desc.jsonl
//! ```

use std::time::Instant;

#[path = "common.rs"]
#[allow(dead_code)]
mod common;

use simdb::fingerprint::{cut_ideographs, Fingerprinter};

/// jieba-rs's CJK class, which the fingerprinter's runs fall in (but for
/// characters jieba leaves single anyway).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
        | 0x20000..=0x2A6DF | 0x2A700..=0x2EBEF | 0x30000..=0x3134F)
}

fn runs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (is_cjk(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(&text[s..i]);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: segment_check CORPUS.jsonl...");
        std::process::exit(2);
    }
    // Start-up: the first cut of a short text, each way, in this fresh process.
    let t = Instant::now();
    let mut n = 0;
    cut_ideographs("我来到北京清华大学", |_| n += 1);
    let ours_start = t.elapsed();
    let t = Instant::now();
    let jieba = jieba_rs::Jieba::new();
    n += jieba.cut("我来到北京清华大学", false).len();
    let jieba_start = t.elapsed();
    assert_eq!(n, 8);
    println!(
        "start-up (first cut, one process): built-in {:.2} ms, jieba-rs {:.1} ms",
        ours_start.as_secs_f64() * 1e3,
        jieba_start.as_secs_f64() * 1e3
    );

    let mut failed = false;
    for path in &paths {
        let docs = common::read_corpus(path);
        let norm: Vec<String> = docs
            .iter()
            .map(|(_, t)| Fingerprinter::normalize(t))
            .collect();
        let all: Vec<&str> = norm.iter().flat_map(|t| runs(t)).collect();
        let chars: usize = all.iter().map(|r| r.chars().count()).sum();
        let (mut words, mut differ) = (0usize, 0usize);
        let mut ours: Vec<&str> = Vec::new();
        for r in &all {
            ours.clear();
            cut_ideographs(r, |w| ours.push(w));
            let theirs: Vec<&str> = jieba.cut(r, false).iter().map(|t| t.word).collect();
            words += theirs.len();
            if ours != theirs {
                differ += 1;
                if differ <= 5 {
                    println!("  differs: {r}\n    built-in {ours:?}\n    jieba-rs {theirs:?}");
                }
            }
        }
        // Throughput, each way, best of 3 passes.
        let time = |f: &dyn Fn() -> usize| {
            (0..3)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(f());
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::MAX, f64::min)
        };
        let t_ours = time(&|| {
            let mut k = 0;
            for r in &all {
                cut_ideographs(r, |_| k += 1);
            }
            k
        });
        let t_jieba = time(&|| all.iter().map(|r| jieba.cut(r, false).len()).sum());
        println!(
            "{path}: {} docs, {} runs, {chars} chars, {words} words: {differ} runs differ; \
             built-in {:.1} Mchar/s, jieba-rs {:.1} Mchar/s",
            docs.len(),
            all.len(),
            chars as f64 / t_ours / 1e6,
            chars as f64 / t_jieba / 1e6
        );
        failed |= differ > 0;
    }
    std::process::exit(i32::from(failed));
}
