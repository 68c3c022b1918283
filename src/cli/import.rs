//! `simdb import`.

use super::prelude::*;

pub(super) fn import_cmd(a: ImportArgs) -> Result<bool> {
    let opts = simdb::import::Options {
        recipe: recipe(&a.recipe),
        memory_bytes: mib("--memory-mb", a.memory_mb.max(16))?,
        partial: a.partial,
        freeze: !a.no_freeze,
        ..Default::default()
    };
    if a.parquet {
        for f in simdb::import::expand_inputs(&a.inputs, a.partial)? {
            if !simdb::import::is_parquet(&f)? {
                bail!("{}: not a Parquet file (--parquet)", f.display());
            }
        }
    }
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
        if s.restored {
            println!(
                "restored a simdb export: {} documents and {} clusters, every record as exported (sketches, times, sources, priorities, ords) and the export's recipe",
                s.documents, s.clusters
            );
        }
        println!(
            "imported {} documents into {} in {:.1}s ({} records read, {} replaced by a later record of the same id, {} share their fingerprint with another, {} without a fingerprint skipped)",
            s.documents,
            a.db.display(),
            s.elapsed.as_secs_f64(),
            s.records,
            s.replaced,
            s.shared_fingerprints,
            s.no_fingerprint
        );
        for (step, secs) in &s.step_seconds {
            println!("  {secs:7.1}s  {step}");
        }
    }
    Ok(true)
}
