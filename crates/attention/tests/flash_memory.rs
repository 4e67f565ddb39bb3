//! `flash_attention` never allocates anything of size `n_q x n_k`: a counting allocator
//! watches every allocation of one call. (Its own test binary, because the allocator is
//! global.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use attention::{flash_attention, flash_attention_threads, randn2, scaled_dot_product_attention};
use rand::SeedableRng;
use rand::rngs::StdRng;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(live, Ordering::SeqCst);
        LARGEST.fetch_max(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded to the system allocator with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Tests in one binary run on parallel threads; measurements must not overlap.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `(largest single allocation, peak live bytes above the start)` while `f` runs.
fn measure<R>(f: impl FnOnce() -> R) -> (usize, usize) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let start = LIVE.load(Ordering::SeqCst);
    PEAK.store(start, Ordering::SeqCst);
    LARGEST.store(0, Ordering::SeqCst);
    drop(f());
    (
        LARGEST.load(Ordering::SeqCst),
        PEAK.load(Ordering::SeqCst) - start,
    )
}

#[test]
fn memory_grows_with_n_d_not_n_squared() {
    let d = 16;
    let operands = |n: usize| [(); 3].map(|()| randn2(n, d, &mut StdRng::seed_from_u64(7)));
    // The counter does see an n x n matrix: the reference implementation makes two.
    let [q, k, v] = operands(512);
    let (largest, _) = measure(|| scaled_dot_product_attention(&q, &k, &v, None));
    assert!(
        largest >= 512 * 512 * size_of::<f64>(),
        "the counter missed n x n"
    );
    for causal in [false, true] {
        for threads in [1, 2] {
            let peaks = [512, 2048].map(|n| {
                let [q, k, v] = operands(n);
                let (largest, peak) =
                    measure(|| flash_attention_threads(&q, &k, &v, causal, threads));
                // Output and packed keys are n x d; values padded to whole registers at
                // most n x 64; the scratch tiles ~100 KiB per thread.
                assert!(largest <= n * 64 * size_of::<f64>(), "n = {n}: {largest} B");
                peak as f64
            });
            // Four times the rows: four times the memory (n^2 would be sixteen), and at
            // n = 2048 far below one n x n matrix (32 MiB).
            let growth = peaks[1] / peaks[0];
            assert!(
                growth < 5.0,
                "causal {causal}, threads {threads}: {growth:.1}x"
            );
            assert!(peaks[1] < (2048 * 2048 * size_of::<f64>() / 16) as f64);
        }
    }
    let q32 = operands(2048)[0].mapv(|x| x as f32);
    let (largest, peak) = measure(|| flash_attention(&q32, &q32, &q32, true));
    assert!(largest <= 2048 * 64 * size_of::<f32>(), "{largest}");
    assert!(peak < 2048 * 2048 * size_of::<f32>() / 8, "{peak}");
}
