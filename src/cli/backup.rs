//! `simdb backup`.

use super::prelude::*;

pub(super) fn backup(a: BackupArgs) -> Result<bool> {
    let started = std::time::Instant::now();
    let method = simdb::db::backup(&a.db, &a.dest)?;
    let copy = Db::options().read_only().open(&a.dest)?;
    let r = copy.admin().verify()?;
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
