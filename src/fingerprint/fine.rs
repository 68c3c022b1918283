//! The fine sketch: 384 more b-bit MinHash bins of a document's character
//! 4-grams, kept in its record (not in `refs`, not in the band keys) to
//! settle the pairs whose 128-bin [`Sketch`] estimate is near a decision.
//!
//! The 32-byte sketch estimates a similarity near 0.5 with a standard
//! deviation of about 0.057: between the containment floor and the
//! threshold, that noise, not the candidates, is what loses a wrapped copy
//! with edits and what confirms two bulletins sharing stock phrases
//! (docs/recall.md, "What an exact similarity would buy"). A pair whose
//! estimate lands in [`REFINE_BELOW`]`..` the threshold is re-estimated
//! from both sketches together, 512 bins (standard deviation about 0.029).
//! Such a pair's record is read anyway (its length, for containment), so
//! the fine sketch costs no read.
//!
//! # Definition (stable: stored fine sketches depend on it)
//!
//! 1. Shingles: those of the 32-byte sketch of character 4-grams (step 1
//!    of the definition in [`Sketch`]'s module).
//! 2. Each shingle hash `s` becomes `g = fmix64(s ^ 0x9e37_79b9_7f4a_7c15)`;
//!    it falls in bin `((g >> 32) * 384) >> 32` with value `g`; each bin
//!    keeps its smallest value.
//! 3. An empty bin `j` probes bins `fmix64(j ‖ attempt ^ 0x5bd1_e995) % 384`
//!    for attempt = 1, 2, … and takes the first non-empty bin's value `v`
//!    as `fmix64(v ^ (j + 1) << 55)` (the rehashed fill of the sketch).
//! 4. Each bin keeps the two lowest bits of its value; bin `j` is bits
//!    `2j..2j+2` of the 96 bytes, little-endian within each byte.
//!
//! The bins are independent of the sketch's (another hash), so the 128 +
//! 384 agreements are 512 draws: [`refined_similarity`] is
//! `(matches / 512 - 1/4) / (3/4)`, clamped to `[0, 1]`.

use super::sketch::{agreements, densify_with, fmix64, Donors};
use super::Sketch;

/// Number of bins of a fine sketch.
pub const FINE_BINS: usize = 384;
/// Size of a fine sketch in bytes (two bits a bin).
pub const FINE_BYTES: usize = FINE_BINS * super::sketch::BITS / 8;

/// A coarse estimate at or above this (and below the threshold) is
/// refined when both documents have a fine sketch: three standard
/// deviations of the coarse estimate below the containment floor (0.5),
/// so that a pair the 512 bins would confirm is rarely left out.
pub const REFINE_BELOW: f64 = 0.33;

/// 384 two-bit MinHash bins of a document's character 4-grams (see the
/// module docs).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FineSketch(pub [u8; FINE_BYTES]);

impl std::fmt::Debug for FineSketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FineSketch(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

impl serde::Serialize for FineSketch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for FineSketch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: Vec<u8> = serde::Deserialize::deserialize(d)?;
        FineSketch::from_slice(&v)
            .ok_or_else(|| serde::de::Error::invalid_length(v.len(), &"96 bytes"))
    }
}

/// The probe of the fine sketch's empty bins.
pub(crate) fn fine_probe(j: usize, attempt: u64) -> u64 {
    fmix64((((j as u64) << 32) | attempt) ^ 0x5bd1_e995)
}

/// The tables of [`fine_probe`], built at the first fine sketch.
static FINE_DONORS: std::sync::OnceLock<Option<Donors>> = std::sync::OnceLock::new();

impl FineSketch {
    /// The fine sketch of a set of shingle hashes (the 32-byte sketch's,
    /// repeats harmless); `None` when there are none.
    pub fn of_shingles(shingles: impl IntoIterator<Item = u64>) -> Option<FineSketch> {
        let mut bins = [u64::MAX; FINE_BINS];
        let mut any = false;
        for s in shingles {
            any = true;
            let g = fmix64(s ^ 0x9e37_79b9_7f4a_7c15);
            let b = (((g >> 32) * FINE_BINS as u64) >> 32) as usize;
            if g < bins[b] {
                bins[b] = g;
            }
        }
        if !any {
            return None;
        }
        densify_with(&FINE_DONORS, &mut bins, fine_probe, |v, j| {
            fmix64(v ^ ((j as u64 + 1) << 55))
        });
        let mut out = [0u8; FINE_BYTES];
        for (j, v) in bins.iter().enumerate() {
            out[j / 4] |= ((v & 3) as u8) << (2 * (j % 4));
        }
        Some(FineSketch(out))
    }

    /// The fine sketch of the character `n`-grams of normalised `text`'s
    /// letters and digits (the shingles of [`Sketch::of_chars`]).
    pub fn of_chars(text: &str, n: usize) -> Option<FineSketch> {
        super::sketch::char_shingles(text, n).and_then(FineSketch::of_shingles)
    }

    /// A fine sketch from its bytes (`None` unless there are
    /// [`FINE_BYTES`]).
    pub fn from_slice(b: &[u8]) -> Option<FineSketch> {
        Some(FineSketch(b.try_into().ok()?))
    }
}

/// The Jaccard similarity of two documents' shingle sets estimated from
/// both sketches, 128 + 384 bins (about half the standard deviation of
/// [`Sketch::similarity`]).
pub fn refined_similarity(a: (&Sketch, &FineSketch), b: (&Sketch, &FineSketch)) -> f64 {
    let matches = agreements(&a.0 .0, &b.0 .0) + agreements(&a.1 .0, &b.1 .0);
    let p = f64::from(matches) / (super::sketch::BINS + FINE_BINS) as f64;
    ((p - 0.25) / 0.75).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::{Fill, Sketch};

    fn text(seed: u64, words: usize) -> String {
        (0..words)
            .map(|i| {
                let h = fmix64(seed * 1_000_003 + i as u64);
                (0..6)
                    .map(|k| char::from(b'a' + ((h >> (8 * k)) % 26) as u8))
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn golden_fine_sketch() {
        let f = FineSketch::of_chars("the quick brown fox jumps over the lazy dog", 4).unwrap();
        let hex: String = f.0[..16].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN);
        assert_eq!(FineSketch::of_chars("", 4), None);
    }
    const GOLDEN: &str = "2bfdc1f170f2cfc21070544d44647bae";

    #[test]
    fn refined_estimate_is_less_noisy() {
        // Pairs of exact Jaccard near 0.5: the 512 bins' estimate strays
        // about half as far as the 128 bins'.
        let (mut coarse, mut refined) = (0.0, 0.0);
        for seed in 0..200u64 {
            let a: Vec<u64> = (0..600).map(|i| fmix64(seed << 20 | i)).collect();
            // 400 shared, 200 of each own: J = 400 / 800.
            let b: Vec<u64> = (0..400)
                .map(|i| fmix64(seed << 20 | i))
                .chain((0..200).map(|i| fmix64(seed << 20 | (10_000 + i))))
                .collect();
            let (sa, sb) = (
                Sketch::of_shingles(a.iter().copied(), Fill::Rehash).unwrap(),
                Sketch::of_shingles(b.iter().copied(), Fill::Rehash).unwrap(),
            );
            let (fa, fb) = (
                FineSketch::of_shingles(a.iter().copied()).unwrap(),
                FineSketch::of_shingles(b.iter().copied()).unwrap(),
            );
            coarse += (sa.similarity(&sb) - 0.5f64).powi(2);
            refined += (refined_similarity((&sa, &fa), (&sb, &fb)) - 0.5f64).powi(2);
        }
        let (coarse, refined) = ((coarse / 200.0).sqrt(), (refined / 200.0).sqrt());
        assert!(coarse > 0.04 && coarse < 0.08, "{coarse}");
        assert!(
            refined < 0.036 && refined < coarse * 0.7,
            "{refined} {coarse}"
        );
    }

    #[test]
    fn identical_and_unrelated() {
        let (a, b) = (text(1, 300), text(2, 300));
        let s = |t: &str| {
            (
                Sketch::of_chars(t, 4, Fill::Rehash).unwrap(),
                FineSketch::of_chars(t, 4).unwrap(),
            )
        };
        let (x, y) = (s(&a), s(&b));
        assert_eq!(refined_similarity((&x.0, &x.1), (&x.0, &x.1)), 1.0);
        assert!(refined_similarity((&x.0, &x.1), (&y.0, &y.1)) < 0.12);
        // Short texts fill by rehashing: unrelated ones stay apart.
        let (p, q) = (s("abcde"), s("vwxyz"));
        assert!(refined_similarity((&p.0, &p.1), (&q.0, &q.1)) < 0.2);
    }
}
