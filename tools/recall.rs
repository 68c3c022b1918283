//! Recall at realistic edits, beside MinHash LSH, measured in one run.
//!
//! ```text
//! cargo build --release --example recall
//! target/release/examples/recall --corpus ../shared/corpora/zh_news_xwlb.jsonl \
//!     --corpus ../shared/corpora/en_bbc_news.jsonl --sample 300 --seed 1 --out /tmp/recall
//! ```
//!
//! For each corpus, every document is an *original* (the store). From the
//! originals longer than `--min-chars` (200) characters, `--sample` are
//! drawn per edit kind and rate (1, 3, 5%) and copied with that edit:
//!
//! - `chars`: characters substituted, inserted or deleted at random
//!   positions (one of the three at random per edit; new characters drawn
//!   from the corpus's own characters), at r% of the characters;
//! - `words`: words (jieba tokens) substituted, inserted or deleted, at r%
//!   of the words (new words from the corpus);
//! - `typos`: letters inside words replaced, dropped, doubled or swapped
//!   with a neighbour, at r% of the letters and digits;
//! - `punct`: punctuation inserted, deleted or replaced, at r% of the
//!   characters;
//! - `space`: spaces and line breaks inserted or removed, at r% of the
//!   characters;
//! - `wrap` (not in the default `--kinds`): the text wrapped in other text
//!   (words of the corpus) of 10·r% of its length (10, 30, 50%): a header
//!   only, a footer only, or both split at random, one third each: a
//!   repost inside a page;
//! - `trunc` (not in the default `--kinds`): the first 90, 80, 60% of the
//!   text by characters: a "read more" repost;
//! - `mixed` (not in the default `--kinds`): a wrap of 5·r% (5, 15, 25%)
//!   plus 3% character edits;
//! - `swrap` (not in the default `--kinds`): the text between whole
//!   sentences of other documents of the corpus, 10·r% of its length (10,
//!   30, 50%), a header only, a footer only, or both (one third each): a
//!   news aggregator's teasers of other stories above and below an article;
//! - `smixed` (not in the default `--kinds`): a sentence wrap of 5·r% (5,
//!   15, 25%) plus 3% character edits;
//! - `excerpt` (not in the default `--kinds`): a passage of 80, 60, 40% of
//!   the text by characters, from anywhere but its start: a quotation, an
//!   answer reused in part;
//! - `trad` (not in the default `--kinds`): the text converted to
//!   traditional script by OpenCC (the `ferrous-opencc` crate): 1 = `s2t`
//!   (OpenCC's standard characters), 3 = `s2hk` (Hong Kong variants),
//!   5 = `s2twp` (Taiwan variants and Taiwan vocabulary: 软件 → 軟體).
//!
//! Each copy is queried against the originals with:
//!
//! - `before reposts`: the recipe of stores made before script folding and
//!   word n-grams (no folding, Latin words as features), ranked at the
//!   default budget and confirmed by this build's rule;
//! - `exact k=3`, `exact k=7`: this build's recipe, exact radius, verified;
//! - `ranked B`: confidence-ranked probing with budget B buckets, verified
//!   (the default is [`simdb::index::DEFAULT_PROBE_BUDGET`]);
//! - `ranked B + sketch bands` (`--bands sketch`): ranked, plus the band
//!   buckets of `simdb::index::bands` (16 bands of 8 sketch bins, the
//!   candidates within `--band-distance` bits); `--bands BxR` measures
//!   bands of full-width MinHash bins beside them (64-bit band keys);
//! - `minhash`: MinHash LSH with 128 permutations over word 3-shingles
//!   (jieba tokens for Chinese), banded for threshold 0.5 the way
//!   datasketch's `MinHashLSH` chooses its bands (a candidate = shares a
//!   band; no further check, as datasketch answers); and the same over
//!   character 5-grams (letters and digits) and over word 2-grams.
//!
//! Recall = share of copies whose original is among the answers. False
//! pairs: every original is also queried against the other originals; a
//! reported pair is *distinct* when the exact Jaccard similarity of the two
//! texts' character 5-gram sets (letters and digits) is below 0.5. The
//! tool prints reported, distinct and below 0.3 (the reposts prototype's
//! reading of unrelated), buckets read per query (at 50M
//! documents a bucket holds ~763 keys) and candidates checked per query.
//! `recall.json` in `--out` keeps every number. Corpus text is read from the
//! given paths and never written anywhere.

#[path = "common.rs"]
mod common;
use common::MinHashLsh;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde_json::json;
use simdb::fingerprint::{Analysis, Fill, LatinFeatures, Sketch, SketchKind};
use simdb::index::bands::BandProbe;
use simdb::index::parts::PartProbe;
use simdb::index::{MemIndex, ProbePlan};
use simdb::{Fingerprinter, Recipe};

#[derive(Parser)]
struct Args {
    /// A JSONL corpus `{"id","text"}` (repeatable).
    #[arg(long, required = true)]
    corpus: Vec<PathBuf>,
    /// Copies per edit kind and rate.
    #[arg(long, default_value_t = 300)]
    sample: usize,
    /// Only originals longer than this many characters are copied.
    #[arg(long, default_value_t = 200)]
    min_chars: usize,
    /// Use at most this many corpus documents (0 = all).
    #[arg(long, default_value_t = 0)]
    max_docs: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Probe budgets to compare (buckets over the four families).
    #[arg(long, default_value = "16,32,64,128,256")]
    budgets: String,
    /// Edit kinds (chars, words, typos, punct, space; also wrap, trunc,
    /// mixed, trad, swrap, smixed, excerpt).
    #[arg(long, default_value = "chars,words,typos,punct,space")]
    kinds: String,
    /// Sketch similarity a candidate needs (this build's default if unset).
    #[arg(long)]
    threshold: Option<f64>,
    /// Extra verification sketches to compare, as chars:N or words3.
    #[arg(long, default_value = "")]
    sketches: String,
    /// Also sweep sketch kinds (chars:3..6, words3) and thresholds over
    /// the candidates of a ranked plan with this budget (0 = no sweep).
    #[arg(long, default_value_t = 0)]
    sweep: usize,
    /// Also write the planted copies of the first corpus here, as JSONL
    /// `{"text", "original", "kind", "rate"}` (for an end-to-end check with
    /// `simdb query --batch`; keep it outside the repository).
    #[arg(long)]
    write_copies: Option<PathBuf>,
    /// Confirm by similarity alone, without this build's containment rule
    /// (to measure what containment adds).
    #[arg(long)]
    no_containment: bool,
    /// Confirm containment only for a later copy that is the shorter (the
    /// rule before 2026-11-26; this build confirms the shorter inside the
    /// longer whichever came first).
    #[arg(long)]
    containment_later_only: bool,
    /// Word features of the recipe measured: `words` or `char-N-grams`
    /// (this build's default if unset).
    #[arg(long)]
    latin: Option<String>,
    /// Script folding of the recipe measured: `none` or `t2s` (this
    /// build's default if unset).
    #[arg(long)]
    script: Option<String>,
    /// How the sketch of the recipe measured fills empty bins: `rehash`
    /// (new stores) or `copy` (stores made before format 11).
    #[arg(long, default_value = "rehash")]
    fill: String,
    /// Top-K of the recipe measured (this build's default if unset).
    #[arg(long)]
    top_k: Option<u32>,
    /// Also query windows of each text, as `from-to` fractions of its
    /// characters (e.g. `0.15-1,0-0.85`), each ranked at each of
    /// `--window-budgets` (a prototype of query windows for wraps).
    #[arg(long, default_value = "")]
    windows: String,
    #[arg(long, default_value = "32")]
    window_budgets: String,
    /// Also index and query fingerprints of content-defined segments of
    /// about this many terms (0 = none; a prototype of extra fingerprints
    /// per document: each segment of a query is looked up within k = 3).
    #[arg(long, default_value_t = 0)]
    segments: usize,
    /// Also add band candidates: `sketch` = the library's band buckets
    /// (16 bands of 8 two-bit sketch bins, `simdb::index::bands`), `BxR`
    /// = a prototype of B bands of R full-width MinHash bins (64-bit band
    /// keys: what a stored full-width signature would give).
    #[arg(long, default_value = "")]
    bands: String,
    /// Band candidates farther than this many bits from the query are
    /// dropped (64 = none).
    #[arg(long, default_value_t = simdb::index::bands::DEFAULT_BAND_DISTANCE)]
    band_distance: u32,
    /// Of the fingerprints the bands alone find, check only the nearest
    /// this many (0 = all): what bounds a query's reads when a band bucket
    /// holds many fingerprints within the distance bound.
    #[arg(long, default_value_t = simdb::index::bands::DEFAULT_BAND_CANDIDATES)]
    band_cap: usize,
    /// Also add candidates that share a part: each original indexes the
    /// `--parts` smallest hashes of its content-defined chunks (a
    /// prototype of a sketch of a document's parts; 0 = none). A query
    /// looks up its own `--parts-query` smallest.
    #[arg(long, default_value_t = 0)]
    parts: usize,
    /// Chunks of about this many characters (letters and digits of the
    /// normalised text), by the prototype's boundaries (0 = the library's
    /// `simdb::fingerprint::parts`, 16 characters).
    #[arg(long, default_value_t = 0)]
    parts_m: usize,
    /// Chunk hashes a query looks up (0 = twice `--parts`).
    #[arg(long, default_value_t = 0)]
    parts_query: usize,
    /// A part shared by more fingerprints than this names no candidate (a
    /// boilerplate sentence; 0 = no cap; the library's
    /// `PartProbe::max_fingerprints` by default).
    #[arg(long, default_value_t = simdb::index::parts::DEFAULT_PART_FINGERPRINTS)]
    parts_cap: usize,
    /// Containment a pair under the threshold needs (this build's
    /// `simdb::db::MIN_CONTAINMENT` if unset).
    #[arg(long)]
    min_containment: Option<f64>,
    /// The least similarity of a pair confirmed by containment (this
    /// build's `simdb::db::CONTAINMENT_FLOOR` if unset).
    #[arg(long)]
    containment_floor: Option<f64>,
    /// Print this many of each system's unrelated pairs (5-gram Jaccard
    /// below 0.3): their lengths and first characters.
    #[arg(long, default_value_t = 0)]
    show_unrelated: usize,
    /// Print this many copies each `--parts` system missed, with why: the
    /// fingerprints' distance, the bands shared, the parts shared and how
    /// many originals index each, the sketches' similarity, and whether
    /// the rule confirms the pair (what the candidates lost).
    #[arg(long, default_value_t = 0)]
    show_missed: usize,
    /// A prototype for short texts: a pair where a text has at most this
    /// many distinct 4-grams is confirmed by their exact Jaccard (what a
    /// stored set of them would give) instead of the sketch's estimate (0
    /// = never).
    #[arg(long, default_value_t = 0)]
    short_exact: usize,
    /// A prototype: a pair the rule does not confirm is confirmed when
    /// the two texts share at least this many of their 12 smallest parts
    /// (what their records keep) and their similarity reaches
    /// `--parts-confirm-floor` (0 = never).
    #[arg(long, default_value_t = 0)]
    parts_confirm: usize,
    /// The least similarity of a pair `--parts-confirm` confirms.
    #[arg(long, default_value_t = 0.4)]
    parts_confirm_floor: f64,
    /// A prototype: a pair within this many bits is confirmed at
    /// `--near-confirm-floor` (0 = never).
    #[arg(long, default_value_t = 0)]
    near_confirm: u32,
    #[arg(long, default_value_t = 0.4)]
    near_confirm_floor: f64,
    /// The rule before format 14: no pair is refined by the fine sketches.
    #[arg(long)]
    no_fine: bool,
    /// A pair whose sketch estimate is at least this and under the
    /// threshold is estimated again from both its sketches and its fine
    /// sketches (`simdb::fingerprint::fine`; the library's
    /// `fine::REFINE_BELOW` by default).
    #[arg(long, default_value_t = simdb::fingerprint::fine::REFINE_BELOW)]
    refine_below: f64,
    /// Re-estimate every pair with fine sketches, at or above the threshold
    /// too.
    #[arg(long)]
    fine_all: bool,
    /// The containment floor of a refined pair (this build's
    /// `simdb::db::REFINED_CONTAINMENT_FLOOR` if unset).
    #[arg(long)]
    refined_floor: Option<f64>,
    /// Also report the ceiling: every original confirmed by the rule (no
    /// candidate limit; recall only).
    #[arg(long)]
    ceiling: bool,
    /// Where recall.json goes.
    #[arg(long, default_value = "recall-out")]
    out: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Chars,
    Words,
    Typos,
    Punct,
    Space,
    Wrap,
    Trunc,
    Mixed,
    Trad,
    SentenceWrap,
    SentenceMixed,
    Excerpt,
}

impl Kind {
    fn parse(s: &str) -> Kind {
        match s {
            "chars" => Kind::Chars,
            "words" => Kind::Words,
            "typos" => Kind::Typos,
            "punct" => Kind::Punct,
            "space" => Kind::Space,
            "wrap" => Kind::Wrap,
            "trunc" => Kind::Trunc,
            "mixed" => Kind::Mixed,
            "trad" => Kind::Trad,
            "swrap" => Kind::SentenceWrap,
            "smixed" => Kind::SentenceMixed,
            "excerpt" => Kind::Excerpt,
            o => panic!("unknown edit kind {o:?}"),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::Chars => "chars",
            Kind::Words => "words",
            Kind::Typos => "typos",
            Kind::Punct => "punct",
            Kind::Space => "space",
            Kind::Wrap => "wrap",
            Kind::Trunc => "trunc",
            Kind::Mixed => "mixed",
            Kind::Trad => "trad",
            Kind::SentenceWrap => "swrap",
            Kind::SentenceMixed => "smixed",
            Kind::Excerpt => "excerpt",
        }
    }
}

const RATES: [u32; 3] = [1, 3, 5];

impl Kind {
    /// What the three rates of `RATES` are for this kind (the column
    /// heads): edit rates, wrap shares, kept shares, or OpenCC configurations.
    fn rates_label(self) -> &'static str {
        match self {
            Kind::Wrap | Kind::SentenceWrap => "10/30/50%",
            Kind::Mixed | Kind::SentenceMixed => "5/15/25%+3",
            Kind::Trunc => "90/80/60%",
            Kind::Excerpt => "80/60/40%",
            Kind::Trad => "t/hk/tw",
            _ => "1/3/5%",
        }
    }
}
const PUNCT: &[char] = &[
    '，', '。', '、', '；', '：', '！', '？', '“', '”', '（', '）', ',', '.', ';', ':', '!', '?',
    '"', '\'', '(', ')', '-',
];

fn edits(len: usize, rate: u32) -> usize {
    ((len as f64 * f64::from(rate) / 100.0).round() as usize).max(1)
}

/// What the edits draw from.
struct Pools<'a> {
    jieba: &'a jieba_rs::Jieba,
    /// Characters of the corpus (new characters of `chars` and `typos`).
    chars: &'a [char],
    /// Words of the corpus (new words, and the text of wraps).
    words: &'a [String],
    /// OpenCC's s2t, s2hk and s2twp.
    opencc: &'a [ferrous_opencc::OpenCC; 3],
    /// Whole sentences of the corpus's documents (the text of sentence
    /// wraps).
    sentences: &'a [String],
}

/// Applies one edit kind at `rate` percent.
fn apply(kind: Kind, rate: u32, text: &str, pools: &Pools, rng: &mut impl Rng) -> String {
    let (jieba, chars_pool, words_pool, opencc) =
        (pools.jieba, pools.chars, pools.words, pools.opencc);
    let mut cs: Vec<char> = text.chars().collect();
    match kind {
        Kind::Trad => opencc[match rate {
            1 => 0,
            3 => 1,
            _ => 2,
        }]
        .convert(text),
        Kind::Mixed => {
            // A wrap of 5·rate% (as `wrap` makes them), then 3% character edits.
            let wrapped = wrap(text, 5 * rate as usize, words_pool, rng);
            let n = wrapped.chars().count();
            common::edit_chars(&wrapped, edits(n, 3), chars_pool, rng)
        }
        Kind::Chars => common::edit_chars(text, edits(cs.len(), rate), chars_pool, rng),
        Kind::Words => {
            let (mut toks, words) = common::word_tokens(jieba, text);
            let sep = if text.is_ascii() { " " } else { "" };
            for _ in 0..edits(words.len(), rate) {
                let i = *words.choose(rng).expect("words");
                let w = words_pool.choose(rng).expect("a word pool");
                match rng.random_range(0..3) {
                    0 => toks[i] = w.clone(),
                    1 => toks[i] = format!("{}{sep}{w}", toks[i]),
                    _ => toks[i].clear(),
                }
            }
            toks.concat()
        }
        Kind::Typos => {
            let letters: Vec<usize> = (0..cs.len()).filter(|&i| cs[i].is_alphanumeric()).collect();
            let mut ops: Vec<usize> = letters
                .choose_multiple(rng, edits(letters.len(), rate))
                .copied()
                .collect();
            ops.sort_unstable_by(|a, b| b.cmp(a)); // back to front: indices stay valid
            for at in ops {
                let c = cs[at];
                match rng.random_range(0..4) {
                    0 => cs[at] = *chars_pool.choose(rng).expect("characters"),
                    1 => {
                        cs.remove(at);
                    }
                    2 => cs.insert(at, c),
                    _ => {
                        if at + 1 < cs.len() {
                            cs.swap(at, at + 1);
                        }
                    }
                }
            }
            cs.into_iter().collect()
        }
        Kind::Punct => {
            for _ in 0..edits(cs.len(), rate) {
                let p = *PUNCT.choose(rng).expect("punctuation");
                let puncts: Vec<usize> = (0..cs.len())
                    .filter(|&i| !cs[i].is_alphanumeric() && !cs[i].is_whitespace())
                    .collect();
                match rng.random_range(0..3) {
                    0 if !puncts.is_empty() => {
                        let i = *puncts.choose(rng).expect("non-empty");
                        cs[i] = p;
                    }
                    1 if !puncts.is_empty() => {
                        let i = *puncts.choose(rng).expect("non-empty");
                        cs.remove(i);
                    }
                    _ => {
                        let at = rng.random_range(0..=cs.len());
                        cs.insert(at, p);
                    }
                }
            }
            cs.into_iter().collect()
        }
        Kind::Wrap => wrap(text, 10 * rate as usize, words_pool, rng),
        Kind::SentenceWrap => sentence_wrap(text, 10 * rate as usize, pools.sentences, rng),
        Kind::SentenceMixed => {
            let wrapped = sentence_wrap(text, 5 * rate as usize, pools.sentences, rng);
            let n = wrapped.chars().count();
            common::edit_chars(&wrapped, edits(n, 3), chars_pool, rng)
        }
        Kind::Excerpt => {
            // A passage from the middle: it starts after the first
            // character, anywhere up to where it still fits.
            let keep = cs.len() * excerpt_percent(rate) / 100;
            let start = rng.random_range(1..=(cs.len() - keep).max(1));
            cs[start..(start + keep).min(cs.len())].iter().collect()
        }
        Kind::Trunc => cs[..cs.len() * trunc_percent(rate) / 100].iter().collect(),
        Kind::Space => {
            for _ in 0..edits(cs.len(), rate) {
                let spaces: Vec<usize> = (0..cs.len()).filter(|&i| cs[i].is_whitespace()).collect();
                if rng.random_bool(0.5) && !spaces.is_empty() {
                    let i = *spaces.choose(rng).expect("non-empty");
                    cs.remove(i);
                } else {
                    let at = rng.random_range(0..=cs.len());
                    cs.insert(at, if rng.random_bool(0.8) { ' ' } else { '\n' });
                }
            }
            cs.into_iter().collect()
        }
    }
}

/// The share of the text a `trunc` copy keeps at `rate`: 90, 80, 60%.
fn trunc_percent(rate: u32) -> usize {
    match rate {
        1 => 90,
        3 => 80,
        _ => 60,
    }
}

/// The share of the text an `excerpt` copy keeps at `rate`: 80, 60, 40%.
fn excerpt_percent(rate: u32) -> usize {
    match rate {
        1 => 80,
        3 => 60,
        _ => 40,
    }
}

/// The sentences of `text`: up to and with each sentence end (。！？.!?
/// and line breaks), trimmed, those of 5 characters or more.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if matches!(c, '。' | '！' | '？' | '.' | '!' | '?' | '\n') {
            let t = cur.trim();
            if t.chars().count() >= 5 {
                out.push(t.to_string());
            }
            cur.clear();
        }
    }
    let t = cur.trim();
    if t.chars().count() >= 5 {
        out.push(t.to_string());
    }
    out
}

/// `text` between whole sentences of other documents of the corpus,
/// together `percent`% of its length in characters: a header only, a
/// footer only, or both, one third each (a teaser paragraph of other
/// stories above and below an article).
fn sentence_wrap(text: &str, percent: usize, pool: &[String], rng: &mut impl Rng) -> String {
    let sep = if text.is_ascii() { " " } else { "" };
    wrap_with(text, percent, rng, |chars, rng| {
        let mut out: Vec<&str> = Vec::new();
        let mut n = 0;
        // A sentence that would take the wrap past half again its share
        // is passed over (up to 100 draws): one long sentence would
        // otherwise make a 15% wrap of a short text 50-100% (app_desc).
        let mut draws = 0;
        while n < chars {
            let s = pool.choose(rng).expect("a sentence pool");
            draws += 1;
            let len = s.chars().count();
            if text.contains(s.as_str())
                || (draws < 100 && n + len > (chars * 3 / 2).max(chars + 8))
            {
                continue;
            }
            n += len;
            out.push(s);
        }
        out.join(sep)
    })
}

/// `text` with a header and a footer of corpus words, together `percent`%
/// of its length in characters.
fn wrap(text: &str, percent: usize, words_pool: &[String], rng: &mut impl Rng) -> String {
    let sep = if text.is_ascii() { " " } else { "" };
    wrap_with(text, percent, rng, |chars, rng| {
        let mut out = String::new();
        while out.chars().count() < chars {
            out.push_str(words_pool.choose(rng).expect("a word pool"));
            out.push_str(sep);
        }
        out
    })
}

/// `text` between a header and a footer that `fill` makes of at least so
/// many characters, together `percent`% of its length: a header only, a
/// footer only, or both split at random (real wraps are one-sided as
/// often as two-sided).
fn wrap_with<R: Rng>(
    text: &str,
    percent: usize,
    rng: &mut R,
    mut fill: impl FnMut(usize, &mut R) -> String,
) -> String {
    let extra = text.chars().count() * percent / 100;
    let head_chars = match rng.random_range(0..3) {
        0 => extra,
        1 => 0,
        _ => rng.random_range(0..=extra),
    };
    let head = fill(head_chars, rng);
    let tail = fill(extra - head_chars, rng);
    format!("{head}\n{text}\n{tail}")
}

// --- simdb systems -----------------------------------------------------------

#[derive(Clone)]
enum System {
    Before,
    Exact(u32),
    Ranked(usize),
    /// Ranked at the default budget with another sketch.
    RankedSketch(usize, usize),
    MinHash,
    /// MinHash LSH over character 5-grams.
    MinHashChars,
    /// MinHash LSH over word 2-grams.
    MinHashWords2,
    /// Ranked at the default budget, plus each of `--windows` ranked at
    /// `--window-budget`.
    Windows(usize, usize),
    /// Ranked at the default budget, plus each segment exact within k.
    Segments(usize, u32),
    /// Ranked at the budget, plus candidates sharing one of B bands of R
    /// full-width sketch bins (index into `--bands`).
    Bands(usize, usize, usize, usize),
    /// The library's bands at the budget, plus candidates sharing a part.
    Parts(usize),
    /// Every original, confirmed by the rule (recall's ceiling).
    Ceiling,
}

impl System {
    fn name(&self) -> String {
        match self {
            System::Before => format!(
                "before reposts, ranked {}",
                simdb::index::DEFAULT_PROBE_BUDGET
            ),
            System::Exact(k) => format!("exact k={k}"),
            System::Ranked(b) => format!("ranked {b}"),
            System::RankedSketch(b, s) => format!("ranked {b}, sketch #{s}"),
            System::MinHash => "minhash lsh 0.5".into(),
            System::MinHashChars => "minhash lsh 0.5, char 5-grams".into(),
            System::MinHashWords2 => "minhash lsh 0.5, word 2-grams".into(),
            System::Windows(b, w) => format!("ranked {b} + windows x {w}"),
            System::Segments(b, k) => format!("ranked {b} + segments k={k}"),
            System::Bands(b, _, _, 0) => format!("ranked {b} + sketch bands"),
            System::Bands(b, _, nb, r) => format!("ranked {b} + bands {nb}x{r} full"),
            System::Parts(b) => format!("ranked {b} + sketch bands + parts"),
            System::Ceiling => "ceiling: every original, confirmed".into(),
        }
    }
}

struct Sig {
    /// The text's length in bytes (what containment compares).
    len: u64,
    a: Option<Analysis>,
    old: Option<Analysis>,
    extra: Vec<Option<Sketch>>,
    /// Analyses of `--windows` of the text (empty without them).
    windows: Vec<Analysis>,
    /// Fingerprints of the text's content-defined segments (`--segments`).
    segments: Vec<simdb::Fingerprint>,
    /// Band keys per `--bands` configuration.
    bands: Vec<Vec<u64>>,
    /// The text's distinct 4-grams of letters and digits, sorted, when it
    /// has at most `--short-exact` of them (else empty).
    small: Vec<u64>,
    /// Hashes of the text's content-defined chunks, ascending (`--parts`).
    parts: Vec<u64>,
    /// The fine sketch (`--fine`).
    fine: Option<simdb::fingerprint::FineSketch>,
}

/// How many of their 12 smallest parts (what a record keeps) two texts
/// share.
fn shared_parts(a: &[u64], b: &[u64]) -> usize {
    let b = &b[..b.len().min(12)];
    a.iter().take(12).filter(|p| b.contains(p)).count()
}

/// Why a copy `c` of original `o` was not a candidate, in words: their
/// fingerprints' distance, the band values they share, the copy's query
/// parts that the original indexes (with how many originals index each:
/// more than the cap names none), their sketches' similarity.
fn explain_miss(c: &Sig, o: &Sig, part_counts: &HashMap<u64, usize>, parts_query: usize) -> String {
    let (Some(ca), Some(oa)) = (&c.a, &o.a) else {
        return "no analysis".into();
    };
    let bands = match (ca.sketch, oa.sketch) {
        (Some(x), Some(y)) => {
            let (bx, by) = (
                simdb::index::bands::band_values(&x),
                simdb::index::bands::band_values(&y),
            );
            format!(
                "bands shared {}, similarity {:.2}",
                bx.iter().zip(&by).filter(|(a, b)| a == b).count(),
                x.similarity(&y)
            )
        }
        _ => "no sketch".into(),
    };
    let shared: Vec<String> = c
        .parts
        .iter()
        .take(parts_query)
        .filter(|p| {
            o.parts
                .iter()
                .take(simdb::fingerprint::parts::PARTS)
                .any(|q| q == *p)
        })
        .map(|p| part_counts.get(p).copied().unwrap_or(0).to_string())
        .collect();
    format!(
        "distance {}, {bands}, parts shared {} (indexed by {} originals), lengths {} / {}",
        (ca.fingerprint.0 ^ oa.fingerprint.0).count_ones(),
        shared.len(),
        shared.join("/"),
        c.len,
        o.len
    )
}

/// Hashes of the content-defined chunks of `normal` (a prototype of a
/// sketch of a document's parts), ascending and distinct. Only letters
/// and digits count (punctuation and spacing move no boundary); a chunk
/// ends after the character where the xxh3 of the last 8 characters is
/// 0 modulo `m`, once it has `m / 4` characters, or at `4 m`. A header or
/// a cut moves no boundary inside the text, so the chunks a copy shares
/// whole with its original hash the same.
fn part_hashes(normal: &str, m: usize) -> Vec<u64> {
    const W: usize = 8;
    let cs: Vec<char> = normal.chars().filter(|c| c.is_alphanumeric()).collect();
    let (min, max) = ((m / 4).max(W), 4 * m);
    let mut out = Vec::new();
    let mut start = 0;
    let mut buf = String::new();
    for i in 0..cs.len() {
        let len = i + 1 - start;
        let at = i + 1 >= W && {
            buf.clear();
            buf.extend(&cs[i + 1 - W..=i]);
            xxhash_rust::xxh3::xxh3_64(buf.as_bytes()).is_multiple_of(m as u64)
        };
        if len >= max || (len >= min && at) {
            buf.clear();
            buf.extend(&cs[start..=i]);
            out.push(xxhash_rust::xxh3::xxh3_64(buf.as_bytes()));
            start = i + 1;
        }
    }
    if cs.len() - start >= min {
        buf.clear();
        buf.extend(&cs[start..]);
        out.push(xxhash_rust::xxh3::xxh3_64(buf.as_bytes()));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Fingerprints of the content-defined segments of `terms` (a prototype):
/// a segment ends after a term whose xxh3 is 0 modulo `m` once it has at
/// least `m / 4` terms, or at `4 m` terms; the last segment counts only if
/// it has `m / 4` terms. A header or a cut moves no boundary inside the
/// text, so the segments a copy shares whole with its original have equal
/// fingerprints. Segments are fingerprinted by the recipe, as text.
fn segment_fingerprints(f: &Fingerprinter, terms: &[String], m: usize) -> Vec<simdb::Fingerprint> {
    let (min, max) = ((m / 4).max(2), 4 * m);
    let mut out = Vec::new();
    let mut start = 0;
    for (i, t) in terms.iter().enumerate() {
        let len = i + 1 - start;
        let cut = len >= max
            || (len >= min && xxhash_rust::xxh3::xxh3_64(t.as_bytes()).is_multiple_of(m as u64));
        if cut {
            if let Ok(fp) = f.fingerprint(&terms[start..=i].join(" ")) {
                out.push(fp);
            }
            start = i + 1;
        }
    }
    if terms.len() - start >= min {
        if let Ok(fp) = f.fingerprint(&terms[start..].join(" ")) {
            out.push(fp);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[derive(Default, Clone, serde::Serialize)]
struct Tally {
    found: u64,
    total: u64,
    buckets: u64,
    candidates: u64,
    queries: u64,
    nanos: u64,
}

fn main() {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out).expect("create --out");
    let jieba = jieba_rs::Jieba::new();
    let budgets: Vec<usize> = args
        .budgets
        .split(',')
        .map(|b| b.trim().parse().expect("a budget"))
        .collect();
    let kinds: Vec<Kind> = args
        .kinds
        .split(',')
        .map(|k| Kind::parse(k.trim()))
        .collect();
    let extra_kinds: Vec<SketchKind> = args
        .sketches
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            "words3" => SketchKind::Words3,
            c => SketchKind::Chars(
                c.strip_prefix("chars:")
                    .and_then(|n| n.parse().ok())
                    .expect("chars:N or words3"),
                Fill::Rehash,
            ),
        })
        .collect();
    let mut recipe = Recipe::default();
    if let Some(k) = args.top_k {
        recipe.top_k = k;
    }
    if let Some(l) = &args.latin {
        recipe = recipe.with_latin(LatinFeatures::parse(l).expect("--latin words|char-N-grams"));
    }
    match args.script.as_deref() {
        None | Some("t2s") => {}
        Some("none") => recipe = recipe.without_script_folding(),
        Some(o) => panic!("--script {o:?}: none or t2s"),
    }
    let fill = match args.fill.as_str() {
        "rehash" => Fill::Rehash,
        "copy" => Fill::Copy,
        o => panic!("--fill {o:?}: rehash or copy"),
    };
    recipe = recipe.with_sketch(SketchKind::Chars(4, fill));
    let threshold = args.threshold.unwrap_or(simdb::db::DEFAULT_MIN_SIMILARITY);
    let min_containment = args.min_containment.unwrap_or(simdb::db::MIN_CONTAINMENT);
    let refined_floor = args
        .refined_floor
        .unwrap_or(simdb::db::REFINED_CONTAINMENT_FLOOR);
    let containment_floor = args
        .containment_floor
        .unwrap_or(simdb::db::CONTAINMENT_FLOOR);
    let old_recipe = Recipe::default().before_reposts();
    let opencc = [
        ferrous_opencc::config::BuiltinConfig::S2t,
        ferrous_opencc::config::BuiltinConfig::S2hk,
        ferrous_opencc::config::BuiltinConfig::S2twp,
    ]
    .map(|c| ferrous_opencc::OpenCC::from_config(c).expect("OpenCC's built-in configurations"));
    let (f, old_f) = (
        Fingerprinter::new(recipe.clone()),
        Fingerprinter::new(old_recipe),
    );
    let extra_f: Vec<Fingerprinter> = extra_kinds
        .iter()
        .map(|k| Fingerprinter::new(recipe.clone().with_sketch(*k)))
        .collect();
    let default_budget = simdb::index::DEFAULT_PROBE_BUDGET;
    let windows: Vec<(f64, f64)> = args
        .windows
        .split(',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let (a, b) = w.split_once('-').expect("from-to");
            (
                a.parse().expect("a fraction"),
                b.parse().expect("a fraction"),
            )
        })
        .collect();
    let mut systems = vec![System::Before, System::Exact(3), System::Exact(7)];
    systems.extend(budgets.iter().map(|&b| System::Ranked(b)));
    systems.extend((0..extra_kinds.len()).map(|s| System::RankedSketch(default_budget, s)));
    if !windows.is_empty() {
        systems.extend(
            args.window_budgets
                .split(',')
                .map(|w| System::Windows(default_budget, w.trim().parse().expect("a budget"))),
        );
    }
    if args.segments > 0 {
        systems.push(System::Segments(default_budget, 0));
        systems.push(System::Segments(default_budget, 3));
    }
    let band_cfgs: Vec<(usize, usize)> = args
        .bands
        .split(',')
        .filter(|b| !b.is_empty())
        .map(|b| {
            if b == "sketch" {
                // The library's band buckets: 16 bands of the sketch's
                // 2-bit bins, 8 bins (16 bits) each.
                return (simdb::index::bands::BANDS, 0);
            }
            let (x, y) = b.split_once('x').expect("BxR or sB");
            (x.parse().expect("bands"), y.parse().expect("rows"))
        })
        .collect();
    for (i, &(nb, r)) in band_cfgs.iter().enumerate() {
        for &b in &budgets {
            systems.push(System::Bands(b, i, nb, r));
        }
    }
    if args.parts > 0 {
        systems.extend(budgets.iter().map(|&b| System::Parts(b)));
    }
    if args.ceiling {
        systems.push(System::Ceiling);
    }
    let parts_query = match args.parts_query {
        0 => 2 * args.parts,
        q => q,
    };
    systems.push(System::MinHash);
    systems.push(System::MinHashChars);
    systems.push(System::MinHashWords2);
    println!(
        "recall: seed {}, {} copies per kind and rate, threshold {threshold}, default budget {default_budget}, recipe sketch {}, script {}, latin {}",
        args.seed, args.sample, recipe.sketch, recipe.script, recipe.latin
    );
    let mut report = Vec::new();
    for path in &args.corpus {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let docs = common::load_corpus(path, args.max_docs);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
        let words_pool = common::corpus_words(&jieba, &docs, &mut rng);
        let chars_pool: Vec<char> = (0..300)
            .flat_map(|_| {
                docs.choose(&mut rng)
                    .expect("documents")
                    .1
                    .chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<Vec<_>>()
            })
            .collect();
        let long: Vec<usize> = (0..docs.len())
            .filter(|&i| docs[i].1.chars().count() > args.min_chars)
            .collect();
        let sentence_pool: Vec<String> = (0..2000)
            .flat_map(|_| sentences(&docs.choose(&mut rng).expect("documents").1))
            .collect();
        let mut planted: Vec<(Kind, u32, usize, String)> = Vec::new();
        for &kind in &kinds {
            for rate in RATES {
                for &i in long.choose_multiple(&mut rng, args.sample.min(long.len())) {
                    let pools = Pools {
                        jieba: &jieba,
                        chars: &chars_pool,
                        words: &words_pool,
                        opencc: &opencc,
                        sentences: &sentence_pool,
                    };
                    let copy = apply(kind, rate, &docs[i].1, &pools, &mut rng);
                    planted.push((kind, rate, i, copy));
                }
            }
        }
        if let Some(out) = args.write_copies.as_ref().filter(|_| report.is_empty()) {
            let mut w =
                std::io::BufWriter::new(std::fs::File::create(out).expect("--write-copies"));
            for (kind, rate, i, text) in &planted {
                let line = json!({"text": text, "original": docs[*i].0, "kind": kind.name(), "rate": rate});
                std::io::Write::write_all(&mut w, format!("{line}\n").as_bytes())
                    .expect("write copies");
            }
        }
        let t0 = Instant::now();
        let sig = |t: &str| Sig {
            len: t.len() as u64,
            fine: (!args.no_fine)
                .then(|| simdb::fingerprint::FineSketch::of_chars(&f.normal(t), 4))
                .flatten(),
            a: f.analyze(t).ok(),
            old: old_f.analyze(t).ok(),
            extra: extra_f.iter().map(|x| x.sketch(t)).collect(),
            segments: if args.segments > 0 {
                segment_fingerprints(&f, &f.terms(t), args.segments)
            } else {
                Vec::new()
            },
            small: if args.short_exact > 0 {
                let cs: Vec<char> = f
                    .normal(t)
                    .chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect();
                let mut g: Vec<u64> = cs
                    .windows(4.min(cs.len()).max(1))
                    .map(|w| xxhash_rust::xxh3::xxh3_64(w.iter().collect::<String>().as_bytes()))
                    .collect();
                g.sort_unstable();
                g.dedup();
                if g.len() <= args.short_exact {
                    g
                } else {
                    Vec::new()
                }
            } else {
                Vec::new()
            },
            parts: match (args.parts, args.parts_m) {
                (0, _) => Vec::new(),
                (_, 0) => simdb::fingerprint::parts::part_hashes(&f.normal(t)),
                (_, m) => part_hashes(&f.normal(t), m),
            },
            bands: {
                // Full-width bins only for the `BxR` prototypes (the
                // library's bands read the sketch).
                let bins = band_cfgs
                    .iter()
                    .any(|c| c.1 > 0)
                    .then(|| simdb::fingerprint::Bins::of_chars(&f.normal(t), 4, fill))
                    .flatten();
                band_cfgs
                    .iter()
                    .map(|&(b, r)| match (r, bins.as_ref()) {
                        (_, None) => Vec::new(),
                        (0, Some(_)) => Vec::new(),
                        (r, Some(x)) => x.band_keys(b, r),
                    })
                    .collect()
            },
            windows: {
                let cs: Vec<char> = t.chars().collect();
                windows
                    .iter()
                    .filter_map(|&(a, b)| {
                        let (i, j) = (
                            (a * cs.len() as f64) as usize,
                            (b * cs.len() as f64) as usize,
                        );
                        f.analyze(&cs[i..j.max(i)].iter().collect::<String>()).ok()
                    })
                    .collect()
            },
        };
        let originals: Vec<Sig> = docs.par_iter().map(|(_, t)| sig(t)).collect();
        let copies: Vec<Sig> = planted.par_iter().map(|p| sig(&p.3)).collect();
        let shingles: Vec<Vec<u64>> = docs
            .par_iter()
            .map(|(_, t)| common::char_shingles(t))
            .collect();
        let mut idx = MemIndex::new();
        // With the sketches: the band buckets (`--bands sketch`).
        let mut idx_banded = MemIndex::new();
        let mut idx_old = MemIndex::new();
        let mut idx_seg = MemIndex::new();
        for (i, s) in originals.iter().enumerate() {
            if let Some(a) = &s.a {
                idx.insert(&i.to_string(), a.fingerprint);
                // With the parts too (`--parts`): the library's part
                // buckets; a query without a part probe reads none.
                let k = s.parts.len().min(args.parts);
                idx_banded.insert_parted(&i.to_string(), a.fingerprint, a.sketch, &s.parts[..k]);
            }
            if let Some(a) = &s.old {
                idx_old.insert(&i.to_string(), a.fingerprint);
            }
            for fp in &s.segments {
                idx_seg.insert(&i.to_string(), *fp);
            }
        }
        let mut parts_table: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, s) in originals.iter().enumerate() {
            for h in s.parts.iter().take(args.parts) {
                parts_table.entry(*h).or_default().push(i);
            }
        }
        if args.parts > 0 {
            let mut sizes: Vec<usize> = parts_table.values().map(Vec::len).collect();
            sizes.sort_unstable();
            println!(
                "parts of ~{} characters (0 = the library's): {:.1} per original, {} indexed ({:.2} per original), largest buckets {:?}",
                args.parts_m,
                originals.iter().map(|s| s.parts.len()).sum::<usize>() as f64
                    / originals.len().max(1) as f64,
                parts_table.values().map(Vec::len).sum::<usize>(),
                parts_table.values().map(Vec::len).sum::<usize>() as f64
                    / originals.len().max(1) as f64,
                &sizes[sizes.len().saturating_sub(5)..]
            );
        }
        let mut band_tables: Vec<Vec<HashMap<u64, Vec<usize>>>> = band_cfgs
            .iter()
            .map(|&(b, _)| vec![HashMap::new(); b])
            .collect();
        for (i, s) in originals.iter().enumerate() {
            for (c, keys) in s.bands.iter().enumerate() {
                for (b, k) in keys.iter().enumerate() {
                    band_tables[c][b].entry(*k).or_default().push(i);
                }
            }
        }
        {
            // How near unrelated fingerprints lie: the share of random
            // pairs of originals within D bits (what a band bucket of ~763
            // fingerprints at 50M lets through its distance filter).
            let mut r2 = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed ^ 0x5eed);
            let fps: Vec<simdb::Fingerprint> = originals
                .iter()
                .filter_map(|s| s.a.as_ref().map(|a| a.fingerprint))
                .collect();
            let n = 2_000_000;
            let mut hist = [0u64; 65];
            for _ in 0..n {
                let (x, y) = (r2.random_range(0..fps.len()), r2.random_range(0..fps.len()));
                if x != y {
                    hist[fps[x].distance(fps[y]) as usize] += 1;
                }
            }
            let mut cum = 0u64;
            let mut line = String::from("random pairs within D bits:");
            let mut at_bound = 0.0;
            for (d, h) in hist.iter().enumerate() {
                cum += h;
                if [8, 10, 12, 14, 16, 18, 20, 22, 24].contains(&d) {
                    line += &format!(" {d}:{:.2e}", cum as f64 / n as f64);
                }
                if d as u32 == args.band_distance {
                    at_bound = cum as f64 / n as f64;
                }
            }
            println!("{line}");
            // A band bucket at 50M documents holds ~763 fingerprints, nearly
            // all of unrelated texts: those within the bound are candidates.
            println!(
                "band candidates of unrelated texts per query at 50M, by this corpus's distances: {} bands x 763 x {at_bound:.2e} = {:.1}",
                simdb::index::bands::BANDS,
                simdb::index::bands::BANDS as f64 * 763.0 * at_bound
            );
        }
        if args.segments > 0 {
            println!(
                "segments of ~{} terms: {:.2} per original (index entries per document x{:.2})",
                args.segments,
                originals.iter().map(|s| s.segments.len()).sum::<usize>() as f64
                    / originals.len().max(1) as f64,
                1.0 + originals.iter().map(|s| s.segments.len()).sum::<usize>() as f64
                    / originals.len().max(1) as f64
            );
        }
        // The peers: word 3-shingles, character 5-grams, word 2-grams.
        let mut lsh = MinHashLsh::new(0.5, args.seed);
        let mut lsh5 = MinHashLsh::chars(0.5, args.seed, 5);
        let mut lsh2 = MinHashLsh::words(0.5, args.seed, 2);
        let sigs = |t: &str| {
            [
                lsh.signature(&jieba, t),
                lsh5.signature(&jieba, t),
                lsh2.signature(&jieba, t),
            ]
        };
        let lsh_orig: Vec<[Vec<u64>; 3]> = docs.par_iter().map(|(_, t)| sigs(t)).collect();
        let lsh_copies: Vec<[Vec<u64>; 3]> = planted.par_iter().map(|p| sigs(&p.3)).collect();
        for (i, [s, s5, s2]) in lsh_orig.iter().enumerate() {
            lsh.insert(i as u32, s);
            lsh5.insert(i as u32, s5);
            lsh2.insert(i as u32, s2);
        }
        println!(
            "\n== {name}: {} documents ({} over {} characters), {} copies; signatures in {:.1}s; minhash bands {}x{}",
            docs.len(),
            long.len(),
            args.min_chars,
            planted.len(),
            t0.elapsed().as_secs_f64(),
            lsh.bands,
            lsh.rows
        );

        // One query: the originals a system reports for signature `q`
        // (excluding `skip`), with buckets read and candidates checked.
        let answer = |sys: &System,
                      q: &Sig,
                      lsh_sig: &[Vec<u64>; 3],
                      skip: Option<usize>|
         -> (Vec<usize>, u64, u64) {
            // `skip` is the query's own position when it is an original (a
            // copy comes after every original).
            let verify = |j: usize, old: bool, extra: Option<usize>| -> bool {
                let s = &originals[j];
                // This build's rule: similarity, or containment.
                // Two short texts' exact 4-gram sets, when `--short-exact`
                // kept both: their exact Jaccard (a short text against a
                // long one keeps the sketches' estimate).
                let exact = (!q.small.is_empty() && !s.small.is_empty())
                    .then(|| common::jaccard(&q.small, &s.small));
                // `fine`: the sketches are the recipe's, which the fine
                // sketches may refine (not the recipe before reposts).
                let confirm = |x: Option<Sketch>, y: Option<Sketch>, fine: bool| match (x, y) {
                    // The store's rule: near the threshold, the fine
                    // sketches refine the estimate (`db::estimate`).
                    (Some(x), Some(y)) => {
                        let coarse = x.similarity(&y);
                        let (similarity, refined) = match (&q.fine, &s.fine) {
                            (Some(fx), Some(fy))
                                if fine
                                    && (args.fine_all
                                        || (coarse >= args.refine_below && coarse < threshold)) =>
                            {
                                (
                                    simdb::fingerprint::refined_similarity((&x, fx), (&y, fy)),
                                    true,
                                )
                            }
                            _ => (coarse, false),
                        };
                        simdb::db::confirmation_at(
                            Some(exact.unwrap_or(similarity)),
                            threshold,
                            min_containment,
                            if refined {
                                refined_floor
                            } else {
                                containment_floor
                            },
                            // The later document's length first.
                            || {
                                let pair = match skip {
                                    Some(i) if i < j => (s.len, q.len),
                                    _ => (q.len, s.len),
                                };
                                // The old rule: a later copy holding its
                                // original is not confirmed by containment.
                                let old_rule = args.containment_later_only && pair.0 >= pair.1;
                                Ok((!args.no_containment && !old_rule).then_some(pair))
                            },
                        )
                        .is_ok_and(|c| c.is_some())
                            || (args.parts_confirm > 0
                                && x.similarity(&y) >= args.parts_confirm_floor
                                && shared_parts(&q.parts, &s.parts) >= args.parts_confirm)
                            || (args.near_confirm > 0
                                && x.similarity(&y) >= args.near_confirm_floor
                                && match (&q.a, &s.a) {
                                    (Some(qa), Some(sa)) => {
                                        qa.fingerprint.distance(sa.fingerprint) <= args.near_confirm
                                    }
                                    _ => false,
                                })
                    }
                    _ => false,
                };
                match (old, extra) {
                    (true, _) => confirm(
                        q.old.as_ref().and_then(|a| a.sketch),
                        s.old.as_ref().and_then(|a| a.sketch),
                        false,
                    ),
                    (false, Some(e)) => match (q.extra[e], s.extra[e]) {
                        (Some(x), Some(y)) => x.similarity(&y) >= threshold,
                        _ => false,
                    },
                    (false, None) => confirm(
                        q.a.as_ref().and_then(|a| a.sketch),
                        s.a.as_ref().and_then(|a| a.sketch),
                        true,
                    ),
                }
            };
            match sys {
                System::MinHash | System::MinHashChars | System::MinHashWords2 => {
                    let (l, sig) = match sys {
                        System::MinHash => (&lsh, &lsh_sig[0]),
                        System::MinHashChars => (&lsh5, &lsh_sig[1]),
                        _ => (&lsh2, &lsh_sig[2]),
                    };
                    let hits: Vec<usize> = l
                        .query(sig)
                        .into_iter()
                        .map(|j| j as usize)
                        .filter(|&j| Some(j) != skip)
                        .collect();
                    let n = hits.len() as u64;
                    (hits, l.bands as u64, n)
                }
                _ => {
                    let Some(a) = q.a.as_ref() else {
                        return (Vec::new(), 0, 0);
                    };
                    let (fp, plan, old, extra) = match sys {
                        System::Before => {
                            let Some(o) = q.old.as_ref() else {
                                return (Vec::new(), 0, 0);
                            };
                            (
                                o.fingerprint,
                                ProbePlan::ranked(o.fingerprint, 0, &o.weak_bits, default_budget),
                                true,
                                None,
                            )
                        }
                        System::Exact(k) => (
                            a.fingerprint,
                            ProbePlan::exact(a.fingerprint, *k),
                            false,
                            None,
                        ),
                        System::Ranked(b) => (
                            a.fingerprint,
                            ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, *b),
                            false,
                            None,
                        ),
                        System::RankedSketch(b, e) => (
                            a.fingerprint,
                            ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, *b),
                            false,
                            Some(*e),
                        ),
                        System::Windows(b, w) => {
                            let mut plans = vec![(
                                a.fingerprint,
                                ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, *b),
                            )];
                            plans.extend(q.windows.iter().map(|x| {
                                (
                                    x.fingerprint,
                                    ProbePlan::ranked(x.fingerprint, 0, &x.weak_bits, *w),
                                )
                            }));
                            let mut cand: Vec<usize> = plans
                                .iter()
                                .flat_map(|(fp, plan)| idx.query_plan(*fp, plan))
                                .map(|h| h.id.parse::<usize>().expect("positions"))
                                .collect();
                            cand.sort_unstable();
                            cand.dedup();
                            let n = cand.len() as u64;
                            let buckets = plans.iter().map(|p| p.1.buckets() as u64).sum();
                            let found = cand
                                .into_iter()
                                .filter(|&j| Some(j) != skip && verify(j, false, None))
                                .collect();
                            return (found, buckets, n);
                        }
                        System::Segments(b, k) => {
                            let plan = ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, *b);
                            let mut cand: Vec<usize> = idx
                                .query_plan(a.fingerprint, &plan)
                                .into_iter()
                                .chain(q.segments.iter().flat_map(|fp| {
                                    idx_seg.query_plan(*fp, &ProbePlan::exact(*fp, *k))
                                }))
                                .map(|h| h.id.parse::<usize>().expect("positions"))
                                .collect();
                            cand.sort_unstable();
                            cand.dedup();
                            let n = cand.len() as u64;
                            let buckets = plan.buckets() as u64
                                + q.segments.len() as u64
                                    * ProbePlan::exact(a.fingerprint, *k).buckets() as u64;
                            let found = cand
                                .into_iter()
                                .filter(|&j| Some(j) != skip && verify(j, false, None))
                                .collect();
                            return (found, buckets, n);
                        }
                        System::Bands(b, _, _, 0) | System::Parts(b) => {
                            // The library's band buckets (simdb::index::bands)
                            // and, for `--parts`, its part buckets
                            // (simdb::index::parts).
                            let plan = ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, *b);
                            // Only the nearest `--band-cap` fingerprints
                            // that the bands alone find (the library's
                            // `BandProbe::max_candidates`).
                            let probe = a.sketch.map(|s| BandProbe {
                                max_candidates: match args.band_cap {
                                    0 => usize::MAX,
                                    c => c,
                                },
                                ..BandProbe::new(&s, args.band_distance)
                            });
                            let part_probe = matches!(sys, System::Parts(_)).then(|| PartProbe {
                                parts: q.parts.iter().take(parts_query).copied().collect(),
                                max_fingerprints: match args.parts_cap {
                                    0 => usize::MAX,
                                    c => c,
                                },
                            });
                            let hits = idx_banded.query_parted(
                                a.fingerprint,
                                &plan,
                                probe.as_ref(),
                                part_probe.as_ref(),
                            );
                            let n = hits.len() as u64;
                            let buckets = plan.buckets() as u64
                                + probe.map_or(0, |p| p.buckets() as u64)
                                + part_probe.map_or(0, |p| p.buckets() as u64);
                            let found = hits
                                .into_iter()
                                .map(|h| h.id.parse::<usize>().expect("positions"))
                                .filter(|&j| Some(j) != skip && verify(j, false, None))
                                .collect();
                            return (found, buckets, n);
                        }
                        System::Ceiling => {
                            if skip.is_some() {
                                return (Vec::new(), 0, 0);
                            }
                            let found = (0..originals.len())
                                .filter(|&j| verify(j, false, None))
                                .collect();
                            return (found, 0, originals.len() as u64);
                        }
                        System::Bands(b, c, _, _) => {
                            let plan = ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, *b);
                            let mut cand: Vec<usize> = idx
                                .query_plan(a.fingerprint, &plan)
                                .into_iter()
                                .map(|h| h.id.parse::<usize>().expect("positions"))
                                .chain(
                                    q.bands[*c]
                                        .iter()
                                        .enumerate()
                                        .flat_map(|(i, k)| {
                                            band_tables[*c][i].get(k).cloned().unwrap_or_default()
                                        })
                                        .filter(|&j| {
                                            originals[j].a.as_ref().is_some_and(|o| {
                                                o.fingerprint.distance(a.fingerprint)
                                                    <= args.band_distance
                                            })
                                        }),
                                )
                                .collect();
                            cand.sort_unstable();
                            cand.dedup();
                            let n = cand.len() as u64;
                            let buckets = plan.buckets() as u64 + band_cfgs[*c].0 as u64;
                            let found = cand
                                .into_iter()
                                .filter(|&j| Some(j) != skip && verify(j, false, None))
                                .collect();
                            return (found, buckets, n);
                        }
                        System::MinHash | System::MinHashChars | System::MinHashWords2 => {
                            unreachable!()
                        }
                    };
                    let hits = if old { &idx_old } else { &idx }.query_plan(fp, &plan);
                    let n = hits.len() as u64;
                    let found = hits
                        .into_iter()
                        .map(|h| h.id.parse::<usize>().expect("index ids are positions"))
                        .filter(|&j| Some(j) != skip && verify(j, old, extra))
                        .collect();
                    (found, plan.buckets() as u64, n)
                }
            }
        };

        if args.sweep > 0 {
            sweep(
                args.sweep, &recipe, &docs, &planted, &originals, &copies, &shingles, &idx,
            );
        }
        // How many originals index each part (`--show-missed`).
        let mut part_counts: HashMap<u64, usize> = HashMap::new();
        if args.show_missed > 0 {
            for s in &originals {
                for &p in s.parts.iter().take(args.parts) {
                    *part_counts.entry(p).or_default() += 1;
                }
            }
        }
        let mut sys_json = Vec::new();
        println!(
            "{:<34} {}",
            "system",
            kinds
                .iter()
                .map(|k| format!("{:>17}", format!("{} {}", k.name(), k.rates_label())))
                .collect::<Vec<_>>()
                .join(" ")
                + "   flagged  distinct  <0.3 (uncont.) [<5 ch]  buckets/q  cand/q"
        );
        for sys in &systems {
            let t = Instant::now();
            let tallies: Vec<((Kind, u32), Tally)> = planted
                .par_iter()
                .zip(&copies)
                .zip(&lsh_copies)
                .map(|(((kind, rate, orig, _), c), ls)| {
                    let start = Instant::now();
                    let (hits, buckets, cand) = answer(sys, c, ls, None);
                    let nanos = start.elapsed().as_nanos() as u64;
                    (
                        (*kind, *rate),
                        Tally {
                            found: u64::from(hits.contains(orig)),
                            total: 1,
                            buckets,
                            candidates: cand,
                            queries: 1,
                            nanos,
                        },
                    )
                })
                .collect();
            if args.show_missed > 0 && matches!(sys, System::Parts(_)) {
                let missed: Vec<usize> = tallies
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.1.found == 0)
                    .map(|(n, _)| n)
                    .take(args.show_missed)
                    .collect();
                for n in missed {
                    let (kind, rate, orig, _) = &planted[n];
                    let why =
                        explain_miss(&copies[n], &originals[*orig], &part_counts, parts_query);
                    let confirmed = answer(&System::Ceiling, &copies[n], &lsh_copies[n], None)
                        .0
                        .contains(orig);
                    println!(
                        "  missed {} {rate} of #{orig}: {why}, the rule {}",
                        kind.name(),
                        if confirmed {
                            "confirms it"
                        } else {
                            "does not confirm it"
                        }
                    );
                }
            }
            let mut by: HashMap<(Kind, u32), Tally> = HashMap::new();
            let mut all = Tally::default();
            for (key, t) in tallies {
                let e = by.entry(key).or_default();
                for x in [e, &mut all] {
                    x.found += t.found;
                    x.total += t.total;
                    x.buckets += t.buckets;
                    x.candidates += t.candidates;
                    x.queries += t.queries;
                    x.nanos += t.nanos;
                }
            }
            // False pairs among the originals.
            let pairs: Vec<(usize, usize)> = (0..docs.len())
                .into_par_iter()
                .flat_map_iter(|i| {
                    let (hits, _, _) = answer(sys, &originals[i], &lsh_orig[i], Some(i));
                    hits.into_iter()
                        .filter(move |&j| j > i)
                        .map(move |j| (i, j))
                })
                .collect();
            let mut pairs = pairs;
            pairs.sort_unstable();
            pairs.dedup();
            let sims: Vec<f64> = pairs
                .par_iter()
                .map(|&(i, j)| common::jaccard(&shingles[i], &shingles[j]))
                .collect();
            let distinct = sims.iter().filter(|&&s| s < 0.5).count();
            // The stricter reading (the reposts prototype's): below 0.3.
            let unrelated = sims.iter().filter(|&&s| s < 0.3).count();
            // Of those, the pairs where neither holds half of the other's
            // 5-grams: a text inside a longer one (a review and its copy
            // with a site's footer) has a low Jaccard by construction.
            let uncontained = pairs
                .par_iter()
                .zip(&sims)
                .filter(|(&(i, j), &s)| {
                    s < 0.3 && common::containment(&shingles[i], &shingles[j]) < 0.5
                })
                .count();
            // Of those, the pairs where a text has fewer than 5 letters and
            // digits: its 5-gram set is the whole text, which no other text
            // shares ("发货太慢" against "发货太慢了" is at 0).
            let letters = |i: usize| docs[i].1.chars().filter(|c| c.is_alphanumeric()).count();
            let under_five = pairs
                .iter()
                .zip(&sims)
                .filter(|(&(i, j), &s)| s < 0.3 && letters(i).min(letters(j)) < 5)
                .count();
            let mut line = format!("{:<34}", sys.name());
            let mut rec = serde_json::Map::new();
            for &kind in &kinds {
                let rs: Vec<f64> = RATES
                    .iter()
                    .map(|&r| {
                        let t = &by[&(kind, r)];
                        t.found as f64 / t.total.max(1) as f64
                    })
                    .collect();
                line += &format!(" {:>17}", format!("{:.2}/{:.2}/{:.2}", rs[0], rs[1], rs[2]));
                rec.insert(kind.name().into(), json!(rs));
            }
            let q = all.queries.max(1) as f64;
            line += &format!(
                "   {:>7} {:>9} {:>5} {:>10} {:>7}  {:>9.1} {:>7.1}",
                pairs.len(),
                distinct,
                unrelated,
                format!("({uncontained})"),
                format!("[{under_five}]"),
                all.buckets as f64 / q,
                all.candidates as f64 / q
            );
            println!("{line}  ({:.1}s)", t.elapsed().as_secs_f64());
            if args.show_unrelated > 0 {
                // What the unrelated pairs are (their lengths and starts),
                // under the system's line.
                let cut = |t: &str| t.chars().take(60).collect::<String>().replace('\n', " ");
                for (&(i, j), s) in pairs
                    .iter()
                    .zip(&sims)
                    .filter(|p| *p.1 < 0.3)
                    .take(args.show_unrelated)
                {
                    println!(
                        "  unrelated {s:.2}, contained {:.2} ({} / {} chars): {:?} | {:?}",
                        common::containment(&shingles[i], &shingles[j]),
                        docs[i].1.chars().count(),
                        docs[j].1.chars().count(),
                        cut(&docs[i].1),
                        cut(&docs[j].1)
                    );
                }
            }
            sys_json.push(json!({
                "system": sys.name(), "recall": rec, "flagged_pairs": pairs.len(),
                "distinct_pairs": distinct, "unrelated_pairs": unrelated,
                "unrelated_uncontained_pairs": uncontained,
                "unrelated_under_five_letters_pairs": under_five, "buckets_per_query": all.buckets as f64 / q,
                "candidates_per_query": all.candidates as f64 / q,
                "in_memory_us_per_query": all.nanos as f64 / q / 1000.0,
            }));
        }
        report.push(
            json!({"corpus": name, "documents": docs.len(), "long_documents": long.len(),
            "copies": planted.len(), "minhash_bands": [lsh.bands, lsh.rows], "systems": sys_json}),
        );
    }
    let out = args.out.join("recall.json");
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&json!({"seed": args.seed, "sample": args.sample,
            "threshold": threshold, "default_budget": default_budget, "corpora": report}))
        .expect("JSON"),
    )
    .expect("write recall.json");
    println!("\nwrote {}", out.display());
}

/// Recall and distinct share per sketch kind and threshold, over the
/// candidates of one ranked plan (what verification then decides).
#[allow(clippy::too_many_arguments)]
fn sweep(
    budget: usize,
    recipe: &Recipe,
    docs: &[(String, String)],
    planted: &[(Kind, u32, usize, String)],
    originals: &[Sig],
    copies: &[Sig],
    shingles: &[Vec<u64>],
    idx: &MemIndex,
) {
    let candidates = |q: &Sig| -> Vec<usize> {
        let Some(a) = q.a.as_ref() else {
            return Vec::new();
        };
        idx.query_plan(
            a.fingerprint,
            &ProbePlan::ranked(a.fingerprint, 0, &a.weak_bits, budget),
        )
        .into_iter()
        .map(|h| h.id.parse::<usize>().expect("position"))
        .collect()
    };
    let pairs: Vec<(usize, usize, bool)> = (0..docs.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            candidates(&originals[i])
                .into_iter()
                .filter(move |&j| j > i)
                .map(move |j| (i, j, common::jaccard(&shingles[i], &shingles[j]) < 0.5))
        })
        .collect();
    let found: Vec<bool> = planted
        .par_iter()
        .zip(copies)
        .map(|(p, c)| candidates(c).contains(&p.2))
        .collect();
    println!(
        "\nsweep over ranked {budget} candidates: {} corpus pairs ({} distinct), copies found before verification {:.3}",
        pairs.len(),
        pairs.iter().filter(|p| p.2).count(),
        found.iter().filter(|f| **f).count() as f64 / found.len().max(1) as f64
    );
    let kinds = [
        SketchKind::Chars(3, Fill::Rehash),
        SketchKind::Chars(4, Fill::Rehash),
        SketchKind::Chars(5, Fill::Rehash),
        SketchKind::Chars(6, Fill::Rehash),
        SketchKind::Words3,
    ];
    for kind in kinds {
        let f = Fingerprinter::new(recipe.clone().with_sketch(kind));
        let so: Vec<Option<Sketch>> = docs.par_iter().map(|(_, t)| f.sketch(t)).collect();
        let sc: Vec<Option<Sketch>> = planted.par_iter().map(|p| f.sketch(&p.3)).collect();
        let sim = |a: &Option<Sketch>, b: &Option<Sketch>| match (a, b) {
            (Some(x), Some(y)) => x.similarity(y),
            _ => 0.0,
        };
        println!("  sketch {}", kind.name());
        for t in [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7] {
            let mut by: HashMap<(Kind, u32), (u64, u64)> = HashMap::new();
            for (n, p) in planted.iter().enumerate() {
                let e = by.entry((p.0, p.1)).or_default();
                e.1 += 1;
                if found[n] && sim(&sc[n], &so[p.2]) >= t {
                    e.0 += 1;
                }
            }
            let (mut fl, mut di) = (0, 0);
            for &(i, j, d) in &pairs {
                if sim(&so[i], &so[j]) >= t {
                    fl += 1;
                    di += usize::from(d);
                }
            }
            let mut keys: Vec<_> = by.keys().copied().collect();
            keys.sort_by_key(|k| (k.0.name(), k.1));
            let rec: Vec<String> = keys
                .iter()
                .filter(|k| k.1 == 5)
                .map(|k| format!("{} {:.2}", k.0.name(), by[k].0 as f64 / by[k].1 as f64))
                .collect();
            println!(
                "    t={t:.2}  5%: {}   flagged {fl} distinct {di} ({:.1}%)",
                rec.join(", "),
                100.0 * di as f64 / fl.max(1) as f64
            );
        }
    }
}
