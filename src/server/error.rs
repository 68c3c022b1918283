//! Answers that are not a success: a status and `{"error", "field"}`, never a server path.

use super::*;

/// An answer that is not a success: its status and `{"error", "field"}`.
#[derive(Debug)]
pub(super) struct ApiError {
    pub(super) status: StatusCode,
    pub(super) field: Option<String>,
    pub(super) message: String,
}

impl ApiError {
    pub(super) fn new(
        status: StatusCode,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> ApiError {
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
        let mut r = (self.status, axum::Json(v)).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            // Every 503 is a "try again": the stop, a reopening store, a
            // full budget of bodies or long reads.
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
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
pub(super) fn without_paths(message: &str) -> String {
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

pub(super) type Answer = std::result::Result<Response, ApiError>;

pub(super) fn json_answer(v: Value) -> Answer {
    Ok(axum::Json(v).into_response())
}
