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

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use extsort::{read_array, read_str, write_str, Item, Sorted, Sorter};

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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recipe: Recipe::default(),
            memory_bytes: 256 << 20,
            sst_file_bytes: 256 << 20,
            tuning: Tuning::default(),
            partial: false,
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

// --- sort items -----------------------------------------------------------

/// Step 1: (id, position) order, with where it came from.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ById {
    id: String,
    pos: u64,
    fp: u64,
    input: u32,
    line: u64,
    /// The sketch of the sketched binary form (a restored record's is in
    /// `extra`).
    sketch: Option<[u8; SKETCH_BYTES]>,
    /// A restored record ([`Restored::encode`]), or empty.
    extra: Vec<u8>,
}

impl Item for ById {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_str(w, &self.id)?;
        w.write_all(&self.pos.to_be_bytes())?;
        w.write_all(&self.fp.to_be_bytes())?;
        w.write_all(&self.input.to_be_bytes())?;
        w.write_all(&self.line.to_be_bytes())?;
        match &self.sketch {
            Some(s) => {
                w.write_all(&[1])?;
                w.write_all(s)?;
            }
            None => w.write_all(&[0])?,
        }
        w.write_all(&(self.extra.len() as u32).to_be_bytes())?;
        w.write_all(&self.extra)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        if r.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let id = read_str(r)?;
        let mut b = [0u8; 28];
        r.read_exact(&mut b)?;
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let mut flag = [0u8; 1];
        r.read_exact(&mut flag)?;
        let sketch = if flag[0] == 1 {
            let mut s = [0u8; SKETCH_BYTES];
            r.read_exact(&mut s)?;
            Some(s)
        } else {
            None
        };
        let mut n = [0u8; 4];
        r.read_exact(&mut n)?;
        let mut extra = vec![0u8; u32::from_be_bytes(n) as usize];
        r.read_exact(&mut extra)?;
        Ok(Some(ById {
            id,
            pos: u64_at(0),
            fp: u64_at(8),
            input: u32::from_be_bytes(b[16..20].try_into().unwrap_or([0; 4])),
            line: u64_at(20),
            sketch,
            extra,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity() + self.extra.capacity()
    }
}

/// Step 2: (fingerprint, id) order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ByFp {
    fp: u64,
    id: String,
    /// The restored record's sketch (the `refs` value).
    sketch: Option<[u8; crate::fingerprint::SKETCH_BYTES]>,
}

impl Item for ByFp {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.fp.to_be_bytes())?;
        write_str(w, &self.id)?;
        match &self.sketch {
            Some(s) => {
                w.write_all(&[1])?;
                w.write_all(s)
            }
            None => w.write_all(&[0]),
        }
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(fp) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let id = read_str(r)?;
        let mut flag = [0u8; 1];
        r.read_exact(&mut flag)?;
        let sketch = match flag[0] {
            0 => None,
            _ => {
                let mut s = [0u8; crate::fingerprint::SKETCH_BYTES];
                r.read_exact(&mut s)?;
                Some(s)
            }
        };
        Ok(Some(ByFp {
            fp: u64::from_be_bytes(fp),
            id,
            sketch,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// Step 4: the ingest order index, in ord order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ByOrd {
    ord: u64,
    id: String,
}

impl Item for ByOrd {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.ord.to_be_bytes())?;
        write_str(w, &self.id)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(ord) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let id = read_str(r)?;
        Ok(Some(ByOrd {
            ord: u64::from_be_bytes(ord),
            id,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// Restore: a member of a restored cluster, in (cluster, rank) order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ByCluster {
    cid: u64,
    rank: [u8; 16],
    id: String,
}

impl Item for ByCluster {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.cid.to_be_bytes())?;
        w.write_all(&self.rank)?;
        write_str(w, &self.id)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(cid) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let mut rank = [0u8; 16];
        r.read_exact(&mut rank)?;
        Ok(Some(ByCluster {
            cid: u64::from_be_bytes(cid),
            rank,
            id: read_str(r)?,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// Restore: a clustered document's `d` entry, in id order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Membership {
    id: String,
    cid: u64,
}

impl Item for Membership {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_str(w, &self.id)?;
        w.write_all(&self.cid.to_be_bytes())
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        if r.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let id = read_str(r)?;
        let mut cid = [0u8; 8];
        r.read_exact(&mut cid)?;
        Ok(Some(Membership {
            id,
            cid: u64::from_be_bytes(cid),
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// A record restored from an export, and the id of its cluster (its own
/// ord when it is alone).
struct Restored {
    rec: Record,
    cluster: u64,
}

impl Restored {
    /// The sketch (a flag byte, then its bytes when the flag is 1) ‖ the
    /// record's codec bytes ‖ cluster (u64 BE): step 2 reads the sketch
    /// alone ([`Restored::sketch_of`]), step 4 the whole.
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match &self.rec.sketch {
            Some(s) => {
                b.push(1);
                b.extend_from_slice(&s.0);
            }
            None => b.push(0),
        }
        b.extend_from_slice(&store::codec::encode_record(&self.rec));
        b.extend_from_slice(&self.cluster.to_be_bytes());
        b
    }

    /// The sketch of encoded bytes, without decoding the record.
    fn sketch_of(b: &[u8]) -> std::result::Result<Option<[u8; SKETCH_BYTES]>, String> {
        match b.first() {
            Some(0) => Ok(None),
            Some(1) => b
                .get(1..1 + SKETCH_BYTES)
                .and_then(|s| s.try_into().ok())
                .map(Some)
                .ok_or_else(|| "a restored record is truncated".to_string()),
            _ => Err("a restored record is truncated".to_string()),
        }
    }

    fn decode(b: &[u8]) -> std::result::Result<Restored, String> {
        let truncated = || "a restored record is truncated".to_string();
        let skip = match b.first() {
            Some(0) => 1,
            Some(1) => 1 + SKETCH_BYTES,
            _ => return Err(truncated()),
        };
        let body = b.get(skip..).ok_or_else(truncated)?;
        let split = body.len().checked_sub(8).ok_or_else(truncated)?;
        let (rec, cluster) = body.split_at(split);
        Ok(Restored {
            rec: store::codec::decode_record(rec)?,
            cluster: u64::from_be_bytes(cluster.try_into().map_err(|_| truncated())?),
        })
    }
}

// --- reading ----------------------------------------------------------------

/// A `refs` entry to write: fingerprint, id, sketch.
type RefsEntry = (Fingerprint, String, Option<crate::fingerprint::Sketch>);

/// One parsed input record.
struct Parsed {
    id: String,
    fp: Fingerprint,
    line: u64,
    /// The sketch of the sketched binary form.
    sketch: Option<[u8; SKETCH_BYTES]>,
    /// The whole record, from a simdb export.
    restored: Option<Restored>,
}

fn bad(path: &Path, line: u64, what: impl std::fmt::Display) -> Error {
    Error::Input(format!("{}:{line}: {what}", path.display()))
}

#[derive(serde::Deserialize)]
struct JsonFp<'a> {
    #[serde(borrow, default)]
    id: Option<JsonId<'a>>,
    #[serde(borrow, default)]
    fingerprint: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum JsonId<'a> {
    Str(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Int(u64),
    Neg(i64),
}

/// Parses one JSONL line of the import form; `Err` is the reason.
pub fn parse_json_line(line: &[u8]) -> std::result::Result<(String, Fingerprint), String> {
    let d: JsonFp = serde_json::from_slice(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let id = match d.id {
        None => return Err("missing \"id\"".into()),
        Some(JsonId::Str(s)) => s.into_owned(),
        Some(JsonId::Int(n)) => n.to_string(),
        Some(JsonId::Neg(n)) => n.to_string(),
    };
    check_id(&id).map_err(|e| e.to_string())?;
    let fp = d
        .fingerprint
        .ok_or("missing \"fingerprint\" (16 hex digits)")?;
    if fp.len() != 16 {
        return Err(format!(
            "\"fingerprint\" must be 16 hex digits, got {:?}",
            fp
        ));
    }
    let fp: Fingerprint = fp.parse().map_err(|e: Error| e.to_string())?;
    Ok((id, fp))
}

/// First bytes of a Parquet file.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// Whether `path` is a Parquet file (by its magic).
pub fn is_parquet(path: &Path) -> Result<bool> {
    let mut head = [0u8; 4];
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let n = f.read(&mut head).map_err(|e| Error::io(path, e))?;
    Ok(n == 4 && &head == PARQUET_MAGIC)
}

/// The inputs of `paths`: files as given, a directory as its Parquet part
/// files (`*.parquet`, names starting with `.` or `_` left out, sorted), as
/// `simdb export --parquet` writes them. A directory must hold the
/// `_SUCCESS` an export writes last, unless `partial`: without it the
/// export did not finish and its parts are a fraction of the store. The
/// marker is the export's manifest: the directory must then hold exactly
/// the parts it lists, each with its size, CRC-32 and rows (an empty
/// marker, from a simdb before manifests, is taken as it is).
pub fn expand_inputs(paths: &[PathBuf], partial: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut parts: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| Error::io(p, e))?
            .map(|e| e.map(|e| e.path()).map_err(|e| Error::io(p, e)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|f| {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(".parquet") && !name.starts_with(['.', '_'])
            })
            .collect();
        if parts.is_empty() {
            return Err(Error::Input(format!(
                "{}: a directory with no .parquet files",
                p.display()
            )));
        }
        if !partial && !p.join("_SUCCESS").exists() {
            return Err(Error::Input(format!(
                "{}: no _SUCCESS: the export that wrote these {} part files did not finish, so \
                 they may hold only part of the store; import them anyway with --partial",
                p.display(),
                parts.len()
            )));
        }
        #[cfg(feature = "parquet")]
        if !partial {
            if let Some(m) = crate::db::export::Manifest::read(p)? {
                let problems = m.check(p)?;
                if !problems.is_empty() {
                    return Err(Error::Input(format!(
                        "{}: not the export its _SUCCESS lists ({} parts, {} documents): {}; \
                         a copy that lost or changed a part (copy it again), or import what \
                         is there with --partial",
                        p.display(),
                        m.parts.len(),
                        m.documents,
                        problems.join("; ")
                    )));
                }
            }
        }
        parts.sort();
        out.extend(parts);
    }
    Ok(out)
}

#[cfg(feature = "parquet")]
/// Reads the `id` and `fingerprint` (INT64: the u64's bits, as `simdb
/// export --parquet` writes it; or UINT64) columns of a Parquet file;
/// other columns are not read. An id column may be any Arrow string
/// (Utf8, LargeUtf8, Utf8View), a dictionary of strings (a pandas
/// categorical), or integers (written in decimal, as JSONL's integer ids
/// are). A file with two top-level columns of one of these names is
/// refused (which one was meant?). `line` is the row number (from 1).
fn read_parquet(path: &Path, restore: bool, mut f: impl FnMut(Parsed) -> Result<()>) -> Result<()> {
    use arrow_array::{Array, Int64Array, UInt64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;

    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| bad(path, 0, e))?;
    for col in ["id", "fingerprint"] {
        match b
            .schema()
            .fields()
            .iter()
            .filter(|f| f.name() == col)
            .count()
        {
            0 => return Err(bad(path, 0, format!("no \"{col}\" column"))),
            1 => {}
            n => {
                return Err(bad(
                    path,
                    0,
                    format!("{n} columns are named \"{col}\": which one is meant is ambiguous"),
                ))
            }
        }
    }
    let mut columns = vec!["id", "fingerprint"];
    if restore {
        for c in RESTORED_COLUMNS {
            if b.schema().field_with_name(c).is_err() {
                return Err(bad(
                    path,
                    0,
                    format!("a simdb export without its \"{c}\" column"),
                ));
            }
        }
        columns.extend(RESTORED_COLUMNS);
    }
    let mask = ProjectionMask::columns(b.parquet_schema(), columns);
    let reader = b
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .map_err(|e| bad(path, 0, e))?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| bad(path, row + 1, e))?;
        let (Some(ids), Some(fps)) = (
            batch.column_by_name("id"),
            batch.column_by_name("fingerprint"),
        ) else {
            return Err(bad(
                path,
                row + 1,
                "the id and fingerprint columns were not read",
            ));
        };
        let ids = id_strings(ids.as_ref()).map_err(|e| bad(path, row + 1, e))?;
        let id_at = |i: usize| -> Option<&str> { ids[i].as_deref() };
        let (signed, unsigned) = (
            fps.as_any().downcast_ref::<Int64Array>(),
            fps.as_any().downcast_ref::<UInt64Array>(),
        );
        if signed.is_none() && unsigned.is_none() {
            return Err(bad(
                path,
                row + 1,
                format!(
                    "\"fingerprint\" must be INT64 (the u64's bits) or UINT64, not {}",
                    fps.data_type()
                ),
            ));
        }
        let fp_at = |i: usize| -> Option<u64> {
            match (signed, unsigned) {
                // Two's complement: the same 64 bits.
                (Some(a), _) => (!a.is_null(i)).then(|| a.value(i) as u64),
                (_, Some(a)) => (!a.is_null(i)).then(|| a.value(i)),
                _ => None,
            }
        };
        for i in 0..batch.num_rows() {
            row += 1;
            let id = id_at(i).ok_or_else(|| bad(path, row, "row with a null id"))?;
            let fp = fp_at(i).ok_or_else(|| bad(path, row, "row with a null fingerprint"))?;
            check_id(id).map_err(|e| bad(path, row, e))?;
            let restored = match restore {
                true => {
                    Some(restored_row(&batch, i, Fingerprint(fp)).map_err(|e| bad(path, row, e))?)
                }
                false => None,
            };
            f(Parsed {
                id: id.to_string(),
                fp: Fingerprint(fp),
                line: row,
                sketch: None,
                restored,
            })?;
        }
    }
    Ok(())
}

#[cfg(feature = "parquet")]
/// The columns of a simdb export besides id and fingerprint, all restored.
const RESTORED_COLUMNS: [&str; 11] = [
    "sketch",
    "cluster",
    "ingested_at",
    "source",
    "ord",
    "priority",
    "content_hash",
    "length",
    "terms",
    "top_terms",
    "weak_bits",
];

#[cfg(feature = "parquet")]
/// Row `i` of a simdb export's `batch` as the record it was (fingerprint
/// `fp`) and its cluster.
fn restored_row(
    batch: &arrow_array::RecordBatch,
    i: usize,
    fp: Fingerprint,
) -> std::result::Result<Restored, String> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;
    use arrow_schema::DataType as T;

    let col = |name: &str, want: &T| -> std::result::Result<&arrow_array::ArrayRef, String> {
        let c = batch
            .column_by_name(name)
            .ok_or_else(|| format!("no \"{name}\" column"))?;
        if c.data_type() != want && !matches!((c.data_type(), want), (T::List(_), T::List(_))) {
            return Err(format!("\"{name}\" must be {want}, not {}", c.data_type()));
        }
        Ok(c)
    };
    let int = |name: &str| -> std::result::Result<i64, String> {
        let c = col(name, &T::Int64)?.as_primitive::<Int64Type>();
        if c.is_null(i) {
            return Err(format!("a null \"{name}\""));
        }
        Ok(c.value(i))
    };
    let unsigned = |name: &str| -> std::result::Result<u64, String> {
        let v = int(name)?;
        u64::try_from(v).map_err(|_| format!("\"{name}\" is negative ({v})"))
    };
    let sketch = {
        let c = col("sketch", &T::Binary)?.as_binary::<i32>();
        match c.is_null(i) {
            true => None,
            false => {
                let b: [u8; crate::fingerprint::SKETCH_BYTES] =
                    c.value(i).try_into().map_err(|_| {
                        format!(
                            "a sketch of {} bytes, not {}",
                            c.value(i).len(),
                            crate::fingerprint::SKETCH_BYTES
                        )
                    })?;
                Some(crate::fingerprint::Sketch(b))
            }
        }
    };
    let source = {
        let c = col("source", &T::Utf8)?.as_string::<i32>();
        if c.is_null(i) {
            return Err("a null \"source\"".into());
        }
        c.value(i).to_string()
    };
    let priority = {
        let c = col("priority", &T::Float64)?.as_primitive::<Float64Type>();
        match c.is_null(i) {
            true => None,
            false => Some(store::codec::Priority::new(c.value(i)).ok_or("a NaN \"priority\"")?),
        }
    };
    let top_terms = {
        let c = col(
            "top_terms",
            &T::List(std::sync::Arc::new(arrow_schema::Field::new_list_field(
                T::Utf8,
                true,
            ))),
        )?
        .as_list_opt::<i32>()
        .ok_or("\"top_terms\" must be a list of strings")?;
        let items = c.value(i);
        let items = items
            .as_string_opt::<i32>()
            .ok_or("\"top_terms\" must be a list of strings")?;
        (0..items.len())
            .filter(|j| !items.is_null(*j))
            .map(|j| items.value(j).to_string())
            .collect()
    };
    let weak_bits = {
        let c = col("weak_bits", &T::Binary)?.as_binary::<i32>();
        if c.is_null(i) {
            return Err("a null \"weak_bits\"".into());
        }
        c.value(i).to_vec()
    };
    let ord = unsigned("ord")?;
    let rec = Record {
        fingerprint: fp,
        // Two's complement, as the fingerprint.
        content_hash: int("content_hash")? as u64,
        length: unsigned("length")?,
        ingested_at: unsigned("ingested_at")?,
        source,
        terms: u32::try_from(unsigned("terms")?).map_err(|_| "\"terms\" is too large")?,
        sketch,
        top_terms,
        weak_bits,
        ord,
        priority,
    };
    Ok(Restored {
        rec,
        cluster: unsigned("cluster")?,
    })
}

/// What a simdb export states of its store in its key-value metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportMeta {
    pub recipe: Recipe,
    /// The store's verification threshold, if stated.
    pub min_similarity: Option<f64>,
    /// The policy that ranked its clusters.
    pub keep: KeepPolicy,
}

#[cfg(feature = "parquet")]
/// The recipe, threshold and keep policy a simdb export states in its
/// key-value metadata, if `path` is one (a Parquet file that `simdb export` wrote).
pub fn export_metadata(path: &Path) -> Result<Option<ExportMeta>> {
    use crate::db::export::{META_KEEP_POLICY, META_MIN_SIMILARITY, META_RECIPE};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    if !is_parquet(path)? {
        return Ok(None);
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| bad(path, 0, e))?;
    let kv = reader.metadata().file_metadata().key_value_metadata();
    let get = |key: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == key))
            .and_then(|e| e.value.clone())
    };
    let Some(recipe) = get(META_RECIPE) else {
        return Ok(None);
    };
    let recipe: Recipe = serde_json::from_str(&recipe).map_err(|e| {
        bad(
            path,
            0,
            format!("the recipe in the metadata is unreadable: {e}"),
        )
    })?;
    let min_similarity = get(META_MIN_SIMILARITY).and_then(|v| v.parse().ok());
    // Exports of stores before format 6 name no policy: they ranked by
    // priority.
    let keep = match get(META_KEEP_POLICY) {
        None => KeepPolicy::Priority,
        Some(v) => v
            .parse()
            .map_err(|e| bad(path, 0, format!("the metadata's keep policy: {e}")))?,
    };
    Ok(Some(ExportMeta {
        recipe,
        min_similarity,
        keep,
    }))
}

/// Without the `parquet` feature no file is read as an export.
#[cfg(not(feature = "parquet"))]
pub fn export_metadata(_path: &Path) -> Result<Option<ExportMeta>> {
    Ok(None)
}

#[cfg(feature = "parquet")]
/// The values of an id column as strings (`None` for nulls); see
/// [`read_parquet`] for the types taken.
fn id_strings(col: &dyn arrow_array::Array) -> std::result::Result<Vec<Option<String>>, String> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_array::Array;
    use arrow_schema::DataType as T;

    fn all<'a>(
        n: usize,
        at: impl Fn(usize) -> Option<std::borrow::Cow<'a, str>>,
    ) -> Vec<Option<String>> {
        (0..n).map(|i| at(i).map(|s| s.into_owned())).collect()
    }
    macro_rules! ints {
        ($t:ty) => {{
            let a = col.as_primitive::<$t>();
            all(a.len(), |i| {
                (!a.is_null(i)).then(|| std::borrow::Cow::Owned(a.value(i).to_string()))
            })
        }};
    }
    let n = col.len();
    Ok(match col.data_type() {
        T::Utf8 => {
            let a = col.as_string::<i32>();
            all(n, |i| (!a.is_null(i)).then(|| a.value(i).into()))
        }
        T::LargeUtf8 => {
            let a = col.as_string::<i64>();
            all(n, |i| (!a.is_null(i)).then(|| a.value(i).into()))
        }
        T::Utf8View => {
            let a = col.as_string_view();
            all(n, |i| (!a.is_null(i)).then(|| a.value(i).into()))
        }
        T::Dictionary(_, value) if matches!(**value, T::Utf8 | T::LargeUtf8 | T::Utf8View) => {
            let d = col
                .as_any_dictionary_opt()
                .ok_or("\"id\" is a dictionary column that cannot be read")?;
            let values = id_strings(d.values().as_ref())?;
            let keys = d.normalized_keys();
            (0..n)
                .map(|i| {
                    if col.is_null(i) {
                        None
                    } else {
                        keys.get(i).and_then(|k| values.get(*k)).cloned().flatten()
                    }
                })
                .collect()
        }
        T::Int8 => ints!(Int8Type),
        T::Int16 => ints!(Int16Type),
        T::Int32 => ints!(Int32Type),
        T::Int64 => ints!(Int64Type),
        T::UInt8 => ints!(UInt8Type),
        T::UInt16 => ints!(UInt16Type),
        T::UInt32 => ints!(UInt32Type),
        T::UInt64 => ints!(UInt64Type),
        other => {
            return Err(format!(
                "\"id\" must be a string column (Utf8, LargeUtf8, Utf8View, or a dictionary of \
                 them) or an integer column, not {other}"
            ))
        }
    })
}

/// Reads every record of one input, calling `f` for each.
fn read_input(path: &Path, restore: bool, mut f: impl FnMut(Parsed) -> Result<()>) -> Result<()> {
    if is_parquet(path)? {
        #[cfg(feature = "parquet")]
        return read_parquet(path, restore, f);
        #[cfg(not(feature = "parquet"))]
        {
            let _ = restore;
            return Err(Error::Input(format!(
                "{}: Parquet input needs simdb built with the `parquet` feature",
                path.display()
            )));
        }
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let head = r.fill_buf().map_err(|e| Error::io(path, e))?;
    let sketched = head.starts_with(BINARY_SKETCHED_MAGIC);
    if head.starts_with(BINARY_MAGIC) || sketched {
        r.consume(BINARY_MAGIC.len());
        let mut n = 0u64;
        loop {
            n += 1;
            let fp = match read_array::<8>(&mut r) {
                Ok(None) => return Ok(()),
                Ok(Some(b)) => u64::from_be_bytes(b),
                Err(_) => return Err(bad(path, n, "record truncated (binary form)")),
            };
            let sketch = if sketched {
                let mut s = [0u8; SKETCH_BYTES];
                r.read_exact(&mut s)
                    .map_err(|_| bad(path, n, "record truncated (binary form)"))?;
                Some(s)
            } else {
                None
            };
            let id = read_str(&mut r)
                .map_err(|e| bad(path, n, format!("record {n}: bad or truncated id ({e})")))?;
            check_id(&id).map_err(|e| bad(path, n, e))?;
            f(Parsed {
                id,
                fp: Fingerprint(fp),
                line: n,
                sketch,
                restored: None,
            })?;
        }
    }
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let got = (&mut r)
            .take(64 << 10)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        if buf.last() != Some(&b'\n') && got == 64 << 10 {
            return Err(bad(path, n, "line longer than 64 KiB"));
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let (id, fp) = parse_json_line(line).map_err(|e| bad(path, n, e))?;
        f(Parsed {
            id,
            fp,
            line: n,
            sketch: None,
            restored: None,
        })?;
    }
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
                None => found = Some((m.recipe, m.keep, p)),
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
    Ok((o, Some(keep)))
}

/// Where a build's temporary and table files go, and its memory budget.
struct Build<'a> {
    tmp: PathBuf,
    sst: PathBuf,
    budget: usize,
    opts: &'a Options,
}

/// Builds the store of `inputs` in `staging`, in five steps, each one
/// sorted pass over files (never the whole input in memory), and renames it
/// into place.
fn build(
    staging: store::Staging,
    inputs: &[PathBuf],
    opts: &Options,
    restore: Option<KeepPolicy>,
    on_event: &mut impl FnMut(Event),
) -> Result<Summary> {
    let b = Build {
        tmp: staging.subdir("tmp")?,
        sst: staging.subdir("sst")?,
        budget: opts.memory_bytes,
        opts,
    };
    let mut summary = Summary::default();
    let mut step = Instant::now();
    let mut lap = |summary: &mut Summary, name: &str| {
        summary
            .step_seconds
            .push((name.to_string(), step.elapsed().as_secs_f64()));
        step = Instant::now();
    };
    on_event(Event::Step("read"));
    let by_id = b.read_by_id(inputs, restore.is_some(), &mut summary, on_event)?;
    lap(&mut summary, "read and sort by id");
    on_event(Event::Step("dedup"));
    let (uniq_path, by_fp) = b.keep_last(by_id, &mut summary)?;
    lap(&mut summary, "keep last of each id, sort by fingerprint");
    on_event(Event::Step("refs"));
    let (fps_path, bands_path, refs_files) = b.write_refs(by_fp, &mut summary)?;
    lap(&mut summary, "write refs and the distinct fingerprints");
    on_event(Event::Step("docs"));
    let now = crate::db::now();
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let (docs, blocks) = rayon::join(
        || b.write_docs(&uniq_path, &names, now, restore),
        || b.write_blocks(&fps_path),
    );
    let (docs_files, order_files, restoration) = docs?;
    let block_files = blocks?;
    lap(
        &mut summary,
        "write docs, the ingest order and the four block families",
    );
    let band_files = b.write_bands(&bands_path)?;
    lap(&mut summary, "write the sixteen band families");

    // Step 5: a fresh store in the staging directory, then one rename.
    on_event(Event::Step("ingest"));
    let mut families = vec![
        (store::REFS, refs_files),
        (store::DOCS, docs_files),
        (store::CLUSTERS, order_files),
    ];
    for (i, files) in block_files.into_iter().enumerate() {
        families.push((store::BLOCK_FAMILIES[i], files));
    }
    for (j, files) in band_files.into_iter().enumerate() {
        families.push((store::BAND_FAMILIES[j], files));
    }
    let count = store::schema::MetaU64::DocCount.owned_entry(summary.documents);
    // Positions count records from 1; the documents are stamped `now`
    // (restored ones keep their ords and times).
    let (next_ord, clock) = match restore {
        Some(_) => (restoration.next_ord.max(1), restoration.clock),
        None => (summary.records + 1, now),
    };
    let next_ord = store::schema::MetaU64::NextOrd.owned_entry(next_ord);
    let clock = store::schema::MetaU64::Clock.owned_entry(clock);
    let short = store::schema::MetaU64::ShortCount.owned_entry(restoration.short);
    // A restored store keeps the policy its clusters were ranked by.
    let (k, v) = store::schema::keep_policy_entry(restore.unwrap_or_default());
    let keep = (k.to_vec(), v.to_vec());
    staging.finish(
        &opts.recipe,
        opts.tuning,
        &families,
        &[count, next_ord, clock, short, keep],
    )?;
    summary.clusters = restoration.clusters;
    summary.restored = restore.is_some();
    lap(&mut summary, "ingest and rename");
    Ok(summary)
}

impl Build<'_> {
    /// Step 1: reads every input and sorts its records by (id, position).
    fn read_by_id(
        &self,
        inputs: &[PathBuf],
        restore: bool,
        summary: &mut Summary,
        on_event: &mut impl FnMut(Event),
    ) -> Result<Sorted<ById>> {
        let tmp = &self.tmp;
        let mut by_id = Sorter::<ById>::new(tmp, "by-id", self.budget);
        let mut pos = 0u64;
        for (input, path) in inputs.iter().enumerate() {
            read_input(path, restore, |p| {
                pos += 1;
                if pos.is_multiple_of(1 << 20) {
                    on_event(Event::Read(pos));
                }
                by_id
                    .push(ById {
                        id: p.id,
                        pos,
                        fp: p.fp.value(),
                        input: input as u32,
                        line: p.line,
                        sketch: p.sketch,
                        extra: p.restored.map(|r| r.encode()).unwrap_or_default(),
                    })
                    .map_err(io_err(tmp))
            })?;
        }
        summary.records = pos;
        by_id.finish().map_err(io_err(tmp))
    }

    /// Step 2: keeps the last record of each id, writing the kept records in id
    /// order to a file (for step 4) and sorting them by (fingerprint, id).
    fn keep_last(
        &self,
        by_id: Sorted<ById>,
        summary: &mut Summary,
    ) -> Result<(PathBuf, Sorted<ByFp>)> {
        let tmp = &self.tmp;
        let uniq_path = tmp.join("uniq.bin");
        let mut uniq =
            BufWriter::with_capacity(1 << 20, File::create(&uniq_path).map_err(io_err(tmp))?);
        let mut by_fp = Sorter::<ByFp>::new(tmp, "by-fp", self.budget);
        let mut pending: Option<ById> = None;
        let mut keep = |r: ById, by_fp: &mut Sorter<ByFp>| -> io::Result<()> {
            r.write_to(&mut uniq)?;
            let sketch = match r.extra.is_empty() {
                true => r.sketch,
                false => Restored::sketch_of(&r.extra).map_err(io::Error::other)?,
            };
            by_fp.push(ByFp {
                fp: r.fp,
                id: r.id,
                sketch,
            })
        };
        for r in by_id {
            let r = r.map_err(io_err(tmp))?;
            if let Some(p) = pending.take() {
                if p.id == r.id {
                    summary.replaced += 1;
                } else {
                    keep(p, &mut by_fp).map_err(io_err(tmp))?;
                }
            }
            pending = Some(r);
        }
        if let Some(p) = pending.take() {
            keep(p, &mut by_fp).map_err(io_err(tmp))?;
        }
        uniq.into_inner()
            .map_err(|e| e.into_error())
            .map_err(io_err(tmp))?;
        Ok((uniq_path, by_fp.finish().map_err(io_err(tmp))?))
    }

    /// Step 3: numbers documents sharing a fingerprint; writes `refs` (in
    /// fingerprint order, a chunk of table files at a time) and the file of
    /// distinct fingerprints for the block families.
    fn write_refs(
        &self,
        by_fp: Sorted<ByFp>,
        summary: &mut Summary,
    ) -> Result<(PathBuf, PathBuf, Vec<PathBuf>)> {
        let tmp = &self.tmp;
        let fps_path = tmp.join("fps.bin");
        let mut fps =
            BufWriter::with_capacity(1 << 20, File::create(&fps_path).map_err(io_err(tmp))?);
        // Each distinct fingerprint whose first document (smallest id)
        // has a sketch, with that sketch: its band buckets.
        let bands_path = tmp.join("bands.bin");
        let mut bands =
            BufWriter::with_capacity(1 << 20, File::create(&bands_path).map_err(io_err(tmp))?);
        let mut refs_entries: Vec<RefsEntry> = Vec::new();
        let mut refs_files = Vec::new();
        let mut last: Option<u64> = None;
        let flush_chunk =
            |entries: &mut Vec<RefsEntry>, refs_files: &mut Vec<PathBuf>| -> Result<()> {
                if entries.is_empty() {
                    return Ok(());
                }
                let n = refs_files.len();
                let chunk = std::mem::take(entries);
                refs_files.extend(store::write_ssts(
                    &self.sst,
                    &format!("{}-{n:05}", store::REFS),
                    store::REFS,
                    u64::MAX,
                    chunk.iter().map(|(fp, id, sketch)| {
                        Ok(store::schema::refs_entry(*fp, id, sketch.as_ref()))
                    }),
                )?);
                Ok(())
            };
        // The input is in (fingerprint, id) order, the order of refs keys.
        let chunk_docs = (self.opts.sst_file_bytes / 128).max(1024) as usize;
        for r in by_fp {
            let ByFp { fp, id, sketch } = r.map_err(io_err(tmp))?;
            summary.documents += 1;
            if last == Some(fp) {
                summary.shared_fingerprints += 1;
            } else {
                fps.write_all(&fp.to_be_bytes()).map_err(io_err(tmp))?;
                if let Some(s) = &sketch {
                    bands.write_all(&fp.to_be_bytes()).map_err(io_err(tmp))?;
                    bands.write_all(s).map_err(io_err(tmp))?;
                }
                last = Some(fp);
            }
            refs_entries.push((Fingerprint(fp), id, sketch.map(crate::fingerprint::Sketch)));
            if refs_entries.len() >= chunk_docs {
                flush_chunk(&mut refs_entries, &mut refs_files)?;
            }
        }
        flush_chunk(&mut refs_entries, &mut refs_files)?;
        for w in [fps, bands] {
            w.into_inner()
                .map_err(|e| e.into_error())
                .map_err(io_err(tmp))?;
        }
        Ok((fps_path, bands_path, refs_files))
    }

    /// Step 4a: `docs` in id order from the kept records, the ingest order
    /// index and (restoring) the clusters: their table files, and what the
    /// restore found.
    fn write_docs(
        &self,
        uniq_path: &Path,
        names: &[String],
        now: u64,
        restore: Option<KeepPolicy>,
    ) -> Result<(Vec<PathBuf>, Vec<PathBuf>, Restoration)> {
        let (tmp, sst, opts) = (&self.tmp, &self.sst, self.opts);
        let mut r = BufReader::with_capacity(1 << 20, File::open(uniq_path).map_err(io_err(tmp))?);
        // The ingest order index, sorted by ord (the input position, or the
        // restored record's).
        let mut order = Sorter::<ByOrd>::new(tmp, "order", self.budget / 4);
        // Restore: every member by (cluster, rank).
        let mut clusters = Sorter::<ByCluster>::new(tmp, "clusters", self.budget / 4);
        let mut done = Restoration::default();
        let entries = std::iter::from_fn(|| match ById::read_from(&mut r) {
            Err(e) => Some(Err(Error::io(uniq_path, e))),
            Ok(None) => None,
            Ok(Some(d)) => {
                let rec = if d.extra.is_empty() {
                    imported_record(&d, &names[d.input as usize], now)
                } else {
                    let restored = match Restored::decode(&d.extra) {
                        Ok(x) => x,
                        Err(e) => return Some(Err(Error::Input(e))),
                    };
                    let rec = restored.rec;
                    done.next_ord = done.next_ord.max(rec.ord + 1);
                    done.clock = done.clock.max(rec.ingested_at);
                    done.short += u64::from(rec.is_short());
                    let keep = restore.unwrap_or_default();
                    let rank = store::schema::Rank::of(&rec, keep).to_bytes();
                    if let Err(e) = clusters.push(ByCluster {
                        cid: restored.cluster,
                        rank,
                        id: d.id.clone(),
                    }) {
                        return Some(Err(Error::io(tmp, e)));
                    }
                    rec
                };
                if let Err(e) = order.push(ByOrd {
                    ord: rec.ord,
                    id: d.id.clone(),
                }) {
                    return Some(Err(Error::io(tmp, e)));
                }
                Some(Ok(store::schema::docs_entry(&d.id, &rec)))
            }
        });
        let docs = store::write_ssts(sst, store::DOCS, store::DOCS, opts.sst_file_bytes, entries)?;
        let sorted = order.finish().map_err(io_err(tmp))?;
        let mut last_ord: Option<u64> = None;
        let mut cluster_files = store::write_ssts(
            sst,
            "order",
            store::CLUSTERS,
            opts.sst_file_bytes,
            sorted.map(|o| {
                let o = o.map_err(|e| Error::io(tmp, e))?;
                // Restored ords come from one store: each once.
                if last_ord == Some(o.ord) {
                    return Err(Error::Input(format!(
                        "two documents have ord {} (the second is {:?}): the inputs are not \
                         the export of one store",
                        o.ord, o.id
                    )));
                }
                last_ord = Some(o.ord);
                let (k, v) = store::schema::order_entry(o.ord, &o.id);
                Ok((k.to_vec(), v))
            }),
        )?;
        if restore.is_some() {
            let sorted = clusters.finish().map_err(io_err(tmp))?;
            cluster_files.extend(restored_clusters(tmp, sst, opts, sorted, &mut done)?);
        }
        Ok((docs, cluster_files, done))
    }

    /// Step 4b: the four block families from the file of distinct fingerprints
    /// (block 0 in its order, blocks 1..3 each from its own sort).
    fn write_blocks(&self, fps_path: &Path) -> Result<Vec<Vec<PathBuf>>> {
        let tmp = &self.tmp;
        let mut out = Vec::new();
        for i in 0..crate::fingerprint::BLOCKS {
            // Fingerprints in (block i, fingerprint) order: the file is
            // already in fingerprint order, which is block 0's.
            let mut r =
                BufReader::with_capacity(1 << 20, File::open(fps_path).map_err(io_err(tmp))?);
            let mut read_fp = move || -> io::Result<Option<Fingerprint>> {
                Ok(read_array::<8>(&mut r)?.map(|b| {
                    let mut f = [0u8; 8];
                    f.copy_from_slice(&b[..8]);
                    Fingerprint(u64::from_be_bytes(f))
                }))
            };
            let sorted: Box<dyn Iterator<Item = io::Result<Fingerprint>>> = if i == 0 {
                Box::new(std::iter::from_fn(move || read_fp().transpose()))
            } else {
                let mut sorter = Sorter::<u128>::new(tmp, &format!("block{i}"), self.budget / 2);
                while let Some(fp) = read_fp().map_err(io_err(tmp))? {
                    sorter
                        .push((fp.block(i) as u128) << 64 | fp.value() as u128)
                        .map_err(io_err(tmp))?;
                }
                let sorted = sorter.finish().map_err(io_err(tmp))?;
                Box::new(sorted.map(|k| k.map(|k| Fingerprint(k as u64))))
            };
            let name = store::BLOCK_FAMILIES[i];
            out.push(store::write_ssts(
                &self.sst,
                name,
                name,
                self.opts.sst_file_bytes,
                postings(i, sorted.map(|r| r.map_err(|e| Error::io(tmp, e)))),
            )?);
        }
        Ok(out)
    }
}

impl Build<'_> {
    /// Step 4c: the sixteen band families from the file of (fingerprint,
    /// first document's sketch), each from its own sort by (band value,
    /// fingerprint). Nothing to do (and no sort) when no document has a
    /// sketch.
    fn write_bands(&self, bands_path: &Path) -> Result<Vec<Vec<PathBuf>>> {
        let tmp = &self.tmp;
        let empty = std::fs::metadata(bands_path).map_err(io_err(tmp))?.len() == 0;
        let mut out = Vec::new();
        for j in 0..BANDS {
            if empty {
                out.push(Vec::new());
                continue;
            }
            let mut r =
                BufReader::with_capacity(1 << 20, File::open(bands_path).map_err(io_err(tmp))?);
            let mut sorter = Sorter::<u128>::new(tmp, &format!("band{j}"), self.budget / 2);
            while let Some(fp) = read_array::<8>(&mut r).map_err(io_err(tmp))? {
                let s = read_array::<SKETCH_BYTES>(&mut r)
                    .map_err(io_err(tmp))?
                    .ok_or_else(|| Error::io(tmp, io::Error::other("bands file truncated")))?;
                let value = band_value(&crate::fingerprint::Sketch(s), j);
                sorter
                    .push((value as u128) << 64 | u64::from_be_bytes(fp) as u128)
                    .map_err(io_err(tmp))?;
            }
            let sorted = sorter.finish().map_err(io_err(tmp))?;
            let name = store::BAND_FAMILIES[j];
            out.push(store::write_ssts(
                &self.sst,
                name,
                name,
                self.opts.sst_file_bytes,
                postings_by(sorted.map(|k| {
                    k.map(|k| ((k >> 64) as u16, Fingerprint(k as u64)))
                        .map_err(|e| Error::io(tmp, e))
                })),
            )?);
        }
        Ok(out)
    }
}

/// The record of an imported fingerprint (not a restored export): stamped
/// `now`, its ord the input position (the earliest read is the earliest
/// ingested, as ingest would number them), its source `input:line`.
fn imported_record(d: &ById, input: &str, now: u64) -> Record {
    let fp = Fingerprint(d.fp);
    let content = Content::Fingerprint(fp);
    Record {
        fingerprint: fp,
        content_hash: content.hash(),
        length: content.len(),
        ingested_at: now,
        source: format!("{input}:{}", d.line),
        terms: 0,
        sketch: d.sketch.map(crate::fingerprint::Sketch),
        top_terms: Vec::new(),
        weak_bits: Vec::new(),
        ord: d.pos,
        priority: None,
    }
}

/// What a restore found besides the records.
#[derive(Default)]
struct Restoration {
    next_ord: u64,
    clock: u64,
    short: u64,
    clusters: u64,
}

/// The `clusters` family's `m`, `s` and `d` entries of restored clusters
/// of two or more members, from the members in (cluster, rank) order, as
/// SST files (in key order: `d` < `m` < `s`, each its own files).
fn restored_clusters(
    tmp: &Path,
    sst: &Path,
    opts: &Options,
    sorted: impl Iterator<Item = io::Result<ByCluster>>,
    done: &mut Restoration,
) -> Result<Vec<PathBuf>> {
    use store::schema::{member_entry, membership_entry, size_entry, Rank};
    let budget = opts.memory_bytes;
    let sizes_path = tmp.join("sizes.bin");
    let mut sizes =
        BufWriter::with_capacity(1 << 20, File::create(&sizes_path).map_err(io_err(tmp))?);
    let mut member_of = Sorter::<Membership>::new(tmp, "membership", budget / 4);
    let mut sorted = sorted.peekable();
    let mut ready: std::collections::VecDeque<(Vec<u8>, Vec<u8>)> = Default::default();
    let mut failed: Option<Error> = None;
    let members = std::iter::from_fn(|| loop {
        if let Some(e) = ready.pop_front() {
            return Some(Ok(e));
        }
        if let Some(e) = failed.take() {
            return Some(Err(e));
        }
        let first = match sorted.next()? {
            Ok(m) => m,
            Err(e) => return Some(Err(Error::io(tmp, e))),
        };
        let mut group = vec![first];
        while let Some(Ok(next)) = sorted.peek() {
            if next.cid != group[0].cid {
                break;
            }
            match sorted.next() {
                Some(Ok(m)) => group.push(m),
                _ => break,
            }
        }
        if group.len() < 2 {
            continue;
        }
        let cid = group[0].cid;
        let n = group.len() as u64;
        done.clusters += 1;
        let wrote = sizes
            .write_all(&cid.to_be_bytes())
            .and_then(|()| sizes.write_all(&n.to_be_bytes()));
        if let Err(e) = wrote {
            return Some(Err(Error::io(tmp, e)));
        }
        for m in group {
            let rank = Rank {
                priority_key: u64::from_be_bytes(m.rank[..8].try_into().unwrap_or([0; 8])),
                ord: u64::from_be_bytes(m.rank[8..].try_into().unwrap_or([0; 8])),
            };
            if let Err(e) = member_of.push(Membership {
                id: m.id.clone(),
                cid,
            }) {
                failed = Some(Error::io(tmp, e));
            }
            let (k, v) = member_entry(cid, rank, &m.id);
            ready.push_back((k.to_vec(), v));
        }
    });
    let mut files = store::write_ssts(
        sst,
        "members",
        store::CLUSTERS,
        opts.sst_file_bytes,
        members,
    )?;
    sizes
        .into_inner()
        .map_err(|e| e.into_error())
        .map_err(io_err(tmp))?;
    let mut r = BufReader::with_capacity(1 << 20, File::open(&sizes_path).map_err(io_err(tmp))?);
    let size_entries = std::iter::from_fn(move || {
        let cid = match read_array::<8>(&mut r) {
            Ok(Some(b)) => u64::from_be_bytes(b),
            Ok(None) => return None,
            Err(e) => return Some(Err(Error::io(tmp, e))),
        };
        match read_array::<8>(&mut r) {
            Ok(Some(n)) => {
                let (k, v) = size_entry(cid, u64::from_be_bytes(n));
                Some(Ok((k.to_vec(), v.to_vec())))
            }
            Ok(None) => Some(Err(Error::io(tmp, io::ErrorKind::UnexpectedEof.into()))),
            Err(e) => Some(Err(Error::io(tmp, e))),
        }
    });
    files.extend(store::write_ssts(
        sst,
        "sizes",
        store::CLUSTERS,
        opts.sst_file_bytes,
        size_entries,
    )?);
    let sorted = member_of.finish().map_err(io_err(tmp))?;
    files.extend(store::write_ssts(
        sst,
        "membership",
        store::CLUSTERS,
        opts.sst_file_bytes,
        sorted.map(|m| {
            let m = m.map_err(|e| Error::io(tmp, e))?;
            let (k, v) = membership_entry(&m.id, m.cid);
            Ok((k, v.to_vec()))
        }),
    )?);
    Ok(files)
}

/// The (key, value) entries of block family `i` from distinct
/// fingerprints in (block i, fingerprint) order: per bucket, its head and,
/// beyond [`index::SEGMENT_ENTRIES`] fingerprints, sealed segments of that
/// many each (the head keeps the rest and their number).
fn postings<'a>(
    i: usize,
    sorted: impl Iterator<Item = Result<Fingerprint>> + 'a,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 'a {
    postings_by(sorted.map(move |r| r.map(|fp| (fp.block(i), fp))))
}

/// [`postings`] of (bucket, fingerprint) pairs in that order (a band
/// family's bucket is not a block of the fingerprint).
fn postings_by<'a>(
    sorted: impl Iterator<Item = Result<(u16, Fingerprint)>> + 'a,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 'a {
    let mut sorted = sorted.peekable();
    let mut ready: std::collections::VecDeque<(Vec<u8>, Vec<u8>)> = Default::default();
    std::iter::from_fn(move || {
        if let Some(e) = ready.pop_front() {
            return Some(Ok(e));
        }
        let (block, first) = match sorted.next()? {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        let mut group = vec![first];
        while let Some(Ok((b, fp))) = sorted.peek() {
            if *b != block {
                break;
            }
            // Block 1..3 come from a sort of every document's
            // fingerprint: shared ones repeat.
            if group.last() != Some(fp) {
                group.push(*fp);
            }
            sorted.next();
        }
        let sealed = group.len() / index::SEGMENT_ENTRIES;
        let (full, rest) = group.split_at(sealed * index::SEGMENT_ENTRIES);
        ready.push_back((
            index::bucket_key(block).to_vec(),
            index::encode_head(rest, sealed as u32),
        ));
        for (n, seg) in full.chunks(index::SEGMENT_ENTRIES).enumerate() {
            ready.push_back((
                index::segment_key(block, n as u32 + 1).to_vec(),
                index::encode_posting(seg),
            ));
        }
        ready.pop_front().map(Ok)
    })
}
