//! `simdb clusters`.

use super::prelude::*;

pub(super) fn clusters(a: ClustersArgs) -> Result<bool> {
    let db = Db::options().read_only().open(&a.db)?;
    note_freshness(&db);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut n = 0u64;
    let mut docs = 0u64;
    db.clusters().each(a.min_size, |c| {
        n += 1;
        docs += c.size;
        let r = if a.json {
            serde_json::to_writer(&mut out, &c)
                .map_err(io::Error::from)
                .and_then(|()| out.write_all(b"\n"))
        } else {
            let ids: Vec<&str> = c.members.iter().skip(1).map(|m| m.id.as_str()).collect();
            writeln!(
                out,
                "cluster {}: {} documents, largest distance {}\n  representative {}\n  members {}",
                c.id,
                c.size,
                c.max_distance,
                c.representative,
                ids.join(" ")
            )
        };
        r.map_err(write_error("<stdout>"))
    })?;
    out.flush()?;
    if !a.json {
        eprintln!(
            "simdb: {n} clusters of at least {} documents, {docs} documents in them",
            a.min_size.max(2)
        );
    }
    Ok(n > 0)
}
