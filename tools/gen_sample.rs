//! Generates a deterministic sample corpus as JSONL on standard output:
//! Chinese "articles" made of jieba's dictionary words, and for every tenth
//! one an edited copy (two words changed) that simdb should find.
//!
//! ```text
//! cargo run --release --example gen_sample -- [N] [SEED] [QUERY_FILE] > sample.jsonl
//! ```
//!
//! With QUERY_FILE, the text of `article-00020` with two words changed (a
//! near-duplicate that is not in the sample) is written there.

use std::io::Write;

use rand::{Rng, SeedableRng};

mod common;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    // Common words (low IDF) first; draws are skewed towards them, as in
    // real text, so a changed word weighs what a real edit would.
    let vocab = common::Words::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let word = |rng: &mut rand_chacha::ChaCha8Rng| -> String { vocab.word(rng).to_string() };
    let edit_two = |words: &mut Vec<String>, rng: &mut rand_chacha::ChaCha8Rng| {
        for _ in 0..2 {
            let k = rng.random_range(0..words.len());
            words[k] = word(rng);
        }
    };
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    for i in 0..n {
        let len = rng.random_range(250..500);
        let mut words: Vec<String> = (0..len).map(|_| word(&mut rng)).collect();
        for (j, w) in words.iter_mut().enumerate() {
            if j % 11 == 10 {
                w.push('。');
            } else if j % 4 == 3 {
                w.push('，');
            }
        }
        let text: String = words.concat();
        writeln!(
            out,
            "{}",
            serde_json::json!({"id": format!("article-{i:05}"), "text": text})
        )
        .unwrap();
        if let (Some(q), 20) = (args.get(3), i) {
            // Its own generator, so the sample is the same with or without QUERY_FILE.
            let mut qrng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x0051_5545_5259);
            let mut w2 = words.clone();
            edit_two(&mut w2, &mut qrng);
            std::fs::write(q, w2.concat()).unwrap();
        }
        if i % 10 == 0 {
            edit_two(&mut words, &mut rng);
            let text: String = words.concat();
            writeln!(
                out,
                "{}",
                serde_json::json!({"id": format!("article-{i:05}-edited"), "text": text})
            )
            .unwrap();
        }
    }
    out.flush().unwrap();
}
