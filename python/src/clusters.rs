//! `Db.clusters()`: the clusters, a page at a time.

use super::*;

/// What `Db.clusters()` returns: the clusters, a page at a time.
#[pyclass(module = "simdb._simdb")]
pub(super) struct ClusterIter {
    pub(super) db: Py<Db>,
    pub(super) min_size: u64,
    pub(super) max_members: usize,
    /// The cluster id the next page starts at; None once read to the end.
    pub(super) next: Option<u64>,
    pub(super) page: std::collections::VecDeque<simdb::db::Cluster>,
}

/// Clusters read per page by [`ClusterIter`].
pub(super) const CLUSTER_PAGE: usize = 256;

#[pymethods]
impl ClusterIter {
    pub(super) fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    pub(super) fn __next__<'py>(
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
