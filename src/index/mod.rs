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
pub mod join;

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

/// The head key of bucket `block` (in any block family).
#[inline]
pub fn bucket_key(block: u16) -> [u8; BUCKET_KEY_LEN] {
    block.to_be_bytes()
}

/// The key of sealed segment `n` (>= 1) of bucket `block`.
#[inline]
pub fn segment_key(block: u16, n: u32) -> [u8; SEGMENT_KEY_LEN] {
    let mut k = [0u8; SEGMENT_KEY_LEN];
    k[..2].copy_from_slice(&block.to_be_bytes());
    k[2..].copy_from_slice(&n.to_be_bytes());
    k
}

/// The block value of a head key; `Err` carries the reason.
pub fn decode_bucket_key(key: &[u8]) -> Result<u16, String> {
    match key {
        [a, b] => Ok(u16::from_be_bytes([*a, *b])),
        _ => Err(format!(
            "bucket key is {} bytes (expected {BUCKET_KEY_LEN})",
            key.len()
        )),
    }
}

/// The block value and segment number of a block family key: 0 for a
/// head, 1.. for a sealed segment. `Err` carries the reason.
pub fn decode_block_key(key: &[u8]) -> Result<(u16, u32), String> {
    match key {
        [a, b] => Ok((u16::from_be_bytes([*a, *b]), 0)),
        [a, b, c, d, e, f] => match u32::from_be_bytes([*c, *d, *e, *f]) {
            0 => Err("segment number 0 (the head has no number)".into()),
            n => Ok((u16::from_be_bytes([*a, *b]), n)),
        },
        _ => Err(format!(
            "block family key is {} bytes (expected {BUCKET_KEY_LEN} or {SEGMENT_KEY_LEN})",
            key.len()
        )),
    }
}

/// The posting of sorted fingerprints `fps` (a segment, or a head
/// without segments).
pub fn encode_posting(fps: &[Fingerprint]) -> Vec<u8> {
    let mut v = Vec::with_capacity(fps.len() * ENTRY_LEN);
    for fp in fps {
        v.extend_from_slice(&fp.value().to_be_bytes());
    }
    v
}

/// A head value: the entries `fps` and, when `segments` > 0, the trailer.
pub fn encode_head(fps: &[Fingerprint], segments: u32) -> Vec<u8> {
    let mut v = encode_posting(fps);
    if segments > 0 {
        v.extend_from_slice(&segments.to_be_bytes());
    }
    v
}

/// A head value's entries and its number of sealed segments (0 without a
/// trailer). `Err` when the length is neither 8m nor 8m + 4.
#[inline]
pub fn split_head(value: &[u8]) -> Result<(&[u8], u32), String> {
    match value.len() % ENTRY_LEN {
        0 => Ok((value, 0)),
        TRAILER_LEN => {
            let (entries, t) = value.split_at(value.len() - TRAILER_LEN);
            let n = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            if n == 0 {
                return Err("head trailer names 0 segments".into());
            }
            Ok((entries, n))
        }
        r => Err(format!(
            "posting is {} bytes, {r} more than a whole number of entries",
            value.len()
        )),
    }
}

/// The fingerprints of whole 8-byte entries, without checks beyond the
/// length: the query loop's fast path. `None` if the length is not a
/// multiple of 8 (a head's trailer must be split off first).
#[inline]
pub fn posting_entries(value: &[u8]) -> Option<impl Iterator<Item = Fingerprint> + '_> {
    value
        .len()
        .is_multiple_of(ENTRY_LEN)
        .then(|| posting_fingerprints(value))
}

/// Decodes and checks a value of block family `i` under `key` (a head or
/// a sealed segment): whole entries, strictly ascending, each in the
/// bucket its key names; a trailer only on a head. Returns the
/// fingerprints and the head's number of segments (0 for a segment).
/// `Err` carries the reason. An empty value (a bucket whose fingerprints
/// all left) is valid.
pub fn decode_posting(
    i: usize,
    key: &[u8],
    value: &[u8],
) -> Result<(Vec<Fingerprint>, u32), String> {
    let (block, segment) = decode_block_key(key)?;
    let (entries, segments) = if segment == 0 {
        split_head(value)?
    } else if value.len().is_multiple_of(ENTRY_LEN) {
        (value, 0)
    } else {
        return Err(format!(
            "segment is {} bytes, not a multiple of {ENTRY_LEN}",
            value.len()
        ));
    };
    let mut out: Vec<Fingerprint> = Vec::with_capacity(entries.len() / ENTRY_LEN);
    for fp in posting_entries(entries).into_iter().flatten() {
        if i < BLOCKS && fp.block(i) != block {
            return Err(format!(
                "fingerprint {fp} is in bucket {block:04x}, but its block {i} is {:04x}",
                fp.block(i)
            ));
        }
        if out.last().is_some_and(|last| *last >= fp) {
            return Err(format!("fingerprint {fp} is out of order or repeated"));
        }
        out.push(fp);
    }
    Ok((out, segments))
}

/// The merge operand that puts `fp` in a bucket (`add`) or takes it out.
pub fn posting_operand(add: bool, fp: Fingerprint) -> [u8; OPERAND_LEN] {
    let mut op = [0u8; OPERAND_LEN];
    op[0] = if add { b'+' } else { b'-' };
    op[1..].copy_from_slice(&fp.value().to_be_bytes());
    op
}

/// Folds merge operands (oldest first) into an existing head or segment:
/// for each fingerprint the last operand naming it decides whether it is
/// in the result (`+`) or not (`-`); fingerprints no operand names stay as
/// they were. A head's trailer is kept. Malformed bytes are skipped: a
/// merge cannot fail without making the whole family unreadable, and
/// `verify` compares every posting with the records. An empty result means
/// the bucket (or segment) is empty.
pub fn merge_posting<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<u8> {
    // (fingerprint, position) of each operand entry, add or not: after a
    // stable sort by fingerprint, the last of each run is the one that
    // counts.
    let mut ops: Vec<(u64, bool)> = Vec::new();
    for op in operands {
        for e in op.chunks_exact(OPERAND_LEN) {
            let mut b = [0u8; 8];
            b.copy_from_slice(&e[1..]);
            match e[0] {
                b'+' => ops.push((u64::from_be_bytes(b), true)),
                b'-' => ops.push((u64::from_be_bytes(b), false)),
                _ => {}
            }
        }
    }
    ops.sort_by_key(|o| o.0); // stable: the order of one fingerprint's operands is kept
    let mut last: Vec<(u64, bool)> = Vec::with_capacity(ops.len());
    for o in ops {
        match last.last_mut() {
            Some(l) if l.0 == o.0 => *l = o,
            _ => last.push(o),
        }
    }
    let (entries, trailer) = match existing {
        None => (&[][..], &[][..]),
        Some(v) => {
            let cut = v.len() - v.len() % ENTRY_LEN;
            let t = &v[cut..];
            (&v[..cut], if t.len() == TRAILER_LEN { t } else { &[][..] })
        }
    };
    // The entries between two operands are copied whole: a read of a
    // bucket with a few operands (what a write leaves until compaction)
    // costs a copy of its posting and a binary search per operand, not a
    // step per entry. Entries are ascending (a damaged posting that is not
    // still gives whole entries and the trailer).
    let mut out = Vec::with_capacity(entries.len() + last.len() * ENTRY_LEN + trailer.len());
    let (entries, _) = entries.as_chunks::<ENTRY_LEN>();
    let mut pos = 0;
    for (fp, add) in last {
        let rest = &entries[pos..];
        let before = rest.partition_point(|e| u64::from_be_bytes(*e) < fp);
        out.extend_from_slice(rest[..before].as_flattened());
        pos += before;
        if rest
            .get(before)
            .is_some_and(|e| u64::from_be_bytes(*e) == fp)
        {
            pos += 1;
        }
        if add {
            out.extend_from_slice(&fp.to_be_bytes());
        }
    }
    out.extend_from_slice(entries[pos..].as_flattened());
    out.extend_from_slice(trailer);
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
/// the four families (an exact k <= 3 query reads 4). A query with a
/// sketch also reads its 16 band buckets ([`bands`]): 128 in all, what a
/// ranked plan of 128 alone read before format 7. Chosen from
/// `tools/recall.rs` (README, "Recall at realistic edits"; docs/recall.md,
/// "Band buckets").
pub const DEFAULT_PROBE_BUDGET: usize = 112;

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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
        // A plain loop, not `posting_fingerprints(..).filter(..)`: that
        // measured 2-5% slower here (`scan_posting_763`, one run).
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

/// The fingerprints of posting `value`'s whole 8-byte entries (a trailing
/// partial entry is ignored).
#[inline(always)]
pub(crate) fn posting_fingerprints(value: &[u8]) -> impl Iterator<Item = Fingerprint> + '_ {
    value.chunks_exact(ENTRY_LEN).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        Fingerprint(u64::from_be_bytes(b))
    })
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
/// run that are not yet in the store, and in tests. Laid out as the store
/// is: buckets of distinct fingerprints, and the ids of each fingerprint
/// in order, so that [`MemIndex::ordered`] costs what it returns, not the
/// number of copies.
#[derive(Debug, Default, Clone)]
pub struct MemIndex {
    by_id: HashMap<String, Fingerprint>,
    by_fp: HashMap<Fingerprint, BTreeSet<String>>,
    /// Distinct fingerprints per bucket, unordered.
    buckets: [HashMap<u16, Vec<Fingerprint>>; BLOCKS],
    /// Sketches of the entries inserted with one.
    sketches: HashMap<String, crate::fingerprint::Sketch>,
    /// The band buckets (see [`bands`]): each fingerprint in those of its
    /// first entry's sketch.
    bands: bands::BandBuckets,
}

impl MemIndex {
    pub fn new() -> MemIndex {
        MemIndex::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Inserts or replaces `id` (without a sketch: it names no band).
    pub fn insert(&mut self, id: &str, fp: Fingerprint) {
        self.insert_sketched(id, fp, None);
    }

    /// Inserts or replaces `id`, with its verification sketch (which names
    /// its fingerprint's band buckets when `id` is the fingerprint's first
    /// entry; see [`bands`]).
    pub fn insert_sketched(
        &mut self,
        id: &str,
        fp: Fingerprint,
        sketch: Option<crate::fingerprint::Sketch>,
    ) {
        self.remove(id);
        self.by_id.insert(id.to_string(), fp);
        if let Some(s) = sketch {
            self.sketches.insert(id.to_string(), s);
        }
        let ids = self.by_fp.entry(fp).or_default();
        if ids.is_empty() {
            for (i, b) in fp.blocks().into_iter().enumerate() {
                self.buckets[i].entry(b).or_default().push(fp);
            }
        }
        ids.insert(id.to_string());
        self.place_bands(fp);
    }

    /// Puts `fp` in the band buckets of its first entry's sketch (none
    /// when it has no entry, or the first has no sketch).
    fn place_bands(&mut self, fp: Fingerprint) {
        if self.sketches.is_empty() && self.bands.is_empty() {
            // No entry has a sketch, none is in a band: the writer's
            // index (ids and fingerprints only) pays nothing here.
            return;
        }
        let values = self
            .by_fp
            .get(&fp)
            .and_then(|ids| ids.first())
            .and_then(|first| self.sketches.get(first))
            .map(bands::band_values);
        self.bands.set(fp, values);
    }

    /// The fingerprints in `probe`'s band buckets that it accepts for `q`
    /// (repeats allowed, not capped: see [`bands::BandProbe::band_only`]).
    pub fn band_candidates(&self, q: Fingerprint, probe: &bands::BandProbe) -> Vec<Fingerprint> {
        let mut out = Vec::new();
        self.bands.candidates(q, probe, &mut out);
        out
    }

    /// The band values of `fp`'s entry (by the first-entry rule), if any.
    pub fn band_values(&self, fp: Fingerprint) -> Option<bands::BandValues> {
        self.bands.values(fp)
    }

    /// Removes `id`; returns its fingerprint if it was there.
    pub fn remove(&mut self, id: &str) -> Option<Fingerprint> {
        let fp = self.by_id.remove(id)?;
        self.sketches.remove(id);
        self.unlink(fp, id);
        Some(fp)
    }

    fn unlink(&mut self, fp: Fingerprint, id: &str) {
        if let Some(ids) = self.by_fp.get_mut(&fp) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_fp.remove(&fp);
                for (i, b) in fp.blocks().into_iter().enumerate() {
                    if let Some(set) = self.buckets[i].get_mut(&b) {
                        if let Some(at) = set.iter().position(|f| *f == fp) {
                            set.swap_remove(at);
                        }
                        if set.is_empty() {
                            self.buckets[i].remove(&b);
                        }
                    }
                }
            }
        }
        self.place_bands(fp);
    }

    /// Whether `id` is present, and its fingerprint.
    pub fn get(&self, id: &str) -> Option<Fingerprint> {
        self.by_id.get(id).copied()
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
        self.query_banded(q, plan, None)
    }

    /// Every entry `plan` or band probe `probe` accepts for `q` (see
    /// [`bands`]), found by reading their buckets; sorted by distance then
    /// id. Equal to [`bands::brute_force_banded`].
    pub fn query_banded(
        &self,
        q: Fingerprint,
        plan: &ProbePlan,
        probe: Option<&bands::BandProbe>,
    ) -> Vec<Hit> {
        self.ordered_banded(q, plan, probe)
            .map(|(id, fp)| Hit::new(id.to_string(), fp, fp.distance(q)))
            .collect()
    }

    /// The entries `plan` accepts for `q`, read from the plan's buckets,
    /// nearest first and by id among equally near ones, one at a time:
    /// taking the first few costs about as much as they are, however many
    /// entries share a fingerprint.
    pub fn ordered<'a>(
        &'a self,
        q: Fingerprint,
        plan: &ProbePlan,
    ) -> impl Iterator<Item = (&'a str, Fingerprint)> + 'a {
        self.ordered_banded(q, plan, None)
    }

    /// [`MemIndex::ordered`] of what `plan` or band probe `probe` accepts.
    pub fn ordered_banded<'a>(
        &'a self,
        q: Fingerprint,
        plan: &ProbePlan,
        probe: Option<&bands::BandProbe>,
    ) -> impl Iterator<Item = (&'a str, Fingerprint)> + 'a {
        // Accepted fingerprints by distance; each level is sorted when the
        // walk reaches it.
        let mut levels: Vec<Vec<Fingerprint>> = vec![Vec::new(); 65];
        if let Some(p) = probe {
            for fp in p.band_only(q, plan, self.band_candidates(q, p)) {
                levels[fp.distance(q) as usize].push(fp);
            }
        }
        for (i, bs) in plan.blocks.iter().enumerate() {
            for b in bs {
                if let Some(set) = self.buckets[i].get(b) {
                    for fp in set {
                        if plan.accepts(q, *fp) {
                            levels[fp.distance(q) as usize].push(*fp);
                        }
                    }
                }
            }
        }
        let mut levels = levels.into_iter().filter(|l| !l.is_empty());
        // The current distance level: a merge of its fingerprints' ids.
        let mut level: std::collections::BinaryHeap<std::cmp::Reverse<(&'a str, usize)>> =
            Default::default();
        let mut iters: Vec<(Fingerprint, std::collections::btree_set::Iter<'a, String>)> =
            Vec::new();
        std::iter::from_fn(move || loop {
            if let Some(std::cmp::Reverse((id, n))) = level.pop() {
                let (fp, it) = &mut iters[n];
                let fp = *fp;
                if let Some(next) = it.next() {
                    level.push(std::cmp::Reverse((next.as_str(), n)));
                }
                return Some((id, fp));
            }
            let mut fps = levels.next()?;
            fps.sort_unstable();
            fps.dedup();
            iters.clear();
            for fp in fps {
                if let Some(ids) = self.by_fp.get(&fp) {
                    let mut it = ids.iter();
                    if let Some(first) = it.next() {
                        level.push(std::cmp::Reverse((first.as_str(), iters.len())));
                        iters.push((fp, it));
                    }
                }
            }
        })
    }

    /// The entries with fingerprint `fp`, in id order.
    pub fn exact(&self, fp: Fingerprint) -> impl Iterator<Item = (&str, Fingerprint)> {
        self.by_fp
            .get(&fp)
            .into_iter()
            .flatten()
            .map(move |id| (id.as_str(), fp))
    }

    /// Entries, in fingerprint then id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Fingerprint)> {
        let mut fps: Vec<&Fingerprint> = self.by_fp.keys().collect();
        fps.sort_unstable();
        fps.into_iter()
            .flat_map(move |fp| self.by_fp[fp].iter().map(move |id| (id.as_str(), *fp)))
    }
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
