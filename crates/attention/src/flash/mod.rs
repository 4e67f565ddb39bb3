//! Fast scaled dot-product attention for long sequences: the FlashAttention idea (Dao et al.
//! 2022) on a CPU, in `f32` or `f64`.
//!
//! [`scaled_dot_product_attention`](crate::scaled_dot_product_attention) forms the whole
//! `n_q x n_k` weight matrix, which is what the articles want to look at but costs `n^2`
//! memory and two passes over it. [`flash_attention`] returns only the output: it walks the
//! keys block by block with an *online softmax* (a running maximum and sum per query,
//! rescaling the partial output when the maximum grows), so scores live only in a small tile
//! that stays in cache, and memory is `O((n_q + n_k) d)`. The inner loops are in `kernel`;
//! this module checks shapes, picks the instruction set and splits rows across threads.
//! `backward` is the training side in plain `f64`: the forward pass that also keeps each
//! row's log-sum-exp, and the gradients that recompute the weights block by block from it.

mod backward;
mod kernel;

use std::thread;

use ndarray::{Array2, ArrayBase, ArrayView2, ArrayViewMut2, Axis, Data, Ix2};

use crate::float::Float;
use crate::simd::{Isa, Simd};
pub use backward::{FlashGrads, flash_attention_backward, flash_attention_lse};
use kernel::{Packed, Scratch, Tiles, row_block};

/// Below this many query rows, a second thread costs more to start than it saves.
const PAR_MIN_ROWS: usize = 256;

/// Scaled dot-product attention `softmax(Q K^T / sqrt(d_k)) V`, computed block by block
/// without ever forming the `n_q x n_k` weights, on the calling thread.
///
/// Rows of `q` (`n_q x d_k`) are queries, rows of `k` (`n_k x d_k`) keys and rows of `v`
/// (`n_k x d_v`) values; the result is `n_q x d_v`. With `causal`, query `i` attends to
/// keys `0..=i` only (top-left aligned, as PyTorch's `is_causal`; with `n_q == n_k` this is
/// [`causal_mask`](crate::causal_mask)).
///
/// Agrees with [`scaled_dot_product_attention`](crate::scaled_dot_product_attention) to
/// rounding (the tests hold `f64` to 1e-12 and `f32` to 1e-5 relative to the largest output):
/// the softmax uses [`Float::exp_approx`] and sums in another order. Memory beyond the
/// result is `O((n_q + n_k) (d_k + d_v))`; the calling thread keeps its buffer for the
/// packed keys (`n_k x d_k`, if at most 16 MiB) for the next call, as BLAS libraries do.
/// NaN or infinite inputs give NaN outputs.
///
/// ```
/// use attention::{flash_attention, scaled_dot_product_attention};
/// use ndarray::array;
///
/// let x = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]];
/// let fast = flash_attention(&x, &x, &x, true);
/// let (reference, _) = scaled_dot_product_attention(&x, &x, &x, Some(&attention::causal_mask(3)));
/// assert!((&fast - &reference).iter().all(|d| d.abs() < 1e-12));
/// let x32 = x.mapv(|v| v as f32);
/// assert_eq!(flash_attention(&x32, &x32, &x32, false).dim(), (3, 2));
/// ```
///
/// # Panics
///
/// If `q` and `k` differ in width, `k` and `v` in rows, or `n_k` or `d_k` is 0 (no
/// distribution over keys exists).
#[track_caller]
pub fn flash_attention<F, S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    causal: bool,
) -> Array2<F>
where
    F: Float,
    S1: Data<Elem = F>,
    S2: Data<Elem = F>,
    S3: Data<Elem = F>,
{
    flash_attention_threads(q, k, v, causal, 1)
}

/// [`flash_attention`] with its query rows split over up to `threads` scoped threads.
///
/// Use it from a single-threaded caller: inside a thread pool or next to a multi-threaded
/// BLAS the threads would compete for the same cores. Below 256 query rows it stays on the
/// calling thread; `threads == 0` counts as 1. The result is bit-for-bit the same for every
/// thread count.
///
/// # Panics
///
/// As [`flash_attention`].
#[track_caller]
pub fn flash_attention_threads<F, S1, S2, S3>(
    q: &ArrayBase<S1, Ix2>,
    k: &ArrayBase<S2, Ix2>,
    v: &ArrayBase<S3, Ix2>,
    causal: bool,
    threads: usize,
) -> Array2<F>
where
    F: Float,
    S1: Data<Elem = F>,
    S2: Data<Elem = F>,
    S3: Data<Elem = F>,
{
    check_shapes(q.dim(), k.dim(), v.dim());
    let job = Job {
        q: q.view(),
        k: k.view(),
        v: v.view(),
        causal,
        threads,
    };
    job.run(Isa::best())
}

#[track_caller]
fn check_shapes(q: (usize, usize), k: (usize, usize), v: (usize, usize)) {
    const OP: &str = "flash_attention";
    assert!(
        q.1 == k.1,
        "{OP}: queries have width {} but keys have {}",
        q.1,
        k.1
    );
    assert!(k.0 == v.0, "{OP}: {} keys but {} value rows", k.0, v.0);
    assert!(k.0 > 0, "{OP}: no keys to attend to");
    assert!(k.1 > 0, "{OP}: keys of width 0");
}

/// One call's operands and options.
struct Job<'a, F> {
    q: ArrayView2<'a, F>,
    k: ArrayView2<'a, F>,
    v: ArrayView2<'a, F>,
    causal: bool,
    threads: usize,
}

impl<F: Float> Job<'_, F> {
    /// Runs the kernel for `isa` with its register blocking: `MR` rows by `NR` registers.
    fn run(&self, isa: Isa) -> Array2<F> {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => self.run_with::<F::Avx512, 6, 4>(isa),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => self.run_with::<F::Avx2, 6, 2>(isa),
            _ => self.run_with::<F::Scalar, 4, 4>(Isa::Scalar),
        }
    }

    fn run_with<S: Simd<F = F>, const MR: usize, const NR: usize>(&self, isa: Isa) -> Array2<F> {
        let (n_q, d_v) = (self.q.nrows(), self.v.ncols());
        let mut out = Array2::from_elem((n_q, d_v), F::ZERO);
        if n_q == 0 || d_v == 0 {
            return out;
        }
        let tiles = Tiles::new::<F>(MR, NR * S::LANES);
        let packed = Packed::new(self.q, self.k, self.v, &tiles);
        let blocks: Vec<(usize, ArrayViewMut2<'_, F>)> = out
            .axis_chunks_iter_mut(Axis(0), tiles.br)
            .enumerate()
            .map(|(b, rows)| (b * tiles.br, rows))
            .collect();
        let work = |blocks: &mut [(usize, ArrayViewMut2<'_, F>)]| {
            let mut scratch = Scratch::new(&tiles, &packed);
            isa.run(
                #[inline(always)]
                || {
                    for (r0, rows) in blocks {
                        // SAFETY: `run` compiled this for `isa`, whose registers S are.
                        unsafe {
                            row_block::<S, F, MR, NR>(
                                &packed,
                                &tiles,
                                self.causal,
                                *r0,
                                rows,
                                &mut scratch,
                            );
                        }
                    }
                },
            );
        };
        let threads = if n_q < PAR_MIN_ROWS { 1 } else { self.threads };
        in_parallel(blocks, threads, work);
        out
    }
}

/// Runs `work` over `items` on up to `threads` scoped threads, the calling one among them.
/// Items are dealt round-robin, so that with a causal mask (later rows see more keys) every
/// thread gets early and late rows alike.
fn in_parallel<T: Send>(mut items: Vec<T>, threads: usize, work: impl Fn(&mut [T]) + Sync) {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return work(&mut items);
    }
    let mut shares: Vec<Vec<T>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        shares[i % threads].push(item);
    }
    thread::scope(|scope| {
        let (mine, others) = shares.split_first_mut().expect("threads >= 2");
        for share in others {
            scope.spawn(|| work(share));
        }
        work(mine);
    });
}

#[cfg(test)]
mod tests;
