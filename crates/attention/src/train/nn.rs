//! Layers with a forward and a hand-written backward pass: linear, embedding, layer norm,
//! the position-wise feed-forward network, multi-head attention (with grouped key/value
//! heads and an optional mask) and the softmax cross-entropy of the output tokens.
//!
//! Conventions: a batch of `b` sequences of length `n` is one `(b * n) x d` matrix, sequence
//! after sequence (rows are positions, as everywhere in the crate). `forward` returns the
//! output and, where the backward pass needs more than the input, a cache; `backward` takes
//! `dL/dy`, **adds** the parameters' gradients into `grads` (a value of the same type, from
//! [`Params::zeros_like`]) and returns `dL/dx`.

use ndarray::{Array1, Array2, ArrayView1, ArrayViewD, ArrayViewMutD, Axis, s};
use rand::Rng;

use crate::error::AttentionError;
use crate::init::xavier_uniform;
use crate::matmul::dot_into;
use crate::softmax::{log_softmax, masked_softmax_rows, softmax_rows};

use super::params::Params;
use super::positions::PositionEncoding;

fn view(a: &Array2<f64>) -> ArrayViewD<'_, f64> {
    a.view().into_dyn()
}
fn view1(a: &Array1<f64>) -> ArrayViewD<'_, f64> {
    a.view().into_dyn()
}

/// Affine map `y = x W + b`, `W` is `d_in x d_out`, `b` has length `d_out`.
///
/// ```
/// use attention::Linear;
/// use ndarray::array;
///
/// let lin = Linear { w: array![[1.0, 0.0], [0.0, 2.0]], b: array![0.5, 0.0] };
/// assert_eq!(lin.forward(&array![[1.0, 1.0]]), array![[1.5, 2.0]]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    /// Weights, `d_in x d_out`.
    pub w: Array2<f64>,
    /// Bias, `d_out`.
    pub b: Array1<f64>,
}

impl Linear {
    /// Xavier-uniform weights, zero bias.
    pub fn new<R: Rng + ?Sized>(d_in: usize, d_out: usize, rng: &mut R) -> Self {
        Self {
            w: xavier_uniform(d_in, d_out, rng),
            b: Array1::zeros(d_out),
        }
    }

    /// `x W + b` for `x` of shape `rows x d_in`.
    ///
    /// # Panics
    ///
    /// If `x.ncols() != d_in`.
    #[track_caller]
    pub fn forward(&self, x: &Array2<f64>) -> Array2<f64> {
        assert_eq!(x.ncols(), self.w.nrows(), "Linear::forward: input width");
        crate::matmul::dot(x, &self.w) + &self.b
    }

    /// Adds `dL/dW = x^T g` and `dL/db = sum of the rows of g` into `grads`; returns
    /// `dL/dx = g W^T`.
    ///
    /// # Panics
    ///
    /// If the shapes of `x`, `grad_y` and the layer disagree.
    #[track_caller]
    pub fn backward(&self, x: &Array2<f64>, grad_y: &Array2<f64>, grads: &mut Self) -> Array2<f64> {
        assert_eq!(
            x.nrows(),
            grad_y.nrows(),
            "Linear::backward: one gradient row per input row"
        );
        assert_eq!(
            grad_y.ncols(),
            self.w.ncols(),
            "Linear::backward: output width"
        );
        // `grads.w += x^T g`, the product added to the gradient element by element, with no
        // matrix in between.
        dot_into(x.t(), grad_y.view(), grads.w.view_mut(), true);
        grads.b += &grad_y.sum_axis(Axis(0));
        crate::matmul::dot(grad_y, &self.w.t())
    }
}

impl Params for Linear {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        vec![view(&self.w), view1(&self.b)]
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        vec![self.w.view_mut().into_dyn(), self.b.view_mut().into_dyn()]
    }
    fn zeros_like(&self) -> Self {
        Self {
            w: Array2::zeros(self.w.raw_dim()),
            b: Array1::zeros(self.b.len()),
        }
    }
}

/// A lookup table: token `t` becomes row `t` of `table` (`vocab x d`).
///
/// ```
/// use attention::Embedding;
/// use ndarray::array;
///
/// let e = Embedding { table: array![[0.0, 1.0], [2.0, 3.0]] };
/// assert_eq!(e.forward(&[1, 0, 1]), array![[2.0, 3.0], [0.0, 1.0], [2.0, 3.0]]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// One row per token, `vocab x d`.
    pub table: Array2<f64>,
}

impl Embedding {
    /// Standard-normal entries.
    pub fn new<R: Rng + ?Sized>(vocab: usize, d: usize, rng: &mut R) -> Self {
        Self {
            table: crate::init::randn2(vocab, d, rng),
        }
    }

    /// The rows of `ids`, `ids.len() x d`.
    ///
    /// # Panics
    ///
    /// If a token is `>= vocab`.
    #[track_caller]
    pub fn forward(&self, ids: &[usize]) -> Array2<f64> {
        let mut out = Array2::zeros((ids.len(), self.table.ncols()));
        for (mut row, &t) in out.rows_mut().into_iter().zip(ids) {
            assert!(
                t < self.table.nrows(),
                "Embedding::forward: token {t} out of range"
            );
            row.assign(&self.table.row(t));
        }
        out
    }

    /// Adds row `i` of `grad_y` into row `ids[i]` of `grads.table`.
    ///
    /// # Panics
    ///
    /// If `grad_y` has not one row per id.
    #[track_caller]
    pub fn backward(&self, ids: &[usize], grad_y: &Array2<f64>, grads: &mut Self) {
        assert_eq!(
            ids.len(),
            grad_y.nrows(),
            "Embedding::backward: one row per id"
        );
        for (&t, g) in ids.iter().zip(grad_y.rows()) {
            let mut row = grads.table.row_mut(t);
            row += &g;
        }
    }
}

impl Params for Embedding {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        vec![view(&self.table)]
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        vec![self.table.view_mut().into_dyn()]
    }
    fn zeros_like(&self) -> Self {
        Self {
            table: Array2::zeros(self.table.raw_dim()),
        }
    }
}

/// Layer normalisation of each row: `y = gamma ⊙ (x - mean) / sqrt(var + eps) + beta`, with
/// `eps = 1e-5` and the biased variance.
///
/// ```
/// use attention::LayerNormGrad;
/// use ndarray::array;
///
/// let ln = LayerNormGrad::new(3);
/// let (y, _) = ln.forward(&array![[1.0, 2.0, 3.0]]);
/// assert!(y.sum().abs() < 1e-12);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNormGrad {
    /// Scale, one per feature.
    pub gamma: Array1<f64>,
    /// Shift, one per feature.
    pub beta: Array1<f64>,
}

/// What [`LayerNormGrad::backward`] needs from the forward pass.
#[derive(Debug, Clone)]
pub struct LayerNormCache {
    xhat: Array2<f64>,
    inv_std: Array1<f64>,
}

const LN_EPS: f64 = 1e-5;

impl LayerNormGrad {
    /// `gamma = 1`, `beta = 0` over `d` features.
    pub fn new(d: usize) -> Self {
        Self {
            gamma: Array1::ones(d),
            beta: Array1::zeros(d),
        }
    }

    /// Normalises every row of `x`.
    ///
    /// # Panics
    ///
    /// If `x.ncols()` is not the layer's width.
    #[track_caller]
    pub fn forward(&self, x: &Array2<f64>) -> (Array2<f64>, LayerNormCache) {
        let d = self.gamma.len();
        assert_eq!(x.ncols(), d, "LayerNormGrad::forward: input width");
        match (x.as_slice(), self.gamma.as_slice(), self.beta.as_slice()) {
            (Some(x), Some(gamma), Some(beta)) if d >= 2 => ln_forward(x, gamma, beta),
            _ => self.forward_arrays(x),
        }
    }

    /// [`LayerNormGrad::forward`] as array expressions: what [`ln_forward`] computes row by
    /// row, the same operations in the same order (a test compares the two bit for bit).
    fn forward_arrays(&self, x: &Array2<f64>) -> (Array2<f64>, LayerNormCache) {
        let d = self.gamma.len();
        let mean = x.mean_axis(Axis(1)).expect("d > 0");
        let centred = x - &mean.insert_axis(Axis(1));
        let var = centred.mapv(|v| v * v).sum_axis(Axis(1)) / d as f64;
        let inv_std = var.mapv(|v| 1.0 / (v + LN_EPS).sqrt());
        let xhat = centred * inv_std.view().insert_axis(Axis(1));
        let y = &xhat * &self.gamma + &self.beta;
        (y, LayerNormCache { xhat, inv_std })
    }

    /// With `g_hat = g ⊙ gamma`: `dL/dx = inv_std / d (d g_hat - sum(g_hat) - xhat sum(g_hat ⊙
    /// xhat))` per row; adds `dL/dgamma`, `dL/dbeta` into `grads`.
    pub fn backward(
        &self,
        cache: &LayerNormCache,
        grad_y: &Array2<f64>,
        grads: &mut Self,
    ) -> Array2<f64> {
        let d = self.gamma.len();
        let slices = (
            grad_y.as_slice(),
            cache.xhat.as_slice(),
            self.gamma.as_slice(),
            grads.gamma.as_slice_mut(),
            grads.beta.as_slice_mut(),
        );
        match slices {
            (Some(g), Some(xhat), Some(gamma), Some(d_gamma), Some(d_beta))
                if d >= 2 && g.len() == xhat.len() =>
            {
                ln_backward(g, xhat, &cache.inv_std, gamma, d_gamma, d_beta)
            }
            _ => self.backward_arrays(cache, grad_y, grads),
        }
    }

    /// [`LayerNormGrad::backward`] as array expressions (see [`LayerNormGrad::forward_arrays`]).
    fn backward_arrays(
        &self,
        cache: &LayerNormCache,
        grad_y: &Array2<f64>,
        grads: &mut Self,
    ) -> Array2<f64> {
        let d = self.gamma.len() as f64;
        grads.gamma += &(grad_y * &cache.xhat).sum_axis(Axis(0));
        grads.beta += &grad_y.sum_axis(Axis(0));
        let g_hat = grad_y * &self.gamma;
        let sum_g = g_hat.sum_axis(Axis(1)).insert_axis(Axis(1));
        let sum_gx = (&g_hat * &cache.xhat)
            .sum_axis(Axis(1))
            .insert_axis(Axis(1));
        let inner = g_hat * d - &sum_g - &cache.xhat * &sum_gx;
        inner * &(&cache.inv_std / d).insert_axis(Axis(1))
    }
}

/// Layer norm of the rows of `x` (row-major, `gamma.len()` wide) without a temporary per
/// step: per row the mean and the variance are ndarray's `sum` (its eight-way unrolled
/// fold) of the row and of its squares, divided by `d`, exactly as `mean_axis` and
/// `sum_axis` compute them, and every element goes through the operations of
/// [`LayerNormGrad::forward_arrays`] in the same order.
fn ln_forward(x: &[f64], gamma: &[f64], beta: &[f64]) -> (Array2<f64>, LayerNormCache) {
    let d = gamma.len();
    let (rows, df) = (x.len() / d, d as f64);
    let mut xhat = vec![0.0; x.len()];
    let mut y = vec![0.0; x.len()];
    let mut inv_std = Array1::zeros(rows);
    let mut sq = vec![0.0; d];
    for (r, ((x, xh), y)) in x
        .chunks_exact(d)
        .zip(xhat.chunks_exact_mut(d))
        .zip(y.chunks_exact_mut(d))
        .enumerate()
    {
        let mean = ArrayView1::from(x).sum() / df;
        for ((xh, sq), &x) in xh.iter_mut().zip(&mut sq).zip(x) {
            *xh = x - mean;
            *sq = *xh * *xh;
        }
        let var = ArrayView1::from(&sq[..]).sum() / df;
        let is = 1.0 / (var + LN_EPS).sqrt();
        inv_std[r] = is;
        for (((y, xh), &g), &b) in y.iter_mut().zip(xh.iter_mut()).zip(gamma).zip(beta) {
            *xh *= is;
            *y = *xh * g + b;
        }
    }
    let shape = (rows, d);
    let array = |v: Vec<f64>| Array2::from_shape_vec(shape, v).expect("rows x d elements");
    (
        array(y),
        LayerNormCache {
            xhat: array(xhat),
            inv_std,
        },
    )
}

/// The backward pass of [`ln_forward`], as [`LayerNormGrad::backward_arrays`] computes it: the
/// parameters' gradients are column sums from zero, row after row, added to `d_gamma` and
/// `d_beta` at the end; the row sums are ndarray's `sum` of `g ⊙ gamma` and of `g ⊙ gamma ⊙
/// xhat`.
fn ln_backward(
    g: &[f64],
    xhat: &[f64],
    inv_std: &Array1<f64>,
    gamma: &[f64],
    d_gamma: &mut [f64],
    d_beta: &mut [f64],
) -> Array2<f64> {
    let d = gamma.len();
    let (rows, df) = (g.len() / d, d as f64);
    let (mut col_gx, mut col_g) = (vec![0.0; d], vec![0.0; d]);
    let (mut g_hat, mut g_hat_x) = (vec![0.0; d], vec![0.0; d]);
    let mut out = vec![0.0; g.len()];
    for (r, ((g, xh), out)) in g
        .chunks_exact(d)
        .zip(xhat.chunks_exact(d))
        .zip(out.chunks_exact_mut(d))
        .enumerate()
    {
        for j in 0..d {
            col_gx[j] += g[j] * xh[j];
            col_g[j] += g[j];
            g_hat[j] = g[j] * gamma[j];
            g_hat_x[j] = g_hat[j] * xh[j];
        }
        let sum_g = ArrayView1::from(&g_hat[..]).sum();
        let sum_gx = ArrayView1::from(&g_hat_x[..]).sum();
        let f = inv_std[r] / df;
        for j in 0..d {
            out[j] = (g_hat[j] * df - sum_g - xh[j] * sum_gx) * f;
        }
    }
    for j in 0..d {
        d_gamma[j] += col_gx[j];
        d_beta[j] += col_g[j];
    }
    Array2::from_shape_vec((rows, d), out).expect("rows x d elements")
}

impl Params for LayerNormGrad {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        vec![view1(&self.gamma), view1(&self.beta)]
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        vec![
            self.gamma.view_mut().into_dyn(),
            self.beta.view_mut().into_dyn(),
        ]
    }
    fn zeros_like(&self) -> Self {
        Self {
            gamma: Array1::zeros(self.gamma.len()),
            beta: Array1::zeros(self.beta.len()),
        }
    }
}

/// Position-wise feed-forward network `y = ReLU(x W_1 + b_1) W_2 + b_2`.
///
/// ```
/// use attention::FeedForwardGrad;
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let ff = FeedForwardGrad::new(4, 8, &mut StdRng::seed_from_u64(0));
/// let (y, _) = ff.forward(&ndarray::Array2::ones((3, 4)));
/// assert_eq!(y.dim(), (3, 4));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FeedForwardGrad {
    /// `d_model -> d_ff`.
    pub l1: Linear,
    /// `d_ff -> d_model`.
    pub l2: Linear,
}

/// What [`FeedForwardGrad::backward`] needs from the forward pass.
#[derive(Debug, Clone)]
pub struct FeedForwardCache {
    x: Array2<f64>,
    pre: Array2<f64>,
    hidden: Array2<f64>,
}

impl FeedForwardGrad {
    /// Xavier-uniform weights, zero biases.
    pub fn new<R: Rng + ?Sized>(d_model: usize, d_ff: usize, rng: &mut R) -> Self {
        Self {
            l1: Linear::new(d_model, d_ff, rng),
            l2: Linear::new(d_ff, d_model, rng),
        }
    }

    /// The network on every row of `x`.
    ///
    /// # Panics
    ///
    /// If `x.ncols() != d_model`.
    #[track_caller]
    pub fn forward(&self, x: &Array2<f64>) -> (Array2<f64>, FeedForwardCache) {
        let pre = self.l1.forward(x);
        let hidden = pre.mapv(|v| v.max(0.0));
        let y = self.l2.forward(&hidden);
        (
            y,
            FeedForwardCache {
                x: x.clone(),
                pre,
                hidden,
            },
        )
    }

    /// ReLU passes the gradient where its input was positive; adds the two layers' gradients.
    pub fn backward(
        &self,
        cache: &FeedForwardCache,
        grad_y: &Array2<f64>,
        grads: &mut Self,
    ) -> Array2<f64> {
        let g_hidden = self.l2.backward(&cache.hidden, grad_y, &mut grads.l2);
        // Multiplied by the 0/1 mask (not selected), so that signed zeros and NaNs come out
        // as they always have; in place instead of through a mask matrix.
        let mut g_pre = g_hidden;
        g_pre.zip_mut_with(&cache.pre, |g, &v| *g *= if v > 0.0 { 1.0 } else { 0.0 });
        self.l1.backward(&cache.x, &g_pre, &mut grads.l1)
    }
}

impl Params for FeedForwardGrad {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        let mut p = self.l1.params();
        p.extend(self.l2.params());
        p
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        let mut p = self.l1.params_mut();
        p.extend(self.l2.params_mut());
        p
    }
    fn zeros_like(&self) -> Self {
        Self {
            l1: self.l1.zeros_like(),
            l2: self.l2.zeros_like(),
        }
    }
}

/// Multi-head attention with `heads` query heads and `kv_heads` key/value heads, each
/// `d_head = d_model / heads` wide. Query head `i` reads key/value head
/// `i / (heads / kv_heads)`: `kv_heads == heads` is standard multi-head attention,
/// `kv_heads == 1` multi-query attention, anything between grouped-query attention.
///
/// Per sequence and head: `A = softmax(Q_i K_g^T / sqrt(d_head))` (masked where the mask is
/// `false`), `head_i = A V_g`; the heads are concatenated and projected by `w_o`.
///
/// ```
/// use attention::{AttentionGrad, causal_mask};
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let attn = AttentionGrad::new(8, 4, 2, &mut StdRng::seed_from_u64(0));
/// let x = ndarray::Array2::ones((2 * 3, 8)); // two sequences of length 3
/// let (y, cache) = attn.forward(&x, &x, 2, Some(&causal_mask(3)));
/// assert_eq!(y.dim(), (6, 8));
/// assert_eq!(cache.weights(0, 1).row(0).to_vec(), vec![1.0, 0.0, 0.0]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionGrad {
    /// Query projection, `d_model x (heads * d_head)`.
    pub w_q: Linear,
    /// Key projection, `d_model x (kv_heads * d_head)`.
    pub w_k: Linear,
    /// Value projection, `d_model x (kv_heads * d_head)`.
    pub w_v: Linear,
    /// Output projection, `(heads * d_head) x d_model`.
    pub w_o: Linear,
    heads: usize,
    kv_heads: usize,
}

/// What [`AttentionGrad::backward`] needs from the forward pass; also holds the weights.
#[derive(Debug, Clone)]
pub struct AttentionCache {
    xq: Array2<f64>,
    xkv: Array2<f64>,
    q: Array2<f64>,
    k: Array2<f64>,
    v: Array2<f64>,
    concat: Array2<f64>,
    /// `weights[b * heads + i]`: head `i`'s weights for sequence `b`, `m x n`.
    weights: Vec<Array2<f64>>,
    batch: usize,
    heads: usize,
}

impl AttentionCache {
    /// Head `head`'s attention weights for sequence `seq` of the batch (`m x n`, queries by
    /// keys).
    ///
    /// # Panics
    ///
    /// If `seq` or `head` is out of range.
    #[track_caller]
    pub fn weights(&self, seq: usize, head: usize) -> &Array2<f64> {
        assert!(
            seq < self.batch && head < self.heads,
            "AttentionCache::weights: out of range"
        );
        &self.weights[seq * self.heads + head]
    }
}

impl AttentionGrad {
    /// Xavier-uniform projections, zero biases.
    ///
    /// # Panics
    ///
    /// If the head counts do not divide: [`AttentionGrad::try_new`] returns an error instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(
        d_model: usize,
        heads: usize,
        kv_heads: usize,
        rng: &mut R,
    ) -> Self {
        match Self::try_new(d_model, heads, kv_heads, rng) {
            Ok(a) => a,
            Err(e) => panic!("AttentionGrad::new: {e}"),
        }
    }

    /// Like [`AttentionGrad::new`], but `heads == 0`, `kv_heads == 0`, `d_model % heads != 0`
    /// or `heads % kv_heads != 0` is an [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        d_model: usize,
        heads: usize,
        kv_heads: usize,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        if heads == 0
            || kv_heads == 0
            || !d_model.is_multiple_of(heads)
            || !heads.is_multiple_of(kv_heads)
        {
            return Err(AttentionError::InvalidConfig(format!(
                "d_model {d_model}, heads {heads}, kv_heads {kv_heads}: need heads | d_model and kv_heads | heads"
            )));
        }
        let d_head = d_model / heads;
        Ok(Self {
            w_q: Linear::new(d_model, heads * d_head, rng),
            w_k: Linear::new(d_model, kv_heads * d_head, rng),
            w_v: Linear::new(d_model, kv_heads * d_head, rng),
            w_o: Linear::new(heads * d_head, d_model, rng),
            heads,
            kv_heads,
        })
    }

    /// Number of query heads.
    pub fn heads(&self) -> usize {
        self.heads
    }

    /// Number of key/value heads.
    pub fn kv_heads(&self) -> usize {
        self.kv_heads
    }

    /// Width of one head.
    pub fn d_head(&self) -> usize {
        self.w_q.w.ncols() / self.heads
    }

    fn kv_head(&self, i: usize) -> usize {
        i / (self.heads / self.kv_heads)
    }

    /// Attention from the queries `xq` (`batch * m` rows) to the keys/values `xkv`
    /// (`batch * n` rows); `mask` (`m x n`, `true` = may attend) applies to every sequence.
    ///
    /// # Panics
    ///
    /// If the row counts are not multiples of `batch`, the mask is not `m x n`, or a mask row
    /// is all `false`.
    #[track_caller]
    pub fn forward(
        &self,
        xq: &Array2<f64>,
        xkv: &Array2<f64>,
        batch: usize,
        mask: Option<&Array2<bool>>,
    ) -> (Array2<f64>, AttentionCache) {
        self.forward_with_positions(xq, xkv, batch, mask, None)
    }

    /// [`AttentionGrad::forward`] with the positions of self-attention: `pos` rotates the
    /// projected queries and keys (RoPE) or adds its bias to every head's scores (ALiBi,
    /// relative), with positions counted from 0 in each sequence.
    ///
    /// # Panics
    ///
    /// As [`AttentionGrad::forward`].
    #[track_caller]
    pub fn forward_with_positions(
        &self,
        xq: &Array2<f64>,
        xkv: &Array2<f64>,
        batch: usize,
        mask: Option<&Array2<bool>>,
        pos: Option<&PositionEncoding>,
    ) -> (Array2<f64>, AttentionCache) {
        assert!(
            batch > 0 && xq.nrows().is_multiple_of(batch) && xkv.nrows().is_multiple_of(batch),
            "AttentionGrad::forward: rows are not a multiple of the batch"
        );
        let (m, n) = (xq.nrows() / batch, xkv.nrows() / batch);
        if let Some(mask) = mask {
            assert_eq!(mask.dim(), (m, n), "AttentionGrad::forward: mask shape");
        }
        let dh = self.d_head();
        let scale = 1.0 / (dh as f64).sqrt();
        let mut q = self.w_q.forward(xq);
        let mut k = self.w_k.forward(xkv);
        let v = self.w_v.forward(xkv);
        // Only RoPE rotates; for the other schemes `rotate_heads` would copy.
        if let Some(pos) = pos.filter(|p| p.rotates()) {
            q = pos.rotate_heads(&q, m, dh, false);
            k = pos.rotate_heads(&k, n, dh, false);
        }
        let mut concat = Array2::zeros((batch * m, self.heads * dh));
        let mut weights = Vec::with_capacity(batch * self.heads);
        // The bias depends on the head only: built once per head, not per sequence.
        let biases: Vec<Option<Array2<f64>>> = (0..self.heads)
            .map(|i| pos.and_then(|p| p.score_bias(i, m, n)))
            .collect();
        let mut scores = Array2::zeros((m, n));
        for b in 0..batch {
            for (i, bias) in biases.iter().enumerate() {
                let g = self.kv_head(i);
                let qi = q.slice(s![b * m..(b + 1) * m, i * dh..(i + 1) * dh]);
                let kg = k.slice(s![b * n..(b + 1) * n, g * dh..(g + 1) * dh]);
                let vg = v.slice(s![b * n..(b + 1) * n, g * dh..(g + 1) * dh]);
                dot_into(qi, kg.t(), scores.view_mut(), false);
                scores *= scale;
                if let Some(bias) = bias {
                    scores += bias;
                }
                let a = match mask {
                    Some(mask) => softmax_rows_masked(&scores, Some(mask)).unwrap_or_else(|| {
                        masked_softmax_rows(&scores, mask)
                            .unwrap_or_else(|e| panic!("AttentionGrad::forward: {e}"))
                    }),
                    None => {
                        softmax_rows_masked(&scores, None).unwrap_or_else(|| softmax_rows(&scores))
                    }
                };
                dot_into(
                    a.view(),
                    vg,
                    concat.slice_mut(s![b * m..(b + 1) * m, i * dh..(i + 1) * dh]),
                    false,
                );
                weights.push(a);
            }
        }
        let y = self.w_o.forward(&concat);
        let cache = AttentionCache {
            xq: xq.clone(),
            xkv: xkv.clone(),
            q,
            k,
            v,
            concat,
            weights,
            batch,
            heads: self.heads,
        };
        (y, cache)
    }

    /// Backward pass: returns `(dL/dxq, dL/dxkv)` and adds the projections' gradients into
    /// `grads`. For self-attention (`xq` and `xkv` the same matrix) the caller adds the two.
    ///
    /// Per sequence and head, with `G = dL/dhead_i`: `dL/dV_g += A^T G`, `dL/dA = G V_g^T`,
    /// each row of `dL/dS` is the softmax backward of its row, and
    /// `dL/dQ_i = dL/dS K_g / sqrt(d_head)`, `dL/dK_g += dL/dS^T Q_i / sqrt(d_head)`.
    pub fn backward(
        &self,
        cache: &AttentionCache,
        grad_y: &Array2<f64>,
        grads: &mut Self,
    ) -> (Array2<f64>, Array2<f64>) {
        self.backward_with_positions(cache, grad_y, grads, None)
    }

    /// Backward of [`AttentionGrad::forward_with_positions`], given the same positions and
    /// their gradient holder: the queries' and keys' gradients are rotated back (RoPE), and a
    /// learned relative bias receives the scores' gradient.
    pub fn backward_with_positions(
        &self,
        cache: &AttentionCache,
        grad_y: &Array2<f64>,
        grads: &mut Self,
        mut pos: Option<(&PositionEncoding, &mut PositionEncoding)>,
    ) -> (Array2<f64>, Array2<f64>) {
        let batch = cache.batch;
        let (m, n) = (cache.xq.nrows() / batch, cache.xkv.nrows() / batch);
        let dh = self.d_head();
        let scale = 1.0 / (dh as f64).sqrt();
        let g_concat = self.w_o.backward(&cache.concat, grad_y, &mut grads.w_o);
        let mut gq = Array2::zeros(cache.q.raw_dim());
        let mut gk = Array2::zeros(cache.k.raw_dim());
        let mut gv = Array2::zeros(cache.v.raw_dim());
        let (mut ga, mut gs) = (Array2::zeros((m, n)), Array2::zeros((m, n)));
        for b in 0..batch {
            for i in 0..self.heads {
                let g = self.kv_head(i);
                let a = &cache.weights[b * self.heads + i];
                let rows_q = b * m..(b + 1) * m;
                let rows_k = b * n..(b + 1) * n;
                let cols_q = i * dh..(i + 1) * dh;
                let cols_k = g * dh..(g + 1) * dh;
                let go = g_concat.slice(s![rows_q.clone(), cols_q.clone()]);
                let vg = cache.v.slice(s![rows_k.clone(), cols_k.clone()]);
                let kg = cache.k.slice(s![rows_k.clone(), cols_k.clone()]);
                let qi = cache.q.slice(s![rows_q.clone(), cols_q.clone()]);
                dot_into(
                    a.t(),
                    go,
                    gv.slice_mut(s![rows_k.clone(), cols_k.clone()]),
                    true,
                );
                dot_into(go, vg.t(), ga.view_mut(), false);
                // softmax_backward row by row, into one buffer: p ⊙ (g - p·g).
                for r in 0..m {
                    let (p_r, g_r) = (a.row(r), ga.row(r));
                    let pg = p_r.dot(&g_r);
                    for ((s, &p), &gr) in gs.row_mut(r).iter_mut().zip(p_r).zip(g_r) {
                        *s = p * (gr - pg);
                    }
                }
                if let Some((p, pg)) = pos.as_mut() {
                    p.score_bias_backward(i, gs.view(), pg);
                }
                gs *= scale;
                dot_into(gs.view(), kg, gq.slice_mut(s![rows_q, cols_q]), false);
                dot_into(gs.t(), qi, gk.slice_mut(s![rows_k, cols_k]), true);
            }
        }
        if let Some((p, _)) = pos.filter(|(p, _)| p.rotates()) {
            gq = p.rotate_heads(&gq, m, dh, true);
            gk = p.rotate_heads(&gk, n, dh, true);
        }
        let gxq = self.w_q.backward(&cache.xq, &gq, &mut grads.w_q);
        let gxkv = self.w_k.backward(&cache.xkv, &gk, &mut grads.w_k)
            + self.w_v.backward(&cache.xkv, &gv, &mut grads.w_v);
        (gxq, gxkv)
    }
}

impl Params for AttentionGrad {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        [&self.w_q, &self.w_k, &self.w_v, &self.w_o]
            .into_iter()
            .flat_map(|l| l.params())
            .collect()
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        [&mut self.w_q, &mut self.w_k, &mut self.w_v, &mut self.w_o]
            .into_iter()
            .flat_map(|l| l.params_mut())
            .collect()
    }
    fn zeros_like(&self) -> Self {
        Self {
            w_q: self.w_q.zeros_like(),
            w_k: self.w_k.zeros_like(),
            w_v: self.w_v.zeros_like(),
            w_o: self.w_o.zeros_like(),
            heads: self.heads,
            kv_heads: self.kv_heads,
        }
    }
}

/// Mean cross-entropy of the rows of `logits` (`rows x vocab`) against `targets`
/// (`L = -1/rows sum_r ln softmax(logits_r)[targets_r]`) and its gradient with respect to the
/// logits, `(softmax(logits_r) - onehot(targets_r)) / rows`.
///
/// ```
/// use attention::softmax_cross_entropy;
/// use ndarray::array;
///
/// let (loss, grad) = softmax_cross_entropy(&array![[0.0, 0.0]], &[1]);
/// assert!((loss - 2f64.ln()).abs() < 1e-12);
/// assert_eq!(grad, array![[0.5, -0.5]]);
/// ```
///
/// # Panics
///
/// If there is not one target per row or a target is out of range.
#[track_caller]
pub fn softmax_cross_entropy(logits: &Array2<f64>, targets: &[usize]) -> (f64, Array2<f64>) {
    assert_eq!(
        logits.nrows(),
        targets.len(),
        "softmax_cross_entropy: one target per row"
    );
    let rows = targets.len() as f64;
    let mut loss = 0.0;
    let mut grad = Array2::zeros(logits.raw_dim());
    for ((row, &t), mut g) in logits.rows().into_iter().zip(targets).zip(grad.rows_mut()) {
        assert!(
            t < row.len(),
            "softmax_cross_entropy: target {t} out of range"
        );
        let ls = log_softmax(&row);
        loss -= ls[t];
        g.assign(&(ls.mapv(f64::exp) / rows));
        g[t] -= 1.0 / rows;
    }
    (loss / rows, grad)
}

/// Row-wise softmax of `scores`, with `mask` (`false` = masked), as
/// [`softmax_rows`]/[`masked_softmax_rows`] compute it (the same operations in the same
/// order, so the same bits) but without a vector per row; `None` where a row has no finite
/// score or a NaN, for the caller to report as those functions do.
fn softmax_rows_masked(scores: &Array2<f64>, mask: Option<&Array2<bool>>) -> Option<Array2<f64>> {
    let mut out = Array2::zeros(scores.raw_dim());
    for (r, (row, mut e)) in scores.rows().into_iter().zip(out.rows_mut()).enumerate() {
        let keep = |j: usize| mask.is_none_or(|mask| mask[[r, j]]);
        let mut max = f64::NEG_INFINITY;
        for (j, &v) in row.iter().enumerate() {
            if keep(j) {
                if v.is_nan() || v == f64::INFINITY {
                    return None;
                }
                max = max.max(v);
            }
        }
        if max == f64::NEG_INFINITY {
            return None;
        }
        for (j, (e, &v)) in e.iter_mut().zip(row).enumerate() {
            let v = if keep(j) { v } else { f64::NEG_INFINITY };
            *e = (v - max).exp();
        }
        let z = e.sum();
        e.mapv_inplace(|v| v / z);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;
    use crate::mask::causal_mask;
    use crate::train::gradcheck::{check_input, check_params};
    use crate::train::positions::Positions;

    fn rng() -> StdRng {
        StdRng::seed_from_u64(42)
    }

    /// A fixed random projection `sum(y ⊙ r)`, so every output entry matters.
    fn probe_loss(y: &Array2<f64>, r: &Array2<f64>) -> f64 {
        (y * r).sum()
    }

    #[test]
    fn linear_gradients() {
        let mut rng = rng();
        let mut lin = Linear::new(4, 3, &mut rng);
        lin.b = crate::init::randn1(3, &mut rng);
        let x = randn2(5, 4, &mut rng);
        let r = randn2(5, 3, &mut rng);
        let mut grads = lin.zeros_like();
        let gx = lin.backward(&x, &r, &mut grads);
        check_params(&lin, &grads, |l| probe_loss(&l.forward(&x), &r));
        check_input(&x, &gx, |x| probe_loss(&lin.forward(x), &r));
    }

    #[test]
    fn embedding_gradients() {
        let mut rng = rng();
        let e = Embedding::new(4, 3, &mut rng);
        let ids = [1, 3, 1, 0];
        let r = randn2(4, 3, &mut rng);
        let mut grads = e.zeros_like();
        e.backward(&ids, &r, &mut grads);
        check_params(&e, &grads, |e| probe_loss(&e.forward(&ids), &r));
        assert_eq!(grads.table.row(2).sum(), 0.0);
    }

    #[test]
    fn layer_norm_gradients() {
        let mut rng = rng();
        let mut ln = LayerNormGrad::new(5);
        ln.gamma = crate::init::randn1(5, &mut rng);
        ln.beta = crate::init::randn1(5, &mut rng);
        let x = randn2(3, 5, &mut rng);
        let r = randn2(3, 5, &mut rng);
        let (_, cache) = ln.forward(&x);
        let mut grads = ln.zeros_like();
        let gx = ln.backward(&cache, &r, &mut grads);
        check_params(&ln, &grads, |l| probe_loss(&l.forward(&x).0, &r));
        check_input(&x, &gx, |x| probe_loss(&ln.forward(x).0, &r));
    }

    /// The row loops compute what the array expressions do, bit for bit, for widths below,
    /// at and above one unrolled block of eight.
    #[test]
    fn layer_norm_loops_are_the_array_expressions() {
        let mut rng = rng();
        for d in [2, 5, 8, 16, 32, 37] {
            let mut ln = LayerNormGrad::new(d);
            ln.gamma = crate::init::randn1(d, &mut rng);
            ln.beta = crate::init::randn1(d, &mut rng);
            let x = randn2(7, d, &mut rng) * 3.0 + 1.5;
            let g = randn2(7, d, &mut rng);
            let ((y, c), (y0, c0)) = (ln.forward(&x), ln.forward_arrays(&x));
            let bits = |a: &Array2<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&y), bits(&y0), "y, d = {d}");
            assert_eq!(bits(&c.xhat), bits(&c0.xhat), "xhat, d = {d}");
            assert_eq!(c.inv_std, c0.inv_std);
            let (mut gr, mut gr0) = (ln.zeros_like(), ln.zeros_like());
            gr.gamma.fill(0.25);
            gr0.gamma.fill(0.25);
            let (gx, gx0) = (
                ln.backward(&c, &g, &mut gr),
                ln.backward_arrays(&c0, &g, &mut gr0),
            );
            assert_eq!(bits(&gx), bits(&gx0), "dx, d = {d}");
            assert_eq!((gr.gamma, gr.beta), (gr0.gamma, gr0.beta), "d = {d}");
        }
    }

    #[test]
    fn layer_norm_rows_have_zero_mean_unit_variance() {
        let x = randn2(4, 16, &mut rng());
        let (y, _) = LayerNormGrad::new(16).forward(&x);
        for row in y.rows() {
            assert!(row.mean().unwrap().abs() < 1e-12);
            let var = row.mapv(|v| v * v).mean().unwrap();
            assert!((var - 1.0).abs() < 1e-3, "{var}");
        }
    }

    #[test]
    fn feed_forward_gradients() {
        let mut rng = rng();
        let mut ff = FeedForwardGrad::new(4, 6, &mut rng);
        ff.l1.b = crate::init::randn1(6, &mut rng) * 0.5;
        let x = randn2(5, 4, &mut rng);
        let r = randn2(5, 4, &mut rng);
        let (_, cache) = ff.forward(&x);
        let mut grads = ff.zeros_like();
        let gx = ff.backward(&cache, &r, &mut grads);
        check_params(&ff, &grads, |f| probe_loss(&f.forward(&x).0, &r));
        check_input(&x, &gx, |x| probe_loss(&ff.forward(x).0, &r));
    }

    fn attention_case(heads: usize, kv_heads: usize, masked: bool) {
        let mut rng = rng();
        let mut attn = AttentionGrad::new(8, heads, kv_heads, &mut rng);
        for l in [&mut attn.w_q, &mut attn.w_k, &mut attn.w_v, &mut attn.w_o] {
            l.b = crate::init::randn1(l.b.len(), &mut rng) * 0.3;
        }
        let (batch, m, n) = (2, 3, if masked { 3 } else { 4 });
        let xq = randn2(batch * m, 8, &mut rng);
        let xkv = randn2(batch * n, 8, &mut rng);
        let mask = masked.then(|| causal_mask(3));
        let r = randn2(batch * m, 8, &mut rng);
        let (_, cache) = attn.forward(&xq, &xkv, batch, mask.as_ref());
        let mut grads = attn.zeros_like();
        let (gxq, gxkv) = attn.backward(&cache, &r, &mut grads);
        let f = |a: &AttentionGrad, xq: &Array2<f64>, xkv: &Array2<f64>| {
            probe_loss(&a.forward(xq, xkv, batch, mask.as_ref()).0, &r)
        };
        check_params(&attn, &grads, |a| f(a, &xq, &xkv));
        check_input(&xq, &gxq, |x| f(&attn, x, &xkv));
        check_input(&xkv, &gxkv, |x| f(&attn, &xq, x));
    }

    #[test]
    fn cross_attention_gradients() {
        attention_case(2, 2, false);
    }

    #[test]
    fn masked_attention_gradients() {
        attention_case(4, 4, true);
    }

    #[test]
    fn grouped_query_attention_gradients() {
        attention_case(4, 2, false);
        attention_case(4, 1, true);
    }

    #[test]
    fn grouped_heads_share_keys_and_values() {
        let attn = AttentionGrad::new(8, 4, 1, &mut rng());
        assert_eq!(attn.w_k.w.dim(), (8, 2));
        let x = randn2(3, 8, &mut rng());
        let (_, cache) = attn.forward(&x, &x, 1, None);
        // Same keys for every head, different queries: different weights.
        assert_ne!(cache.weights(0, 0), cache.weights(0, 1));
        assert_eq!(attn.param_count(), 2 * (8 * 8 + 8) + 2 * (8 * 2 + 2));
    }

    #[test]
    fn bad_head_counts_are_errors() {
        assert!(AttentionGrad::try_new(8, 3, 3, &mut rng()).is_err());
        assert!(AttentionGrad::try_new(8, 4, 3, &mut rng()).is_err());
        assert!(AttentionGrad::try_new(8, 4, 0, &mut rng()).is_err());
    }

    #[test]
    fn cross_entropy_gradient() {
        let mut rng = rng();
        let logits = randn2(4, 5, &mut rng);
        let targets = [0, 4, 2, 2];
        let (_, g) = softmax_cross_entropy(&logits, &targets);
        check_input(&logits, &g, |l| softmax_cross_entropy(l, &targets).0);
    }

    /// Central differences through one attention layer with positions: the inputs, the
    /// projections and (for the relative bias) the table.
    #[test]
    fn attention_with_positions_matches_finite_differences() {
        for kind in [
            Positions::Rotary,
            Positions::Alibi,
            Positions::Relative { clip: 1 },
        ] {
            for masked in [false, true] {
                let mut rng = StdRng::seed_from_u64(7);
                let attn = AttentionGrad::new(8, 2, 2, &mut rng);
                let mut pos = PositionEncoding::with_heads(kind, 8, 8, 2, &mut rng);
                if let Positions::Relative { .. } = kind {
                    pos.table = randn2(2, 3, &mut rng);
                }
                let (batch, n) = (2, 4);
                let x = randn2(batch * n, 8, &mut rng);
                let r = randn2(batch * n, 8, &mut rng);
                let mask = masked.then(|| causal_mask(n));
                let loss = |a: &AttentionGrad, p: &PositionEncoding, x: &Array2<f64>| {
                    let y = a
                        .forward_with_positions(x, x, batch, mask.as_ref(), Some(p))
                        .0;
                    (&y * &r).sum()
                };
                let (_, cache) =
                    attn.forward_with_positions(&x, &x, batch, mask.as_ref(), Some(&pos));
                let (mut g, mut gp) = (attn.zeros_like(), pos.zeros_like());
                let (gq, gkv) =
                    attn.backward_with_positions(&cache, &r, &mut g, Some((&pos, &mut gp)));
                check_params(&attn, &g, |a| loss(a, &pos, &x));
                check_input(&x, &(gq + gkv), |x| loss(&attn, &pos, x));
                if let Positions::Relative { .. } = kind {
                    check_params(&pos, &gp, |p| loss(&attn, p, &x));
                }
            }
        }
    }
}
