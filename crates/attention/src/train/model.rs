//! A tiny encoder-decoder Transformer with one layer on each side, trainable end to end with
//! the backward passes of [`nn`](super::nn).
//!
//! Both layers are post-LN, as in Vaswani et al.: each sub-layer is
//! `x = LayerNorm(x + Sublayer(x))`. The encoder has self-attention and a feed-forward network;
//! the decoder has causal self-attention, cross-attention to the encoder's output (the
//! *memory*) and a feed-forward network; a linear layer maps to the vocabulary.
//! Source and target share one embedding table of `vocab + 1` rows: the symbols `0..vocab`
//! and the start token [`TinyTransformer::bos`].

use ndarray::{Array1, Array2, ArrayViewD, ArrayViewMutD, Axis, s};
use rand::Rng;

use crate::error::AttentionError;
use crate::kv_cache::{KvCache, cached_attention_step, cached_attention_step_with_bias};
use crate::mask::causal_mask;
use crate::metrics::argmax;

use super::nn::{
    AttentionCache, AttentionGrad, Embedding, FeedForwardCache, FeedForwardGrad, LayerNormCache,
    LayerNormGrad, Linear, softmax_cross_entropy,
};
use super::params::Params;
use super::positions::{PositionEncoding, Positions};

/// Sizes of a [`TinyTransformer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelConfig {
    /// Number of symbols (the start token comes on top).
    pub vocab: usize,
    /// Width of every position's vector.
    pub d_model: usize,
    /// Query heads per attention layer.
    pub heads: usize,
    /// Key/value heads per attention layer (`heads` for standard multi-head attention).
    pub kv_heads: usize,
    /// Hidden width of the feed-forward networks.
    pub d_ff: usize,
    /// Longest sequence, source or target.
    pub max_len: usize,
    /// How positions enter the model.
    pub positions: Positions,
}

/// One encoder layer and one decoder layer (see the module docs).
///
/// ```
/// use attention::{ModelConfig, Positions, TinyTransformer};
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let config = ModelConfig {
///     vocab: 5, d_model: 8, heads: 2, kv_heads: 2, d_ff: 16, max_len: 4,
///     positions: Positions::Sinusoidal,
/// };
/// let model = TinyTransformer::new(config, &mut StdRng::seed_from_u64(0));
/// let out = model.greedy_decode(&[1, 2, 3], 3);
/// assert_eq!(out.tokens.len(), 3);
/// assert_eq!(out.cross_weights[0].dim(), (3, 3)); // output steps x source positions
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TinyTransformer {
    config: ModelConfig,
    /// Token embeddings, `(vocab + 1) x d_model`, shared by source and target.
    pub embed: Embedding,
    /// Position vectors.
    pub positions: PositionEncoding,
    /// Encoder self-attention.
    pub enc_attn: AttentionGrad,
    /// Encoder layer norm after self-attention.
    pub enc_ln1: LayerNormGrad,
    /// Encoder feed-forward network.
    pub enc_ff: FeedForwardGrad,
    /// Encoder layer norm after the feed-forward network.
    pub enc_ln2: LayerNormGrad,
    /// Decoder causal self-attention.
    pub dec_attn: AttentionGrad,
    /// Decoder layer norm after self-attention.
    pub dec_ln1: LayerNormGrad,
    /// Decoder cross-attention to the memory.
    pub cross_attn: AttentionGrad,
    /// Decoder layer norm after cross-attention.
    pub dec_ln2: LayerNormGrad,
    /// Decoder feed-forward network.
    pub dec_ff: FeedForwardGrad,
    /// Decoder layer norm after the feed-forward network.
    pub dec_ln3: LayerNormGrad,
    /// Output projection to the symbols, `d_model x vocab`.
    pub out: Linear,
}

struct EncoderCache {
    ids: Vec<usize>,
    len: usize,
    attn: AttentionCache,
    ln1: LayerNormCache,
    ff: FeedForwardCache,
    ln2: LayerNormCache,
}

struct DecoderCache {
    ids: Vec<usize>,
    len: usize,
    attn: AttentionCache,
    ln1: LayerNormCache,
    cross: AttentionCache,
    ln2: LayerNormCache,
    ff: FeedForwardCache,
    ln3: LayerNormCache,
    h3: Array2<f64>,
}

/// What [`TinyTransformer::greedy_decode`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The output symbols.
    pub tokens: Vec<usize>,
    /// Cross-attention weights per head, `len x n`: row `t` is the query of the step that
    /// produced `tokens[t]`, column `j` source position `j`.
    pub cross_weights: Vec<Array2<f64>>,
}

impl TinyTransformer {
    /// Random initialisation (Xavier-uniform projections, standard-normal embeddings).
    ///
    /// # Panics
    ///
    /// If the head counts do not fit `d_model` (see [`AttentionGrad::try_new`]);
    /// [`TinyTransformer::try_new`] returns an error instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(config: ModelConfig, rng: &mut R) -> Self {
        match Self::try_new(config, rng) {
            Ok(m) => m,
            Err(e) => panic!("TinyTransformer::new: {e}"),
        }
    }

    /// Like [`TinyTransformer::new`], with invalid sizes as an
    /// [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        config: ModelConfig,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        let ModelConfig {
            vocab,
            d_model: d,
            heads,
            kv_heads,
            d_ff,
            max_len,
            positions,
        } = config;
        if vocab == 0 || max_len == 0 || d_ff == 0 {
            return Err(AttentionError::InvalidConfig(
                "vocab, max_len and d_ff must be positive".into(),
            ));
        }
        if positions == Positions::Rotary && heads > 0 && (d / heads) % 2 == 1 {
            return Err(AttentionError::InvalidConfig(
                "rotary positions need an even head width".into(),
            ));
        }
        let attn = |rng: &mut R| AttentionGrad::try_new(d, heads, kv_heads, rng);
        Ok(Self {
            config,
            embed: Embedding::new(vocab + 1, d, rng),
            positions: PositionEncoding::with_heads(positions, max_len, d, heads, rng),
            enc_attn: attn(rng)?,
            enc_ln1: LayerNormGrad::new(d),
            enc_ff: FeedForwardGrad::new(d, d_ff, rng),
            enc_ln2: LayerNormGrad::new(d),
            dec_attn: attn(rng)?,
            dec_ln1: LayerNormGrad::new(d),
            cross_attn: attn(rng)?,
            dec_ln2: LayerNormGrad::new(d),
            dec_ff: FeedForwardGrad::new(d, d_ff, rng),
            dec_ln3: LayerNormGrad::new(d),
            out: Linear::new(d, vocab, rng),
        })
    }

    /// The sizes.
    pub fn config(&self) -> ModelConfig {
        self.config
    }

    /// The start token that opens every decoder input.
    pub fn bos(&self) -> usize {
        self.config.vocab
    }

    fn embed_with_positions(&self, ids: &[usize], len: usize) -> Array2<f64> {
        let mut x = self.embed.forward(ids);
        self.positions.add_to_embeddings(&mut x, len);
        x
    }

    fn encode_batch(&self, ids: Vec<usize>, len: usize) -> (Array2<f64>, EncoderCache) {
        let batch = ids.len() / len;
        let x = self.embed_with_positions(&ids, len);
        let (a, attn) =
            self.enc_attn
                .forward_with_positions(&x, &x, batch, None, Some(&self.positions));
        let (h1, ln1) = self.enc_ln1.forward(&(x + a));
        let (f, ff) = self.enc_ff.forward(&h1);
        let (memory, ln2) = self.enc_ln2.forward(&(h1 + f));
        (
            memory,
            EncoderCache {
                ids,
                len,
                attn,
                ln1,
                ff,
                ln2,
            },
        )
    }

    fn decode_batch(
        &self,
        ids: Vec<usize>,
        len: usize,
        memory: &Array2<f64>,
    ) -> (Array2<f64>, DecoderCache) {
        let batch = ids.len() / len;
        let y = self.embed_with_positions(&ids, len);
        let (a, attn) = self.dec_attn.forward_with_positions(
            &y,
            &y,
            batch,
            Some(&causal_mask(len)),
            Some(&self.positions),
        );
        let (h1, ln1) = self.dec_ln1.forward(&(y + a));
        let (c, cross) = self.cross_attn.forward(&h1, memory, batch, None);
        let (h2, ln2) = self.dec_ln2.forward(&(h1 + c));
        let (f, ff) = self.dec_ff.forward(&h2);
        let (h3, ln3) = self.dec_ln3.forward(&(h2 + f));
        let logits = self.out.forward(&h3);
        (
            logits,
            DecoderCache {
                ids,
                len,
                attn,
                ln1,
                cross,
                ln2,
                ff,
                ln3,
                h3,
            },
        )
    }

    /// Teacher forcing: the decoder reads `[bos, tgt_0, ..., tgt_{m-2}]` and must predict
    /// `tgt`. Every sequence of `src` has one length, every one of `tgt` another.
    fn forward(
        &self,
        src: &[Vec<usize>],
        tgt: &[Vec<usize>],
    ) -> (Array2<f64>, Vec<usize>, EncoderCache, DecoderCache) {
        assert!(
            !src.is_empty() && src.len() == tgt.len(),
            "TinyTransformer: one target per source"
        );
        let (n, m) = (src[0].len(), tgt[0].len());
        assert!(
            src.iter().all(|s| s.len() == n) && tgt.iter().all(|t| t.len() == m),
            "TinyTransformer: sequences of a batch share their length"
        );
        let (memory, enc) = self.encode_batch(src.concat(), n);
        let dec_in: Vec<usize> = tgt
            .iter()
            .flat_map(|t| std::iter::once(self.bos()).chain(t[..m - 1].iter().copied()))
            .collect();
        let (logits, dec) = self.decode_batch(dec_in, m, &memory);
        (logits, tgt.concat(), enc, dec)
    }

    /// Mean cross-entropy of the target symbols under teacher forcing (nats per symbol).
    ///
    /// # Panics
    ///
    /// If the batch is empty, the sequences of a side differ in length, a length exceeds
    /// `max_len` or a symbol is out of range.
    #[track_caller]
    pub fn loss(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> f64 {
        let (logits, targets, _, _) = self.forward(src, tgt);
        softmax_cross_entropy(&logits, &targets).0
    }

    /// [`TinyTransformer::loss`] and its gradient with respect to every parameter (a model
    /// of zeros plus the gradients, see [`Params`]).
    ///
    /// # Panics
    ///
    /// As [`TinyTransformer::loss`].
    #[track_caller]
    pub fn loss_and_grads(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> (f64, Self) {
        let (logits, targets, enc, dec) = self.forward(src, tgt);
        let (loss, g_logits) = softmax_cross_entropy(&logits, &targets);
        let mut g = self.zeros_like();
        // Decoder, top down.
        let g_h3 = self.out.backward(&dec.h3, &g_logits, &mut g.out);
        let g_s3 = self.dec_ln3.backward(&dec.ln3, &g_h3, &mut g.dec_ln3);
        let g_h2 = self.dec_ff.backward(&dec.ff, &g_s3, &mut g.dec_ff) + &g_s3;
        let g_s2 = self.dec_ln2.backward(&dec.ln2, &g_h2, &mut g.dec_ln2);
        let (g_q, g_memory) = self
            .cross_attn
            .backward(&dec.cross, &g_s2, &mut g.cross_attn);
        let g_h1 = g_q + &g_s2;
        let g_s1 = self.dec_ln1.backward(&dec.ln1, &g_h1, &mut g.dec_ln1);
        let (g_q, g_kv) = self.dec_attn.backward_with_positions(
            &dec.attn,
            &g_s1,
            &mut g.dec_attn,
            Some((&self.positions, &mut g.positions)),
        );
        let g_y = g_q + g_kv + &g_s1;
        self.positions.backward(&g_y, dec.len, &mut g.positions);
        self.embed.backward(&dec.ids, &g_y, &mut g.embed);
        // Encoder, from the memory's gradient.
        let g_s2 = self.enc_ln2.backward(&enc.ln2, &g_memory, &mut g.enc_ln2);
        let g_h1 = self.enc_ff.backward(&enc.ff, &g_s2, &mut g.enc_ff) + &g_s2;
        let g_s1 = self.enc_ln1.backward(&enc.ln1, &g_h1, &mut g.enc_ln1);
        let (g_q, g_kv) = self.enc_attn.backward_with_positions(
            &enc.attn,
            &g_s1,
            &mut g.enc_attn,
            Some((&self.positions, &mut g.positions)),
        );
        let g_x = g_q + g_kv + &g_s1;
        self.positions.backward(&g_x, enc.len, &mut g.positions);
        self.embed.backward(&enc.ids, &g_x, &mut g.embed);
        (loss, g)
    }

    /// The encoder's output for one source sequence, `n x d_model`.
    ///
    /// # Panics
    ///
    /// If `src` is empty or longer than `max_len`, or a symbol is out of range.
    #[track_caller]
    pub fn encode(&self, src: &[usize]) -> Array2<f64> {
        self.encode_batch(src.to_vec(), src.len()).0
    }

    /// Runs the decoder on `prefix` (starting with [`TinyTransformer::bos`]) against
    /// `memory`: the logits of every position (`prefix.len() x vocab`) and the
    /// cross-attention weights per head (`prefix.len() x n`). One call per generated symbol
    /// recomputes the whole prefix; [`TinyTransformer::decode_step`] reuses it through a
    /// key/value cache.
    ///
    /// # Panics
    ///
    /// If `prefix` is empty or longer than `max_len`.
    #[track_caller]
    pub fn decode(
        &self,
        memory: &Array2<f64>,
        prefix: &[usize],
    ) -> (Array2<f64>, Vec<Array2<f64>>) {
        let (logits, dec) = self.decode_batch(prefix.to_vec(), prefix.len(), memory);
        let weights = (0..self.config.heads)
            .map(|h| dec.cross.weights(0, h).clone())
            .collect();
        (logits, weights)
    }

    /// Greedy decoding of `len` symbols: each step appends the most probable symbol.
    ///
    /// Decodes with a [`KvCache`] ([`TinyTransformer::decode_cache`]): layer 0 holds the
    /// decoder self-attention's keys and values, one position appended per step; layer 1 the
    /// cross-attention's, projected from the memory once. Each step
    /// ([`TinyTransformer::decode_step`]) runs the decoder on the newest position only, for
    /// every [`Positions`] scheme; the result is that of
    /// [`TinyTransformer::greedy_decode_uncached`], up to rounding.
    ///
    /// # Panics
    ///
    /// If `src` is empty, `len == 0`, either exceeds `max_len`, or a symbol is out of range.
    #[track_caller]
    pub fn greedy_decode(&self, src: &[usize], len: usize) -> Decoded {
        assert!(
            len > 0 && len <= self.config.max_len,
            "TinyTransformer::greedy_decode: len must be in 1..=max_len"
        );
        let memory = self.encode(src);
        let n = memory.nrows();
        let mut cache = self.decode_cache(&memory);
        let mut cross_weights = vec![Array2::zeros((len, n)); self.config.heads];
        let mut tokens = Vec::with_capacity(len);
        let mut last = self.bos();
        for t in 0..len {
            let (logits, weights) = self.decode_step(&mut cache, last, t);
            for (all, w) in cross_weights.iter_mut().zip(weights) {
                all.row_mut(t).assign(&w);
            }
            last = argmax(&logits).expect("logits are finite");
            tokens.push(last);
        }
        Decoded {
            tokens,
            cross_weights,
        }
    }

    /// The cache [`TinyTransformer::decode_step`] starts from for the encoder output
    /// `memory`: layer 0 (decoder self-attention) empty, layer 1 holding the cross-attention's
    /// keys and values of every source position.
    ///
    /// ```
    /// use attention::{ModelConfig, Positions, TinyTransformer};
    /// use rand::{SeedableRng, rngs::StdRng};
    ///
    /// let config = ModelConfig {
    ///     vocab: 5, d_model: 8, heads: 2, kv_heads: 1, d_ff: 16, max_len: 4,
    ///     positions: Positions::Rotary,
    /// };
    /// let model = TinyTransformer::new(config, &mut StdRng::seed_from_u64(0));
    /// let memory = model.encode(&[1, 2, 3]);
    /// let mut cache = model.decode_cache(&memory);
    /// let (logits, _) = model.decode_step(&mut cache, model.bos(), 0);
    /// let (full, _) = model.decode(&memory, &[model.bos()]);
    /// assert!((&logits - &full.row(0)).iter().all(|d| d.abs() < 1e-12));
    /// assert_eq!((cache.len(0), cache.len(1)), (1, 3));
    /// ```
    pub fn decode_cache(&self, memory: &Array2<f64>) -> KvCache {
        let mut cache = KvCache::new(2, self.config.kv_heads, self.cross_attn.d_head());
        let (k, v) = (
            self.cross_attn.w_k.forward(memory),
            self.cross_attn.w_v.forward(memory),
        );
        for (k, v) in k.rows().into_iter().zip(v.rows()) {
            cache.append(1, &k, &v);
        }
        cache
    }

    /// One decoder step with a key/value cache: the decoder input `token` at position `t`
    /// (the previous output, or [`TinyTransformer::bos`] at `t = 0`). Appends its key and
    /// value to layer 0 of `cache` and attends over layers 0 (self) and 1 (the memory's keys
    /// and values, see [`TinyTransformer::decode_cache`]). Returns the logits of the next
    /// symbol and the cross-attention weights of each head over the source positions: row
    /// `t` of [`TinyTransformer::decode`]'s results on the whole prefix, up to rounding.
    ///
    /// # Panics
    ///
    /// If the cache does not hold `t` positions in layer 0 and the memory in layer 1, its
    /// head sizes differ from the model's, `t >= max_len` or `token` is out of range.
    #[track_caller]
    pub fn decode_step(
        &self,
        cache: &mut KvCache,
        token: usize,
        t: usize,
    ) -> (Array1<f64>, Vec<Array1<f64>>) {
        assert_eq!(
            cache.len(0),
            t,
            "TinyTransformer::decode_step: cache length"
        );
        // Only the additive schemes index a table by position; the others would run past
        // max_len silently, unlike the uncached decoder's callers.
        assert!(
            t < self.config.max_len,
            "TinyTransformer::decode_step: position {t} beyond max_len {}",
            self.config.max_len
        );
        let mut y = self.embed.forward(&[token]);
        let mut pos = Array2::zeros((t + 1, self.config.d_model));
        self.positions.add_to_embeddings(&mut pos, t + 1);
        y += &pos.slice(s![t..t + 1, ..]);
        let a = self.cached_self_attention(cache, &y, t);
        let (h1, _) = self.dec_ln1.forward(&(y + a));
        // Cross-attention over the memory's cached keys and values.
        let q = self.cross_attn.w_q.forward(&h1);
        let (heads, cross) = cached_attention_step(&q.row(0), cache, 1);
        let c = self.cross_attn.w_o.forward(&heads.insert_axis(Axis(0)));
        let (h2, _) = self.dec_ln2.forward(&(h1 + c));
        let (f, _) = self.dec_ff.forward(&h2);
        let (h3, _) = self.dec_ln3.forward(&(h2 + f));
        let logits = self.out.forward(&h3).row(0).to_owned();
        (logits, cross)
    }

    /// Decoder self-attention of `y`, the input row at position `t`, over the cached prefix
    /// and itself: row `t` of what [`AttentionGrad::forward_with_positions`] computes under
    /// the causal mask. Rotary positions rotate the query and the new key at `t` (the cache
    /// holds rotated keys; values are never rotated); ALiBi and the relative bias add row `t`
    /// of their score bias over keys `0..=t`.
    fn cached_self_attention(&self, cache: &mut KvCache, y: &Array2<f64>, t: usize) -> Array2<f64> {
        let (pos, dh) = (&self.positions, self.dec_attn.d_head());
        let q = pos.rotate_heads_at(&self.dec_attn.w_q.forward(y), t, dh);
        let k = pos.rotate_heads_at(&self.dec_attn.w_k.forward(y), t, dh);
        cache.append(0, &k.row(0), &self.dec_attn.w_v.forward(y).row(0));
        let (heads, _) = cached_attention_step_with_bias(&q.row(0), cache, 0, |i, scores| {
            if let Some(bias) = pos.score_bias_row(i, t, scores.len()) {
                *scores += &bias;
            }
        });
        self.dec_attn.w_o.forward(&heads.insert_axis(Axis(0)))
    }

    /// Greedy decoding without a cache: each step reruns the decoder on the whole prefix
    /// ([`TinyTransformer::decode`]) and appends the most probable symbol.
    ///
    /// # Panics
    ///
    /// If `src` is empty, `len == 0`, either exceeds `max_len`, or a symbol is out of range.
    #[track_caller]
    pub fn greedy_decode_uncached(&self, src: &[usize], len: usize) -> Decoded {
        assert!(
            len > 0,
            "TinyTransformer::greedy_decode_uncached: len must be positive"
        );
        let memory = self.encode(src);
        let mut prefix = vec![self.bos()];
        loop {
            let (logits, cross_weights) = self.decode(&memory, &prefix);
            prefix.push(argmax(&logits.row(prefix.len() - 1)).expect("logits are finite"));
            if prefix.len() > len {
                return Decoded {
                    tokens: prefix[1..].to_vec(),
                    cross_weights,
                };
            }
        }
    }

    fn layers(&self) -> [&dyn ParamsDyn; 13] {
        [
            &self.embed,
            &self.positions,
            &self.enc_attn,
            &self.enc_ln1,
            &self.enc_ff,
            &self.enc_ln2,
            &self.dec_attn,
            &self.dec_ln1,
            &self.cross_attn,
            &self.dec_ln2,
            &self.dec_ff,
            &self.dec_ln3,
            &self.out,
        ]
    }
}

/// Object-safe part of [`Params`], to list a model's layers.
trait ParamsDyn {
    fn params_dyn(&self) -> Vec<ArrayViewD<'_, f64>>;
}

impl<P: Params> ParamsDyn for P {
    fn params_dyn(&self) -> Vec<ArrayViewD<'_, f64>> {
        self.params()
    }
}

impl Params for TinyTransformer {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        self.layers()
            .into_iter()
            .flat_map(|l| l.params_dyn())
            .collect()
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        let mut p = self.embed.params_mut();
        p.extend(self.positions.params_mut());
        p.extend(self.enc_attn.params_mut());
        p.extend(self.enc_ln1.params_mut());
        p.extend(self.enc_ff.params_mut());
        p.extend(self.enc_ln2.params_mut());
        p.extend(self.dec_attn.params_mut());
        p.extend(self.dec_ln1.params_mut());
        p.extend(self.cross_attn.params_mut());
        p.extend(self.dec_ln2.params_mut());
        p.extend(self.dec_ff.params_mut());
        p.extend(self.dec_ln3.params_mut());
        p.extend(self.out.params_mut());
        p
    }
    fn zeros_like(&self) -> Self {
        Self {
            config: self.config,
            embed: self.embed.zeros_like(),
            positions: self.positions.zeros_like(),
            enc_attn: self.enc_attn.zeros_like(),
            enc_ln1: self.enc_ln1.zeros_like(),
            enc_ff: self.enc_ff.zeros_like(),
            enc_ln2: self.enc_ln2.zeros_like(),
            dec_attn: self.dec_attn.zeros_like(),
            dec_ln1: self.dec_ln1.zeros_like(),
            cross_attn: self.cross_attn.zeros_like(),
            dec_ln2: self.dec_ln2.zeros_like(),
            dec_ff: self.dec_ff.zeros_like(),
            dec_ln3: self.dec_ln3.zeros_like(),
            out: self.out.zeros_like(),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::train::gradcheck::check_params;

    fn tiny(positions: Positions, kv_heads: usize) -> TinyTransformer {
        let config = ModelConfig {
            vocab: 4,
            d_model: 8,
            heads: 2,
            kv_heads,
            d_ff: 6,
            max_len: 4,
            positions,
        };
        let mut model = TinyTransformer::new(config, &mut StdRng::seed_from_u64(3));
        // Non-trivial norms and biases, so their gradients are checked away from 1 and 0.
        let mut rng = StdRng::seed_from_u64(4);
        for mut p in model.params_mut() {
            if p.iter().all(|&v| v == 0.0 || v == 1.0) {
                let noise = crate::init::randn1(p.len(), &mut rng) * 0.3;
                p.iter_mut().zip(noise).for_each(|(v, n)| *v += n);
            }
        }
        model
    }

    #[test]
    fn whole_model_gradient_matches_finite_differences() {
        let src = vec![vec![0, 1, 3], vec![2, 2, 1]];
        let tgt = vec![vec![3, 1, 0], vec![1, 2, 2]];
        for (positions, kv_heads) in [
            (Positions::Learned, 2),
            (Positions::Sinusoidal, 1),
            (Positions::NoPositions, 2),
            (Positions::Rotary, 2),
            (Positions::Rotary, 1),
            (Positions::Alibi, 2),
            (Positions::Relative { clip: 1 }, 2),
            (Positions::Relative { clip: 3 }, 1),
        ] {
            let model = tiny(positions, kv_heads);
            let (loss, grads) = model.loss_and_grads(&src, &tgt);
            assert!((loss - model.loss(&src, &tgt)).abs() < 1e-15);
            check_params(&model, &grads, |m| m.loss(&src, &tgt));
        }
    }

    #[test]
    fn source_and_target_lengths_may_differ() {
        let model = tiny(Positions::Learned, 2);
        let (_, grads) = model.loss_and_grads(&[vec![0, 1, 2, 3]], &[vec![1, 2]]);
        check_params(&model, &grads, |m| {
            m.loss(&[vec![0, 1, 2, 3]], &[vec![1, 2]])
        });
    }

    #[test]
    fn greedy_decoding_matches_teacher_forcing_on_its_own_output() {
        let model = tiny(Positions::Sinusoidal, 2);
        let out = model.greedy_decode(&[0, 3, 1], 3);
        let memory = model.encode(&[0, 3, 1]);
        let prefix: Vec<usize> = std::iter::once(model.bos())
            .chain(out.tokens[..2].iter().copied())
            .collect();
        let (logits, _) = model.decode(&memory, &prefix);
        let again: Vec<usize> = logits
            .rows()
            .into_iter()
            .map(|r| argmax(&r).expect("finite"))
            .collect();
        assert_eq!(again, out.tokens);
        for w in &out.cross_weights {
            for row in w.rows() {
                assert!((row.sum() - 1.0).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn cached_greedy_decoding_equals_recomputing_the_prefix() {
        for kv_heads in [2, 1] {
            for positions in SCHEMES.into_iter().chain([Positions::Relative { clip: 2 }]) {
                let model = tiny(positions, kv_heads);
                for src in [vec![0, 3, 1], vec![2, 1, 1, 0]] {
                    let cached = model.greedy_decode(&src, 4);
                    let full = model.greedy_decode_uncached(&src, 4);
                    assert_eq!(cached.tokens, full.tokens);
                    for (a, b) in cached.cross_weights.iter().zip(&full.cross_weights) {
                        assert!((a - b).iter().all(|d| d.abs() < 1e-12));
                    }
                }
            }
        }
    }

    /// Every scheme, the relative bias with a clip that the prefixes of `tiny` exceed.
    const SCHEMES: [Positions; 6] = [
        Positions::Sinusoidal,
        Positions::Learned,
        Positions::NoPositions,
        Positions::Rotary,
        Positions::Alibi,
        Positions::Relative { clip: 1 },
    ];

    fn max_abs_diff(a: &Array1<f64>, b: &ndarray::ArrayView1<'_, f64>) -> f64 {
        (a - b).iter().fold(0.0, |m, d| m.max(d.abs()))
    }

    #[test]
    fn one_decode_step_per_position_gives_the_last_row_of_the_full_decoder() {
        for kv_heads in [2, 1] {
            for positions in SCHEMES {
                let model = tiny(positions, kv_heads);
                let memory = model.encode(&[2, 1, 1, 0]);
                let prefix = [model.bos(), 3, 0, 2];
                let mut cache = model.decode_cache(&memory);
                for (t, &token) in prefix.iter().enumerate() {
                    let (logits, cross) = model.decode_step(&mut cache, token, t);
                    let (full, full_cross) = model.decode(&memory, &prefix[..=t]);
                    let diff = max_abs_diff(&logits, &full.row(t));
                    assert!(
                        diff < 1e-12,
                        "{positions:?}, kv_heads {kv_heads}, t {t}: {diff}"
                    );
                    for (w, full_w) in cross.iter().zip(&full_cross) {
                        assert!(max_abs_diff(w, &full_w.row(t)) < 1e-12);
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "beyond max_len")]
    fn a_decode_step_past_max_len_panics_for_every_scheme() {
        // Rotary has no position table that would catch the overrun by itself.
        let model = tiny(Positions::Rotary, 2);
        let mut cache = model.decode_cache(&model.encode(&[0, 1]));
        for t in 0..=model.config().max_len {
            model.decode_step(&mut cache, 0, t);
        }
    }

    #[test]
    fn bad_sizes_are_errors() {
        let config = ModelConfig {
            vocab: 4,
            d_model: 8,
            heads: 3,
            kv_heads: 3,
            d_ff: 6,
            max_len: 4,
            positions: Positions::Learned,
        };
        assert!(TinyTransformer::try_new(config, &mut StdRng::seed_from_u64(0)).is_err());
    }
}
