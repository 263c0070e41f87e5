//! Complex numbers in kernels on every backend (Numba's `complex64` and `complex128`): every
//! `cmath` function against the same functions on the host, arithmetic in a Mandelbrot set,
//! warp shuffles of `Complex32`, a ufunc, and arrays of complex numbers to and from a device.
//!
//! The CPU backends run the host's code, so they agree bit for bit. A GPU computes the real
//! functions under the parts its own way (see `kernel_runtime::math`) and fuses multiplies and
//! adds, so there results are compared within a few units in the last place.

use kernel_runtime::cmath::{self, Complex, ComplexFloat};
use kernel_runtime::prelude::*;
use kernel_runtime::DeviceKind;
use kernel_suite::complex_kernels::{
    cmath_all, cmath_row, complex_ops, escape_time, mandelbrot, sum_c32, times_conj,
    warp_complex_sums, CMATH_FUNCTIONS,
};
use kernel_suite::reference::SplitMix64;

mod common;
use common::backends;

/// Whether `dev` runs the host's code (the CPU backend, checked or not).
fn on_host(dev: &Device) -> bool {
    matches!(dev.kind(), DeviceKind::Cpu | DeviceKind::CpuChecked)
}

/// Arguments in every quadrant, on both sides of each branch cut, small, large and at the
/// points where the functions have poles or zeros.
fn arguments<T: ComplexFloat + From<f32>>() -> Vec<Complex<T>> {
    let mut rng = SplitMix64(7);
    let mut z: Vec<Complex<T>> = [
        (0.0, 0.0),
        (-0.0, -0.0),
        (1.0, 0.0),
        (-1.0, 0.0),
        (2.0, 0.0),
        (2.0, -0.0),
        (-2.0, 0.0),
        (-2.0, -0.0),
        (0.0, 2.0),
        (-0.0, 2.0),
        (0.0, -2.0),
        (0.6, 0.8),
        (1e-7, -3e-8),
        (40.0, 3.0),
        (-3.0, 95.0),
    ]
    .iter()
    .map(|&(re, im): &(f32, f32)| Complex::new(re.into(), im.into()))
    .collect();
    for _ in 0..100 {
        let mut part = || ((rng.next_u64() % 20_001) as f32 / 1000.0 - 10.0).into();
        z.push(Complex::new(part(), part()));
    }
    z
}

/// Whether `got` is `want` up to `ulps` units of `eps · |want|` (NaN parts where `want` has them).
fn close<T: ComplexFloat + Into<f64>>(got: Complex<T>, want: Complex<T>, eps: f64) -> bool {
    let (g, w) = (
        Complex::new(got.re.into(), got.im.into()),
        Complex::new(want.re.into(), want.im.into()),
    );
    if cmath::isnan(w) || cmath::isinf(w) {
        return cmath::isnan(g) == cmath::isnan(w) && cmath::isinf(g) == cmath::isinf(w);
    }
    cmath::abs(g - w) <= 16.0 * eps * cmath::abs(w)
}

/// `got`, the kernel's rows for `z`, against the host's: the same bits on the CPU backends,
/// within a few ulps elsewhere.
fn compare<T: ComplexFloat + Into<f64> + BitsEq>(
    dev: &Device,
    got: &Array2<Complex<T>>,
    z: &[Complex<T>],
    w: Complex<T>,
    eps: f64,
) {
    assert_eq!(got.dim(), (z.len(), CMATH_FUNCTIONS));
    for (i, &zi) in z.iter().enumerate() {
        for (k, want) in cmath_row(zi, w).into_iter().enumerate() {
            let g = got[[i, k]];
            let same = if on_host(dev) {
                g.re.to_bits_eq(want.re) && g.im.to_bits_eq(want.im)
            } else {
                close(g, want, eps)
            };
            assert!(
                same,
                "{:?}: function {k} of {zi:?} gave {g:?}, the host {want:?}",
                dev.kind()
            );
        }
    }
}

/// Bit-for-bit equality of floats, NaNs included.
trait BitsEq {
    fn to_bits_eq(self, other: Self) -> bool;
}
impl BitsEq for f32 {
    fn to_bits_eq(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}
impl BitsEq for f64 {
    fn to_bits_eq(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}

#[test]
fn every_cmath_function_matches_the_host_on_every_backend() {
    let (z64, z32) = (arguments::<f64>(), arguments::<f32>());
    let (w64, w32) = (Complex64::new(0.5, -1.25), Complex32::new(-1.5, 0.75));
    for dev in backends() {
        let z = dev.to_device(&z64).unwrap();
        let mut out = dev
            .zeros::<Complex64, _>((z64.len(), CMATH_FUNCTIONS))
            .unwrap();
        cmath_all
            .launch(z64.len().div_ceil(64), 64, (&z, w64, &mut out))
            .unwrap();
        compare(&dev, &out.to_host().unwrap(), &z64, w64, f64::EPSILON);

        let z = dev.to_device(&z32).unwrap();
        let mut out = dev
            .zeros::<Complex32, _>((z32.len(), CMATH_FUNCTIONS))
            .unwrap();
        cmath_all
            .launch(z32.len().div_ceil(64), 64, (&z, w32, &mut out))
            .unwrap();
        compare(
            &dev,
            &out.to_host().unwrap(),
            &z32,
            w32,
            f32::EPSILON as f64,
        );
    }
}

/// `mandelbrot` on the host.
fn escape_times(
    origin: Complex32,
    step: f32,
    max_iter: u32,
    rows: usize,
    cols: usize,
) -> Array2<u32> {
    Array2::from_shape_fn((rows, cols), |(y, x)| {
        escape_time(
            origin + Complex32::new(x as f32 * step, y as f32 * step),
            max_iter,
        )
    })
}

#[test]
fn a_mandelbrot_set_in_complex64() {
    let (rows, cols, max_iter) = (67, 131, 200);
    let origin = Complex32::new(-2.0, -1.0);
    let step = 3.0 / cols as f32;
    let want = escape_times(origin, step, max_iter, rows, cols);
    assert!(want.iter().any(|&n| n == max_iter) && want.iter().any(|&n| n < 5));
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>((rows, cols)).unwrap();
        let blocks = ((cols as u32).div_ceil(16), (rows as u32).div_ceil(8));
        mandelbrot
            .launch(blocks, (16, 8), (origin, step, max_iter, &mut out))
            .unwrap();
        let got = out.to_host().unwrap();
        let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        // A GPU fuses `z * z + c` into multiply-adds: a point on the set's edge may escape an
        // iteration sooner or later there.
        let allowed = if on_host(&dev) { 0 } else { rows * cols / 100 };
        assert!(
            differ <= allowed,
            "{:?}: {differ} points differ",
            dev.kind()
        );
    }
}

#[test]
fn warps_shuffle_complex64_values() {
    let n: usize = 1000;
    let z: Vec<Complex32> = (0..n)
        .map(|i| Complex32::new((i % 7) as f32 - 3.0, (i % 11) as f32))
        .collect();
    let want: Vec<Complex32> = z.chunks(32).map(|c| c.iter().sum()).collect();
    for dev in backends() {
        let dz = dev.to_device(&z).unwrap();
        let mut sums = dev.zeros::<Complex32, _>(want.len()).unwrap();
        warp_complex_sums
            .launch(n.div_ceil(128), 128, (&dz, &mut sums))
            .unwrap();
        assert_eq!(sums.to_vec().unwrap(), want, "{:?}", dev.kind());
    }
}

#[test]
fn ufuncs_and_operators_on_complex128() {
    let a: Vec<Complex64> = (0..500)
        .map(|i| Complex64::new(i as f64 - 250.0, (i % 9) as f64))
        .collect();
    let b: Vec<Complex64> = (0..500)
        .map(|i| Complex64::new((i % 5) as f64, 3.0 - (i % 4) as f64))
        .collect();
    let w = Complex64::new(0.75, -2.0);
    let ops = |z: Complex64| z.powi(3) - z / w * 2.0 + z.scale(0.5).conj();
    for dev in backends() {
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        // Small whole parts: every product and sum is exact, fused or not.
        let got = times_conj.call((&da, &db)).unwrap().to_vec().unwrap();
        let want: Vec<Complex64> = a.iter().zip(&b).map(|(a, b)| a * b.conj()).collect();
        assert_eq!(got, want, "{:?}", dev.kind());

        let mut out = dev.zeros::<Complex64, _>(a.len()).unwrap();
        complex_ops.launch(4, 128, (&da, w, &mut out)).unwrap();
        for (g, z) in out.to_vec().unwrap().into_iter().zip(&a) {
            let want = ops(*z);
            let ok = if on_host(&dev) {
                g == want
            } else {
                close(g, want, f64::EPSILON)
            };
            assert!(ok, "{:?}: {z} gave {g}, the host {want}", dev.kind());
        }
    }
}

#[test]
fn complex_arrays_cross_to_a_device_and_back() {
    let a = Array2::from_shape_fn((3, 4), |(i, j)| Complex32::new(i as f32, -(j as f32)));
    for dev in backends() {
        let d = dev.to_device(&a).unwrap();
        assert_eq!(d.to_host().unwrap(), a);
        let zeros = dev.zeros::<Complex64, _>(5).unwrap();
        assert_eq!(zeros.to_vec().unwrap(), vec![Complex64::new(0.0, 0.0); 5]);
        let empty = dev.empty::<Complex64, _>(5).unwrap();
        assert_eq!(empty.len(), 5);
    }
}

#[test]
fn complex64_values_reduce() {
    // Small whole parts: every sum is exact, in any order.
    let z: Vec<Complex32> = (0..100_000)
        .map(|i| Complex32::new((i % 13) as f32 - 6.0, (i % 7) as f32))
        .collect();
    let want: Complex32 = z.iter().sum();
    for dev in backends() {
        let dz = dev.to_device(&z).unwrap();
        assert_eq!(sum_c32.reduce(&dz).unwrap(), Some(want), "{:?}", dev.kind());
        let one = Complex32::new(1.0, -1.0);
        assert_eq!(sum_c32.fold(&dz, one).unwrap(), want + one);
        let empty = dev.zeros::<Complex32, _>(0).unwrap();
        assert_eq!(sum_c32.reduce(&empty).unwrap(), None);
    }
}
