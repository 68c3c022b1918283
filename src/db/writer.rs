//! The batch writer: one RocksDB write batch at a time, whose pending
//! documents its own queries see.

use std::collections::HashMap;

use super::clusters::{ClusterChanges, ClusterState};
use super::{Content, Outcome, Query};
use crate::error::{Error, Result};
use crate::fingerprint::{Analysis, Fingerprint};
use crate::index::{self, Hit, MemIndex};
use crate::store::schema::Rank;
use crate::store::{self, Priority, Record, Store};

/// Where a written document goes, beyond its content: its priority (for
/// the choice of its cluster's representative) and its confirmed
/// near-copies, whose clusters it joins (see [`crate::db::clusters`]).
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// The input's priority (NaN is refused).
    pub priority: Option<f64>,
    /// Ids of stored documents (or documents written earlier in this
    /// writer) that are confirmed near-copies of it.
    pub near: Vec<String>,
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
    /// Next free sequence number of fingerprints given one in this batch.
    seqs: store::schema::SeqAllocator,
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
}

/// A [`Writer`] through a shared `Db` ([`Db::shared_writer`](super::Db::shared_writer)): it holds the
/// `Db`'s writer lock until dropped, and is used as the writer it
/// dereferences to.
pub struct SharedWriter<'a> {
    writer: Writer<'a>,
    _lock: std::sync::MutexGuard<'a, ()>,
}

impl<'a> SharedWriter<'a> {
    pub(super) fn new(writer: Writer<'a>, lock: std::sync::MutexGuard<'a, ()>) -> Self {
        SharedWriter {
            writer,
            _lock: lock,
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
    /// A writer of `store` (opened for writing), starting from its counts.
    pub(super) fn new(store: &'a Store) -> Result<Writer<'a>> {
        let (next_ord, clock) = store.ord_state()?;
        Ok(Writer {
            store,
            batch: store::Batch::default(),
            overlay: HashMap::new(),
            seqs: store::schema::SeqAllocator::new(),
            mem: MemIndex::new(),
            count: store.doc_count()?,
            short: store.short_count()?,
            ops: 0,
            sync: false,
            next_ord,
            clock,
            clusters: ClusterState::default(),
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
        match self.overlay.get(id) {
            Some(r) => Ok(r.clone()),
            None => self.store.get(id),
        }
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
        check_id(id)?;
        let priority = place
            .priority
            .map(|p| {
                Priority::new(p).ok_or_else(|| {
                    Error::Input(format!("document {id:?}: priority is not a number"))
                })
            })
            .transpose()?;
        let doc: Analysis = doc.into();
        let fp = doc.fingerprint;
        let hash = content.hash();
        let old = self.get(id)?;
        let (outcome, seq) = match &old {
            Some(r) if r.fingerprint == fp && r.content_hash == hash => {
                return Ok(Outcome::Unchanged)
            }
            Some(r) => {
                self.clusters
                    .leave(self.store, &mut self.batch, id, Rank::of(r))?;
                self.store.delete_doc(&mut self.batch, id, r);
                self.short = self.short.saturating_sub(u64::from(r.is_short()));
                // Same fingerprint: keep the slot (the put below overwrites
                // the deletes, later in the same batch).
                let seq = if r.fingerprint == fp {
                    r.seq
                } else {
                    self.alloc_seq(fp)?
                };
                (Outcome::Replaced, seq)
            }
            None => {
                self.count += 1;
                (Outcome::Inserted, self.alloc_seq(fp)?)
            }
        };
        // Near-copies with their ranks, read before this document is in.
        let mut near = Vec::with_capacity(place.near.len());
        for n in &place.near {
            if n != id {
                if let Some(r) = self.get(n)? {
                    near.push((n.clone(), Rank::of(&r)));
                }
            }
        }
        self.clock = self.clock.max(now());
        let ord = self.next_ord;
        self.next_ord += 1;
        let rec = Record {
            fingerprint: fp,
            seq,
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
        self.clusters
            .join(self.store, &mut self.batch, id, Rank::of(&rec), &near)?;
        self.overlay.insert(id.to_string(), Some(rec));
        self.mem.insert(id, fp);
        self.ops += 1;
        Ok(outcome)
    }

    /// A sequence number for a new document of fingerprint `fp`: above
    /// every stored one and every one given out in this batch.
    fn alloc_seq(&mut self, fp: Fingerprint) -> Result<u32> {
        let store = self.store;
        self.seqs.alloc(fp, 0, || store.next_seq(fp))
    }

    /// Deletes `id`; returns whether it existed.
    pub fn delete(&mut self, id: &str) -> Result<bool> {
        let Some(old) = self.get(id)? else {
            return Ok(false);
        };
        self.clusters
            .leave(self.store, &mut self.batch, id, Rank::of(&old))?;
        self.store.delete_doc(&mut self.batch, id, &old);
        self.overlay.insert(id.to_string(), None);
        self.mem.remove(id);
        self.count = self.count.saturating_sub(1);
        self.short = self.short.saturating_sub(u64::from(old.is_short()));
        self.ops += 1;
        Ok(true)
    }

    /// Documents within `k` of `q` in the store and this batch, sorted.
    pub fn query(&self, q: Fingerprint, k: u32, limit: Option<usize>) -> Result<Vec<Hit>> {
        self.search(&Query {
            k,
            limit,
            ..Query::new(q)
        })
    }

    /// [`Db::search`] over the store and this batch.
    pub fn search(&self, q: &Query) -> Result<Vec<Hit>> {
        let mut hits = Vec::new();
        let plan = q.plan();
        self.store
            .probe(q.fingerprint, &plan, q.sketch.as_ref(), |h| {
                // An id touched by this batch is answered from the batch.
                if !self.overlay.contains_key(&h.id) {
                    hits.push(h)
                }
            })?;
        for mut h in self.mem.query_plan(q.fingerprint, &plan) {
            if let (Some(a), Some(Some(r))) = (&q.sketch, self.overlay.get(&h.id)) {
                h.similarity = r.sketch.map(|b| a.similarity(&b));
            }
            hits.push(h);
        }
        hits.retain(|h| q.confirms(h) && q.exclude.as_deref() != Some(h.id.as_str()));
        Ok(index::finish(hits, q.limit))
    }

    /// How this writer changed the clusters so far.
    pub fn cluster_changes(&self) -> ClusterChanges {
        self.clusters.changes()
    }

    /// Number of writes pending.
    pub fn pending(&self) -> usize {
        self.ops
    }

    /// Writes the batch atomically and starts a new one.
    pub fn commit(&mut self) -> Result<()> {
        if self.ops == 0 {
            return Ok(());
        }
        let mut batch = std::mem::take(&mut self.batch);
        self.store.put_doc_count(&mut batch, self.count);
        self.store.put_short_count(&mut batch, self.short);
        self.store
            .put_ord_state(&mut batch, self.next_ord, self.clock);
        self.store.write(batch, self.sync)?;
        self.clusters.committed();
        self.overlay.clear();
        self.seqs.clear();
        self.mem = MemIndex::new();
        self.ops = 0;
        Ok(())
    }
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
