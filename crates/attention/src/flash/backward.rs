//! The backward pass of FlashAttention: the gradients of `softmax(Q K^T / sqrt(d_k)) V`
//! computed block by block from the output and one number per query row, the log-sum-exp
//! `L_i = m_i + ln l_i` of its scores, so the `n_q x n_k` weights are never stored: each block
//! of weights is recomputed as `exp(S_ij - L_i)` when it is needed (Dao et al. 2022, §3.1;
//! FlashAttention-2 keeps only `L`). A plain `f64` reference for the articles, not a fast
//! kernel: its memory beyond inputs and results is `O((n_q + n_k) block)`.

use ndarray::{Array1, Array2, ArrayBase, Axis, Data, Ix2, s};

/// The gradients [`flash_attention_backward`] returns, one per input.
#[derive(Debug, Clone, PartialEq)]
pub struct FlashGrads {
    /// `dL/dQ`, `n_q x d_k`.
    pub dq: Array2<f64>,
    /// `dL/dK`, `n_k x d_k`.
    pub dk: Array2<f64>,
    /// `dL/dV`, `n_k x d_v`.
    pub dv: Array2<f64>,
}

/// Scaled dot-product attention by an online softmax over blocks of `block` keys, returning
/// the output (`n_q x d_v`) and each query row's log-sum-exp `L_i = ln sum_j exp(s_ij)` of its
/// scaled scores (`n_q`): what the forward pass keeps for [`flash_attention_backward`].
/// `causal` is top-left aligned, as in [`flash_attention`](crate::flash_attention).
///
/// ```
/// use attention::{flash_attention_lse, scaled_dot_product_attention};
/// use ndarray::array;
///
/// let x = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]];
/// let (out, lse) = flash_attention_lse(&x, &x, &x, false, 2);
/// let (reference, _) = scaled_dot_product_attention(&x, &x, &x, None);
/// assert!((&out - &reference).iter().all(|d| d.abs() < 1e-12));
/// let s0 = x.row(0).dot(&x.t()) / 2f64.sqrt();
/// assert!((lse[0] - s0.mapv(f64::exp).sum().ln()).abs() < 1e-12);
/// ```
///
/// # Panics
///
/// As [`flash_attention_backward`].
#[track_caller]
pub fn flash_attention_lse<S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    causal: bool,
    block: usize,
) -> (Array2<f64>, Array1<f64>)
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    check("flash_attention_lse", q, k, v, block);
    let (nq, nk) = (q.nrows(), k.nrows());
    let mut m = Array1::from_elem(nq, f64::NEG_INFINITY);
    let mut l = Array1::<f64>::zeros(nq);
    let mut o = Array2::<f64>::zeros((nq, v.ncols()));
    for start in (0..nk).step_by(block) {
        let end = (start + block).min(nk);
        let scores = scaled_scores(q, k, start, end);
        for i in 0..nq {
            let last = visible_end(i, start, end, causal);
            if last == start {
                continue;
            }
            let row = scores.slice(s![i, ..last - start]);
            let m_new = row.fold(m[i], |a, &b| a.max(b));
            let rescale = (m[i] - m_new).exp();
            l[i] *= rescale;
            o.row_mut(i).mapv_inplace(|x| x * rescale);
            for (j, &s_ij) in row.iter().enumerate() {
                let p = (s_ij - m_new).exp();
                l[i] += p;
                o.row_mut(i).scaled_add(p, &v.row(start + j));
            }
            m[i] = m_new;
        }
    }
    o /= &l.view().insert_axis(Axis(1));
    (o, &m + &l.mapv(f64::ln))
}

/// The gradients of a loss `L` with respect to `q`, `k` and `v`, given `grad_o = dL/dO` and the
/// forward pass's output `o` and log-sum-exp `lse` from [`flash_attention_lse`]. Works over
/// blocks of `block` keys: each block of weights `P = exp(S - L)` is recomputed from `q` and the
/// keys, then
/// `dV += P^T dO`, `dS = P * (dO V^T - D)`, `dQ += dS K / sqrt(d_k)`, `dK += dS^T Q / sqrt(d_k)`
/// with `D_i = sum_c dO_ic O_ic` (which equals `sum_j P_ij dP_ij`, so no whole row of `P` is
/// needed).
///
/// ```
/// use attention::{flash_attention_backward, flash_attention_lse};
/// use ndarray::Array2;
///
/// let x = Array2::from_shape_fn((4, 2), |(i, j)| (i + 2 * j) as f64 * 0.3);
/// let (o, lse) = flash_attention_lse(&x, &x, &x, true, 3);
/// // The loss sum(O): dL/dV sums the weights over the queries; they add up to n_q.
/// let grads = flash_attention_backward(&x, &x, &x, &o, &lse, &Array2::ones((4, 2)), true, 3);
/// assert!((grads.dv.column(0).sum() - 4.0).abs() < 1e-12);
/// ```
///
/// # Panics
///
/// If `q` and `k` differ in width, `k` and `v` in rows, `n_k`, `d_k` or `block` is 0, or
/// `o`, `lse` or `grad_o` do not have the shapes of the output and its rows.
#[track_caller]
#[expect(
    clippy::too_many_arguments,
    reason = "the inputs, the forward pass's results and the incoming gradient, as in the paper"
)]
pub fn flash_attention_backward<S1, S2, S3, S4, S5, S6>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    o: &ArrayBase<S4, Ix2>,
    lse: &ArrayBase<S5, ndarray::Ix1>,
    grad_o: &ArrayBase<S6, Ix2>,
    causal: bool,
    block: usize,
) -> FlashGrads
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
    S4: Data<Elem = f64>,
    S5: Data<Elem = f64>,
    S6: Data<Elem = f64>,
{
    const OP: &str = "flash_attention_backward";
    check(OP, q, k, v, block);
    let (nq, nk) = (q.nrows(), k.nrows());
    let out = (nq, v.ncols());
    assert!(
        o.dim() == out && grad_o.dim() == out && lse.len() == nq,
        "{OP}: o is {:?} and grad_o {:?}, both must be {out:?}; lse has {} entries for {nq} queries",
        o.dim(),
        grad_o.dim(),
        lse.len()
    );
    let scale = 1.0 / (q.ncols() as f64).sqrt();
    let d = (grad_o * o).sum_axis(Axis(1));
    let mut grads = FlashGrads {
        dq: Array2::zeros(q.raw_dim()),
        dk: Array2::zeros(k.raw_dim()),
        dv: Array2::zeros(v.raw_dim()),
    };
    for start in (0..nk).step_by(block) {
        let end = (start + block).min(nk);
        let (kb, vb) = (k.slice(s![start..end, ..]), v.slice(s![start..end, ..]));
        let mut p = scaled_scores(q, k, start, end);
        for ((i, j), x) in p.indexed_iter_mut() {
            *x = if j + start < visible_end(i, start, end, causal) {
                (*x - lse[i]).exp()
            } else {
                0.0
            };
        }
        grads
            .dv
            .slice_mut(s![start..end, ..])
            .assign(&p.t().dot(grad_o));
        let mut ds = grad_o.dot(&vb.t());
        ds -= &d.view().insert_axis(Axis(1));
        ds *= &p;
        grads.dq.scaled_add(scale, &ds.dot(&kb));
        grads
            .dk
            .slice_mut(s![start..end, ..])
            .assign(&(ds.t().dot(q) * scale));
    }
    grads
}

/// `q k[start..end]^T / sqrt(d_k)`, `n_q x (end - start)`.
fn scaled_scores<S1: Data<Elem = f64>, S2: Data<Elem = f64>>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    start: usize,
    end: usize,
) -> Array2<f64> {
    q.dot(&k.slice(s![start..end, ..]).t()) / (q.ncols() as f64).sqrt()
}

/// One past the last key of `start..end` that query `i` may see.
fn visible_end(i: usize, start: usize, end: usize, causal: bool) -> usize {
    if causal {
        end.min(i + 1).max(start)
    } else {
        end
    }
}

#[track_caller]
fn check<S1, S2, S3>(
    op: &str,
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    block: usize,
) where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: Data<Elem = f64>,
{
    assert!(
        q.ncols() == k.ncols()
            && k.nrows() == v.nrows()
            && k.nrows() > 0
            && k.ncols() > 0
            && block > 0,
        "{op}: q is {:?}, k {:?}, v {:?} and block {block}: q and k need one width, k and v one \
         row count, and keys, their width and the block must not be empty",
        q.dim(),
        k.dim(),
        v.dim()
    );
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::attend::scaled_dot_product_attention;
    use crate::grad::softmax_backward;
    use crate::init::randn2;
    use crate::test_util::{assert_grad_close, numeric_grad};

    fn mask(nq: usize, nk: usize) -> Array2<bool> {
        Array2::from_shape_fn((nq, nk), |(i, j)| j <= i)
    }

    /// The textbook backward pass: the whole weight matrix stored, softmax's Jacobian per row.
    fn stored_weights_backward(
        q: &Array2<f64>,
        k: &Array2<f64>,
        v: &Array2<f64>,
        grad_o: &Array2<f64>,
        causal: bool,
    ) -> FlashGrads {
        let m = mask(q.nrows(), k.nrows());
        let (_, p) = scaled_dot_product_attention(q, k, v, causal.then_some(&m));
        let dp = grad_o.dot(&v.t());
        let mut ds = Array2::zeros(p.raw_dim());
        for i in 0..p.nrows() {
            ds.row_mut(i)
                .assign(&softmax_backward(&p.row(i), &dp.row(i)));
        }
        let scale = 1.0 / (q.ncols() as f64).sqrt();
        FlashGrads {
            dq: ds.dot(k) * scale,
            dk: ds.t().dot(q) * scale,
            dv: p.t().dot(grad_o),
        }
    }

    fn max_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        (a - b).iter().fold(0.0, |m, x| m.max(x.abs()))
    }

    #[test]
    fn forward_matches_the_reference_and_its_log_sum_exp() {
        let mut rng = StdRng::seed_from_u64(21);
        let (q, k, v) = (
            randn2(9, 4, &mut rng),
            randn2(11, 4, &mut rng),
            randn2(11, 3, &mut rng),
        );
        for causal in [false, true] {
            let m = mask(9, 11);
            let (want, _) = scaled_dot_product_attention(&q, &k, &v, causal.then_some(&m));
            for block in [1, 4, 11, 64] {
                let (o, lse) = flash_attention_lse(&q, &k, &v, causal, block);
                assert!(
                    max_diff(&o, &want) < 1e-12,
                    "causal {causal}, block {block}"
                );
                for i in 0..9 {
                    let seen = if causal { i + 1 } else { 11 };
                    let direct = (0..seen)
                        .map(|j| (q.row(i).dot(&k.row(j)) / 2.0).exp())
                        .sum::<f64>()
                        .ln();
                    assert!((lse[i] - direct).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn backward_matches_the_stored_weights_backward_for_every_block_size() {
        let mut rng = StdRng::seed_from_u64(22);
        let (q, k, v) = (
            randn2(10, 4, &mut rng),
            randn2(10, 4, &mut rng),
            randn2(10, 5, &mut rng),
        );
        let grad_o = randn2(10, 5, &mut rng);
        for causal in [false, true] {
            let want = stored_weights_backward(&q, &k, &v, &grad_o, causal);
            for block in [1, 3, 10, 32] {
                let (o, lse) = flash_attention_lse(&q, &k, &v, causal, block);
                let got = flash_attention_backward(&q, &k, &v, &o, &lse, &grad_o, causal, block);
                for (g, w) in [
                    (&got.dq, &want.dq),
                    (&got.dk, &want.dk),
                    (&got.dv, &want.dv),
                ] {
                    assert!(max_diff(g, w) < 1e-12, "causal {causal}, block {block}");
                }
            }
        }
    }

    #[test]
    fn backward_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(23);
        let (q, k, v) = (
            randn2(5, 3, &mut rng),
            randn2(6, 3, &mut rng),
            randn2(6, 2, &mut rng),
        );
        let grad_o = randn2(5, 2, &mut rng);
        for causal in [false, true] {
            // The loss sum(dO * O), whose gradient with respect to O is dO.
            let loss = |q: &Array2<f64>, k: &Array2<f64>, v: &Array2<f64>| {
                (&flash_attention_lse(q, k, v, causal, 2).0 * &grad_o).sum()
            };
            let (o, lse) = flash_attention_lse(&q, &k, &v, causal, 2);
            let g = flash_attention_backward(&q, &k, &v, &o, &lse, &grad_o, causal, 2);
            assert_grad_close(&g.dq, &numeric_grad(&q, |x| loss(x, &k, &v)));
            assert_grad_close(&g.dk, &numeric_grad(&k, |x| loss(&q, x, &v)));
            assert_grad_close(&g.dv, &numeric_grad(&v, |x| loss(&q, &k, x)));
        }
    }

    #[test]
    #[should_panic(expected = "flash_attention_backward: o is (2, 2) and grad_o (3, 2)")]
    fn backward_names_a_wrong_shape() {
        let x = Array2::<f64>::ones((3, 2));
        let (o, lse) = flash_attention_lse(&x, &x, &x, false, 2);
        flash_attention_backward(&x, &x, &x, &o.slice(s![..2, ..]), &lse, &o, false, 2);
    }
}
