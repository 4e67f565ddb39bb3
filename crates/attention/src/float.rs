//! The element types of the fused kernels (`f32` and `f64`) and the elementary functions they
//! need, written once over [`Simd`] registers.
//!
//! libm's `exp` and `tanh` are opaque calls, one element at a time, and in a softmax over
//! `n^2` scores they cost more than the matrix products around them. The versions here are
//! straight-line polynomial code with selects instead of branches and integer bit tricks
//! instead of float-to-int conversions, so the same source runs on 16, 8, 4 or 1 lanes; the
//! scalar [`Float::exp_approx`] is that code on [`Scalar`].
//!
//! Accuracy, checked by the tests below on every instruction set against libm over dense
//! sweeps (measured worst case in brackets): `exp` within 1.5e-7 relative for `f32` (8.2e-8,
//! 1.4 ulp) and 5e-16 for `f64` (2.2e-16) over the normal range; `tanh` (`f64`) within 1e-15
//! (4.8e-16).

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::simd::{Isa, Simd, with_f64_simd};

mod sealed {
    use std::cell::Cell;

    #[cfg(target_arch = "x86_64")]
    use crate::simd::{Avx2, Avx512};
    use crate::simd::{Scalar, Simd};

    /// Keeps [`Float`](super::Float) to `f32` and `f64`, and gives the kernels what differs
    /// between the two: the registers of each instruction set and the `exp` polynomial.
    pub trait Sealed: Copy + Sized {
        /// One element as a [`Simd`] register.
        type Scalar: Simd<F = Self, V = Self>;
        /// The AVX-512 register of this type.
        #[cfg(target_arch = "x86_64")]
        type Avx512: Simd<F = Self>;
        /// The AVX2 register of this type.
        #[cfg(target_arch = "x86_64")]
        type Avx2: Simd<F = Self>;

        /// `e^x` lane by lane, with the accuracy of
        /// [`Float::exp_approx`](super::Float::exp_approx).
        ///
        /// # Safety
        ///
        /// As the methods of [`Simd`]: inside `Isa::run` for the level of `S`.
        unsafe fn exp<S: Simd<F = Self>>(x: S::V) -> S::V;

        /// `len` zeros, in this thread's buffer from the last [`Sealed::recycle`] if any.
        fn take_buffer(len: usize) -> Vec<Self>;

        /// Keeps `buffer` for the next [`Sealed::take_buffer`] on this thread, if it is at
        /// most [`KEEP_BYTES`] (a fresh allocation of that size costs a page fault per
        /// 4 KiB, 3-4% of a flash-attention call).
        fn recycle(buffer: Vec<Self>);
    }

    /// The largest buffer a thread keeps between calls.
    pub(crate) const KEEP_BYTES: usize = 16 << 20;

    thread_local! {
        static BUFFER_F32: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
        static BUFFER_F64: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
    }

    /// Implements the buffer methods of [`Sealed`] with the thread-local `$cell`.
    macro_rules! buffer_methods {
        ($f:ty, $cell:ident) => {
            fn take_buffer(len: usize) -> Vec<$f> {
                let mut buffer = $cell.take();
                buffer.clear();
                buffer.resize(len, 0.0);
                buffer
            }

            fn recycle(buffer: Vec<$f>) {
                if buffer.capacity() * size_of::<$f>() <= KEEP_BYTES {
                    $cell.set(buffer);
                }
            }
        };
    }

    impl Sealed for f32 {
        type Scalar = Scalar<f32>;
        #[cfg(target_arch = "x86_64")]
        type Avx512 = Avx512<f32>;
        #[cfg(target_arch = "x86_64")]
        type Avx2 = Avx2<f32>;

        #[inline(always)]
        unsafe fn exp<S: Simd<F = f32>>(x: S::V) -> S::V {
            // SAFETY: forwarded.
            unsafe { super::exp_f32::<S>(x) }
        }

        buffer_methods!(f32, BUFFER_F32);
    }

    impl Sealed for f64 {
        type Scalar = Scalar<f64>;
        #[cfg(target_arch = "x86_64")]
        type Avx512 = Avx512<f64>;
        #[cfg(target_arch = "x86_64")]
        type Avx2 = Avx2<f64>;

        #[inline(always)]
        unsafe fn exp<S: Simd<F = f64>>(x: S::V) -> S::V {
            // SAFETY: forwarded.
            unsafe { super::exp_f64::<S>(x) }
        }

        buffer_methods!(f64, BUFFER_F64);
    }
}

/// A floating-point element type of the fused kernels: `f32` or `f64`.
///
/// The trait is sealed; it exists so that [`flash_attention`](crate::flash_attention) can be
/// written once for both precisions.
pub trait Float:
    sealed::Sealed
    + Copy
    + Send
    + Sync
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// `-inf`, the score of a masked position.
    const NEG_INFINITY: Self;

    /// Conversion from `f64` (rounding for `f32`).
    fn from_f64(x: f64) -> Self;

    /// Square root.
    fn sqrt(self) -> Self;

    /// `e^x` by the polynomial the kernels use: relative error below 1.5e-7 (`f32`) or 5e-16
    /// (`f64`) where the result is a normal number; `0` below that range (`x < -87.3` or
    /// `x < -708`), `+inf` above `88` (`f32`) or `709` (`f64`), NaN for NaN.
    fn exp_approx(self) -> Self {
        // SAFETY: `Scalar` needs no CPU feature and reads no memory here.
        unsafe { <Self as sealed::Sealed>::exp::<Self::Scalar>(self) }
    }
}

impl Float for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const NEG_INFINITY: Self = f32::NEG_INFINITY;

    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x as f32
    }

    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
}

impl Float for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const NEG_INFINITY: Self = f64::NEG_INFINITY;

    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }

    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

pub(crate) use sealed::Sealed;

/// `e^x` for `f32` lanes: Cephes' `expf` reduction `x = n ln 2 + r`, `|r| <= ln 2 / 2`, and
/// its degree-7 minimax polynomial for `e^r`.
///
/// # Safety
///
/// As the methods of [`Simd`].
#[inline(always)]
pub(crate) unsafe fn exp_f32<S: Simd<F = f32>>(x: S::V) -> S::V {
    // Adding 1.5 * 2^23 rounds to an integer and leaves it in the low mantissa bits.
    const SHIFT: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_359_4; // 355 / 512, so n * LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4;
    const POLY: [f32; 6] = [
        1.987_569_1e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ];
    // SAFETY: forwarded from the caller.
    unsafe {
        let t = S::mul_add(x, S::splat(std::f32::consts::LOG2_E), S::splat(SHIFT));
        let n = S::sub(t, S::splat(SHIFT));
        let r = S::mul_add(n, S::splat(-LN2_LO), S::mul_add(n, S::splat(-LN2_HI), x));
        let mut p = S::splat(POLY[0]);
        for k in &POLY[1..] {
            p = S::mul_add(p, r, S::splat(*k));
        }
        let er = S::add(S::mul_add(p, S::mul(r, r), r), S::splat(1.0));
        let y = S::mul(er, S::pow2_shifted(t));
        let y = S::select_lt(x, S::splat(-87.3), S::splat(0.0), y);
        S::select_lt(S::splat(88.0), x, S::splat(f32::INFINITY), y)
    }
}

/// `2^n` and the reduced argument `r = x - n ln 2` for the `f64` functions.
#[inline(always)]
unsafe fn reduce_f64<S: Simd<F = f64>>(x: S::V) -> (S::V, S::V) {
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    const LN2_HI: f64 = 6.931_457_519_531_25e-1; // few bits, so n * LN2_HI is exact
    const LN2_LO: f64 = 1.428_606_820_309_417_2e-6;
    // SAFETY: forwarded from the caller.
    unsafe {
        let t = S::mul_add(x, S::splat(std::f64::consts::LOG2_E), S::splat(SHIFT));
        let n = S::sub(t, S::splat(SHIFT));
        let r = S::mul_add(n, S::splat(-LN2_LO), S::mul_add(n, S::splat(-LN2_HI), x));
        (S::pow2_shifted(t), r)
    }
}

/// `e^r - 1` for `|r| <= ln 2 / 2`: Taylor to degree 13 (truncation error < 5e-18),
/// evaluated by Estrin's scheme, whose dependency chain is 5 multiply-adds deep instead of
/// Horner's 12 (the small case evaluates only a handful of these and waits on the chain).
#[inline(always)]
unsafe fn expm1_reduced<S: Simd<F = f64>>(r: S::V) -> S::V {
    // C[k] = 1 / (k + 1)!, so that e^r - 1 = r (C[0] + C[1] r + ... + C[12] r^12).
    const C: [f64; 13] = [
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5_040.0,
        1.0 / 40_320.0,
        1.0 / 362_880.0,
        1.0 / 3_628_800.0,
        1.0 / 39_916_800.0,
        1.0 / 479_001_600.0,
        1.0 / 6_227_020_800.0,
    ];
    // SAFETY: forwarded from the caller.
    unsafe {
        let r2 = S::mul(r, r);
        let r4 = S::mul(r2, r2);
        let r8 = S::mul(r4, r4);
        // q[k] = C[2k] + C[2k + 1] r (no closures here: one that is not inlined would run its
        // intrinsics outside the target-feature context, as calls).
        let mut q = [S::splat(0.0); 6];
        for (k, q) in q.iter_mut().enumerate() {
            *q = S::mul_add(S::splat(C[2 * k + 1]), r, S::splat(C[2 * k]));
        }
        let [q0, q2, q4, q6, q8, q10] = q;
        let p0 = S::mul_add(q2, r2, q0); // C[0..4]
        let p1 = S::mul_add(q6, r2, q4); // C[4..8]
        let p2 = S::mul_add(q10, r2, q8); // C[8..12]
        let low = S::mul_add(p1, r4, p0); // C[0..8]
        let high = S::mul_add(S::splat(C[12]), r4, p2); // C[8..13]
        S::mul(S::mul_add(high, r8, low), r)
    }
}

/// `e^x` for `f64` lanes: `2^n (1 + expm1(r))`.
///
/// # Safety
///
/// As the methods of [`Simd`].
#[inline(always)]
pub(crate) unsafe fn exp_f64<S: Simd<F = f64>>(x: S::V) -> S::V {
    // SAFETY: forwarded from the caller.
    unsafe {
        let (two_n, r) = reduce_f64::<S>(x);
        let y = S::mul_add(two_n, expm1_reduced::<S>(r), two_n);
        let y = S::select_lt(x, S::splat(-708.0), S::splat(0.0), y);
        S::select_lt(S::splat(709.0), x, S::splat(f64::INFINITY), y)
    }
}

/// `tanh x` for `f64` lanes, relative error below 1e-15 (NaN for NaN).
///
/// `tanh |x| = -m / (2 + m)` with `m = e^{-2|x|} - 1` computed as an `expm1`, so there is no
/// cancellation near 0; beyond `|x| = 20` the result is 1 to double precision.
///
/// # Safety
///
/// As the methods of [`Simd`].
#[inline(always)]
pub(crate) unsafe fn tanh_f64<S: Simd<F = f64>>(x: S::V) -> S::V {
    // SAFETY: forwarded from the caller.
    unsafe {
        let y = S::mul(S::splat(-2.0), S::abs(x));
        let y = S::select_lt(y, S::splat(-40.0), S::splat(-40.0), y); // NaN stays NaN
        let (two_n, r) = reduce_f64::<S>(y);
        // e^y - 1 = 2^n (e^r - 1) + (2^n - 1); both terms are exact or nearly so.
        let m = S::mul_add(two_n, expm1_reduced::<S>(r), S::sub(two_n, S::splat(1.0)));
        S::copysign(
            S::div(S::sub(S::splat(0.0), m), S::add(S::splat(2.0), m)),
            x,
        )
    }
}

/// `x <- tanh x` for every element of `xs`, with [`tanh_f64`] at the widest instruction set
/// (relative error below 1e-15): the activations of the recurrent layers in
/// [`train`](crate::Gru), whose `tanh`s cost more than their matrix products when called
/// one at a time from libm.
pub(crate) fn tanh_in_place(xs: &mut [f64]) {
    // SAFETY: `with_f64_simd` runs the body at the level of S; every load and store covers
    // `xs[i..i + len]` with `i + len <= xs.len()`.
    with_f64_simd!(Isa::best(), S => unsafe {
        for i in (0..xs.len()).step_by(S::LANES) {
            let len = S::LANES.min(xs.len() - i);
            let p = xs.as_mut_ptr().add(i);
            if len == S::LANES {
                S::store(p, tanh_f64::<S>(S::load(p)));
            } else {
                S::store_partial(p, len, tanh_f64::<S>(S::load_partial(p, len, 0.0)));
            }
        }
    })
}

/// `x <- 1 / (1 + e^-x)` for every element of `xs`, as `(1 + tanh(x / 2)) / 2` with
/// [`tanh_in_place`]: the gates of the recurrent layers.
pub(crate) fn sigmoid_in_place(xs: &mut [f64]) {
    xs.iter_mut().for_each(|x| *x *= 0.5);
    tanh_in_place(xs);
    xs.iter_mut().for_each(|x| *x = 0.5 + 0.5 * *x);
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "x86_64")]
    use crate::simd::{Avx2, Avx512};
    use crate::simd::{Isa, Scalar};

    /// Evenly spaced points from `lo` to `hi`, both included.
    fn sweep(lo: f64, hi: f64, steps: usize) -> Vec<f64> {
        (0..=steps)
            .map(|i| lo + (hi - lo) * i as f64 / steps as f64)
            .collect()
    }

    /// `f` applied to `xs` one register at a time (the tail padded with zeros).
    fn lanes<S: Simd>(xs: &[S::F], f: impl Fn(S::V) -> S::V) -> Vec<S::F> {
        let Some(&first) = xs.first() else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(xs.len() + S::LANES);
        let mut buf = vec![first; S::LANES];
        for chunk in xs.chunks(S::LANES) {
            buf[..chunk.len()].copy_from_slice(chunk);
            // SAFETY: `buf` holds LANES elements; the caller runs this inside `Isa::run`.
            unsafe { S::store(buf.as_mut_ptr(), f(S::load(buf.as_ptr()))) };
            out.extend_from_slice(&buf[..chunk.len()]);
        }
        out
    }

    /// `exp` (f32 or f64) and `tanh` (f64) of `xs` at `isa`.
    fn on(isa: Isa, xs32: &[f32], xs64: &[f64]) -> (Vec<f32>, Vec<f64>, Vec<f64>) {
        macro_rules! with {
            ($s32:ty, $s64:ty) => {
                isa.run(|| unsafe {
                    (
                        lanes::<$s32>(xs32, |v| exp_f32::<$s32>(v)),
                        lanes::<$s64>(xs64, |v| exp_f64::<$s64>(v)),
                        lanes::<$s64>(xs64, |v| tanh_f64::<$s64>(v)),
                    )
                })
            };
        }
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => with!(Avx512<f32>, Avx512<f64>),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => with!(Avx2<f32>, Avx2<f64>),
            _ => with!(Scalar<f32>, Scalar<f64>),
        }
    }

    fn worst_rel(got: impl Iterator<Item = f64>, want: impl Iterator<Item = f64>) -> f64 {
        got.zip(want)
            .filter(|&(_, w)| w != 0.0)
            .map(|(g, w)| ((g - w) / w).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn exp_and_tanh_are_accurate_on_every_isa() {
        let xs32: Vec<f32> = sweep(-87.0, 87.9, 1_000_003)
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let mut xs64 = sweep(-707.9, 708.9, 1_000_003);
        xs64.extend(sweep(-1.0, 1.0, 100_001));
        xs64.extend(sweep(-1e-6, 1e-6, 10_001));
        for isa in Isa::all_available() {
            let (e32, e64, t64) = on(isa, &xs32, &xs64);
            let worst = worst_rel(
                e32.iter().map(|&v| f64::from(v)),
                xs32.iter().map(|&x| f64::from(x).exp()),
            );
            assert!(worst < 1.5e-7, "{isa:?} exp f32: {worst:e}");
            // Not vacuously loose: an f32 result cannot beat half an ulp (6e-8).
            assert!(worst > 5e-8, "{isa:?} exp f32: {worst:e}");
            let worst = worst_rel(e64.into_iter(), xs64.iter().map(|x| x.exp()));
            assert!(worst < 5e-16, "{isa:?} exp f64: {worst:e}");
            let tanh_range = xs64.iter().filter(|x| x.abs() < 25.0);
            let got = (xs64.iter().zip(t64)).filter(|(x, _)| x.abs() < 25.0);
            let worst = worst_rel(got.map(|(_, t)| t), tanh_range.map(|x| x.tanh()));
            assert!(worst < 1e-15, "{isa:?} tanh: {worst:e}");
        }
    }

    #[test]
    fn exp_and_tanh_edges_on_every_isa() {
        let (inf32, inf64) = (f32::INFINITY, f64::INFINITY);
        let xs32 = [0.0, -inf32, -100.0, 100.0, inf32, f32::NAN];
        let xs64 = [0.0, -inf64, -1000.0, 1000.0, inf64, f64::NAN, 1e300, -1e300];
        for isa in Isa::all_available() {
            let (e32, e64, t64) = on(isa, &xs32, &xs64);
            assert_eq!(e32[..5], [1.0, 0.0, 0.0, inf32, inf32], "{isa:?}");
            assert!(e32[5].is_nan(), "{isa:?}");
            assert_eq!(e64[..5], [1.0, 0.0, 0.0, inf64, inf64], "{isa:?}");
            assert!(e64[5].is_nan(), "{isa:?}");
            assert_eq!(t64[..5], [0.0, -1.0, -1.0, 1.0, 1.0], "{isa:?}");
            assert!(t64[5].is_nan(), "{isa:?}");
            assert_eq!(t64[6..], [1.0, -1.0], "{isa:?}");
        }
        let (e32, e64, _) = on(Isa::Scalar, &[1.5], &[1.5]);
        assert_eq!(
            (1.5_f32.exp_approx(), 1.5_f64.exp_approx()),
            (e32[0], e64[0])
        );
    }

    #[test]
    fn slice_tanh_and_sigmoid_match_libm_at_every_length() {
        // Lengths around the register widths exercise the partial loads and stores.
        for len in [0, 1, 3, 4, 5, 7, 8, 9, 17, 33] {
            let xs: Vec<f64> = (0..len).map(|i| (i as f64 * 0.37).sin() * 6.0).collect();
            let mut t = xs.clone();
            tanh_in_place(&mut t);
            let mut s = xs.clone();
            sigmoid_in_place(&mut s);
            for ((x, t), s) in xs.iter().zip(&t).zip(&s) {
                assert!(
                    (t - x.tanh()).abs() <= 1e-15 * x.tanh().abs().max(1e-300),
                    "{x}"
                );
                assert!((s - 1.0 / (1.0 + (-x).exp())).abs() < 1e-15, "{x}");
            }
        }
    }
}
