//! Part keys in the store (format 10): a ranked query with a sketch and
//! parts returns exactly what `parts::brute_force_parted` returns for its
//! plan, band probe and part probe, through the store, a batch of pending
//! writes and the sorted batch pass, after deletions and replacements that
//! change which document of a fingerprint is first; `verify` checks the
//! `parts` family, `--repair` rebuilds it, a format 9 store migrates with
//! none; and through text, the parts find passages from the middle that
//! the blocks and bands miss.

use crate::common;

use std::collections::BTreeMap;

use rand::seq::IndexedRandom;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use simdb::db::{Probe, Query};
use simdb::fingerprint::parts::{PARTS, QUERY_PARTS};
use simdb::fingerprint::{Analysis, Sketch, SKETCH_BYTES};
use simdb::index::bands::band_values;
use simdb::index::parts::{brute_force_parted, PartProbe};
use simdb::index::Hit;
use simdb::{Content, Db, Fingerprint, Recipe};

/// A stored document: fingerprint, sketch, parts.
type Doc = (Fingerprint, Option<Sketch>, Vec<u64>);
type Entries = BTreeMap<String, Doc>;
/// A raw RocksDB entry.
type Entry = (Box<[u8]>, Box<[u8]>);

/// Part hashes are drawn from 1..=PART_UNIVERSE, so that buckets hold a
/// few fingerprints, the cap's worth and more.
const PART_UNIVERSE: u64 = 24;

fn analysis(d: &Doc) -> Analysis {
    Analysis {
        fingerprint: d.0,
        sketch: d.1,
        fine: None,
        terms: 50,
        distinct_terms: 40,
        top_terms: Vec::new(),
        weak_bits: Vec::new(),
        parts: d.2.clone(),
    }
}

fn random_sketch(rng: &mut ChaCha8Rng) -> Sketch {
    let mut s = [0u8; SKETCH_BYTES];
    rng.fill_bytes(&mut s);
    Sketch(s)
}

/// Up to `n` distinct part hashes, ascending.
fn random_parts(rng: &mut ChaCha8Rng, n: usize) -> Vec<u64> {
    let mut p: Vec<u64> = (0..n)
        .map(|_| rng.random_range(1..=PART_UNIVERSE))
        .collect();
    p.sort_unstable();
    p.dedup();
    p
}

/// Documents at every distance from `q`: most with a sketch and parts,
/// some sharing a fingerprint (first or second by id), some without a
/// sketch or without parts.
fn plant(rng: &mut ChaCha8Rng, q: Fingerprint, tag: &str) -> Entries {
    let mut e = Entries::new();
    for i in 0..90 {
        let fp = if rng.random_bool(0.3) {
            let d = rng.random_range(0..20);
            let mut v = q.0;
            for _ in 0..d {
                v ^= 1 << rng.random_range(0..64);
            }
            Fingerprint(v)
        } else {
            Fingerprint(rng.random())
        };
        // A record keeps up to 12; the first 6 are indexed.
        let parts = match rng.random_range(0..5) {
            0 => Vec::new(),
            _ => random_parts(rng, 10),
        };
        let sketch = (!rng.random_bool(0.1)).then(|| random_sketch(rng));
        e.insert(format!("{tag}d{i:03}"), (fp, sketch, parts));
        if rng.random_bool(0.2) {
            let other = (fp, Some(random_sketch(rng)), random_parts(rng, 6));
            let id = match rng.random_bool(0.5) {
                true => format!("{tag}a{i:03}"),
                false => format!("{tag}z{i:03}"),
            };
            e.insert(id, other);
        }
    }
    e
}

/// The parts a fingerprint's entry holds: its first document's (by id)
/// first `PARTS`, and only beside a sketch (as the store indexes them).
fn parts_of(entries: &Entries, fp: Fingerprint) -> Vec<u64> {
    entries
        .values()
        .find(|d| d.0 == fp)
        .filter(|d| d.1.is_some())
        .map(|d| d.2.iter().take(PARTS).copied().collect())
        .unwrap_or_default()
}

fn oracle(entries: &Entries, q: &Query) -> Vec<(String, u32)> {
    let bands_of = |fp: Fingerprint| {
        entries
            .values()
            .find(|d| d.0 == fp)
            .and_then(|d| d.1.as_ref().map(band_values))
    };
    let band = q.band_probe().expect("a ranked query with a sketch");
    let part = q.part_probe().expect("a query with parts");
    assert_eq!(part, PartProbe::new(q.parts.clone()));
    brute_force_parted(
        entries.iter().map(|(i, d)| (i.as_str(), d.0)),
        bands_of,
        |fp| parts_of(entries, fp),
        q.fingerprint,
        &q.plan(),
        Some(&band),
        &part,
    )
    .into_iter()
    .map(|h| (h.id, h.distance))
    .collect()
}

fn ids(hits: Vec<Hit>) -> Vec<(String, u32)> {
    hits.into_iter().map(|h| (h.id, h.distance)).collect()
}

fn query(q: Fingerprint, qs: Sketch, weak: Vec<u8>, parts: Vec<u64>) -> Query {
    Query {
        sketch: Some(qs),
        min_similarity: 0.0,
        probe: Some(Probe {
            weak_bits: weak,
            budget: 32,
            bands: true,
        }),
        parts,
        ..Query::new(q)
    }
}

fn put_all(db: &mut Db, entries: &Entries) {
    let mut w = db.writer().unwrap();
    for (id, d) in entries {
        w.put(id, analysis(d), &Content::Fingerprint(d.0), "t")
            .unwrap();
    }
    w.commit().unwrap();
}

/// How many hits the parts alone gave (the oracle without its part probe
/// has them not).
fn part_only(entries: &Entries, q: &Query, want: &[(String, u32)]) -> usize {
    let band = q.band_probe().unwrap();
    let without = simdb::index::bands::brute_force_banded(
        entries.iter().map(|(i, d)| (i.as_str(), d.0)),
        |fp| {
            entries
                .values()
                .find(|d| d.0 == fp)
                .and_then(|d| d.1.as_ref().map(band_values))
        },
        q.fingerprint,
        &q.plan(),
        &band,
    );
    want.len() - without.len()
}

#[test]
fn the_store_answers_as_brute_force_of_plan_bands_and_parts() {
    let mut parted_hits = 0usize;
    for seed in 0..6u64 {
        let t = common::TempDb::new();
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        let mut rng = common::rng(300 + seed);
        let q = Fingerprint(rng.random());
        let qs = random_sketch(&mut rng);
        let weak: Vec<u8> = (0..64u8).filter(|_| rng.random_bool(0.3)).collect();
        let qparts = random_parts(&mut rng, QUERY_PARTS);
        let mut entries = plant(&mut rng, q, "");
        let (first, second): (Entries, Entries) = entries
            .clone()
            .into_iter()
            .partition(|_| rng.random_bool(0.5));
        put_all(&mut db, &first);
        put_all(&mut db, &second);
        let qq = query(q, qs, weak.clone(), qparts.clone());
        let check = |db: &Db, entries: &Entries, when: &str| {
            let want = oracle(entries, &qq);
            assert_eq!(ids(db.search(&qq).unwrap()), want, "seed {seed} {when}");
            assert_eq!(
                ids(db
                    .find_many(std::slice::from_ref(&qq))
                    .unwrap()
                    .remove(0)
                    .hits),
                want,
                "seed {seed} {when}: batch pass"
            );
            part_only(entries, &qq, &want)
        };
        parted_hits += check(&db, &entries, "written");
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "seed {seed}: {:?}", rep.problems);
        let keys: u64 = {
            let mut fps: Vec<Fingerprint> = entries.values().map(|d| d.0).collect();
            fps.sort_unstable();
            fps.dedup();
            fps.iter()
                .map(|f| parts_of(&entries, *f).len() as u64)
                .sum()
        };
        assert_eq!(rep.part_keys, keys, "seed {seed}");
        // Deletions and replacements that change first documents.
        {
            let mut w = db.writer().unwrap();
            let victims: Vec<String> = entries
                .keys()
                .filter(|_| rng.random_bool(0.25))
                .cloned()
                .collect();
            for id in victims {
                if rng.random_bool(0.5) {
                    w.delete(&id).unwrap();
                    entries.remove(&id);
                } else {
                    let d = (
                        entries[&id].0,
                        Some(random_sketch(&mut rng)),
                        random_parts(&mut rng, 6),
                    );
                    let content = Content::Text(format!("{id} again"));
                    w.put(&id, analysis(&d), &content, "t").unwrap();
                    entries.insert(id, d);
                }
            }
            w.commit().unwrap();
        }
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "seed {seed}: {:?}", rep.problems);
        parted_hits += check(&db, &entries, "after deletes and replacements");
        // A batch of pending writes is searched with the store, a part's
        // bucket counted over both.
        let pending = plant(&mut rng, q, "p");
        let mut all = entries.clone();
        let mut w = db.writer().unwrap();
        for (id, d) in &pending {
            if entries.values().any(|e| e.0 == d.0) {
                continue; // a stored fingerprint's first document is the store's
            }
            w.put(id, analysis(d), &Content::Fingerprint(d.0), "t")
                .unwrap();
            all.insert(id.clone(), d.clone());
        }
        assert_eq!(
            ids(w.search(&qq).unwrap()),
            oracle(&all, &qq),
            "seed {seed}: store and batch"
        );
        w.commit().unwrap();
        assert_eq!(ids(db.search(&qq).unwrap()), oracle(&all, &qq));
        // Repair rebuilds the part keys from the records.
        db.maintenance().repair().unwrap();
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "seed {seed}: {:?}", rep.problems);
        assert_eq!(ids(db.search(&qq).unwrap()), oracle(&all, &qq));
        // Exact answers read no part.
        for k in [0, 3, 9] {
            let want = simdb::index::brute_force(all.iter().map(|(i, d)| (i.as_str(), d.0)), q, k);
            assert_eq!(db.query(q, k, None).unwrap(), want);
        }
    }
    assert!(
        parted_hits > 20,
        "the parts found what the plan and bands do not: {parted_hits}"
    );
}

/// Verify finds a part key gone or stray; repair puts it right; a format
/// 9 store (no `parts` family, no parts in its records) migrates to one
/// whose old documents have none and whose new ones have theirs.
#[test]
fn verify_repair_and_migrate_keep_the_parts_family() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut rng = common::rng(9);
    let q = Fingerprint(rng.random());
    let qs = random_sketch(&mut rng);
    let qparts = random_parts(&mut rng, QUERY_PARTS);
    let entries = plant(&mut rng, q, "");
    put_all(&mut db, &entries);
    let qq = query(q, qs, vec![1, 2, 3, 17, 33, 49], qparts.clone());
    let want = oracle(&entries, &qq);
    assert_eq!(ids(db.search(&qq).unwrap()), want);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert!(rep.part_keys > 0);
    drop(db);
    // One key gone, one key added for a fingerprint without parts.
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("parts").unwrap();
        let (k, _) = raw
            .iterator_cf(cf, rocksdb::IteratorMode::Start)
            .next()
            .unwrap()
            .unwrap();
        raw.delete_cf(cf, &k).unwrap();
        let mut stray = [0u8; 16];
        stray[..8].copy_from_slice(&5u64.to_be_bytes());
        stray[8..].copy_from_slice(&0x0123_4567_89ab_cdefu64.to_be_bytes());
        raw.put_cf(cf, stray, []).unwrap();
    }
    let mut db = Db::options().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    let named = |what: &str| {
        rep.problems
            .iter()
            .any(|p| p.starts_with("parts:") && p.contains(what))
    };
    assert!(
        named("not the parts of its first document"),
        "{:?}",
        rep.problems
    );
    assert!(named("0123456789abcdef"), "{:?}", rep.problems);
    db.maintenance().repair().unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(ids(db.search(&qq).unwrap()), want);
    drop(db);
    // Back to format 9: version 5 records, `refs` values of the sketch
    // alone, no `parts` family.
    {
        let mut raw = common::raw_open(&t.path());
        raw.drop_cf("parts").unwrap();
        let refs = raw.cf_handle("refs").unwrap();
        let all: Vec<Entry> = raw
            .iterator_cf(refs, rocksdb::IteratorMode::Start)
            .map(Result::unwrap)
            .collect();
        for (k, v) in all {
            raw.put_cf(refs, &k, &v[..v.len().min(SKETCH_BYTES)])
                .unwrap();
        }
        let docs = raw.cf_handle("docs").unwrap();
        let all: Vec<Entry> = raw
            .iterator_cf(docs, rocksdb::IteratorMode::Start)
            .map(Result::unwrap)
            .collect();
        for (k, v) in all {
            let rec = simdb::codec::decode_record(&v).unwrap();
            // Version 7 = version 5 ‖ parts (u64 length, then the hashes)
            // ‖ kept (a tag byte: none).
            let fine = 1 + 96 * usize::from(rec.fine.is_some());
            let payload = &v[5..v.len() - fine - 1 - 8 - 8 * rec.parts.len()];
            let mut old = vec![5u8];
            old.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
            old.extend_from_slice(payload);
            let back = simdb::codec::decode_record(&old).unwrap();
            assert_eq!(back.parts, Vec::<u64>::new());
            assert_eq!(back.fingerprint, rec.fingerprint);
            raw.put_cf(docs, &k, old).unwrap();
        }
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"format_version", 9u32.to_be_bytes())
            .unwrap();
    }
    assert!(matches!(
        Db::options().open(t.path()).err().unwrap(),
        simdb::Error::NeedsMigration { found: 9, .. }
    ));
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("migrated format 9 -> 14"),
        "{}",
        common::stdout(&o)
    );
    let mut db = Db::options().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert_eq!(rep.part_keys, 0);
    // Old documents have no parts: the answer is the plan's and bands'.
    let none: Entries = entries
        .iter()
        .map(|(i, d)| (i.clone(), (d.0, d.1, Vec::new())))
        .collect();
    assert_eq!(ids(db.search(&qq).unwrap()), oracle(&none, &qq));
    // New ones have theirs.
    let mut added = none.clone();
    let new = plant(&mut rng, q, "n");
    let mut fresh = Entries::new();
    for (id, d) in new {
        if !added.values().any(|e| e.0 == d.0) {
            fresh.insert(id.clone(), d.clone());
            added.insert(id, d);
        }
    }
    put_all(&mut db, &fresh);
    assert_eq!(ids(db.search(&qq).unwrap()), oracle(&added, &qq));
    assert!(db.admin().verify().unwrap().is_clean());
}

/// A passage from the middle (40-60% of a long Chinese text): its
/// fingerprint and bands have moved, the parts find it; the default
/// query and ingest's duplicate check confirm it by containment.
#[test]
fn the_parts_find_passages_from_the_middle() {
    let vocab = common::vocab();
    let mut rng = common::rng(41);
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut sources = Vec::new();
    for i in 0..40 {
        let words = common::article(&mut rng, &vocab, 300);
        let text = words.concat();
        db.put(&format!("s{i:02}"), Content::Text(text.clone()))
            .unwrap();
        sources.push(words);
    }
    // Unrelated documents around them.
    for i in 0..200 {
        let words = common::article(&mut rng, &vocab, 300);
        db.put(&format!("u{i:03}"), Content::Text(words.concat()))
            .unwrap();
    }
    let (mut with, mut without) = (0, 0);
    for (i, words) in sources.iter().enumerate() {
        let share = *[0.55, 0.6, 0.65].choose(&mut rng).unwrap();
        let n = (words.len() as f64 * share) as usize;
        let start = rng.random_range(words.len() / 5..words.len() - n);
        let excerpt = words[start..start + n].concat();
        let q = db.text_query(&excerpt).unwrap();
        assert!(!q.parts.is_empty());
        let want = format!("s{i:02}");
        if db.search(&q).unwrap().iter().any(|h| h.id == want) {
            with += 1;
        }
        let bare = Query {
            parts: Vec::new(),
            ..q
        };
        if db.search(&bare).unwrap().iter().any(|h| h.id == want) {
            without += 1;
        }
    }
    // (Seed 41: 37 with, 13 without; a 55% passage whose estimated
    // similarity falls under the floor, 0.5, is not confirmed.)
    assert!(
        with >= 35,
        "found with the parts: {with} of 40 ({without} without)"
    );
    assert!(
        without + 15 <= with,
        "the parts found what the rest does not: {without} without, {with} with"
    );
}

/// Ingested, pages around a text join its cluster through the parts (the
/// page's own parts push the text's past its 6 smallest); a rebuild of the clusters from the records (`verify --repair`,
/// whose queries are the records' 12 parts, as ingest's were the texts')
/// gives the clusters ingest gave.
#[test]
fn a_rebuild_gives_the_clusters_ingest_gave() {
    let vocab = common::vocab();
    let mut rng = common::rng(42);
    let t = common::TempDb::new();
    let mut lines = String::new();
    let mut line = |id: String, text: String| {
        lines.push_str(&format!(
            "{}\n",
            serde_json::json!({"id": id, "text": text})
        ));
    };
    for i in 0..60 {
        let words = common::article(&mut rng, &vocab, 300);
        line(format!("s{i:02}"), words.concat());
        // A page around it, written after it: other text of 40-70% of
        // its length, some before and the rest after.
        let around = common::article(&mut rng, &vocab, 300 * [40, 50, 60, 70][i % 4] / 100);
        let cut = rng.random_range(0..around.len());
        let page = [&around[..cut], &words[..], &around[cut..]].concat();
        line(format!("t{i:02}"), page.concat());
    }
    for i in 0..100 {
        line(
            format!("u{i:03}"),
            common::article(&mut rng, &vocab, 200).concat(),
        );
    }
    let input = t.file("docs.jsonl", lines);
    let db = t.path().join("s.db");
    let o = common::simdb(&[&"init", &db]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let o = common::simdb(&[&"ingest", &db, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let ingested = common::cluster_shapes(&Db::options().read_only().open(&db).unwrap());
    assert!(
        ingested.len() >= 50,
        "{} clusters: {ingested:?}",
        ingested.len()
    );
    let o = common::simdb(&[&"verify", &db, &"--repair"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let rebuilt = common::cluster_shapes(&Db::options().read_only().open(&db).unwrap());
    assert_eq!(rebuilt, ingested);
}
