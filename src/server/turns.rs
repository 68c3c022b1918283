//! Long reads take turns, so that writes and ordinary queries keep their
//! threads and their latency while they run (review-2026-11-c, finding 3).
//!
//! A long read is a request whose work grows with the store or with the
//! request rather than with an answer's size: `GET /calibration` when it
//! samples (not a cached answer), `GET /stats` when it scans the
//! postings, a `GET /clusters` page in size or distance order (a scan of
//! every cluster), `GET /diff`, a query of a web page, and a query batch
//! of more than one step ([`batch_step`]). At most
//! [`Config::max_long_reads`] run at once; one more waits up to
//! [`LONG_READ_WAIT`] for its turn, on the runtime (holding no blocking
//! thread), then gets 503 with `Retry-After`. A calibration's parallel
//! sample runs on threads of its own, one per turn: on the global pool,
//! its work queued every query's behind it. A calibration or a page of
//! clusters stops between its steps once its [`Config::long_read_timeout`]
//! has passed or a stop began (503, saying which); a diff has its own
//! deadline ([`crate::diff::DEADLINE`]) and compares at most
//! [`crate::diff::MAX_BYTES`] of each text.

use super::*;

/// How long a long read waits for its turn before it is refused (503).
pub const LONG_READ_WAIT: Duration = Duration::from_secs(5);

/// A long read's turn, held until its answer is built.
pub(super) type Turn = tokio::sync::OwnedSemaphorePermit;

impl App {
    /// `what`'s turn among the long reads, waiting up to
    /// [`LONG_READ_WAIT`]; 503 if none came.
    pub(super) async fn long_read(&self, what: &str) -> std::result::Result<Turn, ApiError> {
        let wait = tokio::time::timeout(LONG_READ_WAIT, self.long_reads.clone().acquire_owned());
        match wait.await {
            Ok(Ok(turn)) => Ok(turn),
            _ => {
                self.metrics.refused("long_reads");
                Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    format!(
                        "{what} is a long read, and the server runs its most at once ({}, \
                         --max-long-reads: calibrations, page scans of every cluster, diffs, \
                         page queries, query batches); none ended within {} s: try again shortly",
                        self.config.max_long_reads,
                        LONG_READ_WAIT.as_secs()
                    ),
                ))
            }
        }
    }

    /// Whether a long read begun now goes on: no stop has begun and its
    /// [`Config::long_read_timeout`] has not passed.
    pub(super) fn go_on(self: &Arc<Self>) -> impl Fn() -> bool + Send + Sync + 'static {
        let deadline = Instant::now() + self.config.long_read_timeout;
        let app = self.clone();
        move || !app.stopping.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline
    }

    /// `e` as an answer: [`Error::Interrupted`] as 503 saying why (a stop
    /// or the deadline), anything else as it is.
    pub(super) fn long_read_error(&self, e: Error) -> ApiError {
        if !matches!(e, Error::Interrupted) {
            return ApiError::from(e);
        }
        let why = if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            "the server is stopping; send it again once it is back".to_string()
        } else {
            format!(
                "the read took longer than the server's {} s (--long-read-timeout) and was \
                 stopped: ask for less (a smaller sample, another order)",
                self.config.long_read_timeout.as_secs()
            )
        };
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, None, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(config: impl FnOnce(&mut Config)) -> (tempfile::TempDir, Shared) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::options()
            .create(dir.path().join("s.db"), crate::Recipe::default())
            .unwrap();
        let mut c = Config::new("127.0.0.1:0".parse().unwrap());
        config(&mut c);
        let pool = || {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
        };
        (dir, App::new(db, c, pool(), pool()))
    }

    /// At most `max_long_reads` turns at once; one more waits
    /// [`LONG_READ_WAIT`] (the runtime's clock, paused: no real wait),
    /// then 503 naming the option, counted in the metrics; a turn given
    /// back serves the next.
    #[test]
    fn long_reads_take_turns() {
        let (_dir, app) = app(|c| c.max_long_reads = 2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let first = app.long_read("one").await.unwrap();
            let _second = app.long_read("two").await.unwrap();
            let asked = tokio::time::Instant::now();
            let e = app.long_read("a third").await.unwrap_err();
            assert!(asked.elapsed() >= LONG_READ_WAIT);
            assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
            assert!(
                e.message.starts_with("a third is a long read"),
                "{}",
                e.message
            );
            assert!(e.message.contains("(2, --max-long-reads"), "{}", e.message);
            let text = app.metrics.encode(0, 0, 0, 0);
            assert!(
                text.contains(r#"simdb_requests_refused_total{reason="long_reads"} 1"#),
                "{text}"
            );
            // A turn given back while one waits: the waiting one gets it.
            let waiting = tokio::spawn({
                let app = app.clone();
                async move { app.long_read("a fourth").await.map(|_| ()) }
            });
            tokio::task::yield_now().await;
            drop(first);
            assert!(waiting.await.unwrap().is_ok());
        });
        // A 503 tells the client when to try again.
        let r = app.long_read_error(Error::Interrupted).into_response();
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn an_interrupted_read_is_503_and_says_why() {
        let (_dir, app) = app(|c| c.long_read_timeout = Duration::from_secs(7));
        let go_on = app.go_on();
        assert!(go_on());
        let e = app.long_read_error(Error::Interrupted);
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            e.message.contains("7 s (--long-read-timeout)"),
            "{}",
            e.message
        );
        app.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(!go_on());
        let e = app.long_read_error(Error::Interrupted);
        assert!(e.message.contains("stopping"), "{}", e.message);
        // Other errors keep their status.
        let e = app.long_read_error(Error::NotFound { id: "x".into() });
        assert_eq!(e.status, StatusCode::NOT_FOUND);
    }
}
