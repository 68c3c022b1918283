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
//! # Bucket layout (one key per non-empty bucket in each of the four block families)
//!
//! ```text
//! key    offset  size  field
//!        0       2     block value, u16 big-endian (family i holds block i;
//!                      block 0 = bits 63..48)
//! value  offset  size  field
//!        8j      8     fingerprint j of the bucket, u64 big-endian; ascending
//!                      (byte order = numeric order), one entry per document,
//!                      so documents sharing a fingerprint repeat it
//! ```
//!
//! A bucket is one value, the *posting*: a query reads it with one point
//! lookup and scans it with XOR + popcount, instead of stepping an
//! iterator key by key (about 100 ns a key). Every fingerprint in the
//! posting of block family `i` under key `b` has block `i` equal to `b`.
//!
//! Writes never rewrite a posting: they add *operands* (RocksDB merge
//! operands) that [`merge_posting`] folds in when RocksDB compacts or reads
//! the bucket:
//!
//! ```text
//! operand = one or more 9-byte entries:
//!        0       1     b'+' (add one occurrence) or b'-' (remove one)
//!        1       8     fingerprint, u64 big-endian
//! ```
//!
//! A document is named inside the store by its [`DocKey`]: its fingerprint
//! and a sequence number that tells apart documents sharing that exact
//! fingerprint (0 for the first). The `refs` family maps a [`DocKey`]
//! (`fingerprint ‖ seq`) to the document id; a query finds a fingerprint in
//! a posting and then the documents that have it under that prefix of
//! `refs`. Only hits are looked up.

pub mod join;

use std::collections::HashMap;

use crate::fingerprint::{Fingerprint, BLOCKS};

/// Length of a bucket key (the block value, u16 big-endian).
pub const BUCKET_KEY_LEN: usize = 2;
/// Length of one posting entry (a fingerprint, u64 big-endian).
pub const ENTRY_LEN: usize = 8;
/// Length of the fingerprint part of a [`DocKey`].
pub const DOC_KEY_PREFIX_LEN: usize = 8;
/// Length of one entry of a merge operand.
pub const OPERAND_LEN: usize = 9;

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

/// The key of bucket `block` (in any block family).
#[inline]
pub fn bucket_key(block: u16) -> [u8; BUCKET_KEY_LEN] {
    block.to_be_bytes()
}

/// The block value of a bucket key; `Err` carries the reason.
pub fn decode_bucket_key(key: &[u8]) -> Result<u16, String> {
    match key {
        [a, b] => Ok(u16::from_be_bytes([*a, *b])),
        _ => Err(format!(
            "bucket key is {} bytes (expected {BUCKET_KEY_LEN})",
            key.len()
        )),
    }
}

/// The posting of sorted fingerprints `fps`.
pub fn encode_posting(fps: &[Fingerprint]) -> Vec<u8> {
    let mut v = Vec::with_capacity(fps.len() * ENTRY_LEN);
    for fp in fps {
        v.extend_from_slice(&fp.value().to_be_bytes());
    }
    v
}

/// The fingerprints of a posting, without checks beyond its length: the
/// query loop's fast path. `None` if the length is not a multiple of 8.
#[inline]
pub fn posting_entries(value: &[u8]) -> Option<impl Iterator<Item = Fingerprint> + '_> {
    value.len().is_multiple_of(ENTRY_LEN).then(|| {
        value.chunks_exact(ENTRY_LEN).map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            Fingerprint(u64::from_be_bytes(b))
        })
    })
}

/// Decodes and checks the posting of bucket `key` in block family `i`:
/// whole entries, ascending, each in the bucket its key names. `Err`
/// carries the reason.
pub fn decode_posting(i: usize, key: &[u8], value: &[u8]) -> Result<Vec<Fingerprint>, String> {
    let block = decode_bucket_key(key)?;
    let entries = posting_entries(value).ok_or_else(|| {
        format!(
            "posting is {} bytes, not a multiple of {ENTRY_LEN}",
            value.len()
        )
    })?;
    let mut out: Vec<Fingerprint> = Vec::with_capacity(value.len() / ENTRY_LEN);
    for fp in entries {
        if i < BLOCKS && fp.block(i) != block {
            return Err(format!(
                "fingerprint {fp} is in bucket {block:04x}, but its block {i} is {:04x}",
                fp.block(i)
            ));
        }
        if out.last().is_some_and(|last| *last > fp) {
            return Err(format!("fingerprint {fp} is out of order"));
        }
        out.push(fp);
    }
    if out.is_empty() {
        return Err("empty posting (an empty bucket has no key)".into());
    }
    Ok(out)
}

/// The merge operand that adds (or removes) one occurrence of `fp` to a
/// bucket.
pub fn posting_operand(add: bool, fp: Fingerprint) -> [u8; OPERAND_LEN] {
    let mut op = [0u8; OPERAND_LEN];
    op[0] = if add { b'+' } else { b'-' };
    op[1..].copy_from_slice(&fp.value().to_be_bytes());
    op
}

/// Folds merge operands (oldest first) into an existing posting: adds
/// insert one occurrence, removes take one away (a remove of a fingerprint
/// the bucket does not hold is ignored). Malformed bytes are skipped: a
/// merge cannot fail without making the whole family unreadable, and
/// `verify` compares every posting with the records. An empty result
/// means the bucket is empty.
pub fn merge_posting<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<u8> {
    let mut adds: Vec<u64> = Vec::new();
    let mut removes: Vec<u64> = Vec::new();
    for op in operands {
        for e in op.chunks_exact(OPERAND_LEN) {
            let mut b = [0u8; 8];
            b.copy_from_slice(&e[1..]);
            match e[0] {
                b'+' => adds.push(u64::from_be_bytes(b)),
                b'-' => removes.push(u64::from_be_bytes(b)),
                _ => {}
            }
        }
    }
    // An add and a remove of the same fingerprint cancel whatever their
    // order: the multiset sum is what the store's writes mean.
    adds.sort_unstable();
    removes.sort_unstable();
    let old: Vec<u64> = existing
        .and_then(posting_entries)
        .map(|it| it.map(|f| f.0).collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity((old.len() + adds.len()) * ENTRY_LEN);
    let (mut i, mut j, mut r) = (0, 0, 0);
    loop {
        let next = match (old.get(i), adds.get(j)) {
            (Some(&a), Some(&b)) if a <= b => {
                i += 1;
                a
            }
            (_, Some(&b)) => {
                j += 1;
                b
            }
            (Some(&a), None) => {
                i += 1;
                a
            }
            (None, None) => break,
        };
        while removes.get(r).is_some_and(|&x| x < next) {
            r += 1; // removes of fingerprints the bucket does not hold
        }
        if removes.get(r) == Some(&next) {
            r += 1;
            continue;
        }
        out.extend_from_slice(&next.to_be_bytes());
    }
    out
}

/// Concatenates merge operands (RocksDB's partial merge).
pub fn concat_operands<'a>(operands: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    operands.into_iter().flatten().copied().collect()
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
        // `|` and `&`, not `||` and `&&`: no branch in the scan loop.
        (x.count_ones() <= self.k)
            | (self.ranked & ((x & !self.weak_mask).count_ones() <= PROBE_TOLERANCE))
    }

    /// Buckets read over the four families.
    pub fn buckets(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum()
    }

    /// Appends to `out` the fingerprints of posting `value` (whole 8-byte
    /// entries; a trailing partial entry is ignored, callers check the
    /// length) that the plan accepts for `q`: the query's hot loop,
    /// [`ProbePlan::accepts`] compiled with the CPU's POPCNT instruction
    /// where it has one.
    pub fn scan_posting(&self, q: Fingerprint, value: &[u8], out: &mut Vec<Fingerprint>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU has POPCNT (checked just above), the only
                // feature the function is compiled for.
                unsafe { self.scan_posting_popcnt(q, value, out) };
                return;
            }
        }
        self.scan_posting_portable(q, value, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn scan_posting_popcnt(&self, q: Fingerprint, value: &[u8], out: &mut Vec<Fingerprint>) {
        self.scan_posting_portable(q, value, out);
    }

    #[inline(always)]
    fn scan_posting_portable(&self, q: Fingerprint, value: &[u8], out: &mut Vec<Fingerprint>) {
        for c in value.chunks_exact(ENTRY_LEN) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            let fp = Fingerprint(u64::from_be_bytes(b));
            if self.accepts(q, fp) {
                out.push(fp);
            }
        }
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
    fn bucket_and_posting_bytes_are_pinned() {
        let a = Fingerprint(0x0123_4567_89ab_cdef);
        let b = Fingerprint(0x0123_ffff_0000_0001);
        assert_eq!(bucket_key(a.block(0)), [0x01, 0x23]);
        assert_eq!(decode_bucket_key(&[0x01, 0x23]), Ok(0x0123));
        assert!(decode_bucket_key(&[1]).is_err() && decode_bucket_key(&[1, 2, 3]).is_err());
        let p = encode_posting(&[a, a, b]);
        assert_eq!(
            p,
            b"\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\xff\xff\x00\x00\x00\x01"
                .to_vec()
        );
        assert_eq!(
            decode_posting(0, &bucket_key(0x0123), &p),
            Ok(vec![a, a, b])
        );
        assert_eq!(
            posting_operand(true, a),
            *b"+\x01\x23\x45\x67\x89\xab\xcd\xef"
        );
        assert_eq!(posting_operand(false, a)[0], b'-');
        DocKey::decode(&DocKey::new(a, 1).encode()).unwrap();
        assert_eq!(
            DocKey::new(a, 1).encode(),
            b"\x01\x23\x45\x67\x89\xab\xcd\xef\x00\x00\x00\x01".to_vec()
        );
    }

    #[test]
    fn bad_postings_are_refused() {
        let a = Fingerprint(0x0123_4567_89ab_cdef);
        let b = Fingerprint(0x0123_0000_0000_0000);
        let key = bucket_key(0x0123);
        assert!(decode_posting(0, &key, &encode_posting(&[a])[..7]).is_err());
        assert!(
            decode_posting(0, &key, &encode_posting(&[a, b])).is_err(),
            "order"
        );
        assert!(
            decode_posting(1, &key, &encode_posting(&[a])).is_err(),
            "bucket"
        );
        assert!(decode_posting(0, &key, &[]).is_err(), "empty");
        assert!(
            decode_posting(0, &[1], &encode_posting(&[a])).is_err(),
            "key"
        );
        for seq in [0, 1, 7, u32::MAX] {
            let d = DocKey::new(a, seq);
            assert_eq!(DocKey::decode(&d.encode()), Ok(d));
        }
        let mut zero = DocKey::new(a, 0).encode();
        zero.extend_from_slice(&[0, 0, 0, 0]);
        assert!(DocKey::decode(&zero).is_err(), "seq 0 has one encoding");
        assert!(DocKey::decode(b"1234567").is_err());
        assert!(DocKey::decode(b"123456789").is_err());
    }

    #[test]
    fn merging_is_a_multiset_sum() {
        let f = |v: u64| Fingerprint(v);
        let op = |add, v| posting_operand(add, f(v)).to_vec();
        let base = encode_posting(&[f(1), f(5), f(5), f(9)]);
        let ops = [
            op(true, 5),
            op(false, 1),
            op(true, 0),
            op(false, 9),
            op(true, 9),
        ];
        let merged = merge_posting(Some(&base), ops.iter().map(Vec::as_slice));
        assert_eq!(merged, encode_posting(&[f(0), f(5), f(5), f(5), f(9)]));
        // Partial merges (concatenation) then a full merge give the same.
        let partial = concat_operands(ops.iter().map(Vec::as_slice));
        assert_eq!(merge_posting(Some(&base), [partial.as_slice()]), merged);
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
