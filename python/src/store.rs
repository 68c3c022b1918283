//! `simdb.Db`: the handle, its documents in, its queries' options.

use super::*;

// ---------------------------------------------------------------- Db

/// An open store. See `simdb.Db` for the documentation.
#[pyclass(frozen, module = "simdb._simdb", name = "Db")]
pub(super) struct Db {
    /// None once closed. Each call holds its own `Arc` while it runs, so a
    /// call in another thread finishes on the open store after `close`.
    pub(super) inner: RwLock<Option<Arc<RustDb>>>,
    pub(super) path: String,
    pub(super) read_only: bool,
    /// The process that opened the store: a child of `fork()` holds a copy
    /// of the handle without the store's threads and lock, which must not
    /// be used (nor closed: see `Drop`).
    pub(super) pid: u32,
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
pub(super) fn doc_of(item: &Bound<'_, PyAny>, n: u64) -> PyResult<Doc> {
    let bad = |what: &str| {
        PyTypeError::new_err(format!(
            "document {n}: {what}; expected an (id, text) pair or a dict with \"id\" and \"text\" (or \"html\", or \"fingerprint\")"
        ))
    };
    let mut dated = None;
    let (id, content, priority): (String, Content, Option<f64>) =
        if let Ok(d) = item.cast::<PyDict>() {
            let id = d
                .get_item("id")?
                .ok_or_else(|| bad("no \"id\""))?
                .extract::<String>()
                .map_err(|_| bad("\"id\" is not a string"))?;
            let content = dict_content(d, &bad)?;
            let priority = match d.get_item("priority")? {
                Some(p) if !p.is_none() => Some(
                    p.extract::<f64>()
                        .map_err(|_| bad("\"priority\" is not a number"))?,
                ),
                _ => None,
            };
            if let Some(t) = d.get_item("time")? {
                dated = time_of(&t).map_err(|e| bad(&e))?;
            }
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
    // A finite number, as a JSON line's (`ingest` refuses the others).
    if let Some(p) = priority.filter(|p| !p.is_finite()) {
        return Err(bad(&format!(
            "\"priority\" must be a finite number, not {p}"
        )));
    }
    Ok(Doc {
        id,
        content,
        source: format!("python:{n}"),
        line: None,
        priority,
        dated,
    })
}

/// A document's own time given to Python (`time=`, a dict's `"time"`):
/// Unix seconds (an int >= 0), an RFC 3339 `str`, or None.
pub(super) fn time_of(t: &Bound<'_, PyAny>) -> std::result::Result<Option<u64>, String> {
    if t.is_none() {
        return Ok(None);
    }
    let v = if let Ok(s) = t.extract::<String>() {
        Value::String(s)
    } else if let Ok(n) = t.extract::<u64>() {
        Value::from(n)
    } else {
        Value::String(t.to_string())
    };
    simdb::db::input::parse_time(&v).map(Some)
}

/// The content of a dict given to `add_many`: one of `"text"`, `"html"`
/// (with an optional `"charset"`) or `"fingerprint"`.
fn dict_content(d: &Bound<'_, PyDict>, bad: &dyn Fn(&str) -> PyErr) -> PyResult<Content> {
    let given = (
        d.get_item("text")?,
        d.get_item("html")?,
        d.get_item("fingerprint")?,
    );
    if [given.0.is_some(), given.1.is_some(), given.2.is_some()]
        .iter()
        .filter(|g| **g)
        .count()
        > 1
    {
        return Err(bad(
            "give one of \"text\", \"html\" or \"fingerprint\", not several",
        ));
    }
    Ok(match given {
        (Some(t), ..) => Content::Text(t.extract().map_err(|_| bad("\"text\" is not a string"))?),
        (_, Some(h), _) => {
            let charset = match d.get_item("charset")? {
                Some(c) if !c.is_none() => Some(
                    c.extract::<String>()
                        .map_err(|_| bad("\"charset\" is not a string"))?,
                ),
                _ => None,
            };
            Content::Html(page_of(&h, charset).map_err(|e| bad(&e))?)
        }
        (.., Some(f)) => Content::Fingerprint(Fingerprint(
            f.extract()
                .map_err(|_| bad("\"fingerprint\" is not an int in 0..2**64"))?,
        )),
        (None, None, None) => return Err(bad("no \"text\", \"html\" or \"fingerprint\"")),
    })
}

/// A web page given to Python: `str` (Unicode already: read as UTF-8,
/// whatever it declares) or `bytes` (as fetched: the charset by the
/// WHATWG rules, `charset` first, as a transport's).
pub(super) fn page_of(
    h: &Bound<'_, PyAny>,
    charset: Option<String>,
) -> std::result::Result<simdb::fingerprint::Html, String> {
    if let Ok(s) = h.extract::<String>() {
        if charset.is_some() {
            return Err(
                "\"charset\" is for a page given as bytes; a str is Unicode already".into(),
            );
        }
        return Ok(simdb::fingerprint::Html {
            bytes: s.into_bytes(),
            charset: Some("utf-8".into()),
        });
    }
    match h.cast::<pyo3::types::PyBytes>() {
        Ok(b) => Ok(simdb::fingerprint::Html {
            bytes: b.as_bytes().to_vec(),
            charset,
        }),
        Err(_) => Err("the page (\"html\") is neither str nor bytes".into()),
    }
}

impl Db {
    /// The open store, or `ClosedError`.
    pub(super) fn db(&self) -> PyResult<Arc<RustDb>> {
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

    pub(super) fn wrap(db: RustDb, read_only: bool) -> Db {
        Db {
            path: db.path().display().to_string(),
            inner: RwLock::new(Some(Arc::new(db))),
            read_only,
            pid: std::process::id(),
        }
    }

    /// Writes one batch: analysis in parallel, then one atomic write batch.
    pub(super) fn write_batch(
        db: &RustDb,
        docs: &mut [Doc],
        opts: &WritePolicy,
        results: bool,
        counts: &mut write::WriteCounts,
    ) -> simdb::Result<Vec<AddResult>> {
        // Web pages become their text once, before the analysis.
        let found = pool().install(|| write::extract_pages(db, docs))?;
        let docs = &*docs;
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
        for ((doc, r), found) in docs.iter().zip(written).zip(found) {
            counts.add_written(&r);
            counts.pages.add(found);
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
                    page: found.map(simdb::web::Found::name),
                });
            }
        }
        Ok(out)
    }

    /// The write pipeline's options for the keywords of `add` and
    /// `add_many` (the library's [`WriteOptions`], resolved for this store).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_options(
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
    pub(super) fn search(
        &self,
        py: Python<'_>,
        subject: Subject,
        o: QueryOptions,
    ) -> PyResult<Vec<Hit>> {
        let db = self.db()?;
        let r = QueryRequest::new(subject).with(o);
        let answer = detach(py, || db.answer(&r)).or_raise()?;
        Ok(answer.hits.into_iter().map(Hit::from).collect())
    }
}

/// The keywords every query method takes, as the library's options.
pub(super) fn query_options(
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

pub(super) fn subject_of(q: &Bound<'_, PyAny>) -> PyResult<Subject> {
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
