//! The inverse error functions of CUDA's math API (Numba's `cuda.libdevice.erfinv`, `erfcinv`,
//! `normcdfinv`), for `f32` and `f64`: `erfinv(erf(x)) = x`.
//!
//! Written here because `libm` has none. Each starts from Giles's single-precision
//! approximation of `erfinv` (*Approximating the erfinv function*, GPU Computing Gems, 2011),
//! or in the far tail from the asymptotic `erfc(x) ≈ e^(-x²) / (x √π)`, then takes Halley's
//! steps on `erf(x) - y`, or on `erfc(x) - z` where `y` is near ±1 (so that no digit of
//! `1 - |y|` is lost): for `f(x) = erf(x) - y`, `f'' = -2x f'`, so a step is
//! `x - f / (f' + x f)`, which converges cubically. The result is within a few units in the
//! last place of the exact value (the tests bound it), on both backends alike.

use super::LibdeviceFloat;

/// `2 / √π`.
const TWO_OVER_SQRT_PI: f64 = core::f64::consts::FRAC_2_SQRT_PI;

/// Halley's steps taken from the first guess.
const STEPS: usize = 4;

/// `v` as `F`.
#[inline(always)]
fn c<F: LibdeviceFloat>(v: f64) -> F {
    F::from_f64_(v)
}

/// Giles's approximation of `erfinv(y)`, given `w = -ln((1 - y)(1 + y))`.
fn giles<F: LibdeviceFloat>(y: F, w: F) -> F {
    let (points, coefficients): (F, &[f64]) = if w < c(5.0) {
        (
            w - c(2.5),
            &[
                2.810_226_36e-08,
                3.432_739_39e-07,
                -3.523_387_7e-06,
                -4.391_506_54e-06,
                0.000_218_580_87,
                -0.001_253_725_03,
                -0.004_177_681_64,
                0.246_640_727,
                1.501_409_41,
            ],
        )
    } else {
        (
            w.sqrt() - c(3.0),
            &[
                -0.000_200_214_257,
                0.000_100_950_558,
                0.001_349_343_22,
                -0.003_673_428_44,
                0.005_739_507_73,
                -0.007_622_461_3,
                0.009_438_870_47,
                1.001_674_06,
                2.832_976_82,
            ],
        )
    };
    let p = coefficients.iter().fold(F::ZERO, |p, &k| p * points + c(k));
    p * y
}

/// The first guess of the `x > 0` with `erfc(x) = z`, `z` in `(0, 1]`.
fn tail_guess<F: LibdeviceFloat>(z: F) -> F {
    let w = -(z * (c::<F>(2.0) - z)).ln();
    if w < c(16.0) {
        return giles(F::ONE - z, w);
    }
    // erfc(x) ≈ e^(-x²) / (x √π): x² ≈ t - ln(x √π), with t = -ln z.
    let t = -z.ln();
    (t - (c::<F>(core::f64::consts::PI) * t).ln() * c(0.5)).sqrt()
}

/// Halley's steps from `x` towards the root of `f(x) - target`, `f` being `erf` (`sign` 1) or
/// `erfc` (`sign` -1).
fn refine<F: LibdeviceFloat>(mut x: F, target: F, sign: F, f: impl Fn(F) -> F) -> F {
    for _ in 0..STEPS {
        let r = f(x) - target;
        let slope = sign * c::<F>(TWO_OVER_SQRT_PI) * (-(x * x)).exp();
        let step = r / (slope + x * r);
        if step == F::ZERO || step.partial_cmp(&step).is_none() {
            break;
        }
        x -= step;
    }
    x
}

/// The `x > 0` with `erfc(x) = z`, for `z` in `(0, 0.5]`.
fn tail<F: LibdeviceFloat>(z: F) -> F {
    refine(tail_guess(z), z, -F::ONE, |x: F| x.erfc())
}

/// The `x` with `erf(x) = y`, for `|y| ≤ 1/2`.
fn centre<F: LibdeviceFloat>(y: F) -> F {
    let w = -((F::ONE - y) * (F::ONE + y)).ln();
    refine(giles(y, w), y, F::ONE, |x: F| x.erf())
}

/// The inverse error function: the `x` with `erf(x) = y`, for `y` in `[-1, 1]`; `±∞` at `±1`,
/// NaN outside (CUDA's `erfinv`).
///
/// ```
/// use kernel_runtime::math;
/// let y = 0.9f64;
/// assert!((math::erfinv(y) - 1.163_087_153_676_674_2).abs() < 1e-15);
/// ```
pub fn erfinv<F: LibdeviceFloat>(y: F) -> F {
    let a = y.abs();
    match () {
        _ if a <= c(0.5) => centre(y),
        // 1 - |y| is exact from |y| = 1/2 on (Sterbenz).
        _ if a < F::ONE => tail(F::ONE - a).copysign(y),
        _ if a == F::ONE => c::<F>(f64::INFINITY).copysign(y),
        _ => c(f64::NAN),
    }
}

/// The inverse complementary error function: the `x` with `erfc(x) = z`, for `z` in
/// `[0, 2]`; `+∞` at 0, `-∞` at 2, NaN outside (CUDA's `erfcinv`). Tiny `z` keeps its
/// digits: `erfcinv(1e-300)` is not `erfinv(1)`.
pub fn erfcinv<F: LibdeviceFloat>(z: F) -> F {
    let two = c::<F>(2.0);
    match () {
        _ if z > F::ZERO && z <= c(0.5) => tail(z),
        // 1 - z and 2 - z are exact here (Sterbenz).
        _ if z > c(0.5) && z < c(1.5) => centre(F::ONE - z),
        _ if z >= c(1.5) && z < two => -tail(two - z),
        _ if z == F::ZERO => c(f64::INFINITY),
        _ if z == two => c(f64::NEG_INFINITY),
        _ => c(f64::NAN),
    }
}

/// The inverse of the standard normal distribution's cumulative distribution function
/// ([`normcdf`](super::normcdf)): the `x` with `P(Z ≤ x) = p`, `-√2 · erfcinv(2p)` (CUDA's
/// `normcdfinv`, Python's `NormalDist().inv_cdf(p)`).
pub fn normcdfinv<F: LibdeviceFloat>(p: F) -> F {
    -c::<F>(core::f64::consts::SQRT_2) * erfcinv(p + p)
}

#[cfg(test)]
mod tests;
