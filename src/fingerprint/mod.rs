//! Fingerprints: text -> features -> 64-bit Simhash.
//!
//! This module is pure: it knows nothing of RocksDB or files.
//!
//! The pipeline (the *recipe*, stored in every store and checked at open):
//!
//! 1. Normalise: Unicode NFKC (folds full-width forms), then lower-case.
//! 2. Segment: runs of CJK ideographs are cut by jieba-rs (default dictionary,
//!    HMM off unless the recipe says otherwise); runs of other letters and digits
//!    are words; everything else (spaces, punctuation, symbols) separates.
//! 3. Drop stop words (a fixed Chinese and English list, see [`stopwords`]).
//! 4. Weight each term by `tf × idf`, with jieba-rs's bundled IDF table; a
//!    term missing from the table gets the table's lower median IDF.
//!    Optional word n-gram shingles are weighted `tf × mean idf of their words`.
//! 5. Keep the `top_k` heaviest features (0 = all).
//! 6. Simhash: each feature is hashed with xxh3-64 (seed 0) of its UTF-8 bytes;
//!    bit `i` of the sum vector gets `+w` where bit `i` of the hash is 1, `-w`
//!    otherwise. Fingerprint bit `i` is 1 iff its sum is strictly greater than
//!    0 (a tie gives 0). Features are summed in byte order of their strings, so
//!    the result does not depend on thread count or hash-map order.

mod content;
mod dict;
pub mod fine;
mod idf;
pub mod parts;
mod recipe;
mod script;
mod sketch;
pub mod stopwords;
mod text;

use std::fmt;
use std::str::FromStr;

pub use content::{text_hash, Content, Html};
pub use dict::cut as cut_ideographs;
pub use fine::{refined_similarity, FineSketch};
pub use idf::{default_idf, idf, vocabulary, LearnedIdf};
pub use recipe::{LatinFeatures, Recipe, SketchKind, StopWords, TfWeighting};
pub use script::SCRIPT_T2S;
pub use sketch::{containment, Bins, Fill, Sketch, SKETCH_BYTES};
pub use text::{Analysis, Feature, Fingerprinter, IdfLearner, SHORT_TERMS, TOP_TERMS};

use crate::error::{Error, Result};

/// Width of a fingerprint in bits.
pub const WIDTH: u32 = 64;
/// Number of 16-bit blocks in a fingerprint.
pub const BLOCKS: usize = 4;
/// The largest Hamming distance the index answers exactly: 11, by probing
/// block values within 2 bits of the query's (see [`crate::index`]). k <= 3
/// probes one bucket per family, k <= 7 seventeen, k <= 11 137.
pub const MAX_EXACT_K: u32 = 11;

/// A 64-bit Simhash fingerprint.
///
/// Displayed and parsed as exactly 16 lower-case hex digits (parsing also
/// accepts upper case and an optional `0x`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    /// Hamming distance: the number of differing bits.
    #[inline]
    pub fn distance(self, other: Fingerprint) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    /// Block `i` (0..4) as a 16-bit value; block 0 is the most significant.
    ///
    /// # Panics
    /// If `i >= 4`.
    #[inline]
    pub fn block(self, i: usize) -> u16 {
        assert!(i < BLOCKS, "block index {i} out of range 0..4");
        (self.0 >> (48 - 16 * i)) as u16
    }

    /// All four blocks, most significant first.
    #[inline]
    pub fn blocks(self) -> [u16; BLOCKS] {
        [self.block(0), self.block(1), self.block(2), self.block(3)]
    }

    /// The raw value.
    #[inline]
    pub fn value(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({:016x})", self.0)
    }
}

impl FromStr for Fingerprint {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        let t = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        if t.len() != 16 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::Input(format!(
                "fingerprint {s:?} is not 16 hex digits"
            )));
        }
        u64::from_str_radix(t, 16)
            .map(Fingerprint)
            .map_err(|e| Error::Input(format!("fingerprint {s:?}: {e}")))
    }
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The stable 64-bit hash of a feature: xxh3-64, seed 0, over its UTF-8 bytes.
#[inline]
pub fn feature_hash(feature: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(feature.as_bytes())
}

/// For each byte value, +1.0 or -1.0 per bit (bit 0 first).
fn sign_table() -> &'static [[f64; 8]; 256] {
    static TABLE: std::sync::OnceLock<[[f64; 8]; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [[0f64; 8]; 256];
        for (v, row) in t.iter_mut().enumerate() {
            for (bit, x) in row.iter_mut().enumerate() {
                *x = if (v >> bit) & 1 == 1 { 1.0 } else { -1.0 };
            }
        }
        t
    })
}

/// Simhash of pre-weighted features `(feature, weight)`.
///
/// This is the Simhash of a sparse vector whose dimensions are named by the
/// feature strings: no random hyperplanes are materialised, each dimension's
/// ±1 pattern is the feature's hash. Weights may be negative; a feature given
/// twice counts twice. Zero weights are ignored.
///
/// Errors: [`Error::NoFeatures`] if no feature has a non-zero weight,
/// [`Error::Input`] if a weight is not finite.
pub fn simhash_weighted<S: AsRef<str>>(features: &[(S, f64)]) -> Result<Fingerprint> {
    simhash_sums(features).map(|s| s.fingerprint())
}

/// The per-bit sums of a Simhash, before their signs are taken.
///
/// Bit `i` of the fingerprint is 1 iff `sums[i] > 0`. The magnitude
/// `|sums[i]|` is the bit's *margin*: how much weight would have to change
/// for the bit to flip. A near-copy of a text differs from it mostly in the
/// bits of smallest margin (Sood & Loguinov, CIKM 2011), which is what
/// confidence-ranked probing ([`crate::index::ProbePlan`]) uses.
#[derive(Clone, Copy, PartialEq)]
pub struct BitSums(pub [f64; WIDTH as usize]);

impl fmt::Debug for BitSums {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// How many of a document's least-confident bits its analysis (and its
/// record) keeps, weakest first: enough for any probe budget up to
/// [`crate::index::MAX_PROBE_BUDGET`].
pub const WEAK_BITS: usize = 24;

impl BitSums {
    /// The fingerprint: bit `i` is 1 iff `sums[i] > 0` (a tie gives 0).
    pub fn fingerprint(&self) -> Fingerprint {
        let mut fp = 0u64;
        for (bit, sum) in self.0.iter().enumerate() {
            if *sum > 0.0 {
                fp |= 1 << bit;
            }
        }
        Fingerprint(fp)
    }

    /// Bit indices (0 = least significant) by margin `|sum|`, smallest
    /// first (ties by index), at most `n` of them.
    pub fn weakest(&self, n: usize) -> Vec<u8> {
        let mut order: Vec<u8> = (0..WIDTH as u8).collect();
        order.sort_by(|&a, &b| {
            self.0[a as usize]
                .abs()
                .total_cmp(&self.0[b as usize].abs())
                .then(a.cmp(&b))
        });
        order.truncate(n);
        order
    }
}

/// [`simhash_weighted`] keeping the per-bit sums (see [`BitSums`]).
pub fn simhash_sums<S: AsRef<str>>(features: &[(S, f64)]) -> Result<BitSums> {
    // Sum in name order (then input order), so the result does not depend
    // on the order features were listed in. The first 8 bytes of a name,
    // zero-padded, as a big-endian u64 order names as bytewise comparison
    // does whenever they differ; only equal prefixes compare whole names.
    let prefix = |s: &str| {
        let mut b = [0u8; 8];
        let n = s.len().min(8);
        b[..n].copy_from_slice(&s.as_bytes()[..n]);
        u64::from_be_bytes(b)
    };
    let mut order: Vec<(u64, usize)> = features
        .iter()
        .enumerate()
        .map(|(i, f)| (prefix(f.0.as_ref()), i))
        .collect();
    order.sort_unstable_by(|&(pa, a), &(pb, b)| {
        pa.cmp(&pb)
            .then_with(|| features[a].0.as_ref().cmp(features[b].0.as_ref()))
            .then(a.cmp(&b))
    });
    let order = order.into_iter().map(|(_, i)| i);
    let mut sums = [0f64; WIDTH as usize];
    let mut used = 0usize;
    for i in order {
        let (name, w) = (&features[i].0, features[i].1);
        if !w.is_finite() {
            return Err(Error::Input(format!(
                "feature {:?} has a non-finite weight {w}",
                name.as_ref()
            )));
        }
        if w == 0.0 {
            continue;
        }
        used += 1;
        let h = feature_hash(name.as_ref());
        // Branch-free (the bits are random, branches would mispredict), a
        // byte of the hash at a time: adding w times +1.0 or -1.0 is exactly
        // `sum + w` or `sum - w`.
        let signs = sign_table();
        for (byte, lanes) in sums.chunks_exact_mut(8).enumerate() {
            let s = &signs[((h >> (8 * byte)) & 0xff) as usize];
            for (sum, sign) in lanes.iter_mut().zip(s) {
                *sum += sign * w;
            }
        }
    }
    if used == 0 {
        return Err(Error::NoFeatures);
    }
    Ok(BitSums(sums))
}

/// `c.is_alphanumeric()`, answered without the table lookup for the
/// common ideographs (U+4E00..=U+9FFF, all letters).
#[inline]
pub(crate) fn is_alphanumeric(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF) || c.is_alphanumeric()
}

/// Refuses a `k` the index cannot answer exactly.
pub fn check_k(k: u32) -> Result<()> {
    if k > MAX_EXACT_K {
        Err(Error::UnsupportedDistance {
            k,
            max: MAX_EXACT_K,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_parse_round_trip() {
        let fp = Fingerprint(0x0123_4567_89ab_cdef);
        assert_eq!(fp.to_string(), "0123456789abcdef");
        assert_eq!("0123456789ABCDEF".parse::<Fingerprint>().unwrap(), fp);
        assert_eq!("0x0123456789abcdef".parse::<Fingerprint>().unwrap(), fp);
        assert_eq!(Fingerprint(1).to_string(), "0000000000000001");
        for bad in [
            "",
            "123",
            "0123456789abcdefa",
            "0123456789abcdeg",
            "+123456789abcdef",
        ] {
            assert!(
                matches!(bad.parse::<Fingerprint>(), Err(Error::Input(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn blocks_and_distance() {
        let fp = Fingerprint(0x1111_2222_3333_4444);
        assert_eq!(fp.blocks(), [0x1111, 0x2222, 0x3333, 0x4444]);
        assert_eq!(fp.distance(fp), 0);
        assert_eq!(Fingerprint(0).distance(Fingerprint(u64::MAX)), 64);
        assert_eq!(Fingerprint(0b1011).distance(Fingerprint(0)), 3);
    }

    #[test]
    fn weighted_simhash_rules() {
        // One feature: the fingerprint is its hash (bit 1 where the hash is 1).
        let h = feature_hash("alpha");
        assert_eq!(simhash_weighted(&[("alpha", 2.5)]).unwrap(), Fingerprint(h));
        // A negative weight flips every bit except ties (none here).
        assert_eq!(
            simhash_weighted(&[("alpha", -1.0)]).unwrap(),
            Fingerprint(!h)
        );
        // Equal and opposite: every sum is 0, ties give 0.
        assert_eq!(
            simhash_weighted(&[("alpha", 1.0), ("alpha", -1.0)]).unwrap(),
            Fingerprint(0)
        );
        // Order does not matter.
        let a = simhash_weighted(&[("a", 1.0), ("b", 2.0), ("c", 0.5)]).unwrap();
        let b = simhash_weighted(&[("c", 0.5), ("a", 1.0), ("b", 2.0)]).unwrap();
        assert_eq!(a, b);
        assert!(matches!(
            simhash_weighted::<&str>(&[]),
            Err(Error::NoFeatures)
        ));
        assert!(matches!(
            simhash_weighted(&[("a", 0.0)]),
            Err(Error::NoFeatures)
        ));
        assert!(matches!(
            simhash_weighted(&[("a", f64::NAN)]),
            Err(Error::Input(_))
        ));
    }

    #[test]
    fn feature_hash_is_pinned() {
        // xxh3-64, seed 0: pinned so that a dependency change cannot silently
        // change every stored fingerprint.
        assert_eq!(feature_hash(""), 0x2d06800538d394c2);
        assert_eq!(
            feature_hash("simdb"),
            xxhash_rust::xxh3::xxh3_64_with_seed(b"simdb", 0)
        );
    }

    #[test]
    fn check_k_refuses_above_eleven() {
        for k in 0..=11 {
            check_k(k).unwrap();
        }
        assert!(matches!(
            check_k(12),
            Err(Error::UnsupportedDistance { k: 12, max: 11 })
        ));
    }
}
