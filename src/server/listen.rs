//! Connections: the accept loop, its cap, its timers and the stop.
//!
//! `axum::serve` has no connection cap and no timer (hyper applies its
//! header-read timeout only when a timer is configured), so idle or
//! half-sent connections, which need no token, could fill the descriptor
//! table and keep a stopping service alive. This loop serves HTTP/1 with
//! hyper directly:
//!
//! - at most [`Config::max_connections`] connections at once (the
//!   effective cap also leaves descriptors for the store's files, see
//!   [`Descriptors`]); a client beyond it gets `503` and is closed at once;
//! - a connection that has not sent a whole request head within
//!   [`Config::header_timeout`] is closed, and so is a keep-alive
//!   connection idle that long (hyper starts the same timer when it waits
//!   for the next request);
//! - on SIGINT or SIGTERM it stops accepting, lets the requests in flight
//!   finish for at most [`Config::shutdown_grace`], then drops the
//!   connections that remain. Writes already handed to the blocking pool
//!   still commit (the caller waits for them before the final flush).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::Config;
use crate::error::{Error, Result};

/// Descriptors the process needs besides connections and the store's
/// table files: write-ahead log, manifest, info log, lock, the files a
/// flush and a compaction write, the listener, the runtime's own.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// How a service shares the process's file descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptors {
    /// The soft limit on open files (raised to the hard limit at start).
    pub limit: u64,
    /// Table files RocksDB keeps open (`max_open_files`).
    pub store_files: u64,
    /// Connections served at once.
    pub connections: usize,
}

impl Descriptors {
    /// Splits `limit` descriptors: [`RESERVED_DESCRIPTORS`], then half of
    /// the rest for the store's table files (20 to 1,024), then
    /// connections (at most `max_connections`). Refuses a limit too small
    /// for 8 connections.
    pub fn split(limit: u64, max_connections: usize) -> Result<Descriptors> {
        let rest = limit.saturating_sub(RESERVED_DESCRIPTORS);
        let store_files = (rest / 2).clamp(20, 1024);
        let free = rest.saturating_sub(store_files);
        let connections = usize::try_from(free)
            .unwrap_or(usize::MAX)
            .min(max_connections);
        if connections < 8 {
            return Err(Error::Input(format!(
                "the limit on open files is {limit}: too few for the store ({store_files} table \
                 files and {RESERVED_DESCRIPTORS} others) and 8 connections; raise it \
                 (`ulimit -n 4096`, or LimitNOFILE= in a systemd unit)"
            )));
        }
        Ok(Descriptors {
            limit,
            store_files,
            connections,
        })
    }

    /// Raises the soft limit on open files to the hard limit, then splits
    /// it (see [`Descriptors::split`]).
    pub fn of_process(max_connections: usize) -> Result<Descriptors> {
        Descriptors::split(raise_open_files_limit(), max_connections)
    }
}

/// The soft limit on open files after raising it to the hard limit
/// (where the platform allows; otherwise a conservative 1,024).
#[cfg(unix)]
fn raise_open_files_limit() -> u64 {
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
        // RLIM_INFINITY reads as u64::MAX: any large number serves.
        #[allow(clippy::unnecessary_cast)]
        let cur = lim.rlim_cur as u64;
        cur
    }
}

#[cfg(not(unix))]
fn raise_open_files_limit() -> u64 {
    1024
}

/// What a client beyond the connection cap reads before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
connection: close\r\nretry-after: 1\r\ncontent-length: 71\r\n\r\n\
{\"error\":\"the server has too many connections open; try again shortly\"}";

/// Counts of what the loop did, for the metrics.
pub(super) trait ConnectionEvents: Send + Sync + 'static {
    /// A client was refused because the cap was reached.
    fn refused(&self);
    /// Connections open now changed by `delta`.
    fn open(&self, delta: i64);
}

/// Serves `router` on `listener` until `stop` completes, then stops as the
/// module says. `connections` is the effective cap.
pub(super) async fn run(
    listener: TcpListener,
    router: Router,
    config: &Config,
    connections: usize,
    events: Arc<dyn ConnectionEvents>,
    stop: impl Future<Output = ()>,
) -> Result<()> {
    let permits = Arc::new(Semaphore::new(connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .keep_alive(true);
    let service = hyper_util::service::TowerToHyperService::new(router);
    let mut tasks = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(s) => s,
                    Err(e) => {
                        // Out of descriptors (EMFILE) or a connection reset
                        // before it was accepted: wait a little, go on.
                        if !matches!(e.kind(), std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset)
                        {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    // Answered without a task and closed: costs the
                    // descriptor for a moment only.
                    let _ = stream.try_write(BUSY);
                    events.refused();
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let conn = http.serve_connection(TokioIo::new(stream), service.clone());
                let conn = graceful.watch(conn);
                let events = events.clone();
                events.open(1);
                tasks.spawn(async move {
                    let _ = conn.await;
                    events.open(-1);
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    // Idle connections close now, busy ones after their answer; what is
    // left after the grace period is dropped.
    if tokio::time::timeout(config.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!(
            "simdb: {} connection(s) still open after the shutdown grace of {} s: dropped",
            tasks.len(),
            config.shutdown_grace.as_secs_f64()
        );
        tasks.abort_all();
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_split_between_store_and_connections() {
        let d = Descriptors::split(256, 1024).unwrap();
        assert_eq!(d.store_files, 96);
        assert_eq!(d.connections, 96);
        assert!(d.store_files + d.connections as u64 + RESERVED_DESCRIPTORS <= 256);
        let d = Descriptors::split(1 << 20, 1024).unwrap();
        assert_eq!((d.store_files, d.connections), (1024, 1024));
        let d = Descriptors::split(1024, 100).unwrap();
        assert_eq!((d.store_files, d.connections), (480, 100));
        assert!(matches!(Descriptors::split(80, 1024), Err(Error::Input(_))));
        assert_eq!(
            BUSY.len() - BUSY.windows(4).position(|w| w == b"\r\n\r\n").unwrap() - 4,
            71
        );
    }
}
