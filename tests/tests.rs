//! The integration tests as one binary (`autotests = false` in Cargo.toml,
//! as ripgrep does): each test binary links RocksDB, so one binary links it
//! once instead of once per file. Each file below is a module; run one with
//! `cargo test --release --test tests MODULE::` (e.g. `nightly::`).

mod common;

mod backup;
mod bands;
mod cli;
mod clusters;
mod crash;
mod decisions;
mod duplicates;
mod engine;
mod engine_check;
mod exactness;
#[cfg(feature = "parquet")]
mod export;
mod facts;
mod fuzz_corpus;
mod hardening;
mod hostile;
mod import;
mod ingest;
mod keep;
mod nightly;
mod parts;
mod quality;
#[cfg(feature = "parquet")]
mod ranges;
mod repair;
mod scale;
mod search;
mod server;
mod store;
mod texts;
mod web;
