//! Multi-head attention (Vaswani et al. 2017): several scaled dot-product attentions over
//! learned projections, run side by side on slices of the model width and concatenated.
//!
//! `head_i = softmax(Q_i K_i^T / sqrt(d_head)) V_i` with `Q = X_q W_q`, `K = X_kv W_k`,
//! `V = X_kv W_v` split column-wise into `n_heads` blocks of width `d_head = d_model / n_heads`,
//! and `output = [head_1 ... head_h] W_o`. No biases.

use ndarray::{Array2, ArrayBase, Axis, Data, Ix2, concatenate, s};
use rand::Rng;

use crate::attend::try_scaled_dot_product_attention;
use crate::error::AttentionError;
use crate::init::xavier_uniform;

/// Multi-head attention parameters. All four matrices are `d_model x d_model` and act on
/// row vectors from the right (`X W`).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiHead {
    /// Query projection.
    pub w_q: Array2<f64>,
    /// Key projection.
    pub w_k: Array2<f64>,
    /// Value projection.
    pub w_v: Array2<f64>,
    /// Output projection applied to the concatenated heads.
    pub w_o: Array2<f64>,
    /// Number of heads; divides `d_model`.
    pub n_heads: usize,
}

/// What [`MultiHead::forward`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiHeadOutput {
    /// `n_q x d_model` result after the output projection.
    pub output: Array2<f64>,
    /// One `n_q x n_kv` attention-weight matrix per head.
    pub weights: Vec<Array2<f64>>,
}

impl MultiHead {
    /// Xavier-uniform projections for `n_heads` heads of width `d_model / n_heads`.
    ///
    /// # Panics
    ///
    /// If `n_heads == 0` or `d_model % n_heads != 0`; [`MultiHead::try_new`] returns an error
    /// instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(d_model: usize, n_heads: usize, rng: &mut R) -> Self {
        match Self::try_new(d_model, n_heads, rng) {
            Ok(m) => m,
            Err(e) => panic!("MultiHead::new: {e}"),
        }
    }

    /// Like [`MultiHead::new`], but an invalid head count is an
    /// [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        d_model: usize,
        n_heads: usize,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        check_heads(d_model, n_heads)?;
        let mut proj = || xavier_uniform(d_model, d_model, rng);
        Ok(Self {
            w_q: proj(),
            w_k: proj(),
            w_v: proj(),
            w_o: proj(),
            n_heads,
        })
    }

    /// Model width `d_model`.
    pub fn d_model(&self) -> usize {
        self.w_q.nrows()
    }

    /// Width of one head, `d_head = d_model / n_heads`.
    pub fn d_head(&self) -> usize {
        self.d_model() / self.n_heads
    }

    /// Number of parameters: `4 d_model^2`.
    pub fn param_count(&self) -> usize {
        self.w_q.len() + self.w_k.len() + self.w_v.len() + self.w_o.len()
    }

    /// Attends from the rows of `x_q` (`n_q x d_model`) to the rows of `x_kv`
    /// (`n_kv x d_model`); pass the same matrix twice for self-attention. The mask
    /// (`n_q x n_kv`, `true` = may attend) is shared by all heads.
    ///
    /// # Panics
    ///
    /// On shape mismatches or a fully masked row; see [`MultiHead::try_forward`].
    #[track_caller]
    pub fn forward<S1, S2>(
        &self,
        x_q: &ArrayBase<S1, Ix2>,
        x_kv: &ArrayBase<S2, Ix2>,
        mask: Option<&Array2<bool>>,
    ) -> MultiHeadOutput
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        match self.try_forward(x_q, x_kv, mask) {
            Ok(out) => out,
            Err(e) => panic!("MultiHead::forward: {e}"),
        }
    }

    /// [`MultiHead::forward`] with errors instead of panics.
    ///
    /// # Errors
    ///
    /// [`AttentionError::InvalidConfig`] if `n_heads` no longer divides `d_model`, and the
    /// errors of [`try_scaled_dot_product_attention`](crate::try_scaled_dot_product_attention).
    pub fn try_forward<S1, S2>(
        &self,
        x_q: &ArrayBase<S1, Ix2>,
        x_kv: &ArrayBase<S2, Ix2>,
        mask: Option<&Array2<bool>>,
    ) -> Result<MultiHeadOutput, AttentionError>
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        check_heads(self.d_model(), self.n_heads)?;
        crate::error::check_len(
            "MultiHead::forward",
            "x_q width",
            self.d_model(),
            x_q.ncols(),
        )?;
        crate::error::check_len(
            "MultiHead::forward",
            "x_kv width",
            self.d_model(),
            x_kv.ncols(),
        )?;
        let q = split_heads(&x_q.dot(&self.w_q), self.n_heads);
        let k = split_heads(&x_kv.dot(&self.w_k), self.n_heads);
        let v = split_heads(&x_kv.dot(&self.w_v), self.n_heads);
        let mut heads = Vec::with_capacity(self.n_heads);
        let mut weights = Vec::with_capacity(self.n_heads);
        for ((q_i, k_i), v_i) in q.iter().zip(&k).zip(&v) {
            let (head, w) = try_scaled_dot_product_attention(q_i, k_i, v_i, mask)?;
            heads.push(head);
            weights.push(w);
        }
        let output = concat_heads(&heads).dot(&self.w_o);
        Ok(MultiHeadOutput { output, weights })
    }
}

/// Splits the columns of `x` (`n x d`) into `n_heads` consecutive blocks of width
/// `d / n_heads`; block `i` holds columns `i d_head .. (i + 1) d_head`.
///
/// # Panics
///
/// If `n_heads` is 0 or does not divide `x.ncols()`.
#[track_caller]
pub fn split_heads<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix2>, n_heads: usize) -> Vec<Array2<f64>> {
    if let Err(e) = check_heads(x.ncols(), n_heads) {
        panic!("split_heads: {e}");
    }
    let d_head = x.ncols() / n_heads;
    (0..n_heads)
        .map(|i| x.slice(s![.., i * d_head..(i + 1) * d_head]).to_owned())
        .collect()
}

/// Concatenates head outputs column-wise, the inverse of [`split_heads`].
///
/// # Panics
///
/// If `heads` is empty or the heads have different numbers of rows.
#[track_caller]
pub fn concat_heads(heads: &[Array2<f64>]) -> Array2<f64> {
    assert!(!heads.is_empty(), "concat_heads: no heads");
    let views: Vec<_> = heads.iter().map(|h| h.view()).collect();
    match concatenate(Axis(1), &views) {
        Ok(x) => x,
        Err(e) => panic!("concat_heads: heads with different row counts: {e}"),
    }
}

fn check_heads(d_model: usize, n_heads: usize) -> Result<(), AttentionError> {
    if n_heads == 0 || !d_model.is_multiple_of(n_heads) {
        return Err(AttentionError::InvalidConfig(format!(
            "d_model {d_model} is not divisible into {n_heads} heads"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use ndarray::array;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::attend::scaled_dot_product_attention;
    use crate::init::randn2;
    use crate::mask::causal_mask;

    #[test]
    fn split_then_concat_is_identity() {
        let x = array![[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]];
        let heads = split_heads(&x, 2);
        assert_eq!(heads[1], array![[3.0, 4.0], [7.0, 8.0]]);
        assert_eq!(concat_heads(&heads), x);
    }

    #[test]
    fn one_head_with_identity_weights_is_plain_sdpa() {
        let x = randn2(4, 3, &mut StdRng::seed_from_u64(9));
        let eye = Array2::eye(3);
        let mh = MultiHead {
            w_q: eye.clone(),
            w_k: eye.clone(),
            w_v: eye.clone(),
            w_o: eye,
            n_heads: 1,
        };
        let out = mh.forward(&x, &x, None);
        let (plain, w) = scaled_dot_product_attention(&x, &x, &x, None);
        assert_eq!(out.weights, vec![w]);
        for (a, b) in out.output.iter().zip(&plain) {
            assert!((a - b).abs() < 1e-14);
        }
    }

    #[test]
    fn shapes_masks_and_param_count() {
        let mut rng = StdRng::seed_from_u64(10);
        let mh = MultiHead::new(8, 4, &mut rng);
        assert_eq!((mh.d_head(), mh.param_count()), (2, 4 * 64));
        let x = randn2(5, 8, &mut rng);
        let out = mh.forward(&x, &x.view(), Some(&causal_mask(5)));
        assert_eq!(out.output.dim(), (5, 8));
        assert_eq!(out.weights.len(), 4);
        for w in &out.weights {
            assert_eq!(w[[0, 1]], 0.0);
            assert!((w.row(3).sum() - 1.0).abs() < 1e-12);
        }
        // Heads look at different projections, so their weights differ.
        assert!(
            (&out.weights[0] - &out.weights[1])
                .iter()
                .any(|d| d.abs() > 1e-3)
        );
    }

    #[test]
    fn self_attention_is_permutation_equivariant() {
        let mut rng = StdRng::seed_from_u64(11);
        let mh = MultiHead::new(6, 3, &mut rng);
        let x = randn2(4, 6, &mut rng);
        let perm = [2, 0, 3, 1];
        let xp = x.select(Axis(0), &perm);
        let out = mh.forward(&x, &x, None).output;
        let out_p = mh.forward(&xp, &xp, None).output;
        for (a, b) in out_p.iter().zip(&out.select(Axis(0), &perm)) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn indivisible_width_is_rejected() {
        let err = MultiHead::try_new(10, 3, &mut StdRng::seed_from_u64(0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid configuration: d_model 10 is not divisible into 3 heads"
        );
        assert!(MultiHead::try_new(10, 0, &mut StdRng::seed_from_u64(0)).is_err());
    }
}
