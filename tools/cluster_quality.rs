//! How far a cluster's members are from its representative: the figures
//! issue 26 (clusters that do not chain) is measured by, for simdb's
//! clusters beside MinHash LSH + union-find (what text-dedup and datatrove
//! do), in one run.
//!
//! ```text
//! cargo build --release --example cluster_quality
//! target/release/examples/cluster_quality CORPUS.jsonl
//!     [--workload whole|drift|truncated|teaser|both|all] [--keep first,longest,newest]
//!     [--chains 150] [--generations 10] [--rate 4] [--max-docs N] [--seed 1] [--json FILE]
//! ```
//!
//! Workloads, each ingested with `simdb::ingest::run` (the defaults of
//! `simdb ingest`) into a fresh store in input order:
//! - `whole`: the corpus as it is (its own templates and recurring
//!   bulletins);
//! - `truncated`: `--chains` documents of the corpus, each followed by its
//!   first 80% (then, in separate runs, 70% and 60%): the "read more"
//!   repost, a copy contained in its original;
//! - `teaser`: the same copies placed before their original (a teaser
//!   published first, the full text later): what the keep policy keeps;
//! - `drift`: `--chains` documents of the corpus (seeded), each followed by
//!   `--generations` copies, every generation `--rate`% of the characters
//!   of the previous one replaced, inserted or deleted (characters drawn
//!   from the corpus): single linkage pulls whole chains into one cluster.
//!
//! For every cluster of two or more, each member other than the
//! representative is compared with it by the Jaccard similarity of their
//! character 5-grams and 4-grams (letters and digits, lower-cased; the
//! texts come from the input, the store keeps none), and by their
//! sketches (what simdb confirms with). Reported: clusters, the largest,
//! members, those that simdb's rule (sketch similarity at the store's
//! threshold, or containment) does not confirm against their
//! representative (`unconf`; the target is none) and those it confirms by
//! containment (`contnd`), the share below 0.5 (5-grams) and below 0.4
//! (4-grams) against their representative, the content lost by keeping
//! only representatives (the mean share of a member's 5-grams its
//! representative lacks), the largest distance, and for the planted
//! copies the recall into their original's cluster; simdb's ingest time
//! per document. simdb runs once per keep policy (`--keep`). The baseline unions every candidate
//! pair of a MinHash LSH (128 permutations of word 3-shingles, bands for a
//! 0.5 threshold, as datasketch) and takes the earliest member as the
//! representative.

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use simdb::ingest::{self, Input};
use simdb::{Db, Recipe};

mod common;
use common::{char_ngrams, edit_chars, jaccard, MinHashLsh};

struct Args {
    corpus: String,
    workloads: Vec<String>,
    chains: usize,
    generations: usize,
    rate: usize,
    max_docs: usize,
    seed: u64,
    json: Option<String>,
    keep: Vec<simdb::db::KeepPolicy>,
}

fn args() -> Args {
    let mut a = Args {
        corpus: String::new(),
        workloads: vec!["whole".into(), "drift".into()],
        chains: 150,
        generations: 10,
        rate: 4,
        max_docs: usize::MAX,
        seed: 1,
        json: None,
        keep: vec![
            simdb::db::KeepPolicy::First,
            simdb::db::KeepPolicy::Longest,
            simdb::db::KeepPolicy::Newest,
        ],
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--workload" => {
                a.workloads = match val().as_str() {
                    "both" => vec!["whole".into(), "drift".into()],
                    "all" => [
                        "whole",
                        "drift",
                        "truncated80",
                        "truncated70",
                        "truncated60",
                        "teaser80",
                        "teaser60",
                    ]
                    .map(String::from)
                    .to_vec(),
                    "teaser" => ["teaser80", "teaser60"].map(String::from).to_vec(),
                    "truncated" => ["truncated80", "truncated70", "truncated60"]
                        .map(String::from)
                        .to_vec(),
                    w @ ("whole" | "drift") => vec![w.to_string()],
                    w => panic!("--workload {w}: whole, drift, truncated, both or all"),
                }
            }
            "--chains" => a.chains = val().parse().expect("--chains N"),
            "--generations" => a.generations = val().parse().expect("--generations N"),
            "--rate" => a.rate = val().parse().expect("--rate PERCENT"),
            "--max-docs" => a.max_docs = val().parse().expect("--max-docs N"),
            "--seed" => a.seed = val().parse().expect("--seed N"),
            "--json" => a.json = Some(val()),
            "--keep" => {
                a.keep = val()
                    .split(',')
                    .map(|k| k.parse().expect("--keep first,priority,longest,newest"))
                    .collect()
            }
            p if !p.starts_with("--") && a.corpus.is_empty() => a.corpus = p.to_string(),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        !a.corpus.is_empty(),
        "usage: cluster_quality CORPUS.jsonl [options]"
    );
    a
}

/// A workload: documents in input order, and for `drift` the (original,
/// first generation) pairs.
struct Workload {
    name: String,
    docs: Vec<(String, String)>,
    planted: Vec<(String, String)>,
}

impl Workload {
    /// Each document's place in the input, by id.
    fn index(&self) -> HashMap<&str, usize> {
        self.docs
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (id.as_str(), i))
            .collect()
    }
}

/// `--chains` documents of the corpus (seeded), each followed by the copies
/// `copies` makes of it (`(id suffix, text)`, in order); the first copy of
/// each is planted (its recall into the original's cluster is reported).
fn chained<R: Rng>(
    corpus: &[(String, String)],
    a: &Args,
    name: String,
    rng: &mut R,
    copies_first: bool,
    mut copies: impl FnMut(&str, &mut R) -> Vec<(String, String)>,
) -> Workload {
    let originals: Vec<(String, String)> = corpus
        .choose_multiple(rng, a.chains.min(corpus.len()))
        .cloned()
        .collect();
    let mut docs = Vec::new();
    let mut planted = Vec::new();
    for (id, text) in originals {
        let made = copies(&text, rng);
        if let Some((suffix, _)) = made.first() {
            planted.push((id.clone(), format!("{id}#{suffix}")));
        }
        let made = made
            .into_iter()
            .map(|(suffix, t)| (format!("{id}#{suffix}"), t));
        if copies_first {
            docs.extend(made);
            docs.push((id.clone(), text));
        } else {
            docs.push((id.clone(), text));
            docs.extend(made);
        }
    }
    Workload {
        name,
        docs,
        planted,
    }
}

fn drift(corpus: &[(String, String)], a: &Args, rng: &mut impl Rng) -> Workload {
    let pool: Vec<char> = corpus
        .iter()
        .take(2000)
        .flat_map(|(_, t)| t.chars().filter(|c| c.is_alphanumeric()))
        .collect();
    let name = format!(
        "drift ({} chains x {} generations at {}%)",
        a.chains, a.generations, a.rate
    );
    chained(corpus, a, name, rng, false, |text, rng| {
        let mut prev = text.to_string();
        (1..=a.generations)
            .map(|g| {
                let n = (prev.chars().count() * a.rate).div_ceil(100).max(1);
                prev = edit_chars(&prev, n, &pool, rng);
                (format!("g{g}"), prev.clone())
            })
            .collect()
    })
}

/// Each original followed by a copy of its first `pct`% (by characters):
/// the "read more" repost. One fraction per workload, so that no copy
/// reaches its original through another.
/// With `teaser`, the copy comes before its original.
fn truncated(
    corpus: &[(String, String)],
    a: &Args,
    pct: usize,
    teaser: bool,
    rng: &mut impl Rng,
) -> Workload {
    let name = match teaser {
        false => format!("truncated ({} originals, first {pct}%)", a.chains),
        true => format!("teaser ({} originals, first {pct}% before them)", a.chains),
    };
    chained(corpus, a, name, rng, teaser, |text, _| {
        let cut = text
            .chars()
            .take(text.chars().count() * pct / 100)
            .collect();
        vec![(format!("first{pct}"), cut)]
    })
}

/// A system's clusters: each a representative and its other members, ids
/// as indexes into the workload's documents.
struct Clusters {
    groups: Vec<(usize, Vec<usize>)>,
    seconds: f64,
    max_distance: Option<u32>,
}

fn simdb_clusters(w: &Workload, dir: &std::path::Path, keep: simdb::db::KeepPolicy) -> Clusters {
    let input = dir.join("input.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).expect("input file"));
        for (id, text) in &w.docs {
            writeln!(f, "{}", json!({"id": id, "text": text})).expect("write input");
        }
    }
    let store = dir.join("store");
    let mut db = Db::options()
        .create(&store, Recipe::default())
        .expect("create store");
    db.maintenance().set_keep_policy(keep).expect("keep policy");
    let t = Instant::now();
    ingest::run(
        &mut db,
        &[Input::guess(&input)],
        &Default::default(),
        |_| {},
    )
    .expect("ingest");
    let seconds = t.elapsed().as_secs_f64();
    let index = w.index();
    let mut groups = Vec::new();
    let mut max_distance = 0;
    db.clusters()
        .each(2, |c| {
            max_distance = max_distance.max(c.max_distance);
            let rep = index[c.representative.as_str()];
            let rest = c
                .members
                .iter()
                .filter(|m| m.id != c.representative)
                .map(|m| index[m.id.as_str()])
                .collect();
            groups.push((rep, rest));
            Ok(())
        })
        .expect("clusters");
    drop(db);
    std::fs::remove_dir_all(&store).expect("remove store");
    Clusters {
        groups,
        seconds,
        max_distance: Some(max_distance),
    }
}

fn lsh_clusters(w: &Workload, seed: u64) -> Clusters {
    let jieba = jieba_rs::Jieba::new();
    let t = Instant::now();
    let mut lsh = MinHashLsh::new(0.5, seed);
    let mut parent: Vec<usize> = (0..w.docs.len()).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for (i, (_, text)) in w.docs.iter().enumerate() {
        let sig = lsh.signature(&jieba, text);
        for j in lsh.query(&sig) {
            let (a, b) = (find(&mut parent, i), find(&mut parent, j as usize));
            // The root is the earliest document: the representative.
            parent[a.max(b)] = a.min(b);
        }
        lsh.insert(i as u32, &sig);
    }
    let mut by_root: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..w.docs.len() {
        let r = find(&mut parent, i);
        if r != i {
            by_root.entry(r).or_default().push(i);
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = by_root.into_iter().collect();
    groups.sort();
    Clusters {
        groups,
        seconds: t.elapsed().as_secs_f64(),
        max_distance: None,
    }
}

/// The share of `m`'s n-grams (sorted, distinct) that `rep` lacks.
fn missing(m: &[u64], rep: &[u64]) -> f64 {
    if m.is_empty() {
        return 0.0;
    }
    let lacking = m.iter().filter(|g| rep.binary_search(g).is_err()).count();
    lacking as f64 / m.len() as f64
}

/// Each document's fingerprint and sketch, as a default store makes them.
struct Analysed(
    Vec<(
        simdb::Fingerprint,
        Option<simdb::Sketch>,
        Option<simdb::fingerprint::FineSketch>,
    )>,
);

impl Analysed {
    fn of(w: &Workload) -> Analysed {
        let f = simdb::Fingerprinter::new(Recipe::default());
        Analysed(
            w.docs
                .iter()
                .map(|(_, t)| match f.analyze(t) {
                    Ok(a) => (a.fingerprint, a.sketch, a.fine),
                    Err(_) => (simdb::Fingerprint(0), None, None),
                })
                .collect(),
        )
    }

    /// The sketch similarity of documents `a` and `b` (1 without sketches).
    fn similarity(&self, a: usize, b: usize) -> f64 {
        match (self.0[a].1, self.0[b].1) {
            (Some(x), Some(y)) => x.similarity(&y),
            _ => 1.0,
        }
    }

    /// How simdb's rule confirms member `m` against its representative
    /// `rep` (by containment only if `m` is the shorter, whichever came
    /// first): as [`Analysed::confirms`].
    fn member_confirmed(&self, w: &Workload, m: usize, rep: usize) -> Option<bool> {
        self.confirms(w, m, rep)
    }

    /// How simdb's rule confirms the pair `a`, `b` of the input: by
    /// containment only if the later one is the shorter.
    fn confirmed(&self, w: &Workload, a: usize, b: usize) -> Option<bool> {
        self.confirms(w, a.max(b), a.min(b))
    }

    /// How simdb's rule confirms `a` against `b` at the default threshold,
    /// by containment only if `a` is the shorter (`Some(false)`: by
    /// similarity, `Some(true)`: by containment; `None`: not at all).
    fn confirms(&self, w: &Workload, a: usize, b: usize) -> Option<bool> {
        let lengths = (w.docs[a].1.len() as u64, w.docs[b].1.len() as u64);
        // The store's estimate: refined by the fine sketches near the
        // threshold; two documents without sketches are taken on trust.
        let min = simdb::db::DEFAULT_MIN_SIMILARITY;
        let (x, y) = (&self.0[a], &self.0[b]);
        let e = simdb::db::estimate(
            (x.1.as_ref(), x.2.as_ref()),
            (y.1.as_ref(), y.2.as_ref()),
            min,
        )
        .or(Some(simdb::db::Estimate {
            similarity: 1.0,
            refined: false,
        }));
        simdb::db::confirm_estimate(e, min, || Ok(Some(lengths)))
            .ok()
            .flatten()
            .map(|c| c.is_some())
    }
}

/// What the sketch and the fingerprint do with the planted copies of a
/// truncation workload: the distance of each copy from its original, the
/// share whose sketch similarity is below the threshold, and of those the
/// share simdb's containment rule confirms (and what other settings of
/// its floor and least containment would).
fn truncation_diagnosis(w: &Workload, an: &Analysed) -> serde_json::Value {
    let index = w.index();
    let threshold = simdb::db::DEFAULT_MIN_SIMILARITY;
    // (floor, least containment) settings, the library's first, in either
    // direction (the library's rule takes only a later, shorter copy).
    let settings = [
        (simdb::db::CONTAINMENT_FLOOR, simdb::db::MIN_CONTAINMENT),
        (0.35, 0.85),
        (0.45, 0.9),
        (0.5, 0.9),
    ];
    let mut accepted = [0usize; 4];
    let (mut distances, mut below, mut contained) = (Vec::new(), 0usize, 0usize);
    for (o, c) in &w.planted {
        let (o, c) = (index[o.as_str()], index[c.as_str()]);
        distances.push(an.0[o].0.distance(an.0[c].0));
        let j = an.similarity(o, c);
        if j < threshold {
            below += 1;
            contained += usize::from(an.confirmed(w, o, c).is_some());
            let (lo, lc) = (w.docs[o].1.len() as u64, w.docs[c].1.len() as u64);
            let est = simdb::fingerprint::containment(j, lo, lc).unwrap_or(0.0);
            for (n, (floor, least)) in settings.iter().enumerate() {
                accepted[n] += usize::from(j >= *floor && est >= *least);
            }
        }
    }
    println!("containment settings (floor, least) -> of those below, accepted: {settings:?} -> {accepted:?}");
    distances.sort_unstable();
    let q = |p: usize| {
        distances
            .get(distances.len() * p / 100)
            .copied()
            .unwrap_or(0)
    };
    let n = w.planted.len().max(1) as f64;
    println!(
        "planted copies: distance median {} p90 {}; sketch below {threshold}: {:.3}; of those, confirmed by containment: {}",
        q(50),
        q(90),
        below as f64 / n,
        contained
    );
    json!({"distance_median": q(50), "distance_p90": q(90),
           "sketch_below_threshold": below as f64 / n, "confirmed_by_containment": contained,
           "containment_settings": settings, "accepted_by_setting": accepted})
}

fn report(w: &Workload, an: &Analysed, system: &str, c: &Clusters) -> serde_json::Value {
    let grams =
        |n: usize| -> Vec<Vec<u64>> { w.docs.iter().map(|(_, t)| char_ngrams(t, n)).collect() };
    let (g5, g4) = (grams(5), grams(4));
    let (mut members, mut below5, mut below4) = (0usize, 0usize, 0usize);
    let mut lost = 0.0;
    let (mut unconfirmed, mut contained) = (0usize, 0usize);
    let mut largest = 0usize;
    let mut cluster_of: HashMap<usize, usize> = HashMap::new();
    for (k, (rep, rest)) in c.groups.iter().enumerate() {
        largest = largest.max(rest.len() + 1);
        cluster_of.insert(*rep, k);
        for &m in rest {
            cluster_of.insert(m, k);
            members += 1;
            below5 += usize::from(jaccard(&g5[*rep], &g5[m]) < 0.5);
            below4 += usize::from(jaccard(&g4[*rep], &g4[m]) < 0.4);
            lost += missing(&g5[m], &g5[*rep]);
            match an.member_confirmed(w, m, *rep) {
                None => unconfirmed += 1,
                Some(by_containment) => contained += usize::from(by_containment),
            }
        }
    }
    let index = w.index();
    let recall = (!w.planted.is_empty()).then(|| {
        let found = w
            .planted
            .iter()
            .filter(|(o, g)| {
                let (o, g) = (index[o.as_str()], index[g.as_str()]);
                cluster_of
                    .get(&o)
                    .is_some_and(|k| cluster_of.get(&g) == Some(k))
            })
            .count();
        found as f64 / w.planted.len() as f64
    });
    let share = |n: usize| n as f64 / members.max(1) as f64;
    println!(
        "{system:<28} {:>8} {:>8} {:>8} {:>6} {:>6} {:>7} ({:>5.3}) {:>7} ({:>5.3}) {:>6.3} {:>6} {:>8} {:>10.1}",
        c.groups.len(),
        largest,
        members,
        unconfirmed,
        contained,
        below5,
        share(below5),
        below4,
        share(below4),
        lost / members.max(1) as f64,
        c.max_distance.map_or("-".into(), |d| d.to_string()),
        recall.map_or("-".into(), |r| format!("{r:.3}")),
        c.seconds * 1e6 / w.docs.len() as f64,
    );
    json!({
        "system": system, "clusters": c.groups.len(), "largest": largest, "members": members,
        "not_confirmed_by_representative": unconfirmed,
        "confirmed_by_containment": contained,
        "below_0_5_char5": below5, "below_0_4_char4": below4,
        "content_lost": lost / members.max(1) as f64,
        "max_distance": c.max_distance, "first_generation_recall": recall,
        "microseconds_per_document": c.seconds * 1e6 / w.docs.len() as f64,
    })
}

fn main() {
    let a = args();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(a.seed);
    let mut corpus = common::read_corpus(&a.corpus);
    corpus.truncate(a.max_docs);
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut out = Vec::new();
    for name in &a.workloads {
        let w = match name.as_str() {
            "whole" => Workload {
                name: format!("whole corpus ({} documents)", corpus.len()),
                docs: corpus.clone(),
                planted: Vec::new(),
            },
            t if t.starts_with("truncated") => {
                let pct = t["truncated".len()..].parse().expect("a percentage");
                truncated(&corpus, &a, pct, false, &mut rng)
            }
            t if t.starts_with("teaser") => {
                let pct = t["teaser".len()..].parse().expect("a percentage");
                truncated(&corpus, &a, pct, true, &mut rng)
            }
            _ => drift(&corpus, &a, &mut rng),
        };
        println!(
            "\n== {} of {}: {} documents",
            w.name,
            a.corpus,
            w.docs.len()
        );
        println!(
            "{:<28} {:>8} {:>8} {:>8} {:>6} {:>6} {:>15} {:>15} {:>6} {:>6} {:>8} {:>10}",
            "system",
            "clusters",
            "largest",
            "members",
            "unconf",
            "contnd",
            "<0.5 5-gram",
            "<0.4 4-gram",
            "lost",
            "max d",
            "recall",
            "us/doc"
        );
        let an = Analysed::of(&w);
        let mut systems = Vec::new();
        for keep in &a.keep {
            let s = simdb_clusters(&w, dir.path(), *keep);
            systems.push(report(&w, &an, &format!("simdb (keep {keep})"), &s));
        }
        let l = lsh_clusters(&w, a.seed);
        systems.push(report(&w, &an, "minhash lsh + union-find", &l));
        let diagnosis = (name.starts_with("truncated") || name.starts_with("teaser"))
            .then(|| truncation_diagnosis(&w, &an));
        out.push(json!({
            "workload": w.name, "documents": w.docs.len(), "systems": systems,
            "planted_copies": diagnosis,
        }));
    }
    if let Some(p) = &a.json {
        std::fs::write(
            p,
            serde_json::to_string_pretty(&json!({"corpus": a.corpus, "runs": out})).expect("json"),
        )
        .expect("write --json");
    }
}
