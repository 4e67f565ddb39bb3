//! Sliding-window attention (Child et al. 2019, Beltagy et al. 2020): query `i` sees only the
//! keys within `w` positions of it, so a row costs `O(w d)` instead of `O(n d)` and nothing
//! of size `n x n` is formed.
//!
//! - symmetric (Longformer's local attention): keys `j` with `|i - j| <= w`;
//! - causal (a decoder, as in Mistral): keys `j` with `i - w <= j <= i`.
//!
//! Query `i` and key `i` are the same position (self-attention, or any `n_q` and `n_k` aligned
//! at the start). Within the window the weights are the scaled dot-product softmax; outside
//! they are exactly 0. [`window_mask`] gives the same rule as a mask for
//! [`scaled_dot_product_attention`](crate::scaled_dot_product_attention), the `f64` reference
//! that the tests hold [`sliding_window_attention`] to.

use std::ops::RangeInclusive;

use ndarray::{Array2, ArrayBase, Data, Ix2, s};

use crate::error::{AttentionError, check_len};
use crate::local::local_window;
use crate::softmax::try_softmax;

/// The keys query `i` sees among `n_k`: `[i - w, i + w]`, or `[i - w, i]` with `causal`, clipped
/// to `0..n_k`; `None` if that leaves nothing (a query past the last key).
pub fn window_range(i: usize, n_k: usize, w: usize, causal: bool) -> Option<RangeInclusive<usize>> {
    // Luong's local window around a centre is the symmetric case; causal cuts its right half.
    let r = local_window(n_k, i as f64, w)?;
    let hi = if causal { (*r.end()).min(i) } else { *r.end() };
    (*r.start() <= hi).then_some(*r.start()..=hi)
}

/// The `n_q x n_k` mask of sliding-window attention (`true` = may attend): `|i - j| <= w`, and
/// `j <= i` too with `causal`. With `w >= n_k - 1` it is all `true` (symmetric) or
/// [`causal_mask`](crate::causal_mask) (causal).
///
/// ```
/// use attention::window_mask;
///
/// let m = window_mask(4, 4, 1, true);
/// assert_eq!(m.row(2).to_vec(), [false, true, true, false]);
/// let m = window_mask(4, 4, 1, false);
/// assert_eq!(m.row(2).to_vec(), [false, true, true, true]);
/// ```
pub fn window_mask(n_q: usize, n_k: usize, w: usize, causal: bool) -> Array2<bool> {
    Array2::from_shape_fn((n_q, n_k), |(i, j)| {
        i.abs_diff(j) <= w && (!causal || j <= i)
    })
}

/// Sliding-window scaled dot-product attention: row `i` of the result is
/// `softmax(q_i K_W^T / sqrt(d_k)) V_W` over the keys `K_W` and values `V_W` of the window
/// [`window_range`]`(i, n_k, w, causal)`.
///
/// Rows of `q` (`n_q x d_k`) are queries, rows of `k` (`n_k x d_k`) keys and rows of `v`
/// (`n_k x d_v`) values; the result is `n_q x d_v`. Time `O(n_q w (d_k + d_v))`, memory beyond
/// the result `O(w)`. Equals
/// [`scaled_dot_product_attention`](crate::scaled_dot_product_attention) with
/// [`window_mask`] to rounding, and with no mask at all when `w >= n_k - 1` and not `causal`.
///
/// ```
/// use attention::{scaled_dot_product_attention, sliding_window_attention};
/// use ndarray::array;
///
/// let x = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]];
/// let local = sliding_window_attention(&x, &x, &x, 1, true);
/// // Position 0 sees only itself.
/// assert_eq!(local.row(0), x.row(0));
/// // A window covering the sequence is exact attention.
/// let (exact, _) = scaled_dot_product_attention(&x, &x, &x, None);
/// let wide = sliding_window_attention(&x, &x, &x, 3, false);
/// assert!((&wide - &exact).iter().all(|d| d.abs() < 1e-12));
/// ```
///
/// # Panics
///
/// On a shape mismatch, a query whose window holds no key, or non-finite scores; see
/// [`try_sliding_window_attention`].
#[track_caller]
pub fn sliding_window_attention<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    w: usize,
    causal: bool,
) -> Array2<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    match try_sliding_window_attention(q, k, v, w, causal) {
        Ok(out) => out,
        Err(e) => panic!("sliding_window_attention: {e}"),
    }
}

/// [`sliding_window_attention`] with errors instead of panics.
///
/// # Errors
///
/// [`AttentionError::ShapeMismatch`] if `q` and `k` differ in width or `k` and `v` in rows;
/// [`AttentionError::AllMasked`] (with the row) if a query's window holds no key (`i >= n_k`
/// with `i - w >= n_k`); [`AttentionError::NoFiniteScore`] if a row's scores are not finite.
pub fn try_sliding_window_attention<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    w: usize,
    causal: bool,
) -> Result<Array2<f64>, AttentionError>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    const OP: &str = "sliding_window_attention";
    check_len(OP, "key width (d_k)", q.ncols(), k.ncols())?;
    check_len(OP, "value rows (n_k)", k.nrows(), v.nrows())?;
    let scale = 1.0 / (q.ncols() as f64).sqrt();
    let mut out = Array2::zeros((q.nrows(), v.ncols()));
    for (i, mut row) in out.rows_mut().into_iter().enumerate() {
        let r = window_range(i, k.nrows(), w, causal)
            .ok_or(AttentionError::AllMasked { row: Some(i) })?;
        let keys = k.slice(s![r.clone(), ..]);
        let scores = keys.dot(&q.row(i)) * scale;
        let weights = try_softmax(&scores).map_err(|e| match e {
            AttentionError::NoFiniteScore { .. } => AttentionError::NoFiniteScore { row: Some(i) },
            e => e,
        })?;
        row.assign(&weights.dot(&v.slice(s![r, ..])));
    }
    Ok(out)
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

    fn max_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        (a - b).iter().fold(0.0, |m, d| m.max(d.abs()))
    }

    #[test]
    fn ranges_by_hand() {
        assert_eq!(window_range(5, 10, 2, false), Some(3..=7));
        assert_eq!(window_range(5, 10, 2, true), Some(3..=5));
        assert_eq!(window_range(0, 10, 2, true), Some(0..=0));
        assert_eq!(window_range(9, 10, 3, false), Some(6..=9));
        assert_eq!(window_range(4, 3, 1, false), None);
        assert_eq!(window_range(3, 3, 1, true), Some(2..=2));
    }

    #[test]
    fn mask_and_ranges_agree() {
        for causal in [false, true] {
            for w in 0..6 {
                let m = window_mask(7, 5, w, causal);
                for i in 0..7 {
                    let seen: Vec<usize> = (0..5).filter(|&j| m[[i, j]]).collect();
                    let r: Vec<usize> = window_range(i, 5, w, causal)
                        .into_iter()
                        .flatten()
                        .collect();
                    assert_eq!(seen, r, "i {i}, w {w}, causal {causal}");
                }
            }
        }
    }

    #[test]
    fn equals_masked_reference() {
        let mut rng = StdRng::seed_from_u64(11);
        let (n, d, d_v) = (37, 8, 5);
        let q = randn2(n, d, &mut rng);
        let k = randn2(n, d, &mut rng);
        let v = randn2(n, d_v, &mut rng);
        for causal in [false, true] {
            for w in [0, 1, 4, 10, 36, 100] {
                let got = sliding_window_attention(&q, &k, &v, w, causal);
                let mask = window_mask(n, n, w, causal);
                let (want, _) = scaled_dot_product_attention(&q, &k, &v, Some(&mask));
                assert!(max_diff(&got, &want) < 1e-12, "w {w}, causal {causal}");
            }
        }
    }

    #[test]
    fn a_window_covering_everything_is_exact_attention() {
        let mut rng = StdRng::seed_from_u64(3);
        let n = 20;
        let q = randn2(n, 6, &mut rng);
        let k = randn2(n, 6, &mut rng);
        let v = randn2(n, 4, &mut rng);
        let (full, _) = scaled_dot_product_attention(&q, &k, &v, None);
        let (causal, _) = scaled_dot_product_attention(&q, &k, &v, Some(&causal_mask(n)));
        for w in [n - 1, n, 3 * n] {
            assert!(max_diff(&sliding_window_attention(&q, &k, &v, w, false), &full) < 1e-12);
            assert!(max_diff(&sliding_window_attention(&q, &k, &v, w, true), &causal) < 1e-12);
        }
    }

    #[test]
    fn window_zero_copies_the_own_value() {
        let x = array![[1.0, 2.0], [3.0, -1.0], [0.0, 0.5]];
        for causal in [false, true] {
            assert_eq!(sliding_window_attention(&x, &x, &x, 0, causal), x);
        }
    }

    #[test]
    fn errors_instead_of_panics() {
        let q = Array2::<f64>::zeros((4, 2));
        let k = Array2::<f64>::zeros((2, 2));
        let err = try_sliding_window_attention(&q, &k, &k, 1, false).unwrap_err();
        assert_eq!(err, AttentionError::AllMasked { row: Some(3) });
        let err = try_sliding_window_attention(&q, &k, &Array2::<f64>::zeros((3, 2)), 1, false)
            .unwrap_err();
        assert!(matches!(err, AttentionError::ShapeMismatch { .. }));
        let mut bad = Array2::<f64>::zeros((2, 2));
        bad[[1, 0]] = f64::NAN;
        let err = try_sliding_window_attention(&bad, &k, &k, 1, true).unwrap_err();
        assert_eq!(err, AttentionError::NoFiniteScore { row: Some(1) });
    }
}
