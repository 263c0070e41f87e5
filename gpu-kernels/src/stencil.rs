//! smooth: the 3×3 mean stencil over an `i8` image, sum widened to `i32`, floor division by 9
//! (Python's `// 9`). Border pixels are left as they are in `out`.
//!
//! Three mappings of threads to pixels, with the same results:
//! - [`smooth`], the original program: one pixel per thread. Thread x runs along a row (the
//!   contiguous dimension) and y down the columns, so that neighbouring GPU threads read
//!   neighbouring bytes: launch with `((m + 15) / 16, (n + 15) / 16)` blocks of `(16, 16)` for an
//!   `n × m` image. Each pixel costs nine one-byte loads.
//! - [`smooth_strips`], for the GPU: one thread per column of a strip of [`STRIP_ROWS`] rows.
//!   It sums each row's three bytes once, for the three pixels that use them, so it loads
//!   3.75 bytes per pixel, and its index arithmetic is shared by the strip. A one-byte stencil
//!   issues more instructions per byte than a GPU can issue at full memory speed; for sm_90,
//!   ptxas makes about 22 instructions per pixel of this one against 78 of [`smooth`].
//! - [`smooth_words`], for the GPU: [`smooth_strips`] over the image seen as `u32` words of four
//!   pixels ([`DeviceArray::reinterpret`](kernel_runtime::DeviceArray::reinterpret)). Three
//!   word loads per row serve four pixels, and the sums go two pixels at a time in the 16-bit
//!   lanes of a word: for sm_90, ptxas makes about 11 instructions per pixel, few enough for
//!   the memory, not the instruction issue, to bound it. The image's width must be a multiple
//!   of 4.
//!
//! On the CPU backend [`smooth`] is the one to use: without index checks (`boundscheck = false`)
//! its rows vectorize, see the CPU backend in the README.

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
        walk_strip(first, n, row, |i, above, here, below| {
            out[[i, j]] = mean(above + here + below);
        });
    }
}

/// Walks the strip of rows from `first` (at least 1) on, up to [`STRIP_ROWS`] of them and none
/// past row `n - 2`: `put(i, above, here, below)` gets each row `i` with the sums `row` makes
/// of rows `i - 1`, `i`, `i + 1`, each computed once. A whole strip takes loops of known length
/// that unroll, so that all its loads go out at once.
#[device]
fn walk_strip<S: Copy>(
    first: usize,
    n: usize,
    row: impl Fn(usize) -> S,
    mut put: impl FnMut(usize, S, S, S),
) {
    if first + STRIP_ROWS < n {
        let mut sums = [row(first - 1); STRIP_ROWS + 2];
        for (k, sum) in sums.iter_mut().enumerate().skip(1) {
            *sum = row(first - 1 + k);
        }
        for k in 0..STRIP_ROWS {
            put(first + k, sums[k], sums[k + 1], sums[k + 2]);
        }
    } else {
        // The image's last, shorter strip.
        let (mut above, mut here) = (row(first - 1), row(first));
        for i in first..n - 1 {
            let below = row(i + 1);
            put(i, above, here, below);
            above = here;
            here = below;
        }
    }
}

/// The blocks of a [`smooth_strips`] launch over an `n × m` image.
#[cfg(not(target_arch = "nvptx64"))]
pub fn strips_blocks(n: usize, m: usize) -> (usize, usize) {
    (m.div_ceil(STRIP_THREADS), strips(n))
}

/// The strips of [`STRIP_ROWS`] rows that cover the interior rows of an image of `n` rows (at
/// least one, whose threads find no row to smooth when there is none).
#[cfg(not(target_arch = "nvptx64"))]
fn strips(n: usize) -> usize {
    n.saturating_sub(2).div_ceil(STRIP_ROWS).max(1)
}

/// Threads per block of [`smooth_words`], all along a row, a word column each.
pub const WORD_THREADS: usize = 128;

/// The nine-pixel sums, as two 16-bit lanes per word, of the pixels `4w + 0, 4w + 2` (`even`)
/// and `4w + 1, 4w + 3` (`odd`) of one row's word `c`, with its neighbours `l` and `r`, every
/// byte biased by 128 so that it is unsigned.
#[device]
fn row_lanes(l: u32, c: u32, r: u32) -> (u32, u32) {
    const LANES: u32 = 0x00FF_00FF;
    const BIAS: u32 = 0x8080_8080;
    let (l, c, r) = (l ^ BIAS, c ^ BIAS, r ^ BIAS);
    // Bytes (c0, c2) and (c1, c3) in 16-bit lanes.
    let (even, odd) = (c & LANES, (c >> 8) & LANES);
    let middle = even + odd;
    // (l3, c1) and (c2, r0): the neighbours that complete the even and the odd sums.
    let left = ((c << 8) | (l >> 24)) & LANES;
    let right = ((c >> 16) | (r << 16)) & LANES;
    (middle + left, middle + right)
}

/// floor(`s` / 9) - 128 as a byte, for the biased nine-pixel sum `s` of one lane (at most
/// 9 · 255, where the multiply-and-shift below is exact).
#[device]
fn lane_mean(s: u32) -> u32 {
    ((s * 7282) >> 16) ^ 0x80
}

/// [`smooth_strips`] over an image seen as words of four pixels (`x.view(np.uint32)` in Numba):
/// `x` and `out` are `n × m/4` arrays of `u32` whose byte `k` (little-endian) is pixel
/// `4 j + k`. Thread `(j, s)` smooths the four pixels of word column `j` in rows
/// `1 + s * STRIP_ROWS` on; it loads three words per row where [`smooth_strips`] loads three
/// bytes per pixel, and sums the four pixels two at a time in 16-bit lanes. Launch
/// [`words_blocks`] blocks of `(WORD_THREADS, 1)`:
///
/// ```
/// use gpu_kernels::{smooth_words, words_blocks, WORD_THREADS};
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let image = Array2::from_shape_fn((6, 8), |(i, j)| (i * 8 + j) as i8);
/// let x = dev.to_device(&image)?.reinterpret::<u32>()?; // 6 × 2 words
/// let mut out = dev.zeros::<i8, _>((6, 8))?.reinterpret::<u32>()?;
/// smooth_words.launch(words_blocks(6, 2), (WORD_THREADS, 1), (&x, &mut out))?;
/// let out = out.reinterpret::<i8>()?.to_host()?;
/// assert_eq!(out[[1, 1]], 9); // (0 + 1 + 2 + 8 + 9 + 10 + 16 + 17 + 18) / 9
/// assert_eq!(out[[1, 0]], 0); // the border is left as it was
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[kernel(boundscheck = false)]
pub fn smooth_words(x: &Array2<u32>, out: &mut Array2<u32>) {
    let (j, strip) = grid(2);
    let (n, w) = x.dim();
    // The indices below are within `x` by the test that follows; within `out` by this one.
    assert!(
        out.dim() == (n, w),
        "smooth_words: `out` must have the shape of `x`"
    );
    let first = 1 + strip * STRIP_ROWS;
    if j >= w || first + 1 >= n {
        return;
    }
    // The strip, with the words `left` and `right` beside column `j`, writing only the bytes of
    // each output word outside `keep`.
    let mut strip = |left: usize, right: usize, keep: u32| {
        let word = |i: usize| {
            let c = u32::from_le(x[[i, j]]);
            row_lanes(u32::from_le(x[[i, left]]), c, u32::from_le(x[[i, right]]))
        };
        let mut put = |i: usize, even: u32, odd: u32| {
            let pixels = lane_mean(even & 0xFFFF)
                | lane_mean(odd & 0xFFFF) << 8
                | lane_mean(even >> 16) << 16
                | lane_mean(odd >> 16) << 24;
            let old = if keep != 0 {
                u32::from_le(out[[i, j]])
            } else {
                0
            };
            out[[i, j]] = u32::to_le((pixels & !keep) | (old & keep));
        };
        walk_strip(
            first,
            n,
            word,
            |i, a: (u32, u32), b: (u32, u32), c: (u32, u32)| {
                put(i, a.0 + b.0 + c.0, a.1 + b.1 + c.1)
            },
        );
    };
    if 0 < j && j + 1 < w {
        strip(j - 1, j + 1, 0);
    } else {
        // A word at the image's side: its border pixel is kept, and the word beside it that
        // only that pixel would use is the word itself.
        let keep = (if j == 0 { 0xFF } else { 0 }) | (if j + 1 == w { 0xFF00_0000 } else { 0 });
        strip(j.max(1) - 1, (j + 1).min(w - 1), keep);
    }
}

/// The blocks of a [`smooth_words`] launch over an `n × w` array of words.
#[cfg(not(target_arch = "nvptx64"))]
pub fn words_blocks(n: usize, w: usize) -> (usize, usize) {
    (w.div_ceil(WORD_THREADS), strips(n))
}

/// [`smooth`] as Numba's `@stencil` writes it, relative indices from the pixel, the border left
/// as it is in `out` (or zero, from `smooth_stencil.run(&x)`); the macro picks how threads map
/// to pixels, on a GPU tiles of 4 rows × 4 pixels per thread.
///
/// ```
/// use gpu_kernels::smooth_stencil;
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let image = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as i8);
/// let out = smooth_stencil.run(&dev.to_device(&image)?)?.to_host()?;
/// assert_eq!(out[[1, 1]], 5); // (0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10) / 9
/// assert_eq!(out[[0, 1]], 0); // the border
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[stencil]
pub fn smooth_stencil(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The 7-point Laplacian of a 3-D grid, `u[z±1] + u[y±1] + u[x±1] - 6u`, zero on the border of
/// a new array (`laplace3d.run(&u)`).
///
/// ```
/// use gpu_kernels::laplace3d;
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let u = Array3::from_shape_fn((3, 3, 3), |(z, y, x)| (z * z + y + x) as f32);
/// let lap = laplace3d.run(&dev.to_device(&u)?)?.to_host()?;
/// assert_eq!(lap[[1, 1, 1]], 2.0); // the second difference of z² along z
/// assert_eq!(lap[[0, 1, 1]], 0.0); // the border
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[stencil]
pub fn laplace3d(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The weights of [`gaussian5x5`]: the outer product of the binomial row `1 4 6 4 1`, summing to
/// 256.
pub const GAUSS5: [[u32; 5]; 5] = [
    [1, 4, 6, 4, 1],
    [4, 16, 24, 16, 4],
    [6, 24, 36, 24, 6],
    [4, 16, 24, 16, 4],
    [1, 4, 6, 4, 1],
];

/// A 5 × 5 Gaussian blur of a `u8` image, the binomial weights [`GAUSS5`], rounded to nearest.
/// Its relative indices are loop counters: the macro writes out loops over constant ranges, so
/// that every index is a constant, and the neighbourhood is what they reach.
///
/// ```
/// use gpu_kernels::gaussian5x5;
/// use kernel_runtime::prelude::*;
///
/// let dev = Device::default();
/// let flat = Array2::from_elem((6, 7), 200u8);
/// let out = gaussian5x5.run(&dev.to_device(&flat)?)?.to_host()?;
/// assert_eq!(out[[2, 3]], 200); // a flat image stays flat
/// assert_eq!(out[[1, 3]], 0); // the border
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[stencil]
pub fn gaussian5x5(x: &Array2<u8>) -> u8 {
    let mut s = 128u32;
    for i in -2..=2isize {
        for j in -2..=2isize {
            s += GAUSS5[(i + 2) as usize][(j + 2) as usize] * x[[i, j]] as u32;
        }
    }
    (s >> 8) as u8
}
