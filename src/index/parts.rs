//! Part buckets: a third candidate source, beside the block families and
//! the band buckets, for copies that keep a part of a text whole while its
//! fingerprint and its sketch's bands moved (an excerpt from the middle, a
//! text between whole sentences of others). The part hashes are
//! [`crate::fingerprint::parts`]'s.
//!
//! # Definition (stable: part buckets of stored documents depend on it)
//!
//! - **Which parts a fingerprint holds.** As for the bands, documents
//!   share a fingerprint's entry, and the entry is in the buckets of the
//!   parts of the fingerprint's *first* document (smallest id), or in none
//!   when that document has none (a bare fingerprint, a text of fewer than
//!   eight letters and digits, a document written before parts).
//! - **What a part probe accepts.** Every fingerprint in the bucket of one
//!   of its parts, at any distance, unless that bucket holds more than
//!   [`PartProbe::max_fingerprints`]: a part that many documents share is
//!   boilerplate (a site's footer, a program's sign-off) and names none.
//!   A part's bucket is keyed by its 64-bit hash, so it holds the
//!   documents that share the part, not a share of the store: a probe
//!   reads [`crate::fingerprint::parts::QUERY_PARTS`] small buckets.
//!
//! Part buckets never enter an exact (`-k`) answer. A ranked plan with a
//! band probe and a part probe equals a brute-force scan of its rule:
//! [`brute_force_parted`].

use std::collections::{HashMap, HashSet};

use super::{bands, finish, Hit, ProbePlan};
use crate::fingerprint::Fingerprint;

/// The default of [`PartProbe::max_fingerprints`]: measured in
/// `tools/recall.rs` (`--parts-cap`; docs/recall.md, "Second round").
pub const DEFAULT_PART_FINGERPRINTS: usize = 8;

/// What a query reads for its parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartProbe {
    /// The query's part hashes (its smallest, ascending).
    pub parts: Vec<u64>,
    /// A bucket holding more fingerprints than this names none.
    pub max_fingerprints: usize,
}

impl PartProbe {
    /// The probe of a query whose parts are `parts`, with
    /// [`DEFAULT_PART_FINGERPRINTS`].
    pub fn new(parts: Vec<u64>) -> PartProbe {
        PartProbe {
            parts,
            max_fingerprints: DEFAULT_PART_FINGERPRINTS,
        }
    }

    /// Whether a bucket holding `held` distinct fingerprints names them.
    #[inline]
    pub fn names(&self, held: usize) -> bool {
        held <= self.max_fingerprints
    }

    /// Buckets read (one per part).
    pub fn buckets(&self) -> usize {
        self.parts.len()
    }
}

/// The oracle of a ranked plan with an optional band probe and a part
/// probe: every entry the plan or the band probe accepts (as
/// [`bands::brute_force_banded`]), or whose fingerprint is named by one of
/// the probe's parts (`parts_of`: the parts of the fingerprint's entry, by
/// the first-document rule; empty = in no bucket), by a linear scan.
pub fn brute_force_parted<'a>(
    entries: impl IntoIterator<Item = (&'a str, Fingerprint)>,
    bands_of: impl Fn(Fingerprint) -> Option<bands::BandValues>,
    parts_of: impl Fn(Fingerprint) -> Vec<u64>,
    q: Fingerprint,
    plan: &ProbePlan,
    band_probe: Option<&bands::BandProbe>,
    part_probe: &PartProbe,
) -> Vec<Hit> {
    let entries: Vec<(&str, Fingerprint)> = entries.into_iter().collect();
    let mut fps: Vec<Fingerprint> = entries.iter().map(|e| e.1).collect();
    fps.sort_unstable();
    fps.dedup();
    let mut named: Vec<Fingerprint> = Vec::new();
    for p in &part_probe.parts {
        let held: Vec<Fingerprint> = fps
            .iter()
            .copied()
            .filter(|fp| parts_of(*fp).contains(p))
            .collect();
        if part_probe.names(held.len()) {
            named.extend(held);
        }
    }
    let banded = match band_probe {
        Some(probe) => {
            let found = fps
                .iter()
                .copied()
                .filter(|fp| bands_of(*fp).is_some_and(|v| probe.accepts_entry(q, *fp, &v)))
                .collect();
            probe.band_only(q, plan, found)
        }
        None => Vec::new(),
    };
    let hits = entries
        .into_iter()
        .filter(|(_, fp)| plan.accepts(q, *fp) || banded.contains(fp) || named.contains(fp))
        .map(|(id, fp)| Hit::new(id.to_string(), fp, fp.distance(q)))
        .collect();
    finish(hits, None)
}

/// The part buckets of an in-memory index: part → the distinct
/// fingerprints in its bucket (unordered), and each fingerprint's parts.
#[derive(Debug, Default, Clone)]
pub struct PartBuckets {
    /// A set per part: a boilerplate part (a template's) holds every
    /// fingerprint of a batch, and entering or leaving it stays O(1).
    buckets: HashMap<u64, HashSet<Fingerprint>>,
    of_fp: HashMap<Fingerprint, Vec<u64>>,
}

impl PartBuckets {
    /// Puts `fp`'s entry in the buckets of `parts` (empty: in none),
    /// moving it out of those it was in.
    pub fn set(&mut self, fp: Fingerprint, parts: &[u64]) {
        if self.of_fp.get(&fp).map_or(parts.is_empty(), |p| p == parts) {
            return;
        }
        if let Some(old) = self.of_fp.remove(&fp) {
            for p in old {
                if let Some(set) = self.buckets.get_mut(&p) {
                    set.remove(&fp);
                    if set.is_empty() {
                        self.buckets.remove(&p);
                    }
                }
            }
        }
        if !parts.is_empty() {
            for p in parts {
                self.buckets.entry(*p).or_default().insert(fp);
            }
            self.of_fp.insert(fp, parts.to_vec());
        }
    }

    /// The parts of `fp`'s entry (empty if it is in no bucket).
    pub fn parts(&self, fp: Fingerprint) -> &[u64] {
        self.of_fp.get(&fp).map_or(&[], Vec::as_slice)
    }

    /// Whether no fingerprint is in a part bucket.
    pub fn is_empty(&self) -> bool {
        self.of_fp.is_empty()
    }

    /// How many fingerprints the bucket of `part` holds.
    pub fn bucket_len(&self, part: u64) -> usize {
        self.buckets.get(&part).map_or(0, HashSet::len)
    }

    /// The fingerprints in the bucket of `part` (unordered).
    pub fn bucket(&self, part: u64) -> impl Iterator<Item = Fingerprint> + '_ {
        self.buckets.get(&part).into_iter().flatten().copied()
    }

    /// Appends the fingerprints `probe` names (repeats allowed).
    pub fn candidates(&self, probe: &PartProbe, out: &mut Vec<Fingerprint>) {
        for p in &probe.parts {
            if let Some(set) = self.buckets.get(p) {
                if probe.names(set.len()) {
                    out.extend(set.iter().copied());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_moves_between_buckets_and_a_hot_part_names_none() {
        let mut b = PartBuckets::default();
        let probe = |parts: &[u64], max: usize| PartProbe {
            parts: parts.to_vec(),
            max_fingerprints: max,
        };
        b.set(Fingerprint(1), &[10, 20]);
        let mut out = Vec::new();
        b.candidates(&probe(&[20], 8), &mut out);
        assert_eq!(out, [Fingerprint(1)]);
        b.set(Fingerprint(1), &[30]);
        out.clear();
        b.candidates(&probe(&[10, 20], 8), &mut out);
        assert!(out.is_empty());
        assert_eq!(b.parts(Fingerprint(1)), [30]);
        // Bucket 30 at the cap, then one past it.
        for fp in 2..=8 {
            b.set(Fingerprint(fp), &[30]);
        }
        b.candidates(&probe(&[30], 8), &mut out);
        assert_eq!(out.len(), 8);
        b.set(Fingerprint(9), &[30, 40]);
        out.clear();
        b.candidates(&probe(&[30, 40], 8), &mut out);
        assert_eq!(out, [Fingerprint(9)], "30 holds 9: it names none");
        b.set(Fingerprint(9), &[]);
        assert!(b.parts(Fingerprint(9)).is_empty());
        out.clear();
        b.candidates(&probe(&[30, 40], 8), &mut out);
        assert_eq!(out.len(), 8);
    }
}
