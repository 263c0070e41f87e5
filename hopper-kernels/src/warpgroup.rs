//! matmul on Hopper's warpgroup MMA (`kernel_runtime::wgmma`): `c = a @ b` for `f16` matrices,
//! and for `f32` ones as `tf32`, into `f32`, any sizes; and one warpgroup's product of a tile,
//! for each accumulator shape.
//!
//! A block of [`WG_THREADS`] threads, two warpgroups, computes a tile of `c` 128 rows high,
//! each warpgroup 64 rows of it in one accumulator: 128 columns wide in [`matmul_wgmma`]
//! (`m64n128k16`) and [`matmul_wgmma_tf32`] (`m64n128k8`), 256 in [`matmul_wgmma_wide`]
//! (`m64n256k16`), whose tiles of `a` and `b` serve a third more products for each byte
//! staged. The block stages `a`'s and `b`'s tiles 128 bytes deep ([`WG_DEPTH`] halves,
//! [`WG_TF32_DEPTH`] floats) into [`WG_STAGES`] buffers of dynamic shared memory, laid out as
//! the tensor cores read them (`stage_a`, `stage_b`; a `tf32` `b` transposed): two tiles'
//! copies fly while the warpgroups multiply a third, and the fourth buffer is still read by a
//! warpgroup's product in flight.
//!
//! `wgmma` runs on sm_90a alone: this crate's build adds an sm_90a variant of its module
//! (`build.rs`), which the runtime loads on an H100 or H200. Another GPU runs the crate's own
//! module, where these kernels trap; the CPU backend runs them everywhere.

use core::ops::{Index, IndexMut};
use kernel_runtime::pipeline::{pipeline_commit, pipeline_wait_prior, Source};
use kernel_runtime::prelude::*;
use kernel_runtime::view::{View1Mut, View2Mut};
use kernel_runtime::wgmma::*;

/// Threads per block of the warpgroup matmuls: two warpgroups.
pub const WG_THREADS: u32 = 256;
/// The rows of `c` a block computes, and the columns in [`matmul_wgmma`] and
/// [`matmul_wgmma_tf32`].
pub const WG_TILE: usize = 128;
/// The columns of `c` a block of [`matmul_wgmma_wide`] computes.
pub const WG_WIDE: usize = 256;
/// The depth of a staged tile of `f16`: four `k16` steps.
pub const WG_DEPTH: usize = 64;
/// The depth of a staged tile of `f32` ([`matmul_wgmma_tf32`]): four `k8` steps, the bytes of
/// [`WG_DEPTH`] halves.
pub const WG_TF32_DEPTH: usize = 32;
/// The buffers of staged tiles.
pub const WG_STAGES: usize = 4;
/// The dynamic shared memory [`matmul_wgmma`] and [`matmul_wgmma_tf32`] take: [`WG_STAGES`]
/// buffers of a tile of `a` and of `b`, 131 072 bytes.
pub const WG_SHARED_BYTES: usize = shared_bytes(WG_TILE);
/// The dynamic shared memory [`matmul_wgmma_wide`] takes: 196 608 bytes.
pub const WG_WIDE_SHARED_BYTES: usize = shared_bytes(WG_WIDE);

/// The bytes of the [`WG_STAGES`] buffers of a block whose tile of `c` is `bn` wide: each
/// buffer's tiles of `a` and `b` 128 bytes deep.
#[device]
const fn shared_bytes(bn: usize) -> usize {
    WG_STAGES * (WG_TILE + bn) * 128
}

/// The elements of one buffer of `E`, `D` deep: a tile of `a`, then one of `b` `bn` wide.
#[device]
const fn buffer_elems<const D: usize>(bn: usize) -> usize {
    (WG_TILE + bn) * D
}

/// The buffer of tile `ti` in `shared`: its tiles of `a` and of `b`, `BN` wide and `D` deep,
/// each in strips of 16-byte rows.
#[device]
fn buffers<'a, E: WgElement, const BN: usize, const D: usize>(
    shared: &View1Mut<'a, E>,
    ti: usize,
) -> (View2Mut<'a, E>, View2Mut<'a, E>) {
    let (at, la) = (ti % WG_STAGES * buffer_elems::<D>(BN), WG_TILE * D);
    let sa = shared.slice(at..at + la).rows(E::ROW);
    let sb = shared
        .slice(at + la..at + buffer_elems::<D>(BN))
        .rows(E::ROW);
    (sa, sb)
}

/// Stages tile `ti` of `a` and `b` for the block's tile of `c` at `corner`, `BN` wide and `D`
/// deep, into its buffer.
#[device]
fn stage_tiles<E: WgElement, const BN: usize, const D: usize, X: Source<E>>(
    shared: &View1Mut<E>,
    (a, b): (&X, &X),
    ti: usize,
    corner: [usize; 2],
) {
    let (mut sa, mut sb) = buffers::<E, BN, D>(shared, ti);
    let k0 = ti * D;
    stage_a::<E, WG_TILE, D, { WG_THREADS as usize }>(&mut sa, a, [corner[0], k0]);
    stage_b::<E, D, BN, { WG_THREADS as usize }>(&mut sb, b, [k0, corner[1]]);
}

/// The block's tile of `c = a @ b`, `S::N` = `BN` columns wide, its warpgroups each 64 rows of
/// it in an accumulator of shape `S`, from tiles `D` deep staged in `shared`: the kernel's
/// dynamic shared memory, which holds the buffers of tiles `BN` wide (as the kernel declares).
#[device]
fn product<S, E, const BN: usize, const D: usize, X, Y>(
    (a, b, c): (&X, &X, &mut Y),
    shared: &View1Mut<E>,
) where
    S: WgTakes<E>,
    E: WgElement,
    X: Source<E>,
    Y: IndexMut<[usize; 2], Output = f32> + Source<f32>,
{
    const { assert!(S::N == BN, "the accumulator spans the block's tile") };
    // Every launch gives the bytes the kernel declares; the slices rely on it.
    assert!(
        shared.len() * size_of::<E>() >= shared_bytes(BN),
        "a warpgroup matmul: less dynamic shared memory than its kernel declares \
         (WG_SHARED_BYTES, WG_WIDE_SHARED_BYTES)"
    );
    let ([rows, cols], depth) = (c.extent(), a.extent()[1]);
    let t = thread_idx().x as usize % WG_THREADS as usize;
    let corner = [
        block_idx().y as usize * WG_TILE,
        block_idx().x as usize * BN,
    ];
    let tiles = depth.div_ceil(D);
    // Tile `ti + AHEAD` is staged while tile `ti` is multiplied, into the buffer that tile
    // `ti - 2` was read from: every warpgroup's product of it is done by then.
    const AHEAD: usize = WG_STAGES - 2;
    for ti in 0..AHEAD {
        if ti < tiles {
            stage_tiles::<E, BN, D, X>(shared, (a, b), ti, corner);
        }
        pipeline_commit();
    }
    let mut acc = WgAccumulator::<S>::new();
    let m = 64 * (t / WARPGROUP);
    for ti in 0..tiles {
        pipeline_wait_prior::<{ AHEAD as u32 - 1 }>();
        fence_shared();
        sync_threads();
        if ti + AHEAD < tiles {
            stage_tiles::<E, BN, D, X>(shared, (a, b), ti + AHEAD, corner);
        }
        pipeline_commit();
        let (sa, sb) = buffers::<E, BN, D>(shared, ti);
        fence();
        mma_async::<S, E, WG_TILE, D>(&mut acc, &sa, m, &sb, 0, ti > 0);
        commit_group();
        wait_group::<1>();
    }
    wait_group::<0>();
    acc.for_each(t, |[r, col], x| {
        let (r, col) = (corner[0] + m + r, corner[1] + col);
        if r < rows && col < cols {
            c[[r, col]] = *x;
        }
    });
}

/// `c = a @ b` on warpgroup MMA, in tiles of 128 × 128. Launch
/// `(n.div_ceil(WG_TILE), m.div_ceil(WG_TILE))` blocks of [`WG_THREADS`] threads; the kernel
/// declares its [`WG_SHARED_BYTES`] of dynamic shared memory.
///
/// ```
/// use hopper_kernels::{matmul_wgmma, WG_THREADS};
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::cpu();
/// let a = Array2::from_shape_fn((20, 70), |(i, k)| f16::from_f32((i % 3) as f32 - k as f32 / 8.0));
/// let b = Array2::from_shape_fn((70, 9), |(k, j)| f16::from_f32((k + j) as f32 / 64.0));
/// let mut c = dev.zeros::<f32, _>((20, 9))?;
/// matmul_wgmma.launch((1, 1), WG_THREADS, (&dev.to_device(&a)?, &dev.to_device(&b)?, &mut c))?;
/// let want = a.mapv(|v| v.to_f32()).dot(&b.mapv(|v| v.to_f32()));
/// assert!(c.to_host()?.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[kernel(
    barriers,
    boundscheck = false,
    launch_bounds = (WG_THREADS, 1),
    dynamic_shared = WG_SHARED_BYTES
)]
pub fn matmul_wgmma(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    let shared = dynamic_shared![f16];
    product::<M64N128K16, f16, WG_TILE, WG_DEPTH, _, _>((&a, &b, &mut c), &shared);
}

/// [`matmul_wgmma`] in tiles of 128 × 256, each warpgroup's accumulator `m64n256k16` (128
/// elements a thread). Launch `(n.div_ceil(WG_WIDE), m.div_ceil(WG_TILE))` blocks of
/// [`WG_THREADS`] threads; the kernel declares its [`WG_WIDE_SHARED_BYTES`].
#[kernel(
    barriers,
    boundscheck = false,
    launch_bounds = (WG_THREADS, 1),
    dynamic_shared = WG_WIDE_SHARED_BYTES
)]
pub fn matmul_wgmma_wide(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    let shared = dynamic_shared![f16];
    product::<M64N256K16, f16, WG_WIDE, WG_DEPTH, _, _>((&a, &b, &mut c), &shared);
}

/// [`matmul_wgmma`] of `f32` matrices as `tf32` (the tensor cores keep 10 bits of each
/// element's mantissa, truncating the rest), in `m64n128k8` steps, tiles [`WG_TF32_DEPTH`]
/// deep; `b`'s tiles are staged transposed, each element alone. Launch
/// `(n.div_ceil(WG_TILE), m.div_ceil(WG_TILE))` blocks of [`WG_THREADS`] threads; the kernel
/// declares its [`WG_SHARED_BYTES`].
#[kernel(
    barriers,
    boundscheck = false,
    launch_bounds = (WG_THREADS, 1),
    dynamic_shared = WG_SHARED_BYTES
)]
pub fn matmul_wgmma_tf32(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let shared = dynamic_shared![f32];
    product::<M64N128K8, f32, WG_TILE, WG_TF32_DEPTH, _, _>((&a, &b, &mut c), &shared);
}

/// One warpgroup's `out = a · b + c` for a 64 × 32 `a` and a 32 × `N` `b`, in steps of `S`
/// (`S::N` = `N`; two `k16`, or four `k8` of `tf32`), staged by [`stage_a`] and [`stage_b`] into `sa` and `sb`: the
/// accumulator's elements are read from `c` and written to `out` at [`WgAccumulator::place`].
#[device]
fn tile_product<S: WgTakes<T>, const N: usize, T, X, C, Y>(
    (a, b, c): (&X, &X, &C),
    out: &mut Y,
    (sa, sb): (&mut View2Mut<T>, &mut View2Mut<T>),
) where
    T: WgElement,
    X: Source<T>,
    C: Index<[usize; 2], Output = f32>,
    Y: IndexMut<[usize; 2], Output = f32>,
{
    assert!(S::N == N, "tile_product: the shape's columns");
    stage_a::<T, 64, 32, 128>(sa, a, [0, 0]);
    stage_b::<T, 32, N, 128>(sb, b, [0, 0]);
    pipeline_commit();
    pipeline_wait_prior::<0>();
    fence_shared();
    sync_threads();
    let t = thread_idx().x as usize;
    let mut acc = WgAccumulator::<S>::new();
    acc.for_each(t, |at, x| *x = c[at]);
    fence();
    mma_async::<S, T, 64, 32>(&mut acc, &*sa, 0, &*sb, 0, true);
    commit_group();
    wait_group::<0>();
    acc.for_each(t, |at, x| out[at] = *x);
}

/// A warpgroup's `out = a · b + c` in `m64n8k16` steps: `a` 64 × 32, `b` 32 × 8, one block of
/// 128 threads.
#[kernel(barriers)]
pub fn wg_product_n8(a: &Array2<f16>, b: &Array2<f16>, c: &Array2<f32>, out: &mut Array2<f32>) {
    let (mut sa, mut sb) = (shared_array![f16; [4 * 64, 8]], shared_array![f16; [32, 8]]);
    tile_product::<M64N8K16, 8, f16, _, _, _>((&a, &b, &c), &mut out, (&mut sa, &mut sb));
}

/// [`wg_product_n8`] in `m64n64k16` steps: `b` 32 × 64.
#[kernel(barriers)]
pub fn wg_product_n64(a: &Array2<f16>, b: &Array2<f16>, c: &Array2<f32>, out: &mut Array2<f32>) {
    let (mut sa, mut sb) = (
        shared_array![f16; [4 * 64, 8]],
        shared_array![f16; [8 * 32, 8]],
    );
    tile_product::<M64N64K16, 64, f16, _, _, _>((&a, &b, &c), &mut out, (&mut sa, &mut sb));
}

/// [`wg_product_n8`] in `m64n128k16` steps: `b` 32 × 128.
#[kernel(barriers)]
pub fn wg_product_n128(a: &Array2<f16>, b: &Array2<f16>, c: &Array2<f32>, out: &mut Array2<f32>) {
    let (mut sa, mut sb) = (
        shared_array![f16; [4 * 64, 8]],
        shared_array![f16; [16 * 32, 8]],
    );
    tile_product::<M64N128K16, 128, f16, _, _, _>((&a, &b, &c), &mut out, (&mut sa, &mut sb));
}

/// [`wg_product_n64`] of `bf16` matrices.
#[kernel(barriers)]
pub fn wg_product_bf16_n64(
    a: &Array2<bf16>,
    b: &Array2<bf16>,
    c: &Array2<f32>,
    out: &mut Array2<f32>,
) {
    let (mut sa, mut sb) = (
        shared_array![bf16; [4 * 64, 8]],
        shared_array![bf16; [8 * 32, 8]],
    );
    tile_product::<M64N64K16, 64, bf16, _, _, _>((&a, &b, &c), &mut out, (&mut sa, &mut sb));
}

/// [`wg_product_n64`] of `f32` matrices as `tf32`, in `m64n64k8` steps: `b` staged transposed.
#[kernel(barriers)]
pub fn wg_product_tf32_n64(
    a: &Array2<f32>,
    b: &Array2<f32>,
    c: &Array2<f32>,
    out: &mut Array2<f32>,
) {
    let (mut sa, mut sb) = (
        shared_array![f32; [8 * 64, 4]],
        shared_array![f32; [8 * 64, 4]],
    );
    tile_product::<M64N64K8, 64, f32, _, _, _>((&a, &b, &c), &mut out, (&mut sa, &mut sb));
}

/// [`wg_product_tf32_n64`] in `m64n8k8` steps: `b` 32 × 8.
#[kernel(barriers)]
pub fn wg_product_tf32_n8(
    a: &Array2<f32>,
    b: &Array2<f32>,
    c: &Array2<f32>,
    out: &mut Array2<f32>,
) {
    let (mut sa, mut sb) = (
        shared_array![f32; [8 * 64, 4]],
        shared_array![f32; [8 * 8, 4]],
    );
    tile_product::<M64N8K8, 8, f32, _, _, _>((&a, &b, &c), &mut out, (&mut sa, &mut sb));
}
