//! The review page (docs/review.md): static files embedded in the binary,
//! served at `/` with a content security policy that allows only this
//! origin's script, style and requests. The page calls the JSON API like
//! any client; it holds no data, so its files are served without the token
//! (the API's calls carry it), under the same Host and Origin rules.

use super::*;

/// The page's files: (path, content type, bytes).
pub(super) const FILES: [(&str, &str, &str); 3] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("page/index.html"),
    ),
    (
        "/app.js",
        "text/javascript; charset=utf-8",
        include_str!("page/app.js"),
    ),
    (
        "/app.css",
        "text/css; charset=utf-8",
        include_str!("page/app.css"),
    ),
];

/// What the page may load and call: its own files and this origin's API,
/// nothing inline, no frames of it elsewhere.
pub(super) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// Whether `path` is one of the page's files.
pub(super) fn is_page(path: &str) -> bool {
    FILES.iter().any(|(p, _, _)| *p == path)
}

/// The answer of `GET path` for a file of the page.
pub(super) fn file(path: &str) -> Response {
    let Some((_, kind, body)) = FILES.iter().find(|(p, _, _)| *p == path) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut resp = (*body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}
