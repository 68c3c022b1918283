//! The fingerprint recipe: everything that changes a fingerprint.
//!
//! A store records its recipe at creation and checks it at every open
//! (tantivy's "incompatibility" habit): two fingerprints are only comparable
//! if they were made by the same recipe.

use serde::{Deserialize, Serialize};

use super::idf::idf_table_hash;
use super::sketch::Fill;
use super::stopwords;

/// Tokenizer identity of this build.
pub const TOKENIZER: &str = "nfkc+lowercase;cjk=jieba-rs-0.11/default-dict;other=alnum-runs";
/// Feature hash identity of this build.
pub const HASH: &str = "xxh3-64/seed=0/utf8";
/// Tie rule identity of this build.
pub const TIE_RULE: &str = "bit=1 iff sum>0";
/// `stopwords` value of a recipe that keeps stop words.
pub const NO_STOPWORDS: &str = "none";
/// `tf` value: a term's weight is its count times its IDF.
pub const TF_RAW: &str = "raw";
/// `tf` value: a term's weight is `(1 + ln count)` times its IDF (repeated
/// boilerplate weighs less).
pub const TF_LOG: &str = "log";

fn tf_raw() -> String {
    TF_RAW.to_string()
}

/// `sketch` value of stores made before the field existed: b-bit MinHash
/// of word 3-shingles.
pub const SKETCH_WORDS3: &str = "bbit-minhash-2x128/word-3-shingles";

fn sketch_words3() -> String {
    SKETCH_WORDS3.to_string()
}

/// `script` value of stores made before the field existed: no folding.
pub const SCRIPT_NONE: &str = "none";
pub use super::script::SCRIPT_T2S;

fn script_none() -> String {
    SCRIPT_NONE.to_string()
}

/// `latin` value of stores made before the field existed: each word of a
/// script without segmentation (Latin, Cyrillic, digits, ...) is a feature.
pub const LATIN_WORDS: &str = "words";

fn latin_words() -> String {
    LATIN_WORDS.to_string()
}

/// How a recipe makes features of words that are not cut by jieba (Latin,
/// Cyrillic, Greek, kana, digits: every run of letters and digits outside
/// the CJK ideographs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatinFeatures {
    /// The word is the feature.
    Words,
    /// The word's character n-grams, the word padded with a space at each
    /// end, share the word's weight equally: a typo touches at most n of
    /// them instead of replacing the word.
    Grams(usize),
}

impl LatinFeatures {
    /// Parses a recipe's `latin` value.
    pub fn parse(s: &str) -> Option<LatinFeatures> {
        if s == LATIN_WORDS {
            return Some(LatinFeatures::Words);
        }
        let n: usize = s
            .strip_prefix("char-")?
            .strip_suffix("-grams")?
            .parse()
            .ok()?;
        (2..=8).contains(&n).then_some(LatinFeatures::Grams(n))
    }

    /// The recipe's `latin` value.
    pub fn name(self) -> String {
        match self {
            LatinFeatures::Words => LATIN_WORDS.to_string(),
            LatinFeatures::Grams(n) => format!("char-{n}-grams"),
        }
    }
}

/// The word features of new stores (see [`LatinFeatures`]).
pub const DEFAULT_LATIN: LatinFeatures = LatinFeatures::Grams(3);

/// The verification sketch of new stores: character n-grams of the text's
/// letters and digits, so that an edited character touches n shingles
/// (not the three word 3-shingles of every word it re-segments) and
/// punctuation and spacing do not count (see README, "Verification").
pub const DEFAULT_SKETCH_CHARS: usize = 4;

/// How a recipe weighs a term's count (its `tf` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TfWeighting {
    /// count × idf.
    Raw,
    /// (1 + ln count) × idf.
    Log,
}

/// Whether a recipe drops the stop-word lists' words (its `stopwords`
/// field: the lists' identity, or `none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopWords {
    Dropped,
    Kept,
}

/// The verification signature a recipe names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SketchKind {
    /// b-bit MinHash of word 3-shingles (stores made before version 3 of
    /// the record).
    Words3,
    /// b-bit MinHash of character n-grams of letters and digits, empty bins
    /// filled by [`Fill`]: rehashed in new stores, copied in stores created
    /// before 2026-11-27.
    Chars(usize, Fill),
}

/// Suffix of the `sketch` value of character sketches whose empty bins are
/// filled with rehashed values ([`Fill::Rehash`]).
const FILL_REHASHED: &str = "/fill-rehashed";

impl SketchKind {
    /// Parses a recipe's `sketch` value.
    pub fn parse(s: &str) -> Option<SketchKind> {
        if s == SKETCH_WORDS3 {
            return Some(SketchKind::Words3);
        }
        let (s, fill) = match s.strip_suffix(FILL_REHASHED) {
            Some(s) => (s, Fill::Rehash),
            None => (s, Fill::Copy),
        };
        let n: usize = s
            .strip_prefix("bbit-minhash-2x128/char-")?
            .strip_suffix("-grams-alnum")?
            .parse()
            .ok()?;
        (1..=16).contains(&n).then_some(SketchKind::Chars(n, fill))
    }

    /// The recipe's `sketch` value.
    pub fn name(self) -> String {
        match self {
            SketchKind::Words3 => SKETCH_WORDS3.to_string(),
            SketchKind::Chars(n, Fill::Copy) => format!("bbit-minhash-2x128/char-{n}-grams-alnum"),
            SketchKind::Chars(n, Fill::Rehash) => {
                format!("bbit-minhash-2x128/char-{n}-grams-alnum{FILL_REHASHED}")
            }
        }
    }
}

/// The verification sketch of new stores.
pub const DEFAULT_SKETCH: SketchKind = SketchKind::Chars(DEFAULT_SKETCH_CHARS, Fill::Rehash);

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
    /// Identity of the IDF table (name and xxh3-64 of its bytes): jieba's
    /// bundled table, or a table learned from the user's corpus at `init`
    /// (`learned/…`, kept in the store).
    pub idf: String,
    /// Identity of the stop-word lists (xxh3-64), or `none` (kept).
    pub stopwords: String,
    /// Term-frequency weighting: `raw` (count) or `log` (1 + ln count).
    /// Stores made before this field existed are `raw`.
    #[serde(default = "tf_raw")]
    pub tf: String,
    /// The verification sketch stored with each document ([`SketchKind`]).
    /// Not part of the fingerprint, but sketches are only comparable under
    /// one definition. Stores made before this field existed use word
    /// 3-shingles.
    #[serde(default = "sketch_words3")]
    pub sketch: String,
    /// Script folding after normalisation: `none` or [`SCRIPT_T2S`](crate::fingerprint::SCRIPT_T2S).
    /// Stores made before this field existed fold nothing.
    #[serde(default = "script_none")]
    pub script: String,
    /// Features of words outside the CJK ideographs ([`LatinFeatures`]).
    /// Stores made before this field existed use the words.
    #[serde(default = "latin_words")]
    pub latin: String,
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
    /// The default recipe, chosen by measurement (see docs/recipe.md, "Choosing the
    /// defaults"): every term (top_k = 0), words only (shingle = 1), HMM
    /// off, jieba's IDF, stop words dropped, raw tf. Paired with the
    /// verification sketch (`db::DEFAULT_MIN_SIMILARITY`), it has the best
    /// F1 at k = 3 among the recipes measured that keep false pairs under 1%.
    pub fn new() -> Recipe {
        Recipe::with(0, 1, false)
    }

    /// A recipe of this build with the configurable parts given.
    pub fn with(top_k: u32, shingle: u32, hmm: bool) -> Recipe {
        Recipe {
            tokenizer: TOKENIZER.to_string(),
            hmm,
            idf: format!("jieba-rs-0.11/idf.txt/xxh3={:016x}", idf_table_hash()),
            stopwords: format!("simdb-v1/xxh3={:016x}", stopwords::lists_hash()),
            tf: tf_raw(),
            sketch: DEFAULT_SKETCH.name(),
            script: SCRIPT_T2S.to_string(),
            latin: DEFAULT_LATIN.name(),
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
        cmp!(
            tokenizer, hmm, idf, stopwords, tf, sketch, script, latin, top_k, shingle, hash, width,
            tie_rule
        );
        None
    }

    /// The recipe this build makes for the configurable parts of `stored`
    /// (sizes, HMM, stop-word and tf choices, and a learned IDF's
    /// identity): equal to `stored` exactly when this build fingerprints
    /// as the build that made it.
    pub fn this_build_of(stored: &Recipe) -> Recipe {
        let mut r = Recipe::with(stored.top_k, stored.shingle, stored.hmm);
        if stored.stop_words() == StopWords::Kept {
            r = r.keeping_stop_words();
        }
        if stored.tf_weighting().ok() == Some(TfWeighting::Log) {
            r = r.with_log_tf();
        }
        if stored.uses_learned_idf() {
            r.idf = stored.idf.clone();
        }
        if let Some(kind) = SketchKind::parse(&stored.sketch) {
            r.sketch = kind.name();
        }
        if stored.script == SCRIPT_NONE {
            r.script = script_none();
        }
        if let Some(latin) = LatinFeatures::parse(&stored.latin) {
            r.latin = latin.name();
        }
        r
    }

    /// Whether this recipe folds traditional characters to simplified.
    pub fn folds_script(&self) -> bool {
        self.script == SCRIPT_T2S
    }

    /// This recipe without script folding (the recipe of stores made
    /// before it existed).
    pub fn without_script_folding(mut self) -> Recipe {
        self.script = script_none();
        self
    }

    /// This recipe with word features `latin`.
    pub fn with_latin(mut self, latin: LatinFeatures) -> Recipe {
        self.latin = latin.name();
        self
    }

    /// The word features this recipe names.
    pub fn latin_features(&self) -> crate::Result<LatinFeatures> {
        LatinFeatures::parse(&self.latin).ok_or_else(|| {
            crate::Error::Input(format!(
                "word features {:?} are not \"{LATIN_WORDS}\" or \"char-N-grams\" (N in 2..=8)",
                self.latin
            ))
        })
    }

    /// What a store of this recipe lacks that `init` gives a new store of
    /// the same settings today, in words (empty when nothing): script
    /// folding and word n-grams, which came with issue 27.
    pub fn behind(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.folds_script() {
            out.push(format!(
                "script: {:?} (new stores fold traditional characters to simplified, {SCRIPT_T2S:?})",
                self.script
            ));
        }
        if let Ok(SketchKind::Chars(_, Fill::Copy)) = self.sketch_kind() {
            out.push(format!(
                "sketch: {:?} (new stores fill a short text's empty sketch bins with rehashed values, {:?}, so that short unrelated texts are not confirmed)",
                self.sketch,
                DEFAULT_SKETCH.name()
            ));
        }
        if self.latin_features().ok() != Some(DEFAULT_LATIN) {
            out.push(format!(
                "latin: {:?} (new stores make {:?} of words outside the ideographs, so typos move fewer bits)",
                self.latin,
                DEFAULT_LATIN.name()
            ));
        }
        out
    }

    /// The recipe of stores made before script folding and word n-grams:
    /// this recipe with neither.
    pub fn before_reposts(self) -> Recipe {
        self.without_script_folding()
            .with_latin(LatinFeatures::Words)
    }

    /// The term-frequency weighting this recipe names.
    pub fn tf_weighting(&self) -> crate::Result<TfWeighting> {
        match self.tf.as_str() {
            TF_RAW => Ok(TfWeighting::Raw),
            TF_LOG => Ok(TfWeighting::Log),
            other => Err(crate::Error::Input(format!(
                "term-frequency weighting {other:?} is not \"{TF_RAW}\" or \"{TF_LOG}\""
            ))),
        }
    }

    /// Whether this recipe drops stop words.
    pub fn stop_words(&self) -> StopWords {
        if self.stopwords == NO_STOPWORDS {
            StopWords::Kept
        } else {
            StopWords::Dropped
        }
    }

    /// This recipe with verification sketch `kind`.
    pub fn with_sketch(mut self, kind: SketchKind) -> Recipe {
        self.sketch = kind.name();
        self
    }

    /// The verification sketch this recipe names.
    pub fn sketch_kind(&self) -> crate::Result<SketchKind> {
        SketchKind::parse(&self.sketch).ok_or_else(|| {
            crate::Error::Input(format!(
                "verification sketch {:?} is not one this build makes",
                self.sketch
            ))
        })
    }

    /// This recipe with stop words kept.
    pub fn keeping_stop_words(mut self) -> Recipe {
        self.stopwords = NO_STOPWORDS.to_string();
        self
    }

    /// This recipe with `(1 + ln tf)` term weights.
    pub fn with_log_tf(mut self) -> Recipe {
        self.tf = TF_LOG.to_string();
        self
    }

    /// This recipe with IDF from `table` (learned from the user's corpus).
    pub fn with_learned_idf(mut self, table: &super::LearnedIdf) -> Recipe {
        self.idf = table.identity();
        self
    }

    /// Whether the IDF is a learned table (kept in the store).
    pub fn uses_learned_idf(&self) -> bool {
        self.idf.starts_with("learned/")
    }

    /// Checks the configurable values.
    pub fn validate(&self) -> crate::Result<()> {
        self.tf_weighting()?;
        self.sketch_kind()?;
        self.latin_features()?;
        if self.script != SCRIPT_NONE && self.script != SCRIPT_T2S {
            return Err(crate::Error::Input(format!(
                "script folding {:?} is not \"{SCRIPT_NONE}\" or \"{SCRIPT_T2S}\"",
                self.script
            )));
        }
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

    #[test]
    fn sketch_kinds_are_named_and_old_stores_keep_theirs() {
        for kind in [
            SketchKind::Words3,
            SketchKind::Chars(4, Fill::Copy),
            SketchKind::Chars(4, Fill::Rehash),
            SketchKind::Chars(5, Fill::Rehash),
        ] {
            assert_eq!(SketchKind::parse(&kind.name()), Some(kind));
        }
        // The value of stores made before the rehashed fill.
        assert_eq!(
            SketchKind::parse("bbit-minhash-2x128/char-4-grams-alnum"),
            Some(SketchKind::Chars(4, Fill::Copy))
        );
        assert_eq!(Recipe::default().sketch_kind().unwrap(), DEFAULT_SKETCH);
        assert_eq!(
            SketchKind::parse("bbit-minhash-2x128/char-4-grams-alnum/fill-other"),
            None
        );
        // A store keeps its fill; `behind` says what a new store does.
        let old = Recipe::default().with_sketch(SketchKind::Chars(4, Fill::Copy));
        assert_eq!(Recipe::this_build_of(&old), old);
        assert!(old.behind().iter().any(|b| b.starts_with("sketch:")));
        assert!(Recipe::default().behind().is_empty());
    }
}
