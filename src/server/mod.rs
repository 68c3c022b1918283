//! `simdb serve`: a store as a long-running HTTP service (axum on tokio).
//!
//! The service holds the store's one writer and the fingerprinter
//! (dictionary loaded once). Queries run on the runtime's workers against
//! one consistent view of the store each and never wait for a write;
//! writes are read whole (bounded in size and time) and fingerprinted
//! before they take the writer, so a slow client cannot hold it, and each
//! request's documents are written in one atomic batch, in the write-ahead
//! log before the answer (fsynced with `?sync=true`).
//!
//! | endpoint | does |
//! |---|---|
//! | `POST /documents` | insert or replace one document or an array of them; each answer has the document's outcome and near-duplicates |
//! | `POST /documents/check` | insert-if-new: a document with a near-duplicate (stored, or earlier in the request) is not written |
//! | `GET /documents/{id}` | the document and its cluster (`simdb get --json`) |
//! | `DELETE /documents/{id}` | delete it |
//! | `POST /query` | a query by text, fingerprint or id (`simdb query --json`), or `{"queries": [...]}` |
//! | `GET /stats` | `simdb stats --json` |
//! | `GET /health` | liveness and the document count |
//! | `GET /metrics` | Prometheus metrics (see [`metrics`]) |
//!
//! Errors are `{"error": "...", "field": "..."}` with a 4xx status for the
//! client's mistakes (the field, when one is at fault) and 5xx for the
//! server's.

pub mod api;
mod body;
mod error;
mod guard;
mod listen;
pub mod metrics;
mod page;
mod routes;
mod slot;
mod turns;

use body::*;
use error::*;
use guard::*;
pub use listen::{Descriptors, RESERVED_DESCRIPTORS};
pub use routes::STATS_REFRESH;
use routes::*;
pub use slot::REOPEN_AFTER;
use slot::*;
pub use turns::LONG_READ_WAIT;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, RawQuery, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use crate::db::write::{Doc, DuplicatePolicy, WritePolicy};
use crate::db::{self, Db};
use crate::error::{Error, Result};
use api::BadRequest;
use db::{QueryRequest, Subject};
use metrics::Metrics;

/// How often a replica (`serve --read-only`) looks for a writer's new
/// commits unless told otherwise: a document the writer committed is
/// answered by the replica within this, plus the time to open the store.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(2);

/// The address the service binds to unless told otherwise (loopback).
pub const DEFAULT_ADDR: &str = "127.0.0.1:7420";

/// How a service runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen. Off the loopback interface only with a token.
    pub addr: SocketAddr,
    /// Worker threads of the runtime, and threads fingerprinting writes.
    pub threads: usize,
    /// The bearer tokens a request may carry (one of them: every request
    /// must, when there is any), each with the name the decision log
    /// records for its holder ([`read_tokens`]).
    pub tokens: Vec<Token>,
    /// The largest request body accepted (413 above it).
    pub max_body_bytes: usize,
    /// How long a client may take to send its request body (408 after).
    pub body_timeout: Duration,
    /// The most documents or queries in one request.
    pub max_batch: usize,
    /// The most hits one request may answer: the sum of its queries'
    /// limits, or its documents times the duplicates each lists. A request
    /// that could answer more is refused (400) before any work.
    pub max_hits: usize,
    /// The most connections served at once (fewer if the descriptor
    /// limit demands it, see [`Descriptors`]); a client beyond gets 503.
    pub max_connections: usize,
    /// How long a connection may take to send a request's head, and may
    /// stay idle between requests, before it is closed.
    pub header_timeout: Duration,
    /// How long a stop waits for requests in flight before it drops the
    /// connections that remain.
    pub shutdown_grace: Duration,
    /// The request bodies held at once, in bytes (a body counts its
    /// announced length, or the body limit when it announces none); a
    /// request that cannot get its share within the body timeout gets 503.
    pub max_inflight_body_bytes: usize,
    /// Host names a client may address the service by without a token,
    /// besides loopback names and addresses (`localhost`, `127.0.0.1`,
    /// `[::1]`) and the address it listens on. Also the origins a
    /// browser request may come from (as `http://NAME[:PORT]`).
    pub allowed_hosts: Vec<String>,
    /// A replica (`serve --read-only`): the store is served read-only,
    /// writes are refused (405), and the store is opened again whenever
    /// its files changed (a writer in another process committed), looked
    /// at every `refresh`.
    pub read_only: bool,
    /// How often a replica looks for a writer's new commits.
    pub refresh: Duration,
    /// The most long reads (calibrations, page scans of every cluster,
    /// diffs, page queries, query batches of more than one step) served
    /// at once; one more waits up to [`LONG_READ_WAIT`], then gets 503
    /// (see `turns`).
    pub max_long_reads: usize,
    /// How long a calibration or a page scan of every cluster may run
    /// before it is stopped (503).
    pub long_read_timeout: Duration,
}

impl Config {
    /// Defaults: loopback port 7420, a thread per core, no token, 64 MiB
    /// bodies sent within 30 s, batches of up to 10,000, answers of up to
    /// [`db::limits::DEFAULT_MAX_REQUEST_HITS`] hits, 1,024 connections,
    /// request heads within 10 s (and 10 s idle between requests), 10 s of
    /// grace at a stop, 256 MiB of bodies in flight, a long read per two
    /// threads (at least one) stopped after 60 s.
    pub fn new(addr: SocketAddr) -> Config {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        Config {
            addr,
            threads,
            tokens: Vec::new(),
            max_body_bytes: 64 << 20,
            body_timeout: Duration::from_secs(30),
            max_batch: 10_000,
            max_hits: db::limits::DEFAULT_MAX_REQUEST_HITS,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
            max_inflight_body_bytes: 256 << 20,
            allowed_hosts: Vec::new(),
            read_only: false,
            refresh: DEFAULT_REFRESH,
            max_long_reads: default_long_reads(threads),
            long_read_timeout: Duration::from_secs(60),
        }
    }

    /// Refuses a configuration that would expose the store: an address
    /// off the loopback interface without a token.
    pub fn check(&self) -> Result<()> {
        if !self.addr.ip().is_loopback() && self.tokens.is_empty() {
            return Err(Error::Input(format!(
                "{} is not a loopback address: serving there needs a bearer token \
                 (--token-file FILE); anyone who can reach the port could otherwise \
                 read and delete documents",
                self.addr
            )));
        }
        if self.threads == 0 {
            return Err(Error::Input("--threads must be at least 1".into()));
        }
        if self.read_only && self.refresh.is_zero() {
            return Err(Error::Input("--refresh must be at least 1 second".into()));
        }
        if self.max_batch == 0 || self.max_body_bytes == 0 || self.max_hits == 0 {
            return Err(Error::Input(
                "the batch, body and hit limits must be at least 1".into(),
            ));
        }
        if self.max_connections == 0 || self.header_timeout.is_zero() {
            return Err(Error::Input(
                "--max-connections and --header-timeout must be at least 1".into(),
            ));
        }
        if self.max_long_reads == 0 || self.long_read_timeout.is_zero() {
            return Err(Error::Input(
                "--max-long-reads and --long-read-timeout must be at least 1".into(),
            ));
        }
        if self.max_inflight_body_bytes < self.max_body_bytes {
            return Err(Error::Input(format!(
                "--max-inflight-mb ({} MiB) must be at least --max-body-mb ({} MiB)",
                self.max_inflight_body_bytes >> 20,
                self.max_body_bytes >> 20
            )));
        }
        Ok(())
    }
}

/// The long reads served at once by default: one per two threads, at
/// least one, so the other threads keep writes and queries going.
pub fn default_long_reads(threads: usize) -> usize {
    (threads / 2).max(1)
}

/// A bearer token, and who holds it: the name the decision log records
/// for the decisions made with it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub name: String,
    pub secret: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({:?}, <secret>)", self.name)
    }
}

/// The name of a token given without one.
pub const UNNAMED_TOKEN: &str = "api";

/// The tokens of a token file: one a line, `SECRET` (named
/// [`UNNAMED_TOKEN`]) or `NAME SECRET`; blank lines and lines beginning
/// with `#` are skipped. A secret is at least 16 visible ASCII characters;
/// a name is 1 to 64 letters, digits, `-`, `_`, `.` or `@`. At least one
/// token, and no secret twice.
pub fn read_tokens(path: &Path) -> Result<Vec<Token>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let bad = |line: usize, what: &str| {
        Error::Input(format!(
            "{}:{line}: {what}; a line is a token, or a name and a token (a token is at least 16 \
             visible ASCII characters, e.g. `openssl rand -hex 32 > {}`)",
            path.display(),
            path.display()
        ))
    };
    let mut out: Vec<Token> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (name, secret) = match fields.as_slice() {
            [secret] => (UNNAMED_TOKEN, *secret),
            [name, secret] => (*name, *secret),
            _ => return Err(bad(i + 1, "more than a name and a token")),
        };
        let name_ok = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
        if !name_ok {
            return Err(bad(
                i + 1,
                "the name is not 1 to 64 letters, digits, -, _, . or @",
            ));
        }
        if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad(
                i + 1,
                "the token must be at least 16 visible ASCII characters",
            ));
        }
        if out.iter().any(|t| t.secret == secret) {
            return Err(bad(i + 1, "this token is on an earlier line too"));
        }
        out.push(Token {
            name: name.to_string(),
            secret: secret.to_string(),
        });
    }
    if out.is_empty() {
        return Err(bad(1, "no token"));
    }
    Ok(out)
}

/// Serves `db` until SIGINT or SIGTERM; `on_ready` is told the address
/// once it listens (port 0 in the configuration picks a free one).
///
/// On a signal the service stops accepting connections, answers the
/// requests in flight for at most [`Config::shutdown_grace`] (then drops
/// the connections left), lets every write already started commit,
/// flushes the memtables and returns. See `listen` for the connection
/// cap and timers; open the store with [`Descriptors::store_files`] as
/// its `max_open_files` so that connections cannot starve it of
/// descriptors.
pub fn serve(mut db: Db, config: Config, on_ready: impl FnOnce(SocketAddr)) -> Result<()> {
    config.check()?;
    let descriptors = Descriptors::of_process(config.max_connections)?;
    if config.read_only && db.admin().access() != crate::Access::ReadOnly {
        return Err(Error::Input(
            "a read-only service (a replica) serves a store opened read-only".into(),
        ));
    }
    // Concurrent requests keep the cores busy: a query stays on its thread.
    db.set_parallel_queries(false);
    let addr = config.addr;
    let fail = |source: std::io::Error| Error::Serve {
        addr: addr.to_string(),
        source,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .max_blocking_threads(4 * config.threads + 8)
        .thread_name("simdb-serve")
        .enable_all()
        .build()
        .map_err(fail)?;
    let (pool, long_pool) = pools(&config).map_err(fail)?;
    db.fingerprinter().warm_up();
    let app = App::new(db, config, pool, long_pool);
    let follower = app
        .config
        .read_only
        .then(|| follow(app.clone()))
        .transpose()
        .map_err(fail)?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(fail)?;
        // Re-checks a killed service left under way go on now, not only at
        // the next write (review-2026-11-c, finding 14).
        if !app.config.read_only {
            app.settle_in_background();
        }
        on_ready(listener.local_addr().map_err(fail)?);
        let events: Arc<dyn listen::ConnectionEvents> = app.clone();
        listen::run(
            listener,
            router(app.clone()),
            &app.config,
            descriptors.connections,
            events,
            {
                let app = app.clone();
                async move {
                    shutdown_signal().await;
                    app.stopping
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
            },
        )
        .await
    });
    // Waits for blocking tasks: a write whose client went away still
    // commits before the memtables are flushed.
    drop(runtime);
    app.slot.stop();
    if let Some(f) = follower {
        let _ = f.join();
    }
    if let Some(db) = app.slot.current() {
        if db.access() == crate::Access::ReadWrite {
            db.flush()?;
        }
    }
    served
}

/// The threads that fingerprint writes, and those parallel long reads run
/// on, one per turn: a calibration's parallel sample must not queue the
/// queries' work behind its own on the global pool (see `turns`).
fn pools(config: &Config) -> std::io::Result<(rayon::ThreadPool, rayon::ThreadPool)> {
    let pool = |n: usize, name: &'static str| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(move |i| format!("simdb-{name}-{i}"))
            .build()
            .map_err(std::io::Error::other)
    };
    Ok((
        pool(config.threads, "analyse")?,
        pool(config.max_long_reads, "long")?,
    ))
}

impl App {
    /// What the handlers share, for `db` served under `config`.
    fn new(
        db: Db,
        config: Config,
        pool: rayon::ThreadPool,
        long_pool: rayon::ThreadPool,
    ) -> Arc<App> {
        let bodies = Arc::new(tokio::sync::Semaphore::new(kib(
            config.max_inflight_body_bytes
        )));
        let long_reads = Arc::new(tokio::sync::Semaphore::new(config.max_long_reads));
        Arc::new(App {
            long_reads,
            long_pool,
            slot: Slot::new(db),
            config,
            metrics: Metrics::default(),
            pool,
            bodies,
            storage_failure: std::sync::Mutex::new(None),
            settling: std::sync::atomic::AtomicBool::new(false),
            stopping: std::sync::atomic::AtomicBool::new(false),
            stats_cache: std::sync::Mutex::new(None),
            calibration_cache: std::sync::Mutex::new(None),
        })
    }
}

/// `bytes` in KiB, rounded up, as semaphore permits.
fn kib(bytes: usize) -> usize {
    bytes
        .div_ceil(1024)
        .min(tokio::sync::Semaphore::MAX_PERMITS)
}

impl listen::ConnectionEvents for App {
    fn refused(&self) {
        self.metrics.connection_refused();
    }

    fn open(&self, delta: i64) {
        self.metrics.connections_open(delta);
    }
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// What the handlers share.
struct App {
    /// The store (see [`Slot`]).
    slot: Slot,
    config: Config,
    metrics: Metrics,
    /// Fingerprints write requests (the global rayon pool serves queries).
    pool: rayon::ThreadPool,
    /// Request bodies in flight, in KiB ([`Config::max_inflight_body_bytes`]).
    bodies: Arc<tokio::sync::Semaphore>,
    /// The long reads' turns ([`Config::max_long_reads`]).
    long_reads: Arc<tokio::sync::Semaphore>,
    /// The threads parallel long reads (a calibration) run on, one per
    /// turn, apart from the global pool the queries use.
    long_pool: rayon::ThreadPool,
    /// The storage error of the latest write, if it failed on the server's
    /// side (cleared by the next write that succeeds): `/health` reports it.
    storage_failure: std::sync::Mutex<Option<String>>,
    /// `/stats`' answer and when it was computed.
    stats_cache: std::sync::Mutex<Option<(Instant, Value)>>,
    /// `/calibration`'s latest answer: when, for which parameters.
    calibration_cache: std::sync::Mutex<Option<(Instant, String, Value)>>,
    /// Whether a task runs the clusters' re-checks (see
    /// [`App::settle_in_background`]).
    settling: std::sync::atomic::AtomicBool,
    /// Set when a stop (SIGTERM, SIGINT) begins: long work (query batches,
    /// the clusters' re-checks) stops at its next step.
    stopping: std::sync::atomic::AtomicBool,
}

type Shared = Arc<App>;

fn router(app: Shared) -> Router {
    Router::new()
        .route("/documents", post(put_documents))
        // The route of the id "check" too (the static route wins).
        .route(
            "/documents/check",
            post(check_documents)
                .get(|s: State<Shared>| get_document(s, "check".to_string()))
                .delete(|s: State<Shared>, q: RawQuery| delete_document(s, q, "check".to_string())),
        )
        .route(
            "/documents/{*id}",
            get(|s: State<Shared>, id: Id| get_document(s, id.0))
                .delete(|s: State<Shared>, q: RawQuery, id: Id| delete_document(s, q, id.0)),
        )
        .route("/query", post(query))
        .route("/clusters", get(list_clusters))
        .route("/cluster", get(cluster))
        .route("/diff", get(diff))
        .route("/decisions", get(decisions).post(decide))
        .route("/calibration", get(calibration))
        .route("/", get(|| async { page::file("/") }))
        .route("/app.js", get(|| async { page::file("/app.js") }))
        .route("/app.css", get(|| async { page::file("/app.css") }))
        .route("/stats", get(stats))
        .route("/freeze", post(freeze))
        .route("/health", get(health))
        .route("/metrics", get(metrics_text))
        .route_layer(middleware::from_fn(tag_endpoint))
        .fallback(|req: Request| async move {
            ApiError::new(
                StatusCode::NOT_FOUND,
                None,
                format!("no such endpoint: {} {}", req.method(), req.uri().path()),
            )
        })
        .method_not_allowed_fallback(|req: Request| async move {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                format!("{} is not allowed on {}", req.method(), req.uri().path()),
            )
        })
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .layer(middleware::from_fn_with_state(app.clone(), measure))
        .with_state(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24 (review finding 12): a 500 answer carries no server path.
    #[test]
    fn server_errors_lose_their_paths() {
        let m = "storage engine: IO error: While open a file for appending: \
                 /srv/data/review-emfile.db/000013.sst: Too many open files";
        assert_eq!(
            without_paths(m),
            "storage engine: IO error: While open a file for appending: 000013.sst: Too many open files"
        );
        assert_eq!(without_paths("a/b and /x"), "a/b and /x");
        let e = ApiError::from(Error::io(
            std::path::Path::new("/very/secret/place/x.db"),
            std::io::Error::other("boom"),
        ));
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!e.message.contains("/very/secret"), "{}", e.message);
    }

    #[test]
    fn bearer_scheme_in_any_case_and_host_names() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer  abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"BEARER abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer"), None);
        assert_eq!(host_name("LocalHost:7420").as_deref(), Some("localhost"));
        assert_eq!(host_name("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(host_name("example.com.").as_deref(), Some("example.com"));
        assert_eq!(host_name("a:b:c"), None);
        assert_eq!(host_name("[::1]x"), None);
    }
}
