//! Filter mode (`simdb dedup`): the documents of the inputs that have no
//! near-copy earlier in the inputs or in a store, in input order.
//!
//! The documents kept so far live in a scratch store (a [`Db`] the caller
//! makes, usually in a temp directory): memory stays bounded however long
//! the input, and "earlier in the input" is decided by the same index,
//! probing and verification as ingest's duplicate check, so `dedup` keeps
//! exactly the documents that `ingest --skip-duplicates` would insert into
//! a store holding what `--db` holds.

use std::time::{Duration, Instant};

use super::{pipeline, Chunk, Options};
use crate::db::write::Doc;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::fingerprint::Analysis;
use crate::ingest::read::{Input, Problem};

/// A dropped document and what it duplicates.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Dropped {
    pub id: String,
    /// Where it was read (`name:line`, or the file).
    pub source: String,
    /// The id of the document it is a near-copy of.
    pub duplicate_of: String,
    /// Where that document was read, if it is in the input (absent for a
    /// document of the store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of_source: Option<String>,
    /// Whether that document is in the store (`--db`), not the input.
    pub in_db: bool,
    pub distance: u32,
    /// Sketch similarity of the two texts, when both have a sketch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// When it was confirmed by containment (it is shorter and contained
    /// in that document): the estimated share of it inside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containment: Option<f64>,
}

impl Dropped {
    /// `doc` dropped as a near-copy of the store's document `h`.
    fn in_db(doc: &Doc, h: crate::Hit) -> Dropped {
        Dropped {
            id: doc.id.clone(),
            source: doc.source.clone(),
            duplicate_of: h.id,
            duplicate_of_source: None,
            in_db: true,
            distance: h.distance,
            similarity: h.similarity,
            containment: h.containment,
        }
    }
}

/// Counts of a dedup run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DedupSummary {
    /// Documents read (good lines).
    pub read: u64,
    pub kept: u64,
    /// Dropped as near-copies of an earlier document of the input.
    pub dropped: u64,
    /// Dropped as near-copies of a document of the store.
    pub dropped_in_db: u64,
    /// Documents with no usable features (kept: they duplicate nothing).
    pub no_features: u64,
    /// Lines or files that are not documents (not in the output).
    pub bad_lines: u64,
    /// Web pages read, by how their text was found (absent when none).
    #[serde(skip_serializing_if = "super::Pages::is_empty")]
    pub pages: super::Pages,
    #[serde(skip)]
    pub elapsed: Duration,
}

/// What a dedup run tells its caller, in input order.
pub enum DedupEvent<'a> {
    /// A document to keep.
    Keep(&'a Doc),
    /// A document dropped as a near-copy.
    Drop(&'a Doc, &'a Dropped),
    /// A line or file that is not a document.
    BadLine(&'a Problem),
}

/// Filters `inputs`: each document is kept unless it has a confirmed
/// near-copy (as `opts` define it: k, probing, similarity) among the
/// documents kept before it or in `against`. `scratch` must be an empty
/// store opened for writing; it ends up holding the kept documents (under
/// their input position, with the id as their source). Documents are
/// fingerprinted with `against`'s recipe and IDF when it is given, else
/// with `scratch`'s.
///
/// With `opts.strict`, the first bad line ends the run with
/// [`Error::Input`].
pub fn dedup(
    scratch: &mut Db,
    against: Option<&Db>,
    inputs: &[Input],
    opts: &Options,
    mut on_event: impl FnMut(DedupEvent<'_>) -> Result<()>,
) -> Result<DedupSummary> {
    let start = Instant::now();
    let fingerprinter = prepare(scratch, against, opts)?;
    let mut w = scratch.writer()?;
    let mut sum = DedupSummary::default();
    pipeline(&fingerprinter, inputs, opts, |chunk: Chunk| {
        for item in chunk {
            let Some((doc, a)) = document(item, &mut sum, opts.strict, &mut on_event)? else {
                continue;
            };
            let q = opts.write.duplicate_query(&a, doc.content.len());
            let in_db = match against {
                Some(db) => db.first_duplicate(&doc.id, &q)?,
                None => None,
            };
            // Not a copy of a kept document `against` decided it is not a
            // copy of (kept documents are stored under their position,
            // with their id as the source).
            let vetoes = against.filter(|db| db.has_vetoes());
            let mut admit = |h: &crate::Hit| -> Result<bool> {
                let Some(db) = vetoes else { return Ok(true) };
                match w.get(&h.id)? {
                    Some(r) => Ok(!db.vetoed(&doc.id, &r.source)?),
                    None => Ok(true),
                }
            };
            let dropped = match in_db {
                Some(h) => Some(Dropped::in_db(&doc, h)),
                None => match w.first_duplicate_admitting(&q, &mut admit)? {
                    Some(h) => {
                        // Kept documents are stored under their position,
                        // with their id as the source.
                        let (id, source) = match w.get(&h.id)? {
                            Some(r) => (r.source, Some(h.id.clone())),
                            None => (h.id.clone(), None),
                        };
                        Some(Dropped {
                            id: doc.id.clone(),
                            source: doc.source.clone(),
                            duplicate_of: id,
                            duplicate_of_source: source,
                            in_db: false,
                            distance: h.distance,
                            similarity: h.similarity,
                            containment: h.containment,
                        })
                    }
                    None => None,
                },
            };
            match dropped {
                Some(d) => {
                    if d.in_db {
                        sum.dropped_in_db += 1;
                    } else {
                        sum.dropped += 1;
                    }
                    on_event(DedupEvent::Drop(&doc, &d))?;
                }
                None => {
                    // Under its source (`name:line`): unique in the run.
                    w.put(&doc.source, a, &doc.content, &doc.id)?;
                    sum.kept += 1;
                    on_event(DedupEvent::Keep(&doc))?;
                }
            }
        }
        w.commit()
    })?;
    w.commit()?;
    sum.elapsed = start.elapsed();
    Ok(sum)
}

/// [`dedup`] under a keep policy other than `first`, which a single pass
/// cannot apply (a longer or newer copy may come later): the inputs are
/// read twice. First every document is written into `scratch`, whose
/// clusters follow `keep` (the store's rule: anchored at the
/// representative, see [`crate::db::clusters`]), except those with a
/// near-copy in `against`; then the inputs are read again and each
/// document is kept when it represents its cluster or is alone, and
/// dropped as a near-copy of its representative otherwise. Events come
/// in input order, from the second pass. `scratch` must be an empty store
/// opened for writing; standard input cannot be read twice, so it is
/// refused.
pub fn dedup_keeping(
    scratch: &mut Db,
    against: Option<&Db>,
    inputs: &[Input],
    opts: &Options,
    keep: crate::db::KeepPolicy,
    mut on_event: impl FnMut(DedupEvent<'_>) -> Result<()>,
) -> Result<DedupSummary> {
    if inputs.iter().any(|i| i.path.as_os_str() == "-") {
        return Err(Error::Input(format!(
            "keeping the {keep} copy reads the input twice: give files, not standard input"
        )));
    }
    let start = Instant::now();
    let fingerprinter = prepare(scratch, against, opts)?;
    scratch.set_keep_policy(keep)?;
    let in_db = |a: &crate::fingerprint::Analysis, doc: &Doc| -> Result<Option<crate::Hit>> {
        match against {
            Some(db) => {
                db.first_duplicate(&doc.id, &opts.write.duplicate_query(a, doc.content.len()))
            }
            None => Ok(None),
        }
    };
    // Pass 1: every document into the scratch store, under its source
    // (unique in the run), with its id as the source; `against`'s "not a
    // copy" pairs of the input's ids are decided there (under the
    // documents' places) before the later of a pair is placed.
    {
        let mut w = scratch.writer()?;
        let mut decided = Decided::default();
        pipeline(&fingerprinter, inputs, opts, |chunk: Chunk| {
            for (doc, _, a) in chunk.into_iter().flatten() {
                let Ok(a) = a else { continue };
                if in_db(&a, &doc)?.is_some() {
                    continue;
                }
                decided.before_placing(against, &mut w, &doc)?;
                let stored = Doc {
                    id: doc.source.clone(),
                    source: doc.id.clone(),
                    ..doc
                };
                crate::db::write::place(&mut w, &stored, a, &opts.write)?;
            }
            w.commit()
        })?;
        w.commit()?;
    }
    // Pass 2: in input order, what the clusters keep.
    let mut sum = DedupSummary::default();
    pipeline(&fingerprinter, inputs, opts, |chunk: Chunk| {
        for item in chunk {
            let Some((doc, a)) = document(item, &mut sum, opts.strict, &mut on_event)? else {
                continue;
            };
            if let Some(h) = in_db(&a, &doc)? {
                sum.dropped_in_db += 1;
                on_event(DedupEvent::Drop(&doc, &Dropped::in_db(&doc, h)))?;
                continue;
            }
            let cluster = scratch.clusters().of(&doc.source)?;
            let rep = cluster
                .as_ref()
                .map(|c| c.representative.clone())
                .filter(|r| *r != doc.source);
            match rep {
                None => {
                    sum.kept += 1;
                    on_event(DedupEvent::Keep(&doc))?;
                }
                Some(rep) => {
                    let r = scratch.get(&rep)?.ok_or_else(|| {
                        Error::Input(format!(
                            "representative {rep:?} is not in the scratch store"
                        ))
                    })?;
                    sum.dropped += 1;
                    let d = Dropped {
                        id: doc.id.clone(),
                        source: doc.source.clone(),
                        duplicate_of: r.source.clone(),
                        duplicate_of_source: Some(rep),
                        in_db: false,
                        distance: a.fingerprint.distance(r.fingerprint),
                        similarity: a.sketch.zip(r.sketch).map(|(x, y)| x.similarity(&y)),
                        containment: None,
                    };
                    on_event(DedupEvent::Drop(&doc, &d))?;
                }
            }
        }
        Ok(())
    })?;
    sum.elapsed = start.elapsed();
    Ok(sum)
}

/// The places (scratch ids) of the input's documents that have "not a
/// copy" decisions in the store deduplicated against, by input id.
#[derive(Default)]
struct Decided {
    places: std::collections::HashMap<String, String>,
}

impl Decided {
    /// Before `doc` is placed in the scratch store: the pairs `against`
    /// decided between its id and those of documents placed before it,
    /// decided between their places.
    fn before_placing(
        &mut self,
        against: Option<&Db>,
        w: &mut crate::db::Writer<'_>,
        doc: &Doc,
    ) -> Result<()> {
        let Some(db) = against.filter(|db| db.has_vetoes()) else {
            return Ok(());
        };
        let others = db.vetoed_with(&doc.id)?;
        if others.is_empty() {
            return Ok(());
        }
        let log: Vec<crate::store::codec::Decision> = others
            .iter()
            .filter_map(|o| self.places.get(o))
            .map(|place| crate::store::codec::Decision {
                seq: 0,
                kind: crate::store::codec::DecisionKind::NotACopy,
                a: doc.source.clone(),
                b: place.clone(),
                who: "dedup".into(),
                at: 0,
                undoes: 0,
            })
            .collect();
        w.replay_decisions(&log)?;
        self.places.insert(doc.id.clone(), doc.source.clone());
        Ok(())
    }
}

/// A chunk item as a document to decide on: a bad line is counted and
/// reported (an error with `strict`), a document without usable features
/// is counted and kept; `None` for both.
fn document(
    item: std::result::Result<super::Analysed, Problem>,
    sum: &mut DedupSummary,
    strict: bool,
    on_event: &mut impl FnMut(DedupEvent<'_>) -> Result<()>,
) -> Result<Option<(Doc, Analysis)>> {
    let (doc, analysis) = match item {
        Err(p) if p.skipped => {
            sum.pages.skipped += 1;
            return Ok(None);
        }
        Err(p) => {
            sum.bad_lines += 1;
            on_event(DedupEvent::BadLine(&p))?;
            return if strict { Err(p.stopped()) } else { Ok(None) };
        }
        Ok((doc, found, a)) => {
            sum.pages.add(found);
            (doc, a)
        }
    };
    sum.read += 1;
    match analysis {
        Ok(a) => Ok(Some((doc, a))),
        Err(Error::NoFeatures) => {
            sum.no_features += 1;
            sum.kept += 1;
            on_event(DedupEvent::Keep(&doc))?;
            Ok(None)
        }
        Err(e) => {
            sum.bad_lines += 1;
            let p = Problem::of(&doc, &e);
            on_event(DedupEvent::BadLine(&p))?;
            if strict {
                Err(p.stopped())
            } else {
                Ok(None)
            }
        }
    }
}

/// Checks the options and that `scratch` is empty; the fingerprinter of
/// the run (`against`'s recipe and IDF when given, else `scratch`'s),
/// warmed up.
fn prepare(scratch: &Db, against: Option<&Db>, opts: &Options) -> Result<crate::Fingerprinter> {
    crate::fingerprint::check_k(opts.write.k)?;
    if !scratch.is_empty()? {
        return Err(Error::Input(
            "the scratch store of a dedup run must be empty".into(),
        ));
    }
    let fingerprinter = against
        .map(|d| d.fingerprinter())
        .unwrap_or(scratch.fingerprinter())
        .clone();
    fingerprinter.warm_up();
    Ok(fingerprinter)
}
