//! The timing harness behind `lab.bench`.
//!
//! A chapter may bench a dozen functions and the whole site rebuilds its experiments, so each
//! measurement has a fixed budget (~0.3 s of the thread's CPU time) instead of a fixed repetition
//! count. Calls are batched so that one sample lasts a few milliseconds: far above timer
//! resolution, yet short enough to collect 11-21 samples (a few for functions slower than a
//! sample).
//!
//! A build may share the machine with anything, so what is measured is the CPU time of the
//! calling thread (`CLOCK_THREAD_CPUTIME_ID`), not the wall clock: time the thread spends
//! waiting while another process has its core is not counted. Load still slows a thread that
//! runs (caches and a hyperthread's sibling are shared), and only ever upwards, so the result
//! is the fastest sample, the one least disturbed.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long one sample (a batch of calls) should take.
const SAMPLE_TARGET: Duration = Duration::from_millis(5);
/// Time for all samples together; calibration (which doubles as warm-up) comes on top.
const BUDGET: Duration = Duration::from_millis(300);
/// Fewest samples: even slow functions get the best of a few runs.
const MIN_SAMPLES: usize = 3;
/// Most samples, for functions much faster than their batch target.
const MAX_SAMPLES: usize = 21;
/// Wall time after which sampling stops once it has [`MIN_SAMPLES`].
const WALL_LIMIT: Duration = Duration::from_secs(3);

/// The CPU time the calling thread has used so far. Where the platform has no per-thread CPU
/// clock (or it fails), the time since the first call, so timings still work there, though
/// load then lengthens them.
pub fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes the timespec it is given, which lives on this
        // stack frame for the whole call.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed()
}

/// Nanoseconds of the calling thread's CPU time per call of `f`, in the fastest sample.
pub(crate) fn best_ns<R>(mut f: impl FnMut() -> R) -> f64 {
    let (iters, batch) = calibrate(&mut f);
    let samples = sample_count(batch);
    let started = Instant::now();
    let mut best = f64::INFINITY;
    for taken in 0..samples {
        // A thread that mostly waits (or a machine so loaded that it seldom runs) would stretch
        // the samples far beyond their CPU budget: past a wall-clock limit, a few suffice.
        if taken >= MIN_SAMPLES && started.elapsed() > WALL_LIMIT {
            break;
        }
        let (cpu, _) = time_batch(&mut f, iters);
        best = best.min(cpu.as_nanos() as f64 / iters as f64);
    }
    best
}

/// Doubles the batch size until a batch reaches [`SAMPLE_TARGET`] of CPU time, or of wall time
/// for a function that waits rather than computes (its CPU time may never get there); the
/// doubling runs double as warm-up (caches, branch predictors, lazy allocations). Returns the
/// batch size and its CPU time.
fn calibrate<R>(f: &mut impl FnMut() -> R) -> (u64, Duration) {
    let mut iters = 1u64;
    loop {
        let (cpu, wall) = time_batch(f, iters);
        if cpu >= SAMPLE_TARGET || wall >= SAMPLE_TARGET || iters >= 1 << 40 {
            return (iters, cpu);
        }
        // Jump close to the target when the batch is far below it, at most 8x per step, so a
        // nanosecond function does not need 20 rounds.
        let spent = cpu.max(wall).as_secs_f64().max(1e-9);
        iters *= (SAMPLE_TARGET.as_secs_f64() / spent).clamp(2.0, 8.0) as u64;
    }
}

/// How many samples fit the budget for batches lasting `batch`.
fn sample_count(batch: Duration) -> usize {
    let fit = (BUDGET.as_nanos() / batch.as_nanos().max(1)) as usize;
    fit.clamp(MIN_SAMPLES, MAX_SAMPLES)
}

/// The thread's CPU time and the wall time of `iters` calls of `f`.
fn time_batch<R>(f: &mut impl FnMut() -> R, iters: u64) -> (Duration, Duration) {
    let (cpu, wall) = (thread_cpu_time(), Instant::now());
    for _ in 0..iters {
        black_box(f());
    }
    (thread_cpu_time().saturating_sub(cpu), wall.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_count_stays_in_bounds() {
        assert_eq!(sample_count(Duration::from_millis(5)), 21);
        assert_eq!(sample_count(Duration::from_millis(25)), 12);
        assert_eq!(sample_count(Duration::from_secs(2)), MIN_SAMPLES);
    }

    /// Spins until this thread has used `d` of CPU time.
    fn spin(d: Duration) {
        let start = thread_cpu_time();
        while thread_cpu_time() - start < d {
            black_box(0u64);
        }
    }

    /// Work of 2 ms of CPU time measures at least 2 ms per call, however loaded the machine
    /// is (load can only add to it, so no upper bound is asserted).
    #[test]
    fn measures_cpu_work_per_call() {
        let ns = best_ns(|| spin(Duration::from_millis(2)));
        assert!(ns.is_finite() && ns >= 2.0e6, "{ns} ns for 2 ms of work");
    }

    /// A sleep takes wall time but almost no CPU time: the harness counts the CPU time (under
    /// a millisecond for a 2 ms sleep, where the wall clock would say at least 2 ms), and it
    /// ends, although the CPU time of its batches never reaches the sample target.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_sleep_costs_next_to_no_cpu_time_and_ends() {
        let ns = best_ns(|| std::thread::sleep(Duration::from_millis(2)));
        assert!(ns < 1.0e6, "{ns} ns of CPU time for a 2 ms sleep");
    }
}
