//! A GPU tile's inputs in registers: [`Window`], the elements of one input array that the
//! points of a tile read, loaded once before the tile computes, in words of four bytes where the
//! element is narrower (four `i8` a load, as a hand-written kernel over `u32` words does).
//!
//! A tile of `S` rows and `K` columns under a reach `below`, `above` reads rows
//! `row - below .. row + S + above` and columns `col - below .. col + K + above` of each input:
//! the window. Its points then read their neighbours at constant places in it, which the
//! compiler keeps in registers.
//!
//! ```
//! use kernel_runtime::stencil::{words_fit, Geometry, Point, Reach, Window};
//!
//! // A 4 × 12 array of bytes, and a tile of 2 × 4 points from (1, 4) under a 3 × 3 reach.
//! let x: Vec<i8> = (0..48).collect();
//! let g = Geometry::new([4, 12], Reach { below: [1, 1], above: [1, 1] });
//! let tile = Point { base: 12 + 4, row: 0, col: 0 };
//! // In words where the array starts on one (its rows of 12 bytes do).
//! let wide = words_fit::<i8, 4>(12, x.as_ptr());
//! // SAFETY: rows 1..3 and columns 4..8 are interior points of `g`, and `x` has its shape.
//! let w = unsafe { Window::<i8, 4, 6>::load::<4>(&g, x.as_ptr(), tile, wide) };
//! assert_eq!(w.at(Point { row: 1, col: 3, ..tile }, [-1, 1]), 20); // x[1][8]
//! ```

use super::{Geometry, Point};

/// The most words one row of a window loads; a wider row loads element by element.
const ROW_WORDS: usize = 16;

/// The elements of one input array that a tile reads: `R` rows of `C` elements, from the tile's
/// first point less the reach below on each of the last two axes.
#[derive(Clone, Copy, Debug)]
pub struct Window<T, const R: usize, const C: usize> {
    rows: [[T; C]; R],
    below: [usize; 2],
}

impl<T: Copy, const R: usize, const C: usize> Window<T, R, C> {
    /// The window of a tile of `K` columns whose first point is `tile`, over the array at `ptr`
    /// of `g`'s shape: rows of words where `wide` and the element is narrower than a word,
    /// element by element otherwise.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `g.len()` elements; every point of the tile, `R` rows
    /// less the reach and `K` columns from `tile`, must be in `g`'s interior; the tile's
    /// first column must be a multiple of `K`; and `wide` only where
    /// [`words_fit::<T, K>`](super::words_fit) holds of the array.
    #[inline(always)]
    pub unsafe fn load<const K: usize>(
        g: &Geometry,
        ptr: *const T,
        tile: Point,
        wide: bool,
    ) -> Self {
        let (m, size) = (g.shape[2], core::mem::size_of::<T>());
        let below = [g.below[1], g.below[2]];
        let first = tile.base - below[0] * m - below[1];
        let mut rows = core::mem::MaybeUninit::<[[T; C]; R]>::uninit();
        let cells = rows.as_mut_ptr().cast::<T>();
        let put = |r: usize, c: usize, v: T| {
            // SAFETY: `r < R` and `c < C` (the loops below), in the local array.
            unsafe { cells.add(r * C + c).write(v) }
        };
        let lead = (below[1] * size).div_ceil(4);
        let words = lead + ((C - below[1]) * size).div_ceil(4);
        let wide = wide && size < 4 && words <= ROW_WORDS;
        super::unrolled::<R>(|r| {
            if wide {
                // The row's words from the one before the tile's first column's, `lead` of
                // them before it: the tile's first column starts a word (`K` elements fill
                // whole words, the rows and the array start on a word).
                let at = (tile.base + r * m - below[0] * m) * size - lead * 4;
                let mut buf = [0u32; ROW_WORDS];
                super::unrolled::<ROW_WORDS>(|w| {
                    if w < words {
                        // SAFETY: the word lies in the row: the tile's columns and their reach
                        // are in it (the caller's contract), and the row starts and ends on a
                        // word, so the words that hold them do too.
                        buf[w] = unsafe { ptr.cast::<u8>().add(at + w * 4).cast::<u32>().read() };
                    }
                });
                let skip = lead * 4 - below[1] * size;
                super::unrolled::<C>(|c| {
                    // An element of one or two bytes lies in one word, at a multiple of its
                    // size: it is taken from the word by a shift, so that the words and the
                    // elements stay in registers, not a buffer in memory.
                    let o = skip + c * size;
                    let bits = (buf[o / 4] >> (8 * (o % 4))).to_le_bytes();
                    // SAFETY: `T` is narrower than the word (`wide`), its bytes the first.
                    put(r, c, unsafe { bits.as_ptr().cast::<T>().read_unaligned() });
                });
            } else {
                super::unrolled::<C>(|c| {
                    // SAFETY: the element is a point of the tile or its reach: in the array.
                    put(r, c, unsafe { *ptr.add(first + r * m + c) });
                });
            }
        });
        Window {
            // SAFETY: every element was written above.
            rows: unsafe { rows.assume_init() },
            below,
        }
    }

    /// The element at the relative index `d` (of one or two axes) from the tile's point `p`.
    ///
    /// # Panics
    /// Where the element is outside the window: a relative index outside the neighbourhood.
    #[inline(always)]
    pub fn at<const N: usize>(&self, p: Point, d: [isize; N]) -> T {
        let row = if N >= 2 { d[N.saturating_sub(2)] } else { 0 };
        let r = (p.row + self.below[0]) as isize + row;
        let c = (p.col + self.below[1]) as isize + d[N - 1];
        self.rows[r as usize][c as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stencil::Reach;

    /// Every element a tile's points read through a window is the element at that place,
    /// whether the rows load as words (aligned) or element by element (an odd row length, a
    /// misaligned start, a wide element).
    #[test]
    fn windows_hold_what_the_points_read() {
        fn check<T: Copy + PartialEq + core::fmt::Debug + From<u8>>(m: usize, skew: usize) {
            let n = 7;
            let data: Vec<T> = (0..n * m + skew).map(|v| T::from(v as u8)).collect();
            let ptr = data[skew..].as_ptr();
            let reach = Reach {
                below: [1, 2],
                above: [2, 1],
            };
            let g = Geometry::new([n, m], reach);
            const K: usize = 4;
            for row in 1..=n - 2 - 2 {
                for col in (K..m - K).step_by(K) {
                    let tile = Point {
                        base: row * m + col,
                        row: 0,
                        col: 0,
                    };
                    let wide = crate::stencil::words_fit::<T, K>(m, ptr);
                    // SAFETY: rows row..row + 2 and columns col..col + 4 with their reach are
                    // in the array; `wide` where it passes `words_fit`.
                    let w = unsafe {
                        Window::<T, { 2 + 3 }, { K + 3 }>::load::<K>(&g, ptr, tile, wide)
                    };
                    for (pr, pc) in [(0, 0), (1, 3), (0, 2)] {
                        for d in [[-1, -2], [2, 1], [0, 0], [1, -1]] {
                            let p = Point {
                                row: pr,
                                col: pc,
                                ..tile
                            };
                            let expect = data[skew..][p.neighbour(&g, d) as usize];
                            assert_eq!(w.at(p, d), expect, "m {m} skew {skew} at {p:?} {d:?}");
                        }
                    }
                }
            }
        }
        for (m, skew) in [(16, 0), (20, 0), (18, 0), (16, 1), (16, 2)] {
            check::<u8>(m, skew);
            check::<u16>(m, skew);
            check::<u32>(m, skew);
        }
    }
}
