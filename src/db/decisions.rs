//! What a review decided, read back: the decision log a page at a time,
//! and verify's check that the clusters obey the "not a copy" pairs
//! (docs/review.md, "Decisions"). The writes are the writer's
//! ([`super::Writer::not_a_copy`], [`super::Writer::undo_decision`]); the
//! rule itself is the clusters' placement ([`super::clusters`]).

use super::clusters::Clusters;
use super::Db;
use crate::error::{hex, Result};
pub use crate::store::codec::{Decision, DecisionKind};
use crate::store::{self, schema};

/// The file of an export that holds the store's decision log: one JSON
/// object per entry, oldest first, as `simdb decisions --json` prints
/// them. `simdb import` restores it. Its name begins with `_`, as
/// `_SUCCESS` does, so that readers of the directory's Parquet (Spark,
/// pyarrow) pass it by.
pub const DECISIONS_FILE: &str = "_decisions.jsonl";

/// The entries of a decision log file: one JSON object per line, as
/// `simdb decisions --json` prints them and an export's
/// `_decisions.jsonl` holds them, oldest first (blank lines skipped).
pub fn read_log(path: &std::path::Path) -> Result<Vec<Decision>> {
    let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
    let mut log: Vec<Decision> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let d: Decision = serde_json::from_str(line).map_err(|e| {
            crate::Error::Input(format!("{}:{}: not a decision: {e}", path.display(), i + 1))
        })?;
        if let Some(last) = log.last().filter(|l| l.seq >= d.seq) {
            return Err(crate::Error::Input(format!(
                "{}:{}: decision {} comes after decision {}: a log is oldest first",
                path.display(),
                i + 1,
                d.seq,
                last.seq
            )));
        }
        log.push(d);
    }
    Ok(log)
}

/// What stands at the end of a decision log ([`standing`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// Each standing "not a copy" pair once, as decided, with its
    /// decision's sequence.
    pub pairs: std::collections::BTreeMap<(String, String), u64>,
    /// Each kept document with its standing "keep this one" decision's
    /// sequence (a document kept again stands by its latest).
    pub kept: std::collections::BTreeMap<String, u64>,
}

/// The decisions that stand at the end of `log` (oldest first): each
/// undo takes back the decision it names, which must be an earlier "not
/// a copy" or the standing "keep this one" of its document.
pub fn standing(log: &[Decision]) -> Result<Standing> {
    let by_seq: std::collections::HashMap<u64, &Decision> =
        log.iter().map(|d| (d.seq, d)).collect();
    let mut out = Standing::default();
    for d in log {
        match d.kind {
            DecisionKind::NotACopy => {
                let reverse = (d.b.clone(), d.a.clone());
                if !out.pairs.contains_key(&reverse) {
                    out.pairs.entry((d.a.clone(), d.b.clone())).or_insert(d.seq);
                }
            }
            DecisionKind::Keep => {
                out.kept.insert(d.a.clone(), d.seq);
            }
            DecisionKind::Undo => {
                let undone = by_seq.get(&d.undoes).filter(|o| o.seq < d.seq);
                let ok = match undone {
                    Some(o) if o.kind == DecisionKind::NotACopy => {
                        let (ab, ba) = ((o.a.clone(), o.b.clone()), (o.b.clone(), o.a.clone()));
                        out.pairs.remove(&ab).or_else(|| out.pairs.remove(&ba));
                        true
                    }
                    Some(o) if o.kind == DecisionKind::Keep => {
                        out.kept.get(&o.a) == Some(&o.seq) && out.kept.remove(&o.a).is_some()
                    }
                    _ => false,
                };
                if !ok {
                    return Err(crate::Error::Input(format!(
                        "decision {} undoes {}, which is neither an earlier \"not a copy\" \
                         nor a standing \"keep\" of the log",
                        d.seq, d.undoes
                    )));
                }
            }
        }
    }
    Ok(out)
}

/// A page of the decision log ([`Clusters::decisions`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DecisionPage {
    /// Oldest first.
    pub decisions: Vec<Decision>,
    /// The `after` of the next page, if there is one.
    pub next: Option<u64>,
}

impl Clusters<'_> {
    /// At most `n` (>= 1) entries of the decision log after sequence
    /// `after` (0: from the first), oldest first.
    pub fn decisions(&self, after: u64, n: usize) -> Result<DecisionPage> {
        if n == 0 {
            return Err(crate::Error::Input(
                "a page of decisions holds at least one".into(),
            ));
        }
        let mut decisions = Vec::new();
        let mut more = false;
        self.db().store.for_each_decision(after, |d| {
            if decisions.len() == n {
                more = true;
                return Ok(false);
            }
            decisions.push(d);
            Ok(true)
        })?;
        let next = more.then(|| decisions.last().map(|d| d.seq)).flatten();
        Ok(DecisionPage { decisions, next })
    }
}

impl Db {
    /// Verify's check of the decisions: every "not a copy" key has its
    /// reverse with the same sequence, and a log entry deciding that pair;
    /// no pair is a cluster's representative and one of its members; every
    /// "keep" key names a log entry keeping that document, whose record
    /// (if stored) is kept by it; each log entry decodes, and an undo
    /// names an earlier "not a copy" or "keep".
    pub(super) fn verify_decisions(&self, problems: &mut Vec<String>) -> Result<()> {
        let store = &self.store;
        let at = store.snapshot();
        let mut log = Vec::new();
        store.for_each_decision(0, |d| {
            log.push(d);
            Ok(true)
        })?;
        // Each entry by its sequence: a pair's lookup is one probe.
        let by_seq: std::collections::HashMap<u64, &Decision> =
            log.iter().map(|d| (d.seq, d)).collect();
        for d in &log {
            let undone = by_seq.get(&d.undoes).map(|u| u.kind);
            if d.kind == DecisionKind::Undo
                && !matches!(undone, Some(DecisionKind::NotACopy | DecisionKind::Keep))
            {
                problems.push(format!(
                    "{}: key {}: an undo of {}, which is not a \"not a copy\" or \"keep\" \
                     decision",
                    store::DECISIONS,
                    hex(&schema::decision_log_key(d.seq)),
                    d.undoes
                ));
            }
        }
        store.for_each_keep(|id, seq| {
            let key = hex(&schema::keep_key(id));
            let mut problem = |what: String| {
                problems.push(format!("{}: key {key}: {what}", store::DECISIONS));
            };
            match by_seq.get(&seq) {
                Some(d) if d.kind == DecisionKind::Keep && d.a == id => {}
                _ => problem(format!("decision {seq} of the log does not keep {id:?}")),
            }
            if let Some(rec) = store.get_at(&at, id)? {
                if rec.kept != Some(seq) {
                    problem(format!(
                        "{id:?} is kept by decision {seq}, but its record says {:?}",
                        rec.kept
                    ));
                }
            }
            Ok(())
        })?;
        store.for_each_veto(|a, b, seq| {
            let key = hex(&schema::veto_key(a, b));
            let mut problem = |what: String| {
                problems.push(format!("{}: key {key}: {what}", store::DECISIONS));
            };
            if store.veto(b, a)? != Some(seq) {
                problem(format!(
                    "the pair's other order does not name decision {seq}"
                ));
            }
            match by_seq.get(&seq) {
                Some(d)
                    if d.kind == DecisionKind::NotACopy
                        && ((d.a == a && d.b == b) || (d.a == b && d.b == a)) => {}
                _ => problem(format!("decision {seq} of the log is not this pair's")),
            }
            // Each pair once: from its first order.
            if a < b {
                if let (Some(ca), Some(cb)) = (
                    store.cluster_entry_at(&at, a)?,
                    store.cluster_entry_at(&at, b)?,
                ) {
                    let rep = store.cluster_head_at(&at, ca)?.map(|(_, r)| r);
                    if ca == cb && rep.as_deref().is_some_and(|r| r == a || r == b) {
                        problem(format!(
                            "{a:?} and {b:?} are not copies (decision {seq}), yet cluster {ca} \
                             has one as its representative and the other as a member"
                        ));
                    }
                }
            }
            Ok(())
        })
    }
}
