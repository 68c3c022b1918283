//! IDF tables: jieba-rs's bundled table (vendored) and tables learned from
//! a user's corpus. Below both the recipe (which names a table by its
//! hash) and the fingerprinter (which looks terms up), so neither depends
//! on the other for it.

use rustc_hash::FxHashMap;

/// jieba-rs 0.11's bundled IDF table (`src/data/idf.txt` of that crate,
/// MIT licence), vendored byte for byte because jieba-rs does not expose it.
/// A test checks it against jieba-rs's own TF-IDF extractor.
const IDF_TABLE: &str = include_str!("data/jieba_idf.txt");

include!(concat!(env!("OUT_DIR"), "/jieba_idf.rs"));

/// The vendored table as built by `tools/build.rs`: an open-addressing hash table
/// of [`IDF_SLOTS`] 16-byte slots (xxh3-64 of the word, then the IDF's f64
/// bits, little-endian; key 0 is an empty slot), linear probing from the
/// key's low bits. Part of the binary: nothing is parsed or built at start,
/// and a lookup touches a slot or two, never the table's text. An unlisted
/// word takes a listed word's IDF only if their 64-bit hashes collide (about
/// 1 in 6.6e13 per lookup); no two listed words collide (a test checks it).
static IDF_SLOTS_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jieba_idf.bin"));

pub(crate) fn word_key(word: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(word.as_bytes())
}

/// The vendored table's IDF for the word whose key is `key`.
fn jieba_idf(key: u64) -> Option<f64> {
    if key == 0 {
        return None; // never a listed word's key (tools/build.rs checks)
    }
    let mask = IDF_SLOTS - 1;
    let mut i = (key as usize) & mask;
    loop {
        let slot = IDF_SLOTS_BYTES.get(i * 16..i * 16 + 16)?;
        let (k, v) = slot.split_at(8);
        let k = u64::from_le_bytes(k.try_into().ok()?);
        if k == key {
            return Some(f64::from_bits(u64::from_le_bytes(v.try_into().ok()?)));
        }
        if k == 0 {
            return None;
        }
        i = (i + 1) & mask;
    }
}

/// The lower median of the vendored table's values (ascending index
/// (len - 1) / 2, as jieba-rs computes it): the IDF of a term missing from
/// the table. A test recomputes it from the table.
const JIEBA_IDF_LOWER_MEDIAN: f64 = 11.9547675029;

/// The `(word, idf)` lines of the vendored table.
#[cfg(test)]
fn table_entries() -> impl Iterator<Item = (&'static str, f64)> {
    IDF_TABLE.lines().filter_map(|line| {
        let (word, idf) = line.split_once(' ')?;
        Some((word, idf.trim().parse().ok()?))
    })
}

/// xxh3-64 of the IDF table's bytes: its identity in the recipe, computed
/// by `tools/build.rs` (a test recomputes it).
pub(crate) fn idf_table_hash() -> u64 {
    IDF_TABLE_HASH
}

/// The IDF of a term: its value in the table, or the table's median.
pub fn idf(term: &str) -> f64 {
    jieba_idf(word_key(term)).unwrap_or(JIEBA_IDF_LOWER_MEDIAN)
}

/// The IDF given to terms missing from the table (the table's lower median).
pub fn default_idf() -> f64 {
    JIEBA_IDF_LOWER_MEDIAN
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
        // The built table holds every entry (the last line of a word wins,
        // as a map built from the lines would) and nothing else.
        let mut expect: FxHashMap<u64, f64> = FxHashMap::default();
        for (w, v) in &entries {
            expect.insert(word_key(w), *v);
        }
        for (w, _) in &entries {
            assert_eq!(idf(w).to_bits(), expect[&word_key(w)].to_bits(), "{w}");
        }
        let stored = IDF_SLOTS_BYTES
            .chunks_exact(16)
            .filter(|s| s[..8] != [0; 8])
            .count();
        assert_eq!(stored, expect.len());
        assert_eq!(idf("not-a-jieba-word"), JIEBA_IDF_LOWER_MEDIAN);
        // The identity tools/build.rs computed is the hash of the table's text.
        assert_eq!(
            idf_table_hash(),
            xxhash_rust::xxh3::xxh3_64(IDF_TABLE.as_bytes())
        );
    }
}
