//! `simdb decide` and `simdb decisions`.

use super::prelude::*;
use simdb::db::decisions::{Decision, DecisionKind};

/// Who the command line decides as.
const WHO: &str = "local";

fn show(d: &Decision, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(d)?);
    } else {
        match d.kind {
            // `who` is quoted as the ids are: a replayed log's names reach
            // the terminal escaped (review-2026-11-c, finding 13).
            DecisionKind::NotACopy => println!(
                "{} not_a_copy {:?} {:?} by {:?} at {}",
                d.seq, d.a, d.b, d.who, d.at
            ),
            DecisionKind::Undo => {
                println!("{} undo {} by {:?} at {}", d.seq, d.undoes, d.who, d.at)
            }
            DecisionKind::Keep => println!("{} keep {:?} by {:?} at {}", d.seq, d.a, d.who, d.at),
        }
    }
    Ok(())
}

pub(super) fn decide(a: DecideArgs) -> Result<bool> {
    let mut db = Db::options().open(&a.db)?;
    let seqs = {
        let mut w = db.writer()?;
        let seqs = match &a.what {
            Decide::NotACopy { a, b } => vec![w.not_a_copy(a, b, WHO)?],
            Decide::Keep { id } => vec![w.keep(id, WHO)?],
            Decide::Undo { seq } => vec![w.undo_decision(*seq, WHO)?],
            Decide::Replay { log } => w.replay_decisions(&simdb::db::decisions::read_log(log)?)?,
        };
        w.commit()?;
        seqs
    };
    // A member that left may have been its cluster's representative's
    // last: the clusters settle as after any write.
    db.clusters().settle()?;
    let mut shown = std::collections::BTreeSet::new();
    for seq in seqs {
        if shown.insert(seq) {
            if let Some(d) = db.clusters().decisions(seq - 1, 1)?.decisions.first() {
                show(d, a.json)?;
            }
        }
    }
    Ok(true)
}

pub(super) fn decisions(a: DecisionsArgs) -> Result<bool> {
    let db = Db::options().read_only().open(&a.db)?;
    let mut after = a.after;
    loop {
        let page = db.clusters().decisions(after, 1000)?;
        for d in &page.decisions {
            show(d, a.json)?;
        }
        match page.next {
            Some(n) => after = n,
            None => break,
        }
    }
    Ok(true)
}
