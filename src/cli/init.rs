//! `simdb init`.

use super::prelude::*;

pub(super) fn init(a: InitArgs) -> Result<bool> {
    let r = recipe(&a.recipe);
    let options = if a.keep_texts {
        Db::options().keep_texts()
    } else {
        Db::options()
    };
    let db = if a.learn_idf.is_empty() {
        options.create(&a.db, r)?
    } else {
        let inputs: Vec<Input> = a.learn_idf.iter().map(Input::guess).collect();
        let (table, bad) = ingest::learn_idf(&r, &inputs, |p| eprintln!("simdb: bad input: {p}"))
            .context("--learn-idf")?;
        eprintln!(
            "learned IDF of {} terms from {} documents ({bad} lines skipped)",
            table.len(),
            table.docs()
        );
        options.learned_idf(table).create(&a.db, r)?
    };
    let mut db = db;
    if a.keep != simdb::db::KeepPolicy::default() {
        db.maintenance().set_keep_policy(a.keep)?;
    }
    let r = db.recipe();
    println!(
        "created {} (top_k={}, shingle={}, hmm={}, tf={}, idf={}, sketch={}, script={}, latin={}, keep={}{})",
        a.db.display(),
        r.top_k,
        r.shingle,
        r.hmm,
        r.tf,
        r.idf,
        r.sketch,
        r.script,
        r.latin,
        a.keep,
        if a.keep_texts { ", texts kept" } else { "" }
    );
    Ok(true)
}
