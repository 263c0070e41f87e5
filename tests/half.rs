//! `f16` and `bf16` in kernels on every backend: a half-precision axpy whose every operation
//! rounds to `f16` (bit for bit the host's `half` arithmetic), and a bf16 dot product with f32
//! accumulation, within the bound of f32 summation.

use kernel_runtime::{bf16, f16};
use kernel_suite::test_kernels::{
    axpy_generic, bf16_dot, half_api, half_api_of, half_atomic_sums, half_math, haxpy,
};

mod common;
use common::backends;

#[test]
fn a_half_precision_axpy_rounds_each_operation_as_the_host_does() {
    let n: usize = 1000;
    let a = f16::from_f32(1.5);
    let x: Vec<f16> = (0..n)
        .map(|i| f16::from_f32(i as f32 * 0.37 - 90.0))
        .collect();
    let y0: Vec<f16> = (0..n)
        .map(|i| f16::from_f32((i % 13) as f32 * 0.25))
        .collect();
    let expected: Vec<f16> = x.iter().zip(&y0).map(|(&x, &y)| a * x + y).collect();
    for dev in backends() {
        let xs = dev.to_device(&x).unwrap();
        let mut ys = dev.to_device(&y0).unwrap();
        haxpy
            .launch(n.div_ceil(128), 128, (a, &xs, &mut ys))
            .unwrap();
        let got = ys.to_vec().unwrap();
        let bits = |v: &[f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&expected), "{:?}", dev.kind());
        // A generic kernel's f16 instance computes the same.
        let mut ys = dev.to_device(&y0).unwrap();
        axpy_generic
            .launch(n.div_ceil(128), 128, (a, &xs, &mut ys))
            .unwrap();
        assert_eq!(
            bits(&ys.to_vec().unwrap()),
            bits(&expected),
            "{:?}",
            dev.kind()
        );
    }
}

#[test]
fn half_math_rounds_as_cuda_fp16_does_on_every_backend() {
    let x: Vec<f16> = (0..2000)
        .map(|i| f16::from_f32((i as f32 - 1000.0) * 0.0137))
        .chain([
            f16::ZERO,
            f16::NEG_ZERO,
            f16::from_f32(2.5),
            f16::from_f32(-3.5),
        ])
        .collect();
    // Independent references in f64, rounded once to f16: the nearest of the f16s around the
    // value, ties to the even one (`half`'s own `from_f64` goes through f32 on some CPUs).
    let once = |v: f64| -> f16 {
        let c = f16::from_f32(v as f32);
        if !c.is_finite() || v.is_nan() {
            return c;
        }
        let around = [
            c.to_bits().wrapping_sub(1),
            c.to_bits(),
            c.to_bits().wrapping_add(1),
        ];
        let distance = |b: u16| (f16::from_bits(b).to_f64() - v).abs();
        around
            .into_iter()
            .filter(|&b| f16::from_bits(b).is_finite() && (b & 0x7fff) != 0x7c00)
            .min_by(|&a, &b| {
                distance(a)
                    .total_cmp(&distance(b))
                    .then((a & 1).cmp(&(b & 1)))
            })
            .map(f16::from_bits)
            .unwrap_or(c)
    };
    let exact: Vec<[f16; 5]> = x
        .iter()
        .map(|&h| {
            let v = h.to_f64();
            let rcp = 1.0 / v;
            [
                once(v.abs().sqrt()),
                once(v.abs()),
                once(v * v + 0.25),
                once(v.round_ties_even()),
                once(rcp),
            ]
        })
        .collect();
    let ulps = |a: f16, b: f16| (a.to_bits() as i32 - b.to_bits() as i32).unsigned_abs();
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f16, _>(8 * x.len()).unwrap();
        half_math
            .launch(x.len().div_ceil(128), 128, (&dx, &mut out))
            .unwrap();
        let out = out.to_vec().unwrap();
        for (i, (&h, want)) in x.iter().zip(&exact).enumerate() {
            let got = &out[8 * i..8 * i + 8];
            let v = h.to_f64();
            let correctly_rounded = [got[0], got[1], got[2], got[5], got[6]];
            assert_eq!(
                correctly_rounded.map(|g| g.to_bits()),
                want.map(|w| w.to_bits()),
                "{at}: x = {h}"
            );
            assert!(
                ulps(got[3], once(v.sin())) <= 1,
                "{at}: sin {h}: {}",
                got[3]
            );
            assert!(
                ulps(got[4], once(v.exp())) <= 1,
                "{at}: exp {h}: {}",
                got[4]
            );
            assert_eq!(got[7], h.max(f16::ZERO), "{at}: hmax {h}");
        }
    }
}

#[test]
fn a_bf16_dot_product_accumulates_in_f32_within_its_bound() {
    let n: u64 = 100_000;
    let x: Vec<bf16> = (0..n)
        .map(|i| bf16::from_f32(((i * 7919) % 1000) as f32 / 250.0 - 2.0))
        .collect();
    let y: Vec<bf16> = (0..n)
        .map(|i| bf16::from_f32(((i * 104_729) % 997) as f32 / 500.0 - 1.0))
        .collect();
    let terms: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(a, b)| a.to_f64() * b.to_f64())
        .collect();
    let exact: f64 = terms.iter().sum();
    // f32 summation of n terms, each product exact in f32 (8-bit significands): n · 2⁻²⁴ · Σ|t|.
    let bound = n as f64 * 2f64.powi(-24) * terms.iter().map(|t| t.abs()).sum::<f64>();
    for dev in backends() {
        let (xs, ys) = (dev.to_device(&x).unwrap(), dev.to_device(&y).unwrap());
        let mut out = dev.zeros::<f32, _>(1).unwrap();
        bf16_dot.launch(64, 256, (&xs, &ys, &mut out)).unwrap();
        let got = out.to_vec().unwrap()[0] as f64;
        assert!(
            (got - exact).abs() <= bound,
            "{:?}: {got} against {exact} (bound {bound})",
            dev.kind()
        );
    }
}

#[test]
fn half_precision_atomics_add_every_value() {
    // Sums of small integers: exact in f16 and bf16 in any order.
    let x: Vec<f16> = (0..256).map(|i| f16::from_f32((i % 4) as f32)).collect();
    let xb: Vec<bf16> = (0..256).map(|i| bf16::from_f32((i % 4) as f32)).collect();
    for dev in backends() {
        let (xs, xbs) = (dev.to_device(&x).unwrap(), dev.to_device(&xb).unwrap());
        let mut sums = dev.zeros::<f16, _>(4).unwrap();
        let mut sums_b = dev.zeros::<bf16, _>(4).unwrap();
        half_atomic_sums
            .launch(2, 128, (&xs, &mut sums, &xbs, &mut sums_b))
            .unwrap();
        let expected = [0.0, 64.0, 128.0, 192.0];
        let got: Vec<f32> = sums.to_vec().unwrap().iter().map(|h| h.to_f32()).collect();
        let got_b: Vec<f32> = sums_b
            .to_vec()
            .unwrap()
            .iter()
            .map(|h| h.to_f32())
            .collect();
        assert_eq!(
            (got, got_b),
            (expected.to_vec(), expected.to_vec()),
            "{:?}",
            dev.kind()
        );
    }
}

#[test]
fn every_f16_method_a_kernel_uses_gives_the_hosts_value() {
    // Ordinary values, both zeros, the extremes, subnormals, infinities and a NaN.
    let mut x: Vec<f16> = (0..600)
        .map(|i| f16::from_f32((i as f32 - 300.0) * 0.173))
        .collect();
    x.extend([
        f16::ZERO,
        f16::NEG_ZERO,
        f16::MAX,
        f16::MIN,
        f16::MIN_POSITIVE_SUBNORMAL,
        -f16::MAX_SUBNORMAL,
        f16::INFINITY,
        f16::NEG_INFINITY,
        f16::NAN,
    ]);
    // NaNs compare by being NaN: a GPU's conversions make its canonical one.
    let bits = |v: &[f16]| {
        v.iter()
            .map(|h| if h.is_nan() { u16::MAX } else { h.to_bits() })
            .collect::<Vec<_>>()
    };
    let want: Vec<f16> = x.iter().flat_map(|&v| half_api_of(v)).collect();
    for dev in backends() {
        let xs = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f16, _>(8 * x.len()).unwrap();
        half_api
            .launch(x.len().div_ceil(128), 128, (&xs, &mut out))
            .unwrap();
        assert_eq!(
            bits(&out.to_vec().unwrap()),
            bits(&want),
            "{:?}",
            dev.kind()
        );
    }
}
