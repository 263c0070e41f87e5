//! smooth: the 3×3 mean stencil over an `i8` image, sum widened to `i32`, floor division by 9
//! (Python's `// 9`). Border pixels are left as they are in `out`.
//!
//! Two mappings of threads to pixels, with the same results:
//! - [`smooth`], the original program: one pixel per thread. Thread x runs along a row (the
//!   contiguous dimension) and y down the columns, so that neighbouring GPU threads read
//!   neighbouring bytes: launch with `((m + 15) / 16, (n + 15) / 16)` blocks of `(16, 16)` for an
//!   `n × m` image. Each pixel costs nine one-byte loads.
//! - [`smooth_strips`], for the GPU: one thread per column of a strip of [`STRIP_ROWS`] rows.
//!   It sums each row's three bytes once, for the three pixels that use them, so it loads
//!   3.75 bytes per pixel, and its index arithmetic is shared by the strip. A one-byte stencil
//!   issues more instructions per byte than a GPU can issue at full memory speed; for sm_90,
//!   ptxas makes about 22 instructions per pixel of this one against 78 of [`smooth`].
//!   On the CPU backend [`smooth`] is the faster one: its loop over threads vectorizes.

use kernel_runtime::prelude::*;

/// `out[i, j]` = the mean of the 3×3 neighbourhood of `x[i, j]`, for interior pixels.
#[kernel]
pub fn smooth(x: &Array2<i8>, out: &mut Array2<i8>) {
    let (j, i) = grid(2);
    let (n, m) = x.dim();
    if 1 <= i && i + 1 < n && 1 <= j && j + 1 < m {
        let s = x[[i - 1, j - 1]] as i32
            + x[[i - 1, j]] as i32
            + x[[i - 1, j + 1]] as i32
            + x[[i, j - 1]] as i32
            + x[[i, j]] as i32
            + x[[i, j + 1]] as i32
            + x[[i + 1, j - 1]] as i32
            + x[[i + 1, j]] as i32
            + x[[i + 1, j + 1]] as i32;
        out[[i, j]] = s.div_euclid(9) as i8;
    }
}

/// Rows of the strip each thread of [`smooth_strips`] smooths.
pub const STRIP_ROWS: usize = 8;
/// Threads per block of [`smooth_strips`], all along a row.
pub const STRIP_THREADS: usize = 128;

/// [`smooth`] with thread `(j, s)` smoothing column `j` of rows `1 + s * STRIP_ROWS` on, up to
/// [`STRIP_ROWS`] of them, into an `out` of `x`'s shape: launch [`strips_blocks`] blocks of
/// `(STRIP_THREADS, 1)`.
///
/// Its indices are checked once, by the tests at its start, rather than at each access.
#[kernel(boundscheck = false)]
pub fn smooth_strips(x: &Array2<i8>, out: &mut Array2<i8>) {
    let (j, strip) = grid(2);
    let (n, m) = x.dim();
    // The indices below are within `x` by the test that follows; within `out` by this one.
    assert!(
        out.dim() == (n, m),
        "smooth_strips: `out` must have the shape of `x`"
    );
    let first = 1 + strip * STRIP_ROWS;
    if 1 <= j && j + 1 < m && first + 1 < n {
        // The sum of a row's three bytes around column `j`.
        let row = |i: usize| x[[i, j - 1]] as i32 + x[[i, j]] as i32 + x[[i, j + 1]] as i32;
        // Floor division of a 3×3 sum `s` by 9: `s + 9 * 128` is never negative, so its unsigned
        // quotient (a multiply and a shift) is the floor.
        let mean = |s: i32| (((s + 9 * 128) as u32 / 9) as i32 - 128) as i8;
        if first + STRIP_ROWS < n {
            // A whole strip: every row's sum, then every pixel, in loops of known length that
            // unroll, so that all the loads go out at once.
            let mut sums = [0i32; STRIP_ROWS + 2];
            for (k, sum) in sums.iter_mut().enumerate() {
                *sum = row(first - 1 + k);
            }
            for k in 0..STRIP_ROWS {
                out[[first + k, j]] = mean(sums[k] + sums[k + 1] + sums[k + 2]);
            }
        } else {
            // The image's last, shorter strip.
            let (mut above, mut here) = (row(first - 1), row(first));
            for i in first..n - 1 {
                let below = row(i + 1);
                out[[i, j]] = mean(above + here + below);
                above = here;
                here = below;
            }
        }
    }
}

/// The blocks of a [`smooth_strips`] launch over an `n × m` image.
#[cfg(not(target_arch = "nvptx64"))]
pub fn strips_blocks(n: usize, m: usize) -> (usize, usize) {
    (
        m.div_ceil(STRIP_THREADS),
        n.saturating_sub(2).div_ceil(STRIP_ROWS).max(1),
    )
}
