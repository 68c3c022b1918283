//! "Not a copy" decisions (docs/review.md, "Decisions"): the member leaves
//! its representative's cluster at once, and no write, re-check or rebuild
//! puts the pair together again; the clusters a rebuild makes are those
//! brute force finds with the decisions; the log records who and when, and
//! an undo; verify finds a cluster that disobeys one.

use std::collections::{BTreeMap, HashSet};

use crate::clusters::{
    all_clusters, brute_force_clusters, corpus, create_keeping, ingest_files, night_files, shape,
};
use crate::common;
use simdb::db::decisions::DecisionKind;
use simdb::db::{Cluster, KeepPolicy};
use simdb::Db;

/// The pairs to decide: in every other cluster of two or more, its
/// representative and its last member in rank order.
fn pairs_to_decide(clusters: &[Cluster]) -> Vec<(String, String)> {
    clusters
        .iter()
        .step_by(2)
        .map(|c| {
            let last = c.members.last().unwrap();
            (c.representative.clone(), last.id.clone())
        })
        .collect()
}

/// The clusters after the member of each pair leaves its
/// representative's cluster: (sorted member ids, representative), as
/// [`shape`] gives them.
fn without(clusters: &[Cluster], pairs: &[(String, String)]) -> Vec<(Vec<String>, String)> {
    let gone: HashSet<&str> = pairs.iter().map(|(_, m)| m.as_str()).collect();
    let mut out: Vec<(Vec<String>, String)> = clusters
        .iter()
        .filter_map(|c| {
            let mut ids: Vec<String> = c
                .members
                .iter()
                .map(|m| m.id.clone())
                .filter(|m| !gone.contains(m.as_str()))
                .collect();
            ids.sort();
            (ids.len() >= 2).then(|| (ids, c.representative.clone()))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn not_a_copy_is_obeyed_at_once_by_later_writes_and_by_a_rebuild() {
    let t = common::TempDb::new();
    let docs = corpus(31);
    let nights = night_files(&t, &docs, 2);
    for keep in [KeepPolicy::First, KeepPolicy::Newest, KeepPolicy::Longest] {
        let path = t.path().with_file_name(format!("d-{keep}"));
        create_keeping(&path, keep);
        ingest_files(&path, &nights[..1]);
        let mut db = Db::options().open(&path).unwrap();
        let before = all_clusters(&db);
        let first = pairs_to_decide(&before);
        assert!(first.len() >= 3, "{keep}: {}", before.len());
        let mut w = db.writer().unwrap();
        let seqs: Vec<u64> = first
            .iter()
            .map(|(a, b)| w.not_a_copy(a, b, "tester").unwrap())
            .collect();
        // Deciding a pair again (either order) is the same decision.
        let (a, b) = &first[0];
        assert_eq!(w.not_a_copy(b, a, "tester").unwrap(), seqs[0]);
        w.commit().unwrap();
        drop(w);
        assert_eq!(seqs, (1..=first.len() as u64).collect::<Vec<_>>());
        // Each member left; nothing else moved.
        assert_eq!(
            shape(&all_clusters(&db)),
            without(&before, &first),
            "{keep}"
        );
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);
        drop(db);

        // The second night, then more decisions, then a rebuild: the
        // clusters brute force finds with every decision from the start.
        ingest_files(&path, &nights[1..]);
        let mut db = Db::options().open(&path).unwrap();
        let second = pairs_to_decide(&all_clusters(&db));
        let mut w = db.writer().unwrap();
        for (a, b) in &second {
            w.not_a_copy(a, b, "tester").unwrap();
        }
        w.commit().unwrap();
        drop(w);
        let vetoes: HashSet<(String, String)> = first
            .iter()
            .chain(&second)
            .flat_map(|(a, b)| [(a.clone(), b.clone()), (b.clone(), a.clone())])
            .collect();
        let vetoed = |a: &str, b: &str| vetoes.contains(&(a.to_string(), b.to_string()));
        db.maintenance().repair().unwrap();
        let rebuilt = all_clusters(&db);
        let length = |id: &str| db.get(id).unwrap().unwrap().length;
        assert_eq!(
            shape(&rebuilt),
            brute_force_clusters(&docs, keep, &length, &vetoed),
            "{keep}"
        );
        for c in &rebuilt {
            for m in &c.members {
                assert!(!vetoed(&m.id, &c.representative), "{keep}: {c:?}");
            }
        }
        // The decisions changed something the rule without them would do.
        assert_ne!(
            shape(&rebuilt),
            brute_force_clusters(&docs, keep, &length, &|_, _| false),
            "{keep}"
        );
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);
        // The log: every decision, who and when, oldest first.
        let log = db.clusters().decisions(0, 1000).unwrap();
        assert_eq!(log.decisions.len(), first.len() + second.len());
        assert!(log.next.is_none());
        for (d, (a, b)) in log.decisions.iter().zip(first.iter().chain(&second)) {
            assert_eq!(
                (d.kind, &d.a, &d.b, d.who.as_str()),
                (DecisionKind::NotACopy, a, b, "tester")
            );
            assert!(d.at > 1_700_000_000);
        }
        let page = db.clusters().decisions(0, 2).unwrap();
        assert_eq!(page.decisions.len(), 2);
        assert_eq!(page.next, Some(2));
        let rest = db.clusters().decisions(2, 1000).unwrap();
        assert_eq!(rest.decisions[0].seq, 3);
    }
}

#[test]
fn a_new_representative_sends_away_the_members_decided_against_it() {
    // Under `longest`, a longer copy takes over a cluster; a member
    // decided not to be a copy of it leaves, though the representative
    // before confirmed it; written again, it does not join it; undone, a
    // rebuild puts them together again.
    let t = common::TempDb::new();
    let path = t.path().with_file_name("l");
    create_keeping(&path, KeepPolicy::Longest);
    let vocab = common::vocab();
    let mut rng = common::rng(5);
    let base = common::article(&mut rng, &vocab, 200).concat();
    let mut n = 0;
    let mut write = |docs: &[(&str, String)]| {
        n += 1;
        let lines: String = docs
            .iter()
            .map(|(id, text)| format!("{}\n", serde_json::json!({"id": id, "text": text})))
            .collect();
        let f = t.file(&format!("w{n}.jsonl"), lines);
        ingest_files(&path, &[f]);
    };
    write(&[
        ("a", base.clone()),
        ("b", base.clone()),
        ("c", base.clone()),
    ]);
    let longer = format!("{base}。{}", common::article(&mut rng, &vocab, 4).concat());
    let decide = |a: &str, b: &str| {
        let mut db = Db::options().open(&path).unwrap();
        let mut w = db.writer().unwrap();
        let r = w.not_a_copy(a, b, "t");
        w.commit().unwrap();
        r
    };
    assert!(matches!(
        decide("b", "long"),
        Err(simdb::Error::NotFound { .. })
    ));
    assert!(decide("b", "b").is_err());
    write(&[("long", longer)]);
    let cluster = |id: &str| {
        let db = Db::options().read_only().open(&path).unwrap();
        db.clusters().of(id).unwrap().unwrap()
    };
    let c = cluster("a");
    assert_eq!((c.representative.as_str(), c.size), ("long", 4), "{c:?}");
    assert_eq!(decide("long", "b").unwrap(), 1);
    let c = cluster("a");
    let ids: Vec<&str> = c.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(!ids.contains(&"b"), "{ids:?}");
    assert_eq!(cluster("b").size, 1);
    // "b" written again (a new text, the same id) does not join "long".
    write(&[("b", format!("{base}。"))]);
    assert_eq!(cluster("b").size, 1);
    // Undone: the pair may meet again at the next placement (a rebuild).
    let mut db = Db::options().open(&path).unwrap();
    let mut w = db.writer().unwrap();
    let undo = w.undo_decision(1, "t").unwrap();
    assert!(w.undo_decision(1, "t").is_err(), "undone twice");
    assert!(w.undo_decision(2, "t").is_err(), "an undo is not undone");
    w.commit().unwrap();
    drop(w);
    assert_eq!(undo, 2);
    let log = db.clusters().decisions(0, 10).unwrap().decisions;
    assert_eq!((log[1].kind, log[1].undoes), (DecisionKind::Undo, 1));
    db.maintenance().repair().unwrap();
    assert_eq!(
        db.clusters().of("b").unwrap().unwrap().representative,
        "long"
    );
    assert!(db.admin().verify().unwrap().is_clean());
}

#[test]
fn verify_names_a_cluster_that_disobeys_a_decision() {
    let t = common::TempDb::new();
    let docs = corpus(7);
    let nights = night_files(&t, &docs, 1);
    let path = t.path().with_file_name("v");
    create_keeping(&path, KeepPolicy::First);
    ingest_files(&path, &nights);
    let db = Db::options().open(&path).unwrap();
    let c = all_clusters(&db).into_iter().next().unwrap();
    drop(db);
    // A "not a copy" pair written behind the store's back, with its log
    // entry: the cluster still holds both.
    let member = c.members.last().unwrap().id.clone();
    {
        let raw = common::raw_open(&path);
        let cf = raw.cf_handle("decisions").unwrap();
        let key = |a: &str, b: &str| {
            let mut k = vec![b'n'];
            k.extend_from_slice(&(a.len() as u16).to_be_bytes());
            k.extend_from_slice(a.as_bytes());
            k.extend_from_slice(b.as_bytes());
            k
        };
        raw.put_cf(cf, key(&c.representative, &member), 1u64.to_be_bytes())
            .unwrap();
        raw.put_cf(cf, key(&member, &c.representative), 2u64.to_be_bytes())
            .unwrap();
    }
    let db = Db::options().read_only().open(&path).unwrap();
    let rep = db.admin().verify().unwrap();
    let text = rep.problems.join("\n");
    assert!(text.contains("yet cluster"), "{text}");
    assert!(
        text.contains("other order does not name decision"),
        "{text}"
    );
    assert!(text.contains("of the log is not this pair's"), "{text}");
    drop(db);
    // The repair rebuilds the clusters by the decision; the log stays
    // damaged, and verify still says so.
    let mut db = Db::options().for_repair().open(&path).unwrap();
    db.maintenance().repair().unwrap();
    let text = db.admin().verify().unwrap().problems.join("\n");
    assert!(!text.contains("yet cluster"), "{text}");
    let mut shapes: BTreeMap<String, String> = BTreeMap::new();
    for c in all_clusters(&db) {
        for m in c.members {
            shapes.insert(m.id, c.representative.clone());
        }
    }
    assert_ne!(shapes.get(&member), Some(&c.representative));
}

/// The command line: `decide not-a-copy`, `decisions --json`, `decide
/// undo`, and `decide replay` of one store's log into a new store, which
/// then places the same texts as the first store does.
#[test]
fn the_cli_decides_lists_undoes_and_replays() {
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(9);
    let base = common::article(&mut rng, &vocab, 150).concat();
    let lines: String = ["a", "b", "c"]
        .iter()
        .map(|id| format!("{}\n", serde_json::json!({"id": id, "text": base})))
        .collect();
    let input = t.file("in.jsonl", lines);
    let one = t.path().join("one");
    let run = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let o = common::simdb(args);
        assert_eq!(common::code(&o), 0, "{:?}: {}", o, common::stderr(&o));
        common::stdout(&o)
    };
    run(&[&"init", &one]);
    run(&[&"ingest", &one, &input]);
    let out = run(&[&"decide", &one, &"not-a-copy", &"a", &"c", &"--json"]);
    let d: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (d["seq"].as_u64(), d["kind"].as_str(), d["who"].as_str()),
        (Some(1), Some("not_a_copy"), Some("local"))
    );
    let clusters = |db: &std::path::Path| {
        let db = Db::options().read_only().open(db).unwrap();
        shape(&all_clusters(&db))
    };
    let want = vec![(vec!["a".to_string(), "b".to_string()], "a".to_string())];
    assert_eq!(clusters(&one), want);
    let o = common::simdb(&[&"decide", &one, &"not-a-copy", &"a", &"zz"]);
    assert_ne!(common::code(&o), 0);
    assert!(common::stderr(&o).contains("zz"), "{}", common::stderr(&o));
    let log = run(&[&"decisions", &one, &"--json"]);
    assert_eq!(log.lines().count(), 1, "{log}");
    let log_file = t.file("log.jsonl", &log);
    // Replayed into a new store before its documents: they obey it.
    let two = t.path().join("two");
    run(&[&"init", &two]);
    run(&[&"decide", &two, &"replay", &log_file]);
    run(&[&"ingest", &two, &input]);
    assert_eq!(clusters(&two), want);
    let text = run(&[&"decisions", &two]);
    assert!(
        text.contains("not_a_copy \"a\" \"c\" by \"local\""),
        "{text}"
    );
    // Undone, then rebuilt: the pair meets again.
    let out = run(&[&"decide", &two, &"undo", &"1"]);
    assert!(out.starts_with("2 undo 1 by \"local\""), "{out}");
    run(&[&"verify", &two, &"--repair"]);
    assert_eq!(clusters(&two)[0].0.len(), 3);
    // A replayed log's `who` with terminal escapes is printed quoted, as
    // ids are (review-2026-11-c, finding 13).
    assert!(log.contains("\"who\":\"local\""), "{log}");
    let hostile = t.file(
        "hostile.jsonl",
        log.replace("\"who\":\"local\"", "\"who\":\"\\u001b[2Jroot\""),
    );
    let three = t.path().join("three");
    run(&[&"init", &three]);
    run(&[&"decide", &three, &"replay", &hostile]);
    let text = run(&[&"decisions", &three]);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(text.contains("by \"\\u{1b}[2Jroot\""), "{text}");
}

/// `export --parquet` writes the decision log beside the parts (listed in
/// `_SUCCESS`); `import` restores it: the same log, the same pairs, the
/// same clusters, and a rebuild of either store gives the same clusters.
#[cfg(feature = "parquet")]
#[test]
fn export_and_import_keep_the_decisions() {
    let t = common::TempDb::new();
    let docs = corpus(41);
    let nights = night_files(&t, &docs, 1);
    let a = t.path().with_file_name("ex-a");
    create_keeping(&a, KeepPolicy::First);
    ingest_files(&a, &nights);
    let mut db = Db::options().open(&a).unwrap();
    let pairs = pairs_to_decide(&all_clusters(&db));
    assert!(pairs.len() >= 2);
    let mut w = db.writer().unwrap();
    for (x, y) in &pairs {
        w.not_a_copy(x, y, "tester").unwrap();
    }
    w.undo_decision(1, "tester").unwrap();
    w.commit().unwrap();
    drop(w);
    let out = t.path().with_file_name("ex-out");
    db.admin()
        .export_parquet(&out, &simdb::db::export::ExportOptions::default())
        .unwrap();
    let log_a = db.clusters().decisions(0, 1000).unwrap();
    let shape_a = shape(&all_clusters(&db));
    assert!(out.join("_decisions.jsonl").exists());
    let manifest = simdb::db::export::Manifest::read(&out).unwrap().unwrap();
    assert_eq!(
        manifest.decisions.as_ref().unwrap().rows,
        pairs.len() as u64 + 1
    );
    let b = t.path().with_file_name("ex-b");
    simdb::import::run(&b, std::slice::from_ref(&out), &Default::default(), |_| {}).unwrap();
    let mut db_b = Db::options().open(&b).unwrap();
    assert_eq!(db_b.clusters().decisions(0, 1000).unwrap(), log_a);
    assert_eq!(shape(&all_clusters(&db_b)), shape_a);
    let rep = db_b.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    db.maintenance().repair().unwrap();
    db_b.maintenance().repair().unwrap();
    assert_eq!(shape(&all_clusters(&db_b)), shape(&all_clusters(&db)));
    // Pair 1 was undone: it may be together again; the others may not.
    for (x, y) in &pairs[1..] {
        assert!(db_b.clusters().decisions(0, 1000).unwrap().decisions.len() > 1);
        let c = db_b.clusters().of(y).unwrap().unwrap();
        assert!(!(c.representative == *x && c.size > 1), "{x} {y}: {c:?}");
    }
    // An export that lost its log is not the export _SUCCESS lists.
    std::fs::remove_file(out.join("_decisions.jsonl")).unwrap();
    let err = simdb::import::run(
        &t.path().with_file_name("ex-c"),
        &[out],
        &Default::default(),
        |_| {},
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("_decisions.jsonl is missing"),
        "{err}"
    );
}

/// `dedup --db`: an input document is not dropped as a copy of a stored
/// one it was decided not to be a copy of, nor of one earlier in the
/// input.
#[test]
fn dedup_against_a_store_obeys_its_decisions() {
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(12);
    let text = common::article(&mut rng, &vocab, 150).concat();
    let line = |id: &str| format!("{}\n", serde_json::json!({"id": id, "text": text}));
    let db = t.path().join("s");
    let run = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let o = common::simdb(args);
        assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
        common::stdout(&o)
    };
    run(&[&"init", &db]);
    run(&[&"ingest", &db, &t.file("a.jsonl", line("a"))]);
    let log = serde_json::json!({"seq": 1, "kind": "not_a_copy", "a": "a", "b": "x", "who": "t", "at": 1, "undoes": 0});
    run(&[
        &"decide",
        &db,
        &"replay",
        &t.file("log.jsonl", format!("{log}\n")),
    ]);
    let input = t.file("in.jsonl", format!("{}{}", line("x"), line("y")));
    let out = run(&[&"dedup", &input, &"--db", &db]);
    let kept: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // x is no copy of a; y is, and it is dropped.
    assert_eq!(kept, ["x"]);

    // Within the input: p and q (decided not copies in the store, which
    // holds neither) are both kept; r, a copy of them, is dropped; under
    // the first copy and under a policy that reads the input twice.
    let other = t.path().join("s2");
    run(&[&"init", &other]);
    let unrelated = common::article(&mut rng, &vocab, 150).concat();
    let b = serde_json::json!({"id": "b", "text": unrelated});
    run(&[&"ingest", &other, &t.file("b.jsonl", format!("{b}\n"))]);
    let log = serde_json::json!({"seq": 1, "kind": "not_a_copy", "a": "q", "b": "p", "who": "t", "at": 1, "undoes": 0});
    run(&[
        &"decide",
        &other,
        &"replay",
        &t.file("log2.jsonl", format!("{log}\n")),
    ]);
    let input = t.file(
        "in2.jsonl",
        format!("{}{}{}", line("p"), line("q"), line("r")),
    );
    let ids = |out: String| -> Vec<String> {
        out.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    for keep in [None, Some("longest"), Some("newest")] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"dedup", &input, &"--db", &other];
        if let Some(k) = &keep {
            args.extend([&"--keep" as &dyn AsRef<std::ffi::OsStr>, k]);
        }
        let kept = ids(run(&args));
        let want: &[&str] = match keep {
            Some("newest") => &["q", "r"],
            _ => &["p", "q"],
        };
        assert_eq!(kept, want, "{keep:?}");
        // Without the decision, one of the three.
        let plain = ids(run(&[&"dedup", &input]));
        assert_eq!(plain.len(), 1);
    }
}

/// Within one batch, an undo holds for the placements after it, and a
/// decision for those after it too.
#[test]
fn a_decision_or_an_undo_holds_for_the_rest_of_its_batch() {
    let t = common::TempDb::new();
    let mut db = Db::options()
        .create(t.path(), simdb::Recipe::default())
        .unwrap();
    let log = |a: &str, b: &str| simdb::db::decisions::Decision {
        seq: 1,
        kind: DecisionKind::NotACopy,
        a: a.into(),
        b: b.into(),
        who: "t".into(),
        at: 1,
        undoes: 0,
    };
    let mut w = db.writer().unwrap();
    crate::clusters::put(&mut w, "x", 0, &[], None);
    w.replay_decisions(&[log("x", "y")]).unwrap();
    w.commit().unwrap();
    // Undone, then y written as a copy of x in the same batch: it joins.
    w.undo_decision(1, "t").unwrap();
    crate::clusters::put(&mut w, "y", 1, &["x"], None);
    w.commit().unwrap();
    // Decided, then z written as a copy of x in the same batch: alone.
    let mut w = db.writer().unwrap();
    w.not_a_copy("x", "z", "t").unwrap_err(); // z not stored
    w.replay_decisions(&[log("x", "z")]).unwrap();
    crate::clusters::put(&mut w, "z", 2, &["x"], None);
    w.commit().unwrap();
    drop(w);
    let c = db.clusters().of("x").unwrap().unwrap();
    let ids: Vec<&str> = c.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["x", "y"]);
    assert_eq!(db.clusters().of("z").unwrap().unwrap().size, 1);
    assert!(db.admin().verify().unwrap().is_clean());
}
