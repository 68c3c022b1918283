//! `simdb verify`.

use super::prelude::*;

pub(super) fn verify(a: VerifyArgs) -> Result<bool> {
    let db = if a.repair {
        let mut db = Db::options().for_repair().open(&a.db)?;
        let rep = db.maintenance().repair()?;
        if a.json {
            println!("{}", serde_json::to_string(&rep)?);
        } else {
            for u in &rep.unreadable {
                println!("cannot repair: {u}");
            }
            println!(
                "repaired: {} records re-indexed, {} unreadable; {} clusters rebuilt",
                rep.reindexed,
                rep.unreadable.len(),
                rep.clusters
            );
        }
        db
    } else {
        Db::options().read_only().open(&a.db)?
    };
    note_freshness(&db);
    let r = db.admin().verify()?;
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
