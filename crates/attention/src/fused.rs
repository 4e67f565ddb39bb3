//! Scores and softmax of one query in one pass: the per-decoder-step hot path of the series'
//! small case (a query against a handful of keys).
//!
//! At that size the arithmetic is a few hundred multiply-adds; what costs is everything
//! around it (temporaries, ndarray's general dispatch, libm's `exp` and `tanh` one element at
//! a time) and the latency of each step waiting for the last. These functions run with the
//! widest SIMD the CPU has, keep one accumulator per key and reduce them all at once, and
//! hold up to a register of scores (7 `f64` fit one AVX-512 register) in that register from
//! the dot products to the stored weights, with the vectorised `exp` and `tanh` of
//! [`float`](crate::Float). They agree with the two-step versions
//! (`softmax(&dot_scores(..))`, ...) to about 1e-15 and panic under the same conditions.

use ndarray::{Array1, ArrayBase, Data, Ix1, Ix2};

use crate::additive::{Additive, Precomputed};
use crate::error::AttentionError;
use crate::float::{Sealed, tanh_f64};
use crate::scores::assert_query_fits;
use crate::simd::{Isa, Simd, SimdF64, with_f64_simd};

/// `softmax(dot_scores(s, h))` in one pass: attention weights of query `s` over the rows of
/// `h`.
///
/// ```
/// use attention::{dot_scores, dot_softmax, softmax};
/// use ndarray::array;
///
/// let s = array![1.0, 0.5];
/// let h = array![[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]];
/// let w = dot_softmax(&s, &h);
/// let two_step = softmax(&dot_scores(&s, &h));
/// assert!(w.iter().zip(&two_step).all(|(a, b)| (a - b).abs() < 1e-15));
/// ```
///
/// # Panics
///
/// If `s.len() != h.ncols()`, `h` has no rows, or a score is NaN or `+inf`.
#[track_caller]
pub fn dot_softmax<S1, S2>(s: &ArrayBase<S1, Ix1>, h: &ArrayBase<S2, Ix2>) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_query_fits("dot_softmax", s.len(), h.ncols());
    dot_then_softmax("dot_softmax", s, h, None)
}

/// `softmax(scaled_dot_scores(s, h))` in one pass: scores divided by `sqrt(d)`.
///
/// # Panics
///
/// As [`dot_softmax`].
#[track_caller]
pub fn scaled_dot_softmax<S1, S2>(s: &ArrayBase<S1, Ix1>, h: &ArrayBase<S2, Ix2>) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_query_fits("scaled_dot_softmax", s.len(), h.ncols());
    let sqrt_d = (s.len() as f64).sqrt();
    dot_then_softmax("scaled_dot_softmax", s, h, Some(sqrt_d))
}

#[track_caller]
fn dot_then_softmax<S1, S2>(
    op: &str,
    s: &ArrayBase<S1, Ix1>,
    h: &ArrayBase<S2, Ix2>,
    divisor: Option<f64>,
) -> Array1<f64>
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    let e = match (s.as_slice(), h.as_slice()) {
        (Some(s), Some(h)) if !s.is_empty() && !h.is_empty() => {
            let mut e = vec![0.0; h.len() / s.len()];
            // SAFETY: `with_f64_simd` runs it at the level of S.
            let done = with_f64_simd!(Isa::best(), S => unsafe {
                match divisor {
                    None => softmax_of::<S>(&mut e, #[inline(always)] |j0| dots::<S>(h, s, j0)),
                    Some(x) => softmax_of::<S>(
                        &mut e,
                        #[inline(always)]
                        |j0| S::div(dots::<S>(h, s, j0), S::splat(x)),
                    ),
                }
            });
            expect_softmax(op, done);
            e
        }
        _ => {
            let e = h.dot(s);
            softmax_vec(op, divisor.map_or(e.clone(), |x| e / x).to_vec())
        }
    };
    Array1::from_vec(e)
}

impl Additive {
    /// `softmax(&self.scores_precomputed(pre, s))` in one pass: the attention weights of one
    /// decoder step.
    ///
    /// Uses a vectorised `tanh` (relative error below 1e-15) and `exp`, and the widest SIMD
    /// the CPU has; agrees with the two-step version to about 1e-15.
    ///
    /// # Panics
    ///
    /// As [`Additive::scores_precomputed`], and if there are no keys or a score is NaN.
    #[track_caller]
    pub fn softmax_precomputed<S: Data<Elem = f64>>(
        &self,
        pre: &Precomputed,
        s: &ArrayBase<S, Ix1>,
    ) -> Array1<f64> {
        const OP: &str = "Additive::softmax_precomputed";
        self.check_precomputed(OP, pre, s.len());
        let slices = (
            self.w.as_slice(),
            pre.projected_keys().as_slice(),
            self.v.as_slice(),
            s.as_slice(),
        );
        let e = match slices {
            (Some(w), Some(uh), Some(v), Some(s)) if !s.is_empty() && !v.is_empty() => {
                additive_softmax(OP, w, uh, v, s)
            }
            _ => softmax_vec(OP, self.scores_precomputed(pre, s).to_vec()),
        };
        Array1::from_vec(e)
    }
}

/// `softmax_j(v . tanh(w s + uh_j))` for the rows `uh_j` of the `n x d_attn` slice `uh`;
/// `w` is `d_attn x d_query`, row-major, `s` and `v` are not empty. Panics name `op`.
#[track_caller]
fn additive_softmax(op: &str, w: &[f64], uh: &[f64], v: &[f64], s: &[f64]) -> Vec<f64> {
    let d = v.len();
    assert!(
        uh.len().is_multiple_of(d) && w.len() == d * s.len(),
        "{op}: shapes"
    );
    let (mut e, mut ws) = (vec![0.0; uh.len() / d], vec![0.0; d]);
    // SAFETY: `with_f64_simd` runs it at the level of S; the stores cover ws[j0..j0 + len].
    let done = with_f64_simd!(Isa::best(), S => unsafe {
        for j0 in (0..d).step_by(S::LANES) {
            let len = S::LANES.min(d - j0);
            store_n::<S>(ws.as_mut_ptr().add(j0), len, dots::<S>(w, s, j0));
        }
        softmax_of::<S>(
            &mut e,
            #[inline(always)]
            |j0| tanh_dots::<S>(uh, &ws, v, j0),
        )
    });
    expect_softmax(op, done);
    e
}

/// The softmax of `e` with [`softmax`](crate::softmax)'s checks; panics name `op`.
#[track_caller]
fn softmax_vec(op: &str, mut e: Vec<f64>) -> Vec<f64> {
    // SAFETY: `with_f64_simd` runs it at the level of S.
    let done = with_f64_simd!(Isa::best(), S => unsafe { softmax_lanes::<S>(&mut e) });
    expect_softmax(op, done);
    e
}

#[track_caller]
fn expect_softmax(op: &str, done: Result<(), AttentionError>) {
    if let Err(err) = done {
        panic!("{op}: {err}");
    }
}

/// The register whose lane `i` is `a_{j0+i} . b`, for the rows `a_j` (of length `b.len()`)
/// of the row-major `a`. Lanes past the last row repeat it.
///
/// One accumulator per row, and one transpose-and-add for all of them at the end: no row
/// waits for a horizontal sum of its own.
///
/// # Safety
///
/// Inside [`Isa::run`] for the level of S; `a` is not empty.
#[inline(always)]
unsafe fn dots<S: SimdF64>(a: &[f64], b: &[f64], j0: usize) -> S::V {
    let d = b.len();
    assert!(d > 0 && a.len().is_multiple_of(d) && j0 < a.len() / d && S::LANES <= 8);
    let last = a.len() / d - 1;
    // SAFETY: every load covers `m` elements of b or of a row below `last`.
    unsafe {
        let mut acc = [S::splat(0.0); 8];
        for c in (0..d).step_by(S::LANES) {
            let m = S::LANES.min(d - c);
            let bv = load_n::<S>(b.as_ptr().add(c), m, 0.0);
            for (i, acc) in acc[..S::LANES].iter_mut().enumerate() {
                let row = a.as_ptr().add((j0 + i).min(last) * d + c);
                *acc = S::mul_add(load_n::<S>(row, m, 0.0), bv, *acc);
            }
        }
        S::reduce_add_each(&acc[..S::LANES])
    }
}

/// The register whose lane `i` is `v . tanh(uh_{j0+i} + ws)`, like [`dots`].
///
/// # Safety
///
/// As [`dots`].
#[inline(always)]
unsafe fn tanh_dots<S: SimdF64>(uh: &[f64], ws: &[f64], v: &[f64], j0: usize) -> S::V {
    let d = v.len();
    assert!(d > 0 && ws.len() == d && uh.len().is_multiple_of(d) && j0 < uh.len() / d);
    assert!(S::LANES <= 8);
    let last = uh.len() / d - 1;
    // SAFETY: every load covers `m` elements of ws, v or a row below `last`. Padding lanes
    // hold 0, and tanh(0 + 0) 0 = 0.
    unsafe {
        let mut acc = [S::splat(0.0); 8];
        for c in (0..d).step_by(S::LANES) {
            let m = S::LANES.min(d - c);
            let (wsv, vv) = (
                load_n::<S>(ws.as_ptr().add(c), m, 0.0),
                load_n::<S>(v.as_ptr().add(c), m, 0.0),
            );
            for (i, acc) in acc[..S::LANES].iter_mut().enumerate() {
                let row = uh.as_ptr().add((j0 + i).min(last) * d + c);
                let t = tanh_f64::<S>(S::add(load_n::<S>(row, m, 0.0), wsv));
                *acc = S::mul_add(t, vv, *acc);
            }
        }
        S::reduce_add_each(&acc[..S::LANES])
    }
}

/// Lane numbers, for masking the lanes past the last score.
const IOTA: [f64; 8] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];

/// `e[j0 .. j0 + LANES] = scores(j0)` (as far as `e` goes), then the softmax of `e` in
/// place. Up to `LANES` scores (the small case's 7 with AVX-512) stay in one register until
/// the final store. `scores` must be an `#[inline(always)]` closure: one that is not inlined
/// would run its intrinsics outside the target-feature context, as calls.
///
/// # Safety
///
/// Inside [`Isa::run`] for the level of S.
#[inline(always)]
unsafe fn softmax_of<S: SimdF64>(
    e: &mut [f64],
    scores: impl Fn(usize) -> S::V,
) -> Result<(), AttentionError> {
    let n = e.len();
    assert!(S::LANES <= IOTA.len());
    // SAFETY: forwarded; the stores cover e[j0..j0 + len].
    unsafe {
        if (1..=S::LANES).contains(&n) {
            let iota = S::load(IOTA.as_ptr());
            let x = S::select_lt(
                iota,
                S::splat(n as f64),
                scores(0),
                S::splat(f64::NEG_INFINITY),
            );
            store_n::<S>(e.as_mut_ptr(), n, softmax_register::<S>(x)?);
            return Ok(());
        }
        for j0 in (0..n).step_by(S::LANES) {
            let len = S::LANES.min(n - j0);
            store_n::<S>(e.as_mut_ptr().add(j0), len, scores(j0));
        }
        softmax_lanes::<S>(e)
    }
}

/// `len <= LANES` elements from `p`, `pad` in the other lanes.
///
/// # Safety
///
/// `p` readable for `len` elements; inside [`Isa::run`] for the level of S.
#[inline(always)]
unsafe fn load_n<S: Simd<F = f64>>(p: *const f64, len: usize, pad: f64) -> S::V {
    // SAFETY: forwarded from the caller.
    unsafe {
        if len == S::LANES {
            S::load(p)
        } else {
            S::load_partial(p, len, pad)
        }
    }
}

/// Writes the first `len <= LANES` lanes of `v` to `p`.
///
/// # Safety
///
/// `p` writable for `len` elements; inside [`Isa::run`] for the level of S.
#[inline(always)]
unsafe fn store_n<S: Simd<F = f64>>(p: *mut f64, len: usize, v: S::V) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if len == S::LANES {
            S::store(p, v)
        } else {
            S::store_partial(p, len, v)
        }
    }
}

/// The softmax of one register whose unused lanes are `-inf`.
///
/// # Safety
///
/// Inside [`Isa::run`] for the level of S.
#[inline(always)]
unsafe fn softmax_register<S: SimdF64>(x: S::V) -> Result<S::V, AttentionError> {
    // SAFETY: forwarded from the caller.
    unsafe {
        let m = S::reduce_max(x);
        let y = <f64 as Sealed>::exp::<S>(S::sub(x, S::splat(m)));
        let z = S::reduce_add(y);
        // reduce_max drops NaN, so NaN shows up in the sum; +inf or all -inf in the maximum.
        if !m.is_finite() || z.is_nan() {
            return Err(AttentionError::NoFiniteScore { row: None });
        }
        Ok(S::div(y, S::splat(z)))
    }
}

/// Softmax in place, a register at a time (the last one partial).
///
/// # Safety
///
/// Inside [`Isa::run`] for the level of S.
#[inline(always)]
unsafe fn softmax_lanes<S: SimdF64>(e: &mut [f64]) -> Result<(), AttentionError> {
    let bad = AttentionError::NoFiniteScore { row: None };
    let n = e.len();
    if n == 0 {
        return Err(AttentionError::Empty);
    }
    let p = e.as_mut_ptr();
    let len = |i: usize| S::LANES.min(n - i);
    // SAFETY (all loads and stores): register i covers e[i..i + len(i)]; the caller runs
    // this at the level of S.
    unsafe {
        if n <= S::LANES {
            store_n::<S>(
                p,
                n,
                softmax_register::<S>(load_n::<S>(p, n, f64::NEG_INFINITY))?,
            );
            return Ok(());
        }
        // The maximum drops NaN; a NaN score then shows up as a NaN sum.
        let mut max = S::splat(f64::NEG_INFINITY);
        for i in (0..n).step_by(S::LANES) {
            max = S::max(load_n::<S>(p.add(i), len(i), f64::NEG_INFINITY), max);
        }
        let m = S::reduce_max(max);
        if !m.is_finite() {
            return Err(bad);
        }
        let mut sum = S::splat(0.0);
        for i in (0..n).step_by(S::LANES) {
            let x = load_n::<S>(p.add(i), len(i), f64::NEG_INFINITY);
            let y = <f64 as Sealed>::exp::<S>(S::sub(x, S::splat(m)));
            store_n::<S>(p.add(i), len(i), y);
            sum = S::add(sum, y);
        }
        let z = S::reduce_add(sum);
        if z.is_nan() {
            return Err(bad);
        }
        for i in (0..n).step_by(S::LANES) {
            let y = load_n::<S>(p.add(i), len(i), 0.0);
            store_n::<S>(p.add(i), len(i), S::div(y, S::splat(z)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use ndarray::{Array2, array, s};

    use crate::simd::with_f64_simd;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::{randn1, randn2};
    use crate::{Additive, dot_scores, scaled_dot_scores, softmax};

    fn assert_close(got: &Array1<f64>, want: &Array1<f64>, tol: f64) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= tol, "{got} vs {want}");
        }
    }

    #[test]
    fn dot_softmax_equals_the_two_step_version() {
        let mut rng = StdRng::seed_from_u64(21);
        for (n, d) in [(7, 32), (1, 1), (5, 3), (9, 17), (30, 64)] {
            let s = randn1(d, &mut rng) * 3.0;
            let h = randn2(n, d, &mut rng);
            assert_close(&dot_softmax(&s, &h), &softmax(&dot_scores(&s, &h)), 1e-15);
            assert_close(
                &scaled_dot_softmax(&s.view(), &h.view()),
                &softmax(&scaled_dot_scores(&s, &h)),
                1e-15,
            );
        }
    }

    #[test]
    fn non_contiguous_inputs_take_the_general_path() {
        let mut rng = StdRng::seed_from_u64(22);
        let s = randn1(12, &mut rng);
        let h = randn2(6, 5, &mut rng);
        let (s2, h2) = (s.slice(s![..;2]), h.t());
        assert_close(
            &dot_softmax(&s2, &h2),
            &dot_softmax(&s2.to_owned(), &h2.to_owned()),
            1e-15,
        );
        let e = dot_softmax(&array![], &Array2::zeros((3, 0)));
        assert_close(&e, &Array1::from_elem(3, 1.0 / 3.0), 1e-16);
    }

    #[test]
    fn additive_softmax_equals_the_two_step_version() {
        let mut rng = StdRng::seed_from_u64(23);
        for (n, d_q, d_k, d_attn) in [(7, 32, 32, 32), (1, 1, 1, 1), (9, 5, 7, 13)] {
            let add = Additive::new(d_q, d_k, d_attn, &mut rng);
            let h = randn2(n, d_k, &mut rng) * 2.0;
            let pre = add.precompute(&h);
            let s = randn1(d_q, &mut rng);
            let want = softmax(&add.scores_precomputed(&pre, &s));
            assert_close(&add.softmax_precomputed(&pre, &s), &want, 1e-15);
            assert_close(&add.softmax_precomputed(&pre, &s.view()), &want, 1e-15);
        }
    }

    #[test]
    fn every_isa_gives_the_same_weights() {
        let mut rng = StdRng::seed_from_u64(24);
        for (n, d_attn) in [(7, 35), (1, 8), (4, 32), (8, 3), (9, 16), (30, 33)] {
            let add = Additive::new(32, 32, d_attn, &mut rng);
            let h = randn2(n, 32, &mut rng);
            let pre = add.precompute(&h);
            let s = randn1(32, &mut rng);
            let want = softmax(&add.scores_precomputed(&pre, &s));
            let want_dot = softmax(&dot_scores(&s, &h));
            let uh = pre.projected_keys().as_slice().expect("standard layout");
            let (w, v) = (add.w.as_slice().unwrap(), add.v.as_slice().unwrap());
            let (s, h) = (s.as_slice().unwrap(), h.as_slice().unwrap());
            for isa in Isa::all_available() {
                let mut e = vec![0.0; n];
                let mut ws = vec![0.0; d_attn];
                let done = with_f64_simd!(isa, S => unsafe {
                    for j0 in (0..d_attn).step_by(S::LANES) {
                        let len = S::LANES.min(d_attn - j0);
                        store_n::<S>(ws.as_mut_ptr().add(j0), len, dots::<S>(w, s, j0));
                    }
                    softmax_of::<S>(&mut e, |j0| tanh_dots::<S>(uh, &ws, v, j0))
                });
                assert_eq!(done, Ok(()));
                for (g, w) in e.iter().zip(&want) {
                    assert!(
                        (g - w).abs() < 1e-15,
                        "{isa:?} n={n} d_attn={d_attn}: {g} vs {w}"
                    );
                }
                let done = with_f64_simd!(isa, S => unsafe {
                    softmax_of::<S>(&mut e, |j0| dots::<S>(h, s, j0))
                });
                assert_eq!(done, Ok(()));
                for (g, w) in e.iter().zip(&want_dot) {
                    assert!((g - w).abs() < 1e-15, "{isa:?} n={n}: {g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn softmax_checks_on_every_isa() {
        let nan = f64::NAN;
        let neg = f64::NEG_INFINITY;
        let bad = Err(AttentionError::NoFiniteScore { row: None });
        for isa in Isa::all_available() {
            for n in [1, 3, 4, 7, 8, 9, 17] {
                let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin() * 5.0).collect();
                let want = softmax(&Array1::from(x.clone()));
                let mut e = x.clone();
                let done = with_f64_simd!(isa, S => unsafe { softmax_lanes::<S>(&mut e) });
                assert_eq!(done, Ok(()));
                for (g, w) in e.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-15, "{isa:?} n={n}");
                }
                for poison in [nan, f64::INFINITY] {
                    let mut e = x.clone();
                    e[n / 2] = poison;
                    let done = with_f64_simd!(isa, S => unsafe { softmax_lanes::<S>(&mut e) });
                    assert_eq!(done, bad, "{isa:?} n={n} {poison}");
                    let mut poisoned = x.clone();
                    poisoned[n / 2] = poison;
                    let done = with_f64_simd!(isa, S => unsafe {
                        softmax_of::<S>(&mut e, |j0| load_n::<S>(poisoned[j0..].as_ptr(), S::LANES.min(n - j0), 0.0))
                    });
                    assert_eq!(done, bad, "{isa:?} n={n} {poison}");
                }
                let mut e = vec![neg; n];
                let done = with_f64_simd!(isa, S => unsafe { softmax_lanes::<S>(&mut e) });
                assert_eq!(done, bad, "{isa:?} n={n} all -inf");
            }
            let done = with_f64_simd!(isa, S => unsafe { softmax_lanes::<S>(&mut []) });
            assert_eq!(done, Err(AttentionError::Empty));
        }
    }

    #[test]
    #[should_panic(expected = "dot_softmax: scores contain NaN or +inf, or are all -inf")]
    fn nan_scores_panic_as_softmax_does() {
        let _ = dot_softmax(&array![1.0, f64::NAN], &Array2::zeros((2, 2)));
    }

    #[test]
    #[should_panic(expected = "scaled_dot_softmax: softmax over an empty vector")]
    fn no_keys_panic_as_softmax_does() {
        let _ = scaled_dot_softmax(&array![1.0], &Array2::zeros((0, 1)));
    }

    #[test]
    #[should_panic(expected = "Additive::softmax_precomputed: softmax over an empty vector")]
    fn additive_without_keys_panics_as_softmax_does() {
        let add = Additive::new(3, 4, 5, &mut StdRng::seed_from_u64(25));
        let pre = add.precompute(&Array2::zeros((0, 4)));
        let _ = add.softmax_precomputed(&pre, &array![1.0, 2.0, 3.0]);
    }

    #[test]
    #[should_panic(expected = "dot_softmax: query has length 3 but keys have 2 columns")]
    fn wrong_query_length_panics() {
        let _ = dot_softmax(&array![1.0, 2.0, 3.0], &Array2::zeros((2, 2)));
    }
}
