//! The store's half of a chunk's duplicate checks, read before its
//! in-order decisions: every bucket any of the chunk's checks names, read
//! once in a sorted pass per posting family, the families spread over the
//! rayon pool; then the first `refs` entries of every fingerprint those
//! buckets offer, in sorted order, also spread over the pool.
//!
//! A writer's checks of one chunk all read the same store state: the
//! writer is the store's only writer and commits only between chunks, and
//! what it has pending is in its own memory, not in the store. So what is
//! read here, at the chunk's start, is what each check would read for
//! itself, one document after another, on the writer's thread; a
//! [`Prefetch`] is a cache of those reads and changes no decision
//! (`tests/nightly.rs` holds the chunked writes to the per-document
//! check). It is dropped at the writer's next commit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use rocksdb::ReadOptions;

use super::query::{posting_read_at, read_at, Snapshot};
use super::{ReadCounts, Store, POSTING_FAMILIES, REFS};
use crate::error::{Error, Result};
use crate::fingerprint::{Fingerprint, BLOCKS};
use crate::index::bands::BandProbe;
use crate::index::{self, ProbePlan};

/// How many of a check's candidate fingerprints (the nearest) get their
/// first `refs` entries read beforehand. A check walks candidates nearest
/// first and usually stops after a few; a flood of near copies offers
/// thousands, which the walk reads as it goes.
pub const PREFETCH_REFS_PER_CHECK: usize = 64;

/// The most candidates (fingerprints its buckets offer it, counted over
/// the block and band families) a check is read beforehand with. A check
/// near a flood of near copies is offered thousands: it is left out of
/// the prefetch and reads for itself as before (the writer keeps hot
/// buckets in memory, and its walk cuts to the nearest few), so a chunk's
/// prefetch holds at most this many per check.
pub const PREFETCH_CANDIDATES_PER_CHECK: usize = 256;

/// How many `refs` entries a walk's first read of a fingerprint takes:
/// what is read beforehand per fingerprint.
pub(crate) const FIRST_REFS: usize = super::query::FIRST_READ;

/// Buckets of one family walked by one iterator (one task of the pool).
const PART_BUCKETS: usize = 8192;

/// A fingerprint's first `refs` entries (id, sketch), in id order.
type FirstRefs = (Fingerprint, Vec<(String, super::schema::RefValue)>);

/// A check's plan: its fingerprint, probe plan and band probe.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PlanKey {
    pub fp: Fingerprint,
    pub plan: ProbePlan,
    pub probe: Option<BandProbe>,
}

/// What one check's buckets hold for it.
#[derive(Debug, Default)]
pub(crate) struct Prefetched {
    /// (family, block, fingerprint) for each fingerprint the plan's rule
    /// accepts in the block buckets of its plan and of the exact plan at
    /// its `k` (unordered).
    accepted: Vec<(u8, u16, Fingerprint)>,
    /// What the band probe accepts in its band buckets (unfiltered by the
    /// plan: see [`BandProbe::band_only`]).
    banded: Vec<Fingerprint>,
}

impl Prefetched {
    /// What [`Store::writer_candidates`] returns for the buckets of `part`
    /// (a subset of the plan's and the exact plan's, with the plan's rule),
    /// and the band probe's buckets when `bands`.
    pub(crate) fn candidates(
        &self,
        part: &ProbePlan,
        bands: bool,
    ) -> (Vec<Fingerprint>, Vec<Fingerprint>) {
        let found = self
            .accepted
            .iter()
            .filter(|(i, b, _)| part.blocks[usize::from(*i)].binary_search(b).is_ok())
            .map(|e| e.2)
            .collect();
        let banded = if bands {
            self.banded.clone()
        } else {
            Vec::new()
        };
        (found, banded)
    }
}

/// The reads of a chunk's duplicate checks (see the module).
#[derive(Debug, Default)]
pub(crate) struct Prefetch {
    checks: HashMap<PlanKey, Prefetched>,
    /// The first [`FIRST_REFS`] `refs` entries (id, value) of the
    /// fingerprints the checks may walk first, in id order.
    refs: HashMap<Fingerprint, Vec<(String, super::schema::RefValue)>>,
    /// The stored records of the ids the chunk writes (`None`: not stored).
    records: HashMap<String, Option<super::Record>>,
}

impl Prefetch {
    /// What the check of `key` reads from its buckets, if read beforehand.
    pub(crate) fn check(&self, key: &PlanKey) -> Option<&Prefetched> {
        self.checks.get(key)
    }

    /// The stored record of `id` (`Some(None)`: not stored), if read
    /// beforehand.
    pub(crate) fn record(&self, id: &str) -> Option<Option<&super::Record>> {
        self.records.get(id).map(Option::as_ref)
    }

    /// The first `refs` entries of `fp`, if read beforehand.
    pub(crate) fn first_refs(
        &self,
        fp: Fingerprint,
    ) -> Option<&[(String, super::schema::RefValue)]> {
        self.refs.get(&fp).map(Vec::as_slice)
    }
}

impl Store {
    /// Reads, at `at`, what the duplicate checks of `keys` will read from
    /// the store: their buckets (the plan's, the exact plan's at its `k`,
    /// the band probe's) in one sorted pass per posting family, the
    /// families on the rayon pool, and the first `refs` entries of the own
    /// fingerprint and the nearest [`PREFETCH_REFS_PER_CHECK`] candidates of
    /// each check, sorted and also on the pool. For the writer (`writer`:
    /// `at` is then the latest state), the heads of the buckets a new
    /// document of each fingerprint enters are remembered for the commit
    /// (see [`super::postings::Heads`]).
    pub(crate) fn prefetch(
        &self,
        at: &Snapshot<'_>,
        keys: Vec<PlanKey>,
        ids: Vec<&str>,
        writer: bool,
    ) -> Result<Prefetch> {
        // Copies in a chunk share a plan: one check each.
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        let keys: Vec<PlanKey> = keys
            .into_iter()
            .filter(|k| seen.insert(k.clone()))
            .collect();
        drop(seen);
        for k in &keys {
            crate::fingerprint::check_k(k.plan.k)?;
        }
        // Per check and family: the buckets it reads, ascending.
        let exact: Vec<ProbePlan> = keys
            .iter()
            .map(|k| ProbePlan::exact(k.fp, k.plan.k))
            .collect();
        // Candidates offered so far, per check (past the cap: left out).
        let offered: Vec<AtomicUsize> = keys.iter().map(|_| AtomicUsize::new(0)).collect();
        let per_family: Vec<Result<FamilyPass>> = (0..POSTING_FAMILIES)
            .into_par_iter()
            .map(|i| self.prefetch_family(at, i, &keys, &exact, &offered))
            .collect();
        let mut out: Vec<Prefetched> = (0..keys.len()).map(|_| Prefetched::default()).collect();
        let mut heads: Vec<((usize, u16), (usize, u32))> = Vec::new();
        for (i, pass) in per_family.into_iter().enumerate() {
            let pass = pass?;
            for (j, b, fp) in pass.found {
                if i < BLOCKS {
                    out[j].accepted.push((i as u8, b, fp));
                } else {
                    out[j].banded.push(fp);
                }
            }
            heads.extend(pass.heads.into_iter().map(|(b, h)| ((i, b), h)));
        }
        if writer {
            self.seed_heads(heads);
        }
        // The checks offered too many candidates read for themselves.
        let kept: Vec<(PlanKey, Prefetched)> = keys
            .into_iter()
            .zip(out)
            .zip(&offered)
            .filter(|(_, n)| n.load(Ordering::Relaxed) <= PREFETCH_CANDIDATES_PER_CHECK)
            .map(|(c, _)| c)
            .collect();
        // The fingerprints whose documents the checks may walk first.
        let mut fps: Vec<Fingerprint> = Vec::new();
        for (k, p) in &kept {
            fps.push(k.fp);
            let mut cands: Vec<Fingerprint> = p.accepted.iter().map(|e| e.2).collect();
            if let Some(probe) = &k.probe {
                cands.extend(probe.band_only(k.fp, &k.plan, p.banded.clone()));
            }
            cands.sort_unstable_by_key(|f| (f.distance(k.fp), *f));
            cands.dedup();
            fps.extend(cands.into_iter().take(PREFETCH_REFS_PER_CHECK));
        }
        fps.sort_unstable();
        fps.dedup();
        let parts = rayon::current_num_threads().max(1) * 4;
        let size = fps.len().div_ceil(parts).max(64);
        let refs: Vec<Result<Vec<FirstRefs>>> = fps
            .par_chunks(size)
            .map(|part| self.first_refs_of(at, part))
            .collect();
        let mut first = HashMap::with_capacity(fps.len());
        for r in refs {
            first.extend(r?);
        }
        let records = self.records_of(at, ids)?;
        Ok(Prefetch {
            checks: kept.into_iter().collect(),
            refs: first,
            records,
        })
    }

    /// The stored records of `ids` at `at`, by one sorted multi-get.
    fn records_of(
        &self,
        at: &Snapshot<'_>,
        mut ids: Vec<&str>,
    ) -> Result<HashMap<String, Option<super::Record>>> {
        ids.sort_unstable();
        ids.dedup();
        ReadCounts::add(&self.reads.records, ids.len() as u64);
        let values =
            self.db
                .batched_multi_get_cf_opt(self.cf(super::DOCS), &ids, true, &read_at(at));
        let mut out = HashMap::with_capacity(ids.len());
        for (id, v) in ids.into_iter().zip(values) {
            let rec = match v? {
                None => None,
                Some(v) => Some(
                    super::codec::decode_record(&v)
                        .map_err(|r| Error::corrupt(super::DOCS, id.as_bytes(), r))?,
                ),
            };
            out.insert(id.to_string(), rec);
        }
        Ok(out)
    }

    /// One sorted pass over posting family `i` for all of `keys`: each
    /// bucket any of them reads, read once, checked against every check
    /// that reads it. The buckets are walked in order with one iterator
    /// per part of the family (the parts on the rayon pool): it seeks each
    /// bucket that is not the next key. It does not step through the keys
    /// between, even a few buckets on: landing on a key merges the
    /// operands written on it since the last compaction (a copy of its
    /// head), so on a store written since, each key stepped over costs
    /// about what a seek does (50M documents, nightly ingest: 12-17%
    /// faster without stepping, docs/performance.md).
    fn prefetch_family(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        keys: &[PlanKey],
        exact: &[ProbePlan],
        offered: &[AtomicUsize],
    ) -> Result<FamilyPass> {
        // (bucket, check) pairs, sorted.
        let mut order: Vec<(u16, usize)> = Vec::new();
        if i < BLOCKS {
            for (j, k) in keys.iter().enumerate() {
                let (a, b) = (&k.plan.blocks[i], &exact[j].blocks[i]);
                order.extend(a.iter().map(|&blk| (blk, j)));
                order.extend(
                    b.iter()
                        .filter(|blk| a.binary_search(blk).is_err())
                        .map(|&blk| (blk, j)),
                );
            }
        } else {
            for (j, k) in keys.iter().enumerate() {
                if let Some(p) = k.probe.as_ref().filter(|p| p.probes(i - BLOCKS)) {
                    order.push((p.values[i - BLOCKS], j));
                }
            }
        }
        order.sort_unstable();
        let mut groups: Vec<(u16, std::ops::Range<usize>)> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let block = order[start].0;
            let end = start + order[start..].partition_point(|(b, _)| *b == block);
            groups.push((block, start..end));
            start = end;
        }
        let parts: Vec<Result<FamilyPass>> = groups
            .par_chunks(PART_BUCKETS)
            .map(|part| self.prefetch_part(at, i, keys, &order, part, offered))
            .collect();
        let mut pass = FamilyPass::default();
        for p in parts {
            let p = p?;
            pass.found.extend(p.found);
            pass.heads.extend(p.heads);
        }
        Ok(pass)
    }

    /// The buckets `groups` (ascending; each with its checks' range of
    /// `order`) of family `i`, walked with one iterator.
    fn prefetch_part(
        &self,
        at: &Snapshot<'_>,
        i: usize,
        keys: &[PlanKey],
        order: &[(u16, usize)],
        groups: &[(u16, std::ops::Range<usize>)],
        offered: &[AtomicUsize],
    ) -> Result<FamilyPass> {
        let name = super::posting_family(i);
        // The bucket a new document of check `j`'s fingerprint enters:
        // its head is what the commit needs.
        let own = |j: usize| -> Option<u16> {
            let k = &keys[j];
            if i < BLOCKS {
                Some(k.fp.block(i))
            } else {
                k.probe.map(|p| p.values[i - BLOCKS])
            }
        };
        let mut pass = FamilyPass::default();
        let mut ro = posting_read_at(at);
        ro.set_total_order_seek(true);
        // A dense pass (most of the family's buckets) walks the family
        // once per chunk: it would only churn the block cache.
        let span = match (groups.first(), groups.last()) {
            (Some(a), Some(b)) => usize::from(b.0 - a.0) + 1,
            _ => 0,
        };
        ro.fill_cache(groups.len() * 4 < span);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(name), ro);
        let Some(first) = groups.first() else {
            return Ok(pass);
        };
        it.seek(index::bucket_key(first.0));
        let mut hits = Vec::new();
        for (blk, range) in groups {
            let checks = &order[range.clone()];
            let wanted_head = checks.iter().any(|&(_, j)| own(j) == Some(*blk));
            // To the first key at or after the bucket's head: by a seek,
            // unless the iterator is there already.
            if let Some(k) = it.key() {
                let (cur, _) =
                    index::decode_block_key(k).map_err(|r| Error::corrupt(name, k, r))?;
                if cur < *blk {
                    it.seek(index::bucket_key(*blk));
                }
            }
            it.status()?;
            let mut scan = |posting: &[u8]| {
                for &(_, j) in checks {
                    let cap = PREFETCH_CANDIDATES_PER_CHECK;
                    if offered[j].load(Ordering::Relaxed) > cap {
                        continue; // left out: it reads for itself
                    }
                    hits.clear();
                    let k = &keys[j];
                    match &k.probe {
                        Some(p) if i >= BLOCKS => p.scan_posting(k.fp, posting, &mut hits),
                        _ => k.plan.scan_posting(k.fp, posting, &mut hits),
                    }
                    if offered[j].fetch_add(hits.len(), Ordering::Relaxed) + hits.len() <= cap {
                        pass.found.extend(hits.iter().map(|&fp| (j, *blk, fp)));
                    }
                }
            };
            let head = index::bucket_key(*blk);
            let segments = match (it.key(), it.value()) {
                (Some(k), Some(v)) if k == head => {
                    ReadCounts::add(&self.reads.buckets, 1);
                    let (entries, segments) =
                        index::split_head(v).map_err(|r| Error::corrupt(name, k, r))?;
                    scan(entries);
                    if wanted_head {
                        pass.heads
                            .push((*blk, (entries.len() / index::ENTRY_LEN, segments)));
                    }
                    it.next();
                    segments
                }
                _ => {
                    // An absent bucket: its head is empty.
                    if wanted_head {
                        pass.heads.push((*blk, (0, 0)));
                    }
                    0
                }
            };
            // The sealed segments the head names.
            let mut left = segments;
            while left > 0 {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                let (cur, n) =
                    index::decode_block_key(k).map_err(|r| Error::corrupt(name, k, r))?;
                if cur != *blk || n == 0 || n > segments {
                    break;
                }
                if !v.len().is_multiple_of(index::ENTRY_LEN) {
                    return Err(Error::corrupt(
                        name,
                        k,
                        "segment is not a whole number of entries",
                    ));
                }
                ReadCounts::add(&self.reads.buckets, 1);
                scan(v);
                it.next();
                left -= 1;
            }
            it.status()?;
        }
        Ok(pass)
    }

    /// The first [`FIRST_REFS`] `refs` entries of each of `fps`
    /// (ascending), as a walk's first read of each takes them.
    fn first_refs_of(&self, at: &Snapshot<'_>, fps: &[Fingerprint]) -> Result<Vec<FirstRefs>> {
        let mut ro: ReadOptions = read_at(at);
        ro.set_prefix_same_as_start(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(REFS), ro);
        fps.iter()
            .map(|&fp| Ok((fp, super::query::first_refs(&mut it, &self.reads, fp)?)))
            .collect()
    }
}

/// What one family's pass found: (check, bucket, fingerprint), and the
/// heads (entries, segments) of the buckets the checks' documents enter.
#[derive(Default)]
struct FamilyPass {
    found: Vec<(usize, u16, Fingerprint)>,
    heads: Vec<(u16, (usize, u32))>,
}
