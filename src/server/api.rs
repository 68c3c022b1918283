//! The service's request shapes, parsed from JSON with the field at fault
//! in every error (pure: no store, no HTTP).
//!
//! - Documents (`POST /documents`, `POST /documents/check`): one document
//!   object, or an array of them; each is read as a JSONL line of `simdb
//!   ingest` is (`"id"`, one of `"text"`, `"features"`, `"fingerprint"`,
//!   optional `"priority"`; other fields ignored).
//! - Queries (`POST /query`): one query object, or `{"queries": [...]}`;
//!   each a [`QueryRequest`] (the library's model: `"text"`,
//!   `"fingerprint"` or `"id"`, and the options by name); any other field
//!   is refused (a misspelt option must not pass silently).
//! - URL parameters of writes: the [`WriteOptions`] by name.

use serde_json::{Map, Value};

use crate::db::request::{deserialize_at, json_kind as kind, FieldError, UnknownFields};
use crate::db::write::Doc;
use crate::db::{QueryRequest, WriteOptions};
use crate::ingest::read::doc_from_value;

/// A request that cannot be answered as asked: what was wrong and, when
/// it concerns one field, its path (`documents[3].text`, `k`).
pub type BadRequest = FieldError;

type Parsed<T> = std::result::Result<T, BadRequest>;

/// Parses `body`, never holding more than `max` items of its batch array:
/// a top-level array, or the `"queries"` array of a top-level object, of
/// more is refused at item `max + 1`, before the rest is read (a 60 MB
/// array of zeros costs no more than its first `max` items). `what` names
/// the items in the error ("documents", "queries").
fn parse_top(body: &[u8], max: usize, what: &'static str) -> Parsed<Value> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::cell::Cell;
    use std::fmt;

    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(BadRequest::new("the request body is empty (JSON expected)"));
    }
    /// Any JSON value; an array at the top, or the `"queries"` of an
    /// object at the top, of at most `max` items (sets `over` and fails
    /// beyond).
    #[derive(Clone, Copy)]
    struct Bounded<'a> {
        max: usize,
        over: &'a Cell<bool>,
        top: bool,
    }
    impl<'de> DeserializeSeed<'de> for Bounded<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Bounded<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while items.len() < self.max {
                match seq.next_element::<Value>()? {
                    Some(v) => items.push(v),
                    None => return Ok(Value::Array(items)),
                }
            }
            if seq.next_element::<IgnoredAny>()?.is_some() {
                self.over.set(true);
                return Err(serde::de::Error::custom("too many items"));
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut m = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let v = match self.top && key == "queries" {
                    true => map.next_value_seed(Bounded { top: false, ..self })?,
                    false => map.next_value::<Value>()?,
                };
                m.insert(key, v);
            }
            Ok(Value::Object(m))
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
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
    }
    let over = Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(body);
    let top = Bounded {
        max,
        over: &over,
        top: true,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match top {
        Ok(v) => Ok(v),
        Err(_) if over.get() => Err(BadRequest::new(format!(
            "the batch holds more than {max} {what}; at most {max} per request"
        ))),
        Err(e) => Err(BadRequest::new(format!("invalid JSON: {e}"))),
    }
}

/// The documents of a write request (at most `max_batch`), each with the
/// source `http:INDEX` (its place in the request). `batch` says whether
/// the body was an array.
pub fn parse_documents(body: &[u8], max_batch: usize) -> Parsed<(Vec<Doc>, bool)> {
    let (items, batch) = match parse_top(body, max_batch, "documents")? {
        Value::Array(items) => (items, true),
        v @ Value::Object(_) => (vec![v], false),
        other => {
            return Err(BadRequest::new(format!(
                "expected a document object or an array of them, not {}",
                kind(&other)
            )))
        }
    };
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
            Ok((id, content, priority)) => Ok(Doc {
                id,
                content,
                source: format!("http:{i}"),
                line: None,
                priority,
            }),
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
    let Value::Object(mut m) = parse_top(body, max_batch, "queries")? else {
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
        let e = parse_documents(br#"[1,2,3]"#, 2).unwrap_err();
        assert!(e.message.contains("at most 2"), "{e}");
        let e = parse_documents(b"[]", 2).unwrap_err();
        assert!(e.message.contains("no document"), "{e}");
        let e = parse_documents(b"{\"id\":", 2).unwrap_err();
        assert!(e.message.starts_with("invalid JSON"), "{e}");
        let e = parse_documents(b"  ", 2).unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
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
                "not both",
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
            let docs: Vec<Value> = ids.iter().map(|id| serde_json::json!({"id": id, "text": text, "url": "x"})).collect();
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
