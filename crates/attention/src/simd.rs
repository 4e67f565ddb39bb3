//! Which SIMD instructions the fused kernels use, decided at run time, and the one
//! abstraction they are written against.
//!
//! The shared build cannot assume the reader's CPU (`-C target-cpu=native` is off the table),
//! so each kernel is compiled three times: for AVX-512, for AVX2 + FMA, and for plain x86-64
//! or any other target. [`Isa::best`] picks one with `is_x86_feature_detected!`; the tests
//! run every path the machine has.
//!
//! - [`Isa::run`] calls an `#[inline(always)]` closure from inside a `#[target_feature]`
//!   function, so that the closure is compiled for that instruction set.
//! - [`Simd`] is one SIMD register of `f32` or `f64` with the operations the kernels and the
//!   vectorised `exp`/`tanh` need, written with `std::arch` intrinsics. [`Scalar`] is the
//!   same interface on one element: the portable fallback, and the scalar `exp`
//!   ([`Float::exp_approx`](crate::Float::exp_approx)) is the vector code run on it.
//!
//! Explicit registers rather than the auto-vectoriser: it left the 8-lane `exp` of the small
//! case scalar, and its choices change with the compiler version.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level the kernels are compiled for, widest first (so `a >= b` means
/// `a` is the narrower or the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Isa {
    /// AVX-512F (with AVX2 and FMA): 16 `f32` or 8 `f64` per register.
    Avx512,
    /// AVX2 with FMA: 8 `f32` or 4 `f64` per register.
    Avx2,
    /// Whatever the target guarantees; one element per "register".
    Scalar,
}

impl Isa {
    /// The level the kernels use: the widest this CPU supports, or [`Isa::Scalar`] when
    /// [`PORTABLE_ENV`] is set. Decided once per process.
    pub(crate) fn best() -> Self {
        static CHOSEN: AtomicU8 = AtomicU8::new(UNKNOWN);
        cached(&CHOSEN, || {
            if portable_forced() {
                Isa::Scalar
            } else {
                Isa::detected()
            }
        })
    }

    /// The widest level this CPU supports, detected once per process.
    pub(crate) fn detected() -> Self {
        static DETECTED: AtomicU8 = AtomicU8::new(UNKNOWN);
        cached(&DETECTED, || {
            LEVELS
                .into_iter()
                .find(|isa| isa.is_available())
                .unwrap_or(Isa::Scalar)
        })
    }

    /// Whether this CPU can run code compiled for `self`.
    pub(crate) fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            match self {
                Isa::Avx512 => avx2 && is_x86_feature_detected!("avx512f"),
                Isa::Avx2 => avx2,
                Isa::Scalar => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Isa::Scalar
        }
    }

    /// Every level this CPU supports, for tests that compare the paths.
    #[cfg(test)]
    pub(crate) fn all_available() -> Vec<Self> {
        [Isa::Avx512, Isa::Avx2, Isa::Scalar]
            .into_iter()
            .filter(|isa| isa.is_available())
            .collect()
    }

    /// Runs `f` compiled with this level's target features. `f` should be an
    /// `#[inline(always)]` closure, and use the [`Simd`] type of this level.
    ///
    /// # Panics
    ///
    /// If the CPU does not support `self` (which would otherwise be undefined behaviour).
    #[inline(always)]
    pub(crate) fn run<R>(self, f: impl FnOnce() -> R) -> R {
        // Each level includes the ones below it, so comparing with the widest is enough.
        assert!(
            self >= Isa::detected(),
            "{self:?} is not supported by this CPU"
        );
        match self {
            // SAFETY: the features were detected just above.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::with_avx512(f) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { x86::with_avx2(f) },
            _ => f(),
        }
    }
}

/// The environment variable that forces the portable (scalar) kernels when set to anything but
/// `0` or the empty string, so that results can be checked as a reader's CPU without AVX would
/// compute them. Read once per process.
///
/// Matrix products that go through ndarray (`Array2::dot`) are not covered: matrixmultiply
/// picks its GEMM kernel at run time and can only be steered at compile time; their results
/// differ between kernels by rounding only (a few ulps).
pub const PORTABLE_ENV: &str = "ATTNBOOK_PORTABLE_SIMD";

/// The instruction set the core's own kernels run with in this process: `"avx512"`, `"avx2"`
/// or `"portable"` (the latter also when [`PORTABLE_ENV`] forces it).
///
/// ```
/// assert!(["avx512", "avx2", "portable"].contains(&attention::kernel_level()));
/// ```
pub fn kernel_level() -> &'static str {
    match Isa::best() {
        Isa::Avx512 => "avx512",
        Isa::Avx2 => "avx2",
        Isa::Scalar => "portable",
    }
}

fn portable_forced() -> bool {
    std::env::var_os(PORTABLE_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

const UNKNOWN: u8 = u8::MAX;
const LEVELS: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Scalar];

/// `decide()` the first time, the stored answer afterwards.
fn cached(slot: &AtomicU8, decide: impl FnOnce() -> Isa) -> Isa {
    match slot.load(Ordering::Relaxed) {
        UNKNOWN => {
            let isa = decide();
            let index = LEVELS.iter().position(|l| *l == isa).unwrap_or(2);
            slot.store(index as u8, Ordering::Relaxed);
            isa
        }
        known => LEVELS[usize::from(known).min(2)],
    }
}

/// One SIMD register of [`Simd::F`] and the operations the kernels need.
///
/// # Safety
///
/// The methods are `unsafe` because `load` and `store` take raw pointers (`LANES` elements,
/// no alignment needed) and because the x86 implementations may only run on a CPU with
/// their features: call them only inside [`Isa::run`] for the matching level.
pub trait Simd {
    /// The element type.
    type F: Copy;
    /// The register type.
    type V: Copy;
    /// Elements per register.
    const LANES: usize;
    /// Whether [`Simd::mul_add`] is one fused instruction (else a multiply and an add).
    const FMA: bool;

    /// Every lane `x`.
    unsafe fn splat(x: Self::F) -> Self::V;
    /// `LANES` elements from `p`.
    unsafe fn load(p: *const Self::F) -> Self::V;
    /// Writes `LANES` elements to `p`.
    unsafe fn store(p: *mut Self::F, v: Self::V);
    /// `n < LANES` elements from `p` and `pad` in the other lanes; reads nothing past them.
    unsafe fn load_partial(p: *const Self::F, n: usize, pad: Self::F) -> Self::V;
    /// Writes the first `n < LANES` lanes of `v` to `p`, and nothing past them.
    unsafe fn store_partial(p: *mut Self::F, n: usize, v: Self::V);
    /// `a + b`.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`.
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`.
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, fused where the instruction set has FMA.
    unsafe fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// Lane-wise `if a > b { a } else { b }`.
    unsafe fn max(a: Self::V, b: Self::V) -> Self::V;
    /// Lane-wise `if x < y { a } else { b }` (so NaN in `x` or `y` picks `b`).
    unsafe fn select_lt(x: Self::V, y: Self::V, a: Self::V, b: Self::V) -> Self::V;
    /// `|a|` with the sign of `sign`.
    unsafe fn copysign(a: Self::V, sign: Self::V) -> Self::V;
    /// `|a|`.
    unsafe fn abs(a: Self::V) -> Self::V;
    /// For `t = n + SHIFT` (the integer `n` held in the low mantissa bits, `SHIFT` being
    /// `1.5 * 2^23` or `1.5 * 2^52`), the number `2^n`; `n` must be a normal exponent.
    unsafe fn pow2_shifted(t: Self::V) -> Self::V;
    /// The sum of the lanes.
    unsafe fn reduce_add(v: Self::V) -> Self::F;
    /// The largest lane (a NaN lane may or may not be ignored).
    unsafe fn reduce_max(v: Self::V) -> Self::F;
}

/// `f64` registers that can also sum a register's worth of registers at once.
pub(crate) trait SimdF64: Simd<F = f64> {
    /// The register whose lane `i` is the sum of the lanes of `v[i]`; `v.len() == LANES`.
    ///
    /// # Safety
    ///
    /// As the methods of [`Simd`].
    unsafe fn reduce_add_each(v: &[Self::V]) -> Self::V;
}

impl SimdF64 for Scalar<f64> {
    #[inline(always)]
    unsafe fn reduce_add_each(v: &[f64]) -> f64 {
        v[0]
    }
}

/// The portable [`Simd`]: one element per register, separate multiply and add (a `mul_add`
/// without hardware FMA would be a slow libm call).
pub struct Scalar<F>(PhantomData<F>);

/// Implements [`Simd`] for `Scalar<$f>`; `$bits`/`$shift_bits`/`$bias`/`$mant` describe the
/// float format for `pow2_shifted`.
macro_rules! scalar_impl {
    ($f:ty, $shift_bits:expr, $bias:expr, $mant:expr) => {
        impl Simd for Scalar<$f> {
            type F = $f;
            type V = $f;
            const LANES: usize = 1;
            const FMA: bool = false;

            #[inline(always)]
            unsafe fn splat(x: $f) -> $f {
                x
            }
            #[inline(always)]
            unsafe fn load(p: *const $f) -> $f {
                // SAFETY: the caller passes a readable pointer (trait contract).
                unsafe { p.read_unaligned() }
            }
            #[inline(always)]
            unsafe fn store(p: *mut $f, v: $f) {
                // SAFETY: the caller passes a writable pointer (trait contract).
                unsafe { p.write_unaligned(v) }
            }
            #[inline(always)]
            unsafe fn load_partial(_: *const $f, n: usize, pad: $f) -> $f {
                debug_assert_eq!(n, 0);
                pad
            }
            #[inline(always)]
            unsafe fn store_partial(_: *mut $f, n: usize, _: $f) {
                debug_assert_eq!(n, 0);
            }
            #[inline(always)]
            unsafe fn add(a: $f, b: $f) -> $f {
                a + b
            }
            #[inline(always)]
            unsafe fn sub(a: $f, b: $f) -> $f {
                a - b
            }
            #[inline(always)]
            unsafe fn mul(a: $f, b: $f) -> $f {
                a * b
            }
            #[inline(always)]
            unsafe fn div(a: $f, b: $f) -> $f {
                a / b
            }
            #[inline(always)]
            unsafe fn mul_add(a: $f, b: $f, c: $f) -> $f {
                a * b + c
            }
            #[inline(always)]
            unsafe fn max(a: $f, b: $f) -> $f {
                if a > b { a } else { b }
            }
            #[inline(always)]
            unsafe fn select_lt(x: $f, y: $f, a: $f, b: $f) -> $f {
                if x < y { a } else { b }
            }
            #[inline(always)]
            unsafe fn copysign(a: $f, sign: $f) -> $f {
                a.copysign(sign)
            }
            #[inline(always)]
            unsafe fn abs(a: $f) -> $f {
                a.abs()
            }
            #[inline(always)]
            unsafe fn pow2_shifted(t: $f) -> $f {
                // Wrapping integer arithmetic: a saturating `as` cast here would stop LLVM
                // from vectorising any loop around it.
                <$f>::from_bits(
                    t.to_bits()
                        .wrapping_add($bias.wrapping_sub($shift_bits))
                        .wrapping_shl($mant),
                )
            }
            #[inline(always)]
            unsafe fn reduce_add(v: $f) -> $f {
                v
            }
            #[inline(always)]
            unsafe fn reduce_max(v: $f) -> $f {
                v
            }
        }
    };
}

scalar_impl!(f32, 0x4B40_0000_u32, 127_u32, 23);
scalar_impl!(f64, 0x4338_0000_0000_0000_u64, 1023_u64, 52);

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

/// Runs `$body` compiled for `$isa` (an [`Isa`]), with `$S` naming that level's `f64`
/// register type ([`SimdF64`]).
macro_rules! with_f64_simd {
    ($isa:expr, $S:ident => $body:expr) => {
        match $isa {
            #[cfg(target_arch = "x86_64")]
            $crate::simd::Isa::Avx512 => {
                type $S = $crate::simd::Avx512<f64>;
                $crate::simd::Isa::Avx512.run(
                    #[inline(always)]
                    || $body,
                )
            }
            #[cfg(target_arch = "x86_64")]
            $crate::simd::Isa::Avx2 => {
                type $S = $crate::simd::Avx2<f64>;
                $crate::simd::Isa::Avx2.run(
                    #[inline(always)]
                    || $body,
                )
            }
            _ => {
                type $S = $crate::simd::Scalar<f64>;
                $body
            }
        }
    };
}
pub(crate) use with_f64_simd;

#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_is_available_and_scalar_always_is() {
        assert!(Isa::best().is_available());
        assert!(Isa::all_available().contains(&Isa::Scalar));
        assert_eq!(Isa::all_available()[0], Isa::detected());
        assert!(Isa::best() >= Isa::detected());
    }

    #[test]
    fn run_returns_the_closure_value_on_every_level() {
        for isa in Isa::all_available() {
            let v: Vec<f64> = (0..37).map(f64::from).collect();
            let sum = isa.run(
                #[inline(always)]
                || v.iter().map(|x| x * 2.0).sum::<f64>(),
            );
            assert_eq!(sum, 36.0 * 37.0);
        }
    }
}
