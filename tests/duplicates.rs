//! Issue 23: a store whose input is mostly copies. A write's cost does
//! not grow with the copies stored (counted in reads, not timed), every
//! answer is bounded, hot buckets are sealed into segments and still
//! answer exactly, and the writer's kept buckets stay exact through its
//! own commits.

use crate::common;

use std::collections::BTreeMap;

use rand::Rng;
use simdb::db::{limits, Query, QueryOptions, QueryRequest, Subject};
use simdb::fingerprint::Analysis;
use simdb::index::{brute_force, brute_force_plan, ProbePlan};
use simdb::ingest::{self, Doc};
use simdb::{Content, Db, Error, Fingerprint, Recipe, Sketch};

fn text_doc(id: &str, text: &str) -> Doc {
    Doc {
        id: id.to_string(),
        content: Content::Text(text.to_string()),
        source: "test".into(),
        line: None,
        priority: None,
        dated: None,
    }
}

/// Writes `docs` as ingest does, in batches of `batch`.
fn ingest(db: &mut Db, docs: &[Doc], batch: usize) -> Vec<ingest::Duplicates> {
    let f = db.fingerprinter().clone();
    let opts = simdb::db::write::WritePolicy::default();
    let mut out = Vec::new();
    for chunk in docs.chunks(batch) {
        let mut w = db.writer().unwrap();
        for d in chunk {
            let a = d.content.analyze(&f).unwrap();
            out.push(ingest::place(&mut w, d, a, &opts).unwrap().1);
        }
        w.commit().unwrap();
    }
    out
}

/// Reads per document of writing `docs`.
fn reads_per_doc(db: &mut Db, docs: &[Doc]) -> f64 {
    let before = db.admin().reads();
    ingest(db, docs, 50);
    let after = db.admin().reads();
    let total = (after.refs - before.refs)
        + (after.records - before.records)
        + (after.buckets - before.buckets);
    total as f64 / docs.len() as f64
}

/// Exact copies and near copies of one article: the 100 writes after 3,000
/// copies read about what the 100 after 200 did (the old check read every
/// stored copy: 15 times as much at 3,000).
#[test]
fn regression_23_a_copy_costs_the_same_whatever_the_copies_stored() {
    let vocab = common::vocab();
    let mut rng = common::rng(23);
    let base = common::article(&mut rng, &vocab, 300);
    for near in [false, true] {
        let t = common::TempDb::new();
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        let docs: Vec<Doc> = (0..3100)
            .map(|i| {
                let words = if near {
                    common::edit(&mut rng, &vocab, &base, 1 + i % 4)
                } else {
                    base.clone()
                };
                text_doc(&format!("c{i:05}"), &words.concat())
            })
            .collect();
        ingest(&mut db, &docs[..200], 50);
        let early = reads_per_doc(&mut db, &docs[200..300]);
        ingest(&mut db, &docs[300..3000], 500);
        let late = reads_per_doc(&mut db, &docs[3000..3100]);
        assert!(
            late <= 2.0 * early + 20.0,
            "near {near}: {early:.1} reads per write after 200 copies, {late:.1} after 3,000"
        );
        assert!(db.admin().verify().unwrap().is_clean());
    }
}

#[test]
fn regression_23_duplicates_are_listed_up_to_a_cap_with_their_count() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let vocab = common::vocab();
    let text = common::article(&mut common::rng(4), &vocab, 200).concat();
    // Ids in reverse order of writing: the listing is by distance then id.
    let docs: Vec<Doc> = (0..60)
        .map(|i| text_doc(&format!("d{:02}", 59 - i), &text))
        .collect();
    let out = ingest(&mut db, &docs, 7);
    // Below the check's bound the count is exact.
    assert_eq!((out[5].count(), out[5].exact()), (5, true));
    let ids: Vec<&str> = out[5].hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["d55", "d56", "d57", "d58", "d59"]);
    // Above it: the nearest 16 (by id, all at distance 0), a lower bound.
    let last = &out[59];
    assert_eq!(last.count(), limits::CHECK_CONFIRMED);
    assert!(!last.exact());
    let listed: Vec<&str> = last.listed(10).iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        listed,
        ["d01", "d02", "d03", "d04", "d05", "d06", "d07", "d08", "d09", "d10"]
    );
    // A write may ask to list more (up to MAX_DUPLICATES): the check goes
    // as deep, and the clusters it joins do not change.
    let opts = simdb::db::write::WritePolicy {
        max_duplicates: 40,
        ..Default::default()
    };
    let d = text_doc("zz", &text);
    let a = d.content.analyze(db.fingerprinter()).unwrap();
    let mut w = db.writer().unwrap();
    let (_, dups) = ingest::place(&mut w, &d, a, &opts).unwrap();
    assert_eq!((dups.count(), dups.exact()), (40, false));
    w.commit().unwrap();
    drop(w);
    let c = db.clusters().of("zz").unwrap().unwrap();
    assert_eq!(c.size, 61, "one cluster of every copy");
}

#[test]
fn regression_23_queries_have_a_default_and_a_maximum_limit() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let fp = Fingerprint(0x0123_4567_89ab_cdef);
    {
        let mut w = db.writer().unwrap();
        for i in 0..50 {
            w.put(&format!("f{i:02}"), fp, &Content::Fingerprint(fp), "t")
                .unwrap();
        }
        w.commit().unwrap();
    }
    let q = |o: QueryOptions| db.answer(&QueryRequest::new(Subject::Fingerprint(fp)).with(o));
    let hits = q(QueryOptions::default()).unwrap().hits;
    assert_eq!(hits.len(), limits::DEFAULT_LIMIT);
    assert_eq!(hits[0].id, "f00");
    let all = q(QueryOptions {
        limit: Some(limits::MAX_LIMIT),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(all.hits.len(), 50);
    let too_many = q(QueryOptions {
        limit: Some(limits::MAX_LIMIT + 1),
        ..Default::default()
    });
    assert!(matches!(too_many, Err(Error::Input(_))), "{too_many:?}");
    // The library's own Query has no limit unless given one.
    assert_eq!(db.query(fp, 0, None).unwrap().len(), 50);
    // A limited answer of a hot fingerprint reads what it returns, not the
    // copies: about as many refs entries as hits.
    let before = db.admin().reads();
    assert_eq!(db.query(fp, 3, Some(3)).unwrap().len(), 3);
    let r = db.admin().reads();
    assert!(r.refs - before.refs <= 8, "{:?} -> {r:?}", before);
}

/// 20,000 fingerprints in one bucket of family 0: the writer seals the
/// bucket's head into segments of at most SEGMENT_ENTRIES, no stored value
/// holds more, and queries (before and after deletes from sealed
/// segments, after reopening, and of an imported copy) equal a brute force.
#[test]
fn hot_buckets_are_sealed_into_segments_and_answer_exactly() {
    let t = common::TempDb::new();
    let mut rng = common::rng(77);
    let block0 = 0xbeefu64 << 48;
    let mut live: BTreeMap<String, Fingerprint> = BTreeMap::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    for batch in 0..10 {
        let mut w = db.writer().unwrap();
        for i in 0..2000 {
            // Some near a few centres, so queries have neighbours.
            let fp = if i % 4 == 0 {
                let centre = block0 | ((i % 40) as u64 * 0x0001_0101_0101);
                Fingerprint(centre ^ (1 << rng.random_range(0..48)))
            } else {
                Fingerprint(block0 | (rng.random::<u64>() & 0xffff_ffff_ffff))
            };
            let id = format!("b{batch}-{i:04}");
            w.put(&id, fp, &Content::Fingerprint(fp), "t").unwrap();
            live.insert(id, fp);
        }
        w.commit().unwrap();
    }
    let check = |db: &Db,
                 live: &BTreeMap<String, Fingerprint>,
                 rng: &mut rand_chacha::ChaCha8Rng| {
        let fps: Vec<Fingerprint> = live.values().copied().collect();
        for n in 0..40 {
            let q = if n % 2 == 0 {
                fps[rng.random_range(0..fps.len())]
            } else {
                Fingerprint(fps[rng.random_range(0..fps.len())].0 ^ (1 << rng.random_range(0..64)))
            };
            for k in [0, 1, 3, 5] {
                let want = brute_force(live.iter().map(|(i, f)| (i.as_str(), *f)), q, k);
                assert_eq!(db.query(q, k, None).unwrap(), want, "query {q} k {k}");
            }
            let order: Vec<u8> = (0..64).rev().collect();
            let ranked = Query::new(q).probing(&order, 64);
            let want = brute_force_plan(
                live.iter().map(|(i, f)| (i.as_str(), *f)),
                q,
                &ranked.plan(),
            );
            assert_eq!(db.search(&ranked).unwrap(), want, "ranked {q}");
        }
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{:#?}", rep.problems);
    };
    check(&db, &live, &mut rng);
    // Every family-0 value is a head or a segment of at most
    // SEGMENT_ENTRIES entries (and a head's trailer).
    let largest = |path: &std::path::Path| -> (usize, usize) {
        let raw = common::raw_open(path);
        let cf = raw.cf_handle("block0").unwrap();
        let (mut keys, mut max) = (0, 0);
        for kv in raw.iterator_cf(cf, rocksdb::IteratorMode::Start) {
            let (k, v) = kv.unwrap();
            if k[..2] == [0xbe, 0xef] {
                keys += 1;
                max = max.max(v.len());
            }
        }
        (keys, max)
    };
    drop(db);
    let (keys, max) = largest(&t.path());
    assert!(keys >= 4, "20,000 fingerprints in {keys} values");
    assert!(
        max <= simdb::index::SEGMENT_ENTRIES * 8 + 4,
        "a value of {max} bytes"
    );
    // Deletes, from sealed segments and the head alike.
    let mut db = Db::options().open(t.path()).unwrap();
    let gone: Vec<String> = live.keys().step_by(7).cloned().collect();
    db.delete(&gone).unwrap();
    for g in &gone {
        live.remove(g);
    }
    check(&db, &live, &mut rng);
    drop(db);
    let db = Db::options().read_only().open(t.path()).unwrap();
    check(&db, &live, &mut rng);
    // An import of the same set writes segments as the writer would.
    let input = t.dir.path().join("fps.jsonl");
    let lines: String = live
        .iter()
        .map(|(id, fp)| format!("{{\"id\":\"{id}\",\"fingerprint\":\"{fp}\"}}\n"))
        .collect();
    std::fs::write(&input, lines).unwrap();
    let imported = t.dir.path().join("imported");
    let o = common::simdb(&[&"import", &imported, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let (keys, max) = largest(&imported);
    assert!(keys >= 4 && max <= simdb::index::SEGMENT_ENTRIES * 8 + 4);
    let idb = Db::options().read_only().open(&imported).unwrap();
    check(&idb, &live, &mut rng);
}

/// The writer keeps the buckets its checks read often, and keeps them in
/// step with its own commits: after each commit of a flood (inserts,
/// deletes, re-inserts), its searches equal a brute force.
#[test]
fn the_writers_kept_buckets_stay_exact_through_its_commits() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut rng = common::rng(5);
    let base: u64 = rng.random();
    let weak: Vec<u8> = (0..64).map(|_| rng.random_range(0..64)).collect();
    let mut live: BTreeMap<String, Fingerprint> = BTreeMap::new();
    for round in 0..6 {
        let mut w = db.writer().unwrap();
        for i in 0..400 {
            let mut f = base;
            for _ in 0..rng.random_range(0..6) {
                f ^= 1 << weak[rng.random_range(0..12)];
            }
            let id = format!("r{round}-{i:03}");
            w.put(
                &id,
                Fingerprint(f),
                &Content::Fingerprint(Fingerprint(f)),
                "t",
            )
            .unwrap();
            live.insert(id, Fingerprint(f));
        }
        // Deletes and re-inserts of earlier rounds' documents.
        let old: Vec<String> = live
            .keys()
            .filter(|k| !k.starts_with(&format!("r{round}-")))
            .step_by(5)
            .cloned()
            .collect();
        for (n, id) in old.iter().enumerate() {
            w.delete(id).unwrap();
            live.remove(id);
            if n % 2 == 0 {
                let f = Fingerprint(base ^ (1 << weak[n % 12]));
                w.put(id, f, &Content::Fingerprint(f), "t").unwrap();
                live.insert(id.clone(), f);
            }
        }
        w.commit().unwrap();
        // Many checks read the same buckets (the writer keeps them).
        for n in 0..200 {
            let q = Fingerprint(base ^ (1 << weak[n % 16]) ^ (1 << (n % 64)));
            let query = if n % 2 == 0 {
                Query::new(q).exact(n as u32 % 4)
            } else {
                Query::new(q).probing(&weak, 128)
            };
            let plan = query.plan();
            let want = brute_force_plan(live.iter().map(|(i, f)| (i.as_str(), *f)), q, &plan);
            assert_eq!(w_search(&mut db, &query), want, "round {round} query {n}");
        }
    }
    assert!(db.admin().verify().unwrap().is_clean());
}

fn w_search(db: &mut Db, q: &Query) -> Vec<simdb::Hit> {
    db.writer().unwrap().search(q).unwrap()
}

/// A write looks beyond k (confidence-ranked probing) only when nothing
/// within k is confirmed: a document with a copy 2 bits away joins that
/// copy's cluster, not also the cluster of a copy 5 weak bits away; a
/// document with only the far copy joins it.
#[test]
fn a_write_with_a_copy_within_k_does_not_look_beyond_k() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let base = Fingerprint(0x5555_aaaa_3333_cccc);
    let weak: Vec<u8> = vec![1, 17, 33, 49, 2, 18, 34, 50];
    // "far" and "y" have a sketch that differs from the others' in one
    // bin of each band: as similar, but sharing no band bucket with them
    // (so band probes, which find the others 8 to 12 bits away, do not).
    let mut other = [9u8; simdb::fingerprint::SKETCH_BYTES];
    for j in 0..simdb::index::bands::BANDS {
        other[2 * j] ^= 0b11;
    }
    let sketch_of = |id: &str| match id {
        "far" | "y" => Sketch(other),
        _ => Sketch([9; simdb::fingerprint::SKETCH_BYTES]),
    };
    let analysis = |fp: Fingerprint, sketch: Sketch| Analysis {
        fingerprint: fp,
        sketch: Some(sketch),
        fine: None,
        terms: 100,
        distinct_terms: 80,
        top_terms: Vec::new(),
        weak_bits: weak.clone(),
        parts: Vec::new(),
    };
    let flip =
        |f: Fingerprint, bits: &[u8]| Fingerprint(bits.iter().fold(f.0, |v, b| v ^ (1 << b)));
    // Within k = 3 of the base; beyond k but in the base's ranked plan (4
    // weak bits and one other); 8 apart, with 4 counted bits either way:
    // neither is in the other's plan.
    let near = flip(base, &[60, 61, 62]);
    let far = flip(base, &[1, 17, 33, 49, 59]);
    let place = |db: &mut Db, id: &str, fp: Fingerprint| {
        let mut w = db.writer().unwrap();
        let d = text_doc(id, id);
        let r =
            ingest::place(&mut w, &d, analysis(fp, sketch_of(id)), &Default::default()).unwrap();
        w.commit().unwrap();
        r.1
    };
    assert!(place(&mut db, "near", near).hits.is_empty());
    assert!(place(&mut db, "far", far).hits.is_empty());
    let d = place(&mut db, "x", base);
    let ids: Vec<&str> = d.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        ["near"],
        "the copy beyond k is not among its duplicates"
    );
    assert!(d.exact());
    assert_eq!(db.clusters().of("x").unwrap().unwrap().size, 2);
    assert_eq!(db.clusters().of("far").unwrap().unwrap().size, 1);
    // A document with no copy within k takes those ranked probing finds
    // beyond it (far at 4 bits, x at 9, both in its plan), and joins the
    // cluster whose representative matches it best ("far", alone, 4
    // bits, against "near" at more), merging none.
    let d = place(&mut db, "y", flip(far, &[18, 34, 50, 2]));
    let got: Vec<(&str, u32)> = d.hits.iter().map(|h| (h.id.as_str(), h.distance)).collect();
    assert_eq!(got, [("far", 4), ("x", 9)]);
    assert_eq!(db.clusters().of("far").unwrap().unwrap().size, 2);
    assert_eq!(db.clusters().of("x").unwrap().unwrap().size, 2);
    // Repair rebuilds the same clusters.
    let before = (
        db.clusters().of("x").unwrap(),
        db.clusters().of("y").unwrap(),
    );
    db.maintenance().repair().unwrap();
    assert_eq!(
        (
            db.clusters().of("x").unwrap(),
            db.clusters().of("y").unwrap()
        ),
        before
    );
}

/// A flood of near copies, then a rebuild: the clusters `verify --repair`
/// rebuilds are the ones ingest built.
#[test]
fn regression_23_rebuilt_clusters_of_a_flood_are_ingests() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let vocab = common::vocab();
    let mut rng = common::rng(9);
    let bases: Vec<Vec<String>> = (0..3)
        .map(|_| common::article(&mut rng, &vocab, 200))
        .collect();
    let docs: Vec<Doc> = (0..900)
        .map(|i| {
            let w = common::edit(&mut rng, &vocab, &bases[i % 3], i % 5);
            text_doc(&format!("n{i:04}"), &w.concat())
        })
        .collect();
    ingest(&mut db, &docs, 100);
    let before = common::cluster_shapes(&db);
    assert!(!before.is_empty());
    db.maintenance().repair().unwrap();
    assert_eq!(common::cluster_shapes(&db), before);
    let _ = ProbePlan::exact(Fingerprint(0), 0);
}

/// A "read more" repost: the first 60% of an article, written after it,
/// whose similarity to it is about its share of it (below the threshold),
/// is confirmed by containment, in a write's check, a query, the cluster it
/// joins and `pairs`; the other way round (the longer written later, as a
/// reply quoting a message) it is not, nor an article of about the same
/// length with that similarity.
#[test]
fn a_truncated_copy_is_confirmed_by_containment() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let vocab = common::vocab();
    let f = simdb::Fingerprinter::new(Recipe::default());
    // An article and its first 60%, chosen (seeded) so that their
    // fingerprints are within 11 bits: an exact k = 11 check finds the
    // pair whatever probing would.
    let (original, half, j) = (1..200)
        .find_map(|seed| {
            let words = common::article(&mut common::rng(seed), &vocab, 240);
            let original = words.concat();
            let half = words[..144].concat();
            let (a, b) = (f.analyze(&original).unwrap(), f.analyze(&half).unwrap());
            // The estimate the store confirms by: refined by the fine
            // sketches, the pair being under the threshold.
            let j = simdb::db::estimate(
                (a.sketch.as_ref(), a.fine.as_ref()),
                (b.sketch.as_ref(), b.fine.as_ref()),
                0.6,
            )
            .unwrap();
            assert!(j.refined || j.similarity >= 0.6);
            let j = j.similarity;
            (a.fingerprint.distance(b.fingerprint) <= 11 && (0.5..0.6).contains(&j))
                .then_some((original, half, j))
        })
        .expect("a seed whose halves are within 11 bits");
    let opts = simdb::ingest::WritePolicy {
        k: 11,
        probe_budget: 0,
        ..Default::default()
    };
    let write = |db: &mut Db, id: &str, text: &str| {
        let mut w = db.writer().unwrap();
        let r =
            ingest::place(&mut w, &text_doc(id, text), f.analyze(text).unwrap(), &opts).unwrap();
        w.commit().unwrap();
        r.1
    };
    assert!(write(&mut db, "original", &original).hits.is_empty());
    let d = write(&mut db, "half", &half);
    assert_eq!(d.hits.len(), 1, "similarity {j}");
    let c = d.hits[0].containment.expect("confirmed by containment");
    assert!(
        c >= simdb::db::MIN_CONTAINMENT && d.hits[0].similarity == Some(j),
        "{c} {j}"
    );
    assert_eq!(db.clusters().of("half").unwrap().unwrap().size, 2);
    // A query of the half finds the original the same way.
    let a = f.analyze(&half).unwrap();
    let q = Query {
        sketch: a.sketch,
        fine: a.fine,
        length: Some(half.len() as u64),
        exclude: Some("half".into()),
        ..Query::new(a.fingerprint).exact(11)
    };
    let hits = db.search(&q).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        (hits[0].id.as_str(), hits[0].containment),
        ("original", Some(c))
    );
    // Without the length, only the similarity counts: nothing.
    let q = Query { length: None, ..q };
    assert!(db.search(&q).unwrap().is_empty());
    // pairs lists it, with its containment.
    let mut pairs = Vec::new();
    db.clusters()
        .pairs(11, 0.6, |p| {
            pairs.push(p.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].containment, Some(c));
    // Written the other way round (the half first), the article holds
    // the half: it is its copy the same way (a page around an article).
    let t2 = common::TempDb::new();
    let mut db2 = Db::options().create(t2.path(), Recipe::default()).unwrap();
    assert!(write(&mut db2, "half", &half).hits.is_empty());
    let d = write(&mut db2, "original", &original);
    assert_eq!(d.hits.len(), 1);
    assert_eq!(d.hits[0].containment, Some(c));
    assert_eq!(db2.clusters().of("half").unwrap().unwrap().size, 2);
    // The rule: equal lengths need a similarity of 0.74 (above the
    // threshold); a short text inside a much longer one needs 0.35.
    let conf = |s: f64, later: u64, earlier: u64| {
        simdb::db::confirmation(Some(s), 0.6, || Ok(Some((later, earlier)))).unwrap()
    };
    assert_eq!(conf(0.55, 100, 100), None);
    assert!(conf(0.55, 60, 100).unwrap().is_some());
    assert!(
        conf(0.55, 100, 60).unwrap().is_some(),
        "the later contains the earlier"
    );
    assert_eq!(conf(0.44, 30, 100), None);
    assert_eq!(conf(0.7, 100, 100), Some(None));
    assert_eq!(
        simdb::db::confirmation(None, 0.6, || Ok(None)).unwrap(),
        Some(None)
    );
    // A similarity the fine sketches refined has the lower floor (0.45):
    // less noise, so a 45% excerpt is not a guess.
    let refined = |similarity: f64, refined: bool| {
        simdb::db::confirm_estimate(
            Some(simdb::db::Estimate {
                similarity,
                refined,
            }),
            0.6,
            || Ok(Some((45, 100))),
        )
        .unwrap()
    };
    assert!(refined(0.47, true).is_some());
    assert_eq!(refined(0.47, false), None);
    assert_eq!(refined(0.44, true), None);
}

/// Format 14: a passage from the middle of an article, whose 128-bin
/// sketch estimate is under the containment floor (0.5) but whose
/// estimate over both sketches and both fine sketches (512 bins) confirms
/// it as contained (floor 0.45), is found by the write's check, a query
/// and `pairs`, and a rebuild of the clusters keeps it; a query without
/// its fine sketch (what a record from before format 14 gives) does not
/// find it.
#[test]
fn the_fine_sketches_settle_a_pair_near_the_floor() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let vocab = common::vocab();
    let f = simdb::Fingerprinter::new(Recipe::default());
    let (original, passage) = (1..2000)
        .find_map(|seed| {
            let words = common::article(&mut common::rng(seed), &vocab, 240);
            let (original, passage) = (words.concat(), words[60..170].concat());
            let (a, b) = (f.analyze(&original).unwrap(), f.analyze(&passage).unwrap());
            let coarse = a.sketch.unwrap().similarity(&b.sketch.unwrap());
            let e = simdb::db::estimate(
                (a.sketch.as_ref(), a.fine.as_ref()),
                (b.sketch.as_ref(), b.fine.as_ref()),
                0.6,
            )
            .unwrap();
            let c = simdb::fingerprint::containment(
                e.similarity,
                passage.len() as u64,
                original.len() as u64,
            )
            .unwrap();
            (a.fingerprint.distance(b.fingerprint) <= 11
                && coarse < simdb::db::CONTAINMENT_FLOOR
                && e.refined
                && e.similarity >= simdb::db::REFINED_CONTAINMENT_FLOOR + 0.01
                && c >= simdb::db::MIN_CONTAINMENT + 0.01)
                .then_some((original, passage))
        })
        .expect("a seed whose passage is settled by the fine sketches");
    let opts = simdb::ingest::WritePolicy {
        k: 11,
        probe_budget: 0,
        ..Default::default()
    };
    for (id, text) in [("original", &original), ("passage", &passage)] {
        let mut w = db.writer().unwrap();
        let d = ingest::place(&mut w, &text_doc(id, text), f.analyze(text).unwrap(), &opts)
            .unwrap()
            .1;
        w.commit().unwrap();
        assert_eq!(d.hits.len(), usize::from(id == "passage"), "{id}");
    }
    assert_eq!(db.clusters().of("passage").unwrap().unwrap().size, 2);
    let a = f.analyze(&passage).unwrap();
    let q = Query {
        sketch: a.sketch,
        fine: a.fine,
        length: Some(passage.len() as u64),
        exclude: Some("passage".into()),
        ..Query::new(a.fingerprint).exact(11)
    };
    let hits = db.search(&q).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].containment.is_some() && hits[0].similarity < Some(0.6));
    // The 128 bins alone: the floor 0.5 rejects it.
    assert!(db.search(&Query { fine: None, ..q }).unwrap().is_empty());
    let mut pairs = 0;
    db.clusters()
        .pairs(11, 0.6, |_| {
            pairs += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(pairs, 1);
    db.maintenance().repair().unwrap();
    assert_eq!(db.clusters().of("passage").unwrap().unwrap().size, 2);
    assert!(db.admin().verify().unwrap().problems.is_empty());
    drop(db);
    // A record with a fine sketch and no sketch is corruption.
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("docs").unwrap();
        let v = raw.get_cf(cf, b"passage").unwrap().unwrap();
        let mut r = simdb::codec::decode_record(&v).unwrap();
        assert!(r.fine.is_some());
        r.sketch = None;
        raw.put_cf(cf, b"passage", simdb::codec::encode_record(&r))
            .unwrap();
    }
    let db = Db::options().open(t.path()).unwrap();
    let problems = db.admin().verify().unwrap().problems;
    assert!(
        problems
            .iter()
            .any(|p| p.contains("a fine sketch without a sketch")),
        "{problems:#?}"
    );
}

/// Review 2026-11-b, finding 1: a query near a flood of copies that the
/// sketch rejects (here a threshold the copies do not reach) walked every
/// stored copy, since only confirmed hits counted against its limit. It
/// now stops after `limits::QUERY_REJECTED` rejected candidates and says
/// its answer is not complete; single queries and batches alike.
#[test]
fn regression_review_b_1_a_rejected_flood_stops_at_a_bound() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let vocab = common::vocab();
    let mut rng = common::rng(361);
    let words = common::article(&mut rng, &vocab, 300);
    let base = words.concat();
    let n = 4 * limits::QUERY_REJECTED;
    // The walk reads `refs` a chunk at a time (at most 1,024 entries).
    let bound = limits::QUERY_REJECTED as u64 + 1024 + 64;
    let docs: Vec<Doc> = (0..n)
        .map(|i| text_doc(&format!("c{i:05}"), &base))
        .collect();
    ingest(&mut db, &docs, 4096);
    // Edited, not extended: neither holds the other (containment would
    // confirm what holds a copy whole).
    let more = common::edit(&mut rng, &vocab, &words, 3).concat();
    let strict = QueryOptions {
        min_similarity: Some(0.99),
        ..Default::default()
    };
    let r = QueryRequest::new(Subject::Text(more.clone())).with(strict);
    let before = db.admin().reads();
    let a = db.answer(&r).unwrap();
    let read = db.admin().reads().refs - before.refs;
    assert!(a.hits.is_empty(), "{:?}", &a.hits[..1]);
    assert!(!a.complete);
    assert!(
        read <= bound,
        "{read} refs entries read for a flood of {n} rejected copies"
    );
    assert_eq!(serde_json::to_value(&a).unwrap()["complete"], false);
    // A batch stops at the same bound.
    let before = db.admin().reads();
    let many = db.answer_many(&[r.clone(), r]).unwrap();
    let read = db.admin().reads().refs - before.refs;
    assert!(many.iter().all(|a| a.as_ref().is_ok_and(|a| !a.complete)));
    assert!(read <= 2 * bound, "{read}");
    // What the sketch confirms fills the limit at once: complete.
    let loose = QueryOptions {
        min_similarity: Some(0.0),
        ..Default::default()
    };
    let a = db
        .answer(&QueryRequest::new(Subject::Text(more)).with(loose))
        .unwrap();
    assert_eq!((a.hits.len(), a.complete), (limits::DEFAULT_LIMIT, true));
    // The copies themselves: complete, and the nearest first.
    let a = db.answer(&QueryRequest::new(Subject::Text(base))).unwrap();
    assert_eq!((a.hits.len(), a.complete), (limits::DEFAULT_LIMIT, true));
    assert_eq!(a.hits[0].id, "c00000");
}
