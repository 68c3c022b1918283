//! `simdb._simdb`: the native half of the `simdb` Python package (PyO3).
//!
//! A thin layer over the Rust library: every method calls the public API
//! (`simdb::Db`, its request model `simdb::db::QueryRequest` and
//! `WriteOptions`, `simdb::db::write::place`, `simdb::Fingerprinter`) and
//! releases the GIL while it works, so several Python threads can query one
//! `Db` at once. Errors become the exception classes of `simdb._errors`
//! (pure Python, so they can also derive from `ValueError`, `KeyError`, …).

mod clusters;
mod engine;
mod errors;
mod functions;
mod join;
mod methods;
mod ranges;
mod recipe;
mod store;
mod values;

use std::sync::{Arc, RwLock};

use numpy::PyArray1;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;
use serde_json::Value;
use simdb::db::write::{self, Doc, DuplicatePolicy, WritePolicy};
use simdb::db::{QueryOptions, QueryRequest, Subject, WriteOptions};
use simdb::{Content, Db as RustDb, Error, Fingerprint, Fingerprinter, Recipe};

use clusters::*;
use engine::*;
use errors::*;
use functions::*;
use join::*;
use ranges::*;
use recipe::*;
use store::*;
use values::*;

/// The thread pool of this process. rayon's global pool cannot be used
/// across `fork()` (the child inherits a pool whose threads do not exist:
/// a parallel call would wait forever), so the pool is the process's own,
/// made again in a child.
fn pool() -> Arc<rayon::ThreadPool> {
    static POOL: std::sync::Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> =
        std::sync::Mutex::new(None);
    let pid = std::process::id();
    let mut g = POOL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, p)) = g.as_ref() {
        if *owner == pid {
            return Arc::clone(p);
        }
    }
    // A parent's pool: its threads are not in this process, and dropping
    // it would signal them; it is left alone.
    if let Some(old) = g.take() {
        std::mem::forget(old);
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("simdb-{i}"))
            .build()
            .unwrap_or_else(|e| panic!("cannot start simdb's threads: {e}")),
    );
    *g = Some((pid, Arc::clone(&p)));
    p
}

/// Runs `f` without the GIL, on this process's pool (see [`pool`]).
fn detach<T: Send, F: FnOnce() -> T + Send>(py: Python<'_>, f: F) -> T {
    py.detach(|| pool().install(f))
}

#[pymodule]
fn _simdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Db>()?;
    m.add_class::<Hit>()?;
    m.add_class::<AddResult>()?;
    m.add_class::<ClusterIter>()?;
    m.add_class::<Analyzer>()?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(distance, m)?)?;
    m.add_function(wrap_pyfunction!(rule, m)?)?;
    m.add_function(wrap_pyfunction!(page, m)?)?;
    m.add_function(wrap_pyfunction!(import_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(rebuild_clusters, m)?)?;
    m.add_function(wrap_pyfunction!(place_components, m)?)?;
    m.add_function(wrap_pyfunction!(put_clusters, m)?)?;
    m.add_function(wrap_pyfunction!(export_part, m)?)?;
    m.add_function(wrap_pyfunction!(finish_export, m)?)?;
    m.add_function(wrap_pyfunction!(place_groups, m)?)?;
    m.add_function(wrap_pyfunction!(pair_verdicts, m)?)?;
    m.add_function(wrap_pyfunction!(engine_records, m)?)?;
    m.add_function(wrap_pyfunction!(document_times, m)?)?;
    m.add_function(wrap_pyfunction!(index_entries, m)?)?;
    m.add_function(wrap_pyfunction!(key_matches, m)?)?;
    m.add_function(wrap_pyfunction!(range_map, m)?)?;
    m.add_function(wrap_pyfunction!(range_boundaries, m)?)?;
    m.add_function(wrap_pyfunction!(range_split, m)?)?;
    m.add_function(wrap_pyfunction!(range_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(range_assemble, m)?)?;
    m.add_class::<JoinChecker>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
