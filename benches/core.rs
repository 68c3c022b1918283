//! Fingerprint throughput beside plain jieba-rs segmentation (the floor),
//! an index query beside a brute-force scan at the same N, query latency at
//! each supported k (multi-probe above 3), and text ingest
//! (1 and 2 threads) beside one-thread segmentation of the same text.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use simdb::index::{brute_force, MemIndex};
use simdb::ingest::{self, Input};
use simdb::{Content, Db, Fingerprint, Fingerprinter, Recipe};

fn vocab() -> &'static [&'static str] {
    static V: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        simdb::fingerprint::vocabulary()
            .filter(|w| (2..=4).contains(&w.chars().count()))
            .collect()
    })
}

fn chinese_text(seed: u64, words: usize) -> String {
    let vocab = vocab();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..words)
        .map(|i| {
            let w = *vocab.choose(&mut rng).unwrap();
            if i % 9 == 8 {
                format!("{w}。")
            } else {
                w.to_string()
            }
        })
        .collect()
}

fn fingerprint(c: &mut Criterion) {
    let text = chinese_text(1, 400);
    let mut g = c.benchmark_group("fingerprint");
    g.throughput(Throughput::Bytes(text.len() as u64));
    let jieba = jieba_rs::Jieba::new();
    g.bench_function("jieba_cut_only", |b| {
        b.iter(|| jieba.cut(&text, false).len())
    });
    for (name, recipe) in [
        ("default", Recipe::default()),
        // Stores made before script folding and word 3-grams.
        ("before_reposts", Recipe::default().before_reposts()),
        ("with_bigrams", Recipe::with(0, 2, false)),
    ] {
        let f = Fingerprinter::new(recipe);
        f.warm_up();
        g.bench_function(name, |b| b.iter(|| f.fingerprint(&text).unwrap()));
    }
    // What ingest computes: fingerprint, verification sketch, top terms.
    let f = Fingerprinter::new(Recipe::default());
    g.bench_function("default_analyze", |b| b.iter(|| f.analyze(&text).unwrap()));
    // The part hashes of the same text (`fingerprint::parts`), beside the
    // analysis they would be added to.
    let normal = f.normal(&text);
    g.bench_function("parts", |b| {
        b.iter(|| simdb::fingerprint::parts::smallest_parts(&normal, 6).len())
    });
    // The fine sketch of the same text (`fingerprint::fine`), beside the
    // 32-byte sketch the analysis makes.
    g.bench_function("sketch", |b| {
        b.iter(|| simdb::Sketch::of_chars(&normal, 4, simdb::fingerprint::Fill::Rehash))
    });
    g.bench_function("fine_sketch", |b| {
        b.iter(|| simdb::fingerprint::FineSketch::of_chars(&normal, 4))
    });
    // A title of one 4-gram: 383 of the fine sketch's 384 bins filled
    // from the one (issue 60, finding 9: its donor tables).
    g.bench_function("fine_sketch_one_shingle", |b| {
        b.iter(|| simdb::fingerprint::FineSketch::of_chars("abcd", 4))
    });
    g.bench_function("sketch_one_shingle", |b| {
        b.iter(|| simdb::Sketch::of_chars("abcd", 4, simdb::fingerprint::Fill::Rehash))
    });
    g.finish();
}

fn query(c: &mut Criterion) {
    const N: usize = 200_000;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let fps: Vec<Fingerprint> = (0..N).map(|_| Fingerprint(rng.random())).collect();
    let ids: Vec<String> = (0..N).map(|i| format!("doc-{i}")).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::options()
        .create(dir.path().join("db"), Recipe::default())
        .unwrap();
    {
        let mut w = db.writer().unwrap();
        for (i, fp) in fps.iter().enumerate() {
            w.put(&ids[i], *fp, &Content::Text(String::new()), "bench")
                .unwrap();
            if i % 10_000 == 9_999 {
                w.commit().unwrap();
            }
        }
        w.commit().unwrap();
        db.admin().flush().unwrap();
    }
    let mut mem = MemIndex::new();
    for (i, fp) in fps.iter().enumerate() {
        mem.insert(&ids[i], *fp);
    }
    let mut g = c.benchmark_group("query_k3_200k");
    let mut qrng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let fps_for_k = fps.clone();
    let mut next_q = move || Fingerprint(fps[qrng.random_range(0..N)].0 ^ 0b1001);
    g.bench_function("store", |b| {
        b.iter_batched(
            &mut next_q,
            |q| db.query(q, 3, None).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("mem_index", |b| {
        b.iter_batched(
            || Fingerprint(rand::random()),
            |q| mem.query(q, 3),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("brute_force", |b| {
        b.iter_batched(
            || Fingerprint(rand::random()),
            |q| brute_force(mem.iter(), q, 3),
            BatchSize::SmallInput,
        )
    });
    g.finish();

    // Latency per k on the same store: 1 bucket per family up to k = 3, 17
    // up to 7, 137 up to 11. Queries are stored fingerprints with 2 bits
    // flipped (so each has a hit).
    let mut g = c.benchmark_group("query_200k_by_k");
    for k in [0u32, 3, 4, 7, 8, 11] {
        let mut qrng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let fps = &fps_for_k;
        g.bench_function(format!("store_k{k}"), |b| {
            b.iter_batched(
                || Fingerprint(fps[qrng.random_range(0..N)].0 ^ 0b11),
                |q| db.query(q, k, None).unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn ingest(c: &mut Criterion) {
    let docs: Vec<String> = (0..400).map(|i| chinese_text(100 + i, 400)).collect();
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let mut jsonl = String::new();
    for (i, d) in docs.iter().enumerate() {
        jsonl += &serde_json::json!({"id": format!("d{i}"), "text": d}).to_string();
        jsonl.push('\n');
    }
    std::fs::write(&input, jsonl).unwrap();
    let mut g = c.benchmark_group("ingest_400_docs");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10);
    let jieba = jieba_rs::Jieba::new();
    g.bench_function("jieba_cut_one_thread", |b| {
        b.iter(|| {
            docs.iter()
                .map(|d| jieba.cut(d, false).len())
                .sum::<usize>()
        })
    });
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        g.bench_function(format!("ingest_{threads}_threads"), |b| {
            b.iter_batched(
                || {
                    let d = tempfile::tempdir().unwrap();
                    let db = Db::options()
                        .create(d.path().join("db"), Recipe::default())
                        .unwrap();
                    (d, db)
                },
                |(d, mut db)| {
                    let inputs = [Input::guess(&input)];
                    let s = pool
                        .install(|| ingest::run(&mut db, &inputs, &Default::default(), |_| {}))
                        .unwrap();
                    assert_eq!(s.writes.inserted, 400);
                    (d, db) // dropped outside the timing
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// The query's hot loop: one posting of 763 fingerprints (a bucket at 50M
/// documents) scanned by an exact k = 3 plan and a ranked plan.
fn scan_posting(c: &mut Criterion) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut fps: Vec<u64> = (0..763).map(|_| rng.random()).collect();
    fps.sort_unstable();
    let posting: Vec<u8> = fps.iter().flat_map(|f| f.to_be_bytes()).collect();
    let q = Fingerprint(rng.random());
    let weak: Vec<u8> = (0..24u8).map(|i| (i * 7) % 64).collect();
    let mut g = c.benchmark_group("scan_posting_763");
    g.throughput(Throughput::Elements(763));
    for (name, plan) in [
        ("exact_k3", simdb::index::ProbePlan::exact(q, 3)),
        ("ranked", simdb::index::ProbePlan::ranked(q, 3, &weak, 128)),
    ] {
        let mut out = Vec::with_capacity(16);
        g.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                plan.scan_posting(q, std::hint::black_box(&posting), &mut out);
                out.len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, fingerprint, query, ingest, scan_posting);
criterion_main!(benches);
