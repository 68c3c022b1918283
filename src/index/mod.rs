//! The pigeonhole index, pure: key codec, probe plan, an in-memory index and
//! the brute-force oracle. Nothing here touches RocksDB or files.
//!
//! A 64-bit fingerprint is four 16-bit blocks. If two fingerprints differ in
//! at most 3 bits, at least one of the four blocks is identical (pigeonhole),
//! so probing each block's bucket finds every neighbour within k <= 3.
//!
//! # Index key layout (one key per document in each of the four block families)
//!
//! ```text
//! offset  size  field
//! 0       2     block value, u16 big-endian (family i holds block i; block 0 = bits 63..48)
//! 2       8     full fingerprint, u64 big-endian
//! 10      n     document id, UTF-8 bytes (n >= 1), to the end of the key
//! ```
//!
//! Big-endian makes byte order numeric order, so a block's bucket is the
//! contiguous range of keys with that 2-byte prefix. The id in the key keeps
//! two documents with the same fingerprint apart, and lets a query decide and
//! answer from keys alone.

use std::collections::HashMap;

use crate::fingerprint::{Fingerprint, BLOCKS};

/// Length of the bucket prefix of an index key.
pub const PREFIX_LEN: usize = 2;
/// Length of the fixed part of an index key (block + fingerprint).
pub const FIXED_LEN: usize = 10;

/// A document found by a query.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hit {
    pub id: String,
    pub fingerprint: Fingerprint,
    pub distance: u32,
}

/// The index key of document `id` in block family `i`.
pub fn encode_key(i: usize, fp: Fingerprint, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(FIXED_LEN + id.len());
    k.extend_from_slice(&fp.block(i).to_be_bytes());
    k.extend_from_slice(&fp.value().to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// The bucket prefix that a query for `fp` scans in block family `i`.
pub fn bucket_prefix(i: usize, fp: Fingerprint) -> [u8; PREFIX_LEN] {
    fp.block(i).to_be_bytes()
}

/// A decoded index key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexKey<'a> {
    pub block: u16,
    pub fingerprint: Fingerprint,
    pub id: &'a [u8],
}

/// Decodes an index key of block family `i`; `Err` carries the reason.
pub fn decode_key(i: usize, key: &[u8]) -> Result<IndexKey<'_>, String> {
    let (Some(b), Some(f)) = (key.get(0..2), key.get(2..FIXED_LEN)) else {
        return Err(format!(
            "index key is {} bytes, shorter than {FIXED_LEN}",
            key.len()
        ));
    };
    let block = u16::from_be_bytes([b[0], b[1]]);
    let mut fb = [0u8; 8];
    fb.copy_from_slice(f);
    let fingerprint = Fingerprint(u64::from_be_bytes(fb));
    let id = &key[FIXED_LEN..];
    if id.is_empty() {
        return Err("index key has an empty document id".into());
    }
    if i < BLOCKS && fingerprint.block(i) != block {
        return Err(format!(
            "bucket {block:04x} does not match block {i} of fingerprint {fingerprint}"
        ));
    }
    Ok(IndexKey {
        block,
        fingerprint,
        id,
    })
}

/// Sorts hits by distance, then id, and applies `limit` (None = all).
pub fn finish(mut hits: Vec<Hit>, limit: Option<usize>) -> Vec<Hit> {
    hits.sort_by(|a, b| a.distance.cmp(&b.distance).then_with(|| a.id.cmp(&b.id)));
    if let Some(n) = limit {
        hits.truncate(n);
    }
    hits
}

/// The oracle: every entry within `k` of `q`, by a linear scan.
pub fn brute_force<'a>(
    entries: impl IntoIterator<Item = (&'a str, Fingerprint)>,
    q: Fingerprint,
    k: u32,
) -> Vec<Hit> {
    let hits = entries
        .into_iter()
        .filter(|(_, fp)| fp.distance(q) <= k)
        .map(|(id, fp)| Hit {
            id: id.to_string(),
            fingerprint: fp,
            distance: fp.distance(q),
        })
        .collect();
    finish(hits, None)
}

/// An in-memory 4-block index, used to see documents of the current ingest
/// run that are not yet in the store, and in tests.
#[derive(Debug, Default, Clone)]
pub struct MemIndex {
    entries: Vec<Option<(String, Fingerprint)>>,
    by_id: HashMap<String, usize>,
    buckets: [HashMap<u16, Vec<usize>>; BLOCKS],
}

impl MemIndex {
    pub fn new() -> MemIndex {
        MemIndex::default()
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Inserts or replaces `id`.
    pub fn insert(&mut self, id: &str, fp: Fingerprint) {
        self.remove(id);
        let slot = self.entries.len();
        self.entries.push(Some((id.to_string(), fp)));
        self.by_id.insert(id.to_string(), slot);
        for (i, b) in fp.blocks().into_iter().enumerate() {
            self.buckets[i].entry(b).or_default().push(slot);
        }
    }

    /// Removes `id`; returns its fingerprint if it was there.
    pub fn remove(&mut self, id: &str) -> Option<Fingerprint> {
        let slot = self.by_id.remove(id)?;
        let (_, fp) = self.entries[slot].take()?;
        for (i, b) in fp.blocks().into_iter().enumerate() {
            if let Some(v) = self.buckets[i].get_mut(&b) {
                v.retain(|&s| s != slot);
            }
        }
        Some(fp)
    }

    /// Whether `id` is present, and its fingerprint.
    pub fn get(&self, id: &str) -> Option<Fingerprint> {
        self.by_id
            .get(id)
            .and_then(|&s| self.entries[s].as_ref())
            .map(|e| e.1)
    }

    /// Every entry within `k` (k <= 3) of `q`, sorted by distance then id.
    pub fn query(&self, q: Fingerprint, k: u32) -> Vec<Hit> {
        debug_assert!(k <= crate::fingerprint::MAX_EXACT_K);
        let mut seen: HashMap<usize, ()> = HashMap::new();
        let mut hits = Vec::new();
        for (i, b) in q.blocks().into_iter().enumerate() {
            let Some(slots) = self.buckets[i].get(&b) else {
                continue;
            };
            for &s in slots {
                if let Some((id, fp)) = &self.entries[s] {
                    let d = fp.distance(q);
                    if d <= k && seen.insert(s, ()).is_none() {
                        hits.push(Hit {
                            id: id.clone(),
                            fingerprint: *fp,
                            distance: d,
                        });
                    }
                }
            }
        }
        finish(hits, None)
    }

    /// Live entries, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Fingerprint)> {
        self.entries
            .iter()
            .flatten()
            .map(|(id, fp)| (id.as_str(), *fp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_bytes_are_pinned() {
        let fp = Fingerprint(0x0123_4567_89ab_cdef);
        assert_eq!(
            encode_key(0, fp, "doc-1"),
            b"\x01\x23\x01\x23\x45\x67\x89\xab\xcd\xefdoc-1".to_vec()
        );
        assert_eq!(
            encode_key(3, fp, "x"),
            b"\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xefx".to_vec()
        );
        assert_eq!(bucket_prefix(1, fp), [0x45, 0x67]);
    }

    #[test]
    fn key_round_trip_and_bad_keys() {
        let fp = Fingerprint(0xfeed_face_dead_beef);
        for i in 0..4 {
            let k = encode_key(i, fp, "文档/1");
            let d = decode_key(i, &k).unwrap();
            assert_eq!(d.fingerprint, fp);
            assert_eq!(d.block, fp.block(i));
            assert_eq!(d.id, "文档/1".as_bytes());
        }
        assert!(decode_key(0, b"short").is_err());
        assert!(decode_key(0, &encode_key(0, fp, "a")[..10]).is_err());
        // A key filed under the wrong family.
        assert!(decode_key(1, &encode_key(0, fp, "a")).is_err());
    }

    #[test]
    fn mem_index_matches_brute_force_with_planted_neighbours() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut idx = MemIndex::new();
        let base = Fingerprint(rng.random());
        let flip = |fp: Fingerprint, bits: &[u32]| {
            Fingerprint(bits.iter().fold(fp.0, |v, b| v ^ (1u64 << b)))
        };
        idx.insert("same-a", base);
        idx.insert("same-b", base);
        idx.insert("d3-spread", flip(base, &[1, 20, 40]));
        idx.insert("d4-spread", flip(base, &[1, 20, 40, 60]));
        idx.insert("d2", flip(base, &[5, 6]));
        for n in 0..2000 {
            idx.insert(&format!("r{n}"), Fingerprint(rng.random()));
        }
        for k in 0..=3 {
            let want = brute_force(idx.iter(), base, k);
            assert_eq!(idx.query(base, k), want, "k={k}");
        }
        assert_eq!(idx.query(base, 3).len(), 4);
        idx.remove("same-a");
        assert_eq!(idx.query(base, 0).len(), 1);
        idx.insert("same-b", flip(base, &[63]));
        assert_eq!(idx.query(base, 0).len(), 0);
        assert_eq!(idx.len(), 2004);
    }
}
