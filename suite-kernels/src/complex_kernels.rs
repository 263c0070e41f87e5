//! Kernels of the test suite on complex numbers (Numba's `complex64` and `complex128`): every
//! `cmath` function, arithmetic in a Mandelbrot set, a warp's shuffles and a ufunc.

use kernel_runtime::cmath::{Complex, ComplexFloat};
use kernel_runtime::prelude::*;

/// The number of `cmath` functions [`cmath_all`] writes for each argument.
pub const CMATH_FUNCTIONS: usize = 20;

/// Every `cmath` function of `z`: `exp, log, log10, sqrt, sin, cos, tan, sinh, cosh, tanh,
/// asin, acos, atan, asinh, acosh, atanh`, then `pow(z, w)`, `(abs, phase)`,
/// `rect(abs, phase)` and `log_base(z, w)`.
#[device]
pub fn cmath_row<T: ComplexFloat>(z: Complex<T>, w: Complex<T>) -> [Complex<T>; CMATH_FUNCTIONS] {
    let (r, phi) = cmath::polar(z);
    [
        cmath::exp(z),
        cmath::log(z),
        cmath::log10(z),
        cmath::sqrt(z),
        cmath::sin(z),
        cmath::cos(z),
        cmath::tan(z),
        cmath::sinh(z),
        cmath::cosh(z),
        cmath::tanh(z),
        cmath::asin(z),
        cmath::acos(z),
        cmath::atan(z),
        cmath::asinh(z),
        cmath::acosh(z),
        cmath::atanh(z),
        cmath::pow(z, w),
        Complex::new(r, phi),
        cmath::rect(r, phi),
        cmath::log_base(z, w),
    ]
}

/// [`cmath_row`] of `z[i]` and `w`, into row `i` of `out`.
#[kernel(instances(f32, f64))]
pub fn cmath_all<T: ComplexFloat>(z: &[Complex<T>], w: Complex<T>, out: &mut Array2<Complex<T>>) {
    let i = grid(1);
    if i < z.len() {
        let row = cmath_row(z[i], w);
        for (k, v) in row.iter().enumerate() {
            out[[i, k]] = *v;
        }
    }
}

/// The number of iterations of `z = z² + c` from 0 until `|z| > 2`, at most `max_iter`.
#[device]
pub fn escape_time(c: Complex32, max_iter: u32) -> u32 {
    let mut z = Complex32::new(0.0, 0.0);
    let mut n = 0;
    while n < max_iter && z.norm_sqr() <= 4.0 {
        z = z * z + c;
        n += 1;
    }
    n
}

/// The [`escape_time`] of each point of a `rows × cols` grid of the plane from `origin`, `step`
/// apart (Numba's classic example, in `complex64`).
#[kernel]
pub fn mandelbrot(origin: Complex32, step: f32, max_iter: u32, out: &mut Array2<u32>) {
    let (x, y) = grid(2);
    let (rows, cols) = out.dim();
    if y < rows && x < cols {
        let c = origin + Complex32::new(x as f32 * step, y as f32 * step);
        out[[y, x]] = escape_time(c, max_iter);
    }
}

/// The sum of each warp's 32 elements of `z`, by shuffles down, into `sums[warp]`.
#[kernel]
pub fn warp_complex_sums(z: &[Complex32], sums: &mut [Complex32]) {
    let i = grid(1);
    let mut v = if i < z.len() {
        z[i]
    } else {
        Complex32::new(0.0, 0.0)
    };
    let mut delta = 16;
    while delta > 0 {
        v += shfl_down_sync(u32::MAX, v, delta);
        delta /= 2;
    }
    if lane_id() == 0 && i / 32 < sums.len() {
        sums[i / 32] = v;
    }
}

/// `a · conj(b)`, element by element (`@vectorize` on `complex128`).
#[vectorize]
pub fn times_conj(a: Complex64, b: Complex64) -> Complex64 {
    a * b.conj()
}

/// `z^n` by `num_complex`'s repeated squaring, and `z / w` scaled by a real: the operators and
/// methods that need no float library.
#[kernel]
pub fn complex_ops(z: &[Complex64], w: Complex64, out: &mut [Complex64]) {
    let i = grid(1);
    if i < z.len() && i < out.len() {
        out[i] = z[i].powi(3) - z[i] / w * 2.0 + z[i].scale(0.5).conj();
    }
}

/// The sum of `complex64` numbers (`cuda.reduce` on them): a warp moves each as two words.
#[reduce]
pub fn sum_c32(a: Complex32, b: Complex32) -> Complex32 {
    a + b
}

/// The sum of `complex128` numbers: a warp moves each as four words.
#[reduce]
pub fn sum_c64(a: Complex64, b: Complex64) -> Complex64 {
    a + b
}
