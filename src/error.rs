//! The one error type of the library.
//!
//! Three kinds are kept apart, as a user acts differently on each:
//! the caller's input was wrong ([`Error::Input`], [`Error::NoFeatures`],
//! [`Error::UnsupportedDistance`], [`Error::NotFound`]), the stored data is
//! corrupt or incompatible ([`Error::Corrupt`], [`Error::RecipeMismatch`],
//! [`Error::NewerFormat`], [`Error::OlderFormat`], [`Error::NeedsMigration`], [`Error::RepairInProgress`], [`Error::ClustersIncomplete`], [`Error::NotASimdbStore`]), or the system failed
//! ([`Error::Io`], [`Error::Storage`]).

use std::path::PathBuf;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in simdb.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text (or feature list) yields no usable feature after
    /// normalisation, segmentation and stop-word removal. Such a document has
    /// no fingerprint: an all-zero one would match every other empty text.
    #[error("the document has no usable features (empty, only punctuation or only stop words)")]
    NoFeatures,

    /// The caller asked for a Hamming distance the index cannot answer exactly.
    #[error(
        "k = {k} is not supported: the index is exact only for k <= {max} \
         (it probes block values within 2 bits of the query's four 16-bit blocks)"
    )]
    UnsupportedDistance { k: u32, max: u32 },

    /// Input given by the caller is malformed (a bad hex fingerprint, a bad id,
    /// a bad option value, …).
    #[error("invalid input: {0}")]
    Input(String),

    /// A document id that is not in the store.
    #[error("no document with id {id:?}")]
    NotFound { id: String },

    /// Long work (a calibration, a page of clusters in size or distance
    /// order) stopped between two of its steps because its caller asked
    /// ([`crate::db::Admin::until`], [`crate::db::Clusters::until`]): a
    /// service's deadline or stop. Nothing was written.
    #[error("stopped before it finished, as its caller asked")]
    Interrupted,

    /// Stored bytes failed their checksum or could not be decoded.
    #[error("corrupt data in column family '{family}' at key {key_hex}: {reason}")]
    Corrupt {
        family: &'static str,
        key_hex: String,
        reason: String,
    },

    /// The directory exists but is not a simdb store.
    #[error("{path}: not a simdb store ({reason})")]
    NotASimdbStore { path: PathBuf, reason: String },

    /// The store was written by a newer simdb.
    #[error(
        "{path}: store format version {found} is newer than this build supports \
         (version {supported}); upgrade simdb"
    )]
    NewerFormat {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    /// The store was written by an older simdb whose format this build no
    /// longer reads.
    #[error(
        "{path}: store format version {found} is older than this build reads \
         (version {supported} or newer); rebuild it with `simdb import` or `simdb ingest` \
         from the original input"
    )]
    OlderFormat {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    /// The store was written by an older simdb whose format this build
    /// converts in place with `simdb migrate`.
    #[error(
        "{path}: store format version {found} is older than this build reads \
         (version {supported}); run `simdb migrate {path}` once to convert it in place \
         (from format 12 under `first` it moves the member keys to the new ranks; from formats 9 \
         to 11 it also adds the new, empty families; from 7 and 8 it also rebuilds a \
         `newest` store's clusters; before format 7 it rebuilds the clusters, and before format 5 \
         the index, from the stored records)"
    )]
    NeedsMigration {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    /// A `verify --repair` was interrupted after it cleared the index:
    /// queries would miss documents until it runs again.
    #[error(
        "{path}: a repair was interrupted and the index is incomplete; \
         run `simdb verify --repair {path}` to finish it"
    )]
    RepairInProgress { path: PathBuf },

    /// A rebuild of the clusters (`migrate --keep`, a migration, a repair)
    /// was interrupted: some documents are in no cluster until it runs
    /// again.
    #[error(
        "{path}: a rebuild of the clusters (keep policy {keep}) was interrupted and the \
         clusters are incomplete; run `simdb migrate {path} --keep {keep}` to finish it"
    )]
    ClustersIncomplete { path: PathBuf, keep: String },

    /// The store's fingerprint recipe differs from what the caller asked for.
    #[error(
        "{path}: the store's fingerprint recipe differs from the requested one \
         ({field}: store has {stored}, requested {requested}); fingerprints would not be comparable"
    )]
    RecipeMismatch {
        path: PathBuf,
        field: String,
        stored: String,
        requested: String,
    },

    /// Another process holds the store open for writing.
    #[error(
        "{path}: store is in use by another writer (e.g. a running `simdb ingest`); \
         readers (query, get, stats, verify, backup) can still open it"
    )]
    InUse { path: PathBuf },

    /// `create` was asked for a directory that already holds something.
    #[error("{path}: already exists; refusing to create a store over it")]
    AlreadyExists { path: PathBuf },

    /// The store directory does not exist.
    #[error("{path}: no such store (create it with `simdb init`)")]
    NoSuchStore { path: PathBuf },

    /// An I/O error, with the path it concerns.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The service could not start (the address is taken, the runtime
    /// could not be built).
    #[error("cannot serve on {addr}")]
    Serve {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    /// An error reported by the storage engine (RocksDB).
    #[error("storage engine: {0}")]
    Storage(StorageError),

    /// A batch of an ingest could not be written (disk full, I/O error).
    /// The batches before it are stored; the store stays consistent.
    #[error(
        "writing the batch of documents ending at {at} failed; the batches before it are \
         stored, and re-running the same ingest resumes (documents already stored are unchanged)"
    )]
    BatchWrite {
        at: String,
        #[source]
        source: Box<Error>,
    },
}

/// An error of the storage engine, as its message (RocksDB's own error type
/// is not part of simdb's API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageError {
    message: String,
}

impl StorageError {
    /// The engine's message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StorageError {}

impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Error {
        Error::Storage(StorageError {
            message: e.into_string(),
        })
    }
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(family: &'static str, key: &[u8], reason: impl Into<String>) -> Self {
        Error::Corrupt {
            family,
            key_hex: hex(key),
            reason: reason.into(),
        }
    }
}

/// Lower-case hex of bytes, for error messages.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}
