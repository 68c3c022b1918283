//! Helpers shared by the tools that read a real corpus by path.

use std::io::BufRead;

use rand::seq::IndexedRandom;
use rand::Rng;

/// The `(id, text)` documents of a JSONL corpus; lines without both are skipped.
pub fn read_corpus(path: &str) -> Vec<(String, String)> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut docs = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.unwrap_or_else(|e| panic!("{path}: {e}"));
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if let (Some(id), Some(t)) = (v["id"].as_str(), v["text"].as_str()) {
            docs.push((id.to_string(), t.to_string()));
        }
    }
    docs
}

/// Word tokens of 300 random documents: replacement words with the corpus's
/// own word frequencies.
pub fn corpus_words(
    jieba: &jieba_rs::Jieba,
    docs: &[(String, String)],
    rng: &mut impl Rng,
) -> Vec<String> {
    let mut words = Vec::new();
    for _ in 0..300 {
        let (_, t) = docs.choose(rng).expect("a non-empty corpus");
        words.extend(
            jieba
                .cut(t, false)
                .into_iter()
                .filter(|w| w.word.chars().any(char::is_alphanumeric))
                .map(|w| w.word.to_string()),
        );
    }
    words
}
