//! The batch writer: one RocksDB write batch at a time, whose pending
//! documents its own queries see.

use std::collections::{HashMap, HashSet};

use super::clusters::{Anchor, ClusterChanges, ClusterState};
use super::{Content, Outcome, Query};
use crate::error::{Error, Result};
use crate::fingerprint::{Analysis, Fingerprint};
use crate::index::{self, Hit, MemIndex};
use crate::store::{self, Flow, Priority, Record, Store};

/// Where a written document goes, beyond its content: its priority (for
/// the `priority` keep policy) and its confirmed near-copies, among whose
/// clusters it joins the one whose representative confirms it best (see
/// [`crate::db::clusters`]).
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// The input's priority (NaN is refused).
    pub priority: Option<f64>,
    /// Ids of stored documents (or documents written earlier in this
    /// writer) that are confirmed near-copies of it.
    pub near: Vec<String>,
    /// How a representative must confirm it (`None`: as the store's
    /// default duplicate check does).
    pub anchor: Option<Anchor>,
}

/// What [`Writer::check`] found.
#[derive(Debug, Default)]
pub(crate) struct Check {
    /// Confirmed hits, nearest first (then by id).
    pub hits: Vec<Hit>,
    /// Whether every candidate was looked at (so `hits` is all of them).
    pub complete: bool,
}

/// A batch of writes: one RocksDB `WriteBatch`, atomic across families.
///
/// Queries through the writer see the store plus the writer's own pending
/// writes, so a document written earlier in a batch is found by the
/// duplicate check of a later one.
pub struct Writer<'a> {
    store: &'a Store,
    batch: store::Batch,
    /// Pending state of ids touched by this batch (None = deleted).
    overlay: HashMap<String, Option<Record>>,
    /// Fingerprints of documents this batch writes, deletes or replaces:
    /// at commit, the fingerprints that gain their first document or lose
    /// their last enter or leave their buckets, and those whose first
    /// document changed move in the band buckets (what the batch writes
    /// with each is in `overlay`).
    fps: HashSet<Fingerprint>,
    /// Pending fingerprints of this batch.
    mem: MemIndex,
    count: u64,
    short: u64,
    ops: usize,
    sync: bool,
    /// The ord the next written document takes, and the latest time
    /// stamped (a write never stamps an earlier one).
    next_ord: u64,
    clock: u64,
    clusters: ClusterState,
    /// The store's default check, as an anchor.
    anchor: Anchor,
    /// What the checks of the chunk being written read from the store,
    /// read beforehand ([`Writer::prefetch`]); dropped at commit.
    prefetch: Option<store::Prefetch>,
}

/// A [`Writer`] through a shared `Db` ([`Db::shared_writer`](super::Db::shared_writer)): it holds the
/// `Db`'s writer lock until dropped, and is used as the writer it
/// dereferences to. Dropping it hands the lock to the longest waiting
/// writer, if any (a fair hand-off: a writer that takes the lock again at
/// once, as a chunked write does, goes to the back of the line).
pub struct SharedWriter<'a> {
    writer: Writer<'a>,
    lock: Option<parking_lot::MutexGuard<'a, ()>>,
}

impl<'a> SharedWriter<'a> {
    pub(super) fn new(writer: Writer<'a>, lock: parking_lot::MutexGuard<'a, ()>) -> Self {
        SharedWriter {
            writer,
            lock: Some(lock),
        }
    }
}

impl Drop for SharedWriter<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.lock.take() {
            parking_lot::MutexGuard::unlock_fair(g);
        }
    }
}

impl<'a> std::ops::Deref for SharedWriter<'a> {
    type Target = Writer<'a>;
    fn deref(&self) -> &Writer<'a> {
        &self.writer
    }
}

impl std::ops::DerefMut for SharedWriter<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.writer
    }
}

impl<'a> Writer<'a> {
    /// A writer of `store` (opened for writing), starting from its counts;
    /// `anchor` is the store's default check (for placements without one,
    /// and re-anchoring after a representative leaves).
    pub(super) fn new(store: &'a Store, anchor: Anchor) -> Result<Writer<'a>> {
        let (next_ord, clock) = store.ord_state()?;
        Ok(Writer {
            store,
            batch: store::Batch::default(),
            overlay: HashMap::new(),
            fps: HashSet::new(),
            mem: MemIndex::new(),
            count: store.doc_count()?,
            short: store.short_count()?,
            ops: 0,
            sync: false,
            next_ord,
            clock,
            clusters: ClusterState::new(store.keep_policy()?, anchor),
            anchor,
            prefetch: None,
        })
    }
}

impl Writer<'_> {
    /// Make [`Writer::commit`] wait until the batch is on stable storage (fsync).
    pub fn set_sync(&mut self, sync: bool) {
        self.sync = sync;
    }

    /// The current record of `id`, pending writes included.
    pub fn get(&self, id: &str) -> Result<Option<Record>> {
        if !self.overlay.contains_key(id) {
            if let Some(r) = self.prefetch.as_ref().and_then(|p| p.record(id)) {
                return Ok(r.cloned());
            }
        }
        pending_or_stored(&self.overlay, self.store, id)
    }

    /// Whether `id` is stored (or pending) with this fingerprint and content.
    pub fn is_unchanged(&self, id: &str, a: &Analysis, content: &Content) -> Result<bool> {
        Ok(self
            .get(id)?
            .is_some_and(|r| r.fingerprint == a.fingerprint && r.content_hash == content.hash()))
    }

    /// Inserts or replaces `id` with a document of fingerprint
    /// `doc.fingerprint` (and, from an [`Analysis`] of its text, its term
    /// count, verification sketch and top terms; a bare [`Fingerprint`]
    /// converts into an analysis without them). The document is alone in
    /// its cluster; see [`Writer::put_placed`].
    pub fn put(
        &mut self,
        id: &str,
        doc: impl Into<Analysis>,
        content: &Content,
        source: &str,
    ) -> Result<Outcome> {
        self.put_placed(id, doc, content, source, &Placement::default())
    }

    /// [`Writer::put`] with a priority, joining the clusters of the
    /// near-copies `place.near` (ingest passes what its duplicate check
    /// confirmed). A replaced document leaves its cluster first and takes
    /// a new place in the ingest order.
    pub fn put_placed(
        &mut self,
        id: &str,
        doc: impl Into<Analysis>,
        content: &Content,
        source: &str,
        place: &Placement,
    ) -> Result<Outcome> {
        let anchor = place.anchor.unwrap_or(self.anchor);
        self.put_near(
            id,
            doc.into(),
            content,
            source,
            place.priority,
            &place.near,
            &anchor,
        )
    }

    /// [`Writer::put_placed`], the parts taken apart.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn put_near(
        &mut self,
        id: &str,
        doc: Analysis,
        content: &Content,
        source: &str,
        priority: Option<f64>,
        near: &[String],
        anchor: &Anchor,
    ) -> Result<Outcome> {
        check_id(id)?;
        let priority = priority
            .map(|p| {
                Priority::new(p).ok_or_else(|| {
                    Error::Input(format!("document {id:?}: priority is not a number"))
                })
            })
            .transpose()?;
        let fp = doc.fingerprint;
        let hash = content.hash();
        let old = self.get(id)?;
        let outcome = match &old {
            Some(r) if r.fingerprint == fp && r.content_hash == hash => {
                return Ok(Outcome::Unchanged)
            }
            Some(r) => {
                self.clusters.leave(self.store, &mut self.batch, id, r)?;
                self.store.delete_doc(&mut self.batch, id, r);
                self.short = self.short.saturating_sub(u64::from(r.is_short()));
                self.fps.insert(r.fingerprint);
                Outcome::Replaced
            }
            None => {
                self.count += 1;
                Outcome::Inserted
            }
        };
        let near: Vec<String> = near.iter().filter(|n| *n != id).cloned().collect();
        self.clock = self.clock.max(now());
        let ord = self.next_ord;
        self.next_ord += 1;
        let rec = Record {
            fingerprint: fp,
            content_hash: hash,
            length: content.len(),
            ingested_at: self.clock,
            source: source.to_string(),
            terms: u32::try_from(doc.terms).unwrap_or(u32::MAX),
            sketch: doc.sketch,
            top_terms: doc.top_terms,
            weak_bits: doc.weak_bits,
            ord,
            priority,
        };
        self.short += u64::from(rec.is_short());
        self.store.put_doc(&mut self.batch, id, &rec);
        // Records as the batch has them, this document not yet in.
        let (overlay, store) = (&self.overlay, self.store);
        let get = |n: &str| pending_or_stored(overlay, store, n);
        self.clusters
            .join(store, &mut self.batch, id, &rec, &near, anchor, &get)?;
        self.fps.insert(fp);
        self.mem.insert_sketched(id, fp, rec.sketch);
        self.overlay.insert(id.to_string(), Some(rec));
        self.ops += 1;
        Ok(outcome)
    }

    /// Whether a document of analysis `a`, content `content` and
    /// `priority`, with the confirmed near-copies `near`, would represent
    /// its cluster if written now: it matches no representative under
    /// `anchor`, or outranks the one it matches best (what
    /// `--skip-duplicates` keeps).
    pub(crate) fn would_represent(
        &self,
        a: &Analysis,
        content: &Content,
        priority: Option<f64>,
        near: &[String],
        anchor: &Anchor,
    ) -> Result<bool> {
        let rec = Record {
            fingerprint: a.fingerprint,
            content_hash: content.hash(),
            length: content.len(),
            ingested_at: self.clock,
            source: String::new(),
            terms: 0,
            sketch: a.sketch,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            ord: self.next_ord,
            priority: priority.and_then(Priority::new),
        };
        let (overlay, store) = (&self.overlay, self.store);
        let get = |n: &str| pending_or_stored(overlay, store, n);
        self.clusters
            .would_represent(store, &rec, near, anchor, &get)
    }

    /// Deletes `id`; returns whether it existed.
    pub fn delete(&mut self, id: &str) -> Result<bool> {
        let Some(old) = self.get(id)? else {
            return Ok(false);
        };
        self.clusters.leave(self.store, &mut self.batch, id, &old)?;
        self.store.delete_doc(&mut self.batch, id, &old);
        self.fps.insert(old.fingerprint);
        self.overlay.insert(id.to_string(), None);
        self.mem.remove(id);
        self.count = self.count.saturating_sub(1);
        self.short = self.short.saturating_sub(u64::from(old.is_short()));
        self.ops += 1;
        Ok(true)
    }

    /// Reads beforehand what the duplicate checks of `queries` (the
    /// documents this writer is about to check, in any order) will read
    /// from the store: their buckets in one sorted pass per family and
    /// their candidates' first `refs` entries, spread over the rayon pool.
    /// The checks then make their in-order decisions from memory, with the
    /// same answers (the store does not change until this writer commits;
    /// its pending writes are its own). What was read is dropped at the
    /// next commit. A check not among `queries` reads for itself.
    ///
    /// `ids` are the ids the chunk writes: their stored records are read
    /// too (whether each is new, replaced or unchanged).
    pub fn prefetch<'q>(
        &mut self,
        queries: impl IntoIterator<Item = &'q Query>,
        ids: impl IntoIterator<Item = &'q str>,
    ) -> Result<()> {
        let keys: Vec<store::PlanKey> = queries
            .into_iter()
            .map(|q| store::PlanKey {
                fp: q.fingerprint,
                plan: q.plan(),
                probe: q.band_probe(),
            })
            .collect();
        let ids: Vec<&str> = ids.into_iter().collect();
        if keys.is_empty() && ids.is_empty() {
            return Ok(());
        }
        let at = self.store.snapshot();
        self.prefetch = Some(self.store.prefetch(&at, keys, ids)?);
        Ok(())
    }

    /// Documents within `k` of `q` in the store and this batch, sorted.
    pub fn query(&self, q: Fingerprint, k: u32, limit: Option<usize>) -> Result<Vec<Hit>> {
        self.search(&Query {
            k,
            limit,
            ..Query::new(q)
        })
    }

    /// [`Db::search`](super::Db::search) over the store and this batch.
    pub fn search(&self, q: &Query) -> Result<Vec<Hit>> {
        let limit = q.limit.unwrap_or(usize::MAX);
        Ok(self.check(q, limit, usize::MAX, false)?.hits)
    }

    /// The nearest confirmed hit of `q` over the store and this batch,
    /// looked for as a write's duplicate check looks (at most
    /// [`super::limits::CHECK_EXAMINED`] candidates, nearest first).
    pub fn first_duplicate(&self, q: &Query) -> Result<Option<Hit>> {
        let c = self.check(q, 1, super::limits::CHECK_EXAMINED, true)?;
        Ok(c.hits.into_iter().next())
    }

    /// The hits of `q` over the store and this batch, nearest first (then
    /// by id), as [`Writer::search`] finds them, but stopping once
    /// `confirm` hits are confirmed or `examine` candidates were looked at
    /// (a candidate costs a `refs` entry; a confirmed one also a record
    /// read, for its rank; a pending one, neither). Also returns each
    /// hit's rank in its cluster, and whether every candidate was looked
    /// at.
    ///
    /// The documents of the query's own fingerprint are looked at first
    /// (they come first in any answer): when they are enough, no bucket is
    /// read, so a write of the millionth copy of a text costs a few `refs`
    /// entries. Then the exact plan's buckets (one per family for k <= 3),
    /// then, for a ranked query, beyond k. With `stop_within_k` (a write's
    /// duplicate check) it looks beyond k only when nothing within k was
    /// confirmed: near a flood of copies, what lies beyond k is the flood
    /// itself.
    pub(crate) fn check(
        &self,
        q: &Query,
        confirm: usize,
        examine: usize,
        stop_within_k: bool,
    ) -> Result<Check> {
        let at = self.store.snapshot();
        let fp = q.fingerprint;
        let mut out = Check::default();
        let examined = std::cell::Cell::new(0usize);
        // Candidates the sketch rejected: a search stops at
        // `limits::QUERY_REJECTED` of them (a write's `examine` is less).
        let mut rejected = 0usize;
        // Whether another candidate is wanted; then takes it.
        // A candidate's length and ord, for containment: pending, or
        // stored.
        let length = |h: &Hit| -> Result<(u64, u64)> {
            match self.overlay.get(&h.id) {
                Some(Some(r)) => Ok((r.length, r.ord)),
                _ => {
                    let r = self.store.checked_record(&at, h.fingerprint, &h.id)?;
                    Ok((r.length, r.ord))
                }
            }
        };
        let mut take = |mut h: Hit, out: &mut Check| -> Result<Flow> {
            if out.hits.len() >= confirm
                || examined.get() >= examine
                || rejected >= super::limits::QUERY_REJECTED
            {
                return Ok(Flow::Stop);
            }
            examined.set(examined.get() + 1);
            if q.confirm(&mut h, length)? {
                out.hits.push(h);
            } else {
                rejected += 1;
            }
            Ok(Flow::Continue)
        };
        // An id this batch touched is answered from the batch.
        let skip = |id: &str| self.overlay.contains_key(id) || q.exclude.as_deref() == Some(id);
        let pending_hit = |(id, f): (&str, Fingerprint)| -> Option<Hit> {
            if q.exclude.as_deref() == Some(id) {
                return None;
            }
            let Some(Some(r)) = self.overlay.get(id) else {
                return None;
            };
            Some(Hit {
                id: id.to_string(),
                fingerprint: f,
                distance: f.distance(fp),
                similarity: q.sketch.zip(r.sketch).map(|(a, b)| a.similarity(&b)),
                containment: None,
            })
        };
        let sketch = q.sketch.as_ref();
        let plan = q.plan();
        // What the chunk's prefetch read for this check, if it did.
        let pre = self.prefetch.as_ref();
        let prefetched = pre.and_then(|p| {
            p.check(&store::PlanKey {
                fp,
                plan: plan.clone(),
                probe: q.band_probe(),
            })
        });
        // Distance 0: the store's documents of `fp` merged with the batch's.
        let mut pending = self.mem.exact(fp).filter_map(pending_hit).peekable();
        let mut done = self
            .store
            .resolve_prefetched(&at, fp, None, sketch, &skip, pre, |h| {
                merged(&mut pending, h, &mut out, &mut take)
            })?
            && drain(&mut pending, &mut out, &mut take)?;
        // Then from the buckets (on this thread: ingest keeps the pool busy
        // fingerprinting the next chunk meanwhile): those of the exact plan
        // at k, for distance 1..=k (every such fingerprint is there), then,
        // for a ranked plan, what lies farther: in those same buckets (set
        // aside by the first read, which applies the whole plan's rule) and
        // in the plan's other buckets.
        let exact = index::ProbePlan::exact(fp, plan.k);
        let mut far_here: Vec<Fingerprint> = Vec::new();
        // A search reads the band buckets with the plan's (one walk,
        // nearest first); a write's check only once the plan found no
        // duplicate (a third stage): a flood of near copies, which the
        // plan finds, does not scan the bands' hot buckets for each copy.
        let bands_apart = stop_within_k && q.band_probe().is_some();
        for n in 0..3 {
            // Beyond k only for a document with no duplicate within it: a
            // write that has one knows it is a duplicate, and of what.
            // (The duplicates within k are then all of the document's:
            // the walk is complete without the rest.)
            let found_within = stop_within_k && !out.hits.is_empty();
            if !done || (n >= 1 && (!plan.ranked || found_within)) || (n == 2 && !bands_apart) {
                break;
            }
            let part = if n == 0 {
                index::ProbePlan {
                    blocks: exact.blocks.clone(),
                    ..plan.clone()
                }
            } else if n == 2 {
                // The bands alone (the plan's rule, none of its buckets).
                index::ProbePlan {
                    blocks: Default::default(),
                    ..plan.clone()
                }
            } else {
                index::ProbePlan {
                    blocks: std::array::from_fn(|i| {
                        let own = &exact.blocks[i];
                        plan.blocks[i]
                            .iter()
                            .copied()
                            .filter(|b| own.binary_search(b).is_err())
                            .collect()
                    }),
                    ..plan.clone()
                }
            };
            let wanted = |f: Fingerprint| {
                let d = f.distance(fp);
                if n == 0 {
                    d > 0 && d <= plan.k
                } else {
                    d > plan.k
                }
            };
            let probe = match n {
                0 => None,
                1 if bands_apart => None,
                _ => q.band_probe(),
            };
            let (mut found, banded) = match prefetched {
                Some(p) => p.candidates(&part, probe.is_some()),
                None => self
                    .store
                    .writer_candidates(&at, fp, &part, probe.as_ref())?,
            };
            // The bands' nearest few over the store and the batch together:
            // the store's go to its walk, the batch's filter its own.
            // (A fingerprint among the nearest few of both is among the
            // nearest few of its own side: each side is cut first.)
            let mut chosen: Vec<Fingerprint> = Vec::new();
            if let Some(p) = &probe {
                let stored = p.band_only(fp, &plan, banded);
                let mut all = p.band_only(fp, &plan, self.mem.band_candidates(fp, p));
                all.extend_from_slice(&stored);
                chosen = p.band_only(fp, &plan, all);
                found.extend(chosen.iter().filter(|f| stored.contains(f)));
            }
            if n == 0 {
                far_here = found
                    .iter()
                    .copied()
                    .filter(|f| f.distance(fp) > plan.k)
                    .collect();
            } else if n == 1 {
                found.append(&mut far_here);
            }
            found.retain(|f| wanted(*f));
            // The walk looks at no more than `examine` documents, nearest
            // first: fingerprints farther than the nearest few thousand
            // are set aside, and walked only if the nearer ones run out.
            let want = 4 * examine.saturating_sub(examined.get()).max(1);
            let (near, far) = nearest_levels(found, fp, want);
            let pending_plan = match n {
                0 => &exact,
                1 => &plan,
                _ => &part,
            };
            let mut pending = self
                .mem
                .ordered_banded(fp, pending_plan, probe.as_ref())
                .filter(|(_, f)| wanted(*f))
                .filter(|(_, f)| probe.is_none() || plan.accepts(fp, *f) || chosen.contains(f))
                .filter_map(pending_hit)
                .peekable();
            done = self
                .store
                .resolve_prefetched(&at, fp, Some(near), sketch, &skip, pre, |h| {
                    merged(&mut pending, h, &mut out, &mut take)
                })?;
            if done && !far.is_empty() {
                done =
                    self.store
                        .resolve_prefetched(&at, fp, Some(far), sketch, &skip, pre, |h| {
                            merged(&mut pending, h, &mut out, &mut take)
                        })?;
            }
            done = done && drain(&mut pending, &mut out, &mut take)?;
        }
        out.complete = done;
        Ok(out)
    }

    /// How this writer changed the clusters so far.
    pub fn cluster_changes(&self) -> ClusterChanges {
        self.clusters.changes()
    }

    /// Writes the batch atomically and starts a new one.
    pub fn commit(&mut self) -> Result<()> {
        // What was read beforehand is the state this commit changes (its
        // `refs` entries serve the posting changes below, then it goes).
        let pre = self.prefetch.take();
        if self.ops == 0 {
            // Nothing to write; but with sync, an answer such as
            // "unchanged" rests on earlier writes that must be durable too.
            if self.sync {
                self.store.sync_wal()?;
            }
            return Ok(());
        }
        // Clusters whose representative left are marked for a re-check
        // of their members (in steps, after the commit).
        let (overlay, store) = (&self.overlay, self.store);
        let get = |n: &str| pending_or_stored(overlay, store, n);
        self.clusters
            .settle(store, &mut self.batch, &get, self.next_ord)?;
        let mut batch = std::mem::take(&mut self.batch);
        // The first document (smallest id) the batch writes with each
        // fingerprint: with the stored ones, it names the band buckets.
        let mut first: HashMap<Fingerprint, (&str, Option<crate::fingerprint::Sketch>)> =
            HashMap::new();
        for (id, rec) in overlay {
            if let Some(r) = rec {
                let e = first
                    .entry(r.fingerprint)
                    .or_insert((id.as_str(), r.sketch));
                if id.as_str() < e.0 {
                    *e = (id.as_str(), r.sketch);
                }
            }
        }
        let written = self
            .store
            .posting_changes(
                self.fps.iter().map(|fp| (*fp, first.get(fp).copied())),
                &|id| overlay.contains_key(id),
                pre.as_ref(),
            )
            .and_then(|changes| self.store.write_postings(&mut batch, &changes))
            .and_then(|()| {
                self.store.put_doc_count(&mut batch, self.count);
                self.store.put_short_count(&mut batch, self.short);
                self.store
                    .put_ord_state(&mut batch, self.next_ord, self.clock);
                self.store.write(batch, self.sync)
            });
        if let Err(e) = written {
            // What the writer knew of the buckets may include this batch.
            self.store.forget_heads();
            return Err(e);
        }
        self.clusters.committed();
        self.overlay.clear();
        self.fps.clear();
        self.mem = MemIndex::new();
        self.ops = 0;
        // One bounded step of the clusters' re-checks under way, if any:
        // a small cluster is done with this commit, a large one goes on
        // at the next commits (or [`Writer::settle_step`]).
        self.settle_step()?;
        Ok(())
    }

    /// One bounded step ([`limits::SETTLE_STEP`] members) of the
    /// re-checks of clusters whose representative changed, written at
    /// once (a batch of pending writes is committed first). Returns
    /// whether any is still under way. [`Db::settle_clusters`] runs them
    /// to the end, a step per hold of the writer lock.
    ///
    /// [`Db::settle_clusters`]: super::Db::settle_clusters
    pub fn settle_step(&mut self) -> Result<bool> {
        if self.ops > 0 {
            self.commit()?;
        }
        if self.store.stale_clusters(1)?.is_empty() {
            return Ok(false);
        }
        let store = self.store;
        let get = |n: &str| store.get(n);
        let mut b = std::mem::take(&mut self.batch);
        self.clusters
            .step(store, &mut b, &get, super::limits::SETTLE_STEP)?;
        self.store.write(b, self.sync)?;
        self.clusters.committed();
        Ok(!self.store.stale_clusters(1)?.is_empty())
    }
}

/// The record of `n` as a batch sees it: its pending write (or deletion)
/// in `overlay`, else the store's.
fn pending_or_stored(
    overlay: &HashMap<String, Option<Record>>,
    store: &Store,
    n: &str,
) -> Result<Option<Record>> {
    match overlay.get(n) {
        Some(r) => Ok(r.clone()),
        None => store.get(n),
    }
}

/// `found` split at a distance: the nearest fingerprints, of the levels
/// (distances) that hold at least `want` of them, and the farther ones.
fn nearest_levels(
    found: Vec<Fingerprint>,
    q: Fingerprint,
    want: usize,
) -> (Vec<Fingerprint>, Vec<Fingerprint>) {
    if found.len() <= want {
        return (found, Vec::new());
    }
    let mut per_level = [0usize; 65];
    for f in &found {
        per_level[f.distance(q) as usize] += 1;
    }
    let mut seen = 0;
    let cut = per_level
        .iter()
        .position(|n| {
            seen += n;
            seen >= want
        })
        .unwrap_or(64) as u32;
    found.into_iter().partition(|f| f.distance(q) <= cut)
}

/// Hands `take` the pending hits that sort before the store's hit `h`,
/// then `h` (see [`Writer::check`]).
fn merged(
    pending: &mut std::iter::Peekable<impl Iterator<Item = Hit>>,
    h: Hit,
    out: &mut Check,
    take: &mut impl FnMut(Hit, &mut Check) -> Result<Flow>,
) -> Result<Flow> {
    while let Some(p) = pending.peek() {
        if (p.distance, &p.id) > (h.distance, &h.id) {
            break;
        }
        if let Some(p) = pending.next() {
            if take(p, out)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
    }
    take(h, out)
}

/// Hands `take` the pending hits left; whether it took them all.
fn drain(
    pending: &mut impl Iterator<Item = Hit>,
    out: &mut Check,
    take: &mut impl FnMut(Hit, &mut Check) -> Result<Flow>,
) -> Result<bool> {
    for p in pending {
        if take(p, out)? == Flow::Stop {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Ids are non-empty UTF-8 of at most 4096 bytes.
pub fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(Error::Input("document id is empty".into()));
    }
    if id.len() > 4096 {
        return Err(Error::Input(format!(
            "document id is {} bytes (at most 4096)",
            id.len()
        )));
    }
    Ok(())
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
