//! The batch writer: one RocksDB write batch at a time, whose pending
//! documents its own queries see.

use std::collections::{HashMap, HashSet};

use super::clusters::{Anchor, ClusterChanges, ClusterState};
pub(crate) use super::search::Check;
use super::search::{Pending, Reads, Rule, Searcher};
use super::{Content, Outcome, Query};
use crate::error::{Error, Result};
use crate::fingerprint::parts::{PARTS, QUERY_PARTS};
use crate::fingerprint::{Analysis, Fingerprint};
use crate::index::{Hit, MemIndex};
use crate::store::{self, Priority, Record, Store};

/// Where a written document goes, beyond its content: its priority (for
/// the `priority` keep policy) and its confirmed near-copies, among whose
/// clusters it joins the one whose representative confirms it best (see
/// [`crate::db::clusters`]).
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// The input's priority (NaN is refused).
    pub priority: Option<f64>,
    /// The document's own time, Unix seconds (see [`Record::dated`]).
    pub dated: Option<u64>,
    /// Ids of stored documents (or documents written earlier in this
    /// writer) that are confirmed near-copies of it.
    pub near: Vec<String>,
    /// How a representative must confirm it (`None`: as the store's
    /// default duplicate check does).
    pub anchor: Option<Anchor>,
}

/// What an input says of a document beside its content.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stated {
    /// Its priority (NaN is refused).
    pub priority: Option<f64>,
    /// Its own time, Unix seconds (see [`Record::dated`]).
    pub dated: Option<u64>,
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
    /// Decisions this batch writes: "not a copy" pairs (each order) with
    /// their log sequence (`None`: undone), and the sequence of the next
    /// one.
    decided: HashMap<(String, String), Option<u64>>,
    /// "Keep this one" decisions this batch writes, by id (`None`: undone).
    keeps: HashMap<String, Option<u64>>,
    next_decision: Option<u64>,
    /// The log entries this batch writes, by sequence.
    logged: HashMap<u64, store::codec::Decision>,
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
            decided: HashMap::new(),
            keeps: HashMap::new(),
            next_decision: None,
            logged: HashMap::new(),
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
            Stated {
                priority: place.priority,
                dated: place.dated,
            },
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
        stated: Stated,
        near: &[String],
        anchor: &Anchor,
    ) -> Result<Outcome> {
        check_id(id)?;
        let priority = stated
            .priority
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
        // Parts and a fine sketch only beside a sketch, which confirms what
        // they name and which they refine.
        let parted = doc.sketch.map_or(0, |_| doc.parts.len().min(QUERY_PARTS));
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
            dated: stated.dated,
            parts: doc.parts[..parted].to_vec(),
            kept: self.standing_keep(id)?,
            fine: doc.sketch.and(doc.fine),
        };
        self.short += u64::from(rec.is_short());
        self.store.put_doc(&mut self.batch, id, &rec);
        if let Content::Text(t) = content {
            self.store.put_text(&mut self.batch, id, t);
        }
        // Records as the batch has them, this document not yet in.
        let (overlay, store) = (&self.overlay, self.store);
        let get = |n: &str| pending_or_stored(overlay, store, n);
        self.clusters
            .join(store, &mut self.batch, id, &rec, &near, anchor, &get)?;
        self.fps.insert(fp);
        self.hold_stored_first(id, fp)?;
        let indexed = &rec.parts[..rec.parts.len().min(PARTS)];
        self.mem.insert_parted(id, fp, rec.sketch, indexed);
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
        id: &str,
        a: &Analysis,
        content: &Content,
        stated: Stated,
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
            priority: stated.priority.and_then(Priority::new),
            dated: stated.dated,
            parts: Vec::new(),
            kept: self.standing_keep(id)?,
            fine: a.sketch.and(a.fine),
        };
        let (overlay, store) = (&self.overlay, self.store);
        let get = |n: &str| pending_or_stored(overlay, store, n);
        self.clusters
            .would_represent(store, (id, &rec), near, anchor, &get)
    }

    /// Puts `fp`'s stored first document (by id) in the batch's index (the
    /// batch's own documents go in with their first PARTS parts)
    /// when the batch writes `fp` for the first time (`id`: the document
    /// it writes). That document names the fingerprint's band and part
    /// buckets until one of a smaller id comes, so the batch's entries
    /// follow the store's rule whatever the batch holds. It is a holder
    /// only: the searches take no pending hit of an id the batch did not
    /// write, and walk the store for it.
    fn hold_stored_first(&mut self, id: &str, fp: Fingerprint) -> Result<()> {
        if self.mem.holds_fp(fp) {
            return Ok(());
        }
        let overlay = &self.overlay;
        let skip = |n: &str| n == id || overlay.contains_key(n);
        let (_, kept) = self
            .store
            .first_holders(fp, &skip, self.prefetch.as_ref())?;
        if let Some((holder, v)) = kept {
            self.mem
                .insert_parted(&holder, fp, v.sketch, v.parts.as_slice());
        }
        Ok(())
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

    /// Decides that stored documents `a` and `b` are not copies of each
    /// other, as `who` (docs/review.md, "Decisions"): neither is ever
    /// placed in a cluster whose representative is the other, by a write,
    /// a re-check or a rebuild. When one represents the cluster the other
    /// is in, the other leaves it in this batch (alone; a rebuild may place
    /// it in another cluster). Returns the decision's log sequence; a pair
    /// already decided returns its sequence and writes nothing.
    pub fn not_a_copy(&mut self, a: &str, b: &str, who: &str) -> Result<u64> {
        for id in [a, b] {
            if self.get(id)?.is_none() {
                return Err(Error::NotFound { id: id.to_string() });
            }
        }
        self.decide_pair(a, b, who, now())
    }

    /// [`Writer::not_a_copy`] by `who` at `at`, of documents stored or not.
    fn decide_pair(&mut self, a: &str, b: &str, who: &str, at: u64) -> Result<u64> {
        check_id(a)?;
        check_id(b)?;
        if a == b {
            return Err(Error::Input(format!(
                "{a:?} and {b:?} are one document: \"not a copy\" takes two"
            )));
        }
        let pair = (a.to_string(), b.to_string());
        let standing = match self.decided.get(&pair) {
            Some(s) => *s,
            None => self.store.veto(a, b)?,
        };
        if let Some(seq) = standing {
            return Ok(seq);
        }
        let seq = self.take_decision_seq()?;
        let d = store::codec::Decision {
            seq,
            kind: store::codec::DecisionKind::NotACopy,
            a: a.to_string(),
            b: b.to_string(),
            who: who.to_string(),
            at,
            undoes: 0,
        };
        self.store.put_veto(&mut self.batch, a, b, seq);
        self.store.put_decision(&mut self.batch, &d);
        self.logged.insert(seq, d);
        self.decided
            .insert((b.to_string(), a.to_string()), Some(seq));
        self.decided.insert(pair, Some(seq));
        let (overlay, store) = (&self.overlay, self.store);
        let get = |n: &str| pending_or_stored(overlay, store, n);
        self.clusters
            .separate(store, &mut self.batch, (a, b), &get)?;
        self.ops += 1;
        Ok(seq)
    }

    /// Undoes decision `seq`, as `who`. A "not a copy": the pair may be
    /// placed together again by later writes and rebuilds (nothing rejoins
    /// at once). A "keep this one": the document ranks by the keep policy
    /// again (when another member now ranks first, the cluster's members
    /// are re-checked against it, as when a representative leaves). The
    /// log keeps both entries. Returns the undo's sequence.
    pub fn undo_decision(&mut self, seq: u64, who: &str) -> Result<u64> {
        self.undo_at(seq, who, now())
    }

    /// [`Writer::undo_decision`] by `who` at `at`.
    fn undo_at(&mut self, seq: u64, who: &str, at: u64) -> Result<u64> {
        use store::codec::DecisionKind;
        let d = match self.logged.get(&seq) {
            Some(d) => Some(d.clone()),
            None => self.store.decision(seq)?,
        }
        .ok_or_else(|| Error::Input(format!("the store has no decision {seq}")))?;
        let standing = match d.kind {
            DecisionKind::Undo => {
                return Err(Error::Input(format!(
                    "decision {seq} is an undo; decide again instead"
                )))
            }
            DecisionKind::NotACopy => match self.decided.get(&(d.a.clone(), d.b.clone())) {
                Some(s) => *s,
                None => self.store.veto(&d.a, &d.b)?,
            },
            DecisionKind::Keep => self.standing_keep(&d.a)?,
        };
        if standing != Some(seq) {
            let what = match d.kind {
                DecisionKind::Keep => format!("keep {:?}", d.a),
                _ => format!("{:?} is not a copy of {:?}", d.a, d.b),
            };
            return Err(Error::Input(format!(
                "decision {seq} ({what}) was already undone or decided again"
            )));
        }
        let undo = self.take_decision_seq()?;
        if d.kind == DecisionKind::Keep {
            self.store.delete_keep(&mut self.batch, &d.a);
            self.keeps.insert(d.a.clone(), None);
            self.rerank(&d.a, None)?;
        } else {
            self.store.delete_veto(&mut self.batch, &d.a, &d.b);
            self.clusters.forget_veto(&d.a, &d.b);
            self.decided.insert((d.b.clone(), d.a.clone()), None);
            self.decided.insert((d.a.clone(), d.b.clone()), None);
        }
        let entry = store::codec::Decision {
            seq: undo,
            kind: DecisionKind::Undo,
            a: String::new(),
            b: String::new(),
            who: who.to_string(),
            at,
            undoes: seq,
        };
        self.store.put_decision(&mut self.batch, &entry);
        self.logged.insert(undo, entry);
        self.ops += 1;
        Ok(undo)
    }

    /// Decides that stored document `id` is the one to keep, as `who`
    /// (docs/review.md, "Decisions"): it ranks before every member of its
    /// cluster that is not kept (among kept ones, the latest decision
    /// first), so it represents its cluster now and after every write and
    /// rebuild; the members are re-checked against it, as when a
    /// representative leaves (those it does not confirm leave). Returns
    /// the decision's sequence; a document kept already that represents
    /// its cluster (or is alone) returns its decision's and writes nothing.
    pub fn keep(&mut self, id: &str, who: &str) -> Result<u64> {
        if self.get(id)?.is_none() {
            return Err(Error::NotFound { id: id.to_string() });
        }
        if let Some(seq) = self.standing_keep(id)? {
            if self.clusters.represents_or_alone(self.store, id)? {
                return Ok(seq);
            }
        }
        self.keep_at(id, who, now())
    }

    /// [`Writer::keep`] by `who` at `at`, of a document stored or not,
    /// always a new decision (a log replayed keeps the order of its keeps,
    /// which ranks them).
    fn keep_at(&mut self, id: &str, who: &str, at: u64) -> Result<u64> {
        check_id(id)?;
        let seq = self.take_decision_seq()?;
        let d = store::codec::Decision {
            seq,
            kind: store::codec::DecisionKind::Keep,
            a: id.to_string(),
            b: String::new(),
            who: who.to_string(),
            at,
            undoes: 0,
        };
        self.store.put_keep(&mut self.batch, id, seq);
        self.store.put_decision(&mut self.batch, &d);
        self.logged.insert(seq, d);
        self.keeps.insert(id.to_string(), Some(seq));
        self.rerank(id, Some(seq))?;
        self.ops += 1;
        Ok(seq)
    }

    /// The sequence of the standing "keep this one" decision on `id`, as
    /// this batch sees it.
    fn standing_keep(&self, id: &str) -> Result<Option<u64>> {
        match self.keeps.get(id) {
            Some(s) => Ok(*s),
            None => self.store.kept(id),
        }
    }

    /// Rewrites the record of `id`, if stored, as kept by decision `kept`
    /// (or not kept), and moves it to its new rank in its cluster.
    fn rerank(&mut self, id: &str, kept: Option<u64>) -> Result<()> {
        let Some(old) = self.get(id)? else {
            return Ok(());
        };
        let new = Record {
            kept,
            ..old.clone()
        };
        {
            let (overlay, store) = (&self.overlay, self.store);
            let get = |n: &str| pending_or_stored(overlay, store, n);
            self.clusters
                .rerank(store, &mut self.batch, id, (&old, &new), &get)?;
        }
        self.store.put_doc(&mut self.batch, id, &new);
        self.overlay.insert(id.to_string(), Some(new));
        Ok(())
    }

    /// Writes the decisions of a log (`simdb decisions --json`, an
    /// export's), oldest first, as this store's: each "not a copy" and
    /// "keep this one" whether or not its documents are stored here (a
    /// document written later obeys it), each undo of one of them, keeping
    /// who decided and when; numbered after this store's log. A pair
    /// already decided here is not decided again; every keep is (the
    /// latest ranks first). Returns the sequence each entry has here.
    pub fn replay_decisions(&mut self, log: &[store::codec::Decision]) -> Result<Vec<u64>> {
        use store::codec::DecisionKind;
        let mut here: HashMap<u64, u64> = HashMap::new();
        let mut out = Vec::with_capacity(log.len());
        for d in log {
            let seq = match d.kind {
                DecisionKind::NotACopy => self.decide_pair(&d.a, &d.b, &d.who, d.at)?,
                DecisionKind::Keep => self.keep_at(&d.a, &d.who, d.at)?,
                DecisionKind::Undo => {
                    let Some(&undoes) = here.get(&d.undoes) else {
                        return Err(Error::Input(format!(
                            "decision {} undoes {}, which the log does not hold before it",
                            d.seq, d.undoes
                        )));
                    };
                    self.undo_at(undoes, &d.who, d.at)?
                }
            };
            here.insert(d.seq, seq);
            out.push(seq);
        }
        Ok(out)
    }

    /// The next decision log sequence (from 1).
    fn take_decision_seq(&mut self) -> Result<u64> {
        let next = match self.next_decision {
            Some(n) => n,
            None => self.store.last_decision_seq()? + 1,
        };
        self.next_decision = Some(next + 1);
        Ok(next)
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
        let keys: Vec<store::PlanKey> = queries.into_iter().map(Query::plan_key).collect();
        let ids: Vec<&str> = ids.into_iter().collect();
        if keys.is_empty() && ids.is_empty() {
            return Ok(());
        }
        let at = self.store.snapshot();
        self.prefetch = Some(self.store.prefetch(&at, keys, ids, true)?);
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
        Ok(self.check(q, Rule::query(limit))?.hits)
    }

    /// The nearest confirmed hit of `q` over the store and this batch,
    /// looked for as a write's duplicate check looks (at most
    /// [`super::limits::CHECK_EXAMINED`] candidates, nearest first).
    pub fn first_duplicate(&self, q: &Query) -> Result<Option<Hit>> {
        self.first_duplicate_admitting(q, &mut |_| Ok(true))
    }

    /// [`Writer::first_duplicate`] among the hits `admit` takes (the others
    /// are passed over as if not found).
    pub(crate) fn first_duplicate_admitting(
        &self,
        q: &Query,
        admit: &mut dyn FnMut(&Hit) -> Result<bool>,
    ) -> Result<Option<Hit>> {
        let c = self.check_admitting(q, Rule::duplicates(1), admit)?;
        Ok(c.hits.into_iter().next())
    }

    /// The hits of `q` over the store and this batch (its pending writes
    /// merged in order), found under `rule` by the one candidate search
    /// ([`super::search`]).
    pub(crate) fn check(&self, q: &Query, rule: Rule) -> Result<Check> {
        self.check_admitting(q, rule, &mut |_| Ok(true))
    }

    /// [`Writer::check`] among the hits `admit` takes.
    fn check_admitting(
        &self,
        q: &Query,
        rule: Rule,
        admit: &mut dyn FnMut(&Hit) -> Result<bool>,
    ) -> Result<Check> {
        let at = self.store.snapshot();
        let searcher = Searcher {
            store: self.store,
            at: &at,
            prefetch: self.prefetch.as_ref(),
            pending: Some(Pending {
                overlay: &self.overlay,
                mem: &self.mem,
            }),
            reads: Reads::Writer,
            before: None,
        };
        searcher.run(q, rule, admit)
    }

    /// How this writer changed the clusters so far.
    pub fn cluster_changes(&self) -> ClusterChanges {
        self.clusters.changes()
    }

    /// Makes the store ready to take web pages (see
    /// [`crate::db::write::extract_pages`]): for a writer that meets its
    /// first page in the middle of its input.
    pub(crate) fn accept_pages(&self) -> Result<()> {
        super::admin::accept_pages(self.store)
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
        // fingerprint: with the stored ones, it names the band buckets and
        // part keys.
        let mut first: HashMap<Fingerprint, (&str, store::schema::RefValue)> = HashMap::new();
        for (id, rec) in overlay {
            if let Some(r) = rec {
                let v = store::schema::RefValue::of(r);
                let e = first.entry(r.fingerprint).or_insert((id.as_str(), v));
                if id.as_str() < e.0 {
                    *e = (id.as_str(), v);
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
        self.decided.clear();
        self.keeps.clear();
        self.next_decision = None;
        self.logged.clear();
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

    /// One bounded step ([`SETTLE_STEP`](crate::db::limits::SETTLE_STEP) members) of the
    /// re-checks of clusters whose representative changed, written at
    /// once (a batch of pending writes is committed first). Returns
    /// whether any is still under way. [`Clusters::settle`] runs them to
    /// the end, a step per hold of the writer lock.
    ///
    /// [`Clusters::settle`]: super::Clusters::settle
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
