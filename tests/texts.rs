//! Kept texts (format 11, `init --keep-texts`): a store made to keep them
//! has the text of each document written with one, and of no other; a
//! replacement, a delete and expire take it with the record; verify checks
//! each against its record; backup, export and import carry them; a store
//! made without keeps none.

use crate::common;

use simdb::db::export::ExportOptions;
use simdb::{Content, Db, Recipe};

/// Plausible texts, distinct, some Chinese, some with markup characters.
fn texts(n: usize, seed: u64) -> Vec<(String, String)> {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    (0..n)
        .map(|i| {
            let words = common::article(&mut rng, &vocab, 30 + i % 40);
            let text = match i % 3 {
                0 => words.concat(),
                1 => format!("<b>{}</b> &amp; {i}", words.join(" ")),
                _ => format!("{} 第{i}条", words.concat()),
            };
            (format!("d{i:03}"), text)
        })
        .collect()
}

/// Every document's kept text, by id.
fn kept(db: &Db) -> Vec<(String, Option<String>)> {
    let mut ids = Vec::new();
    db.admin()
        .for_each(|id, _| {
            ids.push(id.to_string());
            Ok(())
        })
        .unwrap();
    ids.into_iter()
        .map(|id| {
            let t = db.document(&id).unwrap().unwrap().text;
            (id, t)
        })
        .collect()
}

#[test]
fn a_store_that_keeps_texts_has_each_written_text_and_no_other() {
    let t = common::TempDb::new();
    let mut db = Db::options()
        .keep_texts()
        .create(t.path(), Recipe::default())
        .unwrap();
    let docs = texts(40, 1);
    for (id, text) in &docs {
        db.put(id, Content::Text(text.clone())).unwrap();
    }
    let mut want: Vec<(String, Option<String>)> = docs
        .iter()
        .map(|(i, x)| (i.clone(), Some(x.clone())))
        .collect();
    assert_eq!(kept(&db), want);
    // Replaced by another text, by features, deleted.
    db.put("d001", Content::Text("另一个文本，完全不同的内容。".into()))
        .unwrap();
    want[1].1 = Some("另一个文本，完全不同的内容。".into());
    db.put("d002", Content::Features(vec![("x".into(), 1.0)]))
        .unwrap();
    want[2].1 = None;
    db.delete(&["d003"]).unwrap();
    want.remove(3);
    assert_eq!(kept(&db), want);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.texts, 38);
    // Expire takes the texts with the records.
    db.maintenance().expire(u64::MAX).unwrap();
    assert_eq!(kept(&db), vec![]);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.texts, 0);
    drop(db);

    // A store made without keeps none, and says nothing of texts.
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    for (id, text) in &docs {
        db.put(id, Content::Text(text.clone())).unwrap();
    }
    assert!(kept(&db).iter().all(|(_, x)| x.is_none()));
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.texts, 0);
    // Keeping texts is chosen at creation, not at open.
    drop(db);
    assert!(Db::options().keep_texts().open(t.path()).is_err());
}

#[test]
fn verify_names_a_text_that_is_not_its_records() {
    let t = common::TempDb::new();
    let mut db = Db::options()
        .keep_texts()
        .create(t.path(), Recipe::default())
        .unwrap();
    for (id, text) in texts(5, 2) {
        db.put(&id, Content::Text(text)).unwrap();
    }
    drop(db);
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("texts").unwrap();
        raw.put_cf(cf, b"d001", "edited behind the store's back")
            .unwrap();
        raw.put_cf(cf, b"zz-orphan", "no record").unwrap();
        raw.put_cf(cf, b"d002", [0xff, 0xfe]).unwrap();
    }
    let db = Db::options().read_only().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    let named = |what: &str, key: &[u8]| {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        rep.problems
            .iter()
            .any(|p| p.starts_with("texts:") && p.contains(&hex) && p.contains(what))
    };
    assert!(
        named("not the record's content hash", b"d001"),
        "{:?}",
        rep.problems
    );
    assert!(named("orphan", b"zz-orphan"), "{:?}", rep.problems);
    assert!(named("not UTF-8", b"d002"), "{:?}", rep.problems);
    assert_eq!(rep.problems.len(), 3, "{:?}", rep.problems);
}

#[test]
fn backup_export_and_import_carry_the_texts() {
    let t = common::TempDb::new();
    let mut db = Db::options()
        .keep_texts()
        .create(t.path().join("a"), Recipe::default())
        .unwrap();
    let docs = texts(60, 3);
    for (id, text) in &docs {
        db.put(id, Content::Text(text.clone())).unwrap();
    }
    db.put("f", Content::Features(vec![("y".into(), 2.0)]))
        .unwrap();
    let want = kept(&db);
    assert_eq!(want.iter().filter(|(_, x)| x.is_some()).count(), 60);
    // Backup, through a checkpoint (no other process holds the store).
    drop(db);
    simdb::db::backup(t.path().join("a"), t.path().join("b")).unwrap();
    let b = Db::options().read_only().open(t.path().join("b")).unwrap();
    assert_eq!(kept(&b), want);
    // Export, then import: a store that keeps texts, with each text.
    let out = t.path().join("x");
    let opts = ExportOptions {
        row_group_rows: 7,
        file_rows: 25,
    };
    b.admin().export_parquet(&out, &opts).unwrap();
    simdb::import::run(
        &t.path().join("c"),
        &[out],
        &simdb::import::Options::default(),
        |_| {},
    )
    .unwrap();
    let mut c = Db::options().open(t.path().join("c")).unwrap();
    assert_eq!(kept(&c), want);
    let rep = c.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.texts, 60);
    // And it goes on keeping them.
    c.put("new", Content::Text("一个新的文本".into())).unwrap();
    assert_eq!(
        c.document("new").unwrap().unwrap().text.as_deref(),
        Some("一个新的文本")
    );
}

#[test]
fn the_cli_keeps_texts_from_init_and_shows_them() {
    let t = common::TempDb::new();
    let db = t.path().join("s");
    let o = common::simdb(&[&"init", &db, &"--keep-texts"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("texts kept"),
        "{}",
        common::stdout(&o)
    );
    let input = t.file(
        "in.jsonl",
        "{\"id\":\"a\",\"text\":\"<script>alert(1)</script> 国务院总理主持召开常务会议\"}\n",
    );
    let o = common::simdb(&[&"ingest", &db, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let o = common::simdb(&[&"get", &db, &"a", &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(
        v["text"],
        "<script>alert(1)</script> 国务院总理主持召开常务会议"
    );
    let o = common::simdb(&[&"init", &t.path().join("plain")]);
    assert!(!common::stdout(&o).contains("texts kept"));
}
