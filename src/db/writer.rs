//! The batch writer: one RocksDB write batch at a time, whose pending
//! documents its own queries see.

use std::collections::HashMap;

use super::{Content, Outcome, Query};
use crate::error::{Error, Result};
use crate::fingerprint::{Analysis, Fingerprint};
use crate::index::{self, Hit, MemIndex};
use crate::store::{self, Record, Store};

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
}

impl<'a> Writer<'a> {
    /// A writer of `store` (opened for writing), starting from its counts.
    pub(super) fn new(store: &'a Store) -> Result<Writer<'a>> {
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

    /// Inserts or replaces `id` with a document of fingerprint
    /// `doc.fingerprint` (and, from an [`Analysis`] of its text, its term
    /// count, verification sketch and top terms; a bare [`Fingerprint`]
    /// converts into an analysis without them).
    pub fn put(
        &mut self,
        id: &str,
        doc: impl Into<Analysis>,
        content: &Content,
        source: &str,
    ) -> Result<Outcome> {
        check_id(id)?;
        let doc: Analysis = doc.into();
        let fp = doc.fingerprint;
        let hash = content.hash();
        let old = self.get(id)?;
        let (outcome, seq) = match &old {
            Some(r) if r.fingerprint == fp && r.content_hash == hash => {
                return Ok(Outcome::Unchanged)
            }
            Some(r) => {
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
        let rec = Record {
            fingerprint: fp,
            seq,
            content_hash: hash,
            length: content.len(),
            ingested_at: now(),
            source: source.to_string(),
            terms: u32::try_from(doc.terms).unwrap_or(u32::MAX),
            sketch: doc.sketch,
            top_terms: doc.top_terms,
            weak_bits: doc.weak_bits,
        };
        self.short += u64::from(rec.is_short());
        self.store.put_doc(&mut self.batch, id, &rec);
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
        self.store.write(batch, self.sync)?;
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
