//! All near-duplicate pairs of a store (`simdb pairs`): a self-join by
//! sorted passes over the block families (see [`crate::index::join`]).
//!
//! Documents the store cannot tell apart (the same fingerprint, sketch
//! and length: a text stored under several ids) are, by default, one
//! group ([`Copies::Grouped`]): a text stored n times is one line instead
//! of n(n-1)/2 pairs, and its pairs with other documents name the group's
//! first id only. Expanding each group into the pairs of its members, and
//! each pair into the pairs of the two groups' members, gives the pairs of
//! [`Copies::Pairs`], with one exception: a pair confirmed by containment
//! alone (the later text the shorter, see [`super::MIN_CONTAINMENT`]) was
//! decided for the two first ids, and holds for those members of the two
//! groups that come in the same order.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::Db;
use crate::error::Result;
use crate::fingerprint::{self, BLOCKS};
use crate::index::{self, join};
use crate::store::Record;

/// Buckets (of 65,536 per family) one worker joins at a time.
const RANGE: u32 = 512;

/// One near-duplicate pair of documents, `a < b` by id.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub distance: u32,
    /// Sketch similarity of the two texts; absent when either document has
    /// no sketch (the pair is then unconfirmed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// When the similarity is below the threshold and the pair was
    /// confirmed by containment (the shorter inside the longer; see
    /// [`super::MIN_CONTAINMENT`]): the estimated containment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containment: Option<f64>,
}

/// Documents the store cannot tell apart: the same fingerprint, the same
/// sketch (or both without one) and the same length. Any two of them are a
/// pair at distance 0.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CopyGroup {
    /// Their ids, ascending; the first names the group in pairs.
    pub copies: Vec<String>,
    pub distance: u32,
    /// 1 for sketched documents (the same sketch); absent without sketches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

/// How [`Clusters::pairs_with`](super::Clusters::pairs_with) reports documents stored more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Copies {
    /// Each set of documents the store cannot tell apart is one
    /// [`CopyGroup`]; pairs name its first id.
    #[default]
    Grouped,
    /// Every pair of documents, copies included (n(n-1)/2 for a text
    /// stored n times).
    Pairs,
}

/// One item of [`Clusters::pairs_with`](super::Clusters::pairs_with)'s output.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum PairsItem<'a> {
    Pair(&'a Pair),
    Copies(&'a CopyGroup),
}

/// Counts of a [`Clusters::pairs`](super::Clusters::pairs) run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PairsReport {
    /// Pairs emitted.
    pub pairs: u64,
    /// Of those, pairs without a similarity (a document has no sketch).
    pub unconfirmed: u64,
    /// Pairs within k whose similarity is below the threshold (not emitted).
    pub rejected: u64,
    /// Pairs of distinct fingerprints within k (before expanding to
    /// documents).
    pub fingerprint_pairs: u64,
    /// Fingerprints held by more than one document.
    pub shared_fingerprints: u64,
    /// Groups of copies emitted ([`Copies::Grouped`]).
    pub copy_groups: u64,
    /// Documents in them.
    pub in_copy_groups: u64,
}

impl Db {
    /// Every pair of stored documents within `k` bits (0..=11) whose
    /// sketches agree at least `min_similarity` (0 keeps every pair; a pair
    /// where either document has no sketch is kept, unconfirmed), each
    /// once, handed to `emit` as it is found: exactly the pairs a
    /// brute-force comparison of all documents finds.
    ///
    /// Memory holds the pairs of a few hundred buckets at a time, not the
    /// store. Each family is read once in bucket order (with radius
    /// `k / 4` > 0, also the neighbouring buckets of each bucket).
    pub(crate) fn pairs(
        &self,
        k: u32,
        min_similarity: f64,
        mut emit: impl FnMut(&Pair) -> Result<()>,
    ) -> Result<PairsReport> {
        self.pairs_with(k, min_similarity, Copies::Pairs, |item| match item {
            PairsItem::Pair(p) => emit(p),
            PairsItem::Copies(_) => Ok(()),
        })
    }

    /// [`Clusters::pairs`](super::Clusters::pairs), with documents stored more than once reported as
    /// `copies` says: with [`Copies::Grouped`], each set of documents of
    /// the same fingerprint, sketch and length is one [`CopyGroup`] (emitted
    /// before any pair naming it), and stands in pairs for all of them
    /// under its first id. The output then grows with the number of
    /// distinct documents, not with the square of their copies.
    pub(crate) fn pairs_with(
        &self,
        k: u32,
        min_similarity: f64,
        copies: Copies,
        mut emit: impl FnMut(PairsItem<'_>) -> Result<()>,
    ) -> Result<PairsReport> {
        fingerprint::check_k(k)?;
        let mut rep = PairsReport::default();
        let radius = index::probe_radius(k);
        let ranges: Vec<(u16, u16)> = (0..(1u32 << 16) / RANGE)
            .map(|c| ((c * RANGE) as u16, (c * RANGE + RANGE - 1) as u16))
            .collect();
        let window = 4 * rayon::current_num_threads().max(1);
        // The documents of a fingerprint, or with `Grouped` the first of
        // each group of copies among them.
        let documents = |fp| -> Result<Vec<(String, Record)>> {
            let docs = self.store.documents_with(fp)?;
            Ok(match copies {
                Copies::Pairs => docs,
                Copies::Grouped => firsts(docs),
            })
        };
        // Documents that share a fingerprint: one pass over `refs`, where
        // they are neighbours.
        self.store.for_each_shared_fingerprint(|fp| {
            rep.shared_fingerprints += 1;
            let mut docs = self.store.documents_with(fp)?;
            if copies == Copies::Grouped {
                for g in groups(&docs) {
                    rep.copy_groups += 1;
                    rep.in_copy_groups += g.copies.len() as u64;
                    emit(PairsItem::Copies(&g))?;
                }
                docs = firsts(docs);
            }
            self.emit_pairs(&docs, None, min_similarity, &mut rep, &mut emit)
        })?;
        for i in 0..BLOCKS {
            for group in ranges.chunks(window) {
                // Joined in parallel, emitted in bucket order.
                let found: Vec<Result<Vec<join::FpPair>>> = group
                    .par_iter()
                    .map(|&(lo, hi)| self.join_range(i, lo, hi, k, radius))
                    .collect();
                for f in found {
                    let mut pairs = f?;
                    pairs.sort_unstable();
                    rep.fingerprint_pairs += pairs.len() as u64;
                    for (x, y) in pairs {
                        let dx = documents(x)?;
                        let dy = documents(y)?;
                        self.emit_pairs(&dx, Some(&dy), min_similarity, &mut rep, &mut emit)?;
                    }
                }
            }
        }
        Ok(rep)
    }

    /// The fingerprint pairs family `i` reports from buckets `lo..=hi`.
    fn join_range(
        &self,
        i: usize,
        lo: u16,
        hi: u16,
        k: u32,
        radius: u32,
    ) -> Result<Vec<join::FpPair>> {
        let mut pairs = Vec::new();
        self.store.for_each_bucket_in(i, lo, hi, |block, a| {
            join::join_postings(i, a, None, k, &mut pairs);
            if radius > 0 {
                for n in index::probe_blocks(block, radius) {
                    if n > block {
                        let b = self.store.bucket(i, n)?;
                        if !b.is_empty() {
                            join::join_postings(i, a, Some(&b), k, &mut pairs);
                        }
                    }
                }
            }
            Ok(())
        })?;
        Ok(pairs)
    }

    /// Emits the document pairs of `x` × `y` (or within `x` when `y` is
    /// `None`) that pass the similarity threshold.
    fn emit_pairs(
        &self,
        x: &[(String, Record)],
        y: Option<&[(String, Record)]>,
        min_similarity: f64,
        rep: &mut PairsReport,
        emit: &mut impl FnMut(PairsItem<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut one = |(ia, ra): &(String, Record), (ib, rb): &(String, Record)| -> Result<()> {
            let e = super::record_estimate(ra, rb, min_similarity);
            let similarity = e.map(|e| e.similarity);
            let lengths = super::lengths_later_first(ra, rb);
            let Some(containment) = super::confirm_estimate(e, min_similarity, || Ok(lengths))?
            else {
                rep.rejected += 1;
                return Ok(());
            };
            rep.pairs += 1;
            rep.unconfirmed += u64::from(similarity.is_none());
            let (a, b) = if ia < ib { (ia, ib) } else { (ib, ia) };
            emit(PairsItem::Pair(&Pair {
                a: a.clone(),
                b: b.clone(),
                distance: ra.fingerprint.distance(rb.fingerprint),
                similarity,
                containment,
            }))
        };
        match y {
            None => {
                for (n, p) in x.iter().enumerate() {
                    for q in &x[n + 1..] {
                        one(p, q)?;
                    }
                }
            }
            Some(y) => {
                for p in x {
                    for q in y {
                        one(p, q)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// What tells documents of one fingerprint apart: the sketch, and the
/// length (the containment rule weighs it).
fn copy_key(r: &Record) -> (Option<crate::Sketch>, u64) {
    (r.sketch, r.length)
}

/// The groups of copies among `docs` (documents of one fingerprint, in id
/// order): those of the same sketch and length, two or more, each in id
/// order.
fn groups(docs: &[(String, Record)]) -> Vec<CopyGroup> {
    let mut order: Vec<(Option<crate::Sketch>, u64)> = Vec::new();
    let mut by_key: HashMap<(Option<crate::Sketch>, u64), Vec<String>> = HashMap::new();
    for (id, r) in docs {
        by_key
            .entry(copy_key(r))
            .or_insert_with(|| {
                order.push(copy_key(r));
                Vec::new()
            })
            .push(id.clone());
    }
    order
        .into_iter()
        .filter_map(|key| by_key.remove(&key).map(|ids| (key.0, ids)))
        .filter(|(_, ids)| ids.len() > 1)
        .map(|(s, copies)| CopyGroup {
            copies,
            distance: 0,
            similarity: s.map(|_| 1.0),
        })
        .collect()
}

/// The first document (smallest id) of each group of copies among `docs`
/// (documents of one fingerprint, in id order), and the others alone.
fn firsts(docs: Vec<(String, Record)>) -> Vec<(String, Record)> {
    let mut seen: HashSet<(Option<crate::Sketch>, u64)> = HashSet::new();
    docs.into_iter()
        .filter(|(_, r)| seen.insert(copy_key(r)))
        .collect()
}
