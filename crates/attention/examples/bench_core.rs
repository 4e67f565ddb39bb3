//! Times the attention core for `bench/core/run.sh`, which runs the NumPy side in the same
//! session and prints the ratios. Not part of `cargo test`.
//!
//! ```text
//! cargo run --release -p attention --example bench_core [FILTER...]
//! ```
//!
//! Prints one line per case, `name<TAB>wall seconds<TAB>CPU seconds` per call, each the median
//! of several samples of at least 20 ms (wall) each; CPU time is the calling thread's (so for
//! `t2` cases it covers one of the two threads). On a shared machine the wall time includes
//! the time other processes held the core, the CPU time mostly does not. A case runs when its
//! name contains one of the filters, or equals a filter written `=NAME` (all cases without
//! filters). Names: `small/{dot,scaled,additive}/{fused,api}`,
//! `gemm/{f32,f64}/2048`, `sdpa/{flash,flash-causal,api}/{f32,f64}/<n>/t<threads>`.

use std::hint::black_box;
use std::time::Instant;

use attention::*;
use ndarray::Array2;
use rand::SeedableRng;
use rand::rngs::StdRng;

const SAMPLES: usize = 7;
const SAMPLE_SECONDS: f64 = 0.02;

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |name: &str| {
        filters.is_empty()
            || (filters.iter()).any(|f| {
                f.strip_prefix('=')
                    .map_or(name.contains(f.as_str()), |exact| name == exact)
            })
    };
    for (name, case) in cases() {
        if wanted(&name) {
            let (wall, cpu) = case();
            println!("{name}\t{wall:.6e}\t{cpu:.6e}");
        }
    }
}

type Case = Box<dyn FnOnce() -> (f64, f64)>;

fn cases() -> Vec<(String, Case)> {
    let mut all = small_cases();
    for dtype in ["f32", "f64"] {
        all.push((
            format!("gemm/{dtype}/2048"),
            Box::new(move || gemm_case(dtype)),
        ));
    }
    for n in [128, 512, 2048, 4096] {
        for dtype in ["f32", "f64"] {
            for threads in [1, 2] {
                for variant in ["flash", "flash-causal", "api"] {
                    // The reference implementation forms two n x n matrices: skip the largest.
                    if variant == "api" && (dtype == "f32" || threads == 2 || n > 2048) {
                        continue;
                    }
                    let name = format!("sdpa/{variant}/{dtype}/{n}/t{threads}");
                    let case = move || sdpa_case(variant, dtype, n, threads);
                    all.push((name, Box::new(case)));
                }
            }
        }
    }
    all
}

/// The series' small case: a query of width 32 against 7 keys, additive hidden size 32,
/// `U h_j` precomputed once per sentence (as on the NumPy side).
fn small_cases() -> Vec<(String, Case)> {
    let mut rng = StdRng::seed_from_u64(1);
    let s = randn1(32, &mut rng);
    let h = randn2(7, 32, &mut rng);
    let add = Additive::new(32, 32, 32, &mut rng);
    let pre = add.precompute(&h);
    let mut cases: Vec<(String, Case)> = Vec::new();
    let mut push = |name: &str, case: Case| cases.push((format!("small/{name}"), case));
    {
        let (s, h) = (s.clone(), h.clone());
        push("dot/fused", Box::new(move || time(|| dot_softmax(&s, &h))));
    }
    {
        let (s, h) = (s.clone(), h.clone());
        push(
            "dot/api",
            Box::new(move || time(|| softmax(&dot_scores(&s, &h)))),
        );
    }
    {
        let (s, h) = (s.clone(), h.clone());
        push(
            "scaled/fused",
            Box::new(move || time(|| scaled_dot_softmax(&s, &h))),
        );
    }
    {
        let (s, h) = (s.clone(), h.clone());
        push(
            "scaled/api",
            Box::new(move || time(|| softmax(&scaled_dot_scores(&s, &h)))),
        );
    }
    {
        let (add, pre, s) = (add.clone(), pre.clone(), s.clone());
        push(
            "additive/fused",
            Box::new(move || time(|| add.softmax_precomputed(&pre, &s))),
        );
    }
    push(
        "additive/api",
        Box::new(move || time(|| softmax(&add.scores_precomputed(&pre, &s)))),
    );
    cases
}

/// A square GEMM through ndarray (matrixmultiply with its AVX-512 kernels), one thread.
fn gemm_case(dtype: &str) -> (f64, f64) {
    let mut rng = StdRng::seed_from_u64(2);
    let a = randn2(2048, 2048, &mut rng);
    let b = randn2(2048, 2048, &mut rng);
    if dtype == "f32" {
        let (a, b) = (to_f32(&a), to_f32(&b));
        time(|| a.dot(&b))
    } else {
        time(|| a.dot(&b))
    }
}

fn sdpa_case(variant: &str, dtype: &str, n: usize, threads: usize) -> (f64, f64) {
    let mut rng = StdRng::seed_from_u64(3);
    let [q, k, v] = [(); 3].map(|()| randn2(n, 64, &mut rng));
    let causal = variant == "flash-causal";
    if variant == "api" {
        return time(|| scaled_dot_product_attention(&q, &k, &v, None));
    }
    if dtype == "f32" {
        let [q, k, v] = [&q, &k, &v].map(to_f32);
        time(|| flash_attention_threads(&q, &k, &v, causal, threads))
    } else {
        time(|| flash_attention_threads(&q, &k, &v, causal, threads))
    }
}

fn to_f32(x: &Array2<f64>) -> Array2<f32> {
    x.mapv(|v| v as f32)
}

/// Wall and thread-CPU seconds per call of `f`: medians of `SAMPLES` samples of at least
/// `SAMPLE_SECONDS` each, after warming up while choosing the iteration count.
fn time<R>(mut f: impl FnMut() -> R) -> (f64, f64) {
    let mut iters = 1_usize;
    while sample(&mut f, iters).0 * (iters as f64) < SAMPLE_SECONDS {
        iters *= 2;
    }
    let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) =
        (0..SAMPLES).map(|_| sample(&mut f, iters)).unzip();
    (median(&mut wall), median(&mut cpu))
}

fn median(x: &mut [f64]) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

fn sample<R>(f: &mut impl FnMut() -> R, iters: usize) -> (f64, f64) {
    let (start, cpu_start) = (Instant::now(), thread_cpu_seconds());
    for _ in 0..iters {
        black_box(f());
    }
    let per_call = |t: f64| t / iters as f64;
    (
        per_call(start.elapsed().as_secs_f64()),
        per_call(thread_cpu_seconds() - cpu_start),
    )
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
