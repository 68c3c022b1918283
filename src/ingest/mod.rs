//! The ingest run, a pipeline: inputs are read in chunks; each chunk is
//! read and fingerprinted on all cores (rayon) while the calling thread
//! applies the previous one in input order through one
//! [`Writer`](crate::Writer) and commits it as one atomic batch. Before it
//! is applied, a chunk's duplicate checks read the store on the whole pool
//! ([`crate::Writer::prefetch`]).
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

pub use crate::db::write::{
    analyze_all, extract_pages, place, place_all, place_in_chunks, Doc, DuplicatePolicy,
    Duplicates, Interrupted, Pages, Placed, WriteCounts, WritePolicy, Written,
};
use crate::db::Db;
use crate::error::{Error, Result};
pub use dedup::{dedup, dedup_keeping, DedupEvent, DedupSummary, Dropped};
pub use read::{Format, Input, Problem};

/// Options of an ingest run: the write policy of its documents, and how
/// the files are read.
#[derive(Debug, Clone)]
pub struct Options {
    /// What counts as a duplicate and what is done with it.
    pub write: WritePolicy,
    /// Stop at the first bad line.
    pub strict: bool,
    /// Documents per write batch (and per parallel fingerprinting chunk).
    pub batch_size: usize,
    /// Longest line or file accepted.
    pub max_doc_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            write: WritePolicy::default(),
            strict: false,
            batch_size: DEFAULT_BATCH_SIZE,
            max_doc_bytes: read::DEFAULT_MAX_DOC_BYTES,
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
    /// What was done with the documents read, by outcome, with the
    /// documents that had near-duplicates and the short ones written
    /// (the service and Python count with the same names).
    #[serde(flatten)]
    pub writes: crate::db::write::WriteCounts,
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
    crate::fingerprint::check_k(opts.write.k)?;
    if inputs.iter().any(Input::is_pages) {
        db.accept_pages()?;
    }
    let start = Instant::now();
    let fingerprinter = db.fingerprinter().clone();
    fingerprinter.warm_up();
    let mut w = db.writer()?;
    w.set_sync(opts.write.sync);
    let mut sum = Summary::default();
    staged_pipeline(&fingerprinter, inputs, opts, |step| {
        let chunk = match step {
            Step::Prepare(chunk) => return prefetch(&mut w, chunk, opts),
            Step::Apply(chunk) => chunk,
        };
        let at = match chunk.last() {
            Some(Ok((d, _, _))) => d.source.clone(),
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
    // Clusters whose representative the run replaced or deleted: their
    // re-checks to the end (each commit took one step).
    db.settle_clusters()?;
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
/// Pipeline: while `apply` works on chunk n, chunk n+1 is read and
/// analysed on the rayon pool (the caller's pool, if it runs inside one).
/// At most three chunks are held at once (applied, analysed, being read).
fn pipeline(
    fingerprinter: &crate::Fingerprinter,
    inputs: &[Input],
    opts: &Options,
    mut apply: impl FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    staged_pipeline(fingerprinter, inputs, opts, |step| match step {
        Step::Prepare(_) => Ok(()),
        Step::Apply(chunk) => apply(chunk),
    })
}

/// What [`staged_pipeline`] asks of its caller for each chunk, in this
/// order.
enum Step<'a> {
    /// Work on the whole pool before the chunk is applied (the chunk's
    /// reads of the store): nothing else runs beside it, so it has every
    /// core.
    Prepare(&'a Chunk),
    /// The chunk in input order, on the calling thread, while the next
    /// chunk is read and analysed on the pool.
    Apply(Chunk),
}

/// [`pipeline`] with a [`Step::Prepare`] before each chunk's apply. The
/// order matters on few cores: a prepare that ran beside the next chunk's
/// analysis would queue behind it on the pool, and the calling thread's
/// apply would then run with the pool idle. Prepared first, the chunk's
/// apply overlaps the next chunk's reading and analysis.
fn staged_pipeline(
    fingerprinter: &crate::Fingerprinter,
    inputs: &[Input],
    opts: &Options,
    mut step: impl FnMut(Step<'_>) -> Result<()>,
) -> Result<()> {
    let mut reader = Chunks {
        inputs: inputs.iter(),
        items: None,
        batch_size: opts.batch_size.max(1),
        max_doc_bytes: opts.max_doc_bytes,
    };
    let analyse = |raw: Vec<read::Item>| -> Chunk {
        // Each document with its own analysis: the two cannot fall out of
        // step.
        raw.into_par_iter()
            .map(|it| {
                it.map(|mut d| {
                    // A page becomes its text here, once, on the pool.
                    let found = d.extract_page();
                    let a = d.content.analyze(fingerprinter);
                    (d, found, a)
                })
            })
            .collect()
    };
    let mut ready: Option<Chunk> = reader.next_chunk()?.map(analyse);
    while let Some(chunk) = ready.take() {
        step(Step::Prepare(&chunk))?;
        let mut next: Result<Option<Chunk>> = Ok(None);
        let mut applied: Result<()> = Ok(());
        rayon::in_place_scope(|scope| {
            let (out, reader) = (&mut next, &mut reader);
            scope.spawn(move |_| *out = reader.next_chunk().map(|raw| raw.map(analyse)));
            applied = step(Step::Apply(chunk));
        });
        applied?;
        ready = next?;
    }
    Ok(())
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
                    bytes += it.as_ref().map(|d| d.content.held_bytes()).unwrap_or(0);
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

/// Documents per write batch by default (`ingest --batch-size`): each
/// chunk's duplicate checks read the store in one sorted pass per family,
/// and a larger chunk shares it among more documents. Into a store of 5M
/// documents 8,192 ingest at 1.4x the rate of 2,048 (docs/performance.md,
/// "Nightly ingest"); memory stays bounded by three chunks.
pub const DEFAULT_BATCH_SIZE: usize = 8192;

/// A chunk ends after this many bytes of content (or `batch_size` documents).
const CHUNK_BYTES: usize = 32 << 20;

/// A chunk of the input: each document with its analysis, or the problem
/// of a line that is not a document.
type Chunk = Vec<std::result::Result<Analysed, Problem>>;

/// A document (a page extracted to its text) with how a page's text was
/// found, and its analysis.
type Analysed = (
    Doc,
    Option<crate::web::Found>,
    Result<crate::fingerprint::Analysis>,
);

/// Reads the store's half of a chunk's duplicate checks, on every core,
/// before the chunk is applied.
fn prefetch(w: &mut crate::db::Writer<'_>, chunk: &Chunk, opts: &Options) -> Result<()> {
    let queries: Vec<crate::db::Query> = chunk
        .iter()
        .filter_map(|item| match item {
            Ok((d, _, Ok(a))) => Some(opts.write.duplicate_query(a, d.content.len())),
            _ => None,
        })
        .collect();
    let ids = chunk.iter().filter_map(|item| match item {
        Ok((d, _, Ok(_))) => Some(d.id.as_str()),
        _ => None,
    });
    w.prefetch(&queries, ids)
}

/// Applies one fingerprinted chunk in input order (its reads prefetched).
fn apply(
    w: &mut crate::db::Writer<'_>,
    sum: &mut Summary,
    chunk: Chunk,
    opts: &Options,
    on_event: &mut impl FnMut(Event<'_>),
) -> Result<()> {
    for item in chunk {
        let (doc, fp) = match item {
            Err(p) if p.skipped => {
                sum.writes.pages.skipped += 1;
                continue;
            }
            Err(p) => {
                sum.bad_lines += 1;
                on_event(Event::BadLine(&p));
                if opts.strict {
                    w.commit()?;
                    return Err(p.stopped());
                }
                continue;
            }
            Ok((d, found, a)) => {
                // A JSONL line's "html" makes a page of any input: the
                // store must take pages before its first one.
                if found.is_some() && sum.writes.pages.article + sum.writes.pages.visible_text == 0
                {
                    if let Err(e) = w.accept_pages() {
                        // The documents before it stay written.
                        w.commit()?;
                        return Err(e);
                    }
                }
                sum.writes.pages.add(found);
                (d, a)
            }
        };
        sum.read += 1;
        let a = match fp {
            Ok(a) => a,
            Err(Error::NoFeatures) => {
                sum.writes.add(None, false, false);
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
        let short = a.is_short();
        if short && !w.is_unchanged(&doc.id, &a, &doc.content)? {
            on_event(Event::Short(&doc, a.terms));
        }
        let (placed, dups) = place(w, &doc, a, &opts.write)?;
        sum.writes.add(Some(placed), !dups.hits.is_empty(), short);
        if let Some(h) = dups.hits.first() {
            on_event(Event::Duplicate(&DuplicateReport {
                id: doc.id.clone(),
                duplicate_of: h.id.clone(),
                distance: h.distance,
                similarity: h.similarity,
            }));
        }
    }
    Ok(())
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
                        on_bad(&Problem::new(
                            d.source.clone(),
                            "not a text (features or a fingerprint)",
                        ));
                    }
                },
                Err(p) if p.skipped => {}
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
