//! integrate2d: ∫∫ sin(x + y) over [0, π]² by the midpoint rule on an n × n grid.
//!
//! Per-row: thread `i` sums row `i` over y into `rows[i]`; the host adds the rows.
//! Shared: each thread sums its row, then the block reduces its partial sums in a shared array
//! (tree reduction with `sync_threads`) and writes one sum per block; the host adds the blocks.

use kernel_runtime::prelude::*;

/// Threads per block of [`integrate2d_shared`] (its shared array has this many slots).
pub const INTEGRATE_TPB: usize = 256;

#[device]
fn row_sum(i: usize, n: usize, h: f64) -> f64 {
    let x = (i as f64 + 0.5) * h;
    let mut s = 0.0f64;
    let mut j = 0;
    while j < n {
        let y = (j as f64 + 0.5) * h;
        s += (x + y).sin();
        j += 1;
    }
    s * h * h
}

/// `rows[i]` = the midpoint-rule integral over row `i` of the `n × n` grid on [0, π]².
#[kernel]
pub fn integrate2d_rows(n: usize, rows: &mut [f64]) {
    let i = grid(1);
    if i < n {
        let h = core::f64::consts::PI / n as f64;
        rows[i] = row_sum(i, n, h);
    }
}

/// [`integrate2d_rows`] for the rows `first..first + rows.len()` of the n × n grid alone: a band
/// of rows, as each rank of a distributed run computes (`examples/dist_integrate2d.rs`).
#[kernel]
pub fn integrate2d_band(n: usize, first: usize, rows: &mut [f64]) {
    let k = grid(1);
    if k < rows.len() && first + k < n {
        let h = core::f64::consts::PI / n as f64;
        rows[k] = row_sum(first + k, n, h);
    }
}

/// `blocks[b]` = the integral over the rows of block `b`, reduced in shared memory.
/// Launch with [`INTEGRATE_TPB`] threads per block.
#[kernel]
pub fn integrate2d_shared(n: usize, blocks: &mut [f64]) {
    let mut partial = shared_array![f64; INTEGRATE_TPB];
    let i = grid(1);
    let t = thread_idx().x as usize;
    let h = core::f64::consts::PI / n as f64;
    partial[t] = if i < n { row_sum(i, n, h) } else { 0.0 };
    sync_threads();
    let mut stride = block_dim().x as usize / 2;
    while stride > 0 {
        if t < stride {
            partial[t] += partial[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        blocks[block_idx().x as usize] = partial[0];
    }
}
