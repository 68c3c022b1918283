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
mod listen;
pub mod metrics;

pub use listen::{Descriptors, RESERVED_DESCRIPTORS};

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

/// The address the service binds to unless told otherwise (loopback).
pub const DEFAULT_ADDR: &str = "127.0.0.1:7420";

/// How a service runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen. Off the loopback interface only with a token.
    pub addr: SocketAddr,
    /// Worker threads of the runtime, and threads fingerprinting writes.
    pub threads: usize,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
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
}

impl Config {
    /// Defaults: loopback port 7420, a thread per core, no token, 64 MiB
    /// bodies sent within 30 s, batches of up to 10,000, answers of up to
    /// [`db::limits::DEFAULT_MAX_REQUEST_HITS`] hits, 1,024 connections,
    /// request heads within 10 s (and 10 s idle between requests), 10 s of
    /// grace at a stop, 256 MiB of bodies in flight.
    pub fn new(addr: SocketAddr) -> Config {
        Config {
            addr,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            token: None,
            max_body_bytes: 64 << 20,
            body_timeout: Duration::from_secs(30),
            max_batch: 10_000,
            max_hits: db::limits::DEFAULT_MAX_REQUEST_HITS,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
            max_inflight_body_bytes: 256 << 20,
            allowed_hosts: Vec::new(),
        }
    }

    /// Refuses a configuration that would expose the store: an address
    /// off the loopback interface without a token.
    pub fn check(&self) -> Result<()> {
        if !self.addr.ip().is_loopback() && self.token.is_none() {
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

/// Reads a bearer token from `path`: its first line, trimmed; it must be
/// at least 16 visible ASCII characters.
pub fn read_token(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::Input(format!(
            "{}: the token must be at least 16 visible ASCII characters on the first line \
             (e.g. `openssl rand -hex 32 > {}`)",
            path.display(),
            path.display()
        )));
    }
    Ok(token)
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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .thread_name(|i| format!("simdb-analyse-{i}"))
        .build()
        .map_err(|e| fail(std::io::Error::other(e)))?;
    db.fingerprinter().warm_up();
    let bodies = Arc::new(tokio::sync::Semaphore::new(kib(
        config.max_inflight_body_bytes
    )));
    let app = Arc::new(App {
        slot: Slot::new(db),
        config,
        metrics: Metrics::default(),
        pool,
        bodies,
        storage_failure: std::sync::Mutex::new(None),
        settling: std::sync::atomic::AtomicBool::new(false),
        stopping: std::sync::atomic::AtomicBool::new(false),
        stats_cache: std::sync::Mutex::new(None),
    });
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(fail)?;
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
    if let Some(db) = app.slot.current() {
        if db.access() == crate::Access::ReadWrite {
            db.flush()?;
        }
    }
    served
}

/// `bytes` in KiB, rounded up, as semaphore permits.
fn kib(bytes: usize) -> usize {
    bytes
        .div_ceil(1024)
        .min(tokio::sync::Semaphore::MAX_PERMITS)
}

/// How long writes must keep failing with a storage error before the
/// store is reopened (RocksDB retries retryable errors itself meanwhile),
/// and the pause between attempts.
pub const REOPEN_AFTER: Duration = Duration::from_secs(5);

/// The served store. When writes have failed on the storage's side for
/// [`REOPEN_AFTER`] with none succeeding (RocksDB retries retryable errors
/// itself meanwhile; after a hard one, such as a failed flush, it refuses
/// writes until it is reopened: its `Resume` is not in the C API), the
/// store is closed, once the requests using it have ended, and opened
/// again (replaying its write-ahead log: nothing
/// acknowledged is lost). While it cannot be opened for writing it is
/// opened read-only (queries go on, writes get 503), and opening for
/// writing is tried again every [`REOPEN_AFTER`]. Meanwhile `/health`
/// answers 503.
struct Slot {
    db: std::sync::RwLock<Option<Arc<Db>>>,
    path: std::path::PathBuf,
    tuning: crate::Tuning,
    state: std::sync::Mutex<Recovery>,
    /// Set when the service stops: no more reopening.
    stopping: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Recovery {
    /// The first write failure since the last success.
    failing_since: Option<Instant>,
    /// A recovery thread is running.
    running: bool,
}

impl Slot {
    fn new(db: Db) -> Slot {
        Slot {
            path: db.path().to_path_buf(),
            tuning: db.tuning(),
            db: std::sync::RwLock::new(Some(Arc::new(db))),
            state: Default::default(),
            stopping: Default::default(),
        }
    }

    fn current(&self) -> Option<Arc<Db>> {
        self.db
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// How the store is opened again after a storage error: as `serve`
    /// had it, each query on its own thread.
    fn options(&self) -> crate::db::DbOptions {
        Db::options().tuning(self.tuning).parallel_queries(false)
    }

    fn set(&self, db: Option<Arc<Db>>) {
        *self
            .db
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = db;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Recovery> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn healthy(&self) {
        self.state().failing_since = None;
    }

    fn stop(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Wait for a recovery in progress to end.
        while self.state().running {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A write failed on the server's side: start a recovery if writes
    /// have failed (and none succeeded) for [`REOPEN_AFTER`].
    fn failed(&self, app: &Arc<App>) {
        let mut st = self.state();
        let since = *st.failing_since.get_or_insert_with(Instant::now);
        if st.running || since.elapsed() < REOPEN_AFTER {
            return;
        }
        st.running = true;
        drop(st);
        let recovering = Arc::clone(app);
        if let Err(e) = std::thread::Builder::new()
            .name("simdb-reopen".into())
            .spawn(move || recovering.slot.reopen(&recovering))
        {
            eprintln!("simdb: cannot start the store's recovery: {e}");
            self.state().running = false;
        }
    }

    /// Closes the store and opens it again, as the type says.
    fn reopen(&self, app: &App) {
        use std::sync::atomic::Ordering;
        let note = |failure: Option<String>| {
            *app.storage_failure
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = failure;
        };
        while !self.stopping.load(Ordering::SeqCst) {
            if let Some(old) = self.current() {
                self.set(None);
                // Requests that hold the old handle end first (bounded: a
                // write holds it for a chunk, a query for its answer).
                let deadline = Instant::now() + Duration::from_secs(60);
                while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if Arc::strong_count(&old) > 1 {
                    eprintln!("simdb: the store is still in use after 60 s; trying again later");
                    self.set(Some(old));
                    std::thread::sleep(REOPEN_AFTER);
                    continue;
                }
                drop(old);
            }
            match self.options().open(&self.path) {
                Ok(db) => {
                    self.set(Some(Arc::new(db)));
                    note(None);
                    eprintln!("simdb: reopened the store after a storage error; writes go on");
                    break;
                }
                Err(e) => {
                    eprintln!(
                        "simdb: cannot reopen the store for writing ({e}); serving it read-only \
                         meanwhile, trying again in {} s",
                        REOPEN_AFTER.as_secs()
                    );
                    note(Some(format!(
                        "the store cannot be opened for writing: {}",
                        without_paths(&e.to_string())
                    )));
                    match self.options().read_only().open(&self.path) {
                        Ok(db) => {
                            self.set(Some(Arc::new(db)));
                        }
                        Err(e) => eprintln!("simdb: cannot open the store read-only either: {e}"),
                    }
                    std::thread::sleep(REOPEN_AFTER);
                }
            }
        }
        let mut st = self.state();
        st.running = false;
        st.failing_since = None;
    }
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
    /// The storage error of the latest write, if it failed on the server's
    /// side (cleared by the next write that succeeds): `/health` reports it.
    storage_failure: std::sync::Mutex<Option<String>>,
    /// `/stats`' answer and when it was computed.
    stats_cache: std::sync::Mutex<Option<(Instant, Value)>>,
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
        .route("/stats", get(stats))
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

/// The document id of a `/documents/{id}` path, percent-decoded.
struct Id(String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> std::result::Result<Id, ApiError> {
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, Some("id"), e.body_text()))?;
        Ok(Id(id))
    }
}

/// The route a request matched, for the metrics.
#[derive(Clone)]
struct Endpoint(String);

async fn tag_endpoint(req: Request, next: Next) -> Response {
    let endpoint = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().replace("{*id}", "{id}"));
    let mut resp = next.run(req).await;
    if let Some(e) = endpoint {
        resp.extensions_mut().insert(Endpoint(e));
    }
    resp
}

async fn measure(State(app): State<Shared>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = match req.method().as_str() {
        m @ ("GET" | "POST" | "DELETE" | "PUT" | "HEAD") => m.to_string(),
        _ => "other".to_string(),
    };
    let resp = next.run(req).await;
    let endpoint = resp
        .extensions()
        .get::<Endpoint>()
        .map_or("unmatched", |e| e.0.as_str());
    app.metrics
        .request(endpoint, &method, resp.status().as_u16(), start.elapsed());
    resp
}

/// Refuses, before routing: a request without the token (when there is
/// one); without a token, a request addressed to a `Host` that is not a
/// loopback name or address, the bound address or an allowed host (DNS
/// rebinding); a request from a browser page of a foreign `Origin`
/// (cross-site writes); a `POST` whose body is not `application/json`
/// (which browsers cannot send across sites without a preflight, never
/// granted here).
async fn authorize(State(app): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(token) = &app.config.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer(v.as_bytes()));
        if !given.is_some_and(|g| same_secret(g, token.as_bytes())) {
            let mut resp = ApiError::new(
                StatusCode::UNAUTHORIZED,
                None,
                "missing or wrong bearer token (send `Authorization: Bearer TOKEN`)",
            )
            .into_response();
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    } else if let Some(host) = req.headers().get(header::HOST) {
        let allowed = host
            .to_str()
            .ok()
            .and_then(host_name)
            .is_some_and(|h| app.allowed_host(&h));
        if !allowed {
            app.metrics.refused("host");
            return ApiError::new(
                StatusCode::FORBIDDEN,
                None,
                format!(
                    "the Host {:?} is not this service's: without a token it answers only to \
                     localhost, loopback addresses, its own address and --allow-host names",
                    String::from_utf8_lossy(host.as_bytes())
                ),
            )
            .into_response();
        }
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
            .and_then(|(_, rest)| host_name(rest))
            .is_some_and(|h| app.allowed_host(&h));
        if !allowed {
            app.metrics.refused("origin");
            return ApiError::new(
                StatusCode::FORBIDDEN,
                None,
                format!(
                    "requests from the browser origin {:?} are refused (add its host with \
                     --allow-host to accept it)",
                    String::from_utf8_lossy(origin.as_bytes())
                ),
            )
            .into_response();
        }
    }
    if req.method() == axum::http::Method::POST && !is_json(req.headers()) {
        app.metrics.refused("content_type");
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            "a request body must be sent as `Content-Type: application/json`",
        )
        .into_response();
    }
    next.run(req).await
}

/// The token of an `Authorization` value of the Bearer scheme (its name
/// in any case, RFC 7235).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let space = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some(&rest[start..])
}

/// Whether the body is declared `application/json` (parameters such as
/// `charset` allowed).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// The host of a `Host` value or of an origin's authority (`name`,
/// `name:port`, `[v6]:port`), lower-case, without a trailing dot.
fn host_name(authority: &str) -> Option<String> {
    let a = authority.trim();
    let host = if let Some(rest) = a.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        inside
    } else {
        match a.rsplit_once(':') {
            Some((h, port)) if is_port(port) => h,
            Some(_) => return None,
            None => a,
        }
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

impl App {
    /// Whether `host` (from [`host_name`]) names this service: a loopback
    /// name or address, the address it listens on, or an allowed host.
    fn allowed_host(&self, host: &str) -> bool {
        if host == "localhost" || host.ends_with(".localhost") {
            return true;
        }
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            return ip.is_loopback() || ip == self.config.addr.ip();
        }
        self.config
            .allowed_hosts
            .iter()
            .any(|a| a.trim_end_matches('.').eq_ignore_ascii_case(host))
    }
}

/// Compares two secrets in time that depends on their length only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An answer that is not a success: its status and `{"error", "field"}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    field: Option<String>,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut v = json!({ "error": self.message });
        if let Some(f) = self.field {
            v["field"] = json!(f);
        }
        (self.status, axum::Json(v)).into_response()
    }
}

impl From<BadRequest> for ApiError {
    fn from(b: BadRequest) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            field: b.field,
            message: b.message,
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match &e {
            Error::Input(_) | Error::UnsupportedDistance { .. } => StatusCode::BAD_REQUEST,
            Error::NotFound { .. } => StatusCode::NOT_FOUND,
            Error::NoFeatures => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let field = match &e {
            Error::UnsupportedDistance { .. } => Some("k".to_string()),
            _ => None,
        };
        // The whole chain: the causes are part of the message.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            let s_text = s.to_string();
            if !message.contains(&s_text) {
                message = format!("{message}: {s_text}");
            }
            source = s.source();
        }
        if status.is_server_error() {
            // The server's log has the whole message; the client gets it
            // without the server's file paths.
            eprintln!("simdb: answered {}: {message}", status.as_u16());
            message = without_paths(&message);
        }
        ApiError {
            status,
            field,
            message,
        }
    }
}

/// `message` with every absolute path (a word that starts with `/`)
/// replaced by its last component: "…: /srv/a.db/000013.sst: Too many…"
/// becomes "…: 000013.sst: Too many…".
fn without_paths(message: &str) -> String {
    message
        .split(' ')
        .map(|w| match w.strip_prefix('/') {
            Some(rest) if rest.contains('/') => {
                let end = rest.trim_end_matches([':', ',', ';', ')', '"', '\'']);
                let tail = &rest[end.len()..];
                let last = end.rsplit('/').find(|c| !c.is_empty()).unwrap_or("");
                format!("{last}{tail}")
            }
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

type Answer = std::result::Result<Response, ApiError>;

fn json_answer(v: Value) -> Answer {
    Ok(axum::Json(v).into_response())
}

/// Runs `f` on the blocking pool (writes, batches, whole-store reads).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::result::Result<T, ApiError> + Send + 'static,
) -> std::result::Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            format!("the request's task failed: {e}"),
        )
    })?
}

/// Memory a request's body holds while it is answered (see
/// [`Config::max_inflight_body_bytes`]).
type BodyShare = tokio::sync::OwnedSemaphorePermit;

/// The whole request body, within the size and time limits, with its
/// share of the bodies in flight (kept until the answer is built).
async fn read_body(app: &App, body: Body) -> std::result::Result<(Bytes, BodyShare), ApiError> {
    let limit = app.config.max_body_bytes;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            format!("the request body is larger than {limit} bytes (the server's --max-body-mb)"),
        )
    };
    let timeout = app.config.body_timeout;
    let late = || {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            None,
            format!(
                "the request body did not arrive within {} s",
                timeout.as_secs()
            ),
        )
    };
    let busy = || {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            format!(
                "the server holds its most request bodies ({} MiB, --max-inflight-mb); try again shortly",
                app.config.max_inflight_body_bytes >> 20
            ),
        )
    };
    // A body announced too large is refused before it is read.
    let hint = axum::body::HttpBody::size_hint(&body);
    let Some(announced) = usize::try_from(hint.lower()).ok().filter(|n| *n <= limit) else {
        return Err(too_large());
    };
    let deadline = tokio::time::Instant::now() + timeout;
    // Its share of the bodies in flight grows with the bytes received, a
    // frame at a time (a KiB at least): a client that announces much and
    // sends little, or stalls, holds what it sent, not what it announced
    // (review 2026-11-b, finding 7), until it is done or past its time.
    let reserve = |share: &mut Option<BodyShare>, bytes: usize| {
        let want = u32::try_from(kib(bytes.max(1))).unwrap_or(u32::MAX);
        let held = share.as_ref().map_or(0, |s| s.num_permits() as u32);
        let more = want.saturating_sub(held);
        let sem = app.bodies.clone();
        async move {
            match more {
                0 => Ok(None),
                n => tokio::time::timeout_at(deadline, sem.acquire_many_owned(n))
                    .await
                    .map_err(|_| ())
                    .and_then(|r| r.map_err(|_| ()))
                    .map(Some),
            }
        }
    };
    let mut share: Option<BodyShare> = None;
    let mut buf: Vec<u8> = Vec::with_capacity(announced.min(1 << 20));
    let mut body = body;
    loop {
        use http_body_util::BodyExt;
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(late()),
            Ok(None) => break,
            Ok(Some(Err(e))) if is_length_limit(&e) => return Err(too_large()),
            Ok(Some(Err(e))) => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    None,
                    format!("cannot read the request body: {e}"),
                ))
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if buf.len() + data.len() > limit {
            return Err(too_large());
        }
        match reserve(&mut share, buf.len() + data.len()).await {
            Ok(Some(p)) => match share.as_mut() {
                Some(s) => s.merge(p),
                None => share = Some(p),
            },
            Ok(None) => {}
            Err(()) => return Err(busy()),
        }
        buf.extend_from_slice(&data);
    }
    let share = match share {
        Some(s) => s,
        None => match reserve(&mut None, 0).await {
            Ok(Some(p)) => p,
            _ => return Err(busy()),
        },
    };
    Ok((Bytes::from(buf), share))
}

/// Parses `bytes` with `parse`: on the runtime's worker when the body is
/// small, on the blocking pool when it is not (a large body must not hold
/// a worker that other clients' requests need).
async fn parse_body<T: Send + 'static>(
    bytes: Bytes,
    parse: impl FnOnce(&[u8]) -> std::result::Result<T, BadRequest> + Send + 'static,
) -> std::result::Result<T, ApiError> {
    if bytes.len() <= INLINE_BODY {
        return parse(&bytes).map_err(ApiError::from);
    }
    blocking(move || parse(&bytes).map_err(ApiError::from)).await
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        next = err.source();
    }
    false
}

async fn put_documents(State(app): State<Shared>, RawQuery(q): RawQuery, body: Body) -> Answer {
    write_documents(app, q, body, DuplicatePolicy::IndexAll).await
}

async fn check_documents(State(app): State<Shared>, RawQuery(q): RawQuery, body: Body) -> Answer {
    write_documents(app, q, body, DuplicatePolicy::Skip).await
}

async fn write_documents(
    app: Shared,
    q: Option<String>,
    body: Body,
    policy: DuplicatePolicy,
) -> Answer {
    let p = api::parse_params(q.as_deref(), &db::WriteOptions::FIELDS)?;
    let (bytes, _share) = read_body(&app, body).await?;
    let max_batch = app.config.max_batch;
    let (docs, _) = parse_body(bytes, move |b| api::parse_documents(b, max_batch)).await?;
    let opts = match app.slot.current() {
        Some(db) => p.policy_for(&db, policy)?,
        None => p.resolve(policy, None)?,
    };
    let max_duplicates = opts.max_duplicates;
    // The answer's size is known before anything is written.
    let most = docs.len().saturating_mul(max_duplicates);
    if most > app.config.max_hits {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            Some("max_duplicates"),
            format!(
                "{} documents listing up to {max_duplicates} duplicates each could answer {most} hits; \
                 at most {} per request (the server's --max-hits): send fewer documents or a lower max_duplicates",
                docs.len(),
                app.config.max_hits
            ),
        ));
    }
    let written = blocking(move || {
        let r = app.write(docs, &opts);
        app.note_write(&r);
        // Clusters whose representative a document replaced.
        app.settle_in_background();
        r
    })
    .await?;
    json_answer(written)
}

impl App {
    /// Writes one request's documents in chunks (see [`db::write::place_in_chunks`]).
    fn write(&self, docs: Vec<Doc>, opts: &WritePolicy) -> std::result::Result<Value, ApiError> {
        let db = self.writable()?;
        // A document that cannot be analysed (beyond having no features)
        // refuses the request before anything is written.
        let analyses = self
            .pool
            .install(|| db::write::analyze_all(db.fingerprinter(), &docs))
            .map_err(|(i, e)| {
                let mut err =
                    ApiError::from(Error::Input(format!("document {:?}: {e}", docs[i].id)));
                err.field = Some(format!("[{i}]"));
                err
            })?;
        let written = db::write::place_in_chunks(&db, &docs, analyses, opts).map_err(|i| {
            let mut err = ApiError::from(i.error);
            err.message = format!(
                "{} (the first {} documents of the request were written, in atomic chunks)",
                err.message, i.written
            );
            err
        })?;
        let mut counts = db::write::WriteCounts::default();
        let mut results = Vec::with_capacity(docs.len());
        for (doc, r) in docs.iter().zip(written) {
            counts.add_written(&r);
            let outcome = r.outcome();
            if r.fingerprint.is_none() {
                results.push(json!({"id": doc.id, "outcome": outcome}));
                continue;
            }
            let d = &r.duplicates;
            let mut v = json!({"id": doc.id, "outcome": outcome, "fingerprint": r.fingerprint,
                "duplicates": d.listed(opts.max_duplicates),
                "duplicate_count": d.count(), "duplicate_count_exact": d.exact()});
            if r.short {
                v["short"] = json!(true);
            }
            results.push(v);
        }
        for name in db::write::WriteCounts::OUTCOMES {
            self.metrics.written(name, counts.outcome(name));
        }
        // The counts beside the results, by the names every front end uses.
        let mut v = json!(counts);
        v["results"] = json!(results);
        Ok(v)
    }

    /// Answers of a batch, in order ([`Db::answer_many`]); a query that
    /// cannot be answered has `{"error", "status"}` in its place.
    /// Answers a batch of queries [`BATCH_STEP`] at a time, and stops
    /// with 503 at the next step once a stop has begun: a batch of 10,000
    /// does not hold the process past `--shutdown-grace`.
    fn answer_batch(&self, rs: &[QueryRequest]) -> std::result::Result<Value, ApiError> {
        let db = self.db()?;
        let mut results: Vec<Value> = Vec::with_capacity(rs.len());
        for part in rs.chunks(BATCH_STEP) {
            if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    format!(
                        "the server is stopping; {} of the batch's {} queries were answered \
                         (send it again once it is back)",
                        results.len(),
                        rs.len()
                    ),
                ));
            }
            let answers = self.pool.install(|| db.answer_many(part))?;
            results.extend(answers.into_iter().map(|a| match a {
                Ok(a) => json!(a),
                Err(e) => {
                    let e = ApiError::from(e);
                    json!({"error": e.message, "status": e.status.as_u16()})
                }
            }));
        }
        Ok(json!({ "results": results }))
    }
}

/// Queries of a batch answered with one pass over the index, between two
/// looks at whether the server is stopping.
const BATCH_STEP: usize = 256;

/// Bodies up to this size are parsed on the runtime's worker (well under
/// a millisecond); larger ones on the blocking pool.
const INLINE_BODY: usize = 64 << 10;

async fn query(State(app): State<Shared>, RawQuery(q): RawQuery, body: Body) -> Answer {
    api::parse_params(q.as_deref(), &[])?;
    let (bytes, _share) = read_body(&app, body).await?;
    let max_batch = app.config.max_batch;
    let (specs, batch) = parse_body(bytes, move |b| api::parse_queries(b, max_batch)).await?;
    // The answer's size is bounded before any work.
    let most: usize = specs
        .iter()
        .map(|r| r.options.limit_or_default())
        .fold(0, usize::saturating_add);
    if most > app.config.max_hits {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            Some("limit"),
            format!(
                "the queries' limits add up to {most} hits; at most {} per request (the server's \
                 --max-hits): send fewer queries or lower limits",
                app.config.max_hits
            ),
        ));
    }
    let field = |e: Error, r: &QueryRequest| {
        let mut err = ApiError::from(e);
        if err.status == StatusCode::UNPROCESSABLE_ENTITY {
            err.field = Some("text".into());
            err.message = "the text has no usable features (no words after stop words)".into();
        } else if err.status == StatusCode::NOT_FOUND {
            err.field = matches!(r.subject, Subject::Id(_)).then(|| "id".into());
        }
        err
    };
    if batch {
        let v = blocking(move || app.answer_batch(&specs)).await?;
        return json_answer(v);
    }
    let Some(spec) = specs.into_iter().next() else {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, None, "no query"));
    };
    // On the blocking pool, as every store read: an answer reads buckets
    // and `refs` entries (up to `limits::QUERY_REJECTED` rejected ones),
    // and the runtime's workers keep `/health` and the other connections
    // answered meanwhile.
    let v = blocking(move || {
        let db = app.db()?;
        db.answer(&spec)
            .map(|a| json!(a))
            .map_err(|e| field(e, &spec))
    })
    .await?;
    json_answer(v)
}

async fn get_document(State(app): State<Shared>, id: String) -> Answer {
    // On the blocking pool, as every store read (a record, the cluster's
    // size entry and first member).
    let v = blocking(move || match app.db()?.document(&id)? {
        Some(d) => Ok(json!(d)),
        None => Err(Error::NotFound { id }.into()),
    })
    .await?;
    json_answer(v)
}

async fn delete_document(State(app): State<Shared>, RawQuery(q): RawQuery, id: String) -> Answer {
    let p = api::parse_params(q.as_deref(), &["sync"])?;
    let v = blocking(move || {
        let db = app.writable()?;
        let mut w = db.shared_writer()?;
        w.set_sync(p.sync);
        if !w.delete(&id)? {
            return Err(Error::NotFound { id }.into());
        }
        let committed = w.commit().map_err(ApiError::from);
        drop(w);
        app.note_write(&committed);
        committed?;
        // The cluster it represented: its members are re-checked against
        // the next representative after the answer, a bounded step per
        // hold of the writer (the commit took the first).
        app.settle_in_background();
        app.metrics.written("deleted", 1);
        Ok(json!({"id": id, "deleted": true}))
    })
    .await?;
    json_answer(v)
}

/// How long `/stats` serves its bucket figures (a scan of every posting)
/// before computing them again; the counts are read at each call.
pub const STATS_REFRESH: Duration = Duration::from_secs(60);

async fn stats(State(app): State<Shared>) -> Answer {
    let v = blocking(move || {
        let db = app.db()?;
        // One computation at a time; the others wait for its answer.
        let mut cache = app
            .stats_cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (at, mut v) = match cache.as_ref() {
            Some(c) if c.0.elapsed() < STATS_REFRESH => c.clone(),
            _ => cache
                .insert((Instant::now(), json!(db.admin().stats()?)))
                .clone(),
        };
        drop(cache);
        v["documents"] = json!(db.len()?);
        v["buckets_age_seconds"] = json!(at.elapsed().as_secs());
        // Not the server's file layout (review 2026-11-b, finding 11).
        if let Some(m) = v.as_object_mut() {
            m.remove("path");
        }
        Ok(v)
    })
    .await?;
    json_answer(v)
}

async fn health(State(app): State<Shared>) -> Answer {
    let failure = app
        .storage_failure
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    let db = app.slot.current();
    let documents = db.as_ref().map(|d| d.len()).transpose()?;
    let background_errors = db.as_ref().map(|d| d.admin().background_errors());
    let read_only = db
        .as_ref()
        .is_some_and(|d| d.access() == crate::Access::ReadOnly);
    match (failure, db.is_some() && !read_only) {
        (None, true) => json_answer(json!({
            "status": "ok",
            "documents": documents,
            "background_errors": background_errors,
            // Request bodies held now, and the cap: a client whose writes
            // wait (503) sees why.
            "bodies_in_flight_bytes": app.bodies_in_flight(),
            "bodies_in_flight_limit": app.config.max_inflight_body_bytes,
            "version": env!("CARGO_PKG_VERSION"),
        })),
        (failure, _) => Ok((
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({
                "status": "unhealthy",
                "error": failure.unwrap_or_else(|| "the store is being reopened".into()),
                "store": match (db.is_some(), read_only) {
                    (false, _) => "reopening",
                    (true, true) => "read-only (reopening for writes)",
                    (true, false) => "open",
                },
                "documents": documents,
                "background_errors": background_errors,
                "version": env!("CARGO_PKG_VERSION"),
            })),
        )
            .into_response()),
    }
}

impl App {
    /// Remembers whether a write failed on the server's side (a storage
    /// error: `/health` turns unhealthy) or succeeded (healthy again).
    fn note_write<T>(self: &Arc<Self>, r: &std::result::Result<T, ApiError>) {
        let mut failure = self
            .storage_failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match r {
            Ok(_) => {
                *failure = None;
                self.slot.healthy();
            }
            // The store is being reopened: nothing new.
            Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => {}
            Err(e) if e.status.is_server_error() => {
                *failure = Some(e.message.clone());
                drop(failure);
                self.slot.failed(self);
            }
            Err(_) => {}
        }
    }

    /// The store, or 503 while it is reopened.
    fn db(&self) -> std::result::Result<Arc<Db>, ApiError> {
        self.slot.current().ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "the store is being reopened after a storage error (see /health); try again shortly",
            )
        })
    }

    /// The store for a write, or 503 while it is reopened or read-only.
    /// Runs the re-checks of clusters whose representative a write
    /// deleted or replaced (each commit took one step) to the end, on the
    /// blocking pool, one step per hold of the writer lock: the write that
    /// caused them has answered, and other writers go between the steps.
    /// One such task at a time; a failure is left to the next write (whose
    /// commit takes a step too).
    fn settle_in_background(self: &Arc<Self>) {
        use std::sync::atomic::Ordering;
        let Ok(db) = self.db() else { return };
        if !db.clusters_unsettled().unwrap_or(false) || self.settling.swap(true, Ordering::AcqRel) {
            return;
        }
        let app = Arc::clone(self);
        tokio::task::spawn_blocking(move || loop {
            if app.stopping.load(Ordering::SeqCst) {
                // The next writer's commits go on with it.
                app.settling.store(false, Ordering::Release);
                return;
            }
            let more = app.writable().ok().and_then(|db| {
                let mut w = db.shared_writer().ok()?;
                w.settle_step().ok()
            });
            if more == Some(true) {
                continue;
            }
            app.settling.store(false, Ordering::Release);
            // A write that marked a cluster while this task ran (and saw it
            // running) left it to this task.
            let again = more == Some(false)
                && app
                    .db()
                    .is_ok_and(|db| db.clusters_unsettled().unwrap_or(false));
            if !again || app.settling.swap(true, Ordering::AcqRel) {
                return;
            }
        });
    }

    /// Bytes of request bodies held now (by KiB, as they are reserved).
    fn bodies_in_flight(&self) -> usize {
        let cap = kib(self.config.max_inflight_body_bytes);
        cap.saturating_sub(self.bodies.available_permits()) << 10
    }

    fn writable(&self) -> std::result::Result<Arc<Db>, ApiError> {
        let db = self.db()?;
        if db.access() != crate::Access::ReadWrite {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "the store is read-only after a storage error while it is reopened for writes \
                 (see /health); try again shortly",
            ));
        }
        Ok(db)
    }
}

async fn metrics_text(State(app): State<Shared>) -> Answer {
    let text = blocking(move || {
        let db = app.db()?;
        let docs = db.len()?;
        Ok(app.metrics.encode(
            docs,
            db.admin().bytes_on_disk(),
            db.admin().wal_syncs(),
            app.bodies_in_flight() as u64,
        ))
    })
    .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
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
