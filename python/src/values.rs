//! Values between Python and the library: JSON values, hits, write results.

use super::*;

// ---------------------------------------------------------------- values

/// A JSON value as the Python object `json.loads` would give.
pub(super) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
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

pub(super) fn json_of<T: serde::Serialize>(x: &T) -> PyResult<Value> {
    serde_json::to_value(x).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A near-duplicate found by a query or a write.
#[pyclass(frozen, eq, module = "simdb._simdb", get_all)]
#[derive(Clone, PartialEq)]
pub(super) struct Hit {
    /// The stored document's id.
    pub(super) id: String,
    /// Its 64-bit fingerprint.
    pub(super) fingerprint: u64,
    /// Hamming distance from the query's fingerprint.
    pub(super) distance: u32,
    /// Estimated Jaccard similarity of the two texts (character 4-grams),
    /// or None when one side has no sketch.
    pub(super) similarity: Option<f64>,
    /// When the similarity is below the threshold and the shorter text was
    /// confirmed as contained in the longer (a truncated copy): the
    /// estimated share of it inside; else None.
    pub(super) containment: Option<f64>,
}

#[pymethods]
impl Hit {
    pub(super) fn __repr__(&self) -> String {
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
pub(super) struct AddResult {
    /// The document's id.
    pub(super) id: String,
    /// "inserted", "replaced", "unchanged", "duplicate" (not written: it
    /// has near-duplicates and skip_duplicates was set) or "no_features"
    /// (nothing usable in the text: not written).
    pub(super) outcome: &'static str,
    /// Its fingerprint (None for "no_features").
    pub(super) fingerprint: Option<u64>,
    /// Its near-duplicates among the stored documents and those written
    /// before it, nearest first: the first `max_duplicates` (default 10).
    pub(super) duplicates: Vec<Hit>,
    /// How many near-duplicates the check confirmed: exact when
    /// `duplicate_count_exact`, else a lower bound (the check stops after
    /// 16 or `max_duplicates`, whichever is more, or 256 looked at).
    pub(super) duplicate_count: usize,
    pub(super) duplicate_count_exact: bool,
    /// Fewer than 10 terms: its fingerprint is less telling.
    pub(super) short: bool,
    /// For a web page (`html`), how its text was found: "article" (its
    /// main content) or "visible_text" (no article: the page's visible
    /// text); None for a text.
    pub(super) page: Option<&'static str>,
}

#[pymethods]
impl AddResult {
    pub(super) fn __repr__(&self) -> String {
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
