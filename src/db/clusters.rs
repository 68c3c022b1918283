//! Persistent clusters of near-duplicates.
//!
//! Every document belongs to one cluster. When ingest finds confirmed
//! near-copies of a document (in the store or earlier in the run), the
//! document joins their cluster, merging them if they are in several. A
//! cluster's id is the smallest ord (ingest order) of the documents that
//! founded it; a merge keeps the smaller id. Its representative is the
//! member with the highest priority, then the earliest ingested.
//!
//! Since a document is only ever compared with documents ingested before
//! it, the clusters do not depend on how the input was split into runs or
//! batches. A member that is deleted or replaced leaves its cluster (a
//! replaced document then joins clusters as a new one); clusters never
//! split, and a cluster left with one member dissolves into a document on
//! its own.
//!
//! Only clusters of two or more documents are stored (layout in
//! `store::schema`); a document without a `d` entry is a cluster of its
//! own whose id is its ord.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{limits, Db};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::store::schema::{self, Rank};
use crate::store::{self, Batch, Record, Store};

/// A cluster as listed by [`Clusters::each`] and [`Clusters::of`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cluster {
    /// Stable while the cluster exists (a merge keeps the older id).
    pub id: u64,
    pub size: u64,
    /// The member with the highest priority, then the earliest ingested.
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
}

/// How a run changed the clusters (see [`crate::ingest::Summary`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClusterChanges {
    /// Clusters that formed in the run: a document joined one that was
    /// alone (they may hold documents of earlier runs).
    pub new: u64,
    /// Clusters of earlier runs that gained members.
    pub grown: u64,
    /// Unions of two clusters into one (a document near several).
    pub merged: u64,
}

/// The writer's view of the clusters: the store plus its pending writes,
/// which go to the batch as they are made.
#[derive(Default)]
pub(super) struct ClusterState {
    membership: HashMap<String, Option<u64>>,
    sizes: HashMap<u64, u64>,
    members: HashMap<u64, BTreeMap<Rank, Option<String>>>,
    created: HashSet<u64>,
    grown: HashSet<u64>,
    merged: u64,
}

impl ClusterState {
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
        for (rank, id) in self.members.get(&cid).into_iter().flatten() {
            match id {
                Some(id) => m.insert(*rank, id.clone()),
                None => m.remove(rank),
            };
        }
        Ok(m.into_iter().collect())
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

    fn put_member(&mut self, store: &Store, b: &mut Batch, cid: u64, rank: Rank, id: Option<&str>) {
        match id {
            Some(id) => {
                let (k, v) = schema::member_entry(cid, rank, id);
                store.put_cluster_raw(b, &k, Some(&v));
            }
            None => store.put_cluster_raw(b, &schema::member_key(cid, rank), None),
        }
        self.members
            .entry(cid)
            .or_default()
            .insert(rank, id.map(str::to_string));
    }

    /// Document `id` of rank `rank` joins the clusters of `near` (its
    /// confirmed near-copies), merging them. `rank_of` gives a near-copy's
    /// rank (`None`: it is gone); it is asked only of near-copies that are
    /// alone, which found a cluster with it: joining a cluster costs one
    /// lookup per near-copy, not a record read.
    pub(super) fn join(
        &mut self,
        store: &Store,
        b: &mut Batch,
        id: &str,
        rank: Rank,
        near: &[String],
        rank_of: impl Fn(&str) -> Result<Option<Rank>>,
    ) -> Result<()> {
        // Each near-copy's cluster: explicit, or the document alone (its
        // id is then its ord).
        let mut clusters: BTreeMap<u64, Option<(String, Rank)>> = BTreeMap::new();
        for n in near {
            match self.cluster_of(store, n)? {
                Some(c) => {
                    clusters.insert(c, None);
                }
                None => {
                    if let Some(r) = rank_of(n)? {
                        clusters.insert(r.ord, Some((n.clone(), r)));
                    }
                }
            };
        }
        let Some((&target, alone)) = clusters.iter().next() else {
            return Ok(()); // no near-copy: the document stays alone
        };
        let mut size;
        if let Some((n, r)) = alone.clone() {
            // The first member of a new cluster.
            self.put_member(store, b, target, r, Some(&n));
            self.set_membership(store, b, &n, Some(target));
            self.created.insert(target);
            size = 1;
        } else {
            size = self.size(store, target)?;
            if !self.created.contains(&target) {
                self.grown.insert(target);
            }
        }
        for (&other, alone) in clusters.iter().skip(1) {
            self.merged += 1;
            match alone {
                Some((n, r)) => {
                    self.put_member(store, b, target, *r, Some(n));
                    self.set_membership(store, b, n, Some(target));
                    size += 1;
                }
                None => {
                    for (r, m) in self.members(store, other)? {
                        self.put_member(store, b, other, r, None);
                        self.put_member(store, b, target, r, Some(&m));
                        self.set_membership(store, b, &m, Some(target));
                        size += 1;
                    }
                    self.set_size(store, b, other, 0);
                    self.created.remove(&other);
                    self.grown.remove(&other);
                }
            }
        }
        self.put_member(store, b, target, rank, Some(id));
        self.set_membership(store, b, id, Some(target));
        self.set_size(store, b, target, size + 1);
        Ok(())
    }

    /// Document `id` of rank `rank` leaves its cluster; a cluster left
    /// with one member dissolves.
    pub(super) fn leave(
        &mut self,
        store: &Store,
        b: &mut Batch,
        id: &str,
        rank: Rank,
    ) -> Result<()> {
        let Some(cid) = self.cluster_of(store, id)? else {
            return Ok(());
        };
        self.put_member(store, b, cid, rank, None);
        self.set_membership(store, b, id, None);
        let size = self.size(store, cid)?.saturating_sub(1);
        if size <= 1 {
            for (r, m) in self.members(store, cid)? {
                self.put_member(store, b, cid, r, None);
                self.set_membership(store, b, &m, None);
            }
            self.set_size(store, b, cid, 0);
            self.created.remove(&cid);
            self.grown.remove(&cid);
        } else {
            self.set_size(store, b, cid, size);
        }
        Ok(())
    }

    /// Forgets the pending writes (after a commit: the store has them).
    pub(super) fn committed(&mut self) {
        self.membership.clear();
        self.sizes.clear();
        self.members.clear();
    }

    /// What the writer's life changed so far.
    pub(super) fn changes(&self) -> ClusterChanges {
        ClusterChanges {
            new: self.created.len() as u64,
            grown: self.grown.len() as u64,
            merged: self.merged,
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
        let members = self.store.cluster_members_at(at, cid)?;
        let mut out: Vec<Member> = Vec::with_capacity(members.len());
        let mut rep_fp: Option<Fingerprint> = None;
        for (rank, id) in &members {
            let rec = self.store.get_at(at, id)?.ok_or_else(|| {
                Error::corrupt(
                    store::CLUSTERS,
                    &schema::member_key(cid, *rank),
                    format!("names id {id:?}, which has no record"),
                )
            })?;
            let rep = *rep_fp.get_or_insert(rec.fingerprint);
            out.push(member(id, &rec, rep));
        }
        let representative = out.first().map(|m| m.id.clone()).ok_or_else(|| {
            Error::corrupt(
                store::CLUSTERS,
                &schema::size_key(cid),
                "a cluster without members",
            )
        })?;
        Ok(Cluster {
            id: cid,
            size: out.len() as u64,
            max_distance: out.iter().map(|m| m.distance).max().unwrap_or(0),
            representative,
            members: out,
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

fn member(id: &str, rec: &Record, rep: Fingerprint) -> Member {
    Member {
        id: id.to_string(),
        distance: rec.fingerprint.distance(rep),
        priority: rec.priority.map(|p| p.value()),
        ingested_at: rec.ingested_at,
    }
}

/// Union-find over document ids, for [`Db::rebuild_clusters`].
#[derive(Default)]
struct Components {
    parent: HashMap<String, String>,
    ranks: HashMap<String, Rank>,
}

impl Components {
    fn root(&mut self, id: &str) -> String {
        let mut cur = id.to_string();
        while let Some(p) = self.parent.get(&cur) {
            if *p == cur {
                break;
            }
            cur = p.clone();
        }
        // Path compression.
        let mut x = id.to_string();
        while let Some(p) = self.parent.get(&x).cloned() {
            if p == cur {
                break;
            }
            self.parent.insert(x, cur.clone());
            x = p;
        }
        cur
    }

    fn union(&mut self, a: (&str, Rank), b: (&str, Rank)) {
        for (id, r) in [a, b] {
            self.ranks.insert(id.to_string(), r);
            self.parent
                .entry(id.to_string())
                .or_insert_with(|| id.to_string());
        }
        let (ra, rb) = (self.root(a.0), self.root(b.0));
        if ra != rb {
            self.parent.insert(ra, rb);
        }
    }
}

impl Db {
    /// Rebuilds the `clusters` family from the records: each document is
    /// checked, as ingest checks it (the default confidence-ranked probe
    /// with its stored weak bits, verified at the store's default
    /// threshold), against the documents ingested before it, and joins
    /// their clusters. Without deletes or replacements, and with ingest's
    /// default options, that is the clusters ingest built (where a
    /// document's check reached [`limits::CHECK_CONFIRMED`] or
    /// [`limits::CHECK_EXAMINED`], the candidates it saw may differ: see
    /// the comment inside). Returns the number of clusters of two or more.
    /// Costs about one duplicate check per document (queries in sorted
    /// batches).
    pub(super) fn rebuild_clusters(&self) -> Result<u64> {
        use crate::index::DEFAULT_PROBE_BUDGET;
        let min_similarity = self.default_min_similarity();
        let mut comps = Components::default();
        let mut chunk: Vec<(String, Record)> = Vec::new();
        let check = |chunk: &mut Vec<(String, Record)>, comps: &mut Components| -> Result<()> {
            use limits::{CHECK_CONFIRMED, CHECK_EXAMINED};
            let qs: Vec<(Fingerprint, crate::index::ProbePlan)> = chunk
                .iter()
                .map(|(_, r)| {
                    let q = super::Query::new(r.fingerprint)
                        .probing(&r.weak_bits, DEFAULT_PROBE_BUDGET);
                    (r.fingerprint, q.plan())
                })
                .collect();
            let at = self.store.snapshot();
            let found = self.store.candidates_many(&at, &qs)?;
            for ((id, r), found) in chunk.iter().zip(found) {
                // As ingest's check saw the store: the documents before
                // this one, nearest first, within the same bounds. Later
                // documents cost a read too, so they count against the
                // bound; a document whose bounded walk met no earlier
                // confirmed copy joins the first later one instead (the
                // earliest of a million copies would otherwise stay alone
                // when the first thousand candidates by id are all later).
                let (mut confirmed, mut examined) = (0, 0);
                let mut later: Option<(String, Rank)> = None;
                let skip = |other: &str| other == id;
                // As ingest: beyond k only when nothing within k (an
                // earlier document) was confirmed.
                let k = super::Query::new(r.fingerprint).k;
                let mut within = true;
                let complete = self.store.resolve(
                    &at,
                    r.fingerprint,
                    found,
                    r.sketch.as_ref(),
                    &skip,
                    |h| {
                        if confirmed >= CHECK_CONFIRMED || examined >= CHECK_EXAMINED {
                            return Ok(store::Flow::Stop);
                        }
                        if within && h.distance > k {
                            within = false;
                            if confirmed > 0 {
                                return Ok(store::Flow::Stop);
                            }
                        }
                        examined += 1;
                        if h.similarity.is_some_and(|s| s < min_similarity) {
                            return Ok(store::Flow::Continue);
                        }
                        let hr = self.store.checked_record(&at, h.fingerprint, &h.id)?;
                        if hr.ord < r.ord {
                            confirmed += 1;
                            comps.union((id, Rank::of(r)), (&h.id, Rank::of(&hr)));
                        } else if later.is_none() {
                            later = Some((h.id, Rank::of(&hr)));
                        }
                        Ok(store::Flow::Continue)
                    },
                )?;
                if let (false, 0, Some((other, rank))) = (complete, confirmed, later) {
                    comps.union((id, Rank::of(r)), (&other, rank));
                }
            }
            chunk.clear();
            Ok(())
        };
        // Records that do not decode are skipped (repair reports them).
        self.store.for_each_raw(store::DOCS, |k, v| {
            let (Ok(id), Ok(rec)) = (std::str::from_utf8(k), store::codec::decode_record(v)) else {
                return Ok(());
            };
            chunk.push((id.to_string(), rec));
            if chunk.len() >= 20_000 {
                check(&mut chunk, &mut comps)?;
            }
            Ok(())
        })?;
        check(&mut chunk, &mut comps)?;
        // Components of two or more, each with its id (the smallest ord).
        let ids: Vec<String> = comps.parent.keys().cloned().collect();
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for id in ids {
            let root = comps.root(&id);
            groups.entry(root).or_default().push(id);
        }
        let mut b = Batch::default();
        self.store.clear_clusters(&mut b);
        let mut n = 0u64;
        let mut writes = 0usize;
        for members in groups.values() {
            let ranked: Vec<(Rank, &String)> =
                members.iter().map(|m| (comps.ranks[m], m)).collect();
            let Some(cid) = ranked.iter().map(|(r, _)| r.ord).min() else {
                continue;
            };
            for (r, m) in &ranked {
                let (k, v) = schema::member_entry(cid, *r, m);
                self.store.put_cluster_raw(&mut b, &k, Some(&v));
                let (k, v) = schema::membership_entry(m, cid);
                self.store.put_cluster_raw(&mut b, &k, Some(&v));
            }
            let (k, v) = schema::size_entry(cid, ranked.len() as u64);
            self.store.put_cluster_raw(&mut b, &k, Some(&v));
            n += 1;
            writes += ranked.len();
            if writes >= 50_000 {
                self.store.write(std::mem::take(&mut b), false)?;
                writes = 0;
            }
        }
        self.store.write(b, true)?;
        Ok(n)
    }

    /// Adds to `problems` what is wrong with the `clusters` family: every
    /// readable record (`records`: (ord, id hash), sorted) has its `o` entry
    /// and no other `o` entry exists; every `d` entry names an existing document and agrees with its `m` entry,
    /// whose rank is the record's; every `m` entry has its `d` entry; every
    /// cluster's `s` entry is its number of members, at least 2.
    pub(super) fn verify_clusters(
        &self,
        problems: &mut Vec<String>,
        records: &[(u64, u64)],
    ) -> Result<()> {
        use crate::error::hex;
        let readable = records.len() as u64;
        let name = store::CLUSTERS;
        let mut membership: HashMap<String, (u64, bool)> = HashMap::new();
        let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
        let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
        let mut ordered = 0u64;
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
                            Ok(Some(r)) if Rank::of(&r) == rank => {}
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
        Ok(())
    }
}

/// The store's clusters, read at one snapshot per call: [`Db::clusters`].
#[derive(Clone, Copy)]
pub struct Clusters<'a> {
    db: &'a Db,
}

impl Db {
    /// The store's clusters.
    pub fn clusters(&self) -> Clusters<'_> {
        Clusters { db: self }
    }
}

impl Clusters<'_> {
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

    /// Clusters of two or more documents, and the documents in them.
    pub fn counts(&self) -> Result<(u64, u64)> {
        self.db.cluster_counts()
    }
}
