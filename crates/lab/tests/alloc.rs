//! The peak-allocation probe `lab::peak_alloc`. A test binary of its own: the counters are
//! process-wide, so only these tests may run in it (one at a time).

use std::hint::black_box;
use std::sync::Mutex;

use lab::{live_bytes, peak_alloc};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;
/// What the test harness itself may allocate, or free, in its other threads while a probe
/// runs: the probe counts every thread, so a peak can read a little above or below the size.
const SLACK: usize = 64 << 10;

#[test]
fn an_allocation_of_known_size_is_seen() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ((), peak) = peak_alloc(|| {
        let v = black_box(vec![1u64; MIB / 8]);
        drop(v);
    });
    // Freed before the end, still counted at its peak.
    assert!((MIB - SLACK..MIB + SLACK).contains(&peak), "{peak}");
    let (v, peak) = peak_alloc(|| black_box(vec![0u8; 3 * MIB]));
    assert!((3 * MIB - SLACK..3 * MIB + SLACK).contains(&peak), "{peak}");
    assert_eq!(v.len(), 3 * MIB);
}

#[test]
fn sequential_allocations_count_at_their_largest() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ((), peak) = peak_alloc(|| {
        for size in [MIB, 2 * MIB, MIB] {
            drop(black_box(vec![0u8; size]));
        }
    });
    assert!((2 * MIB - SLACK..2 * MIB + SLACK).contains(&peak), "{peak}");
}

#[test]
fn probes_nest() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (inner, outer) = peak_alloc(|| {
        let held = black_box(vec![0u8; 2 * MIB]);
        let ((), inner) = peak_alloc(|| drop(black_box(vec![0u8; MIB])));
        drop(held);
        inner
    });
    assert!((MIB - SLACK..MIB + SLACK).contains(&inner), "inner {inner}");
    // The outer probe saw the 2 MiB it held plus the inner 1 MiB on top of it.
    assert!(
        (3 * MIB - SLACK..3 * MIB + SLACK).contains(&outer),
        "outer {outer}"
    );
    // A peak before an inner probe survives it.
    let ((), outer) = peak_alloc(|| {
        drop(black_box(vec![0u8; 2 * MIB]));
        let ((), _) = peak_alloc(|| drop(black_box(vec![0u8; 16])));
    });
    assert!(
        (2 * MIB - SLACK..2 * MIB + SLACK).contains(&outer),
        "outer {outer}"
    );
}

#[test]
fn other_threads_are_counted() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let ((), peak) = peak_alloc(|| {
        std::thread::scope(|s| {
            s.spawn(|| drop(black_box(vec![0u8; MIB])));
        });
    });
    assert!(peak >= MIB - SLACK, "{peak}");
}

#[test]
fn realloc_is_tracked() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = live_bytes();
    let (v, peak) = peak_alloc(|| {
        let mut v: Vec<u8> = Vec::with_capacity(16);
        v.resize(2 * MIB, 1);
        v.shrink_to_fit();
        v
    });
    assert!(peak >= 2 * MIB, "{peak}");
    drop(v);
    assert!(live_bytes() < before + SLACK);
}

#[test]
fn a_returned_allocation_is_not_optimised_away() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Only the length is read: without `black_box` in the probe an optimised build may
    // remove the allocation altogether.
    // 1 MiB, so that the slack for what the harness's other threads free meanwhile (the
    // counter is process-wide: 8000 bytes once read 7976) cannot hide it.
    let (v, peak) = peak_alloc(|| vec![0.0f64; MIB / 8]);
    assert_eq!(v.len(), MIB / 8);
    assert!(peak >= MIB - SLACK, "{peak}");
}
