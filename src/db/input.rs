//! The document input format, one for every front end: a JSON object
//! `{"id", "text"}` (or `"html"`, `"features"`, or `"fingerprint"`; an optional
//! `"priority"`), as a JSONL line of `simdb ingest`, an element of the
//! service's `POST /documents` body, or (through [`doc_from_value`]) any
//! JSON value. Other fields are ignored here; the service refuses them
//! before (`server::api`).

use serde::Deserialize;

use crate::fingerprint::Content;

#[derive(Deserialize)]
struct JsonDoc {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    text: Option<serde_json::Value>,
    #[serde(default)]
    html: Option<serde_json::Value>,
    #[serde(default)]
    features: Option<serde_json::Value>,
    #[serde(default)]
    fingerprint: Option<serde_json::Value>,
    #[serde(default)]
    priority: Option<serde_json::Value>,
    #[serde(default)]
    time: Option<serde_json::Value>,
}

/// One document as its JSON gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    pub id: String,
    pub content: Content,
    /// `"priority"`: a finite number, for the choice of a cluster's
    /// representative.
    pub priority: Option<f64>,
    /// `"time"`: the document's own time, Unix seconds (see
    /// [`parse_time`]).
    pub dated: Option<u64>,
}

impl Given {
    /// The document, read from `source` (and as the line `line`).
    pub fn into_doc(self, source: String, line: Option<Vec<u8>>) -> crate::db::write::Doc {
        crate::db::write::Doc {
            id: self.id,
            content: self.content,
            source,
            line,
            priority: self.priority,
            dated: self.dated,
        }
    }
}

/// Parses one JSONL line into (id, content).
pub fn parse_json_doc(line: &[u8]) -> Result<(String, Content), String> {
    parse_json_line(line).map(|g| (g.id, g.content))
}

/// [`parse_json_doc`] with what else the line gives (`"priority"`,
/// `"time"`).
pub fn parse_json_line(line: &[u8]) -> Result<Given, String> {
    // serde would read a struct from an array too; a document is an object.
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n')
            if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() =>
        {
            return Err("not a JSON object".into())
        }
        _ => {}
    }
    let d: JsonDoc = serde_json::from_slice(line).map_err(|e| {
        let s = e.to_string();
        if s.contains("expected struct JsonDoc") {
            "not a JSON object".to_string()
        } else {
            format!("invalid JSON: {s}")
        }
    })?;
    interpret(d).map_err(|b| b.reason)
}

/// What is wrong with one field of a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadField {
    /// The field's name (`"id"`, `"text"`, …).
    pub field: &'static str,
    pub reason: String,
}

impl BadField {
    fn new(field: &'static str, reason: impl Into<String>) -> BadField {
        BadField {
            field,
            reason: reason.into(),
        }
    }
}

/// A document given as a JSON value (an element of a request body): the
/// rules of a JSONL line (see [`Format::Jsonl`](crate::ingest::read::Format::Jsonl); other fields are
/// ignored), with the field at fault. `Err` names no field when the value
/// is not an object.
pub fn doc_from_value(v: &serde_json::Value) -> Result<Given, Option<BadField>> {
    if !v.is_object() {
        return Err(None);
    }
    let d = JsonDoc::deserialize(v).map_err(|_| None)?;
    interpret(d).map_err(Some)
}

fn interpret(d: JsonDoc) -> Result<Given, BadField> {
    let id = match d.id {
        None | Some(serde_json::Value::Null) => return Err(BadField::new("id", "missing \"id\"")),
        Some(serde_json::Value::String(s)) if s.is_empty() => {
            return Err(BadField::new("id", "empty \"id\""))
        }
        Some(serde_json::Value::String(s)) => s,
        Some(serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(other) => {
            return Err(BadField::new(
                "id",
                format!(
                    "\"id\" must be a string or an integer, not {}",
                    super::request::json_kind(&other)
                ),
            ))
        }
    };
    if id.len() > 4096 {
        return Err(BadField::new(
            "id",
            format!("\"id\" is {} bytes (at most 4096)", id.len()),
        ));
    }
    let given = [
        d.text.is_some(),
        d.html.is_some(),
        d.features.is_some(),
        d.fingerprint.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(BadField::new(
            "text",
            "give one of \"text\", \"html\", \"features\" or \"fingerprint\", not several",
        ));
    }
    let content = content_of(d.text, d.html, d.features, d.fingerprint)?;
    let dated = match d.time {
        None | Some(serde_json::Value::Null) => None,
        Some(t) => Some(parse_time(&t).map_err(|r| BadField::new("time", r))?),
    };
    Ok(Given {
        id,
        content,
        priority: priority(d.priority)?,
        dated,
    })
}

/// The latest document time taken, Unix seconds: 2106-02-07T06:28:15Z
/// (`u32::MAX`). Under `newest` every time up to it ranks by itself; a
/// later one is most likely milliseconds (1,710,230,400,000 is year
/// 56,000), which would represent its cluster over every correctly dated
/// copy and never `expire`.
pub const LATEST_TIME: u64 = u32::MAX as u64;

/// `t` (Unix seconds) as a document's time: refused past [`LATEST_TIME`],
/// with a message that names milliseconds.
pub fn check_time(t: u64) -> Result<u64, String> {
    match t <= LATEST_TIME {
        true => Ok(t),
        false => Err(format!(
            "a time of {t} seconds is after 2106-02-07 (the latest taken, {LATEST_TIME}): \
             give Unix seconds, not milliseconds"
        )),
    }
}

/// A document's `"time"`: Unix seconds (a non-negative integer) or an RFC
/// 3339 timestamp (`"2024-03-12T08:00:00Z"`, with its offset), as Unix
/// seconds; at most [`LATEST_TIME`].
pub fn parse_time(v: &serde_json::Value) -> Result<u64, String> {
    let bad = || {
        format!(
            "\"time\" must be Unix seconds (an integer >= 0) or an RFC 3339 timestamp \
             (\"2024-03-12T08:00:00Z\"), not {v}"
        )
    };
    let t = match v {
        serde_json::Value::Number(n) => n.as_u64().ok_or_else(bad),
        serde_json::Value::String(s) => s
            .parse::<jiff::Timestamp>()
            .ok()
            .and_then(|t| u64::try_from(t.as_second()).ok())
            .ok_or_else(bad),
        _ => Err(bad()),
    }?;
    check_time(t).map_err(|e| format!("\"time\": {e}"))
}

/// A document's content: one of its `"text"`, `"html"`, `"features"`
/// and `"fingerprint"` (the caller checked there is one at most).
fn content_of(
    text: Option<serde_json::Value>,
    html: Option<serde_json::Value>,
    features: Option<serde_json::Value>,
    fingerprint: Option<serde_json::Value>,
) -> Result<Content, BadField> {
    Ok(match (text, html, features, fingerprint) {
        (Some(serde_json::Value::String(t)), ..) => Content::Text(t),
        (Some(other), ..) => {
            return Err(BadField::new(
                "text",
                format!(
                    "\"text\" must be a string, not {}",
                    super::request::json_kind(&other)
                ),
            ))
        }
        // JSON text is Unicode: the page's own charset declarations no
        // longer apply (a transport's charset comes before them).
        (_, Some(serde_json::Value::String(h)), ..) => Content::Html(crate::fingerprint::Html {
            bytes: h.into_bytes(),
            charset: Some("utf-8".into()),
        }),
        (_, Some(other), ..) => {
            return Err(BadField::new(
                "html",
                format!(
                    "\"html\" must be a string, not {}",
                    super::request::json_kind(&other)
                ),
            ))
        }
        (_, _, Some(f), _) => {
            Content::Features(parse_features(&f).map_err(|r| BadField::new("features", r))?)
        }
        (.., Some(serde_json::Value::String(h))) if h.len() == 16 => {
            Content::Fingerprint(h.parse().map_err(|e: crate::Error| {
                BadField::new("fingerprint", format!("bad \"fingerprint\": {e}"))
            })?)
        }
        (.., Some(other)) => {
            return Err(BadField::new(
                "fingerprint",
                format!("\"fingerprint\" must be a string of 16 hex digits, not {other}"),
            ))
        }
        (None, None, None, None) => return Err(BadField::new("text", "missing \"text\"")),
    })
}

/// A document's `"priority"`: absent, `null`, or a finite number.
/// A document's `"priority"` (a finite number, or none); `Err` is the
/// reason.
pub(crate) fn priority_of(p: Option<serde_json::Value>) -> Result<Option<f64>, String> {
    priority(p).map_err(|b| b.reason)
}

fn priority(p: Option<serde_json::Value>) -> Result<Option<f64>, BadField> {
    match p {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => {
            Ok(n.as_f64())
        }
        Some(other) => Err(BadField::new(
            "priority",
            format!(
                "\"priority\" must be a finite number, not {}",
                super::request::json_kind(&other)
            ),
        )),
    }
}

/// Parses `{"name": weight, …}` or `[["name", weight], …]`.
pub fn parse_features(v: &serde_json::Value) -> Result<Vec<(String, f64)>, String> {
    let bad = || {
        "\"features\" must be an object {\"name\": weight} or an array [[\"name\", weight]]"
            .to_string()
    };
    let weight = |w: &serde_json::Value| w.as_f64().filter(|x| x.is_finite()).ok_or_else(bad);
    match v {
        serde_json::Value::Object(m) => {
            m.iter().map(|(k, w)| Ok((k.clone(), weight(w)?))).collect()
        }
        serde_json::Value::Array(a) => a
            .iter()
            .map(|p| match p.as_array().map(|x| x.as_slice()) {
                Some([serde_json::Value::String(k), w]) => Ok((k.clone(), weight(w)?)),
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn regression_60_times_past_2106_and_milliseconds_are_refused() {
        assert_eq!(parse_time(&json!(0)), Ok(0));
        assert_eq!(parse_time(&json!(LATEST_TIME)), Ok(LATEST_TIME));
        assert_eq!(
            parse_time(&json!("2106-02-07T06:28:15Z")),
            Ok(LATEST_TIME),
            "the latest time, as RFC 3339"
        );
        for late in [
            json!(LATEST_TIME + 1),
            // Milliseconds of 2024-03-12.
            json!(1_710_230_400_000u64),
            json!(1u64 << 63),
            json!(u64::MAX),
            json!("2106-02-07T06:28:16Z"),
        ] {
            let e = parse_time(&late).unwrap_err();
            assert!(e.contains("milliseconds"), "{late}: {e}");
        }
        // Past jiff's range, and past the bound as an integer.
        assert!(parse_time(&json!("9999-12-31T23:59:59Z")).is_err());
        assert!(parse_time(&json!(253_402_300_799u64)).is_err());
        for bad in [json!(-1), json!(1.5), json!("yesterday"), json!(null)] {
            let e = parse_time(&bad).unwrap_err();
            assert!(e.contains("must be Unix seconds"), "{bad}: {e}");
        }
    }
}
