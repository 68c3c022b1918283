#![no_main]
//! The input readers never panic, whatever the bytes: ingest's JSONL and
//! plain-line readers (with a small line limit), and import's JSONL line.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    simdb::fuzz::input_readers(data);
});
