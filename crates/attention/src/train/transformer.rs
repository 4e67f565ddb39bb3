//! The whole encoder-decoder Transformer of Vaswani et al. (2017), trainable end to end: `N`
//! encoder layers and `N` decoder layers, token embeddings scaled by `sqrt(d_model)`, the
//! encoder's output fed to the cross-attention of every decoder layer, and an output
//! projection that reuses the embedding matrix (weight tying, the paper's section 3.4).
//!
//! The layers are post-LN (`x <- LayerNorm(x + Sublayer(x))`, the paper) or pre-LN
//! (`x <- x + Sublayer(LayerNorm(x))`, with one more layer norm at the end of each stack),
//! as [`Norm`] says. Each layer is made of the trainable parts of [`nn`](super::nn), the
//! ones [`TinyTransformer`](super::model::TinyTransformer) uses: with one layer per side,
//! post-LN, unscaled embeddings and a separate output layer, [`Transformer`] computes what
//! `TinyTransformer` computes, bit for bit (a test holds the two together). Every layer also
//! converts to the forward-only layer of [`block`](crate::block) that chapter 7 walks through
//! ([`EncoderBlock::to_layer`], [`DecoderBlock::to_layer`]), which gives the same outputs up
//! to rounding (a test holds those together too).

use ndarray::{Array2, ArrayViewD, ArrayViewMutD, s};
use rand::Rng;

use crate::block::{DecoderLayer, EncoderLayer, FeedForward, LayerNorm, Norm};
use crate::error::AttentionError;
use crate::mask::causal_mask;
use crate::matmul::{dot, dot_into};
use crate::multihead::MultiHead;

use super::nn::{
    AttentionCache, AttentionGrad, Embedding, FeedForwardCache, FeedForwardGrad, LayerNormCache,
    LayerNormGrad, Linear, softmax_cross_entropy,
};
use super::params::Params;
use super::positions::{PositionEncoding, Positions};

/// Sizes and design choices of a [`Transformer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransformerConfig {
    /// Number of symbols (the start token comes on top).
    pub vocab: usize,
    /// Width of every position's vector.
    pub d_model: usize,
    /// Heads per attention sublayer.
    pub heads: usize,
    /// Hidden width of the feed-forward networks.
    pub d_ff: usize,
    /// Layers per stack: `N` encoder layers and `N` decoder layers.
    pub layers: usize,
    /// Longest sequence, source or target.
    pub max_len: usize,
    /// How positions enter the model.
    pub positions: Positions,
    /// Where the layer normalisations sit.
    pub norm: Norm,
    /// Multiply the embeddings by `sqrt(d_model)` (the paper, section 3.4); the table then
    /// starts with entries of variance `1 / d_model`, so a scaled embedding has entries of
    /// variance 1. Without it the table starts standard normal and is added as it is.
    pub scale_embeddings: bool,
    /// Compute the logits with the embedding matrix (`logits = H E^T` over the symbols'
    /// rows), instead of a separate linear layer with a bias.
    pub tie_output: bool,
}

impl TransformerConfig {
    /// The paper's design at the given sizes: sinusoidal positions, scaled embeddings, tied
    /// output projection.
    pub fn vaswani(
        vocab: usize,
        d_model: usize,
        heads: usize,
        d_ff: usize,
        layers: usize,
        max_len: usize,
        norm: Norm,
    ) -> Self {
        Self {
            vocab,
            d_model,
            heads,
            d_ff,
            layers,
            max_len,
            positions: Positions::Sinusoidal,
            norm,
            scale_embeddings: true,
            tie_output: true,
        }
    }
}

/// One encoder layer: self-attention and the feed-forward network, each in a residual
/// connection with a layer norm.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderBlock {
    /// Self-attention.
    pub attn: AttentionGrad,
    /// Layer norm of the self-attention sublayer.
    pub ln1: LayerNormGrad,
    /// Feed-forward network.
    pub ff: FeedForwardGrad,
    /// Layer norm of the feed-forward sublayer.
    pub ln2: LayerNormGrad,
}

/// One decoder layer: causal self-attention, cross-attention to the encoder's output and the
/// feed-forward network, each in a residual connection with a layer norm.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderBlock {
    /// Causal self-attention.
    pub self_attn: AttentionGrad,
    /// Layer norm of the self-attention sublayer.
    pub ln1: LayerNormGrad,
    /// Cross-attention: queries from the decoder, keys and values from the memory.
    pub cross_attn: AttentionGrad,
    /// Layer norm of the cross-attention sublayer.
    pub ln2: LayerNormGrad,
    /// Feed-forward network.
    pub ff: FeedForwardGrad,
    /// Layer norm of the feed-forward sublayer.
    pub ln3: LayerNormGrad,
}

/// `N` encoder and `N` decoder layers with embeddings, positions and the output projection
/// (see the module docs).
///
/// ```
/// use attention::{Norm, Params, Transformer, TransformerConfig};
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let config = TransformerConfig::vaswani(6, 8, 2, 16, 3, 5, Norm::Pre);
/// let model = Transformer::new(config, &mut StdRng::seed_from_u64(0));
/// assert_eq!((model.encoder.len(), model.decoder.len()), (3, 3));
/// let (loss, grads) = model.loss_and_grads(&[vec![1, 2, 3]], &[vec![3, 2, 1]]);
/// assert!(loss > 0.0 && grads.param_count() == model.param_count());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Transformer {
    config: TransformerConfig,
    /// Token embeddings, `(vocab + 1) x d_model`, shared by source, target and (when tied)
    /// the output projection.
    pub embed: Embedding,
    /// Position vectors.
    pub positions: PositionEncoding,
    /// The encoder's layers, bottom up.
    pub encoder: Vec<EncoderBlock>,
    /// The decoder's layers, bottom up.
    pub decoder: Vec<DecoderBlock>,
    /// Pre-LN only: the layer norm after the last encoder layer.
    pub enc_norm: Option<LayerNormGrad>,
    /// Pre-LN only: the layer norm after the last decoder layer.
    pub dec_norm: Option<LayerNormGrad>,
    /// Untied only: the output layer, `d_model x vocab`.
    pub out: Option<Linear>,
}

/// A residual sublayer's cache: the layer norm's and, for pre-LN, nothing else (the
/// sublayer keeps its own cache).
struct Residual {
    ln: LayerNormCache,
}

struct EncoderCache {
    attn: AttentionCache,
    r1: Residual,
    ff: FeedForwardCache,
    r2: Residual,
}

struct DecoderCache {
    attn: AttentionCache,
    r1: Residual,
    cross: AttentionCache,
    r2: Residual,
    ff: FeedForwardCache,
    r3: Residual,
}

struct Forward {
    logits: Array2<f64>,
    targets: Vec<usize>,
    src_ids: Vec<usize>,
    tgt_ids: Vec<usize>,
    src_len: usize,
    tgt_len: usize,
    enc: Vec<EncoderCache>,
    enc_norm: Option<LayerNormCache>,
    dec: Vec<DecoderCache>,
    dec_norm: Option<LayerNormCache>,
    top: Array2<f64>,
}

/// `x + f(x)` normalised after (post-LN) or `x + f(LayerNorm(x))` (pre-LN).
fn residual_forward(
    norm: Norm,
    ln: &LayerNormGrad,
    x: Array2<f64>,
    f: impl FnOnce(&Array2<f64>) -> Array2<f64>,
) -> (Array2<f64>, Residual) {
    match norm {
        Norm::Post => {
            let a = f(&x);
            let (y, ln) = ln.forward(&(x + a));
            (y, Residual { ln })
        }
        Norm::Pre => {
            let (u, ln) = ln.forward(&x);
            (x + f(&u), Residual { ln })
        }
    }
}

/// Backward of [`residual_forward`]: `f_back` takes `dL/d f(.)` and returns `dL/d(input of
/// f)`; the result is `dL/dx`.
fn residual_backward(
    norm: Norm,
    ln: &LayerNormGrad,
    cache: &Residual,
    g_y: &Array2<f64>,
    g_ln: &mut LayerNormGrad,
    f_back: impl FnOnce(&Array2<f64>) -> Array2<f64>,
) -> Array2<f64> {
    match norm {
        Norm::Post => {
            let g_s = ln.backward(&cache.ln, g_y, g_ln);
            f_back(&g_s) + &g_s
        }
        Norm::Pre => {
            let g_u = f_back(g_y);
            ln.backward(&cache.ln, &g_u, g_ln) + g_y
        }
    }
}

fn to_layer_norm(ln: &LayerNormGrad) -> LayerNorm {
    LayerNorm {
        gamma: ln.gamma.clone(),
        beta: ln.beta.clone(),
        eps: 1e-5,
    }
}

fn to_multi_head(a: &AttentionGrad) -> Result<MultiHead, AttentionError> {
    if a.kv_heads() != a.heads() {
        return Err(AttentionError::InvalidConfig(format!(
            "{} key/value heads for {} query heads: chapter 7's MultiHead has one per query head",
            a.kv_heads(),
            a.heads()
        )));
    }
    let biased = [&a.w_q, &a.w_k, &a.w_v, &a.w_o]
        .iter()
        .any(|l| l.b.iter().any(|&b| b != 0.0));
    if biased {
        return Err(AttentionError::InvalidConfig(
            "the attention projections have non-zero biases, which MultiHead does not hold".into(),
        ));
    }
    Ok(MultiHead {
        w_q: a.w_q.w.clone(),
        w_k: a.w_k.w.clone(),
        w_v: a.w_v.w.clone(),
        w_o: a.w_o.w.clone(),
        n_heads: a.heads(),
    })
}

fn to_feed_forward(f: &FeedForwardGrad) -> FeedForward {
    FeedForward {
        w1: f.l1.w.clone(),
        b1: f.l1.b.clone(),
        w2: f.l2.w.clone(),
        b2: f.l2.b.clone(),
    }
}

impl EncoderBlock {
    fn new<R: Rng + ?Sized>(c: &TransformerConfig, rng: &mut R) -> Result<Self, AttentionError> {
        Ok(Self {
            attn: AttentionGrad::try_new(c.d_model, c.heads, c.heads, rng)?,
            ln1: LayerNormGrad::new(c.d_model),
            ff: FeedForwardGrad::new(c.d_model, c.d_ff, rng),
            ln2: LayerNormGrad::new(c.d_model),
        })
    }

    /// The same layer as chapter 7's forward-only [`EncoderLayer`], with `norm` placing its
    /// layer norms.
    ///
    /// # Errors
    ///
    /// [`AttentionError::InvalidConfig`] if an attention projection has a non-zero bias
    /// (`MultiHead` has none).
    pub fn to_layer(&self, norm: Norm) -> Result<EncoderLayer, AttentionError> {
        Ok(EncoderLayer {
            self_attn: to_multi_head(&self.attn)?,
            ffn: to_feed_forward(&self.ff),
            norm1: to_layer_norm(&self.ln1),
            norm2: to_layer_norm(&self.ln2),
            norm,
        })
    }

    fn forward(
        &self,
        norm: Norm,
        x: Array2<f64>,
        batch: usize,
        pos: &PositionEncoding,
    ) -> (Array2<f64>, EncoderCache) {
        let mut attn = None;
        let (h, r1) = residual_forward(norm, &self.ln1, x, |u| {
            let (a, c) = self
                .attn
                .forward_with_positions(u, u, batch, None, Some(pos));
            attn = Some(c);
            a
        });
        let mut ff = None;
        let (y, r2) = residual_forward(norm, &self.ln2, h, |u| {
            let (f, c) = self.ff.forward(u);
            ff = Some(c);
            f
        });
        let cache = EncoderCache {
            attn: attn.expect("ran"),
            r1,
            ff: ff.expect("ran"),
            r2,
        };
        (y, cache)
    }

    fn backward(
        &self,
        norm: Norm,
        cache: &EncoderCache,
        g_y: &Array2<f64>,
        g: &mut Self,
        pos: (&PositionEncoding, &mut PositionEncoding),
    ) -> Array2<f64> {
        let g_h = residual_backward(norm, &self.ln2, &cache.r2, g_y, &mut g.ln2, |g_f| {
            self.ff.backward(&cache.ff, g_f, &mut g.ff)
        });
        residual_backward(norm, &self.ln1, &cache.r1, &g_h, &mut g.ln1, |g_a| {
            let (g_q, g_kv) =
                self.attn
                    .backward_with_positions(&cache.attn, g_a, &mut g.attn, Some(pos));
            g_q + g_kv
        })
    }
}

impl DecoderBlock {
    fn new<R: Rng + ?Sized>(c: &TransformerConfig, rng: &mut R) -> Result<Self, AttentionError> {
        Ok(Self {
            self_attn: AttentionGrad::try_new(c.d_model, c.heads, c.heads, rng)?,
            ln1: LayerNormGrad::new(c.d_model),
            cross_attn: AttentionGrad::try_new(c.d_model, c.heads, c.heads, rng)?,
            ln2: LayerNormGrad::new(c.d_model),
            ff: FeedForwardGrad::new(c.d_model, c.d_ff, rng),
            ln3: LayerNormGrad::new(c.d_model),
        })
    }

    /// The same layer as chapter 7's forward-only [`DecoderLayer`], with `norm` placing its
    /// layer norms.
    ///
    /// # Errors
    ///
    /// As [`EncoderBlock::to_layer`].
    pub fn to_layer(&self, norm: Norm) -> Result<DecoderLayer, AttentionError> {
        Ok(DecoderLayer {
            self_attn: to_multi_head(&self.self_attn)?,
            cross_attn: to_multi_head(&self.cross_attn)?,
            ffn: to_feed_forward(&self.ff),
            norm1: to_layer_norm(&self.ln1),
            norm2: to_layer_norm(&self.ln2),
            norm3: to_layer_norm(&self.ln3),
            norm,
        })
    }

    fn forward(
        &self,
        norm: Norm,
        y: Array2<f64>,
        memory: &Array2<f64>,
        batch: usize,
        pos: &PositionEncoding,
    ) -> (Array2<f64>, DecoderCache) {
        let len = y.nrows() / batch;
        let mut attn = None;
        let (h1, r1) = residual_forward(norm, &self.ln1, y, |u| {
            let mask = causal_mask(len);
            let (a, c) = self
                .self_attn
                .forward_with_positions(u, u, batch, Some(&mask), Some(pos));
            attn = Some(c);
            a
        });
        let mut cross = None;
        let (h2, r2) = residual_forward(norm, &self.ln2, h1, |u| {
            let (a, c) = self.cross_attn.forward(u, memory, batch, None);
            cross = Some(c);
            a
        });
        let mut ff = None;
        let (h3, r3) = residual_forward(norm, &self.ln3, h2, |u| {
            let (f, c) = self.ff.forward(u);
            ff = Some(c);
            f
        });
        let cache = DecoderCache {
            attn: attn.expect("ran"),
            r1,
            cross: cross.expect("ran"),
            r2,
            ff: ff.expect("ran"),
            r3,
        };
        (h3, cache)
    }

    /// Returns `(dL/dy, dL/dmemory)`.
    fn backward(
        &self,
        norm: Norm,
        cache: &DecoderCache,
        g_out: &Array2<f64>,
        g: &mut Self,
        pos: (&PositionEncoding, &mut PositionEncoding),
    ) -> (Array2<f64>, Array2<f64>) {
        let g_h2 = residual_backward(norm, &self.ln3, &cache.r3, g_out, &mut g.ln3, |g_f| {
            self.ff.backward(&cache.ff, g_f, &mut g.ff)
        });
        let mut g_memory = None;
        let g_h1 = residual_backward(norm, &self.ln2, &cache.r2, &g_h2, &mut g.ln2, |g_c| {
            let (g_q, g_m) = self
                .cross_attn
                .backward(&cache.cross, g_c, &mut g.cross_attn);
            g_memory = Some(g_m);
            g_q
        });
        let g_y = residual_backward(norm, &self.ln1, &cache.r1, &g_h1, &mut g.ln1, |g_a| {
            let (g_q, g_kv) = self.self_attn.backward_with_positions(
                &cache.attn,
                g_a,
                &mut g.self_attn,
                Some(pos),
            );
            g_q + g_kv
        });
        (g_y, g_memory.expect("ran"))
    }
}

impl Transformer {
    /// Random initialisation: Xavier-uniform projections, layer norms at 1 and 0, embeddings
    /// as [`TransformerConfig::scale_embeddings`] says.
    ///
    /// # Panics
    ///
    /// On invalid sizes; [`Transformer::try_new`] returns an error instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(config: TransformerConfig, rng: &mut R) -> Self {
        match Self::try_new(config, rng) {
            Ok(m) => m,
            Err(e) => panic!("Transformer::new: {e}"),
        }
    }

    /// Like [`Transformer::new`], with invalid sizes (a zero size, heads that do not divide
    /// `d_model`, an odd head width with rotary positions) as an
    /// [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        config: TransformerConfig,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        let c = config;
        if c.vocab == 0 || c.max_len == 0 || c.d_ff == 0 || c.layers == 0 {
            return Err(AttentionError::InvalidConfig(
                "vocab, max_len, d_ff and layers must be positive".into(),
            ));
        }
        if c.positions == Positions::Rotary && c.heads > 0 && (c.d_model / c.heads) % 2 == 1 {
            return Err(AttentionError::InvalidConfig(
                "rotary positions need an even head width".into(),
            ));
        }
        let mut embed = Embedding::new(c.vocab + 1, c.d_model, rng);
        if c.scale_embeddings {
            embed.table /= (c.d_model as f64).sqrt();
        }
        let positions =
            PositionEncoding::with_heads(c.positions, c.max_len, c.d_model, c.heads, rng);
        let encoder = (0..c.layers)
            .map(|_| EncoderBlock::new(&c, rng))
            .collect::<Result<Vec<_>, _>>()?;
        let decoder = (0..c.layers)
            .map(|_| DecoderBlock::new(&c, rng))
            .collect::<Result<Vec<_>, _>>()?;
        let final_norm = || (c.norm == Norm::Pre).then(|| LayerNormGrad::new(c.d_model));
        Ok(Self {
            config,
            embed,
            positions,
            encoder,
            decoder,
            enc_norm: final_norm(),
            dec_norm: final_norm(),
            out: (!c.tie_output).then(|| Linear::new(c.d_model, c.vocab, rng)),
        })
    }

    /// The sizes and design choices.
    pub fn config(&self) -> TransformerConfig {
        self.config
    }

    /// The start token that opens every decoder input.
    pub fn bos(&self) -> usize {
        self.config.vocab
    }

    /// The embedding multiplier: `sqrt(d_model)` or 1.
    fn scale(&self) -> f64 {
        if self.config.scale_embeddings {
            (self.config.d_model as f64).sqrt()
        } else {
            1.0
        }
    }

    /// What the first layer of a stack reads: the (scaled) embeddings of `ids` (sequences of
    /// length `len`, one after the other) plus the position vectors.
    ///
    /// # Panics
    ///
    /// If a symbol is out of range or `len` exceeds `max_len`.
    #[track_caller]
    pub fn embed(&self, ids: &[usize], len: usize) -> Array2<f64> {
        let mut x = self.embed.forward(ids);
        if self.config.scale_embeddings {
            x *= self.scale();
        }
        self.positions.add_to_embeddings(&mut x, len);
        x
    }

    fn logits(&self, h: &Array2<f64>) -> Array2<f64> {
        match &self.out {
            Some(out) => out.forward(h),
            None => dot(h, &self.embed.table.slice(s![..self.config.vocab, ..]).t()),
        }
    }

    fn encode_batch(
        &self,
        ids: &[usize],
        len: usize,
    ) -> (Array2<f64>, Vec<EncoderCache>, Option<LayerNormCache>) {
        let batch = ids.len() / len;
        let mut x = self.embed(ids, len);
        let mut caches = Vec::with_capacity(self.encoder.len());
        for layer in &self.encoder {
            let (y, c) = layer.forward(self.config.norm, x, batch, &self.positions);
            x = y;
            caches.push(c);
        }
        match &self.enc_norm {
            Some(ln) => {
                let (m, c) = ln.forward(&x);
                (m, caches, Some(c))
            }
            None => (x, caches, None),
        }
    }

    fn forward(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> Forward {
        assert!(
            !src.is_empty() && src.len() == tgt.len(),
            "Transformer: one target per source"
        );
        let (n, m) = (src[0].len(), tgt[0].len());
        assert!(
            src.iter().all(|s| s.len() == n) && tgt.iter().all(|t| t.len() == m),
            "Transformer: sequences of a batch share their length"
        );
        let src_ids = src.concat();
        let (memory, enc, enc_norm) = self.encode_batch(&src_ids, n);
        let tgt_ids: Vec<usize> = tgt
            .iter()
            .flat_map(|t| std::iter::once(self.bos()).chain(t[..m - 1].iter().copied()))
            .collect();
        let batch = src.len();
        let mut y = self.embed(&tgt_ids, m);
        let mut dec = Vec::with_capacity(self.decoder.len());
        for layer in &self.decoder {
            let (h, c) = layer.forward(self.config.norm, y, &memory, batch, &self.positions);
            y = h;
            dec.push(c);
        }
        let (top, dec_norm) = match &self.dec_norm {
            Some(ln) => {
                let (t, c) = ln.forward(&y);
                (t, Some(c))
            }
            None => (y, None),
        };
        Forward {
            logits: self.logits(&top),
            targets: tgt.concat(),
            src_ids,
            tgt_ids,
            src_len: n,
            tgt_len: m,
            enc,
            enc_norm,
            dec,
            dec_norm,
            top,
        }
    }

    /// Mean cross-entropy of the target symbols under teacher forcing (nats per symbol): the
    /// decoder reads `[bos, tgt_0, ..., tgt_{m-2}]` and must predict `tgt`.
    ///
    /// # Panics
    ///
    /// If the batch is empty, the sequences of a side differ in length, a length exceeds
    /// `max_len` or a symbol is out of range.
    #[track_caller]
    pub fn loss(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> f64 {
        let f = self.forward(src, tgt);
        softmax_cross_entropy(&f.logits, &f.targets).0
    }

    /// [`Transformer::loss`] and its gradient with respect to every parameter (a model of
    /// zeros plus the gradients, see [`Params`]).
    ///
    /// # Panics
    ///
    /// As [`Transformer::loss`].
    #[track_caller]
    pub fn loss_and_grads(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> (f64, Self) {
        let f = self.forward(src, tgt);
        let (loss, g_logits) = softmax_cross_entropy(&f.logits, &f.targets);
        let norm = self.config.norm;
        let mut g = self.zeros_like();
        let mut g_top = match (&self.out, &mut g.out) {
            (Some(out), Some(g_out)) => out.backward(&f.top, &g_logits, g_out),
            _ => {
                let vocab = self.config.vocab;
                let rows = g.embed.table.slice_mut(s![..vocab, ..]);
                dot_into(g_logits.t(), f.top.view(), rows, true);
                dot(&g_logits, &self.embed.table.slice(s![..vocab, ..]))
            }
        };
        if let (Some(ln), Some(c), Some(g_ln)) = (&self.dec_norm, &f.dec_norm, &mut g.dec_norm) {
            g_top = ln.backward(c, &g_top, g_ln);
        }
        // Decoder, top down; every layer's cross-attention adds to the memory's gradient.
        let mut g_memory: Option<Array2<f64>> = None;
        for (l, (layer, cache)) in self.decoder.iter().zip(&f.dec).enumerate().rev() {
            let pos = (&self.positions, &mut g.positions);
            let (g_y, g_m) = layer.backward(norm, cache, &g_top, &mut g.decoder[l], pos);
            g_top = g_y;
            g_memory = Some(match g_memory {
                Some(acc) => acc + g_m,
                None => g_m,
            });
        }
        self.embed_backward(&f.tgt_ids, f.tgt_len, g_top, &mut g);
        let mut g_x = g_memory.expect("at least one decoder layer");
        if let (Some(ln), Some(c), Some(g_ln)) = (&self.enc_norm, &f.enc_norm, &mut g.enc_norm) {
            g_x = ln.backward(c, &g_x, g_ln);
        }
        for (l, (layer, cache)) in self.encoder.iter().zip(&f.enc).enumerate().rev() {
            let pos = (&self.positions, &mut g.positions);
            g_x = layer.backward(norm, cache, &g_x, &mut g.encoder[l], pos);
        }
        self.embed_backward(&f.src_ids, f.src_len, g_x, &mut g);
        (loss, g)
    }

    fn embed_backward(&self, ids: &[usize], len: usize, g_x: Array2<f64>, g: &mut Self) {
        self.positions.backward(&g_x, len, &mut g.positions);
        let g_e = if self.config.scale_embeddings {
            g_x * self.scale()
        } else {
            g_x
        };
        self.embed.backward(ids, &g_e, &mut g.embed);
    }

    /// The encoder's output (the memory every decoder layer reads) for one source
    /// sequence, `n x d_model`.
    ///
    /// # Panics
    ///
    /// If `src` is empty or longer than `max_len`, or a symbol is out of range.
    #[track_caller]
    pub fn encode(&self, src: &[usize]) -> Array2<f64> {
        self.encode_batch(src, src.len()).0
    }

    /// The logits of every position (`prefix.len() x vocab`) of the decoder run on `prefix`
    /// (starting with [`Transformer::bos`]) against `memory`.
    ///
    /// # Panics
    ///
    /// If `prefix` is empty or longer than `max_len`.
    #[track_caller]
    pub fn decode(&self, memory: &Array2<f64>, prefix: &[usize]) -> Array2<f64> {
        let mut y = self.embed(prefix, prefix.len());
        for layer in &self.decoder {
            y = layer
                .forward(self.config.norm, y, memory, 1, &self.positions)
                .0;
        }
        if let Some(ln) = &self.dec_norm {
            y = ln.forward(&y).0;
        }
        self.logits(&y)
    }

    /// Greedy decoding of `len` symbols, each step rerunning the decoder on the prefix.
    ///
    /// # Panics
    ///
    /// If `src` is empty, `len == 0`, either exceeds `max_len`, or a symbol is out of range.
    #[track_caller]
    pub fn greedy_decode(&self, src: &[usize], len: usize) -> Vec<usize> {
        assert!(len > 0, "Transformer::greedy_decode: len must be positive");
        let memory = self.encode(src);
        let mut prefix = vec![self.bos()];
        while prefix.len() <= len {
            let logits = self.decode(&memory, &prefix);
            let last = logits.row(prefix.len() - 1);
            prefix.push(crate::metrics::argmax(&last).expect("logits are finite"));
        }
        prefix[1..].to_vec()
    }
}

impl Params for EncoderBlock {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        let mut p = self.attn.params();
        p.extend(self.ln1.params());
        p.extend(self.ff.params());
        p.extend(self.ln2.params());
        p
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        let mut p = self.attn.params_mut();
        p.extend(self.ln1.params_mut());
        p.extend(self.ff.params_mut());
        p.extend(self.ln2.params_mut());
        p
    }
    fn zeros_like(&self) -> Self {
        Self {
            attn: self.attn.zeros_like(),
            ln1: self.ln1.zeros_like(),
            ff: self.ff.zeros_like(),
            ln2: self.ln2.zeros_like(),
        }
    }
}

impl Params for DecoderBlock {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        let mut p = self.self_attn.params();
        p.extend(self.ln1.params());
        p.extend(self.cross_attn.params());
        p.extend(self.ln2.params());
        p.extend(self.ff.params());
        p.extend(self.ln3.params());
        p
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        let mut p = self.self_attn.params_mut();
        p.extend(self.ln1.params_mut());
        p.extend(self.cross_attn.params_mut());
        p.extend(self.ln2.params_mut());
        p.extend(self.ff.params_mut());
        p.extend(self.ln3.params_mut());
        p
    }
    fn zeros_like(&self) -> Self {
        Self {
            self_attn: self.self_attn.zeros_like(),
            ln1: self.ln1.zeros_like(),
            cross_attn: self.cross_attn.zeros_like(),
            ln2: self.ln2.zeros_like(),
            ff: self.ff.zeros_like(),
            ln3: self.ln3.zeros_like(),
        }
    }
}

/// The order of [`TinyTransformer`](super::model::TinyTransformer)'s parameters for one
/// layer per side: embeddings, positions, the encoder, the decoder, then (pre-LN) the two
/// final layer norms and (untied) the output layer.
impl Params for Transformer {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        let mut p = self.embed.params();
        p.extend(self.positions.params());
        self.encoder.iter().for_each(|l| p.extend(l.params()));
        self.decoder.iter().for_each(|l| p.extend(l.params()));
        for ln in self.enc_norm.iter().chain(&self.dec_norm) {
            p.extend(ln.params());
        }
        self.out.iter().for_each(|o| p.extend(o.params()));
        p
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        let mut p = self.embed.params_mut();
        p.extend(self.positions.params_mut());
        self.encoder
            .iter_mut()
            .for_each(|l| p.extend(l.params_mut()));
        self.decoder
            .iter_mut()
            .for_each(|l| p.extend(l.params_mut()));
        for ln in self.enc_norm.iter_mut().chain(self.dec_norm.iter_mut()) {
            p.extend(ln.params_mut());
        }
        self.out.iter_mut().for_each(|o| p.extend(o.params_mut()));
        p
    }
    fn zeros_like(&self) -> Self {
        Self {
            config: self.config,
            embed: self.embed.zeros_like(),
            positions: self.positions.zeros_like(),
            encoder: self.encoder.iter().map(Params::zeros_like).collect(),
            decoder: self.decoder.iter().map(Params::zeros_like).collect(),
            enc_norm: self.enc_norm.as_ref().map(Params::zeros_like),
            dec_norm: self.dec_norm.as_ref().map(Params::zeros_like),
            out: self.out.as_ref().map(Params::zeros_like),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::train::gradcheck::check_params;
    use crate::train::model::{ModelConfig, TinyTransformer};

    fn noisy(mut model: Transformer, seed: u64) -> Transformer {
        // Layer norms and biases away from 1 and 0, so their gradients are checked there.
        let mut rng = StdRng::seed_from_u64(seed);
        for mut p in model.params_mut() {
            if p.iter().all(|&v| v == 0.0 || v == 1.0) {
                let noise = crate::init::randn1(p.len(), &mut rng) * 0.3;
                p.iter_mut().zip(noise).for_each(|(v, n)| *v += n);
            }
        }
        model
    }

    fn config(norm: Norm, layers: usize) -> TransformerConfig {
        TransformerConfig::vaswani(4, 8, 2, 6, layers, 4, norm)
    }

    #[test]
    fn gradients_of_stacked_models_match_finite_differences() {
        let src = vec![vec![0, 1, 3], vec![2, 2, 1]];
        let tgt = vec![vec![3, 1, 0, 2], vec![1, 2, 2, 0]];
        let variants = [
            config(Norm::Post, 2),
            config(Norm::Pre, 3),
            TransformerConfig {
                tie_output: false,
                scale_embeddings: false,
                positions: Positions::Learned,
                ..config(Norm::Pre, 2)
            },
            TransformerConfig {
                positions: Positions::Rotary,
                ..config(Norm::Post, 2)
            },
        ];
        for (i, c) in variants.into_iter().enumerate() {
            let model = noisy(Transformer::new(c, &mut StdRng::seed_from_u64(i as u64)), 9);
            let (loss, grads) = model.loss_and_grads(&src, &tgt);
            assert_eq!(loss, model.loss(&src, &tgt));
            check_params(&model, &grads, |m| m.loss(&src, &tgt));
        }
    }

    #[test]
    fn one_post_ln_layer_unscaled_and_untied_is_the_tiny_transformer_bit_for_bit() {
        let tiny_config = ModelConfig {
            vocab: 5,
            d_model: 8,
            heads: 2,
            kv_heads: 2,
            d_ff: 6,
            max_len: 4,
            positions: Positions::Sinusoidal,
        };
        let mut tiny = TinyTransformer::new(tiny_config, &mut StdRng::seed_from_u64(1));
        for mut p in tiny.params_mut() {
            if p.iter().all(|&v| v == 0.0 || v == 1.0) {
                let noise = crate::init::randn1(p.len(), &mut StdRng::seed_from_u64(2)) * 0.3;
                p.iter_mut().zip(noise).for_each(|(v, n)| *v += n);
            }
        }
        let config = TransformerConfig {
            vocab: 5,
            d_model: 8,
            heads: 2,
            d_ff: 6,
            layers: 1,
            max_len: 4,
            positions: Positions::Sinusoidal,
            norm: Norm::Post,
            scale_embeddings: false,
            tie_output: false,
        };
        let mut model = Transformer::new(config, &mut StdRng::seed_from_u64(3));
        assert_eq!(model.params().len(), tiny.params().len());
        for (mut mine, theirs) in model.params_mut().into_iter().zip(tiny.params()) {
            mine.assign(&theirs);
        }
        let src = vec![vec![0, 4, 1], vec![2, 3, 1]];
        let tgt = vec![vec![1, 4, 0, 2], vec![1, 3, 2, 0]];
        let (loss, grads) = model.loss_and_grads(&src, &tgt);
        let (tiny_loss, tiny_grads) = tiny.loss_and_grads(&src, &tgt);
        assert_eq!(loss.to_bits(), tiny_loss.to_bits());
        for (a, b) in grads.params().iter().zip(tiny_grads.params()) {
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
        assert_eq!(model.encode(&src[0]), tiny.encode(&src[0]));
        // A changed parameter on one side shows: the comparison above can fail.
        model.decoder[0].cross_attn.w_v.w[[0, 0]] += 1e-6;
        assert_ne!(model.loss(&src, &tgt), tiny_loss);
    }

    #[test]
    fn every_layer_is_chapter_7s_layer_up_to_rounding() {
        for norm in [Norm::Post, Norm::Pre] {
            let model = Transformer::new(config(norm, 3), &mut StdRng::seed_from_u64(5));
            let (src, prefix) = ([1, 3, 0, 2], [model.bos(), 2, 1]);
            let mut x = model.embed(&src, src.len());
            for block in &model.encoder {
                x = block.to_layer(norm).unwrap().forward(&x, None);
            }
            if let Some(ln) = &model.enc_norm {
                x = to_layer_norm(ln).forward(&x);
            }
            let memory = model.encode(&src);
            assert!((&x - &memory).iter().all(|d| d.abs() < 1e-12));
            let mut y = model.embed(&prefix, prefix.len());
            for block in &model.decoder {
                y = block.to_layer(norm).unwrap().forward(&y, &x, None).output;
            }
            if let Some(ln) = &model.dec_norm {
                y = to_layer_norm(ln).forward(&y);
            }
            let logits = y.dot(&model.embed.table.slice(s![..4, ..]).t());
            let diff = (&logits - &model.decode(&memory, &prefix))
                .iter()
                .fold(0.0_f64, |m, d| m.max(d.abs()));
            assert!(diff < 1e-12, "{norm:?}: {diff}");
        }
    }

    #[test]
    fn a_layer_with_attention_biases_or_shared_heads_does_not_convert() {
        let mut model = Transformer::new(config(Norm::Post, 1), &mut StdRng::seed_from_u64(6));
        assert!(model.encoder[0].to_layer(Norm::Post).is_ok());
        model.encoder[0].attn.w_k.b[1] = 0.5;
        let err = model.encoder[0].to_layer(Norm::Post).unwrap_err();
        assert!(err.to_string().contains("non-zero biases"), "{err}");
        model.decoder[0].cross_attn = AttentionGrad::new(8, 2, 1, &mut StdRng::seed_from_u64(7));
        assert!(model.decoder[0].to_layer(Norm::Post).is_err());
    }

    #[test]
    fn pre_ln_has_final_norms_tied_output_has_no_output_layer() {
        let c = config(Norm::Pre, 2);
        let pre = Transformer::new(c, &mut StdRng::seed_from_u64(8));
        assert!(pre.enc_norm.is_some() && pre.dec_norm.is_some() && pre.out.is_none());
        let post = Transformer::new(
            TransformerConfig {
                norm: Norm::Post,
                tie_output: false,
                ..c
            },
            &mut StdRng::seed_from_u64(8),
        );
        assert!(post.enc_norm.is_none() && post.out.is_some());
        // Parameters: embeddings, 2 x (encoder layer + decoder layer), final norms.
        let (v, d, f) = (5, 8, 6);
        let enc = 4 * (d * d + d) + 2 * d * f + f + d + 4 * d;
        let dec = 8 * (d * d + d) + 2 * d * f + f + d + 6 * d;
        assert_eq!(pre.param_count(), v * d + 2 * (enc + dec) + 4 * d);
        // Scaled embeddings start with variance 1 / d_model: sqrt(d) E has entries near 1.
        let scaled = pre.embed.table.mapv(|e| e * e).mean().unwrap() * d as f64;
        assert!((0.4..2.0).contains(&scaled), "{scaled}");
        assert!(
            Transformer::try_new(
                TransformerConfig { layers: 0, ..c },
                &mut StdRng::seed_from_u64(0)
            )
            .is_err()
        );
    }

    #[test]
    fn greedy_decoding_matches_teacher_forcing_on_its_own_output() {
        let model = noisy(
            Transformer::new(config(Norm::Pre, 2), &mut StdRng::seed_from_u64(10)),
            11,
        );
        let out = model.greedy_decode(&[0, 3, 1], 3);
        let memory = model.encode(&[0, 3, 1]);
        let prefix: Vec<usize> = std::iter::once(model.bos())
            .chain(out[..2].iter().copied())
            .collect();
        let again: Vec<usize> = model
            .decode(&memory, &prefix)
            .rows()
            .into_iter()
            .map(|r| crate::metrics::argmax(&r).unwrap())
            .collect();
        assert_eq!(again, out);
    }
}
