//! The frozen index: the posting families written out whole by
//! [`Store::freeze`] into one file beside RocksDB's (`frozen-<generation>.idx`,
//! layout in [`crate::index::frozen`]), read through mmap.
//!
//! RocksDB stays the truth: the file is a copy of every bucket at the
//! freeze, and a query reads a bucket from it only while the bucket is
//! *clean*, unchanged since. Each write that touches a bucket marks it
//! dirty first (in memory, before its batch commits, so no query at a
//! later snapshot can read the stale copy) and, in the same batch, writes
//! the page of the changed-bucket map that holds it (1,024 buckets a page,
//! until a batch with it commits), so a reopened store knows the same. A
//! dirty bucket is read from RocksDB as before, so answers never depend on
//! the file: only their cost does. Anything that rewrites a posting family
//! wholesale (a repair, a band rebuild, an import of table files) drops
//! the frozen index in the same batch.
//!
//! Meta entries:
//!
//! ```text
//! "frozen"                generation u64 BE ‖ entries u64 BE ‖ bytes u64 BE ‖ CRC-32 u32 BE
//! "frozen_dirty/" ‖ page  page u16 BE: 16 u64 LE, bit n % 64 of word (n % 1024) / 64 set
//!                         when bucket n = family * 65,536 + bucket changed since
//! ```
//!
//! A store with a frozen index was format 8 (format 7 builds would write
//! its buckets without marking them); format 9 builds all keep it in step.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use memmap2::Mmap;
use rocksdb::ReadOptions;

use super::{schema, Access, Batch, Store, FORMAT_VERSION, META, POSTING_FAMILIES};
use crate::error::{Error, Result};
use crate::index::frozen::{FrozenLayout, FrozenWriter, BUCKETS};

/// Meta key of the frozen index in use.
pub const FROZEN_KEY: &[u8] = b"frozen";
/// Prefix of the meta keys of the buckets changed since the freeze.
pub const DIRTY_PREFIX: &[u8] = b"frozen_dirty/";
/// The first key after every [`DIRTY_PREFIX`] key.
const DIRTY_END: &[u8] = b"frozen_dirty0";

const WORDS: usize = POSTING_FAMILIES * BUCKETS / 64;

/// The file name of generation `g`.
pub fn file_name(g: u64) -> String {
    format!("frozen-{g:010}.idx")
}

/// The generation a file name names (`None`: not a frozen index's name;
/// `Some((g, true))` for an unfinished `.tmp`).
fn parse_name(name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix("frozen-")?;
    let (g, tmp) = match rest.strip_suffix(".idx.tmp") {
        Some(g) => (g, true),
        None => (rest.strip_suffix(".idx")?, false),
    };
    Some((g.parse().ok()?, tmp))
}

/// Buckets per persisted page of the changed-bucket map: the buckets of
/// all posting families numbered `family * 65,536 + bucket`, 1,024 to a
/// page, so a night's batches write at most 1,280 small values however
/// many buckets they change.
const PAGE_BUCKETS: usize = 1024;
const PAGE_WORDS: usize = PAGE_BUCKETS / 64;
const PAGES: usize = WORDS / PAGE_WORDS;

fn dirty_key(page: u16) -> [u8; 15] {
    let mut k = [0u8; 15];
    k[..13].copy_from_slice(DIRTY_PREFIX);
    k[13..].copy_from_slice(&page.to_be_bytes());
    k
}

/// The meta value of [`FROZEN_KEY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FrozenMeta {
    pub generation: u64,
    pub entries: u64,
    pub bytes: u64,
    pub crc: u32,
}

impl FrozenMeta {
    fn encode(&self) -> [u8; 28] {
        let mut v = [0u8; 28];
        v[..8].copy_from_slice(&self.generation.to_be_bytes());
        v[8..16].copy_from_slice(&self.entries.to_be_bytes());
        v[16..24].copy_from_slice(&self.bytes.to_be_bytes());
        v[24..].copy_from_slice(&self.crc.to_be_bytes());
        v
    }

    fn decode(v: &[u8]) -> std::result::Result<FrozenMeta, String> {
        if v.len() != 28 {
            return Err(format!("{} bytes (expected 28)", v.len()));
        }
        let u = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&v[at..at + 8]);
            u64::from_be_bytes(a)
        };
        Ok(FrozenMeta {
            generation: u(0),
            entries: u(8),
            bytes: u(16),
            crc: (u(20) & 0xffff_ffff) as u32,
        })
    }
}

/// An open frozen index and which of its buckets are clean.
pub(crate) struct Frozen {
    map: Mmap,
    layout: FrozenLayout,
    pub(crate) meta: FrozenMeta,
    pub(crate) path: PathBuf,
    /// Buckets changed since the freeze: set before the batch that
    /// changes them commits; what queries consult.
    dirty: Box<[AtomicU64]>,
    /// Buckets whose dirty key is committed (the writer's bookkeeping: a
    /// bucket's key goes into every batch until one commits).
    persisted: Box<[AtomicU64]>,
    /// Buckets whose CRC was checked on their first read and held, and
    /// those where it did not (damaged: read from RocksDB from then on).
    checked: Box<[AtomicU64]>,
    damaged: Box<[AtomicU64]>,
}

fn bit(i: usize, b: u16) -> (usize, u64) {
    let n = i * BUCKETS + usize::from(b);
    (n / 64, 1u64 << (n % 64))
}

fn bitmap() -> Box<[AtomicU64]> {
    (0..WORDS).map(|_| AtomicU64::new(0)).collect()
}

impl Frozen {
    /// Maps `path` and checks its layout; its meta is what it says.
    fn open_any(path: &Path) -> std::result::Result<Frozen, String> {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: the file is written once, synced and renamed into place
        // before any store names it, and never written again; simdb
        // removes it only when no store names it.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))?;
        let layout = FrozenLayout::parse(&map, POSTING_FAMILIES)
            .map_err(|r| format!("{}: {r}", path.display()))?;
        let meta = FrozenMeta {
            generation: layout.generation,
            entries: layout.entries,
            bytes: map.len() as u64,
            crc: layout.crc,
        };
        Ok(Frozen {
            map,
            layout,
            meta,
            path: path.to_path_buf(),
            dirty: bitmap(),
            persisted: bitmap(),
            checked: bitmap(),
            damaged: bitmap(),
        })
    }

    /// Maps `path` and checks its layout against `meta`.
    fn open(path: &Path, meta: FrozenMeta) -> std::result::Result<Frozen, String> {
        let f = Frozen::open_any(path)?;
        let m = f.meta;
        if m != meta {
            return Err(format!(
                "{}: generation {}, {} entries, {} bytes, CRC {:08x}; the store names \
                 generation {}, {} entries, {} bytes, CRC {:08x}",
                path.display(),
                m.generation,
                m.entries,
                m.bytes,
                m.crc,
                meta.generation,
                meta.entries,
                meta.bytes,
                meta.crc
            ));
        }
        Ok(f)
    }

    /// Whether bucket `b` of family `i` is unchanged since the freeze.
    #[inline]
    pub(crate) fn is_clean(&self, i: usize, b: u16) -> bool {
        let (w, m) = bit(i, b);
        self.dirty[w].load(Ordering::SeqCst) & m == 0
    }

    /// The entries of bucket `b` of family `i` at the freeze.
    #[inline]
    pub(crate) fn bucket(&self, i: usize, b: u16) -> &[u8] {
        self.layout.bucket(&self.map, i, b)
    }

    /// The entries of bucket `b` of family `i` if a query may read them
    /// from the file: the bucket is unchanged since the freeze and its
    /// bytes have the CRC the file records for it (checked on its first
    /// read; a bucket that fails is marked damaged and read from RocksDB
    /// from then on, so damage costs time, never an answer).
    #[inline]
    pub(crate) fn clean_bucket(&self, i: usize, b: u16) -> Option<&[u8]> {
        let (w, m) = bit(i, b);
        if self.dirty[w].load(Ordering::SeqCst) & m != 0 {
            return None;
        }
        if self.checked[w].load(Ordering::Relaxed) & m == 0 {
            if self.damaged[w].load(Ordering::Relaxed) & m != 0 {
                return None;
            }
            if !self.layout.check_bucket(&self.map, i, b) {
                self.damaged[w].fetch_or(m, Ordering::Relaxed);
                return None;
            }
            self.checked[w].fetch_or(m, Ordering::Relaxed);
        }
        Some(self.bucket(i, b))
    }

    /// How many buckets failed their CRC when read.
    pub(crate) fn damaged(&self) -> u64 {
        self.damaged
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }

    /// How many buckets are clean.
    pub(crate) fn clean(&self) -> u64 {
        let dirty: u64 = self
            .dirty
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum();
        (WORDS * 64) as u64 - dirty
    }

    /// Whether the file's bytes have the CRC its trailer records.
    pub(crate) fn check_crc(&self) -> std::result::Result<(), String> {
        self.layout.check_crc(&self.map)
    }
}

/// What [`Store::freeze`] wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FreezeReport {
    pub generation: u64,
    /// Entries of all posting families (fingerprints, counted once per
    /// family).
    pub entries: u64,
    pub bytes: u64,
    pub path: PathBuf,
    pub seconds: f64,
}

/// The frozen index of an open store, as `stats` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FrozenState {
    pub generation: u64,
    pub entries: u64,
    pub bytes: u64,
    /// Buckets of the posting families unchanged since the freeze, and in
    /// all.
    pub clean_buckets: u64,
    pub buckets: u64,
    /// Buckets whose bytes failed their CRC when a query first read them
    /// (since the store was opened): read from RocksDB instead. Not 0:
    /// the file is damaged (`verify` says where; `simdb freeze` writes a
    /// new one).
    pub damaged_buckets: u64,
}

impl Store {
    /// The frozen index queries read clean buckets from, if any.
    pub(crate) fn frozen(&self) -> Option<Arc<Frozen>> {
        self.frozen.read().clone()
    }

    /// The frozen index's state (`Ok(None)`: none), or why the one the
    /// store names could not be used (queries then read every bucket from
    /// RocksDB; `verify` reports it and `simdb freeze` writes a new one).
    pub fn frozen_state(&self) -> std::result::Result<Option<FrozenState>, String> {
        if let Some(p) = self.frozen_problem.lock().clone() {
            return Err(p);
        }
        Ok(self.frozen().map(|f| FrozenState {
            generation: f.meta.generation,
            entries: f.meta.entries,
            bytes: f.meta.bytes,
            clean_buckets: f.clean(),
            buckets: (WORDS * 64) as u64,
            damaged_buckets: f.damaged(),
        }))
    }

    fn frozen_meta(&self) -> Result<Option<FrozenMeta>> {
        self.get_meta(FROZEN_KEY)?
            .map(|v| FrozenMeta::decode(&v).map_err(|r| Error::corrupt(META, FROZEN_KEY, r)))
            .transpose()
    }

    /// At open: maps the frozen index the store names and marks the
    /// buckets changed since; a writer also removes files no store names
    /// (an unfinished freeze, generations before the last two).
    pub(super) fn load_frozen(&self) -> Result<()> {
        let meta = self.frozen_meta()?;
        if self.access == Access::ReadWrite {
            self.remove_stale_frozen(meta.map(|m| m.generation));
        }
        let Some(meta) = meta else { return Ok(()) };
        let path = self.path.join(file_name(meta.generation));
        let f = match Frozen::open(&path, meta) {
            Ok(f) => f,
            Err(reason) => {
                *self.frozen_problem.lock() = Some(reason);
                return Ok(());
            }
        };
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(DIRTY_PREFIX.to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(META), ro);
        it.seek(DIRTY_PREFIX);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(DIRTY_PREFIX) {
                break;
            }
            let page = match k {
                [_, _, _, _, _, _, _, _, _, _, _, _, _, hi, lo] => {
                    usize::from(u16::from_be_bytes([*hi, *lo]))
                }
                _ => return Err(Error::corrupt(META, k, "not a frozen_dirty key")),
            };
            if page >= PAGES || v.len() != PAGE_WORDS * 8 {
                return Err(Error::corrupt(META, k, "frozen_dirty page out of range"));
            }
            for (n, c) in v.chunks_exact(8).enumerate() {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                let m = u64::from_le_bytes(a);
                f.dirty[page * PAGE_WORDS + n].fetch_or(m, Ordering::SeqCst);
                f.persisted[page * PAGE_WORDS + n].fetch_or(m, Ordering::SeqCst);
            }
            it.next();
        }
        it.status()?;
        *self.frozen.write() = Some(Arc::new(f));
        Ok(())
    }

    fn remove_stale_frozen(&self, current: Option<u64>) {
        let Ok(dir) = std::fs::read_dir(&self.path) else {
            return;
        };
        for e in dir.flatten() {
            let name = e.file_name();
            let Some((g, tmp)) = name.to_str().and_then(parse_name) else {
                continue;
            };
            let keep = !tmp && current.is_some_and(|c| g == c || g + 1 == c);
            if !keep {
                // Best effort: a file left behind costs disk, not answers.
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Marks bucket `b` of posting family `i` changed, in memory now (no
    /// query reads it from the frozen index any more) and, until a batch
    /// that says so commits, in every batch that changes it: `batch`
    /// notes its page, which [`Store::write`] puts. Every write of a
    /// posting bucket goes through here.
    pub(super) fn mark_dirty(&self, batch: &mut Batch, i: usize, b: u16) {
        let (w, m) = bit(i, b);
        // A freeze under way: what changes after its snapshot.
        if let Some(p) = self.frozen_pending.read().as_ref() {
            p[w].fetch_or(m, Ordering::SeqCst);
        }
        let frozen = self.frozen.read();
        let Some(f) = frozen.as_ref() else {
            return;
        };
        f.dirty[w].fetch_or(m, Ordering::SeqCst);
        if f.persisted[w].load(Ordering::SeqCst) & m == 0 {
            let page = (w / PAGE_WORDS) as u16;
            if batch.1.last() != Some(&page) {
                batch.1.push(page);
            }
        }
    }

    /// Puts into `batch` the pages its writes changed (from
    /// [`Store::mark_dirty`]) as they stand; returns them, for
    /// [`Store::dirty_persisted`] once the batch commits. The writer is
    /// the only one to set bits, so the latest value of a page holds every
    /// bit an earlier one did.
    pub(super) fn put_dirty_pages(&self, batch: &mut Batch) -> Vec<(u16, [u64; PAGE_WORDS])> {
        let Some(f) = self.frozen.read().clone() else {
            return Vec::new();
        };
        let mut pages = std::mem::take(&mut batch.1);
        pages.sort_unstable();
        pages.dedup();
        pages
            .into_iter()
            .map(|page| {
                let mut words = [0u64; PAGE_WORDS];
                for (n, w) in words.iter_mut().enumerate() {
                    *w = f.dirty[usize::from(page) * PAGE_WORDS + n].load(Ordering::SeqCst);
                }
                self.put_page(batch, page, &words);
                (page, words)
            })
            .collect()
    }

    /// Adds to `b` page `page` of the changed-bucket map, `words`.
    fn put_page(&self, b: &mut Batch, page: u16, words: &[u64; PAGE_WORDS]) {
        let v: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        b.0.put_cf(self.cf(META), dirty_key(page), v);
    }

    /// Adds to `b` the removal of every page of the changed-bucket map.
    fn clear_pages_in(&self, b: &mut Batch) {
        b.0.delete_range_cf(self.cf(META), DIRTY_PREFIX, DIRTY_END);
    }

    /// After the pages [`Store::put_dirty_pages`] put committed.
    pub(super) fn dirty_persisted(&self, pages: &[(u16, [u64; PAGE_WORDS])]) {
        if let Some(f) = self.frozen.read().clone() {
            for (page, words) in pages {
                for (n, w) in words.iter().enumerate() {
                    f.persisted[usize::from(*page) * PAGE_WORDS + n].fetch_or(*w, Ordering::SeqCst);
                }
            }
        }
    }

    /// Adds to `b` the removal of the frozen index (for a write that
    /// replaces a posting family wholesale), and stops using it now.
    pub(super) fn drop_frozen_in(&self, b: &mut Batch) {
        *self.frozen.write() = None;
        *self.frozen_problem.lock() = None;
        self.delete_meta_in(b, FROZEN_KEY);
        self.clear_pages_in(b);
    }

    /// Writes the frozen index of the posting families and makes the
    /// store read its clean buckets from it. `writers` is the lock every
    /// writer holds while it builds and commits a batch: the freeze holds
    /// it only twice, briefly. Under it, it starts noting the buckets
    /// writes change and takes a snapshot; it writes the file from that
    /// snapshot while writes go on (one pass over the posting families,
    /// writing about their size again); under it again, it commits the
    /// file with the buckets changed meanwhile marked, so no query reads
    /// their copy. One freeze at a time.
    pub fn freeze(&self, writers: &parking_lot::Mutex<()>) -> Result<FreezeReport> {
        if self.access != Access::ReadWrite {
            return Err(Error::Input(
                "freeze needs the store opened for writing".into(),
            ));
        }
        let _one_at_a_time = self.freezing.lock();
        let t = Instant::now();
        let at = {
            let _w = writers.lock();
            *self.frozen_pending.write() = Some(bitmap());
            self.db.snapshot()
        };
        // However the build ends, stop noting.
        struct Noting<'s>(&'s Store);
        impl Drop for Noting<'_> {
            fn drop(&mut self) {
                *self.0.frozen_pending.write() = None;
            }
        }
        let _noting = Noting(self);
        let generation = self.frozen_meta()?.map_or(1, |m| m.generation + 1);
        let path = self.path.join(file_name(generation));
        let tmp = self.path.join(format!("{}.tmp", file_name(generation)));
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let io = |e: std::io::Error| Error::io(&tmp, e);
        let mut w = FrozenWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            POSTING_FAMILIES,
            generation,
        )
        .map_err(io)?;
        for i in 0..POSTING_FAMILIES {
            w.begin_family();
            self.for_each_bucket_at(Some(&at), i, 0, u16::MAX, |b, fps| {
                w.bucket(b, fps).map_err(io)
            })?;
            w.end_family().map_err(io)?;
        }
        let (bw, _) = w.finish().map_err(io)?;
        bw.into_inner().map_err(|e| io(e.into_error()))?;
        drop(at);
        let meta = {
            let _w = writers.lock();
            let changed = self.frozen_pending.write().take();
            self.install_frozen(&tmp, generation, changed)?
        };
        Ok(FreezeReport {
            generation,
            entries: meta.entries,
            bytes: meta.bytes,
            path,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Makes the frozen index written at `file` (by [`FrozenWriter`], of
    /// this store's posting families as they are: a bulk import's) the
    /// store's, as generation 1. See [`Store::freeze`].
    pub fn adopt_frozen(&self, file: &Path) -> Result<()> {
        self.install_frozen(file, 1, None).map(|_| ())
    }

    /// Syncs `tmp`, renames it to generation `generation`'s name, checks
    /// it, and commits it as the store's frozen index, with the buckets of
    /// `changed` (written since the state it copies) marked changed, in
    /// memory and in the same batch.
    fn install_frozen(
        &self,
        tmp: &Path,
        generation: u64,
        changed: Option<Box<[AtomicU64]>>,
    ) -> Result<FrozenMeta> {
        let path = self.path.join(file_name(generation));
        File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(tmp, e))?;
        std::fs::rename(tmp, &path).map_err(|e| Error::io(&path, e))?;
        File::open(&self.path)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(&self.path, e))?;
        let f = Frozen::open_any(&path).map_err(|r| Error::corrupt(META, FROZEN_KEY, r))?;
        if f.meta.generation != generation {
            let r = format!(
                "{} is generation {}, not {generation}",
                path.display(),
                f.meta.generation
            );
            return Err(Error::corrupt(META, FROZEN_KEY, r));
        }
        let meta = f.meta;
        let mut b = Batch::default();
        self.put_meta_in(&mut b, FROZEN_KEY, &meta.encode());
        self.clear_pages_in(&mut b);
        if let Some(changed) = changed {
            for (page, words) in changed.chunks(PAGE_WORDS).enumerate() {
                let mut page_words = [0u64; PAGE_WORDS];
                for (n, w) in page_words.iter_mut().enumerate() {
                    *w = words[n].load(Ordering::SeqCst);
                    f.dirty[page * PAGE_WORDS + n].store(*w, Ordering::SeqCst);
                    f.persisted[page * PAGE_WORDS + n].store(*w, Ordering::SeqCst);
                }
                if page_words.iter().any(|w| *w != 0) {
                    self.put_page(&mut b, page as u16, &page_words);
                }
            }
        }
        let (k, v) = schema::format_version_entry(FORMAT_VERSION);
        self.put_meta_in(&mut b, k, &v);
        {
            // Queries pair a snapshot with the frozen index under this
            // lock: each sees the old file with the state before the
            // commit, or the new one with the state after.
            let mut g = self.frozen.write();
            self.write(b, true)?;
            *g = Some(Arc::new(f));
        }
        *self.frozen_problem.lock() = None;
        self.remove_stale_frozen(Some(generation));
        Ok(meta)
    }

    /// `verify`'s check of the frozen index: its CRC, and every clean
    /// bucket equal to the store's. Returns the problems found.
    pub fn check_frozen(&self) -> Result<Vec<String>> {
        if let Some(p) = self.frozen_problem.lock().clone() {
            return Ok(vec![format!("frozen index unusable: {p}")]);
        }
        let Some(f) = self.frozen() else {
            return Ok(Vec::new());
        };
        let mut problems = Vec::new();
        if let Err(r) = f.check_crc() {
            problems.push(format!("frozen index {}: {r}", f.path.display()));
            // Which buckets (queries read them from RocksDB).
            for i in 0..POSTING_FAMILIES {
                for b in 0..=u16::MAX {
                    if !f.layout.check_bucket(&f.map, i, b) && problems.len() < 20 {
                        problems.push(format!(
                            "frozen index: bucket {b} of {} fails its CRC (queries read it from \
                             the store; `simdb freeze` writes a new index)",
                            super::posting_family(i)
                        ));
                    }
                }
            }
            return Ok(problems);
        }
        for i in 0..POSTING_FAMILIES {
            let mut next = 0usize;
            let mut mismatch = |b: u16, fps: &[u8]| {
                if f.is_clean(i, b) && f.bucket(i, b) != fps && problems.len() < 20 {
                    problems.push(format!(
                        "frozen index: bucket {b} of {} differs from the store's, yet is marked unchanged",
                        super::posting_family(i)
                    ));
                }
            };
            self.for_each_bucket_in(i, 0, u16::MAX, |b, fps| {
                for empty in next..usize::from(b) {
                    mismatch(empty as u16, &[]);
                }
                mismatch(b, &crate::index::encode_posting(fps));
                next = usize::from(b) + 1;
                Ok(())
            })?;
            for empty in next..BUCKETS {
                mismatch(empty as u16, &[]);
            }
        }
        Ok(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_meta_round_trip() {
        assert_eq!(parse_name(&file_name(42)), Some((42, false)));
        assert_eq!(parse_name("frozen-0000000003.idx.tmp"), Some((3, true)));
        assert_eq!(parse_name("000012.sst"), None);
        let m = FrozenMeta {
            generation: 3,
            entries: 1 << 40,
            bytes: 9,
            crc: 0xdead_beef,
        };
        assert_eq!(FrozenMeta::decode(&m.encode()), Ok(m));
        assert_eq!(dirty_key(0x0102)[13..], [1, 2]);
        assert_eq!(PAGES, 1280);
    }
}
