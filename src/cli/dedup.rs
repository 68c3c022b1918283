//! `simdb dedup`.

use super::prelude::*;

pub(super) fn dedup(a: DedupArgs) -> Result<bool> {
    let inputs = inputs(&a.inputs, a.format, a.warc_id, true)?;
    let against = match &a.db {
        Some(p) => Some(Db::options().read_only().open(p)?),
        None => None,
    };
    if let Some(db) = &against {
        note_freshness(db);
    }
    let write = a.search.write_options(false);
    let opts = ingest::Options {
        strict: a.strict,
        max_doc_bytes: a.max_doc_bytes,
        write: match &against {
            Some(db) => write.policy_for(db, DuplicatePolicy::IndexAll)?,
            None => write.resolve(DuplicatePolicy::IndexAll, None)?,
        },
        ..Default::default()
    };
    // The index of the documents kept so far, removed when the run ends.
    let scratch_dir = match &a.scratch {
        Some(d) => tempfile::Builder::new()
            .prefix("simdb-dedup-")
            .tempdir_in(d),
        None => tempfile::Builder::new().prefix("simdb-dedup-").tempdir(),
    }
    .context("creating the scratch directory (see --scratch)")?;
    let recipe = against
        .as_ref()
        .map_or_else(Recipe::default, |d| d.recipe().clone());
    let mut scratch = Db::options()
        .create(scratch_dir.path().join("kept"), recipe)
        .context("creating the scratch store")?;
    let mut dropped = match &a.dropped {
        Some(p) => Some(BufWriter::new(File::create(p).with_context(|| {
            format!("{}: cannot create the dropped list", p.display())
        })?)),
        None => None,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let keep = match (a.keep, &against) {
        (Some(k), _) => k,
        (None, Some(db)) => db.admin().keep_policy()?,
        (None, None) => simdb::db::KeepPolicy::First,
    };
    let on_event = |ev: ingest::DedupEvent<'_>| {
        let r = match ev {
            ingest::DedupEvent::Keep(d) => {
                let line = d.line.as_deref().unwrap_or(d.source.as_bytes());
                out.write_all(line)
                    .and_then(|()| out.write_all(b"\n"))
                    .map_err(write_error("<stdout>"))
            }
            ingest::DedupEvent::Drop(_, r) => match (dropped.as_mut(), &a.dropped) {
                (Some(w), Some(path)) => serde_json::to_writer(&mut *w, r)
                    .map_err(io::Error::from)
                    .and_then(|()| w.write_all(b"\n"))
                    .map_err(write_error(path)),
                _ => Ok(()),
            },
            ingest::DedupEvent::BadLine(p) => {
                eprintln!("simdb: {p} (left out)");
                Ok(())
            }
        };
        // The first write error (a closed pipe) stops the run.
        r
    };
    let result = match keep {
        simdb::db::KeepPolicy::First => {
            ingest::dedup(&mut scratch, against.as_ref(), &inputs, &opts, on_event)
        }
        keep => ingest::dedup_keeping(
            &mut scratch,
            against.as_ref(),
            &inputs,
            &opts,
            keep,
            on_event,
        ),
    };
    let s = result?;
    out.flush().context("writing standard output")?;
    if let Some(w) = dropped.as_mut() {
        w.flush().context("writing the dropped list")?;
    }
    if a.json {
        let mut v = serde_json::to_value(&s)?;
        v["elapsed_seconds"] = json!(s.elapsed.as_secs_f64());
        eprintln!("{v}");
    } else {
        eprintln!(
            "read {} | kept {} | dropped {} (near-copies earlier in the input) + {} (in --db) | no features {} (kept) | bad lines {} | {:.2}s",
            s.read,
            s.kept,
            s.dropped,
            s.dropped_in_db,
            s.no_features,
            s.bad_lines,
            s.elapsed.as_secs_f64()
        );
    }
    drop(scratch);
    scratch_dir
        .close()
        .context("removing the scratch directory")?;
    Ok(s.dropped + s.dropped_in_db > 0)
}
