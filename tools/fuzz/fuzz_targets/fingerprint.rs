#![no_main]
//! Fingerprinting arbitrary bytes (as lossy UTF-8) never panics and is
//! deterministic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    simdb::fuzz::fingerprint(data);
});
