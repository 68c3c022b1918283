//! The bodies of the fuzz targets (`tools/fuzz`), here so that the normal
//! test suite can replay the fuzz corpus through the same code
//! (`tests/fuzz_corpus.rs`). Each function must not panic on any input; the
//! assertions inside are the properties checked.

use std::io::Cursor;

use crate::fingerprint::{Fingerprinter, Recipe};
use crate::index::{self, RefKey};
use crate::ingest::read::{self, Format};
use crate::store::codec;

/// Ingest's readers (JSONL and plain lines, 64-byte line limit) and
/// import's JSONL line parser.
pub fn input_readers(data: &[u8]) {
    for format in [Format::Jsonl, Format::Lines] {
        let reader = Box::new(Cursor::new(data.to_vec()));
        for item in read::read_lines(reader, "fuzz".into(), format, 64) {
            match item {
                Ok(doc) => assert!(!doc.id.is_empty()),
                Err(p) => assert!(p.location.starts_with("fuzz:")),
            }
        }
    }
    let _ = read::parse_json_doc(data);
    let _ = crate::db::QueryRequest::from_slice(data, crate::db::UnknownFields::Ignore);
    let _ = crate::import::parse_json_line(data);
}

/// Record, posting and document key decoders and the posting merge; what
/// decodes re-encodes to
/// the same bytes (a version 1 record re-encodes as version 2, which
/// decodes to the same record).
pub fn record_and_keys(data: &[u8]) {
    if let Ok(r) = codec::decode_record(data) {
        let again = codec::encode_record(&r);
        // Bytes 13..17 are the sequence number of formats 2-4, read and
        // ignored, written 0.
        if data.first() == Some(&codec::RECORD_VERSION) && data.get(13..17) == Some(&[0; 4]) {
            assert_eq!(again, data);
        } else {
            assert_eq!(codec::decode_record(&again).as_ref(), Ok(&r));
        }
    }
    for i in 0..crate::fingerprint::BLOCKS {
        // The first two bytes as a bucket key, the rest as its posting.
        if let (Some(k), Some(v)) = (data.get(..2), data.get(2..)) {
            if let Ok((fps, segments)) = index::decode_posting(i, k, v) {
                assert_eq!(index::encode_head(&fps, segments), v);
            }
        }
    }
    // Merging any operands into any posting never panics, and gives a
    // whole number of entries (and a head's trailer, if it had one).
    let (a, b) = data.split_at(data.len() / 2);
    assert!(
        index::split_head(&index::merge_posting(Some(a), [b])).is_ok() || {
            let m = index::merge_posting(Some(a), [b]);
            // A trailer that names 0 segments stays what it was.
            m.len() % index::ENTRY_LEN == index::TRAILER_LEN && m.ends_with(&[0; 4])
        }
    );
    if let Ok((fp, id)) = RefKey::decode(data) {
        assert_eq!(RefKey::encode(fp, id), data);
    }
}

/// Meta value decoders.
pub fn meta(data: &[u8]) {
    let _ = codec::decode_format_version(data);
    let _ = codec::decode_doc_count(data);
    if let Ok(r) = codec::decode_recipe(data) {
        // A recipe that decodes is one this build can describe.
        let _ = serde_json::to_string(&r);
    }
}

/// Fingerprinting arbitrary text with two recipes; deterministic.
pub fn fingerprint(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for recipe in [Recipe::default(), Recipe::with(3, 1, false)] {
        let f = Fingerprinter::new(recipe);
        let a = f.fingerprint(&text);
        let b = f.fingerprint(&text);
        match (a, b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y),
            (Err(_), Err(_)) => {}
            _ => panic!("fingerprint is not deterministic"),
        }
    }
}
