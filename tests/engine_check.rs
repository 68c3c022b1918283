//! The store's duplicate check on an engine's worker (issue 59): a
//! document checked against the earlier documents alone, gathered by the
//! keys of the index (a join), finds what ingest found for it, where the
//! check reaches its bounds (16 confirmed, 256 looked at) too.

use crate::common;

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::Rng;
use simdb::db::engine::{fingerprint_entries, key_matches, Checker, IndexEntry, JoinKey, KeyProbe};
use simdb::db::write::{place, Doc, Duplicates, WritePolicy};
use simdb::{Content, Db, Record};

/// Texts a dedup store receives: articles with edited copies, a flood of
/// 40 exact copies (a check confirms its 16 and stops), 300 word
/// shuffles of one article (one fingerprint, sketches the threshold
/// rejects: a check looks at 256 and stops), reposts of a first half
/// (containment), 30 texts around one long template paragraph (a part
/// many share names none) and short texts; in a seeded order.
fn texts(seed: u64) -> Vec<(String, String)> {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    let mut out: Vec<(String, String)> = Vec::new();
    let mut originals: Vec<Vec<String>> = Vec::new();
    for i in 0..80 {
        let words = if !originals.is_empty() && rng.random_bool(0.4) {
            let o = originals[rng.random_range(0..originals.len())].clone();
            let n = rng.random_range(1..6);
            common::edit(&mut rng, &vocab, &o, n)
        } else {
            let w = common::article(&mut rng, &vocab, 200);
            originals.push(w.clone());
            w
        };
        out.push((format!("a{i:03}"), words.concat()));
    }
    let flood = originals[0].concat();
    out.extend((0..40).map(|i| (format!("flood{i:02}"), flood.clone())));
    // Words apart (commas between them), so each shuffle segments alike.
    let base: Vec<String> = originals[1]
        .iter()
        .map(|w| w.trim_end_matches(['。', '，']).to_string())
        .collect();
    for i in 0..300 {
        let mut w = base.clone();
        w.shuffle(&mut rng);
        out.push((format!("shuffle{i:03}"), w.join("，")));
    }
    for (i, o) in originals.iter().skip(2).take(10).enumerate() {
        out.push((format!("half{i:02}"), o[..o.len() / 2].concat()));
    }
    let template = common::article(&mut rng, &vocab, 120).concat();
    for i in 0..30 {
        let own = common::article(&mut rng, &vocab, 40).concat();
        out.push((format!("tpl{i:02}"), format!("{own}{template}")));
    }
    for i in 0..20 {
        out.push((format!("short{i:02}"), vocab[i % 5].to_string()));
    }
    out.shuffle(&mut rng);
    out
}

/// What ingest's check found for each document, as it wrote them in
/// batches of 29; and the store's records in ord order.
fn ingested(
    t: &common::TempDb,
    texts: &[(String, String)],
) -> (Db, Vec<Duplicates>, Vec<(String, Record)>) {
    let mut db = Db::options().create(t.path(), Default::default()).unwrap();
    let fp = db.fingerprinter().clone();
    let policy = WritePolicy {
        min_similarity: db.admin().default_min_similarity(),
        ..Default::default()
    };
    let mut found = Vec::new();
    {
        let mut w = db.writer().unwrap();
        for (i, (id, text)) in texts.iter().enumerate() {
            let doc = Doc {
                id: id.clone(),
                content: Content::Text(text.clone()),
                source: String::new(),
                line: None,
                priority: None,
                dated: None,
            };
            let a = fp.analyze(text).unwrap();
            found.push(place(&mut w, &doc, a, &policy).unwrap().1);
            if i % 29 == 28 {
                w.commit().unwrap();
            }
        }
        w.commit().unwrap();
    }
    let mut records = Vec::new();
    for (id, _) in texts {
        records.push((id.clone(), db.get(id).unwrap().unwrap()));
    }
    (db, found, records)
}

/// What the join sends a document's check: the earlier documents, and the
/// parts of its probe that name none.
type Sent = (Vec<(String, Record)>, Vec<u64>);

/// The join's four stages in one process (an engine runs each on its
/// workers, with a shuffle between them): for each document (in ord
/// order), the earlier documents stage 3 sends it and its boilerplate
/// parts.
fn joined(checker: &Checker, records: &[(String, Record)]) -> Vec<Sent> {
    let mut by_fp: HashMap<u64, Vec<(String, Record)>> = HashMap::new();
    for (id, r) in records {
        by_fp
            .entry(r.fingerprint.0)
            .or_default()
            .push((id.clone(), r.clone()));
    }
    // 1. By fingerprint.
    let mut entries = Vec::new();
    for docs in by_fp.values() {
        entries.extend(fingerprint_entries(docs).unwrap());
    }
    // 2. By key: two workers, each with its keys' entries and probes.
    let probes: Vec<KeyProbe> = records
        .iter()
        .flat_map(|(id, r)| checker.probes(id, r))
        .collect();
    let worker = |k: &JoinKey| (k.value ^ u64::from(k.family)) % 2;
    let mut matched = Vec::new();
    let mut boilerplate: HashMap<u64, Vec<u64>> = HashMap::new();
    for w in 0..2 {
        let e: Vec<IndexEntry> = entries
            .iter()
            .filter(|e| worker(&e.key) == w)
            .copied()
            .collect();
        let p: Vec<KeyProbe> = probes
            .iter()
            .filter(|p| worker(&p.key) == w)
            .copied()
            .collect();
        let m = key_matches(&e, &p).unwrap();
        matched.extend(m.matched);
        for (ord, part) in m.boilerplate {
            boilerplate.entry(ord).or_default().push(part);
        }
    }
    // 3. By fingerprint, with the probes' records.
    let first = records[0].1.ord;
    let mut probes_of: HashMap<u64, Vec<(String, Record)>> = HashMap::new();
    for (ord, fp) in matched {
        probes_of
            .entry(fp.0)
            .or_default()
            .push(records[(ord - first) as usize].clone());
    }
    let mut sent: HashMap<u64, Vec<(String, Record)>> = HashMap::new();
    for (fp, probes) in &probes_of {
        for (ord, id, r) in checker.fingerprint_docs(&by_fp[fp], probes).unwrap() {
            sent.entry(ord).or_default().push((id, r));
        }
    }
    // 4. By document.
    records
        .iter()
        .map(|(_, r)| {
            (
                sent.remove(&r.ord).unwrap_or_default(),
                boilerplate.remove(&r.ord).unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_check_against_the_earlier_documents_alone_finds_what_ingest_found() {
    let t = common::TempDb::new();
    let texts = texts(59);
    let (db, found, records) = ingested(&t, &texts);
    let checker = Checker::new(&t.path().with_file_name("checker"), db.recipe()).unwrap();
    // The bounds were reached, so the test covers them.
    let at_16 = found
        .iter()
        .filter(|d| !d.complete && d.hits.len() == 16)
        .count();
    let at_256 = found
        .iter()
        .filter(|d| !d.complete && d.hits.len() < 16)
        .count();
    let containment = found
        .iter()
        .flat_map(|d| &d.hits)
        .filter(|h| h.containment.is_some())
        .count();
    assert!(
        at_16 >= 20 && at_256 >= 40 && containment >= 5,
        "{at_16} {at_256} {containment}"
    );
    let join = joined(&checker, &records);
    for (i, (id, rec)) in records.iter().enumerate() {
        assert_eq!(rec.ord, records[0].1.ord + i as u64);
        // Against every earlier document, and later ones (left out).
        let all = checker.check(id, rec, &records, &[]).unwrap();
        assert_eq!(all, found[i], "{id}: against all");
        let (sent, boilerplate) = &join[i];
        let got = checker.check(id, rec, sent, boilerplate).unwrap();
        assert_eq!(got, found[i], "{id}: joined");
    }
    // The join sends a document of one fingerprint at most what a check
    // looks at: 256 of the shuffles', 16 of the flood's (they confirm).
    let flood = records
        .iter()
        .find(|(id, _)| id == "flood00")
        .unwrap()
        .1
        .fingerprint
        .0;
    let mut per_fp: HashMap<(u64, u64), usize> = HashMap::new();
    for (i, (sent, _)) in join.iter().enumerate() {
        for (_, r) in sent {
            *per_fp.entry((i as u64, r.fingerprint.0)).or_default() += 1;
        }
    }
    let most = per_fp.values().max().copied().unwrap_or(0);
    assert_eq!(most, simdb::db::limits::CHECK_EXAMINED);
    let most_flood = per_fp
        .iter()
        .filter(|e| e.0 .1 == flood)
        .map(|e| *e.1)
        .max();
    assert_eq!(most_flood, Some(simdb::db::limits::CHECK_CONFIRMED));
}

/// A batch's band and part entries follow the fingerprint's first
/// document by id, stored or not (found by the join on real text: two
/// 20newsgroups replies found their original at 1,000 documents per
/// batch and not at 7 or 100,000). A fingerprint shared by an unrelated
/// stored document with a smaller id, then written with an article in a
/// later batch: a repost of the article's first half must find the
/// article (or not) whatever the batches are.
#[test]
fn where_a_batch_ends_changes_no_check() {
    let vocab = common::vocab();
    let mut rng = common::rng(62);
    let article = common::article(&mut rng, &vocab, 300);
    let unrelated = common::article(&mut rng, &vocab, 300).concat();
    let half = format!(
        "{}{}",
        article[..article.len() / 2].concat(),
        common::article(&mut rng, &vocab, 10).concat()
    );
    let texts = [("a0", unrelated), ("b1", article.concat()), ("c2", half)];
    let mut answers = Vec::new();
    for commits_after in [vec![0], vec![2], vec![0, 1, 2]] {
        let t = common::TempDb::new();
        let mut db = Db::options().create(t.path(), Default::default()).unwrap();
        let fp = db.fingerprinter().clone();
        let policy = WritePolicy {
            min_similarity: db.admin().default_min_similarity(),
            ..Default::default()
        };
        let shared = fp.analyze(&texts[0].1).unwrap().fingerprint;
        let mut found = Vec::new();
        let mut w = db.writer().unwrap();
        for (i, (id, text)) in texts.iter().enumerate() {
            let mut a = fp.analyze(text).unwrap();
            if i < 2 {
                a.fingerprint = shared;
            }
            let doc = Doc {
                id: id.to_string(),
                content: Content::Text(text.clone()),
                source: String::new(),
                line: None,
                priority: None,
                dated: None,
            };
            let d = place(&mut w, &doc, a, &policy).unwrap().1;
            found.push(d.hits.into_iter().map(|h| h.id).collect::<Vec<_>>());
            if commits_after.contains(&i) {
                w.commit().unwrap();
            }
        }
        w.commit().unwrap();
        answers.push(found);
    }
    assert_eq!(
        answers[0], answers[1],
        "one commit after a0 against one batch"
    );
    assert_eq!(
        answers[1], answers[2],
        "one batch against a commit after each"
    );
}
