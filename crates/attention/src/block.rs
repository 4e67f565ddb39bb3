//! The Transformer block (Vaswani et al. 2017): layer normalisation (Ba et al. 2016), the
//! position-wise feed-forward network, and the encoder and decoder layers that wrap
//! multi-head attention and the feed-forward network in residual connections.
//!
//! Each layer puts its layer normalisations in one of two places ([`Norm`]):
//!
//! - [`Norm::Post`], as in the original Transformer: `x <- LayerNorm(x + Sublayer(x))`;
//! - [`Norm::Pre`], as in most models since (analysed by Xiong et al. 2020, who did not
//!   introduce it):
//!   `x <- x + Sublayer(LayerNorm(x))`. A pre-LN stack needs one more [`LayerNorm`] after
//!   its last layer; the layers here do not add it.
//!
//! [`count_ops`] measures what a forward pass costs: every matrix product of a layer and
//! every parameter it reads add to a thread-local [`OpCount`] while the closure runs.
//!
//! ```
//! use attention::*;
//! use rand::SeedableRng;
//!
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let layer = EncoderLayer::new(8, 2, 32, Norm::Post, &mut rng);
//! let x = randn2(5, 8, &mut rng);
//! let (y, ops) = count_ops(|| layer.forward(&x, None));
//! assert_eq!(y.dim(), (5, 8));
//! assert_eq!(ops.params, layer.param_count() as u64);
//! assert_eq!(ops.proj_macs, 4 * 5 * 8 * 8); // 4 n d_model^2
//! ```

use std::cell::Cell;
use std::ops::{Add, AddAssign};

use ndarray::{Array1, Array2, ArrayBase, Axis, Data, Ix2};
use rand::Rng;

use crate::attend::try_scaled_dot_product_attention;
use crate::error::{AttentionError, check_len};
use crate::init::xavier_uniform;
use crate::mask::causal_mask;
use crate::multihead::{MultiHead, concat_heads, split_heads};

// ---------------------------------------------------------------------------------------
// Operation counting

/// What a forward pass did, as recorded by [`count_ops`]. A multiply-accumulate (MAC) is one
/// `a * b + c` of a matrix product; an `m x k` by `k x p` product is `m k p` MACs.
/// Element-wise work (layer normalisation, ReLU, residual sums, biases, the `1/sqrt(d_k)`
/// scale) is linear in `n d_model` and not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCount {
    /// MACs of the attention projections: queries, keys, values and output (`X W`).
    pub proj_macs: u64,
    /// MACs of the attention products themselves: scores `Q K^T` and read-out `A V`.
    pub attn_macs: u64,
    /// MACs of the feed-forward network's two products.
    pub ffn_macs: u64,
    /// Attention scores turned into weights by a softmax, one per query-key pair (masked
    /// pairs included, since the score matrix is computed whole).
    pub softmax: u64,
    /// Parameters read: each weight, bias and gain counts once per use, so one forward pass
    /// of a layer counts each of its parameters once.
    pub params: u64,
}

impl OpCount {
    /// All MACs: `proj_macs + attn_macs + ffn_macs`.
    pub fn macs(&self) -> u64 {
        self.proj_macs + self.attn_macs + self.ffn_macs
    }
}

impl AddAssign for OpCount {
    fn add_assign(&mut self, o: Self) {
        self.proj_macs += o.proj_macs;
        self.attn_macs += o.attn_macs;
        self.ffn_macs += o.ffn_macs;
        self.softmax += o.softmax;
        self.params += o.params;
    }
}

impl Add for OpCount {
    type Output = Self;
    fn add(mut self, o: Self) -> Self {
        self += o;
        self
    }
}

thread_local! {
    static COUNTER: Cell<Option<OpCount>> = const { Cell::new(None) };
}

/// Runs `f` and returns its result with the operations the layers of this module performed
/// on this thread meanwhile. Scopes nest: an outer scope also receives the counts of an
/// inner one. Outside any scope nothing is counted (and counting costs nothing).
///
/// ```
/// use attention::*;
/// use rand::SeedableRng;
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
/// let ffn = FeedForward::new(4, 16, &mut rng);
/// let x = randn2(3, 4, &mut rng);
/// let (_, ops) = count_ops(|| ffn.forward(&x));
/// assert_eq!(ops.ffn_macs, 2 * 3 * 4 * 16); // 2 n d_model d_ff
/// assert_eq!(ops.params, (4 * 16 + 16 + 16 * 4 + 4) as u64);
/// ```
pub fn count_ops<R>(f: impl FnOnce() -> R) -> (R, OpCount) {
    struct Restore(Option<OpCount>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let inner = COUNTER.with(|c| c.replace(self.0));
            // Hand the inner counts on to an enclosing scope.
            if let (Some(outer), Some(inner)) = (self.0, inner) {
                COUNTER.with(|c| c.set(Some(outer + inner)));
            }
        }
    }
    let guard = Restore(COUNTER.with(|c| c.replace(Some(OpCount::default()))));
    let out = f();
    let counted = COUNTER.with(|c| c.get()).unwrap_or_default();
    drop(guard);
    (out, counted)
}

fn record(update: impl FnOnce(&mut OpCount)) {
    COUNTER.with(|c| {
        if let Some(mut n) = c.get() {
            update(&mut n);
            c.set(Some(n));
        }
    });
}

#[derive(Clone, Copy)]
enum Kind {
    Proj,
    Ffn,
}

/// `x w` for an activation `x` (`n x k`) and a weight `w` (`k x p`), counted.
fn linear<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix2>, w: &Array2<f64>, kind: Kind) -> Array2<f64> {
    let macs = (x.nrows() * x.ncols() * w.ncols()) as u64;
    record(|c| {
        match kind {
            Kind::Proj => c.proj_macs += macs,
            Kind::Ffn => c.ffn_macs += macs,
        }
        c.params += w.len() as u64;
    });
    x.dot(w)
}

/// Multi-head attention as [`MultiHead::forward`] computes it (the same projections, the
/// same [`try_scaled_dot_product_attention`] per head), with every product counted.
fn attention<S1, S2>(
    mh: &MultiHead,
    x_q: &ArrayBase<S1, Ix2>,
    x_kv: &ArrayBase<S2, Ix2>,
    mask: Option<&Array2<bool>>,
) -> Result<(Array2<f64>, Vec<Array2<f64>>), AttentionError>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    const OP: &str = "multi-head attention";
    if mh.n_heads == 0 || !mh.d_model().is_multiple_of(mh.n_heads) {
        return Err(AttentionError::InvalidConfig(format!(
            "d_model {} is not divisible into {} heads",
            mh.d_model(),
            mh.n_heads
        )));
    }
    check_len(OP, "query width", mh.d_model(), x_q.ncols())?;
    check_len(OP, "key/value width", mh.d_model(), x_kv.ncols())?;
    let q = split_heads(&linear(x_q, &mh.w_q, Kind::Proj), mh.n_heads);
    let k = split_heads(&linear(x_kv, &mh.w_k, Kind::Proj), mh.n_heads);
    let v = split_heads(&linear(x_kv, &mh.w_v, Kind::Proj), mh.n_heads);
    let mut heads = Vec::with_capacity(mh.n_heads);
    let mut weights = Vec::with_capacity(mh.n_heads);
    for ((q_i, k_i), v_i) in q.iter().zip(&k).zip(&v) {
        let (head, w) = try_scaled_dot_product_attention(q_i, k_i, v_i, mask)?;
        let pairs = (q_i.nrows() * k_i.nrows()) as u64;
        record(|c| {
            c.attn_macs += pairs * (q_i.ncols() + v_i.ncols()) as u64;
            c.softmax += pairs;
        });
        heads.push(head);
        weights.push(w);
    }
    Ok((linear(&concat_heads(&heads), &mh.w_o, Kind::Proj), weights))
}

// ---------------------------------------------------------------------------------------
// Layer normalisation and the feed-forward network

/// Layer normalisation (Ba et al. 2016) over each row: `y = gamma * (x - mean) / sqrt(var +
/// eps) + beta`, with the mean and the (biased) variance of the row's `d` entries.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNorm {
    /// Gain, one per column; starts at 1.
    pub gamma: Array1<f64>,
    /// Bias, one per column; starts at 0.
    pub beta: Array1<f64>,
    /// Added to the variance so a constant row does not divide by zero.
    pub eps: f64,
}

impl LayerNorm {
    /// `gamma = 1`, `beta = 0`, `eps = 1e-5` for rows of width `d`.
    ///
    /// ```
    /// use attention::*;
    /// use ndarray::array;
    ///
    /// let y = LayerNorm::new(2).forward(&array![[1.0, 3.0]]);
    /// assert!((y[[0, 0]] + 1.0).abs() < 1e-5 && (y[[0, 1]] - 1.0).abs() < 1e-5);
    /// ```
    pub fn new(d: usize) -> Self {
        Self {
            gamma: Array1::ones(d),
            beta: Array1::zeros(d),
            eps: 1e-5,
        }
    }

    /// Number of parameters: `2 d` (gain and bias).
    pub fn param_count(&self) -> usize {
        self.gamma.len() + self.beta.len()
    }

    /// Normalises every row of `x` (`n x d`).
    ///
    /// # Panics
    ///
    /// If `x` is not `d` wide; [`LayerNorm::try_forward`] returns an error instead.
    #[track_caller]
    pub fn forward<S: Data<Elem = f64>>(&self, x: &ArrayBase<S, Ix2>) -> Array2<f64> {
        match self.try_forward(x) {
            Ok(y) => y,
            Err(e) => panic!("LayerNorm::forward: {e}"),
        }
    }

    /// [`LayerNorm::forward`] with errors instead of panics.
    ///
    /// # Errors
    ///
    /// [`AttentionError::ShapeMismatch`] if `x.ncols()`, `gamma` and `beta` differ.
    pub fn try_forward<S: Data<Elem = f64>>(
        &self,
        x: &ArrayBase<S, Ix2>,
    ) -> Result<Array2<f64>, AttentionError> {
        const OP: &str = "LayerNorm::forward";
        check_len(OP, "beta length", self.gamma.len(), self.beta.len())?;
        check_len(OP, "row width", self.gamma.len(), x.ncols())?;
        record(|c| c.params += self.param_count() as u64);
        let mut y = x.to_owned();
        for mut row in y.rows_mut() {
            let d = row.len() as f64;
            let mean = row.sum() / d;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = g * (*v - mean) * inv + b;
            }
        }
        Ok(y)
    }
}

/// The position-wise feed-forward network `FFN(x) = max(0, x W1 + b1) W2 + b2`, applied to
/// every row (position) alone. `W1` is `d_model x d_ff`, `W2` is `d_ff x d_model`.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedForward {
    /// First weight, `d_model x d_ff`.
    pub w1: Array2<f64>,
    /// First bias, `d_ff`.
    pub b1: Array1<f64>,
    /// Second weight, `d_ff x d_model`.
    pub w2: Array2<f64>,
    /// Second bias, `d_model`.
    pub b2: Array1<f64>,
}

impl FeedForward {
    /// Xavier-uniform weights and zero biases.
    ///
    /// ```
    /// use attention::*;
    /// use rand::SeedableRng;
    ///
    /// let ffn = FeedForward::new(4, 16, &mut rand::rngs::StdRng::seed_from_u64(2));
    /// assert_eq!((ffn.d_model(), ffn.d_ff()), (4, 16));
    /// assert_eq!(ffn.param_count(), 2 * 4 * 16 + 16 + 4);
    /// ```
    pub fn new<R: Rng + ?Sized>(d_model: usize, d_ff: usize, rng: &mut R) -> Self {
        Self {
            w1: xavier_uniform(d_model, d_ff, rng),
            b1: Array1::zeros(d_ff),
            w2: xavier_uniform(d_ff, d_model, rng),
            b2: Array1::zeros(d_model),
        }
    }

    /// Model width `d_model` (rows of `W1`).
    pub fn d_model(&self) -> usize {
        self.w1.nrows()
    }

    /// Hidden width `d_ff` (columns of `W1`).
    pub fn d_ff(&self) -> usize {
        self.w1.ncols()
    }

    /// Number of parameters: `2 d_model d_ff + d_ff + d_model`.
    pub fn param_count(&self) -> usize {
        self.w1.len() + self.b1.len() + self.w2.len() + self.b2.len()
    }

    /// `max(0, x W1 + b1) W2 + b2` for `x` of `n x d_model`.
    ///
    /// # Panics
    ///
    /// On a shape mismatch; [`FeedForward::try_forward`] returns an error instead.
    #[track_caller]
    pub fn forward<S: Data<Elem = f64>>(&self, x: &ArrayBase<S, Ix2>) -> Array2<f64> {
        match self.try_forward(x) {
            Ok(y) => y,
            Err(e) => panic!("FeedForward::forward: {e}"),
        }
    }

    /// [`FeedForward::forward`] with errors instead of panics.
    ///
    /// # Errors
    ///
    /// [`AttentionError::ShapeMismatch`] if `x` is not `d_model` wide or the weights and
    /// biases do not fit together.
    pub fn try_forward<S: Data<Elem = f64>>(
        &self,
        x: &ArrayBase<S, Ix2>,
    ) -> Result<Array2<f64>, AttentionError> {
        const OP: &str = "FeedForward::forward";
        check_len(OP, "input width (d_model)", self.d_model(), x.ncols())?;
        check_len(OP, "b1 length (d_ff)", self.d_ff(), self.b1.len())?;
        check_len(OP, "W2 rows (d_ff)", self.d_ff(), self.w2.nrows())?;
        check_len(OP, "b2 length", self.w2.ncols(), self.b2.len())?;
        record(|c| c.params += (self.b1.len() + self.b2.len()) as u64);
        let hidden = (linear(x, &self.w1, Kind::Ffn) + &self.b1).mapv_into(|v| v.max(0.0));
        Ok(linear(&hidden, &self.w2, Kind::Ffn) + &self.b2)
    }
}

// ---------------------------------------------------------------------------------------
// Encoder and decoder layers

/// Where a layer normalises: after the residual sum (the original Transformer) or before
/// each sublayer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// `x <- LayerNorm(x + Sublayer(x))` (Vaswani et al. 2017).
    Post,
    /// `x <- x + Sublayer(LayerNorm(x))` (analysed by Xiong et al. 2020); the stack ends with
    /// one more [`LayerNorm`].
    Pre,
}

/// One residual sublayer around `f`, normalised as `norm` says.
fn residual<S: Data<Elem = f64>>(
    x: &ArrayBase<S, Ix2>,
    norm: Norm,
    ln: &LayerNorm,
    f: impl FnOnce(&Array2<f64>) -> Result<Array2<f64>, AttentionError>,
) -> Result<Array2<f64>, AttentionError> {
    match norm {
        Norm::Post => ln.try_forward(&(f(&x.to_owned())? + x)),
        Norm::Pre => Ok(f(&ln.try_forward(x)?)? + x),
    }
}

/// An encoder layer: multi-head self-attention, then the feed-forward network, each inside a
/// residual connection with a layer normalisation. Parameters:
/// `4 d_model^2` (attention, no biases) `+ 2 d_model d_ff + d_ff + d_model` (feed-forward)
/// `+ 4 d_model` (two layer normalisations).
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderLayer {
    /// Self-attention.
    pub self_attn: MultiHead,
    /// Position-wise feed-forward network.
    pub ffn: FeedForward,
    /// Layer normalisation of the attention sublayer.
    pub norm1: LayerNorm,
    /// Layer normalisation of the feed-forward sublayer.
    pub norm2: LayerNorm,
    /// Where the layer normalisations sit.
    pub norm: Norm,
}

impl EncoderLayer {
    /// A layer of width `d_model` with `n_heads` heads and feed-forward width `d_ff`:
    /// Xavier-uniform weights, zero biases, unit gains.
    ///
    /// # Panics
    ///
    /// If `n_heads` is 0 or does not divide `d_model`; [`EncoderLayer::try_new`] returns an
    /// error instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(
        d_model: usize,
        n_heads: usize,
        d_ff: usize,
        norm: Norm,
        rng: &mut R,
    ) -> Self {
        match Self::try_new(d_model, n_heads, d_ff, norm, rng) {
            Ok(l) => l,
            Err(e) => panic!("EncoderLayer::new: {e}"),
        }
    }

    /// Like [`EncoderLayer::new`], but an invalid head count is an
    /// [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        d_model: usize,
        n_heads: usize,
        d_ff: usize,
        norm: Norm,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        Ok(Self {
            self_attn: MultiHead::try_new(d_model, n_heads, rng)?,
            ffn: FeedForward::new(d_model, d_ff, rng),
            norm1: LayerNorm::new(d_model),
            norm2: LayerNorm::new(d_model),
            norm,
        })
    }

    /// Number of parameters: `4 d_model^2 + 2 d_model d_ff + d_ff + 5 d_model`.
    pub fn param_count(&self) -> usize {
        self.self_attn.param_count()
            + self.ffn.param_count()
            + self.norm1.param_count()
            + self.norm2.param_count()
    }

    /// The layer's output for `x` (`n x d_model`), same shape. `mask` (`n x n`, `true` = may
    /// attend) restricts self-attention, e.g. to hide padding.
    ///
    /// # Panics
    ///
    /// On a shape mismatch or a fully masked row; see [`EncoderLayer::try_forward`].
    #[track_caller]
    pub fn forward<S: Data<Elem = f64>>(
        &self,
        x: &ArrayBase<S, Ix2>,
        mask: Option<&Array2<bool>>,
    ) -> Array2<f64> {
        self.forward_with_weights(x, mask).0
    }

    /// [`EncoderLayer::forward`] that also returns the self-attention weights, one
    /// `n x n` matrix per head.
    ///
    /// # Panics
    ///
    /// As [`EncoderLayer::forward`].
    #[track_caller]
    pub fn forward_with_weights<S: Data<Elem = f64>>(
        &self,
        x: &ArrayBase<S, Ix2>,
        mask: Option<&Array2<bool>>,
    ) -> (Array2<f64>, Vec<Array2<f64>>) {
        match self.try_forward(x, mask) {
            Ok(out) => out,
            Err(e) => panic!("EncoderLayer::forward: {e}"),
        }
    }

    /// [`EncoderLayer::forward_with_weights`] with errors instead of panics.
    ///
    /// # Errors
    ///
    /// The errors of [`MultiHead::try_forward`], [`LayerNorm::try_forward`] and
    /// [`FeedForward::try_forward`].
    pub fn try_forward<S: Data<Elem = f64>>(
        &self,
        x: &ArrayBase<S, Ix2>,
        mask: Option<&Array2<bool>>,
    ) -> Result<(Array2<f64>, Vec<Array2<f64>>), AttentionError> {
        let mut weights = Vec::new();
        let h = residual(x, self.norm, &self.norm1, |u| {
            let (out, w) = attention(&self.self_attn, u, u, mask)?;
            weights = w;
            Ok(out)
        })?;
        let y = residual(&h, self.norm, &self.norm2, |u| self.ffn.try_forward(u))?;
        Ok((y, weights))
    }
}

/// What [`DecoderLayer::forward`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderOutput {
    /// `n_y x d_model`.
    pub output: Array2<f64>,
    /// Causal self-attention weights, one `n_y x n_y` matrix per head.
    pub self_weights: Vec<Array2<f64>>,
    /// Cross-attention weights over the encoder output, one `n_y x n_x` matrix per head.
    pub cross_weights: Vec<Array2<f64>>,
}

/// A decoder layer: causal multi-head self-attention, cross-attention from the decoder's
/// positions (queries) to the encoder output (keys and values), and the feed-forward network,
/// each inside a residual connection with a layer normalisation. Parameters:
/// `8 d_model^2 + 2 d_model d_ff + d_ff + 7 d_model`.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderLayer {
    /// Causal self-attention over the decoder's positions.
    pub self_attn: MultiHead,
    /// Cross-attention: queries from the decoder, keys and values from the encoder output.
    pub cross_attn: MultiHead,
    /// Position-wise feed-forward network.
    pub ffn: FeedForward,
    /// Layer normalisation of the self-attention sublayer.
    pub norm1: LayerNorm,
    /// Layer normalisation of the cross-attention sublayer.
    pub norm2: LayerNorm,
    /// Layer normalisation of the feed-forward sublayer.
    pub norm3: LayerNorm,
    /// Where the layer normalisations sit.
    pub norm: Norm,
}

impl DecoderLayer {
    /// A layer of width `d_model` with `n_heads` heads in both attentions and feed-forward
    /// width `d_ff`.
    ///
    /// # Panics
    ///
    /// If `n_heads` is 0 or does not divide `d_model`; [`DecoderLayer::try_new`] returns an
    /// error instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(
        d_model: usize,
        n_heads: usize,
        d_ff: usize,
        norm: Norm,
        rng: &mut R,
    ) -> Self {
        match Self::try_new(d_model, n_heads, d_ff, norm, rng) {
            Ok(l) => l,
            Err(e) => panic!("DecoderLayer::new: {e}"),
        }
    }

    /// Like [`DecoderLayer::new`], but an invalid head count is an
    /// [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        d_model: usize,
        n_heads: usize,
        d_ff: usize,
        norm: Norm,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        Ok(Self {
            self_attn: MultiHead::try_new(d_model, n_heads, rng)?,
            cross_attn: MultiHead::try_new(d_model, n_heads, rng)?,
            ffn: FeedForward::new(d_model, d_ff, rng),
            norm1: LayerNorm::new(d_model),
            norm2: LayerNorm::new(d_model),
            norm3: LayerNorm::new(d_model),
            norm,
        })
    }

    /// Number of parameters: `8 d_model^2 + 2 d_model d_ff + d_ff + 7 d_model`.
    pub fn param_count(&self) -> usize {
        self.self_attn.param_count()
            + self.cross_attn.param_count()
            + self.ffn.param_count()
            + self.norm1.param_count()
            + self.norm2.param_count()
            + self.norm3.param_count()
    }

    /// The layer's output for the decoder input `y` (`n_y x d_model`) given the encoder
    /// output `memory` (`n_x x d_model`). Self-attention is causal (position `i` sees
    /// positions `0..=i`); `memory_mask` (`n_y x n_x`, `true` = may attend) restricts
    /// cross-attention, e.g. to hide source padding.
    ///
    /// ```
    /// use attention::*;
    /// use rand::SeedableRng;
    ///
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    /// let layer = DecoderLayer::new(8, 2, 16, Norm::Pre, &mut rng);
    /// let (y, memory) = (randn2(4, 8, &mut rng), randn2(6, 8, &mut rng));
    /// let out = layer.forward(&y, &memory, None);
    /// assert_eq!(out.output.dim(), (4, 8));
    /// assert_eq!(out.cross_weights[0].dim(), (4, 6));
    /// assert_eq!(out.self_weights[1][[0, 3]], 0.0); // causal
    /// ```
    ///
    /// # Panics
    ///
    /// On a shape mismatch or a fully masked row; see [`DecoderLayer::try_forward`].
    #[track_caller]
    pub fn forward<S1, S2>(
        &self,
        y: &ArrayBase<S1, Ix2>,
        memory: &ArrayBase<S2, Ix2>,
        memory_mask: Option<&Array2<bool>>,
    ) -> DecoderOutput
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        match self.try_forward(y, memory, memory_mask) {
            Ok(out) => out,
            Err(e) => panic!("DecoderLayer::forward: {e}"),
        }
    }

    /// [`DecoderLayer::forward`] with errors instead of panics.
    ///
    /// # Errors
    ///
    /// The errors of [`MultiHead::try_forward`], [`LayerNorm::try_forward`] and
    /// [`FeedForward::try_forward`].
    pub fn try_forward<S1, S2>(
        &self,
        y: &ArrayBase<S1, Ix2>,
        memory: &ArrayBase<S2, Ix2>,
        memory_mask: Option<&Array2<bool>>,
    ) -> Result<DecoderOutput, AttentionError>
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        let causal = causal_mask(y.nrows());
        let (mut self_weights, mut cross_weights) = (Vec::new(), Vec::new());
        let h1 = residual(y, self.norm, &self.norm1, |u| {
            let (out, w) = attention(&self.self_attn, u, u, Some(&causal))?;
            self_weights = w;
            Ok(out)
        })?;
        let h2 = residual(&h1, self.norm, &self.norm2, |u| {
            let (out, w) = attention(&self.cross_attn, u, memory, memory_mask)?;
            cross_weights = w;
            Ok(out)
        })?;
        let output = residual(&h2, self.norm, &self.norm3, |u| self.ffn.try_forward(u))?;
        Ok(DecoderOutput {
            output,
            self_weights,
            cross_weights,
        })
    }
}

/// Root mean square of the entries of each row of `x`: `sqrt(sum_j x_ij^2 / d)`, the size
/// of each position's vector on the scale where a [`LayerNorm`] output (with `gamma = 1`,
/// `beta = 0`) is about 1.
///
/// ```
/// use attention::*;
/// use ndarray::array;
///
/// assert_eq!(row_rms(&array![[3.0, 4.0, 0.0, 0.0]])[0], 2.5);
/// ```
pub fn row_rms<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix2>) -> Array1<f64> {
    x.map_axis(Axis(1), |r| {
        (r.iter().map(|v| v * v).sum::<f64>() / r.len() as f64).sqrt()
    })
}

#[cfg(test)]
mod tests {
    use ndarray::{array, s};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;

    fn close(a: &Array2<f64>, b: &Array2<f64>, tol: f64) -> bool {
        a.dim() == b.dim() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < tol)
    }

    #[test]
    fn layer_norm_normalises_rows_then_scales_and_shifts() {
        let x = randn2(4, 6, &mut StdRng::seed_from_u64(1)) * 3.0 + 2.0;
        let mut ln = LayerNorm::new(6);
        let y = ln.forward(&x);
        for r in y.rows() {
            assert!(r.mean().unwrap().abs() < 1e-12);
            let var = r.mapv(|v| v * v).mean().unwrap();
            assert!((var - 1.0).abs() < 1e-4, "{var}");
        }
        ln.gamma.fill(2.0);
        ln.beta.fill(-1.0);
        assert!(close(&ln.forward(&x), &(y * 2.0 - 1.0), 1e-12));
        // A constant row has no spread: the output is beta, not NaN.
        let flat = ln.forward(&array![[5.0, 5.0, 5.0, 5.0, 5.0, 5.0]]);
        assert!(flat.iter().all(|&v| v == -1.0));
        assert!(ln.try_forward(&Array2::<f64>::zeros((2, 5))).is_err());
    }

    #[test]
    fn feed_forward_is_relu_between_two_affine_maps() {
        let ffn = FeedForward {
            w1: array![[1.0, -1.0]],
            b1: array![0.0, 1.0],
            w2: array![[2.0], [3.0]],
            b2: array![0.5],
        };
        // x = 2: hidden = relu([2, -1]) = [2, 0]; out = 4 + 0.5.
        // x = -1: hidden = relu([-1, 2]) = [0, 2]; out = 6 + 0.5.
        assert_eq!(ffn.forward(&array![[2.0], [-1.0]]), array![[4.5], [6.5]]);
        assert!(ffn.try_forward(&array![[1.0, 2.0]]).is_err());
        // Rows are positions, processed independently.
        let big = FeedForward::new(5, 7, &mut StdRng::seed_from_u64(2));
        let x = randn2(3, 5, &mut StdRng::seed_from_u64(3));
        let whole = big.forward(&x);
        let last = big.forward(&x.slice(s![2..3, ..]));
        assert!(close(&whole.slice(s![2..3, ..]).to_owned(), &last, 1e-14));
    }

    #[test]
    fn counted_attention_matches_multihead_forward() {
        let mut rng = StdRng::seed_from_u64(4);
        let mh = MultiHead::new(8, 4, &mut rng);
        let (xq, xkv) = (randn2(3, 8, &mut rng), randn2(5, 8, &mut rng));
        let reference = mh.forward(&xq, &xkv, None);
        let ((out, w), ops) = count_ops(|| attention(&mh, &xq, &xkv, None).unwrap());
        assert!(close(&out, &reference.output, 1e-13));
        assert_eq!(w, reference.weights);
        // Q and O on 3 rows, K and V on 5 rows; scores and read-out 2 * 3 * 5 * 8.
        assert_eq!(ops.proj_macs, (2 * 3 + 2 * 5) * 64);
        assert_eq!(ops.attn_macs, 2 * 3 * 5 * 8);
        assert_eq!(ops.softmax, 4 * 3 * 5);
        assert_eq!(ops.params, 4 * 64);
        let bad = MultiHead {
            n_heads: 3,
            ..mh.clone()
        };
        assert!(attention(&bad, &xq, &xkv, None).is_err());
    }

    #[test]
    fn encoder_counts_match_the_closed_forms() {
        let (n, d, h, d_ff) = (7u64, 12u64, 3usize, 20u64);
        let mut rng = StdRng::seed_from_u64(5);
        for norm in [Norm::Post, Norm::Pre] {
            let layer = EncoderLayer::new(d as usize, h, d_ff as usize, norm, &mut rng);
            let x = randn2(n as usize, d as usize, &mut rng);
            let (y, ops) = count_ops(|| layer.forward(&x, None));
            assert_eq!(y.dim(), (n as usize, d as usize));
            assert_eq!(ops.proj_macs, 4 * n * d * d);
            assert_eq!(ops.attn_macs, 2 * n * n * d);
            assert_eq!(ops.ffn_macs, 2 * n * d * d_ff);
            assert_eq!(ops.softmax, h as u64 * n * n);
            let params = 4 * d * d + 2 * d * d_ff + d_ff + 5 * d;
            assert_eq!((ops.params, layer.param_count() as u64), (params, params));
        }
    }

    #[test]
    fn decoder_counts_match_the_closed_forms() {
        let (ny, nx, d, d_ff) = (5u64, 9u64, 8u64, 16u64);
        let mut rng = StdRng::seed_from_u64(6);
        let layer = DecoderLayer::new(d as usize, 2, d_ff as usize, Norm::Post, &mut rng);
        let y = randn2(ny as usize, d as usize, &mut rng);
        let m = randn2(nx as usize, d as usize, &mut rng);
        let (_, ops) = count_ops(|| layer.forward(&y, &m, None));
        assert_eq!(ops.proj_macs, 4 * ny * d * d + (2 * ny + 2 * nx) * d * d);
        assert_eq!(ops.attn_macs, 2 * ny * ny * d + 2 * ny * nx * d);
        assert_eq!(ops.ffn_macs, 2 * ny * d * d_ff);
        let params = 8 * d * d + 2 * d * d_ff + d_ff + 7 * d;
        assert_eq!((ops.params, layer.param_count() as u64), (params, params));
    }

    #[test]
    fn count_scopes_nest_and_nothing_is_counted_outside() {
        let mut rng = StdRng::seed_from_u64(7);
        let ffn = FeedForward::new(3, 4, &mut rng);
        let x = randn2(2, 3, &mut rng);
        let _ = ffn.forward(&x); // no scope: no effect anywhere
        let ((_, inner), outer) = count_ops(|| {
            let _ = ffn.forward(&x);
            count_ops(|| ffn.forward(&x))
        });
        assert_eq!(inner.ffn_macs, 2 * 2 * 3 * 4);
        assert_eq!(outer, inner + inner);
        // A panic inside a scope does not leave the counter switched on.
        let caught = std::panic::catch_unwind(|| {
            count_ops(|| ffn.forward(&randn2(1, 5, &mut StdRng::seed_from_u64(0))))
        });
        assert!(caught.is_err());
        assert_eq!(COUNTER.with(|c| c.get()), None);
    }

    #[test]
    fn post_ln_output_is_normalised_and_pre_ln_is_a_residual_update() {
        let mut rng = StdRng::seed_from_u64(8);
        let x = randn2(6, 8, &mut rng) * 5.0;
        let post = EncoderLayer::new(8, 2, 16, Norm::Post, &mut rng);
        for r in row_rms(&post.forward(&x, None)) {
            assert!((r - 1.0).abs() < 1e-4);
        }
        // With both sublayers' output weights at zero, a pre-LN layer is the identity.
        let mut pre = EncoderLayer::new(8, 2, 16, Norm::Pre, &mut rng);
        pre.self_attn.w_o.fill(0.0);
        pre.ffn.w2.fill(0.0);
        assert!(close(&pre.forward(&x, None), &x, 1e-14));
        // Post-LN: x + Sublayer(x) normalised, checked by hand.
        let h = post
            .norm1
            .forward(&(&x + &post.self_attn.forward(&x, &x, None).output));
        let by_hand = post.norm2.forward(&(&h + &post.ffn.forward(&h)));
        assert!(close(&post.forward(&x, None), &by_hand, 1e-12));
    }

    #[test]
    fn decoder_is_causal_and_cross_attention_reads_the_memory() {
        let mut rng = StdRng::seed_from_u64(9);
        for norm in [Norm::Post, Norm::Pre] {
            let layer = DecoderLayer::new(8, 2, 16, norm, &mut rng);
            let mut y = randn2(5, 8, &mut rng);
            let memory = randn2(4, 8, &mut rng);
            let before = layer.forward(&y, &memory, None);
            y.row_mut(3).fill(7.0);
            let after = layer.forward(&y, &memory, None);
            let rows = s![0..3, ..];
            assert_eq!(before.output.slice(rows), after.output.slice(rows));
            assert_ne!(before.output.row(3), after.output.row(3));
            // Every row depends on the memory.
            let other = layer.forward(&y, &(&memory * 2.0), None);
            for (a, b) in after.output.rows().into_iter().zip(other.output.rows()) {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn invalid_configurations_and_shapes_are_errors() {
        let mut rng = StdRng::seed_from_u64(10);
        assert!(EncoderLayer::try_new(10, 3, 8, Norm::Pre, &mut rng).is_err());
        assert!(DecoderLayer::try_new(10, 0, 8, Norm::Post, &mut rng).is_err());
        let enc = EncoderLayer::new(4, 2, 8, Norm::Pre, &mut rng);
        let err = enc
            .try_forward(&Array2::<f64>::zeros((3, 5)), None)
            .unwrap_err();
        assert!(err.to_string().contains("shape mismatch"), "{err}");
        let dec = DecoderLayer::new(4, 2, 8, Norm::Post, &mut rng);
        let y = randn2(2, 4, &mut rng);
        assert!(
            dec.try_forward(&y, &Array2::<f64>::zeros((3, 6)), None)
                .is_err()
        );
        let none = Array2::from_elem((2, 3), false);
        assert!(
            dec.try_forward(&y, &randn2(3, 4, &mut rng), Some(&none))
                .is_err()
        );
    }
}
