//! matmul on tensor cores: `c = a @ b` for `f16` matrices into `f32`, or `f32` matrices as
//! `tf32`, with [`mma_sync`], any sizes.
//!
//! A block computes a 128 × 128 tile of `c`, its warps in two rows, each a part of it as
//! accumulators in registers for the whole depth: eight warps of 64 × 32 ([`matmul_tensor`],
//! [`matmul_tensor_tf32`]), or four of 64 × 64 ([`matmul_tensor_64x64`],
//! [`matmul_tensor_tf32_64x64`]), whose warps load fewer fragments and whose threads stage
//! more runs for each product on the tensor cores. The block stages a tile of `a`'s columns
//! and of `b`'s rows at a time in shared memory, zero past the matrices' edges, in two buffers
//! (four in [`matmul_tensor_staged`] and [`matmul_tensor_tf32_staged`]): while the warps
//! multiply the fragments of one tile, the next ones' copies fly ([`memcpy_async_tile`], runs
//! of 16 bytes, where every row of `a` and `b` starts at a multiple of 16 bytes; plain loads
//! and stores elsewhere). The shared rows are padded, so that the lanes of a fragment load
//! fall in distinct banks.
//!
//! Tensor cores and asynchronous copies need a GPU of sm_80 or later: this crate's PTX is
//! built for sm_80 unless `KERNEL_PTX_ARCH` names another. `store_tiles` and `each` are
//! `#[inline(always)]`: several kernels share their instances, and one that the compiler left
//! a call would hold its accumulators in memory (forcing the others inline too makes the loop
//! longer).

use core::ops::{Index, IndexMut};
use kernel_runtime::pipeline::{
    memcpy_async_tile, pipeline_commit, pipeline_wait_prior, Destination, Source,
};
use kernel_runtime::prelude::*;
use kernel_runtime::wmma::*;

/// The rows and columns of `c` a block computes.
pub const TC_TILE: usize = 128;
/// Threads per block of [`matmul_tensor`] and [`matmul_tensor_tf32`]: eight warps.
pub const TC_THREADS: u32 = 256;
/// Threads per block of [`matmul_tensor_64x64`] and [`matmul_tensor_tf32_64x64`]: four warps.
pub const TC_THREADS_64X64: u32 = 128;
/// The depth of a tile of [`matmul_tensor`].
const DEPTH: usize = 32;
/// A shared row of `a`'s tile: the depth and 8 halves of padding (lanes of a fragment load:
/// rows `g`, columns `2t`).
const ROW_A: usize = DEPTH + 8;
/// A shared row of `b`'s tile: its 128 columns and 8 of padding (rows `2t`, columns `g`).
const ROW_B: usize = TC_TILE + 8;

/// The threads of a block whose warps' parts of its tile are `WN` columns wide: two rows of
/// `TC_TILE / WN` warps.
#[device]
fn block_threads<const WN: usize>() -> usize {
    64 * TC_TILE / WN
}

/// The thread's index in its block, the first row and column of the block's tile of `c`, and
/// those of its warp's part in the tile: the warps in two rows, each part 64 × `WN`.
#[device]
fn tiles<const WN: usize>() -> (usize, [usize; 2], [usize; 2]) {
    // Below the block's threads (as `block_of` makes sure), which the compiler then knows: so
    // that it finds the runs of a tile that lies wholly in the matrices inside them.
    let t = thread_idx().x as usize % block_threads::<WN>();
    let block = [
        block_idx().y as usize * TC_TILE,
        block_idx().x as usize * TC_TILE,
    ];
    let (warp, across) = (t / 32, TC_TILE / WN);
    (t, block, [64 * (warp / across), WN * (warp % across)])
}

/// Stops a launch whose blocks are not of the threads that warps `WN` columns wide make, in
/// one dimension, which the tiles are cut for.
#[device]
fn block_of<const WN: usize>() {
    let d = block_dim();
    let one = d.x as usize == block_threads::<WN>() && d.y == 1 && d.z == 1;
    if WN == 32 {
        assert!(
            one,
            "this tensor-core matmul takes blocks of TC_THREADS (256) threads"
        );
    } else {
        assert!(
            one,
            "this tensor-core matmul takes blocks of TC_THREADS_64X64 (128) threads"
        );
    }
}

/// Calls `f(0)`, .., `f(n - 1)` for `n` up to 8 as straight-line code, each `i` a constant once
/// `n` is: accumulators and fragments indexed so stay in registers, where a loop the compiler
/// left rolled would index them in memory.
#[device]
#[inline(always)]
fn each(n: usize, mut f: impl FnMut(usize)) {
    macro_rules! upto {
        ($($i:literal)*) => { $( if $i < n { f($i) } )* };
    }
    upto!(0 1 2 3 4 5 6 7);
}

/// Stages tile `ti`, `D` deep, of `a` and `b` for the block whose tile of `c` starts at
/// `corner` into buffer `s` of `sa` and `sb` (their rows from `s * TC_TILE` and from `s * D`),
/// zeros past the matrices' edges: the block's `THREADS` threads each start their share of the
/// tiles' runs of `W` elements ([`memcpy_async_tile`]).
#[device]
fn stage<T, const W: usize, const D: usize, const THREADS: usize, S, X>(
    (sa, sb): (&mut S, &mut S),
    (a, b): (&X, &X),
    (ti, s): (usize, usize),
    corner: [usize; 2],
) where
    T: kernel_runtime::AnyBitPattern,
    S: Destination<T>,
    X: Source<T>,
{
    let k0 = ti * D;
    memcpy_async_tile::<T, W, TC_TILE, D, THREADS>(sa, [s * TC_TILE, 0], a, [corner[0], k0]);
    memcpy_async_tile::<T, W, D, TC_TILE, THREADS>(sb, [s * D, 0], b, [k0, corner[1]]);
}

/// Waits until at most the thread's `STAGES - 1` latest groups of copies are in flight
/// (`pipeline_wait_prior::<STAGES - 1>`).
#[device]
fn wait_all_but<const STAGES: usize>() {
    const { assert!(STAGES >= 2 && STAGES <= 5, "2 to 5 stages") };
    match STAGES {
        2 => pipeline_wait_prior::<1>(),
        3 => pipeline_wait_prior::<2>(),
        4 => pipeline_wait_prior::<3>(),
        _ => pipeline_wait_prior::<4>(),
    }
}

/// Multiplies the warp's part (64 × `WN`) of buffer `s` of the staged tiles, `D` deep (as
/// [`stage`] leaves them), into its 4 × `J` accumulators of 16 × `S::N`, loading the fragment
/// of `a` or `b` at a place of the tiles (rows of the buffers, as [`stage`] stacks them) with
/// `load_a` and `load_b`.
#[device]
fn multiply<S, T, const J: usize, const D: usize, const WN: usize, LA, LB>(
    acc: &mut [[Accumulator<S>; J]; 4],
    s: usize,
    load_a: LA,
    load_b: LB,
) where
    S: Shape + Fits<T>,
    T: Operand<Acc = f32>,
    LA: Fn(&mut MatrixA<S, T>, [usize; 2]),
    LB: Fn(&mut MatrixB<S, T>, [usize; 2]),
{
    let (_, _, [wr, wc]) = tiles::<WN>();
    let mut kk = 0;
    while kk < D {
        let mut fa = [MatrixA::<S, T>::new(); 4];
        let mut fb = [MatrixB::<S, T>::new(); J];
        each(4, |i| load_a(&mut fa[i], [s * TC_TILE + wr + 16 * i, kk]));
        each(J, |j| load_b(&mut fb[j], [s * D + kk, wc + S::N * j]));
        each(4, |i| {
            each(J, |j| {
                let before = acc[i][j];
                mma_sync(&mut acc[i][j], &fa[i], &fb[j], &before);
            })
        });
        kk += S::K;
    }
}

/// `c = a @ b` for the warp's part of the block's tile, its blocks' warps `WN` columns wide, each
/// with 4 × `J` accumulators of 16 × `S::N`, from tiles staged `STAGES` deep in as many buffers
/// of `sa` and `sb`: the first `STAGES - 1` tiles fly before any is multiplied; then each round
/// waits for the oldest, meets, starts the copies of the tile `STAGES - 1` on into the buffer
/// the round before read (as [`stage`], `W` elements a run, `D` deep), and multiplies the tile
/// that landed (as [`multiply`], its fragments loaded by `load_a` and `load_b` from the
/// buffers); then each warp stores its part.
#[device]
fn product<
    S,
    T,
    E,
    const W: usize,
    const D: usize,
    const J: usize,
    const WN: usize,
    const THREADS: usize,
    const STAGES: usize,
    B,
    X,
    Y,
    LA,
    LB,
>(
    (a, b, c): (&X, &X, &mut Y),
    sa: &mut B,
    sb: &mut B,
    load_a: LA,
    load_b: LB,
) where
    S: Shape + Fits<T>,
    T: Operand<Acc = f32>,
    E: kernel_runtime::AnyBitPattern,
    B: Destination<E>,
    X: Source<E>,
    Y: IndexMut<[usize; 2], Output = f32> + ?Sized,
    LA: Fn(&mut MatrixA<S, T>, &B, [usize; 2]),
    LB: Fn(&mut MatrixB<S, T>, &B, [usize; 2]),
{
    const {
        assert!(
            J * S::N == WN && THREADS == 64 * TC_TILE / WN,
            "J accumulators of S::N columns make a warp's WN, and two rows of warps WN wide the \
             block's THREADS"
        )
    };
    block_of::<WN>();
    let mut acc = [[Accumulator::<S>::new(); J]; 4];
    let depth_tiles = a.extent()[1].div_ceil(D);
    let (_, corner, [wr, wc]) = tiles::<WN>();
    // Round `ti` starts the copies of tile `ti` into buffer `ti % STAGES`, and multiplies the
    // tile `STAGES - 1` before.
    for ti in 0..depth_tiles + STAGES - 1 {
        if ti < depth_tiles {
            stage::<_, W, D, THREADS, _, _>((sa, sb), (a, b), (ti, ti % STAGES), corner);
        }
        pipeline_commit();
        if ti >= STAGES - 1 {
            wait_all_but::<STAGES>();
            sync_threads();
            let (sa, sb) = (&*sa, &*sb);
            multiply::<S, T, J, D, WN, _, _>(
                &mut acc,
                (ti - (STAGES - 1)) % STAGES,
                |f, at| load_a(f, sa, at),
                |f, at| load_b(f, sb, at),
            );
            // The next round writes the buffer read last.
            sync_threads();
        }
    }
    let within = [a.extent()[0], b.extent()[1]];
    store_tiles(c, &acc, [corner[0] + wr, corner[1] + wc], within);
}

/// Stores the warp's 4 × `J` accumulators of 16 × `S::N` from `at` on (its part of the block's
/// tile), each its part inside `within`, written out.
#[device]
#[inline(always)]
fn store_tiles<S: Shape, const J: usize, Y>(
    c: &mut Y,
    acc: &[[Accumulator<S>; J]; 4],
    at: [usize; 2],
    within: [usize; 2],
) where
    Y: IndexMut<[usize; 2], Output = f32> + ?Sized,
{
    each(4, |i| {
        each(J, |j| {
            let place = [at[0] + 16 * i, at[1] + S::N * j];
            store_matrix_within(c, place, &acc[i][j], Layout::RowMajor, within);
        })
    });
}

/// [`product`] of `f16` tiles [`DEPTH`] deep, in runs of 8 halves, each fragment loaded with one
/// `ldmatrix` (rows of 16 bytes: `ROW_A` and `ROW_B` are multiples of 8 halves), for warps of
/// 16 × 16 accumulators.
#[device]
fn product_f16<
    const J: usize,
    const WN: usize,
    const THREADS: usize,
    const STAGES: usize,
    B,
    X,
    Y,
>(
    abc: (&X, &X, &mut Y),
    sa: &mut B,
    sb: &mut B,
) where
    B: Destination<f16> + Index<[usize; 2], Output = f16>,
    X: Source<f16>,
    Y: IndexMut<[usize; 2], Output = f32> + ?Sized,
{
    product::<M16N16K16, f16, _, 8, DEPTH, J, WN, THREADS, STAGES, _, _, _, _, _>(
        abc,
        sa,
        sb,
        |f, s, at| ldmatrix_sync(f, s, at, Layout::RowMajor),
        |f, s, at| ldmatrix_sync(f, s, at, Layout::RowMajor),
    );
}

/// `c = a @ b`: launch `(m.div_ceil(TC_TILE), n.div_ceil(TC_TILE))` blocks of [`TC_THREADS`]
/// threads for an `n × m` result.
///
/// Each of its eight warps' parts is 4 × 2 accumulators of 16 × 16; a tile is 32 deep, each
/// thread staging two runs of 8 halves of `a` and two of `b`.
///
/// Its indices are checked by the tests beside them rather than at each access: those of `a`,
/// `b` and `c` against their shapes before each access, those of the shared tiles by their
/// construction (a warp's rows and columns lie within the tile it stages).
///
/// ```
/// use gpu_kernels::{matmul_tensor, TC_THREADS};
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let a = Array2::from_shape_fn((20, 17), |(i, k)| f16::from_f32((i % 3) as f32 - k as f32 / 8.0));
/// let b = Array2::from_shape_fn((17, 9), |(k, j)| f16::from_f32((k + j) as f32 / 4.0));
/// let mut c = dev.zeros::<f32, _>((20, 9))?;
/// matmul_tensor.launch((1, 1), TC_THREADS, (&dev.to_device(&a)?, &dev.to_device(&b)?, &mut c))?;
/// let want = a.mapv(|v| v.to_f32()).dot(&b.mapv(|v| v.to_f32()));
/// assert!(c.to_host()?.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-3));
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
// The warps meet in `product` too; two blocks a multiprocessor keep their registers to 128.
#[kernel(barriers, boundscheck = false, launch_bounds = (TC_THREADS, 2))]
pub fn matmul_tensor(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    // Two buffers of each tile: rows `s * TC_TILE ..` of `sa`, `s * DEPTH ..` of `sb`.
    let mut sa = shared_array![f16; [2 * TC_TILE, ROW_A]];
    let mut sb = shared_array![f16; [2 * DEPTH, ROW_B]];
    product_f16::<2, 32, { TC_THREADS as usize }, 2, _, _, _>((&a, &b, &mut c), &mut sa, &mut sb);
}

/// [`matmul_tensor`] in blocks of four warps, each a 64 × 64 part of the tile (4 × 4
/// accumulators of 16 × 16), each thread staging four runs of `a` and four of `b`: launch
/// `(m.div_ceil(TC_TILE), n.div_ceil(TC_TILE))` blocks of [`TC_THREADS_64X64`] threads.
///
/// ```
/// use gpu_kernels::{matmul_tensor_64x64, TC_THREADS_64X64};
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let a = Array2::from_shape_fn((20, 17), |(i, k)| f16::from_f32((i % 3) as f32 - k as f32 / 8.0));
/// let b = Array2::from_shape_fn((17, 9), |(k, j)| f16::from_f32((k + j) as f32 / 4.0));
/// let mut c = dev.zeros::<f32, _>((20, 9))?;
/// let (da, db) = (dev.to_device(&a)?, dev.to_device(&b)?);
/// matmul_tensor_64x64.launch((1, 1), TC_THREADS_64X64, (&da, &db, &mut c))?;
/// let want = a.mapv(|v| v.to_f32()).dot(&b.mapv(|v| v.to_f32()));
/// assert!(c.to_host()?.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-3));
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[kernel(barriers, boundscheck = false, launch_bounds = (TC_THREADS_64X64, 2))]
pub fn matmul_tensor_64x64(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    let mut sa = shared_array![f16; [2 * TC_TILE, ROW_A]];
    let mut sb = shared_array![f16; [2 * DEPTH, ROW_B]];
    let (sa, sb) = (&mut sa, &mut sb);
    product_f16::<4, 64, { TC_THREADS_64X64 as usize }, 2, _, _, _>((&a, &b, &mut c), sa, sb);
}

/// The tiles [`matmul_tensor_staged`] stages at once: three in flight while the warps multiply
/// the fourth.
pub const TC_STAGES: usize = 4;
/// The dynamic shared memory [`matmul_tensor_staged`] takes: [`TC_STAGES`] buffers of a tile of
/// `a` and of `b`, 75 776 bytes, past the 48 KiB of static shared memory a block may have.
pub const TC_STAGED_SHARED_BYTES: usize =
    TC_STAGES * (TC_TILE * ROW_A + DEPTH * ROW_B) * size_of::<f16>();

/// [`matmul_tensor_64x64`] with [`TC_STAGES`] tiles staged at once (where the others stage two):
/// the copies of three tiles fly while the warps multiply the fourth, from dynamic shared
/// memory: [`TC_STAGED_SHARED_BYTES`] of it, which the kernel declares, so that every launch
/// gives a block that much. Launch `(m.div_ceil(TC_TILE), n.div_ceil(TC_TILE))` blocks of
/// [`TC_THREADS_64X64`] threads.
///
/// ```
/// use gpu_kernels::{matmul_tensor_staged, TC_THREADS_64X64};
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let a = Array2::from_shape_fn((20, 70), |(i, k)| f16::from_f32((i % 3) as f32 - k as f32 / 8.0));
/// let b = Array2::from_shape_fn((70, 9), |(k, j)| f16::from_f32((k + j) as f32 / 64.0));
/// let mut c = dev.zeros::<f32, _>((20, 9))?;
/// matmul_tensor_staged.launch((1, 1), TC_THREADS_64X64, (&dev.to_device(&a)?, &dev.to_device(&b)?, &mut c))?;
/// let want = a.mapv(|v| v.to_f32()).dot(&b.mapv(|v| v.to_f32()));
/// assert!(c.to_host()?.iter().zip(&want).all(|(x, y)| (x - y).abs() < 1e-2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[kernel(
    barriers,
    boundscheck = false,
    launch_bounds = (TC_THREADS_64X64, 2),
    dynamic_shared = TC_STAGED_SHARED_BYTES
)]
pub fn matmul_tensor_staged(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    let (la, lb) = (TC_STAGES * TC_TILE * ROW_A, TC_STAGES * DEPTH * ROW_B);
    let shared = dynamic_shared![f16];
    // Every launch gives the bytes the kernel declares; the indices below rely on it.
    assert!(
        shared.len() >= la + lb,
        "matmul_tensor_staged: less dynamic shared memory than TC_STAGED_SHARED_BYTES"
    );
    let (mut sa, mut sb) = (
        shared.slice(0..la).rows(ROW_A),
        shared.slice(la..la + lb).rows(ROW_B),
    );
    let (sa, sb) = (&mut sa, &mut sb);
    product_f16::<4, 64, { TC_THREADS_64X64 as usize }, TC_STAGES, _, _, _>(
        (&a, &b, &mut c),
        sa,
        sb,
    );
}

/// [`product`] of `tf32` tiles `D` deep, in runs of 4 floats, rows of `a`'s tiles `ROW` floats
/// (a multiple of 4, so that `ldmatrix` moves `A`'s pairs of 16-bit elements; `B`'s would need
/// them transposed: each lane loads its own), for warps of 16 × 8 accumulators.
#[device]
fn product_tf32<
    const D: usize,
    const J: usize,
    const WN: usize,
    const THREADS: usize,
    const STAGES: usize,
    B,
    X,
    Y,
>(
    abc: (&X, &X, &mut Y),
    sa: &mut B,
    sb: &mut B,
) where
    B: Destination<f32> + Index<[usize; 2], Output = f32>,
    X: Source<f32>,
    Y: IndexMut<[usize; 2], Output = f32> + ?Sized,
{
    product::<M16N8K8, Tf32, _, 4, D, J, WN, THREADS, STAGES, _, _, _, _, _>(
        abc,
        sa,
        sb,
        |f, s, at| ldmatrix_sync(f, s, at, Layout::RowMajor),
        |f, s, at| load_matrix_sync(f, s, at, Layout::RowMajor),
    );
}

/// The depth of a tile of [`matmul_tensor_tf32`].
const DEPTH_TF32: usize = 16;
/// A shared row of `a`'s tile: the depth and 4 words of padding (lanes of a fragment load:
/// rows `g`, columns `t`).
const ROW_A_TF32: usize = DEPTH_TF32 + 4;

/// `c = a @ b` for `f32` matrices on tensor cores, each element of `a` and `b` rounded to
/// [`Tf32`] (as cuBLAS's `CUBLAS_COMPUTE_32F_FAST_TF32`), the sums in `f32`: launch as
/// [`matmul_tensor`].
///
/// Each warp's part is 4 × 4 accumulators of 16 × 8 (`m16n8k8`); a tile is 16 deep, each
/// thread staging two runs of 4 floats of `a` and two of `b`, and the rounding is the fragment
/// loads' (one `cvt.rna.tf32.f32` an element).
///
/// ```
/// use gpu_kernels::{matmul_tensor_tf32, TC_THREADS};
/// use kernel_runtime::prelude::*;
/// use kernel_runtime::wmma::Tf32;
///
/// let dev = Device::default();
/// let x = Array2::from_shape_fn((33, 33), |(i, k)| 1.0 + (i * k) as f32 / 3.0);
/// let mut y = dev.zeros::<f32, _>((33, 33))?;
/// let dx = dev.to_device(&x)?;
/// matmul_tensor_tf32.launch((1, 1), TC_THREADS, (&dx, &dx, &mut y))?;
/// let t = x.mapv(|v| Tf32::from_f32(v).to_f32()); // 10 bits of mantissa
/// let (got, want) = (y.to_host()?, t.dot(&t));
/// assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5 * w.abs()));
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
// One block a multiprocessor: two would leave 128 registers, and it would spill.
#[kernel(barriers, boundscheck = false, launch_bounds = (TC_THREADS, 1))]
pub fn matmul_tensor_tf32(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let mut sa = shared_array![f32; [2 * TC_TILE, ROW_A_TF32]];
    let mut sb = shared_array![f32; [2 * DEPTH_TF32, ROW_B]];
    let (sa, sb) = (&mut sa, &mut sb);
    product_tf32::<DEPTH_TF32, 4, 32, { TC_THREADS as usize }, 2, _, _, _>(
        (&a, &b, &mut c),
        sa,
        sb,
    );
}

/// The depth of a tile of [`matmul_tensor_tf32_staged`]: one `m16n8k8` step.
const DEPTH_TF32_STAGED: usize = 8;

/// [`matmul_tensor_tf32`] with tiles 8 deep, [`TC_STAGES`] of them staged at once (41 984
/// bytes of static shared memory), two blocks a multiprocessor: each thread keeps half the
/// fragments of the 16-deep kernel, within 128 registers, and issues more per product (the
/// loop's overhead comes twice as often); which is faster is the GPU's to say. Launch as
/// [`matmul_tensor`].
///
/// ```
/// use gpu_kernels::{matmul_tensor_tf32_staged, TC_THREADS};
/// use kernel_runtime::prelude::*;
/// use kernel_runtime::wmma::Tf32;
///
/// let dev = Device::default();
/// let x = Array2::from_shape_fn((33, 40), |(i, k)| 1.0 + (i * k) as f32 / 3.0);
/// let mut y = dev.zeros::<f32, _>((33, 33))?;
/// let (dx, dt) = (dev.to_device(&x)?, dev.to_device(&x.t().to_owned())?);
/// matmul_tensor_tf32_staged.launch((1, 1), TC_THREADS, (&dx, &dt, &mut y))?;
/// let t = x.mapv(|v| Tf32::from_f32(v).to_f32());
/// let (got, want) = (y.to_host()?, t.dot(&t.t()));
/// assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5 * w.abs()));
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[kernel(barriers, boundscheck = false, launch_bounds = (TC_THREADS, 2))]
pub fn matmul_tensor_tf32_staged(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let mut sa = shared_array![f32; [TC_STAGES * TC_TILE, DEPTH_TF32_STAGED + 4]];
    let mut sb = shared_array![f32; [TC_STAGES * DEPTH_TF32_STAGED, ROW_B]];
    let (sa, sb) = (&mut sa, &mut sb);
    product_tf32::<DEPTH_TF32_STAGED, 4, 32, { TC_THREADS as usize }, TC_STAGES, _, _, _>(
        (&a, &b, &mut c),
        sa,
        sb,
    );
}

/// [`matmul_tensor_tf32`] in blocks of four warps, each a 64 × 64 part of the tile (4 × 8
/// accumulators of 16 × 8), each thread staging four runs of `a` and four of `b`: launch as
/// [`matmul_tensor_64x64`].
///
/// ```
/// use gpu_kernels::{matmul_tensor_tf32_64x64, TC_THREADS_64X64};
/// use kernel_runtime::prelude::*;
/// use kernel_runtime::wmma::Tf32;
///
/// let dev = Device::default();
/// let x = Array2::from_shape_fn((33, 33), |(i, k)| 1.0 + (i * k) as f32 / 3.0);
/// let mut y = dev.zeros::<f32, _>((33, 33))?;
/// let dx = dev.to_device(&x)?;
/// matmul_tensor_tf32_64x64.launch((1, 1), TC_THREADS_64X64, (&dx, &dx, &mut y))?;
/// let t = x.mapv(|v| Tf32::from_f32(v).to_f32());
/// let (got, want) = (y.to_host()?, t.dot(&t));
/// assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5 * w.abs()));
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[kernel(barriers, boundscheck = false, launch_bounds = (TC_THREADS_64X64, 2))]
pub fn matmul_tensor_tf32_64x64(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let mut sa = shared_array![f32; [2 * TC_TILE, ROW_A_TF32]];
    let mut sb = shared_array![f32; [2 * DEPTH_TF32, ROW_B]];
    let (sa, sb) = (&mut sa, &mut sb);
    let abc = (&a, &b, &mut c);
    product_tf32::<DEPTH_TF32, 8, 64, { TC_THREADS_64X64 as usize }, 2, _, _, _>(abc, sa, sb);
}
