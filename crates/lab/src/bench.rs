//! The timing harness behind `lab.bench`.
//!
//! A chapter may bench a dozen functions and the whole site rebuilds its experiments, so each
//! measurement has a fixed budget (~0.3 s) instead of a fixed repetition count. Calls are
//! batched so that one sample lasts a few milliseconds: far above timer resolution, yet short
//! enough to collect 11-21 samples (a few for functions slower than a sample). The median ignores the odd sample hit by a context switch.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long one sample (a batch of calls) should take.
const SAMPLE_TARGET: Duration = Duration::from_millis(5);
/// Time for all samples together; calibration (which doubles as warm-up) comes on top.
const BUDGET: Duration = Duration::from_millis(300);
/// Fewest samples: even slow functions get a median of a few runs.
const MIN_SAMPLES: usize = 3;
/// Most samples, for functions much faster than their batch target.
const MAX_SAMPLES: usize = 21;

/// Median nanoseconds per call of `f`.
pub(crate) fn median_ns<R>(mut f: impl FnMut() -> R) -> f64 {
    let (iters, batch) = calibrate(&mut f);
    let samples = sample_count(batch);
    let mut per_call: Vec<f64> = (0..samples)
        .map(|_| time_batch(&mut f, iters).as_nanos() as f64 / iters as f64)
        .collect();
    median(&mut per_call)
}

/// Doubles the batch size until a batch reaches [`SAMPLE_TARGET`]; the doubling runs double as
/// warm-up (caches, branch predictors, lazy allocations). Returns the batch size and its time.
fn calibrate<R>(f: &mut impl FnMut() -> R) -> (u64, Duration) {
    let mut iters = 1u64;
    loop {
        let elapsed = time_batch(f, iters);
        if elapsed >= SAMPLE_TARGET || iters >= 1 << 40 {
            return (iters, elapsed);
        }
        // Jump close to the target when the batch is far below it, at most 8x per step, so a
        // nanosecond function does not need 20 rounds.
        let ratio = SAMPLE_TARGET.as_secs_f64() / elapsed.as_secs_f64().max(1e-9);
        iters *= ratio.clamp(2.0, 8.0) as u64;
    }
}

/// How many samples fit the budget for batches lasting `batch`.
fn sample_count(batch: Duration) -> usize {
    let fit = (BUDGET.as_nanos() / batch.as_nanos().max(1)) as usize;
    fit.clamp(MIN_SAMPLES, MAX_SAMPLES)
}

fn time_batch<R>(f: &mut impl FnMut() -> R, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    start.elapsed()
}

/// The median of a non-empty list (mean of the middle two for an even count).
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_lists() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn sample_count_stays_in_bounds() {
        assert_eq!(sample_count(Duration::from_millis(5)), 21);
        assert_eq!(sample_count(Duration::from_millis(25)), 12);
        assert_eq!(sample_count(Duration::from_secs(2)), MIN_SAMPLES);
    }

    /// A sleep never ends early, so its time per call is at least 2 ms; how much longer it takes
    /// depends on the machine's load, so no upper bound is asserted (on a loaded two-core CI
    /// machine one would flake).
    #[test]
    fn measures_a_sleep_per_call() {
        let ns = median_ns(|| std::thread::sleep(Duration::from_millis(2)));
        assert!(ns.is_finite() && ns >= 2.0e6, "{ns} ns for a 2 ms sleep");
    }
}
