//! What the engines' dedup (`simdb.ray.dedup`) asks of the library: a
//! bulk import of their fingerprint rows, each document's confirmed
//! earlier near-copies over a range of ords (read-only, so many workers
//! can share one store), and the cluster rebuild from those lists.

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
    let keep: Option<simdb::db::KeepPolicy> = keep
        .map(|k| k.parse().map_err(PyValueError::new_err))
        .transpose()?;
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
