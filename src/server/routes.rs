//! The handlers: documents, queries, stats, health, metrics.

use super::*;

pub(super) async fn put_documents(
    State(app): State<Shared>,
    RawQuery(q): RawQuery,
    body: Body,
) -> Answer {
    write_documents(app, q, body, DuplicatePolicy::IndexAll).await
}

pub(super) async fn check_documents(
    State(app): State<Shared>,
    RawQuery(q): RawQuery,
    body: Body,
) -> Answer {
    write_documents(app, q, body, DuplicatePolicy::Skip).await
}

pub(super) async fn write_documents(
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
    pub(super) fn write(
        &self,
        mut docs: Vec<Doc>,
        opts: &WritePolicy,
    ) -> std::result::Result<Value, ApiError> {
        let db = self.writable()?;
        // Web pages become their text once, before the analysis.
        let found = self
            .pool
            .install(|| db::write::extract_pages(&db, &mut docs))?;
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
        for ((doc, r), found) in docs.iter().zip(written).zip(found) {
            counts.add_written(&r);
            counts.pages.add(found);
            let outcome = r.outcome();
            let mut v = json!({"id": doc.id, "outcome": outcome});
            if r.fingerprint.is_some() {
                let d = &r.duplicates;
                v["fingerprint"] = json!(r.fingerprint);
                v["duplicates"] = json!(d.listed(opts.max_duplicates));
                v["duplicate_count"] = json!(d.count());
                v["duplicate_count_exact"] = json!(d.exact());
                if r.short {
                    v["short"] = json!(true);
                }
            }
            if let Some(f) = found {
                v["page"] = json!(f.name());
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
    /// Answers a batch of queries [`batch_step`] at a time, and stops
    /// with 503 at the next step once a stop has begun: a batch of 10,000
    /// does not hold the process past `--shutdown-grace`, even on a busy
    /// machine (a step of 256 slow queries outlasted a grace of 3 s there).
    pub(super) fn answer_batch(&self, rs: &[QueryRequest]) -> std::result::Result<Value, ApiError> {
        let db = self.db()?;
        let mut results: Vec<Value> = Vec::with_capacity(rs.len());
        for part in rs.chunks(batch_step(self.pool.current_num_threads())) {
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
/// looks at whether the server is stopping: 8 per analysis thread, from 32
/// to 256 (enough to share a pass, few enough to stop soon).
pub(super) fn batch_step(threads: usize) -> usize {
    (8 * threads).clamp(32, 256)
}

/// Bodies up to this size are parsed on the runtime's worker (well under
/// a millisecond); larger ones on the blocking pool.
pub(super) const INLINE_BODY: usize = 64 << 10;

pub(super) async fn query(State(app): State<Shared>, RawQuery(q): RawQuery, body: Body) -> Answer {
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
    // A page to extract, or a batch of more than one step, takes its
    // turn among the long reads.
    let pages = specs.iter().any(|r| matches!(r.subject, Subject::Html(_)));
    let steps = specs.len() > batch_step(app.pool.current_num_threads());
    let _turn = match (pages, steps) {
        (true, _) => Some(app.long_read("a query of a web page").await?),
        (false, true) => Some(app.long_read("a query batch of more than one step").await?),
        _ => None,
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

pub(super) async fn get_document(State(app): State<Shared>, id: String) -> Answer {
    // On the blocking pool, as every store read (a record, the cluster's
    // size entry and first member).
    let v = blocking(move || match app.db()?.document(&id)? {
        Some(d) => Ok(json!(d)),
        None => Err(Error::NotFound { id }.into()),
    })
    .await?;
    json_answer(v)
}

pub(super) async fn delete_document(
    State(app): State<Shared>,
    RawQuery(q): RawQuery,
    id: String,
) -> Answer {
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

/// `GET /clusters`: a page of clusters, largest first unless `sort=id`,
/// each with its first members and its representative's source
/// ([`crate::db::Clusters::list`]); `next` is the cursor of the next
/// page (`after`).
pub(super) async fn list_clusters(State(app): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let p: api::ClusterListParams = api::parse_params_as(
        q.as_deref(),
        &["sort", "after", "limit", "min_size", "members", "source"],
    )?;
    let limit = api::bounded_count(
        "limit",
        p.limit,
        api::CLUSTERS_PER_PAGE,
        api::MAX_CLUSTERS_PER_PAGE,
    )?;
    let members = api::bounded_count(
        "members",
        p.members,
        api::MEMBERS_LISTED,
        api::MAX_CLUSTERS_PER_PAGE,
    )?;
    // A page in size or distance order scans every cluster: a long read.
    let order = p.sort.unwrap_or(crate::db::review::ClusterOrder::Size);
    let scans = matches!(
        order,
        crate::db::review::ClusterOrder::Size | crate::db::review::ClusterOrder::Distant
    );
    let _turn = if scans {
        Some(
            app.long_read("a page of clusters in size or distance order")
                .await?,
        )
    } else {
        None
    };
    let v = blocking(move || {
        let db = app.db()?;
        let go_on = app.go_on();
        let list = db
            .clusters()
            .until(&go_on)
            .list(
                order,
                p.after.as_deref(),
                limit,
                p.min_size.unwrap_or(2),
                members,
                p.source.as_deref(),
            )
            .map_err(|e| app.long_read_error(e))?;
        Ok(json!(list))
    })
    .await?;
    json_answer(v)
}

/// `GET /cluster?id=ID`: the cluster of stored document `id`, its
/// representative and a page of its members, each with why it is there
/// ([`crate::db::Clusters::members`]).
pub(super) async fn cluster(State(app): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let p: api::ClusterParams = api::parse_params_as(q.as_deref(), &["id", "after", "limit"])?;
    let limit = api::bounded_count(
        "limit",
        p.limit,
        api::MEMBERS_PER_PAGE,
        api::MAX_MEMBERS_PER_PAGE,
    )?;
    let Some(id) = p.id else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            Some("id"),
            "the id of a stored document is required".to_string(),
        ));
    };
    let v = blocking(move || {
        match app
            .db()?
            .clusters()
            .members(&id, p.after.as_deref(), limit)?
        {
            Some(page) => Ok(json!(page)),
            None => Err(Error::NotFound { id }.into()),
        }
    })
    .await?;
    json_answer(v)
}

/// `POST /decisions`: `{"not_a_copy": [A, B]}` (both stored; when one
/// represents the other's cluster, the other leaves it), `{"keep": ID}`
/// (stored; it represents its cluster, [`crate::db::Writer::keep`]) or
/// `{"undo": SEQ}`, written and committed as a write is; answers the log
/// entry ([`crate::db::Writer::not_a_copy`]). The log's "who" is the name of
/// the caller's token ([`super::read_tokens`]), or `api` without tokens.
pub(super) async fn decide(
    State(app): State<Shared>,
    caller: Option<axum::Extension<Caller>>,
    RawQuery(q): RawQuery,
    body: Body,
) -> Answer {
    let who = caller.map_or_else(|| super::UNNAMED_TOKEN.to_string(), |c| c.0 .0.clone());
    let p = api::parse_params(q.as_deref(), &["sync"])?;
    // A decision names at most two ids: its body is small, and a larger
    // one is refused as it arrives, never parsed (review-2026-11-c,
    // finding 6: a 60 MB array took 1.6 GB to refuse).
    let says = format!(
        "a decision's body is larger than {} bytes (it names at most two ids)",
        api::MAX_DECISION_BODY
    );
    let (bytes, _share) = read_body_within(&app, body, api::MAX_DECISION_BODY, says).await?;
    let req = parse_body(bytes, api::parse_decision).await?;
    let v = blocking(move || {
        let db = app.writable()?;
        let mut w = db.shared_writer()?;
        w.set_sync(p.sync);
        let seq = match &req {
            api::DecisionRequest::NotACopy(a, b) => w.not_a_copy(a, b, &who)?,
            api::DecisionRequest::Keep(id) => w.keep(id, &who)?,
            api::DecisionRequest::Undo(s) => w.undo_decision(*s, &who)?,
        };
        let committed = w.commit().map_err(ApiError::from);
        drop(w);
        app.note_write(&committed);
        committed?;
        app.settle_in_background();
        let page = db.clusters().decisions(seq - 1, 1)?;
        Ok(json!(page.decisions.first()))
    })
    .await?;
    json_answer(v)
}

/// `GET /decisions?after=SEQ&limit=N`: a page of the decision log, oldest
/// first, with the `next` cursor.
pub(super) async fn decisions(State(app): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let p: api::DecisionListParams = api::parse_params_as(q.as_deref(), &["after", "limit"])?;
    let limit = api::bounded_count(
        "limit",
        p.limit,
        api::MEMBERS_PER_PAGE,
        api::MAX_MEMBERS_PER_PAGE,
    )?;
    let v = blocking(move || {
        Ok(json!(app
            .db()?
            .clusters()
            .decisions(p.after.unwrap_or(0), limit)?))
    })
    .await?;
    json_answer(v)
}

/// `GET /diff?a=ID&b=ID`: where the kept texts of two stored documents
/// differ, as spans ([`crate::db::Clusters::diff`]): the review page's
/// side-by-side view.
pub(super) async fn diff(State(app): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let p: api::DiffParams = api::parse_params_as(q.as_deref(), &["a", "b"])?;
    let (Some(a), Some(b)) = (p.a, p.b) else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            None,
            "the ids of two stored documents are required: a and b".to_string(),
        ));
    };
    // A long read, on the blocking pool: the diff itself takes up to its
    // deadline, and holds up to a MiB of each text.
    let _turn = app.long_read("a diff").await?;
    let v = blocking(move || Ok(json!(app.db()?.clusters().diff(&a, &b)?))).await?;
    json_answer(v)
}

/// How long `/stats` serves its bucket figures (a scan of every posting)
/// before computing them again; the counts are read at each call.
pub const STATS_REFRESH: Duration = Duration::from_secs(60);

/// `POST /freeze`: the frozen index written again while writes and queries
/// go on ([`crate::db::Admin::freeze`]). Answers the report.
pub(super) async fn freeze(State(app): State<Shared>) -> Answer {
    let db = app.writable()?;
    let v = blocking(move || {
        let r = db.admin().freeze()?;
        Ok(json!({
            "generation": r.generation,
            "entries": r.entries,
            "bytes": r.bytes,
            "seconds": r.seconds,
        }))
    })
    .await?;
    json_answer(v)
}

/// How long `/calibration` serves an answer for the same parameters
/// before sampling again.
pub const CALIBRATION_REFRESH: Duration = Duration::from_secs(60);

/// `GET /calibration`: `simdb calibrate --json` of the store (nearest
/// neighbours of a seeded sample, their similarities, random pairs). A
/// computation is a long read (see `turns`); an answer serves the same
/// parameters for [`CALIBRATION_REFRESH`], with its `age_seconds`.
pub(super) async fn calibration(State(app): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let p: api::CalibrationParams =
        api::parse_params_as(q.as_deref(), &["sample", "seed", "k", "min_similarity"])?;
    let sample = api::bounded_count(
        "sample",
        p.sample,
        api::CALIBRATION_SAMPLE,
        api::MAX_CALIBRATION_SAMPLE,
    )?;
    // A k over 11 is the library's 400 (`UnsupportedDistance`, field "k").
    let k = p.k.unwrap_or(crate::fingerprint::MAX_EXACT_K);
    let threshold = app
        .db()?
        .admin()
        .min_similarity_or_default(p.min_similarity)?;
    let key = format!("{sample}/{}/{k}/{threshold}", p.seed.unwrap_or(1));
    if let Some(v) = app.calibration_cached(&key) {
        return json_answer(v);
    }
    // A sample is a long read: computed in its turn, with no lock held
    // (another parameters' answer is served meanwhile), and stopped at
    // the deadline or a stop.
    let _turn = app.long_read("a calibration").await?;
    let v = blocking(move || {
        // Computed while this one waited for its turn?
        if let Some(v) = app.calibration_cached(&key) {
            return Ok(v);
        }
        let db = app.db()?;
        let go_on = app.go_on();
        let c = app
            .long_pool
            .install(|| {
                db.admin()
                    .until(&go_on)
                    .calibrate(sample, p.seed.unwrap_or(1), threshold, k)
            })
            .map_err(|e| app.long_read_error(e))?;
        let mut v = json!(c);
        *app.calibration_cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) =
            Some((Instant::now(), key, v.clone()));
        v["age_seconds"] = json!(0);
        Ok(v)
    })
    .await?;
    json_answer(v)
}

impl App {
    /// `/calibration`'s answer for `key` if one is younger than
    /// [`CALIBRATION_REFRESH`], with its `age_seconds`.
    fn calibration_cached(&self, key: &str) -> Option<Value> {
        let cache = self
            .calibration_cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match cache.as_ref() {
            Some((at, k2, v)) if k2 == key && at.elapsed() < CALIBRATION_REFRESH => {
                let mut v = v.clone();
                v["age_seconds"] = json!(at.elapsed().as_secs());
                Some(v)
            }
            _ => None,
        }
    }
}

pub(super) async fn stats(State(app): State<Shared>) -> Answer {
    // The bucket figures scan every posting: computing them is a long read.
    let fresh = app
        .stats_cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
        .is_some_and(|c| c.0.elapsed() < STATS_REFRESH);
    let _turn = if fresh {
        None
    } else {
        Some(app.long_read("/stats' scan of the postings").await?)
    };
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

pub(super) async fn health(State(app): State<Shared>) -> Answer {
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
    if let (None, Some(db), true) = (&failure, &db, app.config.read_only) {
        // A replica: read-only by design, healthy while it has a view.
        let v = db.admin().view();
        return json_answer(json!({
            "status": "ok",
            "documents": documents,
            "background_errors": background_errors,
            "replica": {
                "opened_at": v.opened_at,
                "sequence": v.sequence,
                "writer_active": v.writer_active,
                "refresh_seconds": app.config.refresh.as_secs_f64(),
            },
            "version": env!("CARGO_PKG_VERSION"),
        }));
    }
    match (failure, db.is_some() && !read_only) {
        (None, true) => json_answer(json!({
            "status": "ok",
            "documents": documents,
            "background_errors": background_errors,
            // Request bodies held now, and the cap: a client whose writes
            // wait (503) sees why.
            "bodies_in_flight_bytes": app.bodies_in_flight(),
            "bodies_in_flight_limit": app.config.max_inflight_body_bytes,
            // Clusters whose representative left, their members still to
            // be re-checked against the new one (in the background).
            "rechecks_pending": db
                .as_ref()
                .map(|d| d.clusters_unsettled())
                .transpose()?
                .unwrap_or(false),
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
    pub(super) fn note_write<T>(self: &Arc<Self>, r: &std::result::Result<T, ApiError>) {
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
    pub(super) fn db(&self) -> std::result::Result<Arc<Db>, ApiError> {
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
    pub(super) fn settle_in_background(self: &Arc<Self>) {
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
    pub(super) fn bodies_in_flight(&self) -> usize {
        let cap = kib(self.config.max_inflight_body_bytes);
        cap.saturating_sub(self.bodies.available_permits()) << 10
    }

    pub(super) fn writable(&self) -> std::result::Result<Arc<Db>, ApiError> {
        if self.config.read_only {
            return Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                "this service is a read-only replica (simdb serve --read-only): send writes \
                 to the service that holds the store's writer",
            ));
        }
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

pub(super) async fn metrics_text(State(app): State<Shared>) -> Answer {
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
