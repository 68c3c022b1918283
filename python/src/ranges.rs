//! The store of an engine's run built by key range on the workers
//! (`simdb::import::ranges`): the map of a share of the export's parts,
//! the sample and boundaries of the ranges, the cut of a share's items by
//! them, the reduce of a range to its table files, the assembly of the
//! store. Items travel as Arrow IPC streams (`bytes`), which Ray keeps in
//! its object store and Spark reads as record batches.

use super::*;
use pyo3::types::PyBytes;
use simdb::import::ranges::{self, Counts, RangeOutput};

fn counts_of<'py>(py: Python<'py>, c: &Counts) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &json_of(c)?)
}

fn decisions_of(path: Option<&std::path::Path>) -> simdb::Result<Vec<simdb::codec::Decision>> {
    match path {
        Some(p) => simdb::db::decisions::read_log(p),
        None => Ok(Vec::new()),
    }
}

fn bytes_list<'py>(py: Python<'py>, v: &[Vec<u8>]) -> Vec<Bound<'py, PyBytes>> {
    v.iter().map(|b| PyBytes::new(py, b)).collect()
}

/// Step 1 on a worker: the items of a share of an export's part files
/// `parts` under the decision log in file `decisions` (the export's
/// `_decisions.jsonl`), as an Arrow IPC stream; a
/// sample of `samples` of their range keys; the share's counts.
#[pyfunction]
#[pyo3(signature = (parts, *, decisions=None, samples=0))]
pub(super) fn range_map<'py>(
    py: Python<'py>,
    parts: Vec<std::path::PathBuf>,
    decisions: Option<std::path::PathBuf>,
    samples: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let (ipc, sample, counts) = detach(py, || {
        let log = decisions_of(decisions.as_deref())?;
        let (items, counts) = ranges::map_share(&parts, &log)?;
        let sample = ranges::sample(&items, samples);
        Ok::<_, Error>((ranges::to_ipc(&items)?, sample, counts))
    })
    .or_raise()?;
    let out: (
        Bound<'py, PyBytes>,
        Vec<Bound<'py, PyBytes>>,
        Bound<'py, PyAny>,
    ) = (
        PyBytes::new(py, &ipc),
        bytes_list(py, &sample),
        counts_of(py, &counts)?,
    );
    out.into_pyobject(py)
}

/// The boundaries of `ranges` ranges from the range keys every share
/// sampled.
#[pyfunction]
pub(super) fn range_boundaries<'py>(
    py: Python<'py>,
    samples: Vec<Vec<u8>>,
    ranges: usize,
) -> Vec<Bound<'py, PyBytes>> {
    bytes_list(py, &ranges::boundaries(samples, ranges))
}

/// A share's items (an Arrow IPC stream) cut by `boundaries`: one stream
/// per range, `len(boundaries) + 1` of them.
#[pyfunction]
pub(super) fn range_split<'py>(
    py: Python<'py>,
    items: Vec<u8>,
    boundaries: Vec<Vec<u8>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let pieces = detach(py, || ranges::split_ipc(&items, &boundaries)).or_raise()?;
    Ok(bytes_list(py, &pieces))
}

/// Steps 2 and 3 on a worker: the table files of one range's items (Arrow
/// IPC streams, every item of each of their groups) under directory
/// `dir`, named from `name`. Returns a dict: `files` (each family's files,
/// as `[family, [paths]]`), `items` (round 1: the items of round 2 as one
/// stream), `sample` (`samples` of their range keys)
/// and `counts`.
#[pyfunction]
#[pyo3(signature = (streams, dir, name, *, samples=0, file_bytes=256 << 20))]
pub(super) fn range_reduce<'py>(
    py: Python<'py>,
    streams: Vec<Vec<u8>>,
    dir: std::path::PathBuf,
    name: &str,
    samples: usize,
    file_bytes: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let (out, ipc, sample) = detach(py, || {
        let mut out = ranges::reduce_ipc(&streams, &dir, name, file_bytes)?;
        drop(streams);
        let next = std::mem::take(&mut out.items);
        let sample = ranges::sample(&next, samples);
        Ok::<_, Error>((out, ranges::to_ipc(&next)?, sample))
    })
    .or_raise()?;
    let d = PyDict::new(py);
    let files: Vec<(String, Vec<std::path::PathBuf>)> = out.files;
    d.set_item("files", files)?;
    d.set_item("items", PyBytes::new(py, &ipc))?;
    d.set_item("sample", bytes_list(py, &sample))?;
    d.set_item("counts", counts_of(py, &out.counts)?)?;
    Ok(d)
}

/// Step 4 where the store is to be: the store at `target` (a new path)
/// from the export in directory `export` (its metadata and decision log)
/// and every range's table files `files` (as `range_reduce` gives them;
/// moved into the store), with the counts summed over the shares and
/// ranges; with `freeze`, then its frozen index (as `simdb freeze`: a
/// read of the posting families on this machine). With `checked`, the
/// parts in `export` are taken as they are (the maps checked each against
/// the manifest, and `export` may hold only one of them, for the
/// metadata); otherwise every part is checked against the manifest here,
/// as `simdb import` checks them. Returns the summed counts.
#[pyfunction]
#[pyo3(signature = (target, export, files, counts, *, freeze=true, checked=false))]
pub(super) fn range_assemble<'py>(
    py: Python<'py>,
    target: std::path::PathBuf,
    export: std::path::PathBuf,
    files: Vec<(String, Vec<std::path::PathBuf>)>,
    counts: Vec<Bound<'py, PyAny>>,
    freeze: bool,
    checked: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let json = py.import("json")?;
    let mut total = Counts::default();
    for c in counts {
        let s: String = json.call_method1("dumps", (c,))?.extract()?;
        let c: Counts = serde_json::from_str(&s).map_err(|e| {
            PyValueError::new_err(format!("not the counts of a share or range: {e}"))
        })?;
        total.add(&c);
    }
    detach(py, || {
        let parts = simdb::import::expand_inputs(std::slice::from_ref(&export), checked)?;
        let meta = ranges::export_of(&parts)?;
        let log_file = export.join(simdb::db::decisions::DECISIONS_FILE);
        let log = decisions_of(log_file.exists().then_some(log_file.as_path()))?;
        let output = RangeOutput {
            files,
            ..Default::default()
        };
        ranges::assemble(&target, &meta, &log, &[output], &total, Default::default())?;
        if freeze {
            RustDb::options().open(&target)?.admin().freeze()?;
        }
        Ok(())
    })
    .or_raise()?;
    counts_of(py, &total)
}
