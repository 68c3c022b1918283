//! The functions of the module: fingerprints without a store, distance.

use super::*;

// ---------------------------------------------------------------- functions

#[allow(clippy::too_many_arguments)]
pub(super) fn fingerprinter(
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
pub(super) fn fingerprint(
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

/// The texts of an iterable of web pages (`str`, `bytes` or `None`), as a
/// store extracts them, in parallel with the GIL released.
fn page_texts(py: Python<'_>, pages: &Bound<'_, PyAny>) -> PyResult<Vec<Option<String>>> {
    let pages: Vec<Option<simdb::fingerprint::Html>> = pages
        .try_iter()?
        .enumerate()
        .map(|(i, t)| {
            let t = t?;
            if t.is_none() {
                return Ok(None);
            }
            page_of(&t, None)
                .map(Some)
                .map_err(|e| PyTypeError::new_err(format!("page {i}: {e}")))
        })
        .collect::<PyResult<_>>()?;
    Ok(detach(py, || {
        pages
            .par_iter()
            .map(|p| p.as_ref().map(|p| p.page().text()))
            .collect()
    }))
}

/// What a web page becomes in a store (as `simdb ingest --format html`
/// and `Db.add(id, html=...)` read it): a dict of `title`, `body` (the main
/// content, or the visible text), `text` (what is fingerprinted: the
/// title, a line break, the body), `found` ("article" or "visible_text")
/// and `encoding` (what it was read in). `html` is a `str`, or `bytes` as
/// fetched, its charset by the WHATWG rules (`charset`, as an HTTP
/// header's, first).
///
/// >>> simdb.page(b"<title>T</title><p>...</p>")["found"]  # doctest: +SKIP
#[pyfunction]
#[pyo3(signature = (html, *, charset=None))]
pub(super) fn page<'py>(
    py: Python<'py>,
    html: &Bound<'py, PyAny>,
    charset: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let h = page_of(html, charset).map_err(|e| raise(py, "InvalidInput", e))?;
    let p = detach(py, || h.page());
    let d = PyDict::new(py);
    d.set_item("title", &p.title)?;
    d.set_item("body", &p.body)?;
    d.set_item("text", p.text())?;
    d.set_item("found", p.found.name())?;
    d.set_item("encoding", p.encoding)?;
    Ok(d)
}

/// Fingerprints of many texts (in parallel, GIL released) as a numpy
/// `uint64` array; a text with nothing usable raises `NoFeatures` naming
/// its index unless `fill` gives a value for it.
#[pyfunction]
#[pyo3(signature = (texts, *, fill=None, top_k=0, shingle=1, hmm=false, tf="raw", keep_stop_words=false, latin="char-3-grams", script="t2s"))]
#[allow(clippy::too_many_arguments)]
pub(super) fn fingerprints<'py>(
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
pub(super) fn distance(a: u64, b: u64) -> u32 {
    Fingerprint(a).distance(Fingerprint(b))
}

/// The fingerprinter of recipe `r`: a dict (`Db.recipe`) or its JSON (an
/// export's `simdb.recipe` metadata), one this build reproduces and whose
/// IDF is not a table learned into a store (that needs the store: `db=`).
fn fingerprinter_of(py: Python<'_>, r: &Bound<'_, PyAny>) -> PyResult<Fingerprinter> {
    let f = Fingerprinter::new(recipe_of(py, r)?);
    f.warm_up();
    Ok(f)
}

/// The rule a store's answers follow (`simdb::db::rule`): the recipe
/// `recipe` (a dict as `Db.recipe` gives it, or its JSON; default: a new
/// store's) with this build's constants, as a dict: `version`, `recipe`,
/// `constants` (the check's bounds, the band and probe plans, the
/// confirmation thresholds, ...) and `digest` (an int, the u64 that the
/// engines' rows carry in their `rule` column and an export states as
/// `simdb.rule_digest`).
#[pyfunction]
#[pyo3(signature = (recipe=None))]
pub(super) fn rule<'py>(
    py: Python<'py>,
    recipe: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let rule = simdb::db::rule::Rule::of(&super::engine::recipe_given(py, recipe)?);
    let mut v = json_of(&rule)?;
    if let Value::Object(m) = &mut v {
        m.insert("digest".into(), Value::from(rule.digest()));
    }
    to_py(py, &v)
}

/// Recipe `r`: a dict (`Db.recipe`) or its JSON (an export's
/// `simdb.recipe` metadata), one this build reproduces and whose IDF is
/// not a table learned into a store.
pub(super) fn recipe_of(py: Python<'_>, r: &Bound<'_, PyAny>) -> PyResult<simdb::Recipe> {
    let recipe = super::engine::recipe_given(py, Some(r.clone()))?;
    if recipe.uses_learned_idf() {
        return Err(PyValueError::new_err(format!(
            "the recipe's IDF ({}) was learned into its store: give db= (the store) instead",
            recipe.idf
        )));
    }
    if let Some((field, stored, this)) = recipe.difference(&simdb::Recipe::this_build_of(&recipe)) {
        return Err(PyValueError::new_err(format!(
            "this build cannot reproduce the recipe: its {field} is {stored}, this build's {this}"
        )));
    }
    Ok(recipe)
}

/// A recipe's text analysis, made once and used for many batches (a Ray
/// or Spark worker's state): what a store keeps of each text, as columns.
/// With `db`, the recipe (and learned IDF) of that store, so an engine's
/// fingerprints match the store they will meet; with `recipe`, a recipe
/// as `Db.recipe` gives it (a dict) or an export's metadata states it (its
/// JSON); otherwise the recipe of the keywords (a new store's by default).
#[pyclass(frozen, module = "simdb._simdb", name = "Analyzer")]
pub(super) struct Analyzer {
    f: Fingerprinter,
}

#[pymethods]
impl Analyzer {
    #[new]
    #[pyo3(signature = (*, db=None, recipe=None, top_k=0, shingle=1, hmm=false, tf="raw", keep_stop_words=false, latin="char-3-grams", script="t2s"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        db: Option<std::path::PathBuf>,
        recipe: Option<Bound<'_, PyAny>>,
        top_k: u32,
        shingle: u32,
        hmm: bool,
        tf: &str,
        keep_stop_words: bool,
        latin: &str,
        script: &str,
    ) -> PyResult<Analyzer> {
        let options_given = || -> PyResult<bool> {
            Ok(
                super::recipe::recipe(top_k, shingle, hmm, tf, keep_stop_words, latin, script)?
                    != simdb::Recipe::default(),
            )
        };
        if recipe.is_some() && (db.is_some() || options_given()?) {
            return Err(PyValueError::new_err(
                "give a recipe, a db or the recipe options, not more than one",
            ));
        }
        if let Some(r) = recipe {
            return Ok(Analyzer {
                f: fingerprinter_of(py, &r)?,
            });
        }
        let f = match db {
            // The store's own fingerprinter (its recipe and any learned
            // IDF), the store closed again at once.
            Some(path) => {
                let f = detach(py, || {
                    RustDb::options()
                        .read_only()
                        .open(&path)
                        .map(|d| d.fingerprinter().clone())
                })
                .or_raise()?;
                f.warm_up();
                f
            }
            // (Warmed up by `fingerprinter`.)
            None => fingerprinter(top_k, shingle, hmm, tf, keep_stop_words, latin, script)?,
        };
        Ok(Analyzer { f })
    }

    /// The recipe, as `Db.recipe` gives a store's.
    #[getter]
    fn recipe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &json_of(self.f.recipe())?)
    }

    /// The digest of the rule the analysis is made for (the recipe and
    /// this build's constants: `simdb.rule`), which
    /// `simdb.ray.fingerprint` stamps on each row as its `rule` column.
    #[getter]
    fn rule(&self) -> u64 {
        simdb::db::rule::Rule::of(self.f.recipe()).digest()
    }

    /// Analyses `texts` (an iterable of `str`, `None` for a missing text)
    /// in parallel with the GIL released, and returns a dict of equal-length
    /// lists: `fingerprint` (int, the u64; `None` where the text has no
    /// usable features or is `None`), `sketch` (32 `bytes`, or `None`),
    /// `length` (the text's UTF-8 bytes), `terms` (terms counted, stop
    /// words dropped), `weak_bits` (`bytes`: bit numbers, weakest first),
    /// `content_hash` (int, the u64 a store records to see an unchanged
    /// text; `None` with the fingerprint) and `parts` (`bytes`: the 12
    /// smallest part hashes a store keeps, u64 big-endian each, ascending;
    /// `None` with the sketch) and `fine` (96 `bytes`: the fine sketch
    /// that settles pairs near the threshold; `None` with the sketch).
    /// These are the values `simdb
    /// ingest` stores for the same texts, and what `simdb import` keeps.
    ///
    /// With `html=True` each item is a web page (`str`, or `bytes` as
    /// fetched, its charset by the WHATWG rules), and what is analysed is
    /// the text `simdb ingest --format html` extracts from it (`length`
    /// and `content_hash` are that text's).
    #[pyo3(signature = (texts, *, html=false))]
    fn analyze_many<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        html: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let texts: Vec<Option<String>> = if html {
            page_texts(py, texts)?
        } else {
            texts
                .try_iter()?
                .map(|t| t?.extract::<Option<String>>())
                .collect::<PyResult<_>>()?
        };
        let f = &self.f;
        let analyses: Vec<simdb::Result<Option<simdb::Analysis>>> = detach(py, || {
            texts
                .par_iter()
                .map(|t| match t {
                    None => Ok(None),
                    // As a store analyses a text (`Content::analyze`).
                    Some(t) => match f.analyze(t) {
                        Ok(a) => Ok(Some(a)),
                        Err(Error::NoFeatures) => Ok(None),
                        Err(e) => Err(e),
                    },
                })
                .collect()
        });
        let n = texts.len();
        let (mut fps, mut sketches, mut lengths, mut terms, mut weak) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut parts = Vec::with_capacity(n);
        let mut fine = Vec::with_capacity(n);
        let mut hashes: Vec<Option<u64>> = Vec::with_capacity(n);
        for (i, (t, a)) in texts.iter().zip(analyses).enumerate() {
            let a =
                a.map_err(|e| raise(py, error_class(&e), format!("text {i}: {}", message(&e))))?;
            lengths.push(t.as_ref().map_or(0, |t| t.len() as u64));
            match a {
                Some(a) => {
                    fps.push(Some(a.fingerprint.value()));
                    sketches.push(a.sketch.map(|s| pyo3::types::PyBytes::new(py, &s.0)));
                    terms.push(a.terms as u64);
                    weak.push(Some(pyo3::types::PyBytes::new(py, &a.weak_bits)));
                    let bytes: Vec<u8> = a.parts.iter().flat_map(|p| p.to_be_bytes()).collect();
                    parts.push(a.sketch.map(|_| pyo3::types::PyBytes::new(py, &bytes)));
                    let f = a.sketch.and(a.fine);
                    fine.push(f.map(|f| pyo3::types::PyBytes::new(py, &f.0)));
                    hashes.push(t.as_deref().map(simdb::fingerprint::text_hash));
                }
                None => {
                    fps.push(None);
                    sketches.push(None);
                    terms.push(0);
                    weak.push(None);
                    parts.push(None);
                    fine.push(None);
                    hashes.push(None);
                }
            }
        }
        let d = PyDict::new(py);
        d.set_item("fingerprint", fps)?;
        d.set_item("sketch", sketches)?;
        d.set_item("length", lengths)?;
        d.set_item("terms", terms)?;
        d.set_item("weak_bits", weak)?;
        d.set_item("content_hash", hashes)?;
        d.set_item("parts", parts)?;
        d.set_item("fine", fine)?;
        Ok(d)
    }
}
