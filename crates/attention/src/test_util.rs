//! Finite-difference gradient checking shared by the unit tests.

use ndarray::{Array, Dimension};

/// Central differences `(f(x + eps e_i) - f(x - eps e_i)) / (2 eps)` for every entry `i`.
pub(crate) fn numeric_grad<D, F>(x: &Array<f64, D>, f: F) -> Array<f64, D>
where
    D: Dimension,
    F: Fn(&Array<f64, D>) -> f64,
{
    const EPS: f64 = 1e-5;
    let mut probe = x.as_standard_layout().into_owned();
    let at = |probe: &mut Array<f64, D>, i: usize, delta: f64| {
        let orig = probe.as_slice().expect("standard layout")[i];
        probe.as_slice_mut().expect("standard layout")[i] = orig + delta;
        let value = f(probe);
        probe.as_slice_mut().expect("standard layout")[i] = orig;
        value
    };
    let grad = (0..x.len())
        .map(|i| (at(&mut probe, i, EPS) - at(&mut probe, i, -EPS)) / (2.0 * EPS))
        .collect();
    Array::from_shape_vec(x.raw_dim(), grad).expect("one derivative per entry")
}

/// Asserts `|a - n| / (|a| + |n|) < 1e-6` in the Euclidean norm, and that the gradient is not
/// trivially zero (which would make the check vacuous).
#[track_caller]
pub(crate) fn assert_grad_close<D: Dimension>(analytic: &Array<f64, D>, numeric: &Array<f64, D>) {
    let norm = |x: &Array<f64, D>| x.iter().map(|v| v * v).sum::<f64>().sqrt();
    let scale = norm(analytic) + norm(numeric);
    assert!(scale > 1e-6, "gradient is (almost) zero: {analytic}");
    let rel = norm(&(analytic - numeric)) / scale;
    assert!(
        rel < 1e-6,
        "relative error {rel:e}\nanalytic {analytic}\nnumeric {numeric}"
    );
}
