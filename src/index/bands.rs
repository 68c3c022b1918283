//! Band buckets: a second candidate source beside the four block families,
//! for copies whose fingerprint moved beyond what confidence-ranked probing
//! reaches (a repost wrapped in other text, a truncated one).
//!
//! A wrap of 30% moves a Simhash by a median of ~8 bits (90th percentile
//! ~14): the weight of the foreign text turns the whole vector. The
//! verification sketch does not move that way: it estimates the Jaccard
//! similarity of the two texts' shingle sets, and a copy shares most of its
//! original's shingles. So the sketch itself names buckets, the way MinHash
//! LSH bands do: two texts with Jaccard similarity J agree in one b-bit
//! sketch bin with probability `J + (1 - J) / 4`, in all eight bins of a
//! band with that to the 8th power, and in at least one of 16 bands with
//! `1 - (1 - p^8)^16` (J = 0.77, a 30% wrap: 0.97; J = 0.9: 1.00; J = 0.3:
//! 0.08). Measured in `tools/recall.rs` (`--bands s16`; docs/recall.md).
//!
//! # Definition (stable: band buckets of stored documents depend on it)
//!
//! - **Band values.** The sketch's 128 two-bit bins in 16 bands of 8 bins:
//!   band `j` is sketch bytes `2j` and `2j + 1` read as a little-endian
//!   `u16` (bins `8j .. 8j + 8`, see [`crate::fingerprint::Sketch`]).
//! - **Which bands a fingerprint is in.** Documents share a fingerprint's
//!   entry; the entry is in the 16 band buckets of the sketch of the
//!   fingerprint's *first* document (smallest id), or in none when that
//!   document has no sketch. One read of the first holder decides it, and
//!   a flood of exact copies adds nothing. A candidate found through a band
//!   is a fingerprint: every document that has it is then checked by its
//!   own sketch, as for any candidate.
//! - **What a band probe accepts.** A fingerprint in bucket `values[j]` of
//!   band `j`, for some `j` whose value is not *uniform* (see below),
//!   within [`BandProbe::max_distance`] bits of the query's fingerprint.
//! - **Uniform values are not probed.** A band whose eight bins are equal
//!   (values `0x0000`, `0x5555`, `0xaaaa`, `0xffff`: [`is_uniform`]) is
//!   what a text of one shingle gets in every band (fewer than five
//!   letters and digits: a product name, a one-word comment) in a store
//!   whose sketch copies a donor bin's value into an empty one (made
//!   before the rehashed fill, `crate::fingerprint::Fill`), so those four
//!   buckets of each band family hold every such text and a probe of them
//!   would scan them all for each short text written. They are still
//!   written (the entries are as defined above), never read. A sketch of
//!   many shingles, or of a short text in a new store, has a uniform band
//!   with probability 4 in 65,536: its copies share one of the other
//!   fifteen. A band bucket is 16 bits: at 50M documents it
//!   holds ~763 fingerprints, nearly all of unrelated texts, and the
//!   distance bound drops them before any document is read (unrelated
//!   fingerprints lie ~32 bits apart; within 14 bits: a share of ~1e-5 for
//!   uniform fingerprints, 1e-4 to 7e-3 for real corpora of one kind).
//!
//! Band buckets never enter an exact (`-k`) answer: an exact plan reads no
//! band, so exact answers still equal a brute-force scan at that k. A
//! ranked plan with a band probe equals a brute-force scan of its rule:
//! [`brute_force_banded`].

use std::collections::HashMap;

use super::{finish, Hit, ProbePlan};
use crate::fingerprint::{Fingerprint, Sketch, SKETCH_BYTES};

/// Number of band families.
pub const BANDS: usize = 16;
/// Sketch bins per band (2 bits each: 16 bits, one bucket key).
pub const BAND_BINS: usize = 8;
/// The default distance bound of a band probe (bits): chosen in
/// `tools/recall.rs` (docs/recall.md, "Band buckets").
pub const DEFAULT_BAND_DISTANCE: u32 = 14;
/// The default number of fingerprints a band probe adds beyond its plan
/// (the nearest; see [`BandProbe::max_candidates`]): measured in
/// `tools/recall.rs` (`--band-cap`, docs/recall.md, "Band buckets").
pub const DEFAULT_BAND_CANDIDATES: usize = 16;

const _: () = assert!(
    BANDS * 2 == SKETCH_BYTES,
    "16 bands of 16 bits cover the sketch"
);

/// A document's band values: its bucket in each band family.
pub type BandValues = [u16; BANDS];

/// The band values of `sketch` (see the module's definition).
pub fn band_values(sketch: &Sketch) -> BandValues {
    std::array::from_fn(|j| band_value(sketch, j))
}

/// Whether band value `v` is uniform (its eight bins equal), which no
/// probe reads (see the module's definition).
#[inline]
pub fn is_uniform(v: u16) -> bool {
    v.is_multiple_of(0x5555)
}

/// The value of band `j` of `sketch`: its bytes `2j` and `2j + 1`,
/// little-endian.
pub fn band_value(sketch: &Sketch, j: usize) -> u16 {
    u16::from_le_bytes([sketch.0[2 * j], sketch.0[2 * j + 1]])
}

/// What a query reads beside its probe plan: the buckets of its sketch's
/// band values, and the fingerprints in them within `max_distance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BandProbe {
    pub values: BandValues,
    pub max_distance: u32,
    /// At most this many fingerprints that the probe alone finds (those
    /// its plan does not accept) are kept: the nearest, and among equally
    /// near ones the smallest. English from one source lies close in
    /// Simhash space, so a band bucket can hold dozens of unrelated
    /// fingerprints within the bound; each would cost a `refs` read.
    pub max_candidates: usize,
}

impl BandProbe {
    /// The probe of a query whose sketch is `sketch`, keeping
    /// [`DEFAULT_BAND_CANDIDATES`].
    pub fn new(sketch: &Sketch, max_distance: u32) -> BandProbe {
        BandProbe {
            values: band_values(sketch),
            max_distance,
            max_candidates: DEFAULT_BAND_CANDIDATES,
        }
    }

    /// The probe's part of an answer: of the fingerprints `found` in its
    /// buckets (accepted by [`BandProbe::accepts`], repeats allowed), those
    /// `plan` does not accept, distinct, nearest first (then ascending),
    /// at most [`BandProbe::max_candidates`] of them.
    pub fn band_only(
        &self,
        q: Fingerprint,
        plan: &ProbePlan,
        mut found: Vec<Fingerprint>,
    ) -> Vec<Fingerprint> {
        self.cut(q, plan, &mut found);
        found.sort_unstable_by_key(|fp| (fp.distance(q), *fp));
        found.dedup();
        found.truncate(self.max_candidates);
        found
    }

    /// Entries of the probe's buckets that [`BandProbe::band_only`] needs
    /// at most: a fingerprint is in a probe's buckets at most once per
    /// band (and a writer adds its batch's), so the nearest `keep` entries
    /// hold the nearest `max_candidates` distinct ones.
    fn keep(&self) -> usize {
        self.max_candidates.saturating_mul(2 * BANDS)
    }

    /// Cuts `found` to the entries `plan` does not accept, then to the
    /// nearest [`BandProbe::keep`] of them (by distance, then
    /// fingerprint; linear time); returns the distance of the farthest
    /// kept when the cut dropped any (no entry farther can be among the
    /// nearest of `found` and more).
    fn cut(&self, q: Fingerprint, plan: &ProbePlan, found: &mut Vec<Fingerprint>) -> Option<u32> {
        found.retain(|fp| !plan.accepts(q, *fp));
        let keep = self.keep();
        if found.len() <= keep || keep == 0 {
            return None;
        }
        let key = |fp: &Fingerprint| (fp.distance(q), *fp);
        found.select_nth_unstable_by_key(keep - 1, key);
        let farthest = found[keep - 1].distance(q);
        found.truncate(keep);
        Some(farthest)
    }

    /// Whether a fingerprint found in one of the probe's buckets is
    /// accepted for query `q`.
    #[inline]
    pub fn accepts(&self, q: Fingerprint, fp: Fingerprint) -> bool {
        q.distance(fp) <= self.max_distance
    }

    /// Whether a fingerprint whose entry is in buckets `values` is
    /// accepted for `q`: it shares a probed band and is near enough.
    pub fn accepts_entry(&self, q: Fingerprint, fp: Fingerprint, values: &BandValues) -> bool {
        self.accepts(q, fp) && self.probed().any(|(j, v)| values[j] == v)
    }

    /// The buckets the probe reads: (band, value) for each band whose
    /// value is not uniform ([`is_uniform`]).
    pub fn probed(&self) -> impl Iterator<Item = (usize, u16)> + '_ {
        self.values
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, v)| !is_uniform(*v))
    }

    /// Whether the probe reads band `j`'s bucket.
    #[inline]
    pub fn probes(&self, j: usize) -> bool {
        !is_uniform(self.values[j])
    }

    /// Buckets read (one per probed band family).
    pub fn buckets(&self) -> usize {
        self.probed().count()
    }

    /// Appends to `out` the fingerprints of posting `value` (whole 8-byte
    /// entries, as in the block families) that the probe accepts for `q`.
    pub fn scan_posting(&self, q: Fingerprint, value: &[u8], out: &mut Vec<Fingerprint>) {
        super::ScanRule {
            q: q.0,
            k: self.max_distance,
            outside: 0,
            ranked: false,
        }
        .scan(value, out);
    }
}

/// A probe's band hits gathered bucket by bucket, cut as they come: a
/// template held by thousands of pages fills each of its band buckets
/// with them, and [`BandProbe::band_only`] keeps a few. Once more than
/// twice what it keeps are gathered, they are cut to those it could keep,
/// and later buckets are scanned only for entries no farther than the
/// farthest kept. [`BandHits::found`] then gives what `band_only` gives
/// for every hit of every bucket (`band_only` of it is the same list).
pub struct BandHits<'a> {
    probe: &'a BandProbe,
    plan: &'a ProbePlan,
    q: Fingerprint,
    found: Vec<Fingerprint>,
    /// The farthest an entry may be and still be kept.
    within: u32,
}

impl<'a> BandHits<'a> {
    pub fn new(probe: &'a BandProbe, plan: &'a ProbePlan, q: Fingerprint) -> BandHits<'a> {
        BandHits {
            probe,
            plan,
            q,
            found: Vec::new(),
            within: probe.max_distance,
        }
    }

    /// Gathers the hits of one bucket's posting (whole 8-byte entries).
    pub fn scan(&mut self, posting: &[u8]) {
        super::ScanRule {
            q: self.q.0,
            k: self.within,
            outside: 0,
            ranked: false,
        }
        .scan(posting, &mut self.found);
        if self.found.len() > 2 * self.probe.keep() {
            if let Some(d) = self.probe.cut(self.q, self.plan, &mut self.found) {
                self.within = self.within.min(d);
            }
        }
    }

    /// The hits gathered, cut or not: [`BandProbe::band_only`] of them is
    /// `band_only` of every hit of the buckets scanned.
    pub fn found(self) -> Vec<Fingerprint> {
        self.found
    }
}

/// The oracle of a ranked plan with a band probe: every entry that `plan`
/// accepts, or whose fingerprint is among the [`BandProbe::band_only`]
/// ones of those `probe` accepts given their band values (`bands_of`: the
/// values of the fingerprint's entry, by the first-holder rule; `None` =
/// in no band), by a linear scan.
pub fn brute_force_banded<'a>(
    entries: impl IntoIterator<Item = (&'a str, Fingerprint)>,
    bands_of: impl Fn(Fingerprint) -> Option<BandValues>,
    q: Fingerprint,
    plan: &ProbePlan,
    probe: &BandProbe,
) -> Vec<Hit> {
    let entries: Vec<(&str, Fingerprint)> = entries.into_iter().collect();
    let banded: Vec<Fingerprint> = entries
        .iter()
        .map(|e| e.1)
        .filter(|fp| bands_of(*fp).is_some_and(|v| probe.accepts_entry(q, *fp, &v)))
        .collect();
    let banded = probe.band_only(q, plan, banded);
    let hits = entries
        .into_iter()
        .filter(|(_, fp)| plan.accepts(q, *fp) || banded.contains(fp))
        .map(|(id, fp)| Hit::new(id.to_string(), fp, fp.distance(q)))
        .collect();
    finish(hits, None)
}

/// The band buckets of an in-memory index: per band, bucket value → the
/// distinct fingerprints in it (unordered), and each fingerprint's values.
#[derive(Debug, Default, Clone)]
pub struct BandBuckets {
    buckets: [HashMap<u16, Vec<Fingerprint>>; BANDS],
    of_fp: HashMap<Fingerprint, BandValues>,
}

impl BandBuckets {
    /// Puts `fp`'s entry in the buckets of `values` (`None`: in none),
    /// moving it out of those it was in.
    pub fn set(&mut self, fp: Fingerprint, values: Option<BandValues>) {
        if self.of_fp.get(&fp) == values.as_ref() {
            return;
        }
        if let Some(old) = self.of_fp.remove(&fp) {
            for (j, v) in old.iter().enumerate() {
                if let Some(set) = self.buckets[j].get_mut(v) {
                    if let Some(at) = set.iter().position(|f| *f == fp) {
                        set.swap_remove(at);
                    }
                    if set.is_empty() {
                        self.buckets[j].remove(v);
                    }
                }
            }
        }
        if let Some(new) = values {
            for (j, v) in new.iter().enumerate() {
                self.buckets[j].entry(*v).or_default().push(fp);
            }
            self.of_fp.insert(fp, new);
        }
    }

    /// The band values of `fp`'s entry, if it is in the bands.
    pub fn values(&self, fp: Fingerprint) -> Option<BandValues> {
        self.of_fp.get(&fp).copied()
    }

    /// Whether no fingerprint is in the bands.
    pub fn is_empty(&self) -> bool {
        self.of_fp.is_empty()
    }

    /// The fingerprints `probe` accepts for `q`, read from its buckets (a
    /// fingerprint in several of them is there several times).
    pub fn candidates(&self, q: Fingerprint, probe: &BandProbe, out: &mut Vec<Fingerprint>) {
        for (j, v) in probe.probed() {
            if let Some(set) = self.buckets[j].get(&v) {
                out.extend(set.iter().filter(|fp| probe.accepts(q, **fp)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_values_are_the_sketch_bytes_in_pairs() {
        let mut s = [0u8; SKETCH_BYTES];
        for (i, b) in s.iter_mut().enumerate() {
            *b = i as u8;
        }
        let v = band_values(&Sketch(s));
        assert_eq!(v[0], 0x0100);
        assert_eq!(v[15], 0x1f1e);
    }

    #[test]
    fn a_posting_scan_keeps_what_is_within_the_bound() {
        let probe = BandProbe {
            values: [0; BANDS],
            max_distance: 2,
            max_candidates: 1,
        };
        let mut raw = Vec::new();
        for fp in [0b11u64, 0b111, 0, u64::MAX] {
            raw.extend_from_slice(&fp.to_be_bytes());
        }
        raw.push(0xff); // a partial entry is ignored
        let mut out = Vec::new();
        probe.scan_posting(Fingerprint(0), &raw, &mut out);
        assert_eq!(out, [Fingerprint(0b11), Fingerprint(0)]);
    }

    /// Band hits cut as they come give what `band_only` gives for all of
    /// them (seeded hot buckets: repeats across bands, ties in distance,
    /// entries the plan accepts, entries past the bound), for several
    /// caps; and the cut keeps the gathered list small.
    #[test]
    fn band_hits_cut_as_they_come_equal_band_only_of_every_hit() {
        let mut state = 0x5eed_u64;
        let mut next = || crate::index::splitmix64(&mut state);
        for round in 0..40 {
            let q = Fingerprint(next());
            // A pool of fingerprints near q (1 to 20 bits away), repeated
            // across the buckets as a template's pages are.
            let pool: Vec<Fingerprint> = (0..3000)
                .map(|_| {
                    let mut fp = q.0;
                    for _ in 0..(1 + next() % 20) {
                        fp ^= 1 << (next() % 64);
                    }
                    Fingerprint(fp)
                })
                .collect();
            let buckets: Vec<Vec<u8>> = (0..BANDS)
                .map(|_| {
                    let n = (next() % 2000) as usize;
                    (0..n)
                        .flat_map(|_| pool[(next() % pool.len() as u64) as usize].0.to_be_bytes())
                        .collect()
                })
                .collect();
            let plan = ProbePlan::exact(q, (round % 4) as u32);
            for max_candidates in [0, 1, 4, 16] {
                let probe = BandProbe {
                    values: [1; BANDS],
                    max_distance: 14,
                    max_candidates,
                };
                let mut all = Vec::new();
                let mut hits = BandHits::new(&probe, &plan, q);
                for b in &buckets {
                    probe.scan_posting(q, b, &mut all);
                    hits.scan(b);
                }
                let gathered = hits.found();
                if max_candidates > 0 {
                    assert!(gathered.len() <= 2 * probe.keep() + 2000);
                }
                assert_eq!(
                    probe.band_only(q, &plan, gathered),
                    probe.band_only(q, &plan, all),
                    "round {round}, cap {max_candidates}"
                );
            }
        }
    }

    #[test]
    fn band_only_keeps_the_nearest_the_plan_does_not_accept() {
        let q = Fingerprint(0);
        let plan = ProbePlan::exact(q, 1);
        let probe = BandProbe {
            values: [0; BANDS],
            max_distance: 14,
            max_candidates: 2,
        };
        let found = [0b1, 0b1111, 0b111, 0b111, 0b1011, 0b11]
            .map(Fingerprint)
            .to_vec();
        // 0b1 is within k = 1 (the plan's); of the rest, nearest first, then
        // ascending: 0b11 (2 bits), 0b111 (3), 0b1011 (3), 0b1111 (4).
        assert_eq!(
            probe.band_only(q, &plan, found),
            [Fingerprint(0b11), Fingerprint(0b111)]
        );
    }

    #[test]
    fn an_entry_moves_between_buckets_and_leaves() {
        let mut b = BandBuckets::default();
        let fp = Fingerprint(7);
        let probe = |v: u16| BandProbe {
            values: [v; BANDS],
            max_distance: 64,
            max_candidates: 1,
        };
        b.set(fp, Some([1; BANDS]));
        let mut out = Vec::new();
        b.candidates(Fingerprint(0), &probe(1), &mut out);
        assert_eq!(out.len(), BANDS);
        b.set(fp, Some([2; BANDS]));
        out.clear();
        b.candidates(Fingerprint(0), &probe(1), &mut out);
        assert!(out.is_empty());
        b.candidates(Fingerprint(0), &probe(2), &mut out);
        assert_eq!(out.len(), BANDS);
        b.set(fp, None);
        out.clear();
        b.candidates(Fingerprint(0), &probe(2), &mut out);
        assert!(out.is_empty() && b.values(fp).is_none());
        // The distance bound.
        b.set(fp, Some([3; BANDS]));
        let near = BandProbe {
            values: [3; BANDS],
            max_distance: 2,
            max_candidates: 1,
        };
        b.candidates(Fingerprint(0), &near, &mut out);
        assert!(out.is_empty(), "7 is 3 bits from 0");
        b.candidates(Fingerprint(3), &near, &mut out);
        assert_eq!(out.len(), BANDS);
    }
}
