//! Flash attention against the reference `scaled_dot_product_attention`, on every
//! instruction set this CPU has.

use ndarray::{Array2, s};
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;
use crate::attend::scaled_dot_product_attention;
use crate::init::randn2;

/// The reference output in `f64`, with the top-left causal mask when asked.
fn reference(q: &Array2<f64>, k: &Array2<f64>, v: &Array2<f64>, causal: bool) -> Array2<f64> {
    let mask = Array2::from_shape_fn((q.nrows(), k.nrows()), |(i, j)| j <= i);
    scaled_dot_product_attention(q, k, v, causal.then_some(&mask)).0
}

fn job<'a, F>(q: &'a Array2<F>, k: &'a Array2<F>, v: &'a Array2<F>, causal: bool) -> Job<'a, F> {
    Job {
        q: q.view(),
        k: k.view(),
        v: v.view(),
        causal,
        threads: 1,
    }
}

/// Largest `|got - want|`, relative to the largest `|want|`.
fn rel_diff(got: &Array2<f64>, want: &Array2<f64>) -> f64 {
    assert_eq!(got.dim(), want.dim());
    let scale = want.iter().fold(0.0_f64, |m, w| m.max(w.abs())).max(1e-300);
    let diff = got
        .iter()
        .zip(want)
        .fold(0.0_f64, |m, (g, w)| m.max((g - w).abs()));
    diff / scale
}

/// Random `q`, `k`, `v` with the given shapes; `spread` scales the queries, which makes the
/// softmax peaked and exercises the online rescaling.
fn operands(
    n_q: usize,
    n_k: usize,
    d_k: usize,
    d_v: usize,
    spread: f64,
    seed: u64,
) -> [Array2<f64>; 3] {
    let mut rng = StdRng::seed_from_u64(seed);
    [
        randn2(n_q, d_k, &mut rng) * spread,
        randn2(n_k, d_k, &mut rng),
        randn2(n_k, d_v, &mut rng),
    ]
}

/// Shapes that hit the edges of the tiles: one row, odd sizes, more than one key block,
/// `n_q != n_k`, and the benchmark's `d = 64`.
const SHAPES: [(usize, usize, usize, usize); 9] = [
    (1, 1, 1, 1),
    (1, 5, 3, 2),
    (7, 7, 32, 32),
    (13, 29, 5, 7),
    (37, 53, 17, 9),
    (61, 300, 64, 64),
    (300, 61, 64, 64),
    (257, 257, 64, 64),
    (130, 517, 8, 65),
];

#[test]
fn f64_matches_the_reference_on_every_isa() {
    for isa in Isa::all_available() {
        for (seed, &(n_q, n_k, d_k, d_v)) in SHAPES.iter().enumerate() {
            for causal in [false, true] {
                for spread in [1.0, 30.0] {
                    let [q, k, v] = operands(n_q, n_k, d_k, d_v, spread, seed as u64);
                    let got = job(&q, &k, &v, causal).run(isa);
                    let err = rel_diff(&got, &reference(&q, &k, &v, causal));
                    assert!(
                        err < 1e-12,
                        "{isa:?} {n_q}x{n_k} d_k={d_k} d_v={d_v} causal={causal} \
                         spread={spread}: {err:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn f32_matches_the_f64_reference_on_every_isa() {
    for isa in Isa::all_available() {
        for (seed, &(n_q, n_k, d_k, d_v)) in SHAPES.iter().enumerate() {
            for causal in [false, true] {
                let [q, k, v] = operands(n_q, n_k, d_k, d_v, 3.0, seed as u64);
                let [q32, k32, v32] = [&q, &k, &v].map(|x| x.mapv(|e| e as f32));
                let got = job(&q32, &k32, &v32, causal).run(isa).mapv(f64::from);
                let want = reference(&q32.mapv(f64::from), &k32.mapv(f64::from), &v, causal);
                let err = rel_diff(&got, &want);
                assert!(
                    err < 1e-5,
                    "{isa:?} {n_q}x{n_k} d_k={d_k} d_v={d_v} causal={causal}: {err:e}"
                );
            }
        }
    }
}

#[test]
fn causal_row_i_ignores_keys_after_i() {
    let [q, k, v] = operands(40, 40, 16, 4, 1.0, 11);
    let full = flash_attention(&q, &k, &v, true);
    // Changing the future keys and values must not change row 20.
    let (mut k2, mut v2) = (k.clone(), v.clone());
    k2.slice_mut(s![21.., ..]).fill(9.0);
    v2.slice_mut(s![21.., ..]).fill(-9.0);
    let changed = flash_attention(&q, &k2, &v2, true);
    assert_eq!(full.slice(s![..21, ..]), changed.slice(s![..21, ..]));
    assert_ne!(full.row(21), changed.row(21));
    // Row 0 sees only key 0, so it is value 0 (up to the 1/l rounding).
    for (a, b) in full.row(0).iter().zip(v.row(0)) {
        assert!((a - b).abs() < 1e-15);
    }
}

#[test]
fn threads_give_bit_identical_results() {
    let [q, k, v] = operands(600, 450, 64, 64, 2.0, 12);
    let q32 = q.mapv(|e| e as f32);
    for causal in [false, true] {
        let one = flash_attention(&q, &k, &v, causal);
        for threads in [0, 2, 3, 64] {
            assert_eq!(flash_attention_threads(&q, &k, &v, causal, threads), one);
        }
        let one32 = flash_attention(&q32, &k.mapv(|e| e as f32), &v.mapv(|e| e as f32), causal);
        let two32 = flash_attention_threads(
            &q32,
            &k.mapv(|e| e as f32),
            &v.mapv(|e| e as f32),
            causal,
            2,
        );
        assert_eq!(one32, two32);
    }
}

#[test]
fn accepts_views_of_any_layout() {
    let [q, k, v] = operands(9, 12, 6, 5, 1.0, 13);
    let want = flash_attention(&q, &k, &v, false);
    // Transposed storage and strided slices.
    let qt = q.t().to_owned();
    let got = flash_attention(&qt.t(), &k.view(), &v.slice(s![.., ..]), false);
    assert_eq!(got, want);
    let wide = ndarray::concatenate![ndarray::Axis(1), k, k];
    let got = flash_attention(&q, &wide.slice(s![.., ..;2]), &v, false);
    let k_strided = wide.slice(s![.., ..;2]).to_owned();
    assert_eq!(got, flash_attention(&q, &k_strided, &v, false));
}

#[test]
fn empty_queries_and_values_give_empty_outputs() {
    let [q, k, v] = operands(0, 4, 3, 2, 1.0, 14);
    assert_eq!(flash_attention(&q, &k, &v, true).dim(), (0, 2));
    let [q, k, _] = operands(3, 4, 3, 2, 1.0, 14);
    let v = Array2::<f64>::zeros((4, 0));
    assert_eq!(flash_attention(&q, &k, &v, false).dim(), (3, 0));
}

#[test]
#[should_panic(expected = "flash_attention: queries have width 3 but keys have 4")]
fn mismatched_widths_panic_clearly() {
    let _ = flash_attention(
        &Array2::<f32>::zeros((2, 3)),
        &Array2::zeros((2, 4)),
        &Array2::zeros((2, 4)),
        false,
    );
}

#[test]
#[should_panic(expected = "flash_attention: 2 keys but 3 value rows")]
fn mismatched_values_panic_clearly() {
    let _ = flash_attention(
        &Array2::<f64>::zeros((2, 3)),
        &Array2::zeros((2, 3)),
        &Array2::zeros((3, 4)),
        false,
    );
}

#[test]
#[should_panic(expected = "flash_attention: no keys to attend to")]
fn no_keys_panics_clearly() {
    let _ = flash_attention(
        &Array2::<f64>::zeros((2, 3)),
        &Array2::zeros((0, 3)),
        &Array2::zeros((0, 4)),
        false,
    );
}
