//! The self-join behind `simdb pairs`: every pair of distinct fingerprints
//! within k bits, each found exactly once. Pure: the store feeds it the
//! postings of one block family at a time.
//!
//! With radius `r = floor(k / 4)`, two fingerprints within k bits have, by
//! the pigeonhole principle, at least one block whose two values are within
//! r bits (k <= 3: an identical block). The pair is reported in the first
//! family where that holds ([`first_family`]): while scanning family i,
//! a candidate pair whose blocks agree within r in an earlier family was
//! (or will be) reported there and is skipped here. So every pair is found
//! in at least one family and reported in exactly one.

use super::probe_radius;
use crate::fingerprint::{Fingerprint, BLOCKS};

/// A pair of distinct fingerprints, the smaller first.
pub type FpPair = (Fingerprint, Fingerprint);

/// The first block family whose blocks of `x` and `y` are within `radius`
/// bits of each other, or [`BLOCKS`] if none is.
#[inline]
pub fn first_family(x: Fingerprint, y: Fingerprint, radius: u32) -> usize {
    (0..BLOCKS)
        .find(|&i| (x.block(i) ^ y.block(i)).count_ones() <= radius)
        .unwrap_or(BLOCKS)
}

/// Appends to `out` the pairs within `k` bits that family `i` reports:
/// between `a` and `b` (postings of two different buckets whose blocks are
/// within the radius of `k`), or within `a` when `b` is `None`. Both are
/// sorted and without repeats. Pairs come out smaller first.
pub fn join_postings(
    i: usize,
    a: &[Fingerprint],
    b: Option<&[Fingerprint]>,
    k: u32,
    out: &mut Vec<FpPair>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT (checked just above), the only
            // feature the function is compiled for.
            unsafe { join_popcnt(i, a, b, k, out) };
            return;
        }
    }
    join_portable(i, a, b, k, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn join_popcnt(
    i: usize,
    a: &[Fingerprint],
    b: Option<&[Fingerprint]>,
    k: u32,
    out: &mut Vec<FpPair>,
) {
    join_portable(i, a, b, k, out);
}

#[inline(always)]
fn join_portable(
    i: usize,
    a: &[Fingerprint],
    b: Option<&[Fingerprint]>,
    k: u32,
    out: &mut Vec<FpPair>,
) {
    let r = probe_radius(k);
    let mut keep = |x: Fingerprint, y: Fingerprint| {
        if first_family(x, y, r) == i {
            out.push(if x < y { (x, y) } else { (y, x) });
        }
    };
    match b {
        None => {
            for (p, &x) in a.iter().enumerate() {
                for &y in &a[p + 1..] {
                    if (x.0 ^ y.0).count_ones() <= k {
                        keep(x, y);
                    }
                }
            }
        }
        Some(b) => {
            for &x in a {
                for &y in b {
                    if (x.0 ^ y.0).count_ones() <= k {
                        keep(x, y);
                    }
                }
            }
        }
    }
}

/// The oracle: every pair of distinct values of `fps` within `k` bits,
/// smaller first, sorted. Quadratic; for tests.
pub fn brute_force_pairs(fps: &[Fingerprint], k: u32) -> Vec<FpPair> {
    let mut v: Vec<Fingerprint> = fps.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = Vec::new();
    for (p, &x) in v.iter().enumerate() {
        for &y in &v[p + 1..] {
            if x.distance(y) <= k {
                out.push((x, y));
            }
        }
    }
    out
}

/// [`join_postings`] over every bucket of every family of an in-memory set
/// of fingerprints, as the store runs it: the reference the store's join is
/// tested against, and itself tested against [`brute_force_pairs`].
pub fn join_all(fps: &[Fingerprint], k: u32) -> Vec<FpPair> {
    use std::collections::BTreeMap;
    let mut v: Vec<Fingerprint> = fps.to_vec();
    v.sort_unstable();
    v.dedup();
    let r = probe_radius(k);
    let mut out = Vec::new();
    for i in 0..BLOCKS {
        let mut buckets: BTreeMap<u16, Vec<Fingerprint>> = BTreeMap::new();
        for &fp in &v {
            buckets.entry(fp.block(i)).or_default().push(fp);
        }
        for (&block, a) in &buckets {
            join_postings(i, a, None, k, &mut out);
            for n in super::probe_blocks(block, r) {
                if n > block {
                    if let Some(b) = buckets.get(&n) {
                        join_postings(i, a, Some(b), k, &mut out);
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Fingerprints around a few centres, at every distance up to 12, with
    /// the flipped bits spread over the blocks or packed into one, and
    /// exact repeats.
    fn clustered(seed: u64, n: usize) -> Vec<Fingerprint> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let centres: Vec<u64> = (0..8).map(|_| rng.random()).collect();
        let mut out = Vec::new();
        for _ in 0..n {
            let c = centres[rng.random_range(0..centres.len())];
            let d = rng.random_range(0..=12u32);
            let mut x = c;
            if rng.random_bool(0.3) {
                // All flips in one block.
                let blk = rng.random_range(0..4u32);
                for _ in 0..d {
                    x ^= 1u64 << (blk * 16 + rng.random_range(0..16u32));
                }
            } else {
                for _ in 0..d {
                    x ^= 1u64 << rng.random_range(0..64u32);
                }
            }
            out.push(Fingerprint(x));
            if rng.random_bool(0.05) {
                out.push(Fingerprint(x)); // an exact repeat
            }
        }
        out
    }

    #[test]
    fn join_finds_every_pair_once() {
        for seed in 0..6 {
            let fps = clustered(seed, 300);
            for k in [0, 1, 2, 3, 4, 5, 7, 8, 11] {
                let got = join_all(&fps, k);
                let want = brute_force_pairs(&fps, k);
                let mut dedup = got.clone();
                dedup.dedup();
                assert_eq!(dedup.len(), got.len(), "seed {seed} k {k}: a pair twice");
                assert_eq!(got, want, "seed {seed} k {k}");
            }
        }
    }

    #[test]
    fn distance_exactly_k_and_k_plus_one() {
        let x = Fingerprint(0x1234_5678_9abc_def0);
        // k = 3 spread over three blocks: one block still identical.
        let y = Fingerprint(x.0 ^ (1 << 63) ^ (1 << 40) ^ (1 << 20));
        assert_eq!(join_all(&[x, y], 3), vec![(x.min(y), x.max(y))]);
        assert!(join_all(&[x, y], 2).is_empty());
        // k + 1 = 4, one bit in each block: no identical block.
        let z = Fingerprint(x.0 ^ (1 << 63) ^ (1 << 40) ^ (1 << 20) ^ 1);
        assert!(join_all(&[x, z], 3).is_empty());
        assert_eq!(join_all(&[x, z], 4).len(), 1);
        // Identical fingerprints are one value, not a pair.
        assert!(join_all(&[x, x], 3).is_empty());
    }
}
