//! `simdb export --parquet`: the store as Parquet files, one row per
//! document, the exchange format for tools beyond one machine (Spark).
//!
//! # Schema
//!
//! ```text
//! column       Parquet type            meaning
//! id           BYTE_ARRAY (UTF8)       the document id
//! fingerprint  INT64                   the u64 fingerprint's bits as a two's-complement
//!                                      i64 (values >= 2^63 are negative; `x & 0xFFFF…`
//!                                      or a cast to unsigned gives the u64 back)
//! sketch       BYTE_ARRAY, nullable    the verification sketch (SKETCH_BYTES bytes),
//!                                      null when the document had no text
//! cluster      INT64                   its cluster's id (a document alone has its own)
//! ingested_at  INT64                   Unix seconds of the write
//! source       BYTE_ARRAY (UTF8)       where it came from (`file:line`, …)
//! ord          INT64                   ingest order (store-wide; larger = written later)
//! priority     DOUBLE, nullable        the input's priority, if it gave one
//! content_hash INT64                   xxh3-64 of the text (of the fingerprint, for one given
//!                                      as such), as two's complement like `fingerprint`
//! length       INT64                   the text's length in bytes
//! terms        INT64                   terms of the text (0: unknown)
//! top_terms    LIST<UTF8>              the heaviest terms, heaviest first
//! weak_bits    BYTE_ARRAY              the fingerprint's least-confident bits, weakest
//!                                      first, a byte each (empty: unknown)
//! dated        INT64, nullable         the document's own time, Unix seconds (a crawl's
//!                                      fetch date, an input's "time"; taken up to 2^32-1;
//!                                      a larger one of an older store as two's complement);
//!                                      null: none (format 9)
//! parts        BYTE_ARRAY              the document's 12 smallest part hashes, u64
//!                                      big-endian each, ascending (empty: none; format 10, see
//!                                      `simdb::index::parts`)
//! text         BYTE_ARRAY (UTF8), nullable  the text it was fingerprinted from, in a store that
//!                                      keeps texts (format 11); null otherwise
//! fine         BYTE_ARRAY, nullable    the fine sketch, 96 bytes (format 14, see
//!                                      `simdb::fingerprint::fine`); null: none
//! ```
//!
//! Every file's key-value metadata names what a job outside needs to
//! read the rows as simdb does: `simdb.recipe` (the store's recipe as
//! JSON: how fingerprints and sketches were made), `simdb.min_similarity`
//! (the store's default verification threshold), `simdb.keep_policy` (who
//! represents a cluster), `simdb.keep_texts` (`true` when the store keeps
//! texts), `simdb.rule` and `simdb.rule_digest` (the rule the answers
//! follow, the recipe with this build's constants, and its digest: see
//! [`crate::db::rule`]; a job outside refuses an export whose rule is not
//! its own build's), `simdb.export_version` (1). With them `simdb
//! import` restores every column (see `crate::import`).
//!
//! `priority`, `length` and `ord` are what the keep policy ranks a
//! cluster's members by (see [`crate::db::KeepPolicy`]).
//!
//! Rows are in id order. Files are `part-NNNNN.parquet` (each written under
//! a dot-name and renamed when complete), row groups of
//! [`ExportOptions::row_group_rows`] rows written as the store is read, so
//! memory holds one row group; `_SUCCESS` marks a finished export (written
//! after the parts and the directory are fsynced, then fsynced itself:
//! after a crash, a directory with `_SUCCESS` holds every part). It is the
//! export's [`Manifest`]: every part with its size, rows and CRC-32 (and
//! the store's decision log, `_decisions.jsonl`, when it has one: one JSON
//! object per entry, as `simdb decisions --json` prints them), so
//! that a copy that lost or changed a part (an interrupted `rsync` sends
//! `_SUCCESS` first) is told from the export ([`Manifest::check`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::Db;
use crate::error::{Error, Result};
use crate::store::Record;

/// How an export is cut into files and row groups.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Rows per row group (the unit a reader reads; memory holds one).
    pub row_group_rows: usize,
    /// Rows per file (a new `part-` file after this many).
    pub file_rows: u64,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            row_group_rows: 128 * 1024,
            file_rows: 8 << 20,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportSummary {
    pub documents: u64,
    pub files: Vec<PathBuf>,
    pub bytes: u64,
}

/// The marker's name: written last, it lists every part.
pub const MARKER: &str = "_SUCCESS";

/// What `_SUCCESS` holds (JSON): the parts of a finished export.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`Manifest::FORMAT`].
    pub format: String,
    /// Rows in all parts: the store's documents.
    pub documents: u64,
    pub parts: Vec<PartEntry>,
    /// The store's decision log ([`DECISIONS_FILE`]; `rows`: its entries),
    /// when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<PartEntry>,
}

pub use super::decisions::DECISIONS_FILE;

/// One part of a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartEntry {
    /// The file's name in the export's directory.
    pub file: String,
    pub bytes: u64,
    pub rows: u64,
    /// CRC-32 (IEEE, as `crc32fast` and zlib compute it) of the file's
    /// bytes, 8 lowercase hex digits.
    pub crc32: String,
}

impl Manifest {
    /// The `format` of this layout.
    pub const FORMAT: &'static str = "simdb-export-manifest 1";

    /// The manifest of the export in `dir`: `Ok(None)` when its `_SUCCESS`
    /// is empty (an export of a simdb before manifests, which cannot be
    /// checked); an error when it is missing or not a manifest.
    pub fn read(dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MARKER);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        if bytes.is_empty() {
            return Ok(None);
        }
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Input(format!("{}: not an export manifest: {e}", path.display()))
        })?;
        if m.format != Self::FORMAT {
            return Err(Error::Input(format!(
                "{}: manifest format {:?}; this simdb reads {:?}",
                path.display(),
                m.format,
                Self::FORMAT
            )));
        }
        Ok(Some(m))
    }

    /// What differs between this manifest and the `*.parquet` files of
    /// `dir` (names starting with `.` or `_` left out): parts missing,
    /// parts it does not list, and parts whose size, rows (from the
    /// file's footer) or CRC-32 differ; empty when the directory holds
    /// exactly the export. Reads every part whole (for its checksum).
    pub fn check(&self, dir: &Path) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let mut listed: std::collections::BTreeSet<&str> = Default::default();
        for p in &self.parts {
            listed.insert(&p.file);
            let path = dir.join(&p.file);
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    problems.push(format!("{} is missing ({} rows)", p.file, p.rows));
                    continue;
                }
                Err(e) => return Err(Error::io(&path, e)),
            };
            if meta.len() != p.bytes {
                problems.push(format!(
                    "{} has {} bytes, the export wrote {}",
                    p.file,
                    meta.len(),
                    p.bytes
                ));
                continue;
            }
            let crc = file_crc32(&path)?;
            if crc != p.crc32 {
                problems.push(format!(
                    "{} has CRC-32 {crc}, the export wrote {}",
                    p.file, p.crc32
                ));
                continue;
            }
            let rows = parquet_rows(&path)?;
            if rows != p.rows {
                problems.push(format!(
                    "{} has {rows} rows, the export wrote {}",
                    p.file, p.rows
                ));
            }
        }
        if let Some(d) = &self.decisions {
            let path = dir.join(&d.file);
            match std::fs::metadata(&path) {
                Ok(m) if m.len() != d.bytes => problems.push(format!(
                    "{} has {} bytes, the export wrote {}",
                    d.file,
                    m.len(),
                    d.bytes
                )),
                Ok(_) => {
                    let crc = file_crc32(&path)?;
                    if crc != d.crc32 {
                        problems.push(format!(
                            "{} has CRC-32 {crc}, the export wrote {}",
                            d.file, d.crc32
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    problems.push(format!("{} is missing ({} decisions)", d.file, d.rows))
                }
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        let mut extra: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.ends_with(".parquet") && !n.starts_with(['.', '_']))
            .filter(|n| !listed.contains(n.as_str()))
            .collect();
        extra.sort();
        for n in extra {
            problems.push(format!("{n} is not a part of the export"));
        }
        Ok(problems)
    }
}

/// The CRC-32 of the file at `path`, as [`PartEntry::crc32`] spells it.
fn file_crc32(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:08x}", h.finalize()))
}

/// The rows of a Parquet file, from its footer.
fn parquet_rows(path: &Path) -> Result<u64> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let r = SerializedFileReader::new(f)
        .map_err(|e| Error::Input(format!("{}: not a Parquet file: {e}", path.display())))?;
    Ok(u64::try_from(r.metadata().file_metadata().num_rows()).unwrap_or(0))
}

/// A writer that counts and checksums what passes through it.
struct Hashed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Hashed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The Arrow schema of the exported files (see the module docs).
pub fn parquet_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("fingerprint", DataType::Int64, false),
        Field::new("sketch", DataType::Binary, true),
        Field::new("cluster", DataType::Int64, false),
        Field::new("ingested_at", DataType::Int64, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("ord", DataType::Int64, false),
        Field::new("priority", DataType::Float64, true),
        Field::new("content_hash", DataType::Int64, false),
        Field::new("length", DataType::Int64, false),
        Field::new("terms", DataType::Int64, false),
        Field::new(
            "top_terms",
            DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            false,
        ),
        Field::new("weak_bits", DataType::Binary, false),
        Field::new("dated", DataType::Int64, true),
        Field::new("parts", DataType::Binary, false),
        Field::new("text", DataType::Utf8, true),
        Field::new("fine", DataType::Binary, true),
    ]))
}

/// Key of the recipe (JSON) in an export's key-value metadata.
pub const META_RECIPE: &str = "simdb.recipe";
/// Key of the store's default verification threshold.
pub const META_MIN_SIMILARITY: &str = "simdb.min_similarity";
/// Key of the store's keep policy.
pub const META_KEEP_POLICY: &str = "simdb.keep_policy";
/// Key of the export's version (1: the columns above).
pub const META_EXPORT_VERSION: &str = "simdb.export_version";
/// Key of whether the store keeps texts (`true` or `false`).
pub const META_KEEP_TEXTS: &str = "simdb.keep_texts";
/// Key of the rule the store's answers follow (the recipe and this
/// build's constants, [`super::rule::Rule::to_json`]).
pub const META_RULE: &str = "simdb.rule";
/// Key of that rule's digest (16 hex digits, [`super::rule::Rule::digest`]).
pub const META_RULE_DIGEST: &str = "simdb.rule_digest";
/// A row group is written once its texts reach this many bytes, whatever
/// its rows: memory holds one row group.
const ROW_GROUP_TEXT_BYTES: usize = 64 << 20;

/// One row group being built.
struct Rows {
    id: StringBuilder,
    fingerprint: Int64Builder,
    sketch: BinaryBuilder,
    cluster: Int64Builder,
    ingested_at: Int64Builder,
    source: StringBuilder,
    ord: Int64Builder,
    priority: Float64Builder,
    content_hash: Int64Builder,
    length: Int64Builder,
    terms: Int64Builder,
    top_terms: ListBuilder<StringBuilder>,
    weak_bits: BinaryBuilder,
    dated: Int64Builder,
    parts: BinaryBuilder,
    fine: BinaryBuilder,
    text: StringBuilder,
    len: usize,
    /// Bytes of text in the rows so far.
    text_bytes: usize,
}

impl Rows {
    fn new() -> Rows {
        Rows {
            id: StringBuilder::new(),
            fingerprint: Int64Builder::new(),
            sketch: BinaryBuilder::new(),
            cluster: Int64Builder::new(),
            ingested_at: Int64Builder::new(),
            source: StringBuilder::new(),
            ord: Int64Builder::new(),
            priority: Float64Builder::new(),
            content_hash: Int64Builder::new(),
            length: Int64Builder::new(),
            terms: Int64Builder::new(),
            top_terms: ListBuilder::new(StringBuilder::new()),
            weak_bits: BinaryBuilder::new(),
            dated: Int64Builder::new(),
            parts: BinaryBuilder::new(),
            fine: BinaryBuilder::new(),
            text: StringBuilder::new(),
            len: 0,
            text_bytes: 0,
        }
    }

    fn push(&mut self, id: &str, r: &Record, cluster: u64, text: Option<&str>) {
        self.id.append_value(id);
        // Two's complement: the same 64 bits.
        self.fingerprint.append_value(r.fingerprint.value() as i64);
        match &r.sketch {
            Some(s) => self.sketch.append_value(s.0),
            None => self.sketch.append_null(),
        }
        self.cluster.append_value(cluster as i64);
        self.ingested_at.append_value(r.ingested_at as i64);
        self.source.append_value(&r.source);
        self.ord.append_value(r.ord as i64);
        self.priority.append_option(r.priority.map(|p| p.value()));
        self.content_hash.append_value(r.content_hash as i64);
        self.length.append_value(r.length as i64);
        self.terms.append_value(i64::from(r.terms));
        for t in &r.top_terms {
            self.top_terms.values().append_value(t);
        }
        self.top_terms.append(true);
        self.weak_bits.append_value(&r.weak_bits);
        self.dated.append_option(r.dated.map(|t| t as i64));
        let parts: Vec<u8> = r.parts.iter().flat_map(|p| p.to_be_bytes()).collect();
        self.parts.append_value(parts);
        self.fine.append_option(r.fine.map(|f| f.0));
        self.text.append_option(text);
        self.text_bytes += text.map_or(0, str::len);
        self.len += 1;
    }

    fn finish(&mut self, schema: &SchemaRef) -> std::result::Result<RecordBatch, String> {
        self.len = 0;
        self.text_bytes = 0;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.fingerprint.finish()),
            Arc::new(self.sketch.finish()),
            Arc::new(self.cluster.finish()),
            Arc::new(self.ingested_at.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.ord.finish()),
            Arc::new(self.priority.finish()),
            Arc::new(self.content_hash.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.terms.finish()),
            Arc::new(self.top_terms.finish()),
            Arc::new(self.weak_bits.finish()),
            Arc::new(self.dated.finish()),
            Arc::new(self.parts.finish()),
            Arc::new(self.text.finish()),
            Arc::new(self.fine.finish()),
        ];
        RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
    }
}

/// What every part of an export states in its key-value metadata: the
/// store the rows are the documents of (`simdb import` restores it).
#[derive(Debug, Clone)]
pub struct ExportHeader {
    pub recipe: crate::Recipe,
    /// The store's default verification threshold.
    pub min_similarity: f64,
    /// Who represents a cluster.
    pub keep: super::KeepPolicy,
    /// Whether the store keeps texts (the `text` column holds them).
    pub keep_texts: bool,
}

impl ExportHeader {
    /// The header of a store of `recipe` under `keep` that keeps no texts,
    /// confirming at the recipe's default threshold: what an engine's run
    /// (`simdb.ray.dedup`, the Spark job) stands for.
    pub fn of_recipe(recipe: crate::Recipe, keep: super::KeepPolicy) -> ExportHeader {
        ExportHeader {
            min_similarity: super::recipe_min_similarity(&recipe),
            recipe,
            keep,
            keep_texts: false,
        }
    }

    fn properties(&self, row_group_rows: usize) -> Result<WriterProperties> {
        use parquet::file::metadata::KeyValue;
        let recipe =
            serde_json::to_string(&self.recipe).map_err(|e| Error::Input(e.to_string()))?;
        let rule = super::rule::Rule::of(&self.recipe);
        let kv = vec![
            KeyValue::new(META_RECIPE.to_string(), recipe),
            KeyValue::new(
                META_MIN_SIMILARITY.to_string(),
                self.min_similarity.to_string(),
            ),
            KeyValue::new(META_KEEP_POLICY.to_string(), self.keep.name().to_string()),
            KeyValue::new(META_KEEP_TEXTS.to_string(), self.keep_texts.to_string()),
            KeyValue::new(META_RULE.to_string(), rule.to_json()),
            KeyValue::new(
                META_RULE_DIGEST.to_string(),
                format!("{:016x}", rule.digest()),
            ),
            KeyValue::new(META_EXPORT_VERSION.to_string(), "1".to_string()),
        ];
        Ok(WriterProperties::builder()
            .set_key_value_metadata(Some(kv))
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(row_group_rows))
            .set_created_by(format!("simdb {}", env!("CARGO_PKG_VERSION")))
            .build())
    }
}

/// One `part-NNNNN.parquet` of an export being written: under a dot-name,
/// a row group at a time (memory holds one), synced and renamed when
/// [`PartWriter::finish`]ed, so a part is whole or absent. An export is
/// its parts and then the marker ([`finish_export`]); parts may be written
/// by different processes (an engine's workers), each numbered apart.
pub struct PartWriter {
    writer: ArrowWriter<Hashed<std::fs::File>>,
    tmp: PathBuf,
    path: PathBuf,
    rows: Rows,
    schema: SchemaRef,
    row_group_rows: usize,
    written: u64,
}

impl PartWriter {
    /// Starts part `number` of the export in directory `dir` (which must
    /// exist), its row groups of `row_group_rows` rows (at least 1).
    pub fn create(
        dir: &Path,
        number: usize,
        header: &ExportHeader,
        row_group_rows: usize,
    ) -> Result<PartWriter> {
        if row_group_rows == 0 {
            return Err(Error::Input("row groups need at least one row".into()));
        }
        let name = format!("part-{number:05}.parquet");
        let tmp = dir.join(format!(".{name}.tmp"));
        let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let file = Hashed {
            inner: file,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        };
        let schema = parquet_schema();
        let props = header.properties(row_group_rows)?;
        let writer =
            ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| fail(&tmp, e))?;
        Ok(PartWriter {
            writer,
            tmp,
            path: dir.join(name),
            rows: Rows::new(),
            schema,
            row_group_rows,
            written: 0,
        })
    }

    /// Adds the document `id` stored as `rec`, a member of cluster
    /// `cluster` (its own ord when alone), with its kept text.
    pub fn push(&mut self, id: &str, rec: &Record, cluster: u64, text: Option<&str>) -> Result<()> {
        self.rows.push(id, rec, cluster, text);
        if self.rows.len >= self.row_group_rows || self.rows.text_bytes >= ROW_GROUP_TEXT_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// The rows added so far.
    pub fn rows(&self) -> u64 {
        self.written + self.rows.len as u64
    }

    /// Writes the rows built so far as one row group.
    fn flush(&mut self) -> Result<()> {
        if self.rows.len == 0 {
            return Ok(());
        }
        let n = self.rows.len as u64;
        let batch = self
            .rows
            .finish(&self.schema)
            .map_err(|e| fail(&self.tmp, e))?;
        self.writer.write(&batch).map_err(|e| fail(&self.tmp, e))?;
        // Each batch is one row group: memory holds one.
        self.writer.flush().map_err(|e| fail(&self.tmp, e))?;
        self.written += n;
        Ok(())
    }

    /// Writes the last row group and the footer, syncs the file and renames
    /// it into place; returns its entry of the manifest.
    pub fn finish(mut self) -> Result<PartEntry> {
        self.flush()?;
        let rows = self.written;
        let hashed = self.writer.into_inner().map_err(|e| fail(&self.tmp, e))?;
        hashed
            .inner
            .sync_all()
            .map_err(|e| Error::io(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        Ok(PartEntry {
            file: self
                .path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string(),
            bytes: hashed.bytes,
            rows,
            crc32: format!("{:08x}", hashed.crc.finalize()),
        })
    }
}

/// Ends the export in `out` whose parts (and decision log) are written:
/// syncs the directory, then writes the marker, [`MARKER`], holding the
/// [`Manifest`] of `parts` (in the order given) and `decisions`, and
/// syncs it. After a crash, a directory with the marker holds every part.
pub fn finish_export(
    out: &Path,
    parts: Vec<PartEntry>,
    decisions: Option<PartEntry>,
) -> Result<Manifest> {
    sync_dir(out)?;
    let manifest = Manifest {
        format: Manifest::FORMAT.to_string(),
        documents: parts.iter().map(|p| p.rows).sum(),
        parts,
        decisions,
    };
    let ok = out.join(MARKER);
    let mut marker = std::fs::File::create(&ok).map_err(|e| Error::io(&ok, e))?;
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| Error::Input(e.to_string()))?;
    std::io::Write::write_all(&mut marker, &text).map_err(|e| Error::io(&ok, e))?;
    marker.sync_all().map_err(|e| Error::io(&ok, e))?;
    sync_dir(out)?;
    Ok(manifest)
}

/// Writes decision log `log` (oldest first) into the export directory
/// `out` as [`DECISIONS_FILE`] (under a dot-name, synced, then renamed);
/// its manifest entry, or `None` (and no file) for an empty log.
pub fn write_decisions(
    out: &Path,
    log: &[super::decisions::Decision],
) -> Result<Option<PartEntry>> {
    if log.is_empty() {
        return Ok(None);
    }
    let mut lines = Vec::new();
    for d in log {
        serde_json::to_writer(&mut lines, d).map_err(|e| Error::Input(e.to_string()))?;
        lines.push(b'\n');
    }
    let tmp = out.join(format!(".{DECISIONS_FILE}.tmp"));
    let path = out.join(DECISIONS_FILE);
    let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    std::io::Write::write_all(&mut f, &lines).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    Ok(Some(PartEntry {
        file: DECISIONS_FILE.to_string(),
        bytes: lines.len() as u64,
        rows: log.len() as u64,
        crc32: format!("{:08x}", crc32fast::hash(&lines)),
    }))
}

/// fsyncs directory `dir` (its entries: renames and new files).
fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d = std::fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
        d.sync_all().map_err(|e| Error::io(dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn fail(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(path, std::io::Error::other(e.to_string()))
}

impl Db {
    /// Writes every document to Parquet files in directory `out` (created
    /// if missing; refused if it holds anything). See the module docs for
    /// the schema. Rows are in id order. Open the store read-only (as
    /// `simdb export` does) for one consistent view: it is fixed at open,
    /// and another process may write meanwhile.
    pub(crate) fn export_parquet(&self, out: &Path, opts: &ExportOptions) -> Result<ExportSummary> {
        if opts.row_group_rows == 0 || opts.file_rows == 0 {
            return Err(Error::Input(
                "row groups and files need at least one row".into(),
            ));
        }
        match std::fs::read_dir(out) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(Error::Input(format!(
                        "{}: the directory is not empty; export into a new or empty one",
                        out.display()
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
            }
            Err(e) => return Err(Error::io(out, e)),
        }
        let header = ExportHeader {
            recipe: self.recipe().clone(),
            min_similarity: self.default_min_similarity(),
            keep: self.store.keep_policy()?,
            keep_texts: self.store.keeps_texts(),
        };
        let mut summary = ExportSummary {
            documents: 0,
            files: Vec::new(),
            bytes: 0,
        };
        let mut parts: Vec<PartEntry> = Vec::new();
        let mut part: Option<PartWriter> = None;
        let close = |p: PartWriter, parts: &mut Vec<PartEntry>, summary: &mut ExportSummary| {
            let e = p.finish()?;
            summary.bytes += e.bytes;
            summary.files.push(out.join(&e.file));
            parts.push(e);
            Ok::<(), Error>(())
        };
        // Texts as of the export's start (a read-only store's view is its
        // open's anyway).
        let at = self.store.snapshot();
        self.for_each(|id, rec| {
            let cluster = self.store.cluster_entry(id)?.unwrap_or(rec.ord);
            let text = self.store.text_at(&at, id)?;
            let p = match &mut part {
                Some(p) => p,
                None => part.insert(PartWriter::create(
                    out,
                    parts.len(),
                    &header,
                    opts.row_group_rows,
                )?),
            };
            p.push(id, &rec, cluster, text.as_deref())?;
            summary.documents += 1;
            if p.rows() >= opts.file_rows {
                if let Some(p) = part.take() {
                    close(p, &mut parts, &mut summary)?;
                }
            }
            Ok(())
        })?;
        match part.take() {
            Some(p) => close(p, &mut parts, &mut summary)?,
            // An empty store: one file with the schema and no rows.
            None if parts.is_empty() => {
                let p = PartWriter::create(out, 0, &header, opts.row_group_rows)?;
                close(p, &mut parts, &mut summary)?;
            }
            None => {}
        }
        let decisions = self.export_decisions(out)?;
        finish_export(out, parts, decisions)?;
        Ok(summary)
    }

    /// Writes the store's decision log into `out` ([`DECISIONS_FILE`],
    /// under a dot-name, synced, then renamed), if it has one.
    fn export_decisions(&self, out: &Path) -> Result<Option<PartEntry>> {
        let mut log = Vec::new();
        self.store.for_each_decision(0, |d| {
            log.push(d);
            Ok(true)
        })?;
        write_decisions(out, &log)
    }
}
