//! Reading the inputs: JSONL lines, the binary forms, directories of parts, and each input's records in turn.

use super::*;

// --- reading ----------------------------------------------------------------

/// A `refs` entry to write: fingerprint, id, sketch.
pub(super) type RefsEntry = (Fingerprint, String, crate::store::schema::RefValue);

/// What an engine computed of a document's text besides its fingerprint
/// and sketch (`simdb.ray.fingerprint`'s and the Spark job's columns), kept
/// in the imported record as `simdb ingest` keeps them: the length serves
/// the containment rule, the weak bits the ranked probing of `--id`
/// queries, the content hash the "unchanged" check of a later ingest.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Analysed {
    pub(super) length: u64,
    pub(super) terms: u32,
    pub(super) weak_bits: Vec<u8>,
    pub(super) content_hash: Option<u64>,
    /// The text's smallest part hashes, ascending (at most
    /// [`crate::fingerprint::parts::QUERY_PARTS`], as a record keeps them).
    pub(super) parts: Vec<u64>,
    /// The text's fine sketch (beside a sketch of character n-grams).
    pub(super) fine: Option<crate::fingerprint::FineSketch>,
}

/// What an engine row states of its document besides its text: its
/// `priority` and its own `time` (as a JSONL line's `"priority"` and
/// `"time"` state them to `simdb ingest`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Stated {
    pub(super) priority: Option<store::codec::Priority>,
    /// Unix seconds, at most [`crate::db::input::LATEST_TIME`].
    pub(super) dated: Option<u64>,
}

// Records sort by id and position first; this order only makes the sort's
// items total (priorities by their rank key, which is one-to-one).
impl Ord for Stated {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let key = |s: &Stated| (store::codec::Priority::rank_key(s.priority), s.dated);
        key(self).cmp(&key(other))
    }
}

impl PartialOrd for Stated {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One parsed input record.
pub(super) struct Parsed {
    pub(super) id: String,
    pub(super) fp: Fingerprint,
    pub(super) line: u64,
    /// The sketch of the sketched binary form, or of a Parquet `sketch`
    /// column.
    pub(super) sketch: Option<[u8; SKETCH_BYTES]>,
    /// What an engine computed of the text besides (Parquet columns
    /// `length`, `terms`, `weak_bits`, `content_hash`, `parts`).
    pub(super) analysed: Option<Analysed>,
    /// The whole record, from a simdb export.
    pub(super) restored: Option<Restored>,
    /// An engine row's priority and time.
    pub(super) stated: Stated,
}

pub(super) fn bad(path: &Path, line: u64, what: impl std::fmt::Display) -> Error {
    Error::Input(format!("{}:{line}: {what}", path.display()))
}

#[derive(serde::Deserialize)]
pub(super) struct JsonFp<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<JsonId<'a>>,
    #[serde(borrow, default)]
    pub(super) fingerprint: Option<std::borrow::Cow<'a, str>>,
    /// As a JSONL line states it to `simdb ingest`.
    #[serde(default)]
    pub(super) priority: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) time: Option<serde_json::Value>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
pub(super) enum JsonId<'a> {
    Str(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Int(u64),
    Neg(i64),
}

/// Parses one JSONL line of the import form; `Err` is the reason.
pub fn parse_json_line(line: &[u8]) -> std::result::Result<(String, Fingerprint), String> {
    parse_json_record(line).map(|(id, fp, _)| (id, fp))
}

/// [`parse_json_line`] with the line's `"priority"` (a finite number) and
/// `"time"` (Unix seconds or an RFC 3339 timestamp, at most
/// [`crate::db::input::LATEST_TIME`]), read as `simdb ingest` reads them.
pub(super) fn parse_json_record(
    line: &[u8],
) -> std::result::Result<(String, Fingerprint, Stated), String> {
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
    let priority = crate::db::input::priority_of(d.priority)?.and_then(store::codec::Priority::new);
    let dated = match d.time {
        None | Some(serde_json::Value::Null) => None,
        Some(t) => Some(crate::db::input::parse_time(&t)?),
    };
    Ok((id, fp, Stated { priority, dated }))
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
/// the parts it lists, each with its size, CRC-32 and rows. An empty
/// marker is Hadoop's (Spark's and the engines' parts, taken as they are),
/// or, beside an export's parts, one that cannot be checked: refused.
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
        parts.sort();
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
            match crate::db::export::Manifest::read(p)? {
                // An empty marker beside Spark's and the engines' own parts
                // is Hadoop's convention.
                None if super::parquet_input::export_metadata(&parts[0])?.is_none() => {}
                // Beside a simdb export's: one before manifests wrote it
                // empty; so does a copy cut while writing it, beside
                // whatever parts arrived (review-2026-11-c, finding 11:
                // 200,000 of 300,000 restored with exit 0).
                None => {
                    return Err(Error::Input(format!(
                        "{}: _SUCCESS is empty, so the {} part files of this export cannot be \
                         checked against it (an export of a simdb before 2026-11-26, or a copy \
                         cut while writing the marker); import them anyway with --partial",
                        p.display(),
                        parts.len()
                    )))
                }
                Some(m) => check_manifest(p, &m)?,
            }
        }
        out.extend(parts);
    }
    Ok(out)
}

#[cfg(feature = "parquet")]
/// Refuses export directory `p` unless it holds exactly the parts its
/// manifest `m` lists.
fn check_manifest(p: &Path, m: &crate::db::export::Manifest) -> Result<()> {
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
    Ok(())
}

/// Reads `path`'s records into `f`; returns how many it skipped as
/// having no fingerprint (an engine's rows for texts with nothing usable).
/// An engine's rows stamped with a rule other than `rule` (the digest of
/// the import's recipe, [`crate::db::rule`]) are refused.
pub(super) fn read_input(
    path: &Path,
    restore: bool,
    rule: u64,
    f: impl FnMut(Parsed) -> Result<()>,
) -> Result<u64> {
    if is_parquet(path)? {
        #[cfg(feature = "parquet")]
        return read_parquet(path, restore, rule, f);
        #[cfg(not(feature = "parquet"))]
        {
            let _ = (restore, rule);
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
        return read_binary(path, r, sketched, f).map(|()| 0);
    }
    read_jsonl(path, r, f).map(|()| 0)
}

/// The records of a binary input after its magic (`SIMDBFP1`, or
/// `SIMDBFP2` when `sketched`).
fn read_binary(
    path: &Path,
    mut r: impl BufRead,
    sketched: bool,
    mut f: impl FnMut(Parsed) -> Result<()>,
) -> Result<()> {
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
            analysed: None,
            restored: None,
            stated: Stated::default(),
        })?;
    }
}

/// The records of a JSONL input, `{"id", "fingerprint"}` per line.
fn read_jsonl(
    path: &Path,
    mut r: impl BufRead,
    mut f: impl FnMut(Parsed) -> Result<()>,
) -> Result<()> {
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
        let (id, fp, stated) = parse_json_record(line).map_err(|e| bad(path, n, e))?;
        f(Parsed {
            id,
            fp,
            line: n,
            sketch: None,
            analysed: None,
            restored: None,
            stated,
        })?;
    }
}
