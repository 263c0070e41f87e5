//! A block's asynchronous copy of a 2-D tile, as CUDA's
//! `cooperative_groups::memcpy_async(block, ...)`: every thread of the block makes the same
//! call, and each starts its share of the tile's runs.
//!
//! The tile is checked once a call, not once a run: its place in the shared array and the
//! alignment of both arrays' rows, then whether it lies wholly in the source. A tile that does
//! (all but the edges of a matrix) copies its runs with no test at all, each at a constant step
//! from the thread's first; one across an edge tests each run and zero-fills past the edge. Where
//! the source's rows are not at multiples of the copy's bytes, the runs are copied at once by
//! plain loads and stores, with the same result once the block has waited and met.
//!
//! ```
//! use kernel_runtime::pipeline::*;
//! use kernel_runtime::prelude::*;
//!
//! /// Each block of 64 threads stages a 16 × 32 tile of `x` (zeros past its edges) and writes
//! /// it back doubled.
//! #[kernel]
//! fn doubled_tiles(x: &Array2<f32>, y: &mut Array2<f32>) {
//!     let mut tile = shared_array![f32; [16, 32]];
//!     let row0 = 16 * block_idx().x as usize;
//!     memcpy_async_tile::<f32, 4, 16, 32, 64>(&mut tile, [0, 0], &x, [row0, 0]);
//!     pipeline_commit();
//!     pipeline_wait_prior::<0>();
//!     sync_threads();
//!     let t = thread_idx().x as usize;
//!     for r in (t / 32..16).step_by(2) {
//!         if row0 + r < y.dim().0 && t % 32 < y.dim().1 {
//!             y[[row0 + r, t % 32]] = 2.0 * tile[[r, t % 32]];
//!         }
//!     }
//! }
//!
//! let dev = Device::cpu();
//! let x = Array2::from_shape_fn((21, 30), |(i, j)| (i * 30 + j) as f32);
//! let mut y = dev.zeros::<f32, _>((21, 30)).unwrap();
//! doubled_tiles.launch(2, 64, (&dev.to_device(&x).unwrap(), &mut y)).unwrap();
//! assert_eq!(y.to_host().unwrap(), x.mapv(|v| 2.0 * v));
//! ```

use super::{imp, in_shared, memcpy_async, shared_offset, Destination, Source};
use crate::device_copy::AnyBitPattern;
use crate::fault::{misplaced_copy, out_of_bounds, tile_threads, AccessKind};

/// Whether the `R × C / N` runs of `N` elements of an `R × C` tile share out evenly among
/// `threads` threads: the rule of [`memcpy_async_tile`], which `#[kernel]` also checks at the
/// call where the sizes are constants.
pub const fn runs_shared(n: usize, r: usize, c: usize, threads: usize) -> bool {
    n > 0 && threads > 0 && (r * c / n).is_multiple_of(threads)
}

/// `cooperative_groups::memcpy_async(block, ...)` for a tile: the block's `THREADS` threads
/// together start copying the `R × C` tile of `src` from `from` to `dst` from `to`, zeros where
/// the tile passes `src`'s edges, in runs of `N` elements (4, 8 or 16 bytes), thread `t` of the
/// block (`x` fastest) runs `t`, `t + THREADS`, .., the runs in row order. The thread's
/// `pipeline_commit` and `pipeline_wait_prior` close and wait for its share, as for
/// [`memcpy_async`]; the block then meets before any thread reads another's runs.
///
/// Every thread of the block calls it, with the same arguments. It stops the kernel, as a
/// [`memcpy_async`] that breaks the module's rules does, where the block has other than
/// `THREADS` threads, where the tile does not lie in `dst` or `dst` is not a shared array whose
/// runs start at multiples of the copy's bytes, and where `src` is a shared array. A tile whose
/// runs do not share out evenly among the threads (`R * C / N` not a multiple of `THREADS`) is
/// a compile error: at the call, under `cargo check` too, where the sizes are literals or
/// constants of the module; when the kernel is built, where they are generic parameters.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn memcpy_async_tile<
    T: AnyBitPattern,
    const N: usize,
    const R: usize,
    const C: usize,
    const THREADS: usize,
>(
    dst: &mut impl Destination<T>,
    to: [usize; 2],
    src: &impl Source<T>,
    from: [usize; 2],
) {
    let parts = const {
        assert!(
            matches!(N * size_of::<T>(), 4 | 8 | 16),
            "a copy moves 4, 8 or 16 bytes"
        );
        assert!(
            R > 0 && C > 0 && C.is_multiple_of(N),
            "a tile's rows are whole runs of N elements"
        );
        assert!(
            runs_shared(N, R, C, THREADS),
            "memcpy_async_tile: the block's THREADS threads cannot share the tile's R * C / N \
             runs out evenly"
        );
        R * C / N / THREADS
    };
    let t = block_thread::<THREADS>("memcpy_async_tile");
    let cols = dst.extent()[1];
    let d0 = place_in(dst, src.label(), to, [R, C], N);
    let (aligned, inside) = source_place::<T, N, R, C>(src, from, dst.label());
    let src_cols = src.extent()[1];
    if aligned && inside {
        let s0 = src.first().wrapping_add(from[0] * src_cols + from[1]);
        for p in 0..parts {
            let [r, c] = run::<N, C, THREADS>(t, p);
            let (d, s) = (
                d0.wrapping_add(r * cols + c),
                s0.wrapping_add(r * src_cols + c),
            );
            imp::copy::<T, N>(dst, [to[0] + r, to[1] + c], d as *mut u8, s, N);
        }
    } else {
        edges::<T, N, C, THREADS>(dst, to, src, from, t, parts, aligned);
    }
}

/// Whether the runs of `src` from `from` start at multiples of their `N` elements' bytes, and
/// whether the `R × C` tile there lies wholly in `src`; the copy stops the kernel where `src`
/// lies in shared memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn source_place<T, const N: usize, const R: usize, const C: usize>(
    src: &impl Source<T>,
    from: [usize; 2],
    dst: &'static str,
) -> (bool, bool) {
    let [rows, cols] = src.extent();
    if !imp::global(src.first() as *const u8) {
        misplaced_copy(dst, src.label(), "the source is not in global memory");
    }
    let bytes = N * size_of::<T>();
    let aligned = (cols * size_of::<T>()).is_multiple_of(bytes)
        && from[1].is_multiple_of(N)
        && imp::aligned(src.first() as *const u8, bytes);
    (aligned, lies_in([rows, cols], from, [R, C]))
}

/// Whether the `extent` tile at `at` lies in an array of `shape`.
#[inline(always)]
fn lies_in(shape: [usize; 2], at: [usize; 2], extent: [usize; 2]) -> bool {
    (0..2).all(|a| shape[a] >= extent[a] && at[a] <= shape[a] - extent[a])
}

/// The runs of a tile across `src`'s edges, or whose source rows are not at multiples of
/// the copy's bytes (`aligned` false): each tested, zeros past the edges.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn edges<T: AnyBitPattern, const N: usize, const C: usize, const THREADS: usize>(
    dst: &mut impl Destination<T>,
    to: [usize; 2],
    src: &impl Source<T>,
    from: [usize; 2],
    t: usize,
    parts: usize,
    aligned: bool,
) {
    let [src_rows, src_cols] = src.extent();
    for p in 0..parts {
        let [r, c] = run::<N, C, THREADS>(t, p);
        let at = [to[0] + r, to[1] + c];
        let (i, k) = (from[0] + r, from[1] + c);
        let valid = if i < src_rows {
            src_cols.saturating_sub(k).min(N)
        } else {
            0
        };
        if aligned {
            memcpy_async::<T, N>(dst, at, src, [i, k], valid);
        } else {
            let s = src.first().wrapping_add(i * src_cols + k);
            super::copy_now::<T, N>(dst, at, s, valid);
        }
    }
}

/// The row and the column in the tile of thread `t`'s run `p`: run `t + p * THREADS` of runs
/// of `N` in rows of `C`.
#[inline(always)]
fn run<const N: usize, const C: usize, const THREADS: usize>(t: usize, p: usize) -> [usize; 2] {
    let per_row = C / N;
    if THREADS.is_multiple_of(per_row) {
        // Each part a constant number of rows below the thread's first.
        [t / per_row + p * (THREADS / per_row), N * (t % per_row)]
    } else {
        let q = t + p * THREADS;
        [q / per_row, N * (q % per_row)]
    }
}

/// The calling thread's index in its block, `x` fastest, below `THREADS`: the block's threads,
/// which the copy stops the kernel unless they are.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn block_thread<const THREADS: usize>(op: &'static str) -> usize {
    let ctx = crate::ctx::Ctx::current();
    let (i, d) = (ctx.thread_idx(), ctx.block_dim());
    let n = d.x as usize * d.y as usize * d.z as usize;
    let t = i.x as usize + d.x as usize * (i.y as usize + d.y as usize * i.z as usize);
    if n != THREADS || t >= THREADS {
        tile_threads(op, n, THREADS);
    }
    t
}

/// The address of `dst[to]`, from which an `extent` tile of runs of `n` lies in `dst`, a shared
/// array whose runs there start at multiples of their bytes: else the copy stops the kernel.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn place_in<T>(
    dst: &mut impl Destination<T>,
    src: &'static str,
    to: [usize; 2],
    extent: [usize; 2],
    n: usize,
) -> *mut T {
    let [rows, cols] = dst.extent();
    if !lies_in([rows, cols], to, extent) {
        let last = [0, 1].map(|a| to[a].saturating_add(extent[a] - 1));
        out_of_bounds(dst.label(), &last, &[rows, cols], AccessKind::Write);
    }
    let d = dst.first_mut().wrapping_add(to[0] * cols + to[1]);
    let bytes = n * size_of::<T>();
    let aligned = (cols * size_of::<T>()).is_multiple_of(bytes)
        && shared_offset(d as *const u8).is_multiple_of(bytes);
    if !in_shared(d as *const u8) || !aligned {
        misplaced_copy(
            dst.label(),
            src,
            "the tile's runs in the destination are not at multiples of the copy's bytes of a \
             shared array",
        );
    }
    d
}
