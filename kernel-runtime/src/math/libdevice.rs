//! Functions of CUDA's math API (Numba's `cuda.libdevice`) that Rust's float methods lack, for
//! `f32` and `f64`, under CUDA's names: `math::exp10(x)`, `math::sinpi(x)`, `math::rsqrt(x)`,
//! the Bessel functions `math::j0(x)` ... `math::yn(n, x)`, and others; the inverse error
//! functions `math::erfinv`, `erfcinv` and `normcdfinv` are in the `erfinv` module.
//!
//! ```
//! use kernel_runtime::math;
//!
//! assert_eq!(math::exp10(3.0f64), 1000.0);
//! assert_eq!(math::sinpi(7.0f32), 0.0); // exactly, where sin(7π) is not
//! assert_eq!(math::cospi(2.5f64), 0.0);
//! assert_eq!(math::ilogb(48.0f32), 5);
//! assert!((math::j0(1.0f64) - 0.765_197_686_557_966_6).abs() < 1e-15);
//! ```
//!
//! Each is the `libm` crate's function on both backends, so the CPU backend and a GPU agree bit
//! for bit, except `sincos`, `sinpi` and `cospi`, which are built on [`DeviceFloat`]'s `sin`
//! and `cos` (see [`math`](super)), and `rsqrt`, `1 / sqrt(x)` rounded twice (CUDA's is within
//! 2 units in the last place too).

use super::DeviceFloat;
use crate::number::DeviceNumber;
use core::ops::Neg;

/// The trait of the functions' floats, with a method per `libm` function: each listed once,
/// as `fn method(x; args) -> type = libm_name(call args)`, `x` standing for `self`, and
/// implemented for `f32` and `f64` through `libm::Libm`.
macro_rules! libdevice_float {
    ($($(#[$doc:meta])* fn $method:ident($x:ident $(; $arg:ident: $at:ty)*) -> $ret:ty
        = $libm:ident($($call:ident),*);)*) => {
        /// The floats of CUDA's math API functions here: `f32` and `f64`. Its constants have
        /// names no other bound of a float has ([`DeviceNumber`]'s `ONE`, the `cmath` bound's
        /// `HALF`), so that a function may take both.
        pub trait LibdeviceFloat:
            DeviceFloat + DeviceNumber + Neg<Output = Self> + sealed::Sealed
        {
            $($(#[$doc])* fn $method(self $(, $arg: $at)*) -> $ret;)*
            /// `v` rounded to the type.
            #[doc(hidden)]
            fn from_f64_(v: f64) -> Self;
            /// π.
            const PI: Self;
            /// 1/√2.
            const FRAC_1_SQRT_2: Self;
        }
        libdevice_float!(@impl f32 $(fn $method($x $(; $arg: $at)*) -> $ret = $libm($($call),*);)*);
        libdevice_float!(@impl f64 $(fn $method($x $(; $arg: $at)*) -> $ret = $libm($($call),*);)*);
    };
    (@impl $t:ident $(fn $method:ident($x:ident $(; $arg:ident: $at:ty)*) -> $ret:ty
        = $libm:ident($($call:ident),*);)*) => {
        impl LibdeviceFloat for $t {
            $(
                #[inline(always)]
                fn $method(self $(, $arg: $at)*) -> $ret {
                    let $x = self;
                    libm::Libm::<$t>::$libm($($call),*)
                }
            )*
            #[inline(always)]
            fn from_f64_(v: f64) -> Self {
                v as $t
            }
            const PI: Self = core::$t::consts::PI;
            const FRAC_1_SQRT_2: Self = core::$t::consts::FRAC_1_SQRT_2;
        }
    };
}

libdevice_float! {
    /// `10^self`.
    fn exp10_(x) -> Self = exp10(x);
    /// The next float after `self` towards `y`.
    fn nextafter_(x; y: Self) -> Self = nextafter(x, y);
    /// `self - y` where positive, else `+0`.
    fn fdim_(x; y: Self) -> Self = fdim(x, y);
    /// `self · 2^n`.
    fn scalbn_(x; n: i32) -> Self = scalbn(x, n);
    /// The unbiased exponent of `self`.
    fn ilogb_(x) -> i32 = ilogb(x);
    /// The Bessel function of the first kind of order 0.
    fn j0_(x) -> Self = j0(x);
    /// As above, order 1.
    fn j1_(x) -> Self = j1(x);
    /// As above, order `n`.
    fn jn_(x; n: i32) -> Self = jn(n, x);
    /// The Bessel function of the second kind of order 0.
    fn y0_(x) -> Self = y0(x);
    /// As above, order 1.
    fn y1_(x) -> Self = y1(x);
    /// As above, order `n`.
    fn yn_(x; n: i32) -> Self = yn(n, x);
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `10^x` (CUDA's `exp10`).
#[inline]
pub fn exp10<F: LibdeviceFloat>(x: F) -> F {
    x.exp10_()
}

/// The next representable float after `x` in the direction of `y` (`nextafter`).
#[inline]
pub fn nextafter<F: LibdeviceFloat>(x: F, y: F) -> F {
    x.nextafter_(y)
}

/// The positive difference: `x - y` where `x > y`, else `+0` (`fdim`).
#[inline]
pub fn fdim<F: LibdeviceFloat>(x: F, y: F) -> F {
    x.fdim_(y)
}

/// `x · 2^n`, exactly where the result is representable (`scalbn`).
#[inline]
pub fn scalbn<F: LibdeviceFloat>(x: F, n: i32) -> F {
    x.scalbn_(n)
}

/// The unbiased binary exponent of `x`: `floor(log2 |x|)` for finite non-zero `x` (`ilogb`).
#[inline]
pub fn ilogb<F: LibdeviceFloat>(x: F) -> i32 {
    x.ilogb_()
}

/// The Bessel function of the first kind of order 0 (`j0`).
#[inline]
pub fn j0<F: LibdeviceFloat>(x: F) -> F {
    x.j0_()
}

/// The Bessel function of the first kind of order 1 (`j1`).
#[inline]
pub fn j1<F: LibdeviceFloat>(x: F) -> F {
    x.j1_()
}

/// The Bessel function of the first kind of order `n` (`jn`).
#[inline]
pub fn jn<F: LibdeviceFloat>(n: i32, x: F) -> F {
    x.jn_(n)
}

/// The Bessel function of the second kind of order 0 (`y0`).
#[inline]
pub fn y0<F: LibdeviceFloat>(x: F) -> F {
    x.y0_()
}

/// The Bessel function of the second kind of order 1 (`y1`).
#[inline]
pub fn y1<F: LibdeviceFloat>(x: F) -> F {
    x.y1_()
}

/// The Bessel function of the second kind of order `n` (`yn`).
#[inline]
pub fn yn<F: LibdeviceFloat>(n: i32, x: F) -> F {
    x.yn_(n)
}

/// `1 / sqrt(x)` (`rsqrt`).
#[inline]
pub fn rsqrt<F: LibdeviceFloat>(x: F) -> F {
    F::ONE / x.sqrt()
}

/// `(sin x, cos x)` (`sincos`).
#[inline]
pub fn sincos<F: LibdeviceFloat>(x: F) -> (F, F) {
    (x.sin(), x.cos())
}

/// ½ and 2.
fn half_and_two<F: LibdeviceFloat>() -> (F, F) {
    let two = F::ONE + F::ONE;
    (F::ONE / two, two)
}

/// `sin(π x)`, exactly 0 at whole `x` (`sinpi`): `x` is reduced modulo 2 exactly before the
/// multiplication by π rounds.
pub fn sinpi<F: LibdeviceFloat>(x: F) -> F {
    let (half, two) = half_and_two::<F>();
    // In [-1, 1], exactly; sin(π r) = sin(π (±1 - r)), which is exact too (Sterbenz).
    let r = x.remainder(two);
    let t = if r > half {
        F::ONE - r
    } else if r < -half {
        -F::ONE - r
    } else {
        r
    };
    (F::PI * t).sin()
}

/// `cos(π x)`, exactly 0 halfway between whole numbers (`cospi`): `cos(π r) = sin(π (½ -
/// |r|))` for `r = x` reduced modulo 2 exactly.
pub fn cospi<F: LibdeviceFloat>(x: F) -> F {
    let (half, two) = half_and_two::<F>();
    let r = x.remainder(two).abs();
    (F::PI * (half - r)).sin()
}

/// The standard normal distribution's cumulative distribution function, `P(Z ≤ x)`
/// (`normcdf`): `erfc(-x / √2) / 2`.
pub fn normcdf<F: LibdeviceFloat>(x: F) -> F {
    (-x * F::FRAC_1_SQRT_2).erfc() * half_and_two::<F>().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Bessel functions at 1 and 2.5, from tables (Abramowitz and Stegun).
        let near = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0);
        assert!(near(j0(1.0), 0.765_197_686_557_966_6));
        assert!(near(j1(1.0), 0.440_050_585_744_933_5));
        assert!(near(jn(2, 1.0), 0.114_903_484_931_900_5));
        assert!(near(y0(1.0), 0.088_256_964_215_676_96));
        assert!(near(y1(1.0), -0.781_212_821_300_288_7));
        // Y2(2.5) = 0.8 Y1(2.5) - Y0(2.5), from the tables' 15 digits.
        assert!((yn(2, 2.5f64) + 0.381_335_849_241_803).abs() < 1e-14);
        assert!((j0(2.5f32) + 0.048_383_78).abs() < 1e-7);
        assert_eq!(exp10(-2.0f64), 0.01);
        assert_eq!(nextafter(1.0f64, 2.0), 1.0 + f64::EPSILON);
        assert_eq!(nextafter(1.0f32, 0.0), 1.0 - f32::EPSILON / 2.0);
        assert_eq!((fdim(3.0f32, 5.0), fdim(5.0f32, 3.0)), (0.0, 2.0));
        assert_eq!(scalbn(3.0f64, 4), 48.0);
        assert_eq!((ilogb(48.0f64), ilogb(0.1f32)), (5, -4));
        assert_eq!(rsqrt(4.0f32), 0.5);
        assert_eq!(sincos(0.5f64), (0.5f64.sin(), 0.5f64.cos()));
        assert_eq!(normcdf(0.0f64), 0.5);
        assert!((normcdf(1.959_963_984_540_054f64) - 0.975).abs() < 1e-15);
    }

    #[test]
    fn a_function_may_take_the_cmath_bound_too() {
        // Each constant has one name among the bounds: this compiles.
        fn both<F: crate::cmath::ComplexFloat + LibdeviceFloat>(x: F) -> F {
            sinpi(x) + F::ONE + F::TWO * F::PI
        }
        assert_eq!(both(1.0f64), 1.0 + 2.0 * core::f64::consts::PI);
    }

    #[test]
    fn sinpi_and_cospi_are_exact_where_sin_of_pi_x_is_not() {
        for n in -1000..1000 {
            let x = n as f64;
            assert_eq!(sinpi(x), 0.0, "{x}");
            assert_eq!(cospi(x + 0.5), 0.0, "{x}");
            assert_eq!(cospi(x).abs(), 1.0, "{x}");
            assert_eq!(sinpi(x + 0.5).abs(), 1.0, "{x}");
            assert_eq!(sinpi(n as f32), 0.0, "{x}");
        }
        // Elsewhere, sin(π x) to within rounding of the reduction.
        for k in 0..1000 {
            let x = k as f64 * 0.0137 - 6.8;
            let want = (core::f64::consts::PI * x).sin();
            assert!((sinpi(x) - want).abs() < 1e-14, "{x}");
            assert!(
                (cospi(x) - (core::f64::consts::PI * x).cos()).abs() < 1e-14,
                "{x}"
            );
        }
    }
}
