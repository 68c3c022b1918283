//! `simdb export`.

use super::prelude::*;

pub(super) fn export(a: ExportArgs) -> Result<bool> {
    let started = std::time::Instant::now();
    let db = Db::options().read_only().open(&a.db)?;
    let opts = simdb::db::export::ExportOptions {
        row_group_rows: usize::try_from(a.row_group_rows).unwrap_or(usize::MAX),
        file_rows: a.file_rows,
    };
    let s = db.admin().export_parquet(&a.parquet, &opts)?;
    println!(
        "exported {} documents to {} in {:.1}s: {} file(s), {:.1} MB",
        s.documents,
        a.parquet.display(),
        started.elapsed().as_secs_f64(),
        s.files.len(),
        s.bytes as f64 / 1e6
    );
    Ok(true)
}
