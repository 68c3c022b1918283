//! Request bodies: read under the in-flight budget and the body timeout, parsed off the runtime's workers when large.

use super::*;

/// Runs `f` on the blocking pool (writes, batches, whole-store reads).
pub(super) async fn blocking<T: Send + 'static>(
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
pub(super) type BodyShare = tokio::sync::OwnedSemaphorePermit;

/// The whole request body, within the size and time limits, with its
/// share of the bodies in flight (kept until the answer is built).
pub(super) async fn read_body(
    app: &App,
    body: Body,
) -> std::result::Result<(Bytes, BodyShare), ApiError> {
    let limit = app.config.max_body_bytes;
    let says =
        format!("the request body is larger than {limit} bytes (the server's --max-body-mb)");
    read_body_within(app, body, limit, says).await
}

/// [`read_body`] of a request whose body is at most `limit` bytes
/// (`too_large` says why otherwise), whatever the server's body limit.
pub(super) async fn read_body_within(
    app: &App,
    body: Body,
    limit: usize,
    too_large: String,
) -> std::result::Result<(Bytes, BodyShare), ApiError> {
    let limit = limit.min(app.config.max_body_bytes);
    let too_large = || ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, None, too_large.clone());
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
pub(super) async fn parse_body<T: Send + 'static>(
    bytes: Bytes,
    parse: impl FnOnce(&[u8]) -> std::result::Result<T, BadRequest> + Send + 'static,
) -> std::result::Result<T, ApiError> {
    if bytes.len() <= INLINE_BODY {
        return parse(&bytes).map_err(ApiError::from);
    }
    blocking(move || parse(&bytes).map_err(ApiError::from)).await
}

pub(super) fn is_length_limit(e: &axum::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        next = err.source();
    }
    false
}
