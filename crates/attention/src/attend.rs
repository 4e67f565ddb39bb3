//! Reading out the values: a weighted average of rows, and scaled dot-product attention
//! (Vaswani et al. 2017), which chains scores, mask, softmax and read-out for many queries.

use ndarray::{Array1, Array2, ArrayBase, Data, Ix1, Ix2};

use crate::error::{AttentionError, check_len};
use crate::softmax::{masked_softmax_rows, try_softmax_rows};

/// The context vector `c = sum_j w_j v_j`, where `v_j` is row `j` of `values`.
///
/// # Panics
///
/// If `weights.len() != values.nrows()`.
#[track_caller]
pub fn attend<S1, S2>(weights: &ArrayBase<S1, Ix1>, values: &ArrayBase<S2, Ix2>) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert!(
        weights.len() == values.nrows(),
        "attend: {} weights for {} value rows",
        weights.len(),
        values.nrows()
    );
    values.t().dot(weights)
}

/// Scaled dot-product attention: `A = softmax(Q K^T / sqrt(d_k))`, output `A V`.
///
/// Rows of `q` (`n_q x d_k`) are queries, rows of `k` (`n_k x d_k`) keys and rows of `v`
/// (`n_k x d_v`) values. With a mask (`n_q x n_k`, `true` = may attend), masked weights are
/// exactly 0. Returns `(output n_q x d_v, weights n_q x n_k)`.
///
/// # Panics
///
/// On a shape mismatch or a fully masked row; [`try_scaled_dot_product_attention`] returns
/// these as errors instead.
#[track_caller]
pub fn scaled_dot_product_attention<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    mask: Option<&Array2<bool>>,
) -> (Array2<f64>, Array2<f64>)
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    match try_scaled_dot_product_attention(q, k, v, mask) {
        Ok(out) => out,
        Err(e) => panic!("scaled_dot_product_attention: {e}"),
    }
}

/// [`scaled_dot_product_attention`] that reports bad shapes and fully masked rows as errors.
///
/// # Errors
///
/// [`AttentionError::ShapeMismatch`] if `q` and `k` differ in width, `k` and `v` in rows, or
/// the mask is not `n_q x n_k`; [`AttentionError::AllMasked`] (with the row) if a query may
/// attend to nothing; [`AttentionError::NoFiniteScore`] if scores are not finite.
pub fn try_scaled_dot_product_attention<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    mask: Option<&Array2<bool>>,
) -> Result<(Array2<f64>, Array2<f64>), AttentionError>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    const OP: &str = "scaled_dot_product_attention";
    check_len(OP, "key width (d_k)", q.ncols(), k.ncols())?;
    check_len(OP, "value rows (n_k)", k.nrows(), v.nrows())?;
    let scores = q.dot(&k.t()) / (q.ncols() as f64).sqrt();
    let weights = match mask {
        Some(m) => masked_softmax_rows(&scores, m)?,
        None => try_softmax_rows(&scores)?,
    };
    Ok((weights.dot(v), weights))
}

#[cfg(test)]
mod tests {
    use ndarray::{Axis, array, s};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;
    use crate::mask::causal_mask;

    #[test]
    fn attend_is_a_weighted_sum_of_rows() {
        // 0.25 (1, 0) + 0.75 (3, 4) = (2.5, 3)
        let c = attend(&array![0.25, 0.75], &array![[1.0, 0.0], [3.0, 4.0]]);
        assert_eq!(c, array![2.5, 3.0]);
    }

    #[test]
    fn sdpa_by_hand() {
        // q = (1, 1), keys (1, 1) and (-1, -1), d_k = 2:
        // scores (2, -2) / sqrt 2 = (sqrt 2, -sqrt 2); weights 1 / (1 + e^{-2 sqrt 2}) and rest.
        let q = array![[1.0, 1.0]];
        let k = array![[1.0, 1.0], [-1.0, -1.0]];
        let v = array![[10.0], [0.0]];
        let (out, w) = scaled_dot_product_attention(&q, &k, &v, None);
        let w0 = 1.0 / (1.0 + (-2.0 * std::f64::consts::SQRT_2).exp());
        assert!((w[[0, 0]] - w0).abs() < 1e-15);
        assert!((out[[0, 0]] - 10.0 * w0).abs() < 1e-13);
    }

    #[test]
    fn causal_mask_gives_the_future_exactly_zero() {
        let mut rng = StdRng::seed_from_u64(5);
        let x = randn2(5, 4, &mut rng);
        let (out, w) = scaled_dot_product_attention(&x, &x, &x, Some(&causal_mask(5)));
        for ((i, j), &a) in w.indexed_iter() {
            if j > i {
                assert_eq!(a, 0.0);
            } else {
                assert!(a > 0.0);
            }
        }
        for row in w.rows() {
            assert!((row.sum() - 1.0).abs() < 1e-12);
        }
        // The first position can only see itself.
        assert_eq!(out.row(0), x.row(0));
    }

    #[test]
    fn self_attention_is_permutation_equivariant() {
        let mut rng = StdRng::seed_from_u64(6);
        let x = randn2(5, 3, &mut rng);
        let perm = [3, 0, 4, 1, 2];
        let xp = x.select(Axis(0), &perm);
        let (out, _) = scaled_dot_product_attention(&x, &x, &x, None);
        let (out_p, _) = scaled_dot_product_attention(&xp, &xp, &xp, None);
        let expected = out.select(Axis(0), &perm);
        for (a, b) in out_p.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-12);
        }
        // Not vacuous: the outputs differ from row to row.
        assert!((&out.row(0) - &out.row(1)).iter().any(|d| d.abs() > 1e-3));
    }

    #[test]
    fn errors_instead_of_nan() {
        let x = Array2::zeros((2, 3));
        let mut m = causal_mask(2);
        m[[1, 0]] = false;
        m[[1, 1]] = false;
        let err = try_scaled_dot_product_attention(&x, &x, &x, Some(&m)).unwrap_err();
        assert_eq!(err, AttentionError::AllMasked { row: Some(1) });
        let err = try_scaled_dot_product_attention(&x, &x.slice(s![.., ..2]), &x, None);
        assert!(matches!(err, Err(AttentionError::ShapeMismatch { .. })));
    }
}
