//! Softmax and its relatives: the step that turns scores into attention weights.
//!
//! Every variant subtracts the maximum score before exponentiating, so large scores never
//! overflow. A score of `-inf` gets weight exactly 0, which is how masks work; a row with no
//! finite score has no distribution, and that is reported rather than turned into NaN.

use ndarray::{Array1, Array2, ArrayBase, ArrayView1, Data, Ix1, Ix2, Zip};

use crate::error::{AttentionError, check_len};

/// Numerically stable softmax of a vector.
///
/// `softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m)` with `m = max_j x_j`.
/// Entries equal to `-inf` get weight exactly 0.
///
/// # Panics
///
/// If `x` is empty, contains NaN or `+inf`, or is entirely `-inf`
/// (see [`try_softmax`] for the non-panicking version).
#[track_caller]
pub fn softmax<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix1>) -> Array1<f64> {
    match try_softmax(x) {
        Ok(p) => p,
        Err(e) => panic!("softmax: {e}"),
    }
}

/// Softmax of a vector, or an error instead of NaN.
///
/// Same formula as [`softmax`]. Returns [`AttentionError::Empty`] for an empty vector and
/// [`AttentionError::NoFiniteScore`] if a score is NaN or `+inf` or all scores are `-inf`.
pub fn try_softmax<S: Data<Elem = f64>>(
    x: &ArrayBase<S, Ix1>,
) -> Result<Array1<f64>, AttentionError> {
    let m = finite_max(x)?;
    let e = x.mapv(|v| (v - m).exp());
    // The maximum contributes exp(0) = 1, so the sum is at least 1.
    let z = e.sum();
    Ok(e / z)
}

/// Softmax restricted to the positions where `mask` is `true` ("may attend").
///
/// `p_i = exp(x_i - m) / sum_{j: mask_j} exp(x_j - m)` for `mask_i`, and `p_i = 0` exactly
/// otherwise, where `m` is the largest unmasked score. Masked scores are replaced by `-inf`
/// before an ordinary softmax, so their values do not matter, NaN included.
///
/// # Errors
///
/// [`AttentionError::ShapeMismatch`] if the lengths differ, [`AttentionError::AllMasked`] if
/// no position may be attended, [`AttentionError::NoFiniteScore`] if the unmasked scores are
/// all `-inf` or contain NaN or `+inf`.
pub fn masked_softmax<S, M>(
    x: &ArrayBase<S, Ix1>,
    mask: &ArrayBase<M, Ix1>,
) -> Result<Array1<f64>, AttentionError>
where
    S: Data<Elem = f64>,
    M: Data<Elem = bool>,
{
    check_len("masked_softmax", "mask length", x.len(), mask.len())?;
    if !mask.iter().any(|&m| m) {
        return Err(AttentionError::AllMasked { row: None });
    }
    let masked = Zip::from(x)
        .and(mask)
        .map_collect(|&v, &keep| if keep { v } else { f64::NEG_INFINITY });
    try_softmax(&masked)
}

/// Log-softmax of a vector, computed without forming the softmax.
///
/// `log_softmax(x)_i = x_i - m - ln(sum_j exp(x_j - m))`, `m = max_j x_j`; `-inf` stays `-inf`.
///
/// # Panics
///
/// Under the same conditions as [`softmax`].
#[track_caller]
pub fn log_softmax<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix1>) -> Array1<f64> {
    let m = match finite_max(x) {
        Ok(m) => m,
        Err(e) => panic!("log_softmax: {e}"),
    };
    let log_z = x.iter().map(|&v| (v - m).exp()).sum::<f64>().ln();
    x.mapv(|v| v - m - log_z)
}

/// Row-wise [`softmax`] of a matrix: each row becomes a distribution over its columns.
///
/// # Panics
///
/// If a row is empty, contains NaN or `+inf`, or is entirely `-inf`; the message names the row.
#[track_caller]
pub fn softmax_rows<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix2>) -> Array2<f64> {
    match try_softmax_rows(x) {
        Ok(p) => p,
        Err(e) => panic!("softmax_rows: {e}"),
    }
}

/// Row-wise [`try_softmax`]; errors carry the index of the first bad row.
pub fn try_softmax_rows<S: Data<Elem = f64>>(
    x: &ArrayBase<S, Ix2>,
) -> Result<Array2<f64>, AttentionError> {
    map_rows(x, |_, row| try_softmax(&row))
}

/// Row-wise [`masked_softmax`]: `mask[[i, j]] == true` lets row `i` attend to column `j`.
///
/// # Errors
///
/// [`AttentionError::ShapeMismatch`] if the shapes differ; otherwise the first failing row's
/// error from [`masked_softmax`], with its row index.
pub fn masked_softmax_rows<S, M>(
    x: &ArrayBase<S, Ix2>,
    mask: &ArrayBase<M, Ix2>,
) -> Result<Array2<f64>, AttentionError>
where
    S: Data<Elem = f64>,
    M: Data<Elem = bool>,
{
    if x.dim() != mask.dim() {
        return Err(AttentionError::ShapeMismatch {
            op: "masked_softmax_rows",
            detail: format!("scores are {:?} but the mask is {:?}", x.dim(), mask.dim()),
        });
    }
    map_rows(x, |i, row| masked_softmax(&row, &mask.row(i)))
}

/// Applies `f` to every row, tagging errors with the row index.
fn map_rows<S, F>(x: &ArrayBase<S, Ix2>, f: F) -> Result<Array2<f64>, AttentionError>
where
    S: Data<Elem = f64>,
    F: Fn(usize, ArrayView1<'_, f64>) -> Result<Array1<f64>, AttentionError>,
{
    let mut out = Array2::zeros(x.raw_dim());
    for (i, (row, mut out_row)) in x.rows().into_iter().zip(out.rows_mut()).enumerate() {
        out_row.assign(&f(i, row).map_err(|e| at_row(e, i))?);
    }
    Ok(out)
}

fn at_row(e: AttentionError, i: usize) -> AttentionError {
    match e {
        AttentionError::AllMasked { .. } => AttentionError::AllMasked { row: Some(i) },
        AttentionError::NoFiniteScore { .. } => AttentionError::NoFiniteScore { row: Some(i) },
        other => other,
    }
}

/// The largest score, provided it is finite and no score is NaN or `+inf`.
fn finite_max<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix1>) -> Result<f64, AttentionError> {
    if x.is_empty() {
        return Err(AttentionError::Empty);
    }
    let bad = AttentionError::NoFiniteScore { row: None };
    let mut m = f64::NEG_INFINITY;
    for &v in x {
        if v.is_nan() || v == f64::INFINITY {
            return Err(bad);
        }
        m = m.max(v);
    }
    if m == f64::NEG_INFINITY {
        Err(bad)
    } else {
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use ndarray::{Array2, array};

    use super::*;

    const NEG: f64 = f64::NEG_INFINITY;

    #[test]
    fn softmax_of_one_two_three_matches_hand_values() {
        // Z = e + e^2 + e^3 = 2.718281828 + 7.389056099 + 20.085536923 = 30.192874851,
        // p = (e, e^2, e^3) / Z, evaluated to 17 significant digits.
        let expect = [
            0.090_030_573_170_380_46,
            0.244_728_471_054_797_67,
            0.665_240_955_774_821_9,
        ];
        let p = softmax(&array![1.0, 2.0, 3.0]);
        for (got, want) in p.iter().zip(expect) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
    }

    #[test]
    fn weights_sum_to_one_and_survive_huge_scores() {
        let p = softmax(&array![1000.0, 1001.0, -1000.0, 0.5]);
        assert!((p.sum() - 1.0).abs() < 1e-12);
        assert!(p.iter().all(|v| v.is_finite()));
        // 1000 and 1001 differ by 1: ratio e.
        assert!((p[1] / p[0] - std::f64::consts::E).abs() < 1e-12);
    }

    #[test]
    fn adding_a_constant_changes_nothing() {
        let x = array![0.3, -1.2, 2.5, 0.0];
        let p = softmax(&x);
        let q = softmax(&(&x + 17.25));
        for (a, b) in p.iter().zip(&q) {
            assert!((a - b).abs() < 1e-14);
        }
    }

    #[test]
    fn views_are_accepted() {
        let m = array![[1.0, 2.0], [3.0, 3.0]];
        let p = softmax(&m.row(1));
        assert_eq!(p, array![0.5, 0.5]);
        assert_eq!(softmax_rows(&m.view()).row(1), p);
    }

    #[test]
    fn minus_infinity_gets_exactly_zero_weight() {
        let p = softmax(&array![NEG, 0.0, NEG, 0.0]);
        assert_eq!(p, array![0.0, 0.5, 0.0, 0.5]);
    }

    #[test]
    fn all_minus_infinity_is_an_error_not_nan() {
        let err = try_softmax(&array![NEG, NEG]).unwrap_err();
        assert_eq!(err, AttentionError::NoFiniteScore { row: None });
        assert_eq!(
            try_softmax(&Array1::<f64>::zeros(0)),
            Err(AttentionError::Empty)
        );
        assert!(try_softmax(&array![0.0, f64::NAN]).is_err());
        assert!(try_softmax(&array![0.0, f64::INFINITY]).is_err());
    }

    #[test]
    #[should_panic(expected = "softmax: scores contain NaN or +inf, or are all -inf")]
    fn softmax_panics_clearly_on_all_minus_infinity() {
        let _ = softmax(&array![NEG, NEG, NEG]);
    }

    #[test]
    fn masked_positions_get_exactly_zero() {
        // Unmasked scores 1 and 1 -> 0.5 each; the masked NaN is replaced, not used.
        let p = masked_softmax(&array![1.0, f64::NAN, 1.0], &array![true, false, true]).unwrap();
        assert_eq!(p, array![0.5, 0.0, 0.5]);
    }

    #[test]
    fn all_masked_is_an_error() {
        let err = masked_softmax(&array![1.0, 2.0], &array![false, false]).unwrap_err();
        assert_eq!(err, AttentionError::AllMasked { row: None });
        let err = masked_softmax(&array![1.0, 2.0], &array![true]).unwrap_err();
        assert!(matches!(err, AttentionError::ShapeMismatch { .. }));
    }

    #[test]
    fn masked_rows_report_the_failing_row() {
        let x = Array2::zeros((3, 2));
        let mask = array![[true, true], [true, false], [false, false]];
        let err = masked_softmax_rows(&x, &mask).unwrap_err();
        assert_eq!(err, AttentionError::AllMasked { row: Some(2) });
        let top = ndarray::s![..2, ..];
        let ok = masked_softmax_rows(&x.slice(top), &mask.slice(top)).unwrap();
        assert_eq!(ok, array![[0.5, 0.5], [1.0, 0.0]]);
    }

    #[test]
    fn log_softmax_is_the_log_of_softmax() {
        let x = array![0.5, -2.0, 3.0, NEG];
        let lp = log_softmax(&x);
        let p = softmax(&x);
        for (l, q) in lp.iter().zip(&p) {
            assert!((l.exp() - q).abs() < 1e-15);
        }
        assert_eq!(lp[3], NEG);
    }

    #[test]
    fn rows_are_independent_distributions() {
        let x = array![[0.0, 0.0, 0.0, 0.0], [0.0, 2.0_f64.ln(), NEG, 0.0]];
        let p = softmax_rows(&x);
        assert_eq!(p.row(0), array![0.25, 0.25, 0.25, 0.25]);
        // weights 1 : 2 : 0 : 1 -> 0.25, 0.5, 0, 0.25
        for (got, want) in p.row(1).iter().zip([0.25, 0.5, 0.0, 0.25]) {
            assert!((got - want).abs() < 1e-15);
        }
    }
}
