//! Math on `f32` and `f64` that works the same way in host and device code.
//!
//! On the host, `x.sin()` is the standard library's method. Device code is `no_std`, where
//! those methods do not exist; the [`DeviceFloat`] trait (in the prelude) supplies them, so a
//! kernel is written once: `x.sin()`, `x.powi(3)`, `x.mul_add(y, z)`. Free functions with
//! Numba's names (`math::sqrt(x)`, `math::pow(x, y)`, `math::fma(x, y, z)`, `math::log(x)`)
//! are here too.
//!
//! On the device, `sqrt`, `mul_add`/`fma`, `floor`, `ceil`, `round` and `trunc` are single PTX
//! instructions (`sqrt.rn`, `fma.rn`, `cvt.rmi`, ...), and `sin` and `cos` are inlined
//! multiply-adds (within 2 ulp; see the `trig` module); the other functions come from the
//! `libm` crate. [`fast`] has CUDA's approximate `f32` intrinsics (`__expf`, `__fdividef`, ...),
//! which Numba's `fastmath=True` uses; a crate built with `KERNEL_FAST_MATH=1`
//! (`kernel_build::Builder::fast_math`) gets them for `f32`'s `sin`, `cos`, `tan`, `exp`, `ln`,
//! `log2`, `log10` and `powf` on the GPU, and approximate `/` and `sqrt` too; a
//! `#[kernel(fastmath)]` kernel (or `#[device(fastmath)]` function) gets them alone.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! assert_eq!(math::pow(2.0f64, 10.0), 1024.0);
//! assert!((1.0f32.erf() - 0.842_700_8).abs() < 1e-6);
//! ```
//!
//! # Half precision
//!
//! `f16` and `bf16` have every method too, as CUDA's `cuda_fp16` functions compute them: in
//! `f32`, rounded once to the type. `sqrt`, `floor`, `ceil`, `round`, `trunc`, `abs`, `min`,
//! `max` and `copysign` are then correctly rounded (`f32` holds the exact result of one such
//! operation on halves, or one rounding of it that a second rounding to the half cannot move);
//! `mul_add` is computed in `f64`, exactly for `f16` (see `half_method`); the transcendental
//! ones are within one unit of the half's last place.
//! The same code runs on both backends, so they agree wherever their `f32` functions do.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! let x = f16::from_f32(2.0);
//! assert_eq!(x.sqrt(), f16::from_f32(2.0f32.sqrt()));
//! assert_eq!((-x).abs(), x);
//! assert_eq!(bf16::from_f32(0.5).exp2(), bf16::from_f32(2.0f32.powf(0.5)));
//! ```

#[cfg(any(target_arch = "nvptx64", test))]
mod trig;

mod erfinv;
pub mod fast;
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub mod fastmath;
mod libdevice;
pub use erfinv::{erfcinv, erfinv, normcdfinv};
pub use libdevice::{
    cospi, exp10, fdim, ilogb, j0, j1, jn, nextafter, normcdf, rsqrt, scalbn, sincos, sinpi, y0,
    y1, yn, LibdeviceFloat,
};

macro_rules! device_float {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $at:ty),*) -> $ret:ty
        => host $host:expr, device $dev32:expr, $dev64:expr;)*) => {
        /// The float methods kernels use, for `f32` and `f64`, on the host and on the device;
        /// and for `f16` and `bf16`, computed in `f32` and rounded to the type (see
        /// [Half precision](self#half-precision)).
        pub trait DeviceFloat: Copy + PartialOrd {
            $($(#[$doc])* fn $name(self $(, $arg: $at)*) -> $ret;)*
        }
        device_float!(@impl f32, [$($name ($($arg: $at),*) -> $ret, $host, $dev32;)*]);
        device_float!(@impl f64, [$($name ($($arg: $at),*) -> $ret, $host, $dev64;)*]);
        device_float!(@half crate::f16, [$($name ($($arg: $at),*) -> $ret;)*]);
        device_float!(@half half::bf16, [$($name ($($arg: $at),*) -> $ret;)*]);
    };
    (@half $t:ty, [$($name:ident ($($arg:ident: $at:ty),*) -> $ret:ty;)*]) => {
        impl DeviceFloat for $t {
            $(
                #[inline(always)]
                fn $name(self $(, $arg: $at)*) -> $ret {
                    half_method!($t, $name, self $(, $arg)*)
                }
            )*
        }
    };
    (@impl $t:ident, [$($name:ident ($($arg:ident: $at:ty),*) -> $ret:ty, $host:expr, $dev:expr;)*]) => {
        impl DeviceFloat for $t {
            $(
                #[inline(always)]
                fn $name(self $(, $arg: $at)*) -> $ret {
                    #[allow(unused_imports)]
                    use libm::*;
                    #[allow(non_camel_case_types, dead_code)]
                    type F = $t;
                    let x = self;
                    #[cfg(not(target_arch = "nvptx64"))]
                    {
                        let f: fn(F $(, $at)*) -> $ret = $host;
                        f(x $(, $arg)*)
                    }
                    #[cfg(target_arch = "nvptx64")]
                    {
                        let f: fn(F $(, $at)*) -> $ret = $dev;
                        f(x $(, $arg)*)
                    }
                }
            )*
        }
    };
}

/// The `f32` function of a kernel's device build: `$fast`, from [`fast`], with the `fast-math`
/// feature (Numba's `fastmath=True`, `KERNEL_FAST_MATH=1`), else `$precise`.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_macros))]
macro_rules! fast_or {
    ($precise:expr, $fast:expr) => {{
        #[cfg(feature = "fast-math")]
        {
            $fast
        }
        #[cfg(not(feature = "fast-math"))]
        {
            $precise
        }
    }};
}

device_float! {
    /// Square root.
    fn sqrt() -> Self => host F::sqrt, device core::f32::math::sqrt, core::f64::math::sqrt;
    /// Cube root.
    fn cbrt() -> Self => host F::cbrt, device cbrtf, cbrt;
    /// Sine (radians).
    fn sin() -> Self => host F::sin, device fast_or!(trig::f32::sin, fast::sin), trig::f64::sin;
    /// Cosine (radians).
    fn cos() -> Self => host F::cos, device fast_or!(trig::f32::cos, fast::cos), trig::f64::cos;
    /// Tangent (radians).
    fn tan() -> Self => host F::tan, device fast_or!(tanf, fast::tan), tan;
    /// Arcsine.
    fn asin() -> Self => host F::asin, device asinf, asin;
    /// Arccosine.
    fn acos() -> Self => host F::acos, device acosf, acos;
    /// Arctangent.
    fn atan() -> Self => host F::atan, device atanf, atan;
    /// Four-quadrant arctangent of `self / other`.
    fn atan2(other: Self) -> Self => host F::atan2, device atan2f, atan2;
    /// Hyperbolic sine.
    fn sinh() -> Self => host F::sinh, device sinhf, sinh;
    /// Hyperbolic cosine.
    fn cosh() -> Self => host F::cosh, device coshf, cosh;
    /// Hyperbolic tangent.
    fn tanh() -> Self => host F::tanh, device tanhf, tanh;
    /// `e^self`.
    fn exp() -> Self => host F::exp, device fast_or!(expf, fast::exp), exp;
    /// `2^self`.
    fn exp2() -> Self => host F::exp2, device exp2f, exp2;
    /// `e^self - 1`, accurate near zero.
    fn exp_m1() -> Self => host F::exp_m1, device expm1f, expm1;
    /// Natural logarithm.
    fn ln() -> Self => host F::ln, device fast_or!(logf, fast::log), log;
    /// Base-2 logarithm.
    fn log2() -> Self => host F::log2, device fast_or!(log2f, fast::log2), log2;
    /// Base-10 logarithm.
    fn log10() -> Self => host F::log10, device fast_or!(log10f, fast::log10), log10;
    /// `ln(1 + self)`, accurate near zero.
    fn ln_1p() -> Self => host F::ln_1p, device log1pf, log1p;
    /// `self^n` for a float exponent.
    fn powf(n: Self) -> Self => host F::powf, device fast_or!(powf, fast::pow), pow;
    /// `self^n` for an integer exponent.
    fn powi(n: i32) -> Self => host F::powi, device |x: F, n: i32| powi_by_squaring(x, n), |x: F, n: i32| powi_by_squaring(x, n);
    /// Largest integer not above `self`.
    fn floor() -> Self => host F::floor, device core::f32::math::floor, core::f64::math::floor;
    /// Smallest integer not below `self`.
    fn ceil() -> Self => host F::ceil, device core::f32::math::ceil, core::f64::math::ceil;
    /// Nearest integer, halves away from zero.
    fn round() -> Self => host F::round, device core::f32::math::round, core::f64::math::round;
    /// Nearest integer, halves to even (Python's `round`, CUDA's `rint`).
    fn round_ties_even() -> Self => host F::round_ties_even, device core::f32::math::round_ties_even, core::f64::math::round_ties_even;
    /// Integer part.
    fn trunc() -> Self => host F::trunc, device core::f32::math::trunc, core::f64::math::trunc;
    /// Absolute value.
    fn abs() -> Self => host F::abs, device F::abs, F::abs;
    /// `self * a + b` with one rounding (fused multiply-add).
    fn mul_add(a: Self, b: Self) -> Self => host F::mul_add, device core::f32::math::mul_add, core::f64::math::mul_add;
    /// The smaller of two values (the other one if one is NaN).
    fn min(other: Self) -> Self => host F::min, device F::min, F::min;
    /// The larger of two values (the other one if one is NaN).
    fn max(other: Self) -> Self => host F::max, device F::max, F::max;
    /// `sqrt(self² + other²)` without undue overflow.
    fn hypot(other: Self) -> Self => host F::hypot, device hypotf, hypot;
    /// `self` with the sign of `sign`.
    fn copysign(sign: Self) -> Self => host F::copysign, device F::copysign, F::copysign;
    /// The error function.
    fn erf() -> Self => host libm::Libm::<F>::erf, device erff, erf;
    /// The complementary error function `1 - erf(self)`.
    fn erfc() -> Self => host libm::Libm::<F>::erfc, device erfcf, erfc;
    /// Inverse hyperbolic sine.
    fn asinh() -> Self => host libm::Libm::<F>::asinh, device asinhf, asinh;
    /// Inverse hyperbolic cosine.
    fn acosh() -> Self => host libm::Libm::<F>::acosh, device acoshf, acosh;
    /// Inverse hyperbolic tangent.
    fn atanh() -> Self => host libm::Libm::<F>::atanh, device atanhf, atanh;
    /// The gamma function, `Γ(self)` (C's `tgamma`; not `gamma`, which the standard library
    /// may take).
    fn tgamma() -> Self => host libm::Libm::<F>::tgamma, device tgammaf, tgamma;
    /// The natural logarithm of `|Γ(self)|` (C's `lgamma`).
    fn lgamma() -> Self => host libm::Libm::<F>::lgamma, device lgammaf, lgamma;
    /// The IEEE remainder of `self / other`: `self - n · other`, `n` the nearest integer to
    /// the quotient (halves to even).
    fn remainder(other: Self) -> Self => host libm::Libm::<F>::remainder, device remainderf, remainder;
    /// The remainder of `self / other` truncated, with the sign of `self` (C's `fmod`, Rust's
    /// `%`).
    fn fmod(other: Self) -> Self => host libm::Libm::<F>::fmod, device fmodf, fmod;
    /// `self · 2^n`.
    fn ldexp(n: i32) -> Self => host libm::Libm::<F>::ldexp, device ldexpf, ldexp;
    /// The mantissa in `[0.5, 1)` (or 0) and the exponent: `self = m · 2^e`.
    fn frexp() -> (Self, i32) => host libm::Libm::<F>::frexp, device frexpf, frexp;
    /// The fractional and the integer part, each with the sign of `self`.
    fn modf() -> (Self, Self) => host libm::Libm::<F>::modf, device modff, modf;
}

/// A half-precision method: in `f32`, rounded to the half; `mul_add` in `f64`, which holds a
/// half's `a * b + c` exactly (an `f16`'s, always; a `bf16`'s, unless `c` and `a * b` differ by
/// more than 2⁴⁵ in magnitude), then rounded to `f32` to odd (see [`to_odd_f32`]) and from
/// there to the half: rounded once, as PTX's `fma.rn.f16` rounds.
macro_rules! half_method {
    ($t:ty, mul_add, $x:expr, $a:expr, $b:expr) => {
        <$t>::from_f32(to_odd_f32(DeviceFloat::mul_add(
            $x.to_f64(),
            $a.to_f64(),
            $b.to_f64(),
        )))
    };
    ($t:ty, frexp, $x:expr) => {{
        let (m, e) = DeviceFloat::frexp($x.to_f32());
        (<$t>::from_f32(m), e)
    }};
    ($t:ty, modf, $x:expr) => {{
        let (f, i) = DeviceFloat::modf($x.to_f32());
        (<$t>::from_f32(f), <$t>::from_f32(i))
    }};
    ($t:ty, $name:ident, $x:expr $(, $arg:expr)*) => {
        <$t>::from_f32(DeviceFloat::$name($x.to_f32() $(, Widen::widen($arg))*))
    };
}
use half_method;

/// `x` rounded to `f32` to odd: where it is not exact, the neighbour whose last bit is 1. A
/// value so rounded to 24 bits rounds to 11 (`f16`) or 8 (`bf16`) as `x` itself would, where
/// rounding to nearest twice could land on the other side of a tie.
#[inline(always)]
fn to_odd_f32(x: f64) -> f32 {
    let r = x as f32;
    let bits = r.to_bits();
    if r as f64 == x || x.is_nan() || bits & 1 == 1 {
        return r;
    }
    // Inexact and even: one step towards `x`, in magnitude.
    if (r as f64).abs() < x.abs() {
        f32::from_bits(bits + 1)
    } else {
        f32::from_bits(bits - 1)
    }
}

/// The half-precision types: `f16` and `bf16` (the bound of [`fp16`](crate::fp16)'s functions).
pub trait Half:
    DeviceFloat
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::Div<Output = Self>
    + core::ops::Neg<Output = Self>
    + sealed::Sealed
{
    /// The value as an `f32` (exact).
    fn wide(self) -> f32;
    /// `v` rounded to the type.
    fn narrow(v: f32) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::f16 {}
    impl Sealed for half::bf16 {}
}

macro_rules! half_type {
    ($($t:ty),*) => {$(
        impl Half for $t {
            #[inline(always)]
            fn wide(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn narrow(v: f32) -> Self {
                <$t>::from_f32(v)
            }
        }
    )*};
}
half_type!(crate::f16, half::bf16);

/// An argument of a half-precision method as its `f32` computation takes it: a half widened,
/// an exponent as it is.
trait Widen {
    type Wide;
    fn widen(self) -> Self::Wide;
}

impl<H: Half> Widen for H {
    type Wide = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.wide()
    }
}

impl Widen for i32 {
    type Wide = i32;
    #[inline(always)]
    fn widen(self) -> i32 {
        self
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn powi_by_squaring<
    F: Copy + core::ops::Mul<Output = F> + core::ops::Div<Output = F> + From<i8>,
>(
    x: F,
    n: i32,
) -> F {
    let mut base = x;
    let mut e = n.unsigned_abs();
    let mut acc = F::from(1i8);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc * base;
        }
        base = base * base;
        e >>= 1;
    }
    if n < 0 {
        F::from(1i8) / acc
    } else {
        acc
    }
}

/// Free functions of the [`DeviceFloat`] methods for the floats of a bound:
/// `$name(x, ..) = x.$method(..)` (here, and `fp16`'s for the halves).
macro_rules! free_fns {
    ($bound:path; $($(#[$doc:meta])* $name:ident => $method:ident($($arg:ident),*);)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<F: $bound>(x: F $(, $arg: F)*) -> F {
            x.$method($($arg),*)
        }
    )*};
}
pub(crate) use free_fns;

free_fns! {
    DeviceFloat;
    /// Square root.
    sqrt => sqrt();
    /// Cube root.
    cbrt => cbrt();
    /// Sine.
    sin => sin();
    /// Cosine.
    cos => cos();
    /// Tangent.
    tan => tan();
    /// Arcsine.
    asin => asin();
    /// Arccosine.
    acos => acos();
    /// Arctangent.
    atan => atan();
    /// Four-quadrant arctangent of `y / x`.
    atan2 => atan2(x2);
    /// Hyperbolic sine.
    sinh => sinh();
    /// Hyperbolic cosine.
    cosh => cosh();
    /// Hyperbolic tangent.
    tanh => tanh();
    /// `e^x`.
    exp => exp();
    /// `2^x`.
    exp2 => exp2();
    /// `e^x - 1`.
    expm1 => exp_m1();
    /// Natural logarithm.
    log => ln();
    /// Base-2 logarithm.
    log2 => log2();
    /// Base-10 logarithm.
    log10 => log10();
    /// `ln(1 + x)`.
    log1p => ln_1p();
    /// `x^y`.
    pow => powf(y);
    /// Largest integer not above `x`.
    floor => floor();
    /// Smallest integer not below `x`.
    ceil => ceil();
    /// Nearest integer, halves away from zero.
    round => round();
    /// Integer part.
    trunc => trunc();
    /// Absolute value.
    fabs => abs();
    /// `x * y + z` with one rounding.
    fma => mul_add(y, z);
    /// The smaller value.
    fmin => min(y);
    /// The larger value.
    fmax => max(y);
    /// `sqrt(x² + y²)`.
    hypot => hypot(y);
    /// `x` with the sign of `y`.
    copysign => copysign(y);
    /// The error function.
    erf => erf();
    /// The complementary error function.
    erfc => erfc();
    /// Inverse hyperbolic sine.
    asinh => asinh();
    /// Inverse hyperbolic cosine.
    acosh => acosh();
    /// Inverse hyperbolic tangent.
    atanh => atanh();
    /// The gamma function.
    gamma => tgamma();
    /// The natural logarithm of the gamma function's magnitude.
    lgamma => lgamma();
    /// The IEEE remainder of `x / y`.
    remainder => remainder(y);
    /// The remainder of `x / y` truncated, with the sign of `x`.
    fmod => fmod(y);
}

/// `x · 2^n`.
#[inline(always)]
pub fn ldexp<F: DeviceFloat>(x: F, n: i32) -> F {
    x.ldexp(n)
}

/// The mantissa in `[0.5, 1)` (or 0) and the exponent of `x`: `x = m · 2^e`.
#[inline(always)]
pub fn frexp<F: DeviceFloat>(x: F) -> (F, i32) {
    x.frexp()
}

/// The fractional and the integer part of `x`, each with its sign.
#[inline(always)]
pub fn modf<F: DeviceFloat>(x: F) -> (F, F) {
    x.modf()
}

/// `x^n` for an integer exponent.
#[inline(always)]
pub fn powi<F: DeviceFloat>(x: F, n: i32) -> F {
    x.powi(n)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn rounding_to_odd_keeps_what_a_second_rounding_needs() {
        assert_eq!(to_odd_f32(1.5), 1.5);
        // 1 + 2⁻³⁰ lies between 1 and its next f32: to odd, that next one.
        assert_eq!(
            to_odd_f32(1.0 + 2f64.powi(-30)),
            f32::from_bits(1f32.to_bits() + 1)
        );
        assert_eq!(
            to_odd_f32(-(1.0 + 2f64.powi(-30))),
            -f32::from_bits(1f32.to_bits() + 1)
        );
        assert_eq!(to_odd_f32(1e-300), f32::from_bits(1));
        assert!(to_odd_f32(f64::NAN).is_nan());
        assert_eq!(to_odd_f32(f64::INFINITY), f32::INFINITY);
    }

    #[test]
    fn trait_and_free_functions_agree_with_std() {
        let x = 0.7f64;
        assert_eq!(DeviceFloat::sin(x), x.sin());
        assert_eq!(log(x), x.ln());
        assert_eq!(fma(x, 2.0, 1.0), x.mul_add(2.0, 1.0));
        assert_eq!(powi(2.0f32, -2), 0.25);
        assert!((erfc(0.5f32) - (1.0 - erf(0.5f32))).abs() < 1e-6);
        assert_eq!(atan2(1.0f64, 1.0), std::f64::consts::FRAC_PI_4);
    }

    #[test]
    fn numbas_other_math_functions() {
        assert_eq!((gamma(5.0f64), lgamma(1.0f64)), (24.0, 0.0));
        assert!((gamma(0.5f32) - std::f32::consts::PI.sqrt()).abs() < 1e-6);
        // 5 / 2 is 2.5, whose nearest even integer is 2; fmod truncates and keeps the sign.
        assert_eq!((remainder(5.0f64, 2.0), fmod(-5.0f64, 3.0)), (1.0, -2.0));
        assert_eq!(
            (ldexp(1.0f32, 3), frexp(8.0f64), modf(-2.5f64)),
            (8.0, (0.5, 4), (-0.5, -2.0))
        );
        assert_eq!(DeviceFloat::atanh(0.5f64), 0.5f64.atanh());
        let h = crate::f16::from_f32(6.0);
        assert_eq!(frexp(h), (crate::f16::from_f32(0.75), 3));
        assert_eq!(h.tgamma(), crate::f16::from_f32(120.0));
    }
}
