//! `simdb migrate`.

use super::prelude::*;

pub(super) fn migrate(a: MigrateArgs) -> Result<bool> {
    let r = Db::migrate(&a.db)?;
    if r.from == r.to {
        println!("{}: already format {}", a.db.display(), r.to);
    } else {
        println!(
            "{}: migrated format {} -> {}: {} records indexed, {} given their place in the ingest order, {} clusters built, {} unreadable",
            a.db.display(),
            r.from,
            r.to,
            r.indexed,
            r.ordered,
            r.clusters,
            r.unreadable
        );
    }
    Ok(true)
}
