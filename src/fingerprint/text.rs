//! Text to weighted features, and features to a fingerprint.

use std::borrow::Cow;
use std::sync::OnceLock;

use jieba_rs::Jieba;
use rustc_hash::{FxHashMap, FxHashSet};
use unicode_normalization::UnicodeNormalization;

use super::idf::{idf, LearnedIdf};
use super::{simhash_sums, simhash_weighted, stopwords, Fingerprint, Recipe};
use crate::error::{Error, Result};

fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

fn stop_words() -> &'static FxHashSet<&'static str> {
    static STOP: OnceLock<FxHashSet<&'static str>> = OnceLock::new();
    STOP.get_or_init(|| {
        stopwords::ENGLISH
            .iter()
            .chain(stopwords::CHINESE.iter())
            .copied()
            .collect()
    })
}

/// Whether `c` is a CJK unified ideograph (the characters jieba segments).
#[inline]
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
        | 0x20000..=0x2A6DF | 0x2A700..=0x2EBEF | 0x30000..=0x3134F)
}

/// `c` normalised (NFKC, then lower case) when `c` is one of the common
/// characters that are normalisation boundaries: ASCII, CJK ideographs,
/// full-width ASCII and the CJK punctuation U+3000..=U+3011. `None` for
/// the rest. (The tests check both claims against the Unicode tables.)
#[inline]
fn simple_form(c: char) -> Option<char> {
    match c as u32 {
        0..=0x7F => Some(c.to_ascii_lowercase()),
        0x4E00..=0x9FFF | 0x3001..=0x3011 => Some(c),
        0x3000 => Some(' '),
        0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).map(|a| a.to_ascii_lowercase()),
        _ => None,
    }
}

/// A weighted feature.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Feature {
    pub name: String,
    pub weight: f64,
}

/// What [`Fingerprinter::analyze`] finds in a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub fingerprint: Fingerprint,
    /// The verification sketch of the term sequence.
    pub sketch: Option<super::Sketch>,
    /// The fine sketch ([`super::fine`]) of a recipe whose sketch is of
    /// character n-grams; `None` otherwise.
    pub fine: Option<super::FineSketch>,
    /// Number of terms (stop words dropped), counting repeats.
    pub terms: usize,
    /// Number of distinct terms.
    pub distinct_terms: usize,
    /// The heaviest terms (words, not shingles), heaviest first, at most
    /// [`TOP_TERMS`]; kept in the record for `query --explain`.
    pub top_terms: Vec<String>,
    /// The fingerprint's least-confident bits, weakest first (at most
    /// [`super::WEAK_BITS`]; empty when unknown, as for a bare
    /// fingerprint): what confidence-ranked probing flips.
    pub weak_bits: Vec<u8>,
    /// The text's [`super::parts::QUERY_PARTS`] smallest part hashes,
    /// ascending (empty without a text, or for one of fewer than
    /// [`super::parts::MIN_CHARS`] letters and digits). A query looks them
    /// all up, and a record keeps them all for the queries made from it;
    /// the first [`super::parts::PARTS`] are indexed.
    pub parts: Vec<u64>,
}

/// How many of a document's heaviest terms its record keeps.
pub const TOP_TERMS: usize = 8;

/// Documents with fewer terms than this (stop words dropped, repeats
/// counted) are *short*: a single edit moves many of their fingerprint
/// bits, so their near-copies often lie beyond k = 3 (see docs/recipe.md, "Short
/// texts"). Ingest flags them and `stats` counts them.
pub const SHORT_TERMS: usize = 10;

impl Analysis {
    /// A fingerprint with nothing else known (imported fingerprints,
    /// pre-weighted features).
    pub fn bare(fingerprint: Fingerprint) -> Analysis {
        Analysis {
            fingerprint,
            sketch: None,
            fine: None,
            terms: 0,
            distinct_terms: 0,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            parts: Vec::new(),
        }
    }

    /// Whether the text was short (see [`SHORT_TERMS`]).
    pub fn is_short(&self) -> bool {
        self.terms > 0 && self.terms < SHORT_TERMS
    }
}

impl From<Fingerprint> for Analysis {
    fn from(fp: Fingerprint) -> Analysis {
        Analysis::bare(fp)
    }
}

impl LearnedIdf {
    /// Learns document frequencies from `texts` with `f`'s segmentation
    /// and stop words (see [`IdfLearner`] to feed texts one at a time).
    pub fn learn<'a>(f: &Fingerprinter, texts: impl IntoIterator<Item = &'a str>) -> LearnedIdf {
        let mut l = IdfLearner::new(f.clone());
        for t in texts {
            l.add(t);
        }
        l.finish()
    }
}

/// Builds a [`LearnedIdf`] from texts fed one at a time: memory holds the
/// distinct terms and their document counts, not the texts.
#[derive(Debug)]
pub struct IdfLearner {
    f: Fingerprinter,
    df: FxHashMap<String, u64>,
    docs: u64,
}

impl IdfLearner {
    /// A learner using `f`'s segmentation and stop words.
    pub fn new(f: Fingerprinter) -> IdfLearner {
        IdfLearner {
            f,
            df: FxHashMap::default(),
            docs: 0,
        }
    }

    /// Counts one document.
    pub fn add(&mut self, text: &str) {
        self.docs += 1;
        let norm = self.f.normal(text);
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        self.f.segment(&norm, |t| {
            seen.insert(t);
        });
        for t in seen {
            match self.df.get_mut(t) {
                Some(n) => *n += 1,
                None => {
                    self.df.insert(t.to_string(), 1);
                }
            }
        }
    }

    /// Documents counted so far.
    pub fn docs(&self) -> u64 {
        self.docs
    }

    /// The table: terms in at least two documents, `ln(N / df)`.
    pub fn finish(self) -> LearnedIdf {
        let docs = self.docs;
        let mut terms: Vec<(String, u64)> = self.df.into_iter().filter(|(_, n)| *n >= 2).collect();
        terms.sort_unstable();
        let mut bytes = format!("simdb-idf v1 docs={docs}\n");
        for (t, n) in &terms {
            bytes += &format!("{t}\t{:.6}\n", (docs as f64 / *n as f64).ln());
        }
        #[allow(
            clippy::expect_used,
            reason = "the bytes were written just above in the form parse reads, and every \
                      value is finite and >= 0 (ln(N / df) with 2 <= df <= N)"
        )]
        let table = LearnedIdf::parse(&bytes).expect("a table just written parses");
        table
    }
}

/// Turns text into features and fingerprints according to a [`Recipe`].
///
/// Cheap to clone and `Sync`: the jieba dictionary and IDF table are loaded
/// once per process, on first use.
#[derive(Debug, Clone)]
pub struct Fingerprinter {
    recipe: Recipe,
    learned: Option<std::sync::Arc<LearnedIdf>>,
    keep_stop_words: bool,
    log_tf: bool,
    sketch: super::SketchKind,
    fold_script: bool,
    latin: super::LatinFeatures,
}

impl Fingerprinter {
    /// A fingerprinter for `recipe`.
    ///
    /// A recipe that names a learned IDF table needs the table
    /// ([`Fingerprinter::with_learned_idf`]): without it, fingerprinting
    /// is refused with [`Error::Input`] (never done with another table).
    pub fn new(recipe: Recipe) -> Fingerprinter {
        Fingerprinter::build(recipe, None)
    }

    /// The error of a fingerprinter whose recipe names a learned IDF table
    /// it was not given.
    fn check_idf(&self) -> Result<()> {
        if self.learned.is_none() && self.recipe.uses_learned_idf() {
            return Err(Error::Input(format!(
                "the recipe names the learned IDF table {:?}, which was not given \
                 (Fingerprinter::with_learned_idf)",
                self.recipe.idf
            )));
        }
        Ok(())
    }

    /// A fingerprinter for `recipe` whose IDF is `table` (the recipe's
    /// `idf` must be the table's identity).
    pub fn with_learned_idf(recipe: Recipe, table: LearnedIdf) -> Result<Fingerprinter> {
        if recipe.idf != table.identity() {
            return Err(Error::Input(format!(
                "the recipe names IDF table {:?}, the table given is {:?}",
                recipe.idf,
                table.identity()
            )));
        }
        Ok(Fingerprinter::build(
            recipe,
            Some(std::sync::Arc::new(table)),
        ))
    }

    fn build(recipe: Recipe, learned: Option<std::sync::Arc<LearnedIdf>>) -> Fingerprinter {
        Fingerprinter {
            keep_stop_words: recipe.stop_words() == super::StopWords::Kept,
            // An unknown weighting is refused by Recipe::validate (at
            // create and at open).
            log_tf: recipe.tf_weighting().ok() == Some(super::TfWeighting::Log),
            // An unknown sketch name is refused by Recipe::validate (at
            // create) and by the recipe check at open; word 3-shingles are
            // what such a store could only have had.
            sketch: recipe.sketch_kind().unwrap_or(super::SketchKind::Words3),
            fold_script: recipe.folds_script(),
            latin: recipe
                .latin_features()
                .unwrap_or(super::LatinFeatures::Words),
            recipe,
            learned,
        }
    }

    /// The verification sketch of normalised text `norm` whose terms are
    /// `terms`, as the recipe defines it.
    fn sketch_of(&self, norm: &str, terms: &[&str]) -> Option<super::Sketch> {
        self.sketches_of(norm, terms).0
    }

    /// The verification sketch and the fine sketch of normalised text
    /// `norm` whose terms are `terms` (a fine sketch only for a sketch of
    /// character n-grams), from one pass over its shingles.
    fn sketches_of(
        &self,
        norm: &str,
        terms: &[&str],
    ) -> (Option<super::Sketch>, Option<super::FineSketch>) {
        match self.sketch {
            super::SketchKind::Words3 => (super::Sketch::of_terms(terms), None),
            super::SketchKind::Chars(n, fill) => match super::sketch::char_shingles(norm, n) {
                Some(sh) => (
                    super::Sketch::of_shingles(sh.iter().copied(), fill),
                    super::FineSketch::of_shingles(sh),
                ),
                None => (None, None),
            },
        }
    }

    /// The verification sketch of `text` under this recipe.
    pub fn sketch(&self, text: &str) -> Option<super::Sketch> {
        let norm = self.normal(text);
        let mut terms: Vec<&str> = Vec::new();
        if self.sketch == super::SketchKind::Words3 {
            self.segment(&norm, |t| terms.push(t));
        }
        self.sketch_of(&norm, &terms)
    }

    /// The learned IDF table, if the recipe uses one.
    pub fn learned_idf(&self) -> Option<&LearnedIdf> {
        self.learned.as_deref()
    }

    /// The IDF of `term` under this recipe.
    pub fn idf(&self, term: &str) -> f64 {
        match &self.learned {
            Some(l) => l.get(term),
            None => idf(term),
        }
    }

    /// The recipe.
    pub fn recipe(&self) -> &Recipe {
        &self.recipe
    }

    /// Loads jieba-rs's dictionary now rather than on first use, when the
    /// recipe's HMM needs it (the built-in tables need no loading).
    pub fn warm_up(&self) {
        if self.recipe.hmm {
            let _ = jieba();
        }
    }

    /// `text` as this recipe normalises it: [`Fingerprinter::normalize`],
    /// then, when the recipe says so, traditional characters folded to
    /// simplified and Taiwan vocabulary to mainland (see `script.rs`).
    pub fn normal(&self, text: &str) -> String {
        let norm = Self::normalize(text);
        if self.fold_script && !norm.is_ascii() {
            super::script::fold(&norm)
        } else {
            norm
        }
    }

    /// Normalised text: NFKC, then lower case.
    pub fn normalize(text: &str) -> String {
        if text.is_ascii() {
            return text.to_ascii_lowercase();
        }
        // The common characters (ASCII, ideographs, full-width ASCII, CJK
        // punctuation) are mapped one by one (`simple_form`); the rest goes
        // through NFKC in runs. A simple character is a normalisation
        // boundary (a starter that never composes with what precedes it),
        // so cutting before it changes nothing; it is mapped alone only when
        // what follows is simple too, since a combining mark after it would
        // compose with it.
        let mut out = String::with_capacity(text.len());
        let mut run: Option<usize> = None;
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let next_simple = chars.peek().is_none_or(|&(_, n)| simple_form(n).is_some());
            match simple_form(c) {
                Some(f) if next_simple => {
                    if let Some(s) = run.take() {
                        out.extend(text[s..i].nfkc().flat_map(char::to_lowercase));
                    }
                    out.push(f);
                }
                _ => {
                    run.get_or_insert(i);
                }
            }
        }
        if let Some(s) = run {
            out.extend(text[s..].nfkc().flat_map(char::to_lowercase));
        }
        out
    }

    /// The terms of `text` in order, stop words removed.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let norm = self.normal(text);
        let mut out = Vec::new();
        self.segment(&norm, |t| out.push(t.to_string()));
        out
    }

    fn segment<'a>(&self, norm: &'a str, mut emit: impl FnMut(&'a str)) {
        let stop = stop_words();
        let keep_stop = self.keep_stop_words;
        let mut push = |t: &'a str| {
            if (keep_stop || !stop.contains(t)) && t.chars().any(super::is_alphanumeric) {
                emit(t)
            }
        };
        #[derive(PartialEq, Clone, Copy)]
        enum Class {
            Cjk,
            Word,
            Sep,
        }
        let class = |c: char| {
            if is_cjk(c) {
                Class::Cjk
            } else if c.is_alphanumeric() {
                Class::Word
            } else {
                Class::Sep
            }
        };
        let mut start = 0;
        let mut cur = Class::Sep;
        let flush = |cls: Class, run: &'a str, push: &mut dyn FnMut(&'a str)| match cls {
            // Without the HMM (the default), the built-in dictionary cuts
            // as jieba-rs does without its start-up cost; the HMM needs
            // jieba-rs itself.
            Class::Cjk if self.recipe.hmm => {
                for tok in jieba().cut(run, true) {
                    push(tok.word);
                }
            }
            Class::Cjk => super::dict::cut(run, &mut *push),
            Class::Word => push(run),
            Class::Sep => {}
        };
        for (i, c) in norm.char_indices() {
            let cl = class(c);
            if cl != cur {
                flush(cur, &norm[start..i], &mut push);
                start = i;
                cur = cl;
            }
        }
        flush(cur, &norm[start..], &mut push);
    }

    /// The weighted features of `text`, heaviest first (ties by name), after
    /// the recipe's top-K cut.
    pub fn features(&self, text: &str) -> Vec<Feature> {
        let norm = self.normal(text);
        let mut feats: Vec<Feature> = self
            .unordered_features(&norm)
            .into_iter()
            .map(|(name, weight)| Feature {
                name: name.into_owned(),
                weight,
            })
            .collect();
        sort_by_weight(&mut feats);
        if self.recipe.top_k > 0 {
            feats.truncate(self.recipe.top_k as usize);
        }
        feats
    }

    /// The weighted features of normalised text `norm`, in no particular
    /// order, before the top-K cut. Word features borrow from `norm`.
    fn unordered_features<'a>(&self, norm: &'a str) -> Vec<(Cow<'a, str>, f64)> {
        let mut terms: Vec<&'a str> = Vec::new();
        self.segment(norm, |t| terms.push(t));
        self.features_of_terms(&terms).0
    }

    /// The weighted features of a term sequence, unordered, before the
    /// top-K cut; and each distinct term with its weight (what `top_terms`
    /// ranks, whatever features the recipe makes of the term).
    #[allow(clippy::type_complexity)]
    fn features_of_terms<'a>(
        &self,
        terms: &[&'a str],
    ) -> (Vec<(Cow<'a, str>, f64)>, Vec<(&'a str, f64)>) {
        // term -> (count, idf): one IDF lookup per distinct term.
        let mut tf: FxHashMap<&'a str, (u32, f64)> = FxHashMap::default();
        for t in terms {
            tf.entry(t).or_insert_with(|| (0, self.idf(t))).0 += 1;
        }
        let log_tf = self.log_tf;
        let weight = move |n: u32| {
            if log_tf {
                1.0 + f64::from(n).ln()
            } else {
                f64::from(n)
            }
        };
        let words: Vec<(&'a str, f64)> = tf
            .iter()
            .map(|(t, (n, idf))| (*t, weight(*n) * idf))
            .collect();
        let mut feats: Vec<(Cow<'a, str>, f64)> = Vec::with_capacity(words.len());
        match self.latin {
            super::LatinFeatures::Words => {
                feats.extend(words.iter().map(|&(t, w)| (Cow::Borrowed(t), w)));
            }
            super::LatinFeatures::Grams(n) => {
                let mut grams: FxHashMap<String, f64> = FxHashMap::default();
                for &(t, w) in &words {
                    if t.starts_with(is_cjk) || !t.chars().any(char::is_alphabetic) {
                        // Ideographs (cut by jieba) and numbers stay whole.
                        feats.push((Cow::Borrowed(t), w));
                    } else {
                        word_grams(t, n, w, &mut grams);
                    }
                }
                feats.extend(grams.into_iter().map(|(g, w)| (Cow::Owned(g), w)));
            }
        }

        let n = self.recipe.shingle as usize;
        if n >= 2 && terms.len() >= n {
            let idfs: Vec<f64> = terms.iter().map(|t| tf[t].1).collect();
            let mut sh: FxHashMap<String, (u32, f64)> = FxHashMap::default();
            for (i, w) in terms.windows(n).enumerate() {
                let mut name = String::with_capacity(w.iter().map(|t| t.len() + 1).sum());
                for (j, t) in w.iter().enumerate() {
                    if j > 0 {
                        name.push(' ');
                    }
                    name.push_str(t);
                }
                let mean_idf = idfs[i..i + n].iter().sum::<f64>() / n as f64;
                sh.entry(name).or_insert((0, mean_idf)).0 += 1;
            }
            feats.extend(
                sh.into_iter()
                    .map(|(name, (c, mean_idf))| (Cow::Owned(name), weight(c) * mean_idf)),
            );
        }
        (feats, words)
    }

    /// The fingerprint, verification sketch and term counts of `text`, from
    /// one segmentation.
    ///
    /// Errors: [`Error::NoFeatures`] when nothing usable remains.
    pub fn analyze(&self, text: &str) -> Result<Analysis> {
        self.check_idf()?;
        let norm = self.normal(text);
        let mut terms: Vec<&str> = Vec::new();
        self.segment(&norm, |t| terms.push(t));
        let (mut feats, mut words) = self.features_of_terms(&terms);
        if feats.is_empty() {
            return Err(Error::NoFeatures);
        }
        let distinct_terms = words.len();
        words.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let top_terms = words
            .iter()
            .take(TOP_TERMS)
            .map(|(t, _)| t.to_string())
            .collect();
        if self.recipe.top_k > 0 {
            feats.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            feats.truncate(self.recipe.top_k as usize);
        }
        let sums = simhash_sums(&feats)?;
        let (sketch, fine) = self.sketches_of(&norm, &terms);
        Ok(Analysis {
            fingerprint: sums.fingerprint(),
            // Parts only beside a sketch: they name candidates the sketch
            // then confirms.
            parts: match sketch {
                Some(_) => super::parts::smallest_parts(&norm, super::parts::QUERY_PARTS),
                None => Vec::new(),
            },
            sketch,
            fine,
            terms: terms.len(),
            distinct_terms,
            top_terms,
            weak_bits: sums.weakest(super::WEAK_BITS),
        })
    }

    /// The fingerprint of `text`.
    ///
    /// Errors: [`Error::NoFeatures`] when nothing usable remains.
    pub fn fingerprint(&self, text: &str) -> Result<Fingerprint> {
        self.check_idf()?;
        if self.recipe.top_k > 0 {
            let feats = self.features(text);
            if feats.is_empty() {
                return Err(Error::NoFeatures);
            }
            let pairs: Vec<(&str, f64)> =
                feats.iter().map(|f| (f.name.as_str(), f.weight)).collect();
            return simhash_weighted(&pairs);
        }
        // The simhash sums in name order, so without a top-K cut the
        // features need no ranking.
        let norm = self.normal(text);
        let feats = self.unordered_features(&norm);
        if feats.is_empty() {
            return Err(Error::NoFeatures);
        }
        simhash_weighted(&feats)
    }
}

/// Adds the character `n`-grams of `word`, padded with a space at each end,
/// to `grams`, sharing `weight` equally among them (a padded word of at
/// most `n` characters is one gram).
fn word_grams(word: &str, n: usize, weight: f64, grams: &mut FxHashMap<String, f64>) {
    let padded: Vec<char> = std::iter::once(' ')
        .chain(word.chars())
        .chain(std::iter::once(' '))
        .collect();
    let count = padded.len().saturating_sub(n) + 1;
    let share = weight / count as f64;
    for g in padded.windows(n.min(padded.len())) {
        *grams.entry(g.iter().collect()).or_insert(0.0) += share;
    }
}

/// Heaviest first, ties by name.
fn sort_by_weight(feats: &mut [Feature]) {
    feats.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then_with(|| a.name.cmp(&b.name))
    });
}

#[cfg(test)]
mod tests {
    use super::super::idf::{default_idf, vocabulary};
    use super::*;

    fn fp() -> Fingerprinter {
        Fingerprinter::new(Recipe::with(0, 1, false))
    }

    #[test]
    fn normalisation_folds_width_and_case() {
        assert_eq!(Fingerprinter::normalize("ＡＢＣ１２３"), "abc123");
        assert_eq!(Fingerprinter::normalize("Hello WORLD"), "hello world");
    }

    #[test]
    fn latin_words_and_stop_words() {
        assert_eq!(
            fp().terms("The quick, brown FOX -- jumps over the lazy dog!"),
            ["quick", "brown", "fox", "jumps", "lazy", "dog"]
        );
    }

    #[test]
    fn chinese_is_segmented_by_jieba() {
        let t = fp().terms("我们今天在北京吃了北京烤鸭。");
        assert!(t.contains(&"北京烤鸭".to_string()), "{t:?}");
        assert!(!t.contains(&"我们".to_string()));
        assert!(!t.iter().any(|w| w == "。"));
    }

    #[test]
    fn mixed_text_and_full_width() {
        let a = fp().terms("ＧＰＵ加速");
        let b = fp().terms("gpu加速");
        assert_eq!(a, b);
        assert_eq!(a[0], "gpu");
    }

    #[test]
    fn empty_and_stop_only_texts_have_no_fingerprint() {
        for t in ["", "   ", "，。！？", "the of and", "的了是"] {
            assert!(
                matches!(fp().fingerprint(t), Err(Error::NoFeatures)),
                "{t:?}"
            );
        }
    }

    #[test]
    fn top_k_keeps_the_heaviest() {
        let f = Fingerprinter::new(Recipe::with(2, 1, false).before_reposts());
        let feats = f.features("alpha alpha alpha beta beta gamma");
        assert_eq!(feats.len(), 2);
        assert_eq!(feats[0].name, "alpha");
        assert_eq!(feats[1].name, "beta");
    }

    #[test]
    fn shingles_are_added() {
        let f = Fingerprinter::new(Recipe::with(0, 2, false).before_reposts());
        let names: Vec<String> = f
            .features("red green blue")
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert!(names.contains(&"red green".to_string()));
        assert!(names.contains(&"green blue".to_string()));
        assert_eq!(names.len(), 5);
    }

    #[test]
    fn idf_matches_jieba_rs_tfidf() {
        use jieba_rs::{KeywordExtract, TfIdf};
        // For a one-word sentence jieba-rs's weight is tf*idf/total = idf.
        let tfidf = TfIdf::default();
        let j = Jieba::new();
        for w in ["北京烤鸭", "劳动防护", "经济", "发展"] {
            let kw = tfidf.extract_keywords(&j, w, 1, vec![]);
            assert_eq!(kw.len(), 1, "{w}");
            assert_eq!(kw[0].keyword, w);
            assert!(
                (kw[0].weight - idf(w)).abs() < 1e-9,
                "{w}: {} vs {}",
                kw[0].weight,
                idf(w)
            );
        }
        // A word missing from the table gets the median, as in jieba-rs.
        let kw = tfidf.extract_keywords(&j, "zzqqxx", 1, vec![]);
        assert!((kw[0].weight - default_idf()).abs() < 1e-9);
    }

    #[test]
    fn normalize_fast_path_equals_nfkc_then_lowercase() {
        let slow = |t: &str| -> String { t.nfkc().flat_map(char::to_lowercase).collect() };
        for t in [
            "国务院总理今天在北京主持召开常务会议。",
            "全角ＡＢＣ，１２３　空格", // fullwidth forms and U+3000
            "ΟΔΥΣΣΕΥΣ Σ ς σ",           // Greek capitals and final sigma
            "İstanbul ǅ Ⅻ ﬁ",           // multi-char lowercase, titlecase, compat
            "兀 ⼀ 豈 カタカナ ｶﾀｶﾅ",   // Kangxi radical, compat ideograph, half-width kana
            "emoji 😀 and RTL עברית",
            "mixed Case 中文 ÀÉ",
        ] {
            assert_eq!(Fingerprinter::normalize(t), slow(t), "{t:?}");
        }
    }

    #[test]
    fn simple_forms_are_nfkc_lowercase_and_boundaries() {
        use unicode_normalization::char::{canonical_combining_class, decompose_canonical};
        let slow = |t: &str| -> String { t.nfkc().flat_map(char::to_lowercase).collect() };
        let mut simple = 0;
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if let Some(f) = simple_form(c) {
                simple += 1;
                assert_eq!(slow(&c.to_string()), f.to_string(), "{c:?}");
                assert_eq!(canonical_combining_class(c), 0, "{c:?}");
            }
            // No simple character is the second of a canonical pair: none
            // composes with the character before it.
            let mut parts = Vec::new();
            decompose_canonical(c, |d| parts.push(d));
            if parts.len() == 2 {
                assert!(simple_form(parts[1]).is_none(), "{c:?} = {parts:?}");
            }
        }
        assert!(simple > 20_000);
        for c in ('\u{4E00}'..='\u{9FFF}').chain(['a', '1', 'é', '.', '\u{2B73A}']) {
            assert_eq!(
                super::super::is_alphanumeric(c),
                c.is_alphanumeric(),
                "{c:?}"
            );
        }
        // Hangul: a leading and a vowel jamo compose; neither is simple.
        assert!(simple_form('\u{1100}').is_none() && simple_form('\u{1161}').is_none());
    }

    proptest::proptest! {
        #[test]
        fn normalize_equals_nfkc_then_lowercase(
            picks in proptest::collection::vec((0usize..16, 0u32..64), 0..40)
        ) {
            // Simple characters beside combining marks, jamo, compatibility
            // characters and capitals, where a cut in the wrong place shows.
            let pools: [&[char]; 16] = [
                &['a', 'E', 'z', '1', ' ', ',', '.'],
                &['\u{301}', '\u{308}', '\u{327}', '\u{3099}', '\u{309A}', '\u{20DD}'],
                &['中', '国', '\u{4E00}', '\u{9FFF}', '人'],
                &['，', '。', '、', '　', '「', '」', 'Ａ', 'ｚ', '１'],
                &['\u{1100}', '\u{1161}', '\u{11A8}', '가', '\u{AC01}'],
                &['ｶ', 'ﾞ', 'か', 'ﾟ', 'ハ'],
                &['ﬁ', 'Ⅻ', '①', '㍿', '豈', '⼀', 'ǅ'],
                &['Σ', 'ς', 'İ', 'Å', 'Ω', 'K'],
                &['\u{0B47}', '\u{0B3E}', '\u{0DD9}', '\u{0DCF}'],
                &['😀', 'ע', '\u{200D}'],
                &['e', 'o', 'A', 'u'],
                &['\u{301}', '\u{302}', '\u{323}'],
                &['ｶ', 'ﾞ'],
                &['＝', '＿', '～', '｀'],
                &['\u{3000}', '\u{3011}', '\u{3012}', '\u{303F}'],
                &['\u{F900}', '\u{2F800}', '\u{3400}'],
            ];
            let t: String = picks.iter().map(|&(p, i)| pools[p][i as usize % pools[p].len()]).collect();
            let slow: String = t.nfkc().flat_map(char::to_lowercase).collect();
            proptest::prop_assert_eq!(Fingerprinter::normalize(&t), slow);
        }
    }

    #[test]
    fn fingerprint_equals_simhash_of_ranked_features() {
        // fingerprint() skips the ranking when there is no top-K cut.
        let words: Vec<&str> = vocabulary().skip(1000).step_by(37).take(300).collect();
        for (i, r) in [Recipe::with(0, 2, false), Recipe::with(0, 1, false)]
            .into_iter()
            .enumerate()
        {
            let f = Fingerprinter::new(r);
            for n in 0..20 {
                let text: String = (0..50 + n * 7)
                    .map(|j| words[(j * 13 + n * 31 + i) % words.len()])
                    .collect::<Vec<_>>()
                    .join(if n % 2 == 0 { "" } else { "，" });
                let feats = f.features(&text);
                let pairs: Vec<(&str, f64)> =
                    feats.iter().map(|x| (x.name.as_str(), x.weight)).collect();
                assert_eq!(
                    f.fingerprint(&text).unwrap(),
                    simhash_weighted(&pairs).unwrap()
                );
            }
        }
    }

    #[test]
    fn analyze_agrees_with_fingerprint() {
        for recipe in [
            Recipe::default(),
            Recipe::with(5, 1, false),
            Recipe::default().before_reposts(),
        ] {
            let f = Fingerprinter::new(recipe);
            for text in [
                "北京是中国的首都，北京很大。",
                "The quick brown fox jumps",
                "one",
            ] {
                let a = f.analyze(text).unwrap();
                assert_eq!(a.fingerprint, f.fingerprint(text).unwrap(), "{text}");
                let terms = f.terms(text);
                assert_eq!(a.terms, terms.len());
                assert_eq!(
                    a.sketch,
                    super::super::Sketch::of_chars(
                        &Fingerprinter::normalize(text),
                        4,
                        super::super::Fill::Rehash
                    )
                );
                assert_eq!(a.sketch, f.sketch(text));
                let words3 = Fingerprinter::new(
                    f.recipe()
                        .clone()
                        .with_sketch(super::super::SketchKind::Words3),
                );
                assert_eq!(
                    words3.analyze(text).unwrap().sketch,
                    super::super::Sketch::of_terms(&terms)
                );
                assert_eq!(words3.sketch(text), super::super::Sketch::of_terms(&terms));
                // The weak bits are the smallest margins, weakest first.
                assert_eq!(a.weak_bits.len(), super::super::WEAK_BITS);
                let feats = f.features(text);
                let words: Vec<&str> = feats
                    .iter()
                    .filter(|x| !x.name.contains(' '))
                    .take(TOP_TERMS)
                    .map(|x| x.name.as_str())
                    .collect();
                if f.recipe().top_k == 0 && f.recipe().latin == "words" {
                    assert_eq!(a.top_terms, words);
                }
                // Whatever the features, the top terms are terms.
                assert!(a.top_terms.iter().all(|t| terms.contains(t)), "{text}");
            }
            assert!(matches!(f.analyze("the of ,,,"), Err(Error::NoFeatures)));
        }
    }

    #[test]
    fn golden_text_fingerprints() {
        // Pinned: a change here changes stored fingerprints, and needs a new
        // recipe identity (a new value of one of the recipe's fields).
        let zh = "央视网消息：国务院总理今天在北京主持召开常务会议，部署进一步扩大内需。";
        let zh_trad = "央視網消息：國務院總理今天在北京主持召開常務會議，部署進一步擴大內需。";
        let en = "The quick brown fox jumps over the lazy dog.";
        let before = |r: Recipe| r.before_reposts();
        let cases = [
            // Stores made before script folding and word n-grams: unchanged.
            (before(Recipe::with(0, 2, false)), zh, "28ee6073cdf98fb4"),
            (before(Recipe::with(0, 1, false)), zh, "2cae6063cdea2f34"),
            (before(Recipe::with(3, 1, false)), zh, "208fa03bcff183ac"),
            (before(Recipe::with(0, 2, false)), en, "86be94829b52b2e3"),
            // This build's default: both scripts give one fingerprint.
            (Recipe::default(), zh, "2cae6063cdea2f34"),
            (Recipe::default(), zh_trad, "2cae6063cdea2f34"),
            (Recipe::default(), en, "a23f5cd4a0df338d"),
            (Recipe::with(0, 2, false), en, "a2bedc4abb5b27e6"),
        ];
        let mut bad = Vec::new();
        for (r, text, want) in cases {
            let got = Fingerprinter::new(r.clone())
                .fingerprint(text)
                .unwrap()
                .to_string();
            if got != want {
                bad.push(format!(
                    "top_k={} shingle={} script={} latin={} {text:?}: got {got}, want {want}",
                    r.top_k, r.shingle, r.script, r.latin
                ));
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn traditional_script_folds_to_simplified() {
        let f = fp();
        let before = Fingerprinter::new(Recipe::default().before_reposts());
        for (simp, trad) in [
            ("国务院总理主持召开常务会议", "國務院總理主持召開常務會議"),
            ("这个软件的网络连线很稳定", "這個軟件的網絡連線很穩定"),
        ] {
            assert_eq!(f.normal(trad), f.normal(simp));
            assert_eq!(f.analyze(trad).unwrap(), f.analyze(simp).unwrap());
            assert_ne!(
                before.fingerprint(trad).unwrap(),
                before.fingerprint(simp).unwrap()
            );
        }
        // Latin text is untouched.
        assert_eq!(f.normal("Hello World"), "hello world");
    }

    #[test]
    fn word_grams_share_the_word_weight() {
        let mut g = FxHashMap::default();
        word_grams("cat", 3, 3.0, &mut g);
        let mut names: Vec<&String> = g.keys().collect();
        names.sort();
        assert_eq!(names, [" ca", "at ", "cat"]);
        assert!(g.values().all(|w| (*w - 1.0).abs() < 1e-12));
        let mut g = FxHashMap::default();
        word_grams("a", 3, 2.0, &mut g);
        assert_eq!(g.len(), 1);
        assert_eq!(g[" a "], 2.0);
        // Numbers stay whole; ideographs are jieba's words.
        let names: Vec<String> = fp()
            .features("cats 2024 北京")
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert!(names.contains(&"2024".to_string()));
        assert!(names.contains(&"北京".to_string()));
        assert!(names.contains(&" ca".to_string()) && !names.contains(&"cats".to_string()));
    }

    #[test]
    fn a_typo_moves_fewer_bits_with_word_grams() {
        // Over many texts, one typo per ten words: the mean distance drops.
        let words: Vec<&str> = [
            "market", "shares", "company", "profit", "report", "growth", "people", "season",
            "player", "league", "trade", "budget", "minister", "energy", "prices", "network",
            "mobile", "service", "record", "music", "film", "award", "police", "court",
        ]
        .to_vec();
        let (grams, whole) = (fp(), Fingerprinter::new(Recipe::default().before_reposts()));
        let (mut dg, mut dw) = (0u32, 0u32);
        for n in 0..40usize {
            let text: Vec<String> = (0..60)
                .map(|j| words[(j * 7 + n * 5 + j * j * n) % words.len()].to_string())
                .collect();
            let mut typo = text.clone();
            for j in (n % 10..typo.len()).step_by(10) {
                typo[j].insert(1, 'x');
            }
            let (a, b) = (text.join(" "), typo.join(" "));
            dg += grams
                .fingerprint(&a)
                .unwrap()
                .distance(grams.fingerprint(&b).unwrap());
            dw += whole
                .fingerprint(&a)
                .unwrap()
                .distance(whole.fingerprint(&b).unwrap());
        }
        assert!(
            dg * 3 < dw * 2,
            "grams {dg} bits, words {dw} bits over 40 texts"
        );
    }
}
