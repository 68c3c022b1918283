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
