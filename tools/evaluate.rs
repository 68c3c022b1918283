//! Detection quality on real text: planted near-duplicates per edit kind and
//! rate, false pairs among distinct corpus documents, labelled pair sets;
//! per k (0..=11), per recipe, with and without the verification sketch.
//!
//! ```text
//! cargo run --release --example evaluate -- \
//!     --corpus ../shared/corpora/zh_news_xwlb.jsonl --corpus ../shared/corpora/en_bbc_news.jsonl \
//!     --pairs ../shared/corpora/pairs_zh_pawsx.jsonl --sample 300 --seed 1 --out /tmp/eval
//! ```
//!
//! For each corpus and recipe:
//! - Planted pairs: `--sample` documents per edit kind are copied with one
//!   kind of edit: word insertions, deletions or substitutions at 1, 2, 5
//!   and 10% of the words (inserted and substituted words are drawn from the
//!   corpus's own words), sentence reordering, a shared 40-word footer
//!   appended (the same footer on every copy), truncation by 10% and 25%.
//!   Recall at k = share of copies within k bits of their original (and,
//!   verified, whose sketch similarity is also >= the threshold).
//! - Corpus pairs: every pair of original documents within 11 bits, split
//!   into textual near-duplicates (Jaccard of character 5-gram sets >= 0.5)
//!   and distinct documents (< 0.5). The *false share* at k is distinct
//!   pairs / pairs within k (the issue's "share of flagged pairs that are
//!   not near-copies").
//! - F1 at k: precision = true pairs / flagged pairs over the originals
//!   plus the planted copies (a flagged pair is true if it is a planted
//!   pair or a corpus near-duplicate, false if a distinct corpus pair);
//!   recall = planted recall over all kinds.
//! - Labelled pairs (`{"a","b","label"}`): precision, recall and F1 of
//!   "within k" (and verified) against the label.
//!
//! Output: tables on stdout, `eval.json` and `eval.svg` (recall and pair
//! precision = 1 - false share, against k, first recipe) in `--out`. Corpus text is read
//! from the given paths and never copied anywhere.

use std::io::Write;
use std::path::PathBuf;

#[path = "common.rs"]
mod common;

use clap::Parser;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde_json::json;
use simdb::fingerprint::{Sketch, MAX_EXACT_K};
use simdb::index::MemIndex;
use simdb::{Fingerprint, Fingerprinter, Recipe};

#[derive(Parser)]
struct Args {
    /// A JSONL corpus `{"id","text"}` (repeatable).
    #[arg(long)]
    corpus: Vec<PathBuf>,
    /// A JSONL labelled pair set `{"a","b","label"}` (repeatable).
    #[arg(long)]
    pairs: Vec<PathBuf>,
    /// Planted copies per edit kind.
    #[arg(long, default_value_t = 300)]
    sample: usize,
    /// Use at most this many corpus documents (0 = all).
    #[arg(long, default_value_t = 0)]
    max_docs: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Recipes as TOPK/SHINGLE[+log][+stop][+learned], comma-separated;
    /// the first is plotted.
    #[arg(
        long,
        default_value = "0/2,5/1,20/1,0/1,0/3,0/2+log,0/2+stop,0/2+learned,0/2+log+learned"
    )]
    recipes: String,
    /// Sketch similarity a candidate needs to be confirmed.
    #[arg(long, default_value_t = simdb::db::DEFAULT_MIN_SIMILARITY)]
    threshold: f64,
    /// Where eval.json and eval.svg go.
    #[arg(long, default_value = "eval-out")]
    out: PathBuf,
}

const KS: usize = MAX_EXACT_K as usize + 1;

struct Sig {
    fp: Option<Fingerprint>,
    sketch: Option<Sketch>,
}

fn sig(f: &Fingerprinter, text: &str) -> Sig {
    match f.analyze(text) {
        Ok(a) => Sig {
            fp: Some(a.fingerprint),
            sketch: a.sketch,
        },
        Err(_) => Sig {
            fp: None,
            sketch: None,
        },
    }
}

/// (distance, sketch similarity) of two signatures; None if either has no
/// fingerprint (a text with a fingerprint always has a sketch).
fn compare(a: &Sig, b: &Sig) -> Option<(u32, f64)> {
    let d = a.fp?.distance(b.fp?);
    let s = match (&a.sketch, &b.sketch) {
        (Some(x), Some(y)) => x.similarity(y),
        _ => 0.0,
    };
    Some((d, s))
}

/// Word tokens (jieba for Chinese, its Latin runs for other text) and the
/// separators between them, so edits keep the rest of the text intact.
fn tokens(jieba: &jieba_rs::Jieba, text: &str) -> Vec<String> {
    jieba
        .cut(text, false)
        .into_iter()
        .map(|t| t.word.to_string())
        .collect()
}

fn is_word(t: &str) -> bool {
    t.chars().any(char::is_alphanumeric)
}

#[derive(Clone, Copy)]
enum Edit {
    Insert(u32),
    Delete(u32),
    Substitute(u32),
    Reorder,
    Footer,
    Truncate(u32),
}

impl Edit {
    fn all() -> Vec<Edit> {
        let mut v = Vec::new();
        for r in [1, 2, 5, 10] {
            v.push(Edit::Insert(r));
            v.push(Edit::Delete(r));
            v.push(Edit::Substitute(r));
        }
        v.extend([
            Edit::Reorder,
            Edit::Footer,
            Edit::Truncate(10),
            Edit::Truncate(25),
        ]);
        v
    }

    fn name(self) -> String {
        match self {
            Edit::Insert(r) => format!("insert {r}%"),
            Edit::Delete(r) => format!("delete {r}%"),
            Edit::Substitute(r) => format!("substitute {r}%"),
            Edit::Reorder => "reorder sentences".into(),
            Edit::Footer => "shared footer".into(),
            Edit::Truncate(r) => format!("truncate {r}%"),
        }
    }

    fn apply(
        self,
        jieba: &jieba_rs::Jieba,
        text: &str,
        pool: &[String],
        footer: &str,
        rng: &mut impl Rng,
    ) -> String {
        let sep = if text.is_ascii() { " " } else { "" };
        match self {
            Edit::Insert(r) | Edit::Delete(r) | Edit::Substitute(r) => {
                let mut toks = tokens(jieba, text);
                let words: Vec<usize> = (0..toks.len()).filter(|&i| is_word(&toks[i])).collect();
                let n = ((words.len() as f64 * f64::from(r) / 100.0).round() as usize).max(1);
                for &i in words.choose_multiple(rng, n) {
                    let w = pool.choose(rng).expect("a word pool");
                    match self {
                        Edit::Insert(_) => toks[i] = format!("{}{sep}{w}", toks[i]),
                        Edit::Delete(_) => toks[i].clear(),
                        _ => toks[i] = w.clone(),
                    }
                }
                toks.concat()
            }
            Edit::Reorder => {
                let mut sentences: Vec<&str> = text
                    .split_inclusive(['。', '！', '？', '.', '!', '?', '\n'])
                    .collect();
                if sentences.len() < 2 {
                    return text.to_string();
                }
                // A real reordering: shuffle until the order changes.
                let before = sentences.clone();
                while sentences == before {
                    sentences.shuffle(rng);
                }
                sentences.concat()
            }
            Edit::Footer => format!("{text}\n{footer}"),
            Edit::Truncate(r) => {
                let n = text.chars().count();
                let keep = n - n * r as usize / 100;
                text.chars().take(keep).collect()
            }
        }
    }
}

#[derive(Default, Clone, serde::Serialize)]
struct Counts {
    /// Per k: count within k (unverified, verified).
    within: Vec<[u64; 2]>,
    total: u64,
}

impl Counts {
    fn new() -> Counts {
        Counts {
            within: vec![[0; 2]; KS],
            total: 0,
        }
    }
    fn add(&mut self, d: Option<(u32, f64)>, threshold: f64) {
        self.total += 1;
        if let Some((d, s)) = d {
            for k in d as usize..KS {
                self.within[k][0] += 1;
                if s >= threshold {
                    self.within[k][1] += 1;
                }
            }
        }
    }
    fn rate(&self, k: usize, v: usize) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.within[k][v] as f64 / self.total as f64
        }
    }
}

fn f1(p: f64, r: f64) -> f64 {
    if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    }
}

/// A recipe to compare: `TOPK/SHINGLE` with optional `+log` (1 + ln tf),
/// `+stop` (stop words kept), `+learned` (IDF learned from the corpus and
/// the planted copies, as `simdb init --learn-idf` would).
#[derive(Clone, Copy)]
struct Variant {
    top_k: u32,
    shingle: u32,
    log_tf: bool,
    keep_stop: bool,
    learned: bool,
}

impl Variant {
    fn recipe(&self) -> Recipe {
        let mut r = Recipe::with(self.top_k, self.shingle, false);
        if self.log_tf {
            r = r.with_log_tf();
        }
        if self.keep_stop {
            r = r.keeping_stop_words();
        }
        r
    }

    fn fingerprinter<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> Fingerprinter {
        let f = Fingerprinter::new(self.recipe());
        if !self.learned {
            return f;
        }
        let table = simdb::fingerprint::LearnedIdf::learn(&f, texts);
        Fingerprinter::with_learned_idf(self.recipe().with_learned_idf(&table), table)
            .expect("the recipe names the table")
    }

    fn name(&self) -> String {
        let terms = if self.top_k == 0 {
            "all terms".to_string()
        } else {
            format!("top-{} keywords", self.top_k)
        };
        let mut n = match self.shingle {
            1 => terms,
            2 => format!("{terms} + word bigrams"),
            k => format!("{terms} + word {k}-grams"),
        };
        if self.log_tf {
            n += ", log tf";
        }
        if self.keep_stop {
            n += ", stop words kept";
        }
        if self.learned {
            n += ", learned IDF";
        }
        n
    }
}

fn parse_recipes(s: &str) -> Vec<Variant> {
    s.split(',')
        .map(|r| {
            let mut parts = r.split('+');
            let (a, b) = parts
                .next()
                .and_then(|p| p.split_once('/'))
                .expect("recipe as TOPK/SHINGLE[+log][+stop][+learned]");
            let mut v = Variant {
                top_k: a.parse().expect("TOPK"),
                shingle: b.parse().expect("SHINGLE"),
                log_tf: false,
                keep_stop: false,
                learned: false,
            };
            for p in parts {
                match p {
                    "log" => v.log_tf = true,
                    "stop" => v.keep_stop = true,
                    "learned" => v.learned = true,
                    other => panic!("unknown recipe option {other:?}"),
                }
            }
            v
        })
        .collect()
}

fn main() {
    let args = Args::parse();
    if args.corpus.is_empty() && args.pairs.is_empty() {
        eprintln!("evaluate: give at least one --corpus or --pairs (see --help)");
        std::process::exit(2);
    }
    std::fs::create_dir_all(&args.out).expect("create --out");
    let recipes = parse_recipes(&args.recipes);
    let jieba = jieba_rs::Jieba::new();
    let mut report = serde_json::Map::new();
    report.insert("seed".into(), json!(args.seed));
    report.insert("sample_per_kind".into(), json!(args.sample));
    report.insert("threshold".into(), json!(args.threshold));
    let mut corpora_json = Vec::new();
    let mut plot_series: Vec<simdb::plot::Series> = Vec::new();

    for path in &args.corpus {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let docs = common::load_corpus(path, args.max_docs);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
        let pool = common::corpus_words(&jieba, &docs, &mut rng);
        let ascii = docs.iter().take(200).all(|(_, t)| t.is_ascii());
        let footer: String = (0..40)
            .map(|_| pool.choose(&mut rng).unwrap().clone())
            .collect::<Vec<_>>()
            .join(if ascii { " " } else { "" });
        // Planted copies: (kind index, original, copy text).
        let kinds = Edit::all();
        let mut planted: Vec<(usize, usize, String)> = Vec::new();
        let ids: Vec<usize> = (0..docs.len()).collect();
        for (ki, kind) in kinds.iter().enumerate() {
            for &i in ids.choose_multiple(&mut rng, args.sample.min(docs.len())) {
                let copy = kind.apply(&jieba, &docs[i].1, &pool, &footer, &mut rng);
                planted.push((ki, i, copy));
            }
        }
        let shingles: Vec<Vec<u64>> = docs
            .par_iter()
            .map(|(_, t)| common::char_shingles(t))
            .collect();
        println!(
            "\n== {name}: {} documents, {} planted copies ({} per kind), seed {}, threshold {}",
            docs.len(),
            planted.len(),
            args.sample,
            args.seed,
            args.threshold
        );
        let mut recipes_json = Vec::new();
        for (ri, variant) in recipes.iter().enumerate() {
            let (top_k, shingle) = (variant.top_k, variant.shingle);
            let f = variant.fingerprinter(
                docs.iter()
                    .map(|d| d.1.as_str())
                    .chain(planted.iter().map(|p| p.2.as_str())),
            );
            let sigs: Vec<Sig> = docs.par_iter().map(|(_, t)| sig(&f, t)).collect();
            let copies: Vec<Sig> = planted.par_iter().map(|(_, _, t)| sig(&f, t)).collect();
            let mut per_kind = vec![Counts::new(); kinds.len()];
            let mut all_planted = Counts::new();
            for ((ki, i, _), c) in planted.iter().zip(&copies) {
                let d = compare(&sigs[*i], c);
                per_kind[*ki].add(d, args.threshold);
                all_planted.add(d, args.threshold);
            }
            // Corpus pairs within MAX_EXACT_K.
            let mut idx = MemIndex::new();
            for (i, s) in sigs.iter().enumerate() {
                if let Some(fp) = s.fp {
                    idx.insert(&i.to_string(), fp);
                }
            }
            let pairs: Vec<(usize, usize, u32)> = sigs
                .par_iter()
                .enumerate()
                .flat_map_iter(|(i, s)| {
                    let hits =
                        s.fp.map(|fp| idx.query(fp, MAX_EXACT_K))
                            .unwrap_or_default();
                    hits.into_iter().filter_map(move |h| {
                        let j: usize = h.id.parse().unwrap();
                        (j > i).then_some((i, j, h.distance))
                    })
                })
                .collect();
            // (distance, verified, near-duplicate)
            let judged: Vec<(u32, bool, bool)> = pairs
                .par_iter()
                .map(|&(i, j, d)| {
                    let (_, s) = compare(&sigs[i], &sigs[j]).unwrap();
                    (
                        d,
                        s >= args.threshold,
                        common::jaccard(&shingles[i], &shingles[j]) >= 0.5,
                    )
                })
                .collect();
            let mut flagged = [[0u64; 2]; KS];
            let mut distinct = [[0u64; 2]; KS];
            for &(d, ver, near) in &judged {
                for k in d as usize..KS {
                    flagged[k][0] += 1;
                    distinct[k][0] += u64::from(!near);
                    if ver {
                        flagged[k][1] += 1;
                        distinct[k][1] += u64::from(!near);
                    }
                }
            }
            let no_features = sigs.iter().filter(|s| s.fp.is_none()).count();
            let mut by_k = Vec::new();
            for k in 0..KS {
                let mut row = serde_json::Map::new();
                for (v, tag) in [(0, "plain"), (1, "verified")] {
                    let recall = all_planted.rate(k, v);
                    let tp = all_planted.within[k][v] + (flagged[k][v] - distinct[k][v]);
                    let fp = distinct[k][v];
                    let precision = if tp + fp == 0 {
                        1.0
                    } else {
                        tp as f64 / (tp + fp) as f64
                    };
                    let false_share = if flagged[k][v] == 0 {
                        0.0
                    } else {
                        distinct[k][v] as f64 / flagged[k][v] as f64
                    };
                    row.insert(
                        tag.into(),
                        json!({
                            "recall": recall, "precision": precision, "f1": f1(precision, recall),
                            "corpus_pairs": flagged[k][v], "distinct_pairs": distinct[k][v],
                            "false_share": false_share,
                            "recall_by_kind": kinds.iter().zip(&per_kind)
                                .map(|(kd, c)| (kd.name(), json!(c.rate(k, v))))
                                .collect::<serde_json::Map<_, _>>(),
                        }),
                    );
                }
                row.insert("k".into(), json!(k));
                by_k.push(serde_json::Value::Object(row));
            }
            let rn = variant.name();
            println!("\n-- recipe: {rn} (top_k={top_k}, shingle={shingle}); {no_features} documents without features");
            println!(
                "{:>3} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8} | verified: {:>8} {:>8} {:>8} {:>9} {:>8}",
                "k",
                "recall",
                "prec",
                "F1",
                "pairs",
                "distinct",
                "false%",
                "recall",
                "prec",
                "F1",
                "pairs",
                "false%"
            );
            for row in &by_k {
                let p = &row["plain"];
                let v = &row["verified"];
                println!(
                    "{:>3} {:>8.4} {:>8.4} {:>8.4} {:>9} {:>9} {:>7.2}% | verified: {:>8.4} {:>8.4} {:>8.4} {:>9} {:>7.2}%",
                    row["k"],
                    p["recall"].as_f64().unwrap(),
                    p["precision"].as_f64().unwrap(),
                    p["f1"].as_f64().unwrap(),
                    p["corpus_pairs"],
                    p["distinct_pairs"],
                    100.0 * p["false_share"].as_f64().unwrap(),
                    v["recall"].as_f64().unwrap(),
                    v["precision"].as_f64().unwrap(),
                    v["f1"].as_f64().unwrap(),
                    v["corpus_pairs"],
                    100.0 * v["false_share"].as_f64().unwrap(),
                );
            }
            {
                println!("\nrecall by edit kind (recipe {rn}), plain / verified:");
                print!("{:<20}", "kind");
                for k in [0, 3, 5, 7, 9, 11] {
                    print!(" {:>13}", format!("k={k}"));
                }
                println!();
                for (kd, c) in kinds.iter().zip(&per_kind) {
                    print!("{:<20}", kd.name());
                    for k in [0, 3, 5, 7, 9, 11] {
                        print!(
                            " {:>13}",
                            format!("{:.3}/{:.3}", c.rate(k, 0), c.rate(k, 1))
                        );
                    }
                    println!();
                }
                // Threshold sweep at k = 3 and k = 7.
                println!("\nthreshold sweep (recipe {rn}): recall / false share of corpus pairs");
                let mut sweep = Vec::new();
                for t in [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8] {
                    let mut line = format!("  t={t:.1}");
                    let mut entry = serde_json::Map::new();
                    entry.insert("threshold".into(), json!(t));
                    for k in [3u32, 7] {
                        let found = planted
                            .iter()
                            .zip(&copies)
                            .filter(|((_, i, _), c)| {
                                compare(&sigs[*i], c).is_some_and(|(d, s)| d <= k && s >= t)
                            })
                            .count();
                        let (mut fl, mut di) = (0u64, 0u64);
                        for &(i, j, d) in &pairs {
                            if d <= k && compare(&sigs[i], &sigs[j]).unwrap().1 >= t {
                                fl += 1;
                                di += u64::from(common::jaccard(&shingles[i], &shingles[j]) < 0.5);
                            }
                        }
                        let r = found as f64 / planted.len() as f64;
                        let fs = if fl == 0 { 0.0 } else { di as f64 / fl as f64 };
                        line += &format!(
                            "   k={k}: recall {r:.4}, pairs {fl}, distinct {di} ({:.2}%)",
                            100.0 * fs
                        );
                        entry.insert(
                            format!("k{k}"),
                            json!({"recall": r, "pairs": fl, "distinct": di}),
                        );
                    }
                    println!("{line}");
                    sweep.push(serde_json::Value::Object(entry));
                }
                for v in [0usize, 1].into_iter().filter(|_| ri == 0) {
                    let tag = if v == 1 { " (verified)" } else { "" };
                    let group = corpora_json.len();
                    plot_series.push(simdb::plot::Series {
                        label: format!("{name} recall{tag}"),
                        values: (0..KS).map(|k| all_planted.rate(k, v)).collect(),
                        group,
                        dashed: v == 1,
                        thin: false,
                    });
                    plot_series.push(simdb::plot::Series {
                        label: format!("{name} pair precision{tag}"),
                        values: by_k
                            .iter()
                            .map(|r| {
                                1.0 - r[if v == 1 { "verified" } else { "plain" }]["false_share"]
                                    .as_f64()
                                    .unwrap()
                            })
                            .collect(),
                        group,
                        dashed: v == 1,
                        thin: true,
                    });
                }
                recipes_json.push(json!({"recipe": rn, "top_k": top_k, "shingle": shingle,
                    "no_features": no_features, "by_k": by_k, "threshold_sweep": sweep}));
            }
        }
        // The comparison: every recipe at k = 3 (plain and verified).
        println!("\ncomparison at k=3 on {name} (markdown):");
        println!("| recipe | recall | precision | F1 | corpus pairs | distinct share | verified recall | verified F1 | verified distinct share |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in &recipes_json {
            let row = &r["by_k"][3];
            let (p, v) = (&row["plain"], &row["verified"]);
            println!(
                "| {} | {:.3} | {:.4} | {:.3} | {} | {:.1}% | {:.3} | {:.3} | {:.1}% |",
                r["recipe"].as_str().unwrap(),
                p["recall"].as_f64().unwrap(),
                p["precision"].as_f64().unwrap(),
                p["f1"].as_f64().unwrap(),
                p["corpus_pairs"],
                100.0 * p["false_share"].as_f64().unwrap(),
                v["recall"].as_f64().unwrap(),
                v["f1"].as_f64().unwrap(),
                100.0 * v["false_share"].as_f64().unwrap(),
            );
        }
        corpora_json.push(json!({"corpus": name, "documents": docs.len(),
            "planted": planted.len(), "recipes": recipes_json}));
    }
    report.insert("corpora".into(), json!(corpora_json));

    let mut pairs_json = Vec::new();
    for path in &args.pairs {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let pairs = read_pairs(path);
        let f = recipes[0].fingerprinter(pairs.iter().flat_map(|p| [p.0.as_str(), p.1.as_str()]));
        let judged: Vec<(Option<(u32, f64)>, bool)> = pairs
            .par_iter()
            .map(|(a, b, l)| (compare(&sig(&f, a), &sig(&f, b)), *l))
            .collect();
        let positives = judged.iter().filter(|j| j.1).count() as u64;
        let no_feat = judged.iter().filter(|j| j.0.is_none()).count();
        println!(
            "\n== {name}: {} labelled pairs ({positives} label 1, {no_feat} with a side without features), recipe {}",
            pairs.len(),
            recipes[0].name()
        );
        println!(
            "{:>3} {:>9} {:>9} {:>8} {:>8} {:>8} | verified: {:>9} {:>8} {:>8} {:>8}",
            "k",
            "predicted",
            "correct",
            "prec",
            "recall",
            "F1",
            "predicted",
            "prec",
            "recall",
            "F1"
        );
        let mut by_k = Vec::new();
        for k in 0..KS as u32 {
            let mut row = serde_json::Map::new();
            row.insert("k".into(), json!(k));
            let mut line = format!("{k:>3}");
            for (v, tag) in [(0, "plain"), (1, "verified")] {
                let pred: Vec<bool> = judged
                    .iter()
                    .map(|(d, _)| d.is_some_and(|(d, s)| d <= k && (v == 0 || s >= args.threshold)))
                    .collect();
                let np = pred.iter().filter(|p| **p).count() as u64;
                let tp = pred.iter().zip(&judged).filter(|(p, j)| **p && j.1).count() as u64;
                let p = if np == 0 { 1.0 } else { tp as f64 / np as f64 };
                let r = if positives == 0 {
                    0.0
                } else {
                    tp as f64 / positives as f64
                };
                if v == 0 {
                    line += &format!(" {np:>9} {tp:>9} {p:>8.4} {r:>8.4} {:>8.4} |", f1(p, r));
                } else {
                    line += &format!(" verified: {np:>9} {p:>8.4} {r:>8.4} {:>8.4}", f1(p, r));
                }
                row.insert(
                    tag.into(),
                    json!({"predicted": np, "correct": tp, "precision": p, "recall": r, "f1": f1(p, r)}),
                );
            }
            println!("{line}");
            by_k.push(serde_json::Value::Object(row));
        }
        pairs_json.push(
            json!({"pairs": name, "count": pairs.len(), "positives": positives,
            "without_features": no_feat, "by_k": by_k}),
        );
    }
    report.insert("pair_sets".into(), json!(pairs_json));

    let json_path = args.out.join("eval.json");
    std::fs::write(
        &json_path,
        serde_json::to_string(&serde_json::Value::Object(report)).unwrap(),
    )
    .expect("write eval.json");
    if !plot_series.is_empty() {
        let svg_path = args.out.join("eval.svg");
        let mut f = std::fs::File::create(&svg_path).expect("create eval.svg");
        f.write_all(
            simdb::plot::chart(
                &format!(
                    "Recall of planted copies, precision of corpus pairs, against k ({})",
                    recipes[0].name()
                ),
                "k (Hamming distance)",
                "share",
                &plot_series,
            )
            .as_bytes(),
        )
        .expect("write eval.svg");
        println!("\nwrote {} and {}", json_path.display(), svg_path.display());
    } else {
        println!("\nwrote {}", json_path.display());
    }
}

fn read_pairs(path: &PathBuf) -> Vec<(String, String, bool)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1));
        let (Some(a), Some(b)) = (v["a"].as_str(), v["b"].as_str()) else {
            panic!("{}:{}: no \"a\" and \"b\"", path.display(), n + 1);
        };
        let label = v["label"].as_i64() == Some(1) || v["label"].as_str() == Some("1");
        out.push((a.to_string(), b.to_string(), label));
    }
    out
}
