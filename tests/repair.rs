//! `verify` names each kind of damage; `verify --repair` rebuilds refs and
//! the block families' postings from the records.

use crate::common;

use simdb::index::{self, RefKey};
use simdb::{Content, Db, Fingerprint, Recipe};

use common::raw_open;

#[test]
fn repair_rebuilds_refs_and_index_keys_from_records() {
    let t = common::TempDb::new();
    let mut rng = common::rng(3);
    let mut fps = Vec::new();
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        let mut w = db.writer().unwrap();
        for i in 0..500 {
            let fp = Fingerprint(rand::Rng::random(&mut rng));
            fps.push((format!("d{i:03}"), fp));
            w.put(&format!("d{i:03}"), fp, &Content::Fingerprint(fp), "t")
                .unwrap();
        }
        w.commit().unwrap();
        db.admin().flush().unwrap();
    }
    let rec = |db: &rocksdb::DB, id: &str| -> simdb::Record {
        let docs = db.cf_handle("docs").unwrap();
        simdb::codec::decode_record(&db.get_cf(docs, id).unwrap().unwrap()).unwrap()
    };
    {
        let raw = raw_open(&t.path());
        let cf = |n: &str| raw.cf_handle(n).unwrap();
        // A missing index key, a missing refs entry, orphans in both.
        let r1 = rec(&raw, "d001");
        let fp1 = r1.fingerprint;
        raw.merge_cf(
            cf("block2"),
            index::bucket_key(fp1.block(2)),
            index::posting_operand(false, fp1),
        )
        .unwrap();
        let r2 = rec(&raw, "d002");
        raw.delete_cf(cf("refs"), RefKey::encode(r2.fingerprint, "d002"))
            .unwrap();
        let ghost = Fingerprint(42);
        raw.merge_cf(
            cf("block0"),
            index::bucket_key(ghost.block(0)),
            index::posting_operand(true, ghost),
        )
        .unwrap();
        raw.put_cf(cf("refs"), RefKey::encode(ghost, "ghost"), b"")
            .unwrap();
        // A second record with d003's fingerprint, and no refs entry.
        let docs = cf("docs");
        let v = raw.get_cf(docs, "d003").unwrap().unwrap();
        raw.put_cf(docs, "d003-twin", &v).unwrap();
        // An unreadable record and a wrong count.
        let mut v = raw.get_cf(docs, "d004").unwrap().unwrap();
        let last = v.len() - 1;
        v[last] ^= 1;
        raw.put_cf(docs, "d004", v).unwrap();
        raw.put_cf(cf("meta"), b"doc_count", 7u64.to_be_bytes())
            .unwrap();
    }
    let before = Db::options()
        .read_only()
        .open(t.path())
        .unwrap()
        .admin()
        .verify()
        .unwrap();
    let text = before.problems.join("\n");
    for want in [
        "block2: key",
        "a missing entry",
        "refs: key",
        "orphan or repeated entries",
        "orphan entry",
        "has no entry",
        "checksum mismatch",
        "document count 7",
    ] {
        assert!(text.contains(want), "{want} not in:\n{text}");
    }

    let o = common::simdb(&[&"verify", &t.path(), &"--repair"]);
    let out = common::stdout(&o);
    assert!(
        out.contains("repaired: 500 records re-indexed, 1 unreadable"),
        "{out}{}",
        common::stderr(&o)
    );
    // Only the unreadable record is left to report.
    assert_eq!(common::code(&o), 2, "{out}");
    let db = Db::options().read_only().open(t.path()).unwrap();
    let after = db.admin().verify().unwrap();
    assert_eq!(after.problems.len(), 1, "{:#?}", after.problems);
    assert!(after.problems[0].contains("checksum mismatch"));
    assert_eq!(after.refs, 500);
    // d004 is unreadable (not indexed); the twin shares d003's entry.
    assert_eq!(after.index_keys, [499; 4]);
    // The twin is found beside d003.
    let d3 = fps[3].1;
    let ids: Vec<String> = db
        .query(d3, 0, None)
        .unwrap()
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(ids, ["d003", "d003-twin"]);
    assert!(db.query(Fingerprint(42), 0, None).unwrap().is_empty());
    assert_eq!(db.query(fps[1].1, 0, None).unwrap()[0].id, "d001");
    assert_eq!(db.query(fps[2].1, 0, None).unwrap()[0].id, "d002");
}

/// Issue 16: a repair killed after it cleared the index but before it
/// rebuilt it must not leave a store that answers queries incompletely:
/// open refuses it until `verify --repair` runs again.
#[test]
fn regression_16_interrupted_repair_is_refused_until_repaired() {
    let t = common::TempDb::new();
    let fp = Fingerprint(0x1234_5678_9abc_def0);
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        db.put("a", Content::Fingerprint(fp)).unwrap();
    }
    {
        // The state a kill leaves: the marker written with the clearing of
        // the index, the index cleared, no rebuild.
        let raw = raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"repair_in_progress", b"1").unwrap();
        for i in 0..4 {
            let cf = raw.cf_handle(&format!("block{i}")).unwrap();
            raw.delete_range_cf(cf, &[][..], &[0xff; 16][..]).unwrap();
        }
    }
    let err = Db::options().read_only().open(t.path()).err().unwrap();
    assert!(err.to_string().contains("simdb verify --repair"), "{err}");
    let o = common::simdb(&[&"query", &t.path(), &"--fingerprint", &fp.to_string()]);
    assert_eq!(common::code(&o), 2, "{}", common::stdout(&o));
    let o = common::simdb(&[&"verify", &t.path(), &"--repair"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let db = Db::options().read_only().open(t.path()).unwrap();
    assert_eq!(db.query(fp, 0, None).unwrap()[0].id, "a");
}
