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
    let recipe = recipe_given(py, recipe)?;
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
            anchor: None,
        };
        simdb::db::engine::place_components(
            &scratch,
            &opts,
            docs,
            list_ords.into_iter().zip(lists).collect(),
        )
    })
    .or_raise()?;
    placed_columns(py, &rows)
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

/// The recipe a placement is given: a dict as `Db.recipe` gives it, or its
/// JSON; the default without one.
pub(super) fn recipe_given(
    py: Python<'_>,
    recipe: Option<Bound<'_, PyAny>>,
) -> PyResult<simdb::Recipe> {
    match recipe {
        None => Ok(simdb::Recipe::default()),
        Some(r) => {
            let json: String = match r.extract::<String>() {
                Ok(s) => s,
                Err(_) => py.import("json")?.call_method1("dumps", (r,))?.extract()?,
            };
            serde_json::from_str(&json)
                .map_err(|e| PyValueError::new_err(format!("not a simdb recipe: {e}")))
        }
    }
}

/// The threshold given, between 0 and 1, or the recipe's default (what a
/// store of that recipe confirms at).
fn threshold(given: Option<f64>, recipe: &simdb::Recipe) -> PyResult<f64> {
    match given {
        Some(s) if (0.0..=1.0).contains(&s) => Ok(s),
        Some(s) => Err(PyValueError::new_err(format!(
            "min_similarity {s} is not between 0 and 1"
        ))),
        None => Ok(simdb::db::recipe_min_similarity(recipe)),
    }
}

/// A sketch (32 bytes) or fine sketch (96) given as bytes, or none.
fn sketch_bytes<T>(
    what: &str,
    i: usize,
    b: Option<Vec<u8>>,
    from: impl Fn(&[u8]) -> Option<T>,
) -> PyResult<Option<T>> {
    match b {
        None => Ok(None),
        Some(b) => from(&b).map(Some).ok_or_else(|| {
            PyValueError::new_err(format!("row {i}: a {what} of {} bytes", b.len()))
        }),
    }
}

/// The records of documents given column by column (as an export's
/// columns hold them).
#[allow(clippy::too_many_arguments)]
pub(super) fn records_of_columns(
    ords: Vec<u64>,
    fingerprints: Vec<i64>,
    sketches: Vec<Option<Vec<u8>>>,
    fines: Vec<Option<Vec<u8>>>,
    lengths: Vec<Option<u64>>,
    priorities: Vec<Option<f64>>,
    dated: Vec<Option<u64>>,
    ingested_at: Vec<Option<u64>>,
) -> PyResult<Vec<simdb::Record>> {
    let n = ords.len();
    if [
        fingerprints.len(),
        sketches.len(),
        fines.len(),
        lengths.len(),
        priorities.len(),
        dated.len(),
        ingested_at.len(),
    ]
    .iter()
    .any(|l| *l != n)
    {
        return Err(PyValueError::new_err(
            "every column must have one row per document",
        ));
    }
    let mut out = Vec::with_capacity(n);
    let rows = ords
        .into_iter()
        .zip(fingerprints)
        .zip(sketches.into_iter().zip(fines))
        .zip(lengths.into_iter().zip(priorities))
        .zip(dated.into_iter().zip(ingested_at));
    for (i, ((((ord, fp), (sk, fine)), (length, priority)), (dated, at))) in rows.enumerate() {
        let priority = match priority {
            None => None,
            Some(p) => Some(
                simdb::codec::Priority::new(p)
                    .ok_or_else(|| PyValueError::new_err(format!("row {i}: a priority of NaN")))?,
            ),
        };
        out.push(simdb::Record {
            fingerprint: simdb::Fingerprint(fp as u64),
            length: length.unwrap_or(0),
            ingested_at: at.unwrap_or(0),
            sketch: sketch_bytes("sketch", i, sk, |b| {
                <[u8; simdb::fingerprint::SKETCH_BYTES]>::try_from(b)
                    .ok()
                    .map(simdb::Sketch)
            })?,
            fine: sketch_bytes(
                "fine sketch",
                i,
                fine,
                simdb::fingerprint::FineSketch::from_slice,
            )?,
            ord,
            priority,
            dated,
            content_hash: 0,
            source: String::new(),
            terms: 0,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            parts: Vec::new(),
            kept: None,
        });
    }
    Ok(out)
}

/// How the store's rule decides each pair of documents `a[i]`, `b[i]`
/// (sketch bytes or None, fine sketch bytes or None, content length) at
/// `min_similarity`: the columns `similarity` (None without two
/// sketches), `refined`, `confirmed` and `containment` (set when
/// containment confirmed the pair). An exact-k engine's join confirms
/// its pairs with it and writes no rule of its own.
#[pyfunction]
#[pyo3(signature = (a_sketch, a_fine, a_length, b_sketch, b_fine, b_length, *, min_similarity=None, recipe=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn pair_verdicts<'py>(
    py: Python<'py>,
    a_sketch: Vec<Option<Vec<u8>>>,
    a_fine: Vec<Option<Vec<u8>>>,
    a_length: Vec<Option<u64>>,
    b_sketch: Vec<Option<Vec<u8>>>,
    b_fine: Vec<Option<Vec<u8>>>,
    b_length: Vec<Option<u64>>,
    min_similarity: Option<f64>,
    recipe: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let min_similarity = threshold(min_similarity, &recipe_given(py, recipe)?)?;
    let n = a_sketch.len();
    let side = |sk, fine, length: Vec<Option<u64>>| {
        records_of_columns(
            vec![0; n],
            vec![0; n],
            sk,
            fine,
            length,
            vec![None; n],
            vec![None; n],
            vec![None; n],
        )
    };
    let a = side(a_sketch, a_fine, a_length)?;
    let b = side(b_sketch, b_fine, b_length)?;
    if a.len() != b.len() {
        return Err(PyValueError::new_err("a and b must have one row per pair"));
    }
    let v: Vec<simdb::db::engine::PairVerdict> = detach(py, || {
        Ok::<_, Error>(
            a.iter()
                .zip(&b)
                .map(|(a, b)| simdb::db::engine::pair_verdict(a, b, min_similarity))
                .collect(),
        )
    })
    .or_raise()?;
    let out = PyDict::new(py);
    out.set_item(
        "similarity",
        v.iter().map(|v| v.similarity).collect::<Vec<_>>(),
    )?;
    out.set_item("refined", v.iter().map(|v| v.refined).collect::<Vec<_>>())?;
    out.set_item(
        "confirmed",
        v.iter().map(|v| v.confirmed).collect::<Vec<_>>(),
    )?;
    out.set_item(
        "containment",
        v.iter().map(|v| v.containment).collect::<Vec<_>>(),
    )?;
    out.set_item("min_similarity", min_similarity)?;
    Ok(out)
}

/// The clusters of whole components given as groups of copies and the
/// pairs of groups within k (`simdb::db::engine::place_groups`): the
/// documents column by column (`ids`, `ords`, `fingerprints` as signed
/// longs, `sketches`, `fines`, `lengths`, `priorities`, `dated`,
/// `ingested_at`, `groups`), the pairs as `pair_x`, `pair_y` (group
/// names). Placed under `keep` with the decision log `decisions`, each
/// document confirmed against a representative within `k` bits at
/// `min_similarity`, as a store ingested with `-k K` places them. Returns
/// the columns of `place_components`.
#[pyfunction]
#[pyo3(signature = (scratch, ids, ords, fingerprints, sketches, fines, lengths, priorities, dated, ingested_at, groups, pair_x, pair_y, *, k, min_similarity=None, recipe=None, keep=None, decisions=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn place_groups<'py>(
    py: Python<'py>,
    scratch: std::path::PathBuf,
    ids: Vec<String>,
    ords: Vec<u64>,
    fingerprints: Vec<i64>,
    sketches: Vec<Option<Vec<u8>>>,
    fines: Vec<Option<Vec<u8>>>,
    lengths: Vec<Option<u64>>,
    priorities: Vec<Option<f64>>,
    dated: Vec<Option<u64>>,
    ingested_at: Vec<Option<u64>>,
    groups: Vec<u64>,
    pair_x: Vec<u64>,
    pair_y: Vec<u64>,
    k: u32,
    min_similarity: Option<f64>,
    recipe: Option<Bound<'py, PyAny>>,
    keep: Option<&str>,
    decisions: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    if ids.len() != ords.len() || groups.len() != ids.len() || pair_x.len() != pair_y.len() {
        return Err(PyValueError::new_err(
            "every document column must have one row per document, and pair_x and pair_y one \
             per pair",
        ));
    }
    let recipe = recipe_given(py, recipe)?;
    let min_similarity = threshold(min_similarity, &recipe)?;
    if k > simdb::fingerprint::MAX_EXACT_K {
        return Err(PyValueError::new_err(format!(
            "k {k} is more than {}",
            simdb::fingerprint::MAX_EXACT_K
        )));
    }
    let keep = keep_named(keep)?.unwrap_or_default();
    let records = records_of_columns(
        ords,
        fingerprints,
        sketches,
        fines,
        lengths,
        priorities,
        dated,
        ingested_at,
    )?;
    let rows = detach(py, || {
        let decisions = match decisions {
            Some(p) => simdb::db::decisions::read_log(&p)?,
            None => Vec::new(),
        };
        let opts = simdb::db::engine::PlaceOptions {
            recipe,
            keep,
            decisions,
            written_at: None,
            anchor: None,
        };
        let anchor = simdb::db::Anchor {
            k,
            beyond_k: false,
            min_similarity,
        };
        let docs = ids
            .into_iter()
            .zip(records)
            .zip(groups)
            .map(|((id, r), g)| (id, r, g))
            .collect();
        let pairs: Vec<(u64, u64)> = pair_x.into_iter().zip(pair_y).collect();
        simdb::db::engine::place_groups(&scratch, &opts, anchor, docs, &pairs)
    })
    .or_raise()?;
    placed_columns(py, &rows)
}

/// The columns of placed clusters (`cluster`, `size`, `representative`,
/// `id`, `rank`, `distance`).
fn placed_columns<'py>(
    py: Python<'py>,
    rows: &[simdb::db::engine::PlacedMember],
) -> PyResult<Bound<'py, PyDict>> {
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

/// Part `number` of the export an engine's run is (`simdb import`
/// restores the store it stands for), written into directory `out` by the
/// library's export writer: the documents `ids` with their `records`
/// (record bytes, as `engine_records` and a join run's `WORK/records/`
/// hold them), each a member of cluster `clusters[i]` (None: alone, its
/// own ord), stating the run's `recipe` (a dict as `Db.recipe` gives it,
/// or its JSON; default: a new store's) and `keep` policy (default
/// first). `written_at`: the write time every record is taken at (the
/// placement's: `newest` ranks by it where a document states no time of
/// its own). Returns its manifest entry: `file`, `bytes`, `rows`, `crc32`.
#[pyfunction]
#[pyo3(signature = (out, number, ids, records, clusters, *, recipe=None, keep=None, written_at=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn export_part<'py>(
    py: Python<'py>,
    out: std::path::PathBuf,
    number: usize,
    ids: Vec<String>,
    records: Vec<Vec<u8>>,
    clusters: Vec<Option<i64>>,
    recipe: Option<Bound<'py, PyAny>>,
    keep: Option<&str>,
    written_at: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    if ids.len() != records.len() || ids.len() != clusters.len() {
        return Err(PyValueError::new_err(
            "ids, records and clusters must be of one length",
        ));
    }
    let header = simdb::db::export::ExportHeader::of_recipe(
        recipe_given(py, recipe)?,
        keep_named(keep)?.unwrap_or(simdb::db::KeepPolicy::First),
    );
    let entry = detach(py, || {
        let mut w = simdb::db::export::PartWriter::create(&out, number, &header, 128 * 1024)?;
        for ((id, bytes), cluster) in ids.iter().zip(&records).zip(&clusters) {
            let mut rec = simdb::codec::decode_record(bytes)
                .map_err(|e| Error::Input(format!("the record of {id:?}: {e}")))?;
            if let Some(t) = written_at {
                rec.ingested_at = t;
            }
            // Cluster ids are ords: the two's complement of the engines'
            // signed columns gives them back.
            let cluster = cluster.map_or(rec.ord, |c| c as u64);
            w.push(id, &rec, cluster, None)?;
        }
        w.finish()
    })
    .or_raise()?;
    to_py(py, &json_of(&entry)?)
}

/// Ends the export an engine's run wrote into `out` (parts by
/// `export_part`): the decision log `decisions` (a file of `simdb
/// decisions --json`, which the placement obeyed) copied into it as
/// `_decisions.jsonl`, then the marker `_SUCCESS` with the manifest of
/// `parts` (dicts as `export_part` returns them, in order), so that
/// `simdb import` restores the store and tells a copy that lost a part.
/// Returns the manifest as a dict.
#[pyfunction]
#[pyo3(signature = (out, parts, *, decisions=None))]
pub(super) fn finish_export<'py>(
    py: Python<'py>,
    out: std::path::PathBuf,
    parts: Bound<'py, PyAny>,
    decisions: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let json: String = py
        .import("json")?
        .call_method1("dumps", (parts,))?
        .extract()?;
    let parts: Vec<simdb::db::export::PartEntry> = serde_json::from_str(&json)
        .map_err(|e| PyValueError::new_err(format!("not a list of export parts: {e}")))?;
    let manifest = detach(py, || {
        let log = match &decisions {
            Some(p) => simdb::db::decisions::read_log(p)?,
            None => Vec::new(),
        };
        let d = simdb::db::export::write_decisions(&out, &log)?;
        simdb::db::export::finish_export(&out, parts, d)
    })
    .or_raise()?;
    to_py(py, &json_of(&manifest)?)
}
