//! `simdb pairs`.

use super::prelude::*;

pub(super) fn pairs(a: PairsArgs) -> Result<bool> {
    let db = open_reader(&a.db, a.cache_mb)?;
    note_freshness(&db);
    let min_similarity = db.admin().min_similarity_or_default(a.min_similarity)?;
    let start = std::time::Instant::now();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let copies = match a.copies {
        CopiesArg::Groups => simdb::db::Copies::Grouped,
        CopiesArg::Pairs => simdb::db::Copies::Pairs,
    };
    let rep = db.clusters().pairs_with(a.k, min_similarity, copies, |p| {
        serde_json::to_writer(&mut out, &p)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(write_error("<stdout>"))
    })?;
    out.flush()?;
    let groups = match copies {
        simdb::db::Copies::Grouped => format!(
            "; {} groups of copies ({} documents, pairs name each group's first id)",
            rep.copy_groups, rep.in_copy_groups
        ),
        simdb::db::Copies::Pairs => String::new(),
    };
    eprintln!(
        "simdb: {} pairs within k={} ({} unconfirmed, {} below similarity {min_similarity}){groups}; {} fingerprint pairs, {} fingerprints shared by several documents; {:.1}s",
        rep.pairs,
        a.k,
        rep.unconfirmed,
        rep.rejected,
        rep.fingerprint_pairs,
        rep.shared_fingerprints,
        start.elapsed().as_secs_f64()
    );
    Ok(rep.pairs > 0 || rep.copy_groups > 0)
}
