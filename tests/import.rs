//! `import` (sorted SST bulk load) gives the same store as `ingest` of the
//! same fingerprints, spills its sorts to disk, and is all-or-nothing.

use crate::common;

use rand::Rng;
use simdb::import::{self, write_binary_record, BINARY_MAGIC};
use simdb::ingest::{self, Input};
use simdb::{Db, Error, Fingerprint, Recipe};

/// Fingerprints with planted neighbours, shared fingerprints and ids given
/// twice (the later one wins).
fn records(n: usize) -> Vec<(String, Fingerprint)> {
    let mut rng = common::rng(11);
    let mut v: Vec<(String, Fingerprint)> = Vec::new();
    for i in 0..n {
        let fp = match i % 10 {
            // Same fingerprint as an earlier record, under another id.
            3 if i > 10 => v[i - 3].1,
            // A neighbour at distance 1..=3 of an earlier record.
            5 if i > 10 => {
                let mut f = v[i - 5].1 .0;
                for _ in 0..rng.random_range(1..=3) {
                    f ^= 1 << rng.random_range(0..64);
                }
                Fingerprint(f)
            }
            _ => Fingerprint(rng.random()),
        };
        // Every 17th record reuses the id of an earlier one.
        let id = if i % 17 == 16 {
            format!("doc-{}", i - 9)
        } else {
            format!("doc-{i}")
        };
        v.push((id, fp));
    }
    v
}

fn jsonl(recs: &[(String, Fingerprint)]) -> String {
    recs.iter()
        .map(|(id, fp)| format!("{{\"id\":\"{id}\",\"fingerprint\":\"{fp}\"}}\n"))
        .collect()
}

type Row = (String, Fingerprint, u64, u64, String);

fn rows(db: &Db) -> Vec<Row> {
    let mut out = Vec::new();
    db.admin()
        .for_each(|id, r| {
            out.push((
                id.to_string(),
                r.fingerprint,
                r.content_hash,
                r.length,
                r.source,
            ));
            Ok(())
        })
        .unwrap();
    out
}

#[test]
fn import_matches_ingest_and_spills() {
    let t = common::TempDb::new();
    let recs = records(30_000);
    let input = t.file("fps.jsonl", jsonl(&recs));

    let a_path = t.dir.path().join("ingested");
    let mut a = Db::options().create(&a_path, Recipe::default()).unwrap();
    let s = ingest::run(&mut a, &[Input::guess(&input)], &Default::default(), |_| {}).unwrap();
    assert_eq!(s.bad_lines, 0);

    let b_path = t.dir.path().join("imported");
    let opts = import::Options {
        memory_bytes: 1 << 16, // forces many spilled runs
        sst_file_bytes: 256 << 10,
        ..Default::default()
    };
    let sum = import::run(&b_path, std::slice::from_ref(&input), &opts, |_| {}).unwrap();
    assert_eq!(sum.records, 30_000);
    assert!(
        sum.replaced > 1000 && sum.shared_fingerprints > 1000,
        "{sum:?}"
    );
    let b = Db::options().open(&b_path).unwrap();
    assert_eq!(b.len().unwrap(), sum.documents);
    assert_eq!(a.len().unwrap(), sum.documents);
    // The frozen index written beside the posting families: verify checks
    // each of its buckets against RocksDB's.
    let frozen = b.admin().stats().unwrap().frozen.expect("import freezes");
    assert_eq!(
        (frozen.generation, frozen.clean_buckets),
        (1, frozen.buckets)
    );
    let rep = b.admin().verify().unwrap();
    assert!(
        rep.is_clean(),
        "{:#?}",
        &rep.problems[..rep.problems.len().min(5)]
    );
    assert_eq!(rows(&a), rows(&b));
    for (_, fp) in recs.iter().step_by(37) {
        for k in [0, 3] {
            let ids = |db: &Db| -> Vec<(String, u32)> {
                db.query(*fp, k, None)
                    .unwrap()
                    .into_iter()
                    .map(|h| (h.id, h.distance))
                    .collect()
            };
            assert_eq!(ids(&a), ids(&b), "query {fp} k={k}");
        }
    }
    assert!(!import::staging_dir(&b_path).exists());

    // The binary form gives the same store.
    let mut bin = BINARY_MAGIC.to_vec();
    for (id, fp) in &recs {
        write_binary_record(&mut bin, id, *fp).unwrap();
    }
    let bin_path = t.file("fps.bin", bin);
    let c_path = t.dir.path().join("binary");
    import::run(
        &c_path,
        std::slice::from_ref(&bin_path),
        &Default::default(),
        |_| {},
    )
    .unwrap();
    let c = Db::options().open(&c_path).unwrap();
    let strip =
        |r: Vec<Row>| -> Vec<(String, Fingerprint)> { r.into_iter().map(|r| (r.0, r.1)).collect() };
    assert_eq!(strip(rows(&b)), strip(rows(&c)));
    assert!(c.admin().verify().unwrap().is_clean());

    // Importing over an existing store is refused.
    let err = import::run(&c_path, &[bin_path], &Default::default(), |_| {}).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
}

#[test]
fn a_bad_record_leaves_nothing_behind() {
    let t = common::TempDb::new();
    let mut text = jsonl(&records(500));
    text += "{\"id\":\"x\",\"fingerprint\":\"12345\"}\n";
    let input = t.file("bad.jsonl", text);
    let target = t.dir.path().join("store");
    let err = import::run(&target, &[input], &Default::default(), |_| {}).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Input(_)), "{msg}");
    assert!(
        msg.contains("bad.jsonl:501") && msg.contains("16 hex digits"),
        "{msg}"
    );
    assert!(!target.exists());
    assert!(!import::staging_dir(&target).exists());

    // A truncated binary file names the record.
    let mut bin = BINARY_MAGIC.to_vec();
    write_binary_record(&mut bin, "a", Fingerprint(1)).unwrap();
    write_binary_record(&mut bin, "b", Fingerprint(2)).unwrap();
    bin.truncate(bin.len() - 1);
    let input = t.file("cut.bin", bin);
    let err = import::run(&target, &[input], &Default::default(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("cut.bin:2"), "{err}");
    assert!(!target.exists());

    // A staging directory left by a killed import is cleared and reused.
    let staging = import::staging_dir(&target);
    std::fs::create_dir_all(staging.join("tmp")).unwrap();
    std::fs::write(staging.join("SIMDB-STAGING"), "").unwrap();
    let ok = t.file("ok.jsonl", jsonl(&records(100)));
    import::run(&target, &[ok], &Default::default(), |_| {}).unwrap();
    assert!(Db::options()
        .open(&target)
        .unwrap()
        .admin()
        .verify()
        .unwrap()
        .is_clean());
    assert!(!staging.exists());
}
