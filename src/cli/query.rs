//! `simdb query`.

use super::prelude::*;
use simdb::db::{Answer, QueryOptions, QueryRequest, Subject, UnknownFields};

pub(super) fn query(a: QueryArgs) -> Result<bool> {
    let options = QueryOptions {
        k: a.search.k,
        probe_budget: a.search.probe_budget,
        min_similarity: a.search.min_similarity,
        limit: a.limit,
        explain: a.explain,
    };
    options.check()?;
    let db = open_reader(&a.db, a.cache_mb)?;
    note_freshness(&db);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let w = &a.what;
    if let Some(batch) = &w.batch {
        let found = query_batch(&db, batch, options, &mut out)?;
        out.flush()?;
        return Ok(found);
    }
    // (the subject, and for a text what fingerprinting it failed on)
    let (subject, what) = if let Some(t) = &w.text {
        (
            Subject::Text(t.clone()),
            Some("fingerprinting --text".to_string()),
        )
    } else if let (Some(f), true) = (&w.file, a.html) {
        let what = format!("{}: fingerprinting the page's text", f.display());
        let page = simdb::fingerprint::Html {
            bytes: super::read_bytes(f)?,
            charset: None,
        };
        (Subject::Html(page), Some(what))
    } else if let Some(f) = &w.file {
        let what = format!("{}: fingerprinting the file", f.display());
        (Subject::Text(read_text(f)?), Some(what))
    } else if let Some(h) = &w.fingerprint {
        (Subject::Fingerprint(h.parse()?), None)
    } else if let Some(id) = &w.id {
        (Subject::Id(id.clone()), None)
    } else {
        unreachable!("clap requires one query source")
    };
    let answer = match (db.answer(&QueryRequest::new(subject).with(options)), what) {
        (Err(e @ (simdb::Error::NoFeatures | simdb::Error::Input(_))), Some(what)) => {
            return Err(anyhow::Error::new(e).context(what))
        }
        (r, _) => r?,
    };
    if !a.json && answer.limit > 0 && answer.hits.len() >= answer.limit {
        eprintln!(
            "simdb: the first {} hits (--limit N shows more, at most {})",
            answer.hits.len(),
            simdb::db::limits::MAX_LIMIT
        );
    }
    if !a.json && !answer.complete {
        eprintln!(
            "simdb: the search stopped after the sketch rejected {} candidates \
             (a flood of stored copies this text is not a copy of); \
             a farther hit may be missing (-k N --min-similarity 0 lists every document within N)",
            simdb::db::limits::QUERY_REJECTED
        );
    }
    match a.json {
        true => writeln!(out, "{}", json!(answer))?,
        false => print_answer(&mut out, &answer)?,
    }
    out.flush()?;
    Ok(!answer.hits.is_empty())
}

fn print_answer(out: &mut impl Write, a: &Answer) -> io::Result<()> {
    match &a.explained {
        Some(e) => print_explained(out, a.fingerprint, &e.query_terms, &e.hits),
        None => print_hits(out, a.fingerprint, &a.hits),
    }
}

fn print_hits(out: &mut impl Write, q: Fingerprint, hits: &[Hit]) -> io::Result<()> {
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
            // Confirmed by containment: the shorter text inside the longer.
            let c = h
                .containment
                .map_or(String::new(), |c| format!("  (contained {c:.2})"));
            writeln!(
                out,
                "{:<8} {:<10} {}  {}{c}",
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

fn print_explained(
    out: &mut impl Write,
    q: Fingerprint,
    query_terms: &[(String, f64)],
    ex: &[simdb::explain::Explanation],
) -> io::Result<()> {
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

/// Answers the queries of a JSONL file (`-`: standard input), one answer
/// line each in input order: each line a query as the service reads one
/// ([`QueryRequest::from_json`], other fields left alone, so that a file of
/// documents is a file of queries), its options taken from the flags where
/// the line gives none, its label (`"query"` in its answer) its `"id"` or
/// else its line number.
fn query_batch(db: &Db, path: &Path, flags: QueryOptions, out: &mut impl Write) -> Result<bool> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(BufReader::new(io::stdin()))
    } else {
        Box::new(BufReader::new(
            File::open(path).with_context(|| format!("{}: cannot open", path.display()))?,
        ))
    };
    // Queries are answered a chunk at a time with one sorted pass per block
    // family (Db::answer_many); answers are printed in input order.
    const CHUNK: usize = 1 << 16;
    let mut found = false;
    let mut lines = reader.split(b'\n').enumerate();
    loop {
        // (line number, the query or why the line is not one)
        let mut chunk: Vec<(usize, std::result::Result<QueryRequest, String>)> = Vec::new();
        for (n, line) in lines.by_ref() {
            let mut line = line.with_context(|| format!("{}: read error", path.display()))?;
            if n == 0 && line.starts_with(ingest::read::UTF8_BOM) {
                line.drain(..ingest::read::UTF8_BOM.len());
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let lineno = n + 1;
            let parsed = QueryRequest::from_slice(&line, UnknownFields::Ignore)
                .map_err(|e| e.to_string())
                .map(|r| QueryRequest {
                    label: Some(match (&r.label, &r.subject) {
                        (Some(l), _) => l.clone(),
                        (None, Subject::Id(id)) => json!(id),
                        (None, _) => json!(lineno),
                    }),
                    options: r.options.or(flags),
                    ..r
                });
            chunk.push((lineno, parsed));
            if chunk.len() == CHUNK {
                break;
            }
        }
        if chunk.is_empty() {
            break;
        }
        let rs: Vec<QueryRequest> = chunk.iter().filter_map(|c| c.1.clone().ok()).collect();
        let mut answers = db.answer_many(&rs)?.into_iter();
        for (lineno, parsed) in chunk {
            let answer = parsed.and_then(|_| match answers.next() {
                Some(Ok(a)) => Ok(a),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("no answer".to_string()),
            });
            let v = match answer {
                Ok(a) => {
                    found |= !a.hits.is_empty();
                    json!(a)
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
