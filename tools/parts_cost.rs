//! What a part probe costs in a store of N documents (issue 41;
//! `simdb::index::parts`): a RocksDB family laid out as the store's
//! `parts` family (format 10): keys part hash ‖ fingerprint
//! (docs/format.md), empty values, an 8-byte prefix extractor
//! with bloom filters, no compression, tables read through mmap, a 256 MiB
//! LRU block cache; six parts per document (`fingerprint::parts::PARTS`),
//! each held by one document (a part is shared only by copies and
//! boilerplate). Built as sorted table files ingested at once, then read
//! warm: Q queries of `fingerprint::parts::QUERY_PARTS` parts each, one of
//! them present (a copy's shared part) and the rest absent (a new text's),
//! a seek per part in one iterator reading at most the cap + 1 keys, as
//! `Store::part_buckets` reads them.
//!
//! ```text
//! cargo build --release --example parts_cost
//! target/release/examples/parts_cost --n 50000000 --queries 20000 --dir /tmp/parts50 [--seed 1]
//! ```
//!
//! A `--dir` that holds a built family is reused. It prints the family's
//! bytes per document and the probe's p50 / p99 / max in microseconds:
//! what the default query (docs/performance.md) would add.

use std::path::PathBuf;
use std::time::Instant;

#[path = "common.rs"]
mod common;
use common::arg;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, DB};
use simdb::fingerprint::parts::{PARTS, QUERY_PARTS};
use simdb::index::parts::DEFAULT_PART_FINGERPRINTS;

const FAMILY: &str = "parts";
/// Table files written per build (keys split by their first byte).
const FILES: u64 = 64;

fn options(cache: &Cache) -> Options {
    let mut b = BlockBasedOptions::default();
    b.set_block_cache(cache);
    b.set_bloom_filter(10.0, false);
    b.set_format_version(6);
    let mut o = Options::default();
    o.set_prefix_extractor(rocksdb::SliceTransform::create_fixed_prefix(8));
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_block_based_table_factory(&b);
    o.set_compression_type(DBCompressionType::None);
    o.set_allow_mmap_reads(true);
    o
}

/// The keys of file `f` (first byte in its range), sorted, and the
/// fingerprint of each: deterministic from the seed.
fn file_entries(seed: u64, f: u64, n: u64) -> Vec<(u64, u64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (f << 32));
    let span = u64::MAX / FILES;
    let mut v: Vec<(u64, u64)> = (0..n)
        .map(|_| (f * span + rng.random_range(0..span), rng.random()))
        .collect();
    v.sort_unstable();
    v.dedup_by_key(|e| e.0);
    v
}

fn main() {
    let n: u64 = arg("--n", 50_000_000);
    let queries: usize = arg("--queries", 20_000);
    let seed: u64 = arg("--seed", 1);
    let dir: PathBuf = arg("--dir", PathBuf::from("/tmp/parts-cost"));
    let cache = Cache::new_lru_cache(256 << 20);
    let opts = options(&cache);
    let built = dir.join("BUILT");
    let per_file = n * PARTS as u64 / FILES;
    if !built.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("--dir");
        let db = DB::open_cf(&opts, dir.join("db"), [FAMILY]).expect("open");
        let t = Instant::now();
        let mut files = Vec::new();
        for f in 0..FILES {
            let path = dir.join(format!("{f:03}.sst"));
            let mut w = rocksdb::SstFileWriter::create(&opts);
            w.open(&path).expect("sst");
            for (k, v) in file_entries(seed, f, per_file) {
                // The store's key: part ‖ fingerprint, u64 BE each.
                let key = [k.to_be_bytes(), v.to_be_bytes()].concat();
                w.put(key, []).expect("put");
            }
            w.finish().expect("finish");
            files.push(path);
        }
        let mut io = rocksdb::IngestExternalFileOptions::default();
        io.set_move_files(true);
        db.ingest_external_file_cf_opts(db.cf_handle(FAMILY).unwrap(), &io, files)
            .expect("ingest");
        std::fs::write(&built, format!("{n}\n")).expect("BUILT");
        println!(
            "built {} part entries ({n} documents x {PARTS}) in {:.1}s",
            per_file * FILES,
            t.elapsed().as_secs_f64()
        );
    }
    let db = DB::open_cf_for_read_only(&opts, dir.join("db"), [FAMILY], false).expect("open");
    let cf = db.cf_handle(FAMILY).unwrap();
    let bytes: u64 = std::fs::read_dir(dir.join("db"))
        .expect("db dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum();
    // Warm: the table files in the OS cache, as the other tools do.
    let t = Instant::now();
    for e in std::fs::read_dir(dir.join("db")).expect("db dir").flatten() {
        let _ = std::fs::read(e.path());
    }
    println!(
        "family: {:.1} MB, {:.1} B/doc; read into the OS cache in {:.1}s",
        bytes as f64 / 1e6,
        bytes as f64 / n as f64,
        t.elapsed().as_secs_f64()
    );
    // Present keys to look up: some of each file's.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9e37);
    let present: Vec<u64> = (0..FILES.min(16))
        .flat_map(|f| {
            let e = file_entries(seed, f * (FILES / FILES.min(16)), per_file);
            (0..queries / 16 + 1)
                .map(|_| e[rng.random_range(0..e.len())].0)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut times = Vec::with_capacity(queries);
    let mut found = 0usize;
    for q in 0..queries {
        let mut keys: Vec<u64> = (1..QUERY_PARTS).map(|_| rng.random()).collect();
        keys.push(present[q % present.len()]);
        keys.sort_unstable();
        let t = Instant::now();
        let mut ro = rocksdb::ReadOptions::default();
        ro.set_prefix_same_as_start(true);
        ro.set_verify_checksums(false);
        let mut it = db.raw_iterator_cf_opt(cf, ro);
        for k in &keys {
            let prefix = k.to_be_bytes();
            it.seek(prefix);
            let mut held = 0;
            while let Some(key) = it.key() {
                if !key.starts_with(&prefix) || held > DEFAULT_PART_FINGERPRINTS {
                    break;
                }
                held += 1;
                it.next();
            }
            found += held;
        }
        let el = t.elapsed();
        times.push(el.as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
    println!(
        "part probe ({QUERY_PARTS} keys, one present), {queries} queries: p50 {:.1} us, p99 {:.1} us, max {:.1} us; found {:.2} per query",
        at(0.5),
        at(0.99),
        times[times.len() - 1],
        found as f64 / queries as f64
    );
}
