//! Central-difference gradient checks for anything with [`Params`], shared by the tests of
//! every layer and model under `train` (each checks its own backward pass here, so none of
//! them has to reach into another's tests).

use ndarray::{Array1, Array2};

use super::params::Params;
use crate::test_util::assert_grad_close;

/// Central differences of `loss` with respect to every parameter of `model`, compared
/// with `grads` tensor by tensor (relative error < 1e-6).
pub(crate) fn check_params<P: Params + Clone>(model: &P, grads: &P, loss: impl Fn(&P) -> f64) {
    const EPS: f64 = 1e-5;
    let mut probe = model.clone();
    let analytic = grads.to_vec();
    for (t, a) in analytic.iter().enumerate() {
        let mut numeric = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            let mut at = |delta: f64| {
                let orig;
                {
                    let mut ps = probe.params_mut();
                    let slot = ps[t].iter_mut().nth(i).expect("entry");
                    orig = *slot;
                    *slot = orig + delta;
                }
                let value = loss(&probe);
                *probe.params_mut()[t].iter_mut().nth(i).expect("entry") = orig;
                value
            };
            numeric.push((at(EPS) - at(-EPS)) / (2.0 * EPS));
        }
        let a1 = Array1::from_iter(a.iter().copied());
        let n1 = Array1::from(numeric);
        // The key bias shifts every score of a row alike, which softmax ignores: its
        // gradient is exactly zero, and then both sides must say so.
        let tiny = |x: &Array1<f64>| x.iter().all(|v| v.abs() < 1e-9);
        if tiny(&a1) && tiny(&n1) {
            continue;
        }
        assert_grad_close(&a1, &n1);
    }
}

/// Central differences with respect to an input matrix.
pub(crate) fn check_input(
    x: &Array2<f64>,
    analytic: &Array2<f64>,
    loss: impl Fn(&Array2<f64>) -> f64,
) {
    let numeric = crate::test_util::numeric_grad(x, loss);
    assert_grad_close(analytic, &numeric);
}
