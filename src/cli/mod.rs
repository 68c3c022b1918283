//! The `simdb` command: a thin client of the library. Each command returns
//! whether it found something (exit 0) or not (exit 1); errors exit 2.

pub mod args;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::json;

use args::*;
use simdb::ingest::{self, DuplicatePolicy, Event, Format, Input};
use simdb::{Db, Fingerprint, Fingerprinter, Hit, Recipe};

fn recipe(a: &RecipeArgs) -> Recipe {
    let mut r = Recipe::with(a.top_k, a.shingle, a.hmm);
    if a.tf == TfArg::Log {
        r = r.with_log_tf();
    }
    if a.keep_stop_words {
        r = r.keeping_stop_words();
    }
    r
}

pub fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Init(a) => init(a),
        Command::Ingest(a) => ingest_cmd(a),
        Command::Import(a) => import_cmd(a),
        Command::Query(a) => query(a),
        Command::Fingerprint(a) => fingerprint(a),
        Command::Get(a) => get(a),
        Command::Delete(a) => delete(a),
        Command::Stats(a) => stats(a),
        Command::Migrate(a) => migrate(a),
        Command::Verify(a) => verify(a),
        Command::Backup(a) => backup(a),
        Command::Calibrate(a) => calibrate(a),
    }
}

fn init(a: InitArgs) -> Result<bool> {
    let r = recipe(&a.recipe);
    let db = if a.learn_idf.is_empty() {
        Db::create(&a.db, r)?
    } else {
        let mut learner = simdb::fingerprint::IdfLearner::new(Fingerprinter::new(r.clone()));
        let mut bad = 0u64;
        for path in &a.learn_idf {
            let input = Input::guess(path);
            let items = ingest::read::read(&input, 64 << 20)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            for item in items {
                match item {
                    Ok(d) => match &d.content {
                        simdb::Content::Text(t) => learner.add(t),
                        _ => bad += 1,
                    },
                    Err(p) => {
                        eprintln!("simdb: bad input: {p}");
                        bad += 1;
                    }
                }
            }
        }
        if learner.docs() == 0 {
            bail!("--learn-idf: no texts to learn from");
        }
        let table = learner.finish();
        eprintln!(
            "learned IDF of {} terms from {} documents ({bad} lines skipped)",
            table.len(),
            table.docs()
        );
        Db::create_with_idf(&a.db, r, table)?
    };
    let r = db.recipe();
    println!(
        "created {} (top_k={}, shingle={}, hmm={}, tf={}, idf={})",
        a.db.display(),
        r.top_k,
        r.shingle,
        r.hmm,
        r.tf,
        r.idf
    );
    Ok(true)
}

fn import_cmd(a: ImportArgs) -> Result<bool> {
    let opts = simdb::import::Options {
        recipe: recipe(&a.recipe),
        memory_bytes: mib("--memory-mb", a.memory_mb.max(16))?,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let quiet = a.json;
    let s = simdb::import::run(&a.db, &a.inputs, &opts, |e| {
        if !quiet {
            match e {
                simdb::import::Event::Step(s) => {
                    eprintln!("[{:7.1}s] {s}", started.elapsed().as_secs_f64())
                }
                simdb::import::Event::Read(n) if n.is_multiple_of(8 << 20) => {
                    eprintln!("[{:7.1}s] read {n}", started.elapsed().as_secs_f64())
                }
                simdb::import::Event::Read(_) => {}
            }
        }
    })?;
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
    } else {
        println!(
            "imported {} documents into {} in {:.1}s ({} records read, {} replaced by a later record of the same id, {} share their fingerprint with another)",
            s.documents,
            a.db.display(),
            s.elapsed.as_secs_f64(),
            s.records,
            s.replaced,
            s.shared_fingerprints
        );
        for (step, secs) in &s.step_seconds {
            println!("  {secs:7.1}s  {step}");
        }
    }
    Ok(true)
}

fn read_text(path: &Path) -> Result<String> {
    let mut s = String::new();
    if path.as_os_str() == "-" {
        io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
    } else {
        File::open(path)
            .and_then(|mut f| f.read_to_string(&mut s))
            .with_context(|| format!("{}: cannot read as UTF-8 text", path.display()))?;
    }
    Ok(s)
}

fn ingest_cmd(a: IngestArgs) -> Result<bool> {
    if let Some(n) = a.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()
            .context("setting the thread count")?;
    }
    let mut db = Db::open(&a.db)?;
    let inputs: Vec<Input> = a
        .inputs
        .iter()
        .map(|p| {
            let mut i = Input::guess(p);
            i.format = match a.format {
                FormatArg::Auto => i.format,
                FormatArg::Jsonl => Format::Jsonl,
                FormatArg::Lines => Format::Lines,
                FormatArg::Dir => Format::Dir,
            };
            i
        })
        .collect();
    for i in &inputs {
        if i.path.as_os_str() != "-" && !i.path.exists() {
            bail!("{}: no such file or directory", i.path.display());
        }
    }
    let (k, probe_budget) = search_mode(a.k, a.probe_budget)?;
    let opts = ingest::Options {
        k,
        probe_budget,
        policy: if a.skip_duplicates {
            DuplicatePolicy::Skip
        } else {
            DuplicatePolicy::IndexAll
        },
        strict: a.strict,
        batch_size: a.batch_size,
        max_doc_bytes: a.max_doc_bytes,
        sync: a.sync,
        min_similarity: check_similarity(a.min_similarity.unwrap_or(db.default_min_similarity()))?,
    };
    let mut report = match &a.report {
        Some(p) => {
            Some(BufWriter::new(File::create(p).with_context(|| {
                format!("{}: cannot create report", p.display())
            })?))
        }
        None => None,
    };
    let bar = if io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Some(b)
    } else {
        None
    };
    let mut report_err: Option<io::Error> = None;
    const SHORT_NOTES: u64 = 20;
    let mut short_notes = 0u64;
    let result = ingest::run(&mut db, &inputs, &opts, |ev| match ev {
        Event::Short(d, terms) => {
            short_notes += 1;
            let msg = if short_notes <= SHORT_NOTES {
                format!(
                    "simdb: {}: document {:?} is short ({terms} terms): its near-copies may lie beyond k={} (README, \"Short texts\")",
                    d.source, d.id, opts.k.max(3)
                )
            } else if short_notes == SHORT_NOTES + 1 {
                "simdb: more short documents; their count is in the summary".to_string()
            } else {
                return;
            };
            match &bar {
                Some(b) => b.println(msg),
                None => eprintln!("{msg}"),
            }
        }
        Event::BadLine(p) => {
            let msg = format!("simdb: bad input: {p}");
            match &bar {
                Some(b) => b.println(msg),
                None => eprintln!("{msg}"),
            }
        }
        Event::NoFeatures(d) => {
            let msg = format!(
                "simdb: {}: document {:?} has no usable features; not indexed",
                d.source, d.id
            );
            match &bar {
                Some(b) => b.println(msg),
                None => eprintln!("{msg}"),
            }
        }
        Event::Duplicate(r) => {
            if let Some(w) = report.as_mut() {
                if let Err(e) = ingest::write_report(w, r) {
                    report_err.get_or_insert(e);
                }
            }
        }
        Event::Committed(s) => {
            if a.acks {
                let mut out = io::stdout().lock();
                let _ = writeln!(out, "{{\"acknowledged\": {}}}", s.read);
                let _ = out.flush();
            }
            if let Some(b) = &bar {
                b.set_message(format!(
                    "{} read, {} inserted, {} duplicates, {} bad, {:.0} docs/s",
                    s.read,
                    s.inserted,
                    s.duplicates,
                    s.bad_lines,
                    s.docs_per_second()
                ));
                b.tick();
            }
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(w) = report.as_mut() {
        w.flush().context("writing the duplicate report")?;
    }
    if let Some(e) = report_err {
        return Err(e).context("writing the duplicate report");
    }
    let s = result?;
    if a.json {
        let mut v = serde_json::to_value(&s)?;
        v["elapsed_seconds"] = json!(s.elapsed.as_secs_f64());
        v["docs_per_second"] = json!(s.docs_per_second());
        println!("{v}");
    } else {
        eprintln!(
            "read {} | inserted {} | replaced {} | unchanged {} | duplicates {}{} | short {} | no features {} | bad lines {} | {:.2}s, {:.0} docs/s",
            s.read,
            s.inserted,
            s.replaced,
            s.unchanged,
            s.duplicates,
            if s.skipped_duplicates > 0 {
                format!(" ({} skipped)", s.skipped_duplicates)
            } else {
                String::new()
            },
            s.short,
            s.no_features,
            s.bad_lines,
            s.elapsed.as_secs_f64(),
            s.docs_per_second()
        );
    }
    Ok(true)
}

fn hit_json(h: &Hit) -> serde_json::Value {
    let mut v =
        json!({"id": h.id, "fingerprint": h.fingerprint.to_string(), "distance": h.distance});
    if let Some(s) = h.similarity {
        v["similarity"] = json!(s);
    }
    v
}

fn print_hits(out: &mut impl Write, q: Fingerprint, hits: &[Hit], as_json: bool) -> io::Result<()> {
    if as_json {
        let v = json!({
            "fingerprint": q.to_string(),
            "hits": hits.iter().map(hit_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{v}")
    } else {
        if hits.is_empty() {
            return writeln!(out, "no near-duplicates of {q}");
        }
        if hits.iter().any(|h| h.similarity.is_some()) {
            writeln!(
                out,
                "{:<8} {:<10} {:<16}  id",
                "distance", "similarity", "fingerprint"
            )?;
            for h in hits {
                let s = h.similarity.map_or("-".to_string(), |s| format!("{s:.2}"));
                writeln!(
                    out,
                    "{:<8} {:<10} {}  {}",
                    h.distance, s, h.fingerprint, h.id
                )?;
            }
        } else {
            writeln!(out, "{:<8} {:<16}  id", "distance", "fingerprint")?;
            for h in hits {
                writeln!(out, "{:<8} {}  {}", h.distance, h.fingerprint, h.id)?;
            }
        }
        Ok(())
    }
}

/// `n` MiB in bytes, or an error naming the option when that overflows.
fn mib(option: &str, n: usize) -> Result<usize> {
    n.checked_mul(1 << 20).ok_or_else(|| {
        anyhow::anyhow!(
            "{option} {n} is too large (at most {} MiB)",
            usize::MAX >> 20
        )
    })
}

/// `-k` and `--probe-budget` as (exact radius, probe budget): without -k,
/// k = 3 and the default budget; with -k alone, exact (budget 0).
fn search_mode(k: Option<u32>, budget: Option<usize>) -> Result<(u32, usize)> {
    if let Some(k) = k {
        simdb::fingerprint::check_k(k)?;
    }
    if let Some(b) = budget {
        if b > simdb::index::MAX_PROBE_BUDGET {
            bail!(
                "--probe-budget {b} is more than {} buckets",
                simdb::index::MAX_PROBE_BUDGET
            );
        }
    }
    Ok(match (k, budget) {
        (None, b) => (3, b.unwrap_or(simdb::index::DEFAULT_PROBE_BUDGET)),
        (Some(k), b) => (k, b.unwrap_or(0)),
    })
}

fn query(a: QueryArgs) -> Result<bool> {
    let (k, budget) = search_mode(a.k, a.probe_budget)?;
    let db = Db::open_tuned(
        &a.db,
        simdb::store::Access::ReadOnly,
        simdb::store::Tuning {
            block_cache_bytes: mib("--cache-mb", a.cache_mb)?,
            ..Default::default()
        },
    )?;
    note_freshness(&db);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let w = &a.what;
    let min_similarity = check_similarity(a.min_similarity.unwrap_or(db.default_min_similarity()))?;
    let mode = |mut q: simdb::Query| {
        q.k = k;
        q.limit = a.limit;
        q.min_similarity = min_similarity;
        match (&mut q.probe, budget) {
            (_, 0) => q.probe = None,
            (Some(p), b) => p.budget = b,
            (None, _) => {}
        }
        q
    };
    if let Some(batch) = &w.batch {
        let found = query_batch(&db, batch, &mode, &mut out)?;
        out.flush()?;
        return Ok(found);
    }
    // (query, the query's weighted terms for --explain)
    let (q, terms) = if let Some(t) = &w.text {
        let q = db.text_query(t).context("fingerprinting --text")?;
        (q, a.explain.then(|| db.text_terms(t)))
    } else if let Some(f) = &w.file {
        let t = read_text(f)?;
        let q = db
            .text_query(&t)
            .with_context(|| format!("{}: fingerprinting the file", f.display()))?;
        (q, a.explain.then(|| db.text_terms(&t)))
    } else if let Some(h) = &w.fingerprint {
        (simdb::Query::new(h.parse()?), a.explain.then(Vec::new))
    } else if let Some(id) = &w.id {
        let q = db.id_query(id)?;
        let terms = match a.explain {
            true => db.get(id)?.map(|r| db.record_terms(&r)),
            false => None,
        };
        (q, terms)
    } else {
        unreachable!("clap requires one query source")
    };
    let q = mode(q);
    let hits = db.search(&q)?;
    match terms {
        Some(terms) => {
            let ex = db.explain(&terms, &hits)?;
            print_explained(&mut out, q.fingerprint, &terms, &ex, a.json)?;
        }
        None => print_hits(&mut out, q.fingerprint, &hits, a.json)?,
    }
    out.flush()?;
    Ok(!hits.is_empty())
}

fn check_similarity(s: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&s) {
        bail!("--min-similarity {s} is not between 0 and 1");
    }
    Ok(s)
}

fn print_explained(
    out: &mut impl Write,
    q: Fingerprint,
    query_terms: &[(String, f64)],
    ex: &[simdb::explain::Explanation],
    as_json: bool,
) -> io::Result<()> {
    if as_json {
        let v = json!({
            "fingerprint": q.to_string(),
            "query_terms": query_terms.iter().take(simdb::fingerprint::TOP_TERMS).collect::<Vec<_>>(),
            "hits": ex,
        });
        return writeln!(out, "{v}");
    }
    let terms = |v: &[(String, f64)]| -> String {
        v.iter()
            .map(|(t, w)| format!("{t} ({w:.1})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if query_terms.is_empty() {
        writeln!(out, "query {q}: a bare fingerprint has no terms to compare")?;
    } else {
        writeln!(
            out,
            "query {q}: top terms {}",
            terms(&query_terms[..query_terms.len().min(simdb::fingerprint::TOP_TERMS)])
        )?;
    }
    if ex.is_empty() {
        return writeln!(out, "no near-duplicates of {q}");
    }
    for e in ex {
        let sim = match e.similarity {
            Some(s) => format!("similarity {s:.2}"),
            None => "similarity unknown (no sketch on one side)".to_string(),
        };
        writeln!(out, "\n{}  distance {}  {}", e.id, e.distance, sim)?;
        if !e.document_terms_known {
            writeln!(
                out,
                "  (the document's terms are not stored: it was imported as a fingerprint)"
            )?;
            continue;
        }
        if query_terms.is_empty() {
            writeln!(
                out,
                "  document's top terms: {}",
                e.only_document.join(", ")
            )?;
            continue;
        }
        writeln!(out, "  shared:                  {}", terms(&e.shared))?;
        writeln!(
            out,
            "  only in the document:    {}",
            e.only_document.join(", ")
        )?;
        writeln!(out, "  query, not in doc top 8: {}", terms(&e.only_query))?;
    }
    Ok(())
}

fn calibrate(a: CalibrateArgs) -> Result<bool> {
    let db = Db::open_read_only(&a.db)?;
    let min_similarity = check_similarity(a.min_similarity.unwrap_or(db.default_min_similarity()))?;
    note_freshness(&db);
    let c = db.calibrate(a.sample, a.seed, min_similarity, a.max_k)?;
    // Nearest-neighbour distances (0..=11) and random-pair distances
    // (0..=64) on one axis.
    let none_within = c.nearest[c.nearest.len() - 1];
    let widen = |v: &[u64]| -> Vec<u64> {
        let mut w = v[..v.len() - 1].to_vec();
        w.resize(65, 0);
        w
    };
    let unverified: Vec<u64> = c
        .nearest
        .iter()
        .zip(c.nearest_confirmed.iter().zip(&c.nearest_rejected))
        .map(|(n, (a, b))| n - a - b)
        .collect();
    let svg = simdb::plot::histogram(
        &format!(
            "{}: {} sampled documents ({none_within} with no other document within {} bits)",
            a.db.display(),
            c.sampled,
            c.max_k
        ),
        "Hamming distance",
        &[
            (
                format!("nearest, confirmed (similarity >= {min_similarity})"),
                widen(&c.nearest_confirmed),
            ),
            (
                "nearest, rejected by the sketch".into(),
                widen(&c.nearest_rejected),
            ),
            ("nearest, no sketch to compare".into(), widen(&unverified)),
            ("random pairs (unrelated)".into(), c.random_pairs.clone()),
        ],
    );
    std::fs::write(&a.plot, svg).with_context(|| format!("{}: cannot write", a.plot.display()))?;
    if a.json {
        let mut v = serde_json::to_value(&c)?;
        v["plot"] = json!(a.plot.display().to_string());
        println!("{v}");
        return Ok(c.sampled > 0);
    }
    println!(
        "sampled {} documents; similarity threshold {min_similarity}",
        c.sampled
    );
    println!("nearest other document, by distance:");
    println!(
        "{:>5} {:>9} {:>10} {:>9}",
        "k", "documents", "confirmed", "rejected"
    );
    for d in 0..c.nearest.len() {
        if d as u32 > c.max_k && d != c.nearest.len() - 1 {
            continue;
        }
        let label = if d == c.nearest.len() - 1 {
            format!(">{}", c.max_k)
        } else {
            d.to_string()
        };
        println!(
            "{label:>5} {:>9} {:>10} {:>9}",
            c.nearest[d], c.nearest_confirmed[d], c.nearest_rejected[d]
        );
    }
    let pairs: u64 = c.random_pairs.iter().sum();
    let below = |k: usize| c.random_pairs[..=k].iter().sum::<u64>();
    let mean = if pairs > 0 {
        c.random_pairs
            .iter()
            .enumerate()
            .map(|(d, n)| d as f64 * *n as f64)
            .sum::<f64>()
            / pairs as f64
    } else {
        0.0
    };
    println!(
        "random pairs: {pairs}, mean distance {mean:.1}; within 3: {}, within 7: {}, within 11: {}",
        below(3),
        below(7),
        below(11)
    );
    match (c.k_for_share(0.9), c.k_for_share(0.99)) {
        (Some(a90), Some(a99)) => {
            println!("90% of the confirmed near-copies are within k={a90}, 99% within k={a99}")
        }
        _ => println!("no confirmed near-copies in the sample"),
    }
    println!("plot: {}", a.plot.display());
    Ok(c.sampled > 0)
}

fn query_batch(
    db: &Db,
    path: &Path,
    mode: &dyn Fn(simdb::Query) -> simdb::Query,
    out: &mut impl Write,
) -> Result<bool> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(BufReader::new(io::stdin()))
    } else {
        Box::new(BufReader::new(
            File::open(path).with_context(|| format!("{}: cannot open", path.display()))?,
        ))
    };
    // Queries are answered a chunk at a time with one sorted pass per block
    // family (Db::query_many); answers are printed in input order.
    const CHUNK: usize = 1 << 16;
    let mut found = false;
    let mut lines = reader.split(b'\n').enumerate();
    loop {
        // (line number, label, fingerprint and sketch, or error)
        type Parsed = (
            usize,
            serde_json::Value,
            std::result::Result<simdb::Query, String>,
        );
        let mut chunk: Vec<Parsed> = Vec::new();
        for (n, line) in lines.by_ref() {
            let line = line.with_context(|| format!("{}: read error", path.display()))?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let lineno = n + 1;
            let parsed = (|| -> std::result::Result<(serde_json::Value, simdb::Query), String> {
                let v: serde_json::Value =
                    serde_json::from_slice(&line).map_err(|e| format!("invalid JSON: {e}"))?;
                let label = v.get("id").cloned().unwrap_or(json!(lineno));
                let q = match (v.get("text"), v.get("fingerprint")) {
                    (Some(serde_json::Value::String(t)), None) => {
                        let a = db.fingerprinter().analyze(t).map_err(|e| e.to_string())?;
                        mode(db.query_for(a.fingerprint, a.sketch, &a.weak_bits))
                    }
                    (None, Some(serde_json::Value::String(h))) => mode(simdb::Query::new(
                        h.parse().map_err(|e: simdb::Error| e.to_string())?,
                    )),
                    _ => return Err(
                        "give exactly one of \"text\" (string) or \"fingerprint\" (16 hex digits)"
                            .into(),
                    ),
                };
                Ok((label, q))
            })();
            chunk.push(match parsed {
                Ok((label, q)) => (lineno, label, Ok(q)),
                Err(e) => (lineno, json!(lineno), Err(e)),
            });
            if chunk.len() == CHUNK {
                break;
            }
        }
        if chunk.is_empty() {
            break;
        }
        let qs: Vec<simdb::Query> = chunk.iter().filter_map(|c| c.2.clone().ok()).collect();
        let mut answers = db.search_many(&qs)?.into_iter();
        for (lineno, label, q) in chunk {
            let v = match q {
                Ok(simdb::Query { fingerprint: q, .. }) => {
                    let hits = answers.next().unwrap_or_default();
                    found |= !hits.is_empty();
                    json!({"query": label, "fingerprint": q.to_string(),
                           "hits": hits.iter().map(hit_json).collect::<Vec<_>>()})
                }
                Err(e) => {
                    eprintln!("simdb: {}:{lineno}: {e}", path.display());
                    json!({"query": lineno, "error": e})
                }
            };
            writeln!(out, "{v}")?;
        }
    }
    Ok(found)
}

fn fingerprint(a: FingerprintArgs) -> Result<bool> {
    let fp = match &a.db {
        Some(db) => Db::open_read_only(db)?.fingerprinter().clone(),
        None => Fingerprinter::new(recipe(&a.recipe)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let one = |text: &str, out: &mut BufWriter<io::StdoutLock>| -> Result<()> {
        let q = fp.fingerprint(text)?;
        if a.json {
            let mut v = json!({"fingerprint": q.to_string()});
            if a.explain {
                v["features"] = serde_json::to_value(fp.features(text))?;
            }
            writeln!(out, "{v}")?;
        } else {
            writeln!(out, "{q}")?;
            if a.explain {
                for f in fp.features(text) {
                    writeln!(out, "  {:>10.4}  {}", f.weight, f.name)?;
                }
            }
        }
        Ok(())
    };
    if let Some(t) = &a.text {
        one(t, &mut out)?;
    } else if let Some(f) = &a.file {
        one(&read_text(f)?, &mut out)?;
    } else {
        let stdin = io::stdin();
        let mut bad = 0usize;
        for (n, line) in stdin.lock().split(b'\n').enumerate() {
            let line = line.context("reading standard input")?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let res = ingest::read::parse_json_doc(&line)
                .map_err(anyhow::Error::msg)
                .and_then(|(id, c)| Ok((id, c.fingerprint(&fp)?)));
            match res {
                Ok((id, q)) => {
                    if a.json {
                        writeln!(out, "{}", json!({"id": id, "fingerprint": q.to_string()}))?
                    } else {
                        writeln!(out, "{q}\t{id}")?
                    }
                }
                Err(e) => {
                    bad += 1;
                    eprintln!("simdb: -:{}: {e:#}", n + 1);
                }
            }
        }
        out.flush()?;
        if bad > 0 {
            bail!("{bad} line(s) of standard input could not be fingerprinted");
        }
    }
    out.flush()?;
    Ok(true)
}

fn get(a: GetArgs) -> Result<bool> {
    let db = Db::open_read_only(&a.db)?;
    note_freshness(&db);
    let Some(r) = db.get(&a.id)? else {
        eprintln!("simdb: no document with id {:?}", a.id);
        return Ok(false);
    };
    if a.json {
        println!(
            "{}",
            json!({"id": a.id, "fingerprint": r.fingerprint.to_string(), "content_hash": format!("{:016x}", r.content_hash),
                   "length": r.length, "ingested_at": r.ingested_at, "source": r.source,
                   "terms": r.terms, "short": r.is_short(), "top_terms": r.top_terms,
                   "sketch": r.sketch.map(|s| s.0.iter().map(|b| format!("{b:02x}")).collect::<String>())})
        );
    } else {
        println!("id           {}", a.id);
        println!("fingerprint  {}", r.fingerprint);
        println!("content_hash {:016x}", r.content_hash);
        println!("length       {}", r.length);
        println!("ingested_at  {}", r.ingested_at);
        println!("source       {}", r.source);
        println!(
            "terms        {}{}",
            r.terms,
            if r.is_short() { " (short)" } else { "" }
        );
        println!("top terms    {}", r.top_terms.join(", "));
        println!(
            "sketch       {}",
            if r.sketch.is_some() {
                "yes"
            } else {
                "none (no text seen)"
            }
        );
    }
    Ok(true)
}

fn delete(a: DeleteArgs) -> Result<bool> {
    let mut db = Db::open(&a.db)?;
    let n = db.delete(&a.ids)?;
    eprintln!("deleted {n} of {} id(s)", a.ids.len());
    Ok(n > 0)
}

/// How fresh a view is, in words.
fn view_text(v: &simdb::db::View) -> String {
    let when = format_unix(v.opened_at);
    match (v.read_only, v.writer_active) {
        (false, _) => format!(
            "current (opened for writing at {when}, sequence {})",
            v.sequence
        ),
        (true, false) => format!("as of {when} (sequence {}); no writer active", v.sequence),
        (true, true) => format!(
            "as of {when} (sequence {}); another process is writing now, newer documents may exist",
            v.sequence
        ),
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` of Unix seconds.
fn format_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// On standard error, when another process writes to the store: how fresh
/// this read-only answer is.
fn note_freshness(db: &Db) {
    let v = db.view();
    if v.writer_active {
        eprintln!("simdb: note: {}: {}", db.path().display(), view_text(&v));
    }
}

fn migrate(a: MigrateArgs) -> Result<bool> {
    let r = Db::migrate(&a.db)?;
    if r.from == r.to {
        println!("{}: already format {}", a.db.display(), r.to);
    } else {
        println!(
            "{}: migrated format {} -> {}: {} records indexed, {} unreadable",
            a.db.display(),
            r.from,
            r.to,
            r.indexed,
            r.unreadable
        );
    }
    Ok(true)
}

fn stats(a: StatsArgs) -> Result<bool> {
    let db = Db::open_read_only(&a.db)?;
    let s = db.stats()?;
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
        return Ok(true);
    }
    println!("store        {}", s.path);
    println!("documents    {}", s.documents);
    println!(
        "short docs   {} (fewer than {} terms; README, \"Short texts\")",
        s.short_documents,
        simdb::fingerprint::SHORT_TERMS
    );
    println!("view         {}", view_text(&s.view));
    println!("size on disk {} bytes", s.bytes_on_disk);
    println!(
        "recipe       top_k={} shingle={} hmm={} tf={} hash={} width={} tie={}",
        s.recipe.top_k,
        s.recipe.shingle,
        s.recipe.hmm,
        s.recipe.tf,
        s.recipe.hash,
        s.recipe.width,
        s.recipe.tie_rule
    );
    println!(
        "             tokenizer={} idf={} stopwords={}",
        s.recipe.tokenizer, s.recipe.idf, s.recipe.stopwords
    );
    println!(
        "{:<8} {:>10} {:>10} {:>12} {:>6} {:>6} {:>6} {:>6}",
        "family", "keys", "buckets", "sst bytes", "p50", "p90", "p99", "max"
    );
    for f in &s.families {
        println!(
            "{:<8} {:>10} {:>10} {:>12} {:>6} {:>6} {:>6} {:>6}",
            f.name,
            f.keys,
            f.buckets,
            f.sst_bytes,
            f.bucket_p50,
            f.bucket_p90,
            f.bucket_p99,
            f.bucket_max
        );
    }
    Ok(true)
}

fn backup(a: BackupArgs) -> Result<bool> {
    let started = std::time::Instant::now();
    let method = Db::backup(&a.db, &a.dest)?;
    let copy = Db::open_read_only(&a.dest)?;
    let r = copy.verify()?;
    println!(
        "backed up {} to {} ({}) in {:.1}s: {} documents, verify: {} problem(s)",
        a.db.display(),
        a.dest.display(),
        match method {
            simdb::db::BackupMethod::Checkpoint => "checkpoint, hard links",
            simdb::db::BackupMethod::Copy => "copy of a read-only view; a writer holds the store",
        },
        started.elapsed().as_secs_f64(),
        r.documents,
        r.problems.len()
    );
    if r.is_clean() {
        Ok(true)
    } else {
        bail!(
            "{}: the copy has {} problem(s)",
            a.dest.display(),
            r.problems.len()
        )
    }
}

fn verify(a: VerifyArgs) -> Result<bool> {
    let db = if a.repair {
        let mut db = Db::open_for_repair(&a.db)?;
        let rep = db.repair()?;
        if a.json {
            println!("{}", serde_json::to_string(&rep)?);
        } else {
            for u in &rep.unreadable {
                println!("cannot repair: {u}");
            }
            println!(
                "repaired: {} records re-indexed, {} renumbered, {} unreadable",
                rep.reindexed,
                rep.renumbered,
                rep.unreadable.len()
            );
        }
        db
    } else {
        Db::open_read_only(&a.db)?
    };
    note_freshness(&db);
    let r = db.verify()?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        for p in &r.problems {
            println!("problem: {p}");
        }
        println!(
            "{} documents, index keys {:?}, {} problem(s)",
            r.documents,
            r.index_keys,
            r.problems.len()
        );
    }
    if r.is_clean() {
        Ok(true)
    } else {
        bail!("{}: {} problem(s) found", a.db.display(), r.problems.len())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unix_seconds_as_utc() {
        assert_eq!(super::format_unix(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::format_unix(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(super::format_unix(951_782_400), "2000-02-29 00:00:00 UTC");
    }
}
