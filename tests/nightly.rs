//! Issue 36: a chunk's duplicate checks read the store first, in sorted
//! passes on every core ([`simdb::Writer::prefetch`]), then decide in
//! order from memory. The decisions must be exactly those of the
//! per-document check, which reads for itself: that check is the oracle
//! here, over seeded stores whose buckets are full of near fingerprints
//! (bits spread over the blocks, shared fingerprints, sketches that share
//! band values), through copies within one batch, deletes and replaces in
//! the same batch, under every keep policy and both duplicate policies.

use crate::common;

use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use simdb::db::write::{DuplicatePolicy, WritePolicy};
use simdb::db::KeepPolicy;
use simdb::fingerprint::Analysis;
use simdb::ingest::{self, Doc, Input};
use simdb::{Content, Db, Fingerprint, Recipe, Sketch};

/// One write of a sequence.
#[derive(Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "a test's sequence of a few thousand writes"
)]
enum Op {
    Put(Doc, Analysis),
    Delete(String),
}

fn doc(id: &str, body: &str, priority: Option<f64>) -> Doc {
    Doc {
        id: id.to_string(),
        content: Content::Text(body.to_string()),
        source: "test".into(),
        line: None,
        priority,
        dated: None,
    }
}

/// `fp` with `n` bits flipped, spread over the four blocks.
fn flip(rng: &mut ChaCha8Rng, fp: u64, n: u32) -> u64 {
    let mut x = fp;
    for i in 0..n {
        let block = (i % 4) as u64;
        let bit = block * 16 + rng.random_range(0..16);
        x ^= 1 << bit;
    }
    x
}

/// `s` with `n` of its 32 bytes redrawn (sketches that share some band
/// values and differ in others).
fn redraw(rng: &mut ChaCha8Rng, s: &Sketch, n: usize) -> Sketch {
    let mut out = *s;
    for _ in 0..n {
        let i = rng.random_range(0..32);
        out.0[i] = rng.random();
    }
    out
}

/// Families of near documents: a base fingerprint and sketch, and variants
/// at 0..=16 bits with partly redrawn sketches; weak bits drawn so that
/// ranked plans differ between documents.
struct Gen {
    rng: ChaCha8Rng,
    bases: Vec<(u64, Sketch)>,
}

impl Gen {
    fn new(seed: u64, families: usize) -> Gen {
        let mut rng = common::rng(seed);
        let bases = (0..families)
            .map(|_| {
                let mut s = [0u8; 32];
                rng.fill(&mut s[..]);
                (rng.random::<u64>(), Sketch(s))
            })
            .collect();
        Gen { rng, bases }
    }

    fn analysis(&mut self) -> Analysis {
        let (fp, sketch) = *self.bases.choose(&mut self.rng).unwrap();
        let bits = *[0u32, 0, 1, 2, 3, 3, 4, 5, 7, 9, 11, 13, 16]
            .choose(&mut self.rng)
            .unwrap();
        let fp = flip(&mut self.rng, fp, bits);
        let redrawn = *[0usize, 0, 1, 3, 6, 12, 32].choose(&mut self.rng).unwrap();
        let sketch = redraw(&mut self.rng, &sketch, redrawn);
        let mut weak: Vec<u8> = (0..64).collect();
        let n = self.rng.random_range(8..24);
        let (weak, _) = weak.partial_shuffle(&mut self.rng, n);
        Analysis {
            fingerprint: Fingerprint(fp),
            sketch: Some(sketch),
            fine: None,
            terms: 60,
            distinct_terms: 50,
            top_terms: Vec::new(),
            weak_bits: weak.to_vec(),
            parts: Vec::new(),
        }
    }

    /// A sequence of writes: new documents, copies of earlier ones (some in
    /// the same batch), replaces, deletes of stored and pending ones,
    /// unchanged re-puts.
    fn ops(&mut self, n: usize, first_id: usize) -> Vec<Op> {
        let mut out: Vec<Op> = Vec::with_capacity(n);
        let mut written: Vec<(String, Doc, Analysis)> = Vec::new();
        for i in 0..n {
            let id = format!("d{:06}", first_id + i);
            let r: u32 = self.rng.random_range(0..100);
            let priority = self
                .rng
                .random_bool(0.3)
                .then(|| f64::from(self.rng.random_range(0..5u8)));
            let len = self.rng.random_range(20..400);
            let body: String = std::iter::repeat_n('x', len).collect::<String>() + &id;
            let op = match (r, written.choose(&mut self.rng).cloned()) {
                // An exact copy (same analysis) under a new id.
                (0..=14, Some((_, _, a))) => Op::Put(doc(&id, &body, priority), a),
                // A replace: an id written before, new content.
                (15..=22, Some((old, _, _))) => {
                    let a = self.analysis();
                    Op::Put(doc(&old, &body, priority), a)
                }
                // A delete of an id written before.
                (23..=29, Some((old, _, _))) => Op::Delete(old),
                // The same document again (unchanged).
                (30..=33, Some((_, d, a))) => Op::Put(d, a),
                _ => Op::Put(doc(&id, &body, priority), self.analysis()),
            };
            match &op {
                Op::Put(d, a) => written.push((d.id.clone(), d.clone(), a.clone())),
                Op::Delete(id) => written.retain(|w| &w.0 != id),
            }
            out.push(op);
        }
        out
    }
}

/// Per write: its outcome and its duplicates as the check found them.
type Answer = (
    String,
    Option<String>,
    Vec<(String, u32, Option<String>)>,
    bool,
);

/// Applies `ops` in chunks of `chunk` through one writer that commits
/// each, with or without the prefetch (with it, every third chunk has
/// none: what an earlier chunk read must not be used after its commit).
fn apply(db: &mut Db, ops: &[Op], chunk: usize, opts: &WritePolicy, prefetch: bool) -> Vec<Answer> {
    let mut out = Vec::new();
    let mut w = db.writer().unwrap();
    for (n, part) in ops.chunks(chunk).enumerate() {
        if prefetch && n % 3 != 2 {
            let qs: Vec<simdb::db::Query> = part
                .iter()
                .filter_map(|op| match op {
                    Op::Put(d, a) => Some(opts.duplicate_query(a, d.content.len())),
                    Op::Delete(_) => None,
                })
                .collect();
            let ids = part.iter().filter_map(|op| match op {
                Op::Put(d, _) => Some(d.id.as_str()),
                Op::Delete(_) => None,
            });
            w.prefetch(&qs, ids).unwrap();
        }
        for op in part {
            match op {
                Op::Put(d, a) => {
                    let (placed, dups) = ingest::place(&mut w, d, a.clone(), opts).unwrap();
                    out.push((
                        d.id.clone(),
                        Some(placed.name().to_string()),
                        dups.hits
                            .iter()
                            .map(|h| {
                                (
                                    h.id.clone(),
                                    h.distance,
                                    h.similarity.map(|s| format!("{s:.6}")),
                                )
                            })
                            .collect(),
                        dups.complete,
                    ));
                }
                Op::Delete(id) => {
                    let existed = w.delete(id).unwrap();
                    out.push((id.clone(), None, Vec::new(), existed));
                }
            }
        }
        w.commit().unwrap();
    }
    out
}

/// Every record's id, fingerprint and ord, and the clusters.
fn state(db: &Db) -> State {
    let mut recs = Vec::new();
    db.admin()
        .for_each(|id, r| {
            recs.push((id.to_string(), r.fingerprint.0, r.ord));
            Ok(())
        })
        .unwrap();
    (recs, common::cluster_shapes(db))
}

/// A store's records (id, fingerprint, ord) and clusters.
type State = (Vec<(String, u64, u64)>, Vec<(Vec<String>, String)>);

/// What each write of a run answered, and the store after.
type Run = (Vec<Answer>, State);

/// `stored` (in chunks of `chunks.0`, per document) then `later` (in
/// chunks of `chunks.1`) written into a fresh store under `keep`, twice:
/// `later` per document, then prefetched. Each store verifies clean and
/// passes `check`; returns both runs.
fn both_ways(
    stored: &[Op],
    later: &[Op],
    chunks: (usize, usize),
    opts: &WritePolicy,
    keep: KeepPolicy,
    check: impl Fn(&Db),
) -> [Run; 2] {
    [false, true].map(|prefetch| {
        let t = common::TempDb::new();
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        db.maintenance().set_keep_policy(keep).unwrap();
        apply(&mut db, stored, chunks.0, opts, false);
        let answers = apply(&mut db, later, chunks.1, opts, prefetch);
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "prefetch {prefetch}: {:#?}", rep.problems);
        check(&db);
        (answers, state(&db))
    })
}

/// One seeded store, written twice: per-document checks and prefetched
/// chunks, with the same answers and the same store after.
fn same_as_per_document(seed: u64, keep: KeepPolicy, policy: DuplicatePolicy, chunk: usize) {
    let mut gen = Gen::new(seed, 40);
    let stored = gen.ops(1500, 0);
    let later = gen.ops(900, 1500);
    let opts = WritePolicy {
        policy,
        ..Default::default()
    };
    let runs = both_ways(&stored, &later, (300, chunk), &opts, keep, |_| {});
    let (a, b) = (&runs[0], &runs[1]);
    assert_eq!(a.0.len(), b.0.len());
    for (n, (x, y)) in a.0.iter().zip(&b.0).enumerate() {
        assert_eq!(
            x, y,
            "seed {seed}, {keep:?}, {policy:?}, chunk {chunk}: write {n} differs"
        );
    }
    assert_eq!(a.1, b.1, "seed {seed}: the stores differ after");
    // The sequence must exercise what it claims.
    let dups = a.0.iter().filter(|x| !x.2.is_empty()).count();
    let deletes = a.0.iter().filter(|x| x.1.is_none() && x.3).count();
    let far = a.0.iter().flat_map(|x| &x.2).filter(|h| h.1 > 3).count();
    assert!(
        dups > 100 && deletes > 10 && far > 20,
        "seed {seed}: {dups} duplicates, {deletes} deletes, {far} beyond k"
    );
}

#[test]
fn prefetched_chunks_decide_as_the_per_document_check() {
    for (seed, keep, policy, chunk) in [
        (1, KeepPolicy::First, DuplicatePolicy::IndexAll, 2048),
        (2, KeepPolicy::Newest, DuplicatePolicy::IndexAll, 64),
        (3, KeepPolicy::Longest, DuplicatePolicy::Skip, 300),
        (4, KeepPolicy::Priority, DuplicatePolicy::Skip, 7),
        (5, KeepPolicy::First, DuplicatePolicy::Skip, 1),
    ] {
        same_as_per_document(seed, keep, policy, chunk);
    }
}

/// Exact k (no ranked plan, no bands) and a probe budget other than the
/// default: the prefetch reads what those plans read.
#[test]
fn prefetched_chunks_decide_as_the_per_document_check_at_other_plans() {
    for (k, budget) in [(3, 0), (7, 0), (3, 48), (5, 200)] {
        let mut gen = Gen::new(100 + u64::from(k), 30);
        let stored = gen.ops(1200, 0);
        let later = gen.ops(600, 1200);
        let opts = WritePolicy {
            k,
            probe_budget: budget,
            ..Default::default()
        };
        let runs = both_ways(
            &stored,
            &later,
            (400, 150),
            &opts,
            KeepPolicy::First,
            |_| {},
        );
        assert!(runs[0] == runs[1], "k {k}, budget {budget}: answers differ");
    }
}

/// The file pipeline (which prefetches every chunk) against the
/// per-document check of the same documents, texts this time.
#[test]
fn ingest_run_decides_as_the_per_document_check() {
    let vocab = common::vocab();
    let mut rng = common::rng(36);
    let bases: Vec<Vec<String>> = (0..40)
        .map(|_| common::article(&mut rng, &vocab, 150))
        .collect();
    let mut docs = Vec::new();
    for i in 0..1400 {
        let base = bases.choose(&mut rng).unwrap();
        let words = match rng.random_range(0..4) {
            0 => base.clone(),
            1 => {
                let n = rng.random_range(1..12);
                common::edit(&mut rng, &vocab, base, n)
            }
            2 => {
                // A wrap: a third more words around it.
                let mut w = common::article(&mut rng, &vocab, 25);
                w.extend(base.iter().cloned());
                w.extend(common::article(&mut rng, &vocab, 25));
                w
            }
            _ => common::article(&mut rng, &vocab, 150),
        };
        // Some ids come again: replaces within and across batches.
        let id = if i > 100 && rng.random_bool(0.05) {
            format!("t{:05}", rng.random_range(0..i))
        } else {
            format!("t{i:05}")
        };
        docs.push(doc(&id, &words.concat(), None));
    }
    let stored = &docs[..700];
    let later = &docs[700..];
    let opts = WritePolicy::default();
    let t1 = common::TempDb::new();
    let t2 = common::TempDb::new();
    let mut per_doc = Db::options().create(t1.path(), Recipe::default()).unwrap();
    let mut run = Db::options().create(t2.path(), Recipe::default()).unwrap();
    let f = per_doc.fingerprinter().clone();
    let ops = |ds: &[Doc]| -> Vec<Op> {
        ds.iter()
            .map(|d| Op::Put(d.clone(), d.content.analyze(&f).unwrap()))
            .collect()
    };
    apply(&mut per_doc, &ops(stored), 100, &opts, false);
    apply(&mut run, &ops(stored), 100, &opts, false);
    let expected = apply(&mut per_doc, &ops(later), 1, &opts, false);
    let lines: String = later
        .iter()
        .map(|d| {
            let Content::Text(t) = &d.content else {
                unreachable!()
            };
            serde_json::json!({"id": d.id, "text": t}).to_string() + "\n"
        })
        .collect();
    let input = t2.file("later.jsonl", lines);
    let mut reported = Vec::new();
    let summary = ingest::run(
        &mut run,
        &[Input::guess(&input)],
        &ingest::Options {
            batch_size: 128,
            ..Default::default()
        },
        |e| {
            if let ingest::Event::Duplicate(r) = e {
                reported.push((r.id.clone(), r.duplicate_of.clone(), r.distance));
            }
        },
    )
    .unwrap();
    let wanted: Vec<(String, String, u32)> = expected
        .iter()
        .filter_map(|x| x.2.first().map(|h| (x.0.clone(), h.0.clone(), h.1)))
        .collect();
    assert_eq!(reported, wanted);
    assert!(wanted.len() > 300, "{}", wanted.len());
    assert_eq!(summary.writes.near_duplicates as usize, wanted.len());
    let (a, b) = (state(&per_doc), state(&run));
    assert_eq!(a.1, b.1, "clusters");
    let ids =
        |s: &State| -> Vec<(String, u64)> { s.0.iter().map(|r| (r.0.clone(), r.1)).collect() };
    assert_eq!(ids(&a), ids(&b), "records");
}

/// Review 2026-11-b, finding 2: a document's summary (`simdb get`,
/// `GET /documents/{id}`, Python `get`) gives its cluster's size and
/// representative from a few reads, not by reading every member's record
/// (before: one record read per member, 2,000 here).
#[test]
fn regression_review_b_2_a_documents_cluster_is_summed_up_without_its_members() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut gen = Gen::new(9, 1);
    let a = gen.analysis();
    let opts = WritePolicy::default();
    let ops: Vec<Op> = (0..2000)
        .map(|i| {
            Op::Put(
                doc(&format!("x{i:04}"), &format!("copy {i}"), None),
                a.clone(),
            )
        })
        .collect();
    apply(&mut db, &ops, 500, &opts, true);
    let before = db.admin().reads();
    let d = db.document("x1500").unwrap().unwrap();
    let after = db.admin().reads();
    assert_eq!(d.cluster.size, 2000);
    assert_eq!(d.cluster.representative, "x0000");
    assert!(
        after.records - before.records <= 3,
        "{} records read",
        after.records - before.records
    );
    // The same as the whole cluster says.
    let c = db.clusters().of("x1500").unwrap().unwrap();
    assert_eq!((c.id, c.size), (d.cluster.id, d.cluster.size));
    assert_eq!(c.representative, d.cluster.representative);
    // A document alone is its own cluster of one.
    let mut w = db.writer().unwrap();
    let lone = Gen::new(10, 1).analysis();
    let (_, dups) = ingest::place(&mut w, &doc("alone", "alone", None), lone, &opts).unwrap();
    w.commit().unwrap();
    drop(w);
    assert!(dups.hits.is_empty());
    let d = db.document("alone").unwrap().unwrap();
    assert_eq!(
        (d.cluster.size, d.cluster.representative.as_str()),
        (1, "alone")
    );
}

/// A batch that deletes or replaces the first two documents of a
/// fingerprint that others still hold: the fingerprint stays in its
/// buckets and its band entry moves to the next holder, as without the
/// prefetch (whose `refs` entries hold only a fingerprint's first two).
#[test]
fn a_batch_that_rewrites_a_fingerprints_first_documents_keeps_its_postings() {
    let mut gen = Gen::new(11, 3);
    let a = gen.analysis();
    let mut other = a.clone();
    other.sketch = Some(redraw(&mut gen.rng, &a.sketch.unwrap(), 32));
    let stored: Vec<Op> = (0..5)
        .map(|i| {
            Op::Put(
                doc(&format!("f{i}"), &format!("copy {i}"), None),
                if i < 2 { a.clone() } else { other.clone() },
            )
        })
        .collect();
    let replaced = gen.analysis();
    let later = vec![
        Op::Delete("f0".into()),
        Op::Put(doc("f1", "new text", None), replaced),
        Op::Put(doc("f9", "another", None), gen.analysis()),
    ];
    let opts = WritePolicy::default();
    let runs = both_ways(&stored, &later, (10, 10), &opts, KeepPolicy::First, |db| {
        assert_eq!(db.query(a.fingerprint, 0, None).unwrap().len(), 3);
    });
    assert!(runs[0] == runs[1]);
}

/// A hot bucket sealed into segments (9,000 fingerprints in one bucket of
/// block family 0, past the 4,096 a head holds): the prefetch walks the
/// head and its segments as the per-document check reads them.
#[test]
fn prefetched_chunks_read_sealed_segments_as_the_per_document_check() {
    let mut gen = Gen::new(12, 50);
    for b in gen.bases.iter_mut() {
        b.0 = 0xbeef << 48 | (b.0 & 0xffff_ffff_ffff);
    }
    let hot = |ops: Vec<Op>| -> Vec<Op> {
        ops.into_iter()
            .map(|op| match op {
                Op::Put(d, mut a) => {
                    a.fingerprint =
                        Fingerprint(0xbeef << 48 | (a.fingerprint.0 & 0xffff_ffff_ffff));
                    Op::Put(d, a)
                }
                op => op,
            })
            .collect()
    };
    let stored = hot(gen.ops(9000, 0));
    let later = hot(gen.ops(600, 9000));
    let opts = WritePolicy::default();
    let runs = both_ways(
        &stored,
        &later,
        (3000, 256),
        &opts,
        KeepPolicy::First,
        |db| {
            let segments = db.admin().verify().unwrap();
            assert!(segments.is_clean());
        },
    );
    assert!(runs[0] == runs[1], "answers differ");
    let far = runs[0].0.iter().flat_map(|x| &x.2).count();
    assert!(far > 100, "{far}");
}

/// Issue 36, part 3: a write's reads, counted (`Admin::reads`). Into a
/// store of 20,000 near and random sketched documents, 2,048 more (half
/// near the stored ones, half new) are written in one chunk, with the chunk's read-ahead and without it (the
/// per-document check), on two copies of the same store. The read-ahead
/// reads each bucket the chunk names once, however many of its documents
/// name it, and per document at most the first two `refs` entries of its
/// own fingerprint and of its 64 nearest candidates; the decisions are the
/// same. (Measured: 15.9 buckets, 1.5 `refs` entries and 1.5 records per
/// document read ahead, against 89.0, 1.2 and 2.5 checking one by one.)
#[test]
fn a_chunks_reads_are_counted_and_shared() {
    let opts = WritePolicy::default();
    let mut g = Gen::new(36, 4000);
    let stored = g.ops(20_000, 0);
    let stored: Vec<Op> = stored
        .into_iter()
        .filter(|op| matches!(op, Op::Put(..)))
        .collect();
    let mut fresh = Gen::new(3600, 2048);
    let chunk: Vec<Op> = (0..2048)
        .map(|i| {
            let id = format!("n{i:05}");
            let a = if i % 2 == 0 {
                g.analysis()
            } else {
                fresh.analysis()
            };
            Op::Put(doc(&id, &format!("text {id}"), None), a)
        })
        .collect();
    let mut counts = Vec::new();
    let mut answers = Vec::new();
    for prefetch in [true, false] {
        let t = common::TempDb::new();
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        apply(&mut db, &stored, 4096, &opts, true);
        let before = db.admin().reads();
        answers.push(apply(&mut db, &chunk, 2048, &opts, prefetch));
        let after = db.admin().reads();
        counts.push((
            after.buckets - before.buckets,
            after.refs - before.refs,
            after.records - before.records,
        ));
    }
    assert_eq!(answers[0], answers[1]);
    let ((bp, rp, dp), (bd, rd, dd)) = (counts[0], counts[1]);
    let n = chunk.len() as u64;
    let per = |x: u64| x as f64 / n as f64;
    eprintln!(
        "per document, read-ahead: {:.1} buckets, {:.1} refs, {:.2} records; \
         per-document check: {:.1} buckets, {:.1} refs, {:.2} records",
        per(bp),
        per(rp),
        per(dp),
        per(bd),
        per(rd),
        per(dd)
    );
    // The per-document check reads its plan's buckets (up to 128) each.
    assert!(bd >= 80 * n, "{bd}");
    // The read-ahead shares them: each once per chunk.
    assert!(bp * 2 <= bd, "{bp} against {bd}");
    // refs: two entries of the document's own fingerprint and of each of
    // its 64 nearest candidates read ahead, a few more by walks past them.
    assert!(rp <= 2 * (1 + 64) * n, "{rp}");
    // Records: the chunk's ids once each (read ahead), and those of the
    // candidates whose length a containment check needs; never more than
    // the per-document check reads.
    assert!(dp <= dd && dp <= 2 * n, "{dp} against {dd}");
}
