//! [`Simd`] on x86-64: AVX-512 (`__m512`, `__m512d`) and AVX2 + FMA (`__m256`, `__m256d`).
//!
//! Every method is `#[inline(always)]` around one or a few intrinsics; they compile to the
//! intended instructions only once inlined into code that [`Isa::run`](super::Isa::run)
//! compiled with the matching features.

use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{Simd, SimdF64};

#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// AVX-512 registers of `F`.
pub struct Avx512<F>(PhantomData<F>);

/// AVX2 registers of `F`.
pub struct Avx2<F>(PhantomData<F>);

/// The methods that map to one intrinsic each.
macro_rules! plain {
    ($f:ty, $v:ty, $set1:ident, $loadu:ident, $storeu:ident, $add:ident, $sub:ident,
     $mul:ident, $div:ident, $fmadd:ident, $max:ident) => {
        #[inline(always)]
        unsafe fn splat(x: $f) -> $v {
            // SAFETY (all methods): only called where the features are enabled, and `load`
            // and `store` only with pointers valid for `LANES` elements (trait contract).
            unsafe { $set1(x) }
        }
        #[inline(always)]
        unsafe fn load(p: *const $f) -> $v {
            unsafe { $loadu(p) }
        }
        #[inline(always)]
        unsafe fn store(p: *mut $f, v: $v) {
            unsafe { $storeu(p, v) }
        }
        #[inline(always)]
        unsafe fn add(a: $v, b: $v) -> $v {
            unsafe { $add(a, b) }
        }
        #[inline(always)]
        unsafe fn sub(a: $v, b: $v) -> $v {
            unsafe { $sub(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: $v, b: $v) -> $v {
            unsafe { $mul(a, b) }
        }
        #[inline(always)]
        unsafe fn div(a: $v, b: $v) -> $v {
            unsafe { $div(a, b) }
        }
        #[inline(always)]
        unsafe fn mul_add(a: $v, b: $v, c: $v) -> $v {
            unsafe { $fmadd(a, b, c) }
        }
        #[inline(always)]
        unsafe fn max(a: $v, b: $v) -> $v {
            // maxps returns its second operand when either is NaN, as `if a > b {a} else {b}`.
            unsafe { $max(a, b) }
        }
    };
}

/// Lane sums and maxima: AVX-512 has them as (sequence) intrinsics; for AVX2 they go
/// through an array, in a tree (the order does not matter here, and a tree is shorter than
/// a chain).
macro_rules! reduce {
    ($f:ty, $v:ty, $add:ident, $max:ident) => {
        #[inline(always)]
        unsafe fn reduce_add(v: $v) -> $f {
            // SAFETY: only called where the features are enabled.
            unsafe { $add(v) }
        }
        #[inline(always)]
        unsafe fn reduce_max(v: $v) -> $f {
            // SAFETY: only called where the features are enabled.
            unsafe { $max(v) }
        }
    };
    ($f:ty, $v:ty, $n:expr) => {
        #[inline(always)]
        unsafe fn reduce_add(v: $v) -> $f {
            // SAFETY: a register is exactly `$n` elements.
            let mut a: [$f; $n] = unsafe { std::mem::transmute(v) };
            let mut width = $n;
            while width > 1 {
                width /= 2;
                for i in 0..width {
                    a[i] += a[i + width];
                }
            }
            a[0]
        }
        #[inline(always)]
        unsafe fn reduce_max(v: $v) -> $f {
            // SAFETY: as above.
            let a: [$f; $n] = unsafe { std::mem::transmute(v) };
            a.into_iter()
                .fold(<$f>::NEG_INFINITY, |m, x| if x > m { x } else { m })
        }
    };
}

/// All-ones in the 32-bit lanes below `n`, for AVX2's masked loads and stores.
#[inline(always)]
unsafe fn avx2_mask32(n: usize) -> __m256i {
    // SAFETY: only called where AVX2 is enabled.
    unsafe {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }
}

/// All-ones in the 64-bit lanes below `n`, for AVX2's masked loads and stores.
#[inline(always)]
unsafe fn avx2_mask64(n: usize) -> __m256i {
    // SAFETY: only called where AVX2 is enabled.
    unsafe { _mm256_cmpgt_epi64(_mm256_set1_epi64x(n as i64), _mm256_setr_epi64x(0, 1, 2, 3)) }
}

impl Simd for Avx512<f32> {
    type F = f32;
    type V = __m512;
    const LANES: usize = 16;
    const FMA: bool = true;

    plain!(
        f32,
        __m512,
        _mm512_set1_ps,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_add_ps,
        _mm512_sub_ps,
        _mm512_mul_ps,
        _mm512_div_ps,
        _mm512_fmadd_ps,
        _mm512_max_ps
    );
    reduce!(f32, __m512, _mm512_reduce_add_ps, _mm512_reduce_max_ps);

    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize, pad: f32) -> __m512 {
        // Masked-off lanes are neither read nor fault.
        unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(pad), (1u16 << n) - 1, p) }
    }
    #[inline(always)]
    unsafe fn store_partial(p: *mut f32, n: usize, v: __m512) {
        unsafe { _mm512_mask_storeu_ps(p, (1u16 << n) - 1, v) }
    }
    #[inline(always)]
    unsafe fn select_lt(x: __m512, y: __m512, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, y), b, a) }
    }
    #[inline(always)]
    unsafe fn copysign(a: __m512, sign: __m512) -> __m512 {
        unsafe {
            let m = _mm512_set1_epi32(i32::MIN);
            let (a, sign) = (_mm512_castps_si512(a), _mm512_castps_si512(sign));
            _mm512_castsi512_ps(_mm512_or_si512(
                _mm512_andnot_si512(m, a),
                _mm512_and_si512(m, sign),
            ))
        }
    }
    #[inline(always)]
    unsafe fn abs(a: __m512) -> __m512 {
        unsafe { _mm512_abs_ps(a) }
    }
    #[inline(always)]
    unsafe fn pow2_shifted(t: __m512) -> __m512 {
        unsafe {
            let bias = _mm512_set1_epi32(127 - 0x4B40_0000);
            let n = _mm512_add_epi32(_mm512_castps_si512(t), bias);
            _mm512_castsi512_ps(_mm512_slli_epi32::<23>(n))
        }
    }
}

impl Simd for Avx512<f64> {
    type F = f64;
    type V = __m512d;
    const LANES: usize = 8;
    const FMA: bool = true;

    plain!(
        f64,
        __m512d,
        _mm512_set1_pd,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_add_pd,
        _mm512_sub_pd,
        _mm512_mul_pd,
        _mm512_div_pd,
        _mm512_fmadd_pd,
        _mm512_max_pd
    );
    reduce!(f64, __m512d, _mm512_reduce_add_pd, _mm512_reduce_max_pd);

    #[inline(always)]
    unsafe fn load_partial(p: *const f64, n: usize, pad: f64) -> __m512d {
        // Masked-off lanes are neither read nor fault.
        unsafe { _mm512_mask_loadu_pd(_mm512_set1_pd(pad), (1u8 << n) - 1, p) }
    }
    #[inline(always)]
    unsafe fn store_partial(p: *mut f64, n: usize, v: __m512d) {
        unsafe { _mm512_mask_storeu_pd(p, (1u8 << n) - 1, v) }
    }
    #[inline(always)]
    unsafe fn select_lt(x: __m512d, y: __m512d, a: __m512d, b: __m512d) -> __m512d {
        unsafe { _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, y), b, a) }
    }
    #[inline(always)]
    unsafe fn copysign(a: __m512d, sign: __m512d) -> __m512d {
        unsafe {
            let m = _mm512_set1_epi64(i64::MIN);
            let (a, sign) = (_mm512_castpd_si512(a), _mm512_castpd_si512(sign));
            _mm512_castsi512_pd(_mm512_or_si512(
                _mm512_andnot_si512(m, a),
                _mm512_and_si512(m, sign),
            ))
        }
    }
    #[inline(always)]
    unsafe fn abs(a: __m512d) -> __m512d {
        unsafe { _mm512_abs_pd(a) }
    }
    #[inline(always)]
    unsafe fn pow2_shifted(t: __m512d) -> __m512d {
        unsafe {
            let bias = _mm512_set1_epi64(1023 - 0x4338_0000_0000_0000);
            let n = _mm512_add_epi64(_mm512_castpd_si512(t), bias);
            _mm512_castsi512_pd(_mm512_slli_epi64::<52>(n))
        }
    }
}

impl Simd for Avx2<f32> {
    type F = f32;
    type V = __m256;
    const LANES: usize = 8;
    const FMA: bool = true;

    plain!(
        f32,
        __m256,
        _mm256_set1_ps,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_add_ps,
        _mm256_sub_ps,
        _mm256_mul_ps,
        _mm256_div_ps,
        _mm256_fmadd_ps,
        _mm256_max_ps
    );
    reduce!(f32, __m256, 8);

    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize, pad: f32) -> __m256 {
        // Masked-off lanes are neither read nor fault.
        unsafe {
            let mask = avx2_mask32(n);
            let loaded = _mm256_maskload_ps(p, mask);
            _mm256_blendv_ps(_mm256_set1_ps(pad), loaded, _mm256_castsi256_ps(mask))
        }
    }
    #[inline(always)]
    unsafe fn store_partial(p: *mut f32, n: usize, v: __m256) {
        unsafe { _mm256_maskstore_ps(p, avx2_mask32(n), v) }
    }
    #[inline(always)]
    unsafe fn select_lt(x: __m256, y: __m256, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_blendv_ps(b, a, _mm256_cmp_ps::<_CMP_LT_OQ>(x, y)) }
    }
    #[inline(always)]
    unsafe fn copysign(a: __m256, sign: __m256) -> __m256 {
        unsafe {
            let m = _mm256_set1_ps(-0.0);
            _mm256_or_ps(_mm256_andnot_ps(m, a), _mm256_and_ps(m, sign))
        }
    }
    #[inline(always)]
    unsafe fn abs(a: __m256) -> __m256 {
        unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), a) }
    }
    #[inline(always)]
    unsafe fn pow2_shifted(t: __m256) -> __m256 {
        unsafe {
            let bias = _mm256_set1_epi32(127 - 0x4B40_0000);
            let n = _mm256_add_epi32(_mm256_castps_si256(t), bias);
            _mm256_castsi256_ps(_mm256_slli_epi32::<23>(n))
        }
    }
}

impl Simd for Avx2<f64> {
    type F = f64;
    type V = __m256d;
    const LANES: usize = 4;
    const FMA: bool = true;

    plain!(
        f64,
        __m256d,
        _mm256_set1_pd,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_add_pd,
        _mm256_sub_pd,
        _mm256_mul_pd,
        _mm256_div_pd,
        _mm256_fmadd_pd,
        _mm256_max_pd
    );
    reduce!(f64, __m256d, 4);

    #[inline(always)]
    unsafe fn load_partial(p: *const f64, n: usize, pad: f64) -> __m256d {
        // Masked-off lanes are neither read nor fault.
        unsafe {
            let mask = avx2_mask64(n);
            let loaded = _mm256_maskload_pd(p, mask);
            _mm256_blendv_pd(_mm256_set1_pd(pad), loaded, _mm256_castsi256_pd(mask))
        }
    }
    #[inline(always)]
    unsafe fn store_partial(p: *mut f64, n: usize, v: __m256d) {
        unsafe { _mm256_maskstore_pd(p, avx2_mask64(n), v) }
    }
    #[inline(always)]
    unsafe fn select_lt(x: __m256d, y: __m256d, a: __m256d, b: __m256d) -> __m256d {
        unsafe { _mm256_blendv_pd(b, a, _mm256_cmp_pd::<_CMP_LT_OQ>(x, y)) }
    }
    #[inline(always)]
    unsafe fn copysign(a: __m256d, sign: __m256d) -> __m256d {
        unsafe {
            let m = _mm256_set1_pd(-0.0);
            _mm256_or_pd(_mm256_andnot_pd(m, a), _mm256_and_pd(m, sign))
        }
    }
    #[inline(always)]
    unsafe fn abs(a: __m256d) -> __m256d {
        unsafe { _mm256_andnot_pd(_mm256_set1_pd(-0.0), a) }
    }
    #[inline(always)]
    unsafe fn pow2_shifted(t: __m256d) -> __m256d {
        unsafe {
            let bias = _mm256_set1_epi64x(1023 - 0x4338_0000_0000_0000);
            let n = _mm256_add_epi64(_mm256_castpd_si256(t), bias);
            _mm256_castsi256_pd(_mm256_slli_epi64::<52>(n))
        }
    }
}

impl SimdF64 for Avx512<f64> {
    #[inline(always)]
    unsafe fn reduce_add_each(v: &[__m512d]) -> __m512d {
        let v: &[__m512d; 8] = v.try_into().expect("one register per lane");
        // SAFETY: only called where AVX-512F is enabled.
        unsafe {
            let (p01, p23) = (pair_sums(v[0], v[1]), pair_sums(v[2], v[3]));
            let (p45, p67) = (pair_sums(v[4], v[5]), pair_sums(v[6], v[7]));
            fold_halves(fold_halves(p01, p23), fold_halves(p45, p67))
        }
    }
}

/// Per 128-bit lane `k`: `[a[2k] + a[2k+1], b[2k] + b[2k+1]]`.
#[inline(always)]
unsafe fn pair_sums(a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: only called where AVX-512F is enabled.
    unsafe { _mm512_add_pd(_mm512_unpacklo_pd(a, b), _mm512_unpackhi_pd(a, b)) }
}

/// 128-bit lanes `[a0 + a1, a2 + a3, b0 + b1, b2 + b3]`.
#[inline(always)]
unsafe fn fold_halves(a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: only called where AVX-512F is enabled.
    unsafe {
        _mm512_add_pd(
            _mm512_shuffle_f64x2::<0b10_00_10_00>(a, b),
            _mm512_shuffle_f64x2::<0b11_01_11_01>(a, b),
        )
    }
}

impl SimdF64 for Avx2<f64> {
    #[inline(always)]
    unsafe fn reduce_add_each(v: &[__m256d]) -> __m256d {
        let v: &[__m256d; 4] = v.try_into().expect("one register per lane");
        // SAFETY: only called where AVX2 is enabled.
        unsafe {
            // [v0 0+1, v1 0+1, v0 2+3, v1 2+3] and the same for v2, v3.
            let (h01, h23) = (_mm256_hadd_pd(v[0], v[1]), _mm256_hadd_pd(v[2], v[3]));
            _mm256_add_pd(
                _mm256_permute2f128_pd::<0x20>(h01, h23),
                _mm256_permute2f128_pd::<0x31>(h01, h23),
            )
        }
    }
}
