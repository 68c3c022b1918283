//! Script folding: traditional Chinese to simplified, so that a copy
//! converted between scripts (mainland ↔ Taiwan, Hong Kong) gets the
//! original's fingerprint and sketch.
//!
//! Two steps over normalised text (recipe `script` = [`SCRIPT_T2S`]):
//!
//! 1. characters: the `fast2s` crate's table (2,734 traditional and variant
//!    characters with a few context rules; MIT; pinned, since another table
//!    is another recipe);
//! 2. Taiwan vocabulary: OpenCC's `TWPhrasesRev` (Apache-2.0, copied
//!    unchanged from OpenCC's data as the `ferrous-opencc` 0.4.0 crate ships
//!    it, `data/opencc_TWPhrasesRev.txt`: 軟體 → 軟件, 資訊 → 信息, …), its keys
//!    and values folded by step 1 and normalised, replaced leftmost-longest;
//!    every value is also kept as itself (a mainland word: 程序, 文件,
//!    土库曼斯坦), so mainland text keeps its words.
//!
//! [`SCRIPT_T2S`] names both, with the xxh3-64 of the phrase table's bytes
//! (checked by a test).

use std::sync::OnceLock;

use rustc_hash::{FxHashMap, FxHashSet};

/// `script` value of new stores.
pub const SCRIPT_T2S: &str =
    "t2s/fast2s-0.3.1+opencc-TWPhrasesRev-mainland-kept/xxh3=987a5f09097c0c3c";

const TW_PHRASES: &str = include_str!("data/opencc_TWPhrasesRev.txt");

struct Phrases {
    /// First characters of the keys.
    first: FxHashSet<char>,
    map: FxHashMap<String, String>,
    /// The longest key, in characters.
    longest: usize,
}

fn phrases() -> &'static Phrases {
    static P: OnceLock<Phrases> = OnceLock::new();
    P.get_or_init(|| {
        let fold = |s: &str| fast2s::convert(&super::Fingerprinter::normalize(s));
        let mut map = FxHashMap::default();
        for line in TW_PHRASES.lines() {
            if line.starts_with('#') {
                continue; // the header (its format line has a tab too)
            }
            let Some((key, values)) = line.split_once('\t') else {
                continue; // blank lines
            };
            let Some(value) = values.split(' ').next() else {
                continue;
            };
            let (k, v) = (fold(key), fold(value));
            if k.chars().count() >= 2 && k != v {
                map.entry(k).or_insert(v);
            }
        }
        // A mainland word is never rewritten: the table is for Taiwan text
        // and also maps words both regions use in other senses (程序 →
        // 进程 beside 程式 → 程序, 文件 → 文档 beside 檔案 → 文件), which
        // would turn a mainland text's 程序 into 进程 while its Taiwan
        // conversion (程式) folds to 程序. Every value is kept as itself
        // (and wins leftmost-longest over a shorter key inside it: 土库曼斯坦
        // is not 土库曼 → 土库曼斯坦 plus 斯坦), so a mainland text and its
        // conversion meet.
        let values: Vec<String> = map.values().cloned().collect();
        for v in values {
            map.insert(v.clone(), v);
        }
        Phrases {
            first: map.keys().filter_map(|k| k.chars().next()).collect(),
            longest: map.keys().map(|k| k.chars().count()).max().unwrap_or(0),
            map,
        }
    })
}

/// Normalised text `norm` with its script folded (both steps).
pub(crate) fn fold(norm: &str) -> String {
    if norm.is_ascii() {
        return norm.to_string();
    }
    let chars = fast2s::convert(norm);
    let p = phrases();
    // Char boundaries, so that a key of n characters is one slice.
    let starts: Vec<usize> = chars
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(chars.len()))
        .collect();
    let mut out = String::with_capacity(chars.len());
    let mut i = 0;
    let n = starts.len() - 1;
    'next: while i < n {
        let c = chars[starts[i]..].chars().next().unwrap_or_default();
        if p.first.contains(&c) {
            for len in (2..=p.longest.min(n - i)).rev() {
                if let Some(v) = p.map.get(&chars[starts[i]..starts[i + len]]) {
                    out.push_str(v);
                    i += len;
                    continue 'next;
                }
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_names_the_table() {
        let h = xxhash_rust::xxh3::xxh3_64(TW_PHRASES.as_bytes());
        assert!(
            SCRIPT_T2S.ends_with(&format!("/xxh3={h:016x}")),
            "SCRIPT_T2S must end with /xxh3={h:016x}"
        );
        let n = phrases().map.len();
        assert!(n > 450, "{n} phrases");
    }

    #[test]
    fn characters_then_taiwan_vocabulary() {
        assert_eq!(fold("這個軟體的資訊很穩定"), "这个软件的信息很稳定");
        assert_eq!(fold("这个软件的信息很稳定"), "这个软件的信息很稳定");
        assert_eq!(fold("hello 世界"), "hello 世界");
        assert_eq!(fold(""), "");
        // A key at the very end, and one character left after a key.
        assert_eq!(fold("資訊"), "信息");
        assert_eq!(fold("資訊。"), "信息。");
        // Mainland words stay; their Taiwan forms meet them.
        assert_eq!(fold("这个程序的文件"), "这个程序的文件");
        assert_eq!(fold("這個程式的檔案"), "这个程序的文件");
    }

    #[test]
    fn every_taiwan_phrase_meets_its_mainland_word() {
        let p = phrases();
        for (k, v) in &p.map {
            assert_eq!(&fold(v), v, "the mainland word {v} is left as it is");
            assert_eq!(fold(k), fold(v), "{k} folds as {v} does");
        }
    }
}
