//! Measures fingerprint recipes on a real corpus, to choose the defaults.
//!
//! ```text
//! cargo run --release --example eval_recipe -- ../shared/corpora/zh_news_xwlb.jsonl [SAMPLE] [SEED]
//! ```
//!
//! For each recipe it prints:
//! - recall of planted near-duplicates at k=3: SAMPLE documents (default
//!   2000) are copied with ~1% and ~3% of their words edited (a word
//!   replaced by a word drawn from the corpus, deleted, or a corpus word
//!   inserted, in equal shares); a copy is found if its fingerprint is within 3 bits of
//!   the original's;
//! - collisions: every pair of corpus documents within 3 bits, split into
//!   textual near-duplicates (Jaccard similarity of character 5-gram sets
//!   >= 0.5) and distinct articles (< 0.5), with the distinct share.
//!
//! The corpus text is read from the given path and never copied anywhere.

use std::collections::HashSet;
use std::time::Instant;

#[path = "common.rs"]
mod common;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use simdb::index::MemIndex;
use simdb::{Fingerprint, Fingerprinter, Recipe};

fn shingles(text: &str) -> HashSet<u64> {
    let chars: Vec<char> = text.chars().filter(|c| c.is_alphanumeric()).collect();
    let mut s = HashSet::new();
    if chars.len() < 5 {
        s.insert(xxhash_rust::xxh3::xxh3_64(text.as_bytes()));
        return s;
    }
    for w in chars.windows(5) {
        let st: String = w.iter().collect();
        s.insert(xxhash_rust::xxh3::xxh3_64(st.as_bytes()));
    }
    s
}

fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let inter = a.intersection(b).count() as f64;
    let uni = (a.len() + b.len()) as f64 - inter;
    if uni == 0.0 {
        1.0
    } else {
        inter / uni
    }
}

/// Edits `rate` of the word tokens of `text` (jieba tokens with a letter or
/// digit): each edit replaces the word with a word drawn from the corpus
/// (so with the corpus's word frequencies), deletes it, or inserts a corpus
/// word after it, in equal shares.
fn perturb(
    jieba: &jieba_rs::Jieba,
    pool: &[String],
    text: &str,
    rate: f64,
    rng: &mut impl Rng,
) -> (String, usize) {
    let toks: Vec<&str> = jieba.cut(text, false).into_iter().map(|t| t.word).collect();
    let words: Vec<usize> = (0..toks.len())
        .filter(|&i| toks[i].chars().any(char::is_alphanumeric))
        .collect();
    let n = ((words.len() as f64 * rate).round() as usize).max(1);
    let mut out: Vec<String> = toks.iter().map(|s| s.to_string()).collect();
    let chosen: Vec<usize> = words.choose_multiple(rng, n).copied().collect();
    for &i in &chosen {
        let w = pool.choose(rng).unwrap();
        match rng.random_range(0..3) {
            0 => out[i] = w.clone(),
            1 => out[i].clear(),
            _ => out[i].push_str(w),
        }
    }
    (out.concat(), chosen.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: eval_recipe CORPUS.jsonl [SAMPLE] [SEED] [RECIPES: topk/shingle,...]");
        std::process::exit(2);
    };
    let sample: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let recipes: Vec<(u32, u32)> = args
        .get(4)
        .map(|s| {
            s.split(',')
                .map(|r| {
                    let (a, b) = r.split_once('/').expect("recipe as TOPK/SHINGLE");
                    (a.parse().unwrap(), b.parse().unwrap())
                })
                .collect()
        })
        .unwrap_or_else(|| vec![(5, 1), (20, 1), (0, 1), (0, 2), (0, 3)]);

    let docs = common::read_corpus(path);
    let jieba = jieba_rs::Jieba::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // Replacement words: word tokens of 300 random corpus documents.
    let vocab = common::corpus_words(&jieba, &docs, &mut rng);
    let picks: Vec<usize> = (0..docs.len())
        .collect::<Vec<_>>()
        .choose_multiple(&mut rng, sample.min(docs.len()))
        .copied()
        .collect();
    let mut edits: Vec<(usize, String, String)> = Vec::new();
    for &i in &picks {
        let (e1, _) = perturb(&jieba, &vocab, &docs[i].1, 0.01, &mut rng);
        let (e3, _) = perturb(&jieba, &vocab, &docs[i].1, 0.03, &mut rng);
        edits.push((i, e1, e3));
    }
    let shingle_sets: Vec<HashSet<u64>> = docs.par_iter().map(|(_, t)| shingles(t)).collect();
    println!(
        "corpus {path}: {} documents; {} planted pairs per edit rate; seed {seed}",
        docs.len(),
        edits.len()
    );
    println!(
        "{:<18} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8}",
        "recipe", "recall1%", "recall3%", "no-feat", "flagged", "near-dup", "distinct", "dist%"
    );
    for (top_k, shingle) in recipes {
        let t0 = Instant::now();
        let f = Fingerprinter::new(Recipe::with(top_k, shingle, false));
        let fps: Vec<Option<Fingerprint>> = docs
            .par_iter()
            .map(|(_, t)| f.fingerprint(t).ok())
            .collect();
        let no_feat = fps.iter().filter(|f| f.is_none()).count();
        let found = |rate_idx: usize| -> f64 {
            let ok = edits
                .par_iter()
                .filter(|(i, e1, e3)| {
                    let e = if rate_idx == 0 { e1 } else { e3 };
                    match (fps[*i], f.fingerprint(e).ok()) {
                        (Some(a), Some(b)) => a.distance(b) <= 3,
                        _ => false,
                    }
                })
                .count();
            ok as f64 / edits.len() as f64
        };
        let (r1, r3) = (found(0), found(1));
        let mut idx = MemIndex::new();
        for (i, fp) in fps.iter().enumerate() {
            if let Some(fp) = fp {
                idx.insert(&i.to_string(), *fp);
            }
        }
        let mut pairs = Vec::new();
        for (i, fp) in fps.iter().enumerate() {
            if let Some(fp) = fp {
                for h in idx.query(*fp, 3) {
                    let j: usize = h.id.parse().unwrap();
                    if j > i {
                        pairs.push((i, j));
                    }
                }
            }
        }
        let distinct = pairs
            .par_iter()
            .filter(|(i, j)| jaccard(&shingle_sets[*i], &shingle_sets[*j]) < 0.5)
            .count();
        let flagged = pairs.len();
        println!(
            "top_k={:<3} shingle={} {:>9.4} {:>9.4} {:>9} {:>10} {:>9} {:>9} {:>7.2}%   ({:.1}s)",
            top_k,
            shingle,
            r1,
            r3,
            no_feat,
            flagged,
            flagged - distinct,
            distinct,
            if flagged > 0 {
                100.0 * distinct as f64 / flagged as f64
            } else {
                0.0
            },
            t0.elapsed().as_secs_f64()
        );
        if std::env::var_os("EVAL_SHOW_DISTINCT").is_some() {
            for (i, j) in pairs
                .iter()
                .filter(|(i, j)| jaccard(&shingle_sets[*i], &shingle_sets[*j]) < 0.5)
                .take(5)
            {
                println!(
                    "  distinct pair: {} | {}  (jaccard {:.2})",
                    docs[*i].0,
                    docs[*j].0,
                    jaccard(&shingle_sets[*i], &shingle_sets[*j])
                );
            }
        }
    }
}
