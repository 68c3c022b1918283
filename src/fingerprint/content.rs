//! What a document is made of: a value type beside the fingerprinter that
//! analyses it (no store, no files).

use super::{Analysis, Fingerprint, Fingerprinter};
use crate::error::Result;

/// What a document is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Text, fingerprinted by the store's recipe.
    Text(String),
    /// Pre-weighted features `(feature, weight)`, fingerprinted by
    /// [`super::simhash_weighted`].
    Features(Vec<(String, f64)>),
    /// A fingerprint computed elsewhere (`import`, or `"fingerprint"` in
    /// ingest's JSONL).
    Fingerprint(Fingerprint),
}

/// The content hash a store records for text `t` (`Content::Text(t).hash()`,
/// xxh3-64 of its UTF-8 bytes): what tells a re-ingest of the same text
/// under the same id that nothing changed.
pub fn text_hash(t: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(t.as_bytes())
}

impl Content {
    /// xxh3-64 identity of the content (text bytes, or the features in order
    /// as `name \t weight-bits-hex \n`).
    pub fn hash(&self) -> u64 {
        match self {
            Content::Text(t) => text_hash(t),
            Content::Features(f) => {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                for (n, w) in f {
                    h.update(n.as_bytes());
                    h.update(format!("\t{:016x}\n", w.to_bits()).as_bytes());
                }
                h.digest()
            }
            Content::Fingerprint(fp) => xxhash_rust::xxh3::xxh3_64(&fp.value().to_be_bytes()),
        }
    }

    /// Length in bytes (text), number of features, or 0 (a fingerprint).
    pub fn len(&self) -> u64 {
        match self {
            Content::Text(t) => t.len() as u64,
            Content::Features(f) => f.len() as u64,
            Content::Fingerprint(_) => 0,
        }
    }

    /// Whether the content is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fingerprint and, for text, the verification sketch and terms.
    pub fn analyze(&self, fp: &Fingerprinter) -> Result<Analysis> {
        match self {
            Content::Text(t) => fp.analyze(t),
            _ => self.fingerprint(fp).map(Analysis::bare),
        }
    }

    /// The fingerprint of this content under `fp`'s recipe.
    pub fn fingerprint(&self, fp: &Fingerprinter) -> Result<Fingerprint> {
        match self {
            Content::Text(t) => fp.fingerprint(t),
            Content::Features(f) => super::simhash_weighted(f),
            Content::Fingerprint(fp) => Ok(*fp),
        }
    }
}
