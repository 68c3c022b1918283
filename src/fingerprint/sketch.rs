//! The verification sketch: a 32-byte b-bit MinHash of a document's
//! shingles, stored with each record and compared before a candidate is
//! reported.
//!
//! Simhash says two weighted term vectors point the same way; articles on
//! one subject can do that without sharing a sentence. The sketch estimates
//! the Jaccard similarity of the two documents' sets of shingles, which is
//! high only for text copied with edits. The recipe names the shingles
//! (`SketchKind`): new stores use **character 4-grams of the letters and
//! digits** ([`Sketch::of_chars`]: an edited character touches 4 shingles,
//! punctuation and spacing none); stores made before record version 3 use
//! word 3-shingles ([`Sketch::of_terms`]).
//!
//! # Definition (stable: stored sketches depend on it)
//!
//! 1. Shingles, character 4-grams (the default): the normalised text's
//!    letters and digits, every other character left out; each window of 4
//!    of them hashed with xxh3-64 (seed 0) of its UTF-8 bytes; fewer than 4
//!    such characters are one shingle of all of them; none, no sketch.
//! 2. Shingles, word 3-shingles (older stores): the recipe's term sequence
//!    (normalised, segmented, stop words dropped), each term hashed with
//!    xxh3-64 (seed 0); for `n >= 3` terms, the `n - 2` windows of three
//!    terms, each hashed as `fmix64(h1 ^ h2.rotate_left(21) ^
//!    h3.rotate_left(42))`; for one or two terms, the terms themselves
//!    (`fmix64(h)`). No terms, no sketch.
//! 3. One-permutation MinHash with 128 bins: a shingle hash `s` falls in bin
//!    `s >> 57` with value `s & (2^57 - 1)`; each bin keeps its smallest
//!    value. Empty bins (sets smaller than ~500 shingles have some) are
//!    filled by optimal densification: bin `j` probes bins
//!    `fmix64(j ‖ attempt) % 128` for attempt = 1, 2, … and takes the first
//!    non-empty bin's value `v` ([`Fill`]): stores of recipe sketch
//!    `…-alnum/fill-rehashed` (stores created since 2026-11-27) take
//!    `fmix64(v ^ (j + 1) << 57) & (2^57 - 1)`, older stores copy `v`.
//! 4. b-bit: each bin keeps the two lowest bits of its value; bin `j` is
//!    bits `2j..2j+2` of the 32 bytes, little-endian within each byte.
//!
//! Two sketches agree in a bin with probability `J + (1 - J) / 4`, so the
//! estimate is `(matches / 128 - 1/4) / (3/4)`, clamped to `[0, 1]`
//! (standard error about 0.05 near J = 0.5).

/// Number of MinHash bins.
pub const BINS: usize = 128;
/// Bits kept per bin.
pub const BITS: usize = 2;
/// Size of a sketch in bytes.
pub const SKETCH_BYTES: usize = BINS * BITS / 8;

/// A b-bit MinHash sketch of a document's shingles (character 4-grams in
/// new stores, word 3-shingles in older ones: see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Sketch(pub [u8; SKETCH_BYTES]);

impl std::fmt::Debug for Sketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sketch(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// MurmurHash3's 64-bit finaliser: a bijective mix.
#[inline]
pub(crate) fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

const VALUE_MASK: u64 = (1 << 57) - 1;

/// How a sketch fills the bins its shingles leave empty (step 3 of the
/// definition). Both keep optimal densification's guarantee, that two
/// sets agree in a bin's full value with probability J; they differ in
/// what two *different* values give after step 4 keeps two bits of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fill {
    /// The donor bin's value, copied (recipe sketch `…-alnum`: stores
    /// created before 2026-11-27). A text
    /// of s shingles has only s distinct values in its 128 bins, so two
    /// unrelated short texts agree in every copy of a donor at once: for a
    /// text of one 4-gram, in all 128 bins a quarter of the time.
    Copy,
    /// The donor's value rehashed with the bin's number: equal values stay
    /// equal, different ones agree in two bits a quarter of the time
    /// independently in each bin, so two unrelated short texts estimate
    /// about 0 ± 0.05, as long ones do.
    Rehash,
}

impl Fill {
    /// The value bin `j` takes from a donor bin's value `v`.
    #[inline]
    fn value(self, v: u64, j: usize) -> u64 {
        match self {
            Fill::Copy => v,
            Fill::Rehash => fmix64(v ^ ((j as u64 + 1) << 57)) & VALUE_MASK,
        }
    }
}

/// The full-width one-permutation MinHash of a shingle set: steps 1–3 of
/// the definition above (each bin's smallest 57-bit value, empty bins
/// densified), before step 4 keeps two bits of each. The sketch is made
/// from it; the band index ([`Bins::band_keys`]) reads its full values.
#[derive(Clone, PartialEq, Eq)]
pub struct Bins(pub [u64; BINS]);

impl std::fmt::Debug for Bins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bins({:x?})", &self.0[..4])
    }
}

/// The character `n`-gram hashes of `text`'s letters and digits (step 1
/// of the definition); `None` when it has none.
pub(crate) fn char_shingles(text: &str, n: usize) -> Option<Vec<u64>> {
    let n = n.max(1);
    // Byte offsets of the letters and digits, then one past the last.
    let mut buf = String::with_capacity(text.len());
    let mut ends: Vec<usize> = Vec::with_capacity(text.len());
    for c in text.chars().filter(|&c| super::is_alphanumeric(c)) {
        buf.push(c);
        ends.push(buf.len());
    }
    if ends.is_empty() {
        return None;
    }
    let hashes: Vec<u64> = if ends.len() < n {
        vec![xxhash_rust::xxh3::xxh3_64(buf.as_bytes())]
    } else {
        let b = buf.as_bytes();
        (n - 1..ends.len())
            .map(|last| {
                let start = if last >= n { ends[last - n] } else { 0 };
                xxhash_rust::xxh3::xxh3_64(&b[start..ends[last]])
            })
            .collect()
    };
    Some(hashes)
}

impl Bins {
    /// The bins of the character `n`-grams of `text`'s letters and digits
    /// (the shingles of [`Sketch::of_chars`]), empty ones filled by `fill`;
    /// `None` when it has none.
    pub fn of_chars(text: &str, n: usize, fill: Fill) -> Option<Bins> {
        char_shingles(text, n).and_then(|s| Bins::of_shingles(s, fill))
    }

    /// The bins of a set of shingle hashes (repeats are harmless), empty
    /// ones filled by `fill`; `None` when there are none.
    pub fn of_shingles(shingles: impl IntoIterator<Item = u64>, fill: Fill) -> Option<Bins> {
        let mut bins = [u64::MAX; BINS];
        let mut any = false;
        for s in shingles {
            any = true;
            let b = (s >> 57) as usize;
            let v = s & VALUE_MASK;
            if v < bins[b] {
                bins[b] = v;
            }
        }
        if !any {
            return None;
        }
        densify_with(&SKETCH_DONORS, &mut bins, sketch_probe, |v, j| {
            fill.value(v, j)
        });
        Some(Bins(bins))
    }

    /// The b-bit sketch: two bits of each bin (step 4).
    pub fn sketch(&self) -> Sketch {
        let mut out = [0u8; SKETCH_BYTES];
        for (j, v) in self.0.iter().enumerate() {
            out[j / 4] |= ((v & 3) as u8) << (2 * (j % 4));
        }
        Sketch(out)
    }

    /// LSH band keys: `bands` bands of `rows` consecutive bins each (band
    /// `i` is bins `i*rows .. (i+1)*rows`; `bands * rows <= 128`), each the
    /// xxh3-64 of its band number (one byte) and its bins' values
    /// (little-endian u64s). Two texts share band `i` with probability
    /// about `J^rows`, so they share at least one with probability
    /// `1 - (1 - J^rows)^bands`.
    pub fn band_keys(&self, bands: usize, rows: usize) -> Vec<u64> {
        assert!(
            bands * rows <= BINS,
            "{bands} bands of {rows} rows exceed {BINS} bins"
        );
        (0..bands)
            .map(|i| {
                let mut bytes = Vec::with_capacity(1 + 8 * rows);
                bytes.push(i as u8);
                for v in &self.0[i * rows..(i + 1) * rows] {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
                xxhash_rust::xxh3::xxh3_64(&bytes)
            })
            .collect()
    }
}

impl Sketch {
    /// The sketch of a term sequence; `None` when there are no terms.
    pub fn of_terms<S: AsRef<str>>(terms: &[S]) -> Option<Sketch> {
        let hashes: Vec<u64> = terms
            .iter()
            .map(|t| xxhash_rust::xxh3::xxh3_64(t.as_ref().as_bytes()))
            .collect();
        Sketch::of_term_hashes(&hashes)
    }

    /// The sketch from the terms' xxh3-64 hashes, in order.
    pub fn of_term_hashes(h: &[u64]) -> Option<Sketch> {
        if h.len() < 3 {
            Sketch::of_shingles(h.iter().map(|&x| fmix64(x)), Fill::Copy)
        } else {
            Sketch::of_shingles(
                h.windows(3)
                    .map(|w| fmix64(w[0] ^ w[1].rotate_left(21) ^ w[2].rotate_left(42))),
                Fill::Copy,
            )
        }
    }

    /// The sketch of the character `n`-grams of `text`'s letters and digits
    /// (every other character, punctuation and spaces included, is left
    /// out, so they cannot change the sketch): each `n`-gram is hashed with
    /// xxh3-64 (seed 0) of its UTF-8 bytes. A text with fewer than `n` such
    /// characters is one shingle of all of them; none, no sketch. `text`
    /// should be normalised (see [`crate::Fingerprinter::normalize`]).
    /// Empty bins are filled by `fill`.
    pub fn of_chars(text: &str, n: usize, fill: Fill) -> Option<Sketch> {
        Bins::of_chars(text, n, fill).map(|b| b.sketch())
    }

    /// The sketch of a set of shingle hashes (repeats are harmless), empty
    /// bins filled by `fill`; `None` when there are none.
    pub fn of_shingles(shingles: impl IntoIterator<Item = u64>, fill: Fill) -> Option<Sketch> {
        Bins::of_shingles(shingles, fill).map(|b| b.sketch())
    }

    /// Estimated Jaccard similarity of the two shingle sets, in `[0, 1]`.
    pub fn similarity(&self, other: &Sketch) -> f64 {
        let matches = agreements(&self.0, &other.0);
        let p = f64::from(matches) / BINS as f64;
        ((p - 0.25) / 0.75).clamp(0.0, 1.0)
    }
}

/// Optimal densification of one-permutation bins (`u64::MAX`: empty, and
/// at least one is not): empty bin `j` probes bins `probe(j, attempt) %
/// len` for attempt = 1, 2, … and takes `value(v, j)` of the first
/// non-empty bin's value `v` (as the bins were before any was filled).
///
/// The definition, walked as it reads: a text of few shingles costs
/// `len` probes for each empty bin (`len²` in all). The sketches compute
/// the same bins through [`Donors`].
pub(crate) fn densify(
    bins: &mut [u64],
    probe: impl Fn(usize, u64) -> u64,
    value: impl Fn(u64, usize) -> u64,
) {
    let filled = bins.to_vec();
    let n = filled.len() as u64;
    for (j, bin) in bins.iter_mut().enumerate() {
        if *bin != u64::MAX {
            continue;
        }
        let mut attempt = 1u64;
        loop {
            let src = filled[(probe(j, attempt) % n) as usize];
            if src != u64::MAX {
                *bin = value(src, j);
                break;
            }
            attempt += 1;
        }
    }
}

/// [`densify`] of one probe sequence, precomputed: the sequence does not
/// depend on the text, so for each bin `j` the distinct bins it probes, in
/// the order it first probes them (`order`), and each bin's place in that
/// order (`rank`). The donor of an empty bin is the filled bin it probes
/// first: the filled bin of least rank, or the first filled one of its
/// order. With `f` filled bins of `n`, that costs `min(f, n / f)` steps an
/// empty bin (at most about `√n`) where the walk of [`densify`] costs `n /
/// f` hashes: 383 × 384 of them for a text of one shingle in the fine
/// sketch's 384 bins. The same bins, whatever the text (tested against
/// [`densify`]).
pub(crate) struct Donors {
    n: usize,
    /// `order[j * n + r]`: the `r`-th distinct bin that bin `j` probes.
    order: Vec<u16>,
    /// `rank[j * n + b]`: where bin `b` is in bin `j`'s order.
    rank: Vec<u16>,
}

impl Donors {
    /// The tables of `probe` over `n` bins (at most 2^16); `None` if some
    /// bin's first `ATTEMPTS` probes do not reach every bin (then
    /// [`densify`] walks it).
    pub(crate) fn new(n: usize, probe: impl Fn(usize, u64) -> u64) -> Option<Donors> {
        const ATTEMPTS: u64 = 1 << 20;
        assert!(n > 0 && n <= 1 << 16);
        let mut order = Vec::with_capacity(n * n);
        let mut rank = vec![u16::MAX; n * n];
        for j in 0..n {
            let ranks = &mut rank[j * n..(j + 1) * n];
            let mut seen = 0;
            let mut attempt = 1u64;
            while seen < n {
                if attempt > ATTEMPTS {
                    return None;
                }
                let b = (probe(j, attempt) % n as u64) as usize;
                if ranks[b] == u16::MAX {
                    ranks[b] = seen as u16;
                    order.push(b as u16);
                    seen += 1;
                }
                attempt += 1;
            }
        }
        Some(Donors { n, order, rank })
    }

    /// [`densify`] of `bins` (`n` of them, at least one filled) under this
    /// probe.
    pub(crate) fn densify(&self, bins: &mut [u64], value: impl Fn(u64, usize) -> u64) {
        let n = self.n;
        debug_assert_eq!(bins.len(), n);
        let filled: Vec<u16> = (0..n)
            .filter(|&b| bins[b] != u64::MAX)
            .map(|b| b as u16)
            .collect();
        if filled.len() == n {
            return;
        }
        debug_assert!(!filled.is_empty());
        let before = bins.to_vec();
        // Few filled bins: the least rank among them; many: the walk of
        // the order meets one within about n / f steps.
        let by_rank = filled.len() * filled.len() <= n;
        for (j, bin) in bins.iter_mut().enumerate() {
            if *bin != u64::MAX {
                continue;
            }
            let donor = if by_rank {
                let ranks = &self.rank[j * n..(j + 1) * n];
                filled
                    .iter()
                    .copied()
                    .min_by_key(|&b| ranks[b as usize])
                    .map(usize::from)
            } else {
                self.order[j * n..(j + 1) * n]
                    .iter()
                    .map(|&b| usize::from(b))
                    .find(|&b| before[b] != u64::MAX)
            };
            // Every bin is in every order, so a filled one is found.
            if let Some(b) = donor {
                *bin = value(before[b], j);
            }
        }
    }
}

/// Fills `bins` as [`densify`] under `probe` does, through `donors` (the
/// tables of that probe) when they were built.
pub(crate) fn densify_with(
    donors: &std::sync::OnceLock<Option<Donors>>,
    bins: &mut [u64],
    probe: impl Fn(usize, u64) -> u64 + Copy,
    value: impl Fn(u64, usize) -> u64,
) {
    match donors.get_or_init(|| Donors::new(bins.len(), probe)) {
        Some(d) if d.n == bins.len() => d.densify(bins, value),
        _ => densify(bins, probe, value),
    }
}

/// The probe of the 32-byte sketch's empty bins (step 3).
fn sketch_probe(j: usize, attempt: u64) -> u64 {
    fmix64(((j as u64) << 32) | attempt)
}

/// The tables of [`sketch_probe`], built at the first sketch.
static SKETCH_DONORS: std::sync::OnceLock<Option<Donors>> = std::sync::OnceLock::new();

/// The two-bit bins (packed four to a byte, as a sketch's) where `a` and
/// `b` agree: a bin agrees when both of its bits do.
pub(crate) fn agreements(a: &[u8], b: &[u8]) -> u32 {
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            let x = a ^ b;
            4 - ((x | (x >> 1)) & 0b0101_0101).count_ones()
        })
        .sum()
}

/// The estimated share of the shorter document's shingles that the longer
/// one holds (its containment), from their estimated Jaccard similarity
/// `j` and their lengths `a`, `b` (bytes of content; 0 = unknown, then
/// `None`). With shingle sets S ⊆-ish L, J = |S∩L| / |S∪L| gives
/// |S∩L| = J (|S| + |L|) / (1 + J), so the containment is
/// J (1 + |L|/|S|) / (1 + J); the lengths stand in for the set sizes (a
/// prefix of a text holds about its share of the text's shingles). Equal
/// lengths give 2J / (1 + J); in `[0, 1]`.
pub fn containment(j: f64, a: u64, b: u64) -> Option<f64> {
    let (short, long) = (a.min(b), a.max(b));
    if short == 0 {
        return None;
    }
    let ratio = long as f64 / short as f64;
    Some((j * (1.0 + ratio) / (1.0 + j)).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bins of which `filled` (chosen by `seed`) hold values.
    fn some_filled(n: usize, filled: usize, seed: u64) -> Vec<u64> {
        let mut bins = vec![u64::MAX; n];
        let mut left = filled;
        let mut i = 0u64;
        while left > 0 {
            let b = (fmix64(seed ^ (i << 20)) % n as u64) as usize;
            if bins[b] == u64::MAX {
                bins[b] = fmix64(seed.wrapping_add(i)) >> 7;
                left -= 1;
            }
            i += 1;
        }
        bins
    }

    #[test]
    fn regression_60_donor_tables_fill_the_bins_the_walk_fills() {
        // Both probes reach every bin, so the tables are built; and they
        // give each empty bin the walk's donor, for every number of
        // filled bins (the rank path below √n, the order's walk above),
        // for bins filled in runs and scattered.
        let fine = crate::fingerprint::fine::fine_probe;
        for (n, probe) in [(BINS, sketch_probe as fn(usize, u64) -> u64), (384, fine)] {
            let donors = Donors::new(n, probe).expect("the probe reaches every bin");
            let value = |v: u64, j: usize| fmix64(v ^ ((j as u64 + 1) << 55));
            for filled in 1..=n {
                for seed in 0..3u64 {
                    let mut walked = if seed == 0 {
                        // A run of filled bins at the end.
                        let mut b = vec![u64::MAX; n];
                        for (i, v) in b.iter_mut().enumerate().skip(n - filled) {
                            *v = i as u64 * 977;
                        }
                        b
                    } else {
                        some_filled(n, filled, seed * 7919 + filled as u64)
                    };
                    let mut tabled = walked.clone();
                    densify(&mut walked, probe, value);
                    donors.densify(&mut tabled, value);
                    assert_eq!(tabled, walked, "n {n}, {filled} filled, seed {seed}");
                    assert!(tabled.iter().all(|&v| v != u64::MAX));
                }
            }
        }
        // A probe that never reaches bin 1 builds no tables (the sketches
        // then walk, as the definition reads).
        assert!(Donors::new(4, |_, a| (a % 2) * 2).is_none());
    }

    #[test]
    fn containment_of_a_prefix_is_about_one() {
        // The first 60% of a text: J = 0.6, lengths 60 and 100.
        let c = containment(0.6, 60, 100).unwrap();
        assert!((c - 1.0).abs() < 1e-9, "{c}");
        // Equal lengths: 2J / (1 + J).
        assert!((containment(0.5, 10, 10).unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(containment(0.5, 0, 10), None);
        assert_eq!(containment(0.9, 10, 1000), Some(1.0));
    }

    fn words(n: usize, seed: u64) -> Vec<String> {
        (0..n)
            .map(|i| format!("w{}", fmix64(seed * 1_000_003 + i as u64) % 5000))
            .collect()
    }

    fn exact_jaccard(a: &[String], b: &[String]) -> f64 {
        use std::collections::HashSet;
        let sh = |t: &[String]| -> HashSet<String> { t.windows(3).map(|w| w.join(" ")).collect() };
        let (x, y) = (sh(a), sh(b));
        x.intersection(&y).count() as f64 / x.union(&y).count() as f64
    }

    #[test]
    fn bins_give_the_sketch_and_band_keys() {
        let t = "the quick brown fox jumps over the lazy dog again and again";
        let bins = Bins::of_chars(t, 4, Fill::Copy).unwrap();
        assert_eq!(bins.sketch(), Sketch::of_chars(t, 4, Fill::Copy).unwrap());
        let keys = bins.band_keys(8, 4);
        assert_eq!(keys.len(), 8);
        assert_eq!(
            keys,
            Bins::of_chars(t, 4, Fill::Copy).unwrap().band_keys(8, 4)
        );
        let other =
            Bins::of_chars("an entirely different sentence of its own", 4, Fill::Copy).unwrap();
        assert!(keys.iter().zip(other.band_keys(8, 4)).all(|(a, b)| *a != b));
    }

    #[test]
    fn identical_and_disjoint() {
        let a = words(300, 1);
        let b = words(300, 2);
        let sa = Sketch::of_terms(&a).unwrap();
        assert_eq!(sa.similarity(&sa), 1.0);
        assert!(sa.similarity(&Sketch::of_terms(&b).unwrap()) < 0.15);
        assert_eq!(Sketch::of_terms::<&str>(&[]), None);
        // Short sequences have sketches too.
        let one = Sketch::of_terms(&["alone"]).unwrap();
        assert_eq!(one.similarity(&Sketch::of_terms(&["alone"]).unwrap()), 1.0);
    }

    #[test]
    fn estimate_tracks_exact_jaccard() {
        // Replace a growing share of terms; the estimate stays within 0.15
        // of the exact shingle Jaccard.
        let a = words(600, 3);
        for (n, share) in [(0, 0usize), (1, 5), (2, 10), (3, 20), (4, 40)] {
            let mut b = a.clone();
            for i in (0..b.len())
                .step_by(100 / share.max(1))
                .take(b.len() * share / 100)
            {
                b[i] = format!("edit{n}-{i}");
            }
            let est = Sketch::of_terms(&a)
                .unwrap()
                .similarity(&Sketch::of_terms(&b).unwrap());
            let exact = exact_jaccard(&a, &b);
            assert!(
                (est - exact).abs() < 0.15,
                "share {share}%: est {est} exact {exact}"
            );
        }
    }

    #[test]
    fn golden_sketch() {
        // Pinned: stored sketches must not change under a code change.
        let s = Sketch::of_terms(&["near", "duplicate", "detection", "simdb"]).unwrap();
        assert_eq!(format!("{s:?}"), GOLDEN);
    }

    #[test]
    fn char_sketch_ignores_punctuation_and_space_and_is_pinned() {
        let a = Sketch::of_chars("近重复检测，simdb 数据库。", 4, Fill::Copy).unwrap();
        let b = Sketch::of_chars("近重复 检测simdb——数据库", 4, Fill::Copy).unwrap();
        assert_eq!(a, b);
        // Fewer letters than n: one shingle of them all; none: no sketch.
        assert_eq!(
            Sketch::of_chars("ab", 4, Fill::Copy),
            Sketch::of_chars("a-b", 4, Fill::Copy)
        );
        assert_eq!(Sketch::of_chars("，。 ", 4, Fill::Copy), None);
        // One substituted character changes at most 4 of the 4-grams.
        let long: String = "近重复检测数据库".repeat(40);
        let mut edited: Vec<char> = long.chars().collect();
        edited[100] = '量';
        let edited: String = edited.into_iter().collect();
        let s = Sketch::of_chars(&long, 4, Fill::Copy)
            .unwrap()
            .similarity(&Sketch::of_chars(&edited, 4, Fill::Copy).unwrap());
        assert!(s > 0.3, "{s}");
        assert_eq!(format!("{a:?}"), GOLDEN_CHARS);
    }

    /// Short texts of distinct 4-grams: unrelated pairs of one to three
    /// 4-grams, each pair sharing none.
    fn unrelated_short_pairs() -> Vec<(String, String)> {
        let letters: Vec<char> = "近重复检测数据库存储索引查询文本指纹相似度量簇代表写入读取"
            .chars()
            .collect();
        let text = |seed: u64, len: usize| -> String {
            (0..len)
                .map(|i| letters[(fmix64(seed * 7919 + i as u64) % letters.len() as u64) as usize])
                .collect()
        };
        (0..400u64)
            .map(|i| {
                let len = 4 + (i as usize % 3);
                (text(2 * i, len), text(2 * i + 1, len))
            })
            .collect()
    }

    #[test]
    fn rehashed_fill_does_not_confirm_unrelated_short_texts() {
        // The copied fill makes a short text's bins a few repeated values,
        // so unrelated short texts agree in all of them at once; the
        // rehashed fill makes every bin its own draw.
        let (mut copied, mut rehashed) = (0, 0);
        for (a, b) in unrelated_short_pairs() {
            let sim = |fill| {
                Sketch::of_chars(&a, 4, fill)
                    .unwrap()
                    .similarity(&Sketch::of_chars(&b, 4, fill).unwrap())
            };
            copied += usize::from(sim(Fill::Copy) >= 0.5);
            rehashed += usize::from(sim(Fill::Rehash) >= 0.5);
        }
        assert!(copied >= 20, "copied fill: {copied} of 400 at 0.5 or more");
        assert_eq!(rehashed, 0, "rehashed fill: {rehashed} of 400");
    }

    #[test]
    fn rehashed_fill_keeps_copies_and_long_texts() {
        // Identical texts agree everywhere; a short copy with one edit
        // keeps most of its estimate.
        for fill in [Fill::Copy, Fill::Rehash] {
            let a = Sketch::of_chars("送餐很快师傅辛苦了", 4, fill).unwrap();
            assert_eq!(a.similarity(&a), 1.0);
        }
        // A set with no empty bin is filled by neither rule: both give one
        // sketch.
        let long: String = (0..3000).map(|i| format!("w{i} ")).collect();
        assert_eq!(
            Sketch::of_chars(&long, 4, Fill::Copy),
            Sketch::of_chars(&long, 4, Fill::Rehash)
        );
        // Pinned: stored sketches of new stores must not change.
        let r = Sketch::of_chars("近重复检测，simdb 数据库。", 4, Fill::Rehash).unwrap();
        assert_eq!(format!("{r:?}"), GOLDEN_CHARS_REHASHED);
    }

    const GOLDEN_CHARS_REHASHED: &str =
        "Sketch(f64539261b4d235bd9bc36d6119a483c69344218f3fc47987f61171425a08d80)";

    const GOLDEN_CHARS: &str =
        "Sketch(7b5e6fc39cff53eb33fd1434c7733eb2ef17ecd314372a3f651a61e2f04232db)";

    const GOLDEN: &str = "Sketch(aeffebfbbffffffaafbffebfebeffaebeebaaaeaeaabeeeeaeffefbeaabbfffa)";
}
