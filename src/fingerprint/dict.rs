//! jieba's dictionary segmentation (`Jieba::cut(text, false)`: no HMM)
//! over a dictionary built into the binary.
//!
//! `tools/build.rs` turns jieba-rs 0.11's default dictionary (vendored byte for
//! byte) into an FST map from word to frequency. A process maps it with the
//! binary and starts segmenting at once, where `Jieba::new()` decompresses
//! and parses 349,045 lines into a trie at every start (~100 ms).
//!
//! The algorithm is jieba-rs's, step for step, so that the words are the
//! same: the words of the dictionary that start at each character form a
//! DAG; the route maximises the sum of `ln(freq) - ln(total)` over its words
//! (a character no word starts at is a word of frequency 1), from the end of
//! the block backwards, a tie going to the longer word; the route's words are
//! emitted in order. Characters outside jieba's CJK class end a block and are
//! emitted one by one, as jieba emits them. Tests check every rule against
//! jieba-rs itself, on generated text.

use std::cell::RefCell;
use std::sync::OnceLock;

use fst::raw::{Fst, Output};

include!(concat!(env!("OUT_DIR"), "/jieba_dict.rs"));

static DICT_FST: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jieba_dict.fst"));

/// For each character of U+4E00..=U+9FFF, 16 bytes: the FST node reached
/// from the root by its UTF-8 bytes and the output so far (u64 LE each), or
/// an address of u64::MAX if no word starts with it. Built by `tools/build.rs`:
/// the root's and the first byte's nodes are the widest, and every lookup
/// would cross them.
static FIRST_STEP: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jieba_first.bin"));

/// Where the walk from the root stands after a block's first character.
enum FirstStep {
    /// No dictionary word starts with it.
    NoWord,
    /// At this FST node, with this output so far.
    At(usize, u64),
    /// Outside the precomputed characters: walk from the root.
    Walk,
}

#[inline]
fn first_step(c: char) -> FirstStep {
    let entry = (c as usize)
        .checked_sub(0x4E00)
        .and_then(|i| FIRST_STEP.get(i * 16..i * 16 + 16));
    let Some((a, v)) = entry.map(|e| e.split_at(8)) else {
        return FirstStep::Walk;
    };
    let u = |b: &[u8]| b.try_into().map(u64::from_le_bytes).ok();
    match (u(a), u(v)) {
        (Some(u64::MAX), _) => FirstStep::NoWord,
        (Some(addr), Some(value)) => FirstStep::At(addr as usize, value),
        _ => FirstStep::Walk,
    }
}

fn dict() -> &'static Fst<&'static [u8]> {
    static FST: OnceLock<Fst<&'static [u8]>> = OnceLock::new();
    // Reads the FST's header and footer only.
    FST.get_or_init(|| match Fst::new(DICT_FST) {
        Ok(f) => f,
        // tools/build.rs wrote these bytes with the same crate: unreachable
        // unless the build itself is broken.
        Err(e) => panic!("the built-in jieba dictionary is corrupt: {e}"),
    })
}

/// Whether jieba-rs 0.11 counts `c` as CJK (its `is_cjk`: the ideographs of
/// its default "han" class; ASCII letters and digits are in that class too,
/// but the fingerprinter never passes them here).
#[inline]
fn is_jieba_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF
        | 0x20000..=0x2A6DF | 0x2A700..=0x2EBEF | 0x2F800..=0x2FA1F)
}

/// The frequency of `word` in the dictionary, if it is there.
#[cfg(test)]
fn word_freq(word: &str) -> Option<u64> {
    dict().get(word.as_bytes()).map(|o| o.value())
}

#[derive(Default)]
struct Scratch {
    /// Byte offset of each character of the block, and the block's length.
    offsets: Vec<usize>,
    /// DAG edges `(end, freq)`, character by character.
    edges: Vec<(usize, u64)>,
    /// Where each character's edges start in `edges`, and their end.
    edge_start: Vec<usize>,
    /// Best `(log probability, end)` from each character.
    route: Vec<(f64, usize)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Cuts `text`, a run of CJK ideographs, into words as jieba-rs's
/// `cut(text, false)` does, and hands each to `emit` in order: the
/// fingerprinter's segmentation of Chinese at the default recipe (no HMM).
///
/// Exact for text of ideographs (what the fingerprinter passes); other
/// characters are emitted one by one, as jieba emits punctuation, which
/// differs from jieba only for ASCII letters, digits and `+#&._%-`.
pub fn cut<'a>(text: &'a str, mut emit: impl FnMut(&'a str)) {
    let mut block_start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if is_jieba_cjk(c) {
            block_start.get_or_insert(i);
        } else {
            if let Some(s) = block_start.take() {
                cut_block(&text[s..i], &mut emit);
            }
            emit(&text[i..i + c.len_utf8()]);
        }
    }
    if let Some(s) = block_start {
        cut_block(&text[s..], &mut emit);
    }
}

fn cut_block<'a>(block: &'a str, emit: &mut impl FnMut(&'a str)) {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let Scratch {
            offsets,
            edges,
            edge_start,
            route,
        } = &mut *s;
        offsets.clear();
        offsets.extend(block.char_indices().map(|(i, _)| i));
        let n = offsets.len();
        offsets.push(block.len());

        // The DAG: every dictionary word starting at each character, by
        // walking the FST from there one character at a time.
        let fst = dict();
        edges.clear();
        edge_start.clear();
        let bytes = block.as_bytes();
        for i in 0..n {
            edge_start.push(edges.len());
            let c = block[offsets[i]..offsets[i + 1]].chars().next();
            let (mut node, mut out, mut j) = match c.map_or(FirstStep::Walk, first_step) {
                FirstStep::NoWord => continue,
                FirstStep::At(addr, value) => (fst.node(addr), Output::new(value), i + 1),
                FirstStep::Walk => (fst.root(), Output::zero(), i),
            };
            // Characters i..j are walked; a final node ends a word there.
            'chars: loop {
                if j > i && node.is_final() {
                    edges.push((j, out.cat(node.final_output()).value()));
                }
                if j == n {
                    break;
                }
                for &b in &bytes[offsets[j]..offsets[j + 1]] {
                    match node.find_input(b) {
                        Some(t) => {
                            let t = node.transition(t);
                            out = out.cat(t.out);
                            node = fst.node(t.addr);
                        }
                        None => break 'chars,
                    }
                }
                j += 1;
            }
        }
        edge_start.push(edges.len());

        // The route, as jieba-rs's `calc` computes it (same operations in
        // the same order, so the same floating-point values and ties).
        let log_total = (DICT_TOTAL as f64).ln();
        let log1 = 0.0f64 - log_total;
        route.clear();
        route.resize(n + 1, (0.0, n));
        for idx in (0..n).rev() {
            let mut best: Option<(f64, usize)> = None;
            for &(end, freq) in &edges[edge_start[idx]..edge_start[idx + 1]] {
                let prob = (freq as f64).ln() - log_total + route[end].0;
                best = match best {
                    Some(b) if !(prob > b.0 || (prob == b.0 && end > b.1)) => Some(b),
                    _ => Some((prob, end)),
                };
            }
            route[idx] = best.unwrap_or((log1 + route[idx + 1].0, idx + 1));
        }

        let mut x = 0;
        while x < n {
            let y = route[x].1;
            emit(&block[offsets[x]..offsets[y]]);
            x = y;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn ours(text: &str) -> Vec<&str> {
        let mut v = Vec::new();
        cut(text, |w| v.push(w));
        v
    }

    fn jieba() -> &'static jieba_rs::Jieba {
        static J: OnceLock<jieba_rs::Jieba> = OnceLock::new();
        J.get_or_init(jieba_rs::Jieba::new)
    }

    #[test]
    fn dictionary_is_jiebas() {
        // Same size and total as jieba-rs's default dictionary.
        let fst = dict();
        assert_eq!(fst.len(), DICT_WORDS);
        assert_eq!(DICT_WORDS, 349_045);
        // Every word jieba-rs has, with the frequency jieba-rs gives it.
        let text = include_str!("data/jieba_dict.txt");
        for line in text.lines().step_by(97) {
            let mut p = line.split_whitespace();
            let (w, f) = (p.next().unwrap(), p.next().unwrap());
            assert_eq!(word_freq(w), Some(f.parse().unwrap()), "{w}");
            assert!(jieba().has_word(w));
        }
        assert_eq!(word_freq("不是一个词语嗎"), None);
        assert_eq!(
            DICT_TOTAL,
            text.lines()
                .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
                .sum::<u64>()
        );
    }

    #[test]
    fn segments_like_jieba_on_generated_text() {
        let vocab: Vec<&str> = include_str!("data/jieba_dict.txt")
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.chars().all(is_jieba_cjk))
            .collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let rare = [
            '\u{3400}',
            '\u{4DBF}',
            '\u{F900}',
            '\u{20000}',
            '\u{2A700}',
            '\u{2F800}',
        ];
        let outside = ['\u{30000}', '\u{3134F}', '\u{3007}'];
        for case in 0..3000 {
            let mut text = String::new();
            let parts = rng.random_range(1..40);
            for _ in 0..parts {
                match rng.random_range(0..20) {
                    0 => text.push(char::from_u32(rng.random_range(0x4E00..=0x9FFF)).unwrap()),
                    1 => text.push(rare[rng.random_range(0..rare.len())]),
                    2 if case % 3 == 0 => text.push(outside[rng.random_range(0..outside.len())]),
                    _ => text.push_str(vocab[rng.random_range(0..vocab.len())]),
                }
            }
            let want: Vec<&str> = jieba().cut(&text, false).iter().map(|t| t.word).collect();
            assert_eq!(ours(&text), want, "case {case}: {text}");
        }
    }

    #[test]
    fn segments_like_jieba_on_known_sentences() {
        for text in [
            "我来到北京清华大学",
            "他来到了网易杭研大厦",
            "小明硕士毕业于中国科学院计算所后在日本京都大学深造",
            "南京市长江大桥",
            "结婚的和尚未结婚的",
            "",
            "〇",
        ] {
            let want: Vec<&str> = jieba().cut(text, false).iter().map(|t| t.word).collect();
            assert_eq!(ours(text), want, "{text}");
        }
    }
}
