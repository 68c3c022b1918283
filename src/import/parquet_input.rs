//! Parquet inputs: the id and fingerprint columns of any Parquet file, and the whole rows and metadata of a simdb export.

use super::*;

#[cfg(feature = "parquet")]
/// Reads the `id` and `fingerprint` (INT64: the u64's bits, as `simdb
/// export --parquet` writes it; or UINT64) columns of a Parquet file;
/// other columns are not read. An id column may be any Arrow string
/// (Utf8, LargeUtf8, Utf8View), a dictionary of strings (a pandas
/// categorical), or integers (written in decimal, as JSONL's integer ids
/// are). A file with two top-level columns of one of these names is
/// refused (which one was meant?). `line` is the row number (from 1).
pub(super) fn read_parquet(
    path: &Path,
    restore: bool,
    rule: u64,
    mut f: impl FnMut(Parsed) -> Result<()>,
) -> Result<u64> {
    use arrow_array::{Array, Int64Array, UInt64Array};
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ProjectionMask;

    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = ArrowReaderMetadata::load(&file, Default::default()).map_err(|e| bad(path, 0, e))?;
    let b = ParquetRecordBatchReaderBuilder::new_with_metadata(
        file.try_clone().map_err(|e| Error::io(path, e))?,
        meta.clone(),
    );
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
    // An engine's columns (`simdb.ray.fingerprint`, the Spark job's), kept
    // when present in a Parquet that is not a restored export.
    let engine: Vec<&str> = ENGINE_COLUMNS
        .into_iter()
        .filter(|c| !restore && b.schema().field_with_name(c).is_ok())
        .collect();
    columns.extend(&engine);
    // The rule an engine's rows were made under (`simdb.ray.RULE`).
    let stamped = !restore && b.schema().field_with_name(RULE_COLUMN).is_ok();
    if stamped {
        columns.push(RULE_COLUMN);
    }
    // Whether the engine's columns go beyond a sketch (and what a row
    // states of its document).
    let has_analysis = engine
        .iter()
        .any(|c| !["sketch", "priority", "time"].contains(c));
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
        // Exports of format 9 on: the documents' own times; of format 10
        // on, their parts.
        // Of format 11 on, their texts (null unless the store kept them).
        // Of format 14 on, their fine sketches.
        for c in ["dated", "parts", "text", "fine"] {
            if b.schema().field_with_name(c).is_ok() {
                columns.push(c);
            }
        }
    }
    let mask = ProjectionMask::columns(b.parquet_schema(), columns);
    let reader = row_group_batches(&file, &meta, &mask).map_err(|e| bad(path, 0, e))?;
    let mut row = 0u64;
    let mut skipped = 0u64;
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
        if stamped {
            other_rule(&batch, rule).map_err(|(i, e)| bad(path, row + 1 + i as u64, e))?;
        }
        for i in 0..batch.num_rows() {
            row += 1;
            let id = id_at(i).ok_or_else(|| bad(path, row, "row with a null id"))?;
            let fp = match fp_at(i) {
                Some(fp) => fp,
                // An engine's text with nothing usable: skipped, as ingest
                // skips it, and counted.
                None if !engine.is_empty() => {
                    skipped += 1;
                    continue;
                }
                None => return Err(bad(path, row, "row with a null fingerprint")),
            };
            check_id(id).map_err(|e| bad(path, row, e))?;
            let (sketch, analysed, stated) = match engine.is_empty() {
                true => (None, None, Stated::default()),
                false => engine_row(&batch, i, has_analysis).map_err(|e| bad(path, row, e))?,
            };
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
                sketch,
                analysed,
                restored,
                stated,
            })?;
        }
    }
    Ok(skipped)
}

#[cfg(feature = "parquet")]
/// The batches of `file`'s columns in `mask`, a row group at a time: a
/// batch never spans two row groups, so an export's (whose row groups
/// hold at most 64 MiB of kept texts each) stays within Arrow's 2 GiB of
/// strings per array. Read across row groups, 8,192 rows of long texts
/// passed it and the import failed (review-2026-11-c, finding 5).
fn row_group_batches(
    file: &File,
    meta: &parquet::arrow::arrow_reader::ArrowReaderMetadata,
    mask: &parquet::arrow::ProjectionMask,
) -> std::result::Result<
    impl Iterator<Item = std::result::Result<arrow_array::RecordBatch, arrow_schema::ArrowError>>,
    parquet::errors::ParquetError,
> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let readers = (0..meta.metadata().num_row_groups())
        .map(|g| {
            ParquetRecordBatchReaderBuilder::new_with_metadata(file.try_clone()?, meta.clone())
                .with_projection(mask.clone())
                .with_batch_size(8192)
                .with_row_groups(vec![g])
                .build()
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(readers.into_iter().flatten())
}

#[cfg(feature = "parquet")]
/// Part hashes from a `parts` column's bytes: u64 big-endian each,
/// ascending, at most `max`.
fn part_hashes(b: &[u8], max: usize) -> std::result::Result<Vec<u64>, String> {
    if !b.len().is_multiple_of(8) || b.len() / 8 > max {
        return Err(format!(
            "of {} bytes: not up to {max} hashes of 8 bytes",
            b.len()
        ));
    }
    let parts: Vec<u64> = b
        .chunks_exact(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_be_bytes(w)
        })
        .collect();
    crate::fingerprint::parts::check(&parts, max)?;
    Ok(parts)
}

#[cfg(feature = "parquet")]
/// Row `i`'s bytes in binary column `name` (binary, large binary or
/// fixed-size binary), when `batch` has the column and the row a value.
fn binary_at(
    batch: &arrow_array::RecordBatch,
    i: usize,
    name: &str,
) -> std::result::Result<Option<Vec<u8>>, String> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    use arrow_schema::DataType as T;
    let Some(c) = batch.column_by_name(name) else {
        return Ok(None);
    };
    if c.is_null(i) {
        return Ok(None);
    }
    Ok(Some(match c.data_type() {
        T::Binary => c.as_binary::<i32>().value(i).to_vec(),
        T::LargeBinary => c.as_binary::<i64>().value(i).to_vec(),
        T::FixedSizeBinary(_) => c.as_fixed_size_binary().value(i).to_vec(),
        t => return Err(format!("\"{name}\" must be binary, not {t}")),
    }))
}

#[cfg(feature = "parquet")]
/// Row `i`'s fine sketch, from its `fine` column (none without one, or
/// for a null).
fn fine_at(
    batch: &arrow_array::RecordBatch,
    i: usize,
) -> std::result::Result<Option<crate::fingerprint::FineSketch>, String> {
    binary_at(batch, i, "fine")?
        .as_deref()
        .map(|b| {
            crate::fingerprint::FineSketch::from_slice(b).ok_or_else(|| {
                format!(
                    "a fine sketch of {} bytes, not {}",
                    b.len(),
                    crate::fingerprint::fine::FINE_BYTES
                )
            })
        })
        .transpose()
}

#[cfg(feature = "parquet")]
/// The columns of an engine's fingerprints that an import keeps (beside id
/// and fingerprint), each optional: `sketch` (32 bytes), `length`, `terms`,
/// `weak_bits`, `content_hash`, `parts` (u64 BE each, ascending; the
/// first [`crate::fingerprint::parts::QUERY_PARTS`] are kept, as a record
/// keeps them), `fine` (96 bytes, beside a sketch); and what a row states
/// of its document, as a JSONL line does to `simdb ingest`: `priority` (a
/// finite number) and `time` (Unix seconds, a timestamp, or an RFC 3339
/// string; at most [`crate::db::input::LATEST_TIME`]).
const ENGINE_COLUMNS: [&str; 9] = [
    "sketch",
    "length",
    "terms",
    "weak_bits",
    "content_hash",
    "parts",
    "fine",
    "priority",
    "time",
];

/// The column of an engine's rows that names the rule they were made under
/// (the digest of [`crate::db::rule::Rule`], as a u64 or its bits as an
/// i64; null or absent: not stated).
#[cfg(feature = "parquet")]
const RULE_COLUMN: &str = "rule";

/// The first row of `batch` stamped with a rule other than `rule`, and
/// why it is refused.
#[cfg(feature = "parquet")]
fn other_rule(
    batch: &arrow_array::RecordBatch,
    rule: u64,
) -> std::result::Result<(), (usize, String)> {
    let Some(c) = batch.column_by_name(RULE_COLUMN) else {
        return Ok(());
    };
    use arrow_array::Array;
    use arrow_schema::DataType as T;
    if !matches!(c.data_type(), T::UInt64 | T::Int64) {
        let t = c.data_type();
        return Err((
            0,
            format!("\"rule\" must be a u64 (or its bits as an i64), not {t}"),
        ));
    }
    for i in (0..batch.num_rows()).filter(|&i| !c.is_null(i)) {
        // A u64, or its bits as a (Spark) long: the low 64 bits either way.
        let stamped = int_at(c.as_ref(), i).unwrap_or_default() as u64;
        if stamped != rule {
            return Err((
                i,
                format!(
                    "made under another rule (digest {stamped:016x}; this import's is \
                     {rule:016x}: its recipe with this build's constants): import with the \
                     recipe the rows were made with, or fingerprint them again"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(feature = "parquet")]
/// An engine row's sketch, analysis and what it states of its document.
type EngineRow = (Option<[u8; SKETCH_BYTES]>, Option<Analysed>, Stated);

#[cfg(feature = "parquet")]
/// Row `i`'s sketch and analysis from an engine's columns (those `batch`
/// has): integers of any width (`content_hash` as a u64's bits), binary or
/// fixed-size binary sketches. With `analysed` (any of `length`, `terms`,
/// `weak_bits`, `content_hash`, `parts` is there), the analysis; a null is
/// 0, or empty.
fn engine_row(
    batch: &arrow_array::RecordBatch,
    i: usize,
    analysed: bool,
) -> std::result::Result<EngineRow, String> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    use arrow_array::Array;
    use arrow_schema::DataType as T;

    let bytes = |name: &str| binary_at(batch, i, name);
    // (value, whether it was a signed type).
    let int = |name: &str| -> std::result::Result<Option<(u64, bool)>, String> {
        let Some(c) = batch.column_by_name(name) else {
            return Ok(None);
        };
        if c.is_null(i) {
            return Ok(None);
        }
        Ok(Some(match c.data_type() {
            T::UInt64 => (c.as_primitive::<UInt64Type>().value(i), false),
            T::UInt32 => (u64::from(c.as_primitive::<UInt32Type>().value(i)), false),
            T::Int64 => (c.as_primitive::<Int64Type>().value(i) as u64, true),
            T::Int32 => (c.as_primitive::<Int32Type>().value(i) as i64 as u64, true),
            t => return Err(format!("\"{name}\" must be an integer, not {t}")),
        }))
    };
    let count = |name: &str| -> std::result::Result<u64, String> {
        match int(name)? {
            Some((v, true)) if (v as i64) < 0 => {
                Err(format!("\"{name}\" is negative ({})", v as i64))
            }
            Some((v, _)) => Ok(v),
            None => Ok(0),
        }
    };
    let sketch = match bytes("sketch")? {
        None => None,
        Some(b) => Some(
            b.as_slice()
                .try_into()
                .map_err(|_| format!("a sketch of {} bytes, not {SKETCH_BYTES}", b.len()))?,
        ),
    };
    let analysed = if analysed {
        Some(Analysed {
            length: count("length")?,
            terms: u32::try_from(count("terms")?).map_err(|_| "\"terms\" is too large")?,
            weak_bits: weak_bits(bytes("weak_bits")?.unwrap_or_default())?,
            content_hash: int("content_hash")?.map(|v| v.0),
            parts: part_hashes(&bytes("parts")?.unwrap_or_default(), usize::MAX)
                .map_err(|e| format!("\"parts\" {e}"))?
                .into_iter()
                .take(crate::fingerprint::parts::QUERY_PARTS)
                .collect(),
            fine: fine_at(batch, i)?,
        })
    } else {
        None
    };
    Ok((sketch, analysed, stated_at(batch, i)?))
}

#[cfg(feature = "parquet")]
/// A `weak_bits` value, checked as a stored record's are (bit indexes of a
/// 64-bit fingerprint), and each once at most, as a fingerprinter gives them.
fn weak_bits(b: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
    store::codec::check_weak_bits(&b).map_err(|e| format!("\"weak_bits\": {e}"))?;
    let mut seen = 0u64;
    for x in &b {
        if seen & 1 << x != 0 {
            return Err(format!("\"weak_bits\" holds bit {x} twice"));
        }
        seen |= 1 << x;
    }
    Ok(b)
}

#[cfg(feature = "parquet")]
/// Row `i`'s `priority` and `time`, if `batch` has them: a priority of
/// any float or integer type (finite); a time of Unix seconds (any integer
/// type, at least 0), of an Arrow timestamp (any unit, to whole seconds) or
/// date, or an RFC 3339 string. A null states nothing.
fn stated_at(batch: &arrow_array::RecordBatch, i: usize) -> std::result::Result<Stated, String> {
    use arrow_array::Array;
    use arrow_schema::DataType as T;

    let mut stated = Stated::default();
    if let Some(c) = batch.column_by_name("priority").filter(|c| !c.is_null(i)) {
        let p = match c.data_type() {
            T::Float16 | T::Float32 | T::Float64 => float_at(c.as_ref(), i),
            t if t.is_integer() => int_at(c.as_ref(), i).map(|v| v as f64),
            _ => None,
        }
        .ok_or_else(|| {
            format!(
                "\"priority\" must be a number column, not {}",
                c.data_type()
            )
        })?;
        if !p.is_finite() {
            return Err(format!("\"priority\" must be a finite number, not {p}"));
        }
        stated.priority = store::codec::Priority::new(p);
    }
    if let Some(c) = batch.column_by_name("time").filter(|c| !c.is_null(i)) {
        use arrow_schema::TimeUnit as U;
        let secs: i128 = match c.data_type() {
            T::Utf8 | T::LargeUtf8 | T::Utf8View => {
                use arrow_array::cast::AsArray;
                // This row's string only (not the column's, row by row).
                let s = match c.data_type() {
                    T::Utf8 => c.as_string::<i32>().value(i),
                    T::LargeUtf8 => c.as_string::<i64>().value(i),
                    _ => c.as_string_view().value(i),
                };
                crate::db::input::parse_time(&serde_json::Value::String(s.into()))?.into()
            }
            t => {
                // Integers, timestamps and dates; seconds from their unit.
                let v = int_at(c.as_ref(), i).ok_or_else(|| {
                    format!(
                        "\"time\" must be Unix seconds (integers), a timestamp, a date or \
                         RFC 3339 strings, not {t}"
                    )
                })?;
                match t {
                    T::Timestamp(U::Millisecond, _) | T::Date64 => v.div_euclid(1_000),
                    T::Timestamp(U::Microsecond, _) => v.div_euclid(1_000_000),
                    T::Timestamp(U::Nanosecond, _) => v.div_euclid(1_000_000_000),
                    T::Date32 => v * 86_400,
                    _ => v,
                }
            }
        };
        let t = u64::try_from(secs)
            .map_err(|_| "\"time\" is before 1970: give Unix seconds (at least 0)")?;
        stated.dated = Some(crate::db::input::check_time(t).map_err(|e| format!("\"time\": {e}"))?);
    }
    Ok(stated)
}

#[cfg(feature = "parquet")]
/// Row `i` of an integer, timestamp or date column, widened (`None` for
/// another type).
fn int_at(c: &dyn arrow_array::Array, i: usize) -> Option<i128> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType as T;
    use arrow_schema::TimeUnit as U;
    Some(match c.data_type() {
        T::Int8 => c.as_primitive::<Int8Type>().value(i).into(),
        T::Int16 => c.as_primitive::<Int16Type>().value(i).into(),
        T::Int32 => c.as_primitive::<Int32Type>().value(i).into(),
        T::Int64 => c.as_primitive::<Int64Type>().value(i).into(),
        T::UInt8 => c.as_primitive::<UInt8Type>().value(i).into(),
        T::UInt16 => c.as_primitive::<UInt16Type>().value(i).into(),
        T::UInt32 => c.as_primitive::<UInt32Type>().value(i).into(),
        T::UInt64 => c.as_primitive::<UInt64Type>().value(i).into(),
        T::Date32 => c.as_primitive::<Date32Type>().value(i).into(),
        T::Date64 => c.as_primitive::<Date64Type>().value(i).into(),
        T::Timestamp(U::Second, _) => c.as_primitive::<TimestampSecondType>().value(i).into(),
        T::Timestamp(U::Millisecond, _) => {
            c.as_primitive::<TimestampMillisecondType>().value(i).into()
        }
        T::Timestamp(U::Microsecond, _) => {
            c.as_primitive::<TimestampMicrosecondType>().value(i).into()
        }
        T::Timestamp(U::Nanosecond, _) => {
            c.as_primitive::<TimestampNanosecondType>().value(i).into()
        }
        _ => return None,
    })
}

#[cfg(feature = "parquet")]
/// Row `i` of a float column, widened (`None` for another type).
fn float_at(c: &dyn arrow_array::Array, i: usize) -> Option<f64> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType as T;
    Some(match c.data_type() {
        T::Float16 => c.as_primitive::<Float16Type>().value(i).to_f64(),
        T::Float32 => c.as_primitive::<Float32Type>().value(i).into(),
        T::Float64 => c.as_primitive::<Float64Type>().value(i),
        _ => return None,
    })
}

#[cfg(feature = "parquet")]
/// The columns of a simdb export besides id and fingerprint, all restored.
pub(super) const RESTORED_COLUMNS: [&str; 11] = [
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
pub(super) fn restored_row(
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
    // Absent from exports before format 9.
    let dated = match batch.column_by_name("dated") {
        None => None,
        Some(_) => {
            let c = col("dated", &T::Int64)?.as_primitive::<Int64Type>();
            match c.is_null(i) {
                true => None,
                // The u64's bits, as the export writes them: a time a
                // build before the bound took (up to 2^64-1) restores.
                false => Some(c.value(i) as u64),
            }
        }
    };
    // Absent from exports before format 10.
    let parts = match batch.column_by_name("parts") {
        None => Vec::new(),
        Some(_) => {
            let c = col("parts", &T::Binary)?.as_binary::<i32>();
            let b = if c.is_null(i) { &[][..] } else { c.value(i) };
            part_hashes(b, crate::fingerprint::parts::QUERY_PARTS)
                .map_err(|e| format!("\"parts\" {e}"))?
        }
    };
    let rec = Record {
        fingerprint: fp,
        // Two's complement, as the fingerprint.
        content_hash: int("content_hash")? as u64,
        length: unsigned("length")?,
        // A write time: a later one is damage (every page and ranking
        // that reads it would be wrong).
        ingested_at: crate::db::input::check_time(unsigned("ingested_at")?)
            .map_err(|e| format!("\"ingested_at\": {e}"))?,
        source,
        terms: u32::try_from(unsigned("terms")?).map_err(|_| "\"terms\" is too large")?,
        sketch,
        top_terms,
        weak_bits,
        ord,
        priority,
        dated,
        parts,
        // Set from the export's decision log.
        kept: None,
        // Absent from exports before format 14.
        fine: fine_at(batch, i)?,
    };
    // Absent from exports before format 11; null where the store kept no
    // text.
    let text = match batch.column_by_name("text") {
        None => None,
        Some(_) => {
            let c = col("text", &T::Utf8)?.as_string::<i32>();
            (!c.is_null(i)).then(|| c.value(i).to_string())
        }
    };
    Ok(Restored {
        rec,
        cluster: unsigned("cluster")?,
        text,
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
    /// Whether the store kept its texts (its `text` column has them).
    pub keep_texts: bool,
}

#[cfg(feature = "parquet")]
/// The recipe, threshold and keep policy a simdb export states in its
/// key-value metadata, if `path` is one (a Parquet file that `simdb export` wrote).
pub fn export_metadata(path: &Path) -> Result<Option<ExportMeta>> {
    use crate::db::export::{META_KEEP_POLICY, META_KEEP_TEXTS, META_MIN_SIMILARITY, META_RECIPE};
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
        keep_texts: get(META_KEEP_TEXTS).is_some_and(|v| v == "true"),
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
pub(super) fn id_strings(
    col: &dyn arrow_array::Array,
) -> std::result::Result<Vec<Option<String>>, String> {
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

#[cfg(all(test, feature = "parquet"))]
mod tests {
    use super::*;

    /// A batch never spans two row groups (review-2026-11-c, finding 5):
    /// three groups of 10 rows are three batches of 10, not one of 30.
    #[test]
    fn regression_60_batches_stay_within_a_row_group() {
        use arrow_array::{Int64Array, RecordBatch, StringArray};
        use parquet::arrow::arrow_reader::ArrowReaderMetadata;
        use parquet::arrow::{ArrowWriter, ProjectionMask};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("groups.parquet");
        let ids: Vec<String> = (0..30).map(|i| format!("d{i}")).collect();
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                std::sync::Arc::new(StringArray::from(ids)) as arrow_array::ArrayRef,
            ),
            (
                "fingerprint",
                std::sync::Arc::new(Int64Array::from_iter_values(0..30)),
            ),
        ])
        .unwrap();
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        // A row group of 10 rows each: flush ends one.
        for at in [0, 10, 20] {
            w.write(&batch.slice(at, 10)).unwrap();
            w.flush().unwrap();
        }
        w.close().unwrap();
        let file = File::open(&path).unwrap();
        let meta = ArrowReaderMetadata::load(&file, Default::default()).unwrap();
        assert_eq!(meta.metadata().num_row_groups(), 3);
        let mask = ProjectionMask::all();
        let rows: Vec<usize> = row_group_batches(&file, &meta, &mask)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .collect();
        assert_eq!(rows, [10, 10, 10]);
        // And the import reads every row, in order.
        let mut seen = Vec::new();
        read_parquet(&path, false, 0, |p| {
            seen.push((p.id, p.line));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 30);
        assert_eq!(seen[29], ("d29".to_string(), 30));
    }

    /// An engine's rows stamped with another rule than the import's are
    /// refused at the first such row; its own rule (as a u64 or as a
    /// Spark long's bits) and null stamps are taken.
    #[test]
    fn rows_of_another_rule_are_refused() {
        use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, UInt64Array};
        use parquet::arrow::ArrowWriter;
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let ours = crate::db::rule::Rule::of(&crate::Recipe::default()).digest();
        let theirs = crate::db::rule::Rule::of(&crate::Recipe::with(0, 2, false)).digest();
        let write = |name: &str, rule: ArrayRef| {
            let path = dir.path().join(name);
            let batch = RecordBatch::try_from_iter([
                (
                    "id",
                    Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
                ),
                ("fingerprint", Arc::new(Int64Array::from(vec![1, 2, 3]))),
                (
                    "sketch",
                    Arc::new(arrow_array::BinaryArray::from(vec![
                        [7u8; 32].as_slice();
                        3
                    ])),
                ),
                ("rule", rule),
            ])
            .unwrap();
            let mut w =
                ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            path
        };
        let read = |path: &Path| read_parquet(path, false, ours, |_| Ok(()));
        let mine = write(
            "mine.parquet",
            Arc::new(UInt64Array::from(vec![Some(ours), None, Some(ours)])),
        );
        assert_eq!(read(&mine).unwrap(), 0);
        let spark = write(
            "spark.parquet",
            Arc::new(Int64Array::from(vec![ours as i64; 3])),
        );
        assert_eq!(read(&spark).unwrap(), 0);
        let other = write(
            "other.parquet",
            Arc::new(UInt64Array::from(vec![ours, theirs, ours])),
        );
        let e = read(&other).unwrap_err().to_string();
        assert!(e.contains("other.parquet:2"), "{e}");
        assert!(
            e.contains(&format!(
                "another rule (digest {theirs:016x}; this import's is {ours:016x}"
            )),
            "{e}"
        );
        let text = write("text.parquet", Arc::new(StringArray::from(vec!["x"; 3])));
        assert!(read(&text)
            .unwrap_err()
            .to_string()
            .contains("\"rule\" must be a u64"));
    }
}
