//! `backup`: a consistent copy that opens and verifies, made by checkpoint
//! when the store is free and by copying a read-only view while a writer
//! holds it.

use crate::common;

use simdb::db::BackupMethod;
use simdb::{Content, Db, Error, Fingerprint, Recipe};

fn records(db: &Db) -> Vec<(String, Fingerprint, u64)> {
    let mut v = Vec::new();
    db.admin()
        .for_each(|id, r| {
            v.push((id.to_string(), r.fingerprint, r.ord));
            Ok(())
        })
        .unwrap();
    v
}

fn fill(db: &mut Db, from: usize, n: usize) {
    let vocab = common::vocab();
    let mut rng = common::rng(from as u64);
    let f = db.fingerprinter().clone();
    let mut w = db.writer().unwrap();
    for i in from..from + n {
        let text = common::article(&mut rng, &vocab, 80).concat();
        let fp = f.fingerprint(&text).unwrap();
        w.put(&format!("doc-{i}"), fp, &Content::Text(text), "test")
            .unwrap();
    }
    // Two documents sharing a fingerprint.
    let f = Fingerprint(0xfeed_0000_0000_0001);
    w.put(
        &format!("same-{from}-a"),
        f,
        &Content::Fingerprint(f),
        "test",
    )
    .unwrap();
    w.put(
        &format!("same-{from}-b"),
        f,
        &Content::Fingerprint(f),
        "test",
    )
    .unwrap();
    w.commit().unwrap();
}

#[test]
fn backup_of_a_free_store_is_a_checkpoint() {
    let t = common::TempDb::new();
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        fill(&mut db, 0, 300);
    }
    let dest = t.dir.path().join("copy");
    assert_eq!(
        simdb::db::backup(t.path(), &dest).unwrap(),
        BackupMethod::Checkpoint
    );
    let (a, b) = (
        Db::options().read_only().open(t.path()).unwrap(),
        Db::options().read_only().open(&dest).unwrap(),
    );
    assert!(b.admin().verify().unwrap().is_clean());
    assert_eq!(records(&a), records(&b));
    assert_eq!(a.len().unwrap(), b.len().unwrap());
    let err = simdb::db::backup(t.path(), &dest).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
}

#[test]
fn backup_while_a_writer_holds_the_store_copies_its_committed_state() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    fill(&mut db, 0, 300);
    let committed = records(&db);
    // Pending, uncommitted writes are not part of the copy.
    let mut w = db.writer().unwrap();
    w.put(
        "pending",
        Fingerprint(7),
        &Content::Fingerprint(Fingerprint(7)),
        "t",
    )
    .unwrap();
    assert!(matches!(
        Db::options().open(t.path()).err().unwrap(),
        Error::InUse { .. }
    ));
    let dest = t.dir.path().join("copy");
    assert_eq!(
        simdb::db::backup(t.path(), &dest).unwrap(),
        BackupMethod::Copy
    );
    w.commit().unwrap();
    let copy = Db::options().open(&dest).unwrap();
    let rep = copy.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(records(&copy), committed);
    assert_eq!(copy.len().unwrap(), committed.len() as u64);
    assert!(!simdb::import::staging_dir(&dest).exists());
    // The copy is a working store: it queries and takes writes.
    let (id, fp, _) = &committed[0];
    assert_eq!(&copy.query(*fp, 0, None).unwrap()[0].id, id);
    drop(copy);
    let mut copy = Db::options().open(&dest).unwrap();
    copy.put("new", Content::Fingerprint(Fingerprint(9)))
        .unwrap();
    assert!(copy.admin().verify().unwrap().is_clean());
}

#[test]
fn backup_command() {
    let t = common::TempDb::new();
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        fill(&mut db, 0, 50);
    }
    let dest = t.dir.path().join("copy");
    let o = common::simdb(&[&"backup", &t.path(), &dest]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("52 documents, verify: 0 problem(s)"),
        "{}",
        common::stdout(&o)
    );
    let o = common::simdb(&[&"backup", &t.path(), &dest]);
    assert_eq!(common::code(&o), 2);
    assert!(
        common::stderr(&o).contains("already exists"),
        "{}",
        common::stderr(&o)
    );
}

/// Issue 16: a copy made while a writer holds a store whose IDF was
/// learned at init must keep the table (and the short-document count), so
/// it opens and verifies.
#[test]
fn regression_16_copy_keeps_learned_idf_and_short_count() {
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(16);
    let texts: Vec<String> = (0..200)
        .map(|i| common::article(&mut rng, &vocab, if i % 10 == 0 { 4 } else { 80 }).concat())
        .collect();
    let f = simdb::Fingerprinter::new(Recipe::default());
    let table = simdb::fingerprint::LearnedIdf::learn(&f, texts.iter().map(String::as_str));
    let mut db = Db::options()
        .learned_idf(table)
        .create(t.path(), Recipe::default())
        .unwrap();
    let f = db.fingerprinter().clone();
    {
        let mut w = db.writer().unwrap();
        for (i, text) in texts.iter().enumerate() {
            let a = f.analyze(text).unwrap();
            w.put(&format!("d{i}"), a, &Content::Text(text.clone()), "t")
                .unwrap();
        }
        w.commit().unwrap();
    }
    let short = db.admin().stats().unwrap().short_documents;
    assert!(short > 0);
    // The store is held by this handle: the backup copies a read-only view.
    let dest = t.dir.path().join("copy");
    assert_eq!(
        simdb::db::backup(t.path(), &dest).unwrap(),
        BackupMethod::Copy
    );
    let copy = Db::options().read_only().open(&dest).unwrap();
    let rep = copy.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(copy.admin().stats().unwrap().short_documents, short);
    assert_eq!(copy.recipe(), db.recipe());
    // Both fingerprint a text the same way (the same learned table).
    assert_eq!(
        copy.fingerprinter().fingerprint(&texts[1]).unwrap(),
        db.fingerprinter().fingerprint(&texts[1]).unwrap()
    );
}
