//! The only module that imports RocksDB.
//!
//! # Column families
//!
//! | family   | key                                        | value                     |
//! |----------|--------------------------------------------|---------------------------|
//! | `block0` | block 0 of the fingerprints, u16 BE (‖ segment, u32 BE) | head or sealed segment of a posting (see [`crate::index`]) |
//! | `block1` | block 1 (‖ segment)                        | posting                   |
//! | `block2` | block 2 (‖ segment)                        | posting                   |
//! | `block3` | block 3 (‖ segment)                        | posting                   |
//! | `band0`…`band15` | band value, u16 BE (‖ segment)     | posting (format 7 on; see [`crate::index::bands`]) |
//! | `refs`   | fingerprint ‖ id ([`RefKey`])              | the sketch (32 bytes) and part hashes (8 bytes each, format 10 on), or nothing |
//! | `parts`  | part hash ‖ fingerprint, u64 BE each (format 10 on) | nothing (see [`crate::index::parts`]) |
//! | `docs`   | document id, UTF-8                         | framed record ([`codec`]) |
//! | `meta`   | ASCII name                                 | see below                 |
//! | `clusters` | `d`/`m`/`s` ‖ … (see [`schema`])         | cluster id, id, or size   |
//! | `texts`  | document id, UTF-8 (format 11 on)          | the text it was fingerprinted from, UTF-8 (only in a store made with `keep_texts`) |
//! | `decisions` | `n`/`l` ‖ … (format 12 on; see [`schema`]) | a "not a copy" pair's log sequence, or a log entry |
//!
//! One document = one record, one `refs` entry and one ingest-order entry;
//! its fingerprint has one entry in a bucket of each block family, shared
//! by every document with that fingerprint (added by a merge operand when
//! the first arrives, removed when the last leaves: postings are never
//! rewritten by a write), and one in a bucket of each band family when its
//! first document (smallest id) has a sketch, and one key in `parts` per
//! part hash of that first document, all in one `WriteBatch`.
//!
//! # Family tuning
//!
//! The block families hold one key per bucket (65,536 at most each), read
//! by point lookups (a multi-get per query): whole-key bloom filters, no
//! compression (random fingerprints do not compress; a read then needs no
//! decompression), 16 KiB blocks, and the posting merge operator. `parts`
//! holds one key per (part, fingerprint) and is read by a seek per part
//! (8-byte prefix extractor and bloom filter: a part no document has costs
//! a filter probe), never more than [`crate::index::parts::PartProbe`]'s
//! cap plus one key, however many documents share the part. `refs`
//! (8-byte prefix extractor: a query finds the documents of a fingerprint
//! under its prefix) and `docs` are read by point lookups: whole-key bloom
//! filters and LZ4. Table files are read through `mmap`
//! ([`Tuning::mmap_reads`]): uncompressed blocks, the postings, are read in
//! place from the OS page cache; decompressed blocks of the other families
//! share one LRU block cache ([`Tuning::block_cache_bytes`]). Memtables are
//! capped at 256 MiB in total, so a process's own memory stays well under
//! 1 GiB (the mapped table pages are the OS's cache, not the process's).
//!
//! # Meta entries
//!
//! ```text
//! key              value
//! "magic"          the 12 bytes "simdb-store\n"
//! "format_version" u32 big-endian (this build writes 13, with or without a
//!                  frozen index; migrates 2 to 12)
//! "recipe"         UTF-8 JSON of the fingerprint Recipe
//! "doc_count"      u64 big-endian, number of documents (updated in each write batch)
//! "short_count"    u64 big-endian, documents with fewer than 10 terms (absent = 0)
//! "extraction"     UTF-8, how the store's web pages became text (absent: none)
//! "idf_table"      only with a learned IDF: "simdb-idf v1 docs=N", then "term\tidf" lines
//! "next_ord"       u64 big-endian, the ord the next written document takes (absent = 0)
//! "clock"          u64 big-endian, the latest `ingested_at` written (absent = 0):
//!                  a write never stamps an earlier time, so ord order is time order
//! "frozen", "frozen_dirty/…"  the frozen index and the buckets changed since (see `frozen`)
//! "keep_texts"     b"1": every text written is kept in `texts` (set at creation)
//! ```

mod bulk;
mod clusters;
pub mod codec;
mod decisions;
mod frozen;
mod postings;
mod prefetch;
mod query;
pub mod schema;

pub use bulk::{write_ssts, Staging};
pub use frozen::{FreezeReport, FrozenState, FROZEN_KEY};
pub(crate) use prefetch::{PlanKey, Prefetch, Prefetched};
pub(crate) use query::{Flow, Snapshot};

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Options,
    ReadOptions, SliceTransform, WriteBatch, WriteOptions, DB,
};

pub use codec::{Priority, Record};

use crate::error::{Error, Result};
use crate::fingerprint::{Recipe, BLOCKS};
use crate::index::bands::BANDS;
use crate::index::{self, RefKey};

/// Name of the block families' merge operator (RocksDB records it in each
/// SST file; see [`index::merge_posting`]).
const POSTING_MERGE: &str = "simdb-posting-v2";

/// Names of the four block families, in block order.
pub const BLOCK_FAMILIES: [&str; BLOCKS] = ["block0", "block1", "block2", "block3"];
/// Name of the documents family.
pub const DOCS: &str = "docs";
/// Name of the family from [`DocKey`] to document id.
pub const REFS: &str = "refs";
/// Name of the meta family.
pub const META: &str = "meta";
/// Name of the clusters family (see [`schema`]).
pub const CLUSTERS: &str = "clusters";
/// Names of the sixteen band families (format 7 on), in band order: the
/// buckets of the sketch's bands (see [`crate::index::bands`]).
pub const BAND_FAMILIES: [&str; BANDS] = [
    "band0", "band1", "band2", "band3", "band4", "band5", "band6", "band7", "band8", "band9",
    "band10", "band11", "band12", "band13", "band14", "band15",
];
/// Name of the family of part keys (format 10 on): part hash ‖
/// fingerprint → nothing (see [`crate::index::parts`]).
pub const PARTS: &str = "parts";
/// Name of the family of kept texts (format 11 on): document id → the
/// text it was fingerprinted from, written only in a store created to keep
/// them ([`KEEP_TEXTS_KEY`]).
pub const TEXTS: &str = "texts";
/// Name of the family of review decisions (format 12 on): "not a copy"
/// pairs and the decision log (see [`schema`]).
pub const DECISIONS: &str = "decisions";
/// Number of posting families: the four block families, then the band
/// families. A posting family is named by its number in this order
/// ([`posting_family`]); all have one layout (see [`crate::index`]).
pub const POSTING_FAMILIES: usize = BLOCKS + BANDS;
/// Every family, in a fixed order.
pub const ALL_FAMILIES: [&str; 11 + BANDS] = [
    "block0", "block1", "block2", "block3", REFS, DOCS, META, CLUSTERS, "band0", "band1", "band2",
    "band3", "band4", "band5", "band6", "band7", "band8", "band9", "band10", "band11", "band12",
    "band13", "band14", "band15", PARTS, TEXTS, DECISIONS,
];

/// The name of posting family `i`: block family `i` below [`BLOCKS`], band
/// family `i - BLOCKS` from there.
pub fn posting_family(i: usize) -> &'static str {
    if i < BLOCKS {
        BLOCK_FAMILIES[i]
    } else {
        BAND_FAMILIES[i - BLOCKS]
    }
}

/// Whether `name` is a posting family (block or band).
fn is_posting_family(name: &str) -> bool {
    BLOCK_FAMILIES.contains(&name) || BAND_FAMILIES.contains(&name)
}

/// A batch of writes, applied atomically across families by
/// [`Store::write`] (RocksDB's write batch; the type keeps RocksDB out of
/// the modules above the store).
#[derive(Default)]
pub struct Batch(WriteBatch, Vec<u16>);

/// Memory knobs of an open store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Size of the LRU block cache shared by all families (default 256 MiB).
    pub block_cache_bytes: usize,
    /// Size of RocksDB's row cache (0 = none): whole values of point
    /// lookups, bucket postings above all, served without the block
    /// machinery.
    pub row_cache_bytes: usize,
    /// Table files RocksDB keeps open at once (`max_open_files`; default
    /// 512, at least 20); the others are opened when read. Bounded so that
    /// a store cannot take every descriptor the process has.
    pub max_open_files: u32,
    /// Read table files through `mmap` (default on): a read takes its
    /// block from the OS page cache in place, with no `pread` copy and no
    /// block-cache insert and eviction. The postings are stored
    /// uncompressed, so a bucket read costs no copy at all; this is what
    /// keeps a store whose band and block families outgrow the block
    /// cache (5M documents: ~800 MB; 50M: ~8 GB) near the speed of one
    /// that fits (docs/performance.md, "Reads through mmap"). Off, every
    /// block comes through the block cache and a miss is a `pread`.
    pub mmap_reads: bool,
    /// Open every table file when the store opens and keep it open
    /// (RocksDB's `max_open_files = -1`; default off). A reader that lives
    /// beside a writer, a service replica (`serve --read-only`), then
    /// never meets a file that the writer's compaction removed after the
    /// open: the open descriptor keeps it readable. Costs one descriptor
    /// per table file, and an open that reads every file's footer.
    pub open_all_files: bool,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            block_cache_bytes: 256 << 20,
            row_cache_bytes: 0,
            max_open_files: 512,
            mmap_reads: true,
            open_all_files: false,
        }
    }
}

/// Meta key and value of the magic.
pub const MAGIC_KEY: &[u8] = b"magic";
pub const MAGIC: &[u8] = b"simdb-store\n";
/// Meta key of the format version.
pub const FORMAT_VERSION_KEY: &[u8] = b"format_version";
/// The on-disk format version this build writes and reads, with or
/// without a frozen index (see `frozen`): format 9 (version 5 records,
/// with their document time, and the `t` index of the documents that have
/// one; the `newest` keep policy ranks by that time) plus the parts:
/// version 6 records and `refs` values keep a document's part hashes, and
/// the `parts` family holds the part keys ([`crate::index::parts`]);
/// format 11 adds the `texts` family, format 12 the
/// `decisions` family, format 13 "keep this one" (version 7 records, `k`
/// keys in `decisions`, and rank keys of kept documents below every keep
/// policy's, `KEPT_KEYS`, 2^32), format 14 the fine sketch (version 8
/// records; [`crate::fingerprint::fine`]).
pub const FORMAT_VERSION: u32 = 14;
/// The oldest format `simdb migrate` brings to [`FORMAT_VERSION`] in place
/// (2: postings of single keys; 3: no ords and no clusters; 4: postings
/// with an entry per document, `refs` keyed by fingerprint ‖ sequence
/// number; 5 and 6: no band families; 7 and 8: version 4 records, ranks
/// of `newest` by ord; 9: no parts, and its documents get none, having no
/// text to make them from; 10 to 12: the rank keys of `first` are 0, raised
/// to `KEPT_KEYS` (2^32); 13: no fine sketches, and its documents keep
/// none: only the format number changes).
pub const MIGRATABLE_FORMAT_VERSION: u32 = 2;
/// Meta key that makes a store keep its texts (value `b"1"`, written at
/// creation; absent: it keeps none).
pub const KEEP_TEXTS_KEY: &[u8] = b"keep_texts";
/// Meta key of the keep policy (format 6 on; see [`schema::KeepPolicy`]).
pub const KEEP_POLICY_KEY: &[u8] = b"keep_policy";
/// Meta key of the ord the next written document takes.
pub const NEXT_ORD_KEY: &[u8] = b"next_ord";
/// Meta key of the latest `ingested_at` written.
pub const CLOCK_KEY: &[u8] = b"clock";
/// Meta key of the recipe.
pub const RECIPE_KEY: &[u8] = b"recipe";
/// Meta key of the document count.
pub const DOC_COUNT_KEY: &[u8] = b"doc_count";
/// Meta key of a learned IDF table (see `fingerprint::LearnedIdf`).
pub const IDF_TABLE_KEY: &[u8] = b"idf_table";
/// Meta key present while `verify --repair` rebuilds the index: written
/// in the batch that clears the index, removed in the batch that finishes
/// the rebuild; open refuses a store that has it.
pub const REPAIR_MARKER_KEY: &[u8] = b"repair_in_progress";
/// Meta key present while the clusters are rebuilt (a new keep policy, a
/// migration, a repair): written with the batch that clears the clusters
/// family, deleted with the batch that writes the last of them and the
/// policy they were built under (its value, the policy's name). A store
/// that has it opens only to finish the rebuild.
pub const CLUSTERS_MARKER_KEY: &[u8] = b"clusters_rebuilding";
/// Meta key of the page extraction the store's web pages went through
/// (UTF-8, [`crate::web::EXTRACTION`]); written with the first page,
/// absent in a store that has none.
pub const EXTRACTION_KEY: &[u8] = b"extraction";
/// Meta key of the number of short documents (u64 BE; see
/// [`crate::fingerprint::SHORT_TERMS`]).
pub const SHORT_COUNT_KEY: &[u8] = b"short_count";

/// How to open a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Exclusive writer.
    ReadWrite,
    /// Reader; works while another process writes, and sees the store as of
    /// the moment it was opened.
    ReadOnly,
}

/// An open RocksDB holding a simdb store.
pub struct Store {
    db: DB,
    path: PathBuf,
    access: Access,
    _cache: Cache,
    /// Whether one query may read its families on two threads (see
    /// [`Store::candidates`]).
    pub(crate) parallel_probe: bool,
    /// The writer's knowledge of the buckets it touched (see `postings`).
    heads: std::sync::Mutex<postings::Heads>,
    /// What this handle read, for [`Store::reads`].
    reads: ReadCounts,
    /// Write-ahead log syncs asked for (synced writes and
    /// [`Store::sync_wal`]).
    wal_syncs: std::sync::atomic::AtomicU64,
    /// The memory knobs it was opened with.
    tuning: Tuning,
    /// The frozen index that clean buckets are read from (see `frozen`).
    frozen: parking_lot::RwLock<Option<std::sync::Arc<frozen::Frozen>>>,
    /// Why the frozen index the store names is not used, if it is not.
    frozen_problem: parking_lot::Mutex<Option<String>>,
    /// While a freeze writes its file: the buckets writes change.
    frozen_pending: parking_lot::RwLock<Option<Box<[std::sync::atomic::AtomicU64]>>>,
    /// Held by a freeze from start to end.
    freezing: parking_lot::Mutex<()>,
    /// Whether writes keep their texts in [`TEXTS`] ([`KEEP_TEXTS_KEY`]).
    keep_texts: bool,
    /// Whether the store has (or had since its open) a "not a copy" pair:
    /// without one, the placement rule reads nothing.
    has_vetoes: std::sync::atomic::AtomicBool,
    /// Whether a "keep this one" decision stands (or stood since the open).
    has_keeps: std::sync::atomic::AtomicBool,
}

/// What a store handle has read since it was opened: the work of its
/// queries and writes, counted (see `Admin::reads`).
#[derive(Debug, Default)]
pub(crate) struct ReadCounts {
    pub refs: std::sync::atomic::AtomicU64,
    pub records: std::sync::atomic::AtomicU64,
    pub buckets: std::sync::atomic::AtomicU64,
}

/// Reads made so far, by kind (see `Admin::reads`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reads {
    /// `refs` entries read (a document of a candidate fingerprint each).
    pub refs: u64,
    /// Records read (by id, or to check a hit).
    pub records: u64,
    /// Bucket values read from the store (heads and sealed segments; the
    /// writer's hot buckets in memory are not counted).
    pub buckets: u64,
}

impl ReadCounts {
    #[inline]
    pub(crate) fn add(counter: &std::sync::atomic::AtomicU64, n: u64) {
        counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Store {
    /// What this handle has read so far.
    pub fn reads(&self) -> Reads {
        use std::sync::atomic::Ordering::Relaxed;
        Reads {
            refs: self.reads.refs.load(Relaxed),
            records: self.reads.records.load(Relaxed),
            buckets: self.reads.buckets.load(Relaxed),
        }
    }
}

fn table_options(cache: &Cache, bloom: bool) -> BlockBasedOptions {
    let mut b = BlockBasedOptions::default();
    b.set_block_cache(cache);
    if bloom {
        b.set_bloom_filter(10.0, false);
    }
    b.set_format_version(6);
    b
}

pub(crate) fn family_options(name: &str, cache: &Cache) -> Options {
    let mut o = Options::default();
    if is_posting_family(name) {
        // One key per bucket, read by point lookups (whole-key bloom
        // filter); the posting is random 8-byte fingerprints, which do not
        // compress, so blocks are stored plain and read without a
        // decompression step.
        o.set_merge_operator(
            POSTING_MERGE,
            |_key: &[u8], existing: Option<&[u8]>, ops: &rocksdb::MergeOperands| {
                Some(index::merge_posting(existing, ops))
            },
            |_key: &[u8], _existing: Option<&[u8]>, ops: &rocksdb::MergeOperands| {
                Some(index::concat_operands(ops))
            },
        );
        o.set_compression_type(DBCompressionType::None);
        // A bloom filter over the memtable's keys too (RocksDB builds none
        // unless given a size): most probed buckets are absent from a
        // memtable, and without it each costs a skiplist search.
        o.set_memtable_whole_key_filtering(true);
        o.set_memtable_prefix_bloom_ratio(0.01);
        let mut b = table_options(cache, true);
        b.set_block_size(16 * 1024);
        o.set_block_based_table_factory(&b);
    } else if name == PARTS {
        // Read by a seek per part hash (the key's first 8 bytes): a
        // prefix bloom filter answers most (a new text's parts are in no
        // document); random keys do not compress.
        o.set_prefix_extractor(SliceTransform::create_fixed_prefix(8));
        o.set_memtable_prefix_bloom_ratio(0.05);
        o.set_compression_type(DBCompressionType::None);
        let b = table_options(cache, true);
        o.set_block_based_table_factory(&b);
    } else if name == REFS {
        o.set_prefix_extractor(SliceTransform::create_fixed_prefix(
            index::REF_KEY_PREFIX_LEN,
        ));
        o.set_memtable_prefix_bloom_ratio(0.1);
        o.set_compression_type(DBCompressionType::Lz4);
        let b = table_options(cache, true);
        o.set_block_based_table_factory(&b);
    } else if name == DOCS || name == CLUSTERS || name == TEXTS || name == DECISIONS {
        o.set_compression_type(DBCompressionType::Lz4);
        let b = table_options(cache, true);
        o.set_block_based_table_factory(&b);
    } else {
        let b = table_options(cache, false);
        o.set_block_based_table_factory(&b);
    }
    o
}

/// Whether an error of RocksDB's open is its `LOCK` file being held: an
/// I/O error that RocksDB words as "While lock file: …" (another process)
/// or "lock hold by current process" (this one; `env/fs_posix.cc`).
/// Anything else, a corruption found at open above all, is not "in use".
fn is_lock_error(e: &rocksdb::Error) -> bool {
    e.kind() == rocksdb::ErrorKind::IOError && is_lock_message(e.as_ref())
}

fn is_lock_message(s: &str) -> bool {
    s.contains("While lock file:") || s.contains("lock hold by current process")
}

/// Whether a process holds the store's write lock (RocksDB's `LOCK` file,
/// an fcntl lock) right now.
///
/// The probe must not open `LOCK`: closing any descriptor of a file drops
/// every POSIX lock the process holds on it, RocksDB's own included when
/// this process is the writer. On Linux it reads `/proc/locks` and looks
/// for a lock on the file's device and inode (up to three reads); elsewhere
/// it says false.
pub fn writer_active(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(m) = std::fs::metadata(path.join("LOCK")) else {
            return false;
        };
        // /proc/locks is produced a page at a time: while other processes
        // take and drop locks, a line can be skipped between two reads. A
        // lock seen once is there; not seeing it is checked three times.
        (0..3).any(|_| {
            std::fs::read_to_string("/proc/locks")
                .is_ok_and(|locks| locks_name_file(&locks, m.dev(), m.ino()))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        false
    }
}

/// Whether `/proc/locks` text lists a lock (not a waiter) on the file of
/// device `dev` and inode `ino` (printed as `MAJOR:MINOR:INODE`, the first
/// two in hex).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn locks_name_file(locks: &str, dev: u64, ino: u64) -> bool {
    // glibc's encoding of major and minor device numbers.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let want = format!("{major:02x}:{minor:02x}:{ino}");
    locks
        .lines()
        .filter(|l| !l.contains("->"))
        .any(|l| l.split_whitespace().any(|f| f == want))
}

fn descriptors(cache: &Cache) -> Vec<ColumnFamilyDescriptor> {
    ALL_FAMILIES
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, family_options(n, cache)))
        .collect()
}

fn db_options(create: bool, tuning: Tuning) -> Options {
    let mut o = Options::default();
    if tuning.row_cache_bytes > 0 {
        o.set_row_cache(&Cache::new_lru_cache(tuning.row_cache_bytes));
    }
    o.create_if_missing(create);
    o.create_missing_column_families(create);
    o.set_max_open_files(i32::try_from(tuning.max_open_files.max(20)).unwrap_or(i32::MAX));
    o.set_max_background_jobs(2);
    o.set_keep_log_file_num(3);
    // Opening reads each family's table files with up to 16 threads per
    // family (RocksDB's default): ~100 threads created and torn down for a
    // store of a few dozen files, most of a short command's wall time.
    o.set_max_file_opening_threads(1);
    // Nor read every table file's properties to update statistics that
    // only compaction heuristics use.
    o.set_skip_stats_update_on_db_open(true);
    // All memtables together; the default (64 MiB per family, two each)
    // could reach ~900 MiB over seven families.
    o.set_db_write_buffer_size(256 << 20);
    o.set_allow_mmap_reads(tuning.mmap_reads);
    if tuning.open_all_files {
        o.set_max_open_files(-1);
        o.set_max_file_opening_threads(4);
    }
    o
}

impl Store {
    /// Creates a new store at `path` (which must not exist or be an empty
    /// directory) with `recipe`, writing `extra` meta entries (a learned IDF
    /// table, counts) in the same synced batch as the magic, version and
    /// recipe: a crash leaves no store or a whole one, never a recipe that
    /// names a table that is not there.
    pub fn create_with_meta(
        path: &Path,
        recipe: &Recipe,
        tuning: Tuning,
        extra: &[(&[u8], &[u8])],
    ) -> Result<Store> {
        if path.exists() {
            let empty = path.is_dir()
                && std::fs::read_dir(path)
                    .map_err(|e| Error::io(path, e))?
                    .next()
                    .is_none();
            if !empty {
                return Err(Error::AlreadyExists {
                    path: path.to_path_buf(),
                });
            }
        }
        let cache = Cache::new_lru_cache(tuning.block_cache_bytes);
        let db = DB::open_cf_descriptors(&db_options(true, tuning), path, descriptors(&cache))?;
        let store = Store {
            db,
            path: path.to_path_buf(),
            access: Access::ReadWrite,
            _cache: cache,
            parallel_probe: true,
            heads: Default::default(),
            reads: Default::default(),
            wal_syncs: Default::default(),
            tuning,
            frozen: Default::default(),
            frozen_problem: Default::default(),
            frozen_pending: Default::default(),
            freezing: Default::default(),
            keep_texts: extra.iter().any(|(k, _)| *k == KEEP_TEXTS_KEY),
            has_vetoes: Default::default(),
            has_keeps: Default::default(),
        };
        let meta = store.cf(META);
        let mut b = Batch::default();
        let (k, v) = schema::magic_entry();
        b.0.put_cf(meta, k, v);
        let (k, v) = schema::format_version_entry(FORMAT_VERSION);
        b.0.put_cf(meta, k, v);
        let (k, v) = schema::recipe_entry(recipe).map_err(Error::Input)?;
        b.0.put_cf(meta, k, v);
        let (k, v) = schema::MetaU64::DocCount.entry(0);
        b.0.put_cf(meta, k, v);
        let (k, v) = schema::keep_policy_entry(schema::KeepPolicy::default());
        b.0.put_cf(meta, k, v);
        for (k, v) in extra {
            b.0.put_cf(meta, k, v);
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        store.db.write_opt(b.0, &wo)?;
        Ok(store)
    }

    /// Opens an existing store and checks magic, format version and recipe.
    pub fn open(path: &Path, access: Access, tuning: Tuning) -> Result<(Store, Recipe)> {
        Self::open_inner(path, access, tuning, false, false).map(|(s, r, _)| (s, r))
    }

    /// Opens a store for writing even if a repair was interrupted (for
    /// `verify --repair`, which finishes it).
    pub fn open_for_repair(path: &Path) -> Result<(Store, Recipe)> {
        Self::open_inner(path, Access::ReadWrite, Tuning::default(), false, true)
            .map(|(s, r, _)| (s, r))
    }

    /// Opens a store for writing whatever its (known) format version, and
    /// even if a repair was interrupted (migration ends with one, and a
    /// migration run again finishes it); returns the version too.
    pub fn open_for_migration(path: &Path) -> Result<(Store, Recipe, u32)> {
        Self::open_inner(path, Access::ReadWrite, Tuning::default(), true, true)
    }

    fn open_inner(
        path: &Path,
        access: Access,
        tuning: Tuning,
        any_version: bool,
        repairing: bool,
    ) -> Result<(Store, Recipe, u32)> {
        if !path.exists() {
            return Err(Error::NoSuchStore {
                path: path.to_path_buf(),
            });
        }
        let not_simdb = |reason: &str| Error::NotASimdbStore {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        if !path.is_dir() {
            return Err(not_simdb("not a directory"));
        }
        if !path.join("CURRENT").exists() {
            return Err(not_simdb("no RocksDB CURRENT file"));
        }
        let families = DB::list_cf(&Options::default(), path)
            .map_err(|e| not_simdb(&format!("cannot list column families: {e}")))?;
        if !families.iter().any(|f| f == META) {
            return Err(not_simdb(&format!("column family '{META}' is missing")));
        }
        let cache = Cache::new_lru_cache(tuning.block_cache_bytes);
        let opts = db_options(false, tuning);
        // Open with the families the store has, so an older format can be
        // recognised (and named) rather than refused as foreign.
        let descs = || -> Vec<ColumnFamilyDescriptor> {
            families
                .iter()
                .filter(|f| f.as_str() != "default")
                .map(|f| {
                    let mut o = family_options(f, &cache);
                    if access == Access::ReadOnly {
                        // A reader never fills a memtable: no memtable bloom
                        // filter (`refs` would allocate and zero 6 MiB of it
                        // per memtable at open, most of a short command's
                        // page faults).
                        o.set_memtable_prefix_bloom_ratio(0.0);
                    }
                    ColumnFamilyDescriptor::new(f, o)
                })
                .collect()
        };
        let mut attempts = 0u64;
        let db = loop {
            let opened = match access {
                Access::ReadWrite => DB::open_cf_descriptors(&opts, path, descs()),
                Access::ReadOnly => DB::open_cf_descriptors_read_only(&opts, path, descs(), false),
            };
            match opened {
                // A read-only open reads the MANIFEST, then the table files
                // it names: a writer's flush or compaction may delete one
                // in between. The store is whole; its new MANIFEST names
                // the files that replaced it, so open again.
                Err(e)
                    if access == Access::ReadOnly
                        && attempts < READ_ONLY_OPEN_ATTEMPTS
                        && e.to_string().contains("No such file or directory") =>
                {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10 * attempts));
                }
                other => break other,
            }
        }
        .map_err(|e| {
            if is_lock_error(&e) {
                Error::InUse {
                    path: path.to_path_buf(),
                }
            } else {
                Error::from(e)
            }
        })?;
        let store = Store {
            db,
            path: path.to_path_buf(),
            access,
            _cache: cache,
            parallel_probe: true,
            heads: Default::default(),
            reads: Default::default(),
            wal_syncs: Default::default(),
            tuning,
            frozen: Default::default(),
            frozen_problem: Default::default(),
            frozen_pending: Default::default(),
            freezing: Default::default(),
            keep_texts: false,
            has_vetoes: Default::default(),
            has_keeps: Default::default(),
        };
        let meta = store.cf(META);
        match store.db.get_cf(meta, MAGIC_KEY)? {
            Some(m) if m == MAGIC => {}
            Some(_) => return Err(not_simdb("wrong magic in the meta family")),
            None => return Err(not_simdb("no magic in the meta family")),
        }
        let version = store
            .db
            .get_cf(meta, FORMAT_VERSION_KEY)?
            .ok_or_else(|| Error::corrupt(META, FORMAT_VERSION_KEY, "missing"))?;
        let version = codec::decode_format_version(&version)
            .map_err(|r| Error::corrupt(META, FORMAT_VERSION_KEY, r))?;
        if version > FORMAT_VERSION {
            return Err(Error::NewerFormat {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if (MIGRATABLE_FORMAT_VERSION..FORMAT_VERSION).contains(&version) && !any_version {
            return Err(Error::NeedsMigration {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if version < MIGRATABLE_FORMAT_VERSION {
            return Err(Error::OlderFormat {
                path: path.to_path_buf(),
                found: version,
                supported: MIGRATABLE_FORMAT_VERSION,
            });
        }
        for want in ALL_FAMILIES {
            // Stores before format 4 have no clusters family; migration
            // makes it.
            if want == CLUSTERS && version < 4 {
                continue;
            }
            // Nor band families before format 7, nor parts before 10,
            // nor texts before 11, nor decisions before 12.
            if (BAND_FAMILIES.contains(&want) && version < 7)
                || (want == PARTS && version < 10)
                || (want == TEXTS && version < 11)
                || (want == DECISIONS && version < 12)
            {
                continue;
            }
            if !families.iter().any(|f| f == want) {
                return Err(not_simdb(&format!("column family '{want}' is missing")));
            }
        }
        let recipe = store
            .db
            .get_cf(meta, RECIPE_KEY)?
            .ok_or_else(|| Error::corrupt(META, RECIPE_KEY, "missing"))?;
        let recipe =
            codec::decode_recipe(&recipe).map_err(|r| Error::corrupt(META, RECIPE_KEY, r))?;
        if !repairing && store.db.get_cf(meta, REPAIR_MARKER_KEY)?.is_some() {
            return Err(Error::RepairInProgress {
                path: path.to_path_buf(),
            });
        }
        if !repairing {
            if let Some(keep) = store.db.get_cf(meta, CLUSTERS_MARKER_KEY)? {
                return Err(Error::ClustersIncomplete {
                    path: path.to_path_buf(),
                    keep: String::from_utf8_lossy(&keep).into_owned(),
                });
            }
        }
        let keep_texts = store.db.get_cf(meta, KEEP_TEXTS_KEY)?.is_some();
        let mut store = store;
        store.keep_texts = keep_texts;
        if version >= 12 {
            store.note_decisions()?;
        }
        store.load_frozen()?;
        Ok((store, recipe, version))
    }

    /// RocksDB's last sequence number in this handle's view: it grows with
    /// every committed write, so two views can be compared.
    pub fn sequence(&self) -> u64 {
        self.db.latest_sequence_number()
    }

    /// The keep policy that ranks cluster members (a store made before
    /// format 6, not yet migrated, ranked by priority).
    pub fn keep_policy(&self) -> Result<schema::KeepPolicy> {
        match self.db.get_cf(self.cf(META), KEEP_POLICY_KEY)? {
            None => Ok(schema::KeepPolicy::Priority),
            Some(v) => {
                schema::decode_keep_policy(&v).map_err(|r| Error::corrupt(META, KEEP_POLICY_KEY, r))
            }
        }
    }

    /// The keep policy of a rebuild of the clusters that was interrupted
    /// ([`CLUSTERS_MARKER_KEY`]), if one was.
    pub fn clusters_rebuilding(&self) -> Result<Option<schema::KeepPolicy>> {
        self.db
            .get_cf(self.cf(META), CLUSTERS_MARKER_KEY)?
            .map(|v| {
                schema::decode_keep_policy(&v)
                    .map_err(|r| Error::corrupt(META, CLUSTERS_MARKER_KEY, r))
            })
            .transpose()
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the store was opened.
    pub fn access(&self) -> Access {
        self.access
    }

    fn cf(&self, name: &str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .unwrap_or_else(|| unreachable!("family {name} is opened with the store"))
    }

    /// The stored record of `id`, if any.
    pub fn get(&self, id: &str) -> Result<Option<Record>> {
        ReadCounts::add(&self.reads.records, 1);
        match self.db.get_pinned_cf(self.cf(DOCS), id.as_bytes())? {
            None => Ok(None),
            Some(v) => codec::decode_record(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(DOCS, id.as_bytes(), r)),
        }
    }

    /// The stored record of `id` at snapshot `at`, if any.
    pub(crate) fn get_at(&self, at: &Snapshot<'_>, id: &str) -> Result<Option<Record>> {
        ReadCounts::add(&self.reads.records, 1);
        match self
            .db
            .get_pinned_cf_opt(self.cf(DOCS), id.as_bytes(), &query::read_at(at))?
        {
            None => Ok(None),
            Some(v) => codec::decode_record(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(DOCS, id.as_bytes(), r)),
        }
    }

    /// A raw meta value.
    pub fn get_meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_cf(self.cf(META), key)?)
    }

    /// Adds a raw meta value to `b`.
    pub fn put_meta_in(&self, b: &mut Batch, key: &[u8], value: &[u8]) {
        b.0.put_cf(self.cf(META), key, value);
    }

    /// Adds the removal of a meta value to `b`.
    pub fn delete_meta_in(&self, b: &mut Batch, key: &[u8]) {
        b.0.delete_cf(self.cf(META), key);
    }

    /// Writes a raw meta value (synced).
    pub fn put_meta(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = Batch::default();
        b.0.put_cf(self.cf(META), key, value);
        self.write(b, true)
    }

    /// The number of short documents kept in meta (0 when absent: stores
    /// written before it was counted).
    pub fn short_count(&self) -> Result<u64> {
        match self.db.get_cf(self.cf(META), SHORT_COUNT_KEY)? {
            None => Ok(0),
            Some(v) => schema::MetaU64::ShortCount
                .decode(&v)
                .map_err(|r| Error::corrupt(META, SHORT_COUNT_KEY, r)),
        }
    }

    /// Sets the short-document count in `b`.
    pub fn put_short_count(&self, b: &mut Batch, n: u64) {
        let (k, v) = schema::MetaU64::ShortCount.entry(n);
        b.0.put_cf(self.cf(META), k, v);
    }

    /// The document count kept in meta.
    pub fn doc_count(&self) -> Result<u64> {
        let v = self
            .db
            .get_cf(self.cf(META), DOC_COUNT_KEY)?
            .ok_or_else(|| Error::corrupt(META, DOC_COUNT_KEY, "missing"))?;
        schema::MetaU64::DocCount
            .decode(&v)
            .map_err(|r| Error::corrupt(META, DOC_COUNT_KEY, r))
    }

    /// Adds a rewrite of document `id`'s record alone to `b` (its
    /// fingerprint and sequence number unchanged, so its index entries
    /// stand).
    pub fn put_record(&self, b: &mut Batch, id: &str, rec: &Record) {
        let (k, v) = schema::docs_entry(id, rec);
        b.0.put_cf(self.cf(DOCS), k, v);
    }

    /// Adds document `id`'s entry in the ingest order index (`o` ‖ `ord`)
    /// to `b`.
    pub fn put_order(&self, b: &mut Batch, ord: u64, id: &str) {
        b.0.put_cf(self.cf(CLUSTERS), schema::order_key(ord), id.as_bytes());
    }

    /// Adds the writes of one document to `batch`: its record, its `refs`
    /// entry and its place in the ingest order (its fingerprint's posting
    /// entries go with [`Store::write_postings`]).
    pub fn put_doc(&self, b: &mut Batch, id: &str, rec: &Record) {
        let e = schema::doc_entries(id, rec);
        b.0.put_cf(self.cf(DOCS), &e.docs.0, &e.docs.1);
        b.0.put_cf(self.cf(REFS), &e.refs.0, &e.refs.1);
        b.0.put_cf(self.cf(CLUSTERS), e.order.0, &e.order.1);
        if let Some((k, v)) = &e.dated {
            b.0.put_cf(self.cf(CLUSTERS), k, v);
        }
    }

    /// Whether this store keeps its texts ([`TEXTS`]).
    pub fn keeps_texts(&self) -> bool {
        self.keep_texts
    }

    /// Adds document `id`'s text to `b`, in a store that keeps texts (in
    /// another, nothing).
    pub fn put_text(&self, b: &mut Batch, id: &str, text: &str) {
        if self.keep_texts {
            b.0.put_cf(self.cf(TEXTS), id.as_bytes(), text.as_bytes());
        }
    }

    /// Document `id`'s kept text at `at`: `None` when the store keeps none
    /// or has none for `id` (no such document, or one written without a
    /// text).
    pub(crate) fn text_at(&self, at: &Snapshot<'_>, id: &str) -> Result<Option<String>> {
        if !self.keep_texts {
            return Ok(None);
        }
        match self
            .db
            .get_pinned_cf_opt(self.cf(TEXTS), id.as_bytes(), &query::read_at(at))?
        {
            None => Ok(None),
            Some(v) => String::from_utf8(v.to_vec())
                .map(Some)
                .map_err(|_| Error::corrupt(TEXTS, id.as_bytes(), "not UTF-8")),
        }
    }

    /// Adds the deletes of one document to `batch` (see [`Store::put_doc`]),
    /// its kept text with them.
    pub fn delete_doc(&self, b: &mut Batch, id: &str, rec: &Record) {
        if self.keep_texts {
            b.0.delete_cf(self.cf(TEXTS), id.as_bytes());
        }
        b.0.delete_cf(self.cf(DOCS), id.as_bytes());
        b.0.delete_cf(self.cf(REFS), RefKey::encode(rec.fingerprint, id));
        b.0.delete_cf(self.cf(CLUSTERS), schema::order_key(rec.ord));
        if let Some(t) = rec.dated {
            self.delete_time(b, t, rec.ord);
        }
    }

    /// Sets the document count in `batch`.
    pub fn put_doc_count(&self, b: &mut Batch, n: u64) {
        let (k, v) = schema::MetaU64::DocCount.entry(n);
        b.0.put_cf(self.cf(META), k, v);
    }

    /// Writes `batch` atomically across families.
    pub fn write(&self, mut b: Batch, sync: bool) -> Result<()> {
        let pages = if b.1.is_empty() {
            Vec::new()
        } else {
            self.put_dirty_pages(&mut b)
        };
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db.write_opt(b.0, &wo)?;
        if sync {
            ReadCounts::add(&self.wal_syncs, 1);
        }
        if !pages.is_empty() {
            self.dirty_persisted(&pages);
        }
        Ok(())
    }

    /// Syncs the write-ahead log to disk: every write acknowledged so far,
    /// synced or not, is durable after it.
    pub fn sync_wal(&self) -> Result<()> {
        self.db.flush_wal(true)?;
        ReadCounts::add(&self.wal_syncs, 1);
        Ok(())
    }

    /// The memory knobs the store was opened with.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Write-ahead log syncs since the store was opened.
    pub fn wal_syncs(&self) -> u64 {
        self.wal_syncs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls `visit` with every (id, record) in id order.
    /// A full scan: its blocks do not go through the block cache (they
    /// would evict what queries use, and grow the process to the cache's
    /// size).
    pub fn for_each_doc(&self, mut visit: impl FnMut(&str, Record) -> Result<()>) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(DOCS), ro);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let id =
                std::str::from_utf8(k).map_err(|_| Error::corrupt(DOCS, k, "id is not UTF-8"))?;
            let rec = codec::decode_record(v).map_err(|r| Error::corrupt(DOCS, k, r))?;
            visit(id, rec)?;
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Calls `visit` with every bucket key and posting of posting family
    /// `i` ([`posting_family`]), in order. Merged buckets left empty by
    /// deletes (a key with an empty value) are skipped.
    pub fn for_each_posting(
        &self,
        i: usize,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.for_each_raw(posting_family(i), |k, v| {
            if v.is_empty() {
                Ok(())
            } else {
                visit(k, v)
            }
        })
    }

    /// Calls `visit` with every raw (key, value) of family `name`, in order.
    pub fn for_each_raw(
        &self,
        name: &str,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        ro.set_total_order_seek(true);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(name), ro);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            visit(k, v)?;
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Size in bytes of the SST files of a family (0 if not known).
    /// Background errors RocksDB has met since the store was opened (a
    /// failed flush or compaction; retryable ones are retried and cleared
    /// by RocksDB itself, the count stays).
    pub fn background_errors(&self) -> u64 {
        self.db
            .property_int_value("rocksdb.background-errors")
            .ok()
            .flatten()
            .unwrap_or(0)
    }

    pub fn family_size(&self, name: &str) -> u64 {
        self.db
            .property_int_value_cf(self.cf(name), "rocksdb.total-sst-files-size")
            .ok()
            .flatten()
            .unwrap_or(0)
    }

    /// Flushes memtables to SST files (so sizes on disk are meaningful).
    pub fn flush(&self) -> Result<()> {
        for name in ALL_FAMILIES {
            self.db.flush_cf(self.cf(name))?;
        }
        Ok(())
    }
}

/// How many times a read-only open is tried again when a table file its
/// MANIFEST named was deleted meanwhile by a writer's compaction.
const READ_ONLY_OPEN_ATTEMPTS: u64 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16: open errors were classified by the substring "lock", which
    /// "block checksum mismatch" contains: a corruption found at open was
    /// reported as "store is in use" (and backup took its copy path).
    #[test]
    fn proc_locks_lines_are_matched_by_device_and_inode() {
        let locks = "1: POSIX  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF\n\
                     1: -> POSIX  ADVISORY  WRITE 4343 08:02:99 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 77 103:05:42 0 EOF\n";
        let dev = |major: u64, minor: u64| (major << 8) | minor;
        assert!(locks_name_file(locks, dev(0xfd, 1), 1234567));
        assert!(!locks_name_file(locks, dev(0xfd, 1), 123456));
        assert!(
            !locks_name_file(locks, dev(8, 2), 99),
            "a waiter is not a holder"
        );
        assert!(locks_name_file(locks, dev(0x103, 5), 42));
    }

    #[test]
    fn regression_16_only_lock_file_errors_mean_in_use() {
        for (msg, lock) in [
            ("IO error: While lock file: /s/LOCK: Resource temporarily unavailable", true),
            (
                "IO error: lock hold by current process, acquire time 1 acquiring thread 2: /s/LOCK: No locks available",
                true,
            ),
            ("Corruption: block checksum mismatch: stored = 1, computed = 2", false),
            ("IO error: No such file or directory: While opening a file for sequentially reading: /s/MANIFEST-000005", false),
            ("Corruption: bad block contents", false),
        ] {
            assert_eq!(is_lock_message(msg), lock, "{msg}");
        }
    }
}
