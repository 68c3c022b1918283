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
//! # Index key layout (one key per document in each of the four block families)
//!
//! ```text
//! offset  size  field
//! 0       2     block value, u16 big-endian (family i holds block i; block 0 = bits 63..48)
//! 2       8     full fingerprint, u64 big-endian
//! 10      0|4   document sequence number: nothing for 0, else u32 big-endian (>= 1)
//! ```
//!
//! A document is named inside the index by its [`DocKey`]: its fingerprint
//! and a sequence number that tells apart documents sharing that exact
//! fingerprint (0 for the first, so almost every key is 10 bytes). The
//! `refs` family maps a [`DocKey`] (`fingerprint ‖ seq`, same encoding) to
//! the document id. Keeping the id out of the index keys keeps them small
//! (about 10 bytes on disk each after RocksDB's prefix compression) and
//! lets a query decide from keys alone; only hits are looked up.
//!
//! Big-endian makes byte order numeric order, so a block's bucket is the
//! contiguous range of keys with that 2-byte prefix.

use std::collections::HashMap;

use crate::fingerprint::{Fingerprint, BLOCKS};

/// Length of the bucket prefix of an index key.
pub const PREFIX_LEN: usize = 2;
/// Length of the fixed part of an index key (block + fingerprint).
pub const FIXED_LEN: usize = 10;
/// Length of the fingerprint part of a [`DocKey`].
pub const DOC_KEY_PREFIX_LEN: usize = 8;

/// A document found by a query.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub id: String,
    pub fingerprint: Fingerprint,
    pub distance: u32,
    /// Estimated Jaccard similarity of the two documents' word 3-shingles
    /// (from their verification sketches), when the query and the document
    /// both have a sketch and verification was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

impl Hit {
    /// A hit with no similarity.
    pub fn new(id: String, fingerprint: Fingerprint, distance: u32) -> Hit {
        Hit {
            id,
            fingerprint,
            distance,
            similarity: None,
        }
    }
}

/// How the index names a document: its fingerprint and its sequence number
/// among the documents with that exact fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocKey {
    pub fingerprint: Fingerprint,
    pub seq: u32,
}

impl DocKey {
    pub fn new(fingerprint: Fingerprint, seq: u32) -> DocKey {
        DocKey { fingerprint, seq }
    }

    /// `fingerprint u64 BE ‖ seq` (nothing for 0, else u32 BE): the key of
    /// the `refs` family.
    pub fn encode(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(DOC_KEY_PREFIX_LEN + 4);
        k.extend_from_slice(&self.fingerprint.value().to_be_bytes());
        push_seq(&mut k, self.seq);
        k
    }

    /// Decodes [`DocKey::encode`]'s bytes; `Err` carries the reason.
    pub fn decode(bytes: &[u8]) -> Result<DocKey, String> {
        let Some(f) = bytes.get(..DOC_KEY_PREFIX_LEN) else {
            return Err(format!(
                "document key is {} bytes, shorter than {DOC_KEY_PREFIX_LEN}",
                bytes.len()
            ));
        };
        let mut fb = [0u8; 8];
        fb.copy_from_slice(f);
        Ok(DocKey {
            fingerprint: Fingerprint(u64::from_be_bytes(fb)),
            seq: decode_seq(&bytes[DOC_KEY_PREFIX_LEN..])?,
        })
    }
}

/// The sequence number after `seq` among documents of fingerprint `fp`; an
/// error once all 2^32 are taken.
pub fn seq_after(fp: Fingerprint, seq: u32) -> crate::Result<u32> {
    seq.checked_add(1).ok_or_else(|| {
        crate::Error::Input(format!(
            "more than {} documents share fingerprint {fp}",
            u32::MAX
        ))
    })
}

fn push_seq(k: &mut Vec<u8>, seq: u32) {
    if seq != 0 {
        k.extend_from_slice(&seq.to_be_bytes());
    }
}

fn decode_seq(b: &[u8]) -> Result<u32, String> {
    match b.len() {
        0 => Ok(0),
        4 => match u32::from_be_bytes([b[0], b[1], b[2], b[3]]) {
            0 => Err("sequence number 0 must be encoded as nothing".into()),
            s => Ok(s),
        },
        n => Err(format!(
            "sequence number part is {n} bytes (expected 0 or 4)"
        )),
    }
}

/// The index key of document `doc` in block family `i`.
pub fn encode_key(i: usize, doc: DocKey) -> Vec<u8> {
    let mut k = Vec::with_capacity(FIXED_LEN + 4);
    k.extend_from_slice(&doc.fingerprint.block(i).to_be_bytes());
    k.extend_from_slice(&doc.fingerprint.value().to_be_bytes());
    push_seq(&mut k, doc.seq);
    k
}

/// The bucket prefix that a query for `fp` scans in block family `i`.
pub fn bucket_prefix(i: usize, fp: Fingerprint) -> [u8; PREFIX_LEN] {
    fp.block(i).to_be_bytes()
}

/// The fingerprint stored in index key `key`, without further checks: the
/// query loop's fast path. `None` if the key is too short.
#[inline]
pub fn key_fingerprint(key: &[u8]) -> Option<Fingerprint> {
    let f: [u8; 8] = key.get(PREFIX_LEN..FIXED_LEN)?.try_into().ok()?;
    Some(Fingerprint(u64::from_be_bytes(f)))
}

/// A decoded index key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexKey {
    pub block: u16,
    pub doc: DocKey,
}

/// Decodes an index key of block family `i`; `Err` carries the reason.
pub fn decode_key(i: usize, key: &[u8]) -> Result<IndexKey, String> {
    let (Some(b), Some(fingerprint)) = (key.get(0..2), key_fingerprint(key)) else {
        return Err(format!(
            "index key is {} bytes, shorter than {FIXED_LEN}",
            key.len()
        ));
    };
    let block = u16::from_be_bytes([b[0], b[1]]);
    let seq = decode_seq(&key[FIXED_LEN..])?;
    if i < BLOCKS && fingerprint.block(i) != block {
        return Err(format!(
            "bucket {block:04x} does not match block {i} of fingerprint {fingerprint}"
        ));
    }
    Ok(IndexKey {
        block,
        doc: DocKey { fingerprint, seq },
    })
}

/// The block radius that makes a probe exact at distance `k`:
/// `floor(k / 4)` (see the module documentation).
#[inline]
pub fn probe_radius(k: u32) -> u32 {
    k / BLOCKS as u32
}

/// Every 16-bit value within `radius` bits of `block` (the buckets a query
/// with that block probes in one family), ascending, `block` itself
/// included: `1 + 16 + … + C(16, radius)` values.
pub fn probe_blocks(block: u16, radius: u32) -> Vec<u16> {
    fn flip(v: u16, from: u32, left: u32, out: &mut Vec<u16>) {
        out.push(v);
        if left == 0 {
            return;
        }
        for bit in from..16 {
            flip(v ^ (1 << bit), bit + 1, left - 1, out);
        }
    }
    let mut out = Vec::new();
    flip(block, 0, radius.min(16), &mut out);
    out.sort_unstable();
    out
}

/// Largest probe budget accepted (buckets over the four families).
pub const MAX_PROBE_BUDGET: usize = 4096;

/// The default probe budget of confidence-ranked queries: buckets read over
/// the four families (an exact k <= 3 query reads 4). Chosen from
/// `tools/recall.rs` (README, "Recall at realistic edits").
pub const DEFAULT_PROBE_BUDGET: usize = 128;

/// Differing bits outside the weak set that a ranked probe still accepts:
/// 3, the most that four exact-block families guarantee to find.
pub const PROBE_TOLERANCE: u32 = 3;

/// Which buckets a query reads and which fingerprints it accepts.
///
/// - **Exact** ([`ProbePlan::exact`]): every fingerprint within `k` bits
///   (multi-index hashing, see the module documentation); equal to a brute
///   force scan at that k.
/// - **Confidence-ranked** ([`ProbePlan::ranked`]): the query's least
///   confident bits (smallest simhash margins, see
///   [`crate::fingerprint::BitSums`]) form a *weak set* W chosen greedily,
///   weakest first, so that reading every block value that differs from the
///   query's only in W costs at most `budget` buckets over the four
///   families (a block holding w weak bits costs 2^w buckets). A fingerprint
///   is accepted when it differs from the query in at most
///   [`PROBE_TOLERANCE`] bits outside W (any number inside W), or is
///   within `k`. Four blocks and at most 3 differing bits outside W mean
///   some block differs only inside W, so the plan finds every
///   fingerprint it accepts: it too equals a brute-force scan of its rule
///   ([`brute_force_plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbePlan {
    /// The weak set W (0 for an exact plan).
    pub weak_mask: u64,
    /// Every fingerprint within `k` is accepted.
    pub k: u32,
    /// Whether the weak-set rule applies (a ranked plan).
    pub ranked: bool,
    /// Per family, the block values to read, ascending.
    pub blocks: [Vec<u16>; BLOCKS],
}

/// Which block (0 = most significant) holds fingerprint bit `bit`, and
/// the bit's position inside that block's 16-bit value.
#[inline]
fn block_of_bit(bit: u8) -> (usize, u32) {
    (BLOCKS - 1 - usize::from(bit / 16), u32::from(bit % 16))
}

impl ProbePlan {
    /// Every fingerprint within `k` (<= [`MAX_EXACT_K`](crate::fingerprint::MAX_EXACT_K)).
    pub fn exact(q: Fingerprint, k: u32) -> ProbePlan {
        let r = probe_radius(k);
        ProbePlan {
            weak_mask: 0,
            k,
            ranked: false,
            blocks: std::array::from_fn(|i| probe_blocks(q.block(i), r)),
        }
    }

    /// A confidence-ranked plan for `q` whose bits, weakest first, are
    /// `weak_order` (see [`crate::fingerprint::BitSums::weakest`]), reading
    /// at most `budget` buckets beyond those of the exact plan at `k`.
    /// Indices above 63 or repeated are ignored. With no weak bits known
    /// the plan reads the k = 3 buckets and accepts what
    /// [`PROBE_TOLERANCE`] allows (the exact k = 3 answer).
    pub fn ranked(q: Fingerprint, k: u32, weak_order: &[u8], budget: usize) -> ProbePlan {
        let budget = budget.clamp(BLOCKS, MAX_PROBE_BUDGET);
        let mut per_block = [0u16; BLOCKS];
        let mut count = [0u32; BLOCKS];
        let mut cost = BLOCKS;
        let mut weak_mask = 0u64;
        for &bit in weak_order {
            if bit >= 64 || weak_mask & (1 << bit) != 0 {
                continue;
            }
            let (i, pos) = block_of_bit(bit);
            // Adding a bit to a block doubles that block's buckets.
            let extra = 1usize << count[i];
            if cost + extra > budget {
                continue;
            }
            cost += extra;
            count[i] += 1;
            per_block[i] |= 1 << pos;
            weak_mask |= 1 << bit;
            if cost == budget {
                break;
            }
        }
        let r = probe_radius(k);
        let blocks = std::array::from_fn(|i| {
            let mut v = probe_blocks(q.block(i), r);
            v.extend(subsets(per_block[i]).map(|m| q.block(i) ^ m));
            v.sort_unstable();
            v.dedup();
            v
        });
        ProbePlan {
            weak_mask,
            k,
            ranked: true,
            blocks,
        }
    }

    /// Whether the plan accepts fingerprint `fp` for query `q`.
    #[inline]
    pub fn accepts(&self, q: Fingerprint, fp: Fingerprint) -> bool {
        let x = q.0 ^ fp.0;
        x.count_ones() <= self.k
            || (self.ranked && (x & !self.weak_mask).count_ones() <= PROBE_TOLERANCE)
    }

    /// Buckets read over the four families.
    pub fn buckets(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum()
    }

    /// Number of weak bits.
    pub fn weak_bits(&self) -> u32 {
        self.weak_mask.count_ones()
    }
}

/// Every subset of the bits of `mask` (including 0 and `mask`).
fn subsets(mask: u16) -> impl Iterator<Item = u16> {
    // Enumerates submasks in decreasing order, then 0.
    let mut next = Some(mask);
    std::iter::from_fn(move || {
        let cur = next?;
        next = if cur == 0 {
            None
        } else {
            Some((cur - 1) & mask)
        };
        Some(cur)
    })
}

/// The oracle of a plan: every entry the plan accepts, by a linear scan.
pub fn brute_force_plan<'a>(
    entries: impl IntoIterator<Item = (&'a str, Fingerprint)>,
    q: Fingerprint,
    plan: &ProbePlan,
) -> Vec<Hit> {
    let hits = entries
        .into_iter()
        .filter(|(_, fp)| plan.accepts(q, *fp))
        .map(|(id, fp)| Hit::new(id.to_string(), fp, fp.distance(q)))
        .collect();
    finish(hits, None)
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

    /// Every entry within `k` (k <= [`MAX_EXACT_K`](crate::fingerprint::MAX_EXACT_K))
    /// of `q`, sorted by distance then id.
    pub fn query(&self, q: Fingerprint, k: u32) -> Vec<Hit> {
        debug_assert!(k <= crate::fingerprint::MAX_EXACT_K);
        self.query_plan(q, &ProbePlan::exact(q, k))
    }

    /// Every entry `plan` accepts for `q`, found by reading the plan's
    /// buckets; sorted by distance then id.
    pub fn query_plan(&self, q: Fingerprint, plan: &ProbePlan) -> Vec<Hit> {
        let mut seen: HashMap<usize, ()> = HashMap::new();
        let mut hits = Vec::new();
        let probes = plan
            .blocks
            .iter()
            .enumerate()
            .flat_map(|(i, bs)| bs.iter().map(move |&v| (i, v)));
        for (i, b) in probes {
            let Some(slots) = self.buckets[i].get(&b) else {
                continue;
            };
            for &s in slots {
                if let Some((id, fp)) = &self.entries[s] {
                    if plan.accepts(q, *fp) && seen.insert(s, ()).is_none() {
                        hits.push(Hit::new(id.clone(), *fp, fp.distance(q)));
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
            encode_key(0, DocKey::new(fp, 0)),
            b"\x01\x23\x01\x23\x45\x67\x89\xab\xcd\xef".to_vec()
        );
        assert_eq!(
            encode_key(3, DocKey::new(fp, 2)),
            b"\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef\x00\x00\x00\x02".to_vec()
        );
        assert_eq!(
            DocKey::new(fp, 1).encode(),
            b"\x01\x23\x45\x67\x89\xab\xcd\xef\x00\x00\x00\x01".to_vec()
        );
        assert_eq!(bucket_prefix(1, fp), [0x45, 0x67]);
    }

    #[test]
    fn key_round_trip_and_bad_keys() {
        let fp = Fingerprint(0xfeed_face_dead_beef);
        for i in 0..4 {
            for seq in [0, 1, 7, u32::MAX] {
                let k = encode_key(i, DocKey::new(fp, seq));
                let d = decode_key(i, &k).unwrap();
                assert_eq!(d.doc, DocKey::new(fp, seq));
                assert_eq!(d.block, fp.block(i));
                assert_eq!(DocKey::decode(&DocKey::new(fp, seq).encode()), Ok(d.doc));
            }
        }
        assert!(decode_key(0, b"short").is_err());
        let k = encode_key(0, DocKey::new(fp, 9));
        assert!(decode_key(0, &k[..9]).is_err());
        assert!(decode_key(0, &k[..12]).is_err(), "half a sequence number");
        let mut zero = encode_key(0, DocKey::new(fp, 0));
        zero.extend_from_slice(&[0, 0, 0, 0]);
        assert!(decode_key(0, &zero).is_err(), "seq 0 has one encoding");
        // A key filed under the wrong family.
        assert!(decode_key(1, &encode_key(0, DocKey::new(fp, 0))).is_err());
        assert!(DocKey::decode(b"1234567").is_err());
        assert!(DocKey::decode(b"123456789").is_err());
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
