//! `simdb._simdb`: the native half of the `simdb` Python package (PyO3).
//!
//! A thin layer over the Rust library: every method calls the public API
//! (`simdb::Db`, its request model `simdb::db::QueryRequest` and
//! `WriteOptions`, `simdb::db::write::place`, `simdb::Fingerprinter`) and
//! releases the GIL while it works, so several Python threads can query one
//! `Db` at once. Errors become the exception classes of `simdb._errors`
//! (pure Python, so they can also derive from `ValueError`, `KeyError`, …).

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

// ---------------------------------------------------------------- errors

/// The class of `simdb._errors` that `e` is raised as.
fn error_class(e: &Error) -> &'static str {
    match e {
        Error::NoFeatures => "NoFeatures",
        Error::UnsupportedDistance { .. } | Error::Input(_) => "InvalidInput",
        Error::NotFound { .. } => "NotFound",
        Error::Corrupt { .. } => "Corrupt",
        Error::NotASimdbStore { .. } => "NotASimdbStore",
        Error::NewerFormat { .. }
        | Error::OlderFormat { .. }
        | Error::NeedsMigration { .. }
        | Error::RepairInProgress { .. }
        | Error::ClustersIncomplete { .. }
        | Error::RecipeMismatch { .. } => "IncompatibleStore",
        Error::InUse { .. } => "StoreInUse",
        Error::AlreadyExists { .. } => "StoreExists",
        Error::NoSuchStore { .. } => "NoSuchStore",
        _ => "StorageError",
    }
}

/// The message of `e` with its causes, as the CLI prints it.
fn message(e: &Error) -> String {
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let c_s = c.to_string();
        if !s.contains(&c_s) {
            s.push_str(": ");
            s.push_str(&c_s);
        }
        cause = c.source();
    }
    s
}

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

fn raise(py: Python<'_>, class: &str, msg: String) -> PyErr {
    static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = ERRORS.get_or_try_init(py, || py.import("simdb._errors").map(Bound::unbind));
    match module.and_then(|m| m.bind(py).getattr(class)) {
        Ok(cls) => PyErr::from_type(cls.cast_into().expect("an exception class"), msg),
        Err(e) => e,
    }
}

fn py_err(e: Error) -> PyErr {
    Python::attach(|py| raise(py, error_class(&e), message(&e)))
}

trait OrRaise<T> {
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for simdb::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}

// ---------------------------------------------------------------- values

/// A JSON value as the Python object `json.loads` would give.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

fn json_of<T: serde::Serialize>(x: &T) -> PyResult<Value> {
    serde_json::to_value(x).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A near-duplicate found by a query or a write.
#[pyclass(frozen, eq, module = "simdb._simdb", get_all)]
#[derive(Clone, PartialEq)]
struct Hit {
    /// The stored document's id.
    id: String,
    /// Its 64-bit fingerprint.
    fingerprint: u64,
    /// Hamming distance from the query's fingerprint.
    distance: u32,
    /// Estimated Jaccard similarity of the two texts (character 4-grams),
    /// or None when one side has no sketch.
    similarity: Option<f64>,
    /// When the similarity is below the threshold and the shorter text was
    /// confirmed as contained in the longer (a truncated copy): the
    /// estimated share of it inside; else None.
    containment: Option<f64>,
}

#[pymethods]
impl Hit {
    fn __repr__(&self) -> String {
        let sim = self
            .similarity
            .map_or("None".to_string(), |s| format!("{s:.3}"));
        format!(
            "Hit(id={:?}, fingerprint=0x{:016x}, distance={}, similarity={sim})",
            self.id, self.fingerprint, self.distance
        )
    }
}

impl From<simdb::Hit> for Hit {
    fn from(h: simdb::Hit) -> Hit {
        Hit {
            id: h.id,
            fingerprint: h.fingerprint.value(),
            distance: h.distance,
            similarity: h.similarity,
            containment: h.containment,
        }
    }
}

/// What a write did with one document.
#[pyclass(frozen, module = "simdb._simdb", get_all)]
struct AddResult {
    /// The document's id.
    id: String,
    /// "inserted", "replaced", "unchanged", "duplicate" (not written: it
    /// has near-duplicates and skip_duplicates was set) or "no_features"
    /// (nothing usable in the text: not written).
    outcome: &'static str,
    /// Its fingerprint (None for "no_features").
    fingerprint: Option<u64>,
    /// Its near-duplicates among the stored documents and those written
    /// before it, nearest first: the first `max_duplicates` (default 10).
    duplicates: Vec<Hit>,
    /// How many near-duplicates the check confirmed: exact when
    /// `duplicate_count_exact`, else a lower bound (the check stops after
    /// 16 or `max_duplicates`, whichever is more, or 256 looked at).
    duplicate_count: usize,
    duplicate_count_exact: bool,
    /// Fewer than 10 terms: its fingerprint is less telling.
    short: bool,
}

#[pymethods]
impl AddResult {
    fn __repr__(&self) -> String {
        let fp = self
            .fingerprint
            .map_or("None".to_string(), |f| format!("0x{f:016x}"));
        format!(
            "AddResult(id={:?}, outcome={:?}, fingerprint={fp}, duplicates={}, duplicate_count={}{})",
            self.id,
            self.outcome,
            self.duplicates.len(),
            self.duplicate_count,
            if self.duplicate_count_exact { "" } else { "+" }
        )
    }
}

// ---------------------------------------------------------------- recipe

/// A recipe from the keyword arguments of `Db.create` and `fingerprint`.
#[allow(clippy::too_many_arguments)]
fn recipe(
    top_k: u32,
    shingle: u32,
    hmm: bool,
    tf: &str,
    keep_stop_words: bool,
    latin: &str,
    script: &str,
) -> PyResult<Recipe> {
    let mut r = Recipe::with(top_k, shingle, hmm);
    let invalid = |msg: String| Python::attach(|py| raise(py, "InvalidInput", msg));
    match script {
        "t2s" => {}
        "none" => r = r.without_script_folding(),
        other => {
            return Err(invalid(format!(
                "script must be 't2s' or 'none', not {other:?}"
            )))
        }
    }
    match simdb::fingerprint::LatinFeatures::parse(latin) {
        Some(l) => r = r.with_latin(l),
        None => {
            return Err(invalid(format!(
                "latin must be 'words' or 'char-N-grams' (N in 2..=8), not {latin:?}"
            )))
        }
    }
    match tf {
        "raw" => {}
        "log" => r = r.with_log_tf(),
        other => {
            return Err(Python::attach(|py| {
                raise(
                    py,
                    "InvalidInput",
                    format!("tf must be 'raw' or 'log', not {other:?}"),
                )
            }))
        }
    }
    if keep_stop_words {
        r = r.keeping_stop_words();
    }
    Ok(r)
}

// ---------------------------------------------------------------- Db

/// An open store. See `simdb.Db` for the documentation.
#[pyclass(frozen, module = "simdb._simdb", name = "Db")]
struct Db {
    /// None once closed. Each call holds its own `Arc` while it runs, so a
    /// call in another thread finishes on the open store after `close`.
    inner: RwLock<Option<Arc<RustDb>>>,
    path: String,
    read_only: bool,
    /// The process that opened the store: a child of `fork()` holds a copy
    /// of the handle without the store's threads and lock, which must not
    /// be used (nor closed: see `Drop`).
    pid: u32,
}

impl Drop for Db {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // In a forked child: closing would wait for background threads
            // that do not exist here and could write to the parent's files.
            if let Ok(mut g) = self.inner.write() {
                if let Some(db) = g.take() {
                    std::mem::forget(db);
                }
            }
        }
    }
}

/// A document given to `add_many`, before analysis.
fn doc_of(item: &Bound<'_, PyAny>, n: u64) -> PyResult<Doc> {
    let bad = |what: &str| {
        PyTypeError::new_err(format!(
            "document {n}: {what}; expected an (id, text) pair or a dict with \"id\" and \"text\" (or \"fingerprint\")"
        ))
    };
    let (id, content, priority): (String, Content, Option<f64>) =
        if let Ok(d) = item.cast::<PyDict>() {
            let id = d
                .get_item("id")?
                .ok_or_else(|| bad("no \"id\""))?
                .extract::<String>()
                .map_err(|_| bad("\"id\" is not a string"))?;
            let content = match (d.get_item("text")?, d.get_item("fingerprint")?) {
                (Some(t), _) => {
                    Content::Text(t.extract().map_err(|_| bad("\"text\" is not a string"))?)
                }
                (None, Some(f)) => Content::Fingerprint(Fingerprint(
                    f.extract()
                        .map_err(|_| bad("\"fingerprint\" is not an int in 0..2**64"))?,
                )),
                (None, None) => return Err(bad("no \"text\" or \"fingerprint\"")),
            };
            let priority = match d.get_item("priority")? {
                Some(p) if !p.is_none() => Some(
                    p.extract::<f64>()
                        .map_err(|_| bad("\"priority\" is not a number"))?,
                ),
                _ => None,
            };
            (id, content, priority)
        } else if let Ok(t) = item.cast::<PyTuple>() {
            if t.len() != 2 {
                return Err(bad("a tuple of other than 2 items"));
            }
            let id = t
                .get_item(0)?
                .extract::<String>()
                .map_err(|_| bad("the id is not a string"))?;
            let text = t
                .get_item(1)?
                .extract::<String>()
                .map_err(|_| bad("the text is not a string"))?;
            (id, Content::Text(text), None)
        } else {
            return Err(bad(&format!("a {}", item.get_type().name()?)));
        };
    if priority.is_some_and(f64::is_nan) {
        return Err(bad("\"priority\" is NaN"));
    }
    Ok(Doc {
        id,
        content,
        source: format!("python:{n}"),
        line: None,
        priority,
    })
}

impl Db {
    /// The open store, or `ClosedError`.
    fn db(&self) -> PyResult<Arc<RustDb>> {
        if std::process::id() != self.pid {
            return Err(Python::attach(|py| {
                raise(
                    py,
                    "ForkedError",
                    format!(
                        "{}: this Db was opened in process {} and cannot be used in process {} \
                         (a child of fork(), e.g. a multiprocessing worker): open the store again \
                         in the child (simdb.Db.open(path, read_only=True) for readers), or use \
                         the 'spawn' start method",
                        self.path,
                        self.pid,
                        std::process::id()
                    ),
                )
            }));
        }
        let g = self
            .inner
            .read()
            .map_err(|_| PyValueError::new_err("the store's lock is poisoned"))?;
        g.clone().ok_or_else(|| {
            Python::attach(|py| {
                raise(
                    py,
                    "ClosedError",
                    format!("{}: the store is closed", self.path),
                )
            })
        })
    }

    fn wrap(db: RustDb, read_only: bool) -> Db {
        Db {
            path: db.path().display().to_string(),
            inner: RwLock::new(Some(Arc::new(db))),
            read_only,
            pid: std::process::id(),
        }
    }

    /// Writes one batch: analysis in parallel, then one atomic write batch.
    fn write_batch(
        db: &RustDb,
        docs: &[Doc],
        opts: &WritePolicy,
        results: bool,
        counts: &mut write::WriteCounts,
    ) -> simdb::Result<Vec<AddResult>> {
        let analyses = pool()
            .install(|| write::analyze_all(db.fingerprinter(), docs))
            .map_err(|(i, e)| Error::Input(format!("document {:?}: {e}", docs[i].id)))?;
        let mut w = db.shared_writer()?;
        w.set_sync(opts.sync);
        let written = write::place_all(&mut w, docs, analyses, opts)?;
        w.commit()?;
        drop(w);
        db.clusters().settle()?;
        let mut out = Vec::new();
        for (doc, r) in docs.iter().zip(written) {
            counts.add_written(&r);
            let outcome = r.outcome();
            if results {
                let d = &r.duplicates;
                out.push(AddResult {
                    id: doc.id.clone(),
                    outcome,
                    fingerprint: r.fingerprint.map(Fingerprint::value),
                    duplicates: d
                        .listed(opts.max_duplicates)
                        .iter()
                        .cloned()
                        .map(Hit::from)
                        .collect(),
                    duplicate_count: d.count(),
                    duplicate_count_exact: d.exact(),
                    short: r.short,
                });
            }
        }
        Ok(out)
    }

    /// The write pipeline's options for the keywords of `add` and
    /// `add_many` (the library's [`WriteOptions`], resolved for this store).
    #[allow(clippy::too_many_arguments)]
    fn write_options(
        db: &RustDb,
        k: Option<u32>,
        min_similarity: Option<f64>,
        probe_budget: Option<usize>,
        skip_duplicates: bool,
        sync: bool,
        max_duplicates: Option<usize>,
    ) -> simdb::Result<WritePolicy> {
        WriteOptions {
            k,
            probe_budget,
            min_similarity,
            max_duplicates,
            sync,
        }
        .policy_for(db, DuplicatePolicy::skipping(skip_duplicates))
    }

    /// The hits of one query, the GIL released.
    fn search(&self, py: Python<'_>, subject: Subject, o: QueryOptions) -> PyResult<Vec<Hit>> {
        let db = self.db()?;
        let r = QueryRequest::new(subject).with(o);
        let answer = detach(py, || db.answer(&r)).or_raise()?;
        Ok(answer.hits.into_iter().map(Hit::from).collect())
    }
}

/// The keywords every query method takes, as the library's options.
fn query_options(
    k: Option<u32>,
    min_similarity: Option<f64>,
    limit: Option<usize>,
    probe_budget: Option<usize>,
) -> QueryOptions {
    QueryOptions {
        k,
        probe_budget,
        min_similarity,
        limit,
        explain: false,
    }
}

fn subject_of(q: &Bound<'_, PyAny>) -> PyResult<Subject> {
    if let Ok(s) = q.extract::<String>() {
        return Ok(Subject::Text(s));
    }
    if q.is_instance_of::<pyo3::types::PyInt>() {
        return q
            .extract::<u64>()
            .map(|f| Subject::Fingerprint(Fingerprint(f)))
            .map_err(|_| {
                Python::attach(|py| {
                    raise(
                        py,
                        "InvalidInput",
                        "a fingerprint must be an int in 0..2**64".to_string(),
                    )
                })
            });
    }
    Err(PyTypeError::new_err(format!(
        "query takes a text (str) or a fingerprint (int), not {}",
        q.get_type().name()?
    )))
}

#[pymethods]
impl Db {
    /// Creates a new, empty store at `path` with this fingerprint recipe
    /// (the defaults are the measured best). `StoreExists` if `path` exists.
    ///
    /// >>> db = simdb.Db.create("news.simdb")  # doctest: +SKIP
    #[staticmethod]
    #[pyo3(signature = (path, *, top_k=0, shingle=1, hmm=false, tf="raw", keep_stop_words=false, latin="char-3-grams", script="t2s", keep="first"))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        path: std::path::PathBuf,
        top_k: u32,
        shingle: u32,
        hmm: bool,
        tf: &str,
        keep_stop_words: bool,
        latin: &str,
        script: &str,
        keep: &str,
    ) -> PyResult<Db> {
        let r = recipe(top_k, shingle, hmm, tf, keep_stop_words, latin, script)?;
        let keep: simdb::db::KeepPolicy = keep.parse().map_err(PyValueError::new_err)?;
        let db = detach(py, || RustDb::options().keep(keep).create(&path, r)).or_raise()?;
        Ok(Db::wrap(db, false))
    }

    /// Opens a store; for writing one process at a time (`StoreInUse`),
    /// `read_only=True` also while another process writes (it sees the
    /// store as of its open).
    #[staticmethod]
    #[pyo3(signature = (path, *, read_only=false))]
    fn open(py: Python<'_>, path: std::path::PathBuf, read_only: bool) -> PyResult<Db> {
        let db = py
            .detach(|| {
                let access = if read_only {
                    simdb::Access::ReadOnly
                } else {
                    simdb::Access::ReadWrite
                };
                RustDb::options().access(access).open(&path)
            })
            .or_raise()?;
        Ok(Db::wrap(db, read_only))
    }

    /// Flushes and closes the store. New calls raise `ClosedError`. With
    /// `wait` (the default), waits first for the calls running in other
    /// threads to end, so the store is closed and its lock released when
    /// this returns (it can be opened again at once); without, returns at
    /// once and the store closes when the last of them ends.
    #[pyo3(signature = (*, wait=true))]
    fn close(&self, py: Python<'_>, wait: bool) -> PyResult<()> {
        let db = py.detach(|| {
            self.inner
                .write()
                .map(|mut g| g.take())
                .map_err(|_| "poisoned")
        });
        let db = db.map_err(|_| PyValueError::new_err("the store's lock is poisoned"))?;
        if let Some(db) = db {
            if std::process::id() != self.pid {
                // A forked child's copy: never closed here (see Drop).
                std::mem::forget(db);
                return Ok(());
            }
            py.detach(move || {
                while wait && Arc::strong_count(&db) > 1 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                let r = if self.read_only {
                    Ok(())
                } else {
                    db.admin().flush()
                };
                drop(db);
                r
            })
            .or_raise()?;
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py, true)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = match (self.closed(), self.read_only) {
            (true, _) => ", closed",
            (false, true) => ", read_only=True",
            _ => "",
        };
        format!("Db({:?}{state})", self.path)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().map(|g| g.is_none()).unwrap_or(true)
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// The store's fingerprint recipe, as a dict.
    #[getter]
    fn recipe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let db = self.db()?;
        to_py(py, &json_of(db.recipe())?)
    }

    /// Adds (or replaces) one document; returns an `AddResult` with its
    /// near-duplicates (the first `max_duplicates`, default 10, at most
    /// 100, and how many there are). Atomic, in the write-ahead log on
    /// return (`sync=True` also fsyncs).
    ///
    /// >>> db.add("a1", "国务院总理今天在北京主持召开常务会议").outcome  # doctest: +SKIP
    /// 'inserted'
    #[pyo3(signature = (id, text, *, k=None, min_similarity=None, probe_budget=None, skip_duplicates=false, sync=false, max_duplicates=None))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        py: Python<'_>,
        id: String,
        text: String,
        k: Option<u32>,
        min_similarity: Option<f64>,
        probe_budget: Option<usize>,
        skip_duplicates: bool,
        sync: bool,
        max_duplicates: Option<usize>,
    ) -> PyResult<AddResult> {
        let db = self.db()?;
        let doc = Doc {
            id,
            content: Content::Text(text),
            source: "python:0".into(),
            line: None,
            priority: None,
        };
        let mut counts = write::WriteCounts::default();
        let mut out = detach(py, || {
            let opts = Db::write_options(
                &db,
                k,
                min_similarity,
                probe_budget,
                skip_duplicates,
                sync,
                max_duplicates,
            )?;
            Db::write_batch(&db, std::slice::from_ref(&doc), &opts, true, &mut counts)
        })
        .or_raise()?;
        Ok(out.pop().expect("one result per document"))
    }

    /// Adds documents from an iterable of `(id, text)` pairs or dicts
    /// (`{"id", "text"}` or `{"id", "fingerprint"}`, optional `"priority"`),
    /// `batch_size` at a time, each batch one atomic write, the GIL released
    /// while it is written. Returns one `AddResult` per document (each
    /// listing at most `max_duplicates` near-duplicates, default 10), or
    /// with `results=False` the counts (bounded memory): per outcome
    /// (`inserted`, `replaced`, `unchanged`, `duplicate`, `no_features`),
    /// then `near_duplicates` (documents with one) and `short` (short
    /// documents written), the names of the CLI's summary and the service.
    ///
    /// >>> db.add_many(zip(df["id"], df["text"]), skip_duplicates=True)  # doctest: +SKIP
    #[pyo3(signature = (docs, *, batch_size=1000, k=None, min_similarity=None, probe_budget=None, skip_duplicates=false, sync=false, results=true, max_duplicates=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_many<'py>(
        &self,
        py: Python<'py>,
        docs: &Bound<'py, PyAny>,
        batch_size: usize,
        k: Option<u32>,
        min_similarity: Option<f64>,
        probe_budget: Option<usize>,
        skip_duplicates: bool,
        sync: bool,
        results: bool,
        max_duplicates: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if batch_size == 0 {
            return Err(raise(
                py,
                "InvalidInput",
                "batch_size must be at least 1".into(),
            ));
        }
        let db = self.db()?;
        let opts = Db::write_options(
            &db,
            k,
            min_similarity,
            probe_budget,
            skip_duplicates,
            sync,
            max_duplicates,
        )
        .or_raise()?;
        // A pipeline: this thread (holding the GIL) reads the iterable into
        // batches while a worker writes the previous batch (analysis on the
        // rayon pool, then one atomic write); one batch waits at most, so
        // memory is bounded by two batches.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Doc>>(1);
        let worker = {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut counts = write::WriteCounts::default();
                let mut out: Vec<AddResult> = Vec::new();
                for batch in rx {
                    match Db::write_batch(&db, &batch, &opts, results, &mut counts) {
                        Ok(w) => out.extend(w),
                        Err(e) => return (Err(e), out, counts),
                    }
                }
                (Ok(()), out, counts)
            })
        };
        let mut feed_err: Option<PyErr> = None;
        let mut batch: Vec<Doc> = Vec::with_capacity(batch_size.min(1 << 16));
        let mut n = 0u64;
        match docs.try_iter() {
            Err(e) => feed_err = Some(e),
            Ok(iter) => {
                for item in iter {
                    match item.and_then(|item| doc_of(&item, n)) {
                        Ok(d) => batch.push(d),
                        Err(e) => {
                            feed_err = Some(e);
                            break;
                        }
                    }
                    n += 1;
                    if batch.len() >= batch_size {
                        let full = std::mem::replace(
                            &mut batch,
                            Vec::with_capacity(batch_size.min(1 << 16)),
                        );
                        // A send fails only when the worker stopped on an error.
                        if py.detach(|| tx.send(full)).is_err() {
                            break;
                        }
                    }
                }
            }
        }
        if feed_err.is_none() && !batch.is_empty() {
            let _ = py.detach(|| tx.send(batch));
        }
        drop(tx);
        let (written, out, counts) = py
            .detach(|| worker.join())
            .map_err(|_| PyValueError::new_err("the writer thread panicked"))?;
        // The worker's error came from an earlier batch than the feed's.
        written.or_raise()?;
        if let Some(e) = feed_err {
            return Err(e);
        }
        if results {
            return Ok(PyList::new(py, out)?.into_any());
        }
        // The counts by the names the CLI's summary and the service use.
        let d = PyDict::new(py);
        let v = serde_json::to_value(counts).map_err(|e| PyValueError::new_err(e.to_string()))?;
        for (name, c) in v.as_object().into_iter().flatten() {
            d.set_item(name, c.as_u64())?;
        }
        Ok(d.into_any())
    }

    /// Stored near-duplicates of a text (`str`) or fingerprint (`int`),
    /// nearest first: without `k` the default (k = 3 plus ranked probing,
    /// sketch-verified); with `k` (0..11) exactly every document within k.
    /// At most `limit` of them (default 10, at most 10,000).
    ///
    /// >>> [h.id for h in db.query("国务院总理今天在北京主持召开常务会议")]  # doctest: +SKIP
    /// ['a1']
    #[pyo3(signature = (q, *, k=None, min_similarity=None, limit=None, probe_budget=None))]
    fn query(
        &self,
        py: Python<'_>,
        q: &Bound<'_, PyAny>,
        k: Option<u32>,
        min_similarity: Option<f64>,
        limit: Option<usize>,
        probe_budget: Option<usize>,
    ) -> PyResult<Vec<Hit>> {
        let o = query_options(k, min_similarity, limit, probe_budget);
        self.search(py, subject_of(q)?, o)
    }

    /// Near-duplicates of the stored document `id` (itself left out);
    /// `NotFound` if it is not stored.
    #[pyo3(signature = (id, *, k=None, min_similarity=None, limit=None, probe_budget=None))]
    fn similar(
        &self,
        py: Python<'_>,
        id: String,
        k: Option<u32>,
        min_similarity: Option<f64>,
        limit: Option<usize>,
        probe_budget: Option<usize>,
    ) -> PyResult<Vec<Hit>> {
        let o = query_options(k, min_similarity, limit, probe_budget);
        self.search(py, Subject::Id(id), o)
    }

    /// `query` for many texts or fingerprints at once (one pass over the
    /// index); a list of hit lists, in order.
    #[pyo3(signature = (queries, *, k=None, min_similarity=None, limit=None, probe_budget=None))]
    fn query_many(
        &self,
        py: Python<'_>,
        queries: &Bound<'_, PyAny>,
        k: Option<u32>,
        min_similarity: Option<f64>,
        limit: Option<usize>,
        probe_budget: Option<usize>,
    ) -> PyResult<Vec<Vec<Hit>>> {
        let subjects: Vec<Subject> = queries
            .try_iter()?
            .map(|q| subject_of(&q?))
            .collect::<PyResult<_>>()?;
        let o = query_options(k, min_similarity, limit, probe_budget);
        let db = self.db()?;
        let rs: Vec<QueryRequest> = subjects
            .into_iter()
            .map(|s| QueryRequest::new(s).with(o))
            .collect();
        let answers = detach(py, || {
            db.answer_many(&rs)?
                .into_iter()
                .map(|a| a.map(|a| a.hits))
                .collect::<simdb::Result<Vec<_>>>()
        })
        .or_raise()?;
        Ok(answers
            .into_iter()
            .map(|hs| hs.into_iter().map(Hit::from).collect())
            .collect())
    }

    /// The stored record of `id` as a dict, or None.
    fn get<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let db = self.db()?;
        let doc = detach(py, || db.document(id)).or_raise()?;
        doc.map(|d| {
            let mut v = json_of(&d)?;
            // Fingerprints are ints in Python (as in hits), not hex.
            v["fingerprint"] = Value::from(d.fingerprint.value());
            to_py(py, &v)
        })
        .transpose()
    }

    /// Deletes `id`; whether it was stored.
    #[pyo3(signature = (id, *, sync=false))]
    fn delete(&self, py: Python<'_>, id: &str, sync: bool) -> PyResult<bool> {
        let db = self.db()?;
        detach(py, || {
            let mut w = db.shared_writer()?;
            w.set_sync(sync);
            let found = w.delete(id)?;
            w.commit()?;
            drop(w);
            db.clusters().settle()?;
            Ok(found)
        })
        .or_raise()
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let db = self.db()?;
        let n = detach(py, || db.len()).or_raise()?;
        Ok(n as usize)
    }

    fn __contains__(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        let db = self.db()?;
        detach(py, || db.get(id).map(|r| r.is_some())).or_raise()
    }

    /// Counts, bucket sizes, size on disk and recipe, as `simdb stats --json`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let db = self.db()?;
        let s = detach(py, || db.admin().stats()).or_raise()?;
        to_py(py, &json_of(&s)?)
    }

    /// The cluster of `id` (a dict), or None if `id` is not stored.
    fn cluster<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let db = self.db()?;
        let c = detach(py, || db.clusters().of(id)).or_raise()?;
        c.map(|c| to_py(py, &json_of(&c)?)).transpose()
    }

    /// The clusters of at least `min_size` (>= 2) documents, as dicts, in
    /// cluster id order: an iterator that reads them 256 at a time, each
    /// listing its first `max_members` members in rank order (`size` counts
    /// them all), so memory follows what is listed, not the store. Each
    /// page is read at its own snapshot.
    #[pyo3(signature = (*, min_size=2, max_members=1000))]
    fn clusters(slf: &Bound<'_, Self>, min_size: u64, max_members: usize) -> PyResult<ClusterIter> {
        slf.get().db()?;
        Ok(ClusterIter {
            db: slf.clone().unbind(),
            min_size,
            max_members,
            next: Some(0),
            page: std::collections::VecDeque::new(),
        })
    }

    /// Timing of the Rust call behind `query(fingerprint)`, without Python:
    /// seconds for `n` searches (the benchmark's reference).
    fn _time_fingerprint_queries(&self, py: Python<'_>, fps: Vec<u64>) -> PyResult<f64> {
        let db = self.db()?;
        detach(py, || {
            let t = std::time::Instant::now();
            for &fp in &fps {
                let r = QueryRequest::new(Subject::Fingerprint(Fingerprint(fp)));
                std::hint::black_box(db.answer(&r)?);
            }
            Ok(t.elapsed().as_secs_f64())
        })
        .or_raise()
    }
}

/// What `Db.clusters()` returns: the clusters, a page at a time.
#[pyclass(module = "simdb._simdb")]
struct ClusterIter {
    db: Py<Db>,
    min_size: u64,
    max_members: usize,
    /// The cluster id the next page starts at; None once read to the end.
    next: Option<u64>,
    page: std::collections::VecDeque<simdb::db::Cluster>,
}

/// Clusters read per page by [`ClusterIter`].
const CLUSTER_PAGE: usize = 256;

#[pymethods]
impl ClusterIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(
        mut slf: PyRefMut<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if slf.page.is_empty() {
            let Some(from) = slf.next else {
                return Ok(None);
            };
            let db = slf.db.get().db()?;
            let (min_size, max_members) = (slf.min_size, slf.max_members);
            let page = detach(py, || {
                db.clusters()
                    .page(from, CLUSTER_PAGE, min_size, max_members)
            })
            .or_raise()?;
            slf.next = match page.last() {
                Some(c) if page.len() == CLUSTER_PAGE => Some(c.id + 1),
                _ => None,
            };
            slf.page.extend(page);
        }
        match slf.page.pop_front() {
            Some(c) => Ok(Some(to_py(py, &json_of(&c)?)?)),
            None => Ok(None),
        }
    }
}

// ---------------------------------------------------------------- functions

#[allow(clippy::too_many_arguments)]
fn fingerprinter(
    top_k: u32,
    shingle: u32,
    hmm: bool,
    tf: &str,
    keep_stop_words: bool,
    latin: &str,
    script: &str,
) -> PyResult<Fingerprinter> {
    let f = Fingerprinter::new(recipe(
        top_k,
        shingle,
        hmm,
        tf,
        keep_stop_words,
        latin,
        script,
    )?);
    f.warm_up();
    Ok(f)
}

/// The 64-bit fingerprint of `text` under a recipe (a new store's by
/// default); `NoFeatures` when nothing usable remains.
///
/// >>> simdb.fingerprint("北京欢迎你") == simdb.fingerprint("北京欢迎你")
/// True
#[pyfunction]
#[pyo3(signature = (text, *, top_k=0, shingle=1, hmm=false, tf="raw", keep_stop_words=false, latin="char-3-grams", script="t2s"))]
#[allow(clippy::too_many_arguments)]
fn fingerprint(
    py: Python<'_>,
    text: &str,
    top_k: u32,
    shingle: u32,
    hmm: bool,
    tf: &str,
    keep_stop_words: bool,
    latin: &str,
    script: &str,
) -> PyResult<u64> {
    let f = fingerprinter(top_k, shingle, hmm, tf, keep_stop_words, latin, script)?;
    detach(py, || f.fingerprint(text))
        .map(Fingerprint::value)
        .or_raise()
}

/// Fingerprints of many texts (in parallel, GIL released) as a numpy
/// `uint64` array; a text with nothing usable raises `NoFeatures` naming
/// its index unless `fill` gives a value for it.
#[pyfunction]
#[pyo3(signature = (texts, *, fill=None, top_k=0, shingle=1, hmm=false, tf="raw", keep_stop_words=false, latin="char-3-grams", script="t2s"))]
#[allow(clippy::too_many_arguments)]
fn fingerprints<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    fill: Option<u64>,
    top_k: u32,
    shingle: u32,
    hmm: bool,
    tf: &str,
    keep_stop_words: bool,
    latin: &str,
    script: &str,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let f = fingerprinter(top_k, shingle, hmm, tf, keep_stop_words, latin, script)?;
    let texts: Vec<String> = texts
        .try_iter()?
        .map(|t| t?.extract::<String>())
        .collect::<PyResult<_>>()?;
    let fps: Vec<simdb::Result<Fingerprint>> =
        detach(py, || texts.par_iter().map(|t| f.fingerprint(t)).collect());
    let mut values = Vec::with_capacity(fps.len());
    for (i, r) in fps.into_iter().enumerate() {
        match (r, fill) {
            (Ok(fp), _) => values.push(fp.value()),
            (Err(Error::NoFeatures), Some(x)) => values.push(x),
            (Err(e @ Error::NoFeatures), None) => {
                return Err(raise(
                    py,
                    "NoFeatures",
                    format!(
                        "text {i}: {} (pass fill= to use a value instead)",
                        message(&e)
                    ),
                ))
            }
            (Err(e), _) => return Err(py_err(e)),
        }
    }
    Ok(PyArray1::from_vec(py, values))
}

/// Hamming distance of two fingerprints.
#[pyfunction]
fn distance(a: u64, b: u64) -> u32 {
    Fingerprint(a).distance(Fingerprint(b))
}

#[pymodule]
fn _simdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Db>()?;
    m.add_class::<Hit>()?;
    m.add_class::<AddResult>()?;
    m.add_class::<ClusterIter>()?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(distance, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
