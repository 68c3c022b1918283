#![no_main]
//! Record, index key and document key decoders never panic, and whatever
//! decodes re-encodes to the same bytes.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    simdb::fuzz::record_and_keys(data);
});
