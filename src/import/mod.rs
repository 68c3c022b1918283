//! Bulk load of precomputed fingerprints: `simdb import`.
//!
//! For a first big load or a rebuild. Instead of one write batch per chunk
//! of documents, every family is written as sorted SST files and ingested
//! into a fresh store, which is then moved into place with one rename: the
//! store appears complete or not at all.
//!
//! # Inputs
//!
//! - JSONL: `{"id": "...", "fingerprint": "16 hex digits"}` per line (`id`
//!   may be an integer; other fields are ignored).
//! - The compact binary form ([`BINARY_MAGIC`] then records, see
//!   [`write_binary_record`]), recognised by its magic; or with each
//!   document's verification sketch ([`BINARY_SKETCHED_MAGIC`],
//!   [`write_binary_sketched_record`]), which then confirms its candidates
//!   and names its band buckets as an ingested document's does.
//! - Parquet (recognised by its magic): the `id` and `fingerprint` columns
//!   of `simdb export --parquet`'s schema ([`crate::db::export`]), other
//!   columns ignored; a directory stands for its `*.parquet` part files.
//!   Files that `simdb export` wrote (their key-value metadata names the
//!   recipe) are **restored**: every record as exported (sketch, write
//!   time, source, ord, priority, content hash, length, terms, top terms,
//!   weak bits), the clusters of the `cluster` column, the store's recipe
//!   from the metadata; the result is the exported store (`verify`
//!   clean, the same answers). Restored and other inputs cannot be mixed.
//!
//! The records are those `simdb ingest` writes for the same JSONL (a
//! fingerprint is a document whose content hash is the xxh3-64 of its 8
//! big-endian bytes and whose length is 0); an id given twice keeps its last
//! fingerprint, as ingest would. Any bad line stops the import with its
//! `file:line` and leaves nothing behind.
//!
//! # Steps and memory
//!
//! 1. read and check every line, sort by (id, position) in runs;
//! 2. merge: keep the last of each id, sort by (fingerprint, id);
//! 3. merge: write `refs` (fingerprint ‖ id order) and a file of the
//!    distinct fingerprints;
//! 4. write `docs` in id order and, beside it, each block family's postings
//!    (block 0 from that file, already in its order; block1..3 each from
//!    its own sort by (block, fingerprint)); a bucket of more than
//!    [`index::SEGMENT_ENTRIES`] fingerprints is written as sealed segments
//!    and a head, as a writer would have sealed it;
//! 5. create the store in a staging directory beside the target, ingest the
//!    SST files, set the count (fsync), rename it into place.
//!
//! Sorts hold at most [`Options::memory_bytes`] in memory and spill to run
//! files in the staging directory, so memory does not grow with the input.

pub mod extsort;
mod items;
mod parquet_input;
pub mod ranges;
mod read;
mod stages;

use items::*;
pub use parquet_input::*;
pub use read::*;
use stages::*;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use extsort::{read_array, read_parts, read_str, write_parts, write_str, Item, Sorted, Sorter};

use crate::db::check_id;
use crate::error::{Error, Result};
use crate::fingerprint::Content;
use crate::fingerprint::{Fingerprint, Recipe, SKETCH_BYTES};
use crate::index;
use crate::index::bands::{band_value, BANDS};
use crate::store::schema::KeepPolicy;
use crate::store::{self, Record, Tuning};

/// First 8 bytes of the binary form.
///
/// ```text
/// header  8 bytes  "SIMDBFP1"
/// record  8 bytes  fingerprint, u64 big-endian
///         2 bytes  id length n, u16 big-endian (1..=4096)
///         n bytes  id, UTF-8
/// ```
pub const BINARY_MAGIC: &[u8; 8] = b"SIMDBFP1";

/// First 8 bytes of the binary form with verification sketches: each
/// record is a fingerprint, the 32 bytes of the document's sketch (as
/// [`crate::fingerprint::Sketch`] holds them, made with the store's
/// recipe), then the id.
///
/// ```text
/// header  8 bytes  "SIMDBFP2"
/// record  8 bytes  fingerprint, u64 big-endian
///        32 bytes  sketch
///         2 bytes  id length n, u16 big-endian (1..=4096)
///         n bytes  id, UTF-8
/// ```
pub const BINARY_SKETCHED_MAGIC: &[u8; 8] = b"SIMDBFP2";

/// Appends one record of the binary form to `w` (after [`BINARY_MAGIC`]).
pub fn write_binary_record(w: &mut impl Write, id: &str, fp: Fingerprint) -> io::Result<()> {
    w.write_all(&fp.value().to_be_bytes())?;
    write_str(w, id)
}

/// Appends one record of the sketched binary form to `w` (after
/// [`BINARY_SKETCHED_MAGIC`]).
pub fn write_binary_sketched_record(
    w: &mut impl Write,
    id: &str,
    fp: Fingerprint,
    sketch: &crate::fingerprint::Sketch,
) -> io::Result<()> {
    w.write_all(&fp.value().to_be_bytes())?;
    w.write_all(&sketch.0)?;
    write_str(w, id)
}

/// Options of an import.
#[derive(Debug, Clone)]
pub struct Options {
    /// Recipe stored in the new store (the one the fingerprints were made with).
    pub recipe: Recipe,
    /// Memory for sorting before spilling to disk (default 256 MiB).
    pub memory_bytes: usize,
    /// Size of each SST file written (default 256 MiB).
    pub sst_file_bytes: u64,
    pub tuning: Tuning,
    /// Import a directory of part files that has no `_SUCCESS` (an export
    /// that did not finish): by default refused.
    pub partial: bool,
    /// Write the new store's frozen index as the posting families are
    /// written (default on; see `Maintenance::freeze`): queries read their
    /// buckets in place from the start. Costs the posting families' size
    /// again on disk.
    pub freeze: bool,
    /// Create the store keeping texts ([`crate::DbOptions::keep_texts`]):
    /// set by the import of an export of a store that kept them, whose
    /// texts it restores.
    pub keep_texts: bool,
    /// The decision log to restore, oldest first (an export's
    /// `_decisions.jsonl`; set by the import of an export that has one).
    pub decisions: Vec<crate::store::codec::Decision>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recipe: Recipe::default(),
            memory_bytes: 256 << 20,
            sst_file_bytes: 256 << 20,
            tuning: Tuning::default(),
            partial: false,
            freeze: true,
            keep_texts: false,
            decisions: Vec::new(),
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Input records read.
    pub records: u64,
    /// Documents in the new store.
    pub documents: u64,
    /// Records whose id came again later (the later one was kept).
    pub replaced: u64,
    /// Documents sharing their exact fingerprint with an earlier one.
    pub shared_fingerprints: u64,
    /// Rows of an engine's output without a fingerprint (texts with
    /// nothing usable), skipped as ingest skips them.
    pub no_fingerprint: u64,
    /// Whether the inputs were a simdb export, restored in full.
    pub restored: bool,
    /// Clusters of two or more restored from the export.
    pub clusters: u64,
    /// Seconds spent in each step: read+sort, dedup, refs+block0, docs+blocks, ingest.
    pub step_seconds: Vec<(String, f64)>,
    #[serde(skip)]
    pub elapsed: Duration,
}

/// Progress of an import, for a progress display.
#[derive(Debug)]
pub enum Event<'a> {
    Step(&'a str),
    Read(u64),
}

// --- the import -------------------------------------------------------------

fn io_err(path: &Path) -> impl Fn(io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

/// The staging directory of an import into `target`.
pub fn staging_dir(target: &Path) -> PathBuf {
    store::Staging::dir_for(target)
}

/// Imports `inputs` into a new store at `target`.
pub fn run(
    target: &Path,
    inputs: &[PathBuf],
    opts: &Options,
    mut on_event: impl FnMut(Event),
) -> Result<Summary> {
    let started = Instant::now();
    opts.recipe.validate()?;
    let inputs = expand_inputs(inputs, opts.partial)?;
    let (opts, restore) = restore_plan(&inputs, opts)?;
    let staging = store::Staging::begin(target)?;
    let mut summary = build(staging, &inputs, &opts, restore, &mut on_event)?;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Whether `inputs` are a simdb export to restore in full (all of them,
/// or none: mixing is refused), and the options with the export's recipe.
fn restore_plan(inputs: &[PathBuf], opts: &Options) -> Result<(Options, Option<KeepPolicy>)> {
    let mut found: Option<(Recipe, KeepPolicy, &Path)> = None;
    let mut keep_texts = false;
    let mut plain: Option<&Path> = None;
    for p in inputs {
        match export_metadata(p)? {
            None => plain = Some(p),
            Some(m) => match &found {
                Some((r, k, first)) if (r, k) != (&m.recipe, &m.keep) => {
                    return Err(Error::Input(format!(
                        "{} and {} are exports of stores with different recipes or keep policies",
                        first.display(),
                        p.display()
                    )))
                }
                Some(_) => {}
                None => {
                    keep_texts = m.keep_texts;
                    found = Some((m.recipe, m.keep, p));
                }
            },
        }
    }
    let Some((recipe, keep, first)) = found else {
        return Ok((opts.clone(), None));
    };
    if let Some(other) = plain {
        return Err(Error::Input(format!(
            "{} is a simdb export (restored in full: records, sketches, clusters) and {} is not: \
             import them separately",
            first.display(),
            other.display()
        )));
    }
    if recipe.uses_learned_idf() {
        return Err(Error::Input(format!(
            "{}: the store used an IDF table learned at init, which an export does not carry; \
             copy the store with `simdb backup` instead",
            first.display()
        )));
    }
    if opts.recipe != Recipe::default() && opts.recipe != recipe {
        return Err(Error::Input(format!(
            "{}: the export's recipe (top_k {}, shingle {}, hmm {}, tf {}) is not the one the \
             recipe options ask for; leave them out to restore the export's",
            first.display(),
            recipe.top_k,
            recipe.shingle,
            recipe.hmm,
            recipe.tf
        )));
    }
    let mut o = opts.clone();
    o.recipe = recipe;
    o.keep_texts |= keep_texts;
    o.decisions = export_decisions(inputs)?;
    Ok((o, Some(keep)))
}

/// The decision log of the export whose parts are `inputs` (its
/// directory's `_decisions.jsonl`), if it has one; refused when the parts
/// come from several directories with one each (two logs do not merge).
fn export_decisions(inputs: &[PathBuf]) -> Result<Vec<crate::store::codec::Decision>> {
    let mut dirs: Vec<&Path> = inputs.iter().filter_map(|p| p.parent()).collect();
    dirs.sort();
    dirs.dedup();
    let files: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join(crate::db::decisions::DECISIONS_FILE))
        .filter(|f| f.exists())
        .collect();
    let [file] = files.as_slice() else {
        if files.len() > 1 {
            return Err(Error::Input(format!(
                "{} and {} each hold a decision log: import one export with decisions at a time",
                files[0].display(),
                files[1].display()
            )));
        }
        return Ok(Vec::new());
    };
    crate::db::decisions::read_log(file)
}
