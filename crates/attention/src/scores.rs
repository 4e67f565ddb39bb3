//! Multiplicative score functions (Luong et al. 2015): how well a query `s` matches each key
//! `h_j`, one score per row of `h`.
//!
//! The additive (Bahdanau) score has parameters of its own and lives in
//! [`additive`](crate::Additive).

use ndarray::{Array1, Array2, ArrayBase, Axis, Data, Ix1, Ix2, s};
use rand::Rng;

use crate::init::{xavier_uniform, xavier_uniform1};

/// Dot-product scores: `e_j = s . h_j` for every row `h_j` of `h`.
///
/// # Panics
///
/// If `s.len() != h.ncols()`.
#[track_caller]
pub fn dot_scores<S1, S2>(s: &ArrayBase<S1, Ix1>, h: &ArrayBase<S2, Ix2>) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_query_fits("dot_scores", s.len(), h.ncols());
    h.dot(s)
}

/// Scaled dot-product scores: `e_j = s . h_j / sqrt(d)` with `d = s.len()`
/// (Vaswani et al. 2017), which keeps the score variance near 1 for unit-variance inputs.
///
/// # Panics
///
/// If `s.len() != h.ncols()`.
#[track_caller]
pub fn scaled_dot_scores<S1, S2>(s: &ArrayBase<S1, Ix1>, h: &ArrayBase<S2, Ix2>) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_query_fits("scaled_dot_scores", s.len(), h.ncols());
    h.dot(s) / (s.len() as f64).sqrt()
}

/// Luong's "general" bilinear scores: `e_j = s^T W h_j`, with `W` of shape `d_s x d_h`.
///
/// # Panics
///
/// If `w` is not `s.len() x h.ncols()`.
#[track_caller]
pub fn general_scores<S1, S2, S3>(
    s: &ArrayBase<S1, Ix1>,
    w: &ArrayBase<S2, Ix2>,
    h: &ArrayBase<S3, Ix2>,
) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    assert_general_shapes("general_scores", s.len(), w.dim(), h.ncols());
    // s^T W h_j = (W^T s) . h_j: one matrix-vector product, then n dot products.
    h.dot(&w.t().dot(s))
}

/// Luong's "concat" score: `e_j = v^T tanh(W [s; h_j])`.
///
/// `W` is `d_a x (d_s + d_h)` and `v` has length `d_a`. Splitting `W = [W_s W_h]` gives
/// `W [s; h_j] = W_s s + W_h h_j`, which is how it is computed: `W_s s` only once.
#[derive(Debug, Clone, PartialEq)]
pub struct Concat {
    /// `d_a x (d_s + d_h)` projection of the concatenated `[s; h_j]`.
    pub w: Array2<f64>,
    /// Length-`d_a` output vector.
    pub v: Array1<f64>,
    d_s: usize,
}

impl Concat {
    /// A concat scorer with Xavier-uniform `W` and `v`.
    pub fn new<R: Rng + ?Sized>(d_s: usize, d_h: usize, d_a: usize, rng: &mut R) -> Self {
        let w = xavier_uniform(d_a, d_s + d_h, rng);
        let v = xavier_uniform1(d_a, rng);
        Self { w, v, d_s }
    }

    /// Scores `e_j = v^T tanh(W [s; h_j])` for every row `h_j` of `h`.
    ///
    /// # Panics
    ///
    /// If `s.len() + h.ncols()` differs from the width of `W`, or `s.len()` differs from the
    /// `d_s` given to [`Concat::new`].
    #[track_caller]
    pub fn scores<S1, S2>(&self, s: &ArrayBase<S1, Ix1>, h: &ArrayBase<S2, Ix2>) -> Array1<f64>
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        assert_eq!(s.len(), self.d_s, "Concat::scores: query length");
        assert_eq!(
            self.d_s + h.ncols(),
            self.w.ncols(),
            "Concat::scores: [s; h_j] length"
        );
        let ws = self.w.slice(s![.., ..self.d_s]).dot(s);
        let wh = h.dot(&self.w.slice(s![.., self.d_s..]).t());
        (wh + &ws.insert_axis(Axis(0))).tanh().dot(&self.v)
    }

    /// Number of trainable parameters: `d_a (d_s + d_h) + d_a`.
    pub fn param_count(&self) -> usize {
        self.w.len() + self.v.len()
    }
}

#[track_caller]
pub(crate) fn assert_query_fits(op: &str, d_s: usize, d_h: usize) {
    assert!(
        d_s == d_h,
        "{op}: query has length {d_s} but keys have {d_h} columns"
    );
}

#[track_caller]
pub(crate) fn assert_general_shapes(op: &str, d_s: usize, w: (usize, usize), d_h: usize) {
    assert!(
        w == (d_s, d_h),
        "{op}: W must be d_s x d_h = {d_s} x {d_h}, found {} x {}",
        w.0,
        w.1
    );
}

#[cfg(test)]
mod tests {
    use ndarray::array;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn keys() -> Array2<f64> {
        array![[1.0, 0.0], [0.0, 2.0], [1.0, -1.0]]
    }

    #[test]
    fn dot_scores_by_hand() {
        // s = (3, 1): 3*1 + 1*0 = 3; 3*0 + 1*2 = 2; 3*1 + 1*(-1) = 2.
        assert_eq!(
            dot_scores(&array![3.0, 1.0], &keys()),
            array![3.0, 2.0, 2.0]
        );
    }

    #[test]
    fn scaled_dot_scores_divide_by_sqrt_d() {
        // d = 2, so the dot scores (3, 2, 2) are divided by sqrt 2.
        let e = scaled_dot_scores(&array![3.0, 1.0], &keys().view());
        let r = std::f64::consts::SQRT_2;
        assert_eq!(e, array![3.0 / r, 2.0 / r, 2.0 / r]);
    }

    #[test]
    fn general_scores_by_hand() {
        // W = [[1, 2], [0, 1]], s = (1, 1): s^T W = (1, 3).
        // h_0 = (1, 0) -> 1; h_1 = (0, 2) -> 6; h_2 = (1, -1) -> -2.
        let w = array![[1.0, 2.0], [0.0, 1.0]];
        assert_eq!(
            general_scores(&array![1.0, 1.0], &w, &keys()),
            array![1.0, 6.0, -2.0]
        );
    }

    #[test]
    fn general_scores_accept_rectangular_w() {
        // d_s = 1, d_h = 2: W = [[2, -1]], s = (3): e_j = 3 (2 h_j0 - h_j1).
        let w = array![[2.0, -1.0]];
        assert_eq!(
            general_scores(&array![3.0], &w, &keys()),
            array![6.0, -6.0, 9.0]
        );
    }

    #[test]
    #[should_panic(expected = "W must be d_s x d_h = 2 x 2, found 2 x 3")]
    fn general_scores_reject_wrong_w() {
        let _ = general_scores(&array![1.0, 1.0], &Array2::zeros((2, 3)), &keys());
    }

    #[test]
    fn concat_scores_by_hand() {
        // W = [[1, 0, 1], [0, 1, -1]], v = (2, 1), s = (0.5), h_0 = (1, 0), h_1 = (0, 1):
        // W [s; h_0] = (0.5 + 0 + 0, 0 + 1 - 0) = (0.5, 1)  -> 2 tanh 0.5 + tanh 1
        // W [s; h_1] = (0.5 + 0 + 1, 0 + 0 - 1) = (1.5, -1) -> 2 tanh 1.5 - tanh 1
        let mut c = Concat::new(1, 2, 2, &mut StdRng::seed_from_u64(0));
        c.w = array![[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]];
        c.v = array![2.0, 1.0];
        let e = c.scores(&array![0.5], &array![[1.0, 0.0], [0.0, 1.0]]);
        let want = [
            2.0 * 0.5_f64.tanh() + 1.0_f64.tanh(),
            2.0 * 1.5_f64.tanh() - 1.0_f64.tanh(),
        ];
        for (g, w) in e.iter().zip(want) {
            assert!((g - w).abs() < 1e-15);
        }
        assert_eq!(c.param_count(), 8);
    }
}
