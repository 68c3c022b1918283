//! What every request passes first: the route's name for the metrics, the bearer token, the Host and Origin rules, the content type.

use super::*;

/// The document id of a `/documents/{id}` path, percent-decoded.
pub(super) struct Id(pub(super) String);

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

/// Who sent a request: the name of the token it carried (docs/service.md,
/// "Security"); absent when the service has no token.
#[derive(Clone)]
pub(super) struct Caller(pub(super) String);

/// The route a request matched, for the metrics.
#[derive(Clone)]
pub(super) struct Endpoint(pub(super) String);

pub(super) async fn tag_endpoint(req: Request, next: Next) -> Response {
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

pub(super) async fn measure(State(app): State<Shared>, req: Request, next: Next) -> Response {
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
pub(super) async fn authorize(State(app): State<Shared>, req: Request, next: Next) -> Response {
    // The page's static files hold no data: a browser loads them without
    // the token, which the page then sends with each call of the API.
    let page_file = req.method() == axum::http::Method::GET && page::is_page(req.uri().path());
    let mut req = req;
    if page_file && !app.config.tokens.is_empty() {
        // Served as to anyone who asks.
    } else if !app.config.tokens.is_empty() {
        if let Some(name) = token_holder(&app.config.tokens, req.headers()) {
            req.extensions_mut().insert(Caller(name));
        } else {
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

/// The name of the token `headers` carry (`Authorization: Bearer`), if it
/// is one of `tokens`: every token compared, in constant time each.
fn token_holder(tokens: &[super::Token], headers: &axum::http::HeaderMap) -> Option<String> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| bearer(v.as_bytes()))?;
    tokens.iter().fold(None, |found, t| {
        match same_secret(given, t.secret.as_bytes()) {
            true => Some(t.name.clone()),
            false => found,
        }
    })
}

/// The token of an `Authorization` value of the Bearer scheme (its name
/// in any case, RFC 7235).
pub(super) fn bearer(value: &[u8]) -> Option<&[u8]> {
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
pub(super) fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// The host of a `Host` value or of an origin's authority (`name`,
/// `name:port`, `[v6]:port`), lower-case, without a trailing dot.
pub(super) fn host_name(authority: &str) -> Option<String> {
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

pub(super) fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

impl App {
    /// Whether `host` (from [`host_name`]) names this service: a loopback
    /// name or address, the address it listens on, or an allowed host.
    pub(super) fn allowed_host(&self, host: &str) -> bool {
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
pub(super) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
