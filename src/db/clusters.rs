//! Persistent clusters of near-duplicates, anchored at their
//! representative.
//!
//! A cluster is a representative and documents confirmed against it. When
//! a document is written, its duplicate check finds its confirmed
//! near-copies among the documents before it; each is in a cluster, or
//! alone (a cluster of one). The document is compared with the
//! representative of each of those clusters ([`Anchor`]) and joins the one
//! whose representative it matches best: the highest sketch similarity,
//! then the fewest differing bits, then the older cluster. It never merges
//! clusters, and it stays alone when it matches no representative (later
//! documents may join it). So no member is a copy of a copy of a copy: a
//! chain of drifting copies, or documents sharing a template, cannot pull
//! their cluster away from its representative.
//!
//! The store's keep policy ([`KeepPolicy`]) ranks the members; the first
//! is the representative. A document that joins and outranks it (a longer
//! one under `longest`, every one under `newest`) becomes the
//! representative, and the other members are checked against it (for
//! being contained in it whichever came first, see [`Anchor::matches`]):
//! those it does not confirm leave, and stay alone. When the
//! representative is deleted or replaced, the next member in rank takes
//! over and the rest are checked against it the same way, at the store's
//! default check, in bounded steps: the batch marks the cluster (an `a`
//! entry), and each commit checks at most [`limits::SETTLE_STEP`] of its
//! members ([`crate::db::Clusters::settle`] runs the steps to the end, one
//! per hold of the writer lock). A cluster left with one member dissolves. A
//! new representative with the content of the one before (fingerprint,
//! sketch, length) confirms exactly the same members, so it re-checks
//! none: a flood of identical copies costs no re-check, joining or
//! expiring.
//!
//! A cluster's id is the ord of the document that founded it, and stays
//! while the cluster exists (its founder may be deleted), with one
//! exception: a founder that leaves at a re-anchoring stays in the store
//! as a cluster of its own, whose id is its ord, so the cluster it left
//! takes the smallest ord of its remaining members.
//!
//! A document is compared only with documents ingested before it, and what
//! a join does depends only on the clusters as they were: the clusters do
//! not depend on how the input was split into runs or batches.
//!
//! Only clusters of two or more documents are stored (layout in
//! `store::schema`); a document without a `d` entry is a cluster of its
//! own whose id is its ord.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rayon::prelude::*;

use super::{limits, search, Db};

/// Documents a cluster rebuild checks and places per batch.
const REBUILD_CHUNK: usize = 20_000;
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
pub use crate::store::schema::KeepPolicy;
use crate::store::schema::{self, Rank};
use crate::store::{self, Batch, Record, Store};

/// A cluster as listed by [`Clusters::each`] and [`Clusters::of`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cluster {
    /// Stable while the cluster exists (see the module docs for the one
    /// exception).
    pub id: u64,
    pub size: u64,
    /// The member the store's keep policy ranks first.
    pub representative: String,
    /// Every member, representative first, in rank order.
    pub members: Vec<Member>,
    /// The largest distance of a member from the representative.
    pub max_distance: u32,
}

/// One member of a [`Cluster`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Member {
    pub id: String,
    /// Bits from the representative's fingerprint.
    pub distance: u32,
    /// The member's priority, if its input gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// Unix seconds when it was written.
    pub ingested_at: u64,
    /// Its own time, if its input gave one (see [`Record::dated`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dated: Option<u64>,
    /// The "keep this one" decision that keeps it, if one does
    /// ([`Record::kept`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
}

/// How a run changed the clusters (see [`crate::ingest::Summary`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClusterChanges {
    /// Clusters that formed in the run: a document joined one that was
    /// alone (which may be a document of an earlier run).
    pub new: u64,
    /// Clusters of earlier runs that gained members.
    pub grown: u64,
    /// Members that left their cluster because its new representative
    /// does not confirm them (they stay in the store, alone).
    pub left: u64,
}

/// When a document counts as confirmed against a representative: the
/// test a write's duplicate check applies to its hits, applied to the
/// pair directly. Within `k` bits, the sketches must confirm the pair at
/// `min_similarity`, by similarity or by containment
/// ([`super::confirmation`]; documents without a sketch are taken on
/// their fingerprints); beyond `k`, only with `beyond_k`
/// (confidence-ranked writes) and sketches that confirm it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    pub k: u32,
    pub beyond_k: bool,
    pub min_similarity: f64,
}

/// How a document matched a representative ([`Anchor::matches`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Match {
    pub similarity: Option<f64>,
    pub distance: u32,
    /// When the similarity was below the threshold and the pair was
    /// confirmed by containment: the estimated share of the shorter
    /// inside the longer.
    pub containment: Option<f64>,
}

/// Whether two records have the same content as far as a check can tell
/// (fingerprint, sketch and length): every check against one gives what
/// it gives against the other.
fn same_content(a: &Record, b: &Record) -> bool {
    a.fingerprint == b.fingerprint && a.sketch == b.sketch && a.length == b.length
}

impl Match {
    /// Whether `self` is a better match than `other`: higher similarity
    /// (none lowest), then fewer bits.
    fn better_than(&self, other: &Match) -> bool {
        let s = |m: &Match| m.similarity.unwrap_or(-1.0);
        match s(self).total_cmp(&s(other)) {
            std::cmp::Ordering::Equal => self.distance < other.distance,
            o => o.is_gt(),
        }
    }
}

impl Anchor {
    /// How `doc` matches the representative `rep`, if it is confirmed
    /// against it.
    pub fn matches(&self, doc: &Record, rep: &Record) -> Option<Match> {
        let distance = doc.fingerprint.distance(rep.fingerprint);
        let e = super::record_estimate(doc, rep, self.min_similarity);
        // `Some(None)` by similarity, `Some(Some(c))` by containment.
        let confirmation = |e| {
            // By containment of the shorter of the two in the longer,
            // whichever came first: what a member is checked for does not
            // depend on when the representative came, so one with the
            // same content confirms the same ones.
            let lengths = (doc.length > 0 && rep.length > 0).then_some((doc.length, rep.length));
            super::confirm_estimate(Some(e), self.min_similarity, || Ok(lengths))
                .ok()
                .flatten()
        };
        let containment = match e {
            Some(e) => confirmation(e).filter(|_| distance <= self.k || self.beyond_k)?,
            None if distance <= self.k => None,
            None => return None,
        };
        Some(Match {
            similarity: e.map(|e| e.similarity),
            distance,
            containment,
        })
    }
}

/// A cluster's member entries this batch wrote: added (or written again)
/// and removed, by rank.
#[derive(Default)]
struct Pending {
    added: BTreeMap<Rank, String>,
    removed: BTreeSet<Rank>,
}

/// A record by id, as the caller sees the store (the writer: with its
/// pending writes).
pub(super) type GetRecord<'a> = &'a dyn Fn(&str) -> Result<Option<Record>>;

/// The writer's view of the clusters: the store plus its pending writes,
/// which go to the batch as they are made.
pub(super) struct ClusterState {
    keep: KeepPolicy,
    /// The check of a re-anchoring after a representative left.
    settle_anchor: Anchor,
    membership: HashMap<String, Option<u64>>,
    sizes: HashMap<u64, u64>,
    members: HashMap<u64, Pending>,
    /// Clusters whose representative left in this batch, not yet
    /// re-anchored, with that representative's record.
    stale: BTreeMap<u64, Record>,
    /// Pending writes of `a` entries (clusters being re-checked a step at
    /// a time; `None`: removed).
    stale_entries: HashMap<u64, Option<schema::Stale>>,
    /// Per cluster, where its stored members not removed in this batch
    /// begin (see [`ClusterState::rep`]).
    stored_from: std::cell::RefCell<HashMap<u64, Option<Rank>>>,
    created: HashSet<u64>,
    grown: HashSet<u64>,
    left: u64,
    /// "Not a copy" pairs decided in this batch (each order), not yet in
    /// the store, and those undone in this batch, still in it.
    pending_vetoes: HashSet<(String, String)>,
    undone_vetoes: HashSet<(String, String)>,
}

impl ClusterState {
    pub(super) fn new(keep: KeepPolicy, settle_anchor: Anchor) -> ClusterState {
        ClusterState {
            keep,
            settle_anchor,
            membership: HashMap::new(),
            sizes: HashMap::new(),
            members: HashMap::new(),
            stale: BTreeMap::new(),
            stale_entries: HashMap::new(),
            stored_from: std::cell::RefCell::new(HashMap::new()),
            created: HashSet::new(),
            grown: HashSet::new(),
            left: 0,
            pending_vetoes: HashSet::new(),
            undone_vetoes: HashSet::new(),
        }
    }

    /// The rank of `rec` under the store's keep policy.
    pub(super) fn rank(&self, rec: &Record) -> Rank {
        Rank::of(rec, self.keep)
    }

    /// Whether `a` and `b` were decided not to be copies of each other (in
    /// the store or in this batch): then neither is placed in a cluster
    /// whose representative is the other (docs/review.md, "The rules the
    /// decisions make").
    fn vetoed(&self, store: &Store, a: &str, b: &str) -> Result<bool> {
        let pair = (a.to_string(), b.to_string());
        if self.pending_vetoes.contains(&pair) {
            return Ok(true);
        }
        if self.undone_vetoes.contains(&pair) {
            return Ok(false);
        }
        store.vetoed(a, b)
    }

    /// Notes the "not a copy" pair (`a`, `b`) written to this batch.
    pub(super) fn note_veto(&mut self, a: &str, b: &str) {
        for p in [(a, b), (b, a)] {
            let p = (p.0.to_string(), p.1.to_string());
            self.undone_vetoes.remove(&p);
            self.pending_vetoes.insert(p);
        }
    }

    /// Notes the pair (`a`, `b`) undone in this batch: no longer vetoed.
    pub(super) fn forget_veto(&mut self, a: &str, b: &str) {
        for p in [(a, b), (b, a)] {
            let p = (p.0.to_string(), p.1.to_string());
            self.pending_vetoes.remove(&p);
            self.undone_vetoes.insert(p);
        }
    }

    /// The explicit cluster of `id` (`None`: alone or absent).
    fn cluster_of(&self, store: &Store, id: &str) -> Result<Option<u64>> {
        match self.membership.get(id) {
            Some(c) => Ok(*c),
            None => store.cluster_entry(id),
        }
    }

    fn size(&self, store: &Store, cid: u64) -> Result<u64> {
        match self.sizes.get(&cid) {
            Some(s) => Ok(*s),
            None => Ok(store.cluster_size(cid)?.unwrap_or(0)),
        }
    }

    fn members(&self, store: &Store, cid: u64) -> Result<Vec<(Rank, String)>> {
        let mut m: BTreeMap<Rank, String> = store.cluster_members(cid)?.into_iter().collect();
        if let Some(p) = self.members.get(&cid) {
            m.retain(|r, _| !p.removed.contains(r));
            m.extend(p.added.iter().map(|(r, id)| (*r, id.clone())));
        }
        Ok(m.into_iter().collect())
    }

    /// The representative of cluster `cid` (its first member in rank
    /// order), reading the store only up to it. The stored members this
    /// batch removed are walked past once per batch, not at every call
    /// (a batch that deletes the representative again and again, as
    /// `expire` does under `first`, would otherwise walk them all each
    /// time).
    fn rep(&self, store: &Store, cid: u64) -> Result<Option<(Rank, String)>> {
        let pending = self.members.get(&cid);
        let removed = |r: &Rank| pending.is_some_and(|p| p.removed.contains(r));
        // Stored members before `from` were all removed in this batch
        // (`None` in the map: none is left).
        let from = self.stored_from.borrow().get(&cid).copied();
        let mut stored: Option<(Rank, String)> = None;
        if from != Some(None) {
            store.for_each_member(cid, from.flatten(), |rank, id| {
                if removed(&rank) {
                    return Ok(true);
                }
                stored = Some((rank, id.to_string()));
                Ok(false)
            })?;
            let first = stored.as_ref().map(|(r, _)| *r);
            self.stored_from.borrow_mut().insert(cid, first);
        }
        let added = pending.and_then(|p| p.added.first_key_value());
        Ok(match (stored, added) {
            (Some(s), Some((r, id))) if *r < s.0 => Some((*r, id.clone())),
            (Some(s), _) => Some(s),
            (None, a) => a.map(|(r, id)| (*r, id.clone())),
        })
    }

    /// The representative of cluster `cid` and its record (a
    /// representative without one is damage).
    fn rep_record(
        &self,
        store: &Store,
        cid: u64,
        get: GetRecord<'_>,
    ) -> Result<Option<(String, Record)>> {
        let Some((rank, rep_id)) = self.rep(store, cid)? else {
            return Ok(None);
        };
        let rep = get(&rep_id)?.ok_or_else(|| {
            Error::corrupt(
                store::CLUSTERS,
                &schema::member_key(cid, rank),
                format!("names id {rep_id:?}, which has no record"),
            )
        })?;
        Ok(Some((rep_id, rep)))
    }

    fn set_membership(&mut self, store: &Store, b: &mut Batch, id: &str, cid: Option<u64>) {
        match cid {
            Some(cid) => {
                let (k, v) = schema::membership_entry(id, cid);
                store.put_cluster_raw(b, &k, Some(&v));
            }
            None => store.put_cluster_raw(b, &schema::membership_key(id), None),
        }
        self.membership.insert(id.to_string(), cid);
    }

    fn set_size(&mut self, store: &Store, b: &mut Batch, cid: u64, size: u64) {
        let (k, v) = schema::size_entry(cid, size);
        store.put_cluster_raw(b, &k, (size > 0).then_some(&v[..]));
        self.sizes.insert(cid, size);
    }

    /// The `a` entry of cluster `cid`, as this batch sees it.
    fn stale_of(&self, store: &Store, cid: u64) -> Result<Option<schema::Stale>> {
        match self.stale_entries.get(&cid) {
            Some(s) => Ok(*s),
            None => store.stale_cluster(cid),
        }
    }

    /// Writes (or, with `None`, removes if present) the `a` entry of
    /// cluster `cid`.
    fn put_stale(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        s: Option<schema::Stale>,
    ) -> Result<()> {
        match s {
            Some(s) => {
                let (k, v) = schema::stale_entry(cid, &s);
                store.put_cluster_raw(b, &k, Some(&v));
            }
            None => {
                if self.stale_of(store, cid)?.is_none() {
                    return Ok(());
                }
                store.put_cluster_raw(b, &schema::stale_key(cid), None);
            }
        }
        self.stale_entries.insert(cid, s);
        Ok(())
    }

    fn put_member(&mut self, store: &Store, b: &mut Batch, cid: u64, rank: Rank, id: Option<&str>) {
        match id {
            Some(id) => {
                let (k, v) = schema::member_entry(cid, rank, id);
                store.put_cluster_raw(b, &k, Some(&v));
            }
            None => store.put_cluster_raw(b, &schema::member_key(cid, rank), None),
        }
        let p = self.members.entry(cid).or_default();
        match id {
            Some(id) => {
                p.removed.remove(&rank);
                p.added.insert(rank, id.to_string());
            }
            None => {
                p.added.remove(&rank);
                p.removed.insert(rank);
            }
        }
    }

    /// Document `id`, stored as `rec`, joins the cluster whose
    /// representative it matches best under `anchor`, among the clusters
    /// of its confirmed near-copies `near` (see the module docs); it stays
    /// alone if it matches none. `get` reads a record as the writer sees
    /// it (`id` itself not yet in).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn join(
        &mut self,
        store: &Store,
        b: &mut Batch,
        id: &str,
        rec: &Record,
        near: &[String],
        anchor: &Anchor,
        get: GetRecord<'_>,
    ) -> Result<()> {
        // Members from this document on joined after any change settled
        // here, confirmed against the representative then.
        self.settle(store, b, get, rec.ord)?;
        let Some((_, cid, alone, rep)) = self.choose(store, id, rec, near, anchor, get)? else {
            return Ok(()); // no representative confirms it: alone
        };
        let rank = self.rank(rec);
        let size = match alone {
            // A new cluster: the near-copy alone is its first member.
            Some(n) => {
                let r = self.rank(&rep);
                self.put_member(store, b, cid, r, Some(&n));
                self.set_membership(store, b, &n, Some(cid));
                self.created.insert(cid);
                1
            }
            None => {
                if !self.created.contains(&cid) {
                    self.grown.insert(cid);
                }
                self.size(store, cid)?
            }
        };
        self.put_member(store, b, cid, rank, Some(id));
        self.set_membership(store, b, id, Some(cid));
        self.set_size(store, b, cid, size + 1);
        if self.takes_over(rec, &rep) {
            // The members must be confirmed against it.
            self.reanchor(store, b, cid, id, rec, anchor, get)?;
        } else if self.rank(rec) < self.rank(&rep) {
            // Its content confirms what the one before did, but not the
            // members decided not to be copies of it.
            self.evict_vetoed(store, b, cid, (id, rec), get)?;
        }
        Ok(())
    }

    /// Whether a document stored as `rec` that joins the cluster of `rep`
    /// becomes its representative and re-anchors it (with the same
    /// content, nothing changes for the members).
    fn takes_over(&self, rec: &Record, rep: &Record) -> bool {
        self.rank(rec) < self.rank(rep) && !same_content(rec, rep)
    }

    /// Whether a document stored as `rec`, with confirmed near-copies
    /// `near`, would represent its cluster if written: it matches no
    /// representative (and stays alone), or outranks the one it matches
    /// best. What `--skip-duplicates` keeps.
    pub(super) fn would_represent(
        &self,
        store: &Store,
        (id, rec): (&str, &Record),
        near: &[String],
        anchor: &Anchor,
        get: GetRecord<'_>,
    ) -> Result<bool> {
        Ok(match self.choose(store, id, rec, near, anchor, get)? {
            None => true,
            Some((_, _, _, rep)) => self.rank(rec) < self.rank(&rep),
        })
    }

    /// The cluster document `id`, stored as `rec`, joins among those of
    /// its near-copies `near`: (how it matches, cluster id, the near-copy
    /// if it is alone, the representative's record); `None`: no
    /// representative confirms it, or every one that does was decided not
    /// to be a copy of it.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn choose(
        &self,
        store: &Store,
        id: &str,
        rec: &Record,
        near: &[String],
        anchor: &Anchor,
        get: GetRecord<'_>,
    ) -> Result<Option<(Match, u64, Option<String>, Record)>> {
        let mut best: Option<(Match, u64, Option<String>, Record)> = None;
        let mut seen: HashSet<u64> = HashSet::new();
        for n in near {
            let (cid, alone, rep_id, rep) = match self.cluster_of(store, n)? {
                Some(cid) => {
                    if seen.contains(&cid) {
                        continue;
                    }
                    let Some((rep_id, rep)) = self.rep_record(store, cid, get)? else {
                        continue;
                    };
                    (cid, None, rep_id, rep)
                }
                None => match get(n)? {
                    Some(r) => (r.ord, Some(n.clone()), n.clone(), r),
                    None => continue,
                },
            };
            seen.insert(cid);
            let m = match anchor.matches(rec, &rep) {
                Some(m) if !self.vetoed(store, id, &rep_id)? => Some(m),
                _ => None,
            };
            if let Some(m) = m {
                let better = best.as_ref().is_none_or(|(bm, bc, _, _)| {
                    m.better_than(bm) || (!bm.better_than(&m) && cid < *bc)
                });
                if better {
                    best = Some((m, cid, alone, rep));
                }
            }
        }
        Ok(best)
    }

    /// Checks every member of cluster `cid` against its representative
    /// `rep_id` (stored as `rep`) under `anchor`: those not confirmed
    /// leave, alone. Dissolves a cluster left with one member, and gives
    /// the cluster a new id if its founder left (see the module docs).
    #[allow(clippy::too_many_arguments)]
    fn reanchor(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        rep_id: &str,
        rep: &Record,
        anchor: &Anchor,
        get: GetRecord<'_>,
    ) -> Result<()> {
        let members = self.members(store, cid)?;
        let checked = self.recheck(
            store,
            b,
            cid,
            (rep_id, rep),
            &members,
            u64::MAX,
            anchor,
            get,
        )?;
        // Every member is confirmed against the representative now: a
        // re-check in steps that was under way is done.
        self.put_stale(store, b, cid, None)?;
        self.rechecked(store, b, cid, checked)
    }

    /// Checks the `members` of cluster `cid` ingested before `before`
    /// against its representative `rep` (the id, its record) under
    /// `anchor`: those not confirmed leave, alone. Returns how many left
    /// and whether the founder did (see [`ClusterState::rechecked`]).
    #[allow(clippy::too_many_arguments)]
    fn recheck(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        (rep_id, rep): (&str, &Record),
        members: &[(Rank, String)],
        before: u64,
        anchor: &Anchor,
        get: GetRecord<'_>,
    ) -> Result<(u64, bool)> {
        let (mut gone, mut founder_left) = (0u64, false);
        for (r, m) in members {
            if m == rep_id || r.ord >= before {
                continue;
            }
            let confirmed = match get(m)? {
                Some(mr) => anchor.matches(&mr, rep).is_some() && !self.vetoed(store, m, rep_id)?,
                None => false,
            };
            if !confirmed {
                self.put_member(store, b, cid, *r, None);
                self.set_membership(store, b, m, None);
                self.left += 1;
                gone += 1;
                founder_left |= r.ord == cid;
            }
        }
        Ok((gone, founder_left))
    }

    /// After a [`ClusterState::recheck`] of cluster `cid` that took
    /// `gone` members out (and the founder, if `founder_left`): dissolves
    /// a cluster left with one, else sets its size and, when its founder
    /// left, gives it a new id.
    fn rechecked(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        (gone, founder_left): (u64, bool),
    ) -> Result<()> {
        let size = self.size(store, cid)?.saturating_sub(gone);
        if size <= 1 {
            let rest = self.members(store, cid)?;
            return self.dissolve(store, b, cid, &rest);
        }
        self.set_size(store, b, cid, size);
        if founder_left {
            let kept = self.members(store, cid)?;
            self.renumber(store, b, cid, &kept)?;
        }
        Ok(())
    }

    /// Gives cluster `cid`, whose founder left and whose members are now
    /// `kept` (two or more), the smallest ord of its members as its id
    /// (see the module docs), with its `a` entry if it has one.
    fn renumber(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        kept: &[(Rank, String)],
    ) -> Result<()> {
        let n = kept.len() as u64;
        let new_id = kept.iter().map(|(r, _)| r.ord).min().unwrap_or(cid);
        if new_id == cid {
            return Ok(());
        }
        if let Some(st) = self.stale_of(store, cid)? {
            self.put_stale(store, b, cid, None)?;
            self.put_stale(store, b, new_id, Some(st))?;
        }
        for (r, m) in kept {
            self.put_member(store, b, cid, *r, None);
            self.put_member(store, b, new_id, *r, Some(m));
            self.set_membership(store, b, m, Some(new_id));
        }
        self.set_size(store, b, cid, 0);
        self.set_size(store, b, new_id, n);
        if self.created.remove(&cid) {
            self.created.insert(new_id);
        }
        if self.grown.remove(&cid) {
            self.grown.insert(new_id);
        }
        Ok(())
    }

    /// Removes cluster `cid`, whose remaining members are `rest` (at most
    /// one): they are alone now.
    fn dissolve(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        rest: &[(Rank, String)],
    ) -> Result<()> {
        for (r, m) in rest {
            self.put_member(store, b, cid, *r, None);
            self.set_membership(store, b, m, None);
        }
        self.set_size(store, b, cid, 0);
        self.put_stale(store, b, cid, None)?;
        self.created.remove(&cid);
        self.grown.remove(&cid);
        self.stale.remove(&cid);
        Ok(())
    }

    /// Document `id`, stored as `rec`, leaves its cluster; a cluster left
    /// with one member dissolves; one that lost its representative is
    /// re-anchored by [`ClusterState::settle`].
    pub(super) fn leave(
        &mut self,
        store: &Store,
        b: &mut Batch,
        id: &str,
        rec: &Record,
    ) -> Result<()> {
        let Some(cid) = self.cluster_of(store, id)? else {
            return Ok(());
        };
        let rank = self.rank(rec);
        let was_rep = self.rep(store, cid)?.is_some_and(|(r, _)| r == rank);
        self.put_member(store, b, cid, rank, None);
        self.set_membership(store, b, id, None);
        let size = self.size(store, cid)?.saturating_sub(1);
        if size <= 1 {
            let rest = self.members(store, cid)?;
            self.dissolve(store, b, cid, &rest)?;
        } else {
            self.set_size(store, b, cid, size);
            if was_rep {
                // The members were confirmed against the first
                // representative that left in this batch.
                self.stale.entry(cid).or_insert_with(|| rec.clone());
            }
        }
        Ok(())
    }

    /// Marks the clusters whose representative left for a re-check of
    /// their members against the new one (before a join, and before the
    /// batch commits): an `a` entry, from the first member on, for the
    /// members ingested before `before`. The re-check itself runs in
    /// bounded steps ([`ClusterState::step`]), so that deleting the
    /// representative of a cluster of a million costs one write, not a
    /// million record reads under the writer lock.
    pub(super) fn settle(
        &mut self,
        store: &Store,
        b: &mut Batch,
        get: GetRecord<'_>,
        before: u64,
    ) -> Result<()> {
        while let Some((cid, left)) = self.stale.pop_first() {
            if self.size(store, cid)? < 2 {
                continue;
            }
            let Some((rep_id, rep)) = self.rep_record(store, cid, get)? else {
                continue;
            };
            if same_content(&rep, &left) {
                // Every member is confirmed against it too (and a re-check
                // under way goes on against it), but those decided not to
                // be copies of it.
                self.evict_vetoed(store, b, cid, (&rep_id, &rep), get)?;
                continue;
            }
            let from = Rank {
                priority_key: 0,
                ord: 0,
            };
            self.put_stale(store, b, cid, Some(schema::Stale { from, before }))?;
        }
        Ok(())
    }

    /// One bounded step of the re-checks under way (`a` entries): at most
    /// `budget` members, each checked against its cluster's representative
    /// at the store's default check (a record read each); those it does
    /// not confirm leave, alone. A cluster left with one member dissolves;
    /// one whose founder left takes a new id (a walk of its members, once).
    /// Returns the members checked.
    pub(super) fn step(
        &mut self,
        store: &Store,
        b: &mut Batch,
        get: GetRecord<'_>,
        budget: usize,
    ) -> Result<usize> {
        let anchor = self.settle_anchor;
        let mut checked = 0usize;
        for (cid, st) in store.stale_clusters(64)? {
            if checked >= budget {
                break;
            }
            let Some((rep_id, rep)) = self.rep_record(store, cid, get)? else {
                self.put_stale(store, b, cid, None)?;
                continue;
            };
            // This step's members, and the first of the next one.
            let want = budget - checked;
            let mut part: Vec<(Rank, String)> = Vec::with_capacity(want.min(4096) + 1);
            store.for_each_member(cid, Some(st.from), |rank, id| {
                part.push((rank, id.to_string()));
                Ok(part.len() <= want)
            })?;
            let next = (part.len() > want).then(|| part[want].0);
            part.truncate(want);
            checked += part.len();
            let rechecked = self.recheck(
                store,
                b,
                cid,
                (&rep_id, &rep),
                &part,
                st.before,
                &anchor,
                get,
            )?;
            match next {
                Some(from) => self.put_stale(store, b, cid, Some(schema::Stale { from, ..st }))?,
                None => self.put_stale(store, b, cid, None)?,
            }
            self.rechecked(store, b, cid, rechecked)?;
        }
        Ok(checked)
    }

    /// The members of cluster `cid` decided not to be copies of its
    /// representative `rep_id` (stored as `rep`) leave it (alone), as a
    /// re-check would take them out: a cluster left with one dissolves,
    /// one whose founder left takes a new id. Reads the pairs of `rep_id`
    /// only.
    fn evict_vetoed(
        &mut self,
        store: &Store,
        b: &mut Batch,
        cid: u64,
        (rep_id, rep): (&str, &Record),
        get: GetRecord<'_>,
    ) -> Result<()> {
        let mut others: Vec<String> = store.vetoed_with(rep_id)?;
        others.retain(|o| {
            !self
                .undone_vetoes
                .contains(&(rep_id.to_string(), o.clone()))
        });
        others.extend(
            self.pending_vetoes
                .iter()
                .filter(|(a, _)| a == rep_id)
                .map(|(_, b)| b.clone()),
        );
        let mut out: Vec<(Rank, String)> = Vec::new();
        for o in others {
            if self.cluster_of(store, &o)? != Some(cid) {
                continue;
            }
            if let Some(r) = get(&o)? {
                out.push((self.rank(&r), o));
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        out.sort();
        out.dedup();
        // Every member in `out` is vetoed: the re-check takes each out.
        let anchor = self.settle_anchor;
        let checked = self.recheck(store, b, cid, (rep_id, rep), &out, u64::MAX, &anchor, get)?;
        self.rechecked(store, b, cid, checked)
    }

    /// Whether `id` is in no cluster, or represents its own.
    pub(super) fn represents_or_alone(&self, store: &Store, id: &str) -> Result<bool> {
        Ok(match self.cluster_of(store, id)? {
            None => true,
            Some(cid) => self.rep(store, cid)?.is_some_and(|(_, r)| r == id),
        })
    }

    /// Document `id`, stored as `old`, is written again as `new`, whose
    /// rank differs ("keep this one" decided or undone): it moves to its
    /// new place in its cluster. When that changes who represents the
    /// cluster, the members are re-checked against the new representative
    /// ([`ClusterState::settle`], as when one leaves).
    pub(super) fn rerank(
        &mut self,
        store: &Store,
        b: &mut Batch,
        id: &str,
        (old, new): (&Record, &Record),
        get: GetRecord<'_>,
    ) -> Result<()> {
        let Some(cid) = self.cluster_of(store, id)? else {
            return Ok(());
        };
        let (from, to) = (self.rank(old), self.rank(new));
        if from == to {
            return Ok(());
        }
        let before = self.rep_record(store, cid, get)?;
        self.put_member(store, b, cid, from, None);
        self.put_member(store, b, cid, to, Some(id));
        let after = self.rep(store, cid)?.map(|(_, r)| r);
        if let Some((rep_id, rep)) = before {
            if after.as_deref() != Some(rep_id.as_str()) {
                // The members were confirmed against the one before.
                let left = if rep_id == id { old.clone() } else { rep };
                self.stale.entry(cid).or_insert(left);
            }
        }
        Ok(())
    }

    /// The pair (`a`, `b`) was just decided "not a copy": when one of them
    /// represents the cluster the other is in, the other leaves it.
    pub(super) fn separate(
        &mut self,
        store: &Store,
        b: &mut Batch,
        (x, y): (&str, &str),
        get: GetRecord<'_>,
    ) -> Result<()> {
        self.note_veto(x, y);
        let (Some(cx), Some(cy)) = (self.cluster_of(store, x)?, self.cluster_of(store, y)?) else {
            return Ok(());
        };
        if cx != cy {
            return Ok(());
        }
        let Some((rep_id, rep)) = self.rep_record(store, cx, get)? else {
            return Ok(());
        };
        if rep_id == x || rep_id == y {
            self.evict_vetoed(store, b, cx, (&rep_id, &rep), get)?;
        }
        Ok(())
    }

    /// Forgets the pending writes (after a commit: the store has them).
    pub(super) fn committed(&mut self) {
        self.pending_vetoes.clear();
        self.undone_vetoes.clear();
        self.stale_entries.clear();
        self.membership.clear();
        self.sizes.clear();
        self.members.clear();
        self.stored_from.get_mut().clear();
    }

    /// What the writer's life changed so far.
    pub(super) fn changes(&self) -> ClusterChanges {
        ClusterChanges {
            new: self.created.len() as u64,
            grown: self.grown.len() as u64,
            left: self.left,
        }
    }
}

impl Db {
    /// The cluster of document `id` (`None` if there is no such document),
    /// read at one snapshot: a write meanwhile is seen whole or not at all.
    pub(crate) fn cluster_of(&self, id: &str) -> Result<Option<Cluster>> {
        let at = self.store.snapshot();
        let Some(rec) = self.store.get_at(&at, id)? else {
            return Ok(None);
        };
        self.cluster_of_at(&at, id, &rec).map(Some)
    }

    /// The cluster of document `id`, whose record at `at` is `rec`.
    pub(super) fn cluster_of_at(
        &self,
        at: &store::Snapshot<'_>,
        id: &str,
        rec: &Record,
    ) -> Result<Cluster> {
        match self.store.cluster_entry_at(at, id)? {
            Some(cid) => self.cluster_at(at, cid),
            None => Ok(Cluster {
                id: rec.ord,
                size: 1,
                representative: id.to_string(),
                members: vec![member(id, rec, rec.fingerprint)],
                max_distance: 0,
            }),
        }
    }

    /// Cluster `cid` (of two or more documents) at `at`, members read and
    /// checked: a member without a record in the same snapshot is damage.
    fn cluster_at(&self, at: &store::Snapshot<'_>, cid: u64) -> Result<Cluster> {
        self.cluster_at_capped(at, cid, usize::MAX)
    }

    /// [`Db::cluster_at`] listing the first `max_members` members in rank
    /// order (`size` is the cluster's, `max_distance` of those listed).
    pub(super) fn cluster_at_capped(
        &self,
        at: &store::Snapshot<'_>,
        cid: u64,
        max_members: usize,
    ) -> Result<Cluster> {
        let members = self.store.first_members_at(at, cid, max_members.max(1))?;
        let listed_all = members.len() < max_members.max(1);
        let mut out: Vec<Member> = Vec::with_capacity(members.len());
        let mut rep_fp: Option<Fingerprint> = None;
        for (rank, id) in &members {
            let rec = self.member_record(at, cid, *rank, id)?;
            let rep = *rep_fp.get_or_insert(rec.fingerprint);
            out.push(member(id, &rec, rep));
        }
        let representative = out
            .first()
            .map(|m| m.id.clone())
            .ok_or_else(|| no_members(cid))?;
        let size = match listed_all {
            true => out.len() as u64,
            false => self
                .store
                .cluster_size_at(at, cid)?
                .unwrap_or(out.len() as u64),
        };
        Ok(Cluster {
            id: cid,
            size,
            max_distance: out.iter().map(|m| m.distance).max().unwrap_or(0),
            representative,
            members: out,
        })
    }

    /// The record of member `id` (rank `rank`) of cluster `cid` at `at`:
    /// a member without one is damage.
    pub(super) fn member_record(
        &self,
        at: &store::Snapshot<'_>,
        cid: u64,
        rank: Rank,
        id: &str,
    ) -> Result<Record> {
        self.store.get_at(at, id)?.ok_or_else(|| {
            Error::corrupt(
                store::CLUSTERS,
                &schema::member_key(cid, rank),
                format!("names id {id:?}, which has no record"),
            )
        })
    }

    /// Calls `visit` with every cluster of at least `min_size` (>= 2)
    /// documents, in cluster id order (documents alone are not listed),
    /// all read at one snapshot.
    pub(crate) fn each_cluster(
        &self,
        min_size: u64,
        mut visit: impl FnMut(Cluster) -> Result<()>,
    ) -> Result<()> {
        let min_size = min_size.max(2);
        let at = self.store.snapshot();
        self.store.for_each_cluster_at(&at, |cid, size| {
            if size >= min_size {
                visit(self.cluster_at(&at, cid)?)?;
            }
            Ok(())
        })
    }

    /// The size of the largest stored cluster (0: none).
    pub(crate) fn largest_cluster(&self) -> Result<u64> {
        let mut largest = 0;
        self.store.for_each_cluster(|_, size| {
            largest = largest.max(size);
            Ok(())
        })?;
        Ok(largest)
    }

    /// Counts of stored clusters: (clusters of two or more, their
    /// documents).
    pub(crate) fn cluster_counts(&self) -> Result<(u64, u64)> {
        let (mut n, mut docs) = (0, 0);
        self.store.for_each_cluster(|_, size| {
            n += 1;
            docs += size;
            Ok(())
        })?;
        Ok((n, docs))
    }
}

/// Damage: cluster `cid` has a size entry and no member.
pub(super) fn no_members(cid: u64) -> Error {
    Error::corrupt(
        store::CLUSTERS,
        &schema::size_key(cid),
        "a cluster without members",
    )
}

fn member(id: &str, rec: &Record, rep: Fingerprint) -> Member {
    Member {
        id: id.to_string(),
        distance: rec.fingerprint.distance(rep),
        priority: rec.priority.map(|p| p.value()),
        ingested_at: rec.ingested_at,
        dated: rec.dated,
        kept: rec.kept,
    }
}

impl Db {
    /// The check a write makes by default, as an [`Anchor`]: k = 3,
    /// confidence-ranked beyond it, at the store's threshold.
    pub(crate) fn default_anchor(&self) -> Anchor {
        Anchor {
            k: super::Query::new(Fingerprint(0)).k,
            beyond_k: true,
            min_similarity: self.default_min_similarity(),
        }
    }

    /// Rebuilds the `clusters` family from the records under the store's
    /// keep policy: each document, in ingest order, is checked as ingest
    /// checks it (the default confidence-ranked probe with its stored weak
    /// bits, verified at the store's default threshold) against the
    /// documents ingested before it, and placed as a write places it
    /// ([`ClusterState::join`]). Without deletes or replacements, and with
    /// ingest's default options, that is the clusters ingest built (where
    /// a document's check reached [`limits::CHECK_CONFIRMED`] or
    /// [`limits::CHECK_EXAMINED`], the candidates it saw may differ: see
    /// the comment inside). Returns the number of clusters of two or more.
    /// Costs about one duplicate check per document (queries in sorted
    /// batches).
    ///
    /// The clusters are built under `keep`, which becomes the store's
    /// policy with the last batch; from the batch that clears the family
    /// to that one, the store holds [`store::CLUSTERS_MARKER_KEY`].
    pub(super) fn rebuild_clusters(&self, keep: KeepPolicy) -> Result<u64> {
        self.rebuild_clusters_with(keep, self.default_anchor(), |chunk| {
            Ok(self
                .earlier_near_copies(chunk)?
                .into_iter()
                .map(|hits| hits.into_iter().map(|h| h.id).collect())
                .collect())
        })
    }

    /// [`Db::rebuild_clusters`] from near-copy lists computed beforehand
    /// (by [`Db::earlier_copies`], maybe in other processes): `lists` gives,
    /// in ascending ord, each document that has near-copies (its ord and
    /// their ids); the others have none. A list that is out of order,
    /// names no document of the store, or names a document that is not
    /// before its own is an error, found as the rebuild reaches it (the
    /// store then keeps its rebuild marker, and the same call, or
    /// `set_keep_policy`, redoes the rebuild).
    pub(super) fn rebuild_clusters_from(
        &self,
        keep: KeepPolicy,
        anchor: Option<Anchor>,
        lists: impl IntoIterator<Item = Result<(u64, Vec<String>)>>,
    ) -> Result<u64> {
        let mut lists = lists.into_iter().peekable();
        let mut last: Option<u64> = None;
        let anchor = anchor.unwrap_or_else(|| self.default_anchor());
        let n = self.rebuild_clusters_with(keep, anchor, |chunk| {
            let mut out = Vec::with_capacity(chunk.len());
            for (id, rec) in chunk {
                let mut near = Vec::new();
                loop {
                    let ord = match lists.peek() {
                        None => break,
                        Some(Ok((ord, _))) => *ord,
                        Some(Err(_)) => match lists.next() {
                            Some(Err(e)) => return Err(e),
                            _ => break,
                        },
                    };
                    if last.is_some_and(|l| ord <= l) {
                        return Err(Error::Input(format!(
                            "near-copy lists: ord {ord} comes after ord {}: they must be in \
                             ascending ord, one list per document",
                            last.unwrap_or_default()
                        )));
                    }
                    if ord > rec.ord {
                        break;
                    }
                    let Some(Ok((ord, ids))) = lists.next() else {
                        break;
                    };
                    last = Some(ord);
                    if ord < rec.ord {
                        return Err(Error::Input(format!(
                            "near-copy lists: no document of the store has ord {ord}"
                        )));
                    }
                    for other in &ids {
                        match self.store.get(other)? {
                            Some(r) if r.ord < rec.ord => {}
                            Some(r) => {
                                return Err(Error::Input(format!(
                                    "near-copy lists: {other:?} (ord {}) is not before {id:?} \
                                     (ord {ord})",
                                    r.ord
                                )))
                            }
                            None => {
                                return Err(Error::Input(format!(
                                    "near-copy lists: {other:?}, a near copy of {id:?}, is not \
                                     in the store"
                                )))
                            }
                        }
                    }
                    near = ids;
                }
                out.push(near);
            }
            Ok(out)
        })?;
        match lists.next() {
            None => Ok(n),
            Some(Err(e)) => Err(e),
            Some(Ok((ord, _))) => Err(Error::Input(format!(
                "near-copy lists: no document of the store has ord {ord}"
            ))),
        }
    }

    /// The rebuild of [`Db::rebuild_clusters`], with each chunk's
    /// near-copy lists (documents in ingest order, with their records)
    /// from `near`, each document confirmed against a representative by
    /// `anchor`.
    fn rebuild_clusters_with(
        &self,
        keep: KeepPolicy,
        anchor: Anchor,
        mut near: impl FnMut(&[(&String, Record)]) -> Result<Vec<Vec<String>>>,
    ) -> Result<u64> {
        let mut b = Batch::default();
        self.store.clear_clusters(&mut b);
        self.store
            .put_meta_in(&mut b, store::CLUSTERS_MARKER_KEY, keep.name().as_bytes());
        self.store.write(b, true)?;
        let mut state = ClusterState::new(keep, anchor);
        let mut ids: Vec<String> = Vec::new();
        let mut place =
            |ids: &mut Vec<String>, state: &mut ClusterState, last: bool| -> Result<()> {
                let chunk = self.records_of(ids)?;
                let near = near(&chunk)?;
                let get = |id: &str| self.store.get(id);
                let mut b = Batch::default();
                for ((id, rec), near) in chunk.iter().zip(near) {
                    state.join(&self.store, &mut b, id, rec, &near, &anchor, &get)?;
                }
                if last {
                    let (k, v) = store::schema::keep_policy_entry(keep);
                    self.store.put_meta_in(&mut b, k, v);
                    self.store
                        .delete_meta_in(&mut b, store::CLUSTERS_MARKER_KEY);
                }
                self.store.write(b, last)?;
                state.committed();
                ids.clear();
                Ok(())
            };
        // In ingest order; records that do not decode are skipped (repair
        // reports them).
        self.store.for_each_in_order(0, |_, id| {
            ids.push(id.to_string());
            if ids.len() >= REBUILD_CHUNK {
                place(&mut ids, &mut state, false)?;
            }
            Ok(true)
        })?;
        place(&mut ids, &mut state, true)?;
        let (n, _) = self.cluster_counts()?;
        Ok(n)
    }

    /// The records of `ids` that are readable: gone ones, and records that
    /// do not decode (repair reports them), are left out.
    fn records_of<'i>(&self, ids: &'i [String]) -> Result<Vec<(&'i String, Record)>> {
        let mut chunk = Vec::with_capacity(ids.len());
        for id in ids {
            match self.store.get(id) {
                Ok(Some(r)) => chunk.push((id, r)),
                Ok(None) | Err(Error::Corrupt { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(chunk)
    }

    /// For each document whose ord is in `ords`, in ingest order, its
    /// confirmed near-copies among the documents ingested before it,
    /// nearest first: the search of [`Db::rebuild_clusters`], which is
    /// ingest's duplicate check (see there for where the two may differ).
    /// `visit` sees the documents that have any. Returns the number of
    /// documents checked. Reads only: processes that each open the store
    /// read-only and take a range of ords split the work of a rebuild
    /// among them ([`Db::rebuild_clusters_from`] then places the documents).
    pub(super) fn earlier_copies(
        &self,
        ords: std::ops::Range<u64>,
        mut visit: impl FnMut(u64, &str, Vec<crate::Hit>) -> Result<()>,
    ) -> Result<u64> {
        let mut ids: Vec<String> = Vec::new();
        let mut checked = 0u64;
        let mut check = |ids: &mut Vec<String>| -> Result<()> {
            let chunk = self.records_of(ids)?;
            for ((id, rec), hits) in chunk.iter().zip(self.earlier_near_copies(&chunk)?) {
                checked += 1;
                if !hits.is_empty() {
                    visit(rec.ord, id, hits)?;
                }
            }
            ids.clear();
            Ok(())
        };
        self.store.for_each_in_order(ords.start, |ord, id| {
            if ord >= ords.end {
                return Ok(false);
            }
            ids.push(id.to_string());
            if ids.len() >= REBUILD_CHUNK {
                check(&mut ids)?;
            }
            Ok(true)
        })?;
        check(&mut ids)?;
        Ok(checked)
    }

    /// For each document of `chunk`, its confirmed near-copies among the
    /// documents ingested before it, nearest first, as ingest's duplicate
    /// check finds them: the same search under the same rule
    /// ([`search::Rule::duplicates`]), reading the chunk's buckets
    /// beforehand (see [`Db::rebuild_clusters`]).
    fn earlier_near_copies(&self, chunk: &[(&String, Record)]) -> Result<Vec<Vec<crate::Hit>>> {
        use limits::{CHECK_CONFIRMED, CHECK_EXAMINED};
        let queries: Vec<super::Query> = chunk
            .iter()
            .map(|(id, r)| self.record_query(id, r))
            .collect();
        let at = self.store.snapshot();
        let pre = self.prefetch_searches(&at, &queries)?;
        // The checks read only: on every core.
        chunk
            .par_iter()
            .zip(&queries)
            .map(|((_, r), q)| {
                // As ingest's check saw the store: only the documents
                // before this one are its copies. Later documents cost a
                // read too, so they count against the bound; a walk cut
                // short with no earlier copy confirmed but a later one (the
                // earliest copies of a flood, whose first candidates by id
                // are all later) is walked again sixteen times as far.
                let searcher = search::Searcher {
                    before: Some(r.ord),
                    ..self.searcher(&at, Some(&pre))
                };
                let mut hits = Vec::new();
                for reach in [1, 16] {
                    let mut later = false;
                    let mut admit = |h: &crate::Hit| -> Result<bool> {
                        let hr = self.store.checked_record(&at, h.fingerprint, &h.id)?;
                        later |= hr.ord >= r.ord;
                        Ok(hr.ord < r.ord)
                    };
                    let rule = search::Rule {
                        examine: reach * CHECK_EXAMINED,
                        ..search::Rule::duplicates(CHECK_CONFIRMED)
                    };
                    let c = searcher.run(q, rule, &mut admit)?;
                    if c.complete || !c.hits.is_empty() || !later || reach > 1 {
                        hits = c.hits;
                        break;
                    }
                }
                Ok(hits)
            })
            .collect()
    }

    /// Adds to `problems` what is wrong with the `clusters` family: every
    /// readable record (`records`: (ord, id hash), sorted) has its `o` entry
    /// and no other `o` entry exists; every `d` entry names an existing document and agrees with its `m` entry,
    /// whose rank is the record's; every `m` entry has its `d` entry; every
    /// cluster's `s` entry is its number of members, at least 2; every `a`
    /// entry (a re-check under way) names a cluster.
    pub(super) fn verify_clusters(
        &self,
        problems: &mut Vec<String>,
        records: &[(u64, u64)],
        dated: &[(u64, u64, u64)],
    ) -> Result<()> {
        use crate::error::hex;
        let readable = records.len() as u64;
        let name = store::CLUSTERS;
        let mut membership: HashMap<String, (u64, bool)> = HashMap::new();
        let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
        let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
        let mut stale: BTreeSet<u64> = BTreeSet::new();
        let mut ordered = 0u64;
        let mut timed = 0u64;
        let keep = self.store.keep_policy()?;
        self.store.for_each_raw(name, |k, v| {
            let bad = |what: String| format!("{name}: key {}: {what}", hex(k));
            match k.first() {
                Some(b'o') => match (schema::decode_u64(&k[1..]), std::str::from_utf8(v)) {
                    (Ok(ord), Ok(id)) => {
                        // Checked against the records pass's (ord, id)
                        // list; a record is read only to say what is wrong.
                        let found = records.binary_search_by_key(&ord, |e| e.0);
                        match found {
                            Ok(i) if records[i].1 == super::check::id_hash(id.as_bytes()) => {
                                ordered += 1
                            }
                            _ => match self.store.get(id) {
                                Ok(Some(r)) => problems.push(bad(format!(
                                    "names id {id:?}, whose record has ord {}",
                                    r.ord
                                ))),
                                Ok(None) => problems
                                    .push(bad(format!("names id {id:?}, which has no record"))),
                                // An unreadable record: reported by the records pass.
                                Err(_) => {}
                            },
                        }
                    }
                    (Err(e), _) => problems.push(bad(e)),
                    (_, Err(_)) => problems.push(bad("document id is not UTF-8".into())),
                },
                Some(b't') => match (schema::decode_time_key(&k[1..]), std::str::from_utf8(v)) {
                    (Ok((time, ord)), Ok(id)) => {
                        let found = dated.binary_search_by_key(&(time, ord), |e| (e.0, e.1));
                        match found {
                            Ok(i) if dated[i].2 == super::check::id_hash(id.as_bytes()) => {
                                timed += 1
                            }
                            _ => match self.store.get(id) {
                                Ok(Some(r)) => problems.push(bad(format!(
                                    "names id {id:?}, whose record has time {:?} and ord {}",
                                    r.dated, r.ord
                                ))),
                                Ok(None) => problems
                                    .push(bad(format!("names id {id:?}, which has no record"))),
                                Err(_) => {}
                            },
                        }
                    }
                    (Err(e), _) => problems.push(bad(e)),
                    (_, Err(_)) => problems.push(bad("document id is not UTF-8".into())),
                },
                Some(b'd') => match (std::str::from_utf8(&k[1..]), schema::decode_u64(v)) {
                    (Ok(id), Ok(cid)) => {
                        if matches!(self.store.get(id), Ok(None)) {
                            problems.push(bad(format!("names id {id:?}, which has no record")));
                        }
                        membership.insert(id.to_string(), (cid, false));
                    }
                    (Err(_), _) => problems.push(bad("id is not UTF-8".into())),
                    (_, Err(e)) => problems.push(bad(e)),
                },
                Some(b'm') => match (schema::decode_member_key(&k[1..]), std::str::from_utf8(v)) {
                    (Ok((cid, rank)), Ok(id)) => {
                        *counts.entry(cid).or_default() += 1;
                        match self.store.get(id) {
                            Ok(Some(r)) if Rank::of(&r, keep) == rank => {}
                            Ok(Some(_)) => problems.push(bad(format!(
                                "member {id:?} has another rank in its record"
                            ))),
                            Ok(None) => problems
                                .push(bad(format!("names id {id:?}, which has no record"))),
                            Err(_) => {} // reported by the records pass
                        }
                        match membership.get_mut(id) {
                            Some((c, seen)) if *c == cid && !*seen => *seen = true,
                            Some(_) => problems.push(bad(format!(
                                "member {id:?} is not in this cluster by its d entry, or is listed twice"
                            ))),
                            None => problems.push(bad(format!("member {id:?} has no d entry"))),
                        }
                    }
                    (Err(e), _) => problems.push(bad(e)),
                    (_, Err(_)) => problems.push(bad("member id is not UTF-8".into())),
                },
                Some(b's') => match (schema::decode_u64(&k[1..]), schema::decode_u64(v)) {
                    (Ok(cid), Ok(size)) => {
                        sizes.insert(cid, size);
                    }
                    (Err(e), _) | (_, Err(e)) => problems.push(bad(e)),
                },
                // A re-check under way: checked below against the sizes.
                Some(b'a') => match schema::decode_stale(&k[1..], v) {
                    Ok((cid, _)) => {
                        stale.insert(cid);
                    }
                    Err(e) => problems.push(bad(e)),
                },
                _ => problems.push(bad("unknown kind of entry".into())),
            }
            Ok(())
        })?;
        // Every readable record has its entry: as many entries name a
        // record of their ord as there are readable records (ords are
        // unique, so no record is counted twice).
        if ordered != readable {
            problems.push(format!(
                "{name}: {ordered} entries in the ingest order, but {readable} readable records (a record without its entry)"
            ));
        }
        if timed != dated.len() as u64 {
            problems.push(format!(
                "{name}: {timed} entries in the time index, but {} records with their own time (a record without its entry)",
                dated.len()
            ));
        }
        for (id, (cid, seen)) in &membership {
            if !seen {
                problems.push(format!(
                    "{name}: key {}: {id:?} is in cluster {cid} by its d entry, which does not list it",
                    hex(&schema::membership_key(id))
                ));
            }
        }
        for (cid, n) in &counts {
            match sizes.get(cid) {
                Some(s) if s == n && *s >= 2 => {}
                Some(s) => problems.push(format!(
                    "{name}: key {}: size {s}, but {n} members (at least 2)",
                    hex(&schema::size_key(*cid))
                )),
                None => problems.push(format!(
                    "{name}: key {}: missing size of a cluster of {n} members",
                    hex(&schema::size_key(*cid))
                )),
            }
        }
        for cid in sizes.keys().filter(|c| !counts.contains_key(c)) {
            problems.push(format!(
                "{name}: key {}: a cluster without members",
                hex(&schema::size_key(*cid))
            ));
        }
        for cid in stale.iter().filter(|c| !sizes.contains_key(c)) {
            problems.push(format!(
                "{name}: key {}: a re-check of cluster {cid}, which does not exist",
                hex(&schema::stale_key(*cid))
            ));
        }
        Ok(())
    }
}

/// The store's clusters, read at one snapshot per call: [`Db::clusters`].
#[derive(Clone, Copy)]
pub struct Clusters<'a> {
    db: &'a Db,
    go_on: super::GoOn<'a>,
}

impl Db {
    /// The store's clusters.
    pub fn clusters(&self) -> Clusters<'_> {
        Clusters {
            db: self,
            go_on: Default::default(),
        }
    }
}

impl<'a> Clusters<'a> {
    /// This handle, with its long work (a [`Clusters::list`] page in size
    /// or distance order, which scans every cluster) asking `go_on`
    /// between clusters and ending with [`Error::Interrupted`] once it
    /// answers false: how a service keeps a deadline, or stops.
    pub fn until(self, go_on: &'a (dyn Fn() -> bool + Sync)) -> Clusters<'a> {
        Clusters {
            go_on: super::GoOn::new(go_on),
            ..self
        }
    }
}

impl Clusters<'_> {
    /// The store these clusters are of.
    pub(super) fn db(&self) -> &Db {
        self.db
    }

    /// Whether long work goes on ([`Clusters::until`]).
    pub(super) fn go_on(&self) -> super::GoOn<'_> {
        self.go_on
    }

    /// The cluster of the stored document `id` (a document alone is a
    /// cluster of one); `None` if `id` is not stored.
    pub fn of(&self, id: &str) -> Result<Option<Cluster>> {
        self.db.cluster_of(id)
    }

    /// Calls `visit` with every cluster of at least `min_size` (>= 2)
    /// documents, in cluster id order, all read at one snapshot.
    pub fn each(&self, min_size: u64, visit: impl FnMut(Cluster) -> Result<()>) -> Result<()> {
        self.db.each_cluster(min_size, visit)
    }

    /// A page of [`Clusters::each`]: at most `n` clusters of at least
    /// `min_size` documents whose id is `from` or more, in id order, each
    /// listing its first `max_members` members in rank order (its `size`
    /// is all of them, its `max_distance` of those listed), read at one
    /// snapshot. The next page starts after the last id. Memory and reads
    /// follow `n × max_members`, whatever the clusters hold.
    pub fn page(
        &self,
        from: u64,
        n: usize,
        min_size: u64,
        max_members: usize,
    ) -> Result<Vec<Cluster>> {
        let db = self.db;
        let min_size = min_size.max(2);
        let at = db.store.snapshot();
        let mut out = Vec::new();
        db.store.for_each_cluster_from_at(&at, from, |cid, size| {
            if out.len() >= n {
                return Ok(false);
            }
            if size >= min_size {
                out.push(db.cluster_at_capped(&at, cid, max_members)?);
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// Clusters of two or more documents, and the documents in them.
    pub fn counts(&self) -> Result<(u64, u64)> {
        self.db.cluster_counts()
    }

    /// Whether a re-check of clusters whose representative changed is
    /// under way ([`Clusters::settle`] finishes it).
    pub fn unsettled(&self) -> Result<bool> {
        self.db.clusters_unsettled()
    }

    /// Runs the re-checks of clusters whose representative changed to the
    /// end, taking the writer lock for one step
    /// ([`super::limits::SETTLE_STEP`] members) at a time, so that other
    /// writers of this handle go between the steps. Returns the steps
    /// taken.
    pub fn settle(&self) -> Result<u64> {
        self.db.settle_clusters()
    }

    /// Every pair of stored documents within `k` bits (0..=11) whose
    /// sketches agree at least `min_similarity` (0 keeps every pair; a
    /// pair where either document has no sketch is kept, unconfirmed),
    /// each once, handed to `emit` as it is found: exactly the pairs a
    /// brute-force comparison of all documents finds. Memory holds the
    /// pairs of a few hundred buckets at a time, not the store.
    pub fn pairs(
        &self,
        k: u32,
        min_similarity: f64,
        emit: impl FnMut(&super::Pair) -> Result<()>,
    ) -> Result<super::PairsReport> {
        self.db.pairs(k, min_similarity, emit)
    }

    /// [`Clusters::pairs`], with documents stored more than once reported
    /// as `copies` says: with [`super::Copies::Grouped`], each set of
    /// documents of the same fingerprint, sketch and length is one
    /// [`super::CopyGroup`] (emitted before any pair naming it), and stands
    /// in pairs for all of them under its first id.
    pub fn pairs_with(
        &self,
        k: u32,
        min_similarity: f64,
        copies: super::Copies,
        emit: impl FnMut(super::PairsItem<'_>) -> Result<()>,
    ) -> Result<super::PairsReport> {
        self.db.pairs_with(k, min_similarity, copies, emit)
    }
}
