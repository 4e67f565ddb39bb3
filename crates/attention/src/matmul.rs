//! `f64` matrix products for the training code ([`dot`]): the same bits as ndarray's `dot`,
//! without its per-call cost.
//!
//! ndarray's `a.dot(&b)` calls matrixmultiply's `dgemm` with `alpha = 1`, `beta = 0`. On
//! x86-64 with AVX2 and FMA (or AVX-512F) matrixmultiply's kernels compute every element as
//! one chain of fused multiply-adds over `k` in order, starting from `+0`:
//! `c[i][j] = fma(a[i][k-1], b[k-1][j], .. fma(a[i][1], b[1][j], fma(a[i][0], b[0][j], 0)))`,
//! as long as `k` fits one of its depth blocks (`kc = 256` for `f64`); packing, tiling and
//! edge handling move data but never change that chain. [`dot`] computes the same chain with
//! a register-blocked kernel of its own, so its result is the same to the last bit (a test
//! compares the two over the shapes and layouts the training code uses). What it saves is
//! what dominated chapter 8's update step (docs/performance.md): matrixmultiply allocates
//! and frees a packing buffer on every call (for the weight gradients 128 KiB, just over
//! glibc's mmap threshold, so the heap kept growing and shrinking and the kernel zeroing new
//! pages), packs both operands, and runs its masked edge kernel for the 6-8 wide per-head
//! products; a training update makes some 2,400 such calls.
//!
//! Anywhere the chain would differ (no FMA, where matrixmultiply multiplies and adds
//! separately; `k > 256`, where it splits the sum; a column-major result, which ndarray would
//! lay out differently) [`dot`] simply calls ndarray. For the same reason it follows the CPU
//! as matrixmultiply does and ignores [`PORTABLE_ENV`](crate::PORTABLE_ENV). If a new
//! matrixmultiply changed its kernels' order of operations, `the_same_bits_as_ndarray` below
//! would fail.

use std::cell::RefCell;

use ndarray::{Array2, ArrayBase, Data, Ix2};

use crate::simd::{Isa, SimdF64, with_f64_simd};

/// matrixmultiply's depth block for `f64` (`D_KC`): up to this `k` its sum is one chain.
const MAX_K: usize = 256;
/// Rows per register block: with two registers of columns, 8 independent FMA chains (6 rows,
/// 12 chains, measured no faster).
const ROWS: usize = 4;

thread_local! {
    /// `b` copied row-major when its rows are not contiguous; grown, never shrunk.
    static PACKED: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// `a.dot(&b)` for `f64` matrices, bit for bit (see the module docs).
///
/// # Panics
///
/// As ndarray's `dot`: if `a.ncols() != b.nrows()`.
#[track_caller]
pub(crate) fn dot<S1, S2>(a: &ArrayBase<S1, Ix2>, b: &ArrayBase<S2, Ix2>) -> Array2<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    let isa = Isa::detected();
    // ndarray makes the result column-major when both operands have unit row stride.
    let column_major = a.strides()[0] == 1 && b.strides()[0] == 1;
    if isa == Isa::Scalar || k != k2 || k == 0 || k > MAX_K || m == 0 || n == 0 || column_major {
        return a.dot(b);
    }
    let mut c = Array2::<f64>::uninit((m, n));
    let cp = c.as_mut_ptr().cast::<f64>();
    let (ars, acs) = (a.strides()[0], a.strides()[1]);
    PACKED.with_borrow_mut(|packed| {
        let (bp, brs) = if b.strides()[1] == 1 {
            (b.as_ptr(), b.strides()[0])
        } else {
            packed.clear();
            packed.reserve(k * n);
            for r in b.rows() {
                packed.extend(r.iter().copied());
            }
            (packed.as_ptr(), n as isize)
        };
        // SAFETY: `a` is `m x k` with strides `(ars, acs)`, `b` at `bp` is `k x n` with rows
        // `brs` apart and contiguous columns, `c` is `m x n` row-major; the kernel runs with
        // the instruction set it was compiled for (`with_f64_simd!` checks `isa`).
        unsafe {
            with_f64_simd!(isa, S => kernel::<S>(m, n, k, a.as_ptr(), ars, acs, bp, brs, cp));
        }
    });
    // SAFETY: the kernel wrote every element.
    unsafe { c.assume_init() }
}

/// `c = a b` by panels of two registers' width of columns and blocks of [`ROWS`] rows.
///
/// # Safety
///
/// `a` (`m x k`, strides `ars`, `acs`), `b` (`k x n`, rows `brs` apart, contiguous columns)
/// and `c` (`m x n`, row-major) must be valid; only inside [`Isa::run`] for `S`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn kernel<S: SimdF64>(
    m: usize,
    n: usize,
    k: usize,
    a: *const f64,
    ars: isize,
    acs: isize,
    b: *const f64,
    brs: isize,
    c: *mut f64,
) {
    let panel = 2 * S::LANES;
    let mut j = 0;
    while j < n {
        let w = panel.min(n - j);
        let mut i = 0;
        while i + ROWS <= m {
            // SAFETY: rows i..i + ROWS and columns j..j + w are in range.
            unsafe { block::<S, ROWS>(i, j, w, n, k, a, ars, acs, b, brs, c) };
            i += ROWS;
        }
        // SAFETY: as above, the last m - i < ROWS rows.
        unsafe {
            match m - i {
                0 => {}
                1 => block::<S, 1>(i, j, w, n, k, a, ars, acs, b, brs, c),
                2 => block::<S, 2>(i, j, w, n, k, a, ars, acs, b, brs, c),
                _ => block::<S, 3>(i, j, w, n, k, a, ars, acs, b, brs, c),
            }
        }
        j += w;
    }
}

/// Rows `i..i + R`, columns `j..j + w` (`w <= 2 LANES`) of `c`: for every element one FMA
/// chain over `k` in order, from `+0`.
///
/// # Safety
///
/// As [`kernel`], with the block inside the matrices.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block<S: SimdF64, const R: usize>(
    i: usize,
    j: usize,
    w: usize,
    n: usize,
    k: usize,
    a: *const f64,
    ars: isize,
    acs: isize,
    b: *const f64,
    brs: isize,
    c: *mut f64,
) {
    let l = S::LANES;
    // Lanes of the two column registers; the second may be partial or empty.
    let (w0, w1) = (w.min(l), w.saturating_sub(l));
    // SAFETY (whole body): every pointer stays inside the ranges the caller vouches for;
    // partial loads and stores touch only `w0`/`w1` lanes.
    unsafe {
        let zero = S::splat(0.0);
        let mut acc0 = [zero; R];
        let mut acc1 = [zero; R];
        let arow = a.offset(i as isize * ars);
        for kk in 0..k {
            let brow = b.offset(kk as isize * brs).add(j);
            let b0 = if w0 == l {
                S::load(brow)
            } else {
                S::load_partial(brow, w0, 0.0)
            };
            let b1 = if w1 == l {
                S::load(brow.add(l))
            } else if w1 > 0 {
                S::load_partial(brow.add(l), w1, 0.0)
            } else {
                zero
            };
            let acol = arow.offset(kk as isize * acs);
            for r in 0..R {
                let av = S::splat(*acol.offset(r as isize * ars));
                acc0[r] = S::mul_add(av, b0, acc0[r]);
                acc1[r] = S::mul_add(av, b1, acc1[r]);
            }
        }
        for r in 0..R {
            let crow = c.add((i + r) * n + j);
            if w0 == l {
                S::store(crow, acc0[r]);
            } else {
                S::store_partial(crow, w0, acc0[r]);
            }
            if w1 == l {
                S::store(crow.add(l), acc1[r]);
            } else if w1 > 0 {
                S::store_partial(crow.add(l), w1, acc1[r]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::s;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;

    fn same_bits(got: &Array2<f64>, want: &Array2<f64>) -> bool {
        got.dim() == want.dim()
            && got.is_standard_layout() == want.is_standard_layout()
            && got
                .iter()
                .zip(want)
                .all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// Every shape and layout chapter 8's training multiplies: projections, their two
    /// gradients, and the per-head products with transposed and strided operands.
    #[test]
    fn the_same_bits_as_ndarray() {
        let mut rng = StdRng::seed_from_u64(5);
        for (m, k, n) in [
            (256, 32, 32),
            (256, 32, 64),
            (256, 64, 32),
            (256, 32, 8),
            (1, 32, 32),
            (7, 8, 7),
            (6, 8, 6),
            (8, 8, 8),
            (3, 5, 9),
            (5, 256, 17),
            (9, 1, 3),
        ] {
            let a = randn2(m, k, &mut rng);
            let b = randn2(k, n, &mut rng);
            let at = randn2(k, m, &mut rng);
            let bt = randn2(n, k, &mut rng);
            assert!(same_bits(&dot(&a, &b), &a.dot(&b)), "{m}x{k}x{n}");
            assert!(
                same_bits(&dot(&at.t(), &b), &at.t().dot(&b)),
                "a^T {m}x{k}x{n}"
            );
            assert!(
                same_bits(&dot(&a, &bt.t()), &a.dot(&bt.t())),
                "b^T {m}x{k}x{n}"
            );
            // Column blocks of a wider matrix, as the heads are.
            let wide = randn2(m, 3 * k, &mut rng);
            let head = wide.slice(s![.., k..2 * k]);
            assert!(
                same_bits(&dot(&head, &b), &head.dot(&b)),
                "strided {m}x{k}x{n}"
            );
        }
    }

    #[test]
    fn special_values_and_the_fallbacks_agree_too() {
        let mut rng = StdRng::seed_from_u64(6);
        let mut a = randn2(5, 4, &mut rng);
        a[[0, 0]] = f64::NAN;
        a[[1, 1]] = f64::INFINITY;
        a[[2, 2]] = -0.0;
        let b = randn2(4, 3, &mut rng);
        let (got, want) = (dot(&a, &b), a.dot(&b));
        assert!(
            got.iter()
                .zip(&want)
                .all(|(x, y)| x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan())
        );
        // k beyond one depth block, and a column-major result: ndarray itself.
        let (a, b) = (randn2(3, 300, &mut rng), randn2(300, 2, &mut rng));
        assert!(same_bits(&dot(&a, &b), &a.dot(&b)));
        let (a, b) = (randn2(4, 1, &mut rng), randn2(1, 1, &mut rng));
        assert!(same_bits(&dot(&a, &b), &a.dot(&b)));
    }

    #[test]
    #[should_panic]
    fn mismatched_shapes_panic_as_in_ndarray() {
        let _ = dot(&Array2::<f64>::zeros((2, 3)), &Array2::<f64>::zeros((2, 3)));
    }
}
