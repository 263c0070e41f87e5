//! matmul on tensor cores: `c = a @ b` for `f16` matrices into `f32`, with [`mma_sync`], any
//! sizes. A block of four warps computes a 32 × 32 tile of `c`, each warp a 16 × 16 quarter;
//! for each 16 columns of `a` the block stages a 32 × 16 tile of `a` and a 16 × 32 tile of `b`
//! in shared memory, zero past the matrices' edges, and each warp multiplies its fragments.
//!
//! Tensor cores need a GPU of sm_80 or later: this crate's PTX is built for sm_80 unless
//! `KERNEL_PTX_ARCH` names another.

use kernel_runtime::prelude::*;
use kernel_runtime::wmma::*;

/// The rows and columns of `c` a block computes.
pub const TC_TILE: usize = 32;
/// Threads per block: four warps.
pub const TC_THREADS: u32 = 128;

/// `c = a @ b`: launch `(m.div_ceil(32), n.div_ceil(32))` blocks of [`TC_THREADS`] threads for an
/// `n × m` result.
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
#[kernel]
pub fn matmul_tensor(a: &Array2<f16>, b: &Array2<f16>, c: &mut Array2<f32>) {
    let (n, depth) = a.dim();
    let m = b.dim().1;
    let t = thread_idx().x as usize;
    let (row0, col0) = (
        block_idx().y as usize * TC_TILE,
        block_idx().x as usize * TC_TILE,
    );
    let warp = t / 32;
    let (wr, wc) = (16 * (warp / 2), 16 * (warp % 2));
    let mut sa = shared_array![f16; [32, 16]];
    let mut sb = shared_array![f16; [16, 32]];
    let mut acc = Accumulator::<M16N16K16>::new();
    let mut k0 = 0;
    while k0 < depth {
        // Each tile has 512 elements: four per thread.
        for e in 0..4 {
            let at = 4 * t + e;
            let (r, q) = (at / 16, at % 16);
            sa[[r, q]] = if row0 + r < n && k0 + q < depth {
                a[[row0 + r, k0 + q]]
            } else {
                f16::ZERO
            };
            let (q, col) = (at / 32, at % 32);
            sb[[q, col]] = if k0 + q < depth && col0 + col < m {
                b[[k0 + q, col0 + col]]
            } else {
                f16::ZERO
            };
        }
        sync_threads();
        let mut fa = MatrixA::<M16N16K16, f16>::new();
        let mut fb = MatrixB::<M16N16K16, f16>::new();
        load_matrix_sync(&mut fa, &sa, [wr, 0], Layout::RowMajor);
        load_matrix_sync(&mut fb, &sb, [0, wc], Layout::RowMajor);
        let before = acc;
        mma_sync(&mut acc, &fa, &fb, &before);
        sync_threads();
        k0 += 16;
    }
    let lane = t % 32;
    for i in 0..acc.x.len() {
        let (r, q) = Accumulator::<M16N16K16>::place(lane, i);
        let (r, q) = (row0 + wr + r, col0 + wc + q);
        if r < n && q < m {
            c[[r, q]] = acc.x[i];
        }
    }
}
