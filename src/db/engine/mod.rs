//! The engines' placement, on their workers: the store's cluster rule
//! applied to whole components of the near-copy graph, each worker with a
//! scratch store of its own and no path to the run's store.
//!
//! A document joins the cluster of one of its confirmed earlier
//! near-copies (its near-copy list), or stays alone; a take-over re-checks
//! only the members of the cluster taken over. So every cluster lies
//! within one connected component of the graph whose edges are the
//! near-copy lists, and the placement of a component's documents reads
//! nothing outside it. [`place_components`] places any set of whole
//! components by the one rule the store uses
//! ([`super::Maintenance::rebuild_clusters_from`], the placement ingest
//! makes): it writes their
//! records (with their own ords) into a scratch store, replays the
//! decision log there, rebuilds its clusters from the lists and reads
//! them back. The clusters of each component are those the run's store
//! would build, with the same ids (a cluster's id is an ord). The engines
//! find the components on their workers (large-star / small-star) and
//! hand each worker the components of its partition
//! (docs/python.md, "On Ray: dedup").
//!
//! [`Maintenance::put_clusters`](super::Maintenance::put_clusters) then
//! writes the placed clusters into the run's store, which serves them.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::{Anchor, Db, KeepPolicy};
use crate::error::{Error, Result};
use crate::fingerprint::Recipe;
use crate::store::codec::Decision;
use crate::store::{Batch, Record, Tuning};

mod check;
pub use check::{
    fingerprint_entries, index_keys, key_matches, Checker, IndexEntry, JoinKey, KeyMatches,
    KeyProbe,
};

/// Records written to a scratch store per batch.
const SCRATCH_BATCH: usize = 4096;

/// What a placement takes from the run besides the components: the
/// run's recipe (its sketch names the confirmation threshold), the keep
/// policy and the decision log.
#[derive(Debug, Clone, Default)]
pub struct PlaceOptions {
    pub recipe: Recipe,
    pub keep: KeepPolicy,
    /// Oldest first, as `simdb decisions --json` lists them; decisions
    /// about documents outside the components change nothing.
    pub decisions: Vec<Decision>,
    /// When set, every record is taken as written at this time (Unix
    /// seconds), which `newest` ranks by when a document has no time of
    /// its own. An engine's store is made by one import, which writes
    /// every record at one time, while the checks of earlier nights carry
    /// records as those nights' stores wrote them: the placement ranks as
    /// the run's store does when given its time.
    pub written_at: Option<u64>,
    /// How a document is confirmed against a representative: by default
    /// the store's ([`Anchor`] of a rebuild: k = 3, beyond it by the
    /// sketches, the recipe's threshold); an exact-k job's places as a
    /// store ingested with `-k K` does (`beyond_k: false`).
    pub anchor: Option<Anchor>,
}

/// One member of a cluster of two or more: a row of the engines'
/// `clusters` output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlacedMember {
    /// The cluster's id (an ord, see [`super::Cluster::id`]).
    pub cluster: u64,
    pub size: u64,
    pub representative: String,
    pub id: String,
    /// 0 for the representative, then in the keep policy's order.
    pub rank: u32,
    /// Bits from the representative's fingerprint.
    pub distance: u32,
}

/// Removes a directory when dropped.
struct Scratch<'p>(&'p Path);

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0);
    }
}

/// The clusters of whole components of the near-copy graph, placed by
/// the store's rule (see the module docs).
///
/// `docs` are the components' documents with their records (as the run's
/// store holds them: ord, fingerprint, sketches, length, priority, time),
/// in any order; a document given twice with the same ord is taken once.
/// `lists` are the near-copy lists of those that have any (`(ord, ids)`,
/// as [`super::Admin::earlier_copies`] gives them), in any order. Every
/// id a list names must be among `docs` (the components are whole), and
/// before the document whose list it is.
///
/// `scratch` is a directory to create for the scratch store (it must not
/// exist); it is removed when the placement ends, whatever the outcome.
/// Returns every member of the clusters of two or more, by cluster id,
/// each cluster's members in rank order.
pub fn place_components(
    scratch: &Path,
    opts: &PlaceOptions,
    mut docs: Vec<(String, Record)>,
    mut lists: Vec<(u64, Vec<String>)>,
) -> Result<Vec<PlacedMember>> {
    check_components(&mut docs, &mut lists)?;
    if let Some(t) = opts.written_at {
        for (_, rec) in &mut docs {
            rec.ingested_at = t;
        }
    }
    if scratch.exists() {
        return Err(Error::Input(format!(
            "placement: the scratch directory {} exists; give a new path",
            scratch.display()
        )));
    }
    let _remove = Scratch(scratch);
    let mut db = Db::options()
        .keep(opts.keep)
        .tuning(scratch_tuning())
        .create(scratch, scratch_recipe(&opts.recipe))?;
    write_records(&db, &docs)?;
    if !opts.decisions.is_empty() {
        let mut w = db.writer()?;
        w.replay_decisions(&opts.decisions)?;
        w.commit()?;
    }
    drop(docs);
    db.rebuild_clusters_from(opts.keep, opts.anchor, lists.into_iter().map(Ok))?;
    let mut out = Vec::new();
    db.clusters().each(2, |c| {
        for (rank, m) in c.members.into_iter().enumerate() {
            out.push(PlacedMember {
                cluster: c.id,
                size: c.size,
                representative: c.representative.clone(),
                id: m.id,
                rank: u32::try_from(rank).unwrap_or(u32::MAX),
                distance: m.distance,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Sorts `docs` by ord (a document given twice taken once) and `lists`
/// by ord, and checks that they are whole components: one document per
/// ord and per id, one list per ord, each list's document and near
/// copies among `docs`.
fn check_components(
    docs: &mut Vec<(String, Record)>,
    lists: &mut Vec<(u64, Vec<String>)>,
) -> Result<()> {
    docs.sort_by(|a, b| (a.1.ord, &a.0).cmp(&(b.1.ord, &b.0)));
    docs.dedup_by(|later, earlier| later.1.ord == earlier.1.ord && later.0 == earlier.0);
    let mut ids: HashSet<&str> = HashSet::with_capacity(docs.len());
    for (i, (id, rec)) in docs.iter().enumerate() {
        if i > 0 && docs[i - 1].1.ord == rec.ord {
            return Err(Error::Input(format!(
                "placement: {:?} and {id:?} both have ord {}",
                docs[i - 1].0,
                rec.ord
            )));
        }
        if !ids.insert(id) {
            return Err(Error::Input(format!(
                "placement: {id:?} is given with two ords"
            )));
        }
    }
    lists.sort_by_key(|l| l.0);
    lists.dedup();
    if let Some(w) = lists.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::Input(format!(
            "placement: two different near-copy lists for ord {}",
            w[0].0
        )));
    }
    let by_ord: HashMap<u64, &str> = docs.iter().map(|(id, r)| (r.ord, id.as_str())).collect();
    for (ord, near) in lists.iter() {
        if !by_ord.contains_key(ord) {
            return Err(Error::Input(format!(
                "placement: a near-copy list for ord {ord}, which no document given has"
            )));
        }
        if let Some(missing) = near.iter().find(|n| !ids.contains(n.as_str())) {
            return Err(Error::Input(format!(
                "placement: {missing:?}, a near copy of {:?}, is not among the documents \
                 given: a placement takes whole components",
                by_ord.get(ord).copied().unwrap_or_default()
            )));
        }
    }
    Ok(())
}

/// How the store's rule decides a pair of documents (`a`, `b`: their
/// records, in either order): what [`super::Query::confirm`] decides for
/// the later against the earlier, and [`Anchor::matches`] for a member
/// against its representative. Given to an engine that finds its pairs
/// by other means (an exact-k join) so that it writes no rule of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairVerdict {
    /// The sketches' estimate (`None` without two sketches).
    pub similarity: Option<f64>,
    /// Whether both fine sketches refined the estimate.
    pub refined: bool,
    /// Whether the pair is a copy at the threshold: by similarity, by
    /// containment, or unconfirmed (no two sketches).
    pub confirmed: bool,
    /// The estimated share of the shorter in the longer, when the pair
    /// was confirmed by it (below the threshold).
    pub containment: Option<f64>,
}

/// [`PairVerdict`] of two records at `min_similarity`.
pub fn pair_verdict(a: &Record, b: &Record, min_similarity: f64) -> PairVerdict {
    let e = super::record_estimate(a, b, min_similarity);
    let lengths = super::lengths_later_first(a, b);
    let c = super::confirm_estimate(e, min_similarity, || Ok(lengths))
        .ok()
        .flatten();
    PairVerdict {
        similarity: e.map(|e| e.similarity),
        refined: e.is_some_and(|e| e.refined),
        confirmed: c.is_some(),
        containment: c.flatten(),
    }
}

/// A document of [`place_groups`]: its id, record and group (the
/// documents of one fingerprint, sketch, fine sketch and length, named by
/// any number the caller chooses, the same for all of them).
pub type GroupDoc = (String, Record, u64);

/// The clusters of whole components given as groups of copies and the
/// pairs of groups within k, placed as [`place_components`] places them:
/// each document's near-copy list is what a duplicate check at k finds
/// among the documents before it (its nearest
/// [`limits::CHECK_CONFIRMED`](super::limits::CHECK_CONFIRMED) confirmed
/// earlier copies, by distance then id: those of its own group, and of
/// each group paired with it whose pair the store's rule confirms,
/// [`pair_verdict`]). `pairs` name each pair of groups within k once, in
/// either order; a pair of a group with itself is ignored. A group of n
/// copies costs about 16n steps, not its n(n-1)/2 pairs.
///
/// Pairs are decided, and members anchored, by `anchor` (its threshold;
/// within its k, unless `beyond_k`), which replaces `opts.anchor`.
///
/// The exact-k Spark job (`tools/spark/simdb_spark.py`) places its
/// components with it: its clusters are then those of a store ingested
/// with `-k K`, with the same threshold, keep policy and decisions.
pub fn place_groups(
    scratch: &Path,
    opts: &PlaceOptions,
    anchor: Anchor,
    docs: Vec<GroupDoc>,
    pairs: &[(u64, u64)],
) -> Result<Vec<PlacedMember>> {
    use super::limits::CHECK_CONFIRMED;
    let min_similarity = anchor.min_similarity;
    // One record per group: its members are alike to every rule.
    let mut first: HashMap<u64, usize> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        let f = *first.entry(d.2).or_insert(i);
        let (a, b) = (&docs[f].1, &d.1);
        if a.fingerprint != b.fingerprint
            || a.sketch != b.sketch
            || a.fine != b.fine
            || a.length != b.length
        {
            return Err(Error::Input(format!(
                "placement: {:?} and {:?} are in group {} but differ in fingerprint, \
                 sketch or length",
                docs[f].0, d.0, d.2
            )));
        }
    }
    // Each group's neighbours whose pair confirms, with the distance.
    let mut near: HashMap<u64, Vec<(u64, u32)>> = HashMap::new();
    for &(x, y) in pairs {
        if x == y {
            continue;
        }
        let (Some(&i), Some(&j)) = (first.get(&x), first.get(&y)) else {
            return Err(Error::Input(format!(
                "placement: a pair of groups {x} and {y}, of which one has no document given"
            )));
        };
        let (a, b) = (&docs[i].1, &docs[j].1);
        if pair_verdict(a, b, min_similarity).confirmed {
            let d = a.fingerprint.distance(b.fingerprint);
            near.entry(x).or_default().push((y, d));
            near.entry(y).or_default().push((x, d));
        }
    }
    for v in near.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    // In ord order: each group's smallest ids placed so far (a
    // document's nearest earlier copies of a group are its smallest ids,
    // at one distance), and each document's list from them.
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by_key(|&i| (docs[i].1.ord, i));
    let mut seen: HashMap<u64, Vec<&str>> = HashMap::new();
    let mut lists: Vec<(u64, Vec<String>)> = Vec::new();
    for &i in &order {
        let (id, rec, g) = &docs[i];
        let mut cands: Vec<(u32, &str)> = Vec::new();
        let own = seen.get(g).into_iter().flatten().map(|m| (0, *m));
        cands.extend(own);
        for (h, d) in near.get(g).into_iter().flatten() {
            cands.extend(seen.get(h).into_iter().flatten().map(|m| (*d, *m)));
        }
        cands.sort_unstable();
        cands.truncate(CHECK_CONFIRMED);
        if !cands.is_empty() {
            lists.push((rec.ord, cands.iter().map(|c| c.1.to_string()).collect()));
        }
        let mine = seen.entry(*g).or_default();
        let at = mine.partition_point(|m| *m < id.as_str());
        mine.insert(at, id.as_str());
        mine.truncate(CHECK_CONFIRMED);
    }
    let docs: Vec<(String, Record)> = docs.into_iter().map(|(id, r, _)| (id, r)).collect();
    let opts = PlaceOptions {
        anchor: Some(anchor),
        ..opts.clone()
    };
    place_components(scratch, &opts, docs, lists)
}

/// A scratch store's recipe: the run's, whose sketch names the threshold.
/// The placement analyses no text, so a learned IDF table (which the
/// recipe names and a store must then hold) is left out.
fn scratch_recipe(run: &Recipe) -> Recipe {
    if run.uses_learned_idf() {
        Recipe {
            idf: Recipe::default().idf,
            ..run.clone()
        }
    } else {
        run.clone()
    }
}

/// A scratch store's memory: a small cache (it is read once, in order).
fn scratch_tuning() -> Tuning {
    Tuning {
        block_cache_bytes: 16 << 20,
        ..Tuning::default()
    }
}

/// Writes `docs` (in ord order) into the scratch store: each record and
/// its place in the ingest order, which is all a rebuild from lists reads.
fn write_records(db: &Db, docs: &[(String, Record)]) -> Result<()> {
    let store = &db.store;
    for chunk in docs.chunks(SCRATCH_BATCH) {
        let mut b = Batch::default();
        for (id, rec) in chunk {
            super::check_id(id)?;
            store.put_record(&mut b, id, rec);
            store.put_order(&mut b, rec.ord, id);
        }
        store.write(b, false)?;
    }
    let mut b = Batch::default();
    store.put_doc_count(&mut b, docs.len() as u64);
    let next = docs.last().map_or(1, |d| d.1.ord + 1);
    let (_, clock) = store.ord_state()?;
    store.put_ord_state(&mut b, next, clock);
    store.write(b, true)
}

/// The rows of [`place_components`]' output as the placement wrote them,
/// grouped by cluster: each cluster's member ids in rank order. A
/// cluster whose rows are not contiguous, or whose ranks are not 0, 1, …
/// in order, is an error.
pub(super) fn grouped(
    rows: impl IntoIterator<Item = Result<(u64, u32, String)>>,
) -> impl Iterator<Item = Result<(u64, Vec<String>)>> {
    let mut rows = rows.into_iter().peekable();
    let mut seen: HashSet<u64> = HashSet::new();
    std::iter::from_fn(move || {
        let (cid, rank, id) = match rows.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        if !seen.insert(cid) {
            return Some(Err(Error::Input(format!(
                "clusters: the members of cluster {cid} are not together: give each cluster's \
                 rows in one run, as a placement writes them"
            ))));
        }
        let mut members = vec![(rank, id)];
        while let Some(Ok((next, _, _))) = rows.peek() {
            if *next != cid {
                break;
            }
            match rows.next() {
                Some(Ok((_, r, id))) => members.push((r, id)),
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            }
        }
        if let Some(Err(_)) = rows.peek() {
            if let Some(Err(e)) = rows.next() {
                return Some(Err(e));
            }
        }
        if members
            .iter()
            .enumerate()
            .any(|(i, (r, _))| *r as usize != i)
        {
            return Some(Err(Error::Input(format!(
                "clusters: the ranks of cluster {cid} are not 0, 1, … in order"
            ))));
        }
        Some(Ok((cid, members.into_iter().map(|m| m.1).collect())))
    })
}

/// Members of the run's store written per batch by [`put_clusters`].
const PUT_BATCH: usize = 10_000;

/// The clusters family of `db` replaced by the clusters of `rows` (cluster
/// id, rank, member id: [`place_components`]' output, each cluster's rows
/// together and in rank order), ranked under `keep`, which becomes the
/// store's policy. A member's rank is its record's under `keep`: rows
/// whose order disagrees (placed under another policy, or from other
/// records), a member the store does not hold or one given in two
/// clusters stop it with [`Error::Input`], leaving the store's rebuild
/// marker (as an interrupted rebuild does: the same call, or
/// `set_keep_policy`, redoes it). Returns the number of clusters.
pub(super) fn put_clusters(
    db: &Db,
    keep: KeepPolicy,
    rows: impl IntoIterator<Item = Result<(u64, u32, String)>>,
) -> Result<u64> {
    use crate::store::schema::{self, Rank};
    let store = &db.store;
    let mut b = Batch::default();
    store.clear_clusters(&mut b);
    store.put_meta_in(
        &mut b,
        crate::store::CLUSTERS_MARKER_KEY,
        keep.name().as_bytes(),
    );
    store.write(b, true)?;
    let mut clusters = 0u64;
    let mut b = Batch::default();
    let mut held = 0usize;
    // Members placed in this batch (earlier batches' are in the store).
    let mut placed: HashSet<String> = HashSet::new();
    for group in grouped(rows) {
        let (cid, members) = group?;
        if members.len() < 2 {
            return Err(Error::Input(format!(
                "clusters: cluster {cid} has one member; a cluster holds two or more"
            )));
        }
        let mut last: Option<Rank> = None;
        for id in &members {
            let Some(rec) = store.get(id)? else {
                return Err(Error::Input(format!(
                    "clusters: {id:?}, a member of cluster {cid}, is not in the store"
                )));
            };
            if placed.contains(id) || store.cluster_entry(id)?.is_some() {
                return Err(Error::Input(format!(
                    "clusters: {id:?} is a member of two clusters (the second is {cid})"
                )));
            }
            let rank = Rank::of(&rec, keep);
            if last.is_some_and(|l| rank <= l) {
                return Err(Error::Input(format!(
                    "clusters: the members of cluster {cid} are not in the order the keep \
                     policy {} ranks them ({id:?}); were they placed under another policy?",
                    keep.name()
                )));
            }
            last = Some(rank);
            let (k, v) = schema::membership_entry(id, cid);
            store.put_cluster_raw(&mut b, &k, Some(&v));
            let (k, v) = schema::member_entry(cid, rank, id);
            store.put_cluster_raw(&mut b, &k, Some(&v));
            placed.insert(id.clone());
        }
        let (k, v) = schema::size_entry(cid, members.len() as u64);
        store.put_cluster_raw(&mut b, &k, Some(&v));
        clusters += 1;
        held += members.len();
        if held >= PUT_BATCH {
            store.write(std::mem::take(&mut b), false)?;
            placed.clear();
            held = 0;
        }
    }
    let (k, v) = schema::keep_policy_entry(keep);
    store.put_meta_in(&mut b, k, v);
    store.delete_meta_in(&mut b, crate::store::CLUSTERS_MARKER_KEY);
    store.write(b, true)?;
    Ok(clusters)
}
