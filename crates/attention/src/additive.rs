//! Bahdanau's additive attention score (Bahdanau, Cho & Bengio 2015):
//! `e_j = v^T tanh(W s + U h_j)`.
//!
//! In a decoder the keys `h_j` are fixed for a whole source sentence while the query `s`
//! changes at every step, so `U h_j` is worth computing once: [`Additive::precompute`].
//! The backward pass and the SGD step are in [`grad`](crate::AdditiveGrads); the one-pass
//! scores-and-softmax of a decoder step, [`Additive::softmax_precomputed`], is with the other
//! fast paths in `fused`.

use ndarray::{Array1, Array2, ArrayBase, Axis, Data, Ix1, Ix2};
use rand::Rng;

use crate::init::{xavier_uniform, xavier_uniform1};

/// Additive (Bahdanau) attention scorer: `e_j = v^T tanh(W s + U h_j)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Additive {
    /// `d_attn x d_query` projection of the query (decoder state) `s`.
    pub w: Array2<f64>,
    /// `d_attn x d_key` projection of each key (encoder annotation) `h_j`.
    pub u: Array2<f64>,
    /// Length-`d_attn` vector that reduces `tanh(W s + U h_j)` to a scalar.
    pub v: Array1<f64>,
}

/// The keys of one source sentence already projected: row `j` holds `U h_j`.
///
/// Made by [`Additive::precompute`], consumed by [`Additive::scores_precomputed`].
#[derive(Debug, Clone, PartialEq)]
pub struct Precomputed {
    uh: Array2<f64>,
}

impl Precomputed {
    /// The `n x d_attn` matrix whose row `j` is `U h_j`.
    pub fn projected_keys(&self) -> &Array2<f64> {
        &self.uh
    }

    /// Number of keys `n`.
    pub fn len(&self) -> usize {
        self.uh.nrows()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.uh.nrows() == 0
    }
}

impl Additive {
    /// An additive scorer with Xavier-uniform `W` (`d_attn x d_query`), `U` (`d_attn x d_key`)
    /// and `v` (`d_attn`).
    pub fn new<R: Rng + ?Sized>(d_query: usize, d_key: usize, d_attn: usize, rng: &mut R) -> Self {
        let w = xavier_uniform(d_attn, d_query, rng);
        let u = xavier_uniform(d_attn, d_key, rng);
        let v = xavier_uniform1(d_attn, rng);
        Self { w, u, v }
    }

    /// Query length `d_query` (columns of `W`).
    pub fn d_query(&self) -> usize {
        self.w.ncols()
    }

    /// Key length `d_key` (columns of `U`).
    pub fn d_key(&self) -> usize {
        self.u.ncols()
    }

    /// Hidden size `d_attn` (rows of `W` and `U`, length of `v`).
    pub fn d_attn(&self) -> usize {
        self.v.len()
    }

    /// Scores `e_j = v^T tanh(W s + U h_j)` for every row `h_j` of `h`, computed key by key.
    ///
    /// # Panics
    ///
    /// If `s.len() != d_query` or `h.ncols() != d_key`.
    #[track_caller]
    pub fn scores<S1, S2>(&self, s: &ArrayBase<S1, Ix1>, h: &ArrayBase<S2, Ix2>) -> Array1<f64>
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        self.check_shapes("Additive::scores", s.len(), h.ncols());
        let ws = self.w.dot(s);
        h.rows()
            .into_iter()
            .map(|h_j| (&ws + &self.u.dot(&h_j)).tanh().dot(&self.v))
            .collect()
    }

    /// Projects every key once: row `j` of the result is `U h_j`.
    ///
    /// # Panics
    ///
    /// If `h.ncols() != d_key`.
    #[track_caller]
    pub fn precompute<S: Data<Elem = f64>>(&self, h: &ArrayBase<S, Ix2>) -> Precomputed {
        self.check_shapes("Additive::precompute", self.d_query(), h.ncols());
        Precomputed {
            uh: h.dot(&self.u.t()),
        }
    }

    /// Scores from precomputed keys: `e_j = v^T tanh(W s + pre_j)` with `pre_j = U h_j`.
    ///
    /// Equal to [`Additive::scores`] up to floating-point rounding (the products are summed
    /// in a different order), at the cost of one `d_attn x d_query` product per query
    /// instead of `n + 1`.
    ///
    /// # Panics
    ///
    /// If `s.len() != d_query` or `pre` was made by a scorer with another `d_attn`.
    #[track_caller]
    pub fn scores_precomputed<S: Data<Elem = f64>>(
        &self,
        pre: &Precomputed,
        s: &ArrayBase<S, Ix1>,
    ) -> Array1<f64> {
        self.check_precomputed("Additive::scores_precomputed", pre, s.len());
        let ws = self.w.dot(s).insert_axis(Axis(0));
        (&pre.uh + &ws).tanh().dot(&self.v)
    }

    /// Number of trainable parameters: `d_attn (d_query + d_key + 1)`.
    pub fn param_count(&self) -> usize {
        self.w.len() + self.u.len() + self.v.len()
    }

    /// The `n x d_attn` hidden activations: row `j` is `tanh(W s + U h_j)`.
    pub(crate) fn hidden<S1, S2>(
        &self,
        s: &ArrayBase<S1, Ix1>,
        h: &ArrayBase<S2, Ix2>,
    ) -> Array2<f64>
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        let ws = self.w.dot(s).insert_axis(Axis(0));
        (h.dot(&self.u.t()) + &ws).tanh()
    }

    #[track_caller]
    pub(crate) fn check_precomputed(&self, op: &str, pre: &Precomputed, d_s: usize) {
        self.check_shapes(op, d_s, self.d_key());
        assert_eq!(pre.uh.ncols(), self.d_attn(), "{op}: d_attn");
    }

    #[track_caller]
    pub(crate) fn check_shapes(&self, op: &str, d_s: usize, d_h: usize) {
        assert!(
            d_s == self.d_query() && d_h == self.d_key(),
            "{op}: expected a query of length {} and keys of width {}, found {d_s} and {d_h}",
            self.d_query(),
            self.d_key()
        );
    }
}

#[cfg(test)]
mod tests {
    use ndarray::array;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;
    use crate::randn1;

    fn tiny() -> Additive {
        Additive {
            w: array![[1.0, 0.0], [0.0, 1.0]],
            u: array![[1.0, 1.0], [0.0, -1.0]],
            v: array![1.0, 2.0],
        }
    }

    #[test]
    fn scores_by_hand() {
        // s = (0.5, 0): W s = (0.5, 0).
        // h_0 = (0, 0): U h_0 = (0, 0)   -> tanh(0.5, 0)   . (1, 2) = tanh 0.5
        // h_1 = (1, 1): U h_1 = (2, -1)  -> tanh(2.5, -1)  . (1, 2) = tanh 2.5 - 2 tanh 1
        let e = tiny().scores(&array![0.5, 0.0], &array![[0.0, 0.0], [1.0, 1.0]]);
        let want = [0.5_f64.tanh(), 2.5_f64.tanh() - 2.0 * 1.0_f64.tanh()];
        for (g, w) in e.iter().zip(want) {
            assert!((g - w).abs() < 1e-15, "{g} vs {w}");
        }
    }

    #[test]
    fn precomputed_scores_equal_direct_scores() {
        let mut rng = StdRng::seed_from_u64(3);
        let a = Additive::new(5, 7, 6, &mut rng);
        let h = randn2(9, 7, &mut rng);
        let pre = a.precompute(&h);
        assert_eq!(pre.len(), 9);
        for _ in 0..4 {
            let s = randn1(5, &mut rng);
            let direct = a.scores(&s, &h);
            let fast = a.scores_precomputed(&pre, &s.view());
            for (x, y) in direct.iter().zip(&fast) {
                assert!((x - y).abs() < 1e-12, "{x} vs {y}");
            }
        }
    }

    #[test]
    fn shapes_and_param_count() {
        let a = Additive::new(3, 4, 5, &mut StdRng::seed_from_u64(0));
        assert_eq!((a.w.dim(), a.u.dim(), a.v.len()), ((5, 3), (5, 4), 5));
        assert_eq!(a.param_count(), 5 * (3 + 4 + 1));
    }

    #[test]
    #[should_panic(expected = "expected a query of length 2 and keys of width 2, found 3 and 2")]
    fn wrong_query_length_panics_clearly() {
        let _ = tiny().scores(&array![1.0, 2.0, 3.0], &array![[0.0, 0.0]]);
    }
}
