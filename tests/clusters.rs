//! Persistent clusters: the same clusters and representatives whether the
//! input comes in one run or ten, exactly the components brute force finds,
//! members leaving on delete and replace, verify and repair, and a kill -9
//! during an ingest that merges clusters.

mod common;

use std::collections::BTreeMap;

use rand::Rng;
use serde_json::json;
use simdb::db::Cluster;
use simdb::ingest::{self, Input};
use simdb::{Content, Db, Fingerprint, Recipe};

/// One input document: its JSONL line and what brute force needs.
struct Doc {
    id: String,
    line: String,
    priority: Option<f64>,
}

/// Text articles with edited copies (some with a priority), and bare
/// fingerprints in chains and bridges: a fingerprint `base ^ 3 low bits`
/// and one `base ^ 3 high bits` (6 apart) both within 3 of a later `base`,
/// which merges their clusters.
fn corpus(seed: u64) -> Vec<Doc> {
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
fn all_clusters(db: &Db) -> Vec<Cluster> {
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

fn ingest_files(db_path: &std::path::Path, files: &[std::path::PathBuf]) -> Vec<ingest::Summary> {
    let mut out = Vec::new();
    for f in files {
        let mut db = Db::open(db_path).unwrap();
        out.push(ingest::run(&mut db, &[Input::guess(f)], &Default::default(), |_| {}).unwrap());
    }
    out
}

/// The clusters brute force finds: each document, in input order, joined
/// with the earlier documents the default check confirms (the ranked plan
/// and the sketch for texts, exact k = 3 for bare fingerprints; nearest
/// first, beyond k only with nothing within, within the check's bounds),
/// as (sorted member ids, representative).
fn brute_force_clusters(docs: &[Doc]) -> Vec<(Vec<String>, String)> {
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
    let mut parent: Vec<usize> = (0..docs.len()).collect();
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            x = p[x];
        }
        x
    }
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
        let (mut confirmed, mut examined) = (0, 0);
        for (d, _, j) in cands {
            if confirmed >= CHECK_CONFIRMED
                || examined >= CHECK_EXAMINED
                || (d > k && confirmed > 0)
            {
                break;
            }
            examined += 1;
            if let (Some(a), Some(b)) = (an[i].sketch, an[j].sketch) {
                if a.similarity(&b) < simdb::db::DEFAULT_MIN_SIMILARITY {
                    continue;
                }
            }
            confirmed += 1;
            let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
            parent[ri] = rj;
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..docs.len() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    let mut out: Vec<(Vec<String>, String)> = groups
        .into_values()
        .filter(|g| g.len() >= 2)
        .map(|g| {
            // Highest priority (none lowest), then earliest.
            let rep = *g
                .iter()
                .min_by(|&&a, &&b| {
                    let pa = docs[a].priority.unwrap_or(f64::NEG_INFINITY);
                    let pb = docs[b].priority.unwrap_or(f64::NEG_INFINITY);
                    let none_a = docs[a].priority.is_none();
                    let none_b = docs[b].priority.is_none();
                    none_a.cmp(&none_b).then(pb.total_cmp(&pa)).then(a.cmp(&b))
                })
                .unwrap();
            let mut ids: Vec<String> = g.iter().map(|&i| docs[i].id.clone()).collect();
            ids.sort();
            (ids, docs[rep].id.clone())
        })
        .collect();
    out.sort();
    out
}

fn shape(cs: &[Cluster]) -> Vec<(Vec<String>, String)> {
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

#[test]
fn one_run_or_ten_nights_give_the_same_clusters_as_brute_force() {
    let t = common::TempDb::new();
    let docs = corpus(21);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let one = t.file("all.jsonl", &all);
    let nights: Vec<std::path::PathBuf> = docs
        .chunks(docs.len().div_ceil(10))
        .enumerate()
        .map(|(n, c)| {
            let text: String = c.iter().map(|d| format!("{}\n", d.line)).collect();
            t.file(&format!("night{n}.jsonl"), text)
        })
        .collect();
    assert_eq!(nights.len(), 10);
    let a_path = t.path().with_file_name("one");
    let b_path = t.path().with_file_name("ten");
    drop(Db::create(&a_path, Recipe::default()).unwrap());
    drop(Db::create(&b_path, Recipe::default()).unwrap());
    let sum_a = ingest_files(&a_path, &[one]);
    let sum_b = ingest_files(&b_path, &nights);
    let a = all_clusters(&Db::open_read_only(&a_path).unwrap());
    let b = all_clusters(&Db::open_read_only(&b_path).unwrap());
    // Same ids, sizes, representatives, members in rank order, distances.
    assert_eq!(a, b);
    // Exactly the components brute force finds, with its representatives.
    let want = brute_force_clusters(&docs);
    assert_eq!(shape(&a), want);
    // The corpus covers what it should: text clusters, merges, priorities.
    assert!(sum_a[0].clusters.merged >= 5, "{:?}", sum_a[0].clusters);
    assert_eq!(sum_a[0].clusters.new, a.len() as u64);
    assert!(a.iter().any(|c| c.members.len() >= 3));
    assert!(a
        .iter()
        .any(|c| c.members[0].priority.is_some() && c.members.len() >= 2));
    let merged_b: u64 = sum_b.iter().map(|s| s.clusters.merged).sum();
    assert_eq!(merged_b, sum_a[0].clusters.merged);
    assert!(sum_b.iter().skip(1).any(|s| s.clusters.grown > 0));
    for p in [&a_path, &b_path] {
        let rep = Db::open_read_only(p).unwrap().admin().verify().unwrap();
        assert!(rep.is_clean(), "{:#?}", rep.problems);
    }
    // A repair rebuilds the same clusters from the records.
    let mut db = Db::open_for_repair(&b_path).unwrap();
    let rep = db.repair().unwrap();
    assert_eq!(rep.clusters, b.len() as u64);
    assert_eq!(all_clusters(&db), b);
    // Every member's `get` names its cluster.
    for c in &b {
        for m in &c.members {
            let mut got = db.clusters().of(&m.id).unwrap().unwrap();
            got.members.iter_mut().for_each(|m| m.ingested_at = 0);
            assert_eq!(got, *c);
        }
    }
}

/// A bare fingerprint document.
fn put(w: &mut simdb::Writer<'_>, id: &str, fp: u64, near: &[&str], priority: Option<f64>) {
    let fp = Fingerprint(fp);
    w.put_placed(
        id,
        fp,
        &Content::Fingerprint(fp),
        "t",
        &simdb::db::Placement {
            priority,
            near: near.iter().map(|s| s.to_string()).collect(),
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

#[test]
fn members_leave_on_delete_and_replace_and_priority_picks_the_representative() {
    let t = common::TempDb::new();
    let mut db = Db::create(t.path(), Recipe::default()).unwrap();
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "a", 1, &[], None);
        put(&mut w, "b", 3, &["a"], None);
        w.commit().unwrap();
        put(&mut w, "c", 7, &["b"], None);
        // Earlier in the same batch counts as stored.
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
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "e", 31, &["d"], Some(5.0));
        w.commit().unwrap();
    }
    let c = db.clusters().of("a").unwrap().unwrap();
    assert_eq!(c.representative, "e");
    assert_eq!(c.size, 5);
    let cid = c.id;
    // The representative leaves: the next in rank takes over; the id stays.
    {
        let mut w = db.writer().unwrap();
        assert!(w.delete("e").unwrap());
        w.commit().unwrap();
    }
    let c = db.clusters().of("a").unwrap().unwrap();
    assert_eq!((c.id, c.representative.as_str(), c.size), (cid, "d", 4));
    // Replaced with content near nothing: it leaves; replaced near its old
    // cluster: it joins again, ranked as a new document.
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "d", 0xffff_0000_0000_0000, &[], None);
        w.commit().unwrap();
    }
    assert_eq!(db.clusters().of("d").unwrap().unwrap().size, 1);
    assert_eq!(
        members(&db, "a"),
        (vec!["a".into(), "b".into(), "c".into()], "a".into())
    );
    {
        let mut w = db.writer().unwrap();
        put(&mut w, "a", 0x0fff_0000_0000_0000, &["d"], None);
        w.commit().unwrap();
    }
    // "a" left for "d"'s cluster (d is older now, so it is the
    // representative); "b" and "c" stay together under the old id.
    assert_eq!(
        members(&db, "d"),
        (vec!["d".into(), "a".into()], "d".into())
    );
    let c = db.clusters().of("b").unwrap().unwrap();
    assert_eq!((c.id, c.size, c.representative.as_str()), (cid, 2, "b"));
    // A cluster left with one member dissolves.
    {
        let mut w = db.writer().unwrap();
        w.delete("b").unwrap();
        w.commit().unwrap();
    }
    let c = db.clusters().of("c").unwrap().unwrap();
    assert_eq!((c.size, c.id), (1, db.get("c").unwrap().unwrap().ord));
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
                near: Vec::new(),
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("priority"), "{err}");
}

#[test]
fn verify_names_damaged_cluster_entries_and_repair_rebuilds_them() {
    let t = common::TempDb::new();
    let docs = corpus(3);
    let all: String = docs.iter().map(|d| format!("{}\n", d.line)).collect();
    let input = t.file("all.jsonl", &all);
    drop(Db::create(t.path(), Recipe::default()).unwrap());
    ingest_files(&t.path(), &[input]);
    let before = all_clusters(&Db::open_read_only(t.path()).unwrap());
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
    let rep = Db::open_read_only(t.path())
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
    let db = Db::open_read_only(t.path()).unwrap();
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
    drop(Db::create(&reference, Recipe::default()).unwrap());
    ingest_files(&reference, std::slice::from_ref(&input));
    let want = all_clusters(&Db::open_read_only(&reference).unwrap());
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
        let rep = Db::open_read_only(&path).unwrap().admin().verify().unwrap();
        assert!(rep.is_clean(), "kill {n}: {:#?}", rep.problems);
        let o = common::simdb(&[&"ingest", &path, &input]);
        assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
        let db = Db::open_read_only(&path).unwrap();
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
    let before = all_clusters(&Db::open_read_only(t.path()).unwrap());
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
    let db = Db::open_read_only(t.path()).unwrap();
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
    let want = all_clusters(&Db::open_read_only(t.path()).unwrap());
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
    assert!(common::stderr(&o).contains("clusters: 0 new, 0 grown, 0 merged"));
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
