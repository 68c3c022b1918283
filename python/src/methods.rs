//! `simdb.Db`'s methods.

use super::*;

#[pymethods]
impl Db {
    /// Creates a new, empty store at `path` with this fingerprint recipe
    /// (the defaults are the measured best), keeping every text written
    /// with `keep_texts` (`get` then has it). `StoreExists` if `path`
    /// exists.
    ///
    /// >>> db = simdb.Db.create("news.simdb")  # doctest: +SKIP
    #[staticmethod]
    #[pyo3(signature = (path, *, top_k=0, shingle=1, hmm=false, tf="raw", keep_stop_words=false, latin="char-3-grams", script="t2s", keep="first", keep_texts=false))]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn create(
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
        keep_texts: bool,
    ) -> PyResult<Db> {
        let r = recipe(top_k, shingle, hmm, tf, keep_stop_words, latin, script)?;
        let keep: simdb::db::KeepPolicy = keep.parse().map_err(PyValueError::new_err)?;
        let options = match keep_texts {
            true => RustDb::options().keep_texts(),
            false => RustDb::options(),
        };
        let db = detach(py, || options.keep(keep).create(&path, r)).or_raise()?;
        Ok(Db::wrap(db, false))
    }

    /// Opens a store; for writing one process at a time (`StoreInUse`),
    /// `read_only=True` also while another process writes (it sees the
    /// store as of its open, and holds every table file of that view open,
    /// so the writer's compactions cannot remove one from under it).
    #[staticmethod]
    #[pyo3(signature = (path, *, read_only=false))]
    pub(super) fn open(py: Python<'_>, path: std::path::PathBuf, read_only: bool) -> PyResult<Db> {
        let db = py
            .detach(|| {
                let access = if read_only {
                    simdb::Access::ReadOnly
                } else {
                    simdb::Access::ReadWrite
                };
                let tuning = simdb::Tuning {
                    open_all_files: read_only,
                    ..simdb::Tuning::default()
                };
                RustDb::options().access(access).tuning(tuning).open(&path)
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
    pub(super) fn close(&self, py: Python<'_>, wait: bool) -> PyResult<()> {
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

    pub(super) fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    pub(super) fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py, true)?;
        Ok(false)
    }

    pub(super) fn __repr__(&self) -> String {
        let state = match (self.closed(), self.read_only) {
            (true, _) => ", closed",
            (false, true) => ", read_only=True",
            _ => "",
        };
        format!("Db({:?}{state})", self.path)
    }

    #[getter]
    pub(super) fn closed(&self) -> bool {
        self.inner.read().map(|g| g.is_none()).unwrap_or(true)
    }

    #[getter]
    pub(super) fn path(&self) -> &str {
        &self.path
    }

    #[getter]
    pub(super) fn read_only(&self) -> bool {
        self.read_only
    }

    /// The store's fingerprint recipe, as a dict.
    #[getter]
    pub(super) fn recipe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let db = self.db()?;
        to_py(py, &json_of(db.recipe())?)
    }

    /// The store's keep policy (who represents a cluster): `first`,
    /// `priority`, `longest` or `newest`.
    #[getter]
    pub(super) fn keep_policy(&self, py: Python<'_>) -> PyResult<String> {
        let db = self.db()?;
        let k = detach(py, || db.admin().keep_policy()).or_raise()?;
        Ok(k.name().to_string())
    }

    /// Adds (or replaces) one document; returns an `AddResult` with its
    /// near-duplicates (the first `max_duplicates`, default 10, at most
    /// 100, and how many there are). Atomic, in the write-ahead log on
    /// return (`sync=True` also fsyncs).
    ///
    /// A web page is given as `html=` instead of the text: `str`, or
    /// `bytes` as fetched (its charset by the WHATWG rules, `charset=`
    /// first, as an HTTP header's); its title and main content are what
    /// is fingerprinted, as `simdb ingest --format html` extracts them.
    /// `time=` is the document's own time (Unix seconds or an RFC 3339
    /// `str`, e.g. a crawl's fetch date): what `expire` and the `newest`
    /// keep policy go by instead of the time written.
    ///
    /// >>> db.add("a1", "国务院总理今天在北京主持召开常务会议").outcome  # doctest: +SKIP
    /// 'inserted'
    #[pyo3(signature = (id, text=None, *, html=None, charset=None, time=None, k=None, min_similarity=None, probe_budget=None, skip_duplicates=false, sync=false, max_duplicates=None))]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add(
        &self,
        py: Python<'_>,
        id: String,
        text: Option<String>,
        html: Option<Bound<'_, PyAny>>,
        charset: Option<String>,
        time: Option<Bound<'_, PyAny>>,
        k: Option<u32>,
        min_similarity: Option<f64>,
        probe_budget: Option<usize>,
        skip_duplicates: bool,
        sync: bool,
        max_duplicates: Option<usize>,
    ) -> PyResult<AddResult> {
        let content = match (text, html) {
            (Some(t), None) if charset.is_none() => Content::Text(t),
            (None, Some(h)) => {
                Content::Html(page_of(&h, charset).map_err(|e| raise(py, "InvalidInput", e))?)
            }
            (Some(_), None) => {
                return Err(raise(
                    py,
                    "InvalidInput",
                    "charset= is for a page given as bytes (html=)".into(),
                ))
            }
            _ => {
                return Err(PyTypeError::new_err(
                    "add takes a text or html=, one of them",
                ))
            }
        };
        let db = self.db()?;
        let mut doc = Doc {
            id,
            content,
            source: "python:0".into(),
            line: None,
            priority: None,
            dated: time
                .as_ref()
                .map(time_of)
                .transpose()
                .map_err(|e| raise(py, "InvalidInput", e))?
                .flatten(),
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
            Db::write_batch(
                &db,
                std::slice::from_mut(&mut doc),
                &opts,
                true,
                &mut counts,
            )
        })
        .or_raise()?;
        Ok(out.pop().expect("one result per document"))
    }

    /// Adds documents from an iterable of `(id, text)` pairs or dicts
    /// (`{"id", "text"}`, `{"id", "html"}` with an optional `"charset"`
    /// for bytes (see `add`), or `{"id", "fingerprint"}`; an optional
    /// `"priority"`),
    /// `batch_size` at a time, each batch one atomic write, the GIL released
    /// while it is written. Returns one `AddResult` per document (each
    /// listing at most `max_duplicates` near-duplicates, default 10), or
    /// with `results=False` the counts (bounded memory): per outcome
    /// (`inserted`, `replaced`, `unchanged`, `duplicate`, `no_features`),
    /// then `near_duplicates` (documents with one) and `short` (short
    /// documents written), and with web pages `pages` (`article`,
    /// `visible_text`): the names of the CLI's summary and the service.
    ///
    /// >>> db.add_many(zip(df["id"], df["text"]), skip_duplicates=True)  # doctest: +SKIP
    #[pyo3(signature = (docs, *, batch_size=1000, k=None, min_similarity=None, probe_budget=None, skip_duplicates=false, sync=false, results=true, max_duplicates=None))]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_many<'py>(
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
                for mut batch in rx {
                    match Db::write_batch(&db, &mut batch, &opts, results, &mut counts) {
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
            d.set_item(name, to_py(py, c)?)?;
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
    pub(super) fn query(
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
    pub(super) fn similar(
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
    pub(super) fn query_many(
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
    pub(super) fn get<'py>(
        &self,
        py: Python<'py>,
        id: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
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
    pub(super) fn delete(&self, py: Python<'_>, id: &str, sync: bool) -> PyResult<bool> {
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

    pub(super) fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let db = self.db()?;
        let n = detach(py, || db.len()).or_raise()?;
        Ok(n as usize)
    }

    pub(super) fn __contains__(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        let db = self.db()?;
        detach(py, || db.get(id).map(|r| r.is_some())).or_raise()
    }

    /// Counts, bucket sizes, size on disk and recipe, as `simdb stats --json`.
    pub(super) fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let db = self.db()?;
        let s = detach(py, || db.admin().stats()).or_raise()?;
        to_py(py, &json_of(&s)?)
    }

    /// Writes the frozen index again, as `simdb freeze`, while writes and
    /// queries go on: a dict of generation, entries, bytes, path and
    /// seconds.
    pub(super) fn freeze<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let db = self.db()?;
        let r = detach(py, || db.admin().freeze()).or_raise()?;
        to_py(py, &json_of(&r)?)
    }

    /// Each document whose ord is in `start..end` that has confirmed
    /// near-copies among the documents before it: the duplicate check a
    /// cluster rebuild (and ingest) makes. Columns (a dict of lists):
    /// `ord`, `id`, and per document its hits nearest first: `near` (ids),
    /// `distance`, `similarity`, `containment`; and `checked`, the number
    /// of documents checked. Reads only: open the store read-only in as
    /// many processes as there are ranges.
    #[pyo3(signature = (start, end))]
    pub(super) fn earlier_copies<'py>(
        &self,
        py: Python<'py>,
        start: u64,
        end: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db()?;
        type Row = (u64, String, Vec<simdb::Hit>);
        let (rows, checked): (Vec<Row>, u64) = detach(py, || {
            let mut rows = Vec::new();
            let n = db.admin().earlier_copies(start..end, |ord, id, hits| {
                rows.push((ord, id.to_string(), hits));
                Ok(())
            })?;
            Ok::<_, Error>((rows, n))
        })
        .or_raise()?;
        copies_dict(py, rows, checked)
    }

    /// The stored records of `ids`, for the engines' placement on their
    /// workers (`simdb.place_components`): a dict of `ord` (int) and
    /// `record` (bytes: the record as the store's codec writes it,
    /// docs/format.md), each None where an id is not stored.
    pub(super) fn records<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db()?;
        let got: Vec<Option<(u64, Vec<u8>)>> = detach(py, || {
            ids.iter()
                .map(|id| {
                    Ok(db
                        .get(id)?
                        .map(|r| (r.ord, simdb::codec::encode_record(&r))))
                })
                .collect::<simdb::Result<Vec<_>>>()
        })
        .or_raise()?;
        let out = PyDict::new(py);
        out.set_item(
            "ord",
            got.iter()
                .map(|g| g.as_ref().map(|g| g.0))
                .collect::<Vec<_>>(),
        )?;
        out.set_item(
            "record",
            got.iter()
                .map(|g| g.as_ref().map(|g| pyo3::types::PyBytes::new(py, &g.1)))
                .collect::<Vec<_>>(),
        )?;
        Ok(out)
    }

    /// The cluster of `id` (a dict), or None if `id` is not stored.
    pub(super) fn cluster<'py>(
        &self,
        py: Python<'py>,
        id: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
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
    pub(super) fn clusters(
        slf: &Bound<'_, Self>,
        min_size: u64,
        max_members: usize,
    ) -> PyResult<ClusterIter> {
        slf.get().db()?;
        Ok(ClusterIter {
            db: slf.clone().unbind(),
            min_size,
            max_members,
            next: Some(0),
            page: std::collections::VecDeque::new(),
        })
    }

    /// A page of clusters, as `GET /clusters` answers (docs/review.md): a
    /// dict of `clusters` (each with its first `members` members and its
    /// representative's `source`) and `next`, the cursor of the next page
    /// (`after`; `None` at the end). `sort` is "size" (largest first),
    /// "newest" (newest member first), "distant" (most distant member
    /// first) or "id"; `source` keeps the clusters whose representative's source
    /// begins with it (an input file's name).
    #[pyo3(signature = (*, sort="size", after=None, limit=20, min_size=2, members=5, source=None))]
    #[allow(
        clippy::too_many_arguments,
        reason = "keyword arguments of the API's parameters"
    )]
    pub(super) fn clusters_page<'py>(
        &self,
        py: Python<'py>,
        sort: &str,
        after: Option<&str>,
        limit: usize,
        min_size: u64,
        members: usize,
        source: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let order: simdb::db::review::ClusterOrder = sort.parse().or_raise()?;
        let db = self.db()?;
        let page = detach(py, || {
            db.clusters()
                .list(order, after, limit, min_size, members, source)
        })
        .or_raise()?;
        to_py(py, &json_of(&page)?)
    }

    /// The cluster of stored document `id` a page at a time, as
    /// `GET /cluster` answers: `id`, `size`, `representative`, `members`
    /// (at most `limit` after cursor `after`, the representative first on
    /// the first page), each with `why` it is there (`distance`,
    /// `similarity`, `containment`, `confirmed_by`), and `next`. `None` if
    /// `id` is not stored.
    #[pyo3(signature = (id, *, after=None, limit=100))]
    pub(super) fn cluster_members<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let db = self.db()?;
        let page = detach(py, || db.clusters().members(id, after, limit)).or_raise()?;
        page.map(|p| to_py(py, &json_of(&p)?)).transpose()
    }

    /// Decides that stored documents `a` and `b` are not copies of each
    /// other (docs/review.md): neither is ever placed in a cluster the
    /// other represents; when one represents the other's cluster now, the
    /// other leaves it. Returns the decision's log sequence (a pair already
    /// decided: its sequence). `who` is recorded in the log.
    #[pyo3(signature = (a, b, *, who="python", sync=false))]
    pub(super) fn not_a_copy(
        &self,
        py: Python<'_>,
        a: &str,
        b: &str,
        who: &str,
        sync: bool,
    ) -> PyResult<u64> {
        let db = self.db()?;
        detach(py, || {
            let mut w = db.shared_writer()?;
            w.set_sync(sync);
            let seq = w.not_a_copy(a, b, who)?;
            w.commit()?;
            drop(w);
            db.clusters().settle()?;
            Ok(seq)
        })
        .or_raise()
    }

    /// Decides that stored document `id` is the one to keep (docs/review.md):
    /// it represents its cluster from now on, and the members are
    /// re-checked against it. Returns the decision's log sequence.
    #[pyo3(signature = (id, *, who="python", sync=false))]
    pub(super) fn keep(&self, py: Python<'_>, id: &str, who: &str, sync: bool) -> PyResult<u64> {
        let db = self.db()?;
        detach(py, || {
            let mut w = db.shared_writer()?;
            w.set_sync(sync);
            let seq = w.keep(id, who)?;
            w.commit()?;
            drop(w);
            db.clusters().settle()?;
            Ok(seq)
        })
        .or_raise()
    }

    /// Undoes decision `seq` ("not a copy" or "keep"); returns the undo's
    /// sequence.
    #[pyo3(signature = (seq, *, who="python", sync=false))]
    pub(super) fn undo_decision(
        &self,
        py: Python<'_>,
        seq: u64,
        who: &str,
        sync: bool,
    ) -> PyResult<u64> {
        let db = self.db()?;
        detach(py, || {
            let mut w = db.shared_writer()?;
            w.set_sync(sync);
            let undo = w.undo_decision(seq, who)?;
            w.commit()?;
            drop(w);
            db.clusters().settle()?;
            Ok(undo)
        })
        .or_raise()
    }

    /// Writes the decisions of a log file (`simdb decisions --json`, an
    /// export's `_decisions.jsonl`) into this store, in order, whether or
    /// not their documents are stored here; returns each entry's sequence
    /// here.
    #[pyo3(signature = (log, *, sync=false))]
    pub(super) fn replay_decisions(
        &self,
        py: Python<'_>,
        log: std::path::PathBuf,
        sync: bool,
    ) -> PyResult<Vec<u64>> {
        let db = self.db()?;
        detach(py, || {
            let entries = simdb::db::decisions::read_log(&log)?;
            let mut w = db.shared_writer()?;
            w.set_sync(sync);
            let seqs = w.replay_decisions(&entries)?;
            w.commit()?;
            drop(w);
            db.clusters().settle()?;
            Ok(seqs)
        })
        .or_raise()
    }

    /// A page of the decision log, as `GET /decisions` answers:
    /// `decisions` (each `seq`, `kind`, `a`, `b`, `who`, `at`, `undoes`)
    /// after sequence `after`, oldest first, and `next`.
    #[pyo3(signature = (*, after=0, limit=100))]
    pub(super) fn decisions<'py>(
        &self,
        py: Python<'py>,
        after: u64,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let db = self.db()?;
        let page = detach(py, || db.clusters().decisions(after, limit)).or_raise()?;
        to_py(py, &json_of(&page)?)
    }

    /// Timing of the Rust call behind `query(fingerprint)`, without Python:
    /// seconds for `n` searches (the benchmark's reference).
    pub(super) fn _time_fingerprint_queries(&self, py: Python<'_>, fps: Vec<u64>) -> PyResult<f64> {
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

/// Each document's confirmed earlier near-copies as the columns
/// `Db.earlier_copies` gives them (`ord`, `id`, `near`, `distance`,
/// `similarity`, `containment`; the hits nearest first) and `checked`:
/// the store's check and the engines' join (`JoinChecker.check`) alike.
pub(super) fn copies_dict<'py>(
    py: Python<'py>,
    rows: Vec<(u64, String, Vec<simdb::Hit>)>,
    checked: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let mut ords = Vec::with_capacity(rows.len());
    let mut ids = Vec::with_capacity(rows.len());
    let mut near = Vec::with_capacity(rows.len());
    let mut distance = Vec::with_capacity(rows.len());
    let mut similarity = Vec::with_capacity(rows.len());
    let mut containment = Vec::with_capacity(rows.len());
    for (ord, id, hits) in rows {
        ords.push(ord);
        ids.push(id);
        distance.push(hits.iter().map(|h| h.distance).collect::<Vec<_>>());
        similarity.push(hits.iter().map(|h| h.similarity).collect::<Vec<_>>());
        containment.push(hits.iter().map(|h| h.containment).collect::<Vec<_>>());
        near.push(hits.into_iter().map(|h| h.id).collect::<Vec<_>>());
    }
    out.set_item("ord", ords)?;
    out.set_item("id", ids)?;
    out.set_item("near", near)?;
    out.set_item("distance", distance)?;
    out.set_item("similarity", similarity)?;
    out.set_item("containment", containment)?;
    out.set_item("checked", checked)?;
    Ok(out)
}
