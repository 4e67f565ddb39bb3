//! libFuzzer target: every pure stage of attnbook on arbitrary chapter text must not panic.
//! Run with `cargo +nightly fuzz run pure_stages fuzz/corpus -s none` (see fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        attnbook::fuzzing::pure_stages(text.to_string());
    }
});
