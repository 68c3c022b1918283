//! Record and meta value codecs. Decoders never panic: short, long or
//! mismatched input is an error carrying the reason.
//!
//! # Record value layout (`docs` family, key = document id as UTF-8)
//!
//! ```text
//! offset  size  field
//! 0       1     record format version, u8 (= 8; versions 1 to 7 are still read)
//! 1       4     crc32 (IEEE, crc32fast) of the payload bytes, u32 big-endian
//! 5       n     payload: bincode 2.0 of `Record` with the fixed configuration
//!               standard().with_big_endian().with_fixed_int_encoding():
//!                 fingerprint   u64 BE
//!                 seq           u32 BE   written 0 and ignored since format 5
//!                                        (formats 2-4 numbered the documents
//!                                        that share a fingerprint; the refs
//!                                        key now names them by id)
//!                 content_hash  u64 BE   xxh3-64 of the document's text bytes
//!                 length        u64 BE   text length in bytes
//!                 ingested_at   u64 BE   Unix seconds of the write
//!                 source_len    u64 BE, then source_len bytes of UTF-8
//!                               (where the document came from: file:line)
//!               version 2 adds:
//!                 terms         u32 BE   number of terms (stop words dropped,
//!                                        repeats counted); 0 = unknown
//!                                        (imported fingerprints)
//!                 sketch        u8 0 (none) | u8 1, then 32 bytes: the
//!                               verification sketch (fingerprint::Sketch)
//!                 top_len       u64 BE, then top_len bytes of UTF-8: the
//!                               document's heaviest terms (at most
//!                               TOP_TERMS), heaviest first, '\n'-separated
//!               version 3 adds:
//!                 weak_len      u64 BE, then weak_len bytes: the
//!                               fingerprint's least-confident bits,
//!                               weakest first (bit index 0..63 each, at
//!                               most WEAK_BITS), for confidence-ranked
//!                               `query --id`; empty = unknown
//!               version 4 adds:
//!                 ord           u64 BE   ingest order: a store-wide counter,
//!                                        larger = written later (each insert
//!                                        or replacement takes the next)
//!                 priority      u8 0 (none) | u8 1, then u64 BE: the f64
//!                               bits of the input's "priority" (never NaN)
//!               version 5 adds:
//!                 dated         u8 0 (none) | u8 1, then u64 BE: the
//!                               document's own time, Unix seconds (a WARC
//!                               record's fetch date, an input's "time")
//!               version 6 adds:
//!                 parts_len     u64 BE, then parts_len × u64 BE: the
//!                               document's smallest part hashes, ascending
//!                               (at most fingerprint::parts::QUERY_PARTS,
//!                               12: what a query from the record looks up;
//!                               the first PARTS, 6, are indexed; empty =
//!                               none: no text, or fewer than 8 letters and
//!                               digits)
//!               version 7 adds:
//!                 kept          u8 0 (none) | u8 1, then u64 BE: the log
//!                               sequence of the standing "keep this one"
//!                               decision on the document (format 13)
//!               version 8 adds:
//!                 fine          u8 0 (none) | u8 1, then 96 bytes: the
//!                               fine sketch (fingerprint::FineSketch) of a
//!                               document whose text was seen under a
//!                               sketch of character n-grams (format 14)
//! ```
//!
//! Version 1 records (no terms, sketch or top terms), version 2 records
//! (no weak bits) and version 3 records (no ord or priority) decode with
//! those fields empty (ord 0); only `simdb migrate` reads them, and gives
//! each an ord. Version 4 records (format 7 and 8 stores) decode with no
//! `dated`, version 5 records (format 9) with no parts, version 7 records
//! (formats 10 to 13) with no fine sketch.
//!
//! The checksum covers exactly the payload; the version byte is checked
//! separately (an unknown version is corruption, not a newer format: the
//! store's format version in meta gates that).

use serde::{Deserialize, Serialize};

use crate::fingerprint::{FineSketch, Fingerprint, Sketch};

/// Version byte of the record frame written by this build.
pub const RECORD_VERSION: u8 = 8;
pub use crate::fingerprint::TOP_TERMS;
const HEADER_LEN: usize = 5;

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_fixed_int_encoding()
        .with_limit::<{ 1 << 20 }>()
}

/// A document's priority (the input's `"priority"` number): among the
/// members of a cluster, the one with the highest is its representative.
/// Never NaN; kept as the f64's bits so that records compare with `Eq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Priority(u64);

impl Priority {
    /// `v` as a priority; `None` for NaN.
    pub fn new(v: f64) -> Option<Priority> {
        (!v.is_nan()).then_some(Priority(v.to_bits()))
    }

    pub fn value(self) -> f64 {
        f64::from_bits(self.0)
    }

    /// A key that sorts priorities from highest to lowest, and no priority
    /// after every priority.
    pub fn rank_key(p: Option<Priority>) -> u64 {
        match p {
            None => u64::MAX,
            Some(p) => {
                // The usual order-preserving map of f64 bits to u64 …
                let b = p.0;
                let ascending = if b >> 63 == 1 { !b } else { b | 1 << 63 };
                // … reversed, so the highest comes first; never u64::MAX
                // (that would need NaN bits).
                !ascending
            }
        }
    }
}

/// What the store keeps about one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub fingerprint: Fingerprint,
    /// xxh3-64 of the document's text (re-ingesting identical text is a no-op).
    pub content_hash: u64,
    /// Length of the text in bytes.
    pub length: u64,
    /// Unix seconds when this version was written.
    pub ingested_at: u64,
    /// Where the document came from (`file:line`, `-:line` for stdin, …).
    pub source: String,
    /// Number of terms (stop words dropped, repeats counted); 0 = unknown.
    pub terms: u32,
    /// The verification sketch, if the text was seen.
    pub sketch: Option<Sketch>,
    /// The heaviest terms, heaviest first (at most [`TOP_TERMS`]; no
    /// newlines inside a term).
    pub top_terms: Vec<String>,
    /// The fingerprint's least-confident bits, weakest first (empty when
    /// unknown: imported fingerprints, records before version 3).
    pub weak_bits: Vec<u8>,
    /// Ingest order (store-wide, larger = written later); 0 in records
    /// before version 4.
    pub ord: u64,
    /// The input's priority, if it gave one.
    pub priority: Option<Priority>,
    /// The document's own time (Unix seconds), when its input gave one: a
    /// WARC record's fetch date, a JSONL line's `"time"`. `None` in
    /// records before version 5.
    pub dated: Option<u64>,
    /// The document's smallest part hashes, ascending (at most
    /// [`crate::fingerprint::parts::QUERY_PARTS`]: a query made from the
    /// record looks them all up, as ingest's duplicate check of the text
    /// did; the first [`crate::fingerprint::parts::PARTS`] are indexed; see
    /// [`crate::index::parts`]); empty without a text, and in records
    /// before version 6.
    pub parts: Vec<u64>,
    /// The log sequence of the standing "keep this one" decision on the
    /// document, if there is one (docs/review.md, "Decisions"): it ranks
    /// before every member that is not kept, the latest decision first.
    /// The writer sets it from the store's decisions; `None` in records
    /// before version 7.
    pub kept: Option<u64>,
    /// The fine sketch ([`crate::fingerprint::fine`]): 384 more bins of
    /// the text's character 4-grams, read to settle a pair whose sketch
    /// estimate is near the threshold. `None` without a text, under a
    /// sketch of word 3-shingles, and in records before version 8.
    pub fine: Option<FineSketch>,
}

impl Record {
    /// The document's time: its own ([`Record::dated`]), else when it was
    /// written. What `expire`, the `newest` keep policy and the store's
    /// age go by.
    pub fn time(&self) -> u64 {
        self.dated.unwrap_or(self.ingested_at)
    }

    /// Whether the document was short (see [`crate::fingerprint::SHORT_TERMS`]).
    pub fn is_short(&self) -> bool {
        self.terms > 0 && (self.terms as usize) < crate::fingerprint::SHORT_TERMS
    }
}

// Fingerprint's serde form is a hex string for JSON; in records it is a u64.
mod raw {
    use super::{Fingerprint, Sketch};
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V1 {
        pub fingerprint: u64,
        pub seq: u32,
        pub content_hash: u64,
        pub length: u64,
        pub ingested_at: u64,
        pub source: String,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V2 {
        pub v1: V1,
        pub terms: u32,
        pub sketch: Option<[u8; crate::fingerprint::SKETCH_BYTES]>,
        pub top_terms: String,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V3 {
        pub v2: V2,
        pub weak_bits: Vec<u8>,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V4 {
        pub v3: V3,
        pub ord: u64,
        pub priority: Option<u64>,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V5 {
        pub v4: V4,
        pub dated: Option<u64>,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V6 {
        pub v5: V5,
        pub parts: Vec<u64>,
    }
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V7 {
        pub v6: V6,
        pub kept: Option<u64>,
    }
    /// The fine sketch as three 32-byte arrays (serde's arrays stop at 32).
    pub type FineBytes = ([u8; 32], [u8; 32], [u8; 32]);
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct V8 {
        pub v7: V7,
        pub fine: Option<FineBytes>,
    }
    impl From<&super::Record> for V8 {
        fn from(r: &super::Record) -> V8 {
            V8 {
                v7: r.into(),
                fine: r.fine.map(|f| {
                    let part = |i: usize| -> [u8; 32] { std::array::from_fn(|j| f.0[32 * i + j]) };
                    (part(0), part(1), part(2))
                }),
            }
        }
    }
    impl From<V8> for super::Record {
        fn from(r: V8) -> super::Record {
            super::Record {
                fine: r.fine.map(|(a, b, c)| {
                    crate::fingerprint::FineSketch(std::array::from_fn(|j| match j / 32 {
                        0 => a[j],
                        1 => b[j - 32],
                        _ => c[j - 64],
                    }))
                }),
                ..r.v7.into()
            }
        }
    }
    impl From<&super::Record> for V7 {
        fn from(r: &super::Record) -> V7 {
            V7 {
                v6: r.into(),
                kept: r.kept,
            }
        }
    }
    impl From<V7> for super::Record {
        fn from(r: V7) -> super::Record {
            super::Record {
                kept: r.kept,
                ..r.v6.into()
            }
        }
    }
    impl From<&super::Record> for V6 {
        fn from(r: &super::Record) -> V6 {
            V6 {
                v5: r.into(),
                parts: r.parts.clone(),
            }
        }
    }
    impl From<V6> for super::Record {
        fn from(r: V6) -> super::Record {
            super::Record {
                parts: r.parts,
                ..r.v5.into()
            }
        }
    }
    impl From<&super::Record> for V5 {
        fn from(r: &super::Record) -> V5 {
            V5 {
                v4: r.into(),
                dated: r.dated,
            }
        }
    }
    impl From<V5> for super::Record {
        fn from(r: V5) -> super::Record {
            super::Record {
                dated: r.dated,
                ..r.v4.into()
            }
        }
    }
    impl From<&super::Record> for V4 {
        fn from(r: &super::Record) -> V4 {
            V4 {
                v3: r.into(),
                ord: r.ord,
                priority: r.priority.map(|p| p.0),
            }
        }
    }
    impl From<V4> for super::Record {
        fn from(r: V4) -> super::Record {
            super::Record {
                ord: r.ord,
                priority: r.priority.map(super::Priority),
                ..r.v3.into()
            }
        }
    }
    impl From<&super::Record> for V3 {
        fn from(r: &super::Record) -> V3 {
            V3 {
                v2: r.into(),
                weak_bits: r.weak_bits.clone(),
            }
        }
    }
    impl From<V3> for super::Record {
        fn from(r: V3) -> super::Record {
            super::Record {
                weak_bits: r.weak_bits,
                ..r.v2.into()
            }
        }
    }
    impl From<&super::Record> for V2 {
        fn from(r: &super::Record) -> V2 {
            V2 {
                v1: V1 {
                    fingerprint: r.fingerprint.value(),
                    seq: 0,
                    content_hash: r.content_hash,
                    length: r.length,
                    ingested_at: r.ingested_at,
                    source: r.source.clone(),
                },
                terms: r.terms,
                sketch: r.sketch.map(|s| s.0),
                top_terms: r.top_terms.join("\n"),
            }
        }
    }
    impl From<V1> for super::Record {
        fn from(r: V1) -> super::Record {
            super::Record {
                fingerprint: Fingerprint(r.fingerprint),
                content_hash: r.content_hash,
                length: r.length,
                ingested_at: r.ingested_at,
                source: r.source,
                terms: 0,
                sketch: None,
                top_terms: Vec::new(),
                weak_bits: Vec::new(),
                ord: 0,
                priority: None,
                dated: None,
                parts: Vec::new(),
                kept: None,
                fine: None,
            }
        }
    }
    impl From<V2> for super::Record {
        fn from(r: V2) -> super::Record {
            super::Record {
                terms: r.terms,
                sketch: r.sketch.map(Sketch),
                top_terms: if r.top_terms.is_empty() {
                    Vec::new()
                } else {
                    r.top_terms.split('\n').map(str::to_string).collect()
                },
                ..r.v1.into()
            }
        }
    }
}

/// The frame of a payload: version byte ‖ crc32 BE of the payload ‖ the
/// payload (records and decision log entries).
fn frame(version: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.push(version);
    out.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The version and payload of framed bytes whose version is in
/// `versions` and whose checksum holds; `what` names them in errors.
fn unframe<'b>(
    bytes: &'b [u8],
    what: &str,
    versions: std::ops::RangeInclusive<u8>,
) -> Result<(u8, &'b [u8]), String> {
    let (Some(&version), Some(crc), Some(payload)) = (
        bytes.first(),
        bytes.get(1..HEADER_LEN),
        bytes.get(HEADER_LEN..),
    ) else {
        return Err(format!(
            "{what} is {} bytes, shorter than its 5-byte header",
            bytes.len()
        ));
    };
    if !versions.contains(&version) {
        return Err(format!(
            "unknown {what} version {version} (expected {} to {})",
            versions.start(),
            versions.end()
        ));
    }
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let got = crc32fast::hash(payload);
    if expected != got {
        return Err(format!(
            "checksum mismatch: stored {expected:08x}, computed {got:08x}"
        ));
    }
    Ok((version, payload))
}

/// Encodes a record into its framed bytes.
pub fn encode_record(r: &Record) -> Vec<u8> {
    let payload = bincode::serde::encode_to_vec(raw::V8::from(r), config())
        .unwrap_or_else(|e| unreachable!("encoding a record to a Vec cannot fail: {e}"));
    frame(RECORD_VERSION, &payload)
}

/// Decodes framed record bytes; `Err` carries the reason.
pub fn decode_record(bytes: &[u8]) -> Result<Record, String> {
    let (version, payload) = unframe(bytes, "record", 1..=RECORD_VERSION)?;
    fn decode<T: serde::de::DeserializeOwned + Into<Record>>(
        payload: &[u8],
    ) -> Result<Record, String> {
        let (raw, used): (T, usize) = bincode::serde::decode_from_slice(payload, config())
            .map_err(|e| format!("bad payload: {e}"))?;
        if used != payload.len() {
            return Err(format!(
                "{} trailing bytes after the payload",
                payload.len() - used
            ));
        }
        Ok(raw.into())
    }
    let rec = match version {
        1 => decode::<raw::V1>(payload)?,
        2 => decode::<raw::V2>(payload)?,
        3 => decode::<raw::V3>(payload)?,
        4 => decode::<raw::V4>(payload)?,
        5 => decode::<raw::V5>(payload)?,
        6 => decode::<raw::V6>(payload)?,
        7 => decode::<raw::V7>(payload)?,
        _ => decode::<raw::V8>(payload)?,
    };
    if rec.priority.is_some_and(|p| p.value().is_nan()) {
        return Err("priority is NaN".into());
    }
    check_weak_bits(&rec.weak_bits)?;
    crate::fingerprint::parts::check(&rec.parts, crate::fingerprint::parts::QUERY_PARTS)?;
    Ok(rec)
}

/// Whether `bits` are weak bits a record may hold: bit indexes of a 64-bit
/// fingerprint.
pub fn check_weak_bits(bits: &[u8]) -> Result<(), String> {
    match bits.iter().find(|&&b| b >= 64) {
        Some(b) => Err(format!("weak bit {b} is not a bit of a 64-bit fingerprint")),
        None => Ok(()),
    }
}

/// Decodes the meta `format_version` value: u32 big-endian, non-zero.
pub fn decode_format_version(bytes: &[u8]) -> Result<u32, String> {
    let b: [u8; 4] = bytes
        .try_into()
        .map_err(|_| format!("format version is {} bytes, not 4", bytes.len()))?;
    match u32::from_be_bytes(b) {
        0 => Err("format version 0".into()),
        v => Ok(v),
    }
}

/// Decodes the meta `doc_count` value: u64 big-endian.
pub fn decode_doc_count(bytes: &[u8]) -> Result<u64, String> {
    let b: [u8; 8] = bytes
        .try_into()
        .map_err(|_| format!("document count is {} bytes, not 8", bytes.len()))?;
    Ok(u64::from_be_bytes(b))
}

/// Decodes the meta `recipe` value: UTF-8 JSON of a valid [`Recipe`](crate::Recipe).
pub fn decode_recipe(bytes: &[u8]) -> Result<crate::fingerprint::Recipe, String> {
    let r: crate::fingerprint::Recipe =
        serde_json::from_slice(bytes).map_err(|e| format!("bad recipe JSON: {e}"))?;
    r.validate().map_err(|e| format!("invalid recipe: {e}"))?;
    Ok(r)
}

/// Version byte of a decision log entry ([`Decision`]).
pub const DECISION_VERSION: u8 = 1;

/// What a review decided ([`Decision::kind`]). (Serialized by variant
/// index in the log; the names are JSON's.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Documents `a` and `b` are not copies of each other: neither is
    /// ever in a cluster whose representative is the other.
    NotACopy,
    /// Undoes the decision of sequence [`Decision::undoes`].
    Undo,
    /// Document `a` is the one to keep: it represents any cluster it is
    /// in (it ranks before every member not kept; among kept documents,
    /// the latest decision first). Since format 13.
    Keep,
}

impl DecisionKind {
    /// Its name in the log's JSON and the CLI: `not_a_copy`, `undo`,
    /// `keep`.
    pub fn name(self) -> &'static str {
        match self {
            DecisionKind::NotACopy => "not_a_copy",
            DecisionKind::Undo => "undo",
            DecisionKind::Keep => "keep",
        }
    }
}

/// One entry of a store's decision log (`decisions` family, `l` keys):
/// framed as a record is, version byte ([`DECISION_VERSION`]) ‖ crc32 BE
/// of the payload ‖ bincode payload of the fields in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Its place in the log, from 1.
    pub seq: u64,
    pub kind: DecisionKind,
    /// The pair decided on (`NotACopy`), the document kept (`Keep`, with
    /// `b` empty); empty for `Undo`.
    pub a: String,
    pub b: String,
    /// Who decided: a service's `api`, the command line's `local`.
    pub who: String,
    /// Unix seconds.
    pub at: u64,
    /// The sequence an `Undo` undoes; 0 otherwise.
    pub undoes: u64,
}

/// Encodes a decision log entry into its framed bytes.
pub fn encode_decision(d: &Decision) -> Vec<u8> {
    let payload = bincode::serde::encode_to_vec(d, config())
        .unwrap_or_else(|e| unreachable!("encoding a decision to a Vec cannot fail: {e}"));
    frame(DECISION_VERSION, &payload)
}

/// Decodes a framed decision log entry; `Err` carries the reason.
pub fn decode_decision(bytes: &[u8]) -> Result<Decision, String> {
    let (_, payload) = unframe(bytes, "decision", DECISION_VERSION..=DECISION_VERSION)?;
    let (d, used): (Decision, usize) = bincode::serde::decode_from_slice(payload, config())
        .map_err(|e| format!("bad payload: {e}"))?;
    if used != payload.len() {
        return Err(format!(
            "{} trailing bytes after the payload",
            payload.len() - used
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record {
        Record {
            fingerprint: Fingerprint(0x0123_4567_89ab_cdef),
            content_hash: 0x1122_3344_5566_7788,
            length: 42,
            ingested_at: 1_700_000_000,
            source: "a.jsonl:7".into(),
            terms: 0,
            sketch: None,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            ord: 0,
            priority: None,
            dated: None,
            parts: Vec::new(),
            kept: None,
            fine: None,
        }
    }

    fn sample_v2() -> Record {
        Record {
            terms: 17,
            sketch: Some(Sketch([0xa5; 32])),
            top_terms: vec!["北京".into(), "simdb".into()],
            ..sample()
        }
    }

    /// The version 1 payload of `sample()`, field by field (also the
    /// start of its version 2 payload), as formats 2-4 wrote it: with a
    /// sequence number (3).
    fn v1_payload() -> Vec<u8> {
        v1_payload_seq(3)
    }

    /// The version 1 payload with sequence number `seq` (0 since format 5).
    fn v1_payload_seq(seq: u32) -> Vec<u8> {
        [
            &0x0123_4567_89ab_cdefu64.to_be_bytes()[..],
            &seq.to_be_bytes(),
            &0x1122_3344_5566_7788u64.to_be_bytes(),
            &42u64.to_be_bytes(),
            &1_700_000_000u64.to_be_bytes(),
            &9u64.to_be_bytes(),
            b"a.jsonl:7",
        ]
        .concat()
    }

    fn sample_v3() -> Record {
        Record {
            weak_bits: vec![63, 0, 17],
            ..sample_v2()
        }
    }

    /// The version 2 payload of `sample_v2()` (also the start of its
    /// version 3 payload).
    fn v2_payload() -> Vec<u8> {
        [
            &v1_payload()[..],
            &17u32.to_be_bytes(),
            &[1u8],
            &[0xa5; 32],
            &12u64.to_be_bytes(),
            "北京\nsimdb".as_bytes(),
        ]
        .concat()
    }

    fn sample_v4() -> Record {
        Record {
            ord: 0x0102_0304_0506_0708,
            priority: Priority::new(-2.5),
            ..sample_v3()
        }
    }

    /// The version 3 payload of `sample_v3()` (also the start of its
    /// version 4 payload).
    fn v3_payload() -> Vec<u8> {
        [&v2_payload()[..], &3u64.to_be_bytes(), &[63, 0, 17]].concat()
    }

    /// The version 4 payload of `sample_v4()` with sequence number `seq`.
    fn v4_payload(seq: u32) -> Vec<u8> {
        let v1 = v1_payload_seq(seq);
        let v3 = v3_payload();
        [
            &v1[..],
            &v3[v1.len()..],
            &0x0102_0304_0506_0708u64.to_be_bytes(),
            &[1u8],
            &(-2.5f64).to_bits().to_be_bytes(),
        ]
        .concat()
    }

    fn frame(version: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![version];
        out.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn sample_v5() -> Record {
        Record {
            dated: Some(1_600_000_000),
            ..sample_v4()
        }
    }

    fn sample_v6() -> Record {
        Record {
            parts: vec![3, 0x0102_0304_0506_0708, u64::MAX],
            ..sample_v5()
        }
    }

    /// The version 5 payload of `sample_v5()` (also the start of its
    /// version 6 payload).
    fn v5_payload() -> Vec<u8> {
        [&v4_payload(0)[..], &[1u8], &1_600_000_000u64.to_be_bytes()].concat()
    }

    /// The version 6 payload of `sample_v6()` (also the start of its
    /// version 7 payload).
    fn v6_payload() -> Vec<u8> {
        [
            &v5_payload()[..],
            &3u64.to_be_bytes(),
            &3u64.to_be_bytes(),
            &0x0102_0304_0506_0708u64.to_be_bytes(),
            &u64::MAX.to_be_bytes(),
        ]
        .concat()
    }

    fn sample_v7() -> Record {
        Record {
            kept: Some(0x0a0b),
            ..sample_v6()
        }
    }

    /// The version 7 payload of `sample_v7()` (also the start of its
    /// version 8 payload).
    fn v7_payload() -> Vec<u8> {
        [&v6_payload()[..], &[1u8], &0x0a0bu64.to_be_bytes()].concat()
    }

    fn sample_v8() -> Record {
        Record {
            fine: Some(FineSketch(std::array::from_fn(|i| i as u8))),
            ..sample_v7()
        }
    }

    #[test]
    fn record_v8_bytes_are_pinned() {
        let bytes = encode_record(&sample_v8());
        let fine: Vec<u8> = (0..96u8).collect();
        let payload = [&v7_payload()[..], &[1u8], &fine[..]].concat();
        assert_eq!(bytes, frame(8, &payload));
        assert_eq!(&bytes[..5], &GOLDEN_V8_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v8());
        // No fine sketch: one tag byte.
        let none = encode_record(&sample_v7());
        assert_eq!(none, frame(8, &[&v7_payload()[..], &[0u8]].concat()));
        // More than QUERY_PARTS part hashes, or out of order, is corruption.
        for parts in [(1..=13).collect::<Vec<u64>>(), vec![2, 1]] {
            let bad = Record { parts, ..sample() };
            assert!(decode_record(&encode_record(&bad)).is_err());
        }
        // A fine sketch cut short is corruption.
        let short = frame(8, &[&v7_payload()[..], &[1u8], &fine[..95]].concat());
        assert!(decode_record(&short).is_err());
    }

    #[test]
    fn record_v7_bytes_still_decode() {
        // Format 13 stores' records: no fine sketch.
        let bytes = frame(7, &v7_payload());
        assert_eq!(&bytes[..5], &GOLDEN_V7_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v7());
        // Not kept: one tag byte.
        let none = frame(7, &[&v6_payload()[..], &[0u8]].concat());
        assert_eq!(decode_record(&none).unwrap(), sample_v6());
    }

    #[test]
    fn record_v6_bytes_still_decode() {
        // Format 10 to 12 stores' records: not kept.
        let bytes = frame(6, &v6_payload());
        assert_eq!(&bytes[..5], &GOLDEN_V6_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v6());
        // No parts: one empty length.
        let none = frame(6, &[&v5_payload()[..], &0u64.to_be_bytes()].concat());
        assert_eq!(decode_record(&none).unwrap(), sample_v5());
    }

    #[test]
    fn record_v5_bytes_still_decode() {
        // Format 9 stores' records: no parts.
        let bytes = frame(5, &v5_payload());
        assert_eq!(&bytes[..5], &GOLDEN_V5_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v5());
        assert_eq!(sample_v5().time(), 1_600_000_000);
        // Undated: one tag byte, and its time is when it was written.
        let undated = frame(5, &[&v4_payload(0)[..], &[0u8]].concat());
        assert_eq!(decode_record(&undated).unwrap(), sample_v4());
        assert_eq!(sample_v4().time(), 1_700_000_000);
    }

    #[test]
    fn record_v4_bytes_still_decode() {
        // Format 7 and 8 stores' records: no document time.
        let bytes = frame(4, &v4_payload(0));
        assert_eq!(&bytes[..5], &GOLDEN_V4_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v4());
        // A format 4 store's record, with its sequence number: read, and
        // the number ignored.
        let old = frame(4, &v4_payload(3));
        assert_eq!(&old[..5], &GOLDEN_V4_SEQ3_HEADER[..], "{:02x?}", &old[..5]);
        assert_eq!(decode_record(&old).unwrap(), sample_v4());
        // No sketch, no terms, no weak bits, no priority, no time: one tag
        // byte and two empty lengths, the ord and two tag bytes; no time,
        // no parts, not kept, no fine sketch.
        let bare = encode_record(&sample());
        assert_eq!(bare.len(), 5 + 53 + 4 + 1 + 8 + 8 + 8 + 1 + 1 + 8 + 1 + 1);
        assert_eq!(decode_record(&bare).unwrap(), sample());
        // A weak bit outside the fingerprint is corruption.
        let bad = Record {
            weak_bits: vec![64],
            ..sample()
        };
        assert!(decode_record(&encode_record(&bad)).is_err());
    }

    const GOLDEN_V8_HEADER: [u8; 5] = [0x08, 0xca, 0xdc, 0x12, 0xe2];
    const GOLDEN_V7_HEADER: [u8; 5] = [0x07, 0x7b, 0x39, 0x66, 0xb0];
    const GOLDEN_V6_HEADER: [u8; 5] = [0x06, 0x07, 0x91, 0xd6, 0x2d];
    const GOLDEN_V5_HEADER: [u8; 5] = [0x05, 0x8f, 0xd7, 0x72, 0x88];
    const GOLDEN_V4_HEADER: [u8; 5] = [0x04, 0x97, 0x1d, 0xc1, 0x98];
    const GOLDEN_V4_SEQ3_HEADER: [u8; 5] = [0x04, 0x49, 0x55, 0xbd, 0x6e];

    #[test]
    fn record_v3_bytes_still_decode() {
        let payload = v3_payload();
        let mut bytes = vec![3u8];
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        bytes.extend_from_slice(&payload);
        assert_eq!(&bytes[..5], &GOLDEN_V3_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v3());
    }

    const GOLDEN_V3_HEADER: [u8; 5] = [0x03, 0x6a, 0x1e, 0x30, 0x38];

    #[test]
    fn priorities_rank_highest_first_and_none_last() {
        let mut v: Vec<Option<Priority>> = [
            3.0,
            -1.0,
            0.0,
            -0.0,
            1e300,
            -f64::INFINITY,
            f64::INFINITY,
            0.5,
        ]
        .iter()
        .map(|&x| Priority::new(x))
        .collect();
        v.push(None);
        v.sort_by_key(|p| Priority::rank_key(*p));
        let vals: Vec<Option<f64>> = v.iter().map(|p| p.map(Priority::value)).collect();
        assert_eq!(
            vals,
            [
                Some(f64::INFINITY),
                Some(1e300),
                Some(3.0),
                Some(0.5),
                Some(0.0),
                Some(-0.0),
                Some(-1.0),
                Some(f64::NEG_INFINITY),
                None
            ]
        );
        assert!(Priority::new(f64::NAN).is_none());
    }

    #[test]
    fn record_v2_bytes_still_decode() {
        let payload = v2_payload();
        let mut bytes = vec![2u8];
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        bytes.extend_from_slice(&payload);
        assert_eq!(&bytes[..5], &GOLDEN_V2_HEADER[..], "{:02x?}", &bytes[..5]);
        assert_eq!(decode_record(&bytes).unwrap(), sample_v2());
    }

    const GOLDEN_V2_HEADER: [u8; 5] = [0x02, 0xef, 0xbc, 0x9b, 0x6d];

    #[test]
    fn record_v1_bytes_still_decode() {
        let mut bytes = vec![1u8];
        let payload = v1_payload();
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        bytes.extend_from_slice(&payload);
        // The literal v1 frame header, so a crc32fast change shows too.
        assert_eq!(
            &bytes[..5],
            &[0x01, 0x05, 0x12, 0x63, 0xf2][..],
            "{:02x?}",
            &bytes[..5]
        );
        assert_eq!(decode_record(&bytes).unwrap(), sample());
    }

    #[test]
    fn record_round_trip() {
        assert_eq!(decode_record(&encode_record(&sample())).unwrap(), sample());
        assert_eq!(
            decode_record(&encode_record(&sample_v4())).unwrap(),
            sample_v4()
        );
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let bytes = encode_record(&sample_v4());
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(decode_record(&b).is_err(), "byte {i} bit {bit}");
            }
        }
        for n in 0..bytes.len() {
            assert!(decode_record(&bytes[..n]).is_err(), "truncated to {n}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode_record(&long).is_err());
    }

    /// The bytes of a decision log entry, pinned: the frame, then each
    /// field (u64 BE, the kind's variant index as u32 BE, strings as u64 BE
    /// length and UTF-8).
    #[test]
    fn decision_bytes_are_pinned() {
        let d = Decision {
            seq: 7,
            kind: DecisionKind::NotACopy,
            a: "a1".into(),
            b: "北".into(),
            who: "local".into(),
            at: 1_700_000_000,
            undoes: 0,
        };
        let payload = [
            &7u64.to_be_bytes()[..],
            &0u32.to_be_bytes(),
            &2u64.to_be_bytes(),
            b"a1",
            &3u64.to_be_bytes(),
            "北".as_bytes(),
            &5u64.to_be_bytes(),
            b"local",
            &1_700_000_000u64.to_be_bytes(),
            &0u64.to_be_bytes(),
        ]
        .concat();
        let mut want = vec![DECISION_VERSION];
        want.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        want.extend_from_slice(&payload);
        assert_eq!(encode_decision(&d), want);
        assert_eq!(decode_decision(&want).unwrap(), d);
        let undo = Decision {
            kind: DecisionKind::Undo,
            undoes: 7,
            ..d.clone()
        };
        let bytes = encode_decision(&undo);
        assert_eq!(&bytes[5 + 8..5 + 12], &1u32.to_be_bytes());
        assert_eq!(decode_decision(&bytes).unwrap(), undo);
        let keep = Decision {
            kind: DecisionKind::Keep,
            b: String::new(),
            ..d.clone()
        };
        let bytes = encode_decision(&keep);
        assert_eq!(&bytes[5 + 8..5 + 12], &2u32.to_be_bytes());
        assert_eq!(decode_decision(&bytes).unwrap(), keep);
        let mut bad = want.clone();
        bad[6] ^= 1;
        assert!(decode_decision(&bad).unwrap_err().contains("checksum"));
        assert!(decode_decision(&want[..3]).is_err());
    }
}
