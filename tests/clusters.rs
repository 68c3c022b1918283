//! Persistent clusters: the same clusters and representatives whether the
//! input comes in one run or ten, exactly the components brute force finds,
//! members leaving on delete and replace, verify and repair, and a kill -9
//! during an ingest that merges clusters.

use crate::common;

use std::collections::BTreeMap;

use rand::Rng;
use serde_json::json;
use simdb::db::{Cluster, KeepPolicy};
use simdb::ingest::{self, Input};
use simdb::{Content, Db, Fingerprint, Recipe};

/// One input document: its JSONL line and what brute force needs.
pub(crate) struct Doc {
    pub(crate) id: String,
    pub(crate) line: String,
    priority: Option<f64>,
}

/// Text articles with edited copies (some with a priority), and bare
/// fingerprints in chains and bridges: a fingerprint `base ^ 3 low bits`
/// and one `base ^ 3 high bits` (6 apart) both within 3 of a later `base`,
/// which merges their clusters.
pub(crate) fn corpus(seed: u64) -> Vec<Doc> {
    let vocab = common::vocab();
    let mut rng = common::rng(seed);
    let mut docs = Vec::new();
    let mut originals: Vec<Vec<String>> = Vec::new();
    for i in 0..120 {
        let words = if !originals.is_empty() && rng.random_bool(0.3) {
            let o = originals[rng.random_range(0..originals.len())].clone();
            let n = rng.random_range(1..4);
            common::edit(&mut rng, &vocab, &o, n)
        } else {
            let w = common::article(&mut rng, &vocab, 200);
            originals.push(w.clone());
            w
        };
        let id = format!("t{i:03}");
        let priority = rng.random_bool(0.2).then(|| rng.random_range(0..3) as f64);
        let mut v = json!({"id": id, "text": words.concat()});
        if let Some(p) = priority {
            v["priority"] = json!(p);
        }
        docs.push(Doc {
            id,
            line: v.to_string(),
            priority,
        });
    }
    for g in 0..20 {
        let base: u64 = rng.random();
        let low = base ^ 0b111;
        let high = base ^ (0b111 << 61);
        let mut group = vec![
            (format!("f{g:02}-low"), low),
            (format!("f{g:02}-high"), high),
        ];
        if g % 2 == 0 {
            group.push((format!("f{g:02}-bridge"), base));
        }
        group.push((format!("f{g:02}-low2"), low ^ (1 << 30)));
        for (id, fp) in group {
            docs.push(Doc {
                line: json!({"id": id, "fingerprint": format!("{fp:016x}")}).to_string(),
                id,
                priority: None,
            });
        }
    }
    // Interleave deterministically so runs mix both kinds.
    let mut rng2 = common::rng(seed ^ 9);
    for i in (1..docs.len()).rev() {
        let j = rng2.random_range(0..=i);
        docs.swap(i, j);
    }
    docs
}

/// Every cluster of two or more, with the members' write times left out
/// (runs at different moments stamp different seconds).
pub(crate) fn all_clusters(db: &Db) -> Vec<Cluster> {
    let mut v = Vec::new();
    db.clusters()
        .each(2, |mut c| {
            for m in &mut c.members {
                m.ingested_at = 0;
            }
            v.push(c);
            Ok(())
        })
        .unwrap();
    v
}

/// `docs` as `n` JSONL files of consecutive documents (nights).
pub(crate) fn night_files(t: &common::TempDb, docs: &[Doc], n: usize) -> Vec<std::path::PathBuf> {
    docs.chunks(docs.len().div_ceil(n))
        .enumerate()
        .map(|(i, c)| {
            let text: String = c.iter().map(|d| format!("{}\n", d.line)).collect();
            t.file(&format!("night{i}.jsonl"), text)
        })
        .collect()
}

pub(crate) fn ingest_files(
    db_path: &std::path::Path,
    files: &[std::path::PathBuf],
) -> Vec<ingest::Summary> {
    let mut out = Vec::new();
    for f in files {
        let mut db = Db::options().open(db_path).unwrap();
        out.push(ingest::run(&mut db, &[Input::guess(f)], &Default::default(), |_| {}).unwrap());
    }
    out
}

/// The clusters brute force finds under keep policy `keep`: each
/// document, in input order, checked as the default write checks it (the
/// ranked plan and the sketch for texts, exact k = 3 for bare fingerprints;
/// nearest first, beyond k only with nothing within, within the check's
/// bounds), then compared with the representative of each cluster of its
/// confirmed near-copies: it joins the best one that confirms it (highest
/// similarity, fewest bits, oldest cluster), or stays alone; if it outranks
/// the representative, it takes over and the members it does not confirm
/// leave. Lengths come from the store's records (what `longest` ranks
/// by, and containment confirms with). A pair `vetoed` ("not a copy") is
/// never a representative and its member: a document does not join a
/// representative vetoed with it, and one that takes over (even with the
/// same content) sends away the members vetoed with it. Returns (sorted
/// member ids, representative) per cluster.
pub(crate) fn brute_force_clusters(
    docs: &[Doc],
    keep: KeepPolicy,
    length: &dyn Fn(&str) -> u64,
    vetoed: &dyn Fn(&str, &str) -> bool,
) -> Vec<(Vec<String>, String)> {
    brute_force_kept(docs, keep, length, vetoed, &|_| None)
}

/// [`brute_force_clusters`] with "keep this one" decisions: `kept` gives
/// a kept document's decision sequence. A kept document ranks before
/// every other, the latest decision first (then by position).
pub(crate) fn brute_force_kept(
    docs: &[Doc],
    keep: KeepPolicy,
    length: &dyn Fn(&str) -> u64,
    vetoed: &dyn Fn(&str, &str) -> bool,
    kept: &dyn Fn(&str) -> Option<u64>,
) -> Vec<(Vec<String>, String)> {
    let f = simdb::Fingerprinter::new(Recipe::default());
    struct A {
        fp: Fingerprint,
        sketch: Option<simdb::Sketch>,
        weak: Vec<u8>,
    }
    let an: Vec<A> = docs
        .iter()
        .map(|d| {
            let v: serde_json::Value = serde_json::from_str(&d.line).unwrap();
            match v["text"].as_str() {
                Some(t) => {
                    let a = f.analyze(t).unwrap();
                    A {
                        fp: a.fingerprint,
                        sketch: a.sketch,
                        weak: a.weak_bits,
                    }
                }
                None => A {
                    fp: v["fingerprint"].as_str().unwrap().parse().unwrap(),
                    sketch: None,
                    weak: Vec::new(),
                },
            }
        })
        .collect();
    let min_sim = simdb::db::DEFAULT_MIN_SIMILARITY;
    // Whether the sketches of `i` and `j` confirm the pair (by similarity,
    // or by containment: the rule and its constants are the library's).
    let confirmed = |i: usize, j: usize, s: f64| {
        let (later, earlier) = (i.max(j), i.min(j));
        let (a, b) = (length(&docs[later].id), length(&docs[earlier].id));
        let lengths = (a > 0 && b > 0).then_some((a, b));
        simdb::db::confirmation(Some(s), min_sim, || Ok(lengths))
            .unwrap()
            .is_some()
    };
    // (similarity, distance) when member `i` is confirmed against the
    // representative `j`: by containment only if `i` is the shorter,
    // whichever came first.
    let anchored = |i: usize, j: usize| -> Option<(f64, u32)> {
        let d = an[i].fp.distance(an[j].fp);
        match (an[i].sketch, an[j].sketch) {
            (Some(a), Some(b)) => {
                let s = a.similarity(&b);
                let (li, lj) = (length(&docs[i].id), length(&docs[j].id));
                let lengths = (li > 0 && lj > 0).then_some((li, lj));
                simdb::db::confirmation(Some(s), min_sim, || Ok(lengths))
                    .unwrap()
                    .is_some()
                    .then_some((s, d))
            }
            _ => (d <= 3).then_some((-1.0, d)),
        }
    };
    // Rank: smaller first.
    let rank = |i: usize| -> (u8, u64, usize) {
        if let Some(seq) = kept(&docs[i].id) {
            return (0, u64::MAX - seq, i);
        }
        let key = match keep {
            KeepPolicy::First => 0,
            KeepPolicy::Priority => match docs[i].priority {
                None => u64::MAX,
                Some(p) => {
                    let b = p.to_bits();
                    !(if b >> 63 == 1 { !b } else { b | 1 << 63 })
                }
            },
            KeepPolicy::Longest => u64::MAX - length(&docs[i].id),
            KeepPolicy::Newest => u64::MAX - i as u64,
        };
        (1, key, i)
    };
    let mut cluster_of: Vec<Option<usize>> = vec![None; docs.len()];
    let mut clusters: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let rep_of = |members: &[usize]| *members.iter().min_by_key(|&&m| rank(m)).unwrap();
    use simdb::db::limits::{CHECK_CONFIRMED, CHECK_EXAMINED};
    for i in 0..docs.len() {
        let q = simdb::db::Query::new(an[i].fp);
        let k = q.k;
        let plan = q
            .probing(&an[i].weak, simdb::index::DEFAULT_PROBE_BUDGET)
            .plan();
        // The check: earlier documents the plan accepts, nearest first
        // then by id; beyond k only with nothing confirmed within; at most
        // CHECK_CONFIRMED confirmed and CHECK_EXAMINED looked at.
        let mut cands: Vec<(u32, &str, usize)> = (0..i)
            .filter(|&j| plan.accepts(an[i].fp, an[j].fp))
            .map(|j| (an[i].fp.distance(an[j].fp), docs[j].id.as_str(), j))
            .collect();
        cands.sort();
        let (mut near, mut examined) = (Vec::new(), 0);
        for (d, _, j) in cands {
            if near.len() >= CHECK_CONFIRMED
                || examined >= CHECK_EXAMINED
                || (d > k && !near.is_empty())
            {
                break;
            }
            examined += 1;
            if let (Some(a), Some(b)) = (an[i].sketch, an[j].sketch) {
                if !confirmed(i, j, a.similarity(&b)) {
                    continue;
                }
            }
            near.push(j);
        }
        // The best representative among the near-copies' clusters (a
        // cluster's id is its founder's position).
        let mut best: Option<((f64, u32), usize, usize)> = None; // (match, cid, rep)
        for &n in &near {
            let (cid, rep) = match cluster_of[n] {
                Some(c) => (c, rep_of(&clusters[&c])),
                None => (n, n),
            };
            if vetoed(&docs[i].id, &docs[rep].id) {
                continue;
            }
            if let Some(m) = anchored(i, rep) {
                let better = match best {
                    None => true,
                    Some((bm, bc, _)) => {
                        m.0 > bm.0 || (m.0 == bm.0 && (m.1 < bm.1 || (m.1 == bm.1 && cid < bc)))
                    }
                };
                if better {
                    best = Some((m, cid, rep));
                }
            }
        }
        let Some((_, cid, rep)) = best else { continue };
        let members = clusters.entry(cid).or_insert_with(|| vec![rep]);
        cluster_of[rep] = Some(cid);
        members.push(i);
        cluster_of[i] = Some(cid);
        let same = an[i].fp == an[rep].fp
            && an[i].sketch == an[rep].sketch
            && length(&docs[i].id) == length(&docs[rep].id);
        let stays = |m: usize| {
            m == i || ((same || anchored(m, i).is_some()) && !vetoed(&docs[m].id, &docs[i].id))
        };
        if rank(i) < rank(rep) && !members.iter().all(|&m| stays(m)) {
            let (kept, gone): (Vec<usize>, Vec<usize>) = members.iter().partition(|&&m| stays(m));
            for g in &gone {
                cluster_of[*g] = None;
            }
            clusters.remove(&cid);
            if kept.len() >= 2 {
                let new_id = if gone.contains(&cid) {
                    *kept.iter().min().unwrap()
                } else {
                    cid
                };
                for m in &kept {
                    cluster_of[*m] = Some(new_id);
                }
                clusters.insert(new_id, kept);
            } else {
                for m in &kept {
                    cluster_of[*m] = None;
                }
            }
        }
    }
    let mut out: Vec<(Vec<String>, String)> = clusters
        .into_values()
        .map(|g| {
            let rep = rep_of(&g);
            let mut ids: Vec<String> = g.iter().map(|&i| docs[i].id.clone()).collect();
            ids.sort();
            (ids, docs[rep].id.clone())
        })
        .collect();
    out.sort();
    out
}

pub(crate) fn shape(cs: &[Cluster]) -> Vec<(Vec<String>, String)> {
    let mut v: Vec<(Vec<String>, String)> = cs
        .iter()
        .map(|c| {
            let mut ids: Vec<String> = c.members.iter().map(|m| m.id.clone()).collect();
            ids.sort();
            (ids, c.representative.clone())
        })
        .collect();
    v.sort();
    v
}

/// A new store at `path` with keep policy `keep`.
pub(crate) fn create_keeping(path: &std::path::Path, keep: KeepPolicy) {
    drop(Db::options().create(path, Recipe::default()).unwrap());
    let r = simdb::db::migrate(path, Some(keep)).unwrap();
    assert_eq!(r.keep, keep);
}

#[test]
fn one_run_or_ten_nights_give_the_same_clusters_as_brute_force() {
    let t = common::TempDb::new();
    let docs = corpus(21);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let one = t.file("all.jsonl", &all);
    let nights = night_files(&t, &docs, 10);
    assert_eq!(nights.len(), 10);
    let mut left = BTreeMap::new();
    for keep in KeepPolicy::ALL {
        let a_path = t.path().with_file_name(format!("one-{keep}"));
        let b_path = t.path().with_file_name(format!("ten-{keep}"));
        create_keeping(&a_path, keep);
        create_keeping(&b_path, keep);
        let sum_a = ingest_files(&a_path, std::slice::from_ref(&one));
        let sum_b = ingest_files(&b_path, &nights);
        let a = all_clusters(&Db::options().read_only().open(&a_path).unwrap());
        let b = all_clusters(&Db::options().read_only().open(&b_path).unwrap());
        // Same ids, sizes, representatives, members in rank order, distances.
        assert_eq!(a, b, "{keep}");
        // Exactly the clusters brute force finds, with its representatives.
        let db = Db::options().read_only().open(&a_path).unwrap();
        let length = |id: &str| db.get(id).unwrap().unwrap().length;
        let want = brute_force_clusters(&docs, keep, &length, &|_, _| false);
        assert_eq!(shape(&a), want, "{keep}");
        assert!(a.iter().any(|c| c.members.len() >= 3), "{keep}");
        let left_b: u64 = sum_b.iter().map(|s| s.clusters.left).sum();
        assert_eq!(left_b, sum_a[0].clusters.left, "{keep}");
        left.insert(keep.name(), sum_a[0].clusters.left);
        assert!(sum_b.iter().skip(1).any(|s| s.clusters.grown > 0));
        for p in [&a_path, &b_path] {
            let rep = Db::options()
                .read_only()
                .open(p)
                .unwrap()
                .admin()
                .verify()
                .unwrap();
            assert!(rep.is_clean(), "{keep}: {:#?}", rep.problems);
        }
        // Every member is confirmed against its representative.
        for c in &a {
            let rep = db.get(&c.representative).unwrap().unwrap();
            for m in &c.members {
                let r = db.get(&m.id).unwrap().unwrap();
                let ok = match (r.sketch, rep.sketch) {
                    (Some(x), Some(y)) => simdb::db::confirmation(
                        Some(x.similarity(&y)),
                        simdb::db::DEFAULT_MIN_SIMILARITY,
                        // Contained in the representative, if shorter.
                        || Ok(Some((r.length, rep.length))),
                    )
                    .unwrap()
                    .is_some(),
                    _ => r.fingerprint.distance(rep.fingerprint) <= 3,
                };
                assert!(
                    ok,
                    "{keep}: {} in the cluster of {}",
                    m.id, c.representative
                );
            }
        }
        // A repair rebuilds the same clusters from the records.
        drop(db);
        let mut db = Db::options().for_repair().open(&b_path).unwrap();
        let rep = db.maintenance().repair().unwrap();
        assert_eq!(rep.clusters, b.len() as u64);
        assert_eq!(all_clusters(&db), b, "{keep}");
        // Every member's `get` names its cluster.
        for c in &b {
            for m in &c.members {
                let mut got = db.clusters().of(&m.id).unwrap().unwrap();
                got.members.iter_mut().for_each(|m| m.ingested_at = 0);
                assert_eq!(got, *c);
            }
        }
    }
    // The corpus covers what it should: representatives that take over
    // and members that leave (newest), none under first.
    assert_eq!(left["first"], 0, "{left:?}");
    assert!(left["newest"] > 0, "{left:?}");
}

/// A chain of drifting copies, each 3 bits from the one before it: under
/// single linkage one cluster; anchored, pairs.
/// Eight bare fingerprints `x0..x7`, each 3 bits from the one before it,
/// written with the one before as their confirmed near-copy when `linked`.
fn write_chain(db: &mut Db, linked: bool) {
    let mut fp = 0u64;
    let mut w = db.writer().unwrap();
    for i in 0..8 {
        let prev = (linked && i > 0).then(|| format!("x{}", i - 1));
        let near: Vec<&str> = prev.iter().map(String::as_str).collect();
        put(&mut w, &format!("x{i}"), fp, &near, None);
        fp ^= 0b111 << (8 * i);
    }
    w.commit().unwrap();
}

#[test]
fn a_drifting_chain_does_not_chain() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    write_chain(&mut db, true);
    let shapes: Vec<(Vec<String>, String)> = shape(&all_clusters(&db));
    let pairs: Vec<(Vec<String>, String)> = (0..4)
        .map(|p| {
            let (a, b) = (format!("x{}", 2 * p), format!("x{}", 2 * p + 1));
            (vec![a.clone(), b], a)
        })
        .collect();
    assert_eq!(shapes, pairs);
}

/// A bare fingerprint document.
pub(crate) fn put(
    w: &mut simdb::Writer<'_>,
    id: &str,
    fp: u64,
    near: &[&str],
    priority: Option<f64>,
) {
    let fp = Fingerprint(fp);
    w.put_placed(
        id,
        fp,
        &Content::Fingerprint(fp),
        "t",
        &simdb::db::Placement {
            priority,
            dated: None,
            near: near.iter().map(|s| s.to_string()).collect(),
            anchor: None,
        },
    )
    .unwrap();
}

fn members(db: &Db, id: &str) -> (Vec<String>, String) {
    let c = db.clusters().of(id).unwrap().unwrap();
    (
        c.members.iter().map(|m| m.id.clone()).collect(),
        c.representative,
    )
}

fn cluster_id(db: &Db, id: &str) -> u64 {
    db.clusters().of(id).unwrap().unwrap().id
}

fn ord(db: &Db, id: &str) -> u64 {
    db.get(id).unwrap().unwrap().ord
}

#[test]
fn members_leave_on_delete_and_replace_and_priority_picks_the_representative() {
    let t = common::TempDb::new();
    create_keeping(&t.path(), KeepPolicy::Priority);
    let mut db = Db::options().open(t.path()).unwrap();
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "a", 1, &[], None);
        put(&mut w, "b", 3, &["a"], None);
        w.commit().unwrap();
        put(&mut w, "c", 7, &["b"], None);
        // Earlier in the same batch counts as stored. "d" is 3 bits from
        // the representative "a", and takes over ("a", "b", "c" are
        // within 3 bits of it).
        put(&mut w, "d", 15, &["c"], Some(-1.0));
        w.commit().unwrap();
    }
    assert_eq!(
        members(&db, "d"),
        (
            vec!["d".into(), "a".into(), "b".into(), "c".into()],
            "d".into()
        ),
        "any priority beats none"
    );
    let cid = cluster_id(&db, "a");
    assert_eq!(cid, ord(&db, "a"));
    // "e" takes over; "a" is 4 bits from it and leaves, alone. It founded
    // the cluster, so the cluster takes the smallest ord left ("b"'s).
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "e", 31, &["d"], Some(5.0));
        w.commit().unwrap();
    }
    let c = db.clusters().of("b").unwrap().unwrap();
    assert_eq!((c.representative.as_str(), c.size), ("e", 4));
    assert_eq!(c.id, ord(&db, "b"));
    let alone = db.clusters().of("a").unwrap().unwrap();
    assert_eq!((alone.size, alone.id), (1, cid));
    let cid = c.id;
    // The representative leaves: the next in rank takes over and the rest
    // are checked against it; the id stays.
    {
        let mut w = db.writer().unwrap();
        assert!(w.delete("e").unwrap());
        w.commit().unwrap();
    }
    let c = db.clusters().of("b").unwrap().unwrap();
    assert_eq!((c.id, c.representative.as_str(), c.size), (cid, "d", 3));
    // Replaced with content near nothing: it leaves, and "b" (no priority,
    // earliest) takes over; replaced near its old cluster: it joins again,
    // ranked as a new document.
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "d", 0xffff_0000_0000_0000, &[], None);
        w.commit().unwrap();
    }
    assert_eq!(db.clusters().of("d").unwrap().unwrap().size, 1);
    assert_eq!(
        members(&db, "b"),
        (vec!["b".into(), "c".into()], "b".into())
    );
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "a", 0xfff7_0000_0000_0000, &["d"], None);
        w.commit().unwrap();
    }
    assert_eq!(
        members(&db, "d"),
        (vec!["d".into(), "a".into()], "d".into())
    );
    assert_eq!(cluster_id(&db, "a"), ord(&db, "d"));
    // Near a member: it joins if the representative confirms it ("f", 2
    // bits from "d"), else it stays alone ("g", 5 bits from "d").
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "f", 0xfff7_0000_0000_0001, &["a"], None);
        put(&mut w, "g", 0xfff7_0000_0000_0039, &["f"], None);
        w.commit().unwrap();
    }
    assert_eq!(members(&db, "d").0, vec!["d", "a", "f"]);
    assert_eq!(db.clusters().of("g").unwrap().unwrap().size, 1);
    // A cluster left with one member dissolves.
    {
        let mut w = db.writer().unwrap();
        w.delete("a").unwrap();
        w.delete("f").unwrap();
        w.commit().unwrap();
    }
    let c = db.clusters().of("d").unwrap().unwrap();
    assert_eq!((c.size, c.id), (1, ord(&db, "d")));
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    // NaN is not a priority.
    let mut w = db.writer().unwrap();
    let fp = Fingerprint(9);
    let err = w
        .put_placed(
            "n",
            fp,
            &Content::Fingerprint(fp),
            "t",
            &simdb::db::Placement {
                priority: Some(f64::NAN),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("priority"), "{err}");
}

/// Under `newest` and `longest`, the representative changes as copies
/// arrive; deleting it re-anchors the rest once, at commit; a flood of
/// identical copies costs no re-check.
#[test]
fn representatives_follow_the_keep_policy() {
    let t = common::TempDb::new();
    let path = t.path().with_file_name("newest");
    create_keeping(&path, KeepPolicy::Newest);
    let mut db = Db::options().open(&path).unwrap();
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "a", 0, &[], None);
        put(&mut w, "b", 1, &["a"], None);
        put(&mut w, "c", 3, &["b"], None);
        // 4 bits from "a", 3 from "b" and 2 from "c": takes over, "a" leaves.
        put(&mut w, "d", 0b1111, &["c"], None);
        w.commit().unwrap();
    }
    assert_eq!(
        members(&db, "d"),
        (vec!["d".into(), "c".into(), "b".into()], "d".into())
    );
    assert_eq!(db.clusters().of("a").unwrap().unwrap().size, 1);
    // The representative and the next one deleted in one batch: the rest
    // is re-anchored once, at commit, on what is left.
    {
        let mut w = db.writer().unwrap();
        w.delete("d").unwrap();
        w.delete("c").unwrap();
        w.commit().unwrap();
    }
    assert_eq!(db.clusters().of("b").unwrap().unwrap().size, 1);
    assert!(db.admin().verify().unwrap().is_clean());
    // Longest: the longer text takes over.
    let path = t.path().with_file_name("longest");
    create_keeping(&path, KeepPolicy::Longest);
    let mut db = Db::options().open(&path).unwrap();
    let vocab = common::vocab();
    let mut rng = common::rng(5);
    let words = common::article(&mut rng, &vocab, 300);
    let short: String = words[..270].concat();
    let long: String = words.concat();
    let f = simdb::Fingerprinter::new(Recipe::default());
    let mut w = db.writer().unwrap();
    let write = |w: &mut simdb::Writer<'_>, id: &str, text: &str, near: &[&str]| {
        w.put_placed(
            id,
            f.analyze(text).unwrap(),
            &Content::Text(text.to_string()),
            "t",
            &simdb::db::Placement {
                near: near.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
        )
        .unwrap();
    };
    write(&mut w, "short", &short, &[]);
    for i in 0..50 {
        write(&mut w, &format!("copy{i}"), &short, &["short"]);
    }
    write(&mut w, "long", &long, &["short"]);
    w.commit().unwrap();
    drop(w);
    let c = db.clusters().of("short").unwrap().unwrap();
    assert_eq!((c.representative.as_str(), c.size), ("long", 52));
    assert!(db.admin().verify().unwrap().is_clean());
}

/// A format 5 store holds the chain as one cluster (single linkage):
/// `simdb migrate` rebuilds it under the anchored rule and reports the
/// change.
#[test]
fn migrate_splits_chained_clusters_of_format_5_stores() {
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    write_chain(&mut db, false);
    let ords: Vec<u64> = (0..8).map(|i| ord(&db, &format!("x{i}"))).collect();
    drop(db);
    {
        // What format 5 built: one cluster of the whole chain, ranked by
        // priority (none: u64::MAX), then ord; no keep policy.
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("clusters").unwrap();
        let cid = ords[0];
        for (i, o) in ords.iter().enumerate() {
            let id = format!("x{i}");
            raw.put_cf(cf, [&b"d"[..], id.as_bytes()].concat(), cid.to_be_bytes())
                .unwrap();
            let key = [
                &b"m"[..],
                &cid.to_be_bytes(),
                &u64::MAX.to_be_bytes(),
                &o.to_be_bytes(),
            ]
            .concat();
            raw.put_cf(cf, key, id.as_bytes()).unwrap();
        }
        raw.put_cf(
            cf,
            [&b"s"[..], &cid.to_be_bytes()].concat(),
            8u64.to_be_bytes(),
        )
        .unwrap();
        let meta = raw.cf_handle("meta").unwrap();
        raw.delete_cf(meta, b"keep_policy").unwrap();
        raw.put_cf(meta, b"format_version", 5u32.to_be_bytes())
            .unwrap();
    }
    let o = common::simdb(&[&"migrate", &t.path()]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(
            "migrated format 5 -> 14 (keep policy priority): 0 records indexed, 0 given their place \
             in the ingest order, 0 member keys re-ranked, 0 unreadable; clusters 1 -> 4 (8 -> 8 documents in them, the largest 8 -> 2)"
        ),
        "{}",
        common::stdout(&o)
    );
    let db = Db::options().read_only().open(t.path()).unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(shape(&all_clusters(&db)).len(), 4);
    drop(db);
    // Then to another policy: only the clusters are rebuilt. Under newest
    // each copy takes over and the copy two steps back (6 bits) leaves:
    // only the last pair is left together.
    let o = common::simdb(&[&"migrate", &t.path(), &"--keep", &"newest"]);
    assert!(
        common::stdout(&o).contains(
            "keep policy priority -> newest: clusters 4 -> 1 (8 -> 2 documents in them, the largest 2 -> 2)"
        ),
        "{}",
        common::stdout(&o)
    );
    let o = common::simdb(&[&"migrate", &t.path(), &"--keep", &"oldest"]);
    assert_eq!(common::code(&o), 2);
    assert!(
        common::stderr(&o).contains("unknown keep policy"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn verify_names_damaged_cluster_entries_and_repair_rebuilds_them() {
    let t = common::TempDb::new();
    let docs = corpus(3);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let input = t.file("all.jsonl", &all);
    drop(Db::options().create(t.path(), Recipe::default()).unwrap());
    ingest_files(&t.path(), &[input]);
    let before = all_clusters(&Db::options().read_only().open(t.path()).unwrap());
    let victim = before[0].members[1].id.clone();
    {
        let raw = common::raw_open(&t.path());
        let cf = raw.cf_handle("clusters").unwrap();
        // A member without its d entry, and a size that is off.
        raw.delete_cf(cf, [&b"d"[..], victim.as_bytes()].concat())
            .unwrap();
        let mut s = vec![b's'];
        s.extend_from_slice(&before[1].id.to_be_bytes());
        raw.put_cf(cf, s, 99u64.to_be_bytes()).unwrap();
        // A document missing from the ingest order, and a stray entry.
        let mut o = vec![b'o'];
        o.extend_from_slice(&0u64.to_be_bytes());
        raw.delete_cf(cf, &o).unwrap();
        let mut stray = vec![b'o'];
        stray.extend_from_slice(&u64::MAX.to_be_bytes());
        raw.put_cf(cf, stray, b"nobody").unwrap();
    }
    let rep = Db::options()
        .read_only()
        .open(t.path())
        .unwrap()
        .admin()
        .verify()
        .unwrap();
    let text = rep.problems.join("\n");
    assert!(text.contains("has no d entry"), "{text}");
    assert!(text.contains("size 99"), "{text}");
    assert!(text.contains("\"nobody\", which has no record"), "{text}");
    assert!(text.contains("entries in the ingest order, but"), "{text}");
    let o = common::simdb(&[&"verify", &t.path(), &"--repair"]);
    assert_eq!(common::code(&o), 0, "{}", common::stdout(&o));
    let db = Db::options().read_only().open(t.path()).unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    assert_eq!(all_clusters(&db), before);
}

/// Kill -9 an ingest whose input merges clusters, at several points: the
/// store verifies clean, and running the ingest again gives the clusters an
/// uninterrupted run gives.
#[test]
fn sigkill_during_a_merging_ingest_converges() {
    use std::io::BufRead;
    let t = common::TempDb::new();
    let docs = corpus(8);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let input = t.file("all.jsonl", &all);
    let reference = t.path().with_file_name("reference");
    drop(Db::options().create(&reference, Recipe::default()).unwrap());
    ingest_files(&reference, std::slice::from_ref(&input));
    let want = all_clusters(&Db::options().read_only().open(&reference).unwrap());
    assert!(!want.is_empty());
    for (n, kill_after) in [1usize, 3, 6].into_iter().enumerate() {
        let path = t.path().with_file_name(format!("killed{n}"));
        assert_eq!(common::code(&common::simdb(&[&"init", &path])), 0);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simdb"))
            .args(["ingest", "--acks", "--batch-size", "10"])
            .arg(&path)
            .arg(&input)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let mut acks = 0;
        for line in std::io::BufReader::new(out).lines() {
            if line.unwrap().contains("acknowledged") {
                acks += 1;
                if acks == kill_after {
                    child.kill().unwrap();
                    break;
                }
            }
        }
        child.wait().unwrap();
        let rep = Db::options()
            .read_only()
            .open(&path)
            .unwrap()
            .admin()
            .verify()
            .unwrap();
        assert!(rep.is_clean(), "kill {n}: {:#?}", rep.problems);
        let o = common::simdb(&[&"ingest", &path, &input]);
        assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
        let db = Db::options().read_only().open(&path).unwrap();
        assert!(db.admin().verify().unwrap().is_clean());
        assert_eq!(all_clusters(&db), want, "kill {n} after {kill_after} acks");
    }
}

#[test]
fn expire_deletes_what_was_written_before_and_updates_clusters() {
    let t = common::TempDb::new();
    let docs = corpus(4);
    let (first, second) = docs.split_at(docs.len() / 2);
    let file = |name: &str, part: &[Doc]| {
        let text: String = part.iter().map(|d| format!("{}\n", d.line)).collect();
        t.file(name, text)
    };
    let (f1, f2) = (file("night1.jsonl", first), file("night2.jsonl", second));
    assert_eq!(common::code(&common::simdb(&[&"init", &t.path()])), 0);
    assert_eq!(
        common::code(&common::simdb(&[&"ingest", &t.path(), &f1])),
        0
    );
    // The next whole second: night 1 is before it, night 2 at or after.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let cutoff = now.as_secs() + 1;
    std::thread::sleep(std::time::Duration::from_millis(
        1000 - u64::from(now.subsec_millis()) + 20,
    ));
    assert_eq!(
        common::code(&common::simdb(&[&"ingest", &t.path(), &f2])),
        0
    );
    let before = all_clusters(&Db::options().read_only().open(t.path()).unwrap());
    assert!(
        before.iter().any(|c| {
            let ids: Vec<&str> = c.members.iter().map(|m| m.id.as_str()).collect();
            ids.iter().any(|i| first.iter().any(|d| d.id == *i))
                && ids.iter().any(|i| second.iter().any(|d| d.id == *i))
        }),
        "a cluster spans both nights"
    );
    let at = format!("@{cutoff}");
    let o = common::simdb(&[&"expire", &t.path(), &"--before", &at, &"--dry-run"]);
    assert!(
        common::stdout(&o).contains(&format!("{} documents written before", first.len())),
        "{}",
        common::stdout(&o)
    );
    let o = common::simdb(&[&"expire", &t.path(), &"--before", &at, &"--json"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let r: serde_json::Value = serde_json::from_str(common::stdout(&o).trim()).unwrap();
    assert_eq!(r["deleted"], first.len() as u64);
    assert_eq!(r["remaining"], second.len() as u64);
    let db = Db::options().read_only().open(t.path()).unwrap();
    assert!(db.admin().verify().unwrap().is_clean());
    for d in first {
        assert!(db.get(&d.id).unwrap().is_none());
    }
    // Clusters keep only their night-2 members; those left alone dissolved.
    for c in all_clusters(&db) {
        assert!(c.members.len() >= 2);
        for m in &c.members {
            assert!(second.iter().any(|d| d.id == m.id), "{}", m.id);
        }
    }
    let s = db.admin().stats().unwrap();
    assert!(s.oldest.unwrap() >= cutoff);
    // Nothing more to expire: exit 1.
    let o = common::simdb(&[&"expire", &t.path(), &"--before", &at]);
    assert_eq!(common::code(&o), 1);
    let o = common::simdb(&[&"expire", &t.path(), &"--before", &"yesterday"]);
    assert_eq!(common::code(&o), 2);
    assert!(
        common::stderr(&o).contains("not a date"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn cli_lists_clusters_shows_them_in_get_and_reports_them_per_run() {
    let t = common::TempDb::new();
    let docs = corpus(6);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let input = t.file("all.jsonl", &all);
    assert_eq!(common::code(&common::simdb(&[&"init", &t.path()])), 0);
    let o = common::simdb(&[&"ingest", &t.path(), &input]);
    let want = all_clusters(&Db::options().read_only().open(t.path()).unwrap());
    assert!(
        common::stderr(&o).contains(&format!("clusters: {} new, 0 grown", want.len())),
        "{}",
        common::stderr(&o)
    );
    let o = common::simdb(&[&"clusters", &t.path(), &"--json"]);
    assert_eq!(common::code(&o), 0);
    let got: Vec<serde_json::Value> = common::stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["id"], w.id);
        assert_eq!(g["representative"], w.representative.as_str());
        assert_eq!(g["size"], w.size);
        assert_eq!(g["members"].as_array().unwrap().len() as u64, w.size);
    }
    let big = want.iter().max_by_key(|c| c.size).unwrap();
    let min = big.size.to_string();
    let o = common::simdb(&[&"clusters", &t.path(), &"--min-size", &min]);
    assert!(common::stdout(&o).contains(&format!("representative {}", big.representative)));
    let o = common::simdb(&[&"get", &t.path(), &big.members[1].id]);
    assert!(
        common::stdout(&o).contains(&format!(
            "cluster      {}: {} documents, representative {}",
            big.id, big.size, big.representative
        )),
        "{}",
        common::stdout(&o)
    );
    // Re-running the same input changes nothing.
    let o = common::simdb(&[&"ingest", &t.path(), &input]);
    assert!(common::stderr(&o).contains("clusters: 0 new, 0 grown, 0 left"));
    // A bad priority is a bad line, named.
    let bad = t.file(
        "bad.jsonl",
        "{\"id\":\"x\",\"text\":\"hello world again\",\"priority\":\"high\"}\n",
    );
    let o = common::simdb(&[&"ingest", &t.path(), &bad]);
    assert!(
        common::stderr(&o).contains("\"priority\" must be a finite number"),
        "{}",
        common::stderr(&o)
    );
}

/// Review 2026-11-b, finding 4 (issue 37): `migrate --keep P` killed while
/// it rebuilt the clusters left a store with its clusters gone, a clean
/// `verify`, and the same command answering "already" and doing nothing
/// (the new policy was written first). Now a marker stays from the batch
/// that clears the clusters to the one that writes the last of them with
/// the policy: a store killed in between (emulated here: the state after
/// the first batch, and after one more) does not open, `verify` says what
/// to run, and `migrate` with the new policy or the old one finishes the
/// rebuild.
#[test]
fn regression_review_b_4_an_interrupted_cluster_rebuild_is_finished_not_forgotten() {
    let t = common::TempDb::new();
    let docs = corpus(37);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let input = t.file("all.jsonl", &all);
    let base = t.path().with_file_name("base");
    create_keeping(&base, KeepPolicy::First);
    ingest_files(&base, std::slice::from_ref(&input));
    // What a finished `migrate --keep` builds, for each policy.
    let mut want = BTreeMap::new();
    for keep in [KeepPolicy::First, KeepPolicy::Newest] {
        let p = t.path().with_file_name(format!("want-{keep}"));
        common::copy_dir(&base, &p);
        simdb::db::migrate(&p, Some(keep)).unwrap();
        let db = Db::options().read_only().open(&p).unwrap();
        assert_eq!(db.admin().keep_policy().unwrap(), keep);
        want.insert(keep.name(), shape(&all_clusters(&db)));
    }
    assert!(!want["newest"].is_empty());
    for (n, (building, again, written)) in [
        (KeepPolicy::Newest, KeepPolicy::Newest, 0),
        (KeepPolicy::Newest, KeepPolicy::First, 0),
        (KeepPolicy::Newest, KeepPolicy::Newest, 1),
    ]
    .into_iter()
    .enumerate()
    {
        let p = t.path().with_file_name(format!("killed{n}"));
        common::copy_dir(&base, &p);
        {
            // The state a kill leaves after the clearing batch (and, with
            // `written`, after one batch of clusters: a cluster's entries
            // written back); the policy is still the old one.
            let raw = common::raw_open(&p);
            let cf = raw.cf_handle("clusters").unwrap();
            let keys: Vec<Box<[u8]>> = raw
                .iterator_cf(cf, rocksdb::IteratorMode::Start)
                .map(|kv| kv.unwrap().0)
                // Cluster entries (`d`, `m`, `s`), not the ingest order.
                .filter(|k| b"dms".contains(&k[0]))
                .collect();
            assert!(!keys.is_empty());
            for k in keys.iter().skip(written * keys.len() / 3) {
                raw.delete_cf(cf, k).unwrap();
            }
            let meta = raw.cf_handle("meta").unwrap();
            raw.put_cf(meta, b"clusters_rebuilding", building.name())
                .unwrap();
        }
        let err = Db::options()
            .open(&p)
            .err()
            .expect("an interrupted rebuild is refused");
        assert!(
            matches!(err, simdb::Error::ClustersIncomplete { .. }),
            "{err}"
        );
        assert!(Db::options().read_only().open(&p).is_err());
        let o = common::simdb(&[&"verify", &p]);
        assert_ne!(common::code(&o), 0);
        let e = common::stderr(&o);
        assert!(
            e.contains("clusters are incomplete") && e.contains("migrate"),
            "{e}"
        );
        // Running it again (the same policy, or the one before) finishes.
        let r = simdb::db::migrate(&p, Some(again)).unwrap();
        assert_eq!(r.keep, again);
        let db = Db::options().read_only().open(&p).unwrap();
        assert_eq!(db.admin().keep_policy().unwrap(), again);
        assert_eq!(shape(&all_clusters(&db)), want[again.name()], "case {n}");
        assert!(db.admin().verify().unwrap().is_clean());
    }
}

/// Review 2026-11-b, finding 3: deleting a cluster's representative
/// re-checked every member (a record read each) inside one commit, under
/// the writer lock: 270-635 ms per DELETE at 100,000 near copies while
/// other writers waited. The commit now marks the cluster and checks at
/// most `limits::SETTLE_STEP` members; the rest follow a step at a time
/// (`Clusters::settle`, or later commits), and the end is the cluster
/// the whole re-check gave: exactly the members the new representative
/// confirms. The store is consistent (`verify` clean) between steps.
#[test]
fn regression_review_b_3_a_representative_leaves_in_bounded_steps() {
    use simdb::db::limits::SETTLE_STEP;
    let t = common::TempDb::new();
    let mut db = Db::options().create(t.path(), Recipe::default()).unwrap();
    let base = 0x0123_4567_89ab_cdefu64;
    // Members three bits from the representative: the next one (the
    // earliest member) keeps those within 3 bits of it (sharing two of
    // its flipped bits or more), the others leave.
    let combos: Vec<u64> = (0..64u32)
        .flat_map(|a| (a + 1..64).flat_map(move |b| (b + 1..64).map(move |c| (a, b, c))))
        .map(|(a, b, c)| (1u64 << a) | (1 << b) | (1 << c))
        .take(3 * SETTLE_STEP + 500)
        .collect();
    let mut w = db.writer().unwrap();
    put(&mut w, "r", base, &[], None);
    for (i, x) in combos.iter().enumerate() {
        put(&mut w, &format!("m{i:05}"), base ^ x, &["r"], None);
    }
    w.commit().unwrap();
    drop(w);
    assert_eq!(
        db.clusters().of("r").unwrap().unwrap().size,
        combos.len() as u64 + 1
    );
    let next = base ^ combos[0];
    let mut want: Vec<String> = combos
        .iter()
        .enumerate()
        .filter(|(_, x)| (base ^ **x ^ next).count_ones() <= 3)
        .map(|(i, _)| format!("m{i:05}"))
        .collect();
    want.sort();
    assert!(
        want.len() > 1 && want.len() < combos.len() / 2,
        "{}",
        want.len()
    );
    // The delete's commit reads at most one step of member records.
    let before = db.admin().reads().records;
    let mut w = db.writer().unwrap();
    assert!(w.delete("r").unwrap());
    w.commit().unwrap();
    drop(w);
    let read = db.admin().reads().records - before;
    assert!(
        read <= SETTLE_STEP as u64 + 64,
        "{read} records read by the commit of one delete"
    );
    // Between steps: consistent, and other writes go on.
    assert!(db.admin().verify().unwrap().is_clean());
    let mut w = db.writer().unwrap();
    put(&mut w, "other", !base, &[], None);
    w.commit().unwrap();
    drop(w);
    let steps = db.clusters().settle().unwrap();
    assert!(steps >= 2, "{steps}");
    let (mut got, rep) = members(&db, "m00000");
    got.sort();
    assert_eq!(rep, "m00000");
    assert_eq!(got, want);
    let rep = db.admin().verify().unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    // A member that left is alone.
    let gone = (0..combos.len())
        .map(|i| format!("m{i:05}"))
        .find(|m| want.binary_search(m).is_err())
        .unwrap();
    assert_eq!(db.clusters().of(&gone).unwrap().unwrap().size, 1);
}

/// The engines' split of a rebuild (`simdb.ray.dedup`): the near-copy
/// lists of `earlier_copies`, computed over ranges of ords as separate
/// processes would, are each document's nearest confirmed earlier copy as
/// ingest reported it, and `rebuild_clusters_from` places them into the
/// clusters ingest built, under every keep policy. Lists that are out of
/// order or name a later document are refused.
#[test]
fn earlier_copies_in_ranges_rebuild_the_clusters_ingest_built() {
    let t = common::TempDb::new();
    let docs = corpus(33);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let one = t.file("all.jsonl", &all);
    for keep in KeepPolicy::ALL {
        let path = t.path().with_file_name(format!("split-{keep}"));
        create_keeping(&path, keep);
        let mut reported: BTreeMap<String, String> = BTreeMap::new();
        {
            let mut db = Db::options().open(&path).unwrap();
            ingest::run(&mut db, &[Input::guess(&one)], &Default::default(), |e| {
                if let ingest::Event::Duplicate(r) = e {
                    reported.insert(r.id.clone(), r.duplicate_of.clone());
                }
            })
            .unwrap();
        }
        let built = all_clusters(&Db::options().read_only().open(&path).unwrap());
        assert!(built.iter().any(|c| c.members.len() >= 3), "{keep}");
        // Three "processes", each over its range of ords.
        let mut lists: Vec<(u64, Vec<String>)> = Vec::new();
        let mut checked = 0;
        for (lo, hi) in [(0, 41), (41, 97), (97, u64::MAX)] {
            let db = Db::options().read_only().open(&path).unwrap();
            checked += db
                .admin()
                .earlier_copies(lo..hi, |ord, id, hits| {
                    assert!((lo..hi).contains(&ord));
                    assert_eq!(reported.get(id), Some(&hits[0].id), "{keep}: {id}");
                    lists.push((ord, hits.into_iter().map(|h| h.id).collect()));
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(checked, docs.len() as u64);
        assert_eq!(lists.len(), reported.len(), "{keep}");
        let mut db = Db::options().open(&path).unwrap();
        // Out of order, and a near copy that is not earlier: refused.
        let mut swapped = lists.clone();
        swapped.swap(0, 1);
        let e = db
            .maintenance()
            .rebuild_clusters_from(keep, swapped.into_iter().map(Ok))
            .unwrap_err();
        assert!(e.to_string().contains("ascending ord"), "{e}");
        let mut later = lists.clone();
        let last = later.last().unwrap().clone();
        later[0].1 = vec![docs
            .iter()
            .map(|d| d.id.clone())
            .find(|id| db.get(id).unwrap().unwrap().ord == last.0)
            .unwrap()];
        let e = db
            .maintenance()
            .rebuild_clusters_from(keep, later.into_iter().map(Ok))
            .unwrap_err();
        assert!(e.to_string().contains("is not before"), "{e}");
        // The lists of one range alone do not make the clusters.
        let first: Vec<_> = lists.iter().filter(|l| l.0 < 41).cloned().collect();
        db.maintenance()
            .rebuild_clusters_from(keep, first.into_iter().map(Ok))
            .unwrap();
        assert_ne!(all_clusters(&db), built, "{keep}");
        // All of them do.
        let n = db
            .maintenance()
            .rebuild_clusters_from(keep, lists.into_iter().map(Ok))
            .unwrap();
        assert_eq!(n, built.len() as u64);
        assert_eq!(all_clusters(&db), built, "{keep}");
        assert!(db.admin().verify().unwrap().is_clean(), "{keep}");
    }
}

/// The review's reads (docs/review.md): pages of clusters in id and size
/// order, by source, and one cluster's members a page at a time, equal to
/// the whole listing read at once.
#[test]
fn review_pages_equal_the_whole_listing() {
    use simdb::db::review::{ClusterOrder, ConfirmedBy};
    let t = common::TempDb::new();
    let docs = corpus(22);
    let nights = night_files(&t, &docs, 4);
    create_keeping(&t.path(), KeepPolicy::First);
    ingest_files(&t.path(), &nights);
    let db = Db::options().read_only().open(t.path()).unwrap();
    let whole = all_clusters(&db);
    assert!(whole.len() >= 10, "{} clusters", whole.len());
    let source_of = |id: &str| db.document(id).unwrap().unwrap().source;
    // Every page of 3 in each order, then by one source.
    let pages = |order: ClusterOrder, source: Option<&str>| {
        let (mut got, mut after) = (Vec::new(), None::<String>);
        loop {
            let page = db
                .clusters()
                .list(order, after.as_deref(), 3, 2, 2, source)
                .unwrap();
            assert!(page.clusters.len() <= 3);
            got.extend(page.clusters);
            match page.next {
                Some(n) => after = Some(n),
                None => break got,
            }
        }
    };
    let expect = |mut cs: Vec<Cluster>, source: Option<&str>| -> Vec<(u64, u64, Vec<String>)> {
        cs.retain(|c| source.is_none_or(|s| source_of(&c.representative).starts_with(s)));
        cs.iter()
            .map(|c| {
                let first: Vec<String> = c.members.iter().take(2).map(|m| m.id.clone()).collect();
                (c.id, c.size, first)
            })
            .collect()
    };
    let shape = |ls: &[simdb::db::review::Listed]| -> Vec<(u64, u64, Vec<String>)> {
        ls.iter()
            .map(|l| {
                assert_eq!(l.source, source_of(&l.cluster.representative));
                let ids = l.cluster.members.iter().map(|m| m.id.clone()).collect();
                (l.cluster.id, l.cluster.size, ids)
            })
            .collect()
    };
    let mut by_size = whole.clone();
    by_size.sort_by_key(|c| (std::cmp::Reverse(c.size), c.id));
    // By newest member (largest ord), latest first; by farthest member,
    // farthest first, then by id.
    let ord = |id: &str| db.get(id).unwrap().unwrap().ord;
    let mut by_newest = whole.clone();
    by_newest.sort_by_key(|c| std::cmp::Reverse(c.members.iter().map(|m| ord(&m.id)).max()));
    let mut by_distance = whole.clone();
    by_distance.sort_by_key(|c| (std::cmp::Reverse(c.max_distance), c.id));
    assert!(by_newest
        .iter()
        .map(|c| c.id)
        .ne(whole.iter().map(|c| c.id)));
    assert!(by_distance
        .iter()
        .map(|c| c.id)
        .ne(by_size.iter().map(|c| c.id)));
    // An input file's name: the sources of its documents begin with it.
    let source = source_of(&whole[whole.len() / 2].representative)
        .rsplit_once(':')
        .unwrap()
        .0
        .to_string();
    for s in [None, Some(source.as_str())] {
        assert_eq!(
            shape(&pages(ClusterOrder::Id, s)),
            expect(whole.clone(), s),
            "{s:?}"
        );
        assert_eq!(
            shape(&pages(ClusterOrder::Size, s)),
            expect(by_size.clone(), s),
            "{s:?}"
        );
        assert_eq!(
            shape(&pages(ClusterOrder::Newest, s)),
            expect(by_newest.clone(), s),
            "{s:?}"
        );
        let distant = pages(ClusterOrder::Distant, s);
        assert_eq!(shape(&distant), expect(by_distance.clone(), s), "{s:?}");
        let want: Vec<u32> = by_distance
            .iter()
            .filter(|c| s.is_none_or(|s| source_of(&c.representative).starts_with(s)))
            .map(|c| c.max_distance)
            .collect();
        let got: Vec<u32> = distant.iter().map(|l| l.cluster.max_distance).collect();
        assert_eq!(got, want, "{s:?}");
    }
    assert!(!expect(whole.clone(), Some(&source)).is_empty());
    // One cluster's members, two a page, from any member's id.
    for c in &whole {
        let member = &c.members[c.members.len() - 1].id;
        let (mut ids, mut after) = (Vec::new(), None::<String>);
        loop {
            let page = db
                .clusters()
                .members(member, after.as_deref(), 2)
                .unwrap()
                .unwrap();
            assert_eq!((page.id, page.size), (c.id, c.size));
            assert_eq!(page.representative.member.id, c.representative);
            for m in &page.members {
                let rep = m.member.id == c.representative;
                assert_eq!(m.why.confirmed_by == ConfirmedBy::Representative, rep);
                let listed = c.members.iter().find(|x| x.id == m.member.id).unwrap();
                assert_eq!(m.why.distance, listed.distance);
                if m.why.confirmed_by == ConfirmedBy::Similarity {
                    assert!(m.why.similarity.unwrap() >= db.admin().default_min_similarity());
                }
            }
            ids.extend(page.members.into_iter().map(|m| m.member.id));
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let want: Vec<String> = c.members.iter().map(|m| m.id.clone()).collect();
        assert_eq!(ids, want);
    }
    // A document alone is a cluster of one; an unknown id is none; a
    // cursor this listing did not give is refused.
    let alone = docs
        .iter()
        .find(|d| db.clusters().of(&d.id).unwrap().unwrap().size == 1)
        .expect("a document alone");
    let page = db.clusters().members(&alone.id, None, 5).unwrap().unwrap();
    assert_eq!(page.size, 1);
    assert_eq!(page.members.len(), 1);
    assert!(db
        .clusters()
        .members("no such id", None, 5)
        .unwrap()
        .is_none());
    let bad = db.clusters().members(&alone.id, Some("zz"), 5).unwrap_err();
    assert!(bad.to_string().contains("cursor"), "{bad}");
    assert!(db
        .clusters()
        .list(ClusterOrder::Size, Some("7"), 3, 2, 2, None)
        .is_err());
}

/// Review-2026-11-c, finding 3: a page of clusters in size or distance
/// order and a calibration scan the store, and a service must be able to
/// stop them (its deadline, SIGTERM). With `until`, each asks between its
/// steps (a cluster, a sampled document) and ends with
/// `Error::Interrupted` once told; told nothing, it answers as without.
#[test]
fn regression_60_long_reads_stop_between_steps_when_asked() {
    use simdb::db::review::ClusterOrder;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let t = common::TempDb::new();
    let docs = corpus(22);
    let nights = night_files(&t, &docs, 1);
    create_keeping(&t.path(), KeepPolicy::First);
    ingest_files(&t.path(), &nights);
    let db = Db::options().read_only().open(t.path()).unwrap();
    let clusters = db.admin().stats().unwrap().clusters as usize;
    assert!(clusters >= 10, "{clusters} clusters");
    // Goes on for `n` questions, then says stop; counts the questions.
    let asked = AtomicUsize::new(0);
    let until = |n: usize| {
        let asked = &asked;
        asked.store(0, Ordering::SeqCst);
        move || asked.fetch_add(1, Ordering::SeqCst) < n
    };
    for order in [ClusterOrder::Size, ClusterOrder::Distant] {
        let plain = db.clusters().list(order, None, 5, 2, 2, None).unwrap();
        let go_on = until(usize::MAX);
        let asking = db.clusters().until(&go_on).list(order, None, 5, 2, 2, None);
        assert_eq!(asking.unwrap(), plain, "{order:?}");
        // Once per cluster of the scan (clusters of every size).
        assert!(asked.load(Ordering::SeqCst) >= clusters, "{order:?}");
        let go_on = until(3);
        let stopped = db.clusters().until(&go_on).list(order, None, 5, 2, 2, None);
        assert!(
            matches!(stopped, Err(simdb::Error::Interrupted)),
            "{order:?}: {stopped:?}"
        );
        // Asked once more than it was allowed, and no further.
        assert_eq!(asked.load(Ordering::SeqCst), 4, "{order:?}");
    }
    let threshold = simdb::db::DEFAULT_MIN_SIMILARITY;
    let plain = db.admin().calibrate(50, 7, threshold, 3).unwrap();
    let go_on = until(usize::MAX);
    let asking = db
        .admin()
        .until(&go_on)
        .calibrate(50, 7, threshold, 3)
        .unwrap();
    assert_eq!(format!("{asking:?}"), format!("{plain:?}"));
    assert!(plain.sampled >= 20, "{} sampled", plain.sampled);
    let n = asked.load(Ordering::SeqCst);
    assert_eq!(n, plain.sampled, "once per sampled document");
    let go_on = until(10);
    let stopped = db.admin().until(&go_on).calibrate(50, 7, threshold, 3);
    assert!(
        matches!(stopped, Err(simdb::Error::Interrupted)),
        "{stopped:?}"
    );
}
