//! matmul on tensor cores: `c = a @ b` for `f16` matrices into `f32`, with [`mma_sync`], any
//! sizes.
//!
//! A block of eight warps computes a 128 × 128 tile of `c`: the warps in two rows of four, each
//! a 64 × 32 part of it as 4 × 2 accumulators of 16 × 16, in registers for the whole depth. For
//! each 32 columns of `a`, the block stages a 128 × 32 tile of `a` and a 32 × 128 tile of `b`
//! (the latter transposed, so that each lane's pairs of `B` elements are adjacent) in shared
//! memory, zero past the matrices' edges, and each warp multiplies its 4 + 2 fragments of each
//! half of the depth 8 times. The shared rows are padded by 8 halves, so that the lanes of a
//! fragment load fall in distinct banks.
//!
//! Tensor cores need a GPU of sm_80 or later: this crate's PTX is built for sm_80 unless
//! `KERNEL_PTX_ARCH` names another.

use kernel_runtime::prelude::*;
use kernel_runtime::wmma::*;

/// The rows and columns of `c` a block computes.
pub const TC_TILE: usize = 128;
/// Threads per block: eight warps.
pub const TC_THREADS: u32 = 256;
/// The depth a block stages at a time.
const DEPTH: usize = 32;
/// A shared row: the staged depth and 8 halves of padding.
const ROW: usize = DEPTH + 8;

/// The thread's index in its block, the first row and column of the block's tile of `c`, and
/// those of its warp's part in the tile: the warps in two rows of four, each 64 × 32.
#[device]
fn tiles() -> (usize, [usize; 2], [usize; 2]) {
    let t = thread_idx().x as usize;
    let block = [
        block_idx().y as usize * TC_TILE,
        block_idx().x as usize * TC_TILE,
    ];
    let warp = t / 32;
    (t, block, [64 * (warp / 4), 32 * (warp % 4)])
}

/// `c = a @ b`: launch `(m.div_ceil(TC_TILE), n.div_ceil(TC_TILE))` blocks of [`TC_THREADS`]
/// threads for an `n × m` result.
///
/// Its indices are checked by the tests beside them rather than at each access: those of `a`,
/// `b` and `c` against their shapes before each access, those of the shared tiles by their
/// construction (a warp's rows and columns lie within the 128 × 32 it stages).
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
#[kernel(boundscheck = false)]
pub fn matmul_tensor(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    let (n, depth) = a.dim();
    let m = b.dim().1;
    let (t, [row0, col0], [wr, wc]) = tiles();
    let mut sa = shared_array![f16; [TC_TILE, ROW]];
    let mut sb = shared_array![f16; [TC_TILE, ROW]];
    let mut acc = [[Accumulator::<M16N16K16>::new(); 2]; 4];
    // What each thread stages: 16 elements of a row of `a`, and of a row of `b`.
    let (ar, aq) = (t / 2, 16 * (t % 2));
    let (bk, bc) = (t / 8, 16 * (t % 8));
    let mut k0 = 0;
    while k0 < depth {
        for q in 0..16 {
            let (i, k) = (row0 + ar, k0 + aq + q);
            sa[[ar, aq + q]] = if i < n && k < depth {
                a[[i, k]]
            } else {
                f16::ZERO
            };
            let (k, j) = (k0 + bk, col0 + bc + q);
            sb[[bc + q, bk]] = if k < depth && j < m {
                b[[k, j]]
            } else {
                f16::ZERO
            };
        }
        sync_threads();
        let mut kk = 0;
        while kk < DEPTH {
            let mut fa = [MatrixA::<M16N16K16, f16>::new(); 4];
            let mut fb = [MatrixB::<M16N16K16, f16>::new(); 2];
            for (i, f) in fa.iter_mut().enumerate() {
                load_matrix_sync(f, &sa, [wr + 16 * i, kk], Layout::RowMajor);
            }
            load_matrix_sync(&mut fb[0], &sb, [kk, wc], Layout::ColMajor);
            load_matrix_sync(&mut fb[1], &sb, [kk, wc + 16], Layout::ColMajor);
            for (i, row) in acc.iter_mut().enumerate() {
                for (j, d) in row.iter_mut().enumerate() {
                    let before = *d;
                    mma_sync(d, &fa[i], &fb[j], &before);
                }
            }
            kk += 16;
        }
        sync_threads();
        k0 += DEPTH;
    }
    // Each accumulator into its place, written out: a loop the compiler left rolled would
    // index the accumulators in memory.
    let within = [n, m];
    let at = |i: usize, j: usize| [row0 + wr + 16 * i, col0 + wc + 16 * j];
    store_matrix_within(&mut c, at(0, 0), &acc[0][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(0, 1), &acc[0][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(1, 0), &acc[1][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(1, 1), &acc[1][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(2, 0), &acc[2][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(2, 1), &acc[2][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(3, 0), &acc[3][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(3, 1), &acc[3][1], Layout::RowMajor, within);
}

/// The depth a block of [`matmul_tensor_tf32`] stages at a time.
const DEPTH_TF32: usize = 32;
/// A shared row of `a`'s tile in [`matmul_tensor_tf32`]: its depth and 4 words of padding, so
/// that the lanes of a fragment load (rows `g`, columns `t`) fall in distinct banks.
const ROW_A_TF32: usize = DEPTH_TF32 + 4;
/// A shared row of `b`'s tile: 128 columns and 8 words of padding, for the same reason (rows
/// `t`, columns `g`).
const ROW_B_TF32: usize = TC_TILE + 8;

/// `c = a @ b` for `f32` matrices on tensor cores, each element of `a` and `b` rounded to
/// [`Tf32`] (as cuBLAS's `CUBLAS_COMPUTE_32F_FAST_TF32`), the sums in `f32`: launch as
/// [`matmul_tensor`].
///
/// The blocks and warps tile `c` as [`matmul_tensor`] does, each warp's 64 × 32 as 4 × 4
/// accumulators of 16 × 8 (`m16n8k8`). The block stages 32 columns of `a` and 32 rows of `b`
/// at a time, each read by consecutive threads from consecutive addresses, and `b` stays
/// untransposed: a `tf32` register holds one element, so no pairs need to be adjacent.
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
#[kernel(boundscheck = false)]
pub fn matmul_tensor_tf32(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let (n, depth) = a.dim();
    let m = b.dim().1;
    let (t, [row0, col0], [wr, wc]) = tiles();
    let mut sa = shared_array![f32; [TC_TILE, ROW_A_TF32]];
    let mut sb = shared_array![f32; [DEPTH_TF32, ROW_B_TF32]];
    let mut acc = [[Accumulator::<M16N8K8>::new(); 4]; 4];
    let mut k0 = 0;
    while k0 < depth {
        // 16 passes of the block: 8 rows of a's tile, and 2 of b's, a pass.
        for q in 0..16 {
            let (r, k) = (8 * q + t / 32, t % 32);
            let (i, ka) = (row0 + r, k0 + k);
            sa[[r, k]] = if i < n && ka < depth { a[[i, ka]] } else { 0.0 };
            let (k, j) = (2 * q + t / TC_TILE, t % TC_TILE);
            let (kb, jb) = (k0 + k, col0 + j);
            sb[[k, j]] = if kb < depth && jb < m {
                b[[kb, jb]]
            } else {
                0.0
            };
        }
        sync_threads();
        let mut kk = 0;
        while kk < DEPTH_TF32 {
            let mut fa = [MatrixA::<M16N8K8, Tf32>::new(); 4];
            let mut fb = [MatrixB::<M16N8K8, Tf32>::new(); 4];
            for (i, f) in fa.iter_mut().enumerate() {
                load_matrix_sync(f, &sa, [wr + 16 * i, kk], Layout::RowMajor);
            }
            for (j, f) in fb.iter_mut().enumerate() {
                load_matrix_sync(f, &sb, [kk, wc + 8 * j], Layout::RowMajor);
            }
            for (i, row) in acc.iter_mut().enumerate() {
                for (j, d) in row.iter_mut().enumerate() {
                    let before = *d;
                    mma_sync(d, &fa[i], &fb[j], &before);
                }
            }
            kk += 8;
        }
        sync_threads();
        k0 += DEPTH_TF32;
    }
    // Each accumulator into its place, written out (as in `matmul_tensor`).
    let within = [n, m];
    let at = |i: usize, j: usize| [row0 + wr + 16 * i, col0 + wc + 8 * j];
    store_matrix_within(&mut c, at(0, 0), &acc[0][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(0, 1), &acc[0][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(0, 2), &acc[0][2], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(0, 3), &acc[0][3], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(1, 0), &acc[1][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(1, 1), &acc[1][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(1, 2), &acc[1][2], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(1, 3), &acc[1][3], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(2, 0), &acc[2][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(2, 1), &acc[2][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(2, 2), &acc[2][2], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(2, 3), &acc[2][3], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(3, 0), &acc[3][0], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(3, 1), &acc[3][1], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(3, 2), &acc[3][2], Layout::RowMajor, within);
    store_matrix_within(&mut c, at(3, 3), &acc[3][3], Layout::RowMajor, within);
}
