//! The served store, and its reopening after storage errors.

use super::*;

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
pub(super) struct Slot {
    pub(super) db: std::sync::RwLock<Option<Arc<Db>>>,
    pub(super) path: std::path::PathBuf,
    pub(super) tuning: crate::Tuning,
    pub(super) state: std::sync::Mutex<Recovery>,
    /// Set when the service stops: no more reopening.
    pub(super) stopping: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
pub(super) struct Recovery {
    /// The first write failure since the last success.
    pub(super) failing_since: Option<Instant>,
    /// A recovery thread is running.
    pub(super) running: bool,
}

impl Slot {
    pub(super) fn new(db: Db) -> Slot {
        Slot {
            path: db.path().to_path_buf(),
            tuning: db.tuning(),
            db: std::sync::RwLock::new(Some(Arc::new(db))),
            state: Default::default(),
            stopping: Default::default(),
        }
    }

    pub(super) fn current(&self) -> Option<Arc<Db>> {
        self.db
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// How the store is opened again after a storage error: as `serve`
    /// had it, each query on its own thread.
    pub(super) fn options(&self) -> crate::db::DbOptions {
        Db::options().tuning(self.tuning).parallel_queries(false)
    }

    pub(super) fn set(&self, db: Option<Arc<Db>>) {
        *self
            .db
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = db;
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, Recovery> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn healthy(&self) {
        self.state().failing_since = None;
    }

    pub(super) fn stop(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Wait for a recovery in progress to end.
        while self.state().running {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A write failed on the server's side: start a recovery if writes
    /// have failed (and none succeeded) for [`REOPEN_AFTER`].
    pub(super) fn failed(&self, app: &Arc<App>) {
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
    pub(super) fn reopen(&self, app: &App) {
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

/// What a replica compares to see whether a writer committed: the store
/// directory's files with their sizes and modification times (the info
/// logs left out: RocksDB writes them on its own schedule).
fn signature(
    path: &std::path::Path,
) -> Vec<(std::ffi::OsString, u64, Option<std::time::SystemTime>)> {
    let mut files: Vec<_> = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with("LOG"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.file_name(), m.len(), m.modified().ok()))
        })
        .collect();
    files.sort();
    files
}

/// A replica's follower (`serve --read-only`): every `refresh` it looks at
/// the store's files and, when a writer changed them, opens the store
/// again read-only (every table file held open: the writer's compactions
/// cannot pull one from under it) and swaps the new view in. Requests
/// under way finish on the view they started with; each later one reads
/// the new view. A view that cannot be opened leaves the last one served.
pub(super) fn follow(app: Arc<App>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("simdb-follow".into())
        .spawn(move || {
            let slot = &app.slot;
            let mut seen = signature(&slot.path);
            let step = Duration::from_millis(100).min(app.config.refresh);
            let mut waited = Duration::ZERO;
            while !slot.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(step);
                waited += step;
                if waited < app.config.refresh {
                    continue;
                }
                waited = Duration::ZERO;
                let now = signature(&slot.path);
                if now == seen {
                    continue;
                }
                match slot.options().read_only().open(&slot.path) {
                    Ok(db) => {
                        slot.set(Some(Arc::new(db)));
                        seen = now;
                    }
                    Err(e) => eprintln!(
                        "simdb: replica: cannot open the store again ({e}); still serving the \
                         last view"
                    ),
                }
            }
        })
}
