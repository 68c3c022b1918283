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
pub mod metrics;

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

use crate::db::{self, Db, Query};
use crate::error::{Error, Result};
use crate::ingest::{self, DuplicatePolicy};
use api::{BadRequest, QuerySpec, Subject};
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
}

impl Config {
    /// Defaults: loopback port 7420, a thread per core, no token, 64 MiB
    /// bodies sent within 30 s, batches of up to 10,000, answers of up to
    /// [`db::limits::DEFAULT_MAX_REQUEST_HITS`] hits.
    pub fn new(addr: SocketAddr) -> Config {
        Config {
            addr,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            token: None,
            max_body_bytes: 64 << 20,
            body_timeout: Duration::from_secs(30),
            max_batch: 10_000,
            max_hits: db::limits::DEFAULT_MAX_REQUEST_HITS,
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
/// requests it has (writes in flight are committed), flushes the
/// memtables and returns.
pub fn serve(mut db: Db, config: Config, on_ready: impl FnOnce(SocketAddr)) -> Result<()> {
    config.check()?;
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
    let app = Arc::new(App {
        db,
        config,
        metrics: Metrics::default(),
        pool,
    });
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(fail)?;
        on_ready(listener.local_addr().map_err(fail)?);
        axum::serve(listener, router(app.clone()))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .map_err(fail)
    });
    // Waits for blocking tasks: a write whose client went away still
    // commits before the memtables are flushed.
    drop(runtime);
    app.db.flush()?;
    served
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
    db: Db,
    config: Config,
    metrics: Metrics,
    /// Fingerprints write requests (the global rayon pool serves queries).
    pool: rayon::ThreadPool,
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

async fn authorize(State(app): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(token) = &app.config.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
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
    }
    next.run(req).await
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
        ApiError {
            status,
            field,
            message,
        }
    }
}

type Answer = std::result::Result<Response, ApiError>;

/// A query's weighted terms, heaviest first (for `explain`).
type Terms = Vec<(String, f64)>;

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

/// The whole request body, within the size and time limits.
async fn read_body(app: &App, body: Body) -> std::result::Result<Bytes, ApiError> {
    let limit = app.config.max_body_bytes;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            format!("the request body is larger than {limit} bytes (the server's --max-body-mb)"),
        )
    };
    // A body announced too large is refused before it is read.
    if usize::try_from(axum::body::HttpBody::size_hint(&body).lower()).map_or(true, |n| n > limit) {
        return Err(too_large());
    }
    match tokio::time::timeout(app.config.body_timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            None,
            format!(
                "the request body did not arrive within {} s",
                app.config.body_timeout.as_secs()
            ),
        )),
        Ok(Err(e)) if is_length_limit(&e) => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            None,
            format!("cannot read the request body: {e}"),
        )),
        Ok(Ok(b)) => Ok(b),
    }
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

const WRITE_PARAMS: [&str; 5] = [
    "sync",
    "k",
    "probe_budget",
    "min_similarity",
    "max_duplicates",
];

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
    let p = api::parse_params(q.as_deref(), &WRITE_PARAMS)?;
    let bytes = read_body(&app, body).await?;
    let (docs, _) = api::parse_documents(&bytes, app.config.max_batch)?;
    drop(bytes);
    let (k, probe_budget) = db::search_mode(p.k, p.probe_budget)?;
    let max_duplicates = db::limits::max_duplicates(p.max_duplicates)?;
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
    let opts = ingest::Options {
        k,
        policy,
        sync: p.sync,
        min_similarity: p
            .min_similarity
            .unwrap_or_else(|| app.db.default_min_similarity()),
        probe_budget,
        max_duplicates,
        ..ingest::Options::default()
    };
    let v = blocking(move || app.write(docs, &opts)).await?;
    json_answer(v)
}

impl App {
    /// Writes one request's documents in one batch (see [`ingest::place`]).
    fn write(
        &self,
        docs: Vec<ingest::Doc>,
        opts: &ingest::Options,
    ) -> std::result::Result<Value, ApiError> {
        // A document that cannot be analysed (beyond having no features)
        // refuses the request before anything is written.
        let analyses = self
            .pool
            .install(|| ingest::analyze_all(self.db.fingerprinter(), &docs))
            .map_err(|(i, e)| {
                let mut err =
                    ApiError::from(Error::Input(format!("document {:?}: {e}", docs[i].id)));
                err.field = Some(format!("[{i}]"));
                err
            })?;
        const NAMES: [&str; 6] = [
            "inserted",
            "replaced",
            "unchanged",
            "duplicate",
            "no_features",
            "short",
        ];
        let mut counts = [0u64; 6];
        let written = ingest::place_in_chunks(&self.db, &docs, analyses, opts).map_err(|i| {
            let mut err = ApiError::from(i.error);
            err.message = format!(
                "{} (the first {} documents of the request were written, in atomic chunks)",
                err.message, i.written
            );
            err
        })?;
        let mut results = Vec::with_capacity(docs.len());
        for (doc, r) in docs.iter().zip(written) {
            let outcome = r.outcome();
            let n = NAMES.iter().position(|x| *x == outcome).unwrap_or(4);
            counts[n] += 1;
            if r.fingerprint.is_none() {
                results.push(json!({"id": doc.id, "outcome": outcome}));
                continue;
            }
            counts[5] += u64::from(r.short && n < 2);
            let d = &r.duplicates;
            let mut v = json!({"id": doc.id, "outcome": outcome, "fingerprint": r.fingerprint,
                "duplicates": d.listed(opts.max_duplicates),
                "duplicate_count": d.count(), "duplicate_count_exact": d.exact()});
            if r.short {
                v["short"] = json!(true);
            }
            results.push(v);
        }
        for (name, n) in NAMES.iter().zip(counts).take(5) {
            self.metrics.written(name, n);
        }
        let mut v = json!({ "results": results });
        for (name, n) in NAMES.iter().zip(counts) {
            v[*name] = json!(n);
        }
        Ok(v)
    }

    /// The query of `spec` and, with `explain`, its weighted terms.
    fn build_query(&self, spec: &QuerySpec) -> Result<(Query, Option<Terms>)> {
        let (base, terms) = match &spec.subject {
            Subject::Text(t) => (
                self.db.text_query(t)?,
                spec.explain.then(|| self.db.text_terms(t)),
            ),
            Subject::Fingerprint(fp) => (Query::new(*fp), spec.explain.then(Vec::new)),
            Subject::Id(id) => {
                let q = self.db.id_query(id)?;
                let terms = match spec.explain {
                    true => self.db.get(id)?.map(|r| self.db.record_terms(&r)),
                    false => None,
                };
                (q, terms)
            }
        };
        let o = db::QueryOptions {
            k: spec.k,
            probe_budget: spec.probe_budget,
            min_similarity: spec.min_similarity,
            limit: spec.limit,
        };
        Ok((self.db.with_options(base, &o)?, terms))
    }

    /// `simdb query --json`'s answer to one query.
    fn render(&self, q: &Query, terms: Option<Terms>, hits: &[crate::Hit]) -> Result<Value> {
        Ok(match terms {
            Some(terms) => json!({
                "fingerprint": q.fingerprint,
                "query_terms": terms.iter().take(crate::fingerprint::TOP_TERMS).collect::<Vec<_>>(),
                "hits": self.db.explain(&terms, hits)?,
            }),
            None => json!({"fingerprint": q.fingerprint, "hits": hits}),
        })
    }

    fn answer_one(&self, spec: &QuerySpec) -> Result<Value> {
        let (q, terms) = self.build_query(spec)?;
        let hits = self.db.search(&q)?;
        self.render(&q, terms, &hits)
    }

    /// Answers of a batch, in order; a query that cannot be answered has
    /// `{"error"}` in its place. Queries without `explain` share one pass
    /// over the index ([`Db::search_many`]).
    fn answer_batch(&self, specs: &[QuerySpec]) -> std::result::Result<Value, ApiError> {
        let built: Vec<Result<(Query, Option<Terms>)>> =
            specs.iter().map(|s| self.build_query(s)).collect();
        let qs: Vec<Query> = built
            .iter()
            .filter_map(|b| b.as_ref().ok().map(|(q, _)| q.clone()))
            .collect();
        let mut answers = self.db.search_many(&qs)?.into_iter();
        let mut results = Vec::with_capacity(specs.len());
        for b in built {
            results.push(match b {
                Ok((q, terms)) => {
                    let hits = answers.next().unwrap_or_default();
                    self.render(&q, terms, &hits)?
                }
                Err(e) => {
                    let e = ApiError::from(e);
                    json!({"error": e.message, "status": e.status.as_u16()})
                }
            });
        }
        Ok(json!({ "results": results }))
    }
}

/// Bodies up to this size with one query are answered on the runtime's
/// worker (a text of this size takes well under a millisecond to
/// fingerprint); larger ones and batches go to the blocking pool.
const INLINE_BODY: usize = 64 << 10;

async fn query(State(app): State<Shared>, RawQuery(q): RawQuery, body: Body) -> Answer {
    api::parse_params(q.as_deref(), &[])?;
    let bytes = read_body(&app, body).await?;
    let (specs, batch) = api::parse_queries(&bytes, app.config.max_batch)?;
    // The answer's size is bounded before any work.
    let most: usize = specs
        .iter()
        .map(|s| s.limit.unwrap_or(db::limits::DEFAULT_LIMIT))
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
    let field = |e: Error, spec: &QuerySpec| {
        let mut err = ApiError::from(e);
        if err.status == StatusCode::UNPROCESSABLE_ENTITY {
            err.field = Some("text".into());
            err.message = "the text has no usable features (no words after stop words)".into();
        } else if err.status == StatusCode::NOT_FOUND {
            err.field = matches!(spec.subject, Subject::Id(_)).then(|| "id".into());
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
    let v = if bytes.len() <= INLINE_BODY {
        app.answer_one(&spec).map_err(|e| field(e, &spec))?
    } else {
        blocking(move || app.answer_one(&spec).map_err(|e| field(e, &spec))).await?
    };
    json_answer(v)
}

async fn get_document(State(app): State<Shared>, id: String) -> Answer {
    match app.db.document(&id)? {
        Some(d) => json_answer(json!(d)),
        None => Err(Error::NotFound { id }.into()),
    }
}

async fn delete_document(State(app): State<Shared>, RawQuery(q): RawQuery, id: String) -> Answer {
    let p = api::parse_params(q.as_deref(), &["sync"])?;
    let v = blocking(move || {
        let mut w = app.db.shared_writer()?;
        w.set_sync(p.sync);
        if !w.delete(&id)? {
            return Err(Error::NotFound { id }.into());
        }
        w.commit()?;
        drop(w);
        app.metrics.written("deleted", 1);
        Ok(json!({"id": id, "deleted": true}))
    })
    .await?;
    json_answer(v)
}

async fn stats(State(app): State<Shared>) -> Answer {
    let v = blocking(move || Ok(json!(app.db.stats()?))).await?;
    json_answer(v)
}

async fn health(State(app): State<Shared>) -> Answer {
    json_answer(json!({
        "status": "ok",
        "documents": app.db.len()?,
        "version": env!("CARGO_PKG_VERSION"),
    }))
}

async fn metrics_text(State(app): State<Shared>) -> Answer {
    let text = blocking(move || {
        let docs = app.db.len()?;
        Ok(app.metrics.encode(docs, app.db.bytes_on_disk()))
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
