//! The fingerprint recipe: everything that changes a fingerprint.
//!
//! A store records its recipe at creation and checks it at every open
//! (tantivy's "incompatibility" habit): two fingerprints are only comparable
//! if they were made by the same recipe.

use serde::{Deserialize, Serialize};

use super::stopwords;
use super::text::idf_table_hash;

/// Tokenizer identity of this build.
pub const TOKENIZER: &str = "nfkc+lowercase;cjk=jieba-rs-0.11/default-dict;other=alnum-runs";
/// Feature hash identity of this build.
pub const HASH: &str = "xxh3-64/seed=0/utf8";
/// Tie rule identity of this build.
pub const TIE_RULE: &str = "bit=1 iff sum>0";

/// How a text becomes a fingerprint.
///
/// The configurable parts are `top_k`, `shingle` and `hmm`; the rest name
/// the fixed parts of this build, so that a store made by a build with a
/// different dictionary, stop-word list or hash is refused instead of
/// silently giving wrong answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recipe {
    /// Segmentation and normalisation.
    pub tokenizer: String,
    /// Whether jieba's HMM finds words missing from its dictionary.
    pub hmm: bool,
    /// Identity of the IDF table (name and xxh3-64 of its bytes).
    pub idf: String,
    /// Identity of the stop-word lists (xxh3-64).
    pub stopwords: String,
    /// Keep the `top_k` heaviest features; 0 keeps every feature.
    pub top_k: u32,
    /// Word n-gram shingles added as features: 1 = words only, n >= 2 adds
    /// n-grams of consecutive (non-stop) words as well.
    pub shingle: u32,
    /// The 64-bit feature hash.
    pub hash: String,
    /// Fingerprint width in bits.
    pub width: u32,
    /// How a bit is decided from its sum.
    pub tie_rule: String,
}

impl Recipe {
    /// The default recipe, chosen by measurement (see README, "Choosing the
    /// recipe"): every term (top_k = 0) plus word bigrams, HMM off.
    pub fn new() -> Recipe {
        Recipe::with(0, 2, false)
    }

    /// A recipe of this build with the configurable parts given.
    pub fn with(top_k: u32, shingle: u32, hmm: bool) -> Recipe {
        Recipe {
            tokenizer: TOKENIZER.to_string(),
            hmm,
            idf: format!("jieba-rs-0.11/idf.txt/xxh3={:016x}", idf_table_hash()),
            stopwords: format!("simdb-v1/xxh3={:016x}", stopwords::lists_hash()),
            top_k,
            shingle: shingle.max(1),
            hash: HASH.to_string(),
            width: super::WIDTH,
            tie_rule: TIE_RULE.to_string(),
        }
    }

    /// The first field in which `self` and `other` differ, as
    /// `(field, self's value, other's value)`.
    pub fn difference(&self, other: &Recipe) -> Option<(&'static str, String, String)> {
        macro_rules! cmp {
            ($($f:ident),*) => {$(
                if self.$f != other.$f {
                    return Some((stringify!($f), format!("{:?}", self.$f), format!("{:?}", other.$f)));
                }
            )*};
        }
        cmp!(tokenizer, hmm, idf, stopwords, top_k, shingle, hash, width, tie_rule);
        None
    }

    /// Checks the configurable values.
    pub fn validate(&self) -> crate::Result<()> {
        if self.shingle > 5 {
            return Err(crate::Error::Input(format!(
                "shingle size {} is too large (at most 5)",
                self.shingle
            )));
        }
        Ok(())
    }
}

impl Default for Recipe {
    fn default() -> Self {
        Recipe::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difference_names_the_field() {
        let a = Recipe::new();
        assert_eq!(a.difference(&a.clone()), None);
        let mut b = a.clone();
        b.top_k = 20;
        let (field, _, theirs) = a.difference(&b).unwrap();
        assert_eq!(field, "top_k");
        assert_eq!(theirs, "20");
    }

    #[test]
    fn json_round_trip() {
        let a = Recipe::with(5, 3, true);
        let s = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Recipe>(&s).unwrap(), a);
    }
}
