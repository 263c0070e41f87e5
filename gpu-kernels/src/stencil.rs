//! smooth: the 3×3 mean stencil over an `i8` image, sum widened to `i32`, floor division by 9
//! (Python's `// 9`).
//!
//! Thread x runs along a row (the contiguous dimension) and y down the columns, so that
//! neighbouring GPU threads read neighbouring bytes: launch with
//! `((m + 15) / 16, (n + 15) / 16)` blocks of `(16, 16)` for an `n × m` image. Border pixels are
//! left as they are in `out`.

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
