//! Backward passes: gradients of scalar losses through softmax and the learnable score
//! functions, so experiments can train a scorer with plain SGD.
//!
//! Convention: `grad_x` is `dL/dx` for some scalar loss `L`; every function maps the gradient
//! of its output to the gradients of its inputs (a vector-Jacobian product).

use ndarray::{Array1, Array2, ArrayBase, Axis, Data, Ix1, Ix2};

use crate::additive::Additive;
use crate::scores::assert_general_shapes;

/// Backward pass of softmax: given `p = softmax(e)` and `g = dL/dp`, returns
/// `dL/de = J^T g = p ⊙ (g - (p · g))`, where `J = diag(p) - p p^T`.
///
/// # Panics
///
/// If the lengths differ.
#[track_caller]
pub fn softmax_backward<S1, S2>(p: &ArrayBase<S1, Ix1>, grad_p: &ArrayBase<S2, Ix1>) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_eq!(p.len(), grad_p.len(), "softmax_backward: lengths differ");
    let pg = p.dot(grad_p);
    p * &(grad_p - pg)
}

/// Gradients of the general scores `e_j = s^T W h_j`, from [`general_scores_backward`].
#[derive(Debug, Clone, PartialEq)]
pub struct GeneralGrads {
    /// `dL/ds = W H^T g` (length `d_s`).
    pub s: Array1<f64>,
    /// `dL/dW = sum_j g_j s h_j^T = s (H^T g)^T` (`d_s x d_h`).
    pub w: Array2<f64>,
    /// `dL/dH`: row `j` is `g_j W^T s` (`n x d_h`).
    pub h: Array2<f64>,
}

/// Backward pass of [`general_scores`](crate::general_scores): given `g = dL/de`, the
/// gradients with respect to `s`, `W` and `H` (see [`GeneralGrads`] for the formulas).
///
/// # Panics
///
/// If `w` is not `s.len() x h.ncols()` or `grad_e.len() != h.nrows()`.
#[track_caller]
pub fn general_scores_backward<S1, S2, S3, S4>(
    s: &ArrayBase<S1, Ix1>,
    w: &ArrayBase<S2, Ix2>,
    h: &ArrayBase<S3, Ix2>,
    grad_e: &ArrayBase<S4, Ix1>,
) -> GeneralGrads
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
    S4: Data<Elem = f64>,
{
    assert_general_shapes("general_scores_backward", s.len(), w.dim(), h.ncols());
    assert_eq!(
        grad_e.len(),
        h.nrows(),
        "general_scores_backward: one gradient per key"
    );
    let hg = h.t().dot(grad_e);
    GeneralGrads {
        s: w.dot(&hg),
        w: outer(s, &hg),
        h: outer(grad_e, &w.t().dot(s)),
    }
}

/// Gradients of the additive scores `e_j = v^T tanh(W s + U h_j)`, from
/// [`Additive::backward`]. With `t_j = tanh(W s + U h_j)` and
/// `delta_j = g_j v ⊙ (1 - t_j^2)` (the gradient at the pre-activation):
#[derive(Debug, Clone, PartialEq)]
pub struct AdditiveGrads {
    /// `dL/dW = (sum_j delta_j) s^T` (`d_attn x d_query`).
    pub w: Array2<f64>,
    /// `dL/dU = sum_j delta_j h_j^T` (`d_attn x d_key`).
    pub u: Array2<f64>,
    /// `dL/dv = sum_j g_j t_j` (`d_attn`).
    pub v: Array1<f64>,
    /// `dL/ds = W^T sum_j delta_j` (`d_query`).
    pub s: Array1<f64>,
    /// `dL/dH`: row `j` is `U^T delta_j` (`n x d_key`).
    pub h: Array2<f64>,
}

impl Additive {
    /// Backward pass of [`Additive::scores`]: given `g = dL/de` (one entry per key), the
    /// gradients with respect to `W`, `U`, `v`, the query `s` and the keys `H`
    /// (formulas on [`AdditiveGrads`]).
    ///
    /// # Panics
    ///
    /// If `s`, `h` do not fit the scorer or `grad_e.len() != h.nrows()`.
    #[track_caller]
    pub fn backward<S1, S2, S3>(
        &self,
        s: &ArrayBase<S1, Ix1>,
        h: &ArrayBase<S2, Ix2>,
        grad_e: &ArrayBase<S3, Ix1>,
    ) -> AdditiveGrads
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
        S3: Data<Elem = f64>,
    {
        self.check_shapes("Additive::backward", s.len(), h.ncols());
        assert_eq!(
            grad_e.len(),
            h.nrows(),
            "Additive::backward: one gradient per key"
        );
        let t = self.hidden(s, h);
        let delta = outer(grad_e, &self.v) * &t.mapv(|x| 1.0 - x * x);
        let delta_sum = delta.sum_axis(Axis(0));
        AdditiveGrads {
            w: outer(&delta_sum, s),
            u: delta.t().dot(h),
            v: t.t().dot(grad_e),
            s: self.w.t().dot(&delta_sum),
            h: delta.dot(&self.u),
        }
    }

    /// One plain SGD step on the parameters: `theta <- theta - lr dL/dtheta` for `W`, `U`, `v`.
    /// The input gradients `grads.s` and `grads.h` are not used.
    ///
    /// # Panics
    ///
    /// If the gradient shapes differ from the parameter shapes.
    #[track_caller]
    pub fn apply_grads(&mut self, grads: &AdditiveGrads, lr: f64) {
        assert_eq!(self.w.dim(), grads.w.dim(), "apply_grads: W shape");
        assert_eq!(self.u.dim(), grads.u.dim(), "apply_grads: U shape");
        assert_eq!(self.v.dim(), grads.v.dim(), "apply_grads: v shape");
        self.w.scaled_add(-lr, &grads.w);
        self.u.scaled_add(-lr, &grads.u);
        self.v.scaled_add(-lr, &grads.v);
    }
}

/// The outer product `a b^T`.
fn outer<S1, S2>(a: &ArrayBase<S1, Ix1>, b: &ArrayBase<S2, Ix1>) -> Array2<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    let col = a.view().insert_axis(Axis(1));
    let row = b.view().insert_axis(Axis(0));
    col.dot(&row)
}

#[cfg(test)]
mod tests {
    use ndarray::{Array1, array};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::{randn1, randn2};
    use crate::scores::general_scores;
    use crate::softmax::softmax;
    use crate::test_util::{assert_grad_close, numeric_grad};

    #[test]
    fn softmax_backward_by_hand() {
        // p = (0.5, 0.5), g = (1, 0): p.g = 0.5, so J^T g = (0.5 * 0.5, 0.5 * -0.5).
        assert_eq!(
            softmax_backward(&array![0.5, 0.5], &array![1.0, 0.0]),
            array![0.25, -0.25]
        );
    }

    #[test]
    fn softmax_backward_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(20);
        let e = randn1(6, &mut rng);
        let c = randn1(6, &mut rng);
        let analytic = softmax_backward(&softmax(&e), &c);
        let numeric = numeric_grad(&e, |x| softmax(x).dot(&c));
        assert_grad_close(&analytic, &numeric);
    }

    #[test]
    fn general_backward_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(21);
        let (s, w, h) = (
            randn1(3, &mut rng),
            randn2(3, 4, &mut rng),
            randn2(5, 4, &mut rng),
        );
        let c = randn1(5, &mut rng);
        let g = general_scores_backward(&s, &w, &h, &c);
        assert_grad_close(
            &g.s,
            &numeric_grad(&s, |x| general_scores(x, &w, &h).dot(&c)),
        );
        assert_grad_close(
            &g.w,
            &numeric_grad(&w, |x| general_scores(&s, x, &h).dot(&c)),
        );
        assert_grad_close(
            &g.h,
            &numeric_grad(&h, |x| general_scores(&s, &w, x).dot(&c)),
        );
    }

    #[test]
    fn additive_backward_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(22);
        let a = Additive::new(3, 4, 5, &mut rng);
        let (s, h, c) = (
            randn1(3, &mut rng),
            randn2(6, 4, &mut rng),
            randn1(6, &mut rng),
        );
        let g = a.backward(&s, &h, &c);
        let loss = |m: &Additive| m.scores(&s, &h).dot(&c);
        let with = |f: &dyn Fn(&mut Additive)| {
            let mut m = a.clone();
            f(&mut m);
            loss(&m)
        };
        assert_grad_close(&g.w, &numeric_grad(&a.w, |x| with(&|m| m.w.assign(x))));
        assert_grad_close(&g.u, &numeric_grad(&a.u, |x| with(&|m| m.u.assign(x))));
        assert_grad_close(&g.v, &numeric_grad(&a.v, |x| with(&|m| m.v.assign(x))));
        assert_grad_close(&g.s, &numeric_grad(&s, |x| a.scores(x, &h).dot(&c)));
        assert_grad_close(&g.h, &numeric_grad(&h, |x| a.scores(&s, x).dot(&c)));
    }

    #[test]
    fn sgd_step_moves_against_the_gradient() {
        let mut a = Additive::new(2, 2, 3, &mut StdRng::seed_from_u64(23));
        let before = a.clone();
        let g = AdditiveGrads {
            w: Array2::ones((3, 2)),
            u: Array2::zeros((3, 2)),
            v: Array1::from_elem(3, -2.0),
            s: Array1::zeros(2),
            h: Array2::zeros((1, 2)),
        };
        a.apply_grads(&g, 0.5);
        assert_eq!(a.w, &before.w - 0.5);
        assert_eq!(a.u, before.u);
        assert_eq!(a.v, &before.v + 1.0);
    }
}
