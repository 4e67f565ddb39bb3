//! Supervised losses on attention weights, for training a scorer to produce a known
//! alignment.

use ndarray::{Array1, ArrayBase, Data, Ix1};

/// Cross-entropy of a target position under weights `p`: `L = -ln p_target`.
///
/// `+inf` if `p_target = 0`.
///
/// # Panics
///
/// If `target >= p.len()`.
#[track_caller]
pub fn cross_entropy<S: Data<Elem = f64>>(p: &ArrayBase<S, Ix1>, target: usize) -> f64 {
    assert_target("cross_entropy", target, p.len());
    -p[target].ln()
}

/// Gradient of `cross_entropy(softmax(e), target)` with respect to the scores `e`,
/// given `p = softmax(e)`: `dL/de = p - onehot(target)`.
///
/// # Panics
///
/// If `target >= p.len()`.
#[track_caller]
pub fn softmax_cross_entropy_grad<S: Data<Elem = f64>>(
    p: &ArrayBase<S, Ix1>,
    target: usize,
) -> Array1<f64> {
    assert_target("softmax_cross_entropy_grad", target, p.len());
    let mut g = p.to_owned();
    g[target] -= 1.0;
    g
}

#[track_caller]
fn assert_target(op: &str, target: usize, n: usize) {
    assert!(
        target < n,
        "{op}: target {target} out of range for {n} positions"
    );
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;
    use crate::softmax::{log_softmax, softmax};
    use crate::test_util::{assert_grad_close, numeric_grad};

    #[test]
    fn cross_entropy_by_hand() {
        assert!((cross_entropy(&array![0.25, 0.75], 0) - 4.0_f64.ln()).abs() < 1e-15);
        assert_eq!(
            softmax_cross_entropy_grad(&array![0.25, 0.75], 1),
            array![0.25, -0.25]
        );
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let e = array![0.3, -1.1, 2.0, 0.4];
        let analytic = softmax_cross_entropy_grad(&softmax(&e), 1);
        let numeric = numeric_grad(&e, |x| -log_softmax(x)[1]);
        assert_grad_close(&analytic, &numeric);
    }

    #[test]
    #[should_panic(expected = "target 2 out of range for 2 positions")]
    fn out_of_range_target_panics() {
        let _ = cross_entropy(&array![0.5, 0.5], 2);
    }
}
