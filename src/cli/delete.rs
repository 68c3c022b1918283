//! `simdb delete`.

use super::prelude::*;

pub(super) fn delete(a: DeleteArgs) -> Result<bool> {
    let mut db = Db::options().open(&a.db)?;
    let n = db.delete(&a.ids)?;
    eprintln!("deleted {n} of {} id(s)", a.ids.len());
    Ok(n > 0)
}
