//! `simdb init`.

use super::prelude::*;

pub(super) fn init(a: InitArgs) -> Result<bool> {
    let r = recipe(&a.recipe);
    let db = if a.learn_idf.is_empty() {
        Db::create(&a.db, r)?
    } else {
        let mut learner = simdb::fingerprint::IdfLearner::new(Fingerprinter::new(r.clone()));
        let mut bad = 0u64;
        for path in &a.learn_idf {
            let input = Input::guess(path);
            let items = ingest::read::read(&input, 64 << 20)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            for item in items {
                match item {
                    Ok(d) => match &d.content {
                        simdb::Content::Text(t) => learner.add(t),
                        _ => bad += 1,
                    },
                    Err(p) => {
                        eprintln!("simdb: bad input: {p}");
                        bad += 1;
                    }
                }
            }
        }
        if learner.docs() == 0 {
            bail!("--learn-idf: no texts to learn from");
        }
        let table = learner.finish();
        eprintln!(
            "learned IDF of {} terms from {} documents ({bad} lines skipped)",
            table.len(),
            table.docs()
        );
        Db::create_with_idf(&a.db, r, table)?
    };
    let r = db.recipe();
    println!(
        "created {} (top_k={}, shingle={}, hmm={}, tf={}, idf={})",
        a.db.display(),
        r.top_k,
        r.shingle,
        r.hmm,
        r.tf,
        r.idf
    );
    Ok(true)
}
