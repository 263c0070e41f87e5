//! Tensor cores: a warp's matrix multiply-accumulate, as CUDA's `nvcuda::wmma` and PTX's
//! `mma.sync`. The 32 lanes of a warp hold a tile of a matrix between them, each lane some of
//! its elements (a *fragment*); [`mma_sync`] multiplies the warp's tiles of `A` and `B` and adds
//! the tile of `C`, in one instruction of the GPU's tensor cores.
//!
//! | CUDA C++ | here |
//! | --- | --- |
//! | `fragment<matrix_a, 16, 16, 16, half, row_major> a;` | `let mut a = MatrixA::<f16>::new();` |
//! | `fragment<matrix_b, 16, 16, 16, half, col_major> b;` | `let mut b = MatrixB::<M16N16K16, f16>::new();` |
//! | `fragment<accumulator, 16, 16, 16, float> c;` | `let mut c = Accumulator::<M16N16K16>::new();` |
//! | `fill_fragment(c, 0.0f)` | `fill_fragment(&mut c, 0.0)` |
//! | `load_matrix_sync(a, p + r * ldm + k, ldm)` | `load_matrix_sync(&mut a, &x, [r, k], Layout::RowMajor)` |
//! | `mma_sync(d, a, b, c)` | `mma_sync(&mut d, &a, &b, &c)` |
//! | `store_matrix_sync(p + r * ldm + c, d, ldm, mem_row_major)` | `store_matrix_sync(&mut y, [r, c], &d, Layout::RowMajor)` |
//! | `frag.x[i]`, `frag.num_elements` | `frag.x[i]`, `frag.x.len()` |
//!
//! Loads and stores take a 2-D array or shared array and the tile's first row and column in
//! it; `Layout::ColMajor` reads a matrix kept transposed (`x[[k, i]]` for element `(i, k)`).
//!
//! # Shapes and types
//!
//! - [`M16N8K16`]: `A` 16 × 16, `B` 16 × 8, `C` and `D` 16 × 8: PTX's
//!   `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}`, for sm_80 and later.
//! - [`M16N16K16`]: `B`, `C` and `D` 16 columns wide, as `wmma`'s most used shape: two of the
//!   former side by side, on the same targets.
//!
//! `A` and `B` hold `f16` or `bf16`, the accumulator `f32`. A build for a GPU older than sm_80
//! refuses a use of either shape at compile time.
//!
//! # Which lane holds what
//!
//! A fragment's elements lie in its lanes as the PTX ISA lays out `mma.m16n8k16` (its figures
//! "MMA .m16n8k16 fragment layout"), on every backend, so code that reads or writes a
//! fragment's elements one lane at a time (`frag.x[i]`) means the same on the CPU as on a GPU.
//! With `g = lane / 4` and `t = lane % 4`:
//!
//! - `A`, `x[i]` for `i` in `0..8`: row `g + 8 (i / 2 % 2)`, column `2t + i % 2 + 8 (i / 4)`;
//! - `B`, `x[i]`: row `2t + i % 2 + 8 (i / 2 % 2)`, column `g + 8 (i / 4)`;
//! - `C`, `D`, `x[i]`: row `g + 8 (i / 2 % 2)`, column `2t + i % 2 + 8 (i / 4)`.
//!
//! # Results
//!
//! The products of two `f16` or `bf16` are exact in `f32`. The CPU backend adds the 16
//! products of an element to `C`'s value one after another, in `f32`, `k` from 0; a GPU's
//! tensor cores add them in an order of their own, so results may differ by the rounding of
//! each addition: within `16 · 2⁻²⁴ · (|c| + Σ |aₖ bₖ|)` of the exact sum on either backend.
//!
//! # The warp's contract
//!
//! All 32 lanes of the warp call each [`mma_sync`] together, with fragments of one shape and
//! type (the types see to that). On the CPU backend a lane that is not there (a partial last
//! warp, a lane that returned, a lane at another collective) stops the kernel with an error at
//! the call; checked mode reports a lane that is elsewhere as for other collectives. Loads,
//! stores and `fill_fragment` touch the lane's own elements only.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! use kernel_runtime::wmma::*;
//!
//! /// One warp computes the 16 × 16 product `a · b`.
//! #[kernel]
//! fn tile_product(a: &Array2<f16>, b: &Array2<f16>, out: &mut Array2<f32>) {
//!     let mut fa = MatrixA::<f16>::new();
//!     let mut fb = MatrixB::<M16N16K16, f16>::new();
//!     let mut acc = Accumulator::<M16N16K16>::new();
//!     load_matrix_sync(&mut fa, &a, [0, 0], Layout::RowMajor);
//!     load_matrix_sync(&mut fb, &b, [0, 0], Layout::RowMajor);
//!     let zero = acc;
//!     mma_sync(&mut acc, &fa, &fb, &zero);
//!     store_matrix_sync(&mut out, [0, 0], &acc, Layout::RowMajor);
//! }
//!
//! let dev = Device::cpu();
//! let a = Array2::from_shape_fn((16, 16), |(i, k)| f16::from_f32((i + k) as f32));
//! let b = Array2::from_shape_fn((16, 16), |(k, j)| f16::from_f32(if k == j { 2.0 } else { 0.0 }));
//! let mut out = dev.zeros::<f32, _>((16, 16)).unwrap();
//! tile_product.launch(1, 32, (&dev.to_device(&a).unwrap(), &dev.to_device(&b).unwrap(), &mut out)).unwrap();
//! assert_eq!(out.to_host().unwrap()[[3, 5]], 16.0); // 2 (3 + 5)
//! ```

use crate::math::Half;
use core::ops::{Index, IndexMut};

/// The shape `m16n8k16`: `A` 16 × 16, `B` 16 × 8, the accumulator 16 × 8.
#[derive(Clone, Copy, Debug, Default)]
pub struct M16N8K16;

/// The shape `m16n16k16`: `A` 16 × 16, `B` 16 × 16, the accumulator 16 × 16.
#[derive(Clone, Copy, Debug, Default)]
pub struct M16N16K16;

/// A fragment's shape: how many columns `B` and the accumulator have, and what a lane holds.
pub trait Shape: sealed::Sealed + Copy {
    /// The columns of `B` and of the accumulator: 8 or 16.
    const N: usize;
    /// A lane's elements of `B`: 4 per 8 columns.
    type B<T: Copy>: Copy + AsRef<[T]> + AsMut<[T]>;
    /// A lane's elements of the accumulator: 4 per 8 columns.
    type C: Copy + AsRef<[f32]> + AsMut<[f32]>;
    /// `B`'s elements, each `v`.
    fn b<T: Copy>(v: T) -> Self::B<T>;
    /// The accumulator's elements, each `v`.
    fn c(v: f32) -> Self::C;
}

impl Shape for M16N8K16 {
    const N: usize = 8;
    type B<T: Copy> = [T; 4];
    type C = [f32; 4];
    fn b<T: Copy>(v: T) -> [T; 4] {
        [v; 4]
    }
    fn c(v: f32) -> [f32; 4] {
        [v; 4]
    }
}

impl Shape for M16N16K16 {
    const N: usize = 16;
    type B<T: Copy> = [T; 8];
    type C = [f32; 8];
    fn b<T: Copy>(v: T) -> [T; 8] {
        [v; 8]
    }
    fn c(v: f32) -> [f32; 8] {
        [v; 8]
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::M16N8K16 {}
    impl Sealed for super::M16N16K16 {}
}

/// How a matrix lies in the array it is loaded from or stored to: `RowMajor`, element `(i, j)`
/// at `x[[row + i, col + j]]`; `ColMajor`, the array holds it transposed, at
/// `x[[col + j, row + i]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Element `(i, j)` at `x[[row + i, col + j]]`.
    RowMajor,
    /// Element `(i, j)` at `x[[col + j, row + i]]`.
    ColMajor,
}

/// The lane's part of a 16 × 16 tile of `A`, of `f16` or `bf16`.
#[derive(Clone, Copy, Debug)]
pub struct MatrixA<T: Half> {
    /// The lane's elements (see the module's layout).
    pub x: [T; 8],
}

/// The lane's part of a 16 × `S::N` tile of `B`, of `f16` or `bf16`.
#[derive(Clone, Copy, Debug)]
pub struct MatrixB<S: Shape, T: Half> {
    /// The lane's elements (see the module's layout).
    pub x: S::B<T>,
}

/// The lane's part of a 16 × `S::N` tile of the accumulator, of `f32`.
#[derive(Clone, Copy, Debug)]
pub struct Accumulator<S: Shape> {
    /// The lane's elements (see the module's layout).
    pub x: S::C,
}

impl<T: Half> MatrixA<T> {
    /// A fragment of zeros.
    pub fn new() -> Self {
        MatrixA {
            x: [T::narrow(0.0); 8],
        }
    }
}

impl<T: Half> Default for MatrixA<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Shape, T: Half> MatrixB<S, T> {
    /// A fragment of zeros.
    pub fn new() -> Self {
        MatrixB {
            x: S::b(T::narrow(0.0)),
        }
    }
}

impl<S: Shape, T: Half> Default for MatrixB<S, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Shape> Accumulator<S> {
    /// A fragment of zeros.
    pub fn new() -> Self {
        Accumulator { x: S::c(0.0) }
    }
}

impl<S: Shape> Default for Accumulator<S> {
    fn default() -> Self {
        Self::new()
    }
}

/// The row and column in its tile of element `i` of lane `lane`'s fragment of `A` or of the
/// accumulator.
#[inline(always)]
fn of_a_or_c(lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (i / 2 % 2), 2 * t + i % 2 + 8 * (i / 4))
}

/// The row and column in its tile of element `i` of lane `lane`'s fragment of `B`.
#[inline(always)]
fn of_b(lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    (2 * t + i % 2 + 8 * (i / 2 % 2), g + 8 * (i / 4))
}

/// A fragment: its elements and where each lies in the tile.
pub trait Fragment {
    /// The element type.
    type Elem: Copy;
    /// The lane's elements.
    fn elems(&mut self) -> &mut [Self::Elem];
    /// The row and column in the tile of element `i` of lane `lane`.
    fn place(lane: usize, i: usize) -> (usize, usize);
}

impl<T: Half> Fragment for MatrixA<T> {
    type Elem = T;
    fn elems(&mut self) -> &mut [T] {
        &mut self.x
    }
    fn place(lane: usize, i: usize) -> (usize, usize) {
        of_a_or_c(lane, i)
    }
}

impl<S: Shape, T: Half> Fragment for MatrixB<S, T> {
    type Elem = T;
    fn elems(&mut self) -> &mut [T] {
        self.x.as_mut()
    }
    fn place(lane: usize, i: usize) -> (usize, usize) {
        of_b(lane, i)
    }
}

impl<S: Shape> Fragment for Accumulator<S> {
    type Elem = f32;
    fn elems(&mut self) -> &mut [f32] {
        self.x.as_mut()
    }
    fn place(lane: usize, i: usize) -> (usize, usize) {
        of_a_or_c(lane, i)
    }
}

/// The index in the array of element `(i, j)` of the tile at `[row, col]`.
#[inline(always)]
fn at([row, col]: [usize; 2], (i, j): (usize, usize), layout: Layout) -> [usize; 2] {
    match layout {
        Layout::RowMajor => [row + i, col + j],
        Layout::ColMajor => [col + j, row + i],
    }
}

/// `fill_fragment(c, v)`: every element of the lane's fragment `v`.
#[inline(always)]
pub fn fill_fragment<S: Shape>(c: &mut Accumulator<S>, v: f32) {
    c.x = S::c(v);
}

/// `load_matrix_sync`: the lane's elements of the tile whose first element is `x[at]`, as
/// `layout` places the tile in `x` (a 2-D array or shared array).
///
/// # Panics
/// Where an element of the tile is outside `x` (a fault of the kernel, as any index).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn load_matrix_sync<F: Fragment, X>(frag: &mut F, x: &X, tile: [usize; 2], layout: Layout)
where
    X: Index<[usize; 2], Output = F::Elem> + ?Sized,
{
    let lane = crate::warp::lane_id() as usize;
    for (i, e) in frag.elems().iter_mut().enumerate() {
        *e = x[at(tile, F::place(lane, i), layout)];
    }
}

/// `store_matrix_sync`: the lane's elements of the accumulator into the tile whose first
/// element is `out[at]`, as `layout` places it.
///
/// # Panics
/// Where an element of the tile is outside `out`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_matrix_sync<S: Shape, Y>(
    out: &mut Y,
    tile: [usize; 2],
    c: &Accumulator<S>,
    layout: Layout,
) where
    Y: IndexMut<[usize; 2], Output = f32> + ?Sized,
{
    let lane = crate::warp::lane_id() as usize;
    for (i, &v) in c.x.as_ref().iter().enumerate() {
        out[at(tile, of_a_or_c(lane, i), layout)] = v;
    }
}

/// A half-precision element of `A` or `B`: its bits and which of the two it is.
pub trait Operand: Half {
    /// Whether the type is `bf16` (else `f16`).
    const BF16: bool;
    /// The value's bits.
    fn bits(self) -> u16;
}

impl Operand for half::f16 {
    const BF16: bool = false;
    fn bits(self) -> u16 {
        self.to_bits()
    }
}

impl Operand for half::bf16 {
    const BF16: bool = true;
    fn bits(self) -> u16 {
        self.to_bits()
    }
}

/// `mma_sync(d, a, b, c)`: the warp's `D = A · B + C`, each lane's fragment of `D` from the
/// whole warp's `A`, `B` and `C`. All 32 lanes of the warp call it together.
///
/// # Panics
/// On the CPU backend, where a lane of the warp does not take part.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_sync<S: Shape, T: Operand>(
    d: &mut Accumulator<S>,
    a: &MatrixA<T>,
    b: &MatrixB<S, T>,
    c: &Accumulator<S>,
) {
    #[cfg(target_arch = "nvptx64")]
    gpu::mma(d, a, b, c);
    #[cfg(not(target_arch = "nvptx64"))]
    cpu::mma(d, a, b, c);
}

/// The warp's product on a GPU: one `mma.sync.m16n8k16` per 8 columns.
#[cfg(target_arch = "nvptx64")]
mod gpu {
    use super::*;

    /// Two elements in one register, the first in the low half.
    #[inline(always)]
    fn pair<T: Operand>(lo: T, hi: T) -> u32 {
        lo.bits() as u32 | (hi.bits() as u32) << 16
    }

    #[inline(always)]
    pub(super) fn mma<S: Shape, T: Operand>(
        d: &mut Accumulator<S>,
        a: &MatrixA<T>,
        b: &MatrixB<S, T>,
        c: &Accumulator<S>,
    ) {
        let a = &a.x;
        let ra = [
            pair(a[0], a[1]),
            pair(a[2], a[3]),
            pair(a[4], a[5]),
            pair(a[6], a[7]),
        ];
        let (b, c, out) = (b.x.as_ref(), c.x.as_ref(), d.x.as_mut());
        for h in 0..S::N / 8 {
            let rb = [
                pair(b[4 * h], b[4 * h + 1]),
                pair(b[4 * h + 2], b[4 * h + 3]),
            ];
            let cc = &c[4 * h..4 * h + 4];
            let (mut d0, mut d1, mut d2, mut d3): (f32, f32, f32, f32);
            // SAFETY: a warp-wide multiply-add of registers; the warp's lanes meeting here is
            // the caller's contract (the `#[kernel]` or `#[device]` function that calls it
            // checks the target).
            unsafe {
                if !T::BF16 {
                    core::arch::asm!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};",
                        d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                        a0 = in(reg32) ra[0], a1 = in(reg32) ra[1], a2 = in(reg32) ra[2], a3 = in(reg32) ra[3],
                        b0 = in(reg32) rb[0], b1 = in(reg32) rb[1],
                        c0 = in(reg32) cc[0], c1 = in(reg32) cc[1], c2 = in(reg32) cc[2], c3 = in(reg32) cc[3],
                        options(pure, nomem, nostack)
                    );
                } else {
                    core::arch::asm!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};",
                        d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                        a0 = in(reg32) ra[0], a1 = in(reg32) ra[1], a2 = in(reg32) ra[2], a3 = in(reg32) ra[3],
                        b0 = in(reg32) rb[0], b1 = in(reg32) rb[1],
                        c0 = in(reg32) cc[0], c1 = in(reg32) cc[1], c2 = in(reg32) cc[2], c3 = in(reg32) cc[3],
                        options(pure, nomem, nostack)
                    );
                }
            }
            out[4 * h..4 * h + 4].copy_from_slice(&[d0, d1, d2, d3]);
        }
    }
}

/// The warp's product on the CPU backend: each lane gathers the rows of `A` and the columns of
/// `B` its elements of `D` need from the lanes that hold them, by shuffles, and sums.
#[cfg(not(target_arch = "nvptx64"))]
mod cpu {
    use super::*;
    use crate::warp::{ballot_sync, shfl_sync};

    /// Four elements in one word, the first in the low bits.
    fn quad<T: Operand>(v: &[T]) -> u64 {
        v.iter()
            .enumerate()
            .fold(0, |w, (k, e)| w | (e.bits() as u64) << (16 * k))
    }

    /// Element `k` of a word of four, widened.
    fn elem<T: Operand>(w: u64, k: usize) -> f32 {
        from_bits::<T>((w >> (16 * k)) as u16).wide()
    }

    /// The value of 16 bits of an `Operand`.
    fn from_bits<T: Operand>(bits: u16) -> T {
        if T::BF16 {
            T::narrow(half::bf16::from_bits(bits).to_f32())
        } else {
            T::narrow(half::f16::from_bits(bits).to_f32())
        }
    }

    #[track_caller]
    pub(super) fn mma<S: Shape, T: Operand>(
        d: &mut Accumulator<S>,
        a: &MatrixA<T>,
        b: &MatrixB<S, T>,
        c: &Accumulator<S>,
    ) {
        const FULL: u32 = u32::MAX;
        let here = ballot_sync(FULL, true);
        if here != FULL {
            let missing = (!here).trailing_zeros();
            panic!(
                "mma_sync needs all 32 lanes of the warp, but lane {missing} does not take part \
                 (the warp is partial, or the lane returned): give the block whole warps, and \
                 call mma_sync from every lane"
            );
        }
        let lane = crate::warp::lane_id() as usize;
        let (g, t) = (lane / 4, lane % 4);
        // Rows g and g + 8 of A, from lanes 4g .. 4g + 3.
        let (lo, hi) = (quad(&a.x[..4]), quad(&a.x[4..]));
        let mut rows = [[0f32; 16]; 2];
        for j in 0..4 {
            let from = (4 * g + j) as u32;
            let (l, h) = (shfl_sync(FULL, lo, from), shfl_sync(FULL, hi, from));
            for e in 0..2 {
                rows[0][2 * j + e] = elem::<T>(l, e);
                rows[1][2 * j + e] = elem::<T>(l, 2 + e);
                rows[0][2 * j + 8 + e] = elem::<T>(h, e);
                rows[1][2 * j + 8 + e] = elem::<T>(h, 2 + e);
            }
        }
        let (bx, cx, out) = (b.x.as_ref(), c.x.as_ref(), d.x.as_mut());
        for h in 0..S::N / 8 {
            // Columns 2t and 2t + 1 of this half of B, from lanes 4n .. 4n + 3.
            let own = quad(&bx[4 * h..4 * h + 4]);
            let mut cols = [[0f32; 16]; 2];
            for (e, col) in cols.iter_mut().enumerate() {
                for j in 0..4 {
                    let w = shfl_sync(FULL, own, (4 * (2 * t + e) + j) as u32);
                    for q in 0..4 {
                        col[2 * j + q % 2 + 8 * (q / 2)] = elem::<T>(w, q);
                    }
                }
            }
            for q in 0..4 {
                let i = 4 * h + q;
                let (row, col) = (&rows[q / 2], &cols[q % 2]);
                out[i] = (0..16).fold(cx[i], |acc, k| acc + row[k] * col[k]);
            }
        }
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    /// Every element of each tile is held by exactly one lane, and the layouts are the PTX
    /// ISA's for m16n8k16 (its first elements checked by hand).
    #[test]
    fn each_element_of_a_tile_has_one_lane() {
        let mut seen_a = [[0; 16]; 16];
        let mut seen_b = [[0; 16]; 16];
        for lane in 0..32 {
            for i in 0..8 {
                let (r, c) = of_a_or_c(lane, i);
                seen_a[r][c] += 1;
                let (r, c) = of_b(lane, i);
                seen_b[r][c] += 1;
            }
        }
        assert_eq!(seen_a, [[1; 16]; 16]);
        assert_eq!(seen_b, [[1; 16]; 16]);
        // Lane 5 (group 1, thread 1): a0 at (1, 2), a2 at (9, 2), a4 at (1, 10); b0 at (2, 1),
        // b2 at (10, 1); c1 at (1, 3), c3 at (9, 3).
        assert_eq!(
            (of_a_or_c(5, 0), of_a_or_c(5, 2), of_a_or_c(5, 4)),
            ((1, 2), (9, 2), (1, 10))
        );
        assert_eq!((of_b(5, 0), of_b(5, 2)), ((2, 1), (10, 1)));
        assert_eq!((of_a_or_c(5, 1), of_a_or_c(5, 3)), ((1, 3), (9, 3)));
    }
}
