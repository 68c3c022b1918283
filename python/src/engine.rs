//! What the engines' dedup (`simdb.ray.dedup`, the Spark job) asks of the
//! library: a bulk import of their fingerprint rows, each document's
//! confirmed earlier near-copies over a range of ords (read-only, so many
//! workers can share one store), the placement of whole components of
//! the near-copy graph on a worker (`place_components`, in a scratch
//! store of its own), the placed clusters written into the run's store
//! (`put_clusters`), and the cluster rebuild from near-copy lists.

use super::*;

/// `simdb import` of Parquet files or directories (an engine's output
/// with `id`, `fingerprint` and the analysis columns, or a `simdb export`)
/// into a new store at `target`. Returns the import's summary as a dict.
#[pyfunction]
#[pyo3(signature = (target, inputs, *, recipe=None, freeze=true, partial=false, memory_bytes=None))]
pub(super) fn import_parquet<'py>(
    py: Python<'py>,
    target: std::path::PathBuf,
    inputs: Vec<std::path::PathBuf>,
    recipe: Option<Bound<'py, PyAny>>,
    freeze: bool,
    partial: bool,
    memory_bytes: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    if inputs.is_empty() {
        return Err(PyValueError::new_err("no inputs to import"));
    }
    let mut opts = simdb::import::Options {
        freeze,
        partial,
        ..Default::default()
    };
    if let Some(r) = recipe {
        opts.recipe = recipe_of(py, &r)?;
    }
    if let Some(m) = memory_bytes {
        opts.memory_bytes = m;
    }
    let s = detach(py, || simdb::import::run(&target, &inputs, &opts, |_| {})).or_raise()?;
    to_py(py, &json_of(&s)?)
}

/// Rebuilds the clusters of the store at `path` (opened for writing, so
/// no other handle may hold it) from near-copy lists: `lists` yields
/// `(ord, [ids])` in ascending ord, as `Db.earlier_copies` gives them.
/// `keep`: the keep policy (default: the store's). Returns the number of
/// clusters of two or more.
#[pyfunction]
#[pyo3(signature = (path, lists, *, keep=None))]
pub(super) fn rebuild_clusters(
    py: Python<'_>,
    path: std::path::PathBuf,
    lists: &Bound<'_, PyAny>,
    keep: Option<&str>,
) -> PyResult<u64> {
    let keep = keep_named(keep)?;
    let mut all: Vec<(u64, Vec<String>)> = Vec::new();
    for item in lists.try_iter()? {
        let (ord, ids): (u64, Vec<String>) = item?
            .extract()
            .map_err(|_| PyTypeError::new_err("each near-copy list is an (ord, [ids]) pair"))?;
        all.push((ord, ids));
    }
    detach(py, || {
        let mut db = RustDb::options().open(&path)?;
        let keep = match keep {
            Some(k) => k,
            None => db.admin().keep_policy()?,
        };
        db.maintenance()
            .rebuild_clusters_from(keep, all.into_iter().map(Ok))
    })
    .or_raise()
}

/// A keep policy by name, if one is named.
fn keep_named(keep: Option<&str>) -> PyResult<Option<simdb::db::KeepPolicy>> {
    keep.map(|k| k.parse().map_err(PyValueError::new_err))
        .transpose()
}

/// Places whole components of the near-copy graph by the store's rule,
/// in a scratch store made at `scratch` (a path that must not exist;
/// removed when done): `ids` and `records` (the documents, each record as
/// `Db.records` gives its bytes), `list_ords` and `lists` (each document
/// that has near-copies, by ord, and their ids). `recipe` is the run's
/// store's (a dict as `Db.recipe` gives it, or its JSON), `keep` the
/// policy, `decisions` the path of a decision log (`simdb decisions
/// --json`), `written_at` the time every record is taken as written at
/// (the run's store's, made by one import). Returns the clusters of two or
/// more as columns: `cluster`,
/// `size`, `representative`, `id`, `rank`, `distance`.
#[pyfunction]
#[pyo3(signature = (scratch, ids, records, list_ords, lists, *, recipe=None, keep=None, decisions=None, written_at=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn place_components<'py>(
    py: Python<'py>,
    scratch: std::path::PathBuf,
    ids: Vec<String>,
    records: Vec<Vec<u8>>,
    list_ords: Vec<u64>,
    lists: Vec<Vec<String>>,
    recipe: Option<Bound<'py, PyAny>>,
    keep: Option<&str>,
    decisions: Option<std::path::PathBuf>,
    written_at: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    if ids.len() != records.len() || list_ords.len() != lists.len() {
        return Err(PyValueError::new_err(
            "ids and records, and list_ords and lists, must be of one length each",
        ));
    }
    let recipe: simdb::Recipe = match recipe {
        None => simdb::Recipe::default(),
        Some(r) => {
            let json: String = match r.extract::<String>() {
                Ok(s) => s,
                Err(_) => py.import("json")?.call_method1("dumps", (r,))?.extract()?,
            };
            serde_json::from_str(&json)
                .map_err(|e| PyValueError::new_err(format!("not a simdb recipe: {e}")))?
        }
    };
    let keep = keep_named(keep)?.unwrap_or_default();
    let rows = detach(py, || {
        let mut docs = Vec::with_capacity(ids.len());
        for (id, bytes) in ids.into_iter().zip(records) {
            let rec = simdb::codec::decode_record(&bytes)
                .map_err(|e| Error::Input(format!("the record of {id:?}: {e}")))?;
            docs.push((id, rec));
        }
        let decisions = match decisions {
            Some(p) => simdb::db::decisions::read_log(&p)?,
            None => Vec::new(),
        };
        let opts = simdb::db::engine::PlaceOptions {
            recipe,
            keep,
            decisions,
            written_at,
        };
        simdb::db::engine::place_components(
            &scratch,
            &opts,
            docs,
            list_ords.into_iter().zip(lists).collect(),
        )
    })
    .or_raise()?;
    let out = PyDict::new(py);
    out.set_item(
        "cluster",
        rows.iter().map(|r| r.cluster).collect::<Vec<_>>(),
    )?;
    out.set_item("size", rows.iter().map(|r| r.size).collect::<Vec<_>>())?;
    out.set_item(
        "representative",
        rows.iter()
            .map(|r| r.representative.as_str())
            .collect::<Vec<_>>(),
    )?;
    out.set_item("id", rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>())?;
    out.set_item("rank", rows.iter().map(|r| r.rank).collect::<Vec<_>>())?;
    out.set_item(
        "distance",
        rows.iter().map(|r| r.distance).collect::<Vec<_>>(),
    )?;
    Ok(out)
}

/// Replaces the clusters of the store at `path` (opened for writing) by
/// those `place_components` placed: `chunks` yields `(clusters, ranks,
/// ids)` column triples, each cluster's rows together and in rank order.
/// `keep`: the policy they were placed under (default: the store's).
/// Returns the number of clusters.
#[pyfunction]
#[pyo3(signature = (path, chunks, *, keep=None))]
pub(super) fn put_clusters(
    py: Python<'_>,
    path: std::path::PathBuf,
    chunks: &Bound<'_, PyAny>,
    keep: Option<&str>,
) -> PyResult<u64> {
    let keep = keep_named(keep)?;
    let mut db = detach(py, || RustDb::options().open(&path)).or_raise()?;
    let keep = match keep {
        Some(k) => k,
        None => detach(py, || db.admin().keep_policy()).or_raise()?,
    };
    // The rows are read from Python chunk by chunk as the store takes
    // them (the GIL held: the iterator is Python's), so memory holds one
    // chunk, not the clusters.
    let mut it = chunks.try_iter()?;
    let mut chunk: std::vec::IntoIter<(u64, u32, String)> = Vec::new().into_iter();
    let mut failed: Option<PyErr> = None;
    let rows = std::iter::from_fn(|| loop {
        if let Some(r) = chunk.next() {
            return Some(Ok(r));
        }
        let item = match it.next()? {
            Ok(item) => item,
            Err(e) => {
                failed = Some(e);
                return Some(Err(Error::Input("reading the rows failed".into())));
            }
        };
        let triple: PyResult<(Vec<u64>, Vec<u32>, Vec<String>)> = item.extract().map_err(|_| {
            PyTypeError::new_err("each chunk is a (clusters, ranks, ids) triple of lists")
        });
        match triple {
            Ok((c, r, i)) if c.len() == r.len() && c.len() == i.len() => {
                chunk = c
                    .into_iter()
                    .zip(r)
                    .zip(i)
                    .map(|((c, r), i)| (c, r, i))
                    .collect::<Vec<_>>()
                    .into_iter();
            }
            Ok(_) => {
                failed = Some(PyValueError::new_err(
                    "a chunk's three lists differ in length",
                ));
                return Some(Err(Error::Input("a chunk's lists differ in length".into())));
            }
            Err(e) => {
                failed = Some(e);
                return Some(Err(Error::Input("a chunk is not a triple of lists".into())));
            }
        }
    });
    let n = db.maintenance().put_clusters(keep, rows);
    if let Some(e) = failed {
        return Err(e);
    }
    n.or_raise()
}
