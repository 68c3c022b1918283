//! The request model every front end speaks: what a query asks, what a
//! write asks, their defaults and their checks, in one place.
//!
//! - A **query** ([`QueryRequest`]) is a [`Subject`] (a text, a
//!   fingerprint, or a stored document's id) plus [`QueryOptions`]. As
//!   JSON (the service's `POST /query`, the lines of `simdb query
//!   --batch`) it is one object: exactly one of `"text"` or
//!   `"fingerprint"`, or neither and an `"id"`, plus the options by name.
//!   `"id"` always names a document: beside a text or fingerprint it names
//!   that content (a document line as `simdb ingest` reads it; the id is
//!   echoed as the answer's `"query"`); alone it is the stored document to
//!   query (left out of its own answer).
//! - A **write** is documents, a [`DuplicatePolicy`] and [`WriteOptions`].
//!
//! The CLI's flags, the service's JSON and URL parameters and Python's
//! keywords are translated into these types; [`Db::answer`],
//! [`Db::answer_many`] and [`WriteOptions::resolve`] apply the defaults
//! (`k` = 3 probed at the default budget, the store's threshold, a limit of
//! [`limits::DEFAULT_LIMIT`]). Options parsed from JSON are checked while
//! they are read, so an error names the field by its serde path
//! (`queries[3].k`).

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::write::{DuplicatePolicy, WritePolicy};
use super::{limits, Db, Query, DEFAULT_MIN_SIMILARITY};
use crate::explain::Explanation;
use crate::fingerprint::{self, Fingerprint};
use crate::{index, Error, Hit, Result};

/// `k` if it is a distance queries answer (0..=[`fingerprint::MAX_EXACT_K`]).
pub fn check_k(k: u32) -> Result<u32> {
    fingerprint::check_k(k).map(|()| k)
}

/// `b` if it is a probe budget (at most [`index::MAX_PROBE_BUDGET`] buckets).
pub fn check_probe_budget(b: usize) -> Result<usize> {
    if b > index::MAX_PROBE_BUDGET {
        return Err(Error::Input(format!(
            "probe budget {b} is more than {} buckets",
            index::MAX_PROBE_BUDGET
        )));
    }
    Ok(b)
}

/// `s` if it is a similarity threshold (0..=1).
pub fn check_min_similarity(s: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&s) {
        return Err(Error::Input(format!(
            "min_similarity {s} is not between 0 and 1"
        )));
    }
    Ok(s)
}

/// The threshold `given`, checked, or `default` (the store's).
pub fn min_similarity_or(given: Option<f64>, default: f64) -> Result<f64> {
    given.map_or(Ok(default), check_min_similarity)
}

/// The exact radius and probe budget of a query or write that gives `k`
/// and a probe `budget`, or leaves them out: without k, k = 3 probed at
/// [`index::DEFAULT_PROBE_BUDGET`]; with k alone, exact at k (budget 0).
pub fn search_mode(k: Option<u32>, budget: Option<usize>) -> Result<(u32, usize)> {
    k.map(check_k).transpose()?;
    budget.map(check_probe_budget).transpose()?;
    Ok(match (k, budget) {
        (None, b) => (3, b.unwrap_or(index::DEFAULT_PROBE_BUDGET)),
        (Some(k), b) => (k, b.unwrap_or(0)),
    })
}

/// How a query is asked; `None` leaves each to its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueryOptions {
    /// Exact radius (0..=11). Without it, k = 3 and confidence-ranked
    /// probing beyond; with it alone, exactly the documents within k.
    #[serde(deserialize_with = "de_k")]
    pub k: Option<u32>,
    /// Buckets probed beyond k (at most [`index::MAX_PROBE_BUDGET`]; 0 =
    /// exact at k); see [`search_mode`].
    #[serde(deserialize_with = "de_probe_budget")]
    pub probe_budget: Option<usize>,
    /// The store's threshold ([`Admin::default_min_similarity`](super::Admin::default_min_similarity)) when `None`.
    #[serde(deserialize_with = "de_min_similarity")]
    pub min_similarity: Option<f64>,
    /// [`limits::DEFAULT_LIMIT`] when `None`; at most [`limits::MAX_LIMIT`].
    #[serde(deserialize_with = "de_limit")]
    pub limit: Option<usize>,
    /// Explain each hit by the terms the two sides share.
    #[serde(deserialize_with = "de_flag")]
    pub explain: bool,
}

impl QueryOptions {
    /// The options' names, as JSON and URL parameters spell them.
    pub const FIELDS: [&'static str; 5] =
        ["k", "probe_budget", "min_similarity", "limit", "explain"];

    /// The same checks as reading them from JSON, for options built in
    /// code (the CLI's flags, Python's keywords).
    pub fn check(&self) -> Result<()> {
        self.apply(Query::new(Fingerprint(0)), DEFAULT_MIN_SIMILARITY)
            .map(drop)
    }

    /// These options, each one not given taken from `fallback`.
    pub fn or(self, fallback: QueryOptions) -> QueryOptions {
        QueryOptions {
            k: self.k.or(fallback.k),
            probe_budget: self.probe_budget.or(fallback.probe_budget),
            min_similarity: self.min_similarity.or(fallback.min_similarity),
            limit: self.limit.or(fallback.limit),
            explain: self.explain || fallback.explain,
        }
    }

    /// The limit the answer has: the given one or [`limits::DEFAULT_LIMIT`].
    pub fn limit_or_default(&self) -> usize {
        self.limit.unwrap_or(limits::DEFAULT_LIMIT)
    }

    /// `base` asked with these options: radius and budget as
    /// [`search_mode`] decides, the threshold defaulting to
    /// `default_min_similarity` (the store's), the limit to
    /// [`limits::DEFAULT_LIMIT`] (every answer is bounded, whatever the
    /// store holds).
    pub fn apply(&self, base: Query, default_min_similarity: f64) -> Result<Query> {
        let (k, budget) = search_mode(self.k, self.probe_budget)?;
        let min_similarity = min_similarity_or(self.min_similarity, default_min_similarity)?;
        Ok(Query {
            k,
            limit: Some(limits::query_limit(self.limit)?),
            min_similarity,
            ..base.with_budget(budget)
        })
    }
}

/// What a query asks about.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    Text(String),
    /// A web page, queried by the text extracted from it (as a page is
    /// written: [`crate::web::page`]).
    Html(crate::fingerprint::Html),
    Fingerprint(Fingerprint),
    /// A stored document, left out of its own answer.
    Id(String),
}

/// One query: a subject, the options it is asked with, and the label its
/// answer carries.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRequest {
    pub subject: Subject,
    /// The `"id"` given beside a text or fingerprint (a string or an
    /// integer, as given), echoed as the answer's `"query"`.
    pub label: Option<Value>,
    pub options: QueryOptions,
}

/// What to do with fields a JSON query does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownFields {
    /// Refuse them, naming the field (the service: a misspelt option must
    /// not pass silently).
    Refuse,
    /// Leave them (`simdb query --batch` reads document files, whose lines
    /// carry other fields).
    Ignore,
}

/// A request that cannot be answered as asked: what was wrong and, when it
/// concerns one field, its path (`queries[3].k`, `[1].text`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: Option<String>,
    pub message: String,
}

impl FieldError {
    pub fn new(message: impl Into<String>) -> FieldError {
        FieldError {
            field: None,
            message: message.into(),
        }
    }

    pub fn field(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// The same error inside `at` (`queries[3]`): its field path prefixed.
    pub fn within(self, at: &str) -> FieldError {
        let field = match self.field {
            Some(f) if f.starts_with('[') => format!("{at}{f}"),
            Some(f) => format!("{at}.{f}"),
            None => at.to_string(),
        };
        FieldError {
            field: Some(field),
            message: self.message,
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for FieldError {}

/// The name of a JSON value's kind, for error messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `T` read from `d`, or the error with the path of the field at fault.
pub fn deserialize_at<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<T, FieldError>
where
    D::Error: std::fmt::Display,
{
    serde_path_to_error::deserialize(d).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        match path.as_str() {
            "." | "" => FieldError::new(message),
            _ => FieldError::field(path, message),
        }
    })
}

/// The subject fields of a JSON query, each checked as it is read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubjectFields {
    text: Option<String>,
    html: Option<String>,
    fingerprint: Option<Fingerprint>,
    #[serde(default, deserialize_with = "de_id")]
    id: Option<String>,
}

pub(crate) const SUBJECT_FIELDS: [&str; 4] = ["text", "html", "fingerprint", "id"];

/// Whether `key` is a field of a JSON query (its subject or an option).
#[cfg(feature = "server")]
pub(crate) fn is_query_field(key: &str) -> bool {
    SUBJECT_FIELDS.contains(&key) || QueryOptions::FIELDS.contains(&key)
}

impl QueryRequest {
    /// A query of `subject` with the default options.
    pub fn new(subject: Subject) -> QueryRequest {
        QueryRequest {
            subject,
            label: None,
            options: QueryOptions::default(),
        }
    }

    /// The same query asked with `options`.
    pub fn with(self, options: QueryOptions) -> QueryRequest {
        QueryRequest { options, ..self }
    }

    /// Reads one JSON query from its bytes (a line of `query --batch`).
    pub fn from_slice(
        bytes: &[u8],
        unknown: UnknownFields,
    ) -> std::result::Result<Self, FieldError> {
        let v = serde_json::from_slice(bytes)
            .map_err(|e| FieldError::new(format!("invalid JSON: {e}")))?;
        QueryRequest::from_json(v, unknown)
    }

    /// Reads one JSON query (see the module's description).
    pub fn from_json(v: Value, unknown: UnknownFields) -> std::result::Result<Self, FieldError> {
        let Value::Object(m) = v else {
            return Err(FieldError::new(format!(
                "a query must be a JSON object, not {}",
                json_kind(&v)
            )));
        };
        let (mut subject, mut options) = (Map::new(), Map::new());
        for (key, value) in m {
            if SUBJECT_FIELDS.contains(&key.as_str()) {
                subject.insert(key, value);
            } else if QueryOptions::FIELDS.contains(&key.as_str()) {
                options.insert(key, value);
            } else if unknown == UnknownFields::Refuse {
                let known = SUBJECT_FIELDS.iter().chain(&QueryOptions::FIELDS);
                return Err(FieldError::field(
                    key,
                    format!(
                        "unknown field; a query has {}",
                        known
                            .map(|f| format!("\"{f}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        let id = subject.get("id").cloned();
        let s: SubjectFields = deserialize_at(Value::Object(subject))?;
        let options: QueryOptions = deserialize_at(Value::Object(options))?;
        // "id" beside a content labels it; alone it is the subject.
        let given = [s.text.is_some(), s.html.is_some(), s.fingerprint.is_some()];
        let label = given.contains(&true).then_some(id).flatten();
        if given.iter().filter(|g| **g).count() > 1 {
            let last = ["text", "html", "fingerprint"][given.iter().rposition(|g| *g).unwrap_or(0)];
            return Err(FieldError::field(
                last,
                "give one of \"text\", \"html\" or \"fingerprint\", not several",
            ));
        }
        let subject = match (s.text, s.html, s.fingerprint, s.id) {
            (Some(t), ..) => Subject::Text(t),
            // JSON text is Unicode: the transport's UTF-8 comes before the
            // page's own charset declarations.
            (_, Some(h), ..) => Subject::Html(crate::fingerprint::Html {
                bytes: h.into_bytes(),
                charset: Some("utf-8".into()),
            }),
            (_, _, Some(fp), _) => Subject::Fingerprint(fp),
            (.., Some(id)) => Subject::Id(id),
            (None, None, None, None) => {
                return Err(FieldError::new(
                    "give one of \"text\", \"html\", \"fingerprint\" or \"id\"",
                ))
            }
        };
        Ok(QueryRequest {
            subject,
            label,
            options,
        })
    }
}

/// The answer to one [`QueryRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The request's label.
    pub query: Option<Value>,
    /// The query's fingerprint.
    pub fingerprint: Fingerprint,
    /// Nearest first, then by id; at most `limit`.
    pub hits: Vec<Hit>,
    /// The limit the query was asked with.
    pub limit: usize,
    /// Whether the search looked at every candidate or reached the limit
    /// (see [`crate::db::Found::complete`]).
    pub complete: bool,
    /// With `explain`: the query's weighted terms (heaviest first; none
    /// for a bare fingerprint) and each hit explained.
    pub explained: Option<Explained>,
}

/// An [`Answer`]'s explanation.
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    pub query_terms: Vec<(String, f64)>,
    pub hits: Vec<Explanation>,
}

/// As `simdb query --json` and the service answer: `fingerprint`, `hits`
/// (explained with `explain`, beside the query's top
/// [`fingerprint::TOP_TERMS`] terms as `query_terms`), `complete`, and
/// `query`, the request's label, when it has one.
impl Serialize for Answer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Hits<'a> {
            Plain(&'a [Hit]),
            Explained(&'a [Explanation]),
        }
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            query: Option<&'a Value>,
            fingerprint: Fingerprint,
            #[serde(skip_serializing_if = "Option::is_none")]
            query_terms: Option<&'a [(String, f64)]>,
            hits: Hits<'a>,
            complete: bool,
        }
        Wire {
            query: self.query.as_ref(),
            fingerprint: self.fingerprint,
            query_terms: self
                .explained
                .as_ref()
                .map(|e| &e.query_terms[..e.query_terms.len().min(fingerprint::TOP_TERMS)]),
            hits: match &self.explained {
                Some(e) => Hits::Explained(&e.hits),
                None => Hits::Plain(&self.hits),
            },
            complete: self.complete,
        }
        .serialize(s)
    }
}

/// How a write is asked; `None` leaves each to its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WriteOptions {
    /// A document within k (of a confirmed sketch) is a duplicate; see
    /// [`QueryOptions::k`].
    #[serde(deserialize_with = "de_k")]
    pub k: Option<u32>,
    #[serde(deserialize_with = "de_probe_budget")]
    pub probe_budget: Option<usize>,
    #[serde(deserialize_with = "de_min_similarity")]
    pub min_similarity: Option<f64>,
    /// Duplicates each written document lists ([`limits::DEFAULT_MAX_DUPLICATES`],
    /// at most [`limits::MAX_DUPLICATES`]).
    #[serde(deserialize_with = "de_max_duplicates")]
    pub max_duplicates: Option<usize>,
    /// fsync before the write counts as done.
    #[serde(deserialize_with = "de_flag")]
    pub sync: bool,
}

impl WriteOptions {
    /// The options' names, as URL parameters spell them.
    pub const FIELDS: [&'static str; 5] = [
        "k",
        "probe_budget",
        "min_similarity",
        "max_duplicates",
        "sync",
    ];

    /// The same checks as reading them, for options built in code.
    pub fn check(&self) -> Result<()> {
        self.resolve(DuplicatePolicy::IndexAll, None).map(drop)
    }

    /// The write policy of a write with `policy` into `db`: every option
    /// not given takes the store's default (its threshold depends on its
    /// recipe's sketch). Every front end resolves its options here.
    pub fn policy_for(&self, db: &Db, policy: DuplicatePolicy) -> Result<WritePolicy> {
        self.resolve(policy, Some(db.default_min_similarity()))
    }

    /// The write policy of a write with `policy` to a store whose
    /// threshold is `default_min_similarity` (`None`: no store yet,
    /// [`DEFAULT_MIN_SIMILARITY`]; [`WriteOptions::policy_for`] with a store).
    pub fn resolve(
        &self,
        policy: DuplicatePolicy,
        default_min_similarity: Option<f64>,
    ) -> Result<WritePolicy> {
        let (k, probe_budget) = search_mode(self.k, self.probe_budget)?;
        Ok(WritePolicy {
            k,
            probe_budget,
            policy,
            sync: self.sync,
            min_similarity: min_similarity_or(
                self.min_similarity,
                default_min_similarity.unwrap_or(DEFAULT_MIN_SIMILARITY),
            )?,
            max_duplicates: limits::max_duplicates(self.max_duplicates)?,
        })
    }
}

/// Weighted terms, heaviest first.
type Terms = Vec<(String, f64)>;

impl Db {
    /// The threshold `given`, checked, or the store's default
    /// ([`Admin::default_min_similarity`](super::Admin::default_min_similarity)).
    pub(crate) fn min_similarity_or_default(&self, given: Option<f64>) -> Result<f64> {
        min_similarity_or(given, self.default_min_similarity())
    }

    /// The [`Query`] of `r` and, with `explain`, the query's weighted terms.
    fn prepare(&self, r: &QueryRequest) -> Result<(Query, Option<Terms>)> {
        let explain = r.options.explain;
        let (base, terms) = match &r.subject {
            Subject::Text(t) => (self.text_query(t)?, explain.then(|| self.text_terms(t))),
            Subject::Html(h) => {
                let t = h.page().text();
                (self.text_query(&t)?, explain.then(|| self.text_terms(&t)))
            }
            Subject::Fingerprint(fp) => (Query::new(*fp), explain.then(Vec::new)),
            Subject::Id(id) => {
                let rec = self
                    .get(id)?
                    .ok_or_else(|| Error::NotFound { id: id.clone() })?;
                let terms = explain.then(|| self.record_terms(&rec));
                (self.record_query(id, &rec), terms)
            }
        };
        Ok((r.options.apply(base, self.default_min_similarity())?, terms))
    }

    fn answer_of(
        &self,
        r: &QueryRequest,
        q: &Query,
        terms: Option<Terms>,
        found: super::Found,
    ) -> Result<Answer> {
        let super::Found { hits, complete } = found;
        let explained = match terms {
            Some(query_terms) => Some(Explained {
                hits: self.explain(&query_terms, &hits)?,
                query_terms,
            }),
            None => None,
        };
        Ok(Answer {
            query: r.label.clone(),
            fingerprint: q.fingerprint,
            limit: q.limit.unwrap_or(usize::MAX),
            hits,
            complete,
            explained,
        })
    }

    /// Answers one query: its options applied to its subject (see
    /// [`QueryOptions::apply`]), searched ([`Db::search`]), explained when
    /// asked.
    pub fn answer(&self, r: &QueryRequest) -> Result<Answer> {
        let (q, terms) = self.prepare(r)?;
        let found = self.find(&q)?;
        self.answer_of(r, &q, terms, found)
    }

    /// Answers many queries, in their order, with one pass over the index
    /// for all of them ([`Db::find_many`]; their texts analysed in
    /// parallel). A query that cannot be asked (a text without features,
    /// an id not stored) has its error in its place; an error of the store
    /// fails the whole.
    pub fn answer_many(&self, rs: &[QueryRequest]) -> Result<Vec<Result<Answer>>> {
        use rayon::prelude::*;
        let prepared: Vec<Result<(Query, Option<Terms>)>> =
            rs.par_iter().map(|r| self.prepare(r)).collect();
        let qs: Vec<Query> = prepared
            .iter()
            .filter_map(|p| p.as_ref().ok().map(|(q, _)| q.clone()))
            .collect();
        let mut found = self.find_many(&qs)?.into_iter();
        rs.iter()
            .zip(prepared)
            .map(|(r, p)| match p {
                Ok((q, terms)) => {
                    let f = found.next().unwrap_or(super::Found {
                        hits: Vec::new(),
                        complete: true,
                    });
                    self.answer_of(r, &q, terms, f).map(Ok)
                }
                Err(e) => Ok(Err(e)),
            })
            .collect()
    }
}

// Options checked while they are read, so that the error names the field.

fn de_k<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<u32>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(k) => u32::try_from(k)
            .ok()
            .filter(|k| fingerprint::check_k(*k).is_ok())
            .map(Some)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "{k} is out of range (0..={})",
                    fingerprint::MAX_EXACT_K
                ))
            }),
    }
}

fn de_probe_budget<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<usize>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(b) => usize::try_from(b)
            .ok()
            .filter(|b| *b <= index::MAX_PROBE_BUDGET)
            .map(Some)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "{b} is more than {} buckets",
                    index::MAX_PROBE_BUDGET
                ))
            }),
    }
}

fn de_min_similarity<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        Some(s) if (0.0..=1.0).contains(&s) => Ok(Some(s)),
        Some(s) => Err(de::Error::custom(format!("{s} is not between 0 and 1"))),
    }
}

fn de_limit<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(n) => limits::query_limit(Some(usize::try_from(n).unwrap_or(usize::MAX)))
            .map(Some)
            .map_err(de::Error::custom),
    }
}

fn de_max_duplicates<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<usize>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(n) => limits::max_duplicates(Some(usize::try_from(n).unwrap_or(usize::MAX)))
            .map(Some)
            .map_err(de::Error::custom),
    }
}

/// A flag: a boolean, null (false), or in a URL `""`, `"1"`, `"true"`,
/// `"0"`, `"false"` (`?sync` alone is true).
fn de_flag<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    struct Flag;
    impl de::Visitor<'_> for Flag {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("true or false")
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> std::result::Result<bool, E> {
            Ok(b)
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_none<E: de::Error>(self) -> std::result::Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<bool, E> {
            match s {
                "" | "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
            }
        }
    }
    d.deserialize_any(Flag)
}

/// An id: a non-empty string, or an integer (as its decimal digits).
fn de_id<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    struct Id;
    impl de::Visitor<'_> for Id {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a non-empty string or an integer")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Self::Value, E> {
            match s.is_empty() {
                true => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                false => Ok(Some(s.to_string())),
            }
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> std::result::Result<Self::Value, E> {
            Ok(Some(n.to_string()))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<Self::Value, E> {
            Ok(Some(n.to_string()))
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(Id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> std::result::Result<QueryRequest, FieldError> {
        QueryRequest::from_json(v, UnknownFields::Refuse)
    }

    #[test]
    fn fields_are_the_serialized_names() {
        let names = |v: Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let mut q = QueryOptions::FIELDS.map(String::from).to_vec();
        q.sort();
        assert_eq!(names(json!(QueryOptions::default())), q);
        let mut w = WriteOptions::FIELDS.map(String::from).to_vec();
        w.sort();
        assert_eq!(names(json!(WriteOptions::default())), w);
    }

    #[test]
    fn subjects_and_labels() {
        let r = parse(json!({"text": "a b", "k": 5, "limit": 3, "explain": true})).unwrap();
        assert_eq!(r.subject, Subject::Text("a b".into()));
        assert_eq!(r.label, None);
        let o = r.options;
        assert_eq!((o.k, o.limit, o.explain), (Some(5), Some(3), true));
        let r = parse(json!({"id": 7})).unwrap();
        assert_eq!(r.subject, Subject::Id("7".into()));
        assert_eq!(r.label, None);
        // "id" beside a content names that content.
        let r = parse(json!({"id": "d1", "fingerprint": "00000000000000ff"})).unwrap();
        assert_eq!(r.subject, Subject::Fingerprint(Fingerprint(0xff)));
        assert_eq!(r.label, Some(json!("d1")));
        let r = QueryRequest::from_json(
            json!({"id": "d1", "text": "x", "url": "u"}),
            UnknownFields::Ignore,
        )
        .unwrap();
        assert_eq!(r.subject, Subject::Text("x".into()));
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({"text": "a", "kk": 3}), Some("kk"), "unknown field"),
            (json!({"text": "a", "k": 12}), Some("k"), "out of range"),
            (json!({"text": "a", "k": -1}), Some("k"), "expected u64"),
            (json!({"text": "a", "k": null}), None, ""),
            (
                json!({"text": "a", "min_similarity": 2}),
                Some("min_similarity"),
                "between 0 and 1",
            ),
            (
                json!({"text": "a", "explain": "yes"}),
                Some("explain"),
                "true or false",
            ),
            (
                json!({"text": "a", "fingerprint": "00000000000000ff"}),
                Some("fingerprint"),
                "not several",
            ),
            (
                json!({"text": "a", "html": "<p>a</p>"}),
                Some("html"),
                "not several",
            ),
            (json!({"html": 7}), Some("html"), "expected a string"),
            (json!({"fingerprint": "xyz"}), Some("fingerprint"), ""),
            (json!({"text": 7}), Some("text"), "expected a string"),
            (json!({"id": ""}), Some("id"), "non-empty string"),
            (
                json!({"text": "a", "limit": 10_001}),
                Some("limit"),
                "more than 10000",
            ),
            (
                json!({"text": "a", "probe_budget": 99_999_999}),
                Some("probe_budget"),
                "buckets",
            ),
            (json!({"k": 3}), None, "give one of"),
            (json!([1]), None, "JSON object"),
        ];
        for (v, field, msg) in cases {
            match parse(v.clone()) {
                Ok(_) => assert!(field.is_none() && msg.is_empty(), "{v} parsed"),
                Err(e) => {
                    assert_eq!(e.field.as_deref(), field, "{v}: {e}");
                    assert!(e.message.contains(msg), "{v}: {e}");
                }
            }
        }
        let e = parse(json!({"text": 1})).unwrap_err().within("queries[2]");
        assert_eq!(e.field.as_deref(), Some("queries[2].text"));
    }

    #[test]
    fn options_checked_in_code_as_when_read() {
        let bad = [
            QueryOptions {
                k: Some(12),
                ..Default::default()
            },
            QueryOptions {
                probe_budget: Some(index::MAX_PROBE_BUDGET + 1),
                ..Default::default()
            },
            QueryOptions {
                min_similarity: Some(-0.1),
                ..Default::default()
            },
            QueryOptions {
                limit: Some(limits::MAX_LIMIT + 1),
                ..Default::default()
            },
        ];
        for o in bad {
            assert!(o.check().is_err(), "{o:?}");
            let v = serde_json::to_value(o).unwrap();
            assert!(serde_json::from_value::<QueryOptions>(v).is_err(), "{o:?}");
        }
        assert!(QueryOptions::default().check().is_ok());
        let w = WriteOptions {
            max_duplicates: Some(limits::MAX_DUPLICATES + 1),
            ..Default::default()
        };
        assert!(w.check().is_err());
        assert!(w.resolve(DuplicatePolicy::Skip, None).is_err());
    }

    #[test]
    fn defaults_in_one_place() {
        let o = QueryOptions::default();
        let q = o
            .apply(Query::new(Fingerprint(1)).probing(&[1, 2], 7), 0.3)
            .unwrap();
        assert_eq!(
            (q.k, q.min_similarity, q.limit),
            (3, 0.3, Some(limits::DEFAULT_LIMIT))
        );
        assert_eq!(q.probe.map(|p| p.budget), Some(index::DEFAULT_PROBE_BUDGET));
        let q = QueryOptions { k: Some(5), ..o }
            .apply(Query::new(Fingerprint(1)).probing(&[1], 7), 0.3)
            .unwrap();
        assert_eq!((q.k, q.probe), (5, None));
        let w = WriteOptions::default()
            .resolve(DuplicatePolicy::Skip, Some(0.4))
            .unwrap();
        assert_eq!(
            (w.k, w.probe_budget, w.min_similarity),
            (3, index::DEFAULT_PROBE_BUDGET, 0.4)
        );
        assert_eq!(w.max_duplicates, limits::DEFAULT_MAX_DUPLICATES);
        #[cfg(feature = "server")]
        let w: WriteOptions = serde_urlencoded::from_str("sync&k=5&max_duplicates=0").unwrap();
        #[cfg(feature = "server")]
        assert_eq!((w.sync, w.k, w.max_duplicates), (true, Some(5), Some(0)));
    }

    #[test]
    fn or_takes_what_is_not_given() {
        let line = QueryOptions {
            k: Some(1),
            ..Default::default()
        };
        let flags = QueryOptions {
            k: Some(4),
            limit: Some(2),
            ..Default::default()
        };
        let o = line.or(flags);
        assert_eq!((o.k, o.limit), (Some(1), Some(2)));
    }
}
