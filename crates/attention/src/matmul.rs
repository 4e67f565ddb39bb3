//! `f64` matrix products for the training code: [`dot`] (a new matrix) and [`dot_into`]
//! (into a view, or added to it), the same bits as ndarray's `dot`, without its per-call cost.
//!
//! ndarray's `a.dot(&b)` calls matrixmultiply's `dgemm` with `alpha = 1`, `beta = 0`. On
//! x86-64 with AVX2 and FMA (or AVX-512F) matrixmultiply's kernels compute every element as
//! one chain of fused multiply-adds over `k` in order, starting from `+0`:
//! `c[i][j] = fma(a[i][k-1], b[k-1][j], .. fma(a[i][1], b[1][j], fma(a[i][0], b[0][j], 0)))`,
//! as long as `k` fits one of its depth blocks (`kc = 256` for `f64`); packing, tiling and
//! edge handling move data but never change that chain (nor does swapping the operands for a
//! column-major result: a product is the same whichever factor comes first). This module
//! computes the same chain with a register-blocked kernel of its own, so its result is the
//! same to the last bit (tests compare the two over the shapes and layouts the training code
//! uses). `dot_into(.., add = true)` adds the finished chain to what the view held, as
//! `out += &a.dot(&b)` does.
//!
//! What it saves is what dominated the training steps of chapters 2 and 8-10
//! (docs/performance.md): matrixmultiply allocates and frees a packing buffer on every call
//! (for the weight gradients 128 KiB, just over glibc's mmap threshold, so the heap kept
//! growing and shrinking and the kernel zeroing new pages), packs both operands, and runs its
//! masked edge kernel for the 6-8 wide per-head products of attention; a training update of
//! chapter 8 makes some 2,400 such calls. Operands are read in place; only a `b` whose rows
//! are not contiguous (a transposed matrix) is copied, into a buffer the thread keeps.
//!
//! Anywhere the chain would differ (no FMA, where matrixmultiply multiplies and adds
//! separately; `k > 256`, where it splits the sum) this module simply calls ndarray. For the
//! same reason it follows the CPU as matrixmultiply does and ignores
//! [`PORTABLE_ENV`](crate::PORTABLE_ENV). If a new matrixmultiply changed its kernels' order of
//! operations, `the_same_bits_as_ndarray` below would fail.

use std::cell::RefCell;

use ndarray::{Array2, ArrayBase, ArrayView2, ArrayViewMut2, Data, DataMut, Ix2};

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

/// `a.dot(&b)` for `f64` matrices, bit for bit and in the same memory layout (see the module
/// docs).
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
    // ndarray makes the result column-major when both operands have unit row stride: same
    // values, but a layout its callers may see, so that case stays with ndarray.
    let column_major = a.strides()[0] == 1 && b.strides()[0] == 1;
    if !fast(k) || k != k2 || m == 0 || n == 0 || column_major {
        return a.dot(b);
    }
    let mut c = Array2::<f64>::uninit((m, n));
    // SAFETY: `c` is `m x n`, row-major (rows `n` apart); with `add = false` the kernel only
    // writes it, every element.
    unsafe {
        product(a, b, c.as_mut_ptr().cast::<f64>(), n as isize, false);
        c.assume_init()
    }
}

/// `out = a b`, or `out += a b` with `add`, bit for bit as `out.assign(&a.dot(&b))` and
/// `out += &a.dot(&b)` (see the module docs).
///
/// # Panics
///
/// If the shapes do not fit: `a` is `m x k`, `b` `k x n`, `out` `m x n`.
#[track_caller]
pub(crate) fn dot_into(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    mut out: ArrayViewMut2<'_, f64>,
    add: bool,
) {
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    assert!(
        k == k2 && out.dim() == (m, n),
        "matmul::dot_into: {m}x{k} times {k2}x{n} into {:?}",
        out.dim()
    );
    if m == 0 || n == 0 {
        return;
    }
    if !fast(k) || (out.strides()[1] != 1 && n > 1) {
        let p = a.dot(&b);
        if add {
            out += &p;
        } else {
            out.assign(&p);
        }
        return;
    }
    let ors = out.strides()[0];
    // SAFETY: `out` is `m x n` with rows `ors` apart and contiguous columns (or one column),
    // borrowed mutably, so nothing else reads or writes it meanwhile.
    unsafe { product(&a, &b, out.as_mut_ptr(), ors, add) }
}

/// ndarray's `general_mat_mul`, `c = alpha a b + beta c`, bit for bit: through [`dot_into`]
/// for `alpha = 1`, `beta` 0 or 1 and a depth within one block (matrixmultiply's epilogue is
/// then `fma(1, ab, 1 c)`, the sum `ab + c` rounded once, or `ab`), through ndarray otherwise.
///
/// # Panics
///
/// As ndarray's: if the shapes do not fit.
#[track_caller]
pub(crate) fn general_mat_mul<S1, S2, S3>(
    alpha: f64,
    a: &ArrayBase<S1, Ix2>,
    b: &ArrayBase<S2, Ix2>,
    beta: f64,
    c: &mut ArrayBase<S3, Ix2>,
) where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
    S3: DataMut<Elem = f64>,
{
    // Beyond one depth block matrixmultiply adds each block's chain to `c` in turn, which
    // `dot_into`'s fallback (`c + (ab_1 + ab_2)`) would round differently: ndarray there.
    if alpha == 1.0 && (beta == 0.0 || beta == 1.0) && fast(a.ncols()) {
        dot_into(a.view(), b.view(), c.view_mut(), beta == 1.0);
    } else {
        ndarray::linalg::general_mat_mul(alpha, a, b, beta, c);
    }
}

/// Whether this module's kernel computes matrixmultiply's chain for depth `k`.
fn fast(k: usize) -> bool {
    Isa::detected() != Isa::Scalar && k > 0 && k <= MAX_K
}

/// `c = a b` (or `c += a b`), `c` at `cp` with rows `crs` apart and contiguous columns.
///
/// # Safety
///
/// `a` is `m x k`, `b` `k x n` with `k` matching and [`fast`]; `cp` points to `m x n`
/// writable elements at that stride (readable too with `add`) that nothing else uses.
unsafe fn product<S1, S2>(
    a: &ArrayBase<S1, Ix2>,
    b: &ArrayBase<S2, Ix2>,
    cp: *mut f64,
    crs: isize,
    add: bool,
) where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    let ((m, k), n) = (a.dim(), b.ncols());
    let isa = Isa::detected();
    let (ars, acs) = (a.strides()[0], a.strides()[1]);
    let shape = Shape {
        m,
        n,
        k,
        ars,
        acs,
        crs,
        add,
    };
    if b.strides()[1] == 1 || n == 1 {
        // SAFETY: `b` is `k x n` with rows `b.strides()[0]` apart and contiguous columns; the
        // rest as the caller vouches.
        unsafe {
            with_f64_simd!(isa, S => kernel::<S>(shape, a.as_ptr(), b.as_ptr(), b.strides()[0], cp));
        }
        return;
    }
    PACKED.with_borrow_mut(|packed| {
        packed.clear();
        packed.resize(k * n, 0.0);
        let (bp, brs, bcs) = (b.as_ptr(), b.strides()[0], b.strides()[1]);
        for (kk, row) in packed.chunks_exact_mut(n).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                // SAFETY: element (kk, j) of `b`, `k x n`, by its own strides.
                *x = unsafe { *bp.offset(kk as isize * brs + j as isize * bcs) };
            }
        }
        // SAFETY: `packed` is `b`, `k x n` row-major; the rest as the caller vouches.
        unsafe {
            with_f64_simd!(isa, S => kernel::<S>(shape, a.as_ptr(), packed.as_ptr(), n as isize, cp));
        }
    });
}

/// The sizes and strides of one product: `a` is `m x k` with strides `(ars, acs)`, `c` is
/// `m x n` with rows `crs` apart; `add` adds to `c` instead of overwriting it.
#[derive(Clone, Copy)]
struct Shape {
    m: usize,
    n: usize,
    k: usize,
    ars: isize,
    acs: isize,
    crs: isize,
    add: bool,
}

/// `c = a b` by panels of two registers' width of columns (one for a last panel that
/// narrow) and blocks of [`ROWS`] rows.
///
/// # Safety
///
/// `a` (`m x k`), `b` (`k x n`, rows `brs` apart, contiguous columns) and `c` as in
/// [`Shape`] must be valid; only inside [`Isa::run`] for `S`.
#[inline(always)]
unsafe fn kernel<S: SimdF64>(s: Shape, a: *const f64, b: *const f64, brs: isize, c: *mut f64) {
    let l = S::LANES;
    let mut j = 0;
    while j < s.n {
        let w = (2 * l).min(s.n - j);
        // SAFETY (both arms): columns j..j + w are in range; `rows` covers every row.
        unsafe {
            if w > l {
                rows::<S, true>(s, j, w, a, b, brs, c);
            } else {
                rows::<S, false>(s, j, w, a, b, brs, c);
            }
        }
        j += w;
    }
}

/// Every row of one column panel, [`ROWS`] at a time, then the rest.
///
/// # Safety
///
/// As [`kernel`], with columns `j..j + w` inside `c` and `w <= 2 LANES` (`<= LANES` unless
/// `TWO`).
#[inline(always)]
unsafe fn rows<S: SimdF64, const TWO: bool>(
    s: Shape,
    j: usize,
    w: usize,
    a: *const f64,
    b: *const f64,
    brs: isize,
    c: *mut f64,
) {
    let mut i = 0;
    // SAFETY: rows i..i + R of an m-row matrix, columns as the caller vouches.
    unsafe {
        while i + ROWS <= s.m {
            block::<S, ROWS, TWO>(s, i, j, w, a, b, brs, c);
            i += ROWS;
        }
        match s.m - i {
            0 => {}
            1 => block::<S, 1, TWO>(s, i, j, w, a, b, brs, c),
            2 => block::<S, 2, TWO>(s, i, j, w, a, b, brs, c),
            _ => block::<S, 3, TWO>(s, i, j, w, a, b, brs, c),
        }
    }
}

/// Rows `i..i + R`, columns `j..j + w` of `c`: for every element one FMA chain over `k` in
/// order, from `+0`, then stored (or added to what `c` held). One register of columns, or
/// two with `TWO`.
///
/// # Safety
///
/// As [`kernel`], with the block inside the matrices.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block<S: SimdF64, const R: usize, const TWO: bool>(
    s: Shape,
    i: usize,
    j: usize,
    w: usize,
    a: *const f64,
    b: *const f64,
    brs: isize,
    c: *mut f64,
) {
    let l = S::LANES;
    // Lanes of the two column registers; the second is empty unless `TWO`.
    let (w0, w1) = (w.min(l), w.saturating_sub(l));
    let (full0, full1) = (w0 == l, w1 == l);
    // SAFETY (whole body): every pointer stays inside the ranges the caller vouches for;
    // partial loads and stores touch only `w0`/`w1` lanes.
    unsafe {
        let zero = S::splat(0.0);
        let mut acc0 = [zero; R];
        let mut acc1 = [zero; R];
        let arow = a.offset(i as isize * s.ars);
        for kk in 0..s.k {
            let brow = b.offset(kk as isize * brs).add(j);
            let b0 = if full0 {
                S::load(brow)
            } else {
                S::load_partial(brow, w0, 0.0)
            };
            let b1 = if !TWO {
                zero
            } else if full1 {
                S::load(brow.add(l))
            } else {
                S::load_partial(brow.add(l), w1, 0.0)
            };
            let acol = arow.offset(kk as isize * s.acs);
            for r in 0..R {
                let av = S::splat(*acol.offset(r as isize * s.ars));
                acc0[r] = S::mul_add(av, b0, acc0[r]);
                if TWO {
                    acc1[r] = S::mul_add(av, b1, acc1[r]);
                }
            }
        }
        for r in 0..R {
            let crow = c.offset((i + r) as isize * s.crs).add(j);
            put::<S>(crow, w0, full0, acc0[r], s.add);
            if TWO {
                put::<S>(crow.add(l), w1, full1, acc1[r], s.add);
            }
        }
    }
}

/// Writes the first `w` lanes of `v` to `p` (all of them when `full`), or adds them to what
/// is there with `add`.
///
/// # Safety
///
/// `p` is valid for `w` elements; only inside [`Isa::run`] for `S`.
#[inline(always)]
unsafe fn put<S: SimdF64>(p: *mut f64, w: usize, full: bool, v: S::V, add: bool) {
    // SAFETY: as the caller vouches; partial loads and stores touch `w` lanes only.
    unsafe {
        if full {
            let v = if add { S::add(S::load(p), v) } else { v };
            S::store(p, v);
        } else {
            let v = if add {
                S::add(S::load_partial(p, w, 0.0), v)
            } else {
                v
            };
            S::store_partial(p, w, v);
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

    /// `dot_into` over the same shapes: into a block of a wider matrix, overwritten and added
    /// to, with transposed and strided operands, as the per-head products of attention are.
    #[test]
    fn dot_into_is_assign_or_add_of_ndarrays_dot() {
        let mut rng = StdRng::seed_from_u64(7);
        for (m, k, n) in [
            (7, 8, 7),
            (6, 8, 6),
            (8, 8, 8),
            (7, 7, 8),
            (1, 8, 1),
            (3, 5, 9),
            (4, 3, 17),
            (9, 256, 33),
            (5, 1, 2),
            (256, 32, 32),
        ] {
            let a = randn2(m, k, &mut rng);
            let at = randn2(k, m, &mut rng);
            let b = randn2(k, n, &mut rng);
            let bt = randn2(n, k, &mut rng);
            for add in [false, true] {
                let cases: [(ArrayView2<'_, f64>, ArrayView2<'_, f64>, &str); 4] = [
                    (a.view(), b.view(), "a b"),
                    (at.t(), b.view(), "a^T b"),
                    (a.view(), bt.t(), "a b^T"),
                    (at.t(), bt.t(), "a^T b^T"),
                ];
                for (x, y, what) in cases {
                    let base = randn2(m + 2, 3 * n + 1, &mut rng);
                    let (mut got, mut want) = (base.clone(), base);
                    let cols = s![1..m + 1, n..2 * n];
                    dot_into(x, y, got.slice_mut(cols), add);
                    if add {
                        let mut w = want.slice_mut(cols);
                        w += &x.dot(&y);
                    } else {
                        want.slice_mut(cols).assign(&x.dot(&y));
                    }
                    assert!(same_bits(&got, &want), "{what} {m}x{k}x{n} add {add}");
                }
            }
        }
    }

    /// `general_mat_mul` with `beta` 0 and 1 (the GRU's and additive attention's products),
    /// against ndarray's, over operands and results that are blocks of wider matrices.
    #[test]
    fn general_mat_mul_is_ndarrays() {
        let mut rng = StdRng::seed_from_u64(8);
        for (m, k, n) in [
            (32, 16, 48),
            (32, 16, 16),
            (7, 32, 16),
            (256, 32, 40),
            (1, 3, 2),
            (5, 300, 6),
            (3, 600, 9),
        ] {
            let a = randn2(m, k + 3, &mut rng);
            let bt = randn2(n, k, &mut rng);
            for (alpha, beta) in [(1.0, 0.0), (1.0, 1.0), (0.5, 1.0), (1.0, 2.0)] {
                let base = randn2(m, n + 2, &mut rng);
                let (mut got, mut want) = (base.clone(), base);
                let (x, y) = (a.slice(s![.., 2..k + 2]), bt.t());
                general_mat_mul(alpha, &x, &y, beta, &mut got.slice_mut(s![.., 1..n + 1]));
                ndarray::linalg::general_mat_mul(
                    alpha,
                    &x,
                    &y,
                    beta,
                    &mut want.slice_mut(s![.., 1..n + 1]),
                );
                assert!(
                    same_bits(&got, &want),
                    "{m}x{k}x{n} alpha {alpha} beta {beta}"
                );
            }
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
        // The same through `dot_into`, and into a column-major view.
        let (a, b) = (randn2(3, 300, &mut rng), randn2(300, 2, &mut rng));
        let mut got = randn2(3, 2, &mut rng);
        let mut want = got.clone();
        dot_into(a.view(), b.view(), got.view_mut(), true);
        want += &a.dot(&b);
        assert!(same_bits(&got, &want));
        let (a, b) = (randn2(5, 6, &mut rng), randn2(6, 4, &mut rng));
        let mut got = randn2(4, 5, &mut rng);
        let mut want = got.clone();
        dot_into(a.view(), b.view(), got.view_mut().reversed_axes(), true);
        let mut w = want.view_mut().reversed_axes();
        w += &a.dot(&b);
        assert!(same_bits(&got, &want));
    }

    #[test]
    #[should_panic]
    fn mismatched_shapes_panic_as_in_ndarray() {
        let _ = dot(&Array2::<f64>::zeros((2, 3)), &Array2::<f64>::zeros((2, 3)));
    }
}
