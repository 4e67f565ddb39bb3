//! Attention on batches, in the tensor shapes practical code uses: `(B, n, d_model)` for a
//! batch of sequences and `(B, h, n, d_k)` once the heads are split off, with masks that
//! broadcast over the batch and the heads (a padding mask `(B, 1, 1, n)`, a causal mask
//! `(1, 1, n, n)`).
//!
//! The per-query functions of the rest of the core ([`scaled_dot_product_attention`],
//! [`MultiHead::forward`]) take one sequence at a time; the functions here compute the same
//! numbers for a whole batch at once, so the tests check them against those, and the series
//! shows the one becoming the other (chapter 6).
//!
//! Masked weights are exactly 0, as in [`masked_softmax`]. Framework code usually masks by
//! *adding* a large negative number to the scores instead; [`masked_softmax_f16`] does that in
//! half precision, to show which fill values survive `f16` (`-1e9` does not: it rounds to
//! `-inf`, and a fully masked row becomes NaN).
//!
//! [`scaled_dot_product_attention`]: crate::scaled_dot_product_attention
//! [`masked_softmax`]: crate::masked_softmax

use half::f16;
use ndarray::{Array2, Array3, Array4, ArrayBase, Axis, Data, Ix3, Ix4, Zip};

use crate::multihead::MultiHead;
use crate::softmax::try_softmax;

/// Splits the last axis of `x` (`B x n x d`) into `n_heads` heads of width `d / n_heads` and
/// moves the head axis forward: `B x h x n x d_k`. Head `r` holds columns
/// `r d_k .. (r + 1) d_k`, as [`split_heads`](crate::split_heads) does for one sequence
/// (PyTorch: `x.view(B, n, h, d_k).transpose(1, 2)`).
///
/// # Panics
///
/// If `n_heads` is 0 or does not divide `d`.
#[track_caller]
pub fn split_heads_batched<S: Data<Elem = f64>>(
    x: &ArrayBase<S, Ix3>,
    n_heads: usize,
) -> Array4<f64> {
    let (b, n, d) = x.dim();
    assert!(
        n_heads > 0 && d % n_heads == 0,
        "split_heads_batched: {n_heads} heads do not divide width {d}"
    );
    let d_k = d / n_heads;
    let x = x.as_standard_layout();
    let view = x
        .view()
        .into_shape_with_order((b, n, n_heads, d_k))
        .expect("a standard-layout array reshapes");
    view.permuted_axes([0, 2, 1, 3])
        .as_standard_layout()
        .into_owned()
}

/// The inverse of [`split_heads_batched`]: `B x h x n x d_k` back to `B x n x (h d_k)`, the
/// heads side by side in order (PyTorch: `x.transpose(1, 2).reshape(B, n, h * d_k)`).
pub fn merge_heads_batched<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix4>) -> Array3<f64> {
    let (b, h, n, d_k) = x.dim();
    let moved = x.view().permuted_axes([0, 2, 1, 3]);
    moved
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order((b, n, h * d_k))
        .expect("a standard-layout array reshapes")
}

/// The padding mask of a batch as a `B x 1 x 1 x n` array: sequence `b` has `lengths[b]` real
/// positions at the front, and no query may attend to a key at or after that. The two axes of
/// length 1 broadcast over the heads and the queries.
///
/// # Panics
///
/// If a length is 0 or exceeds `n`.
#[track_caller]
pub fn padding_mask_batched(lengths: &[usize], n: usize) -> Array4<bool> {
    for &len in lengths {
        assert!(
            (1..=n).contains(&len),
            "padding_mask_batched: length {len} outside 1..={n}"
        );
    }
    Array4::from_shape_fn((lengths.len(), 1, 1, n), |(b, _, _, j)| j < lengths[b])
}

/// The causal mask as a `1 x 1 x n x n` array (query `i` may attend to keys `j <= i`),
/// broadcast over the batch and the heads.
pub fn causal_mask_batched(n: usize) -> Array4<bool> {
    Array4::from_shape_fn((1, 1, n, n), |(_, _, i, j)| j <= i)
}

/// The shape two shapes broadcast to, NumPy's rule: axis by axis, equal or one of them 1.
fn broadcast_shape(a: &[usize], b: &[usize], what: &str) -> [usize; 4] {
    std::array::from_fn(|k| match (a[k], b[k]) {
        (x, y) if x == y => x,
        (1, y) => y,
        (x, 1) => x,
        _ => panic!("{what}: shapes {a:?} and {b:?} do not broadcast"),
    })
}

/// Both masks at once (logical AND), broadcast against each other: a padding mask
/// `B x 1 x 1 n` and a causal mask `1 x 1 x n x n` give `B x 1 x n x n`.
///
/// # Panics
///
/// If the shapes do not broadcast (an axis differs and neither is 1).
#[track_caller]
pub fn combine_masks_batched(a: &Array4<bool>, b: &Array4<bool>) -> Array4<bool> {
    let shape = broadcast_shape(a.shape(), b.shape(), "combine_masks_batched");
    let (a, b) = (a.broadcast(shape).unwrap(), b.broadcast(shape).unwrap());
    Zip::from(&a).and(&b).map_collect(|&x, &y| x && y)
}

/// Scaled dot-product attention on a batch of heads: `q` is `B x h x n_q x d_k`, `k` is
/// `B x h x n_k x d_k`, `v` is `B x h x n_k x d_v`; `mask`, if any, broadcasts to
/// `B x h x n_q x n_k` (`true` = may attend). Returns the output `B x h x n_q x d_v` and the
/// weights `B x h x n_q x n_k`; masked weights are exactly 0.
///
/// # Panics
///
/// On mismatched shapes, a mask that does not broadcast, or a fully masked row (named by its
/// batch, head and query index).
#[track_caller]
pub fn batched_attention(
    q: &Array4<f64>,
    k: &Array4<f64>,
    v: &Array4<f64>,
    mask: Option<&Array4<bool>>,
) -> (Array4<f64>, Array4<f64>) {
    let (b, h, n_q, d_k) = q.dim();
    let (bk, hk, n_k, dk2) = k.dim();
    let (bv, hv, nv, d_v) = v.dim();
    assert!(
        (bk, hk, dk2) == (b, h, d_k) && (bv, hv, nv) == (b, h, n_k),
        "batched_attention: q {:?}, k {:?}, v {:?} do not fit together",
        q.dim(),
        k.dim(),
        v.dim()
    );
    let full = [b, h, n_q, n_k];
    let mask = mask.map(|m| {
        m.broadcast(full).unwrap_or_else(|| {
            panic!(
                "batched_attention: mask {:?} does not broadcast to {full:?}",
                m.shape()
            )
        })
    });
    let scale = (d_k as f64).sqrt();
    let mut weights = Array4::<f64>::zeros((b, h, n_q, n_k));
    let mut out = Array4::<f64>::zeros((b, h, n_q, d_v));
    for bi in 0..b {
        for r in 0..h {
            let scores: Array2<f64> = q
                .slice(ndarray::s![bi, r, .., ..])
                .dot(&k.slice(ndarray::s![bi, r, .., ..]).t())
                / scale;
            let mut w = weights.slice_mut(ndarray::s![bi, r, .., ..]);
            for (i, row) in scores.rows().into_iter().enumerate() {
                let masked = match &mask {
                    Some(m) => Zip::from(&row)
                        .and(m.slice(ndarray::s![bi, r, i, ..]))
                        .map_collect(|&x, &keep| if keep { x } else { f64::NEG_INFINITY }),
                    None => row.to_owned(),
                };
                let p = try_softmax(&masked).unwrap_or_else(|e| {
                    panic!("batched_attention: batch {bi}, head {r}, query {i}: {e}")
                });
                w.row_mut(i).assign(&p);
            }
            let o = w.dot(&v.slice(ndarray::s![bi, r, .., ..]));
            out.slice_mut(ndarray::s![bi, r, .., ..]).assign(&o);
        }
    }
    (out, weights)
}

/// `x` (`B x n x d_in`) times `w` (`d_in x d_out`), position by position: `B x n x d_out`.
fn project(x: &Array3<f64>, w: &Array2<f64>) -> Array3<f64> {
    let (b, n, d) = x.dim();
    let flat = x
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order((b * n, d))
        .expect("a standard-layout array reshapes");
    flat.dot(w)
        .into_shape_with_order((b, n, w.ncols()))
        .expect("the product has b * n rows")
}

/// [`MultiHead::forward`] on a batch: `x_q` is `B x n_q x d_model`, `x_kv` is
/// `B x n_k x d_model`, `mask` broadcasts to `B x h x n_q x n_k`. Project, split the heads,
/// [`batched_attention`], merge the heads, project with `W_O`. Returns the output
/// `B x n_q x d_model` and the weights `B x h x n_q x n_k`.
///
/// # Panics
///
/// As [`batched_attention`], and if the widths are not `d_model`.
#[track_caller]
pub fn multi_head_batched(
    mh: &MultiHead,
    x_q: &Array3<f64>,
    x_kv: &Array3<f64>,
    mask: Option<&Array4<bool>>,
) -> (Array3<f64>, Array4<f64>) {
    let d_model = mh.d_model();
    assert!(
        x_q.len_of(Axis(2)) == d_model && x_kv.len_of(Axis(2)) == d_model,
        "multi_head_batched: inputs must be {d_model} wide"
    );
    let h = mh.n_heads;
    let q = split_heads_batched(&project(x_q, &mh.w_q), h);
    let k = split_heads_batched(&project(x_kv, &mh.w_k), h);
    let v = split_heads_batched(&project(x_kv, &mh.w_v), h);
    let (heads, weights) = batched_attention(&q, &k, &v, mask);
    (project(&merge_heads_batched(&heads), &mh.w_o), weights)
}

/// One row of scores masked and normalised in half precision, the way framework code usually
/// masks: every masked score is replaced by `fill`, the row's maximum is subtracted (in `f16`),
/// `exp` is taken in `f32` and the weights are stored in `f16` again.
///
/// With `fill = f16::from_f64(-1e9)`, which is `-inf` (the largest finite `f16` is 65504), a
/// fully masked row gives NaN weights (`-inf - (-inf)`); with `f16::MIN` it gives uniform
/// weights, and a partly masked row gives exact zeros where it is masked either way.
///
/// # Panics
///
/// If `scores` and `mask` differ in length.
#[track_caller]
pub fn masked_softmax_f16(scores: &[f16], mask: &[bool], fill: f16) -> Vec<f16> {
    assert_eq!(
        scores.len(),
        mask.len(),
        "masked_softmax_f16: scores and mask differ in length"
    );
    let filled: Vec<f16> = scores
        .iter()
        .zip(mask)
        .map(|(&s, &keep)| if keep { s } else { fill })
        .collect();
    let max = filled.iter().copied().fold(f16::NEG_INFINITY, f16::max);
    let exps: Vec<f32> = filled.iter().map(|&s| (s - max).to_f32().exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.iter().map(|&e| f16::from_f32(e / sum)).collect()
}

#[cfg(test)]
mod tests {
    use ndarray::{Array1, Array3, s};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;
    use crate::mask::{causal_mask, combine_masks, padding_mask};
    use crate::multihead::split_heads;
    use crate::softmax::softmax;

    fn randn3(b: usize, n: usize, d: usize, rng: &mut StdRng) -> Array3<f64> {
        randn2(b * n, d, rng)
            .into_shape_with_order((b, n, d))
            .unwrap()
    }

    fn max_diff<D: ndarray::Dimension>(
        a: &ndarray::Array<f64, D>,
        b: &ndarray::Array<f64, D>,
    ) -> f64 {
        assert_eq!(a.shape(), b.shape());
        Zip::from(a)
            .and(b)
            .fold(0.0_f64, |m, &x, &y| m.max((x - y).abs()))
    }

    #[test]
    fn split_heads_batched_matches_split_heads_per_sequence_and_merge_inverts_it() {
        let mut rng = StdRng::seed_from_u64(1);
        let x = randn3(3, 5, 12, &mut rng);
        let split = split_heads_batched(&x, 4);
        assert_eq!(split.dim(), (3, 4, 5, 3));
        for b in 0..3 {
            let heads = split_heads(&x.slice(s![b, .., ..]), 4);
            for (r, head) in heads.iter().enumerate() {
                assert_eq!(split.slice(s![b, r, .., ..]), head);
            }
        }
        assert_eq!(merge_heads_batched(&split), x);
    }

    #[test]
    fn masks_have_broadcast_shapes_and_combine_to_batch_by_query_by_key() {
        let pad = padding_mask_batched(&[3, 5], 5);
        let causal = causal_mask_batched(5);
        assert_eq!(pad.dim(), (2, 1, 1, 5));
        assert_eq!(causal.dim(), (1, 1, 5, 5));
        let both = combine_masks_batched(&pad, &causal);
        assert_eq!(both.dim(), (2, 1, 5, 5));
        for (b, len) in [(0, 3), (1, 5)] {
            let want = combine_masks(&causal_mask(5), &padding_mask(5, 5, len));
            assert_eq!(both.slice(s![b, 0, .., ..]), want);
        }
    }

    #[test]
    #[should_panic(expected = "do not broadcast")]
    fn masks_that_do_not_broadcast_are_refused() {
        combine_masks_batched(
            &padding_mask_batched(&[2, 3], 3),
            &padding_mask_batched(&[1, 2, 3], 3),
        );
    }

    /// The per-query formula of chapter 5, written out: o_i = sum_j a_ij v_j over the keys
    /// query i may see, a_ij = softmax_j(q_i . k_j / sqrt(d_k)).
    fn per_query(
        q: &Array2<f64>,
        k: &Array2<f64>,
        v: &Array2<f64>,
        keep: &Array2<bool>,
    ) -> Array2<f64> {
        let mut out = Array2::zeros((q.nrows(), v.ncols()));
        for i in 0..q.nrows() {
            let seen: Vec<usize> = (0..k.nrows()).filter(|&j| keep[[i, j]]).collect();
            let scores = Array1::from_iter(
                seen.iter()
                    .map(|&j| q.row(i).dot(&k.row(j)) / (q.ncols() as f64).sqrt()),
            );
            let a = softmax(&scores);
            for (w, &j) in a.iter().zip(&seen) {
                out.row_mut(i).scaled_add(*w, &v.row(j));
            }
        }
        out
    }

    #[test]
    fn batched_attention_with_padding_and_causal_masks_equals_the_per_query_formula() {
        let mut rng = StdRng::seed_from_u64(2);
        let (b, h, n, d_k) = (3, 2, 6, 4);
        let draw = |rng: &mut StdRng| split_heads_batched(&randn3(b, n, h * d_k, rng), h);
        let (q, k, v) = (draw(&mut rng), draw(&mut rng), draw(&mut rng));
        let lengths = [6, 4, 2];
        let mask =
            combine_masks_batched(&padding_mask_batched(&lengths, n), &causal_mask_batched(n));
        let (out, w) = batched_attention(&q, &k, &v, Some(&mask));
        for bi in 0..b {
            let keep = combine_masks(&causal_mask(n), &padding_mask(n, n, lengths[bi]));
            for r in 0..h {
                let slice = |x: &Array4<f64>| x.slice(s![bi, r, .., ..]).to_owned();
                let want = per_query(&slice(&q), &slice(&k), &slice(&v), &keep);
                assert!(max_diff(&slice(&out), &want) < 1e-12);
                for i in 0..n {
                    for j in 0..n {
                        if !keep[[i, j]] {
                            assert_eq!(w[[bi, r, i, j]], 0.0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn multi_head_batched_equals_multihead_forward_on_each_sequence() {
        let mut rng = StdRng::seed_from_u64(3);
        let mh = MultiHead::new(8, 2, &mut rng);
        let x = randn3(2, 5, 8, &mut rng);
        let lengths = [5, 3];
        let mask = padding_mask_batched(&lengths, 5);
        let (out, weights) = multi_head_batched(&mh, &x, &x, Some(&mask));
        for (bi, &len) in lengths.iter().enumerate() {
            let xb = x.slice(s![bi, .., ..]).to_owned();
            let one = mh.forward(&xb, &xb, Some(&padding_mask(5, 5, len)));
            assert!(max_diff(&out.slice(s![bi, .., ..]).to_owned(), &one.output) < 1e-12);
            for (r, w) in one.weights.iter().enumerate() {
                assert!(max_diff(&weights.slice(s![bi, r, .., ..]).to_owned(), w) < 1e-12);
            }
        }
    }

    #[test]
    #[should_panic(expected = "batch 1, head 0, query 0")]
    fn a_fully_masked_row_is_named_by_batch_head_and_query() {
        let q = Array4::<f64>::zeros((2, 1, 2, 2));
        let mut mask = Array4::from_elem((2, 1, 2, 2), true);
        mask.slice_mut(s![1, 0, 0, ..]).fill(false);
        batched_attention(&q, &q, &q, Some(&mask));
    }

    #[test]
    fn minus_1e9_overflows_f16_and_a_fully_masked_row_turns_nan() {
        assert_eq!(f16::from_f64(-1e9), f16::NEG_INFINITY);
        let scores = [f16::from_f32(1.0), f16::from_f32(2.0)];
        let nan = masked_softmax_f16(&scores, &[false, false], f16::from_f64(-1e9));
        assert!(nan.iter().all(|w| w.is_nan()));
        let safe = masked_softmax_f16(&scores, &[false, false], f16::MIN);
        assert!(safe.iter().all(|w| w.to_f32() == 0.5));
    }

    #[test]
    fn a_partly_masked_row_gives_exact_zeros_with_either_fill() {
        let scores: Vec<f16> = [3.0, -1.0, 0.5].iter().map(|&x| f16::from_f32(x)).collect();
        let mask = [true, false, true];
        for fill in [f16::from_f64(-1e9), f16::MIN] {
            let w = masked_softmax_f16(&scores, &mask, fill);
            assert_eq!(w[1].to_f32(), 0.0);
            let exact = softmax(&Array1::from(vec![3.0, 0.5]));
            assert!((w[0].to_f64() - exact[0]).abs() < 1e-3);
        }
    }
}
