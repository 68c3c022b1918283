//! Replays the fuzz corpus (`tools/fuzz/corpus/<target>/*`: seeds and the
//! inputs the fuzzer kept as interesting) through the same code the fuzz
//! targets run, so every input found once stays a regression test.

use std::path::Path;

fn replay(target: &str, f: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tools/fuzz/corpus")
        .join(target);
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{} panics", p.display());
        n += 1;
    }
    n
}

#[test]
fn fuzz_corpus_replays_clean() {
    let counts = [
        replay("input_readers", simdb::fuzz::input_readers),
        replay("record_and_keys", simdb::fuzz::record_and_keys),
        replay("meta", simdb::fuzz::meta),
        replay("fingerprint", simdb::fuzz::fingerprint),
    ];
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
}
