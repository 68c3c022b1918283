//! `simdb freeze`.

use super::prelude::*;

pub(super) fn freeze(a: FreezeArgs) -> Result<bool> {
    let mut db = Db::options().open(&a.db)?;
    let r = db.maintenance().freeze()?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "froze {}: generation {}, {} entries, {:.1} MiB in {:.1}s ({})",
            a.db.display(),
            r.generation,
            r.entries,
            r.bytes as f64 / (1u64 << 20) as f64,
            r.seconds,
            r.path.display()
        );
    }
    Ok(true)
}
