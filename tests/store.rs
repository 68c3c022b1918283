//! The store through the public API: upserts and deletes leave no orphan
//! index keys, recipes and formats are checked at open, corruption is named.

use crate::common;

use common::raw_open;
use simdb::{Content, Db, Error, Fingerprint, Outcome, Recipe};

fn text(s: &str) -> Content {
    Content::Text(s.to_string())
}

#[test]
fn upsert_and_delete_leave_no_orphan_keys() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let a1 = "alpha beta gamma delta epsilon zeta eta theta";
    let a2 = "completely different words about rivers mountains forests";
    assert_eq!(db.put("a", text(a1)).unwrap(), Outcome::Inserted);
    assert_eq!(db.put("a", text(a1)).unwrap(), Outcome::Unchanged);
    assert_eq!(db.put("b", text(a1)).unwrap(), Outcome::Inserted);
    assert_eq!(db.put("a", text(a2)).unwrap(), Outcome::Replaced);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.index_keys, [2, 2, 2, 2]);
    // The old fingerprint of "a" is gone from the index.
    let fp1 = db.fingerprinter().fingerprint(a1).unwrap();
    let ids: Vec<String> = db
        .query(fp1, 0, None)
        .unwrap()
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(ids, ["b"]);
    assert_eq!(db.delete(&["a", "missing"]).unwrap(), 1);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.index_keys, [1, 1, 1, 1]);
    assert_eq!(db.len().unwrap(), 1);
    assert!(db.get("a").unwrap().is_none());
}

#[test]
fn same_id_twice_in_one_batch() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let f = db.fingerprinter().clone();
    let mut w = db.writer().unwrap();
    for (i, s) in [
        "one two three four",
        "five six seven eight",
        "nine ten eleven twelve",
    ]
    .iter()
    .enumerate()
    {
        let c = text(s);
        let out = w.put("x", c.fingerprint(&f).unwrap(), &c, "t").unwrap();
        assert_eq!(
            out,
            if i == 0 {
                Outcome::Inserted
            } else {
                Outcome::Replaced
            }
        );
    }
    assert!(w.delete("x").unwrap());
    let c = text("last words standing here");
    w.put("x", c.fingerprint(&f).unwrap(), &c, "t").unwrap();
    w.commit().unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.documents, 1);
    assert_eq!(
        db.get("x").unwrap().unwrap().fingerprint,
        c.fingerprint(&f).unwrap()
    );
}

#[test]
fn recipe_is_stored_and_a_mismatch_is_refused() {
    let t = common::TempDb::new();
    let r = Recipe::with(7, 1, false);
    drop(Db::options().create(t.path(), r.clone()).unwrap());
    let db = Db::options().open(t.path()).unwrap();
    assert_eq!(db.recipe(), &r);
    drop(db);
    let err = Db::options()
        .expecting(&Recipe::with(0, 2, false))
        .open(t.path())
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::RecipeMismatch { ref field, .. } if field == "top_k"),
        "{err}"
    );

    // A store whose recipe names another IDF table (another build) is refused.
    {
        let raw = raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        let mut bad = r.clone();
        bad.idf = "some-other-table".into();
        raw.put_cf(meta, b"recipe", serde_json::to_vec(&bad).unwrap())
            .unwrap();
    }
    let err = Db::options().open(t.path()).err().unwrap();
    assert!(
        matches!(err, Error::RecipeMismatch { ref field, .. } if field == "idf"),
        "{err}"
    );
}

#[test]
fn a_recipe_from_before_script_folding_is_kept_and_migrate_says_how_to_move() {
    // A store made before the `script` and `latin` fields existed: its
    // recipe JSON has neither.
    let t = common::TempDb::new();
    let old = Recipe::default().before_reposts();
    drop(Db::options().create(t.path(), old.clone()).unwrap());
    {
        let raw = raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        let mut json: serde_json::Value = serde_json::to_value(&old).unwrap();
        let obj = json.as_object_mut().unwrap();
        obj.remove("script").unwrap();
        obj.remove("latin").unwrap();
        raw.put_cf(meta, b"recipe", serde_json::to_vec(&json).unwrap())
            .unwrap();
    }
    let simp = "国务院总理今天在北京主持召开常务会议，部署进一步扩大内需。经济稳定增长。";
    let trad = "國務院總理今天在北京主持召開常務會議，部署進一步擴大內需。經濟穩定增長。";
    let mut db = Db::options().open(t.path()).unwrap();
    assert_eq!(db.recipe(), &old);
    assert!(!db.recipe().folds_script());
    db.put("s", text(simp)).unwrap();
    // Fingerprints as the old recipe made them: the scripts differ.
    let f = simdb::Fingerprinter::new(old);
    assert_eq!(
        db.get("s").unwrap().unwrap().fingerprint,
        f.fingerprint(simp).unwrap()
    );
    assert!(db.search(&db.text_query(trad).unwrap()).unwrap().is_empty());
    drop(db);
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let out = common::stdout(&o);
    assert!(out.contains("recipe kept"), "{out}");
    assert!(out.contains("script: \"none\""), "{out}");
    assert!(out.contains("latin: \"words\""), "{out}");
    assert!(out.contains("simdb init"), "{out}");
    // The recipe is untouched by migrate.
    assert!(!Db::options()
        .open(t.path())
        .unwrap()
        .recipe()
        .folds_script());

    // A new store folds: the two scripts are one document.
    let t2 = common::TempDb::new();
    let mut db = Db::options().create(t2.path(), Recipe::default()).unwrap();
    assert!(Recipe::default().behind().is_empty());
    db.put("s", text(simp)).unwrap();
    let hits = db.search(&db.text_query(trad).unwrap()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, "s");
    assert_eq!(hits[0].distance, 0);
}

#[test]
fn newer_format_and_foreign_directories_are_refused() {
    let t = common::TempDb::new();
    drop(Db::options().create(t.path(), Recipe::default()).unwrap());
    let set_version = |v: u32| {
        let raw = raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"format_version", v.to_be_bytes())
            .unwrap();
    };
    set_version(15);
    let err = Db::options().open(t.path()).err().unwrap();
    assert!(
        matches!(
            err,
            Error::NewerFormat {
                found: 15,
                supported: 14,
                ..
            }
        ),
        "{err}"
    );
    // Formats 2 (one index key per document), 3 (no clusters) and 4
    // (an index entry per document) are converted by `migrate`.
    for v in [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] {
        set_version(v);
        let err = Db::options().open(t.path()).err().unwrap();
        assert!(
            matches!(
                err,
                Error::NeedsMigration {
                    found,
                    supported: 14,
                    ..
                } if found == v
            ),
            "{err}"
        );
        assert!(err.to_string().contains("simdb migrate"), "{err}");
    }
    // Format 1 (ids inside index keys) is no longer read: named, not foreign.
    set_version(1);
    let err = Db::options().open(t.path()).err().unwrap();
    assert!(
        matches!(
            err,
            Error::OlderFormat {
                found: 1,
                supported: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("rebuild"), "{err}");

    let plain = t.dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("notes.txt"), "hello").unwrap();
    let err = Db::options().open(&plain).err().unwrap();
    assert!(matches!(err, Error::NotASimdbStore { .. }), "{err}");

    // Another RocksDB database is not a simdb store either.
    let other = t.dir.path().join("other");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        rocksdb::DB::open(&o, &other).unwrap();
    }
    let err = Db::options().open(&other).err().unwrap();
    assert!(matches!(err, Error::NotASimdbStore { .. }), "{err}");

    let err = Db::options()
        .open(t.dir.path().join("absent"))
        .err()
        .unwrap();
    assert!(matches!(err, Error::NoSuchStore { .. }), "{err}");
    let err = Db::options()
        .create(&plain, Recipe::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
}

#[test]
fn a_flipped_record_byte_is_named_with_family_and_key() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    db.put("doc", text("some words that make a fingerprint"))
        .unwrap();
    drop(db);
    {
        let raw = raw_open(&t.path());
        let docs = raw.cf_handle("docs").unwrap();
        let mut v = raw.get_cf(docs, b"doc").unwrap().unwrap();
        let last = v.len() - 1;
        v[last] ^= 0x40;
        raw.put_cf(docs, b"doc", v).unwrap();
    }
    let db = Db::options().open(t.path()).unwrap();
    // A query that finds the document reads its record too.
    let q = db
        .fingerprinter()
        .fingerprint("some words that make a fingerprint")
        .unwrap();
    let err = db.query(q, 0, None).unwrap_err();
    assert!(
        matches!(err, Error::Corrupt { family: "docs", ref key_hex, .. } if key_hex == "646f63"),
        "{err}"
    );
    let err = db.find_many(&[simdb::Query::new(q)]).unwrap_err();
    assert!(
        matches!(err, Error::Corrupt { family: "docs", .. }),
        "{err}"
    );
    let err = db.get("doc").unwrap_err();
    match err {
        Error::Corrupt {
            family,
            ref key_hex,
            ..
        } => {
            assert_eq!(family, "docs");
            assert_eq!(key_hex, "646f63");
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    assert!(!db.admin().verify().unwrap().is_clean());
}

#[test]
fn empty_documents_are_an_error_not_a_zero_fingerprint() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    assert!(matches!(
        db.put("e", text("  ，。 the of ")),
        Err(Error::NoFeatures)
    ));
    assert!(matches!(db.text_query(""), Err(Error::NoFeatures)));
    assert_eq!(db.len().unwrap(), 0);
}

#[test]
fn weighted_features_are_documents_too() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let feats: Vec<(String, f64)> = (0..50)
        .map(|i| (format!("dim{i}"), 1.0 + i as f64 / 10.0))
        .collect();
    db.put("v", Content::Features(feats.clone())).unwrap();
    let q = simdb::simhash_weighted(&feats).unwrap();
    assert_eq!(db.query(q, 0, None).unwrap()[0].id, "v");
}

/// Documents sharing one exact fingerprint share its posting entry and
/// are told apart by id (`refs` is fingerprint ‖ id); deletes, moves and
/// re-inserts keep every key consistent, and the entry leaves the buckets
/// with the last of them.
#[test]
fn documents_sharing_a_fingerprint_keep_their_own_keys() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let feats = |n: usize| -> Content {
        Content::Features((0..n).map(|i| (format!("f{i}"), 1.0)).collect())
    };
    for id in ["c", "a", "b"] {
        db.put(id, feats(40)).unwrap();
    }
    let q = db.get("a").unwrap().unwrap().fingerprint;
    let ids = |db: &Db| -> Vec<String> {
        db.query(q, 0, None)
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    assert_eq!(ids(&db), ["a", "b", "c"]);
    // One entry per bucket, however many documents have the fingerprint.
    assert_eq!(db.admin().verify().unwrap().index_keys, [1; 4]);
    assert_eq!(db.query(q, 0, Some(2)).unwrap().len(), 2);
    db.delete(&["b"]).unwrap();
    db.put("d", feats(40)).unwrap();
    // Move "a" away and back.
    db.put("a", feats(41)).unwrap();
    assert_eq!(ids(&db), ["c", "d"]);
    assert_eq!(db.admin().verify().unwrap().index_keys, [2; 4]);
    db.put("a", feats(40)).unwrap();
    assert_eq!(ids(&db), ["a", "c", "d"]);
    // Several in one batch, and one deleted and written again in it.
    {
        let mut w = db.writer().unwrap();
        for id in ["e", "f"] {
            w.put(id, q, &feats(40), "test").unwrap();
        }
        w.delete("c").unwrap();
        w.put("c", q, &feats(40), "test").unwrap();
        assert_eq!(w.query(q, 0, None).unwrap().len(), 5);
        w.commit().unwrap();
    }
    assert_eq!(ids(&db), ["a", "c", "d", "e", "f"]);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    assert_eq!((rep.documents, rep.refs, rep.index_keys), (5, 5, [1; 4]));
    // The last document of a fingerprint takes its entry with it, also
    // when all of them go in one batch.
    let all: Vec<String> = ids(&db);
    db.delete(&all).unwrap();
    assert!(ids(&db).is_empty());
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    assert_eq!(rep.index_keys, [0; 4]);
}

/// A format-2 store (one empty-valued key `block ‖ fingerprint ‖ seq` per
/// document in each block family) is refused with a pointer to `migrate`,
/// which rebuilds the postings from the records: then it verifies clean
/// and answers as a brute force.
#[test]
fn format_2_stores_are_migrated_in_place() {
    use rand::Rng;
    let t = common::TempDb::new();
    let mut rng = common::rng(12);
    let mut entries: Vec<(String, Fingerprint)> = Vec::new();
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        let mut w = db.writer().unwrap();
        let base = Fingerprint(rng.random());
        for i in 0..300u64 {
            // Some share a fingerprint, some are near the base.
            let fp = match i % 3 {
                0 => base,
                1 => Fingerprint(base.0 ^ (1 << (i % 64))),
                _ => Fingerprint(rng.random()),
            };
            let id = format!("d{i:03}");
            w.put(&id, fp, &Content::Fingerprint(fp), "t").unwrap();
            entries.push((id, fp));
        }
        w.commit().unwrap();
    }
    {
        // Rewrite the block families the way format 2 laid them out.
        let raw = raw_open(&t.path());
        let docs = raw.cf_handle("docs").unwrap();
        let recs: Vec<simdb::Record> = entries
            .iter()
            .map(|(id, _)| {
                simdb::codec::decode_record(&raw.get_cf(docs, id).unwrap().unwrap()).unwrap()
            })
            .collect();
        for i in 0..4 {
            let cf = raw.cf_handle(&format!("block{i}")).unwrap();
            raw.delete_range_cf(cf, &[][..], &[0xff; 16][..]).unwrap();
            // Format 2 numbered the documents of a fingerprint.
            let mut seqs: std::collections::HashMap<Fingerprint, u32> = Default::default();
            for r in &recs {
                let seq = seqs.entry(r.fingerprint).or_default();
                let mut k = r.fingerprint.block(i).to_be_bytes().to_vec();
                k.extend_from_slice(&r.fingerprint.value().to_be_bytes());
                if *seq != 0 {
                    k.extend_from_slice(&seq.to_be_bytes());
                }
                *seq += 1;
                raw.put_cf(cf, k, b"").unwrap();
            }
        }
        let meta = raw.cf_handle("meta").unwrap();
        // Stores before format 6 have no keep policy.
        raw.delete_cf(meta, b"keep_policy").unwrap();
        raw.put_cf(meta, b"format_version", 2u32.to_be_bytes())
            .unwrap();
        downgrade_records_and_drop_clusters(raw);
    }
    assert!(matches!(
        Db::options().read_only().open(t.path()).err().unwrap(),
        Error::NeedsMigration { found: 2, .. }
    ));
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(
            "migrated format 2 -> 14 (keep policy priority): 300 records indexed, 300 given their place in the ingest order"
        ),
        "{}",
        common::stdout(&o)
    );
    let db = Db::options().read_only().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    let distinct = entries
        .iter()
        .map(|e| e.1)
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    assert_eq!(rep.index_keys, [distinct; 4]);
    for q in [entries[0].1, entries[1].1, entries[2].1] {
        for k in [0, 3, 7] {
            let want =
                simdb::index::brute_force(entries.iter().map(|(i, f)| (i.as_str(), *f)), q, k);
            assert_eq!(db.query(q, k, None).unwrap(), want, "k={k}");
        }
    }
    drop(db);
    // Migrating again is a no-op.
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert!(
        common::stdout(&o).contains("already format 14, keep policy priority"),
        "{}",
        common::stdout(&o)
    );
}

/// A format-4 store (`refs` keyed by fingerprint ‖ sequence number, with
/// the id as value; postings with one entry per document) is refused with
/// a pointer to `migrate`, which rewrites both: then it verifies clean,
/// keeps its clusters and answers as a brute force.
#[test]
fn format_4_stores_are_migrated_in_place() {
    use rand::Rng;
    let t = common::TempDb::new();
    let mut rng = common::rng(41);
    let mut entries: Vec<(String, Fingerprint)> = Vec::new();
    let base = Fingerprint(rng.random());
    {
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        let mut w = db.writer().unwrap();
        for i in 0..200u64 {
            let fp = match i % 4 {
                0 | 1 => base,
                2 => Fingerprint(base.0 ^ (1 << (i % 64))),
                _ => Fingerprint(rng.random()),
            };
            let id = format!("d{:03}", (i * 37) % 200);
            w.put(&id, fp, &Content::Fingerprint(fp), "t").unwrap();
            entries.push((id, fp));
        }
        w.commit().unwrap();
    }
    {
        let raw = raw_open(&t.path());
        let docs = raw.cf_handle("docs").unwrap();
        let recs: Vec<(String, simdb::Record)> = entries
            .iter()
            .map(|(id, _)| {
                let v = raw.get_cf(docs, id).unwrap().unwrap();
                (id.clone(), simdb::codec::decode_record(&v).unwrap())
            })
            .collect();
        // Format 4's refs: fingerprint ‖ seq (none for 0) -> id.
        let refs = raw.cf_handle("refs").unwrap();
        raw.delete_range_cf(refs, &[][..], &[0xff; 17][..]).unwrap();
        let mut seqs: std::collections::HashMap<Fingerprint, u32> = Default::default();
        for (id, r) in &recs {
            let seq = seqs.entry(r.fingerprint).or_default();
            let mut k = r.fingerprint.value().to_be_bytes().to_vec();
            if *seq != 0 {
                k.extend_from_slice(&seq.to_be_bytes());
            }
            *seq += 1;
            raw.put_cf(refs, k, id.as_bytes()).unwrap();
        }
        // Format 4's postings: every document's fingerprint, repeats kept.
        for i in 0..4 {
            let cf = raw.cf_handle(&format!("block{i}")).unwrap();
            raw.delete_range_cf(cf, &[][..], &[0xff; 16][..]).unwrap();
            let mut per: std::collections::BTreeMap<u16, Vec<u64>> = Default::default();
            for (_, r) in &recs {
                per.entry(r.fingerprint.block(i))
                    .or_default()
                    .push(r.fingerprint.0);
            }
            for (b, mut fps) in per {
                fps.sort_unstable();
                let v: Vec<u8> = fps.iter().flat_map(|f| f.to_be_bytes()).collect();
                raw.put_cf(cf, b.to_be_bytes(), v).unwrap();
            }
        }
        let meta = raw.cf_handle("meta").unwrap();
        // Stores before format 6 have no keep policy.
        raw.delete_cf(meta, b"keep_policy").unwrap();
        raw.put_cf(meta, b"format_version", 4u32.to_be_bytes())
            .unwrap();
    }
    assert!(matches!(
        Db::options().read_only().open(t.path()).err().unwrap(),
        Error::NeedsMigration { found: 4, .. }
    ));
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o)
            .contains("migrated format 4 -> 14 (keep policy priority): 200 records indexed"),
        "{}",
        common::stdout(&o)
    );
    let db = Db::options().read_only().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    assert_eq!(rep.refs, 200);
    let distinct = entries
        .iter()
        .map(|e| e.1)
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    assert_eq!(rep.index_keys, [distinct; 4]);
    for k in [0, 3, 7] {
        let want =
            simdb::index::brute_force(entries.iter().map(|(i, f)| (i.as_str(), *f)), base, k);
        assert_eq!(db.query(base, k, None).unwrap(), want, "k={k}");
    }
}

/// Rewrites every record as record version 3 (no ord, no priority), drops
/// the clusters family and the ingest-order meta: a store as simdb 0.2
/// (format 3) wrote it, but for the format version.
fn downgrade_records_and_drop_clusters(mut raw: rocksdb::DB) {
    let docs = raw.cf_handle("docs").unwrap();
    let all: Vec<(Vec<u8>, Vec<u8>)> = raw
        .iterator_cf(docs, rocksdb::IteratorMode::Start)
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    for (k, v) in all {
        let rec = simdb::codec::decode_record(&v).unwrap();
        assert!(rec.priority.is_none());
        // A version 7 payload is the version 3 payload, the ord, a
        // priority tag byte, a time tag byte and the parts (a length,
        // then 8 bytes each), the kept tag byte and the fine sketch.
        let fine = 1 + 96 * usize::from(rec.fine.is_some());
        let payload = &v[5..v.len() - fine - 19 - 8 * rec.parts.len()];
        let mut v3 = vec![3u8];
        v3.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
        v3.extend_from_slice(payload);
        assert_eq!(
            simdb::codec::decode_record(&v3).unwrap(),
            simdb::Record {
                ord: 0,
                parts: Vec::new(),
                fine: None,
                ..rec
            }
        );
        raw.put_cf(docs, k, v3).unwrap();
    }
    let meta = raw.cf_handle("meta").unwrap();
    raw.delete_cf(meta, b"next_ord").unwrap();
    raw.delete_cf(meta, b"clock").unwrap();
    raw.drop_cf("clusters").unwrap();
}

#[test]
fn format_3_stores_get_ords_and_clusters() {
    let t = common::TempDb::new();
    let (lines, _) = {
        let vocab = common::vocab();
        let mut rng = common::rng(5);
        let mut lines = String::new();
        for i in 0..40 {
            let words = common::article(&mut rng, &vocab, 300);
            lines += &format!(
                "{}\n",
                serde_json::json!({"id": format!("a{i}"), "text": words.concat()})
            );
            if i % 10 == 0 {
                let e = common::edit(&mut rng, &vocab, &words, 1).concat();
                lines += &format!(
                    "{}\n",
                    serde_json::json!({"id": format!("a{i}-copy"), "text": e})
                );
            }
        }
        (lines, ())
    };
    let input = t.file("in.jsonl", &lines);
    assert_eq!(common::code(&common::simdb(&[&"init", &t.path()])), 0);
    assert_eq!(
        common::code(&common::simdb(&[&"ingest", &t.path(), &input])),
        0
    );
    let clusters_of = |db: &Db| {
        let mut v = Vec::new();
        db.clusters()
            .each(2, |c| {
                v.push(c.members.iter().map(|m| m.id.clone()).collect::<Vec<_>>());
                Ok(())
            })
            .unwrap();
        v.sort();
        v
    };
    let before = clusters_of(&Db::options().read_only().open(t.path()).unwrap());
    assert!(!before.is_empty());
    {
        let raw = raw_open(&t.path());
        let meta = raw.cf_handle("meta").unwrap();
        // Stores before format 6 have no keep policy.
        raw.delete_cf(meta, b"keep_policy").unwrap();
        raw.put_cf(meta, b"format_version", 3u32.to_be_bytes())
            .unwrap();
        // As a migration killed in its repair leaves it: run again, it
        // finishes.
        raw.put_cf(meta, b"repair_in_progress", b"1").unwrap();
        downgrade_records_and_drop_clusters(raw);
    }
    assert!(matches!(
        Db::options().read_only().open(t.path()).err().unwrap(),
        Error::NeedsMigration { found: 3, .. }
    ));
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(
            "migrated format 3 -> 14 (keep policy priority): 44 records indexed, 44 given their place in the ingest order"
        ),
        "{}",
        common::stdout(&o)
    );
    let db = Db::options().read_only().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    // The same groups as ingest made (the ingest ran within a second, so
    // the ingest order is the id order; the copies come after their
    // originals in both).
    assert_eq!(clusters_of(&db), before);
}

/// Issue 16: the "is a writer active" probe opened and closed `LOCK`, which
/// drops every POSIX lock the process holds on it: a process holding the
/// writer that asked a read-only view how fresh it was lost its lock, and a
/// second writer could open the store.
#[test]
fn regression_16_freshness_probe_keeps_the_writers_lock() {
    let t = common::TempDb::new();
    let writer = Db::options().create(t.path(), Recipe::default()).unwrap();
    let reader = Db::options().read_only().open(t.path()).unwrap();
    assert!(reader.admin().view().writer_active);
    assert!(reader.admin().view().writer_active);
    let input = t.file("in.jsonl", "{\"id\":\"x\",\"text\":\"some text here\"}\n");
    let o = common::simdb(&[&"ingest", &t.path(), &input]);
    assert_eq!(common::code(&o), 2, "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("in use"),
        "{}",
        common::stderr(&o)
    );
    drop(reader);
    drop(writer);
    let reader = Db::options().read_only().open(t.path()).unwrap();
    assert!(!reader.admin().view().writer_active);
}

/// The write batches in a RocksDB write-ahead log file: its 32 KiB blocks
/// hold records `crc32 (4) ‖ length u16 LE (2) ‖ type (1) ‖ data`; a batch
/// is one FULL record (type 1) or a FIRST (type 2) and its continuations.
fn wal_batches(path: &std::path::Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let (mut at, mut batches) = (0usize, 0usize);
    while at + 7 <= bytes.len() {
        let left_in_block = 32768 - at % 32768;
        if left_in_block < 7 {
            at += left_in_block; // block trailer
            continue;
        }
        let len = u16::from_le_bytes([bytes[at + 4], bytes[at + 5]]) as usize;
        let kind = bytes[at + 6];
        if kind == 0 && len == 0 {
            break; // zero padding: the end of what was written
        }
        if kind == 1 || kind == 2 {
            batches += 1;
        }
        at += 7 + len;
    }
    batches
}

/// Issue 16: creating a store with a learned IDF wrote the recipe (which names the learned
/// table) and the table in two writes; a crash between them left a store
/// that never opens. Now one batch: the write-ahead log of a new store
/// holds exactly one.
#[test]
fn regression_16_learned_idf_is_written_with_the_recipe() {
    let t = common::TempDb::new();
    let f = simdb::Fingerprinter::new(Recipe::default());
    let texts = ["近重复检测 数据库", "数据库 索引", "近重复 文本 检测"];
    let table = simdb::fingerprint::LearnedIdf::learn(&f, texts);
    let db = Db::options()
        .learned_idf(table)
        .create(t.path(), Recipe::default())
        .unwrap();
    let logs: Vec<std::path::PathBuf> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    let batches: usize = logs.iter().map(|p| wal_batches(p)).sum();
    assert_eq!(batches, 1, "{logs:?}");
    drop(db);
    assert!(Db::options().open(t.path()).is_ok());
}

/// A store at `path` of `n` texts of `words` words (seed `seed`), every
/// third a near copy of an earlier one (`d0000`, `d0001`, …); returns
/// the words of each text.
fn store_of_near_copies(
    path: &std::path::Path,
    seed: u64,
    n: usize,
    words: usize,
) -> Vec<Vec<String>> {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    let mut texts: Vec<Vec<String>> = Vec::new();
    let mut db = Db::options().create(path, Recipe::default()).unwrap();
    for i in 0..n {
        let w = common::article(&mut rng, &vocab, words);
        let body = if i % 3 == 0 && !texts.is_empty() {
            // A near copy of an earlier text.
            let base: &Vec<String> = &texts[i / 3 % texts.len()];
            common::edit(&mut rng, &vocab, base, 2).concat()
        } else {
            w.concat()
        };
        db.put(&format!("d{i:04}"), text(&body)).unwrap();
        texts.push(w);
    }
    texts
}

/// Table files are read through mmap by default (`Tuning::mmap_reads`);
/// through the block cache when it is off. Two read-only opens of one
/// store of near copies, one each way, answer every query the same.
#[test]
fn reads_through_mmap_and_through_the_block_cache_answer_the_same() {
    use simdb::{QueryRequest, Subject, Tuning};
    let t = common::TempDb::new();
    let texts = store_of_near_copies(&t.path(), 77, 600, 80);
    let answers = |mmap_reads: bool| {
        let db = Db::options()
            .read_only()
            .tuning(Tuning {
                mmap_reads,
                ..Tuning::default()
            })
            .open(t.path())
            .unwrap();
        texts
            .iter()
            .step_by(7)
            .map(|w| {
                let a = db
                    .answer(&QueryRequest::new(Subject::Text(w.concat())))
                    .unwrap();
                a.hits
                    .iter()
                    .map(|h| (h.id.clone(), h.distance, h.similarity.map(f64::to_bits)))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let mapped = answers(true);
    assert_eq!(mapped, answers(false));
    assert!(mapped.iter().filter(|h| h.len() > 1).count() > 5);
}

/// The frozen index is a copy of the postings: `simdb freeze` writes it,
/// `stats` shows it, `backup` carries it, a repair drops it (the postings
/// it copied are rebuilt), and a file that is truncated, missing or
/// damaged changes no answer: the store reads every bucket from RocksDB,
/// and `stats` and `verify` say why.
#[test]
fn a_frozen_index_is_carried_dropped_and_checked() {
    use simdb::{QueryRequest, Subject};
    let t = common::TempDb::new();
    let texts = store_of_near_copies(&t.path(), 81, 300, 60);
    let answers = |path: &std::path::Path| {
        let db = Db::options().read_only().open(path).unwrap();
        texts
            .iter()
            .step_by(5)
            .map(|w| {
                let a = db
                    .answer(&QueryRequest::new(Subject::Text(w.concat())))
                    .unwrap();
                a.hits
                    .iter()
                    .map(|h| (h.id.clone(), h.distance))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let want = answers(&t.path());
    assert!(want.iter().filter(|h| h.len() > 1).count() > 3);
    let o = common::simdb(&[&"freeze", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("generation 1"),
        "{}",
        common::stdout(&o)
    );
    let o = common::simdb(&[&"stats", &t.path()]);
    assert!(
        common::stdout(&o).contains("100.0% of buckets unchanged"),
        "{}",
        common::stdout(&o)
    );
    assert_eq!(answers(&t.path()), want);
    // A backup carries it.
    let copy = t.dir.path().join("copy");
    let o = common::simdb(&[&"backup", &t.path(), &copy]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let backed = Db::options().read_only().open(&copy).unwrap();
    assert_eq!(
        backed.admin().stats().unwrap().frozen.unwrap().generation,
        1
    );
    drop(backed);
    assert_eq!(answers(&copy), want);
    // Truncated, then missing: every bucket from RocksDB, said by stats
    // and verify; a new freeze mends it.
    let file = t.path().join("frozen-0000000001.idx");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let db = Db::options().read_only().open(t.path()).unwrap();
    let s = db.admin().stats().unwrap();
    assert!(s.frozen.is_none());
    assert!(s.frozen_unusable.unwrap().contains("truncated"));
    let v = db.admin().verify().unwrap();
    assert!(
        v.problems
            .iter()
            .any(|p| p.contains("frozen index unusable")),
        "{:?}",
        v.problems
    );
    drop(db);
    assert_eq!(answers(&t.path()), want);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(answers(&t.path()), want);
    let o = common::simdb(&[&"freeze", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(!file.exists(), "generation 1 is gone, 2 replaces it");
    let file = t.path().join("frozen-0000000002.idx");
    // A flipped entry byte: the layout still reads; the bucket's own CRC
    // says so when a query first reads it, which then reads the bucket
    // from RocksDB (before, the query silently missed the document whose
    // entry it was: review-2026-11-c, finding 8); the file's CRC says so
    // to verify, which names the bucket.
    let mut bytes = std::fs::read(&file).unwrap();
    let entry = u64::from_be_bytes(bytes[96..104].try_into().unwrap());
    bytes[100] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let db = Db::options().read_only().open(t.path()).unwrap();
    let s = db.admin().stats().unwrap().frozen.unwrap();
    assert_eq!((s.damaged_buckets, s.clean_buckets), (0, s.buckets));
    let a = db
        .answer(&QueryRequest::new(Subject::Fingerprint(
            simdb::Fingerprint(entry),
        )))
        .unwrap();
    assert!(a.hits.iter().any(|h| h.distance == 0), "{:?}", a.hits);
    assert_eq!(
        db.admin().stats().unwrap().frozen.unwrap().damaged_buckets,
        1
    );
    drop(db);
    assert_eq!(answers(&t.path()), want);
    let o = common::simdb(&[&"stats", &t.path()]);
    assert!(
        !common::stdout(&o).contains("DAMAGED"),
        "counted since open"
    );
    let o = common::simdb(&[&"verify", &t.path()]);
    assert_eq!(common::code(&o), 2);
    assert!(common::stdout(&o).contains("damaged") || common::stderr(&o).contains("damaged"));
    let bucket = format!(
        "bucket {} of block0 fails its CRC",
        simdb::Fingerprint(entry).block(0)
    );
    assert!(
        common::stdout(&o).contains(&bucket) || common::stderr(&o).contains(&bucket),
        "{}{}",
        common::stdout(&o),
        common::stderr(&o)
    );
    // A repair rebuilds the postings and drops the copy of them.
    let o = common::simdb(&[&"verify", &t.path(), &"--repair"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let db = Db::options().read_only().open(t.path()).unwrap();
    let s = db.admin().stats().unwrap();
    assert!(s.frozen.is_none() && s.frozen_unusable.is_none());
    drop(db);
    assert_eq!(answers(&t.path()), want);
}

/// `simdb ingest --freeze`: a night's ingest ends with the frozen index
/// written again, every bucket read in place.
#[test]
fn ingest_freeze_writes_the_frozen_index_at_the_end() {
    let t = common::TempDb::new();
    let vocab = common::vocab();
    let mut rng = common::rng(82);
    let lines: String = (0..120)
        .map(|i| {
            let text = common::article(&mut rng, &vocab, 50).concat();
            format!(
                "{}\n",
                serde_json::json!({"id": format!("n{i}"), "text": text})
            )
        })
        .collect();
    let input = t.file("night.jsonl", lines);
    let o = common::simdb(&[&"init", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    for generation in 1..=2 {
        let o = common::simdb(&[&"ingest", &t.path(), &input, &"--freeze"]);
        assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
        assert!(common::stderr(&o).contains(&format!("generation {generation}")));
        let db = Db::options().read_only().open(t.path()).unwrap();
        let f = db.admin().stats().unwrap().frozen.unwrap();
        assert_eq!((f.generation, f.clean_buckets), (generation, f.buckets));
        assert!(db.admin().verify().unwrap().is_clean());
    }
}
