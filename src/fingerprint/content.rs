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
    /// A web page: its text is what [`crate::web::page`] extracts, and
    /// everything else (hash, length, fingerprint) is that text's. Ingest
    /// extracts each page once, on the pool ([`Content::extracted`]).
    Html(Html),
}

/// A web page's bytes as fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Html {
    pub bytes: Vec<u8>,
    /// The charset its transport declared (HTTP `Content-Type`), if any.
    pub charset: Option<String>,
}

impl Html {
    /// The page's text and how it was found.
    pub fn page(&self) -> crate::web::Page {
        crate::web::page(&self.bytes, self.charset.as_deref())
    }
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
            Content::Html(h) => text_hash(&h.page().text()),
        }
    }

    /// A page's content as the text it is fingerprinted by, with how that
    /// text was found; any other content as it is.
    pub fn extracted(self) -> (Content, Option<crate::web::Found>) {
        match self {
            Content::Html(h) => {
                let page = h.page();
                (Content::Text(page.text()), Some(page.found))
            }
            c => (c, None),
        }
    }

    /// Length in bytes (text), number of features, or 0 (a fingerprint).
    pub fn len(&self) -> u64 {
        match self {
            Content::Text(t) => t.len() as u64,
            Content::Features(f) => f.len() as u64,
            Content::Fingerprint(_) => 0,
            Content::Html(h) => h.page().text().len() as u64,
        }
    }

    /// [`Content::len`], but a page's bytes as fetched (not its extracted
    /// text, which would cost an extraction): what bounds a chunk.
    pub fn held_bytes(&self) -> usize {
        match self {
            Content::Html(h) => h.bytes.len(),
            c => c.len() as usize,
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
            Content::Html(h) => fp.analyze(&h.page().text()),
            _ => self.fingerprint(fp).map(Analysis::bare),
        }
    }

    /// The fingerprint of this content under `fp`'s recipe.
    pub fn fingerprint(&self, fp: &Fingerprinter) -> Result<Fingerprint> {
        match self {
            Content::Text(t) => fp.fingerprint(t),
            Content::Features(f) => super::simhash_weighted(f),
            Content::Fingerprint(fp) => Ok(*fp),
            Content::Html(h) => fp.fingerprint(&h.page().text()),
        }
    }
}
