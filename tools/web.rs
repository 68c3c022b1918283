//! Web pages of generated sites around real articles, simdb beside a
//! MinHash LSH, in one run; and what extraction costs.
//!
//! Each corpus's articles (at least 400 characters) go into generated site
//! templates (`tests/common/sites.rs`: three layouts, navigation, a rail
//! of other articles' headlines, comments, a footer; every third template
//! larger than a short article), with filler and headlines cut from the
//! corpus's other documents. Each article is placed in two templates.
//! Figures per corpus:
//!
//! - **found**: articles whose second page is reported as a copy of its
//!   first (simdb: ingest's report; MinHash: a candidate of the LSH);
//! - **false**: of the pages flagged, those flagged with a page of another
//!   article whose text is not near this one's (character 5-gram Jaccard
//!   below 0.3; for MinHash: any such candidate).
//!
//! Systems: `simdb --format html` (extraction), simdb over the tag-stripped
//! text (`web::visible_text`), MinHash LSH 0.5 over character 5-grams of
//! the tag-stripped text and of the extracted text.
//! Cost: pages per second through extraction alone (one core), and through
//! `ingest` (all cores), against `ingest` of the articles' plain text.
//!
//! ```text
//! cargo build --release --example web
//! target/release/examples/web [--articles 500] [--sites 12] [--seed 1] CORPUS.jsonl...
//! ```

#[path = "common.rs"]
mod common;
#[path = "../tests/common/sites.rs"]
mod sites;

use std::path::Path;
use std::time::Instant;

use rand::seq::IndexedRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use simdb::ingest::{self, read::Format, Event, Input};
use simdb::{Db, Recipe};

fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}")))
        .unwrap_or(default)
}

/// The corpus paths: arguments that are not options or their values.
fn corpora() -> Vec<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i].starts_with("--") {
            i += 2;
        } else {
            out.push(args[i].clone());
            i += 1;
        }
    }
    out
}

/// A text's "words": whitespace-separated tokens, or pairs of characters
/// for text without spaces (Chinese).
fn tokens(text: &str) -> Vec<String> {
    if text.split_whitespace().count() * 20 > text.chars().count() {
        text.split_whitespace().map(str::to_string).collect()
    } else {
        let cs: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        cs.chunks(2).map(|c| c.iter().collect()).collect()
    }
}

/// An article's paragraphs: its lines, or pieces of about 200 characters.
fn paragraphs(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if lines.len() > 1 {
        return lines;
    }
    let cs: Vec<char> = text.chars().collect();
    cs.chunks(200).map(|c| c.iter().collect()).collect()
}

struct Quality {
    found: usize,
    /// The articles whose second page was not reported a copy of the first.
    missed: Vec<usize>,
    /// (page, page) flagged whose articles are different texts.
    false_pairs: Vec<(usize, usize)>,
    flagged: usize,
    false_flagged: usize,
}

/// Whether articles `a` and `b` are different texts: character 5-gram
/// Jaccard below 0.3 (a corpus holds near-duplicates of its own, which a
/// flag between their pages rightly finds).
fn different(shingles: &[Vec<u64>], a: usize, b: usize) -> bool {
    a != b && common::jaccard(&shingles[a], &shingles[b]) < 0.3
}

/// simdb over the pages under `dir` (`html`) or over JSONL `input`.
fn simdb_quality(input: Input, n: usize, shingles: &[Vec<u64>]) -> (Quality, f64) {
    let t = tempfile::tempdir().expect("temp dir");
    let mut db = Db::options()
        .create(t.path().join("db"), Recipe::default())
        .expect("store");
    let mut pairs = Vec::new();
    let start = Instant::now();
    ingest::run(&mut db, &[input], &Default::default(), |e| {
        if let Event::Duplicate(r) = e {
            pairs.push((r.id.clone(), r.duplicate_of.clone()));
        }
    })
    .expect("ingest");
    let secs = start.elapsed().as_secs_f64();
    let article = |id: &str| -> String {
        Path::new(id)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let index = |id: &str| -> usize { article(id).parse().unwrap_or(usize::MAX) };
    // Found: page b of article j is reported a copy of page a, or of a
    // page of another article that is a near-copy of j in the corpus
    // itself (5-gram Jaccard >= 0.5; a report names one original, the
    // nearest, which may be that one).
    let (hit, missed): (Vec<usize>, Vec<usize>) = (0..n).partition(|&j| {
        let b = format!("b/{j:05}.html");
        pairs.iter().any(|(x, y)| {
            let i = index(y);
            *x == b && (i == j || i < n && common::jaccard(&shingles[i], &shingles[j]) >= 0.5)
        })
    });
    let found = hit.len();
    let page = |id: &str| 2 * index(id) + usize::from(id.starts_with("b/"));
    let false_pairs: Vec<(usize, usize)> = pairs
        .iter()
        .filter(|(x, y)| different(shingles, index(x), index(y)))
        .map(|(x, y)| (page(x), page(y)))
        .collect();
    let false_flagged = false_pairs.len();
    (
        Quality {
            found,
            missed,
            false_pairs,
            flagged: pairs.len(),
            false_flagged,
        },
        secs,
    )
}

/// MinHash LSH 0.5 over character 5-grams of `texts` (page `2j` and
/// `2j + 1` hold article `j`).
fn minhash_quality(texts: &[String], shingles: &[Vec<u64>]) -> Quality {
    let jieba = jieba_rs::Jieba::new();
    let mut lsh = common::MinHashLsh::chars(0.5, 7, 5);
    let sigs: Vec<Vec<u64>> = texts.iter().map(|t| lsh.signature(&jieba, t)).collect();
    let (mut found, mut flagged, mut false_flagged) = (0, 0, 0);
    let mut missed: Vec<usize> = (0..texts.len() / 2).collect();
    for (i, sig) in sigs.iter().enumerate() {
        let cands = lsh.query(sig);
        if !cands.is_empty() {
            flagged += 1;
            if cands
                .iter()
                .any(|&c| different(shingles, c as usize / 2, i / 2))
            {
                false_flagged += 1;
            }
            // As for simdb: page a, or a page of a near-copy in the corpus.
            let same = |c: u32| {
                let a = c as usize / 2;
                a == i / 2 || common::jaccard(&shingles[a], &shingles[i / 2]) >= 0.5
            };
            if i % 2 == 1 && cands.iter().any(|&c| c < i as u32 && same(c)) {
                found += 1;
                missed.retain(|&j| j != i / 2);
            }
        }
        lsh.insert(i as u32, sig);
    }
    Quality {
        found,
        missed,
        false_pairs: Vec::new(),
        flagged,
        false_flagged,
    }
}

fn row(name: &str, q: &Quality, n: usize) {
    println!(
        "  {name:<44} found {:>5.3} ({}/{n})   false {:>5.3} ({}/{} flagged)",
        q.found as f64 / n as f64,
        q.found,
        q.false_flagged as f64 / q.flagged.max(1) as f64,
        q.false_flagged,
        q.flagged
    );
}

fn main() {
    let per_corpus: usize = arg("--articles", 500);
    let n_sites: usize = arg("--sites", 12);
    let seed: u64 = arg("--seed", 1);
    let paths = corpora();
    assert!(!paths.is_empty(), "name one or more corpora (JSONL)");
    println!(
        "web: {per_corpus} articles per corpus, each in 2 of {n_sites} generated templates; simdb {}",
        env!("CARGO_PKG_VERSION")
    );
    for path in &paths {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let docs = common::read_corpus(path);
        let articles: Vec<&(String, String)> = docs
            .iter()
            .filter(|(_, t)| t.chars().count() >= 400)
            .take(per_corpus)
            .collect();
        let n = articles.len();
        if n < 10 {
            println!("{path}: {n} articles of 400 characters or more; skipped");
            continue;
        }
        // Template text from the corpus's other documents.
        let pool: Vec<String> = docs
            .iter()
            .skip(per_corpus)
            .take(2000)
            .flat_map(|(_, t)| tokens(t))
            .collect();
        let pool = if pool.len() < 1000 {
            docs.iter().flat_map(|(_, t)| tokens(t)).collect()
        } else {
            pool
        };
        // Words are joined as most of the corpus's articles join them (one
        // article decided before, and xwlb's first has spaces: its
        // templates were Chinese with a space every two characters).
        let spaced = articles
            .iter()
            .filter(|(_, t)| t.split_whitespace().count() * 20 > t.chars().count())
            .count();
        let sep = if spaced * 2 > n { " " } else { "" };
        let words = |rng: &mut ChaCha8Rng, k: usize| -> String {
            (0..k)
                .map(|_| pool.choose(rng).expect("words").as_str())
                .collect::<Vec<_>>()
                .join(sep)
        };
        let sites: Vec<sites::Site> = (0..n_sites)
            .map(|i| sites::Site::new(&mut rng, &words, i))
            .collect();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut pages: Vec<Vec<u8>> = Vec::with_capacity(2 * n);
        let mut plain = String::new();
        for (j, (_, text)) in articles.iter().enumerate() {
            let title: String = text.chars().take(24).collect();
            let paras = paragraphs(text);
            let a = j % n_sites;
            let b = (a + 1 + j / n_sites) % n_sites;
            let b = if b == a { (a + 1) % n_sites } else { b };
            for (side, s) in [("a", a), ("b", b)] {
                let page = sites[s].page(&mut rng, &title, &paras);
                let p = dir.path().join(side).join(format!("{j:05}.html"));
                std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
                std::fs::write(&p, &page).expect("page");
                pages.push(page.into_bytes());
            }
            plain += &serde_json::json!({"id": format!("{j:05}"), "text": text}).to_string();
            plain.push('\n');
        }
        let shingles: Vec<Vec<u64>> = articles
            .iter()
            .map(|a| common::char_shingles(&a.1))
            .collect();
        // Extraction alone, one core.
        let start = Instant::now();
        let extracted: Vec<String> = pages
            .iter()
            .map(|p| simdb::web::page(p, None).text())
            .collect();
        let extract_secs = start.elapsed().as_secs_f64();
        let stripped: Vec<String> = pages
            .iter()
            .map(|p| simdb::web::visible_text(&String::from_utf8_lossy(p)))
            .collect();
        let (html_q, html_secs) = simdb_quality(
            Input {
                path: dir.path().to_path_buf(),
                format: Format::Html,
                keep_lines: false,
                warc_id: Default::default(),
            },
            n,
            &shingles,
        );
        // The tag-stripped text, as JSONL with the same ids.
        let jsonl = dir.path().join("stripped.jsonl");
        let mut lines = String::new();
        for (i, t) in stripped.iter().enumerate() {
            let id = format!("{}/{:05}.html", if i % 2 == 0 { "a" } else { "b" }, i / 2);
            lines += &serde_json::json!({"id": id, "text": t}).to_string();
            lines.push('\n');
        }
        std::fs::write(&jsonl, lines).expect("jsonl");
        let (stripped_q, _) = simdb_quality(Input::guess(&jsonl), n, &shingles);
        // Plain text ingest of the articles alone (twice each, as pages).
        let plain_path = dir.path().join("plain.jsonl");
        let twice: String = plain
            .lines()
            .flat_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("json");
                let id = v["id"].as_str().expect("id").to_string();
                [("a", v.clone()), ("b", v)].map(|(s, mut v)| {
                    v["id"] = format!("{s}/{id}.html").into();
                    v.to_string() + "\n"
                })
            })
            .collect();
        std::fs::write(&plain_path, twice).expect("plain");
        let (_, plain_secs) = simdb_quality(Input::guess(&plain_path), n, &shingles);
        let mh_stripped = minhash_quality(&stripped, &shingles);
        let mh_extracted = minhash_quality(&extracted, &shingles);
        // The extracted text of the first articles MinHash over the
        // extracted text misses (`--show-misses K`).
        let show: usize = arg("--show-misses", 0);
        let mut shown = 0;
        for j in 0..n {
            let (a, b) = (&extracted[2 * j], &extracted[2 * j + 1]);
            let jac = common::jaccard(&common::char_shingles(a), &common::char_shingles(b));
            if jac < 0.5 && shown < show {
                shown += 1;
                if let Ok(d) = std::env::var("WEB_DUMP") {
                    for (k, side) in [(2 * j, "a"), (2 * j + 1, "b")] {
                        let p = format!("{d}/{j}{side}.html");
                        std::fs::write(p, &pages[k]).expect("dump");
                    }
                }
                println!("--- article {j}: 5-gram Jaccard of the two pages' texts {jac:.2}\n[a] {a}\n[b] {b}");
            }
        }
        // The pages of simdb's false flags.
        for &(x, y) in html_q.false_pairs.iter().take(show) {
            let head = |t: &str| t.chars().take(200).collect::<String>();
            println!(
                "--- simdb false flag: page {x} ~ page {y}\n[{x}] {}\n[{y}] {}",
                head(&extracted[x]),
                head(&extracted[y])
            );
        }
        // And those simdb misses whose two texts are alike.
        let f = simdb::Fingerprinter::new(Recipe::default());
        for &j in html_q.missed.iter().take(show) {
            let (a, b) = (&extracted[2 * j], &extracted[2 * j + 1]);
            let jac = common::jaccard(&common::char_shingles(a), &common::char_shingles(b));
            let (fa, fb) = (f.analyze(a).expect("a"), f.analyze(b).expect("b"));
            let sim = fa.sketch.zip(fb.sketch).map(|(x, y)| x.similarity(&y));
            let head = |t: &str| t.chars().take(160).collect::<String>();
            println!(
                "--- simdb missed article {j}: Jaccard {jac:.2}, distance {}, sketch similarity {sim:.2?}, lengths {} / {}\n[a] {}\n[b] {}",
                fa.fingerprint.distance(fb.fingerprint),
                a.len(),
                b.len(),
                head(a),
                head(b)
            );
        }
        let mean_page = pages.iter().map(Vec::len).sum::<usize>() / pages.len();
        let mean_text = articles.iter().map(|a| a.1.len()).sum::<usize>() / n;
        println!(
            "{path}: {n} articles ({mean_text} bytes on average), {} pages ({mean_page} bytes on average)",
            2 * n
        );
        row("simdb ingest --format html (extracted)", &html_q, n);
        row("simdb over the tag-stripped text", &stripped_q, n);
        row(
            "minhash lsh 0.5, char 5-grams, tag-stripped",
            &mh_stripped,
            n,
        );
        row("minhash lsh 0.5, char 5-grams, extracted", &mh_extracted, n);
        let pps = |s: f64| 2.0 * n as f64 / s;
        println!(
            "  cost: extraction alone {:.0} pages/s (one core); ingest --format html {:.0} pages/s; ingest of the plain articles {:.0} docs/s ({:.2}x)",
            pps(extract_secs),
            pps(html_secs),
            pps(plain_secs),
            plain_secs / html_secs
        );
    }
}
