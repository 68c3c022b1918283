//! The engines' duplicate check as a join (`simdb::db::engine::check`):
//! each stage's function on a worker's share, over record bytes (as
//! `Db.records` and `engine_records` give them) and plain columns, so
//! that Ray and Spark drivers hold no rule of their own.

use super::*;
use simdb::db::engine::{self as eng, IndexEntry, JoinKey, KeyProbe};
use simdb::index::ScanRule;
use std::collections::HashMap;

/// A column given as a one-dimensional numpy array of its type (the
/// entries' and probes' columns are many per document: lists of Python
/// ints would hold gigabytes).
type Column<'py, T> = numpy::PyReadonlyArray1<'py, T>;

/// A column's values.
fn column<T: numpy::Element + Copy>(a: &Column<'_, T>) -> Vec<T> {
    a.as_array().iter().copied().collect()
}

/// Values as a numpy array.
fn array<'py, T: numpy::Element>(
    py: Python<'py>,
    values: impl Iterator<Item = T>,
) -> Bound<'py, numpy::PyArray1<T>> {
    numpy::PyArray1::from_vec(py, values.collect())
}

/// Decodes record bytes, naming the document of a bad one.
fn decoded(ids: Vec<String>, records: Vec<Vec<u8>>) -> PyResult<Vec<(String, simdb::Record)>> {
    if ids.len() != records.len() {
        return Err(PyValueError::new_err(
            "ids and records must be of one length",
        ));
    }
    ids.into_iter()
        .zip(records)
        .map(|(id, b)| {
            let r = simdb::codec::decode_record(&b)
                .map_err(|e| PyValueError::new_err(format!("the record of {id:?}: {e}")))?;
            Ok((id, r))
        })
        .collect()
}

/// The records of an engine's fingerprint rows (the columns
/// `simdb.ray.fingerprint` writes: `sketch` and `fine` bytes or None,
/// `length`, `weak_bits` bytes, `parts` bytes: u64 big-endian each,
/// ascending; `content_hash` and `terms` where given) at ords `ords`, with
/// what the rows state (`priority`, `dated`: Unix seconds), as record
/// bytes.
#[pyfunction]
#[pyo3(signature = (ords, fingerprints, sketches, fines, lengths, weak_bits, parts, priorities, dated, *, content_hashes=None, terms=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn engine_records<'py>(
    py: Python<'py>,
    ords: Vec<u64>,
    fingerprints: Vec<i64>,
    sketches: Vec<Option<Vec<u8>>>,
    fines: Vec<Option<Vec<u8>>>,
    lengths: Vec<Option<u64>>,
    weak_bits: Vec<Option<Vec<u8>>>,
    parts: Vec<Option<Vec<u8>>>,
    priorities: Vec<Option<f64>>,
    dated: Vec<Option<u64>>,
    content_hashes: Option<Vec<Option<u64>>>,
    terms: Option<Vec<Option<u32>>>,
) -> PyResult<Vec<Bound<'py, pyo3::types::PyBytes>>> {
    let n = ords.len();
    let content_hashes = content_hashes.unwrap_or_else(|| vec![None; n]);
    let terms = terms.unwrap_or_else(|| vec![None; n]);
    if weak_bits.len() != n || parts.len() != n || content_hashes.len() != n || terms.len() != n {
        return Err(PyValueError::new_err(
            "every column must have one row per document",
        ));
    }
    let mut records = records_of_columns(
        ords,
        fingerprints,
        sketches,
        fines,
        lengths,
        priorities,
        dated,
        vec![None; n],
    )?;
    for (i, (r, (w, p))) in records
        .iter_mut()
        .zip(weak_bits.into_iter().zip(parts))
        .enumerate()
    {
        let w = w.unwrap_or_default();
        simdb::codec::check_weak_bits(&w)
            .map_err(|e| PyValueError::new_err(format!("row {i}: weak_bits: {e}")))?;
        r.weak_bits = w;
        let p = p.unwrap_or_default();
        if p.len() % 8 != 0 {
            return Err(PyValueError::new_err(format!(
                "row {i}: parts of {} bytes, not a multiple of 8",
                p.len()
            )));
        }
        r.parts = p
            .chunks_exact(8)
            .map(|c| u64::from_be_bytes(c.try_into().unwrap_or_default()))
            .take(simdb::fingerprint::parts::QUERY_PARTS)
            .collect();
    }
    for (r, (h, t)) in records
        .iter_mut()
        .zip(content_hashes.into_iter().zip(terms))
    {
        r.content_hash = h.unwrap_or(r.content_hash);
        r.terms = t.unwrap_or(r.terms);
    }
    Ok(records
        .iter()
        .map(|r| pyo3::types::PyBytes::new(py, &simdb::codec::encode_record(r)))
        .collect())
}

/// Documents' own times as an engine row states them (Unix seconds, an
/// RFC 3339 string, or None), as Unix seconds: the rule `simdb ingest`
/// applies to a JSON line's `"time"`, naming the first bad row.
#[pyfunction]
pub(super) fn document_times(values: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<Option<u64>>> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            super::store::time_of(v).map_err(|e| PyValueError::new_err(format!("row {i}: {e}")))
        })
        .collect()
}

/// Stage 1 of the join: the index entries of the documents given (any
/// fingerprints, each fingerprint's documents all of them), as columns
/// `family`, `value`, `fingerprint` (signed, as the engines' rows),
/// `after`, `until` (see `simdb::db::engine::IndexEntry`).
#[pyfunction]
pub(super) fn index_entries<'py>(
    py: Python<'py>,
    ids: Vec<String>,
    records: Vec<Vec<u8>>,
) -> PyResult<Bound<'py, PyDict>> {
    let docs = decoded(ids, records)?;
    let entries = detach(py, || {
        let mut by_fp: std::collections::BTreeMap<u64, Vec<(String, simdb::Record)>> =
            Default::default();
        for d in docs {
            by_fp.entry(d.1.fingerprint.0).or_default().push(d);
        }
        let mut out = Vec::new();
        for docs in by_fp.values() {
            out.extend(eng::fingerprint_entries(docs)?);
        }
        Ok::<_, Error>(out)
    })
    .or_raise()?;
    let out = PyDict::new(py);
    out.set_item("family", array(py, entries.iter().map(|e| e.key.family)))?;
    out.set_item("value", array(py, entries.iter().map(|e| e.key.value)))?;
    out.set_item(
        "fingerprint",
        array(py, entries.iter().map(|e| e.fp.0 as i64)),
    )?;
    out.set_item("after", array(py, entries.iter().map(|e| e.after)))?;
    out.set_item("until", array(py, entries.iter().map(|e| e.until)))?;
    Ok(out)
}

/// Stage 2 of the join, for the keys of one share: the entries (stage 1's
/// columns) and the probes (`JoinChecker.probes`' columns) of those keys,
/// each key's all of them. Returns `matched_ord`, `matched_fingerprint`
/// (each probe with a fingerprint its check reads) and `boilerplate_ord`,
/// `boilerplate_part` (the parts whose buckets name none for it). An
/// entry given twice is taken once; one fingerprint twice in a bucket over
/// overlapping ords is refused (`ValueError`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(super) fn key_matches<'py>(
    py: Python<'py>,
    family: Column<'py, u8>,
    value: Column<'py, u64>,
    fingerprint: Column<'py, i64>,
    after: Column<'py, u64>,
    until: Column<'py, u64>,
    probe_family: Column<'py, u8>,
    probe_value: Column<'py, u64>,
    probe_ord: Column<'py, u64>,
    probe_q: Column<'py, i64>,
    probe_k: Column<'py, u32>,
    probe_outside: Column<'py, i64>,
    probe_ranked: Column<'py, bool>,
) -> PyResult<Bound<'py, PyDict>> {
    let (family, value, fingerprint) = (column(&family), column(&value), column(&fingerprint));
    let (after, until) = (column(&after), column(&until));
    let (probe_family, probe_value, probe_ord) = (
        column(&probe_family),
        column(&probe_value),
        column(&probe_ord),
    );
    let (probe_q, probe_k) = (column(&probe_q), column(&probe_k));
    let (probe_outside, probe_ranked) = (column(&probe_outside), column(&probe_ranked));
    let n = family.len();
    let m = probe_family.len();
    if [value.len(), fingerprint.len(), after.len(), until.len()]
        .iter()
        .any(|l| *l != n)
        || [
            probe_value.len(),
            probe_ord.len(),
            probe_q.len(),
            probe_k.len(),
        ]
        .iter()
        .chain([probe_outside.len(), probe_ranked.len()].iter())
        .any(|l| *l != m)
    {
        return Err(PyValueError::new_err(
            "the entries' columns, and the probes', must be of one length each",
        ));
    }
    let entries: Vec<IndexEntry> = (0..n)
        .map(|i| IndexEntry {
            key: JoinKey {
                family: family[i],
                value: value[i],
            },
            fp: Fingerprint(fingerprint[i] as u64),
            after: after[i],
            until: until[i],
        })
        .collect();
    let probes: Vec<KeyProbe> = (0..m)
        .map(|i| KeyProbe {
            key: JoinKey {
                family: probe_family[i],
                value: probe_value[i],
            },
            ord: probe_ord[i],
            rule: ScanRule {
                q: probe_q[i] as u64,
                k: probe_k[i],
                outside: probe_outside[i] as u64,
                ranked: probe_ranked[i],
            },
        })
        .collect();
    let found = detach(py, || eng::key_matches(&entries, &probes)).or_raise()?;
    matches_dict(py, &found)
}

/// The ord and record bytes of each of a check's hits, from the documents
/// the join sent it (its only candidates: the checker's store is empty).
fn near_copies(
    id: &str,
    hits: &[simdb::Hit],
    sent: &[(String, simdb::Record)],
) -> Result<Vec<(u64, Vec<u8>)>, Error> {
    let of: HashMap<&str, &simdb::Record> = sent.iter().map(|(i, r)| (i.as_str(), r)).collect();
    hits.iter()
        .map(|h| {
            of.get(h.id.as_str())
                .map(|r| (r.ord, simdb::codec::encode_record(r)))
                .ok_or_else(|| {
                    Error::Input(format!(
                        "the check of {id:?} found {:?}, which the join did not send it",
                        h.id
                    ))
                })
        })
        .collect()
}

/// Stage 2's answer as columns.
fn matches_dict<'py>(py: Python<'py>, found: &eng::KeyMatches) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("matched_ord", array(py, found.matched.iter().map(|m| m.0)))?;
    out.set_item(
        "matched_fingerprint",
        array(py, found.matched.iter().map(|m| m.1 .0 as i64)),
    )?;
    out.set_item(
        "boilerplate_ord",
        array(py, found.boilerplate.iter().map(|b| b.0)),
    )?;
    out.set_item(
        "boilerplate_part",
        array(py, found.boilerplate.iter().map(|b| b.1)),
    )?;
    Ok(out)
}

/// The store's duplicate check on a worker, with no store of the run
/// (`simdb::db::engine::Checker`): the probes of documents, the earlier
/// documents of a fingerprint that each probe's check can look at, and
/// the check itself over what the join sent. `scratch` is a new path for
/// an empty scratch store (removed when the checker goes), `recipe` the
/// run's (its sketch names the threshold).
#[pyclass(name = "JoinChecker")]
pub(super) struct JoinChecker {
    inner: eng::Checker,
}

#[pymethods]
impl JoinChecker {
    #[new]
    #[pyo3(signature = (scratch, *, recipe=None))]
    fn new(
        py: Python<'_>,
        scratch: std::path::PathBuf,
        recipe: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let recipe = recipe_given(py, recipe)?;
        let inner = detach(py, || eng::Checker::new(&scratch, &recipe)).or_raise()?;
        Ok(JoinChecker { inner })
    }

    /// Stage 2's probes of the documents given, as columns `family`,
    /// `value`, `ord`, `q`, `k`, `outside` (signed), `ranked`: each key a
    /// document's check reads, with the rule it applies there.
    fn probes<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<String>,
        records: Vec<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let docs = decoded(ids, records)?;
        let probes: Vec<KeyProbe> = detach(py, || {
            Ok::<_, Error>(
                docs.iter()
                    .flat_map(|(id, r)| self.inner.probes(id, r))
                    .collect(),
            )
        })
        .or_raise()?;
        let out = PyDict::new(py);
        out.set_item("family", array(py, probes.iter().map(|p| p.key.family)))?;
        out.set_item("value", array(py, probes.iter().map(|p| p.key.value)))?;
        out.set_item("ord", array(py, probes.iter().map(|p| p.ord)))?;
        out.set_item("q", array(py, probes.iter().map(|p| p.rule.q as i64)))?;
        out.set_item("k", array(py, probes.iter().map(|p| p.rule.k)))?;
        out.set_item(
            "outside",
            array(py, probes.iter().map(|p| p.rule.outside as i64)),
        )?;
        out.set_item("ranked", array(py, probes.iter().map(|p| p.rule.ranked)))?;
        Ok(out)
    }

    /// Stage 3 for the fingerprints of one share: `ids`, `records` are
    /// their documents (each fingerprint's all of them), `probe_ids`,
    /// `probe_records` the documents matched to them (stage 2: a probe
    /// may come once per fingerprint of the share it matched). Returns
    /// `ord` (the probe's), `id`, `record`: each probe's earlier
    /// documents of those fingerprints, as many as its check can look at.
    fn fingerprint_docs<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<String>,
        records: Vec<Vec<u8>>,
        probe_ids: Vec<String>,
        probe_records: Vec<Vec<u8>>,
        probe_fingerprints: Vec<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let docs = decoded(ids, records)?;
        let probes = decoded(probe_ids, probe_records)?;
        if probes.len() != probe_fingerprints.len() {
            return Err(PyValueError::new_err(
                "probe_fingerprints must have one row per probe",
            ));
        }
        let rows = detach(py, || {
            type Docs = Vec<(String, simdb::Record)>;
            let mut by_fp: std::collections::BTreeMap<u64, (Docs, Docs)> = Default::default();
            for d in docs {
                by_fp.entry(d.1.fingerprint.0).or_default().0.push(d);
            }
            for (p, fp) in probes.into_iter().zip(probe_fingerprints) {
                by_fp.entry(fp as u64).or_default().1.push(p);
            }
            let mut out = Vec::new();
            for (docs, probes) in by_fp.values() {
                out.extend(self.inner.fingerprint_docs(docs, probes)?);
            }
            Ok::<_, Error>(out)
        })
        .or_raise()?;
        let out = PyDict::new(py);
        out.set_item("ord", rows.iter().map(|r| r.0).collect::<Vec<_>>())?;
        let bytes: Vec<Bound<'py, pyo3::types::PyBytes>> = rows
            .iter()
            .map(|r| pyo3::types::PyBytes::new(py, &simdb::codec::encode_record(&r.2)))
            .collect();
        out.set_item("record", bytes)?;
        out.set_item("id", rows.into_iter().map(|r| r.1).collect::<Vec<_>>())?;
        Ok(out)
    }

    /// Stage 4 for the documents of one share: `ids`, `records` (the
    /// documents checked), `sent_ord`, `sent_ids`, `sent_records` (what
    /// stage 3 sent each, by its ord) and `boilerplate_ord`,
    /// `boilerplate_part` (stage 2's). Returns, for each document that has
    /// confirmed earlier near-copies, the columns `Db.earlier_copies`
    /// gives (`ord`, `id`, `near`, `distance`, `similarity`,
    /// `containment`), each near copy's `near_ord` and `near_record` (what
    /// the placement takes of it), and `checked`, the number of documents
    /// checked.
    #[allow(clippy::too_many_arguments)]
    fn check<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<String>,
        records: Vec<Vec<u8>>,
        sent_ord: Vec<u64>,
        sent_ids: Vec<String>,
        sent_records: Vec<Vec<u8>>,
        boilerplate_ord: Vec<u64>,
        boilerplate_part: Vec<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let docs = decoded(ids, records)?;
        let sent = decoded(sent_ids, sent_records)?;
        if sent.len() != sent_ord.len() || boilerplate_ord.len() != boilerplate_part.len() {
            return Err(PyValueError::new_err(
                "sent_ord must have one row per document sent, and boilerplate_ord one per part",
            ));
        }
        let (rows, near) = detach(py, || {
            let mut sent_to: HashMap<u64, Vec<(String, simdb::Record)>> = HashMap::new();
            for (ord, d) in sent_ord.into_iter().zip(sent) {
                sent_to.entry(ord).or_default().push(d);
            }
            let mut boiler: HashMap<u64, Vec<u64>> = HashMap::new();
            for (ord, p) in boilerplate_ord.into_iter().zip(boilerplate_part) {
                boiler.entry(ord).or_default().push(p);
            }
            let mut rows = Vec::new();
            let mut near = Vec::new();
            for (id, r) in &docs {
                let earlier = sent_to.remove(&r.ord).unwrap_or_default();
                let parts = boiler.remove(&r.ord).unwrap_or_default();
                let found = self.inner.check(id, r, &earlier, &parts)?;
                if !found.hits.is_empty() {
                    near.push(near_copies(id, &found.hits, &earlier)?);
                    rows.push((r.ord, id.clone(), found.hits));
                }
            }
            Ok::<_, Error>((rows, near))
        })
        .or_raise()?;
        let out = super::methods::copies_dict(py, rows, docs.len() as u64)?;
        out.set_item(
            "near_ord",
            near.iter()
                .map(|n| n.iter().map(|c| c.0).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
        )?;
        let records: Vec<Vec<Bound<'py, pyo3::types::PyBytes>>> = near
            .iter()
            .map(|n| {
                n.iter()
                    .map(|c| pyo3::types::PyBytes::new(py, &c.1))
                    .collect()
            })
            .collect();
        out.set_item("near_record", records)?;
        Ok(out)
    }
}
