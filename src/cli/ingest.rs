//! `simdb ingest`.

use super::prelude::*;

pub(super) fn ingest_cmd(a: IngestArgs) -> Result<bool> {
    if let Some(n) = a.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()
            .context("setting the thread count")?;
    }
    let mut db = Db::options().open(&a.db)?;
    let inputs = inputs(&a.inputs, a.format, a.warc_id, false)?;
    let write = a.search.write_options(a.sync);
    let policy = DuplicatePolicy::skipping(a.skip_duplicates);
    let opts = ingest::Options {
        strict: a.strict,
        batch_size: a.batch_size,
        max_doc_bytes: a.max_doc_bytes,
        write: write.policy_for(&db, policy)?,
    };
    let mut report = match &a.report {
        Some(p) => {
            Some(BufWriter::new(File::create(p).with_context(|| {
                format!("{}: cannot create report", p.display())
            })?))
        }
        None => None,
    };
    let progress = Progress::new();
    let mut report_err: Option<io::Error> = None;
    const SHORT_NOTES: u64 = 20;
    let mut short_notes = 0u64;
    let result = ingest::run(&mut db, &inputs, &opts, |ev| match ev {
        Event::Short(d, terms) => {
            short_notes += 1;
            let msg = if short_notes <= SHORT_NOTES {
                format!(
                    "simdb: {}: document {:?} is short ({terms} terms): its near-copies may lie beyond k={} (README, \"The fingerprint recipe\")",
                    d.source, d.id, opts.write.k.max(3)
                )
            } else if short_notes == SHORT_NOTES + 1 {
                "simdb: more short documents; their count is in the summary".to_string()
            } else {
                return;
            };
            progress.note(msg);
        }
        Event::BadLine(p) => progress.note(format!("simdb: bad input: {p}")),
        Event::NoFeatures(d) => progress.note(format!(
            "simdb: {}: document {:?} has no usable features; not indexed",
            d.source, d.id
        )),
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
            progress.status(|| {
                format!(
                    "{} read, {} inserted, {} near duplicates, {} bad, {:.0} docs/s",
                    s.read,
                    s.writes.inserted,
                    s.writes.near_duplicates,
                    s.bad_lines,
                    s.docs_per_second()
                )
            });
        }
    });
    progress.finish();
    if let Some(w) = report.as_mut() {
        w.flush().context("writing the duplicate report")?;
    }
    if let Some(e) = report_err {
        return Err(e).context("writing the duplicate report");
    }
    let s = result?;
    print_summary(&s, a.json)?;
    if a.freeze {
        let r = db.maintenance().freeze()?;
        eprintln!(
            "froze {}: generation {}, {:.1} MiB in {:.1}s",
            a.db.display(),
            r.generation,
            r.bytes as f64 / (1u64 << 20) as f64,
            r.seconds
        );
    }
    Ok(true)
}

/// The run's summary: one JSON object on standard output with `--json`,
/// else one line on standard error.
fn print_summary(s: &ingest::Summary, as_json: bool) -> Result<()> {
    if as_json {
        let mut v = serde_json::to_value(s)?;
        v["elapsed_seconds"] = json!(s.elapsed.as_secs_f64());
        v["docs_per_second"] = json!(s.docs_per_second());
        println!("{v}");
    } else {
        eprintln!(
"read {} | inserted {} | replaced {} | unchanged {} | duplicate {} | no features {} | near duplicates {} | short {} | bad lines {} | clusters: {} new, {} grown, {} left | {:.2}s, {:.0} docs/s",
            s.read,
            s.writes.inserted,
            s.writes.replaced,
            s.writes.unchanged,
            s.writes.duplicate,
            s.writes.no_features,
            s.writes.near_duplicates,
            s.writes.short,
            s.bad_lines,
            s.clusters.new,
            s.clusters.grown,
            s.clusters.left,
            s.elapsed.as_secs_f64(),
            s.docs_per_second()
        );
    }
    Ok(())
}

/// Notes and a progress line on standard error: the line only when it is
/// a terminal, the notes printed above it.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new() -> Progress {
        let bar = io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        });
        Progress { bar }
    }

    fn note(&self, msg: String) {
        match &self.bar {
            Some(b) => b.println(msg),
            None => eprintln!("{msg}"),
        }
    }

    /// Sets the progress line (`msg` is only made when there is one).
    fn status(&self, msg: impl FnOnce() -> String) {
        if let Some(b) = &self.bar {
            b.set_message(msg());
            b.tick();
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
