//! Complex numbers in kernels: Numba's `complex64` and `complex128` are [`Complex32`] and
//! [`Complex64`], and its `cmath` functions are the free functions here, under the same names.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! fn rotate(z: &mut [Complex64], phi: f64) {
//!     let i = grid(1);
//!     if i < z.len() {
//!         z[i] *= cmath::exp(Complex64::new(0.0, phi)); // cmath.exp(1j * phi)
//!     }
//! }
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! let mut z = dev.to_device(&[Complex64::new(1.0, 0.0)][..])?;
//! rotate.launch(1, 32, (&mut z, std::f64::consts::FRAC_PI_2))?;
//! let w = z.to_vec()?[0];
//! assert!(w.re.abs() < 1e-15 && (w.im - 1.0).abs() < 1e-15);
//! # Ok(())
//! # }
//! ```
//!
//! The types are `num_complex`'s, the ones `ndarray` programs already hold complex data in, so
//! an `Array2<Complex32>` goes to a device as it is. Arithmetic (`+ - * /`, with reals too),
//! `z.re`, `z.im`, `z.conj()`, `z.norm_sqr()`, `z.powi(n)` and `z.is_nan()` are `num_complex`'s,
//! the same code on every target. Its division is the textbook formula, so a divisor whose
//! squared magnitude overflows (beyond about `1.8e19` for `Complex32`) gives infinities or NaNs
//! where Python's smaller-step division does not.
//!
//! # Why functions, not methods
//!
//! `num_complex` has `z.exp()`, `z.sqrt()`, ... only where it is built with a float library
//! (its `std` or `libm` feature): in kernels it is not, and another crate of a program may turn
//! `std` on for the host alone, so that a method call would compile for the CPU backend and not
//! for the device, or run other code on each. `cmath::exp(z)` is this module's code on every
//! target, built on [`DeviceFloat`], which is why it is written here and not taken from a crate.
//!
//! # Accuracy
//!
//! The formulas are the usual careful ones: `log` through `ln_1p` near the unit circle, `sqrt`
//! without cancellation, `tanh` and `tan` through `tanh`/`tan` of the parts, and Kahan's forms
//! for the inverse functions, with the branch cuts of Python's `cmath` (the sign of a zero
//! part picks the side). For finite arguments the results are within a few units in the last
//! place of the exact ones. Arguments large enough that a square or a `cosh` would overflow go
//! through scaled forms; infinities and NaNs give what the formulas give, not every special
//! value of C99's Annex G table. The CPU backend and the GPU use the same formulas over each
//! target's real functions, so they agree as those do (see [`math`](crate::math)).

use crate::math::DeviceFloat;
use crate::number::DeviceNumber;
use core::ops::Neg;

pub use num_complex::{Complex, Complex32, Complex64};

/// The real types of [`Complex`] numbers that the `cmath` functions take: `f32` and `f64`.
pub trait ComplexFloat: DeviceFloat + DeviceNumber + Neg<Output = Self> + sealed::Sealed {
    /// 2.
    const TWO: Self;
    /// 1/2.
    const HALF: Self;
    /// π/2.
    const FRAC_PI_2: Self;
    /// ln 2.
    const LN_2: Self;
    /// ln 10.
    const LN_10: Self;
    /// e.
    const E: Self;
    /// Not a number.
    const NAN: Self;
    /// 100: the largest whole power [`pow`] computes by products.
    const HUNDRED: Self;
    /// `[1/√2, √2 + 1/2]`: magnitudes near enough to 1 that `log` takes them through `ln_1p`.
    const NEAR_ONE: [Self; 2];
    /// The largest value over 4: beyond it, `x + 1` or a product of two parts may overflow.
    const LARGE: Self;
    /// The square root of [`LARGE`](Self::LARGE): beyond it, a square may overflow.
    const SQRT_LARGE: Self;
    /// `ln(LARGE)`: beyond it, `cosh` and `exp` overflow.
    const LN_LARGE: Self;
    /// The square root of the smallest normal value.
    const SQRT_MIN: Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
    /// Whether the value is infinite.
    fn is_infinite(self) -> bool;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! complex_float {
    ($($t:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl ComplexFloat for $t {
            const TWO: Self = 2.0;
            const HALF: Self = 0.5;
            const FRAC_PI_2: Self = core::$t::consts::FRAC_PI_2;
            const LN_2: Self = core::$t::consts::LN_2;
            const LN_10: Self = core::$t::consts::LN_10;
            const E: Self = core::$t::consts::E;
            const HUNDRED: Self = 100.0;
            const NAN: Self = $t::NAN;
            // As `1 / sqrt(2)` and `sqrt(2) + 1 / 2` round (sqrt rounds correctly).
            const NEAR_ONE: [Self; 2] = [
                1.0 / core::$t::consts::SQRT_2,
                core::$t::consts::SQRT_2 + 0.5,
            ];
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                $t::is_infinite(self)
            }
            const LARGE: Self = $t::MAX / 4.0;
            // The largest value whose square is at most `MAX / 4`, rounded down.
            const SQRT_LARGE: Self = sqrt_large::$t;
            const LN_LARGE: Self = ln_large::$t;
            const SQRT_MIN: Self = sqrt_min::$t;
        }
    )*};
}
complex_float!(f32, f64);

// Constants that `const` evaluation cannot compute (no `sqrt` or `ln` there), each below its
// exact value: a threshold a little low only sends a few more arguments to the scaled branch.
#[allow(non_upper_case_globals)]
mod sqrt_large {
    pub const f32: f32 = 9.2233715e18; // √(f32::MAX / 4) = 9.22337e18
    pub const f64: f64 = 6.703903964971298e153; // √(f64::MAX / 4)
}
#[allow(non_upper_case_globals)]
mod ln_large {
    pub const f32: f32 = 87.33654; // ln(f32::MAX / 4) = 87.3365448
    pub const f64: f64 = 708.3964185322641; // ln(f64::MAX / 4)
}
#[allow(non_upper_case_globals)]
mod sqrt_min {
    pub const f32: f32 = 1.0842022e-19; // √(f32::MIN_POSITIVE)
    pub const f64: f64 = 1.4916681462400413e-154; // √(f64::MIN_POSITIVE)
}

/// `z` times `i`.
#[inline(always)]
fn times_i<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    Complex::new(-z.im, z.re)
}

/// `z` times `-i`.
#[inline(always)]
fn times_minus_i<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    Complex::new(z.im, -z.re)
}

/// `a · b`. (`num_complex`'s operators need `num_traits::Num`, a bound kept out of
/// [`ComplexFloat`].)
#[inline(always)]
fn mul<T: ComplexFloat>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    Complex::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// `a / b`, by the same formula as `num_complex`'s operator.
#[inline(always)]
fn div<T: ComplexFloat>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    let d = b.re * b.re + b.im * b.im;
    Complex::new(
        (a.re * b.re + a.im * b.im) / d,
        (a.im * b.re - a.re * b.im) / d,
    )
}

/// `ln |z|`, through `ln_1p` near the unit circle, where `ln` of the magnitude loses digits.
fn ln_abs<T: ComplexFloat>(z: Complex<T>) -> T {
    let (ax, ay) = (z.re.abs(), z.im.abs());
    let (big, small) = if ax >= ay { (ax, ay) } else { (ay, ax) };
    let h = big.hypot(small);
    let [near_lo, near_hi] = T::NEAR_ONE;
    if near_lo <= h && h <= near_hi {
        ((big - T::ONE) * (big + T::ONE) + small * small).ln_1p() * T::HALF
    } else {
        h.ln()
    }
}

/// `ln |z| + 2 ln 2 = ln |2z|` for an argument so large that `|z|` itself may overflow.
fn ln_abs_twice<T: ComplexFloat>(z: Complex<T>) -> T {
    (z.re * T::HALF).hypot(z.im * T::HALF).ln() + T::TWO * T::LN_2
}

/// The magnitude `|z|` (Python's `abs(z)`), without overflow in between.
#[inline]
pub fn abs<T: ComplexFloat>(z: Complex<T>) -> T {
    z.re.hypot(z.im)
}

/// The argument of `z`, in `[-π, π]` (`cmath.phase`).
#[inline]
pub fn phase<T: ComplexFloat>(z: Complex<T>) -> T {
    z.im.atan2(z.re)
}

/// `(abs(z), phase(z))` (`cmath.polar`).
#[inline]
pub fn polar<T: ComplexFloat>(z: Complex<T>) -> (T, T) {
    (abs(z), phase(z))
}

/// The complex number of magnitude `r` and argument `phi` (`cmath.rect`).
#[inline]
pub fn rect<T: ComplexFloat>(r: T, phi: T) -> Complex<T> {
    Complex::new(r * phi.cos(), r * phi.sin())
}

/// Whether either part is NaN (`cmath.isnan`).
#[inline]
pub fn isnan<T: ComplexFloat>(z: Complex<T>) -> bool {
    z.re.is_nan() || z.im.is_nan()
}

/// Whether either part is infinite (`cmath.isinf`).
#[inline]
pub fn isinf<T: ComplexFloat>(z: Complex<T>) -> bool {
    z.re.is_infinite() || z.im.is_infinite()
}

/// Whether both parts are finite (`cmath.isfinite`).
#[inline]
pub fn isfinite<T: ComplexFloat>(z: Complex<T>) -> bool {
    !isnan(z) && !isinf(z)
}

/// `e^z` (`cmath.exp`).
pub fn exp<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    if z.im == T::ZERO {
        return Complex::new(z.re.exp(), z.im);
    }
    // Beyond `LN_LARGE`, `e^re` alone overflows though `e^re cos(im)` may not.
    let l = if z.re > T::LN_LARGE {
        (z.re - T::ONE).exp() * T::E
    } else {
        z.re.exp()
    };
    Complex::new(l * z.im.cos(), l * z.im.sin())
}

/// The natural logarithm, its imaginary part in `[-π, π]` (`cmath.log`).
pub fn log<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    Complex::new(ln_abs(z), phase(z))
}

/// The base-10 logarithm (`cmath.log10`).
pub fn log10<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let l = log(z);
    Complex::new(l.re / T::LN_10, l.im / T::LN_10)
}

/// The logarithm to `base` (`cmath.log(z, base)`).
pub fn log_base<T: ComplexFloat>(z: Complex<T>, base: Complex<T>) -> Complex<T> {
    div(log(z), log(base))
}

/// The principal square root, its real part not negative (`cmath.sqrt`).
pub fn sqrt<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if x == T::ZERO && y == T::ZERO {
        return Complex::new(T::ZERO, y);
    }
    if y.abs() == T::HIGHEST {
        return Complex::new(T::HIGHEST, y);
    }
    // t = √((|z| + |x|) / 2), halved before the sum so that it cannot overflow.
    let t = (abs(z) * T::HALF + x.abs() * T::HALF).sqrt();
    if x >= T::ZERO {
        Complex::new(t, y / (T::TWO * t))
    } else {
        Complex::new(y.abs() / (T::TWO * t), t.copysign(y))
    }
}

/// `z` to the power `w` (Python's `z ** w`): exact repeated products for a whole `w` of at most
/// 100 in magnitude, `|z|^w e^(iw arg z)` otherwise. `0 ** w` is 0 for a positive real `w`, 1
/// for `w = 0`, and NaN otherwise (where Python raises `ZeroDivisionError`).
pub fn pow<T: ComplexFloat>(z: Complex<T>, w: Complex<T>) -> Complex<T> {
    let zero = Complex::new(T::ZERO, T::ZERO);
    if w.re == T::ZERO && w.im == T::ZERO {
        return Complex::new(T::ONE, T::ZERO);
    }
    if z.re == T::ZERO && z.im == T::ZERO {
        return if w.im == T::ZERO && w.re > T::ZERO {
            zero
        } else {
            Complex::new(T::NAN, T::NAN)
        };
    }
    if w.im == T::ZERO && w.re.trunc() == w.re && w.re.abs() <= T::HUNDRED {
        return powi(z, w.re);
    }
    let magnitude = abs(z);
    let arg = phase(z);
    let mut length = magnitude.powf(w.re);
    let mut angle = arg * w.re;
    if w.im != T::ZERO {
        length /= (arg * w.im).exp();
        angle += w.im * magnitude.ln();
    }
    rect(length, angle)
}

/// `z` to a whole power `n` (|n| ≤ 100), by squaring; a negative power is the inverse of the
/// positive one, as Python's is.
fn powi<T: ComplexFloat>(z: Complex<T>, n: T) -> Complex<T> {
    let one = Complex::new(T::ONE, T::ZERO);
    let mut e = n.abs();
    let mut base = z;
    let mut acc = one;
    while e > T::ZERO {
        let half = (e * T::HALF).trunc();
        if e != half * T::TWO {
            acc = mul(acc, base);
        }
        e = half;
        if e > T::ZERO {
            base = mul(base, base);
        }
    }
    if n < T::ZERO {
        div(one, acc)
    } else {
        acc
    }
}

/// The hyperbolic sine (`cmath.sinh`).
pub fn sinh<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if y == T::ZERO {
        return Complex::new(x.sinh(), y);
    }
    let (s, c) = scaled_sinh_cosh(x);
    Complex::new(s * y.cos(), c * y.sin())
}

/// The hyperbolic cosine (`cmath.cosh`).
pub fn cosh<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if y == T::ZERO {
        // sinh(x) sin(±0): a zero with the sign of the product, even where sinh(x) overflows.
        return Complex::new(x.cosh(), T::ZERO.copysign(x) * y);
    }
    let (s, c) = scaled_sinh_cosh(x);
    Complex::new(c * y.cos(), s * y.sin())
}

/// `(sinh x, cosh x)`, each through `e · sinh/cosh(x ∓ 1)` where it would overflow before the
/// factor of `cos y` or `sin y` that may bring it back in range.
fn scaled_sinh_cosh<T: ComplexFloat>(x: T) -> (T, T) {
    if x.abs() > T::LN_LARGE {
        let x1 = x - T::ONE.copysign(x);
        (x1.sinh() * T::E, x1.cosh() * T::E)
    } else {
        (x.sinh(), x.cosh())
    }
}

/// The hyperbolic tangent (`cmath.tanh`).
pub fn tanh<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if x.abs() > T::LN_LARGE {
        // tanh x is ±1 and 1/cosh² x underflows: the imaginary part is 2 sin 2y e^(-2|x|).
        let im = T::TWO * T::TWO * y.sin() * y.cos() * (-T::TWO * x.abs()).exp();
        return Complex::new(T::ONE.copysign(x), im);
    }
    let tx = x.tanh();
    let ty = y.tan();
    let cx = T::ONE / x.cosh();
    let txty = tx * ty;
    let denom = T::ONE + txty * txty;
    Complex::new(tx * (T::ONE + ty * ty) / denom, ty / denom * cx * cx)
}

/// The sine (`cmath.sin`): `-i sinh(iz)`.
pub fn sin<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    times_minus_i(sinh(times_i(z)))
}

/// The cosine (`cmath.cos`): `cosh(iz)`.
pub fn cos<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    cosh(times_i(z))
}

/// The tangent (`cmath.tan`): `-i tanh(iz)`.
pub fn tan<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    times_minus_i(tanh(times_i(z)))
}

/// The inverse hyperbolic sine (`cmath.asinh`); branch cuts on the imaginary axis beyond `±i`.
pub fn asinh<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if x.abs() > T::LARGE || y.abs() > T::LARGE {
        return Complex::new(ln_abs_twice(z).copysign(x), y.atan2(x.abs()));
    }
    // Kahan: with s1 = √(1 - iz) and s2 = √(1 + iz).
    let s1 = sqrt(Complex::new(T::ONE + y, -x));
    let s2 = sqrt(Complex::new(T::ONE - y, x));
    Complex::new(
        (s1.re * s2.im - s2.re * s1.im).asinh(),
        y.atan2(s1.re * s2.re - s1.im * s2.im),
    )
}

/// The inverse sine (`cmath.asin`): `-i asinh(iz)`; branch cuts on the real axis beyond `±1`.
pub fn asin<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    times_minus_i(asinh(times_i(z)))
}

/// The inverse cosine (`cmath.acos`); branch cuts on the real axis beyond `±1`.
pub fn acos<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if x.abs() > T::LARGE || y.abs() > T::LARGE {
        return Complex::new(y.abs().atan2(x), ln_abs_twice(z).copysign(-y));
    }
    // Kahan: with s1 = √(1 - z) and s2 = √(1 + z).
    let s1 = sqrt(Complex::new(T::ONE - x, -y));
    let s2 = sqrt(Complex::new(T::ONE + x, y));
    Complex::new(
        T::TWO * s1.re.atan2(s2.re),
        (s2.re * s1.im - s2.im * s1.re).asinh(),
    )
}

/// The inverse hyperbolic cosine (`cmath.acosh`); branch cut on the real axis below 1.
pub fn acosh<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    let (x, y) = (z.re, z.im);
    if x.abs() > T::LARGE || y.abs() > T::LARGE {
        return Complex::new(ln_abs_twice(z), y.atan2(x));
    }
    // Kahan: with s1 = √(z - 1) and s2 = √(z + 1).
    let s1 = sqrt(Complex::new(x - T::ONE, y));
    let s2 = sqrt(Complex::new(x + T::ONE, y));
    Complex::new(
        (s1.re * s2.re + s1.im * s2.im).asinh(),
        T::TWO * s1.im.atan2(s2.re),
    )
}

/// The inverse hyperbolic tangent (`cmath.atanh`); branch cuts on the real axis beyond `±1`.
pub fn atanh<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    // An odd function: computed for a real part that is not negative.
    if z.re < T::ZERO {
        let w = atanh(Complex::new(-z.re, -z.im));
        return Complex::new(-w.re, -w.im);
    }
    let (x, y) = (z.re, z.im);
    let ay = y.abs();
    if x > T::SQRT_LARGE || ay > T::SQRT_LARGE {
        // ≈ 1/z, real part x/|z|², without squaring |z|.
        let h = (x * T::HALF).hypot(y * T::HALF);
        let re = x / (T::TWO * T::TWO) / h / h;
        return Complex::new(re, T::FRAC_PI_2.copysign(y));
    }
    if x == T::ONE && ay < T::SQRT_MIN {
        if ay == T::ZERO {
            return Complex::new(T::HIGHEST, y);
        }
        let re = -(ay.sqrt() / ay.hypot(T::TWO).sqrt()).ln();
        return Complex::new(re, (T::TWO.atan2(-ay) * T::HALF).copysign(y));
    }
    let one_minus = T::ONE - x;
    let re = (T::TWO * T::TWO * x / (one_minus * one_minus + ay * ay)).ln_1p() / (T::TWO * T::TWO);
    let im = -((-T::TWO * y).atan2(one_minus * (T::ONE + x) - ay * ay)) * T::HALF;
    Complex::new(re, im)
}

/// The inverse tangent (`cmath.atan`): `-i atanh(iz)`; branch cuts on the imaginary axis
/// beyond `±i`.
pub fn atan<T: ComplexFloat>(z: Complex<T>) -> Complex<T> {
    times_minus_i(atanh(times_i(z)))
}

#[cfg(test)]
mod tests;
