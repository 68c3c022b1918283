//! The service's request shapes, parsed from JSON with the field at fault
//! in every error (pure: no store, no HTTP).
//!
//! - Documents (`POST /documents`, `POST /documents/check`): one document
//!   object, or an array of them; each is read as a JSONL line of `simdb
//!   ingest` is (`"id"`, one of `"text"`, `"features"`, `"fingerprint"`,
//!   optional `"priority"`), but any other field is refused at its name,
//!   and a field of the wrong shape (an array where a string belongs) at
//!   its first character: nothing is built that the document does not
//!   use, so memory follows the body's size whatever it nests.
//! - Queries (`POST /query`): one query object, or `{"queries": [...]}`;
//!   each a [`QueryRequest`] (the library's model: `"text"`,
//!   `"fingerprint"` or `"id"`, and the options by name); any other field
//!   is refused (a misspelt option must not pass silently).
//! - URL parameters of writes: the [`WriteOptions`] by name.

use serde_json::{Map, Value};

use crate::db::input::doc_from_value;
use crate::db::request::{deserialize_at, json_kind as kind, FieldError, UnknownFields};
use crate::db::write::Doc;
use crate::db::{QueryRequest, WriteOptions};

/// A request that cannot be answered as asked: what was wrong and, when
/// it concerns one field, its path (`documents[3].text`, `k`).
pub type BadRequest = FieldError;

type Parsed<T> = std::result::Result<T, BadRequest>;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::fmt;

/// What was refused, with its field path, when it was not the JSON.
pub(crate) type Refusal<'a> = &'a RefCell<Option<BadRequest>>;
fn refuse<E: serde::de::Error>(r: Refusal<'_>, field: String, why: String) -> E {
    *r.borrow_mut() = Some(BadRequest::field(field, why));
    E::custom("refused")
}
fn shape(kind: &str) -> &'static str {
    match kind {
        "seq" => "an array",
        "map" => "an object",
        _ => "another kind",
    }
}

/// The `visit_*` methods of a visitor that refuses every scalar (a
/// boolean, a number, a string; `null` too, and arrays, when named) with
/// `self.$refusal()`, the error it records.
macro_rules! refuse_scalars {
    ($refusal:ident $(, $extra:ident)*) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Value, E> {
            Err(self.$refusal())
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Value, E> {
            Err(self.$refusal())
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Value, E> {
            Err(self.$refusal())
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Value, E> {
            Err(self.$refusal())
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Value, E> {
            Err(self.$refusal())
        }
        $(refuse_scalars!(@ $extra $refusal);)*
    };
    (@ unit $refusal:ident) => {
        fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
            Err(self.$refusal())
        }
    };
    (@ seq $refusal:ident) => {
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
            Err(self.$refusal())
        }
    };
    (@ map $refusal:ident) => {
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
            Err(self.$refusal())
        }
    };
}

/// A scalar field (`at`: its path, `want`: what it must be).
struct Scalar<'a> {
    at: String,
    want: &'static str,
    refused: Refusal<'a>,
}
impl<'de> DeserializeSeed<'de> for Scalar<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}
impl<'de> Visitor<'de> for Scalar<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.want)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
        let why = format!(
            "{:?} must be {}, not {}",
            self.at_name(),
            self.want,
            shape("seq")
        );
        Err(refuse(self.refused, self.at, why))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Value, A::Error> {
        let why = format!(
            "{:?} must be {}, not {}",
            self.at_name(),
            self.want,
            shape("map")
        );
        Err(refuse(self.refused, self.at, why))
    }
}
impl Scalar<'_> {
    fn at_name(&self) -> &str {
        self.at.rsplit('.').next().unwrap_or(&self.at)
    }
}

/// Parses a query body, never holding more than `max` items of its
/// `"queries"` array (one more is refused at item `max + 1`, before the
/// rest is read) and never building what a query does not use: a query's
/// fields are scalars, so an array or object where one belongs is refused
/// at its first character with the field's path (a 60 MB array of zeros
/// costs nothing), and so is a top-level array.
fn parse_top(body: &[u8], max: usize) -> Parsed<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(BadRequest::new("the request body is empty (JSON expected)"));
    }
    /// A query object (`at`: its path; `queries`: whether its
    /// `"queries"` field is the batch, at the top).
    struct Query<'a> {
        at: String,
        queries: bool,
        max: usize,
        refused: Refusal<'a>,
    }
    impl Query<'_> {
        fn path(&self, field: &str) -> String {
            match self.at.as_str() {
                "" => field.to_string(),
                at => format!("{at}.{field}"),
            }
        }
        fn not_object<E: serde::de::Error>(self) -> E {
            let (at, why) = match self.at.is_empty() {
                true => (
                    "body".to_string(),
                    "expected a query object, or {\"queries\": [...]}",
                ),
                false => (self.at, "a query must be a JSON object"),
            };
            refuse(self.refused, at, why.into())
        }
    }
    impl<'de> DeserializeSeed<'de> for Query<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Query<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a query object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut m = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let at = self.path(&key);
                let v = if self.queries && key == "queries" {
                    map.next_value_seed(Batch {
                        max: self.max,
                        refused: self.refused,
                    })?
                } else if !crate::db::request::is_query_field(&key) {
                    // Refused at its name, its value unread (the message
                    // is the model's: `QueryRequest::from_json`).
                    let mut one = Map::new();
                    one.insert(key.clone(), Value::Null);
                    let e = QueryRequest::from_json(Value::Object(one), UnknownFields::Refuse)
                        .err()
                        .map(|e| e.message)
                        .unwrap_or_else(|| "unknown field".into());
                    return Err(refuse(self.refused, at, e));
                } else {
                    map.next_value_seed(Scalar {
                        at,
                        want: "a string, a number or a boolean",
                        refused: self.refused,
                    })?
                };
                m.insert(key, v);
            }
            Ok(Value::Object(m))
        }
        refuse_scalars!(not_object, unit, seq);
    }
    /// The `"queries"` array: at most `max` query objects.
    struct Batch<'a> {
        max: usize,
        refused: Refusal<'a>,
    }
    impl Batch<'_> {
        fn not_array<E: serde::de::Error>(self) -> E {
            let why = "\"queries\" must be an array".to_string();
            refuse(self.refused, "queries".into(), why)
        }
    }
    impl<'de> DeserializeSeed<'de> for Batch<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Batch<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array of queries")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            loop {
                if items.len() >= self.max {
                    if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                        let why = format!(
                            "the batch holds more than {max} queries; at most {max} per request",
                            max = self.max
                        );
                        *self.refused.borrow_mut() = Some(BadRequest::new(why));
                        return Err(A::Error::custom("too many"));
                    }
                    return Ok(Value::Array(items));
                }
                let q = Query {
                    at: format!("queries[{}]", items.len()),
                    queries: false,
                    max: self.max,
                    refused: self.refused,
                };
                match seq.next_element_seed(q)? {
                    Some(v) => items.push(v),
                    None => return Ok(Value::Array(items)),
                }
            }
        }
        refuse_scalars!(not_array, unit, map);
    }
    let refused = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(body);
    let top = Query {
        at: String::new(),
        queries: true,
        max,
        refused: &refused,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match top {
        Ok(v) => Ok(v),
        Err(e) => Err(refused
            .into_inner()
            .unwrap_or_else(|| BadRequest::new(format!("invalid JSON: {e}")))),
    }
}

/// The fields a document of a write request may have.
const DOC_FIELDS: [&str; 7] = [
    "id",
    "text",
    "html",
    "features",
    "fingerprint",
    "priority",
    "time",
];

/// Reads the documents of a write request's body (one object, or an array
/// of at most `max` of them) as [`Value`]s holding only the known fields,
/// each read in its shape: scalars for `id`, `text`, `html`, `fingerprint`,
/// `priority`; `{"name": weight}` or `[["name", weight]]` for `features`.
/// Returns the documents and whether the body was an array.
fn parse_doc_values(body: &[u8], max: usize) -> Parsed<(Vec<Value>, bool)> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(BadRequest::new("the request body is empty (JSON expected)"));
    }
    /// `features`: `{"name": weight}` or `[["name", weight], …]`.
    struct Features<'a> {
        at: String,
        refused: Refusal<'a>,
    }
    const FEATURES: &str = "an object {\"name\": weight} or an array [[\"name\", weight]]";
    impl Features<'_> {
        fn misshapen<E: serde::de::Error>(&self) -> E {
            let why = format!("\"features\" must be {FEATURES}");
            refuse(self.refused, self.at.clone(), why)
        }
    }
    impl<'de> DeserializeSeed<'de> for Features<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Features<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(FEATURES)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut m = Map::new();
            while let Some(k) = map.next_key::<String>()? {
                let w: f64 = map
                    .next_value()
                    .map_err(|_: A::Error| self.misshapen::<A::Error>())?;
                m.insert(k, Value::from(w));
            }
            Ok(Value::Object(m))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            loop {
                let pair: Option<(String, f64)> = seq
                    .next_element()
                    .map_err(|_: A::Error| self.misshapen::<A::Error>())?;
                match pair {
                    Some((k, w)) => {
                        items.push(Value::Array(vec![Value::String(k), Value::from(w)]))
                    }
                    None => return Ok(Value::Array(items)),
                }
            }
        }
        refuse_scalars!(misshapen);
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
    }

    /// One document (`at`: its path, empty for a body of one).
    struct Document<'a> {
        at: String,
        refused: Refusal<'a>,
    }
    impl Document<'_> {
        fn path(&self, field: &str) -> String {
            match self.at.as_str() {
                "" => field.to_string(),
                at => format!("{at}.{field}"),
            }
        }
        fn not_object<E: serde::de::Error>(self) -> E {
            let at = if self.at.is_empty() {
                "body".to_string()
            } else {
                self.at
            };
            refuse(self.refused, at, "a document must be a JSON object".into())
        }
    }
    impl<'de> DeserializeSeed<'de> for Document<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Document<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a document object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut m = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let at = self.path(&key);
                let v = match key.as_str() {
                    "features" => map.next_value_seed(Features {
                        at,
                        refused: self.refused,
                    })?,
                    "id" | "text" | "html" | "fingerprint" | "priority" | "time" => {
                        let want = match key.as_str() {
                            "id" => "a string or an integer",
                            "text" | "html" => "a string",
                            "fingerprint" => "a string of 16 hex digits",
                            "time" => "Unix seconds or an RFC 3339 timestamp",
                            _ => "a finite number",
                        };
                        map.next_value_seed(Scalar {
                            at,
                            want,
                            refused: self.refused,
                        })?
                    }
                    _ => {
                        let why = format!(
                            "unknown field {key:?}: a document has {}",
                            DOC_FIELDS.map(|f| format!("{f:?}")).join(", ")
                        );
                        return Err(refuse(self.refused, at, why));
                    }
                };
                if m.insert(key.clone(), v).is_some() {
                    let why = format!("{key:?} is given twice");
                    return Err(refuse(self.refused, self.path(&key), why));
                }
            }
            Ok(Value::Object(m))
        }
        refuse_scalars!(not_object, unit, seq);
    }

    /// The body: one document, or an array of at most `max`.
    struct Body<'a> {
        max: usize,
        refused: Refusal<'a>,
    }
    impl<'de> Visitor<'de> for Body<'_> {
        type Value = (Vec<Value>, bool);
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a document object or an array of them")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let d = Document {
                at: String::new(),
                refused: self.refused,
            };
            Ok((vec![d.visit_map(map)?], false))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            loop {
                let d = Document {
                    at: format!("[{}]", items.len()),
                    refused: self.refused,
                };
                if items.len() >= self.max {
                    // One more is refused before it is read.
                    if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                        let why = format!(
                            "the batch holds more than {max} documents; at most {max} per request",
                            max = self.max
                        );
                        *self.refused.borrow_mut() = Some(BadRequest::new(why));
                        return Err(A::Error::custom("too many"));
                    }
                    return Ok((items, true));
                }
                match seq.next_element_seed(d)? {
                    Some(v) => items.push(v),
                    None => return Ok((items, true)),
                }
            }
        }
    }
    let refused = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(body);
    let got = de
        .deserialize_any(Body {
            max,
            refused: &refused,
        })
        .and_then(|v| de.end().map(|()| v));
    match got {
        Ok(v) => Ok(v),
        Err(e) => Err(refused
            .into_inner()
            .unwrap_or_else(|| BadRequest::new(format!("invalid JSON: {e}")))),
    }
}

/// The documents of a write request (at most `max_batch`), each with the
/// source `http:INDEX` (its place in the request). `batch` says whether
/// the body was an array.
pub fn parse_documents(body: &[u8], max_batch: usize) -> Parsed<(Vec<Doc>, bool)> {
    let (items, batch) = parse_doc_values(body, max_batch)?;
    if items.is_empty() {
        return Err(BadRequest::new("the batch holds no document"));
    }
    if items.len() > max_batch {
        return Err(BadRequest::new(format!(
            "the batch holds {} documents; at most {max_batch} per request",
            items.len()
        )));
    }
    let path = |i: usize| {
        if batch {
            format!("[{i}]")
        } else {
            String::new()
        }
    };
    let docs = items
        .iter()
        .enumerate()
        .map(|(i, v)| match doc_from_value(v) {
            Ok(g) => Ok(g.into_doc(format!("http:{i}"), None)),
            Err(None) => Err(BadRequest::field(
                if batch { path(i) } else { "body".into() },
                "a document must be a JSON object",
            )),
            Err(Some(b)) => Err(BadRequest::field(
                format!("{}{}{}", path(i), if batch { "." } else { "" }, b.field),
                b.reason,
            )),
        })
        .collect::<Parsed<Vec<Doc>>>()?;
    Ok((docs, batch))
}

/// A query request: one query, or a batch (`{"queries": [...]}`, at most
/// `max_batch`).
pub fn parse_queries(body: &[u8], max_batch: usize) -> Parsed<(Vec<QueryRequest>, bool)> {
    let Value::Object(mut m) = parse_top(body, max_batch)? else {
        return Err(BadRequest::new(
            "expected a query object, or {\"queries\": [...]}",
        ));
    };
    let Some(qs) = m.remove("queries") else {
        return Ok((vec![query_from(Value::Object(m), None)?], false));
    };
    if let Some(other) = m.keys().next() {
        return Err(BadRequest::field(
            other.clone(),
            "a batch has only \"queries\"; give options in each query",
        ));
    }
    let Value::Array(qs) = qs else {
        return Err(BadRequest::field(
            "queries",
            format!("must be an array of queries, not {}", kind(&qs)),
        ));
    };
    if qs.is_empty() {
        return Err(BadRequest::field("queries", "the batch holds no query"));
    }
    if qs.len() > max_batch {
        return Err(BadRequest::field(
            "queries",
            format!(
                "the batch holds {} queries; at most {max_batch} per request",
                qs.len()
            ),
        ));
    }
    let specs = qs
        .into_iter()
        .enumerate()
        .map(|(i, q)| query_from(q, Some(i)))
        .collect::<Parsed<Vec<QueryRequest>>>()?;
    Ok((specs, true))
}

/// One query of a request, the `i`th of a batch.
fn query_from(v: Value, i: Option<usize>) -> Parsed<QueryRequest> {
    QueryRequest::from_json(v, UnknownFields::Refuse).map_err(|e| match i {
        Some(i) => e.within(&format!("queries[{i}]")),
        None => e,
    })
}

/// The URL parameters of a request: a write's [`WriteOptions`]; `allowed`
/// are the parameters the endpoint takes (none for the others).
pub fn parse_params(query: Option<&str>, allowed: &[&str]) -> Parsed<WriteOptions> {
    parse_params_as(query, allowed)
}

/// `GET /clusters`' URL parameters (docs/review.md).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct ClusterListParams {
    /// `size` (largest first, the default) or `id`.
    pub sort: Option<crate::db::review::ClusterOrder>,
    /// The `next` of the previous page.
    pub after: Option<String>,
    /// Clusters per page ([`CLUSTERS_PER_PAGE`] by default, at most
    /// [`MAX_CLUSTERS_PER_PAGE`]).
    pub limit: Option<usize>,
    /// Only clusters of at least this many documents (>= 2).
    pub min_size: Option<u64>,
    /// Members listed with each cluster ([`MEMBERS_LISTED`] by default, at
    /// most [`MAX_CLUSTERS_PER_PAGE`]).
    pub members: Option<usize>,
    /// Only clusters whose representative's source begins with this.
    pub source: Option<String>,
}

/// `GET /cluster`'s URL parameters: a stored document's id, and a page of
/// its cluster's members.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct ClusterParams {
    pub id: Option<String>,
    pub after: Option<String>,
    /// Members per page ([`MEMBERS_PER_PAGE`] by default, at most
    /// [`MAX_MEMBERS_PER_PAGE`]).
    pub limit: Option<usize>,
}

/// `GET /decisions`' URL parameters: a page of the decision log.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct DecisionListParams {
    /// The `next` of the previous page (a sequence; 0: from the first).
    pub after: Option<u64>,
    /// Entries per page ([`MEMBERS_PER_PAGE`] by default, at most
    /// [`MAX_MEMBERS_PER_PAGE`]).
    pub limit: Option<usize>,
}

/// What `POST /decisions` asks (docs/service.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionRequest {
    /// `{"not_a_copy": [A, B]}`.
    NotACopy(String, String),
    /// `{"keep": ID}`.
    Keep(String),
    /// `{"undo": SEQ}`.
    Undo(u64),
}

/// The largest body of `POST /decisions` (413 above it): two ids of at
/// most 4,096 bytes each, every byte written as a six-character JSON
/// escape, fit in it.
pub const MAX_DECISION_BODY: usize = 64 << 10;

/// The body of `POST /decisions`: `{"not_a_copy": ["A", "B"]}`,
/// `{"keep": "ID"}` or `{"undo": SEQ}`, nothing else.
pub fn parse_decision(body: &[u8]) -> Parsed<DecisionRequest> {
    const WANT: &str =
        "expected {\"not_a_copy\": [\"A\", \"B\"]}, {\"keep\": \"ID\"} or {\"undo\": SEQ}";
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest::new(format!("the body is not JSON ({e}): {WANT}")))?;
    let Value::Object(m) = v else {
        return Err(BadRequest::new(WANT));
    };
    let mut fields = m.into_iter();
    let (Some((key, value)), None) = (fields.next(), fields.next()) else {
        return Err(BadRequest::new(format!("one decision per request: {WANT}")));
    };
    match (key.as_str(), value) {
        ("not_a_copy", Value::Array(ids)) => match ids.as_slice() {
            [Value::String(a), Value::String(b)] => {
                Ok(DecisionRequest::NotACopy(a.clone(), b.clone()))
            }
            _ => Err(BadRequest::field(
                "not_a_copy",
                "must be the ids of two documents, [\"A\", \"B\"]",
            )),
        },
        ("keep", Value::String(id)) => Ok(DecisionRequest::Keep(id)),
        ("keep", _) => Err(BadRequest::field(
            "keep",
            "must be the id of a document, \"ID\"",
        )),
        ("undo", Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
            Ok(DecisionRequest::Undo(n.as_u64().unwrap_or_default()))
        }
        ("not_a_copy", _) => Err(BadRequest::field(
            "not_a_copy",
            "must be the ids of two documents, [\"A\", \"B\"]",
        )),
        ("undo", _) => Err(BadRequest::field(
            "undo",
            "must be the sequence of a decision, a positive integer",
        )),
        (other, _) => Err(BadRequest::field(other.to_string(), WANT)),
    }
}

/// `GET /diff`'s URL parameters: the ids of two stored documents.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct DiffParams {
    pub a: Option<String>,
    pub b: Option<String>,
}

/// `GET /calibration`'s URL parameters: those of `simdb calibrate`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct CalibrationParams {
    /// Documents sampled ([`CALIBRATION_SAMPLE`] by default, at most
    /// [`MAX_CALIBRATION_SAMPLE`]).
    pub sample: Option<usize>,
    pub seed: Option<u64>,
    /// Neighbours searched up to this distance (0..=11, 11 by default).
    pub k: Option<u32>,
    /// The threshold (the store's by default).
    pub min_similarity: Option<f64>,
}

/// Documents `GET /calibration` samples unless asked.
pub const CALIBRATION_SAMPLE: usize = 2000;
/// The most documents `GET /calibration` samples (each a k = 11 search).
pub const MAX_CALIBRATION_SAMPLE: usize = 20_000;

/// Clusters a page of `GET /clusters` lists unless asked.
pub const CLUSTERS_PER_PAGE: usize = 20;
/// The most clusters (and members of each) a page of `GET /clusters` lists.
pub const MAX_CLUSTERS_PER_PAGE: usize = 100;
/// Members each cluster of `GET /clusters` lists unless asked.
pub const MEMBERS_LISTED: usize = 5;
/// Members a page of `GET /cluster` lists unless asked.
pub const MEMBERS_PER_PAGE: usize = 100;
/// The most members a page of `GET /cluster` lists.
pub const MAX_MEMBERS_PER_PAGE: usize = 1000;

/// A count parameter (a page size, a sample): `value` (or `default`) when
/// it is 1 to `max`; else a 400 naming `name`.
pub fn bounded_count(
    name: &str,
    value: Option<usize>,
    default: usize,
    max: usize,
) -> Parsed<usize> {
    match value.unwrap_or(default) {
        n @ 1.. if n <= max => Ok(n),
        n => Err(BadRequest::field(
            name,
            format!("{n} is not between 1 and {max}"),
        )),
    }
}

/// The URL parameters of a request as `T`; `allowed` are the parameters
/// the endpoint takes: any other is refused, naming it.
pub fn parse_params_as<T: serde::de::DeserializeOwned>(
    query: Option<&str>,
    allowed: &[&str],
) -> Parsed<T> {
    let query = query.unwrap_or("");
    for (name, _) in form_urlencoded::parse(query.as_bytes()) {
        if !allowed.contains(&name.as_ref()) {
            return Err(BadRequest::field(
                name,
                if allowed.is_empty() {
                    "unknown parameter; this endpoint takes none".to_string()
                } else {
                    format!(
                        "unknown parameter; this endpoint takes {}",
                        allowed.join(", ")
                    )
                },
            ));
        }
    }
    deserialize_at(serde_urlencoded::Deserializer::new(form_urlencoded::parse(
        query.as_bytes(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Subject;
    use crate::fingerprint::Content;
    use proptest::prelude::*;

    #[test]
    fn documents_one_or_many() {
        let (d, batch) = parse_documents(br#"{"id":"a","text":"x y"}"#, 10).unwrap();
        assert!(!batch);
        assert_eq!(d[0].id, "a");
        let (d, batch) = parse_documents(
            br#"[{"id":1,"text":"x"},{"id":"b","fingerprint":"00000000000000ff"}]"#,
            10,
        )
        .unwrap();
        assert!(batch);
        assert_eq!(d[0].id, "1");
        assert_eq!(d[1].source, "http:1");
    }

    #[test]
    fn document_errors_name_the_field() {
        let e = parse_documents(br#"[{"id":"a","text":"x"},{"id":"b","text":5}]"#, 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("[1].text"));
        assert!(e.message.contains("must be a string"), "{e}");
        let e = parse_documents(br#"{"text":"x"}"#, 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("id"));
        let e = parse_documents(br#"[{"id":"a","text":"x"}, 7]"#, 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("[1]"));
        let e = parse_documents(br#"[{},{},{}]"#, 2).unwrap_err();
        assert!(e.message.contains("at most 2"), "{e}");
        let e = parse_documents(b"[]", 2).unwrap_err();
        assert!(e.message.contains("no document"), "{e}");
        let e = parse_documents(b"{\"id\":", 2).unwrap_err();
        assert!(e.message.starts_with("invalid JSON"), "{e}");
        let e = parse_documents(b"  ", 2).unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
    }

    /// Review 2026-11-b, finding 6: a document's other fields were parsed
    /// whole (one 60 MB array of zeros beside the text cost 1.07 GB) and
    /// accepted. They are refused at their name, and a known field of the
    /// wrong shape at its first character, with the field's path.
    #[test]
    fn regression_review_b_6_unknown_and_misshapen_fields_are_refused_unread() {
        let zeros = format!("[{}0]", "0,".repeat(1 << 20));
        let body = format!(r#"[{{"id":"a","text":"x"}},{{"id":"b","text":"y","x":{zeros}}}]"#);
        let e = parse_documents(body.as_bytes(), 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("[1].x"), "{e}");
        assert!(e.message.contains("unknown field \"x\""), "{e}");
        let body = format!(r#"{{"id":"a","text":{zeros}}}"#);
        let e = parse_documents(body.as_bytes(), 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("text"), "{e}");
        assert!(e.message.contains("must be a string, not an array"), "{e}");
        let body = format!(r#"{{"id":"a","features":{{"w":{zeros}}}}}"#);
        let e = parse_documents(body.as_bytes(), 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("features"), "{e}");
        let e = parse_documents(br#"{"id":"a","id":"b","text":"x"}"#, 10).unwrap_err();
        assert!(e.message.contains("twice"), "{e}");
        // Features in both shapes, and priority null, still parse.
        let (d, _) = parse_documents(
            br#"[{"id":"a","features":{"x":1,"y":2.5}},{"id":"b","features":[["x",1]],"priority":null}]"#,
            10,
        )
        .unwrap();
        assert_eq!(
            d[0].content,
            Content::Features(vec![("x".into(), 1.0), ("y".into(), 2.5)])
        );
        assert_eq!(d[1].content, Content::Features(vec![("x".into(), 1.0)]));
        // Queries: an unknown field at its name, a known one of the wrong
        // shape at its first character, in a batch with the item's path.
        let body = format!(r#"{{"text":"x","x":{zeros}}}"#);
        let e = parse_queries(body.as_bytes(), 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("x"), "{e}");
        assert!(e.message.contains("unknown field"), "{e}");
        let body = format!(r#"{{"queries":[{{"text":"a"}},{{"text":{zeros}}}]}}"#);
        let e = parse_queries(body.as_bytes(), 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("queries[1].text"), "{e}");
        let e = parse_queries(format!("[{zeros}]").as_bytes(), 10).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("body"), "{e}");
    }

    #[test]
    fn queries_one_or_batch() {
        let (q, batch) =
            parse_queries(br#"{"text":"abc","k":5,"limit":3,"explain":true}"#, 10).unwrap();
        assert!(!batch);
        assert_eq!(q[0].subject, Subject::Text("abc".into()));
        let o = q[0].options;
        assert_eq!((o.k, o.limit, o.explain), (Some(5), Some(3), true));
        let (q, batch) = parse_queries(
            br#"{"queries":[{"fingerprint":"00000000000000ff"},{"id":7}]}"#,
            10,
        )
        .unwrap();
        assert!(batch);
        assert_eq!(q[1].subject, Subject::Id("7".into()));
    }

    #[test]
    fn query_errors_name_the_field() {
        let cases: &[(&[u8], &str, &str)] = &[
            (br#"{"text":"a","kk":3}"#, "kk", "unknown field"),
            (br#"{"text":"a","k":12}"#, "k", "out of range"),
            (br#"{"text":"a","k":-1}"#, "k", "expected u64"),
            (
                br#"{"text":"a","min_similarity":2}"#,
                "min_similarity",
                "between 0 and 1",
            ),
            (
                br#"{"text":"a","explain":"yes"}"#,
                "explain",
                "true or false",
            ),
            (
                br#"{"text":"a","fingerprint":"00000000000000ff"}"#,
                "fingerprint",
                "not several",
            ),
            (br#"{"fingerprint":"xyz"}"#, "fingerprint", ""),
            (br#"{"text":7}"#, "text", "expected a string"),
            (
                br#"{"queries":[{"text":"a"},{"text":"b","limit":"x"}]}"#,
                "queries[1].limit",
                "expected u64",
            ),
            (
                br#"{"queries":[{"text":"a"}],"k":3}"#,
                "k",
                "a batch has only",
            ),
            (br#"{"queries":{}}"#, "queries", "must be an array"),
            (
                br#"{"text":"a","probe_budget":99999999}"#,
                "probe_budget",
                "buckets",
            ),
        ];
        for (body, field, msg) in cases {
            let e = parse_queries(body, 10).unwrap_err();
            assert_eq!(
                e.field.as_deref(),
                Some(*field),
                "{}",
                String::from_utf8_lossy(body)
            );
            assert!(e.message.contains(msg), "{e}");
        }
        let e = parse_queries(br#"{"k":3}"#, 10).unwrap_err();
        assert!(
            e.field.is_none() && e.message.contains("give one of"),
            "{e}"
        );
    }

    #[test]
    fn params() {
        let p = parse_params(Some("sync=true&k=5"), &["sync", "k"]).unwrap();
        assert_eq!((p.sync, p.k), (true, Some(5)));
        let p = parse_params(Some("sync"), &["sync"]).unwrap();
        assert!(p.sync);
        let e = parse_params(Some("sink=true"), &["sync"]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sink"));
        let e = parse_params(Some("k=12"), &["k"]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("k"));
        let e = parse_params(Some("sync=maybe"), &["sync"]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("sync"));
        let e = parse_params(Some("x=1"), &[]).unwrap_err();
        assert!(e.message.contains("takes none"), "{e}");
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z0-9 ]{0,8}".prop_map(Value::from),
            "[0-9a-f]{16}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("id".to_string()),
                            Just("text".to_string()),
                            Just("fingerprint".to_string()),
                            Just("features".to_string()),
                            Just("priority".to_string()),
                            Just("queries".to_string()),
                            Just("k".to_string()),
                            Just("limit".to_string()),
                            Just("explain".to_string()),
                            Just("min_similarity".to_string()),
                            "[a-z]{1,6}",
                        ],
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any JSON value, and any bytes, parse to a request or to an
        /// error with a message; never a panic. An error about an element
        /// of a batch names that element.
        #[test]
        fn parsing_never_panics(v in json_value(), raw in prop::collection::vec(any::<u8>(), 0..64)) {
            let body = serde_json::to_vec(&v).unwrap();
            for b in [&body[..], &raw[..]] {
                match parse_documents(b, 4) {
                    Ok((docs, _)) => prop_assert!(!docs.is_empty() && docs.len() <= 4),
                    Err(e) => {
                        prop_assert!(!e.message.is_empty());
                        if let (Value::Array(items), Some(f)) = (&v, &e.field) {
                            if b == &body[..] && f.starts_with('[') {
                                let i: usize = f[1..f.find(']').unwrap()].parse().unwrap();
                                prop_assert!(i < items.len());
                            }
                        }
                    }
                }
                match parse_queries(b, 4) {
                    Ok((qs, _)) => prop_assert!(!qs.is_empty() && qs.len() <= 4),
                    Err(e) => prop_assert!(!e.message.is_empty()),
                }
            }
        }

        /// A well-formed document always parses, with its id and text.
        #[test]
        fn good_documents_parse(ids in prop::collection::vec("[a-z0-9/]{1,12}", 1..6), text in "\\PC{1,40}") {
            let docs: Vec<Value> = ids.iter().map(|id| serde_json::json!({"id": id, "text": text, "priority": 1.5})).collect();
            let (parsed, batch) = parse_documents(&serde_json::to_vec(&docs).unwrap(), 8).unwrap();
            prop_assert!(batch);
            prop_assert_eq!(parsed.len(), ids.len());
            for (d, id) in parsed.iter().zip(&ids) {
                prop_assert_eq!(&d.id, id);
                prop_assert_eq!(&d.content, &Content::Text(text.clone()));
            }
        }
    }
}
