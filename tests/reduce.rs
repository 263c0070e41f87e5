//! `#[reduce]` on every backend: whole-array reductions against the host's, on awkward sizes,
//! and the one-pass kernel a GPU runs, launched directly on the CPU backends (checked mode
//! included) with whole and partial warps.

use kernel_runtime::prelude::Complex64;
use kernel_suite::complex_kernels::sum_c64;
use kernel_suite::reference::SplitMix64;
use kernel_suite::test_kernels::{argmax, max_i32, max_u8, min_f32, sum_f64, sum_u64, Best};

mod common;
use common::backends;

const SIZES: &[usize] = &[1, 2, 31, 255, 256, 257, 1000, 65_537, 300_001];

#[test]
fn reductions_match_the_host_on_every_backend() {
    for dev in backends() {
        for &n in SIZES {
            let mut rng = SplitMix64(n as u64);
            // Whole numbers, whose sum is exact in any order.
            let xs: Vec<f64> = (0..n)
                .map(|_| (rng.next_u64() % 1000) as f64 - 500.0)
                .collect();
            let ints: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32).collect();
            let floats: Vec<f32> = (0..n).map(|_| rng.next_f32() - 0.5).collect();
            let words: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let what = format!("{:?}, n = {n}", dev.kind());

            let dx = dev.to_device(&xs).unwrap();
            assert_eq!(
                sum_f64.reduce(&dx).unwrap(),
                Some(xs.iter().sum()),
                "{what}"
            );
            assert_eq!(
                sum_f64.fold(&dx, 0.5).unwrap(),
                0.5 + xs.iter().sum::<f64>(),
                "{what}"
            );
            // Part of an array, as Numba's `sum_reduce(d[k:])`.
            let k = n / 3;
            assert_eq!(
                sum_f64.reduce(dx.slice(k..).unwrap()).unwrap(),
                Some(xs[k..].iter().sum()),
                "{what}"
            );
            let di = dev.to_device(&ints).unwrap();
            assert_eq!(
                max_i32.reduce(&di).unwrap(),
                ints.iter().copied().max(),
                "{what}"
            );
            let df = dev.to_device(&floats).unwrap();
            let min = floats.iter().copied().fold(f32::INFINITY, f32::min);
            assert_eq!(min_f32.reduce(&df).unwrap(), Some(min), "{what}");
            let dw = dev.to_device(&words).unwrap();
            let wrapped = words.iter().fold(0u64, |a, &b| a.wrapping_add(b));
            assert_eq!(sum_u64.reduce(&dw).unwrap(), Some(wrapped), "{what}");
        }
        let empty = dev.zeros::<f64, _>(0).unwrap();
        assert_eq!(sum_f64.reduce(&empty).unwrap(), None);
        assert_eq!(sum_f64.fold(&empty, 7.0).unwrap(), 7.0);
        let mut halves = dev.to_device(&[1.0f64, 2.0, 3.0, 4.0]).unwrap();
        let (lo, hi) = halves.split_at_mut(2).unwrap();
        assert_eq!(sum_f64.fold(&lo, 0.5).unwrap(), 3.5);
        assert_eq!(sum_f64.reduce(hi.view()).unwrap(), Some(7.0));
    }
}

/// What block `b` of a `grid × width` launch of the pass folds: the elements its threads visit
/// in their grid-stride loop.
fn block_sums<T: Copy + std::ops::Add<Output = T>>(
    xs: &[T],
    grid: usize,
    width: usize,
) -> Vec<Option<T>> {
    let mut sums = vec![None; grid];
    for (i, &x) in xs.iter().enumerate() {
        let b = (i % (grid * width)) / width;
        sums[b] = Some(sums[b].map_or(x, |s| s + x));
    }
    sums
}

#[test]
fn the_gpu_pass_folds_each_blocks_elements_with_whole_and_partial_warps() {
    for dev in backends() {
        for (n, grid, width) in [
            (1000, 3, 256),
            (1000, 4, 100),
            (77, 2, 32),
            (5, 8, 1),
            (3000, 1, 1024),
        ] {
            let xs: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64).collect();
            let dx = dev.to_device(&xs).unwrap();
            let mut partials = dev.to_device(&vec![-1.0f64; grid]).unwrap();
            sum_f64
                .launch(grid, width as u32, (&dx, &mut partials))
                .unwrap();
            let want: Vec<f64> = block_sums(&xs, grid, width)
                .into_iter()
                .map(|s| s.unwrap_or(-1.0))
                .collect();
            assert_eq!(
                partials.to_vec().unwrap(),
                want,
                "{:?}: n = {n}, {grid} blocks of {width}",
                dev.kind()
            );
        }
    }
}

#[test]
fn the_gpu_pass_takes_blocks_and_grids_of_any_shape_by_linear_index() {
    for dev in backends() {
        let xs: Vec<f64> = (0..1000).map(|i| ((i * 37) % 101) as f64).collect();
        let dx = dev.to_device(&xs).unwrap();
        // 2 × 3 blocks of 8 × 4 × 2 threads: six blocks of 64, each folding its own elements.
        let mut partials = dev.to_device(&[-1.0f64; 6][..]).unwrap();
        sum_f64
            .launch((2, 3), (8, 4, 2), (&dx, &mut partials))
            .unwrap();
        let want: Vec<f64> = block_sums(&xs, 6, 64)
            .into_iter()
            .map(|s| s.unwrap_or(-1.0))
            .collect();
        assert_eq!(partials.to_vec().unwrap(), want, "{:?}", dev.kind());
    }
}

/// A sum that overflows where Rust checks arithmetic (debug builds): a reduction's panic.
#[kernel_runtime::reduce]
fn sum_u32(a: u32, b: u32) -> u32 {
    a + b
}

#[test]
fn an_overflow_in_fold_is_an_error_as_in_reduce() {
    for dev in backends() {
        let x = dev.to_device(&[u32::MAX][..]).unwrap();
        let folded = sum_u32.fold(&x, 1);
        let two = dev.to_device(&[u32::MAX, 1][..]).unwrap();
        let reduced = sum_u32.reduce(&two);
        if cfg!(debug_assertions) {
            for err in [folded.unwrap_err(), reduced.unwrap_err()] {
                let kernel_runtime::Error::KernelFault { message, .. } = &err else {
                    panic!("{err}");
                };
                assert!(message.contains("overflow"), "{err}");
            }
        } else {
            assert_eq!(folded.unwrap(), 0);
            assert_eq!(reduced.unwrap(), Some(0));
        }
    }
}

/// Values of many words, and of less than one: a warp moves each as its 32-bit words, the last
/// padded.
#[test]
fn values_of_any_width_reduce_as_on_the_host() {
    for dev in backends() {
        for n in [1, 33, 257, 5000] {
            let mut rng = SplitMix64(n as u64 + 7);
            // Whole numbers, exact in any order; ties in the argmax, whose first index wins.
            let zs: Vec<Complex64> = (0..n)
                .map(|_| {
                    Complex64::new(
                        (rng.next_u64() % 100) as f64,
                        -((rng.next_u64() % 50) as f64),
                    )
                })
                .collect();
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            let bests: Vec<Best> = (0..n)
                .map(|i| Best {
                    value: (rng.next_u64() % 20) as f32,
                    index: i as u32,
                })
                .collect();
            let what = format!("{:?}, n = {n}", dev.kind());
            let dz = dev.to_device(&zs).unwrap();
            assert_eq!(
                sum_c64.reduce(&dz).unwrap(),
                Some(zs.iter().sum()),
                "{what}"
            );
            let db = dev.to_device(&bytes).unwrap();
            assert_eq!(
                max_u8.reduce(&db).unwrap(),
                bytes.iter().copied().max(),
                "{what}"
            );
            let top = bests.iter().map(|b| b.value).fold(f32::MIN, f32::max);
            let first = bests.iter().find(|b| b.value == top).copied();
            let dbest = dev.to_device(&bests).unwrap();
            assert_eq!(argmax.reduce(&dbest).unwrap(), first, "{what}");

            // The GPU's pass itself, whose warps move the values: blocks of whole and partial
            // warps.
            let (grid, width) = (3, 100);
            let mut partials = dev.zeros::<Complex64, _>(grid).unwrap();
            sum_c64.launch(grid, width, (&dz, &mut partials)).unwrap();
            let parts: Vec<Complex64> = block_sums(&zs, grid, width as usize)
                .into_iter()
                .map(|s| s.unwrap_or_default())
                .collect();
            assert_eq!(partials.to_vec().unwrap(), parts, "{what}");
            let mut best_parts = dev.zeros::<Best, _>(1).unwrap();
            argmax.launch(1, 64, (&dbest, &mut best_parts)).unwrap();
            assert_eq!(best_parts.to_vec().unwrap(), [first.unwrap()], "{what}");
            let mut byte_parts = dev.zeros::<u8, _>(1).unwrap();
            max_u8.launch(1, 40, (&db, &mut byte_parts)).unwrap();
            assert_eq!(
                byte_parts.to_vec().unwrap(),
                [bytes.iter().copied().max().unwrap()],
                "{what}"
            );
        }
    }
}
