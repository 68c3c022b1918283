//! IDF tables: jieba-rs's bundled table (vendored) and tables learned from
//! a user's corpus. Below both the recipe (which names a table by its
//! hash) and the fingerprinter (which looks terms up), so neither depends
//! on the other for it.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

/// jieba-rs 0.11's bundled IDF table (`src/data/idf.txt` of that crate,
/// MIT licence), vendored byte for byte because jieba-rs does not expose it.
/// A test checks it against jieba-rs's own TF-IDF extractor.
const IDF_TABLE: &str = include_str!("data/jieba_idf.txt");

/// The IDF table keyed by the xxh3-64 of each word: a lookup touches one
/// entry and never the table's text (word-keyed lookups spent most of their
/// time on cache misses comparing keys). Building checks that no two words
/// share a hash; an unlisted word takes a listed word's IDF only if their
/// 64-bit hashes collide (about 1 in 6.6e13 per lookup).
struct IdfTable {
    map: std::collections::HashMap<u64, f64, std::hash::BuildHasherDefault<KeyIsHash>>,
    median: f64,
}

/// A `Hasher` for keys that already are hashes.
#[derive(Default)]
struct KeyIsHash(u64);

impl std::hash::Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub(crate) fn word_key(word: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(word.as_bytes())
}

fn idf_table() -> &'static IdfTable {
    static TABLE: OnceLock<IdfTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        // Loaded at every process start that fingerprints text: no more
        // than the map. That no two words share a hash, and the median,
        // are properties of the vendored table, checked once by tests.
        let mut map =
            std::collections::HashMap::with_capacity_and_hasher(280_000, Default::default());
        for (word, idf) in table_entries() {
            map.insert(word_key(word), idf);
        }
        IdfTable {
            map,
            median: JIEBA_IDF_LOWER_MEDIAN,
        }
    })
}

/// The lower median of the vendored table's values (ascending index
/// (len - 1) / 2, as jieba-rs computes it): the IDF of a term missing from
/// the table. A test recomputes it from the table.
const JIEBA_IDF_LOWER_MEDIAN: f64 = 11.9547675029;

/// The `(word, idf)` lines of the vendored table.
fn table_entries() -> impl Iterator<Item = (&'static str, f64)> {
    IDF_TABLE.lines().filter_map(|line| {
        let (word, idf) = line.split_once(' ')?;
        Some((word, idf.trim().parse().ok()?))
    })
}

/// xxh3-64 of the IDF table's bytes: its identity in the recipe.
pub(crate) fn idf_table_hash() -> u64 {
    static HASH: OnceLock<u64> = OnceLock::new();
    *HASH.get_or_init(|| xxhash_rust::xxh3::xxh3_64(IDF_TABLE.as_bytes()))
}

/// The IDF of a term: its value in the table, or the table's median.
pub fn idf(term: &str) -> f64 {
    let t = idf_table();
    t.map.get(&word_key(term)).copied().unwrap_or(t.median)
}

/// The IDF given to terms missing from the table (the table's lower median).
pub fn default_idf() -> f64 {
    idf_table().median
}

/// The words of the vendored IDF table (jieba's vocabulary), in table
/// order. Handy for generating plausible Chinese test data.
pub fn vocabulary() -> impl Iterator<Item = &'static str> {
    IDF_TABLE
        .lines()
        .filter_map(|l| l.split_whitespace().next())
}

/// An IDF table learned from a corpus: `idf(t) = ln(N / df(t))` over the
/// corpus's N documents, kept for terms in at least two documents; other
/// terms get `ln(N)` (as rare as a term can be in that corpus).
///
/// Serialised as UTF-8 text: a header line `simdb-idf v1 docs=N`, then
/// `term \t idf` per line in byte order of the terms, idf printed with
/// 6 decimals (so the bytes, and their hash, are reproducible).
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedIdf {
    docs: u64,
    map: FxHashMap<u64, f64>,
    bytes: String,
}

impl LearnedIdf {
    /// Parses the serialised form; `Err` carries the reason.
    pub fn parse(bytes: &str) -> std::result::Result<LearnedIdf, String> {
        let mut lines = bytes.lines();
        let docs: u64 = lines
            .next()
            .and_then(|h| h.strip_prefix("simdb-idf v1 docs="))
            .and_then(|n| n.parse().ok())
            .ok_or("not a simdb IDF table (bad header)")?;
        let mut map = FxHashMap::default();
        for (n, line) in lines.enumerate() {
            let (t, v) = line
                .split_once('\t')
                .ok_or_else(|| format!("line {}: no tab", n + 2))?;
            let v: f64 = v
                .parse()
                .map_err(|e| format!("line {}: bad idf: {e}", n + 2))?;
            if !v.is_finite() || v < 0.0 {
                return Err(format!("line {}: idf {v} out of range", n + 2));
            }
            map.insert(word_key(t), v);
        }
        Ok(LearnedIdf {
            docs,
            map,
            bytes: bytes.to_string(),
        })
    }

    /// The serialised form.
    pub fn as_str(&self) -> &str {
        &self.bytes
    }

    /// Number of documents learned from.
    pub fn docs(&self) -> u64 {
        self.docs
    }

    /// Number of terms kept.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no term was kept.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Its identity in a recipe: `learned/docs=N/terms=M/xxh3=H`.
    pub fn identity(&self) -> String {
        format!(
            "learned/docs={}/terms={}/xxh3={:016x}",
            self.docs,
            self.map.len(),
            xxhash_rust::xxh3::xxh3_64(self.bytes.as_bytes())
        )
    }

    pub(crate) fn get(&self, term: &str) -> f64 {
        self.map
            .get(&word_key(term))
            .copied()
            .unwrap_or_else(|| (self.docs.max(1) as f64).ln())
    }
}

/// Builds jieba's IDF table now rather than on first use.
pub(crate) fn warm_up() {
    let _ = idf_table();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendored_table_properties_hold() {
        let entries: Vec<(&str, f64)> = table_entries().collect();
        assert_eq!(entries.len(), 270_132);
        // The same entries as a whitespace split reads.
        let split = IDF_TABLE
            .lines()
            .filter(|l| {
                let mut p = l.split_whitespace();
                matches!(
                    (p.next(), p.next().map(str::parse::<f64>)),
                    (Some(_), Some(Ok(_)))
                )
            })
            .count();
        assert_eq!(split, entries.len());
        // No two words share an xxh3-64 key (a lookup never reads another
        // word's IDF).
        let mut keys: FxHashMap<u64, &str> = FxHashMap::default();
        for (w, _) in &entries {
            if let Some(other) = keys.insert(word_key(w), w) {
                assert_eq!(other, *w, "two IDF words share an xxh3-64 hash");
            }
        }
        // The median constant is the table's lower median.
        let mut values: Vec<f64> = entries.iter().map(|e| e.1).collect();
        values.sort_by(f64::total_cmp);
        assert_eq!(values[(values.len() - 1) / 2], JIEBA_IDF_LOWER_MEDIAN);
        assert_eq!(default_idf(), JIEBA_IDF_LOWER_MEDIAN);
    }
}
