//! Whole-store work: staged builds renamed into place (import, backup),
//! SST files, checkpoints, copies, clearing the index for a repair.

use std::path::{Path, PathBuf};

use rocksdb::{Cache, ReadOptions};

use super::{
    family_options, Batch, Store, Tuning, ALL_FAMILIES, BAND_FAMILIES, BLOCK_FAMILIES,
    DOC_COUNT_KEY, FORMAT_VERSION_KEY, MAGIC_KEY, META, RECIPE_KEY, REFS,
};
use crate::error::{Error, Result};
use crate::fingerprint::Recipe;

const STAGING_MARK: &str = "SIMDB-STAGING";

/// A directory beside a store-to-be where a bulk build (import, backup) puts
/// its temporary files and the new store; the store is renamed into place
/// when complete, so the target appears whole or not at all. A staging
/// directory left by a killed run carries a mark and is cleared by the next.
pub struct Staging {
    dir: PathBuf,
    target: PathBuf,
}

impl Staging {
    /// The staging directory of a build of `target` (`TARGET.building`).
    pub fn dir_for(target: &Path) -> PathBuf {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "store".into());
        target.with_file_name(format!("{name}.building"))
    }

    /// Starts a build of a new store at `target` (which must not exist).
    pub fn begin(target: &Path) -> Result<Staging> {
        if target.exists() {
            return Err(Error::AlreadyExists {
                path: target.to_path_buf(),
            });
        }
        let dir = Self::dir_for(target);
        if dir.exists() {
            if dir.join(STAGING_MARK).exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            } else {
                return Err(Error::AlreadyExists { path: dir });
            }
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        std::fs::write(dir.join(STAGING_MARK), b"").map_err(|e| Error::io(&dir, e))?;
        Ok(Staging {
            dir,
            target: target.to_path_buf(),
        })
    }

    /// A subdirectory for temporary files, created on demand.
    pub fn subdir(&self, name: &str) -> Result<PathBuf> {
        let d = self.dir.join(name);
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        Ok(d)
    }

    /// Creates the new store with `recipe` and the `meta` entries (the
    /// document count, and what else the store keeps: a learned IDF
    /// table, the short-document count) in one synced batch, ingests the
    /// SST files of each family, and renames the store into place.
    pub fn finish(
        self,
        recipe: &Recipe,
        tuning: Tuning,
        families: &[(&str, Vec<PathBuf>)],
        meta: &[(Vec<u8>, Vec<u8>)],
        frozen: Option<&Path>,
    ) -> Result<()> {
        let db_dir = self.dir.join("db");
        {
            let extra: Vec<(&[u8], &[u8])> = meta
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_slice()))
                .collect();
            let store = Store::create_with_meta(&db_dir, recipe, tuning, &extra)?;
            for (name, files) in families {
                store.ingest_ssts(name, files)?;
            }
            store.flush()?;
            // After the posting families: ingesting into one drops a
            // frozen index.
            if let Some(f) = frozen {
                store.adopt_frozen(f)?;
            }
        }
        if self.target.exists() {
            return Err(Error::AlreadyExists {
                path: self.target.clone(),
            });
        }
        std::fs::rename(&db_dir, &self.target).map_err(|e| Error::io(&self.target, e))?;
        sync_parent(&self.target);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(d) = std::fs::File::open(parent) {
        let _ = d.sync_all();
    }
}

/// Writes `entries` (strictly increasing keys) as SST files for family
/// `name` under `dir`, named `{prefix}-NNNNN.sst`, starting a new file every
/// `file_bytes`; returns the files in key order.
pub fn write_ssts<I>(
    dir: &Path,
    prefix: &str,
    name: &str,
    file_bytes: u64,
    entries: I,
) -> Result<Vec<PathBuf>>
where
    I: IntoIterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
{
    let cache = Cache::new_lru_cache(1 << 20);
    let opts = family_options(name, &cache);
    let mut files = Vec::new();
    let mut w: Option<rocksdb::SstFileWriter> = None;
    for e in entries {
        let (k, v) = e?;
        if w.is_none() {
            let path = dir.join(format!("{prefix}-{:05}.sst", files.len()));
            let nw = rocksdb::SstFileWriter::create(&opts);
            nw.open(&path)?;
            files.push(path);
            w = Some(nw);
        }
        if let Some(cur) = w.as_mut() {
            cur.put(&k, &v)?;
            if cur.file_size() >= file_bytes {
                cur.finish()?;
                w = None;
            }
        }
    }
    if let Some(mut cur) = w {
        cur.finish()?;
    }
    Ok(files)
}

impl Store {
    /// Ingests sorted SST files built by [`write_ssts`] into family `name`
    /// (moved, not copied). For bulk loads into an empty store.
    pub fn ingest_ssts(&self, name: &str, files: &[PathBuf]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        if super::is_posting_family(name) && self.get_meta(super::FROZEN_KEY)?.is_some() {
            let mut b = Batch::default();
            self.drop_frozen_in(&mut b);
            self.write(b, true)?;
        }
        let mut o = rocksdb::IngestExternalFileOptions::default();
        o.set_move_files(true);
        self.db
            .ingest_external_file_cf_opts(self.cf(name), &o, files.to_vec())?;
        Ok(())
    }

    /// A consistent copy of the store at `dest` made of hard links (RocksDB
    /// checkpoint). Needs the store opened for writing.
    pub fn checkpoint(&self, dest: &Path) -> Result<()> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dest)?;
        // The frozen index the checkpoint's meta names (it never changes:
        // a link is a copy).
        if let Some(f) = self.frozen() {
            let to = dest.join(super::frozen::file_name(f.meta.generation));
            std::fs::hard_link(&f.path, &to)
                .or_else(|_| std::fs::copy(&f.path, &to).map(|_| ()))
                .map_err(|e| Error::io(&to, e))?;
        }
        sync_parent(dest);
        Ok(())
    }

    /// A consistent copy of the store at `dest`, made from this handle's
    /// view (for a read-only handle: the store as it was when opened) by
    /// writing every family as SST files into a fresh store. Works while
    /// another process writes to the store.
    pub fn copy_to(&self, dest: &Path, recipe: &Recipe, tuning: Tuning) -> Result<()> {
        let staging = Staging::begin(dest)?;
        let sst = staging.subdir("sst")?;
        let mut families = Vec::new();
        // A snapshot keeps the families consistent with each other.
        let snap = self.db.snapshot();
        for name in ALL_FAMILIES.iter().filter(|n| **n != META) {
            let mut ro = ReadOptions::default();
            ro.set_total_order_seek(true);
            ro.fill_cache(false);
            ro.set_snapshot(&snap);
            let mut it = self.db.raw_iterator_cf_opt(self.cf(name), ro);
            it.seek_to_first();
            let entries = std::iter::from_fn(|| {
                let kv = match (it.key(), it.value()) {
                    (Some(k), Some(v)) => Some(Ok((k.to_vec(), v.to_vec()))),
                    _ => it.status().err().map(|e| Err(Error::from(e))),
                };
                it.next();
                kv
            });
            families.push((*name, write_ssts(&sst, name, name, 256 << 20, entries)?));
        }
        // Every meta entry of the view (document and short-document
        // counts, a learned IDF table, …) except those the new store writes
        // itself.
        let mut meta = Vec::new();
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&snap);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(META), ro);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if ![MAGIC_KEY, FORMAT_VERSION_KEY, RECIPE_KEY].contains(&k) {
                meta.push((k.to_vec(), v.to_vec()));
            }
            it.next();
        }
        it.status()?;
        if !meta.iter().any(|(k, _)| k == DOC_COUNT_KEY) {
            return Err(Error::corrupt(META, DOC_COUNT_KEY, "missing"));
        }
        staging.finish(recipe, tuning, &families, &meta, None)
    }

    /// Adds to `batch` the removal of every `refs` entry and index key.
    pub fn clear_index(&self, b: &mut Batch) {
        for name in BLOCK_FAMILIES
            .iter()
            .chain(&BAND_FAMILIES)
            .chain([REFS, super::PARTS].iter())
        {
            // A posting family's keys are 2 or 6 bytes, a `parts` key 16;
            // a `refs` key is 8 bytes of fingerprint, then an id in UTF-8,
            // which never holds a 0xff byte: every key sorts below 17
            // bytes of 0xff.
            b.0.delete_range_cf(self.cf(name), &[][..], &[0xff; 17][..]);
        }
        self.drop_frozen_in(b);
        self.clear_order(b);
        self.forget_heads();
    }
}
