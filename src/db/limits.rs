//! Every bound on the work of one write or one answer, in one place. The
//! CLI, the service and the Python package apply these; the README's
//! "Limits" section lists them.
//!
//! A store built for duplicates holds documents with thousands or millions
//! of copies. Nothing a client asks may then cost, or answer, in
//! proportion to the copies: a write's duplicate check stops early, and
//! every answer is capped.

/// The duplicate check of a write confirms at most this many duplicates
/// (nearest first, then by id), or as many as the write asks to list if
/// that is more: the document joins the clusters of the first this many,
/// and the count of its duplicates is exact below the number confirmed.
/// Each confirmed duplicate costs a record read and a cluster lookup
/// (about 2 µs; `tools/copies.rs`).
pub const CHECK_CONFIRMED: usize = 16;

/// The duplicate check of a write looks at most at this many candidates,
/// confirmed or not, nearest first: a template shared by many documents
/// that the sketch tells apart cannot make a write read them all. (A copy
/// of a template page is nearer than the other pages of the template: it
/// differs in a few bits at most.)
pub const CHECK_EXAMINED: usize = 256;

/// A search stops once the sketch has rejected this many of its
/// candidates (nearest first, then by id), and its answer says it is not
/// complete (`"complete": false`): a query near a flood of stored copies
/// that it is not a copy of (a near miss, or a threshold the flood does
/// not reach) costs about what this many `refs` entries cost, a few
/// milliseconds, however many copies are stored. A write's check stops
/// sooner ([`CHECK_EXAMINED`]).
pub const QUERY_REJECTED: usize = 2048;

/// When a cluster's representative is deleted or replaced by other
/// content, its members are checked against the next one at most this
/// many per commit (a record read each, a few milliseconds in all), so that no
/// write holds the writer for a whole cluster; the rest follow at the
/// next commits ([`crate::db::Clusters::settle`] runs them to the end, a
/// step per hold of the writer lock).
pub const SETTLE_STEP: usize = 1024;

/// Hits of a query when the caller gives no limit (CLI, service, Python).
pub const DEFAULT_LIMIT: usize = 10;

/// The largest limit a query may ask for.
pub const MAX_LIMIT: usize = 10_000;

/// Duplicates listed per written document when the caller gives no
/// number (the count beside them is not capped by it).
pub const DEFAULT_MAX_DUPLICATES: usize = 10;

/// The most duplicates a written document may list (its check then
/// confirms that many).
pub const MAX_DUPLICATES: usize = 100;

/// Hits a service request may answer in all (queries: the sum of their
/// limits; writes: documents × listed duplicates), checked before any
/// work: the default of `simdb serve --max-hits`.
pub const DEFAULT_MAX_REQUEST_HITS: usize = 100_000;

/// A write of many documents through a shared writer (the service)
/// commits in chunks of at most this many documents, each atomic …
pub const WRITE_CHUNK_DOCS: usize = 256;

/// … or of as many as were written in this time, so that another writer
/// (a one-document write from another client) never waits longer for the
/// writer than one chunk takes.
pub const WRITE_CHUNK_TIME: std::time::Duration = std::time::Duration::from_millis(50);

/// `limit` if it is a query limit this build answers, or the default.
pub fn query_limit(limit: Option<usize>) -> crate::Result<usize> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if n > MAX_LIMIT => Err(crate::Error::Input(format!(
            "limit {n} is more than {MAX_LIMIT} hits (ask for fewer, or page by distance)"
        ))),
        Some(n) => Ok(n),
    }
}

/// `n` if it is a number of listed duplicates this build answers, or the
/// default.
pub fn max_duplicates(n: Option<usize>) -> crate::Result<usize> {
    match n {
        None => Ok(DEFAULT_MAX_DUPLICATES),
        Some(n) if n > MAX_DUPLICATES => Err(crate::Error::Input(format!(
            "max_duplicates {n} is more than {MAX_DUPLICATES}"
        ))),
        Some(n) => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_maxima() {
        assert_eq!(query_limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(query_limit(Some(0)).unwrap(), 0);
        assert_eq!(query_limit(Some(MAX_LIMIT)).unwrap(), MAX_LIMIT);
        assert!(matches!(
            query_limit(Some(MAX_LIMIT + 1)),
            Err(crate::Error::Input(_))
        ));
        assert_eq!(max_duplicates(None).unwrap(), DEFAULT_MAX_DUPLICATES);
        assert!(matches!(
            max_duplicates(Some(MAX_DUPLICATES + 1)),
            Err(crate::Error::Input(_))
        ));
        const { assert!(DEFAULT_MAX_DUPLICATES <= MAX_DUPLICATES) };
        const { assert!(CHECK_CONFIRMED <= CHECK_EXAMINED) };
        const { assert!(MAX_DUPLICATES <= CHECK_EXAMINED) };
        const { assert!(CHECK_EXAMINED <= QUERY_REJECTED) };
    }
}
