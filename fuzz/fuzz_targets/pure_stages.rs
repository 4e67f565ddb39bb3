//! libFuzzer target: every pure stage of attnbook on arbitrary chapter text and experiment
//! values (see `attnbook::fuzzing::split_fuzz_input`) must not panic.
//! Run with `cargo +nightly fuzz run pure_stages fuzz/corpus -s none` (see fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (values, text) = attnbook::fuzzing::split_fuzz_input(data);
    if let Ok(text) = std::str::from_utf8(text) {
        attnbook::fuzzing::pure_stages(text.to_string(), &values);
    }
});
