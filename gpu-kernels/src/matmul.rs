//! matmul: Numba's documented shared-memory tiled matrix product, `c = a @ b`.

use kernel_runtime::prelude::*;

/// Tile width: blocks are `TPB × TPB` threads.
pub const TPB: usize = 16;

/// `c = a @ b` for `a: n × k`, `b: k × m`, `c: n × m`; launch `(TPB, TPB)` threads per block
/// and enough blocks to cover `c` (x along columns of `c`, y along rows).
#[kernel]
pub fn matmul_tiled(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let mut sa = shared_array![f32; [TPB, TPB]];
    let mut sb = shared_array![f32; [TPB, TPB]];
    let (col, row) = grid(2);
    let tx = thread_idx().x as usize;
    let ty = thread_idx().y as usize;
    let (n, k) = a.dim();
    let (kb, m) = b.dim();
    let mut acc = 0.0f32;
    let tiles = k.div_ceil(TPB);
    for t in 0..tiles {
        let ak = t * TPB + tx;
        let bk = t * TPB + ty;
        sa[[ty, tx]] = if row < n && ak < k { a[[row, ak]] } else { 0.0 };
        sb[[ty, tx]] = if bk < kb && col < m {
            b[[bk, col]]
        } else {
            0.0
        };
        sync_threads();
        for q in 0..TPB {
            acc += sa[[ty, q]] * sb[[q, tx]];
        }
        sync_threads();
    }
    if row < n && col < m {
        c[[row, col]] = acc;
    }
}
