//! Looking at a whole store: stats, calibration, backup, migration.

use std::path::Path;

use super::{BackupMethod, Db, FamilyStats, MigrateReport, Stats, MAX_CALIBRATION_SAMPLE};
use crate::error::{Error, Result};
use crate::fingerprint;
use crate::index::{self, Hit};
use crate::store::schema::KeepPolicy;
use crate::store::{self, Store, Tuning};

impl Db {
    /// Bytes of the store's directory on disk (every file under it).
    pub(crate) fn bytes_on_disk(&self) -> u64 {
        dir_size(self.path())
    }

    /// Background errors the storage engine has met since the store was
    /// opened (failed flushes or compactions).
    pub(crate) fn background_errors(&self) -> u64 {
        self.store.background_errors()
    }
}

impl Db {
    /// Samples about `sample` documents (seeded) and measures, for each,
    /// the distance to its nearest other document (up to `max_k`, with its
    /// sketch similarity) and, for random pairs of sampled documents, their
    /// distance: see [`crate::explain::Calibration`].
    pub(crate) fn calibrate(
        &self,
        sample: usize,
        seed: u64,
        threshold: f64,
        max_k: u32,
        go_on: super::GoOn<'_>,
    ) -> Result<crate::explain::Calibration> {
        use rayon::prelude::*;
        fingerprint::check_k(max_k)?;
        if sample > MAX_CALIBRATION_SAMPLE {
            return Err(Error::Input(format!(
                "a sample of {sample} documents is more than calibrate takes ({MAX_CALIBRATION_SAMPLE})"
            )));
        }
        let docs = self.store.sample(sample, seed)?;
        let mut cal = crate::explain::Calibration::new(threshold, max_k);
        // Random pairs: each sampled document with another drawn at random
        // (the sample is in fingerprint order, so neighbours in it are not
        // random pairs).
        let mut state = seed ^ 0x5eed;
        for (i, (a, _)) in docs.iter().enumerate() {
            let j = (index::splitmix64(&mut state) % docs.len() as u64) as usize;
            if j != i {
                let d = a.distance(docs[j].0) as usize;
                cal.random_pairs[d] += 1;
            }
        }
        let nearest: Vec<Option<(u32, Option<f64>)>> = docs
            .par_iter()
            .map(|(fp, id)| -> Result<_> {
                go_on.check()?;
                let sketch = self.get(id)?.and_then(|r| r.sketch);
                // The nearest other document; among equally near ones, the
                // most similar. Documents come nearest first: the walk
                // stops at the first one farther than the best.
                let mut best: Option<Hit> = None;
                let plan = index::ProbePlan::exact(*fp, max_k);
                let at = self.store.snapshot();
                let found = self.store.candidates(&at, *fp, &plan, false)?;
                let skip = |other: &str| other == id;
                self.store
                    .resolve(&at, *fp, found, sketch.as_ref(), &skip, |h| {
                        if let Some(b) = &best {
                            if h.distance > b.distance {
                                return Ok(store::Flow::Stop);
                            }
                            if h.similarity.unwrap_or(-1.0) <= b.similarity.unwrap_or(-1.0) {
                                return Ok(store::Flow::Continue);
                            }
                        }
                        best = Some(h);
                        Ok(store::Flow::Continue)
                    })?;
                Ok(best.map(|h| (h.distance, h.similarity)))
            })
            .collect::<Result<_>>()?;
        for n in nearest {
            cal.add_nearest(n);
        }
        Ok(cal)
    }

    /// Counts, bucket-size percentiles per block family, size on disk.
    pub(crate) fn stats(&self) -> Result<Stats> {
        let mut families = Vec::new();
        for (i, name) in store::BLOCK_FAMILIES.iter().enumerate() {
            let mut sizes: Vec<u64> = Vec::new();
            let mut keys = 0u64;
            self.store.for_each_bucket_in(i, 0, u16::MAX, |_, fps| {
                let n = fps.len() as u64;
                keys += n;
                sizes.push(n);
                Ok(())
            })?;
            sizes.sort_unstable();
            let pct = |p: f64| -> u64 {
                if sizes.is_empty() {
                    0
                } else {
                    let i = ((sizes.len() as f64 - 1.0) * p).round() as usize;
                    sizes[i.min(sizes.len() - 1)]
                }
            };
            families.push(FamilyStats {
                name: name.to_string(),
                keys,
                buckets: sizes.len() as u64,
                sst_bytes: self.store.family_size(name),
                bucket_p50: pct(0.5),
                bucket_p90: pct(0.9),
                bucket_p99: pct(0.99),
                bucket_max: sizes.last().copied().unwrap_or(0),
            });
        }
        let age = self.age_range()?;
        let (clusters, clustered_documents) = self.cluster_counts()?;
        let (frozen, frozen_unusable) = match self.store.frozen_state() {
            Ok(f) => (f, None),
            Err(why) => (None, Some(why)),
        };
        Ok(Stats {
            path: self.path().display().to_string(),
            oldest: age.map(|a| a.0),
            newest: age.map(|a| a.1),
            clusters,
            clustered_documents,
            keep: self.store.keep_policy()?,
            documents: self.len()?,
            short_documents: self.store.short_count()?,
            recipe: self.recipe().clone(),
            families,
            bytes_on_disk: dir_size(self.path()),
            view: self.view(),
            frozen,
            frozen_unusable,
            extraction: self.extraction()?,
        })
    }

    /// Bytes of SST files per family, in [`store::ALL_FAMILIES`] order (data
    /// still in memtables is not counted; see [`Admin::flush`]).
    pub(crate) fn family_sizes(&self) -> Vec<(&'static str, u64)> {
        store::ALL_FAMILIES
            .iter()
            .map(|n| (*n, self.store.family_size(n)))
            .collect()
    }
}

impl Db {
    /// Sets the store's keep policy (who represents a cluster) and
    /// rebuilds the clusters under it: about one duplicate check per
    /// document, nothing on an empty store. Returns the number of clusters
    /// of two or more.
    ///
    /// The policy is written with the last batch of the rebuild, and a
    /// marker stays from its first to its last: a rebuild that is
    /// interrupted leaves a store that opens only to finish it (see
    /// [`crate::Error::ClustersIncomplete`]),
    /// and the same call again redoes it.
    pub(crate) fn set_keep_policy(&mut self, keep: KeepPolicy) -> Result<u64> {
        self.rebuild_clusters(keep)
    }

    /// The store's keep policy.
    pub(crate) fn keep_policy(&self) -> Result<KeepPolicy> {
        self.store.keep_policy()
    }
}

/// What [`Maintenance::expire`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExpireReport {
    /// Documents deleted.
    pub deleted: u64,
    /// Documents left.
    pub remaining: u64,
    /// Clusters left with one member, which dissolved (members leave
    /// their clusters as they are deleted).
    pub clusters_dissolved: u64,
}

impl Db {
    /// The page extraction the store's web pages went through
    /// ([`crate::web::EXTRACTION`]); `None` when no page was written.
    pub(crate) fn extraction(&self) -> Result<Option<String>> {
        extraction(&self.store)
    }

    /// Makes ready to write web pages ([`accept_pages`]).
    pub(crate) fn accept_pages(&self) -> Result<()> {
        accept_pages(&self.store)
    }

    /// Deletes every document whose time ([`crate::Record::time`]: its own,
    /// else when it was written) is before `before` (Unix seconds), in
    /// batches of at most 10,000 deletions, each atomic: a document is
    /// either whole or gone, and its cluster is updated in the same batch.
    /// The documents without a time of their own: a walk of the ingest
    /// order from the oldest, which stops at the first one written at or
    /// after `before` (write times never go backwards in a store). Those
    /// with one: a walk of the time index (`t`) from the oldest, which
    /// stops at the first at or after `before`. Each reads what it deletes
    /// and one more (and the walk of the order, the documents with their
    /// own time written before `before`).
    pub(crate) fn expire(&mut self, before: u64) -> Result<ExpireReport> {
        let (clusters_before, _) = self.cluster_counts()?;
        let mut deleted = 0u64;
        // Each batch resumes after the last document the previous one
        // looked at, not at the start (over its tombstones).
        let mut from = Expiring::default();
        loop {
            let (found, next) = self.expired_from(from, before, 10_000)?;
            if found.is_empty() {
                break;
            }
            let mut w = self.writer()?;
            for id in &found {
                deleted += u64::from(w.delete(id)?);
            }
            w.commit()?;
            from = next;
        }
        self.settle_clusters()?;
        self.flush()?;
        let (clusters_after, _) = self.cluster_counts()?;
        Ok(ExpireReport {
            deleted,
            remaining: self.len()?,
            clusters_dissolved: clusters_before.saturating_sub(clusters_after),
        })
    }

    /// The ids of at most `limit` of the documents whose time is before
    /// `before` (see [`Db::expire`]).
    pub(crate) fn expired(&self, before: u64, limit: usize) -> Result<Vec<String>> {
        Ok(self.expired_from(Expiring::default(), before, limit)?.0)
    }

    /// The record of the document the ingest order names at `ord`.
    fn ordered_record(&self, ord: u64, id: &str) -> Result<crate::Record> {
        self.store.get(id)?.ok_or_else(|| {
            Error::corrupt(
                store::CLUSTERS,
                &store::schema::order_key(ord),
                format!("the ingest order names {id:?}, which has no record"),
            )
        })
    }

    /// At most `limit` documents whose time is before `before`, from
    /// `from` on (the documents without a time of their own first, then
    /// those with one), and where the next call goes on.
    fn expired_from(
        &self,
        mut from: Expiring,
        before: u64,
        limit: usize,
    ) -> Result<(Vec<String>, Expiring)> {
        let mut found = Vec::new();
        if !from.order_done {
            let mut done = true;
            self.store.for_each_in_order(from.ord, |ord, id| {
                if found.len() >= limit {
                    done = false;
                    return Ok(false);
                }
                let rec = self.ordered_record(ord, id)?;
                if rec.ingested_at >= before {
                    return Ok(false);
                }
                from.ord = ord + 1;
                // Those with their own time: by the time index, below.
                if rec.dated.is_none() {
                    found.push(id.to_string());
                }
                Ok(true)
            })?;
            from.order_done = done;
        }
        if from.order_done {
            self.store.for_each_dated(from.dated, |time, ord, id| {
                if time >= before || found.len() >= limit {
                    return Ok(false);
                }
                from.dated = (time, ord + 1);
                found.push(id.to_string());
                Ok(true)
            })?;
        }
        Ok((found, from))
    }

    /// The oldest and newest document times ([`crate::Record::time`]) in
    /// the store (Unix seconds), or `None` for an empty store: from the
    /// ends of the ingest order (write times never go backwards) and of
    /// the time index, walking the order past documents with their own
    /// time only while one could still be the answer.
    pub(crate) fn age_range(&self) -> Result<Option<(u64, u64)>> {
        let first_dated = {
            let mut t = None;
            self.store.for_each_dated((0, 0), |time, _, _| {
                t = Some(time);
                Ok(false)
            })?;
            t
        };
        // Write times never go backwards: past a document written after
        // the oldest own time (before the newest), no undated one can be
        // older (newer) than it.
        let oldest = self.first_undated(
            |visit| self.store.for_each_in_order(0, visit),
            |written| first_dated.is_some_and(|t| written >= t),
        )?;
        let last_dated = self.store.latest_dated()?;
        let newest = self.first_undated(
            |visit| self.store.for_each_in_order_rev(visit),
            |written| last_dated.is_some_and(|t| written <= t),
        )?;
        let min = [oldest, first_dated].into_iter().flatten().min();
        let max = [newest, last_dated].into_iter().flatten().max();
        Ok(min.zip(max))
    }
}

/// A visit of the ingest order: `(ord, id)`, `false` to stop.
type OrderVisit<'a> = &'a mut dyn FnMut(u64, &str) -> Result<bool>;

impl Db {
    /// The write time of the first document without a time of its own
    /// that `walk` (the ingest order, either way) meets, unless `past` the
    /// write time of one met before it says none further on matters.
    fn first_undated(
        &self,
        walk: impl FnOnce(OrderVisit<'_>) -> Result<()>,
        past: impl Fn(u64) -> bool,
    ) -> Result<Option<u64>> {
        let mut found = None;
        walk(&mut |ord, id| {
            let rec = self.ordered_record(ord, id)?;
            if past(rec.ingested_at) {
                return Ok(false);
            }
            if rec.dated.is_none() {
                found = Some(rec.ingested_at);
                return Ok(false);
            }
            Ok(true)
        })?;
        Ok(found)
    }
}

/// Where an expiry's walks are (see [`Db::expire`]).
#[derive(Debug, Clone, Copy, Default)]
struct Expiring {
    /// The next ord of the ingest order to look at.
    ord: u64,
    /// Whether the walk of the ingest order is over.
    order_done: bool,
    /// The next (time, ord) of the time index to look at.
    dated: (u64, u64),
}

fn dir_size(p: &Path) -> u64 {
    walkdir::WalkDir::new(p)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// A store's figures, checks and upkeep that need no writer: [`Db::admin`].
/// (Upkeep that writes, [`Maintenance`], needs the `Db` itself;
/// [`backup`] and [`migrate`] work on a path.)
#[derive(Clone, Copy)]
pub struct Admin<'a> {
    db: &'a Db,
    go_on: super::GoOn<'a>,
}

impl Db {
    /// The store's figures and checks.
    pub fn admin(&self) -> Admin<'_> {
        Admin {
            db: self,
            go_on: Default::default(),
        }
    }
}

impl<'a> Admin<'a> {
    /// This handle, with its long work ([`Admin::calibrate`]) asking
    /// `go_on` between its steps and ending with [`Error::Interrupted`]
    /// once it answers false: how a service keeps a deadline, or stops.
    pub fn until(self, go_on: &'a (dyn Fn() -> bool + Sync)) -> Admin<'a> {
        Admin {
            go_on: super::GoOn::new(go_on),
            ..self
        }
    }
}

impl Admin<'_> {
    /// The page extraction the store's web pages went through
    /// ([`crate::web::EXTRACTION`]); `None` when no page was written.
    pub fn extraction(&self) -> Result<Option<String>> {
        self.db.extraction()
    }

    /// Counts and shape of the store (`simdb stats`); reads every posting.
    pub fn stats(&self) -> Result<Stats> {
        self.db.stats()
    }

    /// Checks every record, `refs` entry, posting, count and cluster
    /// entry against each other (`simdb verify`); see [`super::VerifyReport`].
    pub fn verify(&self) -> Result<super::VerifyReport> {
        self.db.verify()
    }

    /// Nearest-neighbour distances of a seeded sample, and of random pairs
    /// (`simdb calibrate`); see [`crate::explain::Calibration`].
    pub fn calibrate(
        &self,
        sample: usize,
        seed: u64,
        min_similarity: f64,
        max_k: u32,
    ) -> Result<crate::explain::Calibration> {
        self.db
            .calibrate(sample, seed, min_similarity, max_k, self.go_on)
    }

    /// The ids of at most `limit` of the documents whose time is before
    /// `before` (Unix seconds; see [`Maintenance::expire`]): what it would
    /// delete.
    pub fn expired(&self, before: u64, limit: usize) -> Result<Vec<String>> {
        self.db.expired(before, limit)
    }

    /// Each column family's size on disk (SST files), by name.
    pub fn family_sizes(&self) -> Vec<(&'static str, u64)> {
        self.db.family_sizes()
    }

    /// The store directory's size on disk.
    pub fn bytes_on_disk(&self) -> u64 {
        self.db.bytes_on_disk()
    }

    /// Failed background flushes and compactions since the store opened.
    pub fn background_errors(&self) -> u64 {
        self.db.background_errors()
    }

    /// Write-ahead log fsyncs since the store opened.
    pub fn wal_syncs(&self) -> u64 {
        self.db.wal_syncs()
    }

    /// Reads made through this handle, by family (for tests of read
    /// costs).
    pub fn reads(&self) -> crate::Reads {
        self.db.reads()
    }

    /// How fresh this handle's view is. A read-only handle sees the store
    /// as of its opening; if another process is writing, newer documents
    /// may exist (reopen to see them).
    pub fn view(&self) -> super::View {
        self.db.view()
    }

    /// How the store was opened (for writing, or read-only).
    pub fn access(&self) -> crate::Access {
        self.db.access()
    }

    /// The memory knobs the store was opened with.
    pub fn tuning(&self) -> Tuning {
        self.db.tuning()
    }

    /// For each document whose ord is in `ords` (ingest order), its
    /// confirmed near-copies among the documents ingested before it,
    /// nearest first (at most [`crate::db::limits::CHECK_CONFIRMED`]): the
    /// duplicate check a cluster rebuild makes for it, which is ingest's.
    /// `visit` sees each document that has any: its ord, id and hits.
    /// Returns the number of documents checked. It only reads, so
    /// processes that each open the store read-only can split a store's
    /// ords among them; [`Maintenance::rebuild_clusters_from`] then places
    /// the documents (how `simdb.ray.dedup` spreads a dedup).
    pub fn earlier_copies(
        &self,
        ords: std::ops::Range<u64>,
        visit: impl FnMut(u64, &str, Vec<crate::Hit>) -> Result<()>,
    ) -> Result<u64> {
        self.db.earlier_copies(ords, visit)
    }

    /// The store's keep policy (who represents a cluster).
    pub fn keep_policy(&self) -> Result<KeepPolicy> {
        self.db.keep_policy()
    }

    /// The verification threshold the store applies when a query or a
    /// write gives none (it depends on the recipe's sketch: see
    /// [`super::default_min_similarity`]).
    pub fn default_min_similarity(&self) -> f64 {
        self.db.default_min_similarity()
    }

    /// The threshold `given`, checked (0 to 1), or the store's default
    /// ([`Admin::default_min_similarity`]).
    pub fn min_similarity_or_default(&self, given: Option<f64>) -> Result<f64> {
        self.db.min_similarity_or_default(given)
    }

    /// Every (id, record), in id order.
    pub fn for_each(&self, visit: impl FnMut(&str, crate::Record) -> Result<()>) -> Result<()> {
        self.db.for_each(visit)
    }

    /// Flushes memtables to disk (SST sizes then count everything written).
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// Writes the store's frozen index again ([`Maintenance::freeze`])
    /// through a shared `Db`, while writes and queries go on: it writes
    /// the file from a snapshot (one pass over the posting families: about
    /// 3 minutes at 50M documents), then commits it with the buckets
    /// written meanwhile marked changed; writers wait only for the two
    /// short steps that start and end it, and queries read the old file
    /// until the new one is committed. The service's `POST /freeze` and
    /// Python's `Db.freeze()`.
    pub fn freeze(&self) -> Result<store::FreezeReport> {
        self.db.check_writable()?;
        self.db.store.freeze(&self.db.write_lock)
    }

    /// Writes every document to Parquet files in directory `out`: see
    /// [`super::export`].
    #[cfg(feature = "parquet")]
    pub fn export_parquet(
        &self,
        out: &Path,
        opts: &super::export::ExportOptions,
    ) -> Result<super::export::ExportSummary> {
        self.db.export_parquet(out, opts)
    }
}

/// Upkeep that writes to a store, through the one writer:
/// [`Db::maintenance`].
pub struct Maintenance<'a> {
    db: &'a mut Db,
}

impl Db {
    /// Upkeep that writes: the keep policy, expiry, repair.
    pub fn maintenance(&mut self) -> Maintenance<'_> {
        Maintenance { db: self }
    }
}

impl Maintenance<'_> {
    /// Sets the store's keep policy (who represents a cluster) and
    /// rebuilds the clusters under it: about one duplicate check per
    /// document, nothing on an empty store. Returns the number of clusters
    /// of two or more.
    ///
    /// The policy is written with the last batch of the rebuild, and a
    /// marker stays from its first to its last: a rebuild that is
    /// interrupted leaves a store that opens only to finish it (see
    /// [`crate::Error::ClustersIncomplete`]), and the same call again
    /// redoes it.
    pub fn set_keep_policy(&mut self, keep: KeepPolicy) -> Result<u64> {
        self.db.set_keep_policy(keep)
    }

    /// Deletes every document whose time ([`crate::Record::time`]: its own,
    /// a crawl's fetch date or an input's `"time"`, else when it was
    /// written) is before `before` (Unix seconds), in atomic batches of at
    /// most 10,000 deletions, each document's cluster updated in its batch;
    /// reads what it deletes, one more, and those written before `before`
    /// with a later time of their own.
    pub fn expire(&mut self, before: u64) -> Result<ExpireReport> {
        self.db.expire(before)
    }

    /// Rebuilds the clusters under `keep` as [`Maintenance::set_keep_policy`]
    /// does, from near-copy lists computed beforehand by
    /// [`Admin::earlier_copies`] (each document that has near-copies, in
    /// ascending ord, with their ids; maybe computed by several processes,
    /// each over a range of ords) instead of searching for them. With the
    /// lists of every range, the clusters are those `set_keep_policy`
    /// builds. A list out of order, or naming a document that is missing
    /// or not before its own, stops the rebuild with
    /// [`crate::Error::Input`] (the store keeps its rebuild marker until a
    /// rebuild finishes).
    pub fn rebuild_clusters_from(
        &mut self,
        keep: KeepPolicy,
        lists: impl IntoIterator<Item = Result<(u64, Vec<String>)>>,
    ) -> Result<u64> {
        self.db.rebuild_clusters_from(keep, None, lists)
    }

    /// Replaces the store's clusters by those an engine placed on its
    /// workers ([`super::engine::place_components`]): `rows` are (cluster
    /// id, rank, member id), each cluster's together and in rank order,
    /// ranked under `keep`, which becomes the store's policy. Writes each
    /// member's cluster entries in atomic batches, under the rebuild marker
    /// of [`Maintenance::set_keep_policy`] (an interrupted call leaves a
    /// store that opens only to finish a rebuild). Rows that disagree with
    /// the store's records (a missing member, one in two clusters, an
    /// order `keep` does not give) stop it with [`crate::Error::Input`].
    /// Returns the number of clusters.
    pub fn put_clusters(
        &mut self,
        keep: KeepPolicy,
        rows: impl IntoIterator<Item = Result<(u64, u32, String)>>,
    ) -> Result<u64> {
        self.db.check_writable()?;
        super::engine::put_clusters(self.db, keep, rows)
    }

    /// Rebuilds `refs`, the posting families, the document count and the
    /// clusters from the records, which are the source of truth (`simdb
    /// verify --repair`). Records that do not decode are reported and left
    /// alone. A repair that is interrupted leaves a store that only
    /// [`super::DbOptions::for_repair`] opens.
    pub fn repair(&mut self) -> Result<super::RepairReport> {
        self.db.repair()
    }

    /// Writes the store's frozen index (`simdb freeze`): a copy of every
    /// bucket of the posting families in one file beside RocksDB's, read
    /// through mmap, from which queries and duplicate checks read each
    /// bucket no write has changed since (see the README, "The frozen
    /// index"). Answers are the same with or without it. One pass over the
    /// posting families; the file is about their size (8 GB at 50M
    /// documents). Run it after a bulk import or a night's ingest.
    pub fn freeze(&mut self) -> Result<store::FreezeReport> {
        self.db.admin().freeze()
    }
}

/// Makes a consistent copy of the store at `src` in `dest` (which must
/// not exist), and says how. When no other process writes to `src`, the
/// copy is a RocksDB checkpoint (hard links, instant). While another
/// process writes, it is a copy of a read-only view of the store as of
/// the moment it was opened: every family rewritten into a fresh store
/// that is renamed into place when complete.
pub fn backup(src: impl AsRef<Path>, dest: impl AsRef<Path>) -> Result<BackupMethod> {
    let (src, dest) = (src.as_ref(), dest.as_ref());
    if dest.exists() {
        return Err(Error::AlreadyExists {
            path: dest.to_path_buf(),
        });
    }
    match Db::options().open(src) {
        Ok(db) => {
            db.store.checkpoint(dest)?;
            Ok(BackupMethod::Checkpoint)
        }
        Err(Error::InUse { .. }) => {
            let db = Db::options().read_only().open(src)?;
            db.store.copy_to(dest, db.recipe(), Tuning::default())?;
            Ok(BackupMethod::Copy)
        }
        Err(e) => Err(e),
    }
}

/// Converts a store of an older format this build can migrate (2 to
/// 8) in place, or changes a store's keep policy (`keep`; `None`
/// keeps the store's, which for a store before format 6 is
/// `priority`, the rule it ranked by). A store already in this
/// build's format with that policy is left as it is.
///
/// From formats 5 and 6, the band families of format 7 are built from
/// `refs` (every stored sketch is there: no text is needed), then the
/// clusters are rebuilt (under the anchored rule of format 6, see
/// [`crate::db::clusters`], and with duplicate checks that now read the
/// bands). From formats 2 to 4,
/// every record from before format 4 gets its place in the ingest
/// order (by time written, then id); then [`Maintenance::repair`] rebuilds
/// `refs`, the postings and the clusters from the records. The format
/// version is written last, so a migration that is interrupted is
/// simply run again. The report has the clusters before and after, and
/// what the store's recipe lacks that a new store's has
/// ([`MigrateReport::recipe_behind`]): the recipe itself is never
/// changed (its fingerprints stay comparable with each other); moving
/// to this build's recipe means a new store and the texts ingested
/// again.
pub fn migrate(path: impl AsRef<Path>, keep: Option<KeepPolicy>) -> Result<MigrateReport> {
    let path = path.as_ref();
    let (mut store, recipe, version) = Store::open_for_migration(path)?;
    // The recipe must be one this build reproduces, as at every open.
    Db::check_recipe(path, &recipe)?;
    let keep_from = store.keep_policy()?;
    let keep = keep.unwrap_or(keep_from);
    let mut report = MigrateReport {
        from: version,
        to: store::FORMAT_VERSION,
        keep_from,
        keep,
        recipe_behind: recipe.behind(),
        ..Default::default()
    };
    // An interrupted rebuild of the clusters (the marker names the
    // policy it was building) is never "already" done.
    let rebuilding = store.clusters_rebuilding()?;
    if version >= store::FORMAT_VERSION && keep == keep_from && rebuilding.is_none() {
        report.to = version;
        let db = Db::with_store(path, store, recipe)?;
        report.clusters_before = db.cluster_counts()?;
        report.clusters_after = report.clusters_before;
        report.clusters = report.clusters_after.0;
        report.largest_before = db.largest_cluster()?;
        report.largest_after = report.largest_before;
        return Ok(report);
    }
    store.ensure_families()?;
    if (5..7).contains(&version) {
        // Format 7's band families, from `refs` (the sketches are
        // there): before the clusters are rebuilt, whose duplicate
        // checks read them.
        report.banded = store.build_bands()?;
    }
    let mut db = if version < 5 {
        let (ordered, _) = store.assign_ords()?;
        report.ordered = ordered;
        Db::with_store(path, store, recipe)?
    } else {
        Db::with_store(path, store, recipe)?
    };
    report.clusters_before = db.cluster_counts()?;
    report.largest_before = db.largest_cluster()?;
    if version < 5 {
        let (k, v) = store::schema::keep_policy_entry(keep);
        db.store.put_meta(k, v)?;
        let rep = db.repair()?;
        report.indexed = rep.reindexed;
        report.clusters = rep.clusters;
        report.unreadable = rep.unreadable.len() as u64;
    } else if version >= 7
        && keep == keep_from
        && (keep != KeepPolicy::Newest || version >= 9)
        && rebuilding.is_none()
    {
        // Formats 7 and 8 (8: with a frozen index) are format 9 without
        // document times: their records are read as they are. Only the
        // ranks of `newest` change (by time, then ord), which a rebuild
        // below makes. Format 13 raises the rank keys of `first` (and of
        // a time past 2106) above those of kept documents: a walk of the
        // member keys, not a rebuild. Format 14 adds the fine sketch to
        // the records written from then on: nothing to do.
        report.clusters = report.clusters_before.0;
        if version < 13 {
            report.reranked = db.store.migrate_ranks()?;
        }
    } else {
        report.clusters = db.set_keep_policy(keep)?;
    }
    db.store.flush()?;
    let (k, v) = store::schema::format_version_entry(store::FORMAT_VERSION);
    db.store.put_meta(k, &v)?;
    report.clusters_after = db.cluster_counts()?;
    report.largest_after = db.largest_cluster()?;
    Ok(report)
}

/// The page extraction `store` recorded with its first page, if any.
fn extraction(store: &Store) -> Result<Option<String>> {
    Ok(store
        .get_meta(store::EXTRACTION_KEY)?
        .map(|v| String::from_utf8_lossy(&v).into_owned()))
}

/// Makes a store ready to take web pages: a store that has pages must have
/// had them extracted as this build extracts them (else the same page
/// would be a different text); a store without records this build's
/// extraction. Text written beside pages is not affected. Idempotent, and
/// safe from several writers at once (they record the same value).
pub(crate) fn accept_pages(store: &Store) -> Result<()> {
    match extraction(store)? {
        Some(e) if e == crate::web::EXTRACTION => Ok(()),
        Some(e) => Err(Error::Input(format!(
            "this store's web pages were extracted as {e:?}, and this build extracts them as {:?}: \
             the same page would give another text; write the pages into a new store (or use the \
             build that made this one)",
            crate::web::EXTRACTION
        ))),
        None => store.put_meta(store::EXTRACTION_KEY, crate::web::EXTRACTION.as_bytes()),
    }
}
