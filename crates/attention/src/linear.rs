//! Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"): replace the softmax
//! similarity `exp(q . k / sqrt(d_k))` by a kernel `phi(q) . phi(k)` with the feature map
//! `phi(x) = elu(x) + 1`, and use associativity:
//!
//! ```text
//! o_i = sum_j (phi(q_i) . phi(k_j)) v_j / sum_j phi(q_i) . phi(k_j)
//!     = phi(q_i)^T S / phi(q_i)^T z,   S = sum_j phi(k_j) v_j^T (d_k x d_v),   z = sum_j phi(k_j)
//! ```
//!
//! `S` and `z` are computed once (non-causal) or as prefix sums over `j <= i` (causal), so the
//! cost is `O(n d_k d_v)` instead of `O(n^2 d)`, and memory `O(d_k d_v)` beyond the result.
//! As in the paper the queries and keys are not scaled by `1 / sqrt(d_k)`: this is another
//! attention, not an approximation of the softmax one. [`linear_attention_weights`] forms the
//! `n x n` weights it implies, the `f64` reference the tests hold [`linear_attention`] to.

use ndarray::{Array1, Array2, ArrayBase, Axis, Data, Ix2};

use crate::error::{AttentionError, check_len};

/// The feature map `phi(x) = elu(x) + 1`, elementwise: `x + 1` for `x > 0`, `exp(x)` otherwise.
/// Always positive, so the kernel `phi(q) . phi(k)` is too.
///
/// ```
/// use attention::elu_feature_map;
/// use ndarray::array;
///
/// let f = elu_feature_map(&array![[1.0, 0.0, -1.0]]);
/// assert_eq!(f[[0, 0]], 2.0);
/// assert_eq!(f[[0, 1]], 1.0);
/// assert!((f[[0, 2]] - (-1.0_f64).exp()).abs() < 1e-15);
/// ```
pub fn elu_feature_map<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix2>) -> Array2<f64> {
    x.mapv(|v| if v > 0.0 { v + 1.0 } else { v.exp() })
}

/// The `n_q x n_k` weights of linear attention, `A_ij = phi(q_i) . phi(k_j) / sum_l phi(q_i) .
/// phi(k_l)` (over `l <= i` and with `A_ij = 0` for `j > i` when `causal`): the naive
/// `O(n^2 d)` formula, for reference and for pictures. Rows sum to 1.
///
/// # Panics
///
/// As [`linear_attention`] (shapes only: the values do not enter).
#[track_caller]
pub fn linear_attention_weights<S1, S2>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    causal: bool,
) -> Array2<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    if let Err(e) = check(q.dim(), k.dim(), (k.nrows(), 0), causal) {
        panic!("linear_attention_weights: {e}");
    }
    let mut a = elu_feature_map(q).dot(&elu_feature_map(k).t());
    for (i, mut row) in a.rows_mut().into_iter().enumerate() {
        if causal {
            row.iter_mut().skip(i + 1).for_each(|x| *x = 0.0);
        }
        let z = row.sum();
        row /= z;
    }
    a
}

/// Linear attention with the `elu + 1` feature map: row `i` of the result is
/// `phi(q_i)^T S / phi(q_i)^T z` with `S = sum_j phi(k_j) v_j^T` and `z = sum_j phi(k_j)`,
/// over all keys, or over `j <= i` with `causal` (prefix sums, as an RNN would carry them).
///
/// Rows of `q` (`n_q x d_k`) are queries, rows of `k` (`n_k x d_k`) keys and rows of `v`
/// (`n_k x d_v`) values; the result is `n_q x d_v`. Time `O((n_q + n_k) d_k d_v)`. Equals
/// [`linear_attention_weights`]`(q, k, causal).dot(v)` to rounding.
///
/// ```
/// use attention::{linear_attention, linear_attention_weights};
/// use ndarray::array;
///
/// let x = array![[1.0, -0.5], [0.0, 1.0], [-1.0, 2.0]];
/// for causal in [false, true] {
///     let fast = linear_attention(&x, &x, &x, causal);
///     let naive = linear_attention_weights(&x, &x, causal).dot(&x);
///     assert!((&fast - &naive).iter().all(|d| d.abs() < 1e-12));
/// }
/// ```
///
/// # Panics
///
/// If `q` and `k` differ in width, `k` and `v` in rows, there are no keys, or (with `causal`)
/// a query has no key at or before its position; see [`try_linear_attention`].
#[track_caller]
pub fn linear_attention<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    causal: bool,
) -> Array2<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    match try_linear_attention(q, k, v, causal) {
        Ok(out) => out,
        Err(e) => panic!("linear_attention: {e}"),
    }
}

/// [`linear_attention`] with errors instead of panics.
///
/// # Errors
///
/// [`AttentionError::ShapeMismatch`] if `q` and `k` differ in width or `k` and `v` in rows;
/// [`AttentionError::Empty`] if there are no keys; [`AttentionError::AllMasked`] if, with
/// `causal`, there are more queries than keys (query `i` needs key `i`).
pub fn try_linear_attention<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    causal: bool,
) -> Result<Array2<f64>, AttentionError>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    check(q.dim(), k.dim(), v.dim(), causal)?;
    let (fq, fk) = (elu_feature_map(q), elu_feature_map(k));
    if !causal {
        let s = fk.t().dot(v); // d_k x d_v
        let z = fk.sum_axis(Axis(0)); // d_k
        let num = fq.dot(&s);
        let den = fq.dot(&z);
        return Ok(num / &den.insert_axis(Axis(1)));
    }
    let (d_k, d_v) = (k.ncols(), v.ncols());
    let mut s = Array2::<f64>::zeros((d_k, d_v));
    let mut z = Array1::<f64>::zeros(d_k);
    let mut out = Array2::zeros((q.nrows(), d_v));
    for (i, mut row) in out.rows_mut().into_iter().enumerate() {
        let (phi_k, v_i) = (fk.row(i), v.row(i));
        for (a, &p) in phi_k.iter().enumerate() {
            s.row_mut(a).scaled_add(p, &v_i);
        }
        z += &phi_k;
        let phi_q = fq.row(i);
        row.assign(&(phi_q.dot(&s) / phi_q.dot(&z)));
    }
    Ok(out)
}

fn check(
    q: (usize, usize),
    k: (usize, usize),
    v: (usize, usize),
    causal: bool,
) -> Result<(), AttentionError> {
    const OP: &str = "linear_attention";
    check_len(OP, "key width (d_k)", q.1, k.1)?;
    check_len(OP, "value rows (n_k)", k.0, v.0)?;
    if k.0 == 0 {
        return Err(AttentionError::Empty);
    }
    if causal && q.0 > k.0 {
        return Err(AttentionError::AllMasked { row: Some(k.0) });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;

    fn max_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        (a - b).iter().fold(0.0, |m, d| m.max(d.abs()))
    }

    /// The paper's formula written out with loops, nothing shared with the module.
    fn naive(q: &Array2<f64>, k: &Array2<f64>, v: &Array2<f64>, causal: bool) -> Array2<f64> {
        let phi = |x: f64| if x > 0.0 { x + 1.0 } else { x.exp() };
        let mut out = Array2::zeros((q.nrows(), v.ncols()));
        for i in 0..q.nrows() {
            let mut den = 0.0;
            for j in 0..k.nrows() {
                if causal && j > i {
                    continue;
                }
                let sim: f64 = (0..q.ncols())
                    .map(|a| phi(q[[i, a]]) * phi(k[[j, a]]))
                    .sum();
                den += sim;
                for c in 0..v.ncols() {
                    out[[i, c]] += sim * v[[j, c]];
                }
            }
            out.row_mut(i).mapv_inplace(|x| x / den);
        }
        out
    }

    #[test]
    fn equals_the_naive_formula() {
        let mut rng = StdRng::seed_from_u64(5);
        let (n, d, d_v) = (29, 7, 3);
        let q = randn2(n, d, &mut rng);
        let k = randn2(n, d, &mut rng);
        let v = randn2(n, d_v, &mut rng);
        for causal in [false, true] {
            let want = naive(&q, &k, &v, causal);
            assert!(max_diff(&linear_attention(&q, &k, &v, causal), &want) < 1e-12);
            let a = linear_attention_weights(&q, &k, causal);
            assert!(max_diff(&a.dot(&v), &want) < 1e-12);
            for row in a.rows() {
                assert!((row.sum() - 1.0).abs() < 1e-12);
                assert!(row.iter().all(|&x| x >= 0.0));
            }
        }
    }

    #[test]
    fn causal_rows_see_no_future() {
        let mut rng = StdRng::seed_from_u64(9);
        let q = randn2(10, 4, &mut rng);
        let k = randn2(10, 4, &mut rng);
        let mut v = randn2(10, 2, &mut rng);
        let before = linear_attention(&q, &k, &v, true);
        v.row_mut(7).fill(100.0);
        let after = linear_attention(&q, &k, &v, true);
        for i in 0..7 {
            assert_eq!(before.row(i), after.row(i));
        }
        assert!(max_diff(&before, &after) > 1.0);
    }

    #[test]
    fn feature_map_is_positive_and_continuous() {
        let x = Array2::from_shape_fn((1, 5), |(_, j)| [-30.0, -1e-9, 0.0, 1e-9, 4.0][j]);
        let f = elu_feature_map(&x);
        assert!(f.iter().all(|&y| y > 0.0));
        assert!((f[[0, 1]] - f[[0, 3]]).abs() < 1e-8);
        assert_eq!(f[[0, 4]], 5.0);
    }

    #[test]
    fn errors_instead_of_panics() {
        let z = |r, c| Array2::<f64>::zeros((r, c));
        assert!(matches!(
            try_linear_attention(&z(3, 2), &z(3, 3), &z(3, 1), false),
            Err(AttentionError::ShapeMismatch { .. })
        ));
        assert_eq!(
            try_linear_attention(&z(3, 2), &z(0, 2), &z(0, 1), false),
            Err(AttentionError::Empty)
        );
        assert_eq!(
            try_linear_attention(&z(4, 2), &z(3, 2), &z(3, 1), true),
            Err(AttentionError::AllMasked { row: Some(3) })
        );
        assert_eq!(
            try_linear_attention(&z(4, 2), &z(3, 2), &z(3, 1), false)
                .unwrap()
                .dim(),
            (4, 1)
        );
    }
}
