//! Autoregressive decoding with a key/value cache.
//!
//! A causal decoder computes, for the new position `t`, one query `q_t` and one key and value
//! `k_t`, `v_t`; the keys and values of positions `0..t` are the same as at the previous step.
//! [`KvCache`] keeps them, per layer and per key/value head, so each step appends one row and
//! attends over the stored rows ([`cached_attention_step`]) instead of recomputing the prefix.
//! Positions that act on the scores (ALiBi, a relative bias) enter through the hook of
//! [`cached_attention_step_with_bias`]; rotary positions are applied before appending.
//! With `kv_heads < heads` (grouped-query attention; multi-query for `kv_heads == 1`) query
//! head `i` reads key/value head `i / (heads / kv_heads)`, and the cache shrinks by the factor
//! `heads / kv_heads`. [`kv_cache_bytes_per_token`] counts its memory.
//!
//! No backward pass: the cache is for inference only.

use ndarray::{Array1, ArrayBase, ArrayView2, Data, Ix1, s};

use crate::error::{AttentionError, check_len};
use crate::softmax::try_softmax;

/// Bytes of key/value cache one token occupies in a decoder:
/// `2 * n_layers * kv_heads * d_head * bytes_per_value` (a key and a value per layer and
/// key/value head).
///
/// ```
/// use attention::kv_cache_bytes_per_token;
///
/// // 32 layers, 32 key/value heads of width 128, 16-bit values: 512 KiB per token.
/// assert_eq!(kv_cache_bytes_per_token(32, 32, 128, 2), 512 * 1024);
/// ```
pub fn kv_cache_bytes_per_token(
    n_layers: usize,
    kv_heads: usize,
    d_head: usize,
    bytes_per_value: usize,
) -> usize {
    2 * n_layers * kv_heads * d_head * bytes_per_value
}

/// The keys and values of every position decoded so far, per layer and key/value head.
///
/// A layer's keys are stored as rows of width `kv_heads * d_head`, the layout of a key
/// projection's output (head `g` in columns `g * d_head..(g + 1) * d_head`); values likewise.
///
/// ```
/// use attention::KvCache;
/// use ndarray::array;
///
/// let mut cache = KvCache::new(1, 2, 2); // one layer, two key/value heads of width 2
/// cache.append(0, &array![1.0, 0.0, 0.0, 1.0], &array![1.0, 2.0, 3.0, 4.0]);
/// cache.append(0, &array![0.0, 1.0, 1.0, 0.0], &array![5.0, 6.0, 7.0, 8.0]);
/// assert_eq!(cache.len(0), 2);
/// assert_eq!(cache.keys(0, 1), array![[0.0, 1.0], [1.0, 0.0]]);
/// assert_eq!(cache.values(0, 0).row(1), array![5.0, 6.0]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KvCache {
    kv_heads: usize,
    d_head: usize,
    /// Per layer: keys, row-major, `len x (kv_heads * d_head)`.
    keys: Vec<Vec<f64>>,
    /// Per layer: values, same layout.
    values: Vec<Vec<f64>>,
}

impl KvCache {
    /// An empty cache for `n_layers` layers of `kv_heads` key/value heads of width `d_head`.
    ///
    /// # Panics
    ///
    /// If a size is 0; [`KvCache::try_new`] returns an error instead.
    #[track_caller]
    pub fn new(n_layers: usize, kv_heads: usize, d_head: usize) -> Self {
        match Self::try_new(n_layers, kv_heads, d_head) {
            Ok(c) => c,
            Err(e) => panic!("KvCache::new: {e}"),
        }
    }

    /// Like [`KvCache::new`], with a size of 0 as an [`AttentionError::InvalidConfig`].
    pub fn try_new(
        n_layers: usize,
        kv_heads: usize,
        d_head: usize,
    ) -> Result<Self, AttentionError> {
        if n_layers == 0 || kv_heads == 0 || d_head == 0 {
            return Err(AttentionError::InvalidConfig(format!(
                "n_layers {n_layers}, kv_heads {kv_heads}, d_head {d_head}: all must be positive"
            )));
        }
        Ok(Self {
            kv_heads,
            d_head,
            keys: vec![Vec::new(); n_layers],
            values: vec![Vec::new(); n_layers],
        })
    }

    /// Number of layers.
    pub fn n_layers(&self) -> usize {
        self.keys.len()
    }

    /// Number of key/value heads per layer.
    pub fn kv_heads(&self) -> usize {
        self.kv_heads
    }

    /// Width of one head.
    pub fn d_head(&self) -> usize {
        self.d_head
    }

    /// Positions stored in `layer`.
    ///
    /// # Panics
    ///
    /// If `layer` is out of range.
    #[track_caller]
    pub fn len(&self, layer: usize) -> usize {
        self.keys[layer].len() / (self.kv_heads * self.d_head)
    }

    /// Whether no layer holds a position.
    pub fn is_empty(&self) -> bool {
        self.keys.iter().all(Vec::is_empty)
    }

    /// Bytes of the stored keys and values, at `bytes_per_value` bytes per number (8 for the
    /// `f64` this cache holds, 2 for the 16-bit values of most deployed models).
    pub fn bytes(&self, bytes_per_value: usize) -> usize {
        let numbers: usize = self.keys.iter().chain(&self.values).map(Vec::len).sum();
        numbers * bytes_per_value
    }

    /// Appends one position's key and value to `layer`: `k` and `v` have
    /// `kv_heads * d_head` entries, head `g` in `g * d_head..(g + 1) * d_head`.
    ///
    /// # Panics
    ///
    /// If `layer` is out of range or a length differs; [`KvCache::try_append`] returns an
    /// error instead.
    #[track_caller]
    pub fn append<S1, S2>(&mut self, layer: usize, k: &ArrayBase<S1, Ix1>, v: &ArrayBase<S2, Ix1>)
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        if let Err(e) = self.try_append(layer, k, v) {
            panic!("KvCache::append: {e}");
        }
    }

    /// [`KvCache::append`] that reports a bad layer or length as an error.
    ///
    /// # Errors
    ///
    /// [`AttentionError::InvalidConfig`] if `layer` is out of range,
    /// [`AttentionError::ShapeMismatch`] if `k` or `v` does not have `kv_heads * d_head`
    /// entries. The cache is unchanged on error.
    pub fn try_append<S1, S2>(
        &mut self,
        layer: usize,
        k: &ArrayBase<S1, Ix1>,
        v: &ArrayBase<S2, Ix1>,
    ) -> Result<(), AttentionError>
    where
        S1: Data<Elem = f64>,
        S2: Data<Elem = f64>,
    {
        const OP: &str = "KvCache::append";
        if layer >= self.n_layers() {
            return Err(AttentionError::InvalidConfig(format!(
                "layer {layer} of a cache with {} layers",
                self.n_layers()
            )));
        }
        let width = self.kv_heads * self.d_head;
        check_len(OP, "key entries (kv_heads * d_head)", width, k.len())?;
        check_len(OP, "value entries (kv_heads * d_head)", width, v.len())?;
        self.keys[layer].extend(k.iter());
        self.values[layer].extend(v.iter());
        Ok(())
    }

    /// Keeps the first `len` positions of every layer and drops the rest (to roll back
    /// steps, or to time one step again on the same prefix). A layer holding fewer positions
    /// is left as it is.
    ///
    /// ```
    /// use attention::KvCache;
    /// use ndarray::array;
    ///
    /// let mut cache = KvCache::new(1, 1, 1);
    /// for x in [1.0, 2.0, 3.0] {
    ///     cache.append(0, &array![x], &array![x]);
    /// }
    /// cache.truncate(1);
    /// assert_eq!(cache.keys(0, 0), array![[1.0]]);
    /// ```
    pub fn truncate(&mut self, len: usize) {
        let width = self.kv_heads * self.d_head;
        for rows in self.keys.iter_mut().chain(self.values.iter_mut()) {
            rows.truncate(len * width);
        }
    }

    fn head_view<'a>(&self, rows: &'a [f64], head: usize) -> ArrayView2<'a, f64> {
        assert!(head < self.kv_heads, "KvCache: head {head} out of range");
        let width = self.kv_heads * self.d_head;
        ArrayView2::from_shape((rows.len() / width, width), rows)
            .expect("whole rows")
            .slice_move(s![.., head * self.d_head..(head + 1) * self.d_head])
    }

    /// The keys of key/value head `head` in `layer`, `len x d_head` (one position per row).
    ///
    /// # Panics
    ///
    /// If `layer` or `head` is out of range.
    #[track_caller]
    pub fn keys(&self, layer: usize, head: usize) -> ArrayView2<'_, f64> {
        self.head_view(&self.keys[layer], head)
    }

    /// The values of key/value head `head` in `layer`, `len x d_head`.
    ///
    /// # Panics
    ///
    /// If `layer` or `head` is out of range.
    #[track_caller]
    pub fn values(&self, layer: usize, head: usize) -> ArrayView2<'_, f64> {
        self.head_view(&self.values[layer], head)
    }
}

/// One decoding step of multi-head attention over the cached positions of `layer`.
///
/// `q` is the new position's query for every query head (`heads * d_head` entries, head `i`
/// in `i * d_head..(i + 1) * d_head`); `heads` must be a multiple of the cache's `kv_heads`,
/// and query head `i` reads key/value head `i / (heads / kv_heads)`. Append the new
/// position's key and value first: the step attends to every stored position, which is
/// exactly the causal mask's row for the newest one. Returns the heads' outputs
/// concatenated (`heads * d_head`, before the output projection) and each head's weights
/// over the `len` stored positions.
///
/// ```
/// use attention::{KvCache, cached_attention_step, causal_mask, scaled_dot_product_attention};
/// use ndarray::array;
///
/// let (q, k, v) = (
///     array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
///     array![[0.5, 0.1], [0.2, 0.9], [1.0, 0.3]],
///     array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
/// );
/// let (full, _) = scaled_dot_product_attention(&q, &k, &v, Some(&causal_mask(3)));
/// let mut cache = KvCache::new(1, 1, 2);
/// for t in 0..3 {
///     cache.append(0, &k.row(t), &v.row(t));
///     let (out, _) = cached_attention_step(&q.row(t), &cache, 0);
///     assert!((&out - &full.row(t)).iter().all(|d| d.abs() < 1e-12));
/// }
/// ```
///
/// # Panics
///
/// If the layer is out of range or empty, or `q` does not hold a whole multiple of
/// `kv_heads` heads of width `d_head`; [`try_cached_attention_step`] returns an error
/// instead.
#[track_caller]
pub fn cached_attention_step<S: Data<Elem = f64>>(
    q: &ArrayBase<S, Ix1>,
    cache: &KvCache,
    layer: usize,
) -> (Array1<f64>, Vec<Array1<f64>>) {
    match try_cached_attention_step(q, cache, layer) {
        Ok(out) => out,
        Err(e) => panic!("cached_attention_step: {e}"),
    }
}

/// [`cached_attention_step`] that reports bad sizes as errors.
///
/// # Errors
///
/// [`AttentionError::InvalidConfig`] if `layer` is out of range or `q`'s length is not
/// `heads * d_head` with `heads` a positive multiple of `kv_heads`; [`AttentionError::Empty`]
/// if the layer holds no position; [`AttentionError::NoFiniteScore`] if the scores are not
/// finite.
pub fn try_cached_attention_step<S: Data<Elem = f64>>(
    q: &ArrayBase<S, Ix1>,
    cache: &KvCache,
    layer: usize,
) -> Result<(Array1<f64>, Vec<Array1<f64>>), AttentionError> {
    try_cached_attention_step_with_bias(q, cache, layer, |_, _| {})
}

/// [`cached_attention_step`] with a hook on the scores: `score_bias(i, scores)` receives
/// query head `i`'s scaled scores over the stored positions (`len` entries, oldest first)
/// and may add to them before the softmax. That is where positions that act on the scores
/// enter a decoder step (ALiBi, a learned relative bias): the cache does not know the new
/// query's position, the caller does. Rotary positions need no hook: rotate the query and
/// the new key before appending it, so the cache holds rotated keys.
///
/// ```
/// use attention::{KvCache, alibi_bias, cached_attention_step_with_bias, softmax};
/// use ndarray::array;
///
/// let mut cache = KvCache::new(1, 1, 2);
/// cache.append(0, &array![1.0, 0.0], &array![1.0, 2.0]);
/// cache.append(0, &array![0.0, 1.0], &array![3.0, 4.0]);
/// let t = 1; // the new query's position
/// let bias = alibi_bias(0.5, t + 1, t + 1);
/// let (_, w) = cached_attention_step_with_bias(&array![2.0, 2.0], &cache, 0, |_, scores| {
///     *scores += &bias.row(t);
/// });
/// // Both keys score the same, so the bias alone tells them apart.
/// assert!((&w[0] - &softmax(&array![-0.5, 0.0])).iter().all(|d| d.abs() < 1e-12));
/// ```
///
/// # Panics
///
/// As [`cached_attention_step`]; [`try_cached_attention_step_with_bias`] returns an error
/// instead.
#[track_caller]
pub fn cached_attention_step_with_bias<S, F>(
    q: &ArrayBase<S, Ix1>,
    cache: &KvCache,
    layer: usize,
    score_bias: F,
) -> (Array1<f64>, Vec<Array1<f64>>)
where
    S: Data<Elem = f64>,
    F: FnMut(usize, &mut Array1<f64>),
{
    match try_cached_attention_step_with_bias(q, cache, layer, score_bias) {
        Ok(out) => out,
        Err(e) => panic!("cached_attention_step_with_bias: {e}"),
    }
}

/// [`cached_attention_step_with_bias`] that reports bad sizes as errors.
///
/// # Errors
///
/// As [`try_cached_attention_step`]; scores the hook leaves NaN or `+inf`, or all `-inf`,
/// are an [`AttentionError::NoFiniteScore`].
pub fn try_cached_attention_step_with_bias<S, F>(
    q: &ArrayBase<S, Ix1>,
    cache: &KvCache,
    layer: usize,
    mut score_bias: F,
) -> Result<(Array1<f64>, Vec<Array1<f64>>), AttentionError>
where
    S: Data<Elem = f64>,
    F: FnMut(usize, &mut Array1<f64>),
{
    let dh = cache.d_head;
    if layer >= cache.n_layers() {
        return Err(AttentionError::InvalidConfig(format!(
            "layer {layer} of a cache with {} layers",
            cache.n_layers()
        )));
    }
    let heads = q.len() / dh;
    if q.is_empty() || !q.len().is_multiple_of(dh) || !heads.is_multiple_of(cache.kv_heads) {
        return Err(AttentionError::InvalidConfig(format!(
            "query of {} entries for key/value heads {} x {dh}: need heads * d_head with kv_heads | heads",
            q.len(),
            cache.kv_heads
        )));
    }
    if cache.len(layer) == 0 {
        return Err(AttentionError::Empty);
    }
    let group = heads / cache.kv_heads;
    let scale = 1.0 / (dh as f64).sqrt();
    let mut out = Array1::zeros(heads * dh);
    let mut weights = Vec::with_capacity(heads);
    for i in 0..heads {
        let g = i / group;
        let (k, v) = (cache.keys(layer, g), cache.values(layer, g));
        let qi = q.slice(s![i * dh..(i + 1) * dh]);
        let mut scores = k.dot(&qi) * scale;
        score_bias(i, &mut scores);
        let w = try_softmax(&scores)?;
        out.slice_mut(s![i * dh..(i + 1) * dh])
            .assign(&v.t().dot(&w));
        weights.push(w);
    }
    Ok((out, weights))
}

#[cfg(test)]
mod tests {
    use ndarray::{Array2, array};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::attend::scaled_dot_product_attention;
    use crate::init::randn2;
    use crate::mask::causal_mask;

    #[test]
    fn decoding_step_by_step_equals_full_causal_attention() {
        let mut rng = StdRng::seed_from_u64(7);
        let (n, heads, dh) = (9, 4, 3);
        for kv_heads in [4, 2, 1] {
            let q = randn2(n, heads * dh, &mut rng);
            let k = randn2(n, kv_heads * dh, &mut rng);
            let v = randn2(n, kv_heads * dh, &mut rng);
            let mut full = Array2::zeros((n, heads * dh));
            let mut full_w = Vec::new();
            for i in 0..heads {
                let g = i / (heads / kv_heads);
                let (o, w) = scaled_dot_product_attention(
                    &q.slice(s![.., i * dh..(i + 1) * dh]),
                    &k.slice(s![.., g * dh..(g + 1) * dh]),
                    &v.slice(s![.., g * dh..(g + 1) * dh]),
                    Some(&causal_mask(n)),
                );
                full.slice_mut(s![.., i * dh..(i + 1) * dh]).assign(&o);
                full_w.push(w);
            }
            let mut cache = KvCache::new(2, kv_heads, dh);
            for t in 0..n {
                cache.append(1, &k.row(t), &v.row(t));
                let (out, w) = cached_attention_step(&q.row(t), &cache, 1);
                let diff = (&out - &full.row(t))
                    .mapv(f64::abs)
                    .fold(0.0, |a: f64, &b| a.max(b));
                assert!(diff < 1e-12, "kv_heads {kv_heads}, step {t}: {diff}");
                for (i, wi) in w.iter().enumerate() {
                    assert_eq!(wi.len(), t + 1);
                    let row = full_w[i].slice(s![t, ..=t]);
                    assert!((wi - &row).iter().all(|d| d.abs() < 1e-12));
                }
            }
            assert_eq!((cache.len(0), cache.len(1)), (0, n));
            assert_eq!(cache.bytes(8), 2 * n * kv_heads * dh * 8);
            // Rolling back and redoing the last step gives the same output.
            cache.truncate(n - 1);
            assert_eq!(cache.len(1), n - 1);
            cache.append(1, &k.row(n - 1), &v.row(n - 1));
            let (again, _) = cached_attention_step(&q.row(n - 1), &cache, 1);
            assert!((&again - &full.row(n - 1)).iter().all(|d| d.abs() < 1e-12));
        }
    }

    #[test]
    fn a_score_bias_hook_equals_full_causal_attention_with_the_bias() {
        let mut rng = StdRng::seed_from_u64(8);
        let (n, heads, kv_heads, dh) = (6, 4, 2, 3);
        let q = randn2(n, heads * dh, &mut rng);
        let k = randn2(n, kv_heads * dh, &mut rng);
        let v = randn2(n, kv_heads * dh, &mut rng);
        let slopes = crate::positions::alibi_slopes(heads);
        let scale = 1.0 / (dh as f64).sqrt();
        let full: Vec<Array2<f64>> = (0..heads)
            .map(|i| {
                let g = i / (heads / kv_heads);
                let scores = q
                    .slice(s![.., i * dh..(i + 1) * dh])
                    .dot(&k.slice(s![.., g * dh..(g + 1) * dh]).t())
                    * scale
                    + crate::positions::alibi_bias(slopes[i], n, n);
                let w = crate::softmax::masked_softmax_rows(&scores, &causal_mask(n)).unwrap();
                w.dot(&v.slice(s![.., g * dh..(g + 1) * dh]))
            })
            .collect();
        let mut cache = KvCache::new(1, kv_heads, dh);
        for t in 0..n {
            cache.append(0, &k.row(t), &v.row(t));
            let (out, _) = cached_attention_step_with_bias(&q.row(t), &cache, 0, |i, scores| {
                *scores += &crate::positions::alibi_bias(slopes[i], t + 1, t + 1).row(t);
            });
            for (i, head) in full.iter().enumerate() {
                let got = out.slice(s![i * dh..(i + 1) * dh]);
                assert!((&got - &head.row(t)).iter().all(|d| d.abs() < 1e-12));
            }
        }
    }

    #[test]
    fn a_hook_that_leaves_no_finite_score_is_an_error() {
        let mut cache = KvCache::new(1, 1, 1);
        cache.append(0, &array![1.0], &array![1.0]);
        let err = try_cached_attention_step_with_bias(&array![1.0], &cache, 0, |_, s| {
            s.fill(f64::NEG_INFINITY);
        });
        assert!(matches!(err, Err(AttentionError::NoFiniteScore { .. })));
    }

    #[test]
    fn bytes_per_token_counts_keys_and_values() {
        assert_eq!(kv_cache_bytes_per_token(2, 3, 4, 8), 2 * 2 * 3 * 4 * 8);
        let mut cache = KvCache::new(2, 3, 4);
        assert!(cache.is_empty());
        for layer in 0..2 {
            cache.append(layer, &Array1::zeros(12), &Array1::zeros(12));
        }
        assert!(!cache.is_empty());
        assert_eq!(cache.bytes(8), kv_cache_bytes_per_token(2, 3, 4, 8));
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(KvCache::try_new(0, 1, 1).is_err());
        assert!(KvCache::try_new(1, 0, 1).is_err());
        let mut cache = KvCache::new(1, 2, 2);
        assert!(matches!(
            cache.try_append(0, &array![1.0, 2.0, 3.0], &array![1.0, 2.0, 3.0, 4.0]),
            Err(AttentionError::ShapeMismatch { .. })
        ));
        assert!(
            cache
                .try_append(1, &Array1::zeros(4), &Array1::zeros(4))
                .is_err()
        );
        assert_eq!(cache.len(0), 0);
        assert_eq!(
            try_cached_attention_step(&Array1::zeros(4), &cache, 0),
            Err(AttentionError::Empty)
        );
        cache.append(0, &Array1::zeros(4), &Array1::zeros(4));
        // 3 query heads cannot share 2 key/value heads.
        assert!(try_cached_attention_step(&Array1::zeros(6), &cache, 0).is_err());
        assert!(try_cached_attention_step(&Array1::zeros(5), &cache, 0).is_err());
        assert!(try_cached_attention_step(&Array1::zeros(4), &cache, 1).is_err());
        assert!(try_cached_attention_step(&Array1::zeros(8), &cache, 0).is_ok());
    }

    #[test]
    #[should_panic(expected = "KvCache::append")]
    fn append_panics_on_a_bad_length() {
        KvCache::new(1, 1, 2).append(0, &array![1.0], &array![1.0]);
    }
}
