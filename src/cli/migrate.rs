//! `simdb migrate`.

use super::prelude::*;

pub(super) fn migrate(a: MigrateArgs) -> Result<bool> {
    let r = simdb::db::migrate(&a.db, a.keep)?;
    let clusters = format!(
        "clusters {} -> {} ({} -> {} documents in them, the largest {} -> {})",
        r.clusters_before.0,
        r.clusters_after.0,
        r.clusters_before.1,
        r.clusters_after.1,
        r.largest_before,
        r.largest_after
    );
    if r.from == r.to && r.keep == r.keep_from {
        println!(
            "{}: already format {}, keep policy {}",
            a.db.display(),
            r.to,
            r.keep
        );
    } else if r.from == r.to {
        println!(
            "{}: keep policy {} -> {}: {clusters}",
            a.db.display(),
            r.keep_from,
            r.keep
        );
    } else {
        println!(
            "{}: migrated format {} -> {} (keep policy {}): {} records indexed, {} given their place in the ingest order, {} member keys re-ranked, {} unreadable; {clusters}",
            a.db.display(),
            r.from,
            r.to,
            r.keep,
            r.indexed,
            r.ordered,
            r.reranked,
            r.unreadable
        );
    }
    if !r.recipe_behind.is_empty() {
        println!(
            "recipe kept (its fingerprints stay comparable with each other); new stores differ in:"
        );
        for d in &r.recipe_behind {
            println!("  {d}");
        }
        println!(
            "  a recipe cannot change in place: the store keeps fingerprints, not texts. To move, \
             create a store with `simdb init` and ingest the texts again (README, \"The fingerprint recipe\")."
        );
    }
    Ok(true)
}
