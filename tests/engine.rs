//! The engines' placement on their workers (issue 59): the clusters of
//! whole components placed in scratch stores of their own, apart, equal
//! the clusters the run's store builds from the same near-copy lists, and
//! `put_clusters` writes them into the store as a rebuild would.

use crate::clusters::{all_clusters, corpus, create_keeping};
use crate::common;

use std::collections::{BTreeMap, HashMap};

use rand::seq::SliceRandom;
use simdb::db::engine::{place_components, PlaceOptions, PlacedMember};
use simdb::db::KeepPolicy;
use simdb::ingest::{self, Input};
use simdb::{Db, Error, Record};

/// Union-find over ords: each document's component (its smallest ord).
fn components(docs: &[(String, Record)], lists: &[(u64, Vec<String>)]) -> HashMap<u64, u64> {
    let ord_of: HashMap<&str, u64> = docs.iter().map(|(id, r)| (id.as_str(), r.ord)).collect();
    let mut parent: HashMap<u64, u64> = docs.iter().map(|(_, r)| (r.ord, r.ord)).collect();
    fn root(p: &mut HashMap<u64, u64>, mut x: u64) -> u64 {
        while p[&x] != x {
            let up = p[&p[&x]];
            p.insert(x, up);
            x = up;
        }
        x
    }
    for (ord, near) in lists {
        for n in near {
            let (a, b) = (
                root(&mut parent, *ord),
                root(&mut parent, ord_of[n.as_str()]),
            );
            parent.insert(a.max(b), a.min(b));
        }
    }
    let ords: Vec<u64> = parent.keys().copied().collect();
    ords.into_iter()
        .map(|o| (o, root(&mut parent, o)))
        .collect()
}

/// The clusters as (id, members in rank order), sorted: what both sides
/// must agree on.
fn shapes_of_rows(rows: &[PlacedMember]) -> Vec<(u64, Vec<String>)> {
    let mut by: BTreeMap<u64, Vec<(u32, String)>> = BTreeMap::new();
    for r in rows {
        by.entry(r.cluster)
            .or_default()
            .push((r.rank, r.id.clone()));
    }
    by.into_iter()
        .map(|(c, mut m)| {
            m.sort();
            (c, m.into_iter().map(|x| x.1).collect())
        })
        .collect()
}

fn shapes_of_db(db: &Db) -> Vec<(u64, Vec<String>)> {
    all_clusters(db)
        .into_iter()
        .map(|c| (c.id, c.members.into_iter().map(|m| m.id).collect()))
        .collect()
}

#[test]
fn whole_components_placed_apart_equal_the_stores_rebuild() {
    let t = common::TempDb::new();
    let docs = corpus(59);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let one = t.file("all.jsonl", &all);
    let mut rng = common::rng(59);
    for keep in KeepPolicy::ALL {
        let path = t.path().with_file_name(format!("run-{keep}"));
        create_keeping(&path, keep);
        {
            let mut db = Db::options().open(&path).unwrap();
            ingest::run(&mut db, &[Input::guess(&one)], &Default::default(), |_| {}).unwrap();
            // Decisions: one "not a copy" inside a cluster and one keep.
            let c = all_clusters(&db)
                .into_iter()
                .find(|c| c.members.len() >= 3)
                .unwrap();
            let mut w = db.writer().unwrap();
            w.not_a_copy(&c.members[0].id, &c.members[1].id, "test")
                .unwrap();
            w.keep(&c.members[2].id, "test").unwrap();
            w.commit().unwrap();
        }
        let db = Db::options().read_only().open(&path).unwrap();
        let decisions = db.clusters().decisions(0, 100).unwrap().decisions;
        assert_eq!(decisions.len(), 2);
        let mut lists: Vec<(u64, Vec<String>)> = Vec::new();
        db.admin()
            .earlier_copies(0..u64::MAX, |ord, _, hits| {
                lists.push((ord, hits.into_iter().map(|h| h.id).collect()));
                Ok(())
            })
            .unwrap();
        let mut records: Vec<(String, Record)> = Vec::new();
        db.admin()
            .for_each(|id, r| {
                records.push((id.to_string(), r));
                Ok(())
            })
            .unwrap();
        let recipe = db.recipe().clone();
        drop(db);
        // What the store builds from the lists, its decisions obeyed.
        let built = {
            let mut db = Db::options().open(&path).unwrap();
            db.maintenance()
                .rebuild_clusters_from(keep, lists.clone().into_iter().map(Ok))
                .unwrap();
            shapes_of_db(&db)
        };
        assert!(built.iter().any(|c| c.1.len() >= 3), "{keep}");
        // Each component to one of three workers, at random; the records
        // as the engines carry them (the codec's bytes), shuffled.
        let comp = components(&records, &lists);
        let worker = |c: u64| (c.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) % 3;
        let opts = PlaceOptions {
            recipe,
            keep,
            decisions,
            written_at: None,
            anchor: None,
        };
        let mut rows = Vec::new();
        for w in 0..3 {
            let mut mine: Vec<(String, Record)> = records
                .iter()
                .filter(|(_, r)| worker(comp[&r.ord]) == w)
                .map(|(id, r)| {
                    let bytes = simdb::codec::encode_record(r);
                    (id.clone(), simdb::codec::decode_record(&bytes).unwrap())
                })
                .collect();
            // A document named by several lists comes several times.
            let again = mine.first().cloned();
            mine.extend(again);
            mine.shuffle(&mut rng);
            let ords: std::collections::HashSet<u64> = mine.iter().map(|d| d.1.ord).collect();
            let mut their: Vec<_> = lists
                .iter()
                .filter(|l| ords.contains(&l.0))
                .cloned()
                .collect();
            their.shuffle(&mut rng);
            let scratch = t.path().with_file_name(format!("scratch-{keep}-{w}"));
            rows.extend(place_components(&scratch, &opts, mine, their).unwrap());
            assert!(!scratch.exists(), "the scratch store is removed");
        }
        assert_eq!(shapes_of_rows(&rows), built, "{keep}");

        // Into the run's store, after its clusters are cleared by a
        // rebuild from no lists: the same clusters, verify clean.
        let mut db = Db::options().open(&path).unwrap();
        db.maintenance()
            .rebuild_clusters_from(keep, std::iter::empty())
            .unwrap();
        assert!(all_clusters(&db).is_empty());
        let n = db
            .maintenance()
            .put_clusters(
                keep,
                rows.iter().map(|r| Ok((r.cluster, r.rank, r.id.clone()))),
            )
            .unwrap();
        assert_eq!(n, built.len() as u64);
        assert_eq!(shapes_of_db(&db), built, "{keep}");
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);

        // Rows that do not fit the store are refused; the store keeps its
        // rebuild marker (it opens only to finish a rebuild), and the same
        // call with the right rows, through the same handle, finishes it.
        let mut refused = |rows: Vec<(u64, u32, String)>, what: &str| {
            let e = db
                .maintenance()
                .put_clusters(keep, rows.into_iter().map(Ok))
                .unwrap_err();
            assert!(matches!(e, Error::Input(_)), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        };
        let good: Vec<(u64, u32, String)> = rows
            .iter()
            .map(|r| (r.cluster, r.rank, r.id.clone()))
            .collect();
        let big = good.iter().position(|r| r.1 == 2).unwrap();
        let mut swapped = good.clone();
        swapped.swap(big - 1, big);
        refused(swapped, "ranks");
        let mut missing = good.clone();
        missing[0].2 = "nobody".into();
        refused(missing, "not in the store");
        let mut twice = good.clone();
        let first = twice[0].clone();
        twice.push((u64::MAX, 0, first.2.clone()));
        twice.push((u64::MAX, 1, "x".into()));
        refused(twice, "two clusters");
        let mut apart = good.clone();
        // The last member of a cluster of three or more, moved to the end.
        let last = good.iter().rposition(|r| r.0 == good[big].0).unwrap();
        let moved = apart.remove(last);
        apart.push(moved);
        refused(apart, "not together");
        let e = Db::options().open(&path).map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::InUse { .. }), "{e}");
        let n = db
            .maintenance()
            .put_clusters(keep, good.into_iter().map(Ok))
            .unwrap();
        assert_eq!(n, built.len() as u64);
        drop(db);
        let db = Db::options().open(&path).unwrap();
        assert_eq!(shapes_of_db(&db), built, "{keep}");
    }
}

/// A bare record of ord `ord` and fingerprint `fp`.
fn record(ord: u64, fp: u64) -> Record {
    Record {
        fingerprint: simdb::Fingerprint(fp),
        content_hash: fp,
        length: 0,
        ingested_at: 1,
        source: String::new(),
        terms: 0,
        sketch: None,
        top_terms: Vec::new(),
        weak_bits: Vec::new(),
        ord,
        priority: None,
        dated: None,
        parts: Vec::new(),
        kept: None,
        fine: None,
    }
}

#[test]
fn a_placement_takes_whole_components_and_a_new_scratch_directory() {
    let t = common::TempDb::new();
    let rec = record;
    let opts = PlaceOptions::default();
    let scratch = t.path().with_file_name("scratch");
    // A list naming a document not given: not a whole component.
    let e = place_components(
        &scratch,
        &opts,
        vec![("a".into(), rec(1, 7)), ("b".into(), rec(2, 7))],
        vec![(2, vec!["a".into()]), (3, vec!["a".into()])],
    )
    .unwrap_err();
    assert!(e.to_string().contains("ord 3"), "{e}");
    let e = place_components(
        &scratch,
        &opts,
        vec![("b".into(), rec(2, 7))],
        vec![(2, vec!["a".into()])],
    )
    .unwrap_err();
    assert!(e.to_string().contains("whole components"), "{e}");
    // Two documents of one ord.
    let e = place_components(
        &scratch,
        &opts,
        vec![("a".into(), rec(1, 7)), ("b".into(), rec(1, 7))],
        vec![],
    )
    .unwrap_err();
    assert!(e.to_string().contains("both have ord 1"), "{e}");
    // An existing directory is not taken.
    std::fs::create_dir_all(&scratch).unwrap();
    let e = place_components(&scratch, &opts, vec![("a".into(), rec(1, 7))], vec![]).unwrap_err();
    assert!(e.to_string().contains("exists"), "{e}");
    assert!(
        scratch.exists(),
        "a directory it did not make is left alone"
    );
}

/// A component of 100,000 copies of one text (each listing the one before
/// and the first, as a check finds them) is one cluster under every
/// policy, placed in a scratch store; the rows go back into a store.
#[test]
fn a_component_of_100000_copies_is_one_cluster() {
    let t = common::TempDb::new();
    let n = 100_000u64;
    let sketch = simdb::Sketch([7u8; 32]);
    let rec = |ord: u64| Record {
        sketch: Some(sketch),
        length: 1000,
        ..record(ord, 0xDEAD_BEEF)
    };
    let docs: Vec<(String, Record)> = (1..=n).map(|o| (format!("c{o:06}"), rec(o))).collect();
    let lists: Vec<(u64, Vec<String>)> = (2..=n)
        .map(|o| {
            let mut near = vec![format!("c{:06}", o - 1)];
            if o > 2 {
                near.push("c000001".into());
            }
            (o, near)
        })
        .collect();
    for keep in [KeepPolicy::First, KeepPolicy::Newest] {
        let opts = PlaceOptions {
            keep,
            ..Default::default()
        };
        let scratch = t.path().with_file_name(format!("big-{keep}"));
        let rows = place_components(&scratch, &opts, docs.clone(), lists.clone()).unwrap();
        assert_eq!(rows.len() as u64, n, "{keep}");
        assert!(rows.iter().all(|r| r.size == n && r.cluster == 1));
        let rep = match keep {
            KeepPolicy::First => "c000001",
            _ => "c100000",
        };
        assert_eq!(rows[0].id, rep, "{keep}");
        assert!(rows.iter().all(|r| r.representative == rep));
    }
}

/// The exact-k Spark job's placement (`simdb.place_groups`): the
/// documents of a store ingested with an exact check (`-k 3`), grouped
/// as the job groups them (one fingerprint, sketch, fine sketch and
/// length), and the pairs of groups within 3 bits found by brute force,
/// decided by [`pair_verdict`] and placed by [`place_groups`], give the
/// store's clusters under every keep policy; the same verdicts a store's
/// placement applies to a member and its representative.
#[test]
fn groups_and_pairs_within_k_place_as_an_exact_ingest() {
    use simdb::db::engine::{pair_verdict, place_groups};
    let t = common::TempDb::new();
    let docs = corpus(61);
    // Each text again under a new id (copies of copies: groups of two).
    let mut lines: Vec<String> = docs.iter().map(|d| d.line.clone()).collect();
    for d in docs.iter().step_by(5) {
        let mut v: serde_json::Value = serde_json::from_str(&d.line).unwrap();
        v["id"] = serde_json::json!(format!("again-{}", v["id"].as_str().unwrap()));
        lines.push(v.to_string());
    }
    let one = t.file("all.jsonl", lines.join("\n") + "\n");
    for keep in KeepPolicy::ALL {
        let path = t.path().with_file_name(format!("exact-{keep}"));
        create_keeping(&path, keep);
        let mut db = Db::options().open(&path).unwrap();
        let mut opts = ingest::Options::default();
        opts.write.k = 3;
        opts.write.probe_budget = 0;
        ingest::run(&mut db, &[Input::guess(&one)], &opts, |_| {}).unwrap();
        let want = shapes_of_db(&db);
        assert!(want.iter().any(|c| c.1.len() >= 3), "{keep}");
        let min_similarity = opts.write.min_similarity;
        let mut records: Vec<(String, Record)> = Vec::new();
        db.admin()
            .for_each(|id, r| {
                records.push((id.to_string(), r));
                Ok(())
            })
            .unwrap();
        let recipe = db.recipe().clone();
        drop(db);
        // Groups, named by their smallest ord.
        let mut group: HashMap<(u64, Option<Vec<u8>>, u64), u64> = HashMap::new();
        records.sort_by_key(|r| r.1.ord);
        for (_, r) in &records {
            let key = (r.fingerprint.0, r.sketch.map(|s| s.0.to_vec()), r.length);
            group.entry(key).or_insert(r.ord);
        }
        let g_of = |r: &Record| group[&(r.fingerprint.0, r.sketch.map(|s| s.0.to_vec()), r.length)];
        let firsts: Vec<&Record> = records
            .iter()
            .map(|d| &d.1)
            .filter(|r| g_of(r) == r.ord)
            .collect();
        let mut pairs = Vec::new();
        let (mut confirmed, mut rejected) = (0, 0);
        for (i, a) in firsts.iter().enumerate() {
            for b in &firsts[i + 1..] {
                let v = pair_verdict(a, b, min_similarity);
                assert_eq!(v, pair_verdict(b, a, min_similarity), "symmetric");
                if a.fingerprint.distance(b.fingerprint) <= 3 {
                    pairs.push((a.ord, b.ord));
                    confirmed += usize::from(v.confirmed);
                } else if !v.confirmed && rejected < 200 {
                    // Pairs the rule rejects link nothing, whatever their
                    // distance.
                    pairs.push((b.ord, a.ord));
                    rejected += 1;
                }
            }
        }
        assert!(confirmed > 0 && rejected > 0, "{confirmed}, {rejected}");
        let given: Vec<(String, Record, u64)> = records
            .iter()
            .map(|(id, r)| (id.clone(), r.clone(), g_of(r)))
            .collect();
        let place = PlaceOptions {
            recipe,
            keep,
            ..Default::default()
        };
        let anchor = simdb::db::Anchor {
            k: 3,
            beyond_k: false,
            min_similarity,
        };
        let scratch = t.path().with_file_name(format!("groups-{keep}"));
        let rows = place_groups(&scratch, &place, anchor, given, &pairs).unwrap();
        assert!(!scratch.exists());
        assert_eq!(shapes_of_rows(&rows), want, "{keep}");
    }
}
