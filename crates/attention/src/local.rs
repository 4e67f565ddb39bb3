//! Luong local attention (Luong, Pham & Manning 2015, section 3.2): attend only to a window
//! `[p_t - D, p_t + D]` of the source instead of every position, which costs `O(D)` instead
//! of `O(S)` per step and encodes a prior that alignments are roughly monotonic.
//!
//! - local-m (monotonic): the centre is the current target position, `p_t = t`.
//! - local-p (predictive): the centre is learned, `p_t = S sigmoid(v_p^T tanh(W_p h_t))`
//!   ([`predict_position`]), and weights are damped by a Gaussian around it.

use std::ops::RangeInclusive;

use ndarray::{Array1, ArrayBase, Data, Ix1, Ix2, s};

use crate::error::AttentionError;
use crate::softmax::try_softmax;

/// Predicted window centre for local-p attention (Luong 2015, eq. 9):
/// `p_t = S sigmoid(v_p^T tanh(W_p h_t))`, a real number in `(0, S)`.
///
/// `W_p` is `d_p x d_h` and `v_p` has length `d_p`. Positions are 0-based, so a centre near `S`
/// sits past the last word; the window is clipped to the sentence anyway.
///
/// # Panics
///
/// If `w_p` is not `v_p.len() x h_t.len()`.
#[track_caller]
pub fn predict_position<S1, S2, S3>(
    source_len: usize,
    h_t: &ArrayBase<S1, Ix1>,
    w_p: &ArrayBase<S2, Ix2>,
    v_p: &ArrayBase<S3, Ix1>,
) -> f64
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    assert!(
        w_p.dim() == (v_p.len(), h_t.len()),
        "predict_position: W_p must be {} x {}, found {:?}",
        v_p.len(),
        h_t.len(),
        w_p.dim()
    );
    let z = w_p.dot(h_t).tanh().dot(v_p);
    source_len as f64 / (1.0 + (-z).exp())
}

/// The integer positions `s` of a sentence of length `len` with `|s - center| <= half_width`,
/// or `None` if there are none (the centre lies too far outside, or is NaN).
pub fn local_window(len: usize, center: f64, half_width: usize) -> Option<RangeInclusive<usize>> {
    if center.is_nan() {
        return None;
    }
    let d = half_width as f64;
    let lo = (center - d).ceil().max(0.0);
    let hi = (center + d).floor().min(len as f64 - 1.0);
    // `as usize` is exact here: both bounds are integers in [0, len - 1] when lo <= hi.
    (lo <= hi).then_some(lo as usize..=hi as usize)
}

/// Local attention weights (Luong 2015, eqs. 9-10) over `scores` (one per source position).
///
/// Inside the window `[p - D, p + D]` (clipped to the sentence) the weights are
/// `softmax(scores restricted to the window)`; outside they are exactly 0. With `gaussian`
/// (local-p) each weight is then multiplied by `exp(-(s - p)^2 / (2 sigma^2))`, `sigma = D / 2`,
/// and, as in the paper, not renormalised, so the weights sum to less than 1. For local-m pass
/// the current target position as `center` and `gaussian = false`.
///
/// # Panics
///
/// If the window holds no position or its scores are not finite; see [`try_local_attention`].
#[track_caller]
pub fn local_attention<S: Data<Elem = f64>>(
    scores: &ArrayBase<S, Ix1>,
    center: f64,
    half_width: usize,
    gaussian: bool,
) -> Array1<f64> {
    match try_local_attention(scores, center, half_width, gaussian) {
        Ok(a) => a,
        Err(e) => panic!("local_attention: {e}"),
    }
}

/// [`local_attention`] with errors instead of panics.
///
/// # Errors
///
/// [`AttentionError::EmptyWindow`] if no integer position lies in the clipped window, and the
/// errors of [`try_softmax`] for the scores inside it.
pub fn try_local_attention<S: Data<Elem = f64>>(
    scores: &ArrayBase<S, Ix1>,
    center: f64,
    half_width: usize,
    gaussian: bool,
) -> Result<Array1<f64>, AttentionError> {
    let len = scores.len();
    let window = local_window(len, center, half_width).ok_or(AttentionError::EmptyWindow {
        center,
        half_width,
        len,
    })?;
    let (lo, hi) = (*window.start(), *window.end());
    let mut out = Array1::zeros(len);
    out.slice_mut(s![lo..=hi])
        .assign(&try_softmax(&scores.slice(s![lo..=hi]))?);
    if gaussian {
        let sigma = half_width as f64 / 2.0;
        for pos in window {
            out[pos] *= gaussian_factor(pos as f64 - center, sigma);
        }
    }
    Ok(out)
}

/// `exp(-x^2 / (2 sigma^2))`; with `sigma = 0` the window holds only `x = 0`, whose factor is 1.
fn gaussian_factor(x: f64, sigma: f64) -> f64 {
    if sigma == 0.0 {
        1.0
    } else {
        (-x * x / (2.0 * sigma * sigma)).exp()
    }
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;

    #[test]
    fn window_is_clipped_to_the_sentence() {
        assert_eq!(local_window(10, 5.0, 2), Some(3..=7));
        assert_eq!(local_window(10, 0.5, 2), Some(0..=2));
        assert_eq!(local_window(10, 8.7, 2), Some(7..=9));
        assert_eq!(local_window(10, 4.5, 0), None);
        assert_eq!(local_window(10, -5.0, 2), None);
        assert_eq!(local_window(10, f64::NAN, 2), None);
    }

    #[test]
    fn local_m_is_a_softmax_inside_the_window() {
        // Window [1, 3] over scores (9, 0, ln 2, 0, 9): weights 1 : 2 : 1 -> 0.25, 0.5, 0.25.
        let a = local_attention(&array![9.0, 0.0, 2.0_f64.ln(), 0.0, 9.0], 2.0, 1, false);
        let want = [0.0, 0.25, 0.5, 0.25, 0.0];
        for (g, w) in a.iter().zip(want) {
            assert!((g - w).abs() < 1e-15, "{a}");
        }
    }

    #[test]
    fn local_p_damps_by_a_gaussian() {
        // D = 2, sigma = 1, p = 2: equal scores in [0, 4] give 1/5 each, times exp(-(s-2)^2/2).
        let a = local_attention(&Array1::zeros(6), 2.0, 2, true);
        for (pos, &got) in a.iter().enumerate() {
            let want = if pos <= 4 {
                0.2 * (-((pos as f64 - 2.0).powi(2)) / 2.0).exp()
            } else {
                0.0
            };
            assert!(
                (got - want).abs() < 1e-15,
                "position {pos}: {got} vs {want}"
            );
        }
        assert!(a.sum() < 1.0);
    }

    #[test]
    fn empty_window_is_an_error() {
        let err = try_local_attention(&array![1.0, 2.0], 7.0, 1, true).unwrap_err();
        assert!(matches!(err, AttentionError::EmptyWindow { len: 2, .. }));
    }

    #[test]
    fn predicted_position_by_hand() {
        // W_p = [[1, 0]], v_p = (2), h_t = (0.5, 3): z = 2 tanh 0.5; p = 10 sigmoid(z).
        let p = predict_position(10, &array![0.5, 3.0], &array![[1.0, 0.0]], &array![2.0]);
        let z = 2.0 * 0.5_f64.tanh();
        assert!((p - 10.0 / (1.0 + (-z).exp())).abs() < 1e-14);
        assert!(p > 5.0 && p < 10.0);
    }
}
