//! Tensor cores (`kernel_runtime::wmma`) on every backend: which lane holds which element of a
//! fragment (the PTX ISA's m16n8k16 layouts, written out here from the ISA's figures), the
//! warp's multiply-add for each shape, type and layout against a host reference within the
//! documented tolerance, the tensor-core matmul at sizes that are not multiples of its tile,
//! and a warp that does not come whole.

mod common;

use common::backends;
use kernel_runtime::ndarray::Ix2;
use kernel_runtime::prelude::*;
use kernel_runtime::wmma::Tf32;
use kernel_runtime::DeviceArray;
use kernel_suite::test_kernels::{
    fragment_places, mma_bf16_n8, mma_f16, mma_in_two_branches, mma_s8, mma_tf32, mma_u8,
    mma_without_lane_31, wgmma_from_global, wgmma_in_two_branches,
};

/// A small integer-valued pseudo-random matrix of `rows × cols` as `T`s (`f16` or `bf16` hold
/// these exactly).
fn values<T>(rows: usize, cols: usize, seed: usize, make: fn(f32) -> T) -> Array2<T> {
    Array2::from_shape_fn((rows, cols), |(i, j)| {
        let v = (i * 31 + j * 17 + seed * 7) % 23;
        make(v as f32 / 4.0 - 2.5)
    })
}

/// Asserts `got` is within the documented tolerance of the exact `a · b + c`: each element
/// within `K · 2⁻²⁴ · (|c| + Σ |aₖ bₖ|)`, `K` the depth.
#[track_caller]
fn assert_product(got: &Array2<f32>, a: &Array2<f64>, b: &Array2<f64>, c: &Array2<f64>, at: &str) {
    for ((i, j), &v) in got.indexed_iter() {
        let terms = (0..a.dim().1).map(|k| a[[i, k]] * b[[k, j]]);
        let exact: f64 = terms.clone().sum::<f64>() + c[[i, j]];
        let size: f64 = terms.map(f64::abs).sum::<f64>() + c[[i, j]].abs();
        let bound = a.dim().1 as f64 * 2f64.powi(-24) * size + 1e-30;
        assert!(
            (v as f64 - exact).abs() <= bound,
            "{at}: ({i}, {j}) is {v}, the exact value {exact} (within {bound})"
        );
    }
}

#[test]
fn each_lane_holds_the_elements_the_ptx_isa_gives_it() {
    // Element (r, c) of each tile holds r * 16 + c, so a value names its place.
    let a = Array2::from_shape_fn((16, 16), |(r, c)| f16::from_f32((r * 16 + c) as f32));
    let b = a.clone();
    let c = a.mapv(|v| v.to_f32());
    for dev in backends() {
        let mut out = dev.zeros::<f32, _>((32, 24)).unwrap();
        let (da, db, dc) = (
            dev.to_device(&a).unwrap(),
            dev.to_device(&b).unwrap(),
            dev.to_device(&c).unwrap(),
        );
        fragment_places
            .launch(1, 32, (&da, &db, &dc, &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        for lane in 0..32 {
            let (group, thread) = (lane / 4, lane % 4);
            for i in 0..8 {
                // A and the accumulator: a0, a1 in row `group`, a2, a3 eight rows down, a4..a7
                // the same eight columns right; columns `2 thread` and the next.
                let row = group + if i % 4 >= 2 { 8 } else { 0 };
                let col = 2 * thread + i % 2 + if i >= 4 { 8 } else { 0 };
                assert_eq!(
                    out[[lane, i]],
                    (row * 16 + col) as f32,
                    "A, lane {lane}, {i}"
                );
                assert_eq!(
                    out[[lane, 16 + i]],
                    (row * 16 + col) as f32,
                    "C, lane {lane}, {i}"
                );
                // B: b0, b1 in rows `2 thread` and the next, b2, b3 eight rows down, column
                // `group`; b4..b7 the same for the next eight columns.
                let row = 2 * thread + i % 2 + if i % 4 >= 2 { 8 } else { 0 };
                let col = group + if i >= 4 { 8 } else { 0 };
                assert_eq!(
                    out[[lane, 8 + i]],
                    (row * 16 + col) as f32,
                    "B, lane {lane}, {i}"
                );
            }
        }
    }
}

#[test]
fn the_warp_multiplies_f16_tiles_in_every_layout() {
    let (a16, b16) = (
        values(18, 18, 1, f16::from_f32),
        values(18, 18, 2, f16::from_f32),
    );
    let c = values(18, 18, 3, |v| v * 3.0);
    let wide = |m: &Array2<f16>| m.mapv(|v| v.to_f64());
    for dev in backends() {
        for flags in [0u32, 1, 2, 4, 8, 15] {
            let at = format!("{:?}, flags {flags}", dev.kind());
            let mut d = dev.zeros::<f32, _>((18, 18)).unwrap();
            let (da, db, dc) = (
                dev.to_device(&a16).unwrap(),
                dev.to_device(&b16).unwrap(),
                dev.to_device(&c).unwrap(),
            );
            // Two blocks of two warps: every warp multiplies, the first stores.
            mma_f16
                .launch(2, 64, (&da, &db, &dc, &mut d, flags))
                .unwrap();
            let d = d.to_host().unwrap();
            // The 16 × 16 tile at [1, 2] of each, as `flags` places it.
            let tile = |m: &Array2<f64>, bit: u32| {
                Array2::from_shape_fn((16, 16), |(i, j)| match flags & bit {
                    0 => m[[1 + i, 2 + j]],
                    _ => m[[2 + j, 1 + i]],
                })
            };
            let got = tile(&d.mapv(f64::from), 8).mapv(|v| v as f32);
            assert_product(
                &got,
                &tile(&wide(&a16), 1),
                &tile(&wide(&b16), 2),
                &tile(&c.mapv(f64::from), 4),
                &at,
            );
            // Nothing outside the tile is written.
            let outside = d
                .indexed_iter()
                .filter(|&((i, j), _)| match flags & 8 {
                    0 => !(1..17).contains(&i) || !(2..18).contains(&j),
                    _ => !(2..18).contains(&i) || !(1..17).contains(&j),
                })
                .all(|(_, &v)| v == 0.0);
            assert!(outside, "{at}");
        }
    }
}

#[test]
fn the_warp_multiplies_bf16_tiles_of_eight_columns() {
    let a = values(16, 16, 4, bf16::from_f32);
    let b = values(16, 8, 5, bf16::from_f32);
    let c = values(16, 8, 6, |v| v * 100.0);
    let wide = |m: &Array2<bf16>| m.mapv(|v| v.to_f64());
    for dev in backends() {
        let mut dc = dev.to_device(&c).unwrap();
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        mma_bf16_n8.launch(1, 32, (&da, &db, &mut dc)).unwrap();
        assert_product(
            &dc.to_host().unwrap(),
            &wide(&a),
            &wide(&b),
            &c.mapv(f64::from),
            &format!("{:?}", dev.kind()),
        );
    }
}

#[test]
fn the_warp_multiplies_tf32_tiles_rounded_as_they_load() {
    // Values that tf32 does not hold: each load rounds them.
    let a = values(16, 8, 10, |v| v + 1.0 / 3.0);
    let b = values(8, 8, 11, |v| v * 1.001);
    let c = values(16, 8, 12, |v| v * 10.0);
    let rounded = |m: &Array2<f32>| m.mapv(|v| Tf32::from_f32(v).to_f32() as f64);
    for dev in backends() {
        let mut dc = dev.to_device(&c).unwrap();
        // B is read column-major: the array holds its transpose.
        let bt = b.t().to_owned();
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&bt).unwrap());
        mma_tf32.launch(1, 32, (&da, &db, &mut dc)).unwrap();
        assert_product(
            &dc.to_host().unwrap(),
            &rounded(&a),
            &rounded(&b),
            &c.mapv(f64::from),
            &format!("{:?}", dev.kind()),
        );
    }
}

#[test]
fn the_warp_multiplies_bytes_into_exact_integers() {
    let a = Array2::from_shape_fn((16, 32), |(i, k)| ((i * 37 + k * 11) % 256) as u8);
    let b = Array2::from_shape_fn((32, 8), |(k, j)| ((k * 53 + j * 29 + 7) % 256) as u8);
    let signed = |m: &Array2<u8>| m.mapv(|v| v as i8);
    let c = Array2::from_shape_fn((16, 8), |(i, j)| (i as i32 - j as i32) * 1000);
    let product = |a: &Array2<i32>, b: &Array2<i32>, c: &Array2<i32>| {
        Array2::from_shape_fn((16, 8), |(i, j)| {
            c[[i, j]] + (0..32).map(|k| a[[i, k]] * b[[k, j]]).sum::<i32>()
        })
    };
    let (sa, sb) = (signed(&a), signed(&b));
    let want_s8 = product(&sa.mapv(i32::from), &sb.mapv(i32::from), &c);
    let want_u8 = product(
        &a.mapv(i32::from),
        &b.mapv(i32::from),
        &Array2::from_elem((16, 8), -7),
    );
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        let mut dc = dev.to_device(&c).unwrap();
        let (da, db) = (dev.to_device(&sa).unwrap(), dev.to_device(&sb).unwrap());
        mma_s8.launch(1, 32, (&da, &db, &mut dc)).unwrap();
        assert_eq!(dc.to_host().unwrap(), want_s8, "{at}");
        let mut dc = dev.to_device(&Array2::from_elem((16, 8), -7)).unwrap();
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        mma_u8.launch(1, 32, (&da, &db, &mut dc)).unwrap();
        assert_eq!(dc.to_host().unwrap(), want_u8, "{at}");
    }
}

/// The arguments of a tensor-core matmul of `E` matrices into `f32`.
type Operands<'x, E> = (
    &'x DeviceArray<E, Ix2>,
    &'x DeviceArray<E, Ix2>,
    &'x mut DeviceArray<f32, Ix2>,
);
/// A launch of a tensor-core matmul: its blocks, threads per block and arguments.
type Matmul<E> = fn((u32, u32), u32, Operands<'_, E>) -> Result<(), kernel_runtime::Error>;

/// The `f16` matmuls, each with its name and its threads per block.
fn f16_matmuls() -> [(&'static str, u32, Matmul<f16>); 3] {
    use gpu_kernels::{
        matmul_tensor, matmul_tensor_64x64, matmul_tensor_staged, TC_THREADS, TC_THREADS_64X64,
    };
    [
        ("warps of 64 x 32", TC_THREADS, |g, t, x| {
            matmul_tensor.launch(g, t, x)
        }),
        ("warps of 64 x 64", TC_THREADS_64X64, |g, t, x| {
            matmul_tensor_64x64.launch(g, t, x)
        }),
        ("warps of 64 x 64, 4 stages", TC_THREADS_64X64, |g, t, x| {
            matmul_tensor_staged.launch(g, t, x)
        }),
    ]
}

/// The `tf32` matmuls, each with its name and its threads per block.
fn tf32_matmuls() -> [(&'static str, u32, Matmul<f32>); 3] {
    use gpu_kernels::{
        matmul_tensor_tf32, matmul_tensor_tf32_64x64, matmul_tensor_tf32_staged, TC_THREADS,
        TC_THREADS_64X64,
    };
    [
        ("warps of 64 x 32", TC_THREADS, |g, t, x| {
            matmul_tensor_tf32.launch(g, t, x)
        }),
        ("warps of 64 x 64", TC_THREADS_64X64, |g, t, x| {
            matmul_tensor_tf32_64x64.launch(g, t, x)
        }),
        ("warps of 64 x 32, 4 stages of 8", TC_THREADS, |g, t, x| {
            matmul_tensor_tf32_staged.launch(g, t, x)
        }),
    ]
}

/// The staged matmul's tiles lie in dynamic shared memory that the kernel declares: a launch
/// that gives none, or less, gives it that much.
#[test]
fn the_staged_matmul_declares_its_shared_memory() {
    use gpu_kernels::{matmul_tensor_staged, TC_STAGED_SHARED_BYTES, TC_THREADS_64X64};
    use kernel_runtime::Kernel;
    assert_eq!(
        matmul_tensor_staged::META.dynamic_shared_bytes,
        TC_STAGED_SHARED_BYTES
    );
    let a = values(16, 16, 3, f16::from_f32);
    let wa = a.mapv(|v| v.to_f64());
    let zero = Array2::zeros((16, 16));
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let x = dev.to_device(&a).unwrap();
        let less = LaunchConfig::new((1, 1), TC_THREADS_64X64)
            .unwrap()
            .shared_bytes(64);
        let mut c = dev.zeros::<f32, _>((16, 16)).unwrap();
        matmul_tensor_staged
            .launch((1, 1), TC_THREADS_64X64, (&x, &x, &mut c))
            .unwrap();
        assert_product(&c.to_host().unwrap(), &wa, &wa, &zero, "launch");
        let mut c = dev.zeros::<f32, _>((16, 16)).unwrap();
        matmul_tensor_staged
            .launch_with(less, (&x, &x, &mut c))
            .unwrap();
        assert_product(
            &c.to_host().unwrap(),
            &wa,
            &wa,
            &zero,
            "launch_with 64 bytes",
        );
    }
}

/// Rows of 32 and 72 halves or floats start at multiples of 16 bytes: the kernels stage those
/// with asynchronous copies (the last past every edge of its tiles, and (130, 72, 136) whole
/// tiles too), the others with plain loads.
const SIZES: [(usize, usize, usize); 6] = [
    (37, 45, 29),
    (1, 1, 1),
    (64, 32, 64),
    (130, 70, 260),
    (130, 72, 136),
    // Seven tiles deep: the staged matmul's four buffers go round more than once.
    (33, 200, 40),
];

/// A matmul to check: its name, the rows and columns of `c` a block computes, its threads per
/// block, and its launch.
type Checked<E> = (&'static str, [usize; 2], u32, Matmul<E>);

/// The tensor-core matmuls of `gpu-kernels` (`f16_matmuls`, `tf32_matmuls`), each with its tile.
fn with_tiles<E: kernel_runtime::DeviceCopy, const N: usize>(
    matmuls: [(&'static str, u32, Matmul<E>); N],
) -> [Checked<E>; N] {
    use gpu_kernels::TC_TILE;
    matmuls.map(|(name, threads, matmul)| (name, [TC_TILE, TC_TILE], threads, matmul))
}

/// Launches each of `matmuls` over `a` and `b` on each of `devs` and checks its product against
/// the exact one of `wa` and `wb` (the inputs as the kernels multiply them), naming `kind`.
fn check_matmuls<E: kernel_runtime::DeviceCopy>(
    devs: &[Device],
    (a, b): (&Array2<E>, &Array2<E>),
    (wa, wb): (&Array2<f64>, &Array2<f64>),
    matmuls: &[Checked<E>],
    kind: &str,
) {
    let ((n, k), m) = (a.dim(), b.dim().1);
    for dev in devs {
        let (da, db) = (dev.to_device(a).unwrap(), dev.to_device(b).unwrap());
        for &(name, [rows, cols], threads, matmul) in matmuls {
            let mut c = dev.zeros::<f32, _>((n, m)).unwrap();
            let blocks = (m.div_ceil(cols) as u32, n.div_ceil(rows) as u32);
            matmul(blocks, threads, (&da, &db, &mut c)).unwrap();
            let at = format!("{kind}{name}: {n} x {k} x {m}, {:?}", dev.kind());
            assert_product(&c.to_host().unwrap(), wa, wb, &Array2::zeros((n, m)), &at);
        }
    }
}

#[test]
fn matmul_on_tensor_cores_matches_the_host_at_any_size() {
    for (n, k, m) in SIZES {
        let a = values(n, k, 7, f16::from_f32);
        let b = values(k, m, 8, f16::from_f32);
        let (wa, wb) = (a.mapv(|v| v.to_f64()), b.mapv(|v| v.to_f64()));
        let matmuls = with_tiles(f16_matmuls());
        check_matmuls(&backends(), (&a, &b), (&wa, &wb), &matmuls, "");
    }
}

/// The `tf32` kernels round each input to `tf32` and sum the products in `f32`: inputs with
/// more bits than `tf32` holds are compared with the product of their rounded values.
#[test]
fn tf32_matmul_on_tensor_cores_matches_the_rounded_host_product() {
    let fine = |rows, cols, seed| {
        values(rows, cols, seed, |v| v).mapv(|v| v * (1.0 + 1.0 / 3000.0) + 1.0 / 7.0)
    };
    for (n, k, m) in SIZES {
        let (a, b) = (fine(n, k, 3), fine(k, m, 4));
        let rounded = |x: &Array2<f32>| x.mapv(|v| Tf32::from_f32(v).to_f32() as f64);
        let (wa, wb) = (rounded(&a), rounded(&b));
        assert_ne!(wa, a.mapv(|v| v as f64), "the inputs need the rounding");
        let matmuls = with_tiles(tf32_matmuls());
        check_matmuls(&backends(), (&a, &b), (&wa, &wb), &matmuls, "tf32, ");
    }
}

/// The matmuls' tiles are cut for blocks of their threads: a launch of other blocks is an
/// error that names the threads, not a partial or doubled product; of larger ones, an invalid
/// launch (their launch bounds).
#[test]
fn the_tensor_core_matmuls_refuse_blocks_of_another_size() {
    use gpu_kernels::TC_THREADS;
    let named = |threads: u32, wrong: u32| match (wrong > threads, threads == TC_THREADS) {
        (true, true) => "launch_bounds allow 256",
        (true, false) => "launch_bounds allow 128",
        (false, true) => "blocks of TC_THREADS (256) threads",
        (false, false) => "blocks of TC_THREADS_64X64 (128) threads",
    };
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let a = dev.to_device(&values(16, 16, 3, f16::from_f32)).unwrap();
        let x = dev.to_device(&values(16, 16, 3, |v| v)).unwrap();
        let mut c = dev.zeros::<f32, _>((16, 16)).unwrap();
        for (_, threads, matmul) in f16_matmuls() {
            for wrong in [threads / 2, 2 * threads] {
                let err = matmul((1, 1), wrong, (&a, &a, &mut c)).unwrap_err();
                common::assert_mentions(&err.to_string(), &[named(threads, wrong)]);
            }
        }
        for (_, threads, matmul) in tf32_matmuls() {
            for wrong in [threads / 2, 2 * threads] {
                let err = matmul((1, 1), wrong, (&x, &x, &mut c)).unwrap_err();
                common::assert_mentions(&err.to_string(), &[named(threads, wrong)]);
            }
        }
    }
}

#[test]
fn a_warp_missing_a_lane_is_an_error_at_the_call() {
    let a = values(16, 16, 9, f16::from_f32);
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<f32, _>((16, 8)).unwrap();
        let err = mma_without_lane_31
            .launch(1, 32, (&dev.to_device(&a).unwrap(), &mut out))
            .unwrap_err()
            .to_string();
        common::assert_mentions(&err, &["mma_sync", "lane 31", "test_kernels.rs"]);
        // A partial warp has no lane 31 either.
        let err = mma_bf16_n8
            .launch(
                1,
                16,
                (
                    &dev.to_device(&values(16, 16, 1, bf16::from_f32)).unwrap(),
                    &dev.to_device(&values(16, 8, 1, bf16::from_f32)).unwrap(),
                    &mut dev.zeros::<f32, _>((16, 8)).unwrap(),
                ),
            )
            .unwrap_err()
            .to_string();
        common::assert_mentions(&err, &["mma_sync", "lane 16"]);
    }
}

#[test]
fn a_warp_divided_between_two_calls_is_reported() {
    let a = values(16, 16, 9, f16::from_f32);
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<f32, _>((16, 8)).unwrap();
        let err = mma_in_two_branches
            .launch(1, 32, (&dev.to_device(&a).unwrap(), &mut out))
            .unwrap_err()
            .to_string();
        common::assert_mentions(
            &err,
            &["mma_sync", "lane 16", "test_kernels.rs", "at one place"],
        );
    }
}

/// Asynchronous copies (`kernel_runtime::pipeline`) stage what plain loads would, zeros past
/// the edges, on every backend.
#[test]
fn async_copies_stage_rows_with_zeros_past_the_edges() {
    use kernel_suite::test_kernels::staged_async;
    let x = Array2::from_shape_fn((13, 40), |(i, j)| f16::from_f32((i * 40 + j) as f32));
    let want = Array2::from_shape_fn((16, 48), |(i, j)| {
        if i < 13 && j < 40 {
            x[[i, j]]
        } else {
            f16::ZERO
        }
    });
    for dev in backends() {
        let mut out = dev
            .to_device(&Array2::from_elem((16, 48), f16::NAN))
            .unwrap();
        staged_async
            .launch(2, 32, (&dev.to_device(&x).unwrap(), &mut out))
            .unwrap();
        let got = out.to_host().unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(g, w)| g.to_bits() == w.to_bits()),
            "{:?}",
            dev.kind()
        );
    }
}

#[test]
fn a_block_stages_a_tile_with_one_call_zeros_past_the_edges() {
    use kernel_suite::test_kernels::staged_tiles;
    // Inside (32 × 64), across the edges with rows of whole runs (37 × 72: `cp.async` with zero
    // fill; 5 × 8, smaller than a tile), and with rows that are not (37 × 70: plain loads and
    // stores).
    for (rows, cols) in [(32, 64), (37, 72), (5, 8), (37, 70)] {
        let x = Array2::from_shape_fn((rows, cols), |(i, j)| (i * cols + j) as f32 + 0.5);
        let (gy, gx) = (rows.div_ceil(16), cols.div_ceil(32));
        let want = Array2::from_shape_fn((16 * gy, 32 * gx), |(i, j)| {
            if i < rows && j < cols {
                x[[i, j]]
            } else {
                0.0
            }
        });
        for dev in backends() {
            let mut out = dev
                .to_device(&Array2::from_elem(want.dim(), f32::NAN))
                .unwrap();
            let grid = (gx as u32, gy as u32);
            staged_tiles
                .launch(grid, 64, (&dev.to_device(&x).unwrap(), &mut out))
                .unwrap();
            assert_eq!(
                out.to_host().unwrap(),
                want,
                "{rows} × {cols}, {:?}",
                dev.kind()
            );
        }
    }
}

#[test]
fn a_misplaced_tile_copy_is_an_error_at_the_call() {
    use kernel_suite::test_kernels::misplaced_tile;
    let x = Array2::<f32>::zeros((16, 32));
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let dx = dev.to_device(&x).unwrap();
        let mut y = dev.zeros::<f32, _>((16, 32)).unwrap();
        let mut run = |how| {
            misplaced_tile
                .launch(1, 64, (&dx, &mut y, how))
                .unwrap_err()
                .to_string()
        };
        common::assert_mentions(&run(0), &["`tile", "[16, 31]", "bounds", "test_kernels.rs"]);
        common::assert_mentions(&run(1), &["memcpy_async", "`tile", "multiple"]);
        common::assert_mentions(&run(2), &["memcpy_async", "`y", "shared array"]);
        common::assert_mentions(
            &run(3),
            &[
                "memcpy_async_tile",
                "has 64 threads",
                "THREADS = 32",
                "test_kernels.rs",
            ],
        );
    }
}

#[test]
fn a_misplaced_async_copy_is_an_error_at_the_call() {
    use kernel_suite::test_kernels::misplaced_async;
    let x = Array2::<f32>::zeros((2, 8));
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let dx = dev.to_device(&x).unwrap();
        let mut y = dev.zeros::<f32, _>((2, 8)).unwrap();
        let mut run = |how| {
            misplaced_async
                .launch(1, 1, (&dx, &mut y, how))
                .unwrap_err()
                .to_string()
        };
        common::assert_mentions(&run(0), &["memcpy_async", "multiple", "test_kernels.rs"]);
        common::assert_mentions(&run(1), &["memcpy_async", "not a shared array"]);
        common::assert_mentions(&run(2), &["`x", "[0, 9]", "bounds", "test_kernels.rs"]);
        common::assert_mentions(&run(3), &["memcpy_async", "`late`", "multiple"]);
    }
}

/// `ldmatrix_sync` hands each lane the elements `load_matrix_sync` does, for `A` and `B` of
/// each shape in each layout.
#[test]
fn ldmatrix_loads_what_each_lane_loads_alone() {
    use kernel_suite::test_kernels::ldmatrix_cases;
    let a = Array2::from_shape_fn((32, 32), |(r, c)| f16::from_f32((r * 32 + c) as f32));
    for dev in backends() {
        let mut out = dev
            .to_device(&Array2::from_elem((6, 32), u32::MAX))
            .unwrap();
        ldmatrix_cases
            .launch(1, 32, (&dev.to_device(&a).unwrap(), &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        assert!(out.iter().all(|&m| m == 0), "{:?}: {out:?}", dev.kind());
    }
}

/// The same for `A` of `tf32`, its `f32` elements rounded as they load, at values whose
/// rounding shows (ties among them).
#[test]
fn ldmatrix_loads_tf32_as_each_lane_loads_it_alone() {
    use kernel_suite::test_kernels::ldmatrix_tf32_cases;
    let a = Array2::from_shape_fn((32, 32), |(r, c)| {
        1.0 + (r * 32 + c) as f32 / 2048.0 + (c % 3) as f32 / 8192.0
    });
    for dev in backends() {
        let mut out = dev
            .to_device(&Array2::from_elem((3, 32), u32::MAX))
            .unwrap();
        ldmatrix_tf32_cases
            .launch(1, 32, (&dev.to_device(&a).unwrap(), &mut out))
            .unwrap();
        let out = out.to_host().unwrap();
        assert!(out.iter().all(|&m| m == 0), "{:?}: {out:?}", dev.kind());
    }
}

#[test]
fn a_misused_ldmatrix_is_an_error_at_the_call() {
    use kernel_suite::test_kernels::ldmatrix_misused;
    let a = Array2::from_elem((16, 24), f16::ONE);
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let da = dev.to_device(&a).unwrap();
        let run = |how| {
            ldmatrix_misused
                .launch(1, 32, (&da, how))
                .unwrap_err()
                .to_string()
        };
        common::assert_mentions(&run(0), &["ldmatrix_sync", "16 bytes", "test_kernels.rs"]);
        common::assert_mentions(&run(1), &["ldmatrix_sync", "`a`", "shared array"]);
        common::assert_mentions(&run(2), &["ldmatrix_sync", "lane 31", "test_kernels.rs"]);
    }
}

/// The backends that run warpgroup MMA: the CPU backends, and a GPU of exactly sm_90 (its
/// module's sm_90a variant); another GPU runs the crate's own module, where it traps.
fn warpgroup_backends() -> Vec<Device> {
    backends()
        .into_iter()
        .filter(|d| matches!(d.compute_capability(), None | Some((9, 0))))
        .collect()
}

/// A warpgroup's product on the tensor cores: `out = a · b + c` of 64 × 32 by 32 × `n`.
type WgProduct<T> = fn(
    &DeviceArray<T, Ix2>,
    &DeviceArray<T, Ix2>,
    &DeviceArray<f32, Ix2>,
    &mut DeviceArray<f32, Ix2>,
) -> Result<(), kernel_runtime::Error>;

/// Checks `product`'s `a · b + c` of 64 × 32 by 32 × `n` on every backend that runs it, the
/// inputs made by `make` (as `T`), against the exact product of the values the tensor cores
/// multiply (`exact`).
fn check_wg_product<T>(n: usize, (make, exact): Inputs<T>, product: WgProduct<T>, at: &str)
where
    T: kernel_runtime::DeviceCopy + Copy,
{
    let (a, b) = (values(64, 32, 1, make), values(32, n, 2, make));
    // Each element of `c` names its place, so that a misplaced element shows.
    let c = Array2::from_shape_fn((64, n), |(i, j)| (i * 1000 + j) as f32);
    let (wa, wb, wc) = (a.mapv(exact), b.mapv(exact), c.mapv(f64::from));
    for dev in warpgroup_backends() {
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        let dc = dev.to_device(&c).unwrap();
        let mut out = dev.zeros::<f32, _>((64, n)).unwrap();
        product(&da, &db, &dc, &mut out).unwrap();
        let at = format!("{at}, {:?}", dev.kind());
        assert_product(&out.to_host().unwrap(), &wa, &wb, &wc, &at);
    }
}

/// How a test's inputs are made from small values, and the value the tensor cores multiply.
type Inputs<T> = (fn(f32) -> T, fn(T) -> f64);

/// `f16` inputs, multiplied exactly.
const F16: Inputs<f16> = (f16::from_f32, |v| v.to_f64());

/// `f32` inputs with more bits than `tf32` holds, and the `tf32` that `wgmma` multiplies: the
/// low 13 bits of the mantissa dropped.
const TF32: Inputs<f32> = (
    |v| v * (1.0 + 1.0 / 3000.0) + 1.0 / 7.0,
    |v| f32::from_bits(v.to_bits() & !0x1fff) as f64,
);

#[test]
fn a_warpgroup_multiplies_tiles_of_every_shape() {
    use hopper_kernels::{wg_product_n128, wg_product_n64, wg_product_n8};
    let products: [(usize, WgProduct<f16>); 3] = [
        (8, |a, b, c, out| {
            wg_product_n8.launch(1, 128, (a, b, c, out))
        }),
        (64, |a, b, c, out| {
            wg_product_n64.launch(1, 128, (a, b, c, out))
        }),
        (128, |a, b, c, out| {
            wg_product_n128.launch(1, 128, (a, b, c, out))
        }),
    ];
    for (n, product) in products {
        check_wg_product(n, F16, product, &format!("m64n{n}k16"));
    }
}

#[test]
fn a_warpgroup_multiplies_bf16_tiles() {
    use hopper_kernels::wg_product_bf16_n64;
    let product: WgProduct<bf16> =
        |a, b, c, out| wg_product_bf16_n64.launch(1, 128, (a, b, c, out));
    check_wg_product(
        64,
        (bf16::from_f32, |v| v.to_f64()),
        product,
        "bf16 m64n64k16",
    );
}

#[test]
fn a_warpgroup_multiplies_f32_tiles_as_tf32_truncated() {
    use hopper_kernels::{wg_product_tf32_n64, wg_product_tf32_n8};
    let products: [(usize, WgProduct<f32>); 2] = [
        (8, |a, b, c, out| {
            wg_product_tf32_n8.launch(1, 128, (a, b, c, out))
        }),
        (64, |a, b, c, out| {
            wg_product_tf32_n64.launch(1, 128, (a, b, c, out))
        }),
    ];
    for (n, product) in products {
        check_wg_product(n, TF32, product, &format!("tf32 m64n{n}k8"));
    }
}

#[test]
fn matmul_on_warpgroup_mma_matches_the_host_at_any_size() {
    use hopper_kernels::{matmul_wgmma, matmul_wgmma_wide, WG_THREADS, WG_TILE, WG_WIDE};
    let matmuls: [Checked<f16>; 2] = [
        ("128 x 128", [WG_TILE, WG_TILE], WG_THREADS, |g, t, x| {
            matmul_wgmma.launch(g, t, x)
        }),
        ("128 x 256", [WG_TILE, WG_WIDE], WG_THREADS, |g, t, x| {
            matmul_wgmma_wide.launch(g, t, x)
        }),
    ];
    // Rows of 72 and 200 halves start at multiples of 16 bytes, staged by asynchronous copies
    // (whole tiles with no test a run, those across an edge run by run); the others by plain
    // stores. (33, 200, 40): four tiles deep, the buffers go round.
    for (n, k, m) in [(37, 45, 29), (1, 1, 1), (130, 72, 300), (33, 200, 40)] {
        let a = values(n, k, 7, f16::from_f32);
        let b = values(k, m, 8, f16::from_f32);
        let (wa, wb) = (a.mapv(|v| v.to_f64()), b.mapv(|v| v.to_f64()));
        check_matmuls(&warpgroup_backends(), (&a, &b), (&wa, &wb), &matmuls, "");
    }
}

#[test]
fn tf32_matmul_on_warpgroup_mma_matches_the_truncated_host_product() {
    use hopper_kernels::{matmul_wgmma_tf32, WG_THREADS, WG_TILE};
    let matmuls: [Checked<f32>; 1] = [("tf32", [WG_TILE, WG_TILE], WG_THREADS, |g, t, x| {
        matmul_wgmma_tf32.launch(g, t, x)
    })];
    // Rows of 72 and 200 floats start at multiples of 16 bytes; `b`'s tiles, transposed, go
    // element by element, whole (no test) or across an edge (each tested).
    let (make, exact) = TF32;
    for (n, k, m) in [(37, 45, 29), (1, 1, 1), (130, 72, 300), (33, 200, 40)] {
        let (a, b) = (values(n, k, 7, make), values(k, m, 8, make));
        let (wa, wb) = (a.mapv(exact), b.mapv(exact));
        check_matmuls(&warpgroup_backends(), (&a, &b), (&wa, &wb), &matmuls, "");
    }
}

#[test]
fn a_warpgroup_divided_between_two_calls_or_cut_short_is_an_error_at_the_call() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<f32, _>((64, 8)).unwrap();
        let err = wgmma_in_two_branches
            .launch(1, 128, &mut out)
            .unwrap_err()
            .to_string();
        common::assert_mentions(
            &err,
            &[
                "wgmma::mma_async",
                "lane 16",
                "test_kernels.rs",
                "at one place",
            ],
        );
        let err = wgmma_in_two_branches
            .launch(1, 96, &mut out)
            .unwrap_err()
            .to_string();
        common::assert_mentions(&err, &["wgmma::fence", "96 threads", "multiple of 128"]);
    }
}

#[test]
fn warpgroup_operands_outside_shared_memory_are_an_error_at_the_call() {
    let a = values(128, 8, 3, f16::from_f32);
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<f32, _>((64, 8)).unwrap();
        let err = wgmma_from_global
            .launch(1, 128, (&dev.to_device(&a).unwrap(), &mut out))
            .unwrap_err()
            .to_string();
        common::assert_mentions(
            &err,
            &[
                "wgmma::mma_async",
                "shared array of 8 columns",
                "test_kernels.rs",
            ],
        );
    }
}
