//! `simdb expire`.

use super::prelude::*;

pub(super) fn expire(a: ExpireArgs) -> Result<bool> {
    let before = parse_time(&a.before)?;
    if a.dry_run {
        let db = Db::options().read_only().open(&a.db)?;
        let n = db.admin().expired(before, usize::MAX)?.len() as u64;
        if a.json {
            println!("{}", json!({"would_delete": n, "before": before}));
        } else {
            println!(
                "{}: {n} documents written before {} would be deleted (dry run)",
                a.db.display(),
                format_unix(before)
            );
        }
        return Ok(n > 0);
    }
    let mut db = Db::options().open(&a.db)?;
    let r = db.maintenance().expire(before)?;
    if a.json {
        let mut v = serde_json::to_value(&r)?;
        v["before"] = json!(before);
        println!("{v}");
    } else {
        println!(
            "{}: deleted {} documents written before {}; {} left; {} clusters dissolved",
            a.db.display(),
            r.deleted,
            format_unix(before),
            r.remaining,
            r.clusters_dissolved
        );
    }
    Ok(r.deleted > 0)
}
