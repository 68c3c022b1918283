//! `simdb query`.

use super::prelude::*;

pub(super) fn query(a: QueryArgs) -> Result<bool> {
    let (k, budget) = search_mode(a.k, a.probe_budget)?;
    let db = open_reader(&a.db, a.cache_mb)?;
    note_freshness(&db);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let w = &a.what;
    let opts = simdb::db::QueryOptions {
        k: Some(k),
        probe_budget: Some(budget),
        min_similarity: Some(check_similarity(
            a.min_similarity.unwrap_or(db.default_min_similarity()),
        )?),
        limit: a.limit,
    };
    let mode = |q: simdb::Query| db.with_options(q, &opts);
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
    let q = mode(q)?;
    let hits = db.search(&q)?;
    if !a.json && q.limit.is_some_and(|l| l > 0 && hits.len() >= l) {
        eprintln!(
            "simdb: the first {} hits (--limit N shows more, at most {})",
            hits.len(),
            simdb::db::limits::MAX_LIMIT
        );
    }
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

fn query_batch(
    db: &Db,
    path: &Path,
    mode: &dyn Fn(simdb::Query) -> simdb::Result<simdb::Query>,
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
            let mut line = line.with_context(|| format!("{}: read error", path.display()))?;
            if n == 0 && line.starts_with(ingest::read::UTF8_BOM) {
                line.drain(..ingest::read::UTF8_BOM.len());
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let lineno = n + 1;
            let parsed = ingest::read::parse_query_line(&line).and_then(|(label, bq)| {
                let q = match bq {
                    ingest::read::BatchQuery::Text(t) => {
                        let a = db.fingerprinter().analyze(&t).map_err(|e| e.to_string())?;
                        db.query_for(a.fingerprint, a.sketch, &a.weak_bits)
                    }
                    ingest::read::BatchQuery::Fingerprint(fp) => simdb::Query::new(fp),
                };
                let q = mode(q).map_err(|e| e.to_string())?;
                Ok((label.unwrap_or(json!(lineno)), q))
            });
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
