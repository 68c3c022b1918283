//! What a review of the clusters reads (docs/review.md): pages of clusters
//! in id, size, newest-member or farthest-member order, optionally of one
//! source, and one cluster's members a page at a time, each with why it
//! is there.
//!
//! Every call reads at one snapshot. A page's cursor is an opaque string
//! the next call takes back (`after`); cursors stay valid across writes,
//! which may move a cluster past or before them as writes do.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::clusters::{no_members, Anchor, Cluster, Clusters, Member};
use super::Db;
use crate::error::{Error, Result};
use crate::store::schema::Rank;
use crate::store::{self, Record};

/// The order of a page of clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterOrder {
    /// By cluster id (the order clusters formed in, roughly).
    Id,
    /// Largest first, then by id.
    Size,
    /// By newest member (the one written last), latest first: what the
    /// last ingest formed or grew comes first.
    Newest,
    /// By most distant member (the most bits from its representative),
    /// farthest first, then by id: the clusters to look at first.
    Distant,
}

impl std::str::FromStr for ClusterOrder {
    type Err = Error;

    /// `size`, `id`, `newest` or `distant`, as the API and Python name
    /// them.
    fn from_str(s: &str) -> Result<ClusterOrder> {
        match s {
            "size" => Ok(ClusterOrder::Size),
            "id" => Ok(ClusterOrder::Id),
            "newest" => Ok(ClusterOrder::Newest),
            "distant" => Ok(ClusterOrder::Distant),
            o => Err(Error::Input(format!(
                "sort {o:?}: \"size\", \"id\", \"newest\" or \"distant\""
            ))),
        }
    }
}

/// A page of clusters ([`Clusters::list`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClusterList {
    pub clusters: Vec<Listed>,
    /// The cursor of the next page; `None` at the end.
    pub next: Option<String>,
}

/// One cluster of a [`ClusterList`]: its first members, and its
/// representative's source.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listed {
    #[serde(flatten)]
    pub cluster: Cluster,
    /// The representative's source.
    pub source: String,
}

/// How a member was confirmed against its representative, by the store's
/// default check applied to the pair now ([`super::Anchor::matches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmedBy {
    /// It is the representative.
    Representative,
    /// Its sketch's similarity with the representative's reaches the
    /// store's threshold.
    Similarity,
    /// The shorter of the two is contained in the longer (similarity at
    /// least the containment floor).
    Containment,
    /// Without two sketches, within k bits.
    Fingerprint,
    /// Today's check does not confirm the pair (it joined under another
    /// threshold, or as a copy of a member that has since left).
    Unconfirmed,
}

/// Why a member is in its cluster.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Why {
    /// Bits from the representative's fingerprint.
    pub distance: u32,
    /// The sketches' estimated Jaccard similarity, with two sketches.
    pub similarity: Option<f64>,
    /// The estimated share of the shorter of the two inside the longer,
    /// with two sketches and both lengths.
    pub containment: Option<f64>,
    pub confirmed_by: ConfirmedBy,
}

/// A member with what a review shows of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Reviewed {
    #[serde(flatten)]
    pub member: Member,
    pub source: String,
    /// Its content's length in bytes (0: stored as a bare fingerprint).
    pub length: u64,
    pub why: Why,
}

/// Where two stored documents' kept texts differ ([`Clusters::diff`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TextDiff {
    pub a: String,
    pub b: String,
    /// The spans of [`crate::diff::diff`] of the texts' first
    /// [`crate::diff::MAX_BYTES`] each: `same` and `removed` are that of
    /// `a`'s text, `same` and `added` that of `b`'s.
    pub spans: Vec<crate::diff::Span>,
    /// The length of `a`'s whole text, in bytes: more than the spans
    /// hold when it is longer than [`crate::diff::MAX_BYTES`].
    pub a_bytes: u64,
    /// The length of `b`'s whole text, in bytes.
    pub b_bytes: u64,
}

/// A page of one cluster's members ([`Clusters::members`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MemberPage {
    /// The cluster's id (a document alone: its `ord`, as
    /// [`Clusters::of`] gives it).
    pub id: u64,
    pub size: u64,
    pub representative: Reviewed,
    /// The members after the cursor, in rank order (the representative
    /// first on the first page).
    pub members: Vec<Reviewed>,
    /// The cursor of the next page; `None` at the end.
    pub next: Option<String>,
}

fn bad_cursor(c: &str) -> Error {
    Error::Input(format!(
        "cursor {c:?} is not one this listing gave (pass back its \"next\")"
    ))
}

/// A member cursor: the rank of the last member of the page, as 32 hex
/// digits.
fn rank_cursor(r: Rank) -> String {
    format!("{:016x}{:016x}", r.priority_key, r.ord)
}

fn parse_rank_cursor(c: &str) -> Result<Rank> {
    let ok = c.len() == 32 && c.bytes().all(|b| b.is_ascii_hexdigit());
    let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad_cursor(c));
    match ok {
        true => Ok(Rank {
            priority_key: hex(&c[..16])?,
            ord: hex(&c[16..])?,
        }),
        false => Err(bad_cursor(c)),
    }
}

/// A cluster cursor: the last cluster's id (`Id`), or its size and id
/// (`Size`), as decimal numbers.
/// The cursor after a cluster of id `id` whose key in the order is `key`
/// (its size, its newest member's ord, its farthest member's bits).
fn cluster_cursor(order: ClusterOrder, key: u64, id: u64) -> String {
    match order {
        ClusterOrder::Id => id.to_string(),
        ClusterOrder::Newest => key.to_string(),
        ClusterOrder::Size | ClusterOrder::Distant => format!("{key}-{id}"),
    }
}

/// The (key, id) a cluster cursor names (see [`cluster_cursor`]); the
/// part an order's cursor does not hold is 0.
fn parse_cluster_cursor(order: ClusterOrder, c: &str) -> Result<(u64, u64)> {
    let num = |s: &str| s.parse::<u64>().map_err(|_| bad_cursor(c));
    match (order, c.split_once('-')) {
        (ClusterOrder::Id, None) => Ok((0, num(c)?)),
        (ClusterOrder::Newest, None) => Ok((num(c)?, 0)),
        (ClusterOrder::Size | ClusterOrder::Distant, Some((s, i))) => Ok((num(s)?, num(i)?)),
        _ => Err(bad_cursor(c)),
    }
}

impl Clusters<'_> {
    /// A page of at most `n` (>= 1) clusters of at least `min_size` (>= 2)
    /// documents in `order`, after cursor `after` (from the first:
    /// `None`), each listing its first `max_members` members; with
    /// `source`, only clusters whose representative's source begins with
    /// it (an input file's name: `ingest` records `FILE:LINE`). All read
    /// at one snapshot.
    ///
    /// With [`Clusters::until`], a page in `Size` or `Distant` order stops
    /// between two clusters of its scan once asked ([`Error::Interrupted`]).
    ///
    /// Cost: `Id` order reads clusters from the cursor on until the page
    /// is full; `Size` order scans every cluster's size entry (one key
    /// each) for the page's; `Newest` walks the ingest order back from the
    /// cursor (a key read for each document written since the page's
    /// clusters' newest members, and each cluster's member keys once);
    /// `Distant` reads every member of every cluster (a record each), so
    /// its pages cost what a pass over the clustered documents costs. A
    /// `source` reads each candidate cluster's representative, so a rare
    /// source reads many.
    pub fn list(
        &self,
        order: ClusterOrder,
        after: Option<&str>,
        n: usize,
        min_size: u64,
        max_members: usize,
        source: Option<&str>,
    ) -> Result<ClusterList> {
        let db = self.db();
        at_least_one(n)?;
        let min_size = min_size.max(2);
        let after = after.map(|c| parse_cluster_cursor(order, c)).transpose()?;
        let at = db.store.snapshot();
        // The page: each cluster with its source and its key in the
        // order, offered in order until the page is full and one more is
        // found. The representative's source first: a cluster of another
        // source costs one record read, not its members'.
        let mut out: Vec<(Cluster, String, u64)> = Vec::new();
        let mut more = false;
        let mut offer = |cid: u64, key: u64| -> Result<bool> {
            if out.len() == n {
                more = true;
                return Ok(false);
            }
            let (_, rep) = representative(db, &at, cid)?;
            if source.is_none_or(|s| rep.source.starts_with(s)) {
                let c = db.cluster_at_capped(&at, cid, max_members.max(1))?;
                out.push((c, rep.source, key));
            }
            Ok(true)
        };
        match order {
            ClusterOrder::Id => {
                let from = after.map_or(0, |(_, id)| id.saturating_add(1));
                db.store.for_each_cluster_from_at(&at, from, |cid, size| {
                    if size < min_size {
                        return Ok(true);
                    }
                    offer(cid, size)
                })?;
            }
            ClusterOrder::Size | ClusterOrder::Distant => {
                largest_first(db, &at, order, after, min_size, self.go_on(), &mut offer)?
            }
            ClusterOrder::Newest => newest_first(db, &at, after, min_size, &mut offer)?,
        }
        let next = match (more, out.last()) {
            (true, Some((c, _, key))) => Some(cluster_cursor(order, *key, c.id)),
            _ => None,
        };
        Ok(ClusterList {
            clusters: out
                .into_iter()
                .map(|(mut cluster, source, key)| {
                    if order == ClusterOrder::Distant {
                        // Of every member, not only those listed.
                        cluster.max_distance = u32::try_from(key).unwrap_or(u32::MAX);
                    }
                    Listed { cluster, source }
                })
                .collect(),
            next,
        })
    }

    /// Where the kept texts of stored documents `a` and `b` differ (both
    /// read at one snapshot): a character diff for CJK, a word diff for
    /// Latin, of the first [`crate::diff::MAX_BYTES`] of each text (a
    /// human reads no more side by side; the lengths say what is left),
    /// cut at [`crate::diff::DEADLINE`]. [`Error::NotFound`] names
    /// a document that is not stored; [`Error::Input`] says the store keeps
    /// no texts, or which document has none (written from features or a
    /// fingerprint).
    pub fn diff(&self, a: &str, b: &str) -> Result<TextDiff> {
        let store = &self.db().store;
        if !store.keeps_texts() {
            return Err(Error::Input(
                "this store keeps no texts: it was created without `simdb init --keep-texts`"
                    .into(),
            ));
        }
        let at = store.snapshot();
        let text = |id: &str| -> Result<String> {
            if store.get_at(&at, id)?.is_none() {
                return Err(Error::NotFound { id: id.to_string() });
            }
            store.text_at(&at, id)?.ok_or_else(|| {
                Error::Input(format!(
                    "document {id:?} has no kept text (it was written from features or a fingerprint)"
                ))
            })
        };
        let (ta, tb) = (text(a)?, text(b)?);
        Ok(TextDiff {
            a: a.to_string(),
            b: b.to_string(),
            spans: crate::diff::diff(crate::diff::head(&ta), crate::diff::head(&tb)),
            a_bytes: ta.len() as u64,
            b_bytes: tb.len() as u64,
        })
    }

    /// The cluster of stored document `id` (`None` if it is not stored):
    /// its representative and at most `n` (>= 1) of its members after cursor
    /// `after` (from the first, the representative: `None`), each with
    /// why it is there. Reads the page's records and the member keys up
    /// to it, whatever the cluster's size.
    pub fn members(&self, id: &str, after: Option<&str>, n: usize) -> Result<Option<MemberPage>> {
        let db = self.db();
        at_least_one(n)?;
        let after = after.map(parse_rank_cursor).transpose()?;
        let at = db.store.snapshot();
        let Some(rec) = db.store.get_at(&at, id)? else {
            return Ok(None);
        };
        let anchor = db.default_anchor();
        let Some(cid) = db.store.cluster_entry_at(&at, id)? else {
            // Alone: a cluster of one, as `Clusters::of` lists it.
            let rep = reviewed(&anchor, id, &rec, None);
            let members = match after {
                None => vec![rep.clone()],
                Some(_) => Vec::new(),
            };
            return Ok(Some(MemberPage {
                id: rec.ord,
                size: 1,
                representative: rep,
                members,
                next: None,
            }));
        };
        let size = db.store.cluster_size_at(&at, cid)?.unwrap_or(0);
        let (rep_id, rep_rec) = representative(db, &at, cid)?;
        let representative = reviewed(&anchor, &rep_id, &rep_rec, None);
        // One more than the page: whether there is a next one.
        let mut page = db
            .store
            .members_after_at(&at, cid, after, n.saturating_add(1))?;
        let more = page.len() > n;
        page.truncate(n);
        let mut members = Vec::with_capacity(page.len());
        for (rank, mid) in &page {
            members.push(match *mid == rep_id {
                true => representative.clone(),
                false => {
                    let r = db.member_record(&at, cid, *rank, mid)?;
                    reviewed(&anchor, mid, &r, Some(&rep_rec))
                }
            });
        }
        Ok(Some(MemberPage {
            id: cid,
            size,
            representative,
            members,
            next: match (more, page.last()) {
                (true, Some((r, _))) => Some(rank_cursor(*r)),
                _ => None,
            },
        }))
    }
}

/// The clusters by size or by farthest member (`order`), largest first,
/// then by id, after cursor `after` (the key and id of the last cluster of
/// the page before), each offered to `offer` with its key until it
/// returns `false`: every cluster's key, then the page's in order.
fn largest_first(
    db: &Db,
    at: &store::Snapshot<'_>,
    order: ClusterOrder,
    after: Option<(u64, u64)>,
    min_size: u64,
    go_on: super::GoOn<'_>,
    offer: &mut dyn FnMut(u64, u64) -> Result<bool>,
) -> Result<()> {
    let past = |key: u64, cid: u64| match after {
        None => true,
        Some((k, i)) => (Reverse(key), cid) > (Reverse(k), i),
    };
    let mut all: BinaryHeap<(u64, Reverse<u64>)> = BinaryHeap::new();
    db.store.for_each_cluster_from_at(at, 0, |cid, size| {
        go_on.check()?;
        if size >= min_size {
            let key = match order {
                ClusterOrder::Distant => {
                    u64::from(db.cluster_at_capped(at, cid, usize::MAX)?.max_distance)
                }
                _ => size,
            };
            if past(key, cid) {
                all.push((key, Reverse(cid)));
            }
        }
        Ok(true)
    })?;
    while let Some((key, Reverse(cid))) = all.pop() {
        if !offer(cid, key)? {
            break;
        }
    }
    Ok(())
}

/// The clusters by newest member, latest first, after cursor `after`
/// (the newest member's ord of the last cluster of the page before),
/// each offered to `offer` with that ord until it returns `false`: a walk
/// back through the ingest order, where a cluster is met first at its
/// newest member (one met first at another was on an earlier page).
fn newest_first(
    db: &Db,
    at: &store::Snapshot<'_>,
    after: Option<(u64, u64)>,
    min_size: u64,
    offer: &mut dyn FnMut(u64, u64) -> Result<bool>,
) -> Result<()> {
    let from = match after {
        None => None,
        Some((0, _)) => return Ok(()),
        Some((ord, _)) => Some(ord - 1),
    };
    let mut seen = std::collections::HashSet::new();
    db.store.for_each_in_order_rev_at(at, from, |ord, id| {
        let Some(cid) = db.store.cluster_entry_at(at, id)? else {
            return Ok(true);
        };
        if !seen.insert(cid) {
            return Ok(true);
        }
        if db.store.cluster_size_at(at, cid)?.unwrap_or(0) < min_size
            || db.store.newest_member_at(at, cid)? != ord
        {
            return Ok(true);
        }
        offer(cid, ord)
    })
}

/// The representative of cluster `cid` at `at` (its first member): its
/// id and record.
fn representative(db: &Db, at: &store::Snapshot<'_>, cid: u64) -> Result<(String, Record)> {
    let first = db.store.members_after_at(at, cid, None, 1)?;
    let (rank, id) = first.into_iter().next().ok_or_else(|| no_members(cid))?;
    let rec = db.member_record(at, cid, rank, &id)?;
    Ok((id, rec))
}

/// A page of none is refused (it could not say where the next begins).
fn at_least_one(n: usize) -> Result<()> {
    match n {
        0 => Err(Error::Input("a page of 0: ask for at least 1".into())),
        _ => Ok(()),
    }
}

/// Member `id` (record `rec`) with why it is in its cluster: against the
/// representative's record `rep`, or `None` when it is the representative.
fn reviewed(anchor: &Anchor, id: &str, rec: &Record, rep: Option<&Record>) -> Reviewed {
    let why = match rep {
        None => Why {
            distance: 0,
            similarity: None,
            containment: None,
            confirmed_by: ConfirmedBy::Representative,
        },
        Some(rep) => why(anchor, rec, rep),
    };
    Reviewed {
        member: Member {
            id: id.to_string(),
            distance: why.distance,
            priority: rec.priority.map(|p| p.value()),
            ingested_at: rec.ingested_at,
            dated: rec.dated,
            kept: rec.kept,
        },
        source: rec.source.clone(),
        length: rec.length,
        why,
    }
}

/// How `doc` compares with the representative `rep` under the store's
/// default check, `anchor`.
fn why(anchor: &Anchor, doc: &Record, rep: &Record) -> Why {
    let distance = doc.fingerprint.distance(rep.fingerprint);
    let similarity = doc.sketch.zip(rep.sketch).map(|(a, b)| a.similarity(&b));
    // The estimate shown whichever confirmed the pair.
    let containment = similarity
        .filter(|_| doc.length > 0 && rep.length > 0)
        .and_then(|s| crate::fingerprint::containment(s, doc.length, rep.length));
    let confirmed_by = match anchor.matches(doc, rep) {
        None => ConfirmedBy::Unconfirmed,
        Some(m) if m.containment.is_some() => ConfirmedBy::Containment,
        Some(m) if m.similarity.is_some() => ConfirmedBy::Similarity,
        Some(_) => ConfirmedBy::Fingerprint,
    };
    Why {
        distance,
        similarity,
        containment,
        confirmed_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_others() {
        let r = Rank {
            priority_key: 7,
            ord: u64::MAX,
        };
        assert_eq!(parse_rank_cursor(&rank_cursor(r)).unwrap(), r);
        for bad in ["", "12", &"g".repeat(32), &"0".repeat(33)] {
            assert!(parse_rank_cursor(bad).is_err(), "{bad:?}");
        }
        for (o, c) in [(ClusterOrder::Id, "17"), (ClusterOrder::Size, "40-17")] {
            let (s, i) = parse_cluster_cursor(o, c).unwrap();
            assert_eq!(cluster_cursor(o, s, i), c);
        }
        assert!(parse_cluster_cursor(ClusterOrder::Id, "4-1").is_err());
        assert!(parse_cluster_cursor(ClusterOrder::Size, "41").is_err());
        assert!(parse_cluster_cursor(ClusterOrder::Size, "x-1").is_err());
    }
}
