//! Positions that act on the attention scores instead of the embeddings: rotary position
//! embedding (RoPE, Su et al.) and the linear biases of ALiBi (Press et al.), as pure
//! functions usable outside training, plus the clipped offsets of a learned relative bias.
//!
//! Rows are positions, as everywhere in the crate: `rope(x, positions)` rotates row `r` of
//! `x` by the angles of position `positions[r]`.

use ndarray::Array2;

use crate::error::AttentionError;

/// Base of RoPE's frequencies, `theta_i = ROPE_BASE^(-2i/d)` (Su et al.; the same base as the
/// sinusoidal encoding of Vaswani et al.).
pub const ROPE_BASE: f64 = 10000.0;

/// Rotates each pair of columns `(2i, 2i+1)` of row `r` by the angle `p * theta_i`, where
/// `p = positions[r]` and `theta_i = 10000^(-2i/d)`: rotary position embedding.
///
/// Applied to queries and keys, `rope(q, [m]) . rope(k, [n])` depends on `m` and `n` only
/// through `n - m`.
///
/// ```
/// use attention::rope;
/// use ndarray::array;
///
/// let q = array![[1.0, 0.0, 0.5, 2.0]];
/// let k = array![[0.3, -1.0, 1.0, 0.0]];
/// let score = |m: usize, n: usize| (&rope(&q, &[m]) * &rope(&k, &[n])).sum();
/// assert!((score(2, 5) - score(10, 13)).abs() < 1e-12); // same offset, same score
/// assert_eq!(rope(&q, &[0]), q); // position 0 is not rotated
/// ```
///
/// # Panics
///
/// If `x` has an odd number of columns or `positions` is not one per row;
/// [`try_rope`] returns an error instead.
#[track_caller]
pub fn rope(x: &Array2<f64>, positions: &[usize]) -> Array2<f64> {
    match try_rope(x, positions) {
        Ok(y) => y,
        Err(e) => panic!("rope: {e}"),
    }
}

/// Like [`rope`], with an odd width or a wrong number of positions as an
/// [`AttentionError::ShapeMismatch`].
pub fn try_rope(x: &Array2<f64>, positions: &[usize]) -> Result<Array2<f64>, AttentionError> {
    check_rope(x, positions.len(), "rope")?;
    Ok(rotate(x, positions.iter().map(|&p| p as f64)))
}

/// The inverse (and transpose) of [`rope`]: rotates by `-p * theta_i`. It is also the
/// backward pass of [`rope`], since a rotation is orthogonal.
///
/// ```
/// use attention::{rope, rope_inverse};
/// use ndarray::array;
///
/// let x = array![[1.0, 2.0], [3.0, 4.0]];
/// let back = rope_inverse(&rope(&x, &[3, 7]), &[3, 7]);
/// assert!((back - &x).iter().all(|d| d.abs() < 1e-12));
/// ```
///
/// # Panics
///
/// As [`rope`].
#[track_caller]
pub fn rope_inverse(x: &Array2<f64>, positions: &[usize]) -> Array2<f64> {
    if let Err(e) = check_rope(x, positions.len(), "rope_inverse") {
        panic!("rope_inverse: {e}");
    }
    rotate(x, positions.iter().map(|&p| -(p as f64)))
}

/// [`rope`] with position interpolation (Chen et al. 2023): position `p` is rotated as if it
/// were `p * scale`. To run a model trained on `L` positions on `L' > L`, take
/// `scale = L / L'`: every position of the longer sequence then falls inside `[0, L)`, the
/// range of angles the model was trained on, instead of beyond it. `scale = 1` is [`rope`].
///
/// ```
/// use attention::{rope, rope_interpolated};
/// use ndarray::array;
///
/// let x = array![[1.0, 0.0, 0.5, 2.0]];
/// let half = rope_interpolated(&x, &[6], 0.5);
/// assert!((half - rope(&x, &[3])).iter().all(|d| d.abs() < 1e-12)); // 6 * 0.5 = 3
/// ```
///
/// # Panics
///
/// As [`rope`], and if `scale` is not a finite number.
#[track_caller]
pub fn rope_interpolated(x: &Array2<f64>, positions: &[usize], scale: f64) -> Array2<f64> {
    if let Err(e) = check_rope(x, positions.len(), "rope_interpolated") {
        panic!("rope_interpolated: {e}");
    }
    assert!(
        scale.is_finite(),
        "rope_interpolated: scale {scale} is not a finite number"
    );
    rotate(x, positions.iter().map(|&p| p as f64 * scale))
}

fn check_rope(x: &Array2<f64>, rows: usize, op: &'static str) -> Result<(), AttentionError> {
    if !x.ncols().is_multiple_of(2) || x.nrows() != rows {
        return Err(AttentionError::ShapeMismatch {
            op,
            detail: format!(
                "x is {}x{} (need an even width), {} positions",
                x.nrows(),
                x.ncols(),
                rows
            ),
        });
    }
    Ok(())
}

/// Rotation of every row by its (signed) position; the width is even.
pub(crate) fn rotate(x: &Array2<f64>, positions: impl Iterator<Item = f64>) -> Array2<f64> {
    let d = x.ncols();
    let mut y = x.to_owned();
    for (mut row, p) in y.rows_mut().into_iter().zip(positions) {
        for i in 0..d / 2 {
            let theta = ROPE_BASE.powf(-2.0 * i as f64 / d as f64);
            let (sin, cos) = (p * theta).sin_cos();
            let (a, b) = (row[2 * i], row[2 * i + 1]);
            row[2 * i] = a * cos - b * sin;
            row[2 * i + 1] = a * sin + b * cos;
        }
    }
    y
}

/// ALiBi's head slopes: for `heads` a power of two, the geometric sequence
/// `2^(-8/heads), 2^(-16/heads), ..., 2^(-8)`; otherwise, as in Press et al.'s code, the
/// slopes of the nearest smaller power of two followed by every other slope of twice that.
///
/// ```
/// use attention::alibi_slopes;
///
/// assert_eq!(alibi_slopes(4), vec![0.25, 0.0625, 0.015625, 0.00390625]);
/// assert_eq!(alibi_slopes(8)[0], 0.5);
/// ```
pub fn alibi_slopes(heads: usize) -> Vec<f64> {
    fn power_of_two(h: usize) -> Vec<f64> {
        (1..=h)
            .map(|i| 2f64.powf(-8.0 * i as f64 / h as f64))
            .collect()
    }
    if heads == 0 {
        return Vec::new();
    }
    if heads.is_power_of_two() {
        return power_of_two(heads);
    }
    let lower = 1 << heads.ilog2();
    let mut slopes = power_of_two(lower);
    slopes.extend(
        power_of_two(2 * lower)
            .into_iter()
            .step_by(2)
            .take(heads - lower),
    );
    slopes
}

/// ALiBi's bias for one head, `m x n`: `-slope * |i - j|` for query `i` and key `j`, added to
/// the scores before the softmax. Press et al. use it under a causal mask (`j <= i`, where it
/// is `-slope * (i - j)`); the absolute value extends it to a bidirectional encoder.
///
/// ```
/// use attention::alibi_bias;
/// use ndarray::array;
///
/// assert_eq!(alibi_bias(0.5, 2, 3), array![[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5]]);
/// ```
pub fn alibi_bias(slope: f64, m: usize, n: usize) -> Array2<f64> {
    Array2::from_shape_fn((m, n), |(i, j)| alibi_entry(slope, i, j))
}

/// One entry of [`alibi_bias`]: the bias of key `j` in the scores of query `i`. A cached
/// decoder step needs one row of the bias, and computing it with the same expression keeps
/// it bit-for-bit equal to the full matrix's row.
pub(crate) fn alibi_entry(slope: f64, i: usize, j: usize) -> f64 {
    match i.abs_diff(j) {
        0 => 0.0, // not -0.0
        d => -slope * d as f64,
    }
}

/// The index of offset `j - i` in a relative-bias table of `2 * clip + 1` entries: offsets
/// beyond `±clip` share the entry of `±clip` (the clipping of Shaw et al.).
///
/// ```
/// use attention::relative_index;
///
/// assert_eq!(relative_index(3, 3, 2), 2); // offset 0: the middle entry
/// assert_eq!(relative_index(0, 9, 2), 4); // offset +9, clipped to +2
/// assert_eq!(relative_index(9, 0, 2), 0); // offset -9, clipped to -2
/// ```
pub fn relative_index(i: usize, j: usize, clip: usize) -> usize {
    let offset = (j as i64 - i as i64).clamp(-(clip as i64), clip as i64);
    (offset + clip as i64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::randn2;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn rope_score_depends_only_on_the_offset() {
        let mut rng = StdRng::seed_from_u64(1);
        let q = randn2(1, 16, &mut rng);
        let k = randn2(1, 16, &mut rng);
        let score = |m: usize, n: usize| (&rope(&q, &[m]) * &rope(&k, &[n])).sum();
        for offset in 0..20 {
            let s0 = score(0, offset);
            for m in [1, 7, 50, 300] {
                assert!((score(m, m + offset) - s0).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn rope_preserves_norms_and_inverts() {
        let x = randn2(5, 8, &mut StdRng::seed_from_u64(2));
        let p = [0, 3, 1, 9, 4];
        let y = rope(&x, &p);
        for (a, b) in x.rows().into_iter().zip(y.rows()) {
            assert!((a.dot(&a) - b.dot(&b)).abs() < 1e-12);
        }
        assert!((rope_inverse(&y, &p) - &x).iter().all(|d| d.abs() < 1e-12));
    }

    #[test]
    fn rope_by_hand() {
        let x = ndarray::array![[1.0, 0.0]];
        let y = rope(&x, &[1]);
        assert!((y[[0, 0]] - 1f64.cos()).abs() < 1e-15);
        assert!((y[[0, 1]] - 1f64.sin()).abs() < 1e-15);
    }

    #[test]
    fn interpolated_rope_rotates_by_the_scaled_position() {
        let x = randn2(3, 8, &mut StdRng::seed_from_u64(3));
        assert_eq!(rope_interpolated(&x, &[0, 5, 9], 1.0), rope(&x, &[0, 5, 9]));
        let quarter = rope_interpolated(&x, &[0, 8, 20], 0.25);
        assert!(
            (quarter - rope(&x, &[0, 2, 5]))
                .iter()
                .all(|d| d.abs() < 1e-12)
        );
        // A half-way position lies between its neighbours: the lowest frequency's angle
        // (last pair) is the mean of theirs.
        let angle = |y: &Array2<f64>| y[[0, 7]].atan2(y[[0, 6]]);
        let e = ndarray::array![[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]];
        let mid = angle(&rope_interpolated(&e, &[3], 0.5));
        let (a, b) = (angle(&rope(&e, &[1])), angle(&rope(&e, &[2])));
        assert!((mid - (a + b) / 2.0).abs() < 1e-12);
    }

    #[test]
    #[should_panic(expected = "rope_interpolated: scale NaN")]
    fn interpolated_rope_rejects_a_nan_scale() {
        rope_interpolated(&Array2::zeros((1, 2)), &[1], f64::NAN);
    }

    #[test]
    fn rope_shape_errors() {
        let x = Array2::zeros((2, 3));
        assert!(try_rope(&x, &[0, 1]).is_err());
        assert!(try_rope(&Array2::zeros((2, 4)), &[0]).is_err());
    }

    #[test]
    fn alibi_slopes_follow_the_paper() {
        assert_eq!(alibi_slopes(1), vec![2f64.powi(-8)]);
        let s6 = alibi_slopes(6);
        assert_eq!(s6.len(), 6);
        assert_eq!(s6[..4], alibi_slopes(4)[..]);
        assert_eq!(s6[4..], [alibi_slopes(8)[0], alibi_slopes(8)[2]]);
    }
}
