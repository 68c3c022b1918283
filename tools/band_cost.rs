//! What the band families cost in a store: N documents with uniform random
//! fingerprints and sketches written through the writer (as ingest writes
//! them), flushed; then the bytes per document of the block and band
//! families, and the latency of Q warm queries (random fingerprint, sketch
//! and weak-bit order) with three plans, interleaved per query so the
//! machine's noise falls on all three alike:
//!
//! - `112 + bands`: the default (ranked 112 and the 16 band buckets);
//! - `112`: the same plan without the bands;
//! - `128`: ranked 128 without bands (the default before format 7).
//!
//! ```text
//! cargo run --release --example band_cost -- --n 1000000 --queries 5000 [--seed 1] [--dir DIR]
//! ```
//!
//! A `--dir` that exists is reused: no writes, the queries only.
//!
//! Uniform sketches spread every band bucket evenly (a real corpus fills
//! some more than others); the band-only candidates a query meets are
//! counted in `refs` reads (uniform fingerprints rarely lie within 14
//! bits: real corpora are measured by `tools/recall.rs`).

use std::time::Instant;

#[path = "common.rs"]
mod common;
use common::arg;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use simdb::db::{Probe, Query};
use simdb::fingerprint::{Analysis, Sketch, SKETCH_BYTES};
use simdb::{Content, Db, Fingerprint, Recipe};

fn sketch(rng: &mut ChaCha8Rng) -> Sketch {
    let mut s = [0u8; SKETCH_BYTES];
    rng.fill_bytes(&mut s);
    Sketch(s)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let n: usize = arg("--n", 1_000_000);
    let queries: usize = arg("--queries", 5_000);
    let seed: u64 = arg("--seed", 1);
    let dir = std::path::PathBuf::from(arg("--dir", String::new()));
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = if dir.as_os_str().is_empty() {
        tmp.path().join("db")
    } else {
        dir
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let reuse = path.exists();
    let mut db = if reuse {
        println!("reusing {} (it exists): no writes", path.display());
        Db::options().open(&path).expect("open")
    } else {
        Db::options()
            .create(&path, Recipe::default())
            .expect("create")
    };
    let n = if reuse {
        db.len().expect("len") as usize
    } else {
        n
    };
    let t = Instant::now();
    let batch = 10_000;
    let mut written = if reuse { n } else { 0 };
    while written < n {
        let mut w = db.writer().expect("writer");
        for i in written..(written + batch).min(n) {
            let fp = Fingerprint(rng.random());
            let a = Analysis {
                fingerprint: fp,
                sketch: Some(sketch(&mut rng)),
                fine: None,
                terms: 100,
                distinct_terms: 80,
                top_terms: Vec::new(),
                weak_bits: Vec::new(),
                parts: Vec::new(),
            };
            w.put(&format!("d{i:09}"), a, &Content::Fingerprint(fp), "gen")
                .expect("put");
        }
        w.commit().expect("commit");
        written = (written + batch).min(n);
    }
    db.admin().flush().expect("flush");
    let secs = t.elapsed().as_secs_f64();
    if !reuse {
        println!(
            "wrote {n} documents in {secs:.1} s ({:.0}/s)",
            n as f64 / secs
        );
    }
    let sizes = db.admin().family_sizes();
    let per_doc = |pre: &str| {
        sizes
            .iter()
            .filter(|(name, _)| name.starts_with(pre))
            .map(|(_, b)| *b)
            .sum::<u64>() as f64
            / n as f64
    };
    let (blocks, bands) = (per_doc("block"), per_doc("band"));
    println!(
        "size: 4 block families {blocks:.1} B/doc, 16 band families {bands:.1} B/doc ({:.2}x)",
        bands / blocks
    );
    // Queries, the three plans interleaved.
    let plans: [(&str, usize, bool); 3] = [
        ("112 + bands", 112, true),
        ("112", 112, false),
        ("128", 128, false),
    ];
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); plans.len()];
    let mut refs = vec![0u64; plans.len()];
    let mut buckets = vec![0u64; plans.len()];
    for _ in 0..queries {
        let q = Fingerprint(rng.random());
        let s = sketch(&mut rng);
        let mut order: Vec<u8> = (0..64).collect();
        for i in (1..64).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        for (p, (_, budget, bands)) in plans.iter().enumerate() {
            let query = Query {
                sketch: Some(s),
                probe: Some(Probe {
                    weak_bits: order.clone(),
                    budget: *budget,
                    bands: *bands,
                }),
                limit: Some(10),
                ..Query::new(q)
            };
            let before = db.admin().reads();
            let t = Instant::now();
            let hits = db.search(&query).expect("search");
            lat[p].push(t.elapsed().as_secs_f64() * 1e3);
            let after = db.admin().reads();
            refs[p] += after.refs - before.refs;
            buckets[p] += after.buckets - before.buckets;
            std::hint::black_box(hits);
        }
    }
    for (p, (name, _, _)) in plans.iter().enumerate() {
        let v = &mut lat[p];
        println!(
            "query {name:<12} p50 {:.3} ms  p99 {:.3} ms  buckets/query {:.1}  refs/query {:.3}",
            pct(v, 0.5),
            pct(v, 0.99),
            buckets[p] as f64 / queries as f64,
            refs[p] as f64 / queries as f64
        );
    }
}
