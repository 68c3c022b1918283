//! "Keep this one" decisions (docs/review.md, "Decisions"): the kept
//! document represents its cluster at once and after every rebuild (the
//! clusters a rebuild makes are those brute force finds with kept
//! documents ranked first, the latest decision first); an undo gives the
//! rank back; export → import and a replayed log keep them; verify finds a
//! record that disagrees with the decisions; a format 12 store migrates.

use std::collections::HashMap;

use crate::clusters::{
    all_clusters, brute_force_clusters, brute_force_kept, corpus, create_keeping, ingest_files,
    night_files, shape,
};
use crate::common;
use simdb::db::decisions::DecisionKind;
use simdb::db::KeepPolicy;
use simdb::Db;

/// In every other cluster of three or more, its last member in rank order.
fn to_keep(db: &Db) -> Vec<String> {
    all_clusters(db)
        .iter()
        .filter(|c| c.members.len() >= 3)
        .step_by(2)
        .map(|c| c.members.last().unwrap().id.clone())
        .collect()
}

#[test]
fn a_kept_document_represents_its_cluster_now_and_after_a_rebuild() {
    let t = common::TempDb::new();
    let docs = corpus(37);
    let nights = night_files(&t, &docs, 1);
    for keep in [KeepPolicy::First, KeepPolicy::Newest, KeepPolicy::Longest] {
        let path = t.path().with_file_name(format!("k-{keep}"));
        create_keeping(&path, keep);
        ingest_files(&path, &nights);
        let mut db = Db::options().open(&path).unwrap();
        let chosen = to_keep(&db);
        assert!(chosen.len() >= 3, "{keep}: {chosen:?}");
        let mut w = db.writer().unwrap();
        let seqs: Vec<u64> = chosen
            .iter()
            .map(|id| w.keep(id, "tester").unwrap())
            .collect();
        // Kept and representing already: the same decision.
        assert_eq!(w.keep(&chosen[0], "tester").unwrap(), seqs[0]);
        assert!(matches!(
            w.keep("no-such-id", "tester"),
            Err(simdb::Error::NotFound { .. })
        ));
        w.commit().unwrap();
        drop(w);
        db.clusters().settle().unwrap();
        for (id, seq) in chosen.iter().zip(&seqs) {
            let c = db.clusters().of(id).unwrap().unwrap();
            assert_eq!(&c.representative, id, "{keep}: {c:?}");
            assert_eq!(db.get(id).unwrap().unwrap().kept, Some(*seq));
        }
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);
        // A rebuild: the clusters brute force finds with the kept
        // documents ranked first; not those it finds without.
        let seq_of: HashMap<String, u64> = chosen.iter().cloned().zip(seqs.clone()).collect();
        db.maintenance().repair().unwrap();
        let length = |id: &str| db.get(id).unwrap().unwrap().length;
        let kept = |id: &str| seq_of.get(id).copied();
        let rebuilt = shape(&all_clusters(&db));
        assert_eq!(
            rebuilt,
            brute_force_kept(&docs, keep, &length, &|_, _| false, &kept),
            "{keep}"
        );
        let plain = brute_force_clusters(&docs, keep, &length, &|_, _| false);
        assert_ne!(rebuilt, plain, "{keep}");
        for id in &chosen {
            assert_eq!(&db.clusters().of(id).unwrap().unwrap().representative, id);
        }
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);
        // Undone: each ranks by the policy again, and a rebuild gives the
        // clusters without them.
        let mut w = db.writer().unwrap();
        for s in &seqs {
            w.undo_decision(*s, "tester").unwrap();
        }
        let again = w.undo_decision(seqs[0], "tester").unwrap_err();
        assert!(again.to_string().contains("already undone"), "{again}");
        w.commit().unwrap();
        drop(w);
        db.clusters().settle().unwrap();
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);
        db.maintenance().repair().unwrap();
        assert_eq!(shape(&all_clusters(&db)), plain, "{keep}");
        for id in &chosen {
            assert_eq!(db.get(id).unwrap().unwrap().kept, None);
        }
        let log = db.clusters().decisions(0, 1000).unwrap().decisions;
        assert_eq!(log.len(), 2 * chosen.len());
        assert!(log[..chosen.len()]
            .iter()
            .zip(&chosen)
            .all(|(d, id)| d.kind == DecisionKind::Keep && &d.a == id && d.b.is_empty()));
    }
}

/// Copies of one text (under `first`, the earliest represents): each keep
/// makes its document the representative at once, the latest keep wins,
/// keeping a kept document that no longer represents decides again, and
/// an undo gives the representative before it back.
#[test]
fn the_latest_keep_wins_and_an_undo_gives_the_one_before_back() {
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(21);
    let text = common::article(&mut rng, &vocab, 150).concat();
    let lines: String = ["x1", "x2", "x3", "x4"]
        .iter()
        .map(|id| format!("{}\n", serde_json::json!({"id": id, "text": text})))
        .collect();
    let input = t.file("in.jsonl", lines);
    let path = t.path().join("s");
    let run = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let o = common::simdb(args);
        assert_eq!(common::code(&o), 0, "{:?}: {}", o, common::stderr(&o));
        common::stdout(&o)
    };
    run(&[&"init", &path]);
    run(&[&"ingest", &path, &input]);
    let rep = || {
        let db = Db::options().read_only().open(&path).unwrap();
        let c = db.clusters().of("x1").unwrap().unwrap();
        assert_eq!(c.size, 4, "{c:?}");
        let v = db.admin().verify().unwrap();
        assert!(v.is_clean(), "{:#?}", v.problems);
        c.representative
    };
    assert_eq!(rep(), "x1");
    let out = run(&[&"decide", &path, &"keep", &"x3"]);
    assert!(out.starts_with("1 keep \"x3\" by \"local\""), "{out}");
    assert_eq!(rep(), "x3");
    let got = run(&[&"get", &path, &"x3"]);
    assert!(got.contains("kept         by decision 1"), "{got}");
    let got: serde_json::Value =
        serde_json::from_str(&run(&[&"get", &path, &"x3", &"--json"])).unwrap();
    assert_eq!(got["kept"], 1, "{got}");
    run(&[&"decide", &path, &"keep", &"x2"]);
    assert_eq!(rep(), "x2");
    // x3 is kept, but x2's later decision ranks first: deciding x3 again
    // is a new decision.
    let out = run(&[&"decide", &path, &"keep", &"x3", &"--json"]);
    let d: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (d["seq"].as_u64(), d["kind"].as_str()),
        (Some(3), Some("keep"))
    );
    assert_eq!(rep(), "x3");
    // Decision 1 no longer stands.
    let o = common::simdb(&[&"decide", &path, &"undo", &"1"]);
    assert_ne!(common::code(&o), 0);
    assert!(
        common::stderr(&o).contains("already undone or decided again"),
        "{}",
        common::stderr(&o)
    );
    run(&[&"decide", &path, &"undo", &"3"]);
    assert_eq!(rep(), "x2");
    run(&[&"decide", &path, &"undo", &"2"]);
    assert_eq!(rep(), "x1");
    run(&[&"verify", &path, &"--repair"]);
    assert_eq!(rep(), "x1");
    // Replayed into a new store before its documents, with a keep of x4
    // added: x4 represents from its write on. (The command line keeps
    // only a stored document.)
    let mut log = run(&[&"decisions", &path, &"--json"]);
    log.push_str(
        &serde_json::json!({"seq": 9, "kind": "keep", "a": "x4", "b": "", "who": "tester",
                            "at": 1_800_000_000u64, "undoes": 0})
        .to_string(),
    );
    let log = t.file("log.jsonl", log);
    let two = t.path().join("two");
    run(&[&"init", &two]);
    let o = common::simdb(&[&"decide", &two, &"keep", &"x4"]);
    assert_ne!(common::code(&o), 0);
    assert!(common::stderr(&o).contains("x4"), "{}", common::stderr(&o));
    run(&[&"decide", &two, &"replay", &log]);
    run(&[&"ingest", &two, &input]);
    let db = Db::options().read_only().open(&two).unwrap();
    assert_eq!(
        db.clusters().of("x1").unwrap().unwrap().representative,
        "x4"
    );
    assert_eq!(db.clusters().decisions(0, 100).unwrap().decisions.len(), 6);
    assert_eq!(db.get("x4").unwrap().unwrap().kept, Some(6));
}

/// verify names a record kept by a decision the store does not hold, and
/// a kept document whose record says otherwise; `--repair` sets the
/// records from the decisions.
#[test]
fn verify_names_a_kept_record_the_decisions_disagree_with() {
    let t = common::TempDb::new();
    let docs = corpus(43);
    let nights = night_files(&t, &docs, 1);
    let path = t.path().with_file_name("kv");
    create_keeping(&path, KeepPolicy::First);
    ingest_files(&path, &nights);
    let id = {
        let mut db = Db::options().open(&path).unwrap();
        let id = to_keep(&db).remove(0);
        let mut w = db.writer().unwrap();
        w.keep(&id, "tester").unwrap();
        w.commit().unwrap();
        drop(w);
        db.clusters().settle().unwrap();
        id
    };
    {
        // The keep key goes; the record still says kept.
        // `k` ‖ id (docs/format.md).
        let raw = common::raw_open(&path);
        let cf = raw.cf_handle("decisions").unwrap();
        raw.delete_cf(cf, [&b"k"[..], id.as_bytes()].concat())
            .unwrap();
    }
    let db = Db::options().open(&path).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(
        rep.problems
            .iter()
            .any(|p| p.starts_with("docs:") && p.contains("kept by decision 1")),
        "{:#?}",
        rep.problems
    );
    drop(db);
    let o = common::simdb(&[&"verify", &path, &"--repair"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let db = Db::options().open(&path).unwrap();
    assert_eq!(db.get(&id).unwrap().unwrap().kept, None);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
}

/// A format 12 store under `first` ranked every member by key 0: migrate
/// moves its member keys to format 13's ranks (a walk, not a rebuild),
/// and the clusters are the same.
#[test]
fn a_format_12_store_is_re_ranked_in_place() {
    let t = common::TempDb::new();
    let docs = corpus(47);
    let nights = night_files(&t, &docs, 1);
    let path = t.path().with_file_name("m12");
    create_keeping(&path, KeepPolicy::First);
    ingest_files(&path, &nights);
    let before = {
        let db = Db::options().open(&path).unwrap();
        shape(&all_clusters(&db))
    };
    let mut moved = 0u64;
    {
        let raw = common::raw_open(&path);
        let cf = raw.cf_handle("clusters").unwrap();
        type Entry = (Box<[u8]>, Box<[u8]>);
        let keys: Vec<Entry> = raw
            .prefix_iterator_cf(cf, b"m")
            .map(|r| r.unwrap())
            .take_while(|(k, _)| k[0] == b'm')
            .collect();
        for (k, v) in keys {
            let mut old = k.to_vec();
            old[9..17].copy_from_slice(&0u64.to_be_bytes());
            raw.delete_cf(cf, &k).unwrap();
            raw.put_cf(cf, &old, &v).unwrap();
            moved += 1;
        }
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"format_version", 12u32.to_be_bytes())
            .unwrap();
    }
    assert!(moved > 10);
    let r = simdb::db::migrate(&path, None).unwrap();
    assert_eq!((r.from, r.to, r.reranked), (12, 14, moved));
    let db = Db::options().open(&path).unwrap();
    assert_eq!(shape(&all_clusters(&db)), before);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
}

/// `export --parquet` → `import`: the kept documents are kept in the new
/// store (their records and keys), with the same clusters, and a rebuild
/// of either store gives the same clusters.
#[cfg(feature = "parquet")]
#[test]
fn export_and_import_keep_the_kept_documents() {
    let t = common::TempDb::new();
    let docs = corpus(53);
    let nights = night_files(&t, &docs, 1);
    let a = t.path().with_file_name("kx-a");
    create_keeping(&a, KeepPolicy::Newest);
    ingest_files(&a, &nights);
    let mut db = Db::options().open(&a).unwrap();
    let chosen = to_keep(&db);
    let mut w = db.writer().unwrap();
    for id in &chosen {
        w.keep(id, "tester").unwrap();
    }
    w.undo_decision(1, "tester").unwrap();
    w.commit().unwrap();
    drop(w);
    db.clusters().settle().unwrap();
    let out = t.path().with_file_name("kx-out");
    db.admin()
        .export_parquet(&out, &simdb::db::export::ExportOptions::default())
        .unwrap();
    let b = t.path().with_file_name("kx-b");
    simdb::import::run(&b, std::slice::from_ref(&out), &Default::default(), |_| {}).unwrap();
    let mut db_b = Db::options().open(&b).unwrap();
    assert_eq!(shape(&all_clusters(&db_b)), shape(&all_clusters(&db)));
    for (i, id) in chosen.iter().enumerate() {
        let want = (i > 0).then_some(i as u64 + 1);
        assert_eq!(db_b.get(id).unwrap().unwrap().kept, want, "{id}");
    }
    let rep = db_b.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    db.maintenance().repair().unwrap();
    db_b.maintenance().repair().unwrap();
    assert_eq!(shape(&all_clusters(&db_b)), shape(&all_clusters(&db)));
}
