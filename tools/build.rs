//! Builds, at compile time, the two tables a text query needs, so that a
//! process maps them with the binary instead of parsing them at every start
//! (parsing took ~150 ms of a 400-character Chinese query from the shell):
//!
//! - `jieba_dict.fst`: jieba-rs 0.11's default dictionary
//!   (`src/fingerprint/data/jieba_dict.txt`, vendored byte for byte) as an
//!   FST map from word to frequency, and `jieba_dict.rs` with the sum of the
//!   frequencies. `src/fingerprint/dict.rs` segments with it exactly as
//!   jieba-rs does, which its tests check against jieba-rs.
//! - `jieba_idf.bin`: jieba-rs's IDF table (`jieba_idf.txt`) as an
//!   open-addressing hash table of 16-byte slots (xxh3-64 of the word, then
//!   the IDF's f64 bits, both little-endian; key 0 marks an empty slot),
//!   and `jieba_idf.rs` with its slot count and the xxh3-64 of the table's
//!   text (its identity in a recipe).

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::path::PathBuf;

const DICT: &str = "src/fingerprint/data/jieba_dict.txt";
/// Characters U+4E00..=U+9FFF.
const FIRST_CHARS: usize = 0x9FFF - 0x4E00 + 1;
const IDF: &str = "src/fingerprint/data/jieba_idf.txt";

fn main() {
    println!("cargo:rerun-if-changed={DICT}");
    println!("cargo:rerun-if-changed={IDF}");
    println!("cargo:rerun-if-changed=tools/build.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    build_dict(&out);
    build_idf(&out);
}

/// Parses the dictionary as jieba-rs's `load_dict` does (whitespace-split
/// `word freq [tag]`, a missing frequency is 0) and writes the FST and the
/// total. A word listed twice is refused: jieba-rs would count both lines
/// in its total but look up only one, which an FST cannot mirror.
fn build_dict(out: &std::path::Path) {
    let text = fs::read_to_string(DICT).expect("read the vendored jieba dictionary");
    let mut words: BTreeMap<&[u8], u64> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        let Some(word) = it.next() else { continue };
        let freq = it.next().map_or(0, |f| {
            f.parse::<u64>()
                .unwrap_or_else(|e| panic!("{DICT}:{}: bad frequency {f:?}: {e}", n + 1))
        });
        let dup = words.insert(word.as_bytes(), freq);
        assert!(dup.is_none(), "{DICT}:{}: {word:?} is listed twice", n + 1);
    }
    let total: u64 = words.values().sum();
    let mut builder = fst::MapBuilder::memory();
    for (w, f) in &words {
        builder.insert(w, *f).expect("keys are sorted and unique");
    }
    let bytes = builder.into_inner().expect("build the dictionary FST");
    // Where the walk stands after each character of the main CJK block
    // (U+4E00..=U+9FFF), the first step of every lookup: the FST node's
    // address and the output so far, or u64::MAX if no word starts so.
    let fst = fst::raw::Fst::new(&bytes[..]).expect("read the FST back");
    let mut first = Vec::with_capacity(FIRST_CHARS * 16);
    for c in 0x4E00u32..=0x9FFF {
        let c = char::from_u32(c).expect("a valid char");
        let mut buf = [0u8; 4];
        let mut node = fst.root();
        let mut sum = fst::raw::Output::zero();
        let mut found = true;
        for &b in c.encode_utf8(&mut buf).as_bytes() {
            match node.find_input(b) {
                Some(i) => {
                    let t = node.transition(i);
                    sum = sum.cat(t.out);
                    node = fst.node(t.addr);
                }
                None => {
                    found = false;
                    break;
                }
            }
        }
        let (addr, value) = if found {
            (node.addr() as u64, sum.value())
        } else {
            (u64::MAX, 0)
        };
        first.extend_from_slice(&addr.to_le_bytes());
        first.extend_from_slice(&value.to_le_bytes());
    }
    fs::write(out.join("jieba_first.bin"), first).expect("write jieba_first.bin");
    fs::write(out.join("jieba_dict.fst"), &bytes).expect("write jieba_dict.fst");
    fs::write(
        out.join("jieba_dict.rs"),
        format!(
            "/// Sum of the dictionary's frequencies.\npub(crate) const DICT_TOTAL: u64 = {total};\n\
             /// Number of words in the dictionary.\n#[allow(dead_code)]\npub(crate) const DICT_WORDS: usize = {};\n",
            words.len()
        ),
    )
    .expect("write jieba_dict.rs");
}

/// Parses the IDF table as the fingerprinter always has (`word idf` split
/// at the first space, the value trimmed; unparsable lines skipped; a later
/// line for the same word wins) and writes the hash table.
fn build_idf(out: &std::path::Path) {
    let text = fs::read_to_string(IDF).expect("read the vendored jieba IDF table");
    let mut entries: Vec<(u64, f64)> = Vec::new();
    for line in text.lines() {
        let Some((word, idf)) = line.split_once(' ') else {
            continue;
        };
        let Ok(idf) = idf.trim().parse::<f64>() else {
            continue;
        };
        let key = xxhash_rust::xxh3::xxh3_64(word.as_bytes());
        assert_ne!(key, 0, "{IDF}: word {word:?} hashes to the empty-slot key");
        entries.push((key, idf));
    }
    // At most half full, so a missing word's probe ends within a few slots.
    let slots = (entries.len() * 2).next_power_of_two();
    let mut table = vec![(0u64, 0u64); slots];
    for (key, idf) in entries {
        let mut i = (key as usize) & (slots - 1);
        loop {
            if table[i].0 == 0 || table[i].0 == key {
                table[i] = (key, idf.to_bits());
                break;
            }
            i = (i + 1) & (slots - 1);
        }
    }
    let mut bytes = Vec::with_capacity(slots * 16);
    for (k, v) in table {
        bytes.extend_from_slice(&k.to_le_bytes());
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    fs::write(out.join("jieba_idf.bin"), bytes).expect("write jieba_idf.bin");
    fs::write(
        out.join("jieba_idf.rs"),
        format!(
            "/// Slots of the IDF hash table (a power of two).\npub(crate) const IDF_SLOTS: usize = {slots};\n\
             /// xxh3-64 of the IDF table's text.\npub(crate) const IDF_TABLE_HASH: u64 = {:#018x};\n",
            xxhash_rust::xxh3::xxh3_64(text.as_bytes())
        ),
    )
    .expect("write jieba_idf.rs");
}
