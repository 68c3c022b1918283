//! Where two texts differ, as the review page shows a member beside its
//! representative (docs/review.md): spans of text, each the same in both,
//! only in the first, or only in the second.
//!
//! The units are what a reader compares: each CJK ideograph, kana or
//! hangul syllable on its own (a character diff for Chinese), each run of
//! other letters and digits whole (a word diff for Latin and the like),
//! each run of spaces, and each other character. The diff is Myers' over
//! those units (the `similar` crate) with a deadline: past it, what is
//! left is reported as removed and added, so a pathological pair costs
//! bounded time. The spans of one side, concatenated, are that text.

use std::time::{Duration, Instant};

use similar::{capture_diff_slices_deadline, Algorithm, DiffOp};

/// What a [`Span`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// In both texts.
    Same,
    /// Only in the first text.
    Removed,
    /// Only in the second text.
    Added,
}

/// A run of text of one [`Kind`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Span {
    pub kind: Kind,
    pub text: String,
}

/// How long a diff may search before it reports the rest as changed.
pub const DEADLINE: Duration = Duration::from_millis(200);

/// The most of each text a stored documents' diff compares, in bytes
/// ([`crate::db::Clusters::diff`]): the side-by-side view a person reads,
/// and a bound on what a diff holds (its units take 16 bytes each).
pub const MAX_BYTES: usize = 1 << 20;

/// The first [`MAX_BYTES`] of `text` (less, to end on a character).
pub fn head(text: &str) -> &str {
    if text.len() <= MAX_BYTES {
        return text;
    }
    let mut end = MAX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Whether `c` is a unit on its own: a CJK ideograph, kana or hangul.
fn stands_alone(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}'     // hiragana, katakana
        | '\u{3400}'..='\u{4dbf}'   // CJK extension A
        | '\u{4e00}'..='\u{9fff}'   // CJK unified ideographs
        | '\u{ac00}'..='\u{d7af}'   // hangul syllables
        | '\u{f900}'..='\u{faff}'   // CJK compatibility ideographs
        | '\u{20000}'..='\u{2ffff}' // CJK extensions B on
    )
}

/// The units of `text`, in order; concatenated, they are `text`.
pub fn units(text: &str) -> Vec<&str> {
    #[derive(PartialEq, Clone, Copy)]
    enum Run {
        Word,
        Space,
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut run: Option<Run> = None;
    for (i, c) in text.char_indices() {
        let here = if stands_alone(c) {
            None
        } else if c.is_alphanumeric() {
            Some(Run::Word)
        } else if c.is_whitespace() {
            Some(Run::Space)
        } else {
            None
        };
        // A run goes on while the same kind of character follows.
        if run.is_some() && here == run {
            continue;
        }
        if i > start {
            out.push(&text[start..i]);
        }
        start = i;
        run = here;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The spans of `a` against `b`, in reading order: [`Kind::Same`] and
/// [`Kind::Removed`] spans concatenated are `a`, [`Kind::Same`] and
/// [`Kind::Added`] ones are `b`. Adjacent spans differ in kind.
pub fn diff(a: &str, b: &str) -> Vec<Span> {
    diff_until(a, b, Instant::now() + DEADLINE)
}

/// [`diff`] with a deadline of its own.
pub fn diff_until(a: &str, b: &str, deadline: Instant) -> Vec<Span> {
    let (ua, ub) = (units(a), units(b));
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &ua, &ub, Some(deadline));
    let mut out: Vec<Span> = Vec::new();
    let mut push = |kind: Kind, parts: &[&str]| {
        if parts.is_empty() {
            return;
        }
        let text: String = parts.concat();
        match out.last_mut() {
            Some(last) if last.kind == kind => last.text.push_str(&text),
            _ => out.push(Span { kind, text }),
        }
    };
    for op in ops {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                push(Kind::Same, &ua[old_index..old_index + len]);
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => push(Kind::Removed, &ua[old_index..old_index + old_len]),
            DiffOp::Insert {
                new_index, new_len, ..
            } => push(Kind::Added, &ub[new_index..new_index + new_len]),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                push(Kind::Removed, &ua[old_index..old_index + old_len]);
                push(Kind::Added, &ub[new_index..new_index + new_len]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(spans: &[Span], other: Kind) -> String {
        spans
            .iter()
            .filter(|s| s.kind != other)
            .map(|s| s.text.as_str())
            .collect()
    }

    fn changed(spans: &[Span], kind: Kind) -> Vec<&str> {
        spans
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.text.as_str())
            .collect()
    }

    #[test]
    fn units_are_characters_for_cjk_and_words_for_latin() {
        assert_eq!(
            units("北京 hello,  world2 今天"),
            ["北", "京", " ", "hello", ",", "  ", "world2", " ", "今", "天"]
        );
        assert_eq!(units(""), Vec::<&str>::new());
        assert_eq!(units("あいアイ한국"), ["あ", "い", "ア", "イ", "한", "국"]);
    }

    #[test]
    fn an_edited_character_and_an_edited_word_are_what_differs() {
        let d = diff(
            "国务院总理今天在北京主持会议。",
            "国务院总理昨天在北京主持会议。",
        );
        assert_eq!(changed(&d, Kind::Removed), ["今"]);
        assert_eq!(changed(&d, Kind::Added), ["昨"]);
        let d = diff("the quick brown fox jumps", "the quick red fox jumps");
        assert_eq!(changed(&d, Kind::Removed), ["brown"]);
        assert_eq!(changed(&d, Kind::Added), ["red"]);
        assert_eq!(
            diff("same", "same"),
            [Span {
                kind: Kind::Same,
                text: "same".into()
            }]
        );
    }

    #[test]
    fn each_side_is_its_text_whatever_the_edits() {
        // Seeded edits of a mixed text: the spans always give both texts
        // back, and never two of one kind in a row.
        let base: Vec<char> = "近重复检测 near-duplicate detection，数据库 database 2026。"
            .repeat(6)
            .chars()
            .collect();
        let mut state = 7u64;
        for round in 0..200 {
            let mut b = base.clone();
            for _ in 0..(round % 9) {
                let r = crate::index::splitmix64(&mut state) as usize;
                let at = r % b.len();
                match r % 3 {
                    0 => b[at] = base[(r >> 8) % base.len()],
                    1 => {
                        b.remove(at);
                    }
                    _ => b.insert(at, base[(r >> 8) % base.len()]),
                }
            }
            let (a, b): (String, String) = (base.iter().collect(), b.into_iter().collect());
            let d = diff(&a, &b);
            assert_eq!(side(&d, Kind::Added), a, "round {round}");
            assert_eq!(side(&d, Kind::Removed), b, "round {round}");
            assert!(
                d.windows(2).all(|w| w[0].kind != w[1].kind),
                "round {round}"
            );
        }
    }

    #[test]
    fn a_head_ends_on_a_character_within_the_bound() {
        assert_eq!(head("短文"), "短文");
        // 3-byte characters: the bound falls inside one.
        let long = "字".repeat(MAX_BYTES / 3 + 10);
        let h = head(&long);
        assert!(h.len() <= MAX_BYTES && h.len() > MAX_BYTES - 3);
        assert!(long.starts_with(h));
        let exact = "a".repeat(MAX_BYTES);
        assert_eq!(head(&exact).len(), MAX_BYTES);
        assert_eq!(head(&(exact.clone() + "b")), exact);
    }

    #[test]
    fn a_past_deadline_still_gives_both_texts() {
        let a = "甲乙丙丁".repeat(500);
        let b = "丁丙乙甲".repeat(500);
        let d = diff_until(&a, &b, Instant::now());
        assert_eq!(side(&d, Kind::Added), a);
        assert_eq!(side(&d, Kind::Removed), b);
    }
}
