//! A peak-allocation probe: how many heap bytes a closure needs at its worst moment.
//!
//! `lab` installs a counting `#[global_allocator]` that forwards every call to
//! [`std::alloc::System`] and keeps two atomic counters, the bytes live now and the highest
//! value reached since the last reset; the cost is two relaxed atomic operations per
//! allocation. [`peak_alloc`] resets the peak to the live count, runs the closure and returns
//! how far above that baseline the live count went.
//!
//! The counters are process-wide: bytes that other threads allocate while the closure runs
//! are counted too (the threads the closure starts itself, which is usually what one wants,
//! and any unrelated ones, which experiment blocks do not have). A program that links `lab`
//! cannot install another global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Heap bytes allocated and not yet freed.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The highest value of [`LIVE`] since the last reset.
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

impl Counting {
    fn grow(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    fn shrink(size: usize) {
        LIVE.fetch_sub(size, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments; the counters do not
// touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            Self::grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            Self::grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Self::shrink(layout.size());
        // SAFETY: `ptr` came from this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                Self::grow(new_size - layout.size());
            } else {
                Self::shrink(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Heap bytes the whole process holds now (allocated through Rust's global allocator and not
/// yet freed).
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Runs `f` and returns its result with the peak heap bytes allocated above the baseline
/// (the bytes live when `f` starts) at any moment while it ran.
///
/// What `f` allocates and frees again counts at its largest; what it returns counts too,
/// since it is still live at the end. The result passes through [`std::hint::black_box`],
/// so the optimiser cannot remove an allocation that is returned but never read. The count is process-wide: allocations by other threads
/// during `f` are included (run the code under test on one thread, or count its threads in).
/// Probes nest: an inner probe reports its own peak, and the outer one still sees a peak that
/// happened inside it.
///
/// ```
/// let (v, peak) = lab::peak_alloc(|| vec![0u8; 1 << 20]);
/// assert_eq!(v.len(), 1 << 20);
/// assert!(peak >= 1 << 20);
/// ```
pub fn peak_alloc<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    // An enclosing probe must keep its peak: remember it and restore the larger one.
    let outer = PEAK.swap(base, Ordering::SeqCst);
    // The optimiser knows allocator calls touch none of our memory, and removes an
    // allocation whose contents are never read: opaque barriers keep `f`'s allocations
    // between the two counter reads, and `black_box` on the result keeps them at all.
    black_box(());
    let result = black_box(f());
    let peak = PEAK.load(Ordering::SeqCst);
    PEAK.fetch_max(outer, Ordering::SeqCst);
    (result, peak.saturating_sub(base))
}
