//! Scale check: generate N fingerprints with planted neighbours, bulk-load
//! them with `simdb import`, run Q queries, print load time, size on disk,
//! query latency (warm and after reopen), recall and exactness against brute
//! force, and the import's peak RSS.
//!
//! ```text
//! cargo run --release --example scale -- --n 1000000 --queries 2000 [--mode uniform|skewed]
//!     [--seed 1] [--dir DIR] [--brute 50] [--keep] [--reuse] [--cache-mb 256]
//!     [--big-batch 100000] [--ks 7,11] [--k-queries 1000] [--budgets 112]
//!     [--sketches] [--parts] [--no-mmap] [--no-freeze]
//! ```
//!
//! `simdb import` writes the store's frozen index (queries read unchanged
//! buckets in place); `--no-freeze` imports without it, so every bucket
//! is read through RocksDB.
//!
//! `--no-mmap` opens the store with `Tuning::mmap_reads` off (every block
//! through the block cache, a miss a `pread`), to compare with the default.
//!
//! `--sketches` gives every document a verification sketch (uniform
//! random; the planted neighbours of a query share its sketch) and imports
//! the sketched binary form, so the store has its sixteen band families;
//! the ranked queries then carry a sketch and are timed with their band
//! buckets (the default query) and without, and compared in full with a
//! brute force of the plan and the band probe.
//!
//! `--parts` (with `--sketches`) also gives every document 12 part hashes
//! (uniform random; each planted neighbour of a query shares two of the
//! query's 12), written as engine rows in Parquet (`id`, `fingerprint`,
//! `sketch`, `parts`) and imported, so the store has a full `parts` family
//! (6 keys per document); the default query (plan, bands and the
//! query's 12 parts) is timed beside the plan and bands alone. The parts
//! name only planted neighbours, which the plan holds too, so the brute
//! force of the plan and bands still gives the answer.
//!
//! For each of the Q query fingerprints, four documents are planted at
//! distance 0, 1, 2 and 3 (bits anywhere in the 64, so usually in different
//! blocks); the rest are uniform random. Recall is the share of planted
//! neighbours returned at k=3 (must be 1.0); `--brute` queries are also
//! compared in full with a linear scan.
//!
//! `--mode skewed` is a store of copies, as a crawl makes one: one
//! fingerprint held by n/50 documents (1M at 50M), and n/10 documents in
//! 2,000 families of near copies with Zipf sizes (the largest ~600k at
//! 50M), each family in one bucket of block 0 with 1-6 of its other 48
//! bits flipped, so the buckets of block 0 have a long tail of hot ones
//! (the largest 260,861 distinct fingerprints at 50M: a family's members
//! with one or two bits flipped share few fingerprints). Half the queries are planted
//! inside families. Answers are limited to 10 hits (what the CLI, the
//! service and Python answer by default) and compared with the first 10
//! of a linear scan; the hot fingerprint itself is queried too.
//! `--ks` times `--k-queries` warm queries at each larger k (multi-probe)
//! and compares up to 5 of them per k with a linear scan. `--budgets`
//! times the ranked query at each budget (112, 128 and 144 price the 16
//! band buckets of `simdb::index::bands` beside ranked 112 or 128: a band
//! bucket is a posting of the same size, read the same way).

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use simdb::import::{
    write_binary_record, write_binary_sketched_record, BINARY_MAGIC, BINARY_SKETCHED_MAGIC,
};
use simdb::Tuning;
use simdb::{Db, Fingerprint};

struct Args {
    n: usize,
    queries: usize,
    skewed: bool,
    seed: u64,
    dir: Option<PathBuf>,
    brute: usize,
    keep: bool,
    reuse: bool,
    cache_mb: usize,
    row_cache_mb: usize,
    /// `Tuning::mmap_reads` off: every block through the block cache.
    no_mmap: bool,
    no_freeze: bool,
    big_batch: usize,
    ks: Vec<u32>,
    k_queries: usize,
    /// Hits per query (10 in skewed mode, as the front ends answer).
    limit: Option<usize>,
    /// Ranked budgets timed (`--budgets`; the default's alone unless
    /// given): what more bucket reads cost at this size.
    budgets: Vec<usize>,
    /// Every document has a verification sketch (`--sketches`: the
    /// sketched binary form, so the store has band families) and the
    /// ranked queries are timed with their band buckets and without.
    sketches: bool,
    /// Every document also has part hashes (`--parts`, implies
    /// `--sketches`): imported from Parquet engine rows, and the default
    /// query reads its parts.
    parts: bool,
}

fn args() -> Args {
    let mut a = Args {
        n: 1_000_000,
        queries: 2000,
        skewed: false,
        seed: 1,
        dir: None,
        brute: 50,
        keep: false,
        reuse: false,
        cache_mb: 256,
        row_cache_mb: 0,
        no_mmap: false,
        no_freeze: false,
        big_batch: 100_000,
        ks: Vec::new(),
        k_queries: 1000,
        limit: None,
        budgets: vec![simdb::index::DEFAULT_PROBE_BUDGET],
        sketches: false,
        parts: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--n" => a.n = v().replace('_', "").parse().expect("--n"),
            "--queries" => a.queries = v().parse().expect("--queries"),
            "--mode" => a.skewed = v() == "skewed",
            "--seed" => a.seed = v().parse().expect("--seed"),
            "--dir" => a.dir = Some(PathBuf::from(v())),
            "--brute" => a.brute = v().parse().expect("--brute"),
            "--cache-mb" => a.cache_mb = v().parse().expect("--cache-mb"),
            "--row-cache-mb" => a.row_cache_mb = v().parse().expect("--row-cache-mb"),
            "--big-batch" => a.big_batch = v().parse().expect("--big-batch"),
            "--ks" => a.ks = v().split(',').map(|k| k.parse().expect("--ks")).collect(),
            "--k-queries" => a.k_queries = v().parse().expect("--k-queries"),
            "--budgets" => {
                a.budgets = v()
                    .split(',')
                    .map(|b| b.parse().expect("--budgets"))
                    .collect()
            }
            "--keep" => a.keep = true,
            "--sketches" => a.sketches = true,
            "--parts" => {
                a.parts = true;
                a.sketches = true;
            }
            "--no-mmap" => a.no_mmap = true,
            "--no-freeze" => a.no_freeze = true,
            "--reuse" => {
                a.reuse = true;
                a.keep = true;
            }
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(a.n >= 4 * a.queries, "--n must be at least 4 x --queries");
    if a.skewed {
        a.limit = Some(simdb::db::limits::DEFAULT_LIMIT);
    }
    a
}

/// The copies of a skewed store (see the module documentation).
struct Skew {
    hot: u64,
    hot_copies: usize,
    /// Family bases and sizes (Zipf), largest first.
    bases: Vec<u64>,
    sizes: Vec<usize>,
    members: usize,
}

impl Skew {
    fn new(a: &Args, rng: &mut ChaCha8Rng) -> Option<Skew> {
        if !a.skewed {
            return None;
        }
        let families = 2000usize;
        let members = a.n / 10;
        let harmonic: f64 = (1..=families).map(|i| 1.0 / i as f64).sum();
        let sizes: Vec<usize> = (1..=families)
            .map(|i| ((members as f64 / harmonic) / i as f64).round().max(1.0) as usize)
            .collect();
        Some(Skew {
            hot: rng.random(),
            hot_copies: a.n / 50,
            bases: (0..families).map(|_| rng.random()).collect(),
            members: sizes.iter().sum(),
            sizes,
        })
    }

    /// A member of family `f`: its base with 1-6 of the 48 bits outside
    /// block 0 flipped.
    fn member_of(&self, rng: &mut ChaCha8Rng, f: usize) -> u64 {
        let mut v = self.bases[f];
        for _ in 0..rng.random_range(1..=6) {
            v ^= 1 << rng.random_range(0..48);
        }
        v
    }

    /// A member of a family drawn by size.
    fn member(&self, rng: &mut ChaCha8Rng) -> u64 {
        let mut x = rng.random_range(0..self.members);
        let f = self
            .sizes
            .iter()
            .position(|&s| {
                if x < s {
                    true
                } else {
                    x -= s;
                    false
                }
            })
            .unwrap_or(0);
        self.member_of(rng, f)
    }

    fn fill(&self, rng: &mut ChaCha8Rng, fps: &mut Vec<u64>, n: usize) {
        fps.extend(std::iter::repeat_n(self.hot, self.hot_copies));
        for (f, &size) in self.sizes.iter().enumerate() {
            for _ in 0..size {
                if fps.len() < n {
                    fps.push(self.member_of(rng, f));
                }
            }
        }
    }
}

/// The sketch of document `i` under `--sketches`: uniform random bytes,
/// seeded by the position (the planted neighbours of query j take the
/// query's, `query_sketch(j)`).
fn doc_sketch(seed: u64, i: usize) -> simdb::Sketch {
    let mut state = seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut s = [0u8; simdb::fingerprint::SKETCH_BYTES];
    for c in s.chunks_exact_mut(8) {
        c.copy_from_slice(&simdb::index::splitmix64(&mut state).to_le_bytes());
    }
    simdb::Sketch(s)
}

fn query_sketch(seed: u64, j: usize) -> simdb::Sketch {
    doc_sketch(seed ^ 0x51e7c4, j)
}

/// The sketch of document `i` (the first `4 * queries` are the planted
/// neighbours, four per query).
fn sketch_of(a: &Args, i: usize) -> simdb::Sketch {
    if i < 4 * a.queries {
        query_sketch(a.seed, i / 4)
    } else {
        doc_sketch(a.seed, i)
    }
}

/// 12 part hashes, ascending, seeded by `seed` and `i`.
fn random_parts(seed: u64, i: usize) -> Vec<u64> {
    let mut state = seed ^ (i as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
    let mut p: Vec<u64> = (0..simdb::fingerprint::parts::QUERY_PARTS)
        .map(|_| simdb::index::splitmix64(&mut state))
        .collect();
    p.sort_unstable();
    p
}

/// The parts of query `j`.
fn query_parts(seed: u64, j: usize) -> Vec<u64> {
    random_parts(seed ^ 0x9a27_5e11, j)
}

/// The parts of document `i` under `--parts`: random, and a planted
/// neighbour of query j (`i < 4 * queries`) holds two of the query's.
fn parts_of(a: &Args, i: usize) -> Vec<u64> {
    let mut p = random_parts(a.seed, i);
    if i < 4 * a.queries {
        let q = query_parts(a.seed, i / 4);
        let k = 2 * (i % 4);
        p[..2].copy_from_slice(&q[k..k + 2]);
        p.sort_unstable();
        p.dedup();
    }
    p
}

/// Writes the documents in the binary form (with their sketches under
/// `--sketches`).
fn write_binary_input(a: &Args, fps: &[u64], path: &std::path::Path) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).expect("fps.bin"));
    if a.sketches {
        w.write_all(BINARY_SKETCHED_MAGIC).unwrap();
        for (i, &f) in fps.iter().enumerate() {
            let id = format!("d{i:09}");
            write_binary_sketched_record(&mut w, &id, Fingerprint(f), &sketch_of(a, i)).unwrap();
        }
    } else {
        w.write_all(BINARY_MAGIC).unwrap();
        for (i, &f) in fps.iter().enumerate() {
            write_binary_record(&mut w, &format!("d{i:09}"), Fingerprint(f)).unwrap();
        }
    }
    w.flush().unwrap();
}

/// Writes the documents as an engine's Parquet rows: `id`, `fingerprint`,
/// `sketch` and `parts` (u64 big-endian each), a million rows a batch.
fn write_parts_parquet(a: &Args, fps: &[u64], path: &std::path::Path) {
    use arrow_array::builder::{BinaryBuilder, StringBuilder, UInt64Builder};
    use arrow_array::{ArrayRef, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("fingerprint", DataType::UInt64, false),
        Field::new("sketch", DataType::Binary, false),
        Field::new("parts", DataType::Binary, false),
    ]));
    let file = std::fs::File::create(path).expect("fps.parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema.clone(), None).expect("writer");
    for start in (0..fps.len()).step_by(1 << 20) {
        let end = (start + (1 << 20)).min(fps.len());
        let (mut id, mut fp) = (StringBuilder::new(), UInt64Builder::new());
        let (mut sk, mut pa) = (BinaryBuilder::new(), BinaryBuilder::new());
        for (i, &f) in fps.iter().enumerate().take(end).skip(start) {
            id.append_value(format!("d{i:09}"));
            fp.append_value(f);
            sk.append_value(sketch_of(a, i).0);
            let bytes: Vec<u8> = parts_of(a, i)
                .iter()
                .flat_map(|p| p.to_be_bytes())
                .collect();
            pa.append_value(bytes);
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(id.finish()),
            Arc::new(fp.finish()),
            Arc::new(sk.finish()),
            Arc::new(pa.finish()),
        ];
        w.write(&RecordBatch::try_new(schema.clone(), cols).expect("batch"))
            .expect("write");
    }
    w.close().expect("close");
}

fn flip_bits(rng: &mut ChaCha8Rng, fp: u64, d: u32) -> u64 {
    let mut f = fp;
    while (f ^ fp).count_ones() < d {
        f ^= 1 << rng.random_range(0..64);
    }
    f
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn time_queries(db: &Db, qs: &[u64], limit: Option<usize>) -> (Vec<f64>, Vec<Vec<(String, u32)>>) {
    time_queries_k(db, qs, 3, limit)
}

fn time_queries_k(
    db: &Db,
    qs: &[u64],
    k: u32,
    limit: Option<usize>,
) -> (Vec<f64>, Vec<Vec<(String, u32)>>) {
    let mut lat = Vec::with_capacity(qs.len());
    let mut answers = Vec::with_capacity(qs.len());
    for &q in qs {
        let t = Instant::now();
        let hits = db.query(Fingerprint(q), k, limit).expect("query");
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        answers.push(hits.into_iter().map(|h| (h.id, h.distance)).collect());
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    (lat, answers)
}

fn report(name: &str, lat: &[f64]) {
    report_k(3, name, lat)
}

fn report_k(k: u32, name: &str, lat: &[f64]) {
    println!(
        "query k={k} {name:<14} p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ({} queries)",
        pct(lat, 0.5),
        pct(lat, 0.95),
        pct(lat, 0.99),
        lat[lat.len() - 1],
        lat.len()
    );
}

fn main() {
    let a = args();
    let tmp;
    let dir = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d).expect("--dir");
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir().expect("tempdir");
            tmp.path().to_path_buf()
        }
    };
    let simdb_bin = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("simdb")))
        .filter(|p| p.exists())
        .expect("target/<profile>/simdb: build it first (cargo build --release)");
    println!(
        "scale: n={} queries={} mode={} seed={}",
        a.n,
        a.queries,
        if a.skewed { "skewed" } else { "uniform" },
        a.seed
    );

    // Generate.
    let t = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let skew = Skew::new(&a, &mut rng);
    let queries: Vec<u64> = (0..a.queries)
        .map(|j| match &skew {
            Some(s) if j % 2 == 1 => s.member(&mut rng),
            _ => rng.random(),
        })
        .collect();
    let mut fps: Vec<u64> = Vec::with_capacity(a.n);
    for &q in &queries {
        for d in 0..4 {
            fps.push(flip_bits(&mut rng, q, d));
        }
    }
    if let Some(s) = &skew {
        s.fill(&mut rng, &mut fps, a.n);
        println!(
            "skewed: {} copies of {:016x}, {} family members in {} families (largest {}), {} uniform",
            s.hot_copies,
            s.hot,
            s.members,
            s.bases.len(),
            s.sizes[0],
            a.n - s.hot_copies - s.members - 4 * a.queries
        );
    }
    while fps.len() < a.n {
        fps.push(rng.random());
    }
    let input = dir.join(if a.parts { "fps.parquet" } else { "fps.bin" });
    let store = dir.join("store");
    let reuse = a.reuse && store.exists();
    if !reuse {
        let form = if a.parts {
            write_parts_parquet(&a, &fps, &input);
            "Parquet of sketches and parts"
        } else {
            write_binary_input(&a, &fps, &input);
            "binary input"
        };
        println!(
            "generated {} fingerprints in {:.1}s ({} MB {form})",
            a.n,
            t.elapsed().as_secs_f64(),
            std::fs::metadata(&input)
                .map(|m| m.len() >> 20)
                .unwrap_or(0)
        );
    }

    // Import, as the CLI does it, in a child process so its RSS is its own.
    if reuse {
        println!("reusing {} (--reuse): no import", store.display());
    } else {
        import(&simdb_bin, &store, &input, a.n, a.no_freeze);
    }
    query_phase(&a, &store, &queries, &fps);
}

fn import(
    simdb_bin: &std::path::Path,
    store: &std::path::Path,
    input: &std::path::Path,
    n: usize,
    no_freeze: bool,
) {
    let _ = std::fs::remove_dir_all(store);
    let t = Instant::now();
    let out = Command::new(simdb_bin)
        .arg("import")
        .arg(store)
        .arg(input)
        .args(no_freeze.then_some("--no-freeze"))
        .output()
        .expect("run simdb import");
    let load = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "simdb import failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rss_mb = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru.ru_maxrss as f64 / 1024.0
    };
    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!(
        "import: {load:.1}s ({:.0} docs/s), peak RSS {rss_mb:.0} MB",
        n as f64 / load
    );
    let _ = std::fs::remove_file(input);
}

/// The hot fingerprint itself (held by n/50 documents): 1,000 exact k=3
/// queries and 1,000 default (ranked) queries of 10 hits, warm.
fn hot_queries(db: &Db, hot: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(hot);
    let mut order: Vec<u8> = (0..64).collect();
    for i in (1..64).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let limit = Some(simdb::db::limits::DEFAULT_LIMIT);
    let exact = simdb::Query {
        limit,
        ..simdb::Query::new(Fingerprint(hot))
    };
    let ranked = exact
        .clone()
        .probing(&order, simdb::index::DEFAULT_PROBE_BUDGET);
    for (name, q) in [("exact k=3", &exact), ("ranked 128", &ranked)] {
        let _ = db.search(q).expect("hot query");
        let mut lat: Vec<f64> = (0..1000)
            .map(|_| {
                let t = Instant::now();
                let hits = db.search(q).expect("hot query");
                assert_eq!(hits.len(), 10);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        lat.sort_by(|a, b| a.total_cmp(b));
        println!(
            "query of the hot fingerprint {name}: p50 {:.3} ms  p99 {:.3} ms  (10 of its copies, 1000 queries)",
            pct(&lat, 0.5),
            pct(&lat, 0.99)
        );
    }
}

fn query_phase(a: &Args, store: &std::path::Path, queries: &[u64], fps: &[u64]) {
    // Size on disk.
    let tuning = Tuning {
        block_cache_bytes: a.cache_mb << 20,
        row_cache_bytes: a.row_cache_mb << 20,
        mmap_reads: !a.no_mmap,
        ..Tuning::default()
    };
    let db = Db::options()
        .read_only()
        .tuning(tuning)
        .open(store)
        .expect("open");
    let (mut index_bytes, mut band_bytes) = (0, 0);
    for (name, bytes) in db.admin().family_sizes() {
        println!(
            "size {name:<7} {:>8.1} MB  {:>6.1} B/doc",
            bytes as f64 / 1e6,
            bytes as f64 / a.n as f64
        );
        if name.starts_with("block") {
            index_bytes += bytes;
        }
        if name.starts_with("band") {
            band_bytes += bytes;
        }
    }
    println!(
        "size index (4 block families) {:.1} B/doc, band families (16) {:.1} B/doc",
        index_bytes as f64 / a.n as f64,
        band_bytes as f64 / a.n as f64
    );

    // Queries: after open (block cache cold, OS cache as the import left it),
    // then warm.
    let (cold, _) = time_queries(&db, queries, a.limit);
    report("after open", &cold);
    let (warm, answers) = time_queries(&db, queries, a.limit);
    report("warm", &warm);
    drop(db);
    let db = Db::options()
        .read_only()
        .tuning(tuning)
        .open(store)
        .expect("reopen");
    let (reopen, _) = time_queries(&db, queries, a.limit);
    report("after reopen", &reopen);
    if a.skewed {
        hot_queries(&db, fps[4 * queries.len()]);
        let t = Instant::now();
        let st = db.admin().stats().expect("stats");
        for f in &st.families {
            println!(
                "buckets of {}: {} distinct fingerprints in {} buckets; sizes p50 {} p99 {} max {} ({:.1}s to scan)",
                f.name,
                f.keys,
                f.buckets,
                f.bucket_p50,
                f.bucket_p99,
                f.bucket_max,
                t.elapsed().as_secs_f64()
            );
        }
    }

    // Batches: one query at a time, queries in parallel, and one sorted pass
    // per family (Db::find_many), on the planted queries and on a larger
    // batch of random ones.
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed ^ 0xba7c4);
    let big: Vec<u64> = (0..a.big_batch).map(|_| rng.random()).collect();
    for (name, qs) in [("queries", queries), ("random", &big[..])] {
        if qs.is_empty() {
            continue;
        }
        let fps: Vec<Fingerprint> = qs.iter().map(|&q| Fingerprint(q)).collect();
        let rate = |f: &dyn Fn() -> usize| {
            let t = Instant::now();
            let hits = f();
            (hits, qs.len() as f64 / t.elapsed().as_secs_f64())
        };
        let (h1, seq) = rate(&|| {
            fps.iter()
                .map(|&q| db.query(q, 3, a.limit).unwrap().len())
                .sum()
        });
        let (h2, par) = rate(&|| {
            fps.par_iter()
                .map(|&q| db.query(q, 3, a.limit).unwrap().len())
                .sum()
        });
        let (h3, many) = rate(&|| {
            let qs: Vec<simdb::Query> = fps
                .iter()
                .map(|&q| simdb::Query {
                    limit: a.limit,
                    ..simdb::Query::new(q).exact(3)
                })
                .collect();
            db.find_many(&qs)
                .unwrap()
                .iter()
                .map(|f| f.hits.len())
                .sum()
        });
        assert!(h1 == h2 && h2 == h3, "batch answers differ: {h1} {h2} {h3}");
        println!(
            "batch of {} {name}: one at a time {seq:.0} q/s, in parallel {par:.0} q/s, sorted pass {many:.0} q/s",
            qs.len()
        );
    }

    // Recall of planted neighbours (of the uniform queries: in skewed
    // mode the others' first 10 hits may be family members as near), and
    // brute force on a sample.
    let mut found = 0;
    let mut planted = 0;
    for (j, ans) in answers.iter().enumerate() {
        if a.skewed && j % 2 == 1 {
            continue;
        }
        planted += 4;
        for d in 0..4 {
            let id = format!("d{:09}", 4 * j + d);
            if ans.iter().any(|(h, _)| *h == id) {
                found += 1;
            }
        }
    }
    println!(
        "recall of planted neighbours (distance 0..3): {found}/{planted} = {:.4}",
        found as f64 / planted as f64
    );
    let mut mismatches = 0;
    let nb = a.brute.min(queries.len());
    for j in 0..nb {
        let q = queries[j];
        let mut want: Vec<(String, u32)> = fps
            .par_iter()
            .enumerate()
            .filter_map(|(i, &f)| {
                let d = (f ^ q).count_ones();
                (d <= 3).then(|| (format!("d{i:09}"), d))
            })
            .collect();
        want.sort_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)));
        want.truncate(a.limit.unwrap_or(usize::MAX));
        if want != answers[j] {
            mismatches += 1;
        }
    }
    println!("brute force: {nb} queries compared in full, {mismatches} differ");

    // Larger k: multi-probe latency (warm: one untimed pass first) and
    // exactness on a few queries.
    let brute_at = |q: u64, k: u32| -> Vec<(String, u32)> {
        let mut want: Vec<(String, u32)> = fps
            .par_iter()
            .enumerate()
            .filter_map(|(i, &f)| {
                let d = (f ^ q).count_ones();
                (d <= k).then(|| (format!("d{i:09}"), d))
            })
            .collect();
        want.sort_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)));
        want.truncate(a.limit.unwrap_or(usize::MAX));
        want
    };
    // The default query: confidence-ranked at the default budget. Random
    // fingerprints have no margins; each query gets a seeded random order
    // of its 64 bits as its weak order (real texts' weak bits are spread
    // over the blocks the same way). Checked against the plan's brute force.
    // (budget, bands, parts).
    let plans: Vec<(usize, bool, bool)> = a
        .budgets
        .iter()
        .flat_map(|&b| {
            let mut p = vec![(b, true, false), (b, false, false)];
            if a.parts {
                p.insert(0, (b, true, true));
            }
            if !a.sketches {
                p.retain(|x| !x.1);
            }
            p
        })
        .collect();
    for (budget, bands, parted) in plans {
        let qs = &queries[..a.k_queries.min(queries.len())];
        let mut rng = ChaCha8Rng::seed_from_u64(a.seed ^ 0x7a4b);
        let orders: Vec<Vec<u8>> = qs
            .iter()
            .map(|_| {
                let mut o: Vec<u8> = (0..64).collect();
                for i in (1..64).rev() {
                    o.swap(i, rng.random_range(0..=i));
                }
                o
            })
            .collect();
        let queries_r: Vec<simdb::Query> = qs
            .iter()
            .zip(&orders)
            .enumerate()
            .map(|(j, (&q, o))| simdb::Query {
                probe: Some(simdb::db::Probe {
                    weak_bits: o.clone(),
                    budget,
                    bands,
                }),
                limit: a.limit,
                sketch: a.sketches.then(|| query_sketch(a.seed, j)),
                parts: if parted {
                    query_parts(a.seed, j)
                } else {
                    Vec::new()
                },
                min_similarity: 0.0,
                ..simdb::Query::new(Fingerprint(q))
            })
            .collect();
        let run = |db: &Db| {
            let mut lat = Vec::with_capacity(queries_r.len());
            let mut ans = Vec::with_capacity(queries_r.len());
            for q in &queries_r {
                let t = Instant::now();
                let hits = db.search(q).expect("ranked query");
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                ans.push(
                    hits.into_iter()
                        .map(|h| (h.id, h.distance))
                        .collect::<Vec<_>>(),
                );
            }
            lat.sort_by(|a, b| a.total_cmp(b));
            (lat, ans)
        };
        let _ = run(&db);
        let reads = db.admin().reads();
        let (lat, ans) = run(&db);
        let refs = db.admin().reads().refs - reads.refs;
        let buckets: usize = queries_r
            .iter()
            .map(|q| q.plan().buckets() + q.band_probe().map_or(0, |p| p.buckets()))
            .sum();
        println!(
            "refs read per query {:.2}",
            refs as f64 / queries_r.len() as f64
        );
        let name = match (bands, parted) {
            (true, true) => " + bands + parts",
            (true, false) => " + bands",
            _ => "",
        };
        println!(
            "query ranked {budget}{name} warm  p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ({} queries, {:.1} buckets each)",
            pct(&lat, 0.5),
            pct(&lat, 0.95),
            pct(&lat, 0.99),
            lat[lat.len() - 1],
            lat.len(),
            buckets as f64 / queries_r.len() as f64
        );
        let nb = qs.len().min(5);
        let mut differ = 0;
        for j in 0..nb {
            let plan = queries_r[j].plan();
            let q = Fingerprint(qs[j]);
            // Every document the plan accepts or within the band bound,
            // then the band rule on those (a fingerprint's documents all
            // lie at its distance, so its first document is among them).
            let bound = queries_r[j].band_probe().map_or(0, |p| p.max_distance);
            let near: Vec<(usize, Fingerprint)> = fps
                .par_iter()
                .enumerate()
                .filter(|(_, &f)| {
                    plan.accepts(q, Fingerprint(f)) || (f ^ qs[j]).count_ones() <= bound
                })
                .map(|(i, &f)| (i, Fingerprint(f)))
                .collect();
            let ids: Vec<String> = near.iter().map(|(i, _)| format!("d{i:09}")).collect();
            let first = |fp: Fingerprint| {
                near.iter()
                    .filter(|(_, f)| *f == fp)
                    .map(|(i, _)| *i)
                    .min()
                    .map(|i| simdb::index::bands::band_values(&sketch_of(a, i)))
            };
            let hits = match queries_r[j].band_probe() {
                Some(p) => simdb::index::bands::brute_force_banded(
                    ids.iter().zip(&near).map(|(id, (_, f))| (id.as_str(), *f)),
                    first,
                    q,
                    &plan,
                    &p,
                ),
                None => simdb::index::brute_force_plan(
                    ids.iter().zip(&near).map(|(id, (_, f))| (id.as_str(), *f)),
                    q,
                    &plan,
                ),
            };
            let mut want: Vec<(String, u32)> =
                hits.into_iter().map(|h| (h.id, h.distance)).collect();
            want.sort_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0)));
            want.truncate(a.limit.unwrap_or(usize::MAX));
            differ += usize::from(want != ans[j]);
        }
        let hits: usize = ans.iter().map(Vec::len).sum();
        println!(
            "ranked: {hits} hits over {} queries; brute force of the plan's rule: {nb} compared in full, {differ} differ",
            qs.len()
        );
        assert_eq!(differ, 0, "ranked plan must equal its brute force");
    }
    for &k in &a.ks {
        let qs = &queries[..a.k_queries.min(queries.len())];
        let _ = time_queries_k(&db, qs, k, a.limit);
        let (lat, ans) = time_queries_k(&db, qs, k, a.limit);
        report_k(k, "warm", &lat);
        let nb = qs.len().min(5);
        let differ = (0..nb).filter(|&j| brute_at(qs[j], k) != ans[j]).count();
        let hits: usize = ans.iter().map(Vec::len).sum();
        println!(
            "k={k}: {hits} hits over {} queries; brute force: {nb} compared in full, {differ} differ",
            qs.len()
        );
        assert_eq!(differ, 0, "index must equal brute force at k={k}");
    }
    if a.keep {
        println!("kept {}", store.display());
    } else {
        drop(db);
        let _ = std::fs::remove_dir_all(store);
    }
    assert_eq!(found, planted, "recall must be 1.0");
    assert_eq!(mismatches, 0, "index must equal brute force");
}
