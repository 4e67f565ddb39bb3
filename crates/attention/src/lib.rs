//! The attention core of attnbook: every formula the article series computes, in `f64`,
//! with no I/O and no plotting, and fast paths for the two cases the series times.
//!
//! Vectors are `Array1<f64>`; matrices are `Array2<f64>` whose **rows are positions**
//! (one key, value or query per row). Every function accepts `&` of an owned array or of a
//! view. Everything is re-exported flat, so `use attention::*` is enough.
//!
//! The modules follow the path of one attention step:
//!
//! 1. `init` - seeded parameters (`xavier_uniform`, `randn2`, ...).
//! 2. `scores`, `additive` - how well a query matches each key: dot, scaled dot, general,
//!    concat (Luong) and additive (Bahdanau).
//! 3. `mask` - which keys a query may see (`causal_mask`, `padding_mask`).
//! 4. `softmax` - scores to weights, masked or not, never NaN.
//! 5. `attend` - weights to a context vector, and `scaled_dot_product_attention` end to end.
//! 6. `multihead`, `local`, `coverage` - the variants: several heads, a window, memory of
//!    past weights.
//! 7. `metrics`, `loss` - entropy and friends; cross-entropy against a target alignment.
//! 8. `grad` - backward passes, so a scorer can be trained with SGD.
//! 9. `block` - the Transformer layer around attention: `LayerNorm`, `FeedForward`, encoder
//!    and decoder layers (post-LN or pre-LN), and `count_ops` to measure their cost.
//! 10. `window`, `linear` - attention at length: a sliding window; linear attention (`elu + 1`).
//! 11. `train` - models trained end to end, with a backward pass through every layer and Adam
//!     ([`Adam`]): a tiny encoder-decoder Transformer on the reversal task
//!     ([`TinyTransformer`], [`Reversal`]), and the RNN encoder-decoder of neural machine
//!     translation with additive attention or the fixed-vector context ([`Seq2Seq`], [`Gru`])
//!     on a reordering translation task scored by sentence length ([`Reordering`]).
//! 12. `kv_cache` - decoding token by token: [`KvCache`], [`cached_attention_step`] (MHA/GQA/MQA).
//! 13. `positions` - positions in queries, keys and scores: [`rope`] (RoPE) and
//!     [`rope_interpolated`] (position interpolation), [`alibi_bias`] (ALiBi).
//! 14. `batched` - the same attention on `(B, h, n, d_k)` tensors: heads split and merged with a
//!     batch axis, padding and causal masks that broadcast ([`multi_head_batched`]), and masking
//!     in half precision ([`masked_softmax_f16`]).
//!
//! The fast paths compute the same formulas, written for speed (numbers in
//! `docs/performance.md`):
//!
//! - `fused` - one query's scores and softmax in one pass ([`dot_softmax`],
//!   [`scaled_dot_softmax`], [`Additive::softmax_precomputed`]): a decoder step.
//! - `flash` - [`flash_attention`] for long sequences, in `f32` or `f64` ([`Float`]): tiled,
//!   with an online softmax, never forming the `n x n` weights; and its backward pass
//!   ([`flash_attention_backward`]), which recomputes the weights from one number per row.
//! - `simd`, `float` - underneath both: SIMD registers picked at run time (AVX-512, AVX2 or
//!   portable code) and an `exp` and `tanh` that vectorise.
//!
//! Misuse (mismatched shapes) panics with a message naming the function; each such function
//! documents it under `# Panics`, and `try_*` variants return [`AttentionError`] instead.
//!
//! ```
//! use attention::*;
//! use ndarray::array;
//!
//! let s = array![1.0, 0.0];
//! let h = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]];
//! let w = softmax(&dot_scores(&s, &h));
//! assert!((w.sum() - 1.0).abs() < 1e-12);
//! let context = attend(&w, &h);
//! assert_eq!(context.len(), 2);
//! ```

mod additive;
mod attend;
mod batched;
mod block;
mod coverage;
mod error;
mod flash;
mod float;
mod fused;
mod grad;
mod init;
mod kv_cache;
mod linear;
mod local;
mod loss;
mod mask;
mod matmul;
mod metrics;
mod multihead;
mod positions;
mod scores;
mod simd;
mod softmax;
#[cfg(test)]
mod test_util;
mod window;

mod train;

pub use additive::{Additive, Precomputed};
pub use attend::{attend, scaled_dot_product_attention, try_scaled_dot_product_attention};
pub use batched::{
    batched_attention, causal_mask_batched, combine_masks_batched, masked_softmax_f16,
    merge_heads_batched, multi_head_batched, padding_mask_batched, split_heads_batched,
};
pub use block::{
    DecoderLayer, DecoderOutput, EncoderLayer, FeedForward, LayerNorm, Norm, OpCount, count_ops,
    row_rms,
};
pub use coverage::{Coverage, coverage_penalty};
pub use error::AttentionError;
pub use flash::{
    FlashGrads, flash_attention, flash_attention_backward, flash_attention_lse,
    flash_attention_threads,
};
pub use float::Float;
pub use fused::{dot_softmax, scaled_dot_softmax};
pub use grad::{AdditiveGrads, GeneralGrads, general_scores_backward, softmax_backward};
pub use init::{randn1, randn2, xavier_normal, xavier_uniform};
pub use kv_cache::{
    KvCache, cached_attention_step, cached_attention_step_with_bias, kv_cache_bytes_per_token,
    try_cached_attention_step, try_cached_attention_step_with_bias,
};
pub use linear::{
    elu_feature_map, linear_attention, linear_attention_weights, try_linear_attention,
};
pub use local::{local_attention, local_window, predict_position, try_local_attention};
pub use loss::{cross_entropy, softmax_cross_entropy_grad};
pub use mask::{causal_mask, combine_masks, padding_mask};
pub use metrics::{argmax, entropy, kl_divergence};
pub use multihead::{MultiHead, MultiHeadOutput, concat_heads, split_heads};
pub use positions::{
    ROPE_BASE, alibi_bias, alibi_slopes, relative_index, rope, rope_interpolated, rope_inverse,
    try_rope,
};
pub use scores::{Concat, dot_scores, general_scores, scaled_dot_scores};
pub use simd::{PORTABLE_ENV, kernel_level};
pub use softmax::{
    log_softmax, masked_softmax, masked_softmax_rows, softmax, softmax_rows, try_softmax,
    try_softmax_rows,
};
pub use window::{
    sliding_window_attention, try_sliding_window_attention, window_mask, window_range,
};

pub use train::adam::Adam;
pub use train::gru::{Gru, GruCache};
pub use train::model::{Decoded, ModelConfig, TinyTransformer};
pub use train::nn::{
    AttentionCache, AttentionGrad, Embedding, FeedForwardCache, FeedForwardGrad, LayerNormCache,
    LayerNormGrad, Linear, softmax_cross_entropy,
};
pub use train::params::Params;
pub use train::positions::{PositionEncoding, Positions, sinusoidal_positions};
pub use train::reorder::{
    LengthScore, Reordering, ReorderingConfig, TrainPlan, WordClass, length_buckets, train_seq2seq,
};
pub use train::seq2seq::{Context, Seq2Seq, Seq2SeqConfig, Translation};
pub use train::task::{Batch, Reversal};
pub use train::transformer::{DecoderBlock, EncoderBlock, Transformer, TransformerConfig};

/// Half-precision floats (`half::f16`), for the experiments on masking in `f16`.
pub use half;
