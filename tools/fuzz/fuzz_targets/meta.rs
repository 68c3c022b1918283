#![no_main]
//! Meta value decoders (format version, document count, recipe JSON) never
//! panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    simdb::fuzz::meta(data);
});
