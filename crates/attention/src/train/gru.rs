//! The gated recurrent unit of Cho et al. (2014), the recurrent layer of Bahdanau et al.'s
//! encoder and decoder, run over a batch of sequences, with its backward pass through time.
//!
//! With input `x_t`, previous state `h_{t-1}` and `σ` the logistic function (Bahdanau et
//! al. 2015, appendix A.1.1, in the row-vector convention of [`nn`](super::nn); Cho et al.
//! write the same unit with `z` and `1 - z` swapped):
//!
//! ```text
//! z_t  = σ(x_t W_z + h_{t-1} U_z + b_z)              update gate
//! r_t  = σ(x_t W_r + h_{t-1} U_r + b_r)              reset gate
//! h~_t = tanh(x_t W_h + (r_t ⊙ h_{t-1}) U_h + b_h)   candidate
//! h_t  = (1 - z_t) ⊙ h_{t-1} + z_t ⊙ h~_t
//! ```
//!
//! Layout: a batch of `b` sequences of `n` steps is one `(n * b) x d` matrix, **step after
//! step** (row `t * b + i` is step `t` of sequence `i`), so that the rows of one step are one
//! contiguous block for the matrix products. (The Transformer layers of `nn` put sequence
//! after sequence instead: they have no steps.)
//!
//! The decoder of [`Seq2Seq`](crate::Seq2Seq) computes part of its input as it goes, so
//! besides [`Gru::forward`] and [`Gru::backward`] over whole sequences the layer offers the
//! crate the single steps they are made of: the input projections of a step are written into
//! the [`GruCache`] (rows `t * batch..(t + 1) * batch` of its gates and candidate hold
//! `x_t W + b`), then `Gru::step` replaces them with the step's activations. The matrix
//! products write into preallocated rows (`general_mat_mul`) and the activations use the
//! vectorised `tanh` of the fused kernels.

use ndarray::{Array1, Array2, ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, Axis, s};
use rand::Rng;

use crate::float::{sigmoid_in_place, tanh_in_place};
use crate::init::xavier_uniform;
use crate::matmul::general_mat_mul;

use super::params::Params;

/// A GRU layer: `d_in` inputs, `hidden` state units. The two gates are stored side by side
/// in one matrix each (columns `0..hidden` are the update gate `z`, `hidden..2 hidden` the
/// reset gate `r`), so that one product computes both.
///
/// ```
/// use attention::Gru;
/// use ndarray::Array2;
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let gru = Gru::new(3, 4, &mut StdRng::seed_from_u64(0));
/// let x = Array2::ones((5 * 2, 3)); // 5 steps of a batch of 2, step after step
/// let cache = gru.forward(&x, &Array2::zeros((2, 4)));
/// assert_eq!(cache.outputs().dim(), (10, 4));
/// // Both sequences are the same, so are their states.
/// assert_eq!(cache.outputs().row(8), cache.outputs().row(9));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Gru {
    /// Input weights of the gates, `d_in x 2 hidden` (`W_z | W_r`).
    pub w_gates: Array2<f64>,
    /// Input weights of the candidate, `d_in x hidden` (`W_h`).
    pub w_cand: Array2<f64>,
    /// Recurrent weights of the gates, `hidden x 2 hidden` (`U_z | U_r`).
    pub u_gates: Array2<f64>,
    /// Recurrent weights of the candidate, `hidden x hidden` (`U_h`), applied to `r ⊙ h`.
    pub u_cand: Array2<f64>,
    /// Biases of the gates, `2 hidden`.
    pub b_gates: Array1<f64>,
    /// Bias of the candidate, `hidden`.
    pub b_cand: Array1<f64>,
}

/// Every step's activations of one run of a [`Gru`] over a batch, step after step: the states
/// it produced ([`GruCache::outputs`]) and what [`Gru::backward`] needs.
#[derive(Debug, Clone, PartialEq)]
pub struct GruCache {
    batch: usize,
    h0: Array2<f64>,
    /// `z | r`, `(steps * batch) x 2 hidden`.
    gates: Array2<f64>,
    /// `h~`, `(steps * batch) x hidden`.
    cand: Array2<f64>,
    /// `r ⊙ h_{t-1}`.
    reset_state: Array2<f64>,
    /// `h_t`.
    states: Array2<f64>,
}

impl GruCache {
    /// A run of `steps` steps from the initial states `h0` (`batch x hidden`), with the input
    /// projections of every step (`(steps * batch) x 2 hidden` for the gates,
    /// `(steps * batch) x hidden` for the candidate), before any step has run.
    ///
    /// # Panics
    ///
    /// If the shapes disagree.
    #[track_caller]
    pub(crate) fn new(h0: Array2<f64>, gates: Array2<f64>, cand: Array2<f64>) -> Self {
        let (batch, hidden) = h0.dim();
        assert!(
            batch > 0
                && gates.nrows().is_multiple_of(batch)
                && gates.dim() == (cand.nrows(), 2 * hidden)
                && cand.ncols() == hidden,
            "GruCache::new: shapes"
        );
        let rows = cand.nrows();
        Self {
            batch,
            h0,
            gates,
            cand,
            reset_state: Array2::zeros((rows, hidden)),
            states: Array2::zeros((rows, hidden)),
        }
    }

    /// The states `h_1 ..= h_n`, `(steps * batch) x hidden`, step after step.
    pub fn outputs(&self) -> &Array2<f64> {
        &self.states
    }

    /// The state after step `t` (`h_{t+1}` in 1-based time), `batch x hidden`.
    ///
    /// # Panics
    ///
    /// If `t` is not a step of the run.
    #[track_caller]
    pub fn state(&self, t: usize) -> ArrayView2<'_, f64> {
        self.states.slice(s![self.rows(t), ..])
    }

    /// The initial states, `batch x hidden`.
    pub fn initial(&self) -> &Array2<f64> {
        &self.h0
    }

    /// Number of steps.
    pub fn steps(&self) -> usize {
        self.states.nrows() / self.batch
    }

    /// Sequences in the batch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The input projections of step `t` (gates, candidate), to be filled in before
    /// [`Gru::step`] runs it.
    pub(crate) fn inputs_mut(
        &mut self,
        t: usize,
    ) -> (ArrayViewMut2<'_, f64>, ArrayViewMut2<'_, f64>) {
        let rows = self.rows(t);
        (
            self.gates.slice_mut(s![rows.clone(), ..]),
            self.cand.slice_mut(s![rows, ..]),
        )
    }

    /// `[h_0; h_1; ...; h_{n-1}]`, the state every step started from, as the two blocks `h_0`
    /// and `h_1 ..= h_{n-1}`.
    pub(crate) fn previous_states(&self) -> (ArrayView2<'_, f64>, ArrayView2<'_, f64>) {
        let last = self.states.nrows() - self.batch;
        (self.h0.view(), self.states.slice(s![..last, ..]))
    }

    fn rows(&self, t: usize) -> std::ops::Range<usize> {
        t * self.batch..(t + 1) * self.batch
    }

    /// The state the step `t` starts from.
    fn previous(&self, t: usize) -> ArrayView2<'_, f64> {
        if t == 0 {
            self.h0.view()
        } else {
            self.state(t - 1)
        }
    }
}

/// Gradients of one backward step at the pre-activations, `batch` rows each: what
/// [`Gru::step_backward`] writes and [`Gru::weight_grads`] reads. Allocated once per run.
#[derive(Debug, Clone)]
pub(crate) struct GruGrads {
    /// `dL/d(pre-activation of z | r)`, `(steps * batch) x 2 hidden`.
    pub(crate) gates: Array2<f64>,
    /// `dL/d(pre-activation of h~)`, `(steps * batch) x hidden`.
    pub(crate) cand: Array2<f64>,
    /// `dL/d(r ⊙ h_{t-1})` of the current step, `batch x hidden` (scratch).
    reset_state: Array2<f64>,
}

impl GruGrads {
    /// Zeros for a run of `cache`'s shape.
    pub(crate) fn for_run(cache: &GruCache) -> Self {
        Self {
            gates: Array2::zeros(cache.gates.raw_dim()),
            cand: Array2::zeros(cache.cand.raw_dim()),
            reset_state: Array2::zeros(cache.h0.raw_dim()),
        }
    }
}

impl Gru {
    /// Xavier-uniform weights (one `d_in x hidden` or `hidden x hidden` block per gate and
    /// the candidate), zero biases.
    pub fn new<R: Rng + ?Sized>(d_in: usize, hidden: usize, rng: &mut R) -> Self {
        let blocks = |rows: usize, rng: &mut R| {
            let (z, r) = (
                xavier_uniform(rows, hidden, rng),
                xavier_uniform(rows, hidden, rng),
            );
            let both = ndarray::concatenate(Axis(1), &[z.view(), r.view()]).expect("same rows");
            // concatenate keeps the column-major layout it builds along axis 1.
            both.as_standard_layout().into_owned()
        };
        Self {
            w_gates: blocks(d_in, rng),
            w_cand: xavier_uniform(d_in, hidden, rng),
            u_gates: blocks(hidden, rng),
            u_cand: xavier_uniform(hidden, hidden, rng),
            b_gates: Array1::zeros(2 * hidden),
            b_cand: Array1::zeros(hidden),
        }
    }

    /// State width.
    pub fn hidden(&self) -> usize {
        self.u_cand.nrows()
    }

    /// Input width.
    pub fn d_in(&self) -> usize {
        self.w_cand.nrows()
    }

    /// The input projections `x W + b` of every row of `x` (gates, candidate): the start of
    /// a [`GruCache`].
    ///
    /// # Panics
    ///
    /// If `x.ncols() != d_in`.
    #[track_caller]
    pub(crate) fn project(&self, x: &Array2<f64>) -> (Array2<f64>, Array2<f64>) {
        assert_eq!(x.ncols(), self.d_in(), "Gru::project: input width");
        (
            x.dot(&self.w_gates) + &self.b_gates,
            x.dot(&self.w_cand) + &self.b_cand,
        )
    }

    /// Runs every step over the inputs `x` (`(steps * batch) x d_in`, step after step) from
    /// the states `h0` (`batch x hidden`).
    ///
    /// # Panics
    ///
    /// If the widths disagree, `x` has no rows or they are not whole steps of the batch.
    #[track_caller]
    pub fn forward(&self, x: &Array2<f64>, h0: &Array2<f64>) -> GruCache {
        assert_eq!(h0.ncols(), self.hidden(), "Gru::forward: state width");
        assert!(x.nrows() > 0, "Gru::forward: no steps");
        let (gates, cand) = self.project(x);
        let mut cache = GruCache::new(h0.clone(), gates, cand);
        for t in 0..cache.steps() {
            self.step(&mut cache, t);
        }
        cache
    }

    /// Step `t` of `cache`: the recurrence on top of the input projections already in its
    /// rows (see [`GruCache`]).
    ///
    /// # Panics
    ///
    /// If `t` is not a step of the cache or the cache has another width.
    #[track_caller]
    pub(crate) fn step(&self, cache: &mut GruCache, t: usize) {
        let h = self.hidden();
        assert!(
            t < cache.steps() && cache.h0.ncols() == h,
            "Gru::step: step or width"
        );
        let rows = cache.rows(t);
        let GruCache {
            h0,
            gates,
            cand,
            reset_state,
            states,
            ..
        } = cache;
        let (done, mut rest) = states.view_mut().split_at(Axis(0), rows.start);
        let prev = if t == 0 {
            h0.view()
        } else {
            done.slice(s![rows.start - rows.len().., ..])
        };
        let mut gate = gates.slice_mut(s![rows.clone(), ..]);
        general_mat_mul(1.0, &prev, &self.u_gates, 1.0, &mut gate);
        sigmoid_in_place(gate.as_slice_mut().expect("rows of a standard array"));
        let mut q = reset_state.slice_mut(s![rows.clone(), ..]);
        ndarray::Zip::from(&mut q)
            .and(&gate.slice(s![.., h..]))
            .and(&prev)
            .for_each(|q, &r, &p| *q = r * p);
        let mut c = cand.slice_mut(s![rows.clone(), ..]);
        general_mat_mul(1.0, &q, &self.u_cand, 1.0, &mut c);
        tanh_in_place(c.as_slice_mut().expect("rows of a standard array"));
        let out = rest.slice_mut(s![..rows.len(), ..]);
        ndarray::Zip::from(out)
            .and(&gate.slice(s![.., ..h]))
            .and(&c)
            .and(&prev)
            .for_each(|o, &z, &c, &p| *o = p + z * (c - p));
    }

    /// Backward of step `t`: `grad_h` holds `dL/dh_t` on entry and the part of `dL/dh_{t-1}`
    /// that flows through this step on return; the gradients at the step's pre-activations go
    /// into rows `t` of `out` (overwritten).
    ///
    /// With `g = dL/dh_t`: `dL/dh~ = g ⊙ z`, `dL/dz = g ⊙ (h~ - h_{t-1})`, then through the
    /// `tanh` and the logistic functions; `dL/dh_{t-1} = g ⊙ (1 - z) + (dL/dq ⊙ r) +
    /// dL/d(gates) U_gates^T`, with `q = r ⊙ h_{t-1}` and `dL/dq = dL/d(cand) U_h^T`.
    ///
    /// # Panics
    ///
    /// If the shapes disagree with the cache.
    #[track_caller]
    pub(crate) fn step_backward(
        &self,
        cache: &GruCache,
        t: usize,
        grad_h: &mut Array2<f64>,
        out: &mut GruGrads,
    ) {
        let h = self.hidden();
        assert!(
            t < cache.steps() && grad_h.dim() == cache.h0.dim(),
            "Gru::step_backward: step or shape"
        );
        let rows = cache.rows(t);
        let prev = cache.previous(t);
        let gate = cache.gates.slice(s![rows.clone(), ..]);
        let (z, r) = (gate.slice(s![.., ..h]), gate.slice(s![.., h..]));
        let c = cache.cand.slice(s![rows.clone(), ..]);
        let mut dgate = out.gates.slice_mut(s![rows.clone(), ..]);
        let mut dcand = out.cand.slice_mut(s![rows, ..]);
        // Candidate and update gate; grad_h becomes the direct path g ⊙ (1 - z).
        ndarray::Zip::from(&mut dcand)
            .and(dgate.slice_mut(s![.., ..h]))
            .and(&mut *grad_h)
            .and(&z)
            .and(&c)
            .and(&prev)
            .for_each(|dc, dz, g, &z, &c, &p| {
                *dc = *g * z * (1.0 - c * c);
                *dz = *g * (c - p) * z * (1.0 - z);
                *g *= 1.0 - z;
            });
        general_mat_mul(1.0, &dcand, &self.u_cand.t(), 0.0, &mut out.reset_state);
        ndarray::Zip::from(dgate.slice_mut(s![.., h..]))
            .and(&mut *grad_h)
            .and(&out.reset_state)
            .and(&r)
            .and(&prev)
            .for_each(|dr, g, &dq, &r, &p| {
                *dr = dq * p * r * (1.0 - r);
                *g += dq * r;
            });
        general_mat_mul(1.0, &dgate, &self.u_gates.t(), 1.0, grad_h);
    }

    /// Adds the gradients of the recurrent weights and the biases of a whole run into
    /// `grads`, from the pre-activation gradients [`Gru::step_backward`] left in `d`. (The
    /// input weights' gradients depend on what the input is: [`Gru::backward`] adds them for a
    /// plain input.)
    pub(crate) fn weight_grads(&self, cache: &GruCache, d: &GruGrads, grads: &mut Self) {
        let b = cache.batch;
        let (h0, rest) = cache.previous_states();
        let (first, later) = (s![..b, ..], s![b.., ..]);
        general_mat_mul(1.0, &h0.t(), &d.gates.slice(first), 1.0, &mut grads.u_gates);
        general_mat_mul(
            1.0,
            &rest.t(),
            &d.gates.slice(later),
            1.0,
            &mut grads.u_gates,
        );
        general_mat_mul(1.0, &cache.reset_state.t(), &d.cand, 1.0, &mut grads.u_cand);
        grads.b_gates += &d.gates.sum_axis(Axis(0));
        grads.b_cand += &d.cand.sum_axis(Axis(0));
    }

    /// Adds `x^T d` into the input weights' gradients and returns `dL/dx = d W^T`, for a run
    /// whose input projections were [`Gru::project`] of `x`.
    pub(crate) fn input_grads(
        &self,
        x: ArrayView2<'_, f64>,
        d: &GruGrads,
        grads: &mut Self,
    ) -> Array2<f64> {
        general_mat_mul(1.0, &x.t(), &d.gates, 1.0, &mut grads.w_gates);
        general_mat_mul(1.0, &x.t(), &d.cand, 1.0, &mut grads.w_cand);
        let mut gx = d.gates.dot(&self.w_gates.t());
        general_mat_mul(1.0, &d.cand, &self.w_cand.t(), 1.0, &mut gx);
        gx
    }

    /// Backward through time of [`Gru::forward`] on `x`: `grad_states` is `dL/dh_t` for every
    /// step (from whatever read the states); adds every parameter's gradient into `grads` and
    /// returns `(dL/dx, dL/dh0)`.
    ///
    /// # Panics
    ///
    /// If `grad_states` is not the shape of the cache's outputs.
    #[track_caller]
    pub fn backward(
        &self,
        x: &Array2<f64>,
        cache: &GruCache,
        grad_states: &Array2<f64>,
        grads: &mut Self,
    ) -> (Array2<f64>, Array2<f64>) {
        assert_eq!(
            grad_states.dim(),
            cache.states.dim(),
            "Gru::backward: one gradient per state"
        );
        let mut d = GruGrads::for_run(cache);
        let mut carry = Array2::zeros(cache.h0.raw_dim());
        for t in (0..cache.steps()).rev() {
            carry += &grad_states.slice(s![cache.rows(t), ..]);
            self.step_backward(cache, t, &mut carry, &mut d);
        }
        self.weight_grads(cache, &d, grads);
        (self.input_grads(x.view(), &d, grads), carry)
    }
}

impl Params for Gru {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        vec![
            self.w_gates.view().into_dyn(),
            self.w_cand.view().into_dyn(),
            self.u_gates.view().into_dyn(),
            self.u_cand.view().into_dyn(),
            self.b_gates.view().into_dyn(),
            self.b_cand.view().into_dyn(),
        ]
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        vec![
            self.w_gates.view_mut().into_dyn(),
            self.w_cand.view_mut().into_dyn(),
            self.u_gates.view_mut().into_dyn(),
            self.u_cand.view_mut().into_dyn(),
            self.b_gates.view_mut().into_dyn(),
            self.b_cand.view_mut().into_dyn(),
        ]
    }
    fn zeros_like(&self) -> Self {
        Self {
            w_gates: Array2::zeros(self.w_gates.raw_dim()),
            w_cand: Array2::zeros(self.w_cand.raw_dim()),
            u_gates: Array2::zeros(self.u_gates.raw_dim()),
            u_cand: Array2::zeros(self.u_cand.raw_dim()),
            b_gates: Array1::zeros(self.b_gates.len()),
            b_cand: Array1::zeros(self.b_cand.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::{randn1, randn2};
    use crate::train::gradcheck::{check_input, check_params};

    fn noisy_gru(d_in: usize, hidden: usize, rng: &mut StdRng) -> Gru {
        let mut gru = Gru::new(d_in, hidden, rng);
        gru.b_gates = randn1(2 * hidden, rng) * 0.5;
        gru.b_cand = randn1(hidden, rng) * 0.5;
        gru
    }

    /// One step by the formulas of the module docs, for one sequence, with libm's functions.
    fn reference_step(gru: &Gru, x: &Array1<f64>, h: &Array1<f64>) -> Array1<f64> {
        let n = gru.hidden();
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        let pre = x.dot(&gru.w_gates) + h.dot(&gru.u_gates) + &gru.b_gates;
        let z = pre.slice(s![..n]).mapv(sig);
        let r = pre.slice(s![n..]).mapv(sig);
        let cand = (x.dot(&gru.w_cand) + (&r * h).dot(&gru.u_cand) + &gru.b_cand).mapv(f64::tanh);
        (1.0 - &z) * h + &z * &cand
    }

    #[test]
    fn batched_steps_equal_the_formulas_one_sequence_at_a_time() {
        let mut rng = StdRng::seed_from_u64(1);
        let gru = noisy_gru(3, 5, &mut rng);
        let (steps, batch) = (4, 3);
        let x = randn2(steps * batch, 3, &mut rng);
        let h0 = randn2(batch, 5, &mut rng);
        let cache = gru.forward(&x, &h0);
        for i in 0..batch {
            let mut h = h0.row(i).to_owned();
            for t in 0..steps {
                h = reference_step(&gru, &x.row(t * batch + i).to_owned(), &h);
                let got = cache.outputs().row(t * batch + i);
                assert!((&got - &h).iter().all(|d| d.abs() < 1e-14), "{got} vs {h}");
            }
        }
    }

    #[test]
    fn backward_through_time_matches_finite_differences() {
        let mut rng = StdRng::seed_from_u64(2);
        let gru = noisy_gru(3, 4, &mut rng);
        let (steps, batch) = (5, 2);
        let x = randn2(steps * batch, 3, &mut rng);
        let h0 = randn2(batch, 4, &mut rng);
        let r = randn2(steps * batch, 4, &mut rng);
        let loss =
            |g: &Gru, x: &Array2<f64>, h0: &Array2<f64>| (g.forward(x, h0).outputs() * &r).sum();
        let cache = gru.forward(&x, &h0);
        let mut grads = gru.zeros_like();
        let (gx, gh0) = gru.backward(&x, &cache, &r, &mut grads);
        check_params(&gru, &grads, |g| loss(g, &x, &h0));
        check_input(&x, &gx, |x| loss(&gru, x, &h0));
        check_input(&h0, &gh0, |h0| loss(&gru, &x, h0));
    }

    #[test]
    fn gradients_from_the_last_state_only_reach_every_step() {
        // The encoder's summary reads only the last state: the gradient must still reach the
        // first input through the recurrence.
        let mut rng = StdRng::seed_from_u64(3);
        let gru = noisy_gru(2, 3, &mut rng);
        let (steps, batch) = (6, 1);
        let x = randn2(steps * batch, 2, &mut rng);
        let h0 = Array2::zeros((batch, 3));
        let mut r = Array2::zeros((steps * batch, 3));
        r.row_mut(steps - 1).assign(&randn1(3, &mut rng));
        let cache = gru.forward(&x, &h0);
        let (gx, _) = gru.backward(&x, &cache, &r, &mut gru.zeros_like());
        assert!(gx.row(0).iter().any(|v| v.abs() > 1e-6));
        check_input(&x, &gx, |x| (gru.forward(x, &h0).outputs() * &r).sum());
    }
}
