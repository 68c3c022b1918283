//! Verification sketches, short documents, `query --explain` and
//! `calibrate`, on generated text.

use crate::common;

use common::{code, simdb, stderr, stdout, TempDb};
use serde_json::{json, Value};
use simdb::{Content, Db, Query, Recipe};

fn articles(seed: u64, n: usize, words: usize) -> Vec<Vec<String>> {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    (0..n)
        .map(|_| common::article(&mut rng, &vocab, words))
        .collect()
}

#[test]
fn sketch_confirms_or_rejects_candidates() {
    let t = TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let a = articles(1, 2, 300);
    let (t1, t2) = (a[0].concat(), a[1].concat());
    db.put("one", Content::Text(t1.clone())).unwrap();
    let fp = simdb::Fingerprint(0x0123_4567_89ab_cdef);
    db.put("bare", Content::Fingerprint(fp)).unwrap();

    let a1 = db.fingerprinter().analyze(&t1).unwrap();
    let a2 = db.fingerprinter().analyze(&t2).unwrap();
    // The same text: confirmed, similarity 1.
    let hits = db
        .search(&Query {
            sketch: a1.sketch,
            ..Query::new(a1.fingerprint)
        })
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].similarity, Some(1.0));
    // The fingerprint of one text with the sketch of another: the
    // candidate is within k but the sketches disagree, so it is rejected;
    // with threshold 0 it is reported with its low similarity.
    let mixed = Query {
        sketch: a2.sketch,
        ..Query::new(a1.fingerprint)
    };
    assert!(db.search(&mixed).unwrap().is_empty());
    let all = db
        .search(&Query {
            min_similarity: 0.0,
            ..mixed.clone()
        })
        .unwrap();
    assert_eq!(all.len(), 1);
    assert!(all[0].similarity.unwrap() < 0.2, "{:?}", all[0]);
    // Without a sketch nothing is checked.
    assert_eq!(db.query(a1.fingerprint, 3, None).unwrap().len(), 1);
    // A document stored without text has no sketch: kept, unconfirmed.
    let bare = db
        .search(&Query {
            sketch: a2.sketch,
            ..Query::new(fp)
        })
        .unwrap();
    assert_eq!(bare.len(), 1);
    assert_eq!(bare[0].similarity, None);

    // An edited copy (3 of 300 words) is confirmed; its record keeps terms.
    let mut rng = common::rng(9);
    let e = common::edit(&mut rng, &common::vocab(), &a[0], 3).concat();
    let hits = db.search(&db.text_query(&e).unwrap().exact(11)).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].similarity.unwrap() > 0.6, "{hits:?}");
    let rec = db.get("one").unwrap().unwrap();
    assert_eq!(rec.top_terms.len(), simdb::fingerprint::TOP_TERMS);
    assert!(rec.terms > 250 && rec.sketch.is_some());
    // The writer's pending documents are verified from the batch.
    let w = db.writer().unwrap();
    drop(w);
    let mut w = db.writer().unwrap();
    w.put("two", a2.clone(), &Content::Text(t2.clone()), "t")
        .unwrap();
    let q = Query {
        sketch: a1.sketch,
        ..Query::new(a2.fingerprint)
    };
    assert!(w.search(&q).unwrap().is_empty());
    let q0 = Query {
        min_similarity: 0.0,
        ..q
    };
    assert_eq!(w.search(&q0).unwrap()[0].id, "two");
}

#[test]
fn short_documents_are_flagged_and_counted() {
    let t = TempDb::new();
    let db_path = t.path();
    assert_eq!(code(&simdb(&[&"init", &db_path])), 0);
    let long = articles(2, 3, 200);
    let mut lines = String::new();
    for (i, a) in long.iter().enumerate() {
        lines += &format!(
            "{}\n",
            json!({"id": format!("long-{i}"), "text": a.concat()})
        );
    }
    for i in 0..25 {
        lines += &format!(
            "{}\n",
            json!({"id": format!("short-{i}"), "text": format!("北京 上海 会议 {i}")})
        );
    }
    let input = t.file("in.jsonl", &lines);
    let o = simdb(&[&"ingest", &db_path, &input, &"--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["short"], 25);
    assert_eq!(v["inserted"], 28);
    // The first 20 are named on stderr, then one line for the rest.
    let err = stderr(&o);
    assert_eq!(err.matches("is short (").count(), 20, "{err}");
    assert!(err.contains("short-0") && err.contains("more short documents"));
    let o = simdb(&[&"stats", &db_path, &"--json"]);
    let s: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(s["short_documents"], 25);
    // Deleting and replacing keep the count right; repair recomputes it.
    assert_eq!(
        code(&simdb(&[&"delete", &db_path, &"short-0", &"short-1"])),
        0
    );
    let replace = t.file(
        "r.jsonl",
        format!(
            "{}\n",
            json!({"id": "short-2", "text": long[0].concat() + "。新的"})
        ),
    );
    assert_eq!(code(&simdb(&[&"ingest", &db_path, &replace])), 0);
    let stats = |p: &std::path::Path| -> u64 {
        let o = simdb(&[&"stats", &p, &"--json"]);
        serde_json::from_str::<Value>(stdout(&o).trim()).unwrap()["short_documents"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(stats(&db_path), 22);
    assert_eq!(code(&simdb(&[&"verify", &db_path])), 0);
    // A wrong count is a verify problem; repair recomputes it.
    {
        let raw = common::raw_open(&db_path);
        let cf = raw.cf_handle("meta").unwrap();
        raw.put_cf(cf, b"short_count", 99u64.to_be_bytes()).unwrap();
    }
    let o = simdb(&[&"verify", &db_path]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        (stdout(&o) + &stderr(&o)).contains("short-document count 99 but 22"),
        "{}",
        stdout(&o)
    );
    let o = simdb(&[&"verify", &db_path, &"--repair"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stats(&db_path), 22);
}

#[test]
fn explain_and_calibrate_on_the_command_line() {
    let t = TempDb::new();
    let db_path = t.path();
    assert_eq!(code(&simdb(&[&"init", &db_path])), 0);
    let docs = articles(3, 300, 250);
    let mut rng = common::rng(4);
    let vocab = common::vocab();
    let mut lines = String::new();
    for (i, a) in docs.iter().enumerate() {
        lines += &format!("{}\n", json!({"id": format!("d{i}"), "text": a.concat()}));
        if i % 3 == 0 {
            let e = common::edit(&mut rng, &vocab, a, 2).concat();
            lines += &format!("{}\n", json!({"id": format!("d{i}-copy"), "text": e}));
        }
    }
    let input = t.file("in.jsonl", &lines);
    assert_eq!(code(&simdb(&[&"ingest", &db_path, &input])), 0);

    // --explain on a text: distance, similarity, shared and unshared terms.
    let q = common::edit(&mut rng, &vocab, &docs[0], 1).concat();
    let o = simdb(&[&"query", &db_path, &"--text", &q, &"--explain"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("d0  distance") && out.contains("similarity"),
        "{out}"
    );
    assert!(
        out.contains("shared:") && out.contains("only in the document:"),
        "{out}"
    );
    let o = simdb(&[&"query", &db_path, &"--text", &q, &"--explain", &"--json"]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let hit = &v["hits"][0];
    assert!(hit["distance"].as_u64().unwrap() <= 3);
    assert!(!hit["shared"].as_array().unwrap().is_empty(), "{v}");
    // The shared terms are among the document's stored top terms.
    let rec: Value = serde_json::from_str(
        stdout(&simdb(&[
            &"get",
            &db_path,
            &hit["id"].as_str().unwrap(),
            &"--json",
        ]))
        .trim(),
    )
    .unwrap();
    let top: Vec<&str> = rec["top_terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for s in hit["shared"].as_array().unwrap() {
        assert!(top.contains(&s[0].as_str().unwrap()), "{s} not in {top:?}");
    }
    // --explain by id uses the stored terms.
    let o = simdb(&[&"query", &db_path, &"--id", &"d0", &"--explain"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("d0-copy"), "{}", stdout(&o));

    // calibrate: the planted copies are the confirmed nearest neighbours,
    // and the plot is written.
    let plot = t.dir.path().join("cal.svg");
    let o = simdb(&[
        &"calibrate",
        &db_path,
        &"--sample",
        &"400",
        &"--plot",
        &plot,
        &"--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let c: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let confirmed: u64 = c["nearest_confirmed"]
        .as_array()
        .unwrap()
        .iter()
        .take(4)
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert!(confirmed >= 40, "{c}");
    let random: u64 = c["random_pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert!(random > 100, "{c}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("confirmed"));
    let o = simdb(&[
        &"calibrate",
        &db_path,
        &"--sample",
        &"100",
        &"--plot",
        &plot,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("nearest other document"),
        "{}",
        stdout(&o)
    );
    // -k bounds the search: nothing is counted beyond it.
    let o = simdb(&[
        &"calibrate",
        &db_path,
        &"--sample",
        &"400",
        &"--plot",
        &plot,
        &"-k",
        &"2",
        &"--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let c2: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let nearest = c2["nearest"].as_array().unwrap();
    assert!(nearest[3..12].iter().all(|x| x == 0), "{c2}");
    assert_eq!(c2["max_k"], 2);
    let o = simdb(&[&"calibrate", &db_path, &"-k", &"12", &"--plot", &plot]);
    assert_eq!(code(&o), 2);
}

#[test]
fn version_1_records_still_read() {
    let t = TempDb::new();
    let fp = simdb::Fingerprint(0xfeed_0000_0000_0001);
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        db.put("x", Content::Fingerprint(fp)).unwrap();
    }
    // Rewrite the record as version 1 bytes.
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("docs").unwrap();
        let v2 = raw.get_cf(cf, b"x").unwrap().unwrap();
        let rec = simdb::codec::decode_record(&v2).unwrap();
        let payload: Vec<u8> = [
            &rec.fingerprint.value().to_be_bytes()[..],
            &7u32.to_be_bytes(), // a format 2-4 sequence number: ignored
            &rec.content_hash.to_be_bytes(),
            &rec.length.to_be_bytes(),
            &rec.ingested_at.to_be_bytes(),
            &(rec.source.len() as u64).to_be_bytes(),
            rec.source.as_bytes(),
        ]
        .concat();
        let mut v1 = vec![1u8];
        v1.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        v1.extend_from_slice(&payload);
        raw.put_cf(cf, b"x", v1).unwrap();
    }
    let db = Db::options().open(t.path()).unwrap();
    let r = db.get("x").unwrap().unwrap();
    assert_eq!((r.fingerprint, r.terms, r.sketch), (fp, 0, None));
    assert_eq!(db.query(fp, 0, None).unwrap()[0].id, "x");
    assert!(db.admin().verify().unwrap().is_clean());
}

#[test]
fn learned_idf_is_kept_in_the_store_and_checked() {
    let t = TempDb::new();
    let docs: Vec<String> = articles(5, 40, 120).iter().map(|a| a.concat()).collect();
    // A footer shared by every document: a learned IDF weighs it down.
    let footer = "本文来源于新华社客户端责任编辑张三";
    let texts: Vec<String> = docs.iter().map(|d| format!("{d}{footer}")).collect();
    let base = Recipe::default();
    let f = simdb::Fingerprinter::new(base.clone());
    let table = simdb::fingerprint::LearnedIdf::learn(&f, texts.iter().map(String::as_str));
    assert_eq!(table.docs(), 40);
    let footer_term = "新华社";
    let lf = simdb::Fingerprinter::with_learned_idf(
        base.clone().with_learned_idf(&table),
        table.clone(),
    )
    .unwrap();
    assert!(lf.idf(footer_term) < 0.01, "{}", lf.idf(footer_term));
    assert!(f.idf(footer_term) > 5.0);
    // Round trip of the serialised table and a stable identity.
    let again = simdb::fingerprint::LearnedIdf::parse(table.as_str()).unwrap();
    assert_eq!(again.identity(), table.identity());
    assert!(simdb::fingerprint::LearnedIdf::parse("nonsense").is_err());

    let fp_learned = lf.fingerprint(&texts[0]).unwrap();
    {
        let mut db = Db::options()
            .learned_idf(table.clone())
            .create(t.path(), base.clone())
            .unwrap();
        assert!(db.recipe().uses_learned_idf());
        db.put("a", Content::Text(texts[0].clone())).unwrap();
        assert_eq!(db.get("a").unwrap().unwrap().fingerprint, fp_learned);
    }
    let db = Db::options().open(t.path()).unwrap();
    assert_eq!(
        db.fingerprinter().fingerprint(&texts[0]).unwrap(),
        fp_learned
    );
    assert_eq!(
        db.search(&db.text_query(&texts[0]).unwrap().exact(0))
            .unwrap()[0]
            .id,
        "a"
    );
    drop(db);
    // A recipe naming a learned table cannot be created without it, and a
    // store whose table is missing is refused as corrupt.
    let t2 = TempDb::new();
    assert!(Db::options()
        .create(t2.path(), base.clone().with_learned_idf(&table))
        .is_err());
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("meta").unwrap();
        raw.delete_cf(cf, b"idf_table").unwrap();
    }
    let err = Db::options().open(t.path()).err().expect("refused");
    assert!(matches!(err, simdb::Error::Corrupt { .. }), "{err}");
}

#[test]
fn recipe_options_change_fingerprints_and_survive_reopen() {
    let text = "The quick brown fox jumps over the lazy dog, and the dog sleeps on and on and on.";
    let plain = simdb::Fingerprinter::new(Recipe::default());
    let log = simdb::Fingerprinter::new(Recipe::default().with_log_tf());
    let stop = simdb::Fingerprinter::new(Recipe::default().keeping_stop_words());
    let p = plain.fingerprint(text).unwrap();
    assert_ne!(p, log.fingerprint(text).unwrap());
    assert_ne!(p, stop.fingerprint(text).unwrap());
    assert!(stop.terms(text).contains(&"the".to_string()));
    assert!(!plain.terms(text).contains(&"the".to_string()));
    for r in [
        Recipe::default().with_log_tf(),
        Recipe::default().keeping_stop_words(),
    ] {
        let t = TempDb::new();
        Db::options().create(t.path(), r.clone()).unwrap();
        let db = Db::options().open(t.path()).unwrap();
        assert_eq!(db.recipe(), &r);
    }
    // On the command line.
    let t = TempDb::new();
    let db_path = t.path();
    let o = simdb(&[&"init", &db_path, &"--tf", &"log", &"--keep-stop-words"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = simdb(&[&"stats", &db_path, &"--json"]);
    let s: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(s["recipe"]["tf"], "log");
    assert_eq!(s["recipe"]["stopwords"], "none");
}

#[test]
fn init_learns_idf_and_batch_queries_are_verified() {
    let t = TempDb::new();
    let db_path = t.path();
    let docs = articles(6, 30, 150);
    let mut lines = String::new();
    for (i, a) in docs.iter().enumerate() {
        lines += &format!("{}\n", json!({"id": format!("d{i}"), "text": a.concat()}));
    }
    let input = t.file("in.jsonl", &lines);
    let o = simdb(&[&"init", &db_path, &"--learn-idf", &input]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("idf=learned/docs=30/"),
        "{}",
        stdout(&o)
    );
    assert_eq!(code(&simdb(&[&"ingest", &db_path, &input])), 0);
    // A batch: a text line (verified, similarity reported) and a
    // fingerprint line (unverified).
    let d0 = Db::options().read_only().open(&db_path).unwrap();
    let fp = d0.get("d3").unwrap().unwrap().fingerprint;
    drop(d0);
    let batch = t.file(
        "q.jsonl",
        format!(
            "{}\n{}\n",
            json!({"id": "t", "text": docs[0].concat()}),
            json!({"id": "f", "fingerprint": fp.to_string()})
        ),
    );
    let o = simdb(&[&"query", &db_path, &"--batch", &batch]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let answers: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers[0]["hits"][0]["id"], "d0");
    assert_eq!(answers[0]["hits"][0]["similarity"], 1.0);
    assert_eq!(answers[1]["hits"][0]["id"], "d3");
    assert!(answers[1]["hits"][0].get("similarity").is_none());
}
