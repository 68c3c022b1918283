//! The service's Prometheus metrics (OpenMetrics text, `GET /metrics`).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `simdb_http_requests_total` | counter | `endpoint` (the route, e.g. `/documents/{id}`), `method`, `status` |
//! | `simdb_http_request_duration_seconds` | histogram (50 µs .. 13 s) | `endpoint`, `method` |
//! | `simdb_documents_written_total` | counter | `outcome` (inserted, replaced, unchanged, duplicate, no_features, deleted) |
//! | `simdb_documents` | gauge | the store's document count, read at each scrape |
//! | `simdb_store_bytes` | gauge | the store directory's size on disk, read at each scrape |
//! | `simdb_wal_syncs` | gauge | write-ahead log fsyncs since the store was opened, read at each scrape |
//! | `simdb_http_connections` | gauge | connections open now |
//! | `simdb_request_body_bytes_in_flight` | gauge | request bodies held now (bytes received, by KiB), read at each scrape; the cap is `--max-inflight-mb` |
//! | `simdb_http_connections_refused_total` | counter | clients answered 503 because the connection cap was reached |
//! | `simdb_requests_refused_total` | counter | `reason` (host, origin, content_type: refused before routing; long_reads: a long read that found no turn, see `--max-long-reads`) |

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: String,
    method: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    endpoint: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

fn latency_histogram() -> Histogram {
    // 50 µs, 100 µs, … about 13 s.
    Histogram::new(exponential_buckets(50e-6, 2.0, 19))
}

/// The metrics of one running service.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
    written: Family<OutcomeLabels, Counter>,
    documents: Gauge,
    bytes: Gauge,
    wal_syncs: Gauge,
    connections: Gauge,
    connections_refused: Counter,
    refused: Family<ReasonLabels, Counter>,
    bodies: Gauge,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<LatencyLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let written = Family::<OutcomeLabels, Counter>::default();
        let documents = Gauge::default();
        let bytes = Gauge::default();
        registry.register(
            "simdb_http_requests",
            "HTTP requests answered, by endpoint, method and status",
            requests.clone(),
        );
        registry.register(
            "simdb_http_request_duration_seconds",
            "Time from the request's arrival to its answer",
            latency.clone(),
        );
        registry.register(
            "simdb_documents_written",
            "Documents of write requests, by what was done with them",
            written.clone(),
        );
        registry.register(
            "simdb_documents",
            "Documents in the store",
            documents.clone(),
        );
        registry.register(
            "simdb_store_bytes",
            "Size of the store's directory on disk",
            bytes.clone(),
        );
        let connections = Gauge::default();
        let wal_syncs = Gauge::default();
        registry.register(
            "simdb_wal_syncs",
            "Write-ahead log fsyncs since the store was opened",
            wal_syncs.clone(),
        );
        let connections_refused = Counter::default();
        let refused = Family::<ReasonLabels, Counter>::default();
        let bodies = Gauge::default();
        registry.register(
            "simdb_request_body_bytes_in_flight",
            "Request bodies held now, in bytes (KiB granularity; the cap is --max-inflight-mb)",
            bodies.clone(),
        );
        registry.register(
            "simdb_http_connections",
            "Connections open now",
            connections.clone(),
        );
        registry.register(
            "simdb_http_connections_refused",
            "Clients answered 503 and closed because the connection cap was reached",
            connections_refused.clone(),
        );
        registry.register(
            "simdb_requests_refused",
            "Requests refused, by reason (host, origin, content_type: before routing; long_reads: no turn among the long reads)",
            refused.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            written,
            documents,
            bytes,
            wal_syncs,
            connections,
            connections_refused,
            refused,
            bodies,
        }
    }
}

impl Metrics {
    /// Counts one answered request.
    pub fn request(&self, endpoint: &str, method: &str, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.to_string(),
                method: method.to_string(),
                status: status.to_string(),
            })
            .inc();
        self.latency
            .get_or_create(&LatencyLabels {
                endpoint: endpoint.to_string(),
                method: method.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts `n` documents of a write request that ended as `outcome`.
    pub fn written(&self, outcome: &str, n: u64) {
        if n > 0 {
            self.written
                .get_or_create(&OutcomeLabels {
                    outcome: outcome.to_string(),
                })
                .inc_by(n);
        }
    }

    /// Counts a client refused because the connection cap was reached.
    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }

    /// Changes the count of open connections by `delta`.
    pub fn connections_open(&self, delta: i64) {
        self.connections.inc_by(delta);
    }

    /// Counts a request refused before routing, for `reason`.
    pub fn refused(&self, reason: &str) {
        self.refused
            .get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// The metrics as OpenMetrics text, with the store's gauges set to
    /// `documents`, `bytes` and `wal_syncs`.
    pub fn encode(&self, documents: u64, bytes: u64, wal_syncs: u64, bodies: u64) -> String {
        self.bodies.set(i64::try_from(bodies).unwrap_or(i64::MAX));
        self.wal_syncs
            .set(i64::try_from(wal_syncs).unwrap_or(i64::MAX));
        self.documents
            .set(i64::try_from(documents).unwrap_or(i64::MAX));
        self.bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
