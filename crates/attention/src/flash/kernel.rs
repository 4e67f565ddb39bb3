//! The inner loops of flash attention, generic over the SIMD register [`Simd`]: packing, a
//! register-blocked GEMM micro-kernel, and the online-softmax update of one block of rows.
//!
//! For a block of `br` query rows the keys are visited in blocks of `bc`:
//!
//! 1. `S = Q_blk K_blk^T` into an `br x bc` scratch tile (queries are pre-scaled by
//!    `1/sqrt(d_k)`).
//! 2. Per row: new running maximum `m'`, `P = exp(S - m')` in place, running sum
//!    `l = l e^{m - m'} + sum P`; masked columns (beyond `n_k`, or in the future when causal)
//!    are always a suffix of the row and get `P = 0`.
//! 3. `O = e^{m - m'} O + P V_blk`, the rescaling folded into the micro-kernel's load of `O`.
//!
//! After the last key block `O / l` is the output. Nothing of size `n_q x n_k` ever exists.

use std::borrow::Cow;

use ndarray::{ArrayView2, ArrayViewMut2, Axis, s};

use crate::float::Float;
use crate::simd::Simd;

/// Block sizes for one instruction set and element type.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tiles {
    /// Rows of the micro-kernel (query rows or rows of `P`).
    pub(super) mr: usize,
    /// Columns of the micro-kernel: `NR` registers of `LANES` elements.
    pub(super) nrl: usize,
    /// Query rows per block, a multiple of `mr`.
    pub(super) br: usize,
    /// Keys per block, a multiple of `nrl`.
    pub(super) bc: usize,
}

impl Tiles {
    /// Tiles of `mr x nrl` registers: a block of rows is four micro-kernel rows, a block of
    /// keys 2 KiB of scores per row (512 `f32` or 256 `f64` keys). Measured on AMD Zen 5:
    /// 2 to 8 row groups and 0.5 to 2 KiB of keys are all within 3%, this one the fastest.
    pub(super) fn new<F>(mr: usize, nrl: usize) -> Self {
        Self {
            mr,
            nrl,
            br: 4 * mr,
            bc: (2048 / size_of::<F>()).next_multiple_of(nrl),
        }
    }
}

/// The operands in the layouts the micro-kernel streams through; `O((n_q + n_k) d)` memory.
pub(super) struct Packed<'a, F: Float> {
    /// Queries as given; each block of rows is copied (scaled) into [`Scratch`].
    q: ArrayView2<'a, F>,
    /// `1 / sqrt(d_k)`.
    scale: F,
    /// Keys transposed in panels of `nrl` keys: key `p nrl + jj`, component `c` sits at
    /// `p d_k nrl + c nrl + jj`; zeros beyond `n_k`. The thread's recycled buffer.
    k: Vec<F>,
    /// Values row by row, `dv_pad` per row (zeros beyond `d_v`): borrowed when `v` is
    /// already laid out so, copied otherwise.
    v: Cow<'a, [F]>,
    n_k: usize,
    d_k: usize,
    dv_pad: usize,
}

impl<'a, F: Float> Packed<'a, F> {
    /// Packs `k` (and `v` if need be) for `tiles`. `d_k` and `d_v` must be positive.
    pub(super) fn new(
        q: ArrayView2<'a, F>,
        k: ArrayView2<'a, F>,
        v: ArrayView2<'a, F>,
        tiles: &Tiles,
    ) -> Self {
        let (n_k, d_k) = k.dim();
        let nrl = tiles.nrl;
        let mut kp = F::take_buffer(n_k.next_multiple_of(nrl) * d_k);
        for (panel, keys) in kp
            .chunks_exact_mut(d_k * nrl)
            .zip(k.axis_chunks_iter(Axis(0), nrl))
        {
            for (jj, key) in keys.rows().into_iter().enumerate() {
                for (c, &x) in key.iter().enumerate() {
                    panel[c * nrl + jj] = x;
                }
            }
        }
        let d_v = v.ncols();
        let dv_pad = d_v.next_multiple_of(nrl);
        let v = match v.to_slice() {
            Some(rows) if d_v == dv_pad => Cow::Borrowed(rows),
            _ => {
                let mut vp = vec![F::ZERO; n_k * dv_pad];
                for (dst, row) in vp.chunks_exact_mut(dv_pad).zip(v.rows()) {
                    for (d, &x) in dst.iter_mut().zip(row) {
                        *d = x;
                    }
                }
                Cow::Owned(vp)
            }
        };
        Self {
            q,
            scale: F::ONE / F::from_f64(d_k as f64).sqrt(),
            k: kp,
            v,
            n_k,
            d_k,
            dv_pad,
        }
    }
}

impl<F: Float> Drop for Packed<'_, F> {
    fn drop(&mut self) {
        F::recycle(std::mem::take(&mut self.k));
    }
}

/// Per-thread scratch: the block's queries, the score tile, the output accumulator and the
/// softmax state. A few tens of KiB, so it stays in L1/L2.
pub(super) struct Scratch<F> {
    /// `br x d_k` queries of the block times `1/sqrt(d_k)` (zero rows past `n_q`).
    q: Vec<F>,
    /// `br x bc` scores, overwritten by the probabilities `P`.
    s: Vec<F>,
    /// `br x dv_pad` unnormalised output.
    o: Vec<F>,
    /// Running maximum per row.
    m: Vec<F>,
    /// Running sum of `exp(s - m)` per row.
    l: Vec<F>,
    /// `e^{m_old - m_new}` per row for the current key block.
    alpha: Vec<F>,
}

impl<F: Float> Scratch<F> {
    /// Scratch for blocks of `tiles` over operands packed as `packed`.
    pub(super) fn new(tiles: &Tiles, packed: &Packed<'_, F>) -> Self {
        Self {
            q: vec![F::ZERO; tiles.br * packed.d_k],
            s: vec![F::ZERO; tiles.br * tiles.bc],
            o: vec![F::ZERO; tiles.br * packed.dv_pad],
            m: vec![F::ZERO; tiles.br],
            l: vec![F::ZERO; tiles.br],
            alpha: vec![F::ZERO; tiles.br],
        }
    }

    /// Copies query rows `r0 .. r0 + rows` times `1/sqrt(d_k)`, and zeros up to `live` rows.
    fn load_queries(&mut self, packed: &Packed<'_, F>, r0: usize, rows: usize, live: usize) {
        let d_k = packed.d_k;
        let block = packed.q.slice(s![r0..r0 + rows, ..]);
        for (dst, row) in self.q.chunks_exact_mut(d_k).zip(block.rows()) {
            for (d, &x) in dst.iter_mut().zip(row) {
                *d = x * packed.scale;
            }
        }
        self.q[rows * d_k..live * d_k].fill(F::ZERO);
    }
}

/// Computes output rows `r0 .. r0 + out.nrows()` (at most `tiles.br`) into `out`.
///
/// # Safety
///
/// Inside [`Isa::run`](crate::simd::Isa::run) for the level of `S`. (Bounds are checked:
/// `tiles.mr == MR`, `tiles.nrl == NR * S::LANES` and `packed` made with `tiles`.)
#[inline(always)]
pub(super) unsafe fn row_block<S, F, const MR: usize, const NR: usize>(
    packed: &Packed<'_, F>,
    tiles: &Tiles,
    causal: bool,
    r0: usize,
    out: &mut ArrayViewMut2<'_, F>,
    scratch: &mut Scratch<F>,
) where
    S: Simd<F = F>,
    F: Float,
{
    assert!(tiles.mr == MR && tiles.nrl == NR * S::LANES && out.nrows() <= tiles.br);
    let rows = out.nrows();
    let live = rows.next_multiple_of(MR);
    let dv_pad = packed.dv_pad;
    scratch.load_queries(packed, r0, rows, live);
    scratch.o[..live * dv_pad].fill(F::ZERO);
    scratch.m[..live].fill(F::NEG_INFINITY);
    scratch.l[..live].fill(F::ZERO);
    // Causal attention is top-left aligned: query i sees keys 0..=i.
    let k_end = if causal {
        packed.n_k.min(r0 + rows)
    } else {
        packed.n_k
    };
    for j0 in (0..k_end).step_by(tiles.bc) {
        let cols = tiles.bc.min(k_end.next_multiple_of(tiles.nrl) - j0);
        // SAFETY (these three calls): forwarded from the caller.
        unsafe { scores::<S, F, MR, NR>(packed, tiles, live, j0, cols, scratch) };
        for r in 0..live {
            let limit = if causal {
                packed.n_k.min(r0 + r + 1)
            } else {
                packed.n_k
            };
            let valid = limit.saturating_sub(j0).min(cols);
            let row = &mut scratch.s[r * tiles.bc..][..cols];
            let (m, l) = (&mut scratch.m[r], &mut scratch.l[r]);
            scratch.alpha[r] = unsafe { softmax_update::<F, S>(row, valid, m, l) };
        }
        // Keys past k_end have P = 0: leave them out of the reduction.
        let keys = cols.min(k_end - j0);
        unsafe { accumulate::<S, F, MR, NR>(packed, tiles, live, j0, keys, scratch) };
    }
    for (r, mut out_row) in out.rows_mut().into_iter().enumerate() {
        let inv = F::ONE / scratch.l[r];
        for (dst, &o) in out_row.iter_mut().zip(&scratch.o[r * dv_pad..]) {
            *dst = o * inv;
        }
    }
}

/// `S[.., ..cols] = Q_blk K[j0 .. j0 + cols]^T` for the `live` query rows in `scratch.q`,
/// key panel by key panel so that a panel stays in L1 while every group of `MR` rows uses it.
///
/// # Safety
///
/// Inside [`Isa::run`](crate::simd::Isa::run) for the level of `S`.
#[inline(always)]
unsafe fn scores<S, F, const MR: usize, const NR: usize>(
    packed: &Packed<'_, F>,
    tiles: &Tiles,
    live: usize,
    j0: usize,
    cols: usize,
    scratch: &mut Scratch<F>,
) where
    S: Simd<F = F>,
    F: Float,
{
    let (d_k, nrl, bc) = (packed.d_k, tiles.nrl, tiles.bc);
    let (q, s) = (&scratch.q, &mut scratch.s);
    assert!(live * d_k <= q.len() && live * bc <= s.len() && live.is_multiple_of(MR));
    assert!((j0 + cols) * d_k <= packed.k.len() && cols <= bc && cols.is_multiple_of(nrl));
    for panel in 0..cols / nrl {
        let k = packed.k[(j0 / nrl + panel) * d_k * nrl..].as_ptr();
        for g in (0..live).step_by(MR) {
            // SAFETY: the asserts above keep the MR rows of Q (d_k each), the d_k x nrl key
            // panel and the MR x nrl block of S in bounds; the caller enabled the ISA of S.
            unsafe {
                tile::<S, F, MR, NR, false>(
                    d_k,
                    q.as_ptr().add(g * d_k),
                    d_k,
                    k,
                    nrl,
                    s.as_mut_ptr().add(g * bc + panel * nrl),
                    bc,
                    std::ptr::null(),
                );
            }
        }
    }
}

/// `O = alpha O + P[.., ..keys] V[j0 .. j0 + keys]` for the `live` rows of the block.
///
/// # Safety
///
/// Inside [`Isa::run`](crate::simd::Isa::run) for the level of `S`.
#[inline(always)]
unsafe fn accumulate<S, F, const MR: usize, const NR: usize>(
    packed: &Packed<'_, F>,
    tiles: &Tiles,
    live: usize,
    j0: usize,
    keys: usize,
    scratch: &mut Scratch<F>,
) where
    S: Simd<F = F>,
    F: Float,
{
    let (dv_pad, nrl, bc) = (packed.dv_pad, tiles.nrl, tiles.bc);
    assert!(live * bc <= scratch.s.len() && live * dv_pad <= scratch.o.len());
    assert!((j0 + keys) * dv_pad <= packed.v.len() && keys <= bc);
    assert!(live <= scratch.alpha.len() && live.is_multiple_of(MR));
    for g in (0..live).step_by(MR) {
        for c0 in (0..dv_pad).step_by(nrl) {
            // SAFETY: the asserts above keep the MR x keys block of P, the keys x nrl block
            // of V, the MR x nrl block of O and MR alphas in bounds; the caller enabled the
            // ISA of S.
            unsafe {
                tile::<S, F, MR, NR, true>(
                    keys,
                    scratch.s.as_ptr().add(g * bc),
                    bc,
                    packed.v.as_ptr().add(j0 * dv_pad + c0),
                    dv_pad,
                    scratch.o.as_mut_ptr().add(g * dv_pad + c0),
                    dv_pad,
                    scratch.alpha.as_ptr().add(g),
                );
            }
        }
    }
}

/// The micro-kernel: `C = A B` (or `C = diag(scale) C + A B` when `ACC`) for an
/// `MR x (NR LANES)` block of `C`, with `A` `MR x k` (row stride `lda`) and `B`
/// `k x (NR LANES)` (row stride `ldb`). The `MR x NR` accumulators stay in registers: with
/// AVX-512, `6 x 4` of them plus four of `B` and one broadcast use 29 of the 32.
///
/// # Safety
///
/// All blocks in bounds as described, `scale` readable for `MR` elements when `ACC`, and
/// the CPU supports the ISA of `S`.
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    reason = "a BLAS-style kernel: pointer + stride per operand"
)]
unsafe fn tile<S, F, const MR: usize, const NR: usize, const ACC: bool>(
    k: usize,
    a: *const F,
    lda: usize,
    b: *const F,
    ldb: usize,
    c: *mut F,
    ldc: usize,
    scale: *const F,
) where
    S: Simd<F = F>,
    F: Float,
{
    // SAFETY: forwarded from the caller.
    unsafe {
        let mut acc = [[S::splat(F::ZERO); NR]; MR];
        if ACC {
            for (i, acc_i) in acc.iter_mut().enumerate() {
                let s = S::splat(*scale.add(i));
                for (r, acc_ir) in acc_i.iter_mut().enumerate() {
                    *acc_ir = S::mul(s, S::load(c.add(i * ldc + r * S::LANES)));
                }
            }
        }
        for p in 0..k {
            let mut bv = [S::splat(F::ZERO); NR];
            for (r, b_r) in bv.iter_mut().enumerate() {
                *b_r = S::load(b.add(p * ldb + r * S::LANES));
            }
            for (i, acc_i) in acc.iter_mut().enumerate() {
                let av = S::splat(*a.add(i * lda + p));
                for (acc_ir, &b_r) in acc_i.iter_mut().zip(&bv) {
                    *acc_ir = S::mul_add(av, b_r, *acc_ir);
                }
            }
        }
        for (i, acc_i) in acc.iter().enumerate() {
            for (r, &acc_ir) in acc_i.iter().enumerate() {
                S::store(c.add(i * ldc + r * S::LANES), acc_ir);
            }
        }
    }
}

/// One row's online-softmax step over a key block whose first `valid` scores are unmasked
/// (`row.len()` is a multiple of `2 S::LANES`). Turns the scores into `exp(s - m_new)`
/// (zeros past `valid`), updates the running maximum `m` and sum `l`, and returns the factor
/// `e^{m_old - m_new}` for the row's output.
///
/// # Safety
///
/// Inside [`Isa::run`](crate::simd::Isa::run) for the level of `S`.
#[inline(always)]
unsafe fn softmax_update<F: Float, S: Simd<F = F>>(
    row: &mut [F],
    valid: usize,
    m: &mut F,
    l: &mut F,
) -> F {
    if valid == 0 {
        row.fill(F::ZERO);
        return F::ONE;
    }
    // exp(-inf - m) = 0, so masking is just this.
    row[valid..].fill(F::NEG_INFINITY);
    let step = 2 * S::LANES;
    assert!(row.len().is_multiple_of(step));
    let p = row.as_mut_ptr();
    // SAFETY: every load and store touches LANES elements below row.len(); the caller
    // enabled the ISA of S.
    unsafe {
        let mut max = [S::splat(F::NEG_INFINITY); 2];
        for i in (0..row.len()).step_by(step) {
            max[0] = S::max(S::load(p.add(i)), max[0]);
            max[1] = S::max(S::load(p.add(i + S::LANES)), max[1]);
        }
        let block_max = S::reduce_max(S::max(max[0], max[1]));
        let m_new = if block_max > *m { block_max } else { *m };
        // The first block has m = -inf, so alpha = exp(-inf) = 0 and nothing stale survives.
        let alpha = (*m - m_new).exp_approx();
        let shift = S::splat(m_new);
        let mut sum = [S::splat(F::ZERO); 2];
        for i in (0..row.len()).step_by(step) {
            for (half, sum) in sum.iter_mut().enumerate() {
                let at = p.add(i + half * S::LANES);
                let e = F::exp::<S>(S::sub(S::load(at), shift));
                S::store(at, e);
                *sum = S::add(*sum, e);
            }
        }
        *l = *l * alpha + S::reduce_add(S::add(sum[0], sum[1]));
        *m = m_new;
        alpha
    }
}
