//! Band buckets in the store (format 7): a ranked query with a sketch
//! returns exactly what `bands::brute_force_banded` returns for its plan
//! and band probe, through the store, a batch of pending writes and the
//! sorted batch pass, after deletions and replacements that change which
//! document of a fingerprint is first; `verify` checks the band families,
//! `--repair` and `migrate` (from format 6) rebuild them.

use crate::common;

use std::collections::BTreeMap;

use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use simdb::db::{Probe, Query};
use simdb::fingerprint::{Analysis, Sketch, SKETCH_BYTES};
use simdb::index::bands::{band_values, brute_force_banded, BandProbe, BANDS};
use simdb::index::{Hit, PROBE_TOLERANCE};
use simdb::{Content, Db, Fingerprint, Recipe};

/// Stored documents: id -> (fingerprint, sketch).
type Entries = BTreeMap<String, (Fingerprint, Option<Sketch>)>;

fn flip(q: Fingerprint, bits: &[u32]) -> Fingerprint {
    Fingerprint(bits.iter().fold(q.0, |v, b| v ^ (1u64 << b)))
}

/// `d` distinct bit positions.
fn bits(rng: &mut ChaCha8Rng, d: usize) -> Vec<u32> {
    let mut all: Vec<u32> = (0..64).collect();
    for i in 0..d {
        let j = rng.random_range(i..64);
        all.swap(i, j);
    }
    all.truncate(d);
    all
}

/// A sketch sharing band `share` with `qs` (`BANDS`: none), the rest
/// random but differing from `qs` in every other band.
fn sketch_sharing(rng: &mut ChaCha8Rng, qs: &Sketch, share: usize) -> Sketch {
    let mut s = [0u8; SKETCH_BYTES];
    rng.fill_bytes(&mut s);
    for j in 0..BANDS {
        if j == share {
            s[2 * j] = qs.0[2 * j];
            s[2 * j + 1] = qs.0[2 * j + 1];
        } else if s[2 * j] == qs.0[2 * j] {
            s[2 * j] ^= 1;
        }
    }
    Sketch(s)
}

fn analysis(fp: Fingerprint, sketch: Option<Sketch>) -> Analysis {
    Analysis {
        fingerprint: fp,
        sketch,
        fine: None,
        terms: 50,
        distinct_terms: 40,
        top_terms: Vec::new(),
        weak_bits: Vec::new(),
        parts: Vec::new(),
    }
}

/// The oracle: brute force of the query's plan and band probe over
/// `entries`, a fingerprint in the bands of its first document by id.
fn oracle(entries: &Entries, q: &Query) -> Vec<(String, u32)> {
    let bands_of = |fp: Fingerprint| {
        entries
            .values()
            .find(|(f, _)| *f == fp)
            .and_then(|(_, s)| s.as_ref().map(band_values))
    };
    let probe = q.band_probe().expect("a ranked query with a sketch");
    assert_eq!(
        probe,
        BandProbe::new(q.sketch.as_ref().unwrap(), probe.max_distance)
    );
    brute_force_banded(
        entries.iter().map(|(i, (f, _))| (i.as_str(), *f)),
        bands_of,
        q.fingerprint,
        &q.plan(),
        &probe,
    )
    .into_iter()
    .map(|h| (h.id, h.distance))
    .collect()
}

fn ids(hits: Vec<Hit>) -> Vec<(String, u32)> {
    hits.into_iter().map(|h| (h.id, h.distance)).collect()
}

/// Documents around query `q` (sketch `qs`): unrelated ones, near ones at
/// 0 to 18 bits sharing a band or none, others with the same fingerprint
/// and another sketch (first or second by id) or no sketch.
fn plant(rng: &mut ChaCha8Rng, q: Fingerprint, qs: &Sketch, tag: &str) -> Entries {
    let mut e = Entries::new();
    for i in 0..40 {
        let share = rng.random_range(0..=BANDS);
        let s = sketch_sharing(rng, qs, share);
        e.insert(
            format!("{tag}r{i:03}"),
            (Fingerprint(rng.random()), Some(s)),
        );
    }
    for i in 0..50 {
        let d = rng.random_range(0..19);
        let fp = flip(q, &bits(rng, d));
        let share = rng.random_range(0..=BANDS);
        e.insert(
            format!("{tag}n{i:03}"),
            (fp, Some(sketch_sharing(rng, qs, share))),
        );
        match rng.random_range(0..6) {
            0 => {
                let s = sketch_sharing(rng, qs, BANDS);
                e.insert(format!("{tag}a{i:03}"), (fp, Some(s)));
            }
            1 => {
                let share = rng.random_range(0..BANDS);
                let s = sketch_sharing(rng, qs, share);
                e.insert(format!("{tag}z{i:03}"), (fp, Some(s)));
            }
            2 => {
                e.insert(format!("{tag}b{i:03}"), (fp, None));
            }
            _ => {}
        }
    }
    e
}

/// A random query fingerprint and sketch.
fn query_point(rng: &mut ChaCha8Rng) -> (Fingerprint, Sketch) {
    let q = Fingerprint(rng.random());
    let mut qs = [0u8; SKETCH_BYTES];
    rng.fill_bytes(&mut qs);
    (q, Sketch(qs))
}

fn query(q: Fingerprint, qs: Sketch, weak: Vec<u8>) -> Query {
    Query {
        sketch: Some(qs),
        min_similarity: 0.0,
        probe: Some(Probe {
            weak_bits: weak,
            budget: 32,
            bands: true,
        }),
        ..Query::new(q)
    }
}

fn put_all(db: &mut Db, entries: &Entries) {
    let mut w = db.writer().unwrap();
    for (id, (fp, s)) in entries {
        w.put(id, analysis(*fp, *s), &Content::Fingerprint(*fp), "t")
            .unwrap();
    }
    w.commit().unwrap();
}

#[test]
fn the_store_answers_as_brute_force_of_plan_and_bands() {
    let mut banded_hits = 0usize;
    for seed in 0..6u64 {
        let t = common::TempDb::new();
        let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
        let mut rng = common::rng(100 + seed);
        let (q, qs) = query_point(&mut rng);
        let weak: Vec<u8> = (0..64u8).filter(|_| rng.random_bool(0.3)).collect();
        let mut entries = plant(&mut rng, q, &qs, "");
        // Two batches: the second's documents of a fingerprint both before
        // and after the first's by id.
        let (first, second): (Entries, Entries) = entries
            .clone()
            .into_iter()
            .partition(|_| rng.random_bool(0.5));
        put_all(&mut db, &first);
        put_all(&mut db, &second);
        let check = |db: &Db, entries: &Entries, when: &str| {
            let qq = query(q, qs, weak.clone());
            let want = oracle(entries, &qq);
            let got = ids(db.search(&qq).unwrap());
            assert_eq!(got, want, "seed {seed} {when}");
            assert_eq!(
                ids(db
                    .find_many(std::slice::from_ref(&qq))
                    .unwrap()
                    .remove(0)
                    .hits),
                want,
                "seed {seed} {when}: batch pass"
            );
            // Without the bands: the plan alone.
            let mut plain = qq.clone();
            plain.probe.as_mut().unwrap().bands = false;
            assert!(plain.band_probe().is_none());
            let alone = simdb::index::brute_force_plan(
                entries.iter().map(|(i, (f, _))| (i.as_str(), *f)),
                q,
                &plain.plan(),
            );
            assert_eq!(db.search(&plain).unwrap().len(), alone.len());
            want.len() - alone.len()
        };
        banded_hits += check(&db, &entries, "written");
        // Deletions and replacements that change first documents.
        {
            let mut w = db.writer().unwrap();
            let victims: Vec<String> = entries
                .keys()
                .filter(|_| rng.random_bool(0.2))
                .cloned()
                .collect();
            for id in victims {
                if rng.random_bool(0.5) {
                    w.delete(&id).unwrap();
                    entries.remove(&id);
                } else {
                    let fp = entries[&id].0;
                    let share = rng.random_range(0..=BANDS);
                    let s = Some(sketch_sharing(&mut rng, &qs, share));
                    // Other content: a put of the same content is no change.
                    let content = Content::Text(format!("{id} again"));
                    w.put(&id, analysis(fp, s), &content, "t").unwrap();
                    entries.insert(id, (fp, s));
                }
            }
            w.commit().unwrap();
        }
        let rep = db.admin().verify().unwrap();
        assert!(rep.is_clean(), "seed {seed}: {:?}", rep.problems);
        banded_hits += check(&db, &entries, "after deletes and replacements");
        // A batch of pending writes (fresh fingerprints) is searched with
        // the store, the bands' nearest few chosen over both.
        let pending = plant(&mut rng, q, &qs, "p");
        let mut all = entries.clone();
        let mut w = db.writer().unwrap();
        for (id, (fp, s)) in &pending {
            if entries.values().any(|(f, _)| f == fp) {
                continue; // a stored fingerprint's first document is the store's
            }
            w.put(id, analysis(*fp, *s), &Content::Fingerprint(*fp), "t")
                .unwrap();
            all.insert(id.clone(), (*fp, *s));
        }
        let qq = query(q, qs, weak.clone());
        assert_eq!(
            ids(w.search(&qq).unwrap()),
            oracle(&all, &qq),
            "seed {seed}: store and batch"
        );
        w.commit().unwrap();
        assert_eq!(ids(db.search(&qq).unwrap()), oracle(&all, &qq));
        // Exact answers read no band.
        for k in [0, 3, PROBE_TOLERANCE + 4] {
            let want =
                simdb::index::brute_force(all.iter().map(|(i, (f, _))| (i.as_str(), *f)), q, k);
            assert_eq!(db.query(q, k, None).unwrap(), want);
        }
    }
    assert!(
        banded_hits > 20,
        "the bands found what the plan does not: {banded_hits}"
    );
}

/// Verify finds a band entry gone or moved; repair puts it back; a
/// format 6 store (no band families) is migrated with its bands built
/// from `refs`, and answers as a store written in format 7.
#[test]
fn verify_repair_and_migrate_keep_the_band_families() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut rng = common::rng(7);
    let (q, qs) = query_point(&mut rng);
    let entries = plant(&mut rng, q, &qs, "");
    put_all(&mut db, &entries);
    let qq = query(q, qs, vec![1, 2, 3, 17, 33, 49]);
    let want = oracle(&entries, &qq);
    assert_eq!(ids(db.search(&qq).unwrap()), want);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert!(rep.band_keys > 0);
    drop(db);
    // Take one entry out of a band bucket: verify names the fingerprint.
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("band3").unwrap();
        let (k, v) = raw
            .iterator_cf(cf, rocksdb::IteratorMode::Start)
            .next()
            .unwrap()
            .unwrap();
        // A head: whole entries (no segments in a store this small).
        assert!(v.len() >= 8);
        raw.put_cf(cf, &k, &v[8..]).unwrap();
    }
    let mut db = Db::options().open(t.path()).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(
        rep.problems.iter().any(|p| p.starts_with("band families:")),
        "{:?}",
        rep.problems
    );
    db.maintenance().repair().unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(ids(db.search(&qq).unwrap()), want);
    drop(db);
    // Back to format 6: no band families.
    {
        let mut raw = common::raw_open(&t.path());
        for j in 0..BANDS {
            raw.drop_cf(&format!("band{j}")).unwrap();
        }
        let meta = raw.cf_handle("meta").unwrap();
        raw.put_cf(meta, b"format_version", 6u32.to_be_bytes())
            .unwrap();
    }
    assert!(matches!(
        Db::options().open(t.path()).err().unwrap(),
        simdb::Error::NeedsMigration { found: 6, .. }
    ));
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains("migrated format 6 -> 14"),
        "{}",
        common::stdout(&o)
    );
    let db = Db::options().open(t.path()).unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(ids(db.search(&qq).unwrap()), want);
}

/// `simdb import` of the sketched binary form builds the band families as
/// the writer does: the imported store verifies clean and answers as the
/// written one (its records have the sketches).
#[test]
fn an_import_with_sketches_has_the_writers_bands() {
    use simdb::import::{write_binary_sketched_record, BINARY_SKETCHED_MAGIC};
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let mut rng = common::rng(21);
    let (q, qs) = query_point(&mut rng);
    let mut entries = plant(&mut rng, q, &qs, "");
    // Documents without a sketch cannot be in the binary form's records:
    // give them one sharing no band.
    for (_, s) in entries.values_mut() {
        if s.is_none() {
            *s = Some(sketch_sharing(&mut rng, &qs, BANDS));
        }
    }
    put_all(&mut db, &entries);
    let qq = query(q, qs, vec![1, 2, 3, 17, 33, 49]);
    let want = oracle(&entries, &qq);
    assert_eq!(ids(db.search(&qq).unwrap()), want);
    drop(db);
    let input = t.path().with_extension("sketched.bin");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
    std::io::Write::write_all(&mut f, BINARY_SKETCHED_MAGIC).unwrap();
    // Reversed: the import sorts.
    for (id, (fp, s)) in entries.iter().rev() {
        write_binary_sketched_record(&mut f, id, *fp, s.as_ref().unwrap()).unwrap();
    }
    drop(f);
    let imported = t.path().with_extension("imported");
    let o = common::simdb(&[&"import", &imported, &input]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let db = Db::options().open(&imported).unwrap();
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:?}", rep.problems);
    assert!(rep.band_keys > 0);
    let got: Vec<(String, u32)> = ids(db.search(&qq).unwrap());
    assert_eq!(got, want);
    assert!(db.get("n000").unwrap().unwrap().sketch.is_some());
}

/// Reposts wrapped in other text (30%) or truncated (80%), whose
/// fingerprints moved beyond the ranked plan: ingest finds them through
/// the band buckets and clusters them with their originals, a text query
/// finds them, and the clusters `verify --repair` rebuilds are ingest's.
#[test]
fn reposts_found_by_the_bands_cluster_as_ingest_and_rebuild_agree() {
    use simdb::ingest::{self, Doc};
    let vocab = common::vocab();
    let mut rng = common::rng(33);
    let doc = |id: String, text: String| Doc {
        id,
        content: Content::Text(text),
        source: "t".into(),
        line: None,
        priority: None,
        dated: None,
    };
    let mut docs = Vec::new();
    let mut reposts = Vec::new();
    for i in 0..40 {
        let words = common::article(&mut rng, &vocab, 300);
        docs.push(doc(format!("o{i:02}"), words.concat()));
        let text = if i % 2 == 0 {
            // Wrapped: a header and a footer of other text, 30% of it.
            let head = common::article(&mut rng, &vocab, 45).concat();
            let foot = common::article(&mut rng, &vocab, 45).concat();
            format!("{head}{}{foot}", words.concat())
        } else {
            // The first 80%.
            words[..240].concat()
        };
        reposts.push((format!("r{i:02}"), text));
    }
    for (id, text) in &reposts {
        docs.push(doc(id.clone(), text.clone()));
    }
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let f = db.fingerprinter().clone();
    let opts = simdb::db::write::WritePolicy::default();
    let mut found = 0;
    for chunk in docs.chunks(25) {
        let mut w = db.writer().unwrap();
        for d in chunk {
            let a = d.content.analyze(&f).unwrap();
            let dup = ingest::place(&mut w, d, a, &opts).unwrap().1;
            if d.id.starts_with('r') && dup.hits.iter().any(|h| h.id[1..] == d.id[1..]) {
                found += 1;
            }
        }
        w.commit().unwrap();
    }
    assert!(found >= 32, "ingest found {found} of 40 reposts");
    let queried = |bands: bool| {
        reposts
            .iter()
            .filter(|(id, text)| {
                let mut q = db.text_query(text).unwrap();
                q.probe.as_mut().unwrap().bands = bands;
                let hits = db.search(&q).unwrap();
                hits.iter().any(|h| h.id[1..] == id[1..] && h.id != *id)
            })
            .count()
    };
    let (with, without) = (queried(true), queried(false));
    assert!(
        with >= 32 && with >= without + 8,
        "a query found {with} of 40, {without} without the bands"
    );
    let before = common::cluster_shapes(&db);
    assert!(before.len() >= 32, "{} clusters", before.len());
    db.maintenance().repair().unwrap();
    assert_eq!(common::cluster_shapes(&db), before);
    assert!(db.admin().verify().unwrap().is_clean());
}

/// Review 2026-11-b, finding 9: a text of one shingle (fewer than five
/// letters and digits) had a sketch whose 128 bins were equal, so every
/// band value was uniform and every such text was in one of the same four
/// buckets of each band family; a probe of them scanned them all for each
/// short text written or asked. Stores whose sketch copies a donor bin's
/// value (made before the rehashed fill) still give such sketches: uniform
/// values are not probed, so such a query reads exactly the buckets of its
/// plan and finds what it found. New stores rehash the filled bins: a
/// short text's bands are its own, and their buckets hold its copies.
#[test]
fn regression_review_b_9_one_shingle_texts_read_no_band_bucket() {
    use simdb::fingerprint::{Fill, SketchKind};
    use simdb::index::bands::is_uniform;
    let texts: Vec<String> = (0..4096).map(|i| format!("w{i:03x}")).collect();
    for fill in [Fill::Copy, Fill::Rehash] {
        let t = common::TempDb::new();
        let recipe = Recipe::default().with_sketch(SketchKind::Chars(4, fill));
        let mut db = Db::options().create(t.path(), recipe).unwrap();
        let f = db.fingerprinter().clone();
        let mut w = db.writer().unwrap();
        // How many texts hold each (band, value).
        let mut held: BTreeMap<(usize, u16), usize> = BTreeMap::new();
        for (i, t) in texts.iter().enumerate() {
            let c = Content::Text(t.clone());
            let a = c.analyze(&f).unwrap();
            let values = band_values(&a.sketch.unwrap());
            if fill == Fill::Copy {
                assert!(values.iter().all(|v| is_uniform(*v)), "{t}");
            }
            for (j, v) in values.into_iter().enumerate() {
                *held.entry((j, v)).or_default() += 1;
            }
            w.put(&format!("s{i:04}"), a, &c, "t").unwrap();
        }
        w.commit().unwrap();
        let fullest = held.values().max().copied().unwrap_or(0);
        match fill {
            Fill::Copy => assert!(fullest >= 4096 / 4, "{fullest}"),
            Fill::Rehash => assert!(fullest <= 8, "a band bucket of {fullest} short texts"),
        }
        let q = db.text_query("wfff").unwrap();
        let probe = q.band_probe().expect("a ranked query with a sketch");
        let no_bands = Query {
            probe: q.probe.clone().map(|p| Probe { bands: false, ..p }),
            ..q.clone()
        };
        let before = db.admin().reads();
        let with = db.search(&q).unwrap();
        let mid = db.admin().reads();
        let without = db.search(&no_bands).unwrap();
        let after = db.admin().reads();
        assert_eq!(with, without, "{fill:?}");
        assert_eq!(with.first().map(|h| h.distance), Some(0), "{with:?}");
        match fill {
            Fill::Copy => {
                assert_eq!(probe.buckets(), 0);
                assert_eq!(mid.buckets - before.buckets, after.buckets - mid.buckets);
            }
            Fill::Rehash => {
                // The band buckets name the text's own copy and a few
                // others at most, not the 4,096.
                assert!(probe.buckets() >= BANDS - 1, "{}", probe.buckets());
                let extra = (mid.refs - before.refs).saturating_sub(after.refs - mid.refs);
                assert!(extra <= 16, "the bands added {extra} candidate documents");
            }
        }
    }
    // A probe of a sketch of many shingles reads its 16 buckets (bar the
    // rare uniform band).
    let long = Sketch([0x1b; SKETCH_BYTES]);
    assert_eq!(BandProbe::new(&long, 14).buckets(), BANDS);
    assert!((0..=u16::MAX)
        .filter(|v| is_uniform(*v))
        .eq([0, 0x5555, 0xaaaa, 0xffff]));
}

/// A rebuild sees the store as ingest saw it: a document found by a band
/// bucket alone (13 bits away, its sketch similar) keeps that earlier
/// near-copy in `earlier_copies` and in the rebuilt clusters, even when
/// twenty documents written after it are nearer band candidates, which
/// would otherwise take the nearest-16 band-only places (found on the
/// corpora: one xwlb article in 53,722 documents).
#[test]
fn a_rebuild_chooses_band_candidates_among_earlier_documents() {
    use simdb::db::write::{place, Doc, WritePolicy};
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let analysis = |fp: u64, sketch: [u8; 32]| simdb::fingerprint::Analysis {
        fingerprint: Fingerprint(fp),
        sketch: Some(simdb::Sketch(sketch)),
        fine: None,
        terms: 200,
        distinct_terms: 150,
        top_terms: Vec::new(),
        // A ranked plan whose weak bits are none of those B differs in.
        weak_bits: (0..16).map(|i| i * 4).collect(),
        parts: Vec::new(),
    };
    let doc = |id: &str| Doc {
        id: id.to_string(),
        content: Content::Text(format!("text of {id}")),
        source: "t".into(),
        line: None,
        priority: None,
        dated: None,
    };
    let mut s = [0u8; 32];
    for (i, b) in s.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) ^ 0x5a;
    }
    // B: 13 bits from A (one bit in each of 13 nibbles), its sketch A's
    // with one byte changed.
    let b_fp: u64 = (0..13).map(|i| 1u64 << (i * 4 + 1)).sum();
    let mut s_b = s;
    s_b[31] ^= 0xff;
    let opts = WritePolicy::default();
    {
        let mut w = db.writer().unwrap();
        place(&mut w, &doc("a"), analysis(0, s), &opts).unwrap();
        w.commit().unwrap();
        let (_, dups) = place(&mut w, &doc("b"), analysis(b_fp, s_b), &opts).unwrap();
        assert_eq!(dups.hits.first().map(|h| h.id.as_str()), Some("a"));
        w.commit().unwrap();
        // Later: twenty fingerprints 5 to 8 bits from B (beyond the
        // plan's reach) with B's sketch, so in B's band buckets, nearer
        // than A.
        for i in 0..20u64 {
            let flip: u64 = (0..5 + i % 4)
                .map(|j| 1u64 << ((j * 7 + i) % 64))
                .fold(0, |x, y| x ^ y);
            place(
                &mut w,
                &doc(&format!("c{i:02}")),
                analysis(b_fp ^ flip ^ (i << 58), s_b),
                &opts,
            )
            .unwrap();
        }
        w.commit().unwrap();
    }
    let ingest = db.clusters().of("a").unwrap().unwrap();
    assert!(ingest.members.iter().any(|m| m.id == "b"), "{ingest:?}");
    let ord_b = db.get("b").unwrap().unwrap().ord;
    let mut found = Vec::new();
    db.admin()
        .earlier_copies(ord_b..ord_b + 1, |_, _, hits| {
            found = hits.into_iter().map(|h| h.id).collect();
            Ok(())
        })
        .unwrap();
    assert_eq!(found, vec!["a".to_string()]);
    let before: Vec<_> = {
        let mut v = Vec::new();
        db.clusters()
            .each(2, |c| {
                v.push((c.representative.clone(), c.size));
                Ok(())
            })
            .unwrap();
        v
    };
    db.maintenance()
        .set_keep_policy(simdb::db::KeepPolicy::First)
        .unwrap();
    let mut after = Vec::new();
    db.clusters()
        .each(2, |c| {
            after.push((c.representative.clone(), c.size));
            Ok(())
        })
        .unwrap();
    assert_eq!(after, before);
}
