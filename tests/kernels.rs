//! The kernel test suite: every kernel against its plain-Rust reference, on every backend
//! this machine can run (the CPU backend always; CUDA where a GPU is usable), on awkward sizes.

use gpu_kernels::*;
use kernel_runtime::prelude::*;
use kernel_runtime::{DeviceKind, LaunchError};
use kernel_suite::reference::{self, SplitMix64};
use kernel_suite::test_kernels::*;
use ndarray::{Array2, Array3};

mod common;
use common::{assert_mentions, backends};

const AWKWARD: &[usize] = &[1, 2, 31, 255, 256, 257, 1000, 4099, 65_537];

/// Two random inputs of `n` elements for the add kernels, from `seed`, and their copies on
/// `dev`.
fn add_inputs(
    dev: &Device,
    n: usize,
    seed: u64,
) -> (Vec<f32>, Vec<f32>, DeviceArray1<f32>, DeviceArray1<f32>) {
    let mut rng = SplitMix64(seed);
    let a: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.next_f32()).collect();
    let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
    (a, b, da, db)
}

#[test]
fn add_matches_reference_on_awkward_sizes() {
    for dev in backends() {
        for &n in AWKWARD {
            let (a, b, da, db) = add_inputs(&dev, n, n as u64);
            let mut dc = dev.zeros::<f32, _>(n).unwrap();
            for threads in [1u32, 32, 256, 1024] {
                let cfg = LaunchConfig::cover(n, threads).unwrap();
                add.launch_with(cfg, (&da, &db, &mut dc)).unwrap();
                assert_eq!(
                    dc.to_vec().unwrap(),
                    reference::add(&a, &b),
                    "n={n} threads={threads}"
                );
            }
        }
    }
}

#[test]
fn wide_add_covers_every_element_for_any_grid() {
    for dev in backends() {
        for &n in AWKWARD {
            let (a, b, da, db) = add_inputs(&dev, n, !(n as u64));
            // A quarter of the elements per thread as meant, and grids too small (each thread
            // then walks on past its four) and too large (threads past the end do nothing).
            let quarter = n.div_ceil(ADD_WIDE);
            for (items, threads) in [(quarter, 256u32), (quarter, 32), (1, 1), (7, 3), (n, 64)] {
                let mut dc = dev.to_device(&vec![f32::NAN; n]).unwrap();
                let cfg = LaunchConfig::cover(items, threads).unwrap();
                add_wide.launch_with(cfg, (&da, &db, &mut dc)).unwrap();
                assert_eq!(
                    dc.to_vec().unwrap(),
                    reference::add(&a, &b),
                    "n={n} items={items} threads={threads}"
                );
            }
        }
    }
}

#[test]
fn a_spin_lock_with_a_back_off_serialises_the_blocks() {
    for dev in backends() {
        let mut lock = dev.zeros::<u32, _>(1).unwrap();
        let mut total = dev.zeros::<u32, _>(1).unwrap();
        locked_sums.launch(40, 32, (&mut lock, &mut total)).unwrap();
        assert_eq!(
            total.to_vec().unwrap(),
            [(0..40).sum::<u32>()],
            "{:?}",
            dev.kind()
        );
        assert_eq!(lock.to_vec().unwrap(), [0]);
    }
}

#[test]
fn arrays_reshape_in_place() {
    for dev in backends() {
        let flat = dev.to_device(&(0..24).collect::<Vec<u16>>()).unwrap();
        let cube = flat.reshape((2, 3, 4)).unwrap();
        assert_eq!(cube.to_host().unwrap()[[1, 2, 3]], 23);
        let err = cube.reshape((5, 5)).unwrap_err();
        assert!(
            matches!(err, kernel_runtime::Error::ShapeMismatch { .. }),
            "{err:?}"
        );
        assert_mentions(&err.to_string(), &["24 elements", "[5, 5]"]);
    }
}

#[test]
fn vectorized_add_maps_arrays_of_one_shape() {
    for dev in backends() {
        for &n in AWKWARD {
            let (a, b, da, db) = add_inputs(&dev, n, n as u64 + 1);
            let c = add_vectorized.call((&da, &db)).unwrap();
            assert_eq!(c.to_vec().unwrap(), reference::add(&a, &b), "n={n}");
        }
        let a = Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f32);
        let da = dev.to_device(&a).unwrap();
        let mut out = dev.zeros::<f32, _>((3, 5)).unwrap();
        add_vectorized.apply((&da, &da), &mut out).unwrap();
        assert_eq!(out.to_host().unwrap(), &a * 2.0);
        assert_eq!(add_vectorized.scalar(1.5, 2.0), 3.5);
        let named = vector_names.call((&da, &da, &da, &da)).unwrap();
        assert_eq!(named.to_host().unwrap(), &a * 10.0);
        let mut wrong = dev.zeros::<f32, _>((5, 3)).unwrap();
        let err = add_vectorized.apply((&da, &da), &mut wrong).unwrap_err();
        assert!(
            matches!(err, kernel_runtime::Error::ShapeMismatch { .. }),
            "{err:?}"
        );
        assert_mentions(
            &err.to_string(),
            &["argument `a` of `add_vectorized`", "[5, 3]", "[3, 5]"],
        );
    }
}

#[test]
fn smooth_matches_reference_bit_for_bit() {
    for dev in backends() {
        for (n, m) in [
            (1, 1),
            (2, 3),
            (3, 3),
            (17, 31),
            (64, 64),
            (101, 37),
            (257, 129),
            // Strips of STRIP_ROWS rows: whole, and one row short or over.
            (STRIP_ROWS + 1, 5),
            (STRIP_ROWS + 2, 130),
            (STRIP_ROWS + 3, 7),
            (2 * STRIP_ROWS + 2, 3),
            (3 * STRIP_ROWS + 1, 300),
        ] {
            let mut rng = SplitMix64((n * 1000 + m) as u64);
            let x = Array2::from_shape_fn((n, m), |_| rng.next_u64() as i8);
            let dx = dev.to_device(&x).unwrap();
            let expect = reference::smooth(&x, &Array2::zeros((n, m)));
            let mut out = dev.zeros_like(&dx).unwrap();
            smooth
                .launch((m.div_ceil(16), n.div_ceil(16)), (16, 16), (&dx, &mut out))
                .unwrap();
            assert_eq!(out.to_host().unwrap(), expect, "{n}x{m}");
            let mut out = dev.zeros_like(&dx).unwrap();
            let threads = (STRIP_THREADS, 1);
            smooth_strips
                .launch(strips_blocks(n, m), threads, (&dx, &mut out))
                .unwrap();
            assert_eq!(out.to_host().unwrap(), expect, "strips, {n}x{m}");
        }
    }
}

#[test]
fn smooth_words_matches_reference_and_keeps_the_border() {
    for dev in backends() {
        for (n, m) in [
            (1, 4),
            (2, 8),
            (3, 4),
            (3, 8),
            (17, 12),
            (64, 64),
            (101, 36),
            // More words per row than WORD_THREADS: the row spans blocks.
            (257, 4 * WORD_THREADS + 4),
            (STRIP_ROWS + 1, 8),
            (STRIP_ROWS + 2, 516),
            (STRIP_ROWS + 3, 4),
            (2 * STRIP_ROWS + 2, 12),
            (3 * STRIP_ROWS + 1, 300),
        ] {
            let mut rng = SplitMix64((n * 1000 + m) as u64);
            let x = Array2::from_shape_fn((n, m), |_| rng.next_u64() as i8);
            // `out` starts random: its border must come back unchanged.
            let before = Array2::from_shape_fn((n, m), |_| rng.next_u64() as i8);
            let expect = reference::smooth(&x, &before);
            let dx = dev.to_device(&x).unwrap().reinterpret::<u32>().unwrap();
            let out = dev.to_device(&before).unwrap();
            let mut out = out.reinterpret::<u32>().unwrap();
            let threads = (WORD_THREADS, 1);
            smooth_words
                .launch(words_blocks(n, m / 4), threads, (&dx, &mut out))
                .unwrap();
            let out = out.reinterpret::<i8>().unwrap();
            assert_eq!(out.to_host().unwrap(), expect, "{n}x{m}");
        }
    }
}

#[test]
fn smooth_strips_wants_out_of_the_images_shape() {
    // On the CPU backends: a GPU would trap and lose its context, which tests/gpu_trap.rs covers.
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let dx = dev.zeros::<i8, _>((20, 20)).unwrap();
        let mut out = dev.zeros::<i8, _>((20, 19)).unwrap();
        let err = smooth_strips
            .launch(strips_blocks(20, 20), (STRIP_THREADS, 1), (&dx, &mut out))
            .unwrap_err();
        assert_mentions(&err.to_string(), &["must have the shape of `x`"]);
        let words = dev.zeros::<u32, _>((20, 5)).unwrap();
        let mut out = dev.zeros::<u32, _>((19, 5)).unwrap();
        let err = smooth_words
            .launch(words_blocks(20, 5), (WORD_THREADS, 1), (&words, &mut out))
            .unwrap_err();
        assert_mentions(
            &err.to_string(),
            &["smooth_words", "must have the shape of `x`"],
        );
    }
}

#[test]
fn integrate2d_both_versions_agree_with_reference() {
    for dev in backends() {
        for n in [1usize, 7, 255, 256, 257, 1000] {
            let expect = reference::integrate2d(n);
            let mut rows = dev.zeros::<f64, _>(n).unwrap();
            integrate2d_rows
                .launch(n.div_ceil(64), 64, (n, &mut rows))
                .unwrap();
            let v: f64 = rows.to_vec().unwrap().iter().sum();
            let nb = n.div_ceil(INTEGRATE_TPB);
            let mut blocks = dev.zeros::<f64, _>(nb).unwrap();
            integrate2d_shared
                .launch(nb, INTEGRATE_TPB, (n, &mut blocks))
                .unwrap();
            let w: f64 = blocks.to_vec().unwrap().iter().sum();
            assert!(
                (v - expect).abs() <= 1e-12 * n as f64,
                "n={n}: {v} vs {expect}"
            );
            assert!(
                (w - expect).abs() <= 1e-12 * n as f64,
                "n={n}: {w} vs {expect}"
            );
        }
        // The integral itself is 0: the midpoint rule converges to it.
        let n = 512;
        let nb = n / INTEGRATE_TPB;
        let mut blocks = dev.zeros::<f64, _>(nb).unwrap();
        integrate2d_shared
            .launch(nb, INTEGRATE_TPB, (n, &mut blocks))
            .unwrap();
        assert!(blocks.to_vec().unwrap().iter().sum::<f64>().abs() < 1e-5);
    }
}

#[test]
fn matmul_matches_reference() {
    for dev in backends() {
        for (n, k, m) in [
            (1, 1, 1),
            (1, 17, 1),
            (16, 16, 16),
            (33, 20, 17),
            (70, 5, 129),
        ] {
            let mut rng = SplitMix64((n * k * m) as u64);
            let a = Array2::from_shape_fn((n, k), |_| rng.next_f32());
            let b = Array2::from_shape_fn((k, m), |_| rng.next_f32());
            let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
            let mut dc = dev.zeros::<f32, _>((n, m)).unwrap();
            matmul_tiled
                .launch(
                    (m.div_ceil(TPB), n.div_ceil(TPB)),
                    (TPB, TPB),
                    (&da, &db, &mut dc),
                )
                .unwrap();
            let expect = reference::matmul(&a, &b);
            let got = dc.to_host().unwrap();
            for (g, e) in got.iter().zip(expect.iter()) {
                assert!(
                    (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                    "{n}x{k}x{m}: {g} vs {e}"
                );
            }
        }
    }
}

#[test]
fn quicksort_sorts_awkward_inputs() {
    for dev in backends() {
        let mut rng = SplitMix64(99);
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![5],
            vec![2, 1],
            (0..1025).rev().collect(),
            vec![7; 5000],
            (0..100_003).map(|_| rng.next_u64() as u32).collect(),
            (0..50_000).map(|_| rng.next_u64() as u32 % 3).collect(),
            (0..40_000).collect(),
            // Several passes, segments of many chunks, keys at both ends of the range.
            (0..300_000)
                .map(|i| match i % 5 {
                    0 => u32::MAX - (rng.next_u64() % 4) as u32,
                    1 => (rng.next_u64() % 4) as u32,
                    _ => rng.next_u64() as u32,
                })
                .collect(),
            // A key too rare to be a pivot of the first pass, but most of its bucket there:
            // a long run of equal keys in each buffer.
            (0..200_000)
                .map(|i| {
                    if i % 40 == 0 {
                        0x8000_0000
                    } else {
                        rng.next_u64() as u32
                    }
                })
                .collect(),
            vec![u32::MAX; 3000],
            (0..70_000).rev().map(|i| i / 7).collect(),
        ];
        for keys in cases {
            let mut dk = dev.to_device(&keys).unwrap();
            quicksort::sort(&mut dk).unwrap();
            assert!(
                reference::is_sorted_permutation(&keys, &dk.to_vec().unwrap()),
                "n={}",
                keys.len()
            );
        }
    }
}

#[test]
fn grid_is_right_with_many_blocks_in_every_dimension() {
    for dev in backends() {
        // 1-D: several blocks, a partial last block.
        let n = 1000;
        let mut ids = dev.zeros::<u32, _>(n).unwrap();
        let mut sizes = dev.zeros::<u32, _>(n).unwrap();
        grid1_ids.launch(8, 128, (&mut ids, &mut sizes)).unwrap();
        assert_eq!(ids.to_vec().unwrap(), (0..n as u32).collect::<Vec<_>>());
        assert!(sizes.to_vec().unwrap().iter().all(|&s| s == 1024));
        // 2-D: non-square blocks, several blocks along both axes.
        let (h, w) = (37usize, 70usize);
        let mut out = dev.zeros::<u32, _>((h, w)).unwrap();
        grid2_ids
            .launch((w.div_ceil(8), h.div_ceil(4)), (8, 4), &mut out)
            .unwrap();
        let expect = Array2::from_shape_fn((h, w), |(y, x)| (y * w + x) as u32);
        assert_eq!(out.to_host().unwrap(), expect);
        // 3-D.
        let (nz, ny, nx) = (5, 9, 13);
        let mut out = dev.zeros::<u32, _>((nz, ny, nx)).unwrap();
        grid3_ids.launch((4, 3, 3), (4, 4, 2), &mut out).unwrap();
        let expect =
            Array3::from_shape_fn((nz, ny, nx), |(z, y, x)| ((z * ny + y) * nx + x) as u32);
        assert_eq!(out.to_host().unwrap(), expect);
        // A device function asking for the coordinates itself.
        let mut ids = dev.zeros::<u32, _>(1000).unwrap();
        ids_via_device_fn.launch(8, 128, &mut ids).unwrap();
        assert_eq!(ids.to_vec().unwrap(), (0..1000u32).collect::<Vec<_>>());
        // A grid-stride loop covers more elements than threads.
        let x: Vec<i64> = (0..10_007).collect();
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<i64, _>(x.len()).unwrap();
        grid_stride_double.launch(3, 64, (&dx, &mut out)).unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            x.iter().map(|v| 2 * v).collect::<Vec<_>>()
        );
    }
}

#[test]
fn barriers_in_branches_loops_and_device_functions() {
    for dev in backends() {
        let n = 1000usize;
        let data: Vec<i32> = (0..n as i32).collect();
        let mut d = dev.to_device(&data).unwrap();
        reverse_in_blocks
            .launch(n.div_ceil(128), 128, &mut d)
            .unwrap();
        let got = d.to_vec().unwrap();
        for (i, v) in got.iter().enumerate() {
            let b = i / 128;
            let j = b * 128 + 127 - i % 128;
            assert_eq!(*v, if j < n { j as i32 } else { i as i32 }, "i={i}");
        }

        let vals: Vec<u32> = (0..777).map(|i| i % 5).collect();
        let mut d = dev.to_device(&vals).unwrap();
        block_prefix_sum
            .launch(vals.len().div_ceil(256), 256, &mut d)
            .unwrap();
        let got = d.to_vec().unwrap();
        for (c, chunk) in vals.chunks(256).enumerate() {
            let mut acc = 0;
            for (k, v) in chunk.iter().enumerate() {
                acc += v;
                assert_eq!(got[c * 256 + k], acc);
            }
        }

        let vals: Vec<u32> = (0..100).collect();
        let mut d = dev.to_device(&vals).unwrap();
        rotate_with_device_barrier.launch(2, 64, &mut d).unwrap();
        let got = d.to_vec().unwrap();
        assert_eq!(got[0], 1);
        assert_eq!(got[63], 0);
        assert_eq!(got[64], 65);
    }
}

#[test]
fn barrier_reductions_count_and_or() {
    for dev in backends() {
        let mut pred = vec![0u8; 96];
        pred[0..32].iter_mut().for_each(|p| *p = 1); // block 0: all set
        pred[32 + 5] = 1; // block 1: one set
        let dp = dev.to_device(&pred).unwrap();
        let mut out = dev.zeros::<i32, _>(9).unwrap();
        barrier_reductions.launch(3, 32, (&dp, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![32, 1, 1, 1, 0, 1, 0, 0, 0]);
    }
}

#[test]
fn atomics_on_shared_arrays_return_old_values_and_combine() {
    // The fast CPU backend updates shared memory without atomic instructions (only the block's
    // threads touch it, on one OS thread); checked mode and a GPU use atomics.
    for dev in backends() {
        let (blocks, threads) = (3, 64);
        let mut ints = dev.zeros::<i32, _>(4 * blocks).unwrap();
        let mut uints = dev.zeros::<u32, _>(7 * blocks).unwrap();
        let mut floats = dev.zeros::<f32, _>(2 * blocks).unwrap();
        let mut ranks = dev.zeros::<u32, _>(blocks * threads).unwrap();
        shared_atomics
            .launch(
                blocks,
                threads,
                (&mut ints, &mut uints, &mut floats, &mut ranks),
            )
            .unwrap();
        let (ints, uints) = (ints.to_vec().unwrap(), uints.to_vec().unwrap());
        let (floats, ranks) = (floats.to_vec().unwrap(), ranks.to_vec().unwrap());
        let n = threads as i32;
        for b in 0..blocks {
            assert_eq!(ints[4 * b..4 * b + 4], [n, -n, n - 1, 0], "{dev:?}");
            let u = &uints[7 * b..7 * b + 7];
            assert_eq!(
                u[..6],
                // inc wraps at 9 (64 % 10), dec from 0 to 9 and down (10 - 64 % 10)
                [u32::MAX, 0, 0, 4, 6, 7],
                "{dev:?}"
            );
            assert!((1..=64).contains(&u[6]), "{dev:?}: {}", u[6]);
            assert_eq!(floats[2 * b..2 * b + 2], [32.0, 63.0], "{dev:?}");
            let mut r = ranks[threads * b..threads * (b + 1)].to_vec();
            r.sort_unstable();
            assert_eq!(r, (0..64).collect::<Vec<u32>>(), "{dev:?}");
        }
    }
}

/// A kernel that a `macro_rules!` macro writes, its element type a `$t:ty` fragment (which
/// reaches `#[kernel]` as an invisible group). Such kernels run on the CPU backends; the device
/// build reads kernels as the source writes them, so they have no PTX.
macro_rules! scale_by {
    ($name:ident, $t:ty) => {
        #[kernel]
        pub fn $name(x: &[$t], out: &mut Array1<$t>, k: $t) {
            let i = grid(1);
            if i < x.len() {
                out[i] = x[i] * k;
            }
        }
    };
}
scale_by!(scale_by_f64, f64);

#[test]
fn a_kernel_written_by_a_macro_takes_its_types_from_ty_fragments() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let dx = dev.to_device(&[1.0f64, 2.0, 3.0]).unwrap();
        let mut out = dev.zeros::<f64, _>(3).unwrap();
        scale_by_f64.launch(1, 32, (&dx, &mut out, 0.5)).unwrap();
        assert_eq!(out.to_vec().unwrap(), [0.5, 1.0, 1.5]);
    }
}

#[test]
fn a_three_axis_shared_array_is_laid_out_and_indexed_as_declared() {
    let want = Array2::from_shape_fn((3, 64), |(_, t)| {
        let (z, y, x) = (t / 32, t / 8 % 4, t % 8);
        ((1 - z) * 32 + (3 - y) * 8 + (7 - x)) as u32
    });
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>((3, 64)).unwrap();
        shared_mirror3.launch(3, (8, 4, 2), &mut out).unwrap();
        assert_eq!(out.to_host().unwrap(), want, "{:?}", dev.kind());
    }
    const { assert!(shared_mirror3::META.static_shared_bytes == 2 * 4 * 8 * 4) };
}

#[test]
fn shared_arrays_of_bools_hold_what_the_threads_wrote() {
    let prime = |t: usize| t >= 2 && (2..t).all(|d| !t.is_multiple_of(d));
    let want = Array2::from_shape_fn((2, 256), |(_, t)| {
        let below = (0..=t).filter(|&k| prime(k)).count();
        let row = (0..256).filter(|&k| k % 16 == t % 16 && prime(k)).count();
        (1000 * below + row) as u32
    });
    for dev in backends() {
        let mut counts = dev.zeros::<u32, _>((2, 256)).unwrap();
        shared_primes.launch(2, 256, &mut counts).unwrap();
        assert_eq!(counts.to_host().unwrap(), want, "{:?}", dev.kind());
    }
    const { assert!(shared_primes::META.static_shared_bytes == 256 + 256) };
}

#[test]
fn round_ties_even_rounds_halves_as_python_does() {
    let x = [0.5f32, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, -2.5];
    for dev in backends() {
        let dx = dev.to_device(&x[..]).unwrap();
        let mut out = dev.zeros::<f32, _>(x.len()).unwrap();
        round_halves.launch(1, 32, (&dx, &mut out)).unwrap();
        let want = [0.0, 2.0, 2.0, -0.0, -2.0, 2.0, 3.0, -2.0];
        assert_eq!(out.to_vec().unwrap(), want, "{:?}", dev.kind());
    }
}

#[test]
fn a_kernel_without_arrays_runs_on_the_default_device() {
    seven.launch(2, 32, 7u32).unwrap();
    let err = seven.launch(1, 1, 8u32).unwrap_err().to_string();
    if matches!(
        Device::default().kind(),
        DeviceKind::Cpu | DeviceKind::CpuChecked
    ) {
        assert!(err.contains("x is 8, not 7"), "{err}");
    }
}

#[test]
fn device_functions_have_shared_arrays_of_their_block() {
    let n = 4 * 64;
    let x: Vec<u32> = (0..n as u32).map(|v| v * 7 % 31).collect();
    let want = Array2::from_shape_fn((3, n), |(row, i)| {
        let block = &x[i / 64 * 64..][..64];
        let sum: u32 = block.iter().sum();
        let t = i % 64;
        let across = block[t % 8 * 8 + t / 8];
        [sum, 2 * sum, across + 1000 * (across % 2)][row]
    });
    for dev in backends() {
        let xs = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>((3, n)).unwrap();
        device_shared.launch(4, 64, (&xs, &mut out)).unwrap();
        assert_eq!(out.to_host().unwrap(), want, "{:?}", dev.kind());

        // Blocks alive at once, across a grid barrier, keep arrays of their own.
        let mut out = dev.zeros::<u32, _>((2, 6 * 32)).unwrap();
        grid_kept.launch(6, 32, &mut out).unwrap();
        let kept = Array2::from_shape_fn((2, 6 * 32), |(_, i)| 10 * (i / 32) as u32 + 1);
        assert_eq!(out.to_host().unwrap(), kept, "{:?}", dev.kind());
    }
}

#[test]
fn one_dynamic_shared_allocation_is_carved_into_arrays_of_several_types() {
    let n = 96usize;
    let want = Array2::from_shape_fn((2, 3 * n), |(_, k)| {
        let m = (n - 1 - k / 3) as u32;
        m * (k % 3 + 1) as u32
    });
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        let mut out = dev.zeros::<u32, _>((2, 3 * n)).unwrap();
        let config = LaunchConfig::new(2, n as u32).unwrap().shared_bytes(12 * n);
        carved_shared.launch_with(config, &mut out).unwrap();
        assert_eq!(out.to_host().unwrap(), want, "{at}");
        let mut len = dev.zeros::<u32, _>(1).unwrap();
        let config = LaunchConfig::new(1, 32).unwrap().shared_bytes(64);
        shared_view_at
            .launch_with(config.clone(), (8, 14, &mut len))
            .unwrap();
        assert_eq!(len.to_vec().unwrap(), [14], "{at}");
        if matches!(dev.kind(), DeviceKind::Cuda(_)) {
            continue;
        }
        // Misaligned, past the end, or a slice past the view: stopped, named.
        for (offset, count, says) in [
            (2, 1, "at byte 2 of the dynamic shared memory"),
            (
                68,
                0,
                "at byte 68 of the dynamic shared memory does not lie in its 64 bytes",
            ),
            (8, 15, "slice 0..15 does not lie in array"),
        ] {
            let err = shared_view_at
                .launch_with(config.clone(), (offset, count, &mut len))
                .unwrap_err()
                .to_string();
            assert_mentions(&err, &[says, "shared_view_at"]);
        }
    }
}

#[test]
fn cudas_integer_intrinsics_run_under_their_names() {
    let x: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> (i % 32))
        .chain([0, 1, u32::MAX, 1 << 31])
        .collect();
    let ffs = |v: u64| if v == 0 { 0 } else { v.trailing_zeros() + 1 };
    let want: Vec<u32> = x
        .iter()
        .flat_map(|&v| {
            let parity = if v % 2 == 0 { 10 } else { 20 };
            [
                v.count_ones(),
                v.reverse_bits(),
                v.leading_zeros(),
                ffs(v as u64),
                parity,
            ]
        })
        .collect();
    let want_wide: Vec<u32> = x
        .iter()
        .flat_map(|&v| {
            let w = (v as u64) << 20;
            [w.count_ones(), ffs(w)]
        })
        .collect();
    for dev in backends() {
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>(5 * x.len()).unwrap();
        let mut wide = dev.zeros::<u32, _>(2 * x.len()).unwrap();
        cuda_intrinsics
            .launch(8, 128, (&dx, &mut out, &mut wide))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), want, "{:?}", dev.kind());
        assert_eq!(wide.to_vec().unwrap(), want_wide, "{:?}", dev.kind());
    }
}

#[test]
fn float_atomics_follow_numbas_nan_rules() {
    // Thread i applies values[i]; the NaNs fall among the numbers.
    let values: Vec<f64> = (0..300)
        .map(|i| {
            if i % 7 == 3 {
                f64::NAN
            } else {
                (i as f64 - 150.0) * 0.5
            }
        })
        .collect();
    let (lo, hi) = (-75.0, 74.5);
    let nan = f64::NAN;
    // Cells 0..4 start NaN, 4..8 at 0.
    let start = [nan, nan, nan, nan, 0.0, 0.0, 0.0, 0.0];
    // max and min keep a NaN element and ignore a NaN value; nanmax and nanmin replace a NaN
    // element and ignore a NaN value.
    let want = [nan, nan, hi, lo, hi, lo, hi, lo];
    let same = |got: &[f64], at: &str| {
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w || g.is_nan() && w.is_nan(),
                "{at}: cell {k}: {g} for {w}"
            );
        }
    };
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        let start32: Vec<f32> = start.iter().map(|&v| v as f32).collect();
        let mut cells = dev.to_device(&start32).unwrap();
        let dv = dev
            .to_device(&values.iter().map(|&v| v as f32).collect::<Vec<_>>())
            .unwrap();
        nan_atomics.launch(3, 128, (&mut cells, &dv)).unwrap();
        let got: Vec<f64> = cells.to_vec().unwrap().iter().map(|&v| v as f64).collect();
        same(&got, &at);

        let (ds, dv) = (
            dev.to_device(&start).unwrap(),
            dev.to_device(&values).unwrap(),
        );
        let mut cells = dev.zeros::<f64, _>(8).unwrap();
        shared_nan_atomics
            .launch(1, 320, (&mut cells, &ds, &dv))
            .unwrap();
        same(&cells.to_vec().unwrap(), &format!("{at}, shared"));
    }
}

#[test]
fn atomics_return_old_values_and_combine() {
    for dev in backends() {
        let threads = 8 * 64;
        let mut ints = dev.to_device(&[0i32, 0, i32::MIN, i32::MAX]).unwrap();
        let mut uints = dev.to_device(&[0u32, u32::MAX, 0, 0, 0, 0, 0]).unwrap();
        let mut wide = dev.zeros::<u64, _>(1).unwrap();
        let mut floats = dev.to_device(&[0.0f32, f32::MIN]).unwrap();
        let mut doubles = dev.to_device(&[0.0f64, 0.0]).unwrap();
        atomics
            .launch(
                8,
                64,
                (&mut ints, &mut uints, &mut wide, &mut floats, &mut doubles),
            )
            .unwrap();
        assert_eq!(
            ints.to_vec().unwrap(),
            vec![threads, -threads, threads - 1, 0]
        );
        let u = uints.to_vec().unwrap();
        assert_eq!((u[0], u[1], u[2]), (u32::MAX, 0, 0));
        assert_eq!(u[3], threads as u32 % 10); // inc wraps at 9
        assert_eq!(u[4], (10 - threads as u32 % 10) % 10); // dec wraps to 9 from 0
        assert_eq!(u[5], 7);
        assert!(u[6] >= 1 && u[6] <= threads as u32);
        assert_eq!(wide.to_vec().unwrap(), vec![(threads as u64) << 33]);
        assert_eq!(
            floats.to_vec().unwrap(),
            vec![threads as f32 * 0.5, (threads - 1) as f32]
        );
        assert_eq!(
            doubles.to_vec().unwrap(),
            vec![threads as f64 * 0.25, -(threads - 1) as f64]
        );

        let flags: Vec<u8> = (0..5000).map(|i| (i % 3 == 0) as u8).collect();
        let df = dev.to_device(&flags).unwrap();
        let mut total = dev.zeros::<u32, _>(1).unwrap();
        shared_atomic_count
            .launch(flags.len().div_ceil(256), 256, (&df, &mut total))
            .unwrap();
        assert_eq!(total.to_vec().unwrap(), vec![1667]);

        // Small integers: every order of the additions gives the same sums.
        let x: Vec<f32> = (0..1000).map(|i| (i % 7) as f32).collect();
        let dx = dev.to_device(&x).unwrap();
        let blocks = x.len().div_ceil(128);
        let mut sums = dev.zeros::<f32, _>(blocks).unwrap();
        let mut wide = dev.zeros::<f64, _>(blocks).unwrap();
        shared_float_sums
            .launch(blocks, 128, (&dx, &mut sums, &mut wide))
            .unwrap();
        let expected: Vec<f32> = x.chunks(128).map(|c| c.iter().sum()).collect();
        assert_eq!(sums.to_vec().unwrap(), expected);
        let negated: Vec<f64> = expected.iter().map(|&s| -f64::from(s)).collect();
        assert_eq!(wide.to_vec().unwrap(), negated);
    }
}

#[test]
fn dynamic_shared_memory_is_laid_out_in_rows() {
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        // 42 elements in rows of 8: 5 rows, the last 2 elements left out.
        let mut out = dev.zeros::<u32, _>((2, 42)).unwrap();
        let config = LaunchConfig::new(1, 42).unwrap().shared_bytes(42 * 4);
        shared_rows
            .launch_with(config.clone(), (8, &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        let next: Vec<u32> = (0..40)
            .map(|t| ((t / 8 + 1) % 5 * 8 + t % 8) as u32)
            .collect();
        assert_eq!(out.row(0).slice(ndarray::s![..40]).to_vec(), next, "{at}");
        assert_eq!(out.row(0).slice(ndarray::s![40..]).to_vec(), [0, 0], "{at}");
        assert_eq!(out.row(1).slice(ndarray::s![..2]).to_vec(), [5, 8], "{at}");
        if matches!(dev.kind(), DeviceKind::Cuda(_)) {
            continue;
        }
        let mut out = dev.zeros::<u32, _>((2, 42)).unwrap();
        let err = shared_rows
            .launch_with(config, (0, &mut out))
            .unwrap_err()
            .to_string();
        assert_mentions(&err, &["rows(0)", "shared_rows"]);
    }
}

#[test]
fn a_kernel_declares_the_dynamic_shared_memory_every_launch_gives() {
    use kernel_runtime::Kernel;
    assert_eq!(declared_shared::META.dynamic_shared_bytes, DECLARED_SHARED);
    let declared = (DECLARED_SHARED / 4) as u32;
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        let mut out = dev.zeros::<u32, _>(1).unwrap();
        let len = |out: &DeviceArray1<u32>| out.to_vec().unwrap()[0];
        declared_shared.launch(1, 32, &mut out).unwrap();
        assert_eq!(len(&out), declared, "launch, {at}");
        for (bytes, want) in [(16, declared), (48 * 1024, 12 * 1024)] {
            let config = LaunchConfig::new(1, 32).unwrap().shared_bytes(bytes);
            declared_shared.launch_with(config, &mut out).unwrap();
            assert_eq!(len(&out), want, "{bytes} bytes, {at}");
        }
        declared_shared.forall(1, &mut out).unwrap();
        assert_eq!(len(&out), declared, "forall, {at}");
        // A declaration past the device's limit refuses every launch, with the limit.
        let err = declared_too_much.launch(1, 32, &mut out).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidLaunch {
                    reason: LaunchError::TooMuchSharedMemory { .. },
                    ..
                }
            ),
            "{err}, {at}"
        );
        assert!(declared_too_much.forall(1, &mut out).is_err(), "{at}");
    }
}

#[test]
fn dynamic_shared_memory_is_sized_at_launch() {
    for dev in backends() {
        let data: Vec<f64> = (0..300).map(|i| i as f64).collect();
        let mut d = dev.to_device(&data).unwrap();
        let cfg = LaunchConfig::new(3, 100).unwrap().shared_bytes(100 * 8);
        reverse_dynamic.launch_with(cfg, &mut d).unwrap();
        let got = d.to_vec().unwrap();
        assert_eq!(got[0], 99.0);
        assert_eq!(got[100], 199.0);
        assert_eq!(got[299], 200.0);
    }
}

#[test]
fn structs_without_padding_live_in_shared_memory_and_uncleared_arrays() {
    for dev in backends() {
        let pairs: Vec<Pair> = (0..101)
            .map(|i| Pair {
                n: i,
                x: i as f32 * 0.5,
            })
            .collect();
        let mut d = dev.empty::<Pair, _>(pairs.len()).unwrap();
        d.copy_from_host(&pairs[..]).unwrap();
        swap_pairs.launch(2, 64, &mut d).unwrap();
        let got = d.to_vec().unwrap();
        for (i, p) in got.iter().enumerate() {
            // The last pair has no neighbour and stays.
            let j = if i ^ 1 < pairs.len() { i ^ 1 } else { i };
            assert_eq!(*p, pairs[j], "element {i}");
        }
    }
}

#[test]
fn struct_parameters_device_functions_and_math() {
    for dev in backends() {
        let p = Affine {
            a: 2.0,
            b: 1.0,
            on: true,
        };
        let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f32, _>(100).unwrap();
        saxpy_params.launch(4, 32, (p, &dx, &mut out)).unwrap();
        let expect: Vec<f32> = x.iter().map(|&v| apply(p, v)).collect();
        assert_eq!(out.to_vec().unwrap(), expect);
        assert_eq!(apply(p, 3.0), 7.0); // a device function called from host code

        let x: Vec<f64> = (0..50).map(|i| i as f64 * 0.1 - 2.0).collect();
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f64, _>(50).unwrap();
        math_chain.launch(2, 32, (&dx, &mut out)).unwrap();
        for (v, o) in x.iter().zip(out.to_vec().unwrap()) {
            let e = v.sin() * v.cos() + v.abs().sqrt() + v.exp().ln() + v.powi(3) - v.powf(2.0)
                + v.atan2(1.0)
                + v.hypot(2.0)
                + kernel_runtime::math::erf(*v)
                + v.floor()
                + v.ceil()
                + v.tanh()
                + v.mul_add(2.0, 1.0);
            assert!((o - e).abs() < 1e-9 * (1.0 + e.abs()), "{v}: {o} vs {e}");
        }

        // The rest of Numba's `math`: the same functions as the host's, within rounding on a
        // GPU (the CPU backend calls the host's).
        let mut out = dev.zeros::<f64, _>((50, 12)).unwrap();
        math_more.launch(2, 32, (&dx, &mut out)).unwrap();
        let out = out.to_host().unwrap();
        for (i, &v) in x.iter().enumerate() {
            let expect = more_math(v);
            for (k, e) in expect.into_iter().enumerate() {
                let o = out[[i, k]];
                let same = o == e || (o.is_nan() && e.is_nan());
                assert!(
                    same || (o - e).abs() <= 1e-12 * (1.0 + e.abs()),
                    "{v}, function {k}: {o} vs {e}"
                );
            }
            // frexp and modf give back what they split.
            assert_eq!(
                (
                    expect[8] * 2f64.powi(expect[9] as i32),
                    expect[10] + expect[11]
                ),
                (v, v)
            );
        }
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut out = dev.zeros::<f32, _>(50).unwrap();
        math_more_f32
            .launch(2, 32, (&dev.to_device(&x32).unwrap(), &mut out))
            .unwrap();
        for (&v, o) in x32.iter().zip(out.to_vec().unwrap()) {
            use kernel_runtime::math;
            let e = math::gamma(v)
                + math::lgamma(v)
                + v.asinh()
                + math::remainder(v, 0.75)
                + v * 4.0
                + math::frexp(v).0
                + v.trunc();
            let same = o == e || (o.is_nan() && e.is_nan());
            assert!(
                same || (o - e).abs() <= 1e-5 * (1.0 + e.abs()),
                "{v}: {o} vs {e}"
            );
        }

        let x = Array3::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 20 + j * 5 + k) as f32);
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f32, _>((3, 4, 5)).unwrap();
        scale3
            .launch((1, 1, 1), (5, 4, 3), (&dx, 0.5, &mut out))
            .unwrap();
        assert_eq!(out.to_host().unwrap(), x.mapv(|v| v * 0.5));
    }
}

#[test]
fn out_of_bounds_is_reported_with_array_index_shape_block_and_thread() {
    for dev in backends()
        .into_iter()
        .filter(|d| d.kind() == DeviceKind::Cpu)
    {
        let x = dev.to_device(&vec![1.0f32; 100]).unwrap();
        let mut out = dev.zeros::<f32, _>(1).unwrap();
        let err = off_by_one.launch(4, 32, (&x, &mut out)).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(
                err,
                kernel_runtime::Error::KernelFault {
                    kernel: "off_by_one",
                    ..
                }
            ),
            "{msg}"
        );
        assert_mentions(
            &msg,
            &[
                "`off_by_one`",
                "array `x`",
                "[100]",
                "shape [100]",
                "block (3, 0, 0)",
                "thread (4, 0, 0)",
            ],
        );
        // Without checks the in-bounds kernel runs the same.
        let mut out = dev.zeros::<f32, _>(100).unwrap();
        unchecked_copy.launch(4, 32, (&x, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![1.0; 100]);
    }
}

#[test]
fn out_of_bounds_is_reported_when_arrays_share_a_shape() {
    for dev in backends()
        .into_iter()
        .filter(|d| d.kind() == DeviceKind::Cpu)
    {
        // Same shapes: the CPU backend runs its shared-extent version, which must still check
        // the index that the kernel's guard does not cover.
        let x = dev.to_device(&vec![1.0f32; 100]).unwrap();
        let mut out = dev.zeros::<f32, _>(100).unwrap();
        let msg = pair_sum
            .launch(4, 32, (&x, &mut out))
            .unwrap_err()
            .to_string();
        assert_mentions(
            &msg,
            &[
                "`pair_sum`",
                "array `x`",
                "[100]",
                "block (3, 0, 0)",
                "thread (3, 0, 0)",
            ],
        );
        // A longer input: every index is in bounds.
        let x = dev
            .to_device(&(0..101).map(|v| v as f32).collect::<Vec<_>>())
            .unwrap();
        pair_sum.launch(4, 32, (&x, &mut out)).unwrap();
        let want: Vec<f32> = (0..100).map(|i| (2 * i + 1) as f32).collect();
        assert_eq!(out.to_vec().unwrap(), want);
    }
}

#[test]
fn grid_level_kernels_cover_every_thread_and_report_faults_past_the_arrays() {
    for dev in backends() {
        for &n in AWKWARD {
            for threads in [1u32, 32, 256, 1024] {
                // A grid of more threads than elements: the guard stops the extra threads.
                let cfg = LaunchConfig::cover(n + 3 * threads as usize, threads).unwrap();
                let size = cfg.grid.x as u64 * threads as u64;
                let mut ids = dev.zeros::<u64, _>(n).unwrap();
                global_ids.launch_with(cfg, (n, &mut ids)).unwrap();
                let want: Vec<u64> = (0..n as u64).map(|i| i * size).collect();
                assert_eq!(ids.to_vec().unwrap(), want, "n={n} threads={threads}");
            }
        }
    }
    for dev in backends()
        .into_iter()
        .filter(|d| d.kind() == DeviceKind::Cpu)
    {
        // The guard lets the threads past the array's end through: the first of them faults.
        let mut ids = dev.zeros::<u64, _>(70_000).unwrap();
        let msg = global_ids
            .launch(1000, 128, (70_010, &mut ids))
            .unwrap_err()
            .to_string();
        assert_mentions(
            &msg,
            &[
                "`global_ids`",
                "array `ids`",
                "[70000]",
                "block (546, 0, 0)",
                "thread (112, 0, 0)",
            ],
        );
    }
}

#[test]
fn zero_dimensional_arrays_hold_a_kernels_scalar_results() {
    for dev in backends() {
        for &n in AWKWARD {
            let x: Vec<u64> = (1..=n as u64).collect();
            let dx = dev.to_device(&x).unwrap();
            let mut total = dev.zeros::<u64, _>(()).unwrap();
            let mut first = dev.to_device(&ndarray::arr0(9u64)).unwrap();
            total_into_scalar
                .forall(n, (&dx, &mut total, &mut first))
                .unwrap();
            let n = n as u64;
            assert_eq!(total.value().unwrap(), n * (n + 1) / 2, "{:?}", dev.kind());
            assert_eq!(first.value().unwrap(), 1);
            assert_eq!(total.to_host().unwrap(), ndarray::arr0(n * (n + 1) / 2));
        }
    }
}

#[test]
fn forall_launches_a_thread_per_task_on_every_backend() {
    for dev in backends() {
        for &n in AWKWARD {
            let mut ids = dev.zeros::<u32, _>(n).unwrap();
            let mut sizes = dev.zeros::<u32, _>(n).unwrap();
            grid1_ids.forall(n, (&mut ids, &mut sizes)).unwrap();
            assert_eq!(ids.to_vec().unwrap(), (0..n as u32).collect::<Vec<_>>());
            let threads = sizes.to_vec().unwrap()[0] as usize;
            assert!(
                threads >= n && threads.is_multiple_of(32),
                "n = {n}: {threads} threads"
            );
        }
        // No task, no launch: the array keeps its values.
        let mut ids = dev.to_device(&[7u32; 4][..]).unwrap();
        let mut sizes = dev.zeros::<u32, _>(4).unwrap();
        grid1_ids.forall(0, (&mut ids, &mut sizes)).unwrap();
        assert_eq!(ids.to_vec().unwrap(), vec![7; 4]);
        // A scalar argument passes as in `launch`.
        let mut out = dev.zeros::<u64, _>(1000).unwrap();
        global_ids.forall(1000, (1000, &mut out)).unwrap();
        let last = out.to_vec().unwrap()[999];
        assert!(last >= 999 * 1000 && last.is_multiple_of(999), "{last}");
    }
}

#[test]
fn guarded_grid_level_kernels_run_exactly_the_threads_their_guard_lets_through() {
    // Rows of every length: within a block, across blocks, longer than one task's chunk.
    let shapes = [(1, 1, 1), (2, 3, 5), (3, 4, 37), (1, 2, 70_001)];
    for dev in backends() {
        for &(nz, ny, nx) in &shapes {
            for (lo, pad) in [(0, 0), (1, 1), (2, 3), (nx, 0)] {
                let mut out = dev.zeros::<u32, _>((nz, ny, nx)).unwrap();
                let threads = (32u32, 2u32, 2u32);
                let blocks = (
                    (nx as u32 + 5).div_ceil(threads.0),
                    (ny as u32).div_ceil(threads.1) + 1,
                    (nz as u32).div_ceil(threads.2),
                );
                guarded_marks
                    .launch(blocks, threads, (lo, pad, &mut out))
                    .unwrap();
                let want = Array3::from_shape_fn((nz, ny, nx), |(z, _, x)| {
                    u32::from(lo <= x && x + pad < nx) * (1 + z as u32)
                });
                assert_eq!(
                    out.to_host().unwrap(),
                    want,
                    "{nz}x{ny}x{nx} lo={lo} pad={pad}"
                );
            }
        }
    }
}

#[test]
fn every_spelling_of_a_stencils_guard_runs_the_same_threads_with_index_checks() {
    type Args<'a> = (
        &'a DeviceArray<u32, ndarray::Ix2>,
        &'a mut DeviceArray<u32, ndarray::Ix2>,
    );
    type RowSums = fn((u32, u32), Args<'_>);
    // Each spelling, and the least row length for which it does not overflow.
    let kernels: [(&str, usize, RowSums); 6] = [
        ("plus", 0, |b, a| {
            row_sums_plus.launch(b, (32, 4), a).unwrap()
        }),
        ("nested", 0, |b, a| {
            row_sums_nested.launch(b, (32, 4), a).unwrap()
        }),
        ("early", 0, |b, a| {
            row_sums_early.launch(b, (32, 4), a).unwrap()
        }),
        ("minus", 1, |b, a| {
            row_sums_minus.launch(b, (32, 4), a).unwrap()
        }),
        ("mirrored", 1, |b, a| {
            row_sums_mirrored.launch(b, (32, 4), a).unwrap()
        }),
        ("le", 2, |b, a| row_sums_le.launch(b, (32, 4), a).unwrap()),
    ];
    let mut rng = SplitMix64(11);
    for dev in backends() {
        // Rows shorter than a block, across blocks; a grid wider than the rows.
        for (n, m) in [(3, 0), (5, 1), (4, 2), (9, 3), (12, 40), (7, 255), (3, 300)] {
            let x = Array2::from_shape_fn((n, m), |_| rng.next_u64() as u32 % 1000);
            let want = Array2::from_shape_fn((n, m), |(i, j)| {
                if 1 <= j && j + 1 < m {
                    x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]]
                } else {
                    0
                }
            });
            let blocks = (m.div_ceil(32) as u32 + 1, n.div_ceil(4) as u32);
            for (name, least, kernel) in kernels {
                if m < least {
                    continue;
                }
                let dx = dev.to_device(&x).unwrap();
                let mut out = dev.zeros::<u32, _>((n, m)).unwrap();
                kernel(blocks, (&dx, &mut out));
                assert_eq!(out.to_host().unwrap(), want, "{name}, {n}x{m}, {dev:?}");
            }
        }
    }
}

#[test]
fn an_access_past_a_guarded_span_faults_at_its_thread() {
    for dev in backends()
        .into_iter()
        .filter(|d| d.kind() == DeviceKind::Cpu)
    {
        let x = dev.zeros::<u32, _>((3, 40)).unwrap();
        let mut out = dev.zeros::<u32, _>((3, 40)).unwrap();
        let msg = row_sums_overreach
            .launch((2, 1), (32, 4), (&x, &mut out))
            .unwrap_err()
            .to_string();
        // Thread x 38 of some row, which reads column 40; block 1 holds x 32..64.
        assert_mentions(
            &msg,
            &[
                "`row_sums_overreach`",
                "array `x`",
                ", 40]",
                "block (1, 0, 0)",
                "thread (6, ",
            ],
        );
    }
}

#[test]
fn a_fault_in_a_row_of_a_2d_grid_names_its_block_and_thread() {
    for dev in backends()
        .into_iter()
        .filter(|d| d.kind() == DeviceKind::Cpu)
    {
        let mut out = dev.zeros::<u32, _>((5, 100)).unwrap();
        let msg = row_two_overruns
            .launch((4, 2), (32, 4), &mut out)
            .unwrap_err()
            .to_string();
        assert_mentions(
            &msg,
            &[
                "`row_two_overruns`",
                "array `out`",
                "[2, 100]",
                "block (3, 0, 0)",
                "thread (4, 2, 0)",
            ],
        );
    }
}

#[test]
fn out_of_bounds_in_a_split_kernel_names_the_thread() {
    for dev in backends()
        .into_iter()
        .filter(|d| d.kind() == DeviceKind::Cpu)
    {
        const { assert!(tile_overrun::META.split) };
        let mut out = dev.zeros::<f32, _>((16, 16)).unwrap();
        let msg = tile_overrun
            .launch(1, (16, 16), &mut out)
            .unwrap_err()
            .to_string();
        assert_mentions(
            &msg,
            &[
                "array `tile`",
                "[0, 16]",
                "block (0, 0, 0)",
                "thread (15, 0, 0)",
            ],
        );
    }
}

#[test]
fn locals_keep_their_values_across_barriers() {
    for dev in backends() {
        for (blocks, n) in [(1, 64), (3, 150)] {
            let mut out = dev.zeros::<u32, _>(n).unwrap();
            locals_across_barrier
                .launch(blocks, 64, (7, &mut out))
                .unwrap();
            let want: Vec<u32> = (0..n as u32)
                .map(|i| {
                    let t = i % 64;
                    (7 + 63 - t) + (7 + t) + 107
                })
                .collect();
            assert_eq!(out.to_vec().unwrap(), want, "{dev:?}, n = {n}");
        }
    }
}

/// What `uniform_steps` writes for `blocks` blocks of `width` threads (0 for the threads that
/// leave early).
fn uniform_steps_reference(blocks: usize, width: usize, limit: u32) -> Vec<u32> {
    let mut out = vec![0; blocks * width];
    for b in 0..blocks {
        let mut s: Vec<u32> = (0..width).map(|t| (t + b) as u32).collect();
        let mut acc = s.clone();
        let mut step = 1u32;
        for round in 0..4 {
            let scale = step + round;
            for (t, a) in acc.iter_mut().enumerate() {
                *a = a
                    .wrapping_mul(3)
                    .wrapping_add(s[(t + step as usize) % width].wrapping_mul(scale));
                *a ^= step * 2 + round;
            }
            step = step * 2 + round;
            s.clone_from(&acc);
        }
        while step < limit {
            step += step / 2 + 1;
        }
        for t in (0..width).filter(|t| t % 3 != 2) {
            out[b * width + t] = acc[t].wrapping_add(step);
        }
    }
    out
}

#[test]
fn block_uniform_locals_keep_every_thread_in_step() {
    const { assert!(uniform_steps::META.split) };
    for dev in backends() {
        for (blocks, width, limit) in [(1, 64, 0), (3, 48, 1000), (2, 7, 70_000)] {
            let mut out = dev.zeros::<u32, _>(blocks * width).unwrap();
            uniform_steps
                .launch(blocks, width, (limit, &mut out))
                .unwrap();
            let want = uniform_steps_reference(blocks, width, limit);
            assert_eq!(out.to_vec().unwrap(), want, "{dev:?}, {blocks} x {width}");
        }
    }
}

#[test]
fn uniform_statements_run_only_for_threads_still_there() {
    const { assert!(uniform_after_return::META.split) };
    for dev in backends() {
        let table = dev.to_device(&[5u32, 6, 7]).unwrap();
        let mut out = dev.zeros::<u32, _>(32).unwrap();
        // Every thread leaves before the read past the end of `table`.
        uniform_after_return
            .launch(1, 32, (1, 0, &table, &mut out))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![1; 32], "{dev:?}");
        uniform_after_return
            .launch(1, 32, (0, 0, &table, &mut out))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![8; 32], "{dev:?}");
        if dev.kind() != DeviceKind::Cpu {
            continue;
        }
        // Every thread reads past the end: the first one is named.
        let msg = uniform_after_return
            .launch(1, 32, (0, 1, &table, &mut out))
            .unwrap_err()
            .to_string();
        assert_mentions(
            &msg,
            &[
                "array `table`",
                "index 3",
                "block (0, 0, 0)",
                "thread (0, 0, 0)",
            ],
        );
    }
}

#[test]
fn threads_that_leave_a_barrier_behind_count_as_arrived() {
    for dev in backends() {
        // Half of each block skips the barrier and leaves; the others pass it, as on a GPU.
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        divergent_barrier
            .launch(1, 64, &mut out)
            .unwrap_or_else(|e| panic!("{:?}: {e}", dev.kind()));
        assert_eq!(out.to_vec().unwrap(), [1; 64], "{:?}", dev.kind());
    }
}

#[test]
fn split_kernels_report_divergence_and_keep_locals_across_barriers() {
    // The CPU backend splits these kernels at their barriers.
    const {
        assert!(matmul_tiled::META.split && integrate2d_shared::META.split);
        assert!(early_exit_before_barrier::META.split);
        assert!(nonuniform_barrier_while::META.split);
        assert!(!divergent_barrier::META.split && !barrier_reductions::META.split);
    };
    for dev in backends() {
        let mut d = dev.zeros::<u32, _>(64).unwrap();
        exit_after_last_barrier.launch(1, 64, &mut d).unwrap();
        let got = d.to_vec().unwrap();
        for t in 0..64u32 {
            let expect = if t % 2 == 1 {
                0
            } else {
                (0..4).map(|r| (t + 1) % 64 + r).sum()
            };
            assert_eq!(got[t as usize], expect, "t={t}");
        }
        // The upper half of the block returns before the barrier: the lower half passes it.
        let mut e = dev.zeros::<u32, _>(64).unwrap();
        early_exit_before_barrier.launch(1, 64, &mut e).unwrap();
        let want: Vec<u32> = (0..64).map(|t| u32::from(t < 32)).collect();
        assert_eq!(e.to_vec().unwrap(), want, "{:?}", dev.kind());
        if dev.kind() != DeviceKind::Cpu {
            continue;
        }
        for msg in [
            nonuniform_barrier_loop.launch(1, 8, &mut d),
            nonuniform_barrier_while.launch(1, 8, &mut d),
        ] {
            assert_mentions(
                &msg.unwrap_err().to_string(),
                &[
                    "divergent barrier",
                    "threads (0, 0, 0) and (1, 0, 0) disagree",
                    "test_kernels.rs",
                ],
            );
        }
    }
}

#[test]
fn launch_bounds_refuse_larger_blocks_and_size_a_forall() {
    for dev in backends() {
        let mut sizes = dev.zeros::<u32, _>(1000).unwrap();
        bounded_block_sizes.launch(8, 128, (&mut sizes, 1)).unwrap();
        let err = bounded_block_sizes
            .launch(4, (16, 16), (&mut sizes, 1))
            .unwrap_err();
        assert!(
            matches!(
                &err,
                kernel_runtime::Error::InvalidLaunch {
                    kernel: "bounded_block_sizes",
                    reason: LaunchError::PastLaunchBounds {
                        threads: 256,
                        bound: 128,
                        ..
                    },
                }
            ),
            "{err}"
        );
        assert_mentions(
            &err.to_string(),
            &["256 threads", "launch_bounds allow 128"],
        );
        bounded_block_sizes.forall(1000, (&mut sizes, 1)).unwrap();
        let sizes = sizes.to_host().unwrap();
        assert!(
            sizes.iter().all(|&b| (1..=128).contains(&b)),
            "{:?}",
            dev.kind()
        );
    }
}

#[test]
fn cuda_math_api_functions_match_the_host() {
    let x: Vec<f64> = (0..64)
        .map(|i| i as f64 * 0.37 - 9.0)
        .chain([0.0, 2.0, -3.5])
        .collect();
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    for dev in backends() {
        // The CPU backend runs the host's code; a GPU's sin and cos are its own (within 2 ulps).
        let tolerance = if matches!(dev.kind(), DeviceKind::Cuda(_)) {
            1e-12
        } else {
            0.0
        };
        let mut out = dev.zeros::<f64, _>((x.len(), CUDA_MATH)).unwrap();
        cuda_math_all
            .launch(3, 32, (&dev.to_device(&x).unwrap(), &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        for (i, &v) in x.iter().enumerate() {
            for (k, e) in cuda_math(v).into_iter().enumerate() {
                let o = out[[i, k]];
                let same = o == e || (o.is_nan() && e.is_nan());
                assert!(
                    same || (o - e).abs() <= tolerance * (1.0 + e.abs()),
                    "{v}, {k}: {o} vs {e}"
                );
            }
        }
        let mut out = dev.zeros::<f32, _>((x.len(), CUDA_MATH)).unwrap();
        cuda_math_all
            .launch(3, 32, (&dev.to_device(&x32).unwrap(), &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        for (i, &v) in x32.iter().enumerate() {
            for (k, e) in cuda_math(v).into_iter().enumerate() {
                let o = out[[i, k]];
                let same = o == e || (o.is_nan() && e.is_nan());
                let close = (o - e).abs() <= tolerance as f32 * 1e6 * (1.0 + e.abs());
                assert!(same || close, "{v}, {k}: {o} vs {e}");
            }
        }
    }
}

/// How far CUDA's programming guide says a GPU's fast intrinsic `k` of [`fast_math`] may be
/// from the correctly rounded `want`, at `a` (and `p = |a| + 1/8`) and `y`; `ulp` over-counts
/// a unit in the last place by at most 2.
fn fast_math_error(k: usize, a: f32, y: f32, want: f32) -> f32 {
    let ulp = |v: f32| f32::EPSILON * v.abs().max(f32::MIN_POSITIVE);
    let p = a.abs() + 0.125;
    let near_one = (0.5..=2.0).contains(&p);
    let lg2 = if near_one {
        2f32.powf(-22.0)
    } else {
        2.0 * ulp(p.log2())
    };
    match k {
        0 => 2.0 * ulp(want),
        1 => (2.0 + (1.173 * a).abs().floor()) * ulp(want),
        2 => (2.0 + (2.97 * a).abs().floor()) * ulp(want),
        3 if near_one => 2f32.powf(-21.41),
        4 => lg2,
        5 if near_one => 2f32.powf(-24.0),
        3 | 5 => 3.0 * ulp(want),
        6 | 7 => 2f32.powf(-21.19),
        8 => (2f32.powf(-21.41) + want.abs() * 2f32.powf(-21.19)) / a.cos().abs() + 4.0 * ulp(want),
        9 => want * (4.0 * f32::EPSILON + std::f32::consts::LN_2 * y * lg2),
        _ => 0.0,
    }
}

#[test]
fn fastmath_bodies_run_as_written_on_the_cpu_and_close_to_it_on_a_gpu() {
    // Positive values away from the tangent's pole, where CUDA bounds its intrinsics.
    let x: Vec<f32> = (0..100).map(|i| 0.1 + i as f32 * 0.013).collect();
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for dev in backends() {
        let on_gpu = matches!(dev.kind(), DeviceKind::Cuda(_));
        let mut out = dev.zeros::<f32, _>((x.len(), FAST_OPS)).unwrap();
        fast_ops_all
            .launch(4, 32, (&dev.to_device(&x).unwrap(), &mut out))
            .unwrap();
        let mut out64 = dev.zeros::<f64, _>((x.len(), FAST_OPS)).unwrap();
        fast_ops_all
            .launch(4, 32, (&dev.to_device(&x64).unwrap(), &mut out64))
            .unwrap();
        let mut quotients = dev.zeros::<f32, _>(x.len()).unwrap();
        fast_quotients
            .launch(4, 32, (&dev.to_device(&x).unwrap(), &mut quotients))
            .unwrap();
        let (out, out64, quotients) = (
            out.to_host().unwrap(),
            out64.to_host().unwrap(),
            quotients.to_vec().unwrap(),
        );
        // The CPU backend runs the bodies as written; a GPU's `f32` is approximate, its `f64`
        // libm's.
        let (bound, bound64) = if on_gpu { (1e-5, 1e-14) } else { (0.0, 0.0) };
        for (i, &v) in x.iter().enumerate() {
            let (want, want64) = (fast_ops_of(v), fast_ops_of(v as f64));
            for k in 0..FAST_OPS {
                let (got, got64) = (out[[i, k]], out64[[i, k]]);
                assert!(
                    (got - want[k]).abs() <= bound * (1.0 + want[k].abs()),
                    "{v} {k}: {got}"
                );
                let err64 = (got64 - want64[k]).abs();
                assert!(
                    err64 <= bound64 * (1.0 + want64[k].abs()),
                    "{v} {k}: {got64}"
                );
            }
            let q = (v / 3.0 / (v + 1.0) + v.sqrt()) / 2.0;
            assert!(
                (quotients[i] - q).abs() <= bound * (1.0 + q),
                "{v}: {}",
                quotients[i]
            );
        }
        // `#[vectorize(fastmath)]` and `#[guvectorize(.., fastmath)]`.
        use kernel_suite::gufuncs::{fast_ratio, fast_rms};
        let a = dev.to_device(&x).unwrap();
        let ratios = fast_ratio.call((&a, &a)).unwrap().to_vec().unwrap();
        let rows = Array2::from_shape_fn((10, 10), |(i, j)| x[10 * i + j]);
        let rms = fast_rms.call(&dev.to_device(&rows).unwrap()).unwrap();
        for (i, &v) in x.iter().enumerate() {
            let want = fast_ratio.scalar(v, v);
            assert!(
                (ratios[i] - want).abs() <= bound * (1.0 + want),
                "{v}: {}",
                ratios[i]
            );
        }
        for (i, got) in rms.to_vec().unwrap().into_iter().enumerate() {
            let want = (rows.row(i).iter().map(|v| v * v).sum::<f32>() / 10.0).sqrt();
            assert!(
                (got - want).abs() <= bound * (1.0 + want),
                "row {i}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn cuda_fast_intrinsics_are_within_cudas_bounds_of_the_correctly_rounded_functions() {
    // `a` within [-π, π], where CUDA bounds `__sinf` and `__cosf`; `y` in [0.5, 3].
    let x: Vec<f32> = (0..200).map(|i| i as f32 * 0.0314 - 3.13).collect();
    let y: Vec<f32> = (0..200).map(|i| 0.5 + (i % 11) as f32 * 0.25).collect();
    for dev in backends() {
        let mut out = dev.zeros::<f32, _>((x.len(), FAST_MATH)).unwrap();
        let (d_x, d_y) = (dev.to_device(&x).unwrap(), dev.to_device(&y).unwrap());
        fast_math_all.launch(7, 32, (&d_x, &d_y, &mut out)).unwrap();
        let out = out.to_host().unwrap();
        let on_gpu = matches!(dev.kind(), DeviceKind::Cuda(_));
        for (i, (&a, &b)) in x.iter().zip(&y).enumerate() {
            // On the host, the same functions are the correctly rounded ones.
            for (k, want) in fast_math(a, b).into_iter().enumerate() {
                let got = out[[i, k]];
                let bound = if on_gpu {
                    fast_math_error(k, a, b, want)
                } else {
                    0.0
                };
                assert!(
                    (got - want).abs() <= bound,
                    "{:?} {k} at ({a}, {b}): {got} vs {want}",
                    dev.kind()
                );
            }
        }
    }
}

#[test]
fn the_cpu_backend_has_no_compiled_function_to_describe() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let err = capped_registers.attributes(&dev).unwrap_err();
        assert!(
            matches!(
                err,
                kernel_runtime::Error::NoGpuFunction {
                    kernel: "capped_registers",
                    ..
                }
            ),
            "{err}"
        );
        assert_mentions(&err.to_string(), &["capped_registers", "Device::cuda(0)"]);
    }
    for dev in backends()
        .into_iter()
        .filter(|d| matches!(d.kind(), DeviceKind::Cuda(_)))
    {
        let a = capped_registers.attributes(&dev).unwrap();
        assert!(a.registers <= 32 && a.max_threads_per_block >= 32, "{a:?}");
    }
}

#[test]
fn a_register_cap_changes_no_result() {
    let x: Vec<f64> = (0..1000).map(|i| i as f64 * 0.013 - 6.0).collect();
    let want: Vec<f64> = x
        .iter()
        .map(|&v| v.exp() * v.sin() + v.cos() / (1.0 + v.tan().abs()) + v.cbrt())
        .collect();
    for dev in backends() {
        let mut d = dev.to_device(&x).unwrap();
        capped_registers.launch(8, 128, &mut d).unwrap();
        for (g, w) in d.to_vec().unwrap().iter().zip(&want) {
            // The GPU's functions are within a few ulps of the host's; the CPU's are the host's.
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "{:?}: {g} vs {w}",
                dev.kind()
            );
        }
    }
}

#[test]
fn bad_launches_are_typed_errors() {
    let dev = Device::cpu();
    let a = dev.to_device(&[1.0f32; 10]).unwrap();
    let mut c = dev.zeros::<f32, _>(10).unwrap();
    let reason = |r: Result<(), kernel_runtime::Error>| match r {
        Err(kernel_runtime::Error::InvalidLaunch {
            kernel: "add",
            reason,
        }) => reason,
        other => panic!("expected an invalid launch, got {other:?}"),
    };
    assert!(matches!(
        reason(add.launch(0, 32, (&a, &a, &mut c))),
        LaunchError::ZeroDim { .. }
    ));
    assert!(matches!(
        reason(add.launch(1, (64, 32), (&a, &a, &mut c))),
        LaunchError::TooManyThreads { .. }
    ));
    assert!(matches!(
        reason(add.launch((1, 70_000), 1, (&a, &a, &mut c))),
        LaunchError::DimTooLarge { .. }
    ));
    assert!(matches!(
        reason(add.launch(-3, 1, (&a, &a, &mut c))),
        LaunchError::DimOutOfRange { .. }
    ));
    // Past the CPU backend's opt-in limit, 227 KiB (a launch past 48 KiB opts in).
    let cfg = LaunchConfig::new(1, 32).unwrap().shared_bytes(228 * 1024);
    assert!(matches!(
        reason(add.launch_with(cfg, (&a, &a, &mut c))),
        LaunchError::TooMuchSharedMemory { .. }
    ));
    // Static shared memory counts against the limit too.
    let mut d = dev.zeros::<f64, _>(8).unwrap();
    let cfg = LaunchConfig::new(1, 8).unwrap().shared_bytes(227 * 1024);
    assert!(reverse_dynamic.launch_with(cfg, &mut d).is_ok());
    let mut d2 = dev.zeros::<i32, _>(8).unwrap();
    let cfg = LaunchConfig::new(1, 8)
        .unwrap()
        .shared_bytes(227 * 1024 - 256);
    assert!(matches!(
        reverse_in_blocks.launch_with(cfg, &mut d2),
        Err(kernel_runtime::Error::InvalidLaunch {
            reason: LaunchError::TooMuchSharedMemory {
                static_bytes: 512,
                ..
            },
            ..
        })
    ));
    assert_eq!(reverse_in_blocks::META.static_shared_bytes, 512);
    assert_eq!(matmul_tiled::META.static_shared_bytes, 2 * 16 * 16 * 4);
    const { assert!(matmul_tiled::META.barriers && !add::META.barriers) };
}

mod strided {
    use kernel_runtime::prelude::*;

    /// A grid-stride copy whose output may be shorter than its input.
    #[kernel]
    pub fn copy_strided(x: &[f32], out: &mut [f32]) {
        let n = x.len();
        let mut i = grid(1);
        while i < n {
            out[i] = x[i] + 1.0;
            i += gridsize(1);
        }
    }

    /// The same loop written with `step_by`.
    #[kernel]
    pub fn copy_step_by(x: &[f32], out: &mut [f32]) {
        for i in (grid(1)..x.len()).step_by(gridsize(1)) {
            out[i] = x[i] + 1.0;
        }
    }

    /// A 2-D grid-stride nest, rows outer, bounded by the input (the output may be smaller).
    #[kernel]
    pub fn scale_rows(a: &Array2<f32>, out: &mut Array2<f32>) {
        let (x0, y0) = grid(2);
        let (sx, sy) = gridsize(2);
        let (h, w) = a.dim();
        for y in (y0..h).step_by(sy) {
            let shift = y as f32;
            for x in (x0..w).step_by(sx) {
                out[[y, x]] = a[[y, x]] * 2.0 + shift;
            }
        }
    }

    /// The same in Numba's order, as `while` loops: the outer loop along x over the first axis.
    #[kernel]
    pub fn scale_numba_order(a: &Array2<f32>, out: &mut Array2<f32>) {
        let (x, y) = grid(2);
        let (gx, gy) = gridsize(2);
        let mut i = x;
        while i < a.dim().0 {
            let mut j = y;
            while j < a.dim().1 {
                out[[i, j]] = a[[i, j]] * 2.0 + i as f32;
                j += gy;
            }
            i += gx;
        }
    }

    /// A nest whose inner bound follows the outer index: the lower triangle, diagonal included.
    #[kernel]
    pub fn lower_triangle(out: &mut Array2<u32>) {
        for y in (grid(2).1..out.dim().0).step_by(gridsize(2).1) {
            for x in (grid(2).0..(y + 1).min(out.dim().1)).step_by(gridsize(2).0) {
                out[[y, x]] += 1;
            }
        }
    }
}

#[test]
fn two_axis_grid_stride_nests_run_once_per_index_and_name_the_thread_of_a_fault() {
    for dev in backends() {
        let (h, w) = (37, 301);
        let a = Array2::from_shape_fn((h, w), |(y, x)| (y * w + x) as f32);
        let da = dev.to_device(&a).unwrap();
        let want = Array2::from_shape_fn((h, w), |(y, x)| a[[y, x]] * 2.0 + y as f32);
        let triangle = Array2::from_shape_fn((h, w), |(y, x)| u32::from(x <= y));
        // Grids smaller and larger than the array along each axis; one extends along z, whose
        // threads all walk the array (the same values again: a race checked mode reports).
        let mut shapes = vec![
            ((2, 3, 1), (32, 4, 1)),
            ((20, 20, 1), (16, 2, 1)),
            ((1, 1, 1), (1, 1, 1)),
            ((1, 50, 1), (64, 1, 1)),
        ];
        if dev.kind() != DeviceKind::CpuChecked {
            shapes.push(((2, 2, 2), (8, 4, 1)));
        }
        for (blocks, threads) in shapes {
            let at = format!("{:?} {blocks:?} {threads:?}", dev.kind());
            let mut out = dev.zeros::<f32, _>((h, w)).unwrap();
            strided::scale_rows
                .launch(blocks, threads, (&da, &mut out))
                .unwrap();
            assert_eq!(out.to_host().unwrap(), want, "{at}");
            let mut out = dev.zeros::<f32, _>((h, w)).unwrap();
            strided::scale_numba_order
                .launch(
                    (blocks.1, blocks.0, 1),
                    (threads.1, threads.0, 1),
                    (&da, &mut out),
                )
                .unwrap();
            let numba = Array2::from_shape_fn((h, w), |(i, j)| a[[i, j]] * 2.0 + i as f32);
            assert_eq!(out.to_host().unwrap(), numba, "{at}");
            if blocks.2 == 1 {
                let mut out = dev.zeros::<u32, _>((h, w)).unwrap();
                strided::lower_triangle
                    .launch(blocks, threads, &mut out)
                    .unwrap();
                assert_eq!(out.to_host().unwrap(), triangle, "{at}");
            }
        }
        if dev.kind() != DeviceKind::Cpu {
            continue;
        }
        // Rows from 30 on are past `out`: the fault names the thread of 2 x 3 blocks of
        // 32 x 4 that has the first failing index its core reached, (x % 64, y % 12).
        let mut short = dev.zeros::<f32, _>((30, w)).unwrap();
        let err = strided::scale_rows
            .launch((2, 3), (32, 4), (&da, &mut short))
            .unwrap_err()
            .to_string();
        let numbers_after = |what: &str| -> Vec<usize> {
            let at = err
                .find(what)
                .unwrap_or_else(|| panic!("{what:?} in {err}"))
                + what.len();
            err[at..]
                .split([')', ']'])
                .next()
                .unwrap()
                .split(", ")
                .map(|n| n.trim().parse().unwrap())
                .collect()
        };
        let index = numbers_after("index [");
        let (block, thread) = (numbers_after("(block ("), numbers_after("thread ("));
        let (y, x) = (index[0], index[1]);
        assert!(y >= 30 && x < w, "{err}");
        assert_eq!(block[..2], [x % 64 / 32, y % 12 / 4], "{err}");
        assert_eq!(thread[..2], [x % 32, y % 4], "{err}");
    }
}

#[test]
fn grid_stride_loops_run_once_per_index_and_name_the_thread_of_a_fault() {
    for dev in backends() {
        let x: Vec<f32> = (0..10_000).map(|v| v as f32).collect();
        let dx = dev.to_device(&x).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
        // 1-D launches of every size against the array, and one along y too, whose rows of
        // threads each walk the array (the same values again: a race checked mode reports).
        let mut shapes = vec![((3, 1), (64, 1)), ((100, 1), (128, 1)), ((1, 1), (1, 1))];
        if dev.kind() != DeviceKind::CpuChecked {
            shapes.push(((2, 2), (32, 2)));
        }
        for (blocks, threads) in shapes {
            let mut out = dev.zeros::<f32, _>(x.len()).unwrap();
            strided::copy_strided
                .launch(blocks, threads, (&dx, &mut out))
                .unwrap();
            assert_eq!(out.to_vec().unwrap(), want, "{:?} {blocks:?}", dev.kind());
            let mut out = dev.zeros::<f32, _>(x.len()).unwrap();
            strided::copy_step_by
                .launch(blocks, threads, (&dx, &mut out))
                .unwrap();
            assert_eq!(out.to_vec().unwrap(), want, "{:?} {blocks:?}", dev.kind());
        }
        if dev.kind() != DeviceKind::Cpu {
            continue;
        }
        // Indices from 1000 on are past `out`; the cores run parts of the indices at once, so
        // any of them may be the one reported, with the thread of 3 blocks of 64 that has it:
        // index k, thread k % 192.
        let mut short = dev.zeros::<f32, _>(1000).unwrap();
        let err = strided::copy_strided
            .launch(3, 64, (&dx, &mut short))
            .unwrap_err()
            .to_string();
        let number_after = |what: &str| -> usize {
            let at = err
                .find(what)
                .unwrap_or_else(|| panic!("{what:?} in {err}"))
                + what.len();
            let digits: String = err[at..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap()
        };
        let (k, block, thread) = (
            number_after("index "),
            number_after("(block ("),
            number_after("thread ("),
        );
        assert!(k >= 1000, "{err}");
        assert_eq!((block, thread), (k % 192 / 64, k % 64), "{err}");
    }
}

#[test]
fn cudas_vector_types_are_array_elements_read_whole() {
    use kernel_runtime::vector::{F32x4, F64x2, U8x4};
    let n = 1000usize;
    let x: Vec<f32> = (0..4 * n).map(|i| (i % 97) as f32 - 40.0).collect();
    let b: Vec<U8x4> = (0..n)
        .map(|i| U8x4::from([i as u8, (i >> 2) as u8, 255, 0]))
        .collect();
    let d: Vec<F64x2> = (0..n).map(|i| F64x2::new(i as f64, 0.5)).collect();
    // Small whole numbers: exact whether or not `x * a + b` is fused.
    let want: Vec<F32x4> = x
        .chunks(4)
        .zip(&b)
        .map(|(v, p)| {
            F32x4::from([v[0], v[1], v[2], v[3]]) * 3.0 + F32x4::from(p.to_array().map(f32::from))
        })
        .collect();
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        // CUDA's `(float4 *)x`: the floats' array seen as vectors, no copy on a GPU.
        let x4 = dev.to_device(&x).unwrap().reinterpret::<F32x4>().unwrap();
        let (db, dd) = (dev.to_device(&b).unwrap(), dev.to_device(&d).unwrap());
        let mut out = dev.zeros::<F32x4, _>(n).unwrap();
        let mut dout = dev.zeros::<F64x2, _>(n).unwrap();
        vector_mix
            .launch(
                n.div_ceil(128),
                128,
                (3.0f32, &x4, &db, &dd, &mut out, &mut dout),
            )
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), want, "{at}");
        let dout = dout.to_vec().unwrap();
        assert_eq!(dout[999], F64x2::new(999.0, 999.5), "{at}");
        let flat = out.reinterpret::<f32>().unwrap().to_vec().unwrap();
        assert_eq!(flat.len(), 4 * n);
        assert_eq!(flat[4..8], want[1].to_array(), "{at}");
    }
}
