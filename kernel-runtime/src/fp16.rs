//! Numba's `cuda.fp16` functions, CUDA's `cuda_fp16.h` and `cuda_bf16.h` intrinsics
//! (`__hadd`, `hsin`, ...), on `f16` and `bf16`, for kernels ported as they are written:
//! `fp16::hfma(a, b, c)`. Each is the operator or [`DeviceFloat`] method of the same meaning
//! (`a + b`, `x.sin()`), computed as those are: arithmetic and square roots correctly rounded,
//! `hfma` rounded once, the transcendental functions in `f32` and rounded to the half.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! let (a, b) = (f16::from_f32(1.5), f16::from_f32(0.25));
//! assert_eq!(fp16::hadd(a, b), f16::from_f32(1.75));
//! assert_eq!(fp16::hfma(a, b, b), f16::from_f32(0.625));
//! assert!(fp16::hlt(b, a) && !fp16::hne(f16::NAN, a));
//! assert_eq!(fp16::hrint(f16::from_f32(2.5)), f16::from_f32(2.0));
//! ```

pub use crate::math::Half;

use crate::math::{free_fns, DeviceFloat};

/// Functions of the operators: `$name(a, b) = a $op b`.
macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident => $op:tt;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<H: Half>(a: H, b: H) -> H {
            a $op b
        }
    )*};
}

binary! {
    /// `__hadd(a, b)`: `a + b`.
    hadd => +;
    /// `__hsub(a, b)`: `a - b`.
    hsub => -;
    /// `__hmul(a, b)`: `a * b`.
    hmul => *;
    /// `__hdiv(a, b)`: `a / b`.
    hdiv => /;
}

/// Functions of the comparisons, each `false` where either operand is NaN.
macro_rules! compare {
    ($($(#[$doc:meta])* $name:ident => |$a:ident, $b:ident| $e:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<H: Half>($a: H, $b: H) -> bool {
            $e
        }
    )*};
}

compare! {
    /// `__heq(a, b)`: `a == b`.
    heq => |a, b| a == b;
    /// `__hne(a, b)`: `a != b`, and `false` where either is NaN (CUDA's ordered comparison).
    hne => |a, b| a.partial_cmp(&b).is_some_and(|o| o.is_ne());
    /// `__hlt(a, b)`: `a < b`.
    hlt => |a, b| a < b;
    /// `__hle(a, b)`: `a <= b`.
    hle => |a, b| a <= b;
    /// `__hgt(a, b)`: `a > b`.
    hgt => |a, b| a > b;
    /// `__hge(a, b)`: `a >= b`.
    hge => |a, b| a >= b;
}

free_fns! {
    Half;
    /// `__hfma(a, b, c)`: `a * b + c`, rounded once.
    hfma => mul_add(b, c);
    /// `__habs(x)`: `|x|`.
    habs => abs();
    /// `__hmax(a, b)`: the larger; the other where one is NaN.
    hmax => max(b);
    /// `__hmin(a, b)`: the smaller; the other where one is NaN.
    hmin => min(b);
    /// `hsqrt(x)`: the square root.
    hsqrt => sqrt();
    /// `hsin(x)`: the sine (radians).
    hsin => sin();
    /// `hcos(x)`: the cosine (radians).
    hcos => cos();
    /// `hexp(x)`: `e^x`.
    hexp => exp();
    /// `hexp2(x)`: `2^x`.
    hexp2 => exp2();
    /// `hlog(x)`: the natural logarithm.
    hlog => ln();
    /// `hlog2(x)`: the base-2 logarithm.
    hlog2 => log2();
    /// `hlog10(x)`: the base-10 logarithm.
    hlog10 => log10();
    /// `hfloor(x)`: the largest integer not above `x`.
    hfloor => floor();
    /// `hceil(x)`: the smallest integer not below `x`.
    hceil => ceil();
    /// `htrunc(x)`: the integer part.
    htrunc => trunc();
}

/// `__hneg(x)`: `-x`.
#[inline(always)]
pub fn hneg<H: Half>(x: H) -> H {
    -x
}

/// `hexp10(x)`: `10^x`, in `f32`.
#[inline(always)]
pub fn hexp10<H: Half>(x: H) -> H {
    H::narrow(libm::exp10f(x.wide()))
}

/// `hrsqrt(x)`: `1 / sqrt(x)`, in `f32`.
#[inline(always)]
pub fn hrsqrt<H: Half>(x: H) -> H {
    H::narrow(1.0 / DeviceFloat::sqrt(x.wide()))
}

/// `hrcp(x)`: `1 / x`, correctly rounded.
#[inline(always)]
pub fn hrcp<H: Half>(x: H) -> H {
    H::narrow(1.0 / x.wide())
}

/// `hrint(x)`: the nearest integer, halves to even.
#[inline(always)]
pub fn hrint<H: Half>(x: H) -> H {
    H::narrow(libm::rintf(x.wide()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn hfma_rounds_once() {
        // 1.5 · (1 + 3·2⁻¹⁰) lies halfway between two halves; the 2⁻²⁴ added decides it, which
        // a sum rounded to f32 first would lose (and round the tie to even, 4 ulps up, not 5).
        let (a, b, c) = (
            f16::from_f32(1.5),
            f16::from_f32(1.0 + 3.0 / 1024.0),
            f16::from_bits(1),
        );
        assert_eq!(hfma(a, b, c), f16::from_f32(1.5 + 5.0 / 1024.0));
        assert_eq!(hfma(a, b, f16::ZERO), f16::from_f32(1.5 + 4.0 / 1024.0));
    }

    #[test]
    fn the_functions_are_their_operators_and_methods() {
        let (a, b) = (bf16::from_f32(3.0), bf16::from_f32(-0.5));
        assert_eq!((hsub(a, b), hmul(a, b), hdiv(a, b)), (a - b, a * b, a / b));
        assert_eq!((hneg(b), habs(b), hmax(a, bf16::NAN)), (-b, -b, a));
        assert!(hge(a, a) && hle(b, a) && hgt(a, b) && !heq(bf16::NAN, bf16::NAN));
        assert_eq!(hsqrt(f16::from_f32(9.0)), f16::from_f32(3.0));
        assert_eq!(hexp10(f16::from_f32(2.0)), f16::from_f32(100.0));
        assert_eq!(hrcp(f16::from_f32(4.0)), f16::from_f32(0.25));
        assert_eq!(hrsqrt(f16::from_f32(16.0)), f16::from_f32(0.25));
        let rounded: Vec<f32> = [-1.5f32, -0.5, 0.5, 1.5, 2.5]
            .map(|v| hrint(f16::from_f32(v)).to_f32())
            .to_vec();
        assert_eq!(rounded, [-2.0, -0.0, 0.0, 2.0, 2.0]);
        assert_eq!(
            (hfloor(b), hceil(b), htrunc(b)),
            (-bf16::ONE, -bf16::ZERO, -bf16::ZERO)
        );
    }
}
