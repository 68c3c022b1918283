//! The ingest run, a pipeline: inputs are read in chunks; each chunk is
//! fingerprinted on all cores (rayon) while the calling thread applies the
//! previous one in input order through one [`Writer`](crate::Writer) and commits it as one
//! atomic batch.
//!
//! Memory is bounded by three chunks (each at most `batch_size` documents
//! or 32 MiB of content) and the maximum document size. Fingerprints are
//! computed independently per document and applied in input order, so results do not depend on the
//! number of threads. Each document's duplicate check sees the store and
//! every document before it in the run, even in the same batch.

pub mod dedup;
pub mod read;

use std::io::Write;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::db::Query;
use crate::db::{limits, Db, Outcome};
use crate::error::{Error, Result};
use crate::fingerprint::Analysis;
pub use dedup::{dedup, DedupEvent, DedupSummary, Dropped};
pub use read::{Doc, Format, Input, Problem};

/// What to do with a document that has a near-duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicatePolicy {
    /// Index it anyway and report it (default).
    #[default]
    IndexAll,
    /// Report it and do not index it.
    Skip,
}

/// Options of an ingest run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Distance at which a document counts as a near-duplicate (<= 11).
    pub k: u32,
    pub policy: DuplicatePolicy,
    /// Stop at the first bad line.
    pub strict: bool,
    /// Documents per write batch (and per parallel fingerprinting chunk).
    pub batch_size: usize,
    /// Longest line or file accepted.
    pub max_doc_bytes: usize,
    /// fsync each batch before it counts as written.
    pub sync: bool,
    /// Sketch similarity a candidate needs to count as a duplicate (see
    /// [`crate::db::Query::min_similarity`]).
    pub min_similarity: f64,
    /// Confidence-ranked probing beyond `k` with this budget (buckets over
    /// the four families, see [`crate::index::ProbePlan::ranked`]); 0 =
    /// exact at `k` only.
    pub probe_budget: usize,
    /// Duplicates each written document lists (at most
    /// [`limits::MAX_DUPLICATES`]; see [`Duplicates`]).
    pub max_duplicates: usize,
}

impl Options {
    /// The duplicate check of an analysed document under these options.
    pub fn duplicate_query(&self, a: &Analysis) -> Query {
        Query {
            k: self.k,
            sketch: a.sketch,
            min_similarity: self.min_similarity,
            ..Query::new(a.fingerprint)
        }
        .probing(&a.weak_bits, self.probe_budget)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            k: 3,
            policy: DuplicatePolicy::IndexAll,
            strict: false,
            batch_size: 2048,
            max_doc_bytes: read::DEFAULT_MAX_DOC_BYTES,
            sync: false,
            min_similarity: crate::db::DEFAULT_MIN_SIMILARITY,
            probe_budget: crate::index::DEFAULT_PROBE_BUDGET,
            max_duplicates: limits::DEFAULT_MAX_DUPLICATES,
        }
    }
}

/// One line of the duplicate report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DuplicateReport {
    pub id: String,
    pub duplicate_of: String,
    pub distance: u32,
    /// Sketch similarity of the two texts, when both have a sketch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

/// Counts of an ingest run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Documents read (good lines).
    pub read: u64,
    pub inserted: u64,
    pub replaced: u64,
    pub unchanged: u64,
    /// Documents with a near-duplicate stored or earlier in the run.
    pub duplicates: u64,
    /// Duplicates not indexed (policy Skip).
    pub skipped_duplicates: u64,
    /// Documents with no usable features (not indexed).
    pub no_features: u64,
    /// Short documents (fewer than [`crate::fingerprint::SHORT_TERMS`]
    /// terms): indexed, but their near-copies may lie beyond k.
    pub short: u64,
    /// Lines or files that could not be read as documents.
    pub bad_lines: u64,
    /// How the run changed the clusters.
    pub clusters: crate::db::ClusterChanges,
    #[serde(skip)]
    pub elapsed: Duration,
}

impl Summary {
    /// Documents read per second.
    pub fn docs_per_second(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.read as f64 / s
        } else {
            0.0
        }
    }
}

/// Something an ingest run tells its caller as it goes.
pub enum Event<'a> {
    /// A line or file that is not a document.
    BadLine(&'a Problem),
    /// A document with no usable features.
    NoFeatures(&'a Doc),
    /// A short document (it is indexed): its number of terms.
    Short(&'a Doc, usize),
    /// A near-duplicate was found.
    Duplicate(&'a DuplicateReport),
    /// A batch was committed; counts so far.
    Committed(&'a Summary),
}

/// Ingests `inputs` into `db`. `on_event` sees bad lines, empty documents,
/// duplicates and commits as they happen.
///
/// With `strict`, the first bad line ends the run with [`Error::Input`]
/// after the documents before it are committed.
pub fn run(
    db: &mut Db,
    inputs: &[Input],
    opts: &Options,
    mut on_event: impl FnMut(Event<'_>),
) -> Result<Summary> {
    crate::fingerprint::check_k(opts.k)?;
    let start = Instant::now();
    let fingerprinter = db.fingerprinter().clone();
    fingerprinter.warm_up();
    let mut w = db.writer()?;
    w.set_sync(opts.sync);
    let mut sum = Summary::default();
    pipeline(&fingerprinter, inputs, opts, |chunk| {
        let at = match chunk.last() {
            Some(Ok((d, _))) => d.source.clone(),
            Some(Err(p)) => p.location.clone(),
            None => String::new(),
        };
        let applied = apply(&mut w, &mut sum, chunk, opts, &mut on_event)
            .and_then(|()| w.commit())
            .map_err(|e| match e {
                e @ (Error::Storage(_) | Error::Io { .. }) => Error::BatchWrite {
                    at,
                    source: Box::new(e),
                },
                e => e,
            });
        sum.elapsed = start.elapsed();
        sum.clusters = w.cluster_changes();
        applied?;
        if sum.read + sum.bad_lines > 0 {
            on_event(Event::Committed(&sum));
        }
        Ok(())
    })?;
    w.commit()?;
    drop(w);
    // Flush the run's memtables (and so its posting operands) to SST
    // files: every later read-only open (query, get, stats) would
    // otherwise replay the run's write-ahead log, and fold its operands
    // into each bucket it reads.
    db.flush()?;
    sum.elapsed = start.elapsed();
    Ok(sum)
}

/// Reads `inputs` in chunks, analyses each chunk on all cores (rayon) and
/// hands the chunks to `apply` in input order, on the calling thread.
///
/// Pipeline: while `apply` works on chunk n, chunk n+1 is analysed on the
/// rayon pool (the caller's pool, if it runs inside one). Chunks are read
/// here, between the two. At most three chunks are held at once (applied,
/// analysed, just read).
fn pipeline(
    fingerprinter: &crate::Fingerprinter,
    inputs: &[Input],
    opts: &Options,
    mut apply: impl FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    let mut reader = Chunks {
        inputs: inputs.iter(),
        items: None,
        batch_size: opts.batch_size.max(1),
        max_doc_bytes: opts.max_doc_bytes,
    };
    let mut ready: Option<Chunk> = None;
    loop {
        let raw = reader.next_chunk()?;
        if raw.is_none() && ready.is_none() {
            return Ok(());
        }
        let mut analysed: Option<Chunk> = None;
        let mut applied: Result<()> = Ok(());
        rayon::in_place_scope(|scope| {
            if let Some(raw) = raw {
                let out = &mut analysed;
                scope.spawn(move |_| {
                    // Each document with its own analysis: the two cannot
                    // fall out of step.
                    let chunk: Chunk = raw
                        .into_par_iter()
                        .map(|it| {
                            it.map(|d| {
                                let a = d.content.analyze(fingerprinter);
                                (d, a)
                            })
                        })
                        .collect();
                    *out = Some(chunk);
                });
            }
            if let Some(chunk) = ready.take() {
                applied = apply(chunk);
            }
        });
        applied?;
        ready = analysed;
    }
}

/// Reads the inputs one chunk at a time.
struct Chunks<'a> {
    inputs: std::slice::Iter<'a, Input>,
    items: Option<Box<dyn Iterator<Item = read::Item> + Send + 'a>>,
    batch_size: usize,
    max_doc_bytes: usize,
}

impl Chunks<'_> {
    /// The next chunk: at most `batch_size` items or about [`CHUNK_BYTES`]
    /// of content; `None` at the end of the last input.
    fn next_chunk(&mut self) -> Result<Option<Vec<read::Item>>> {
        let mut bytes = 0usize;
        let mut chunk = Vec::new();
        while chunk.len() < self.batch_size && bytes < CHUNK_BYTES {
            let next = match self.items.as_mut() {
                Some(items) => items.next(),
                None => None,
            };
            match next {
                Some(it) => {
                    bytes += it.as_ref().map(|d| d.content.len() as usize).unwrap_or(0);
                    chunk.push(it);
                }
                None => match self.inputs.next() {
                    Some(input) => {
                        let items = read::read(input, self.max_doc_bytes)
                            .map_err(|e| Error::io(&input.path, e))?;
                        self.items = Some(items);
                    }
                    None => break,
                },
            }
        }
        Ok((!chunk.is_empty()).then_some(chunk))
    }
}

/// A chunk ends after this many bytes of content (or `batch_size` documents).
const CHUNK_BYTES: usize = 32 << 20;

/// A chunk of the input: each document with its analysis, or the problem
/// of a line that is not a document.
type Chunk = Vec<std::result::Result<(read::Doc, Result<Analysis>), Problem>>;

/// Applies one fingerprinted chunk in input order.
fn apply(
    w: &mut crate::db::Writer<'_>,
    sum: &mut Summary,
    chunk: Chunk,
    opts: &Options,
    on_event: &mut impl FnMut(Event<'_>),
) -> Result<()> {
    for item in chunk {
        let (doc, fp) = match item {
            Err(p) => {
                sum.bad_lines += 1;
                on_event(Event::BadLine(&p));
                if opts.strict {
                    w.commit()?;
                    return Err(p.stopped());
                }
                continue;
            }
            Ok((d, a)) => (d, a),
        };
        sum.read += 1;
        let a = match fp {
            Ok(a) => a,
            Err(Error::NoFeatures) => {
                sum.no_features += 1;
                on_event(Event::NoFeatures(&doc));
                continue;
            }
            Err(e) => {
                sum.bad_lines += 1;
                let p = Problem::of(&doc, &e);
                on_event(Event::BadLine(&p));
                if opts.strict {
                    w.commit()?;
                    return Err(p.stopped());
                }
                continue;
            }
        };
        if a.is_short() && !w.is_unchanged(&doc.id, &a, &doc.content)? {
            sum.short += 1;
            on_event(Event::Short(&doc, a.terms));
        }
        let (placed, dups) = place(w, &doc, a, opts)?;
        if let Some(h) = dups.hits.first() {
            sum.duplicates += 1;
            on_event(Event::Duplicate(&DuplicateReport {
                id: doc.id.clone(),
                duplicate_of: h.id.clone(),
                distance: h.distance,
                similarity: h.similarity,
            }));
        }
        match placed {
            Placed::Unchanged => sum.unchanged += 1,
            Placed::Skipped => sum.skipped_duplicates += 1,
            Placed::Written(Outcome::Inserted) => sum.inserted += 1,
            Placed::Written(Outcome::Replaced) => sum.replaced += 1,
            Placed::Written(Outcome::Unchanged) => sum.unchanged += 1,
        }
    }
    Ok(())
}

/// What [`place`] did with a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// The same id with the same content is stored: nothing written, no
    /// duplicate check.
    Unchanged,
    /// It has near-duplicates and the policy is [`DuplicatePolicy::Skip`]:
    /// not written.
    Skipped,
    /// Written (inserted, or replacing the id's earlier content).
    Written(Outcome),
}

/// The confirmed near-duplicates a write's check found (see
/// [`place`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Duplicates {
    /// Nearest first, then by id: every confirmed near-duplicate when
    /// `complete`, else the first [`limits::CHECK_CONFIRMED`] of them (or
    /// [`Options::max_duplicates`], if more) or those among the first
    /// [`limits::CHECK_EXAMINED`] candidates. A document's duplicates are
    /// those within `k` if it has any; only a document with none has
    /// those that confidence-ranked probing finds beyond `k`. Answers list
    /// [`Duplicates::listed`].
    pub hits: Vec<crate::Hit>,
    /// Whether the check looked at every candidate, so that `hits` is all
    /// of them and their number is exact.
    pub complete: bool,
}

impl Duplicates {
    /// How many were confirmed: the exact count when [`Duplicates::exact`],
    /// else a lower bound.
    pub fn count(&self) -> usize {
        self.hits.len()
    }

    /// Whether [`Duplicates::count`] is exact.
    pub fn exact(&self) -> bool {
        self.complete
    }

    /// The first `n` (nearest first).
    pub fn listed(&self, n: usize) -> &[crate::Hit] {
        &self.hits[..n.min(self.hits.len())]
    }
}

/// Writes one analysed document through `w` as ingest does: an unchanged
/// re-ingest is left alone; otherwise its near-duplicates in the store and
/// in `w`'s pending batch are looked for with [`Options::duplicate_query`]
/// (the document's own id aside) and, unless the policy skips duplicates,
/// it is written joining their clusters. Returns what was done and the
/// near-duplicates (none for an unchanged document).
///
/// The check reads candidates nearest first and stops after
/// [`limits::CHECK_CONFIRMED`] confirmed ones or
/// [`limits::CHECK_EXAMINED`] looked at, so a write costs about the same
/// whether its document has no stored copy or a million.
pub fn place(
    w: &mut crate::db::Writer<'_>,
    doc: &Doc,
    a: Analysis,
    opts: &Options,
) -> Result<(Placed, Duplicates)> {
    // Unchanged re-ingests are not news: check before looking for duplicates.
    if w.is_unchanged(&doc.id, &a, &doc.content)? {
        return Ok((Placed::Unchanged, Duplicates::default()));
    }
    let q = Query {
        exclude: Some(doc.id.clone()),
        ..opts.duplicate_query(&a)
    };
    let depth = limits::CHECK_CONFIRMED.max(opts.max_duplicates.min(limits::MAX_DUPLICATES));
    let check = w.check(&q, depth, limits::CHECK_EXAMINED, true)?;
    let dups = Duplicates {
        complete: check.complete,
        hits: check.hits,
    };
    if !dups.hits.is_empty() && opts.policy == DuplicatePolicy::Skip {
        return Ok((Placed::Skipped, dups));
    }
    // The clusters joined do not depend on how many the write lists.
    let near: Vec<String> = dups
        .hits
        .iter()
        .take(limits::CHECK_CONFIRMED)
        .map(|h| h.id.clone())
        .collect();
    let outcome = w.put_near(&doc.id, a, &doc.content, &doc.source, doc.priority, &near)?;
    Ok((Placed::Written(outcome), dups))
}

impl Placed {
    /// The outcome's name in answers (`--json`, the service, Python).
    pub fn name(self) -> &'static str {
        match self {
            Placed::Written(Outcome::Inserted) => "inserted",
            Placed::Written(Outcome::Replaced) => "replaced",
            Placed::Unchanged | Placed::Written(Outcome::Unchanged) => "unchanged",
            Placed::Skipped => "duplicate",
        }
    }
}

/// What [`place_all`] did with one document.
#[derive(Debug, Clone)]
pub struct Written {
    /// `None`: the document has no usable features, and was not written.
    pub placed: Option<Placed>,
    pub fingerprint: Option<crate::Fingerprint>,
    pub short: bool,
    /// Its near-duplicates, nearest first.
    pub duplicates: Duplicates,
}

impl Written {
    /// [`Placed::name`], or `no_features`.
    pub fn outcome(&self) -> &'static str {
        self.placed.map_or("no_features", Placed::name)
    }
}

/// Analyses `docs` in parallel (on the current rayon pool): `None` for a
/// document with no usable features. Any other failure is the first
/// failing document's index and error, so that a caller can refuse the
/// batch before writing any of it.
pub fn analyze_all(
    f: &crate::Fingerprinter,
    docs: &[Doc],
) -> std::result::Result<Vec<Option<Analysis>>, (usize, Error)> {
    docs.par_iter()
        .enumerate()
        .map(|(i, d)| match d.content.analyze(f) {
            Ok(a) => Ok(Some(a)),
            Err(Error::NoFeatures) => Ok(None),
            Err(e) => Err((i, e)),
        })
        .collect()
}

/// [`place`]s each analysed document through `w`, in order (a later one
/// sees the earlier ones as duplicates); does not commit.
pub fn place_all(
    w: &mut crate::db::Writer<'_>,
    docs: &[Doc],
    analyses: Vec<Option<Analysis>>,
    opts: &Options,
) -> Result<Vec<Written>> {
    let mut out = Vec::with_capacity(docs.len());
    for (doc, a) in docs.iter().zip(analyses) {
        out.push(place_written(w, doc, a, opts)?);
    }
    Ok(out)
}

/// [`place`] of one document of [`analyze_all`]'s (`None`: no usable
/// features, not written).
fn place_written(
    w: &mut crate::db::Writer<'_>,
    doc: &Doc,
    a: Option<Analysis>,
    opts: &Options,
) -> Result<Written> {
    let Some(a) = a else {
        return Ok(Written {
            placed: None,
            fingerprint: None,
            short: false,
            duplicates: Duplicates::default(),
        });
    };
    let (fingerprint, short) = (a.fingerprint, a.is_short());
    let (placed, duplicates) = place(w, doc, a, opts)?;
    Ok(Written {
        placed: Some(placed),
        fingerprint: Some(fingerprint),
        short,
        duplicates,
    })
}

/// A chunked write stopped by an error (see [`place_in_chunks`]).
#[derive(Debug)]
pub struct Interrupted {
    /// The documents committed before it, in order: the first `written`
    /// of the request are stored.
    pub written: usize,
    pub error: Error,
}

/// [`place`]s `docs` (with their analyses from [`analyze_all`]) in order
/// through `db`'s shared writer, committing in chunks: each chunk is one
/// atomic batch and holds the writer for at most
/// [`limits::WRITE_CHUNK_DOCS`] documents or [`limits::WRITE_CHUNK_TIME`],
/// then hands it on fairly, so a one-document write from elsewhere never
/// waits behind a large request for longer than a chunk. A later document
/// sees the earlier ones as duplicates (committed, or pending in its
/// chunk).
///
/// On an error the chunks before it stay written: [`Interrupted`] says how
/// many documents are.
pub fn place_in_chunks(
    db: &Db,
    docs: &[Doc],
    analyses: Vec<Option<Analysis>>,
    opts: &Options,
) -> std::result::Result<Vec<Written>, Interrupted> {
    let mut out: Vec<Written> = Vec::with_capacity(docs.len());
    let mut analyses = analyses.into_iter();
    let mut committed = 0;
    let fail = |written, error| Interrupted { written, error };
    while out.len() < docs.len() {
        let mut w = db.shared_writer().map_err(|e| fail(committed, e))?;
        w.set_sync(opts.sync);
        let start = Instant::now();
        let first = out.len();
        while out.len() < docs.len()
            && out.len() - first < limits::WRITE_CHUNK_DOCS
            && start.elapsed() < limits::WRITE_CHUNK_TIME
        {
            let doc = &docs[out.len()];
            let a = analyses.next().flatten();
            out.push(place_written(&mut w, doc, a, opts).map_err(|e| fail(committed, e))?);
        }
        w.commit().map_err(|e| fail(committed, e))?;
        committed = out.len();
    }
    Ok(out)
}

/// Writes one report line as JSON.
pub fn write_report(out: &mut impl Write, r: &DuplicateReport) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")
}

/// Learns an IDF table (see [`crate::fingerprint::LearnedIdf`]) from the
/// texts of `inputs` (read as ingest reads them), with `recipe`'s
/// segmentation and stop words; `on_bad` sees each line or document that
/// is not a text. Memory holds the distinct terms, not the texts. Returns
/// the table and how many lines were skipped; an input with no text at all
/// is an error.
pub fn learn_idf(
    recipe: &crate::Recipe,
    inputs: &[Input],
    mut on_bad: impl FnMut(&Problem),
) -> Result<(crate::fingerprint::LearnedIdf, u64)> {
    let mut learner =
        crate::fingerprint::IdfLearner::new(crate::Fingerprinter::new(recipe.clone()));
    let mut skipped = 0u64;
    for input in inputs {
        let items = read::read(input, read::DEFAULT_MAX_DOC_BYTES)
            .map_err(|e| Error::io(&input.path, e))?;
        for item in items {
            match item {
                Ok(d) => match &d.content {
                    crate::Content::Text(t) => learner.add(t),
                    _ => {
                        skipped += 1;
                        on_bad(&Problem {
                            location: d.source.clone(),
                            reason: "not a text (features or a fingerprint)".into(),
                        });
                    }
                },
                Err(p) => {
                    skipped += 1;
                    on_bad(&p);
                }
            }
        }
    }
    if learner.docs() == 0 {
        return Err(Error::Input("no texts to learn the IDF from".into()));
    }
    Ok((learner.finish(), skipped))
}
