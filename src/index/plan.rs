//! Probe plans: the buckets of an exact or confidence-ranked search, the scan of a posting under a plan, and the plan's brute-force oracle.

use super::*;

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
pub(super) fn block_of_bit(bit: u8) -> (usize, u32) {
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
    /// [`ProbePlan::accepts`] as a [`ScanRule`].
    pub fn scan_posting(&self, q: Fingerprint, value: &[u8], out: &mut Vec<Fingerprint>) {
        self.rule(q).scan(value, out);
    }

    /// [`ProbePlan::accepts`] for query `q`, as a scan rule.
    #[inline]
    pub fn rule(&self, q: Fingerprint) -> ScanRule {
        ScanRule {
            q: q.0,
            k: self.k,
            outside: if self.ranked { !self.weak_mask } else { 0 },
            ranked: self.ranked,
        }
    }
}

/// The rule a posting scan applies to each entry `fp` for query `q`:
/// accepted when `fp` is within `k` bits of `q`, or (`ranked`) differs
/// from it in at most [`PROBE_TOLERANCE`] bits of `outside` (the bits
/// outside a ranked plan's weak set). [`ProbePlan::accepts`] and the band
/// probe's distance rule are both of this form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanRule {
    /// The query's fingerprint.
    pub q: u64,
    /// Every fingerprint within `k` bits is accepted.
    pub k: u32,
    /// The bits counted against [`PROBE_TOLERANCE`] (ranked only).
    pub outside: u64,
    /// Whether the tolerance rule applies.
    pub ranked: bool,
}

impl ScanRule {
    /// Whether the rule accepts `fp`.
    #[inline(always)]
    pub fn accepts(&self, fp: u64) -> bool {
        let x = self.q ^ fp;
        // `|` and `&`, not `||` and `&&`: no branch in the scan loop.
        (x.count_ones() <= self.k)
            | (self.ranked & ((x & self.outside).count_ones() <= PROBE_TOLERANCE))
    }

    /// Appends to `out` the fingerprints of posting `value`'s whole 8-byte
    /// entries (a trailing partial entry is ignored) that the rule
    /// accepts, in posting order. Eight entries at a time with AVX-512
    /// (VPOPCNTQ) where the CPU has it, one at a time with POPCNT where it
    /// has that, else portably: the same answer each way (tested against
    /// [`ScanRule::scan_portable`]).
    pub fn scan(&self, value: &[u8], out: &mut Vec<Fingerprint>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vpopcntdq")
            {
                // SAFETY: the CPU has the three features (checked just
                // above), the only ones the function is compiled for.
                unsafe { self.scan_avx512(value, out) };
                return;
            }
            if std::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU has POPCNT (checked just above).
                unsafe { self.scan_popcnt(value, out) };
                return;
            }
        }
        self.scan_portable(value, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn scan_popcnt(&self, value: &[u8], out: &mut Vec<Fingerprint>) {
        self.scan_portable(value, out);
    }

    /// Eight entries per step: byte-swapped to fingerprints, XORed with the
    /// query, counted with VPOPCNTQ, compared, and the accepted ones
    /// compressed out; the last few entries one at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    fn scan_avx512(&self, value: &[u8], out: &mut Vec<Fingerprint>) {
        use std::arch::x86_64::*;
        // Reverses the bytes of each 64-bit lane (the shuffle indexes
        // within 16-byte lanes): big-endian entries to fingerprints.
        const SWAP: [u8; 64] = {
            let mut t = [0u8; 64];
            let mut i = 0;
            while i < 64 {
                t[i] = ((i & 8) | (7 - (i & 7))) as u8;
                i += 1;
            }
            t
        };
        let (groups, rest) = value.as_chunks::<64>();
        // SAFETY: `SWAP` is 64 readable bytes.
        let swap = unsafe { _mm512_loadu_epi8(SWAP.as_ptr().cast()) };
        let q = _mm512_set1_epi64(self.q as i64);
        let outside = _mm512_set1_epi64(self.outside as i64);
        let k = _mm512_set1_epi64(i64::from(self.k));
        let tolerance = _mm512_set1_epi64(i64::from(PROBE_TOLERANCE));
        let ranked: __mmask8 = if self.ranked { 0xff } else { 0 };
        let mut taken = [0u64; 8];
        for g in groups {
            // SAFETY: `g` is 64 readable bytes (an unaligned load).
            let v = unsafe { _mm512_loadu_epi8(g.as_ptr().cast()) };
            let v = _mm512_shuffle_epi8(v, swap);
            let x = _mm512_xor_si512(v, q);
            let near = _mm512_cmple_epu64_mask(_mm512_popcnt_epi64(x), k);
            let loose = _mm512_popcnt_epi64(_mm512_and_si512(x, outside));
            let m = near | (_mm512_cmple_epu64_mask(loose, tolerance) & ranked);
            if m != 0 {
                // SAFETY: `taken` is 64 writable bytes.
                unsafe {
                    _mm512_storeu_epi64(
                        taken.as_mut_ptr().cast(),
                        _mm512_maskz_compress_epi64(m, v),
                    )
                };
                out.extend(
                    taken[..m.count_ones() as usize]
                        .iter()
                        .map(|&f| Fingerprint(f)),
                );
            }
        }
        self.scan_portable(rest, out);
    }

    /// [`ScanRule::scan`] one entry at a time, without CPU-specific
    /// instructions: the oracle of the others.
    #[inline(always)]
    pub fn scan_portable(&self, value: &[u8], out: &mut Vec<Fingerprint>) {
        // A plain loop, not `posting_fingerprints(..).filter(..)`: that
        // measured 2-5% slower here (`scan_posting_763`, one run).
        for c in value.chunks_exact(ENTRY_LEN) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            let fp = u64::from_be_bytes(b);
            if self.accepts(fp) {
                out.push(Fingerprint(fp));
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
pub(super) fn subsets(mask: u16) -> impl Iterator<Item = u16> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Entries at every distance from `q` (0..=64, with many at the rule's
    /// edges), in random order and with a trailing partial entry.
    fn posting(rng: &mut rand_chacha::ChaCha8Rng, q: u64, n: usize, tail: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n * ENTRY_LEN + tail);
        for i in 0..n {
            let d = match i % 4 {
                0 => rng.random_range(0..=64),
                _ => rng.random_range(2..=6),
            };
            let mut x = 0u64;
            while x.count_ones() < d {
                x |= 1 << rng.random_range(0..64);
            }
            v.extend_from_slice(&(q ^ x).to_be_bytes());
        }
        v.extend(std::iter::repeat_n(0xa5, tail));
        v
    }

    #[test]
    fn every_scan_kernel_equals_the_portable_scan() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(40);
        for round in 0..400 {
            let q: u64 = rng.random();
            let n = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 763][round % 12];
            let value = posting(&mut rng, q, n, round % ENTRY_LEN);
            let rule = ScanRule {
                q,
                k: rng.random_range(0..=8),
                outside: rng.random(),
                ranked: round % 3 != 0,
            };
            let mut want = Vec::new();
            rule.scan_portable(&value, &mut want);
            let by_rule: Vec<Fingerprint> = posting_fingerprints(&value)
                .filter(|f| rule.accepts(f.0))
                .collect();
            assert_eq!(want, by_rule);
            let mut got = vec![Fingerprint(1)];
            rule.scan(&value, &mut got);
            assert_eq!(got[0], Fingerprint(1), "appends");
            assert_eq!(&got[1..], &want[..], "round {round}: {rule:?}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("popcnt") {
                let mut one = Vec::new();
                // SAFETY: the CPU has POPCNT.
                unsafe { rule.scan_popcnt(&value, &mut one) };
                assert_eq!(one, want);
            }
        }
    }

    #[test]
    fn a_plans_rule_is_its_accepts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
        for _ in 0..200 {
            let q = Fingerprint(rng.random());
            let weak: Vec<u8> = (0..30).map(|_| rng.random_range(0..64)).collect();
            for plan in [
                ProbePlan::exact(q, rng.random_range(0..=7)),
                ProbePlan::ranked(q, 3, &weak, 112),
            ] {
                let value = posting(&mut rng, q.0, 200, 0);
                let mut got = Vec::new();
                plan.scan_posting(q, &value, &mut got);
                let want: Vec<Fingerprint> = posting_fingerprints(&value)
                    .filter(|f| plan.accepts(q, *f))
                    .collect();
                assert_eq!(got, want);
            }
        }
    }
}
