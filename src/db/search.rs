//! The candidate search, written once: queries ([`Db::find`],
//! [`Db::find_many`]), a write's duplicate check ([`Writer::check`]),
//! the cluster rebuild ([`Db::rebuild_clusters`]: `verify --repair`,
//! `migrate`) and `simdb dedup --db` ([`Db::first_duplicate`]) all walk
//! their candidates here, and differ only in their [`Rule`]: how many
//! confirmed hits they want, how many candidates they look at, and in
//! which order the stages run.
//!
//! A search walks its candidates nearest first (then by id), in stages:
//!
//! 1. the documents of the query's own fingerprint (from `refs` alone:
//!    when they are enough, no bucket is read);
//! 2. the exact plan's buckets at k, for distance 1..=k (every such
//!    fingerprint is there);
//! 3. for a confidence-ranked plan, what lies farther: in those same
//!    buckets (set aside by stage 2, which applies the whole plan's rule),
//!    in the plan's other buckets and, for a query, in the band buckets
//!    ([`crate::index::bands`]);
//! 4. for a duplicate check ([`Rule::bands_last`]), the band buckets,
//!    only when the plan confirmed nothing: a flood of near copies, which
//!    the plan finds, does not scan the bands' hot buckets for each copy.
//!
//! The part buckets ([`crate::index::parts`]) are read with the band
//! buckets, by a query that has parts: the fingerprints they name join the
//! same stage at any distance.
//!
//! Each candidate is confirmed by the sketch ([`Query::confirm`]). A
//! search stops at [`Rule::confirm`] confirmed hits, [`Rule::examine`]
//! candidates looked at, or [`limits::QUERY_REJECTED`] rejected by the
//! sketch, and says whether it looked at every candidate.
//!
//! Where it reads: the store at one snapshot, what a chunk read
//! beforehand ([`Prefetch`]: a cache of the same reads, which changes no
//! answer), and a writer's pending batch, merged in order.
//!
//! [`Db::find`]: super::Db::find
//! [`Db::find_many`]: super::Db::find_many
//! [`Db::first_duplicate`]: super::Db::first_duplicate
//! [`Db::rebuild_clusters`]: super::Db::rebuild_clusters
//! [`Writer::check`]: super::Writer

use std::cell::Cell;
use std::collections::HashMap;

use super::{limits, Query};
use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::index::{self, Hit, MemIndex};
use crate::store::{self, Flow, Prefetch, Record, Snapshot, Store};

/// When a search stops and in which order its stages run: the one thing
/// its callers choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    /// Confirmed hits wanted.
    pub confirm: usize,
    /// Candidates looked at, at most.
    pub examine: usize,
    /// Beyond k only when nothing within k was confirmed (a duplicate
    /// check: the duplicates within k are then all of the document's).
    pub within_k_first: bool,
    /// The band buckets only once the plan confirmed nothing, as a stage
    /// of their own; otherwise they are walked with the plan's beyond-k
    /// candidates, in one walk.
    pub bands_last: bool,
}

impl Rule {
    /// A query's: up to `limit` confirmed hits, every candidate looked at
    /// if need be.
    pub(crate) fn query(limit: usize) -> Rule {
        Rule {
            confirm: limit,
            examine: usize::MAX,
            within_k_first: false,
            bands_last: false,
        }
    }

    /// A write's duplicate check, finding `confirm` duplicates: at most
    /// [`limits::CHECK_EXAMINED`] candidates, within k first, the bands
    /// last. Ingest, `dedup` (with and without `--db`) and the cluster
    /// rebuild all check with it.
    pub(crate) fn duplicates(confirm: usize) -> Rule {
        Rule {
            confirm,
            examine: limits::CHECK_EXAMINED,
            within_k_first: true,
            bands_last: true,
        }
    }
}

/// What a search found.
#[derive(Debug, Default)]
pub(crate) struct Check {
    /// Confirmed hits, nearest first (then by id).
    pub hits: Vec<Hit>,
    /// Whether every candidate was looked at (so `hits` is all of them).
    pub complete: bool,
}

/// A writer's pending batch, which its searches see: the records of the
/// ids it touched (`None`: deleted) and their fingerprints.
#[derive(Clone, Copy)]
pub(crate) struct Pending<'s> {
    pub overlay: &'s HashMap<String, Option<Record>>,
    pub mem: &'s MemIndex,
}

/// How a search reads buckets that were not read beforehand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reads {
    /// On this thread, hot buckets from the writer's memory (the writer's
    /// view, the latest state; ingest keeps the pool busy fingerprinting
    /// meanwhile).
    Writer,
    /// Half of the families on the rayon pool (a query's).
    Query,
    /// None: the store holds no document (an engine's checker, whose
    /// scratch store is empty and whose earlier documents are all
    /// pending), so its buckets are not read at all.
    Overlay,
}

/// Where a search reads (see the module).
pub(crate) struct Searcher<'s, 'a> {
    pub store: &'s Store,
    pub at: &'s Snapshot<'a>,
    pub prefetch: Option<&'s Prefetch>,
    pub pending: Option<Pending<'s>>,
    pub reads: Reads,
    /// A cluster rebuild's view of the store as ingest saw it, before the
    /// document of this ord: the band-only candidates are chosen among
    /// the fingerprints that have a document before it (later ones would
    /// take the nearest-16 places that ingest gave to earlier ones).
    pub before: Option<u64>,
}

impl Searcher<'_, '_> {
    /// The pending record of `id`: `Some(None)` if the batch deleted it,
    /// `None` if the batch did not touch it.
    fn pending(&self, id: &str) -> Option<&Option<Record>> {
        self.pending.and_then(|p| p.overlay.get(id))
    }

    /// The fingerprints part probe `probe` names ([`index::parts`]): those
    /// of each part bucket that holds at most the probe's cap, counting
    /// the store's and the pending batch's together. A rebuild's view
    /// counts only the fingerprints that have a document before its ord
    /// (what the bucket held when that document was written), among the
    /// first [`REBUILD_PART_READ`] of a bucket. Sorted, distinct; with
    /// whether each is the store's (else only the batch's).
    fn part_named(&self, probe: &index::parts::PartProbe) -> Result<Vec<(Fingerprint, bool)>> {
        let max = match self.before {
            Some(_) => REBUILD_PART_READ.max(probe.max_fingerprints),
            None => probe.max_fingerprints,
        };
        let stored = match self.reads {
            Reads::Overlay => vec![Vec::new(); probe.parts.len()],
            _ => self.store.part_buckets(self.at, &probe.parts, max)?,
        };
        let mut out = Vec::new();
        for (p, mut held) in probe.parts.iter().zip(stored) {
            if let Some(ord) = self.before {
                if held.len() > max {
                    continue;
                }
                let mut earlier = Vec::new();
                for f in held {
                    if self.has_earlier(f, ord)? {
                        earlier.push(f);
                    }
                    if !probe.names(earlier.len()) {
                        break; // boilerplate then too: names none
                    }
                }
                held = earlier;
            }
            if let Some(b) = self.pending {
                // The batch's index holds the entries of the fingerprints
                // it wrote (their first documents, stored or not).
                let truncated = held.len() > max;
                held.retain(|f| !b.mem.holds_fp(*f));
                if truncated && probe.names(held.len()) {
                    let wide = max.saturating_add(b.mem.len()).saturating_add(1);
                    held = self.store.part_buckets(self.at, &[*p], wide)?.remove(0);
                    held.retain(|f| !b.mem.holds_fp(*f));
                }
            }
            let mut both: Vec<(Fingerprint, bool)> = held.into_iter().map(|f| (f, true)).collect();
            if let Some(b) = self.pending {
                // A batch's boilerplate part (a template's) holds more
                // than the probe names: its bucket is not read.
                if !probe.names(b.mem.part_bucket_len(*p)) {
                    continue;
                }
                // A fingerprint of the batch may have stored documents too
                // (its stored entries gave way above): the store's walk
                // looks for them.
                for f in b.mem.part_bucket(*p) {
                    if !both.iter().any(|e| e.0 == f) {
                        both.push((f, self.stored_holder(f)));
                    }
                }
            }
            if probe.names(both.len()) {
                out.extend(both);
            }
        }
        out.sort_unstable();
        // A fingerprint both stored and pending sorts stored last.
        out.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 |= later.1;
            }
            same
        });
        Ok(out)
    }

    /// Whether the batch's index holds a stored document of `f` (its first,
    /// which names its buckets: see `Writer::put_near`).
    fn stored_holder(&self, f: Fingerprint) -> bool {
        self.pending
            .is_some_and(|b| b.mem.exact(f).any(|(id, _)| !b.overlay.contains_key(id)))
    }

    /// Whether fingerprint `f` has a document of ord below `before` (read
    /// at the search's view).
    fn has_earlier(&self, f: Fingerprint, before: u64) -> Result<bool> {
        let mut earlier = false;
        self.store
            .resolve(self.at, f, vec![f], None, &|_| false, |h| {
                earlier = self.store.checked_record(self.at, f, &h.id)?.ord < before;
                Ok(if earlier { Flow::Stop } else { Flow::Continue })
            })?;
        Ok(earlier)
    }

    /// The candidates of the buckets of `part` (and of the band probe's,
    /// with `probe`): what the plan's rule accepts, and what the probe
    /// adds ([`index::bands::BandProbe::band_only`] over the store and the
    /// batch together; the store's go to its walk, the batch's filter its
    /// own). Returns (the store's, the band-only ones chosen).
    fn candidates(
        &self,
        fp: Fingerprint,
        plan: &index::ProbePlan,
        prefetched: Option<&store::Prefetched>,
        part: &index::ProbePlan,
        probe: Option<&index::bands::BandProbe>,
    ) -> Result<(Vec<Fingerprint>, Vec<Fingerprint>)> {
        let (mut found, banded) = match (prefetched, self.reads) {
            (Some(p), _) => p.candidates(part, probe.is_some()),
            (None, Reads::Writer) => self.store.writer_candidates(self.at, fp, part, probe)?,
            (None, Reads::Overlay) => (Vec::new(), Vec::new()),
            (None, Reads::Query) => {
                // A rebuild's view chooses the band-only candidates itself,
                // among the earlier documents' (below): all of them here.
                let wide = probe.map(|p| index::bands::BandProbe {
                    max_candidates: usize::MAX,
                    ..*p
                });
                let probe = if self.before.is_some() {
                    wide.as_ref()
                } else {
                    probe
                };
                self.store
                    .candidates_banded(self.at, fp, part, probe, true)?
            }
        };
        // The batch's index holds the band entries of the fingerprints it
        // wrote (their first documents, stored or not).
        let mut banded = banded;
        if let Some(b) = self.pending {
            banded.retain(|f| !b.mem.holds_fp(*f));
        }
        // (A fingerprint among the nearest few of both sides is among the
        // nearest few of its own side: each side is cut first.)
        let mut chosen: Vec<Fingerprint> = Vec::new();
        if let Some(p) = probe {
            let banded = match self.before {
                Some(ord) => self.earlier_band_only(fp, plan, p, banded, ord)?,
                None => banded,
            };
            let stored = p.band_only(fp, plan, banded);
            let mut all = match self.pending {
                Some(b) => p.band_only(fp, plan, b.mem.band_candidates(fp, p)),
                None => Vec::new(),
            };
            all.extend_from_slice(&stored);
            chosen = p.band_only(fp, plan, all);
            // The batch's fingerprints may have stored documents too (their
            // stored entries gave way above): the store's walk looks.
            found.extend(
                chosen
                    .iter()
                    .filter(|f| stored.contains(f) || self.stored_holder(**f)),
            );
        }
        Ok((found, chosen))
    }

    /// The band-only candidates among `banded` that have a document before
    /// ord `before`, nearest first, as many as the probe keeps: what the
    /// probe chose from when the document of that ord was written.
    fn earlier_band_only(
        &self,
        fp: Fingerprint,
        plan: &index::ProbePlan,
        p: &index::bands::BandProbe,
        banded: Vec<Fingerprint>,
        before: u64,
    ) -> Result<Vec<Fingerprint>> {
        let mut cands: Vec<Fingerprint> = banded
            .into_iter()
            .filter(|f| !plan.accepts(fp, *f))
            .collect();
        cands.sort_unstable_by_key(|f| (f.distance(fp), *f));
        cands.dedup();
        let mut out = Vec::new();
        for f in cands {
            if out.len() >= p.max_candidates {
                break;
            }
            if self.has_earlier(f, before)? {
                out.push(f);
            }
        }
        Ok(out)
    }

    /// Searches for `q` under `rule`. Each confirmed candidate is offered
    /// to `admit`, which says whether it is a hit (a rebuild takes only
    /// the documents ingested before the one it checks); one not admitted
    /// still counts as looked at.
    pub(crate) fn run(
        &self,
        q: &Query,
        rule: Rule,
        admit: &mut dyn FnMut(&Hit) -> Result<bool>,
    ) -> Result<Check> {
        let (at, fp) = (self.at, q.fingerprint);
        let mut out = Check::default();
        if rule.confirm == 0 {
            out.complete = true;
            return Ok(out);
        }
        let examined = Cell::new(0usize);
        // Candidates the sketch rejected.
        let mut rejected = 0usize;
        // A candidate's length, ord and sketches, for containment and a
        // refined estimate: pending, or stored.
        let length = |h: &Hit| -> Result<super::Candidate> {
            match self.pending(&h.id) {
                Some(Some(r)) => Ok(super::Candidate::of(r)),
                _ => {
                    let r = self.store.checked_record(at, h.fingerprint, &h.id)?;
                    Ok(super::Candidate::of(&r))
                }
            }
        };
        // Whether another candidate is wanted; then takes it.
        let mut take = |mut h: Hit, out: &mut Check| -> Result<Flow> {
            if out.hits.len() >= rule.confirm
                || examined.get() >= rule.examine
                || rejected >= limits::QUERY_REJECTED
            {
                return Ok(Flow::Stop);
            }
            examined.set(examined.get() + 1);
            if !q.confirm(&mut h, length)? {
                rejected += 1;
            } else if admit(&h)? {
                out.hits.push(h);
            }
            Ok(Flow::Continue)
        };
        // An id the batch touched is answered from the batch.
        let skip = |id: &str| self.pending(id).is_some() || q.exclude.as_deref() == Some(id);
        let pending_hit = |(id, f): (&str, Fingerprint)| -> Option<Hit> {
            if q.exclude.as_deref() == Some(id) {
                return None;
            }
            let Some(Some(r)) = self.pending(id) else {
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
        let key = q.plan_key();
        let (plan, band_probe) = (&key.plan, key.probe);
        let part_probe = q.part_probe();
        let pre = self.prefetch;
        let prefetched = pre.and_then(|p| p.check(&key));
        let mem = self.pending.map(|p| p.mem);
        // Stage 1, distance 0: the store's documents of `fp` merged with
        // the batch's.
        let mut pending = mem
            .into_iter()
            .flat_map(|m| m.exact(fp))
            .filter_map(pending_hit)
            .peekable();
        let mut done = self
            .store
            .resolve_prefetched(at, fp, None, sketch, &skip, pre, |h| {
                merged(&mut pending, h, &mut out, &mut take)
            })?
            && drain(&mut pending, &mut out, &mut take)?;
        let exact = index::ProbePlan::exact(fp, plan.k);
        let mut far_here: Vec<Fingerprint> = Vec::new();
        let bands_last = rule.bands_last && band_probe.is_some();
        // Stages 2, 3 and 4 (n = 0, 1, 2).
        for n in 0..3 {
            let found_within = rule.within_k_first && !out.hits.is_empty();
            if !done || (n >= 1 && (!plan.ranked || found_within)) || (n == 2 && !bands_last) {
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
                1 if bands_last => None,
                _ => band_probe,
            };
            // The parts' with the bands': a query reads them on the pool
            // meanwhile.
            let parts = probe.and(part_probe.as_ref());
            let buckets = || self.candidates(fp, plan, prefetched, &part, probe.as_ref());
            let (cands, named) = match parts {
                Some(pp) if self.reads == Reads::Query => {
                    rayon::join(buckets, || self.part_named(pp))
                }
                Some(pp) => (buckets(), self.part_named(pp)),
                None => (buckets(), Ok(Vec::new())),
            };
            let (mut found, chosen) = cands?;
            let named = named?;
            found.extend(named.iter().filter(|e| e.1).map(|e| e.0));
            let named: Vec<Fingerprint> = named.into_iter().map(|e| e.0).collect();
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
            let want = rule
                .examine
                .saturating_sub(examined.get())
                .max(1)
                .saturating_mul(4);
            let (near, far) = nearest_levels(found, fp, want);
            let pending_plan = match n {
                0 => &exact,
                1 => plan,
                _ => &part,
            };
            let mut pending = mem
                .into_iter()
                .flat_map(|m| m.ordered_parted(fp, pending_plan, probe.as_ref(), parts))
                .filter(|(_, f)| wanted(*f))
                .filter(|(_, f)| {
                    probe.is_none()
                        || plan.accepts(fp, *f)
                        || chosen.contains(f)
                        || named.binary_search(f).is_ok()
                })
                .filter_map(pending_hit)
                .peekable();
            done = self
                .store
                .resolve_prefetched(at, fp, Some(near), sketch, &skip, pre, |h| {
                    merged(&mut pending, h, &mut out, &mut take)
                })?;
            if done && !far.is_empty() {
                done =
                    self.store
                        .resolve_prefetched(at, fp, Some(far), sketch, &skip, pre, |h| {
                            merged(&mut pending, h, &mut out, &mut take)
                        })?;
            }
            done = done && drain(&mut pending, &mut out, &mut take)?;
        }
        out.complete = done;
        Ok(out)
    }
}

/// A rebuild's view reads at most this many fingerprints of a part bucket
/// to find those with a document before the one it checks (a bucket that
/// holds more names none, as for a write it is boilerplate).
const REBUILD_PART_READ: usize = 64;

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
/// then `h`.
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
