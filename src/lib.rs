//! simdb: a persistent, on-disk near-duplicate detection database for text.
//!
//! Each document becomes a 64-bit Simhash [`Fingerprint`]. Two documents are
//! near-duplicates when their fingerprints differ in at most `k` bits
//! (k = 3 by default, up to 11). The store is RocksDB with four block column
//! families: a fingerprint's four 16-bit blocks, one per family, so that any
//! fingerprint within 3 bits shares at least one block with the query
//! (pigeonhole) and a query is four short prefix scans; larger k probes the
//! block values within 1 (k <= 7) or 2 (k <= 11) bits. Answers are exactly
//! what a brute-force scan over all fingerprints returns. Text queries are
//! then verified: each candidate's stored [`Sketch`] (a b-bit MinHash of
//! its character 4-grams) must agree with the query's at least
//! [`db::DEFAULT_MIN_SIMILARITY`] (see [`Query`]).
//!
//! ```no_run
//! use simdb::{Content, Db, QueryRequest, Recipe, Subject};
//!
//! # fn main() -> simdb::Result<()> {
//! let dir = std::env::temp_dir().join("simdb-doc-example");
//! let mut db = Db::options().create(&dir, Recipe::default())?;
//! db.put("a", Content::Text("国务院总理主持召开常务会议，部署扩大内需的政策措施。".into()))?;
//! // The default query: confidence-ranked probing, confirmed by the sketch,
//! // at most 10 hits (the options of `QueryRequest` change each default).
//! let text = "国务院总理主持召开常务会议，部署扩大内需的若干政策措施。";
//! let hits = db.answer(&QueryRequest::new(Subject::Text(text.into())))?.hits;
//! for h in hits {
//!     println!("{} at distance {}, similarity {:?}", h.id, h.distance, h.similarity);
//! }
//! # Ok(()) }
//! ```
//!
//! Modules: [`fingerprint`], [`index`], [`explain`], [`diff`] and [`plot`] are pure
//! (no RocksDB, no files); the private `store` module is the only one that
//! touches RocksDB (its record codec is public as [`codec`], its open
//! options as [`Access`] and [`Tuning`]; no RocksDB type is part of the
//! API); [`Db`] is the facade every front end is built on, with its
//! request model in [`db::request`] (queries, write options, answers) and
//! its writes in [`db::write`]; [`ingest`] reads inputs and runs the
//! pipelined ingest.
//!
//! # What goes where on [`Db`]
//!
//! A store is opened and created only through [`Db::options`] (the
//! [`db::DbOptions`] builder: access, tuning, a learned IDF or a keep
//! policy at creation). [`Db`] itself keeps what every caller needs, at
//! most 22 methods (`tests/facts.rs` counts them): searching (`search`,
//! `find`, `find_many`, `query`, `text_query`, `answer`, `answer_many`),
//! reading a document (`get`, `document`), writing (`put`, `delete`,
//! `writer`, `shared_writer`) and what the store is (`path`, `recipe`,
//! `fingerprinter`, `len`). Everything else is on a handle, by what it
//! needs:
//!
//! - [`Db::clusters`] ([`db::Clusters`]): the near copies the store
//!   found, read as clusters or as pairs, and settling clusters whose
//!   representative changed.
//! - [`Db::admin`] ([`db::Admin`]): figures, checks and upkeep through a
//!   shared `&Db` (stats, verify, calibrate, export, flush, the store's
//!   defaults and policy, how it was opened).
//! - [`Db::maintenance`] ([`db::Maintenance`]): upkeep that rewrites the
//!   store through the one writer, `&mut Db` (keep policy, expire,
//!   repair).
//! - [`db::backup`] and [`db::migrate`]: functions of a path, not of an
//!   open store.

#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod db;
pub mod diff;
pub mod error;
pub mod explain;
pub mod fingerprint;
#[doc(hidden)]
pub mod fuzz;
pub mod import;
pub mod index;
pub mod ingest;
pub mod plot;
#[cfg(feature = "server")]
pub mod server;
mod store;
pub mod web;

pub use db::{
    Answer, Content, Db, DbOptions, Found, Outcome, Query, QueryOptions, QueryRequest, Stats,
    Subject, WriteOptions, Writer,
};
pub use error::{Error, Result, StorageError};
pub use fingerprint::{simhash_weighted, Analysis, Fingerprint, Fingerprinter, Recipe, Sketch};
pub use index::Hit;
pub use store::{
    codec, Access, Reads, Record, Tuning, ALL_FAMILIES, FORMAT_VERSION, MIGRATABLE_FORMAT_VERSION,
};
