//! The baseline copies of the CPU backend's thread loops, which CPUs without AVX-512 run: each
//! fast loop (a block's threads, a grid-level kernel's rows and their guarded span, a
//! grid-stride loop, a split kernel's regions) is compiled twice, and a machine with AVX-512
//! would otherwise test only its own copy. `KERNEL_CPU_VECTORS=baseline` makes this test binary
//! run the baseline copies, set before its one test's first launch.

use gpu_kernels::{add, matmul_tiled, smooth, TPB};
use kernel_runtime::prelude::*;
use kernel_suite::reference::{self, SplitMix64};
use kernel_suite::test_kernels::{grid_stride_double, row_sums_minus};
use ndarray::Array2;

#[test]
fn the_baseline_loops_compute_what_the_references_do() {
    // SAFETY: the binary's only test sets it before any thread of the runtime reads it.
    unsafe { std::env::set_var("KERNEL_CPU_VECTORS", "baseline") };
    let dev = Device::cpu();
    let mut rng = SplitMix64(17);

    // A guarded 1-D kernel with index checks: its rows' span, proven.
    let n = 100_003;
    let a: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
    let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
    let mut dc = dev.zeros::<f32, _>(n).unwrap();
    add.launch_with(LaunchConfig::cover(n, 256).unwrap(), (&da, &db, &mut dc))
        .unwrap();
    assert_eq!(dc.to_vec().unwrap(), reference::add(&a, &b), "add");

    // Stencils: the span of rows, both spellings of the guard.
    let (h, w) = (67, 301);
    let img = Array2::from_shape_fn((h, w), |_| rng.next_u64() as i8);
    let dimg = dev.to_device(&img).unwrap();
    let mut dout = dev.zeros::<i8, _>((h, w)).unwrap();
    let blocks = (w.div_ceil(16) as u32, h.div_ceil(16) as u32);
    smooth.launch(blocks, (16, 16), (&dimg, &mut dout)).unwrap();
    let want = reference::smooth(&img, &Array2::zeros((h, w)));
    assert_eq!(dout.to_host().unwrap(), want, "smooth");
    let x = Array2::from_shape_fn((h, w), |_| rng.next_u64() as u32 % 1000);
    let dx = dev.to_device(&x).unwrap();
    let mut sums = dev.zeros::<u32, _>((h, w)).unwrap();
    let blocks = (w.div_ceil(32) as u32, h.div_ceil(4) as u32);
    row_sums_minus
        .launch(blocks, (32, 4), (&dx, &mut sums))
        .unwrap();
    let want = Array2::from_shape_fn((h, w), |(i, j)| match 1 <= j && j + 1 < w {
        true => x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]],
        false => 0,
    });
    assert_eq!(sums.to_host().unwrap(), want, "row sums");

    // A grid-stride loop, run once per index.
    let v: Vec<i64> = (0..50_001).map(|_| rng.next_u64() as i64 >> 8).collect();
    let dv = dev.to_device(&v).unwrap();
    let mut doubled = dev.zeros::<i64, _>(v.len()).unwrap();
    grid_stride_double
        .launch(8, 64, (&dv, &mut doubled))
        .unwrap();
    let want: Vec<i64> = v.iter().map(|e| 2 * e).collect();
    assert_eq!(doubled.to_vec().unwrap(), want, "grid-stride");

    // A kernel split at its barriers: the tiled product, in blocks of the hinted shape.
    let (m, k, p) = (45, 70, 33);
    let am = Array2::from_shape_fn((m, k), |_| (rng.next_u64() % 7) as f32);
    let bm = Array2::from_shape_fn((k, p), |_| (rng.next_u64() % 7) as f32);
    let (dam, dbm) = (dev.to_device(&am).unwrap(), dev.to_device(&bm).unwrap());
    let mut dcm = dev.zeros::<f32, _>((m, p)).unwrap();
    let blocks = (p.div_ceil(TPB) as u32, m.div_ceil(TPB) as u32);
    matmul_tiled
        .launch(blocks, (TPB as u32, TPB as u32), (&dam, &dbm, &mut dcm))
        .unwrap();
    // Small integers: every order of the sums gives the exact product.
    assert_eq!(
        dcm.to_host().unwrap(),
        reference::matmul(&am, &bm),
        "matmul"
    );
}
