//! Record and meta value codecs. Decoders never panic: short, long or
//! mismatched input is an error carrying the reason.
//!
//! # Record value layout (`docs` family, key = document id as UTF-8)
//!
//! ```text
//! offset  size  field
//! 0       1     record format version, u8 (= 1)
//! 1       4     crc32 (IEEE, crc32fast) of the payload bytes, u32 big-endian
//! 5       n     payload: bincode 2.0 of `Record` with the fixed configuration
//!               standard().with_big_endian().with_fixed_int_encoding():
//!                 fingerprint   u64 BE
//!                 seq           u32 BE   sequence number among documents with
//!                                        this exact fingerprint (see index::DocKey)
//!                 content_hash  u64 BE   xxh3-64 of the document's text bytes
//!                 length        u64 BE   text length in bytes
//!                 ingested_at   u64 BE   Unix seconds of the write
//!                 source_len    u64 BE, then source_len bytes of UTF-8
//!                               (where the document came from: file:line)
//! ```
//!
//! The checksum covers exactly the payload; the version byte is checked
//! separately (an unknown version is corruption, not a newer format: the
//! store's format version in meta gates that).

use serde::{Deserialize, Serialize};

use crate::fingerprint::Fingerprint;

/// Version byte of the record frame.
pub const RECORD_VERSION: u8 = 1;
const HEADER_LEN: usize = 5;

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_fixed_int_encoding()
        .with_limit::<{ 1 << 20 }>()
}

/// What the store keeps about one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub fingerprint: Fingerprint,
    /// Sequence number among the documents with this exact fingerprint: the
    /// document's index keys and `refs` entry are under
    /// `DocKey { fingerprint, seq }`.
    pub seq: u32,
    /// xxh3-64 of the document's text (re-ingesting identical text is a no-op).
    pub content_hash: u64,
    /// Length of the text in bytes.
    pub length: u64,
    /// Unix seconds when this version was written.
    pub ingested_at: u64,
    /// Where the document came from (`file:line`, `-:line` for stdin, …).
    pub source: String,
}

impl Record {
    /// How the index names this document.
    pub fn doc_key(&self) -> crate::index::DocKey {
        crate::index::DocKey::new(self.fingerprint, self.seq)
    }
}

// Fingerprint's serde form is a hex string for JSON; in records it is a u64.
mod fp_as_u64 {
    use super::Fingerprint;
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Raw {
        pub fingerprint: u64,
        pub seq: u32,
        pub content_hash: u64,
        pub length: u64,
        pub ingested_at: u64,
        pub source: String,
    }
    impl From<&super::Record> for Raw {
        fn from(r: &super::Record) -> Raw {
            Raw {
                fingerprint: r.fingerprint.value(),
                seq: r.seq,
                content_hash: r.content_hash,
                length: r.length,
                ingested_at: r.ingested_at,
                source: r.source.clone(),
            }
        }
    }
    impl From<Raw> for super::Record {
        fn from(r: Raw) -> super::Record {
            super::Record {
                fingerprint: Fingerprint(r.fingerprint),
                seq: r.seq,
                content_hash: r.content_hash,
                length: r.length,
                ingested_at: r.ingested_at,
                source: r.source,
            }
        }
    }
}

/// Encodes a record into its framed bytes.
pub fn encode_record(r: &Record) -> Vec<u8> {
    let payload = bincode::serde::encode_to_vec(fp_as_u64::Raw::from(r), config())
        .unwrap_or_else(|e| unreachable!("encoding a record to a Vec cannot fail: {e}"));
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.push(RECORD_VERSION);
    out.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Decodes framed record bytes; `Err` carries the reason.
pub fn decode_record(bytes: &[u8]) -> Result<Record, String> {
    let (Some(&version), Some(crc), Some(payload)) = (
        bytes.first(),
        bytes.get(1..HEADER_LEN),
        bytes.get(HEADER_LEN..),
    ) else {
        return Err(format!(
            "record is {} bytes, shorter than its 5-byte header",
            bytes.len()
        ));
    };
    if version != RECORD_VERSION {
        return Err(format!(
            "unknown record version {version} (expected {RECORD_VERSION})"
        ));
    }
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let got = crc32fast::hash(payload);
    if expected != got {
        return Err(format!(
            "checksum mismatch: stored {expected:08x}, computed {got:08x}"
        ));
    }
    let (raw, used): (fp_as_u64::Raw, usize) = bincode::serde::decode_from_slice(payload, config())
        .map_err(|e| format!("bad payload: {e}"))?;
    if used != payload.len() {
        return Err(format!(
            "{} trailing bytes after the payload",
            payload.len() - used
        ));
    }
    Ok(raw.into())
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

/// Decodes the meta `recipe` value: UTF-8 JSON of a valid [`Recipe`].
pub fn decode_recipe(bytes: &[u8]) -> Result<crate::fingerprint::Recipe, String> {
    let r: crate::fingerprint::Recipe =
        serde_json::from_slice(bytes).map_err(|e| format!("bad recipe JSON: {e}"))?;
    r.validate().map_err(|e| format!("invalid recipe: {e}"))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record {
        Record {
            fingerprint: Fingerprint(0x0123_4567_89ab_cdef),
            seq: 3,
            content_hash: 0x1122_3344_5566_7788,
            length: 42,
            ingested_at: 1_700_000_000,
            source: "a.jsonl:7".into(),
        }
    }

    #[test]
    fn record_bytes_are_pinned() {
        let bytes = encode_record(&sample());
        let mut want = vec![1u8];
        let payload: Vec<u8> = [
            &0x0123_4567_89ab_cdefu64.to_be_bytes()[..],
            &3u32.to_be_bytes(),
            &0x1122_3344_5566_7788u64.to_be_bytes(),
            &42u64.to_be_bytes(),
            &1_700_000_000u64.to_be_bytes(),
            &9u64.to_be_bytes(),
            b"a.jsonl:7",
        ]
        .concat();
        want.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        want.extend_from_slice(&payload);
        assert_eq!(bytes, want);
        // And the literal frame header, so a crc32fast change shows too.
        assert_eq!(
            &bytes[..5],
            &[0x01, 0x05, 0x12, 0x63, 0xf2][..],
            "{:02x?}",
            &bytes[..5]
        );
    }

    #[test]
    fn record_round_trip() {
        assert_eq!(decode_record(&encode_record(&sample())).unwrap(), sample());
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let bytes = encode_record(&sample());
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
}
