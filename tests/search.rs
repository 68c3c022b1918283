//! One candidate search (issue 36): a write's duplicate check, the cluster
//! rebuild (`verify --repair`, `migrate --keep`) and `simdb dedup --db`
//! walk the same candidates under the same rule, so they pick the same near
//! copies. The corpus mixes the copies each stage finds: edits within k and
//! beyond it (the ranked plan), and wraps, truncations and excerpts whose
//! fingerprint moved out of the plan's reach (the band buckets, read by a
//! duplicate check only once the plan confirmed nothing).

use crate::common;

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use simdb::db::KeepPolicy;
use simdb::ingest::DuplicatePolicy;
use simdb::ingest::{self, Input};
use simdb::{Db, Recipe};

/// A copy of `base` of a random kind.
fn variant(rng: &mut ChaCha8Rng, vocab: &[&str], base: &[String]) -> Vec<String> {
    let n = base.len();
    match rng.random_range(0..6) {
        // Edits: a few words (within k or just beyond), or more.
        0 => {
            let n = rng.random_range(1..4);
            common::edit(rng, vocab, base, n)
        }
        1 => {
            let n = rng.random_range(4..12);
            common::edit(rng, vocab, base, n)
        }
        // Wrapped in words of an unrelated article, one side or both.
        2 | 3 => {
            let len = n * rng.random_range(15..60) / 100;
            let wrap = common::article(rng, vocab, len);
            let cut = if rng.random_bool(0.5) {
                0
            } else {
                rng.random_range(0..=wrap.len())
            };
            let mut out = wrap[..cut].to_vec();
            let edits = rng.random_range(0..3);
            out.extend_from_slice(&common::edit(rng, vocab, base, edits));
            out.extend_from_slice(&wrap[cut..]);
            out
        }
        // The start of it.
        4 => base[..n * rng.random_range(55..90) / 100].to_vec(),
        // A passage from the middle.
        _ => {
            let len = n * rng.random_range(60..90) / 100;
            let from = rng.random_range(0..=n - len);
            base[from..from + len].to_vec()
        }
    }
}

fn line(id: &str, words: &[String]) -> String {
    format!("{}\n", json!({"id": id, "text": words.concat()}))
}

/// The stored half (bases, each with up to four copies, shuffled) and the
/// new half: one copy each of distinct bases, so that the new documents
/// are copies of stored ones only, not of each other.
fn corpus(seed: u64) -> (String, String) {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    let bases: Vec<Vec<String>> = (0..70)
        .map(|_| {
            let n = rng.random_range(150..300);
            common::article(&mut rng, &vocab, n)
        })
        .collect();
    let mut stored: Vec<Vec<String>> = Vec::new();
    for b in &bases {
        stored.push(b.clone());
        for _ in 0..rng.random_range(0..5) {
            stored.push(variant(&mut rng, &vocab, b));
        }
    }
    stored.shuffle(&mut rng);
    let mut old = String::new();
    for (i, w) in stored.iter().enumerate() {
        old.push_str(&line(&format!("s{i:03}"), w));
    }
    let mut new = String::new();
    for (i, b) in bases.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        new.push_str(&line(&format!("n{i:03}"), &variant(&mut rng, &vocab, b)));
    }
    (old, new)
}

/// Each cluster's sorted members and representative.
fn clusters(path: &std::path::Path) -> Vec<(Vec<String>, String)> {
    common::cluster_shapes(&Db::options().read_only().open(path).unwrap())
}

#[test]
fn ingest_rebuild_and_dedup_against_a_store_pick_the_same_near_copies() {
    let t = common::TempDb::new();
    let mut found_by_kind = BTreeMap::<&str, usize>::new();
    for (seed, keep) in [(1, KeepPolicy::First), (2, KeepPolicy::Longest)] {
        let (old, new) = corpus(seed);
        let old_file = t.file(&format!("old-{seed}.jsonl"), &old);
        let new_file = t.file(&format!("new-{seed}.jsonl"), &new);
        let stored = t.path().with_file_name(format!("stored-{seed}"));
        drop(Db::options().create(&stored, Recipe::default()).unwrap());
        simdb::db::migrate(&stored, Some(keep)).unwrap();
        {
            let mut db = Db::options().open(&stored).unwrap();
            ingest::run(
                &mut db,
                &[Input::guess(&old_file)],
                &Default::default(),
                |_| {},
            )
            .unwrap();
        }
        // Ingest of the new half: each document's first near copy.
        let grown = t.path().with_file_name(format!("grown-{seed}"));
        common::copy_dir(&stored, &grown);
        let mut ingested = BTreeMap::new();
        {
            let mut db = Db::options().open(&grown).unwrap();
            ingest::run(
                &mut db,
                &[Input::guess(&new_file)],
                &Default::default(),
                |ev| {
                    if let ingest::Event::Duplicate(d) = ev {
                        ingested.insert(d.id.clone(), (d.duplicate_of.clone(), d.distance));
                    }
                },
            )
            .unwrap();
        }
        for (dup, d) in ingested.values() {
            let kind = if *d <= 3 {
                "within k"
            } else if dup.starts_with('s') {
                "beyond k"
            } else {
                "other"
            };
            *found_by_kind.entry(kind).or_default() += 1;
        }

        // `dedup --db stored` of the new half drops the same documents,
        // each as a copy of the same stored one.
        let against = Db::options().read_only().open(&stored).unwrap();
        let scratch_dir = t.path().with_file_name(format!("scratch-{seed}"));
        let mut scratch = Db::options()
            .create(&scratch_dir, against.recipe().clone())
            .unwrap();
        let opts = ingest::Options {
            write: simdb::WriteOptions::default()
                .policy_for(&against, DuplicatePolicy::IndexAll)
                .unwrap(),
            ..Default::default()
        };
        let mut dropped = BTreeMap::new();
        ingest::dedup(
            &mut scratch,
            Some(&against),
            &[Input::guess(&new_file)],
            &opts,
            |ev| {
                if let ingest::DedupEvent::Drop(doc, d) = ev {
                    assert!(d.in_db, "{}: a copy of {}", doc.id, d.duplicate_of);
                    dropped.insert(doc.id.clone(), (d.duplicate_of.clone(), d.distance));
                }
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(dropped, ingested, "seed {seed}: dedup --db against ingest");
        drop(against);

        // The clusters ingest built are the ones a rebuild builds from the
        // records: `verify --repair`, and `migrate --keep` there and back.
        let built = clusters(&grown);
        assert!(built.iter().any(|(m, _)| m.len() >= 3), "seed {seed}");
        let repaired = t.path().with_file_name(format!("repaired-{seed}"));
        common::copy_dir(&grown, &repaired);
        Db::options()
            .for_repair()
            .open(&repaired)
            .unwrap()
            .maintenance()
            .repair()
            .unwrap();
        assert_eq!(clusters(&repaired), built, "seed {seed}: verify --repair");
        let other = if keep == KeepPolicy::First {
            KeepPolicy::Newest
        } else {
            KeepPolicy::First
        };
        simdb::db::migrate(&repaired, Some(other)).unwrap();
        simdb::db::migrate(&repaired, Some(keep)).unwrap();
        assert_eq!(clusters(&repaired), built, "seed {seed}: migrate --keep");
    }
    // The corpus reaches each stage: copies found within k, beyond it by
    // the ranked plan or the bands.
    assert!(
        found_by_kind.get("within k").copied().unwrap_or(0) >= 5,
        "{found_by_kind:?}"
    );
    assert!(
        found_by_kind.get("beyond k").copied().unwrap_or(0) >= 10,
        "{found_by_kind:?}"
    );
}
