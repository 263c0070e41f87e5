//! What `#[stencil]` functions run on: an array's shape and a neighbourhood's reach
//! ([`Geometry`]), and the GPU's walk over tiles of outputs ([`tile`], `gpu_walk`).
//!
//! A stencil's output at a point is its function of the neighbourhood there, for every point
//! whose whole neighbourhood lies in the array: its *interior*. The other points, the border,
//! get the stencil's `cval`, or keep their value (Numba's `@stencil` with `out=` and no `cval`).
//!
//! On a GPU each thread computes a tile of [`tile_planes`] planes × [`tile_rows`] rows ×
//! [`tile_cols`] columns. A tile in
//! the interior, almost all of them, runs with no test per point: it loads the elements its
//! points read once, into a [`Window`] of each input (in words of four bytes where the
//! elements are narrower, where the arrays' rows start on a word), computes all its outputs,
//! and stores them, a word at a time where they are narrower. A tile that touches the border
//! tests each point.
//!
//! On the CPU backend the rows of the array run in parallel, each row's interior a plain loop
//! (`rows`), reading the inputs through [`Input`]: in checked mode, where an input holds elements
//! nothing has written, each read is tested and a read of one reported at its line.
//!
//! ```
//! use kernel_runtime::stencil::{Geometry, Reach};
//!
//! // A 3 × 3 neighbourhood over a 4 × 5 array: the interior is rows 1..3, columns 1..4.
//! let g = Geometry::new([4, 5], Reach { below: [1, 1], above: [1, 1] });
//! assert!(g.interior([1, 1]) && g.interior([2, 3]));
//! assert!(!g.interior([0, 2]) && !g.interior([2, 4]));
//! assert_eq!(g.offset([-1, 1]), -4); // a row up, a column right
//! ```

#[cfg(not(target_arch = "nvptx64"))]
mod input;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) mod rows;
mod window;

#[cfg(not(target_arch = "nvptx64"))]
pub use input::{Around, Input};
pub use window::Window;

/// What a stencil's function reads an input array through: the neighbours of its point, at
/// relative indices of the array's rank (`#[stencil]` rewrites `x[[-1, 0]]` to
/// `x.at([-1, 0])`). A closure of the relative index is one; the CPU backend's checked mode
/// passes one ([`Around`]) that tests each read and names the line it is at.
///
/// ```
/// use kernel_runtime::stencil::Neighbours;
///
/// fn mean3(x: impl Neighbours<f32, 1>) -> f32 {
///     (x.at([-1]) + x.at([0]) + x.at([1])) / 3.0
/// }
/// let row = [3.0f32, 6.0, 9.0];
/// assert_eq!(mean3(|d: [isize; 1]| row[(1 + d[0]) as usize]), 6.0);
/// ```
pub trait Neighbours<T, const R: usize> {
    /// The neighbour at the relative index `d`.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn at(&self, d: [isize; R]) -> T;
}

impl<T, const R: usize, F: Fn([isize; R]) -> T> Neighbours<T, R> for F {
    #[inline(always)]
    fn at(&self, d: [isize; R]) -> T {
        self(d)
    }
}

/// How far a neighbourhood reaches from its centre on each axis of a rank-`R` array: `below`
/// to lower indices, `above` to higher ones (Numba's `neighborhood = ((-below, above), ..)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach<const R: usize> {
    /// The reach to lower indices, per axis.
    pub below: [usize; R],
    /// The reach to higher indices, per axis.
    pub above: [usize; R],
}

/// A rank-`R` array's shape (`R` of 1, 2 or 3) and a neighbourhood's reach in it, as three axes:
/// a rank below 3 is padded in front with axes of one element and no reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The extent of each axis, the last the fastest.
    pub shape: [usize; 3],
    /// The reach to lower indices on each axis.
    pub below: [usize; 3],
    /// The reach to higher indices on each axis.
    pub above: [usize; 3],
}

impl Geometry {
    /// The geometry of an array of `shape` (of rank 1, 2 or 3) under a neighbourhood of
    /// `reach`.
    #[inline(always)]
    pub fn new<const R: usize>(shape: [usize; R], reach: Reach<R>) -> Geometry {
        let pad = |v: [usize; R]| {
            let mut out = [0; 3];
            out[3 - R..].copy_from_slice(&v);
            out
        };
        Geometry::padded(&shape, pad(reach.below), pad(reach.above))
    }

    /// The geometry of an array of `shape` (of rank 1 to 3), given the reach `below` and
    /// `above` already on three axes: how a stencil's launch makes it of its output's shape.
    #[inline(always)]
    pub fn padded(shape: &[usize], below: [usize; 3], above: [usize; 3]) -> Geometry {
        let mut padded = [1; 3];
        padded[3 - shape.len()..].copy_from_slice(shape);
        Geometry {
            shape: padded,
            below,
            above,
        }
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.shape[0] * self.shape[1] * self.shape[2]
    }

    /// Whether the array has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether index `i` of `axis` (of the three) has the neighbourhood in the array.
    #[inline(always)]
    pub fn inside(&self, axis: usize, i: usize) -> bool {
        i >= self.below[axis] && i + self.above[axis] < self.shape[axis]
    }

    /// Whether the point at `index` (of the array's rank) is in the interior.
    #[inline(always)]
    pub fn interior<const R: usize>(&self, index: [usize; R]) -> bool {
        (0..R.min(3)).all(|k| self.inside(3 - R + k, index[k]))
    }

    /// The interior's points as runs of flat indices, one per row that has any.
    pub fn interior_runs(&self) -> impl Iterator<Item = core::ops::Range<usize>> + '_ {
        let [_, n, m] = self.shape;
        let (lo, hi) = (self.below[2], m.saturating_sub(self.above[2]));
        (0..self.shape[0] * n)
            .filter(move |row| self.inside(0, row / n) && self.inside(1, row % n) && lo < hi)
            .map(move |row| row * m + lo..row * m + hi)
    }

    /// The flat offset of the relative index `d` (of the array's rank) in the row-major array.
    #[inline(always)]
    pub fn offset<const R: usize>(&self, d: [isize; R]) -> isize {
        let (n, m) = (self.shape[1] as isize, self.shape[2] as isize);
        match R {
            1 => d[0],
            2 => d[0] * m + d[1],
            _ => (d[0] * n + d[1]) * m + d[2],
        }
    }
}

/// A point of a stencil's array: `row` rows and `col` columns past the flat index `base`. Tiles
/// and rows name their points so, with `row` and `col` constants where the loops are unrolled,
/// so that the reads of neighbours that two points share have one address, and load once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// A flat index in the array.
    pub base: usize,
    /// Rows past it.
    pub row: usize,
    /// Columns past it.
    pub col: usize,
}

impl Point {
    /// The point's flat index.
    #[inline(always)]
    pub fn flat(self, g: &Geometry) -> usize {
        self.base + self.row * g.shape[2] + self.col
    }

    /// The flat index of the neighbour at the relative index `d` (of the array's rank, each of
    /// its components summed with the point's row or column before it is scaled).
    #[inline(always)]
    pub fn neighbour<const R: usize>(self, g: &Geometry, d: [isize; R]) -> isize {
        let (n, m) = (g.shape[1] as isize, g.shape[2] as isize);
        let (r, c) = (self.row as isize, self.col as isize);
        let rest = match R {
            1 => c + d[0],
            2 => (r + d[0]) * m + (c + d[1]),
            _ => d[0] * (n * m) + (r + d[1]) * m + (c + d[2]),
        };
        self.base as isize + rest
    }
}

/// `d`, a relative index computed at run time, where it lies in the declared neighbourhood
/// `below..=above`; else the stencil stops: a trap on a GPU, a panic naming the index on the CPU
/// backend.
#[inline(always)]
#[track_caller]
pub fn within<const R: usize>(d: [isize; R], reach: Reach<R>) -> [isize; R] {
    for k in 0..R {
        if d[k] < -(reach.below[k] as isize) || d[k] > reach.above[k] as isize {
            outside(&d, reach);
        }
    }
    d
}

/// Stops a stencil whose relative index `d` left its neighbourhood.
#[cold]
#[track_caller]
#[cfg(not(target_arch = "nvptx64"))]
fn outside<const R: usize>(d: &[isize; R], reach: Reach<R>) -> ! {
    let bounds: Vec<String> = (0..R)
        .map(|k| format!("({}, {})", -(reach.below[k] as isize), reach.above[k]))
        .collect();
    panic!(
        "relative index {d:?} is outside the stencil's neighbourhood ({})",
        bounds.join(", ")
    )
}

/// Stops a stencil whose relative index left its neighbourhood: a trap.
#[cold]
#[cfg(target_arch = "nvptx64")]
fn outside<const R: usize>(_: &[isize; R], _: Reach<R>) -> ! {
    crate::fault::trap()
}

/// Output columns per GPU thread for an output element of `bytes` bytes: four bytes' worth, at
/// least one.
pub const fn tile_cols(bytes: usize) -> usize {
    if bytes == 0 || bytes >= 4 {
        1
    } else {
        4 / bytes
    }
}

/// Output rows per GPU thread for an array of rank `rank`: 1 for a single row; a strip whose
/// inner rows share the loads of their neighbours otherwise, 4 rows for 2 axes and for 3. The
/// smooth stencil over 10000² `i8` took 149 µs on an H100 in tiles of 4 × 4 against 159 to
/// 176 µs in tiles of 2, 8 or 16 rows (255 µs in one row), the fastest of the tiles
/// `examples/stencil_tiles` timed.
pub const fn tile_rows(rank: usize) -> usize {
    match rank {
        0 | 1 => 1,
        _ => 4,
    }
}

/// Output planes per GPU thread for an array of rank `rank`: 1 below 3 axes; 4 for 3, so that a
/// thread's tile of 4 × 4 points (a column each) reads the 6 × 6 columns around them from
/// memory, where a strip of rows in one plane reads, for each point, its neighbours in the
/// planes above and below besides. A thread's loads that no thread of its warp shares are
/// what moves through the GPU's second-level cache: for the 7-point Laplacian, 2.0 loads a
/// point in tiles of 4 × 4, against 3.1 in the strips of 16 rows that were the fastest of
/// one plane (448 µs over 512³ `f32` on an H100, against 466 µs in 8 rows, 3.25 loads a
/// point, and 574 µs in 2, 4.0).
pub const fn tile_planes(rank: usize) -> usize {
    match rank {
        0..=2 => 1,
        _ => 4,
    }
}

/// Threads per block of a stencil's GPU launch, all along a row.
pub const BLOCK_THREADS: u32 = 128;

/// Writes the tile of `Z` planes from `z`, `S` rows from `row` and `K` columns from `col`:
/// `f(p)` at each interior point `p`, `border` (where given) at the others. An interior tile
/// loads its inputs once, `windows(tile, wide)` (where `tile` is its first point), and computes
/// all its `Z × S × K` outputs, `at(&windows, p)`, before it stores one, with no test per
/// point; where `wide`, a row of outputs narrower than a word is stored a word at a time. A
/// point of a plane past the tile's first has that plane in its `base`.
///
/// # Safety
/// `out` must be valid for writes of `g.len()` elements, none of which another thread writes
/// at once; `f` must be safe to call at every interior point, and `windows` at the first point
/// of every interior tile whose first column is a multiple of `K`; `wide` only where
/// [`words_fit`] holds for `out` and every input; and where `Z > 1`, `at` must read through
/// the point's `base`, not the windows, which hold one plane.
#[inline(always)]
pub unsafe fn tile<T: Copy, W, const Z: usize, const S: usize, const K: usize>(
    g: &Geometry,
    [z, row, col]: [usize; 3],
    f: impl Fn(Point) -> T,
    (windows, at): (impl Fn(Point, bool) -> W, impl Fn(&W, Point) -> T),
    (out, wide): (*mut T, bool),
    border: Option<T>,
) {
    let [planes, n, m] = g.shape;
    let base = (z * n + row) * m + col;
    if z >= g.below[0]
        && z + Z + g.above[0] <= planes
        && row >= g.below[1]
        && row + S + g.above[1] <= n
        && col >= g.below[2]
        && col + K + g.above[2] <= m
    {
        let first = Point {
            base,
            row: 0,
            col: 0,
        };
        let w = windows(first, wide);
        // Inlined whatever its size on a GPU, as the closures below.
        #[inline(always)]
        fn value<T, W>(
            at: &impl Fn(&W, Point) -> T,
            w: &W,
            base: usize,
            r: usize,
            k: usize,
        ) -> core::mem::MaybeUninit<T> {
            core::mem::MaybeUninit::new(at(
                w,
                Point {
                    base,
                    row: r,
                    col: k,
                },
            ))
        }
        if Z == 1 {
            // Each row stored as soon as it is computed, after every load (the windows'):
            // only the outputs of one row are live at once.
            unrolled::<S>(
                #[cfg_attr(target_arch = "nvptx64", inline(always))]
                |r| {
                    let mut row = [core::mem::MaybeUninit::<T>::uninit(); K];
                    unrolled::<K>(
                        #[cfg_attr(target_arch = "nvptx64", inline(always))]
                        |k| row[k] = value(&at, &w, base, r, k),
                    );
                    // SAFETY: every value of the row was written; the tile is in the array
                    // (the test above); the caller's contract.
                    unsafe { store(g, &[row], (out, wide), base + r * m) }
                },
            );
            return;
        }
        // The points of planes past the first read memory, not windows: every output is
        // computed before one is stored, so that no load waits behind a store.
        let mut values = [[[core::mem::MaybeUninit::<T>::uninit(); K]; S]; Z];
        // The closures are inlined whatever their size on a GPU, so that every point reads
        // its window at constant places: registers, not memory.
        unrolled::<Z>(
            #[cfg_attr(target_arch = "nvptx64", inline(always))]
            |q| {
                unrolled::<S>(
                    #[cfg_attr(target_arch = "nvptx64", inline(always))]
                    |r| {
                        unrolled::<K>(
                            #[cfg_attr(target_arch = "nvptx64", inline(always))]
                            |k| values[q][r][k] = value(&at, &w, base + q * n * m, r, k),
                        )
                    },
                )
            },
        );
        // SAFETY: every value was written above; the tile is in the array (the test above);
        // the caller's contract.
        unrolled::<Z>(|q| unsafe { store(g, &values[q], (out, wide), base + q * n * m) });
        return;
    }
    for q in 0..Z.min(planes.saturating_sub(z)) {
        for r in 0..S.min(n.saturating_sub(row)) {
            for k in 0..K.min(m.saturating_sub(col)) {
                let at = base + q * n * m;
                let value = if g.inside(0, z + q) && g.inside(1, row + r) && g.inside(2, col + k) {
                    f(Point {
                        base: at,
                        row: r,
                        col: k,
                    })
                } else if let Some(c) = border {
                    c
                } else {
                    continue;
                };
                // SAFETY: the point is in the array (the bounds of the loops); the caller's
                // contract.
                unsafe { out.add(at + r * m + k).write(value) };
            }
        }
    }
}

/// Whether the tiles of `K` columns over an array of `T` at `ptr`, in rows of `m` elements, read
/// and write it in whole 32-bit words where its elements are narrower than a word: they are as
/// wide as one or wider, or `K` of them fill whole words and the rows and `ptr` start on a word.
/// A GPU launch tests this once of each array and runs its tiles in words where it holds of all.
///
/// ```
/// use kernel_runtime::stencil::words_fit;
///
/// let bytes = [0u32; 4]; // 16 bytes that start on a word
/// let at = bytes.as_ptr().cast::<u8>();
/// assert!(words_fit::<u8, 4>(8, at)); // rows of 8 bytes
/// assert!(!words_fit::<u8, 4>(6, at)); // rows of 6: every other row starts mid-word
/// assert!(!words_fit::<u8, 4>(8, at.wrapping_add(1)));
/// assert!(words_fit::<f32, 1>(3, bytes.as_ptr().cast::<f32>()));
/// ```
#[inline(always)]
pub fn words_fit<T, const K: usize>(m: usize, ptr: *const T) -> bool {
    let size = core::mem::size_of::<T>();
    size >= 4
        || ((K * size).is_multiple_of(4)
            && (m * size).is_multiple_of(4)
            && (ptr as usize).is_multiple_of(4))
}

/// Stores a tile's `values` at the flat index `base` of `out`: each row's as words where `wide`
/// and the elements are narrower than a word, else element by element.
///
/// # Safety
/// Every value must be written, the tile must lie in `out`, of `g`'s shape, and start at a
/// multiple of `K` columns; `wide` only where [`words_fit`] holds for `out`.
#[inline(always)]
unsafe fn store<T: Copy, const S: usize, const K: usize>(
    g: &Geometry,
    values: &[[core::mem::MaybeUninit<T>; K]; S],
    (out, wide): (*mut T, bool),
    base: usize,
) {
    let m = g.shape[2];
    let wide = wide && core::mem::size_of::<T>() < 4;
    unrolled::<S>(|r| {
        let at = base + r * m;
        if wide {
            // The row's first element starts a word: the compiler then stores the row's
            // elements a word at a time, packed in registers by byte permutes (`prmt`).
            // SAFETY: `out` and its rows start on a word (`wide`), and so does the tile's
            // first column, a multiple of `K` elements that fill whole words.
            unsafe { core::hint::assert_unchecked((out.add(at) as usize).is_multiple_of(4)) };
        }
        unrolled::<K>(|k| {
            // SAFETY: the value was written; the point is in `out` (the caller's contract).
            unsafe { out.add(at + k).write(values[r][k].assume_init()) }
        });
    });
}

/// Calls `f(0)`, .., `f(N - 1)` in order, as straight-line code for the first 16 (tests of a
/// constant), so that a tile's loads and sums are all in registers, each load once, whatever
/// the compiler's limits on unrolling loops.
#[inline(always)]
fn unrolled<const N: usize>(mut f: impl FnMut(usize)) {
    macro_rules! upto {
        ($($i:literal)*) => { $( if $i < N { f($i) } )* };
    }
    upto!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    for i in 16..N {
        f(i)
    }
}

/// The grid of a GPU launch of a stencil over `g` with tiles of `Z × S × K`: blocks of
/// [`BLOCK_THREADS`] threads along the rows, a tile each; layers of planes and strips past the
/// grid's limit of 65535 are walked by `gpu_walk`.
pub const fn gpu_blocks<const Z: usize, const S: usize, const K: usize>(
    g: &Geometry,
) -> [usize; 3] {
    let cols = g.shape[2].div_ceil(K);
    let strips = g.shape[1].div_ceil(S);
    let layers = g.shape[0].div_ceil(Z);
    [
        max1(cols.div_ceil(BLOCK_THREADS as usize)),
        max1(min(strips, 65535)),
        max1(min(layers, 65535)),
    ]
}

const fn max1(x: usize) -> usize {
    if x == 0 {
        1
    } else {
        x
    }
}

const fn min(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

/// The running GPU thread's tiles of a launch of [`gpu_blocks`]: each of its strips of `S` rows
/// in each of its layers of `Z` planes, at its `K` columns. Where `inputs_wide` (every input array passes
/// [`words_fit`]) and `out` does too, the tiles run in words: the test is made once, and each
/// of its two ways is compiled with no test of its own.
///
/// # Safety
/// As [`tile`]'s, for a launch of [`gpu_blocks`] blocks of [`BLOCK_THREADS`] threads.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn gpu_walk<T: Copy, W, const Z: usize, const S: usize, const K: usize>(
    g: &Geometry,
    f: impl Fn(Point) -> T,
    windowed: (impl Fn(Point, bool) -> W, impl Fn(&W, Point) -> T),
    (out, inputs_wide): (*mut T, bool),
    border: Option<T>,
) {
    let (b, t, d, grid) = (
        crate::ctx::block_idx(),
        crate::ctx::thread_idx(),
        crate::ctx::block_dim(),
        crate::ctx::grid_dim(),
    );
    let col = (b.x as usize * d.x as usize + t.x as usize) * K;
    if col >= g.shape[2] {
        return;
    }
    // Inlined at both calls, so that each is compiled for its `wide`.
    let walk = #[inline(always)]
    |wide: bool| {
        let mut layer = b.z as usize;
        while layer * Z < g.shape[0] {
            let mut strip = b.y as usize;
            while strip * S < g.shape[1] {
                // SAFETY: the caller's contract; tiles of distinct threads are disjoint; `wide`
                // where every array passes `words_fit`.
                unsafe {
                    tile::<T, W, Z, S, K>(
                        g,
                        [layer * Z, strip * S, col],
                        &f,
                        (&windowed.0, &windowed.1),
                        (out, wide),
                        border,
                    )
                };
                strip += grid.y as usize;
            }
            layer += grid.z as usize;
        }
    };
    if inputs_wide && words_fit::<T, K>(g.shape[2], out) {
        walk(true)
    } else {
        walk(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tile of `Z × 8 × 4` points of a launch, as the GPU's threads would take them, over
    /// 3-D arrays: each interior point gets `f`, each border point `cval`, and no point is
    /// written twice.
    fn tiles_cover_once<const Z: usize>() {
        let shapes = [
            [3, 10, 13],
            [1, 1, 7],
            [2, 17, 1],
            [4, 2, 2],
            [1, 9, 8],
            [9, 20, 14],
        ];
        let interior = core::cell::Cell::new(0);
        for shape in shapes {
            let g = Geometry::new(
                shape,
                Reach {
                    below: [1, 2, 1],
                    above: [0, 1, 1],
                },
            );
            let mut out = vec![(0u32, 0usize); g.len()];
            let f = |p: Point| p.flat(&g) as u32 + 1;
            let [cols, _, layers] = gpu_blocks::<Z, 8, 4>(&g);
            for layer in 0..layers {
                for strip in 0..shape[1].div_ceil(8) {
                    for t in 0..cols * BLOCK_THREADS as usize {
                        let col = t * 4;
                        if col < shape[2] {
                            let mut tile_out = vec![u32::MAX; g.len()];
                            // SAFETY: `tile_out` has `g.len()` elements; `at` reads through
                            // the point alone.
                            unsafe {
                                tile::<u32, (), Z, 8, 4>(
                                    &g,
                                    [layer * Z, strip * 8, col],
                                    f,
                                    (
                                        |_, _| (),
                                        |_, p| {
                                            interior.set(interior.get() + 1);
                                            f(p)
                                        },
                                    ),
                                    (tile_out.as_mut_ptr(), true),
                                    Some(0),
                                )
                            };
                            for (p, v) in tile_out.into_iter().enumerate() {
                                if v != u32::MAX {
                                    out[p].0 = v;
                                    out[p].1 += 1;
                                }
                            }
                        }
                    }
                }
            }
            for (p, &(v, writes)) in out.iter().enumerate() {
                let (z, y, x) = (
                    p / (shape[1] * shape[2]),
                    p / shape[2] % shape[1],
                    p % shape[2],
                );
                let expect = if g.interior([z, y, x]) {
                    p as u32 + 1
                } else {
                    0
                };
                assert_eq!(
                    (v, writes),
                    (expect, 1),
                    "{Z} planes, {shape:?} at {:?}",
                    (z, y, x)
                );
            }
        }
        // The 9 × 20 × 14 array has whole tiles inside: its second strip, from column 4.
        assert!(interior.get() >= Z * 8 * 4, "{Z} planes: no interior tile");
    }

    #[test]
    fn tiles_cover_the_array_once_with_the_interior_computed() {
        tiles_cover_once::<1>();
        tiles_cover_once::<2>();
        tiles_cover_once::<4>();
    }

    /// Tiles of bytes over 2-D arrays, as a launch takes them: the interior read through
    /// windows and stored in words where the rows start on one (or element by element where
    /// they do not: an odd width, a misaligned output), each point the stencil's value, the
    /// border `cval`.
    #[test]
    fn tiles_of_bytes_read_windows_and_store_words() {
        const S: usize = 4;
        const K: usize = 4;
        for ([n, m], skew) in [
            ([9, 16], 0),
            ([9, 17], 0),
            ([5, 8], 0),
            ([12, 20], 1),
            ([3, 3], 0),
        ] {
            let reach = Reach {
                below: [1, 1],
                above: [1, 2],
            };
            let g = Geometry::new([n, m], reach);
            let x: Vec<u8> = (0..n * m).map(|v| (v * 7 % 251) as u8).collect();
            let f = |p: Point| {
                let at = |d: [isize; 2]| x[p.neighbour(&g, d) as usize];
                at([-1, -1]).wrapping_add(at([1, 2])).wrapping_mul(3) ^ at([0, 0])
            };
            let windows = |t: Point, wide: bool| {
                // SAFETY: the walk asks for the windows of interior tiles alone, `wide` where
                // `x` and `out` pass `words_fit`.
                unsafe { Window::<u8, { S + 2 }, { K + 3 }>::load::<K>(&g, x.as_ptr(), t, wide) }
            };
            let at = |w: &Window<u8, { S + 2 }, { K + 3 }>, p: Point| {
                w.at(p, [-1, -1])
                    .wrapping_add(w.at(p, [1, 2]))
                    .wrapping_mul(3)
                    ^ w.at(p, [0, 0])
            };
            let mut words = vec![0xEEEE_EEEEu32; (n * m + skew).div_ceil(4)];
            // SAFETY: `skew` < 4 bytes into `words`, which holds `n * m + skew` bytes.
            let out = unsafe { words.as_mut_ptr().cast::<u8>().add(skew) };
            let wide = words_fit::<u8, K>(m, x.as_ptr()) && words_fit::<u8, K>(m, out);
            for strip in 0..n.div_ceil(S) {
                for col in (0..m).step_by(K) {
                    // SAFETY: `words` holds `n * m` bytes from `out`; `wide` as `tile` needs.
                    unsafe {
                        tile::<u8, _, 1, S, K>(
                            &g,
                            [0, strip * S, col],
                            f,
                            (windows, at),
                            (out, wide),
                            Some(7),
                        )
                    };
                }
            }
            // SAFETY: as above.
            let got = unsafe { core::slice::from_raw_parts(out, n * m) };
            for (i, &v) in got.iter().enumerate() {
                let (r, c) = (i / m, i % m);
                let expect = if g.interior([r, c]) {
                    f(Point {
                        base: i,
                        row: 0,
                        col: 0,
                    })
                } else {
                    7
                };
                assert_eq!(v, expect, "{n} x {m} (skew {skew}) at {r}, {c}");
            }
        }
    }

    #[test]
    fn the_interior_runs_row_by_row() {
        let g = Geometry::new(
            [3, 4, 5],
            Reach {
                below: [1, 0, 1],
                above: [0, 1, 2],
            },
        );
        let runs: Vec<_> = g.interior_runs().collect();
        // Planes 1 and 2, rows 0..3, columns 1..3.
        let expect: Vec<_> = [1, 2]
            .iter()
            .flat_map(|z| (0..3).map(move |y| (z * 4 + y) * 5))
            .map(|row| row + 1..row + 3)
            .collect();
        assert_eq!(runs, expect);
        let none = Geometry::new(
            [4, 2],
            Reach {
                below: [1, 1],
                above: [1, 1],
            },
        );
        assert_eq!(none.interior_runs().count(), 0);
    }

    #[test]
    fn offsets_follow_the_row_major_layout() {
        let r3 = Reach {
            below: [1; 3],
            above: [1; 3],
        };
        let g = Geometry::new([4, 5, 6], r3);
        assert_eq!(g.offset([1, -1, 2]), 30 - 6 + 2);
        let p = Point {
            base: 40,
            row: 2,
            col: 1,
        };
        assert_eq!(p.flat(&g), 40 + 12 + 1);
        assert_eq!(p.neighbour(&g, [1, -1, 2]), 53 + 30 - 6 + 2);
        let g = Geometry::new(
            [9],
            Reach {
                below: [2],
                above: [0],
            },
        );
        assert_eq!((g.shape, g.below, g.above), ([1, 1, 9], [0, 0, 2], [0; 3]));
        assert!(!g.interior([1]) && g.interior([2]) && g.interior([8]));
        assert_eq!(within([-1, 1, 0], r3), [-1, 1, 0]);
        let err = std::panic::catch_unwind(|| within([0, 2, 0], r3)).unwrap_err();
        let text = err.downcast_ref::<String>().unwrap();
        assert!(
            text.contains("[0, 2, 0]") && text.contains("(-1, 1)"),
            "{text}"
        );
    }
}
