//! Parts: hashes of a document's content-defined chunks, a candidate
//! source for copies that keep a *part* of a text whole (an excerpt from
//! the middle, a text wrapped in whole sentences of others) while its
//! Simhash and its sketch's bands have moved.
//!
//! The text's letters and digits are cut where their own content says,
//! not at fixed offsets, so a header, a footer or a cut moves no boundary
//! inside the text, and the chunks a copy keeps whole hash the same. A
//! document is represented by the [`PARTS`] smallest of its chunk hashes (a
//! bottom-k sample: its size does not grow with the text); a query looks up
//! its own [`QUERY_PARTS`] smallest. An excerpt of 60% holds each of its
//! source's smallest chunks with probability about 0.6, at least one of six
//! with 0.996; that one is also among the excerpt's smallest, since the
//! excerpt's chunks are the source's but for its first and last.
//! Measured in `tools/recall.rs` (`--parts`; docs/recall.md, "Second
//! round").
//!
//! # Definition (stable: stored part hashes depend on it)
//!
//! - **Characters.** The letters and digits of the normalised text
//!   (`Fingerprinter::normal`: NFKC, lower case, script folding), the
//!   characters the sketch's 4-grams are made of: punctuation and spacing
//!   move no boundary.
//! - **Boundaries.** A rolling value over the last [`WINDOW`] characters,
//!   `h = (h << 8) ^ mix(c)` with `mix` the SplitMix64 finaliser of the
//!   code point (after eight characters a character's bits have left
//!   `h`). A chunk ends after a character when `mix(h)` is 0 modulo
//!   [`AVERAGE`] and the chunk has at least [`MIN_CHARS`] characters, or
//!   when it has [`MAX_CHARS`].
//! - **Part hashes.** The xxh3-64 of a chunk's characters in UTF-8. The
//!   last chunk counts if it has at least [`MIN_CHARS`] characters; a text
//!   with fewer letters and digits than that has no parts.
//! - **A document's parts.** Its [`PARTS`] smallest distinct part hashes,
//!   ascending; a query's, its [`QUERY_PARTS`] smallest.

/// Characters the rolling boundary value covers.
pub const WINDOW: usize = 8;
/// The average chunk length in characters (a boundary is 1 in this many).
pub const AVERAGE: u64 = 16;
/// A chunk has at least this many characters (but a text's last).
pub const MIN_CHARS: usize = 8;
/// A chunk has at most this many characters.
pub const MAX_CHARS: usize = 64;
/// Part hashes kept per document.
pub const PARTS: usize = 6;
/// Part hashes a query looks up.
pub const QUERY_PARTS: usize = 12;

const _: () = assert!(WINDOW * 8 == 64, "h keeps the last WINDOW characters");

/// SplitMix64's finaliser: a fixed bijective mix of 64 bits.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every part hash of the normalised text `normal`, ascending and
/// distinct (see the module's definition).
pub fn part_hashes(normal: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut chunk = String::new();
    let mut chars = 0usize;
    let mut h = 0u64;
    for c in normal.chars().filter(|&c| super::is_alphanumeric(c)) {
        h = (h << 8) ^ mix(u64::from(c));
        chunk.push(c);
        chars += 1;
        if chars >= MAX_CHARS || (chars >= MIN_CHARS && mix(h).is_multiple_of(AVERAGE)) {
            out.push(xxhash_rust::xxh3::xxh3_64(chunk.as_bytes()));
            chunk.clear();
            chars = 0;
        }
    }
    if chars >= MIN_CHARS {
        out.push(xxhash_rust::xxh3::xxh3_64(chunk.as_bytes()));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `parts` is a list of part hashes as they are kept: ascending,
/// distinct, at most `max`; `Err` says why not (records, `refs` values and
/// imported columns are checked with it).
pub fn check(parts: &[u64], max: usize) -> Result<(), String> {
    if parts.len() > max {
        return Err(format!("{} part hashes, more than {max}", parts.len()));
    }
    if parts.windows(2).any(|w| w[0] >= w[1]) {
        return Err("part hashes not ascending".into());
    }
    Ok(())
}

/// The `n` smallest part hashes of `normal`, ascending: a document's
/// parts with `n` = [`PARTS`], a query's with [`QUERY_PARTS`].
pub fn smallest_parts(normal: &str, n: usize) -> Vec<u64> {
    let mut all = part_hashes(normal);
    all.truncate(n);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN_ZH: [u64; 4] = [
        0x684e_15b9_3382_fbdc,
        0xa265_b06f_75cc_5e66,
        0xb68c_5b11_09dd_c519,
        0xc882_e16b_cb6f_7987,
    ];
    const GOLDEN_EN: [u64; 4] = [
        0x0a6d_e508_9ec6_5be3,
        0x2a4b_c7ce_e481_eb82,
        0xc2a1_6122_c290_e926,
        0xf59c_db16_1fb0_7bdf,
    ];

    /// A deterministic text of `n` pseudo-words.
    fn text(n: usize, seed: u64) -> String {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = mix(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
                let len = 2 + (x % 7) as usize;
                (0..len)
                    .map(|i| (b'a' + ((x >> (5 * i)) % 26) as u8) as char)
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_definition_is_pinned() {
        // Stored parts depend on these values: a change here is a new
        // definition (a new recipe), never a fix.
        let zh = "北京是中国的首都，北京很大，人口众多，历史悠久。上海是中国最大的城市之一，也是经济中心。\
                  长江是中国最长的河流，流经十一个省份，最后注入东海。黄河是中华文明的摇篮。";
        let en =
            "the quick brown fox jumps over the lazy dog, again and again, until the dog wakes up";
        assert_eq!(part_hashes(zh), GOLDEN_ZH);
        assert_eq!(part_hashes(en), GOLDEN_EN);
        // The SplitMix64 finaliser (the constants of Java's SplittableRandom).
        assert_eq!(mix(1), 0x5692_161d_100b_05e5);
    }

    #[test]
    fn punctuation_and_spacing_move_nothing() {
        let t = text(300, 1);
        let noisy: String = t
            .split(' ')
            .enumerate()
            .map(|(i, w)| {
                if i % 5 == 0 {
                    format!("{w},")
                } else {
                    w.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("  ");
        assert_eq!(part_hashes(&t), part_hashes(&noisy));
    }

    #[test]
    fn an_excerpt_and_a_wrap_keep_the_inner_chunks() {
        let mut shared = 0;
        for seed in 0..50 {
            let t = text(400, seed);
            let all = part_hashes(&t);
            assert!(all.len() > 40, "{}", all.len());
            // An excerpt from the middle: all its parts but its first and
            // last chunk are its source's, and so are most of its
            // smallest.
            let cs: Vec<char> = t.chars().collect();
            let (a, b) = (cs.len() / 5 + seed as usize, cs.len() * 4 / 5);
            let excerpt: String = cs[a..b].iter().collect();
            let ex = part_hashes(&excerpt);
            let foreign = ex.iter().filter(|h| all.binary_search(h).is_err()).count();
            assert!(foreign <= 4, "seed {seed}: {foreign} of {}", ex.len());
            // A wrap: every chunk of the text but those at its two ends
            // (at most two at each: a boundary too near the text's start
            // for MIN_CHARS may count once a header is before it).
            let wrapped = format!("{} {t} {}", text(60, seed + 1000), text(60, seed + 2000));
            let w = part_hashes(&wrapped);
            let lost = all.iter().filter(|h| w.binary_search(h).is_err()).count();
            assert!(lost <= 4, "seed {seed}: {lost} lost");
            // The excerpt and the source share a part among the few each
            // keeps (the bottom-k argument of the module's documentation).
            let (src, q) = (
                smallest_parts(&t, PARTS),
                smallest_parts(&excerpt, QUERY_PARTS),
            );
            shared += usize::from(src.iter().any(|h| q.contains(h)));
        }
        // 60% of the text: each of six is in it with about 0.6, so all
        // fifty share one but by a chance of about 50 x 0.4^6 = 0.2.
        assert!(shared >= 48, "{shared} of 50");
    }

    #[test]
    fn chunks_are_bounded_and_short_texts_have_none() {
        assert!(part_hashes("abc").is_empty());
        assert!(part_hashes("，。!").is_empty());
        assert_eq!(part_hashes("abcdefgh").len(), 1);
        // One character repeated: every chunk is cut at MAX_CHARS (or is
        // the tail), so equal chunks give one hash.
        let same = "a".repeat(10 * MAX_CHARS);
        assert_eq!(part_hashes(&same).len(), 1);
        assert_eq!(smallest_parts(&text(400, 3), PARTS).len(), PARTS);
        let all = part_hashes(&text(400, 3));
        assert_eq!(smallest_parts(&text(400, 3), PARTS), all[..PARTS]);
    }
}
