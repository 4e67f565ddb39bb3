//! Additive attention over the annotations of a batch of source sentences, one decoder step
//! at a time, and its backward pass: the part of [`Seq2Seq`](crate::Seq2Seq) that Bahdanau
//! et al. (2015, §3.1) added to the encoder-decoder.
//!
//! For decoder step `i` with previous state `s_{i-1}` and annotations `h_j`:
//! `e_ij = v^T tanh(W s_{i-1} + U h_j)`, `a_ij = softmax_j(e_ij)`, `c_i = sum_j a_ij h_j`.
//! The parameters are an [`Additive`] scorer (`W` is `d_attn x hidden`, `U` is
//! `d_attn x d_annotation`), whose `U h_j` is computed once per batch, as its
//! [`precompute`](Additive::precompute) does for one sentence.
//!
//! Layout as in [`gru`](super::gru): annotations are `(n * b) x d` with row `j * b + k` for
//! position `j` of sentence `k`; queries and contexts are `b x d` per step.

use ndarray::linalg::general_mat_vec_mul;
use ndarray::{Array1, Array2, ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, s};

use crate::additive::Additive;
use crate::float::tanh_in_place;
use crate::matmul::general_mat_mul;

use super::params::Params;

impl Params for Additive {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        vec![
            self.w.view().into_dyn(),
            self.u.view().into_dyn(),
            self.v.view().into_dyn(),
        ]
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        vec![
            self.w.view_mut().into_dyn(),
            self.u.view_mut().into_dyn(),
            self.v.view_mut().into_dyn(),
        ]
    }
    fn zeros_like(&self) -> Self {
        Self {
            w: Array2::zeros(self.w.raw_dim()),
            u: Array2::zeros(self.u.raw_dim()),
            v: Array1::zeros(self.v.len()),
        }
    }
}

/// The forward state of attention over one batch: `U h_j` of every annotation, and per step
/// the hidden activations `tanh(W s + U h_j)` and the weights, kept for the backward pass.
#[derive(Debug, Clone)]
pub(crate) struct AttentionRun {
    batch: usize,
    n: usize,
    /// `U h_j`, `(n * batch) x d_attn`.
    uh: Array2<f64>,
    /// Step `i`'s `tanh(W s_{i-1} + U h_j)` in rows `i * n * batch..`, `(steps * n * batch) x
    /// d_attn`.
    hidden: Array2<f64>,
    /// Step `i`'s weights in rows `i * batch..`, `(steps * batch) x n`.
    weights: Array2<f64>,
    /// `W s_{i-1}` of the current step, `batch x d_attn` (scratch).
    ws: Array2<f64>,
    /// The current step's scores, `n * batch` (scratch).
    scores: Array1<f64>,
}

impl AttentionRun {
    /// Attention of `steps` decoder steps over the annotations `ann` of `batch` sentences.
    pub(crate) fn new(att: &Additive, ann: &Array2<f64>, batch: usize, steps: usize) -> Self {
        let rows = ann.nrows();
        let d = att.d_attn();
        Self {
            batch,
            n: rows / batch,
            uh: ann.dot(&att.u.t()),
            hidden: Array2::zeros((steps * rows, d)),
            weights: Array2::zeros((steps * batch, rows / batch)),
            ws: Array2::zeros((batch, d)),
            scores: Array1::zeros(rows),
        }
    }

    /// Step `i`: the weights of every sentence for the queries `query` (`batch x hidden`,
    /// the states `s_{i-1}`), and the contexts written into `ctx` (`batch x d_annotation`).
    pub(crate) fn step(
        &mut self,
        att: &Additive,
        ann: &Array2<f64>,
        i: usize,
        query: ArrayView2<'_, f64>,
        mut ctx: ArrayViewMut2<'_, f64>,
    ) {
        let (b, n) = (self.batch, self.n);
        general_mat_mul(1.0, &query, &att.w.t(), 0.0, &mut self.ws);
        let mut hidden = self.hidden.slice_mut(s![i * n * b..(i + 1) * n * b, ..]);
        hidden.assign(&self.uh);
        for mut block in hidden.exact_chunks_mut((b, att.d_attn())) {
            block += &self.ws;
        }
        tanh_in_place(hidden.as_slice_mut().expect("rows of a standard array"));
        general_mat_vec_mul(1.0, &hidden, &att.v, 0.0, &mut self.scores);
        let mut weights = self.weights.slice_mut(s![i * b..(i + 1) * b, ..]);
        for (k, mut w) in weights.rows_mut().into_iter().enumerate() {
            let row = w.as_slice_mut().expect("a standard row");
            let mut max = f64::NEG_INFINITY;
            for (j, x) in row.iter_mut().enumerate() {
                *x = self.scores[j * b + k];
                max = max.max(*x);
            }
            let mut sum = 0.0;
            for x in row.iter_mut() {
                *x = (*x - max).exp();
                sum += *x;
            }
            row.iter_mut().for_each(|x| *x /= sum);
        }
        ctx.fill(0.0);
        for j in 0..n {
            let a = ann.slice(s![j * b..(j + 1) * b, ..]);
            for ((mut c, h), w) in ctx
                .rows_mut()
                .into_iter()
                .zip(a.rows())
                .zip(weights.column(j))
            {
                c.scaled_add(*w, &h);
            }
        }
    }

    /// The weights of sentence `k` at every step, `steps x n`.
    pub(crate) fn weights_of(&self, k: usize) -> Array2<f64> {
        self.weights.slice(s![k..;self.batch, ..]).to_owned()
    }
}

/// The backward state of an [`AttentionRun`]: gradients that are summed over the steps and
/// turned into parameter gradients once, at the end ([`AttentionBackward::finish`]).
#[derive(Debug, Clone)]
pub(crate) struct AttentionBackward {
    /// `dL/d(U h_j)`, summed over the steps, `(n * batch) x d_attn`.
    d_uh: Array2<f64>,
    /// Step `i`'s `dL/d(W s_{i-1})` in rows `i * batch..`, `(steps * batch) x d_attn`.
    d_ws: Array2<f64>,
    /// The current step's gradient at the pre-activations, `(n * batch) x d_attn` (scratch).
    delta: Array2<f64>,
    /// The current step's `dL/de`, `n * batch` (scratch).
    d_scores: Array1<f64>,
}

impl AttentionBackward {
    pub(crate) fn new(run: &AttentionRun) -> Self {
        Self {
            d_uh: Array2::zeros(run.uh.raw_dim()),
            d_ws: Array2::zeros((run.weights.nrows(), run.uh.ncols())),
            delta: Array2::zeros(run.uh.raw_dim()),
            d_scores: Array1::zeros(run.uh.nrows()),
        }
    }

    /// Backward of step `i` given `dL/dc_i` (`batch x d_annotation`): adds into `d_ann` (the
    /// annotations' gradient through the weighted sum), `d_query` (`dL/ds_{i-1}` through
    /// `W`) and `grads.v`; keeps what [`AttentionBackward::finish`] needs for `W` and `U`.
    ///
    /// `dL/da_ij = dL/dc_i . h_j`; `dL/de_i = softmax_backward(a_i, dL/da_i)`; with
    /// `t = tanh(W s + U h_j)`, `delta_ij = dL/de_ij v ⊙ (1 - t^2)`.
    #[allow(
        clippy::too_many_arguments,
        reason = "one backward step of a batched layer"
    )]
    pub(crate) fn step(
        &mut self,
        run: &AttentionRun,
        att: &Additive,
        ann: &Array2<f64>,
        i: usize,
        d_ctx: ArrayView2<'_, f64>,
        d_ann: &mut Array2<f64>,
        d_query: &mut Array2<f64>,
        grads: &mut Additive,
    ) {
        let (b, n) = (run.batch, run.n);
        let weights = run.weights.slice(s![i * b..(i + 1) * b, ..]);
        for (k, (w, dc)) in weights.rows().into_iter().zip(d_ctx.rows()).enumerate() {
            let mut wd = 0.0;
            for j in 0..n {
                let r = j * b + k;
                let da = dc.dot(&ann.row(r));
                self.d_scores[r] = da;
                wd += w[j] * da;
                d_ann.row_mut(r).scaled_add(w[j], &dc);
            }
            for j in 0..n {
                let r = j * b + k;
                self.d_scores[r] = w[j] * (self.d_scores[r] - wd);
            }
        }
        let hidden = run.hidden.slice(s![i * n * b..(i + 1) * n * b, ..]);
        general_mat_vec_mul(1.0, &hidden.t(), &self.d_scores, 1.0, &mut grads.v);
        ndarray::Zip::from(self.delta.rows_mut())
            .and(hidden.rows())
            .and(&self.d_scores)
            .for_each(|mut d, t, &g| {
                ndarray::Zip::from(&mut d)
                    .and(&t)
                    .and(&att.v)
                    .for_each(|d, &t, &v| *d = g * v * (1.0 - t * t));
            });
        self.d_uh += &self.delta;
        let mut d_ws = self.d_ws.slice_mut(s![i * b..(i + 1) * b, ..]);
        for block in self.delta.exact_chunks((b, att.d_attn())) {
            d_ws += &block;
        }
        general_mat_mul(1.0, &d_ws, &att.w, 1.0, d_query);
    }

    /// After the last backward step: adds `dL/dU` and `dL/dW` into `grads` and `U^T`'s share of
    /// the annotations' gradient into `d_ann`. `queries` are the states every step read, in
    /// two blocks: `s_0` (`batch` rows) and `s_1 ..= s_{steps-1}`.
    pub(crate) fn finish(
        &self,
        att: &Additive,
        ann: &Array2<f64>,
        queries: (ArrayView2<'_, f64>, ArrayView2<'_, f64>),
        d_ann: &mut Array2<f64>,
        grads: &mut Additive,
    ) {
        let b = queries.0.nrows();
        general_mat_mul(1.0, &self.d_uh, &att.u, 1.0, d_ann);
        general_mat_mul(1.0, &self.d_uh.t(), ann, 1.0, &mut grads.u);
        let (first, later) = (s![..b, ..], s![b.., ..]);
        general_mat_mul(
            1.0,
            &self.d_ws.slice(first).t(),
            &queries.0,
            1.0,
            &mut grads.w,
        );
        general_mat_mul(
            1.0,
            &self.d_ws.slice(later).t(),
            &queries.1,
            1.0,
            &mut grads.w,
        );
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;
    use crate::softmax::softmax;
    use crate::train::gradcheck::{check_input, check_params};

    /// Runs `steps` steps with the queries `q` (`(steps * batch) x hidden`) and returns the
    /// contexts, `(steps * batch) x d`.
    fn contexts(
        att: &Additive,
        ann: &Array2<f64>,
        q: &Array2<f64>,
        batch: usize,
    ) -> (Array2<f64>, AttentionRun) {
        let steps = q.nrows() / batch;
        let mut run = AttentionRun::new(att, ann, batch, steps);
        let mut ctx = Array2::zeros((steps * batch, ann.ncols()));
        for i in 0..steps {
            let rows = s![i * batch..(i + 1) * batch, ..];
            run.step(att, ann, i, q.slice(rows), ctx.slice_mut(rows));
        }
        (ctx, run)
    }

    #[test]
    fn batched_weights_equal_the_additive_scorer_one_sentence_at_a_time() {
        let mut rng = StdRng::seed_from_u64(11);
        let (batch, n, steps) = (3, 5, 2);
        let att = Additive::new(4, 6, 7, &mut rng);
        let ann = randn2(n * batch, 6, &mut rng);
        let q = randn2(steps * batch, 4, &mut rng);
        let (ctx, run) = contexts(&att, &ann, &q, batch);
        for k in 0..batch {
            let h = ann.slice(s![k..;batch, ..]);
            let weights = run.weights_of(k);
            for i in 0..steps {
                let want = softmax(&att.scores(&q.row(i * batch + k), &h));
                let got = weights.row(i);
                assert!(
                    (&got - &want).iter().all(|d| d.abs() < 1e-14),
                    "{got} vs {want}"
                );
                let c = want.dot(&h);
                let got_c = ctx.row(i * batch + k);
                assert!((&got_c - &c).iter().all(|d| d.abs() < 1e-14));
            }
        }
    }

    #[test]
    fn backward_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(12);
        let (batch, n, steps) = (2, 4, 3);
        let att = Additive::new(3, 5, 4, &mut rng);
        let ann = randn2(n * batch, 5, &mut rng);
        let q = randn2(steps * batch, 3, &mut rng);
        let r = randn2(steps * batch, 5, &mut rng);
        let loss = |a: &Additive, ann: &Array2<f64>, q: &Array2<f64>| {
            (contexts(a, ann, q, batch).0 * &r).sum()
        };
        let (_, run) = contexts(&att, &ann, &q, batch);
        let mut back = AttentionBackward::new(&run);
        let mut grads = att.zeros_like();
        let mut d_ann = Array2::zeros(ann.raw_dim());
        let mut d_q = Array2::zeros(q.raw_dim());
        for i in (0..steps).rev() {
            let rows = s![i * batch..(i + 1) * batch, ..];
            let mut d_query = Array2::zeros((batch, 3));
            back.step(
                &run,
                &att,
                &ann,
                i,
                r.slice(rows),
                &mut d_ann,
                &mut d_query,
                &mut grads,
            );
            d_q.slice_mut(rows).assign(&d_query);
        }
        let queries = (q.slice(s![..batch, ..]), q.slice(s![batch.., ..]));
        back.finish(&att, &ann, queries, &mut d_ann, &mut grads);
        check_params(&att, &grads, |a| loss(a, &ann, &q));
        check_input(&ann, &d_ann, |x| loss(&att, x, &q));
        check_input(&q, &d_q, |x| loss(&att, &ann, x));
    }
}
