//! The pigeonhole index, pure: key codec, probe plan, an in-memory index and
//! the brute-force oracle. Nothing here touches RocksDB or files.
//!
//! A 64-bit fingerprint is four 16-bit blocks. If two fingerprints differ in
//! at most 3 bits, at least one of the four blocks is identical (pigeonhole),
//! so probing each block's bucket finds every neighbour within k <= 3.
//!
//! Larger k, still exact (multi-index hashing): if two fingerprints differ in
//! at most k bits, the four blocks' distances sum to at most k, so at least
//! one block differs in at most `r = floor(k / 4)` bits. Probing, in every
//! family, each bucket whose block value is within `r` bits of the query's
//! block finds every neighbour: 1 bucket per family for k <= 3, 17 for
//! k <= 7 (r = 1), 137 for k <= 11 (r = 2). See [`probe_blocks`].
//!
//! # Bucket layout (in each of the four block families)
//!
//! A bucket is the set of distinct fingerprints whose block `i` has one
//! value. Documents that share a fingerprint share its entry: a million
//! exact copies of one text add one entry to each of four buckets.
//!
//! ```text
//! head key      offset  size  field
//!               0       2     block value, u16 big-endian (family i holds
//!                             block i; block 0 = bits 63..48)
//! head value    8j      8     fingerprint j, u64 big-endian; strictly
//!                             ascending (byte order = numeric order)
//!               8m      4     (only when the bucket has sealed segments)
//!                             their number n, u32 big-endian: a head
//!                             value's length is 8m or 8m + 4
//! segment key   0       2     block value, u16 big-endian
//!               2       4     segment number s (1..=n), u32 big-endian
//! segment value 8j      8     fingerprint j, u64 big-endian; ascending
//! ```
//!
//! A query reads the heads it needs with one multi-get and scans them
//! with XOR + popcount, instead of stepping an iterator key by key (about
//! 100 ns a key); a head that names sealed segments costs a second
//! multi-get of them. Every fingerprint of bucket `b` of family `i` has
//! block `i` equal to `b`, and is in exactly one of its head and segments.
//!
//! Writes never rewrite a head: they add *operands* (RocksDB merge
//! operands) that [`merge_posting`] folds in when RocksDB compacts or reads
//! the bucket:
//!
//! ```text
//! operand = one or more 9-byte entries:
//!        0       1     b'+' (the fingerprint is in the bucket) or b'-'
//!                      (it is not)
//!        1       8     fingerprint, u64 big-endian
//! ```
//!
//! Of all operands naming one fingerprint, the last wins, so an operand
//! applied twice changes nothing. A writer adds `+` when a fingerprint
//! gains its first document and `-` when it loses its last.
//!
//! **Hot buckets.** A head that reaches [`SEGMENT_ENTRIES`] fingerprints
//! is *sealed* by the writer, in the same atomic batch as the write that
//! fills it: its fingerprints become segment n + 1 (one `Put`) and the
//! head keeps only the count (another). A sealed segment never receives a
//! `+` again (a `-` only when its fingerprint loses its last document), so
//! neither an insert nor a compaction ever folds operands into more than
//! one head's worth of bytes, however large the bucket grows.
//!
//! A document is named inside the store by its [`RefKey`]: its fingerprint
//! and its id. The `refs` family's keys are `fingerprint ‖ id` (values are
//! empty): a query finds a fingerprint in a bucket, then the documents
//! that have it, in id order, under that 8-byte prefix of `refs`. Only
//! hits are looked up, and only as many as an answer needs.

pub mod bands;
pub mod frozen;
pub mod join;
mod mem;
pub mod parts;
mod plan;
mod posting;

pub use mem::*;
pub use plan::*;
pub use posting::*;

use std::collections::{BTreeSet, HashMap};

use crate::fingerprint::{Fingerprint, BLOCKS};

/// Length of a bucket's head key (the block value, u16 big-endian).
pub const BUCKET_KEY_LEN: usize = 2;
/// Length of a sealed segment's key (block value ‖ segment number).
pub const SEGMENT_KEY_LEN: usize = 6;
/// Length of one posting entry (a fingerprint, u64 big-endian).
pub const ENTRY_LEN: usize = 8;
/// Length of the fingerprint part of a [`RefKey`].
pub const REF_KEY_PREFIX_LEN: usize = 8;
/// Length of one entry of a merge operand.
pub const OPERAND_LEN: usize = 9;
/// Length of a head's trailer (the number of sealed segments).
pub const TRAILER_LEN: usize = 4;
/// Fingerprints a head holds before the writer seals it into a segment
/// (32 KiB of entries): the most bytes an insert or a compaction ever
/// merges in one bucket.
pub const SEGMENT_ENTRIES: usize = 4096;

/// A document found by a query.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub id: String,
    pub fingerprint: Fingerprint,
    pub distance: u32,
    /// Estimated Jaccard similarity of the two documents' shingles
    /// (from their verification sketches), when the query and the document
    /// both have a sketch and verification was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// When the similarity is below the threshold and the hit was
    /// confirmed by containment: the estimated share of the shorter
    /// document inside the longer (see `db::MIN_CONTAINMENT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containment: Option<f64>,
}

impl Hit {
    /// A hit with no similarity.
    pub fn new(id: String, fingerprint: Fingerprint, distance: u32) -> Hit {
        Hit {
            id,
            fingerprint,
            distance,
            similarity: None,
            containment: None,
        }
    }
}

/// How the index names a document: its fingerprint and its id. Encoded
/// as `fingerprint u64 BE ‖ id UTF-8`, the key of the `refs` family, so
/// the documents of one fingerprint sort by id under an 8-byte prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RefKey {
    pub fingerprint: Fingerprint,
    pub id: String,
}

impl RefKey {
    /// The `refs` key of document `id` with fingerprint `fp`.
    pub fn encode(fp: Fingerprint, id: &str) -> Vec<u8> {
        let mut k = Vec::with_capacity(REF_KEY_PREFIX_LEN + id.len());
        k.extend_from_slice(&fp.value().to_be_bytes());
        k.extend_from_slice(id.as_bytes());
        k
    }

    /// The fingerprint and id of a `refs` key; `Err` carries the reason.
    pub fn decode(bytes: &[u8]) -> Result<(Fingerprint, &str), String> {
        let (Some(f), Some(id)) = (
            bytes.get(..REF_KEY_PREFIX_LEN),
            bytes.get(REF_KEY_PREFIX_LEN..),
        ) else {
            return Err(format!(
                "document key is {} bytes, shorter than {REF_KEY_PREFIX_LEN}",
                bytes.len()
            ));
        };
        let mut fb = [0u8; 8];
        fb.copy_from_slice(f);
        if id.is_empty() {
            return Err("document key has an empty id".into());
        }
        let id = std::str::from_utf8(id).map_err(|_| "document id is not UTF-8".to_string())?;
        Ok((Fingerprint(u64::from_be_bytes(fb)), id))
    }
}

/// SplitMix64: a small, stable pseudo-random generator (for sampling; not
/// for anything persisted).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
        .map(|(id, fp)| Hit::new(id.to_string(), fp, fp.distance(q)))
        .collect();
    finish(hits, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_segment_posting_and_ref_bytes_are_pinned() {
        let a = Fingerprint(0x0123_4567_89ab_cdef);
        let b = Fingerprint(0x0123_ffff_0000_0001);
        assert_eq!(bucket_key(a.block(0)), [0x01, 0x23]);
        assert_eq!(decode_bucket_key(&[0x01, 0x23]), Ok(0x0123));
        assert!(decode_bucket_key(&[1]).is_err() && decode_bucket_key(&[1, 2, 3]).is_err());
        assert_eq!(segment_key(0x0123, 2), [0x01, 0x23, 0, 0, 0, 2]);
        assert_eq!(decode_block_key(&segment_key(0x0123, 2)), Ok((0x0123, 2)));
        assert_eq!(decode_block_key(&[0x01, 0x23]), Ok((0x0123, 0)));
        assert!(decode_block_key(&segment_key(1, 0)).is_err(), "segment 0");
        assert!(decode_block_key(&[1, 2, 3]).is_err());
        // A segment's key sorts between its head and the next head.
        assert!(bucket_key(7)[..] < segment_key(7, 1)[..]);
        assert!(segment_key(7, u32::MAX)[..] < bucket_key(8)[..]);
        let p = encode_posting(&[a, b]);
        assert_eq!(
            p,
            b"\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\xff\xff\x00\x00\x00\x01".to_vec()
        );
        assert_eq!(
            decode_posting(0, &bucket_key(0x0123), &p),
            Ok((vec![a, b], 0))
        );
        let h = encode_head(&[a], 3);
        assert_eq!(
            h,
            b"\x01\x23\x45\x67\x89\xab\xcd\xef\x00\x00\x00\x03".to_vec()
        );
        assert_eq!(split_head(&h), Ok((&h[..8], 3)));
        assert_eq!(decode_posting(0, &bucket_key(0x0123), &h), Ok((vec![a], 3)));
        assert_eq!(encode_head(&[a], 0), encode_posting(&[a]));
        assert_eq!(
            posting_operand(true, a),
            *b"+\x01\x23\x45\x67\x89\xab\xcd\xef"
        );
        assert_eq!(posting_operand(false, a)[0], b'-');
        assert_eq!(
            RefKey::encode(a, "d-1"),
            b"\x01\x23\x45\x67\x89\xab\xcd\xefd-1".to_vec()
        );
        assert_eq!(RefKey::decode(&RefKey::encode(a, "d-1")), Ok((a, "d-1")));
        // Ids sort under their fingerprint's prefix in byte order.
        assert!(RefKey::encode(a, "a") < RefKey::encode(a, "b"));
        assert!(RefKey::encode(a, "zzz") < RefKey::encode(Fingerprint(a.0 + 1), "a"));
    }

    #[test]
    fn bad_postings_and_keys_are_refused() {
        let a = Fingerprint(0x0123_4567_89ab_cdef);
        let b = Fingerprint(0x0123_0000_0000_0000);
        let key = bucket_key(0x0123);
        assert!(decode_posting(0, &key, &encode_posting(&[a])[..7]).is_err());
        assert!(
            decode_posting(0, &key, &encode_posting(&[a, b])).is_err(),
            "order"
        );
        assert!(
            decode_posting(0, &key, &encode_posting(&[a, a])).is_err(),
            "a repeat"
        );
        assert!(
            decode_posting(1, &key, &encode_posting(&[a])).is_err(),
            "bucket"
        );
        assert_eq!(decode_posting(0, &key, &[]), Ok((vec![], 0)), "empty");
        assert!(
            decode_posting(0, &[1], &encode_posting(&[a])).is_err(),
            "key"
        );
        let seg = segment_key(0x0123, 1);
        assert!(
            decode_posting(0, &seg, &encode_head(&[a], 1)).is_err(),
            "a trailer on a segment"
        );
        assert!(split_head(&[0, 0, 0, 0]).is_err(), "0 segments");
        assert!(split_head(&[0; 5]).is_err());
        assert!(RefKey::decode(b"1234567").is_err());
        assert!(RefKey::decode(b"12345678").is_err(), "no id");
        assert!(RefKey::decode(b"12345678\xff").is_err(), "not UTF-8");
    }

    #[test]
    fn merging_keeps_a_set_and_the_last_operand_wins() {
        let f = |v: u64| Fingerprint(v);
        let op = |add, v| posting_operand(add, f(v)).to_vec();
        let base = encode_posting(&[f(1), f(5), f(9)]);
        let ops = [
            op(true, 5), // already there: nothing changes
            op(false, 1),
            op(true, 0),
            op(false, 9),
            op(true, 9), // back again: the last operand wins
            op(true, 7),
            op(false, 7), // and gone
        ];
        let merged = merge_posting(Some(&base), ops.iter().map(Vec::as_slice));
        assert_eq!(merged, encode_posting(&[f(0), f(5), f(9)]));
        // Partial merges (concatenation) then a full merge give the same,
        // and applying the operands again changes nothing.
        let partial = concat_operands(ops.iter().map(Vec::as_slice));
        assert_eq!(merge_posting(Some(&base), [partial.as_slice()]), merged);
        assert_eq!(merge_posting(Some(&merged), [partial.as_slice()]), merged);
        // Removing everything empties the bucket; a stray remove is ignored.
        let gone = merge_posting(
            Some(&encode_posting(&[f(3)])),
            [op(false, 3).as_slice(), op(false, 4).as_slice()],
        );
        assert!(gone.is_empty());
        assert_eq!(
            merge_posting(None, [op(true, 2).as_slice()]),
            encode_posting(&[f(2)])
        );
        // A head's trailer survives the merge.
        let head = encode_head(&[f(4)], 2);
        assert_eq!(
            merge_posting(
                Some(&head),
                [op(true, 3).as_slice(), op(false, 4).as_slice()]
            ),
            encode_head(&[f(3)], 2)
        );
        // Garbage inside an operand is skipped, never a panic.
        let mut junk = op(true, 7);
        junk.extend_from_slice(b"?12345678");
        junk.extend_from_slice(b"abc");
        assert_eq!(
            merge_posting(None, [junk.as_slice()]),
            encode_posting(&[f(7)])
        );
    }

    #[test]
    fn merging_equals_a_set_replayed_in_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
        // Small values, so operands meet entries, and the top of the range.
        let value = |rng: &mut rand_chacha::ChaCha8Rng| {
            if rng.random_bool(0.2) {
                u64::MAX - rng.random_range(0..4)
            } else {
                rng.random_range(0..40)
            }
        };
        for _ in 0..1000 {
            let mut set: std::collections::BTreeSet<u64> = (0..rng.random_range(0..20))
                .map(|_| value(&mut rng))
                .collect();
            let fps: Vec<Fingerprint> = set.iter().map(|&v| Fingerprint(v)).collect();
            let base = encode_posting(&fps);
            let head = encode_head(&fps, 3);
            let ops: Vec<Vec<u8>> = (0..rng.random_range(0..30))
                .map(|_| {
                    let (add, v) = (rng.random_bool(0.5), value(&mut rng));
                    if add {
                        set.insert(v);
                    } else {
                        set.remove(&v);
                    }
                    posting_operand(add, Fingerprint(v)).to_vec()
                })
                .collect();
            let want = encode_posting(&set.iter().map(|&v| Fingerprint(v)).collect::<Vec<_>>());
            assert_eq!(
                merge_posting(Some(&base), ops.iter().map(Vec::as_slice)),
                want
            );
            // A head's trailer stays.
            let mut want_head = want.clone();
            want_head.extend_from_slice(&3u32.to_be_bytes());
            assert_eq!(
                merge_posting(Some(&head), ops.iter().map(Vec::as_slice)),
                want_head
            );
            // Split anywhere into two partial merges.
            let cut = rng.random_range(0..=ops.len());
            let (x, y) = ops.split_at(cut);
            let px = concat_operands(x.iter().map(Vec::as_slice));
            let py = concat_operands(y.iter().map(Vec::as_slice));
            assert_eq!(
                merge_posting(Some(&base), [px.as_slice(), py.as_slice()]),
                want
            );
        }
    }

    #[test]
    fn probe_blocks_are_exactly_the_values_within_the_radius() {
        for (block, r) in [(0u16, 0u32), (0x8001, 1), (0xffff, 2), (0x1234, 3)] {
            let want: Vec<u16> = (0..=u16::MAX)
                .filter(|v| (v ^ block).count_ones() <= r)
                .collect();
            assert_eq!(probe_blocks(block, r), want, "block {block:04x} r {r}");
        }
        assert_eq!(probe_blocks(7, 1).len(), 17);
        assert_eq!(probe_blocks(7, 2).len(), 137);
        assert_eq!(
            (0..=11).map(probe_radius).collect::<Vec<_>>(),
            [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
        );
    }

    #[test]
    fn ranked_plan_reads_the_weak_subsets_within_budget() {
        let q = Fingerprint(0x1234_5678_9abc_def0);
        // Bits 0 and 1 are in block 3, bit 63 in block 0.
        let plan = ProbePlan::ranked(q, 0, &[0, 1, 63], 64);
        assert_eq!(plan.weak_mask, 0b11 | 1 << 63);
        assert_eq!(plan.blocks[3].len(), 4);
        assert_eq!(plan.blocks[0].len(), 2);
        assert_eq!(plan.blocks[1], vec![q.block(1)]);
        assert_eq!(plan.buckets(), 4 + 2 + 1 + 1);
        let b3: Vec<u16> = [0u16, 1, 2, 3].iter().map(|m| q.block(3) ^ m).collect();
        let mut sorted = b3.clone();
        sorted.sort_unstable();
        assert_eq!(plan.blocks[3], sorted);
        // Weak bits are free, three others are tolerated, a fourth is not.
        let all_weak = Fingerprint(q.0 ^ (0b11 | 1 << 63));
        assert!(plan.accepts(q, all_weak));
        let three = Fingerprint(all_weak.0 ^ (1 << 20 | 1 << 40 | 1 << 50));
        assert!(plan.accepts(q, three));
        assert!(!plan.accepts(q, Fingerprint(three.0 ^ (1 << 30))));
        // The budget bounds the buckets; a block's weak bits cost 2^w.
        let order: Vec<u8> = (0..64).collect();
        for budget in [4, 5, 8, 16, 17, 64, 100, 1000] {
            let p = ProbePlan::ranked(q, 0, &order, budget);
            assert!(p.buckets() <= budget.max(4), "budget {budget}");
            let per_block: Vec<u32> = (0..4)
                .map(|i| (p.weak_mask >> (48 - 16 * i) & 0xffff).count_ones())
                .collect();
            let cost: usize = per_block.iter().map(|w| 1usize << w).sum();
            assert_eq!(cost, p.buckets(), "budget {budget}");
        }
        // Bits 0..15 all sit in block 3: with budget 64 it takes 5 of them
        // (36 buckets), then skips to other blocks only when they fit.
        let p = ProbePlan::ranked(q, 0, &order, 64);
        assert_eq!(p.weak_mask & 0xffff, 0b1_1111);
        // No weak bits known: the k = 3 buckets, the k = 3 answer.
        let none = ProbePlan::ranked(q, 0, &[], 64);
        assert_eq!(none.buckets(), 4);
        assert!(none.accepts(q, Fingerprint(q.0 ^ 0b111)));
        assert!(!none.accepts(q, Fingerprint(q.0 ^ 0b1111)));
        assert_eq!(
            subsets(0b101).collect::<Vec<_>>(),
            vec![0b101, 0b100, 0b001, 0]
        );
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
        for k in 0..=crate::fingerprint::MAX_EXACT_K {
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
