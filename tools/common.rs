//! Helpers shared by the tools that read a real corpus by path.

use std::io::BufRead;

use std::collections::HashMap;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

/// The value after flag `name` on the command line (`--n 1000`), parsed,
/// or `default` when the flag is absent; a value that does not parse
/// panics naming the flag.
#[allow(dead_code, reason = "used by the cost tools, not by every tool")]
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("bad value for {name}")))
        .unwrap_or(default)
}

/// The `(id, text)` documents of a JSONL corpus; lines without both are skipped.
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
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
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
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

/// Character 5-gram set of a text's letters and digits (lower-cased); a
/// text with fewer than 5 of them is one shingle of all of them.
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn char_shingles(text: &str) -> Vec<u64> {
    char_ngrams(text, 5)
}

/// Character `n`-gram set (sorted hashes) of a text's letters and digits
/// (lower-cased); a text with fewer than `n` of them is one shingle of all
/// of them.
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn char_ngrams(text: &str, n: usize) -> Vec<u64> {
    let chars: Vec<char> = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let mut s: Vec<u64> = if chars.len() < n {
        let all: String = chars.iter().collect();
        vec![xxhash_rust::xxh3::xxh3_64(all.as_bytes())]
    } else {
        chars
            .windows(n)
            .map(|w| xxhash_rust::xxh3::xxh3_64(w.iter().collect::<String>().as_bytes()))
            .collect()
    };
    s.sort_unstable();
    s.dedup();
    s
}

#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let uni = a.len() + b.len() - inter;
    if uni == 0 {
        1.0
    } else {
        inter as f64 / uni as f64
    }
}

/// The share of the smaller of two sorted shingle sets that the larger
/// holds (1 when the smaller is empty).
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn containment(a: &[u64], b: &[u64]) -> f64 {
    let j = jaccard(a, b);
    // |A ∩ B| = J (|A| + |B|) / (1 + J), exactly, from the Jaccard above.
    let inter = j * (a.len() + b.len()) as f64 / (1.0 + j);
    match a.len().min(b.len()) {
        0 => 1.0,
        small => (inter / small as f64).min(1.0),
    }
}

/// A text's jieba tokens (words and the separators between them, so edits
/// keep the rest of the text intact) and the positions of the words.
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn word_tokens(jieba: &jieba_rs::Jieba, text: &str) -> (Vec<String>, Vec<usize>) {
    let toks: Vec<String> = jieba
        .cut(text, false)
        .into_iter()
        .map(|t| t.word.to_string())
        .collect();
    let words = (0..toks.len())
        .filter(|&i| toks[i].chars().any(char::is_alphanumeric))
        .collect();
    (toks, words)
}

/// The documents of corpus `path`, at most `max_docs` of them (0 = all).
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn load_corpus(path: &std::path::Path, max_docs: usize) -> Vec<(String, String)> {
    let mut docs = read_corpus(path.to_str().expect("UTF-8 path"));
    if max_docs > 0 {
        docs.truncate(max_docs);
    }
    docs
}

/// `text` with `n` character edits: each replaces, inserts or deletes one
/// character, drawn from `pool` (the random draws in a fixed order, which
/// `tools/recall.rs`'s published figures depend on).
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub fn edit_chars(text: &str, n: usize, pool: &[char], rng: &mut impl Rng) -> String {
    let mut cs: Vec<char> = text.chars().collect();
    for _ in 0..n {
        let c = *pool.choose(rng).expect("characters");
        let at = rng.random_range(0..cs.len().max(1));
        match rng.random_range(0..3) {
            0 if !cs.is_empty() => cs[at] = c,
            1 => cs.insert(at, c),
            _ if cs.len() > 1 => {
                cs.remove(at);
            }
            _ => cs.insert(at, c),
        }
    }
    cs.into_iter().collect()
}

/// Chinese words of 2-4 ideographs from jieba's dictionary, commonest
/// (lowest IDF) first: drawn skewed towards the common ones, as in real
/// text, so a changed word weighs what a real edit would.
#[allow(dead_code, reason = "used by the generators, not by every tool")]
pub struct Words {
    vocab: Vec<&'static str>,
}

#[allow(dead_code, reason = "used by the generators, not by every tool")]
impl Words {
    pub fn new() -> Words {
        let mut vocab: Vec<&str> = simdb::fingerprint::vocabulary()
            .filter(|w| {
                (2..=4).contains(&w.chars().count())
                    && w.chars().all(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
            })
            .collect();
        vocab.sort_by(|a, b| {
            simdb::fingerprint::idf(a)
                .total_cmp(&simdb::fingerprint::idf(b))
                .then(a.cmp(b))
        });
        Words { vocab }
    }

    /// One word.
    pub fn word(&self, rng: &mut impl Rng) -> &'static str {
        let u: f64 = rng.random();
        self.vocab[((u * u * u) * self.vocab.len() as f64) as usize]
    }

    /// An article of `words` words, with a comma every fourth and a full
    /// stop every eleventh.
    pub fn text(&self, rng: &mut impl Rng, words: usize) -> String {
        let mut out = String::new();
        for j in 0..words {
            out.push_str(self.word(rng));
            if j % 11 == 10 {
                out.push('。');
            } else if j % 4 == 3 {
                out.push('，');
            }
        }
        out
    }
}

/// Runs `bin` (simdb) with `args`; panics with its stderr if it fails.
/// Its stderr and stdout, in that order.
#[allow(dead_code, reason = "used by the service tools, not by every tool")]
pub fn run_simdb(bin: &std::path::Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = std::process::Command::new(bin)
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("run simdb");
    assert!(
        out.status.success(),
        "simdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout)
}

/// The `p` quantile (0..=1) of `sorted`, nearest rank.
#[allow(dead_code, reason = "used by the service tools, not by every tool")]
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Starts `simdb serve DB` on a free loopback port with `extra` options;
/// the child (its stdout read past the first line) and the base URL from
/// that line. Its stderr goes where `stderr` says.
#[allow(dead_code, reason = "used by the service tools, not by every tool")]
pub fn spawn_server(
    bin: &std::path::Path,
    db: &std::path::Path,
    extra: &[&str],
    stderr: std::process::Stdio,
) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(bin)
        .arg("serve")
        .arg(db)
        .args(["--addr", "127.0.0.1:0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the server's first line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (child, format!("http://{addr}"))
}

// --- MinHash LSH (the peer) ------------------------------------------------

#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
const PERMS: usize = 128;

#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// datasketch's `_optimal_param`: the (bands, rows) with bands * rows <=
/// 128 minimising the mean of the false-positive and false-negative areas
/// of the S-curve around `t`.
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
fn optimal_bands(t: f64) -> (usize, usize) {
    let area = |b: usize, r: usize, lo: f64, hi: f64, pos: bool| {
        let steps = 400;
        let h = (hi - lo) / steps as f64;
        (0..steps)
            .map(|i| {
                let s = lo + (i as f64 + 0.5) * h;
                let p = 1.0 - (1.0 - s.powi(r as i32)).powi(b as i32);
                if pos {
                    p * h
                } else {
                    (1.0 - p) * h
                }
            })
            .sum::<f64>()
    };
    let mut best = (f64::MAX, (1, 1));
    for b in 1..=PERMS {
        for r in 1..=PERMS / b {
            let e = 0.5 * area(b, r, 0.0, t, true) + 0.5 * area(b, r, t, 1.0, false);
            if e < best.0 {
                best = (e, (b, r));
            }
        }
    }
    best.1
}

/// The hashed word 3-shingles of `text` (jieba's cut, lower-cased, words
/// with a letter or digit).
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
fn word_shingles(jieba: &jieba_rs::Jieba, text: &str, n: usize) -> Vec<u64> {
    let lower = text.to_lowercase();
    let toks: Vec<&str> = jieba
        .cut(&lower, false)
        .into_iter()
        .map(|t| t.word)
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect();
    if toks.len() < n {
        vec![xxhash_rust::xxh3::xxh3_64(toks.concat().as_bytes())]
    } else {
        toks.windows(n)
            .map(|w| xxhash_rust::xxh3::xxh3_64(w.join(" ").as_bytes()))
            .collect()
    }
}

/// MinHash LSH with 128 permutations over word 3-shingles (jieba's cut,
/// lower-cased), or with [`MinHashLsh::chars`] over character n-grams,
/// banded as datasketch's `MinHashLSH` bands for its threshold: the peer
/// the evaluations measure beside simdb.
#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
pub struct MinHashLsh {
    pub bands: usize,
    pub rows: usize,
    mults: Vec<(u64, u64)>,
    tables: Vec<HashMap<u64, Vec<u32>>>,
    /// Character n-grams (letters and digits) instead of word shingles.
    char_n: Option<usize>,
    /// Words per shingle (3; [`MinHashLsh::words`] sets another).
    word_n: usize,
}

#[allow(dead_code, reason = "used by the evaluation tools, not by every tool")]
impl MinHashLsh {
    pub fn new(threshold: f64, seed: u64) -> MinHashLsh {
        let (bands, rows) = optimal_bands(threshold);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        MinHashLsh {
            bands,
            rows,
            mults: (0..PERMS)
                .map(|_| (rng.random::<u64>() | 1, rng.random()))
                .collect(),
            tables: vec![HashMap::new(); bands],
            char_n: None,
            word_n: 3,
        }
    }

    /// Over word `n`-shingles (jieba's cut, lower-cased).
    pub fn words(threshold: f64, seed: u64, n: usize) -> MinHashLsh {
        MinHashLsh {
            word_n: n,
            ..MinHashLsh::new(threshold, seed)
        }
    }

    /// Over the character `n`-grams of letters and digits (lower-cased).
    pub fn chars(threshold: f64, seed: u64, n: usize) -> MinHashLsh {
        MinHashLsh {
            char_n: Some(n),
            ..MinHashLsh::new(threshold, seed)
        }
    }

    pub fn signature(&self, jieba: &jieba_rs::Jieba, text: &str) -> Vec<u64> {
        let shingles = match self.char_n {
            Some(n) => char_ngrams(text, n),
            None => word_shingles(jieba, text, self.word_n),
        };
        self.mults
            .iter()
            .map(|&(a, b)| {
                shingles
                    .iter()
                    .map(|&s| fmix64(s.wrapping_mul(a).wrapping_add(b)))
                    .min()
                    .unwrap_or(u64::MAX)
            })
            .collect()
    }

    pub fn band_keys(&self, sig: &[u64]) -> Vec<u64> {
        (0..self.bands)
            .map(|b| {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                for v in &sig[b * self.rows..(b + 1) * self.rows] {
                    h.update(&v.to_le_bytes());
                }
                h.digest()
            })
            .collect()
    }

    pub fn insert(&mut self, id: u32, sig: &[u64]) {
        for (b, key) in self.band_keys(sig).into_iter().enumerate() {
            self.tables[b].entry(key).or_default().push(id);
        }
    }

    pub fn query(&self, sig: &[u64]) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .band_keys(sig)
            .into_iter()
            .enumerate()
            .flat_map(|(b, key)| self.tables[b].get(&key).cloned().unwrap_or_default())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}
