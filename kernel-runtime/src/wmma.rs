//! Tensor cores: a warp's matrix multiply-accumulate, as CUDA's `nvcuda::wmma` and PTX's
//! `mma.sync`. The 32 lanes of a warp hold a tile of a matrix between them, each lane some of
//! its elements (a *fragment*); [`mma_sync`] multiplies the warp's tiles of `A` and `B` and adds
//! the tile of `C`, on the GPU's tensor cores.
//!
//! | CUDA C++ | here |
//! | --- | --- |
//! | `fragment<matrix_a, 16, 16, 16, half, row_major> a;` | `let mut a = MatrixA::<M16N16K16, f16>::new();` |
//! | `fragment<matrix_b, 16, 16, 16, half, col_major> b;` | `let mut b = MatrixB::<M16N16K16, f16>::new();` |
//! | `fragment<accumulator, 16, 16, 16, float> c;` | `let mut c = Accumulator::<M16N16K16>::new();` |
//! | `fragment<matrix_a, 16, 16, 8, precision::tf32, row_major>` | `MatrixA::<M16N8K8, Tf32>` |
//! | `fragment<accumulator, 16, 16, 16, int>` | `Accumulator::<M16N8K32, i32>` |
//! | `fill_fragment(c, 0.0f)` | `fill_fragment(&mut c, 0.0)` |
//! | `load_matrix_sync(a, p + r * ldm + k, ldm)` | `load_matrix_sync(&mut a, &x, [r, k], Layout::RowMajor)` |
//! | `ldmatrix.sync.aligned.m8n8.x4.shared.b16` | `ldmatrix_sync(&mut a, &s, [r, k], Layout::RowMajor)` |
//! | `mma_sync(d, a, b, c)` | `mma_sync(&mut d, &a, &b, &c)` |
//! | `store_matrix_sync(p + r * ldm + c, d, ldm, mem_row_major)` | `store_matrix_sync(&mut y, [r, c], &d, Layout::RowMajor)` |
//! | `frag.x[i]`, `frag.num_elements` | `frag.x[i]`, `frag.x.len()` |
//!
//! Loads and stores take a 2-D array or shared array and the tile's first row and column in
//! it; `Layout::ColMajor` reads a matrix kept transposed (`x[[k, i]]` for element `(i, k)`).
//! A load converts each element to the fragment's type: an `f32` array loads into [`Tf32`]
//! fragments, rounded.
//!
//! # Shapes and types
//!
//! | shape | `A` × `B` | element types | PTX |
//! | --- | --- | --- | --- |
//! | [`M16N8K8`] | 16 × 8 by 8 × 8 | [`Tf32`] into `f32` | `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` |
//! | [`M16N8K16`] | 16 × 16 by 16 × 8 | `f16`, `bf16` into `f32` | `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` |
//! | [`M16N16K16`] | 16 × 16 by 16 × 16 | `f16`, `bf16` into `f32` | two of the above |
//! | [`M16N8K32`] | 16 × 32 by 32 × 8 | `i8`, `u8` into `i32` | `mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32` |
//!
//! Every shape needs sm_80 or later: a build for an older GPU refuses a kernel that calls
//! [`mma_sync`] at compile time, at the call. A shape that does not hold a type
//! (`MatrixA<M16N8K8, f16>`) is a compile error ([`Fits`]).
//!
//! # Which lane holds what
//!
//! A fragment's elements lie in its lanes as the PTX ISA lays out `mma.m16n8k8`, `m16n8k16`
//! and `m16n8k32` (its figures of each shape's fragments), on every backend, so code that reads
//! or writes a fragment's elements one lane at a time (`frag.x[i]`) means the same on the CPU as
//! on a GPU. With `g = lane / 4`, `t = lane % 4`, `p` elements per 32-bit register (1 for
//! `tf32`, 2 for the halves, 4 for the bytes), register `r = i / p` and `e = i % p`:
//!
//! - `A`, `x[i]`: row `g + 8 (r % 2)`, column `p t + e + K/2 (r / 2)`;
//! - `B`, `x[i]`: row `p t + e + K/2 (r % 2)`, column `g + 8 (r / 2)`;
//! - the accumulator, `x[i]`: row `g + 8 (i / 2 % 2)`, column `2t + i % 2 + 8 (i / 4)`.
//!
//! [`Fragment::place`] gives both for a lane and an element.
//!
//! # Results
//!
//! The products of two elements are exact in the accumulator's type. The CPU backend adds the
//! `K` products of an element to `C`'s value one after another, `k` from 0: in `f32` each sum
//! rounded, in `i32` wrapping. A GPU's tensor cores add them in an order of their own, so
//! `f32` results may differ by the rounding of each addition: within
//! `K · 2⁻²⁴ · (|c| + Σ |aₖ bₖ|)` of the exact sum on either backend. Integer results are
//! exact on both.
//!
//! # The warp's contract
//!
//! All 32 lanes of the warp call each [`mma_sync`] together, at one place (PTX's
//! `mma.sync.aligned`: not from two branches), with fragments of one shape and type (the types
//! see to that). On the CPU backend a lane that is not there (a partial last warp, a lane that
//! returned) or that calls it at another place stops the kernel with an error at the call; a
//! lane waiting at another collective is reported as for other collectives. Loads, stores and
//! `fill_fragment` touch the lane's own elements only; [`ldmatrix_sync`] is the warp's, under the
//! same contract as `mma_sync`.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! use kernel_runtime::wmma::*;
//!
//! /// One warp computes the 16 × 16 product `a · b`.
//! #[kernel]
//! fn tile_product(a: &Array2<f16>, b: &Array2<f16>, out: &mut Array2<f32>) {
//!     let mut fa = MatrixA::<M16N16K16, f16>::new();
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

use core::ops::{Index, IndexMut};

/// `tf32`: an `f32` rounded to the 10 bits of mantissa the tensor cores multiply (`cvt.rna`,
/// to nearest, ties away from zero), as CUDA's `wmma::__float_to_tf32`. Loading a fragment of
/// `Tf32` from an array of `f32` rounds each element so, on every backend.
///
/// ```
/// use kernel_runtime::wmma::Tf32;
/// assert_eq!(Tf32::from_f32(1.0 + 1.0 / 4096.0).to_f32(), 1.0); // below half a step
/// assert_eq!(Tf32::from_f32(1.0 + 1.0 / 2048.0).to_f32(), 1.0 + 1.0 / 1024.0); // a tie, away
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Tf32(f32);

impl Tf32 {
    /// `v` rounded to `tf32`: to nearest, ties away from zero; infinities and NaN kept. For a
    /// GPU of sm_80 or later, one instruction (`cvt.rna.tf32.f32`).
    #[inline(always)]
    pub fn from_f32(v: f32) -> Tf32 {
        #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
        {
            let bits: u32;
            // SAFETY: a conversion between registers.
            unsafe {
                core::arch::asm!(
                    "cvt.rna.tf32.f32 {b}, {v};",
                    b = out(reg32) bits,
                    v = in(reg32) v.to_bits(),
                    options(pure, nomem, nostack)
                );
            }
            Tf32(f32::from_bits(bits))
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_80")))]
        Tf32::round(v)
    }

    /// [`Tf32::from_f32`] by integer arithmetic, on every backend and GPU.
    #[inline(always)]
    fn round(v: f32) -> Tf32 {
        let bits = v.to_bits();
        if !v.is_finite() {
            return Tf32(v);
        }
        let rounded = bits.wrapping_add(1 << 12) & !0x1fff;
        Tf32(f32::from_bits(rounded))
    }

    /// The value, exactly.
    pub fn to_f32(self) -> f32 {
        self.0
    }
}

impl From<f32> for Tf32 {
    fn from(v: f32) -> Tf32 {
        Tf32::from_f32(v)
    }
}

/// An element type of `A` and `B`: `f16`, `bf16`, [`Tf32`], `i8` or `u8`, with the accumulator's
/// type its products sum in (`f32`, or `i32` for the integers) and how many fill a 32-bit
/// register.
pub trait Operand: Copy + sealed::Operand {
    /// The accumulator's element type.
    type Acc: Accumulate;
    /// Elements per 32-bit register: 4 / the element's bytes.
    const PACK: usize;
    /// Which type it is, for the instruction that multiplies it.
    const KIND: Kind;
    /// The element's bits, in the low bits.
    fn bits(self) -> u32;
    /// The element of the low bits of `bits`.
    fn from_bits(bits: u32) -> Self;
    /// The element's value in the accumulator's type, exactly.
    fn widen(self) -> Self::Acc;
}

/// An accumulator's element type: `f32` or `i32`.
pub trait Accumulate: Copy + Default + sealed::Accumulate + 'static {
    /// `self + a · b`: in `f32`, the product (exact for the operands' types) then the sum, each
    /// rounded; in `i32`, wrapping.
    fn add_product(self, a: Self, b: Self) -> Self;
    /// The element's bits.
    fn bits(self) -> u32;
    /// The element of `bits`.
    fn from_bits(bits: u32) -> Self;
}

impl Accumulate for f32 {
    fn add_product(self, a: f32, b: f32) -> f32 {
        self + a * b
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn from_bits(bits: u32) -> f32 {
        f32::from_bits(bits)
    }
}

impl Accumulate for i32 {
    fn add_product(self, a: i32, b: i32) -> i32 {
        self.wrapping_add(a.wrapping_mul(b))
    }
    fn bits(self) -> u32 {
        self as u32
    }
    fn from_bits(bits: u32) -> i32 {
        bits as i32
    }
}

/// The element types of `A` and `B`, as the instructions name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `.f16`.
    F16,
    /// `.bf16`.
    Bf16,
    /// `.tf32`.
    Tf32,
    /// `.s8`.
    S8,
    /// `.u8`.
    U8,
}

macro_rules! operands {
    ($($t:ty => $acc:ty, $pack:literal, $kind:ident,
        |$v:ident| $bits:expr, |$b:ident| $from:expr, |$w:ident| $widen:expr;)*) => {$(
        impl sealed::Operand for $t {}
        impl Operand for $t {
            type Acc = $acc;
            const PACK: usize = $pack;
            const KIND: Kind = Kind::$kind;
            fn bits(self) -> u32 {
                let $v = self;
                $bits
            }
            fn from_bits($b: u32) -> Self {
                $from
            }
            fn widen(self) -> $acc {
                let $w = self;
                $widen
            }
        }
    )*};
}

operands! {
    crate::f16 => f32, 2, F16,
        |v| v.to_bits() as u32, |b| crate::f16::from_bits(b as u16), |v| v.to_f32();
    half::bf16 => f32, 2, Bf16,
        |v| v.to_bits() as u32, |b| half::bf16::from_bits(b as u16), |v| v.to_f32();
    Tf32 => f32, 1, Tf32,
        |v| v.0.to_bits(), |b| Tf32(f32::from_bits(b)), |v| v.0;
    i8 => i32, 4, S8,
        |v| v as u8 as u32, |b| b as u8 as i8, |v| v as i32;
    u8 => i32, 4, U8,
        |v| v as u32, |b| b as u8, |v| v as i32;
}

/// A fragment's shape `m16nNkK`: the columns `N` of `B` and the accumulator, the depth `K`,
/// and the lane's elements of each.
pub trait Shape: sealed::Shape + Copy {
    /// The columns of `B` and of the accumulator: 8 or 16.
    const N: usize;
    /// The columns of `A` and rows of `B`: 8, 16 or 32.
    const K: usize;
    /// A lane's elements of `A`: `K / 2`.
    type A<T: Copy>: Copy + AsRef<[T]> + AsMut<[T]>;
    /// A lane's elements of `B`: `K N / 32`.
    type B<T: Copy>: Copy + AsRef<[T]> + AsMut<[T]>;
    /// A lane's elements of the accumulator: `N / 2`.
    type C<T: Copy>: Copy + AsRef<[T]> + AsMut<[T]>;
    /// `A`'s elements, each `v`.
    fn a<T: Copy>(v: T) -> Self::A<T>;
    /// `B`'s elements, each `v`.
    fn b<T: Copy>(v: T) -> Self::B<T>;
    /// The accumulator's elements, each `v`.
    fn c<T: Copy>(v: T) -> Self::C<T>;
}

macro_rules! shapes {
    ($($(#[$doc:meta])* $name:ident => $n:literal, $k:literal, $a:literal, $b:literal, $c:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;
        impl sealed::Shape for $name {}
        impl Shape for $name {
            const N: usize = $n;
            const K: usize = $k;
            type A<T: Copy> = [T; $a];
            type B<T: Copy> = [T; $b];
            type C<T: Copy> = [T; $c];
            fn a<T: Copy>(v: T) -> [T; $a] {
                [v; $a]
            }
            fn b<T: Copy>(v: T) -> [T; $b] {
                [v; $b]
            }
            fn c<T: Copy>(v: T) -> [T; $c] {
                [v; $c]
            }
        }
    )*};
}

shapes! {
    /// `m16n8k8`: `A` 16 × 8, `B` 8 × 8, of [`Tf32`].
    M16N8K8 => 8, 8, 4, 2, 4;
    /// `m16n8k16`: `A` 16 × 16, `B` 16 × 8, of `f16` or `bf16`.
    M16N8K16 => 8, 16, 8, 4, 4;
    /// `m16n16k16`: `A` 16 × 16, `B` 16 × 16, of `f16` or `bf16`: two `m16n8k16` side by side.
    M16N16K16 => 16, 16, 8, 8, 8;
    /// `m16n8k32`: `A` 16 × 32, `B` 32 × 8, of `i8` or `u8`, into `i32`.
    M16N8K32 => 8, 32, 16, 8, 4;
}

/// The shapes each element type multiplies in: a shape's depth `K` is 8 registers' worth of its
/// elements.
#[diagnostic::on_unimplemented(
    message = "the shape `{Self}` does not multiply `{T}`",
    label = "no tensor-core instruction multiplies `{T}` in this shape",
    note = "`Tf32` goes with `M16N8K8`; `f16` and `bf16` with `M16N8K16` or `M16N16K16`; `i8` and `u8` with `M16N8K32`"
)]
pub trait Fits<T: Operand>: Shape {}
impl Fits<Tf32> for M16N8K8 {}
impl Fits<crate::f16> for M16N8K16 {}
impl Fits<half::bf16> for M16N8K16 {}
impl Fits<crate::f16> for M16N16K16 {}
impl Fits<half::bf16> for M16N16K16 {}
impl Fits<i8> for M16N8K32 {}
impl Fits<u8> for M16N8K32 {}

mod sealed {
    pub trait Shape {}
    pub trait Operand {}
    pub trait Matrix16 {}
    pub trait Accumulate {}
    impl Accumulate for f32 {}
    impl Accumulate for i32 {}
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

/// The lane's part of a 16 × `S::K` tile of `A`.
#[derive(Clone, Copy, Debug)]
pub struct MatrixA<S: Shape + Fits<T>, T: Operand> {
    /// The lane's elements (see the module's layout).
    pub x: S::A<T>,
}

/// The lane's part of an `S::K` × `S::N` tile of `B`.
#[derive(Clone, Copy, Debug)]
pub struct MatrixB<S: Shape + Fits<T>, T: Operand> {
    /// The lane's elements (see the module's layout).
    pub x: S::B<T>,
}

/// The lane's part of a 16 × `S::N` tile of the accumulator, of `f32` (or `i32`).
#[derive(Clone, Copy, Debug)]
pub struct Accumulator<S: Shape, C: Accumulate = f32> {
    /// The lane's elements (see the module's layout).
    pub x: S::C<C>,
}

impl<S: Shape + Fits<T>, T: Operand> MatrixA<S, T> {
    /// A fragment of zeros.
    pub fn new() -> Self {
        MatrixA {
            x: S::a(T::from_bits(0)),
        }
    }
}

impl<S: Shape + Fits<T>, T: Operand> Default for MatrixA<S, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Shape + Fits<T>, T: Operand> MatrixB<S, T> {
    /// A fragment of zeros.
    pub fn new() -> Self {
        MatrixB {
            x: S::b(T::from_bits(0)),
        }
    }
}

impl<S: Shape + Fits<T>, T: Operand> Default for MatrixB<S, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Shape, C: Accumulate> Accumulator<S, C> {
    /// A fragment of zeros.
    pub fn new() -> Self {
        Accumulator {
            x: S::c(C::default()),
        }
    }
}

impl<S: Shape, C: Accumulate> Default for Accumulator<S, C> {
    fn default() -> Self {
        Self::new()
    }
}

/// The row and column in its tile of element `i` of lane `lane`'s fragment of `A`, whose
/// registers hold `pack` elements each, in a shape of depth `k`.
#[inline(always)]
fn of_a(lane: usize, i: usize, pack: usize, k: usize) -> (usize, usize) {
    let (g, t, r, e) = (lane / 4, lane % 4, i / pack, i % pack);
    (g + 8 * (r % 2), pack * t + e + k / 2 * (r / 2))
}

/// The row and column of element `i` of lane `lane`'s fragment of `B`.
#[inline(always)]
fn of_b(lane: usize, i: usize, pack: usize, k: usize) -> (usize, usize) {
    let (g, t, r, e) = (lane / 4, lane % 4, i / pack, i % pack);
    (pack * t + e + k / 2 * (r % 2), g + 8 * (r / 2))
}

/// The row and column of element `i` of lane `lane`'s fragment of the accumulator.
#[inline(always)]
fn of_c(lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (i / 2 % 2), 2 * t + i % 2 + 8 * (i / 4))
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

impl<S: Shape + Fits<T>, T: Operand> Fragment for MatrixA<S, T> {
    type Elem = T;
    fn elems(&mut self) -> &mut [T] {
        self.x.as_mut()
    }
    fn place(lane: usize, i: usize) -> (usize, usize) {
        of_a(lane, i, T::PACK, S::K)
    }
}

impl<S: Shape + Fits<T>, T: Operand> Fragment for MatrixB<S, T> {
    type Elem = T;
    fn elems(&mut self) -> &mut [T] {
        self.x.as_mut()
    }
    fn place(lane: usize, i: usize) -> (usize, usize) {
        of_b(lane, i, T::PACK, S::K)
    }
}

impl<S: Shape, C: Accumulate> Fragment for Accumulator<S, C> {
    type Elem = C;
    fn elems(&mut self) -> &mut [C] {
        self.x.as_mut()
    }
    fn place(lane: usize, i: usize) -> (usize, usize) {
        of_c(lane, i)
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
pub fn fill_fragment<S: Shape, C: Accumulate>(c: &mut Accumulator<S, C>, v: C) {
    c.x = S::c(v);
}

/// `load_matrix_sync`: the lane's elements of the tile whose first element is `x[at]`, as
/// `layout` places the tile in `x` (a 2-D array or shared array), each converted to the
/// fragment's type (an `f32` rounded to [`Tf32`]; any other type as it is).
///
/// # Panics
/// Where an element of the tile is outside `x` (a fault of the kernel, as any index).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn load_matrix_sync<F: Fragment, X>(frag: &mut F, x: &X, tile: [usize; 2], layout: Layout)
where
    X: Index<[usize; 2]> + ?Sized,
    X::Output: Copy + Into<F::Elem>,
{
    let lane = crate::warp::lane_id() as usize;
    let elems = frag.elems();
    each(
        elems.len(),
        #[cfg_attr(target_arch = "nvptx64", inline(always))]
        |i| elems[i] = x[at(tile, F::place(lane, i), layout)].into(),
    );
}

/// `store_matrix_sync`: the lane's elements of the accumulator into the tile whose first
/// element is `out[at]`, as `layout` places it.
///
/// # Panics
/// Where an element of the tile is outside `out`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_matrix_sync<S: Shape, C: Accumulate, Y>(
    out: &mut Y,
    tile: [usize; 2],
    c: &Accumulator<S, C>,
    layout: Layout,
) where
    Y: IndexMut<[usize; 2], Output = C> + ?Sized,
{
    store_matrix_within(out, tile, c, layout, [usize::MAX; 2]);
}

/// [`store_matrix_sync`] of the elements that fall inside `within`, the extent of `out` (rows
/// and columns as `out` is indexed): a tile at the edge of a matrix whose size is not a
/// multiple of the tile's.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_matrix_within<S: Shape, C: Accumulate, Y>(
    out: &mut Y,
    tile: [usize; 2],
    c: &Accumulator<S, C>,
    layout: Layout,
    within: [usize; 2],
) where
    Y: IndexMut<[usize; 2], Output = C> + ?Sized,
{
    let lane = crate::warp::lane_id() as usize;
    let elems = c.x.as_ref();
    each(
        elems.len(),
        #[cfg_attr(target_arch = "nvptx64", inline(always))]
        |i| {
            let [r, q] = at(tile, of_c(lane, i), layout);
            if r < within[0] && q < within[1] {
                out[[r, q]] = elems[i];
            }
        },
    );
}

/// A fragment that [`ldmatrix_sync`] loads, as 8 × 8 matrices of 16-bit elements, one per
/// register of each lane: `A` and `B` of `f16` or `bf16`, and `A` of [`Tf32`] (`m16n8k8`), whose
/// elements are pairs of 16-bit ones (8 × 4 matrices of `tf32`).
#[diagnostic::on_unimplemented(
    message = "`ldmatrix_sync` does not load `{Self}`",
    label = "ldmatrix moves 16-bit elements of `A` and `B`",
    note = "`ldmatrix_sync` loads `MatrixA` and `MatrixB` of `f16` or `bf16`, and `MatrixA<M16N8K8, Tf32>`; load other fragments with `load_matrix_sync`"
)]
pub trait Matrix16: Fragment<Elem: Operand> + sealed::Matrix16 {
    /// The element type of the array it loads from (`f32` for a `tf32` fragment, rounded as it
    /// loads).
    type Stored: Copy + Into<Self::Elem>;
    /// How many 8 × 8 matrices: the lane's registers (1, 2 or 4).
    const MATRICES: usize;
    /// Whether a register's two elements lie one above the other in the tile (`B`'s: rows
    /// `2t`, `2t + 1`), not side by side (`A`'s: columns `2t`, `2t + 1`).
    const DOWN: bool;
    /// Whether `ldmatrix` can load it transposed (a column-major tile): not where an element
    /// is two 16-bit halves, which the transpose would part.
    const TRANSPOSES: bool;
    /// Element `i` of the fragment from the lane's registers.
    fn from_registers(regs: [u32; 4], i: usize) -> Self::Elem;
}

impl<S: Shape + Fits<T>, T: Half> sealed::Matrix16 for MatrixA<S, T> {}
impl<S: Shape + Fits<T>, T: Half> Matrix16 for MatrixA<S, T> {
    type Stored = T;
    const MATRICES: usize = S::K / 4;
    const DOWN: bool = false;
    const TRANSPOSES: bool = true;
    #[inline(always)]
    fn from_registers(regs: [u32; 4], i: usize) -> T {
        half_of(regs, i)
    }
}
impl<S: Shape + Fits<T>, T: Half> sealed::Matrix16 for MatrixB<S, T> {}
impl<S: Shape + Fits<T>, T: Half> Matrix16 for MatrixB<S, T> {
    type Stored = T;
    const MATRICES: usize = S::K * S::N / 64;
    const DOWN: bool = true;
    const TRANSPOSES: bool = true;
    #[inline(always)]
    fn from_registers(regs: [u32; 4], i: usize) -> T {
        half_of(regs, i)
    }
}
/// Element `i` of a fragment of 16-bit elements from the lane's registers, two to a register,
/// the first in the low half.
#[inline(always)]
fn half_of<T: Operand>(regs: [u32; 4], i: usize) -> T {
    T::from_bits(regs[i / 2] >> (16 * (i % 2)) & 0xffff)
}
impl sealed::Matrix16 for MatrixA<M16N8K8, Tf32> {}
impl Matrix16 for MatrixA<M16N8K8, Tf32> {
    type Stored = f32;
    const MATRICES: usize = 4;
    const DOWN: bool = false;
    const TRANSPOSES: bool = false;
    #[inline(always)]
    fn from_registers(regs: [u32; 4], i: usize) -> Tf32 {
        Tf32::from_f32(f32::from_bits(regs[i]))
    }
}

/// The 16-bit element types: `f16` and `bf16`.
#[diagnostic::on_unimplemented(
    message = "`ldmatrix_sync` does not load fragments of `{Self}`",
    label = "ldmatrix moves 16-bit elements",
    note = "`ldmatrix_sync` loads `MatrixA` and `MatrixB` of `f16` or `bf16`, and `MatrixA<M16N8K8, Tf32>`; load other fragments with `load_matrix_sync`"
)]
pub trait Half: Operand<Acc = f32> {}
impl Half for crate::f16 {}
impl Half for half::bf16 {}

/// `ldmatrix`: the warp's load of a fragment of `f16` or `bf16`, or of `A` of [`Tf32`] from
/// `f32` (rounded as [`load_matrix_sync`] rounds), from a shared array, the tile at `x[at]`
/// placed as `layout` says. Each lane reads a row of 16 bytes of an 8 × 8 matrix of 16-bit
/// elements for the lanes that hold it: one instruction, where [`load_matrix_sync`] makes one
/// per element. A `tf32` tile in column-major layout, which the instruction cannot transpose,
/// loads as [`load_matrix_sync`] does.
///
/// All 32 lanes call it together, at one place, with the same tile and layout; each row of the
/// tile in `x` starts at a multiple of 16 bytes from its first element (a shared array's rows of
/// a multiple of 16 bytes, the tile at a column at a multiple of 16 bytes). On the CPU backend
/// a lane that does not take part, or another tile, is an error at the call; a row that breaks
/// the alignment, or an array not in shared memory, stops the kernel on every backend.
///
/// # Panics
/// Where the tile does not lie in `x` (a fault of the kernel, as any index).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn ldmatrix_sync<F, X>(frag: &mut F, x: &X, tile: [usize; 2], layout: Layout)
where
    F: Matrix16,
    X: crate::pipeline::Source<F::Stored> + Index<[usize; 2], Output = F::Stored>,
{
    if !F::TRANSPOSES && layout == Layout::ColMajor {
        return load_matrix_sync(frag, x, tile, layout);
    }
    let row = ldmatrix_row::<F>(crate::warp::lane_id() as usize, tile, layout);
    let [rows, cols] = x.extent();
    let per_row = 16 / size_of::<F::Stored>();
    if row[0] >= rows || row[1] + per_row > cols {
        let last = [row[0], row[1] + per_row - 1];
        crate::fault::out_of_bounds(
            x.label(),
            &last,
            &[rows, cols],
            crate::fault::AccessKind::Read,
        );
    }
    let start = x.first().wrapping_add(row[0] * cols + row[1]) as *const u8;
    let aligned = crate::pipeline::shared_offset(start).is_multiple_of(16);
    if !aligned || !crate::pipeline::in_shared(start) {
        crate::fault::misplaced_rows(x.label());
    }
    #[cfg(target_arch = "nvptx64")]
    gpu::ldmatrix(frag, start, F::DOWN != (layout == Layout::ColMajor));
    #[cfg(not(target_arch = "nvptx64"))]
    cpu::ldmatrix(frag, x, tile, layout);
}

/// The row of 16 bytes of `x` that lane `lane` reads in an `ldmatrix` of `F` at `tile`: row
/// `lane % 8` of 8 × 8 matrix `lane / 8` (lanes past the matrices read again those of the
/// first ones; the instruction reads no address of theirs), which starts at the place in `x` of
/// lane 0's first element of the matrix.
#[inline(always)]
fn ldmatrix_row<F: Matrix16>(lane: usize, tile: [usize; 2], layout: Layout) -> [usize; 2] {
    let matrix = lane / 8 % F::MATRICES;
    let [r, c] = at(tile, F::place(0, F::Elem::PACK * matrix), layout);
    [r + lane % 8, c]
}

/// Calls `f(0)`, .., `f(n - 1)` for `n` up to 16 (a fragment's elements) as straight-line
/// code, each `i` a constant once `n` is: the elements stay in registers on a GPU, where a
/// loop the compiler does not unroll would index them in memory.
#[inline(always)]
fn each(n: usize, mut f: impl FnMut(usize)) {
    macro_rules! upto {
        ($($i:literal)*) => { $( if $i < n { f($i) } )* };
    }
    upto!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
}

#[cfg(any(target_arch = "nvptx64", test))]
/// A fragment's four registers of `A`, or two of `B` from element `from`: `PACK` elements in
/// each, the first in the low bits.
#[inline(always)]
fn registers<T: Operand, const R: usize>(x: &[T], from: usize) -> [u32; R] {
    core::array::from_fn(|r| {
        (0..T::PACK).fold(0, |w, e| {
            let bits = 32 / T::PACK;
            w | (x[from + r * T::PACK + e].bits() & (u32::MAX >> (32 - bits))) << (bits * e)
        })
    })
}

/// `mma_sync(d, a, b, c)`: the warp's `D = A · B + C`, each lane's fragment of `D` from the
/// whole warp's `A`, `B` and `C`. All 32 lanes of the warp call it together.
///
/// # Panics
/// On the CPU backend, where a lane of the warp does not take part.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_sync<S: Shape + Fits<T>, T: Operand>(
    d: &mut Accumulator<S, T::Acc>,
    a: &MatrixA<S, T>,
    b: &MatrixB<S, T>,
    c: &Accumulator<S, T::Acc>,
) {
    #[cfg(target_arch = "nvptx64")]
    gpu::mma(d, a, b, c);
    #[cfg(not(target_arch = "nvptx64"))]
    cpu::mma(d, a, b, c);
}

/// The warp's product on a GPU: one `mma.sync` per 8 columns.
#[cfg(target_arch = "nvptx64")]
mod gpu {
    use super::*;

    /// `mma.sync.aligned.SHAPE.row.col.ACC.T.T.ACC` of registers: `d = a · b + c`.
    macro_rules! mma {
        ($inst:literal, $a:expr, $b:expr, $c:expr) => {{
            let (a, b, c) = ($a, $b, $c);
            let (mut d0, mut d1, mut d2, mut d3): (u32, u32, u32, u32);
            // SAFETY: a warp-wide multiply-add of registers; the warp's lanes meeting here is
            // the caller's contract (the `#[kernel]` or `#[device]` function that calls it
            // checks the target).
            unsafe {
                core::arch::asm!(
                    concat!($inst, " {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};"),
                    d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                    c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
                    // Not `pure`: the warp meets here, so the compiler must neither sink the
                    // instruction into a branch nor drop or merge it.
                    options(nomem, nostack)
                );
            }
            [d0, d1, d2, d3]
        }};
    }

    /// `ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16` from the row at `row`, into `frag`'s
    /// registers, the first element in the low half.
    #[inline(always)]
    pub(super) fn ldmatrix<F: Matrix16>(frag: &mut F, row: *const u8, down: bool) {
        let row = crate::pipeline::shared_addr(row);
        let (mut r0, mut r1, mut r2, mut r3) = (0u32, 0u32, 0u32, 0u32);
        macro_rules! ld {
            ($shape:literal, $($r:ident)*) => {
                // SAFETY: every lane's row lies in shared memory, at a multiple of 16 bytes,
                // with its 8 elements in the array (checked by the caller); the warp's lanes
                // meeting here is the caller's contract.
                unsafe {
                    core::arch::asm!(
                        concat!("ldmatrix.sync.aligned.m8n8.", $shape, ".shared.b16 {{",
                            ld!(@regs $($r)*), "}}, [{row}];"),
                        row = in(reg32) row,
                        $($r = out(reg32) $r,)*
                        // Not `pure`, as `mma.sync`: the warp meets here.
                        options(readonly, nostack)
                    )
                }
            };
            (@regs $a:ident) => { "{r0}" };
            (@regs $a:ident $b:ident) => { "{r0}, {r1}" };
            (@regs $a:ident $b:ident $c:ident $d:ident) => { "{r0}, {r1}, {r2}, {r3}" };
        }
        match (F::MATRICES, down) {
            (4, false) => ld!("x4", r0 r1 r2 r3),
            (4, true) => ld!("x4.trans", r0 r1 r2 r3),
            (2, false) => ld!("x2", r0 r1),
            (2, true) => ld!("x2.trans", r0 r1),
            (_, false) => ld!("x1", r0),
            (_, true) => ld!("x1.trans", r0),
        }
        let regs = [r0, r1, r2, r3];
        let elems = frag.elems();
        each(elems.len(), |i| elems[i] = F::from_registers(regs, i));
    }

    #[inline(always)]
    pub(super) fn mma<S: Shape + Fits<T>, T: Operand>(
        d: &mut Accumulator<S, T::Acc>,
        a: &MatrixA<S, T>,
        b: &MatrixB<S, T>,
        c: &Accumulator<S, T::Acc>,
    ) {
        let ra: [u32; 4] = registers(a.x.as_ref(), 0);
        let (b, c, out) = (b.x.as_ref(), c.x.as_ref(), d.x.as_mut());
        for h in 0..S::N / 8 {
            let rb: [u32; 2] = registers(b, 2 * T::PACK * h);
            let rc: [u32; 4] = core::array::from_fn(|q| c[4 * h + q].bits());
            let rd = match T::KIND {
                Kind::F16 => mma!(
                    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                    ra,
                    rb,
                    rc
                ),
                Kind::Bf16 => {
                    mma!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                        ra,
                        rb,
                        rc
                    )
                }
                Kind::Tf32 => {
                    mma!(
                        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                        ra,
                        rb,
                        rc
                    )
                }
                Kind::S8 => mma!(
                    "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                    ra,
                    rb,
                    rc
                ),
                Kind::U8 => mma!(
                    "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32",
                    ra,
                    rb,
                    rc
                ),
            };
            for q in 0..4 {
                out[4 * h + q] = T::Acc::from_bits(rd[q]);
            }
        }
    }
}

/// The warp's product on the CPU backend: the lanes post their elements of `A` and `B`,
/// widened to the accumulator's type, in one meeting of the warp (a gathering), and each lane sums its
/// elements of `D` from the rows of `A` and the columns of `B` that the lanes holding them
/// posted.
#[cfg(not(target_arch = "nvptx64"))]
mod cpu {
    use super::*;
    use crate::cpu::sched::warp::gather;
    use std::panic::Location;

    /// What a lane posts: its elements of `A` (`K / 2`, at most 16) and of `B` (`K N / 32`, at
    /// most 8), and where it calls.
    #[derive(Clone, Copy)]
    struct Post<C> {
        a: [C; 16],
        b: [C; 8],
        at: (u32, u32),
    }

    /// Why the warp's collective `op` cannot run: its lane `lane` does not take part.
    fn absent(op: &str, lane: usize) -> String {
        format!(
            "{op} needs all 32 lanes of the warp, but lane {lane} does not take part (the warp \
             is partial, or the lane returned): give the block whole warps, and call {op} from \
             every lane"
        )
    }

    /// Where a lane calls [`ldmatrix_sync`], and the tile it names.
    #[derive(Clone, Copy, PartialEq, Eq)]
    struct Load {
        at: (u32, u32),
        tile: [usize; 2],
        layout: bool,
    }

    /// The warp's `ldmatrix`: every lane at one place, with one tile, then each lane's own
    /// elements, as the instruction hands them out.
    #[track_caller]
    pub(super) fn ldmatrix<F: Matrix16, X>(frag: &mut F, x: &X, tile: [usize; 2], layout: Layout)
    where
        X: Index<[usize; 2], Output = F::Stored> + ?Sized,
    {
        let here = Location::caller();
        let load = Load {
            at: (here.line(), here.column()),
            tile,
            layout: layout == Layout::ColMajor,
        };
        let lane = crate::warp::lane_id() as usize;
        let met = gather("ldmatrix_sync", load, |posts| {
            if let Some(missing) = posts.iter().position(Option::is_none) {
                return Err(absent("ldmatrix_sync", missing));
            }
            match posts.iter().flatten().position(|p| **p != load) {
                None => Ok(()),
                Some(other) => Err(format!(
                    "ldmatrix_sync is called by lane {lane} at line {} with tile {tile:?} and by \
                     lane {other} at line {} with another tile or layout, in {}: the warp loads one \
                     tile together, at one place",
                    load.at.0,
                    posts[other].map_or(0, |p| p.at.0),
                    here.file()
                )),
            }
        });
        if let Err(why) = met {
            panic!("{why}");
        }
        let elems = frag.elems();
        for (i, e) in elems.iter_mut().enumerate() {
            *e = x[at(tile, F::place(lane, i), layout)].into();
        }
    }

    #[track_caller]
    pub(super) fn mma<S: Shape + Fits<T>, T: Operand>(
        d: &mut Accumulator<S, T::Acc>,
        a: &MatrixA<S, T>,
        b: &MatrixB<S, T>,
        c: &Accumulator<S, T::Acc>,
    ) {
        let here = Location::caller();
        let mut post = Post {
            a: [T::Acc::default(); 16],
            b: [T::Acc::default(); 8],
            at: (here.line(), here.column()),
        };
        for (w, v) in post.a.iter_mut().zip(a.x.as_ref()) {
            *w = v.widen();
        }
        for (w, v) in post.b.iter_mut().zip(b.x.as_ref()) {
            *w = v.widen();
        }
        let lane = crate::warp::lane_id() as usize;
        let (cx, out) = (c.x.as_ref(), d.x.as_mut());
        let met = gather("mma_sync", post, |posts| {
            product::<S, T>(lane, posts, cx, out, here)
        });
        if let Err(why) = met {
            panic!("{why}");
        }
    }

    /// Lane `lane`'s elements of `D = A B + C`, from the warp's posts; or why the warp does
    /// not multiply: a lane whose post it needs did not take part, or the lane calls at
    /// another place than the warp's first (`mma.sync.aligned`: one instruction, not one per
    /// branch). Some lane of the warp finds each such fault.
    fn product<S: Shape, T: Operand>(
        lane: usize,
        posts: &[Option<&Post<T::Acc>>; 32],
        c: &[T::Acc],
        d: &mut [T::Acc],
        here: &Location,
    ) -> Result<(), String> {
        let read = |l: usize| posts[l].ok_or_else(|| absent("mma_sync", l));
        let (first, mine) = (posts.iter().flatten().next(), read(lane)?);
        if let Some(first) = first.filter(|f| f.at != mine.at) {
            let lead = posts.iter().position(Option::is_some).unwrap_or_default();
            return Err(format!(
                "mma_sync is called by lane {lead} at line {} and by lane {lane} at line {} of \
                 {}: the warp must call it together, at one place (mma.sync.aligned), not from \
                 two branches",
                first.at.0,
                mine.at.0,
                here.file()
            ));
        }
        let (p, k, g, t) = (T::PACK, S::K, lane / 4, lane % 4);
        // Rows g and g + 8 of A, from the lanes of group g.
        let mut rows = [[T::Acc::default(); 32]; 2];
        for l in 4 * g..4 * g + 4 {
            let a = &read(l)?.a;
            for (i, &v) in a.iter().enumerate().take(k / 2) {
                let (r, col) = of_a(l, i, p, k);
                rows[r / 8][col] = v;
            }
        }
        // Columns 2t + n (+ 8 h) of B, from the lanes of group 2t + n.
        let mut cols = [[[T::Acc::default(); 32]; 2]; 2];
        for (n, halves) in cols.iter_mut().enumerate() {
            for l in 4 * (2 * t + n)..4 * (2 * t + n) + 4 {
                let b = &read(l)?.b;
                for (i, &v) in b.iter().enumerate().take(k * S::N / 32) {
                    let (r, col) = of_b(l, i, p, k);
                    halves[col / 8][r] = v;
                }
            }
        }
        // Each element's sum runs `k` from 0, the elements side by side (their sums do not
        // wait on each other).
        let mut sums = [T::Acc::default(); 8];
        sums[..c.len()].copy_from_slice(c);
        let operands: [_; 8] = core::array::from_fn(|i| {
            let (r, col) = of_c(lane, i);
            (&rows[r / 8], &cols[col % 2][col / 8 % 2])
        });
        for kk in 0..k {
            for (sum, (row, col)) in sums.iter_mut().zip(&operands) {
                *sum = sum.add_product(row[kk], col[kk]);
            }
        }
        d.copy_from_slice(&sums[..d.len()]);
        Ok(())
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    /// Every element of each tile is held by exactly one lane, for each depth, and the layouts
    /// are the PTX ISA's (their first elements checked by hand).
    #[test]
    fn each_element_of_a_tile_has_one_lane() {
        for (pack, k) in [(1, 8), (2, 16), (4, 32)] {
            let mut seen_a = vec![vec![0; k]; 16];
            let mut seen_b = vec![vec![0; 8]; k];
            for lane in 0..32 {
                for i in 0..k / 2 {
                    let (r, c) = of_a(lane, i, pack, k);
                    seen_a[r][c] += 1;
                }
                for i in 0..k / 4 {
                    let (r, c) = of_b(lane, i, pack, k);
                    seen_b[r][c] += 1;
                }
            }
            assert!(seen_a.iter().flatten().all(|&n| n == 1), "A, k {k}");
            assert!(seen_b.iter().flatten().all(|&n| n == 1), "B, k {k}");
        }
        // Lane 5 (group 1, thread 1). f16: a0 (1, 2), a2 (9, 2), a4 (1, 10); b0 (2, 1), b2
        // (10, 1). tf32: a1 (9, 1), a2 (1, 5); b1 (5, 1). s8: a3 (1, 7), a8 (1, 20); b5 (21, 1).
        assert_eq!(
            (of_a(5, 0, 2, 16), of_a(5, 2, 2, 16), of_a(5, 4, 2, 16)),
            ((1, 2), (9, 2), (1, 10))
        );
        assert_eq!((of_b(5, 0, 2, 16), of_b(5, 2, 2, 16)), ((2, 1), (10, 1)));
        assert_eq!(
            (of_a(5, 1, 1, 8), of_a(5, 2, 1, 8), of_b(5, 1, 1, 8)),
            ((9, 1), (1, 5), (5, 1))
        );
        assert_eq!(
            (of_a(5, 3, 4, 32), of_a(5, 8, 4, 32), of_b(5, 5, 4, 32)),
            ((1, 7), (1, 20), (21, 1))
        );
        assert_eq!(
            (of_c(5, 1), of_c(5, 3), of_c(5, 5)),
            ((1, 3), (9, 3), (1, 11))
        );
    }

    /// PTX's `ldmatrix` (its figure of the fragments it loads), run on the rows that
    /// [`ldmatrix_row`] has each lane read: every lane gets the elements its fragment holds,
    /// for `A` and `B` of each shape, in each layout.
    #[test]
    fn ldmatrix_rows_give_each_lane_its_elements() {
        fn check<F: Matrix16>(name: &str) {
            let layouts = match F::TRANSPOSES {
                true => &[Layout::RowMajor, Layout::ColMajor][..],
                false => &[Layout::RowMajor][..],
            };
            let pack = F::Elem::PACK;
            for &layout in layouts {
                let tile = [8, 16];
                let down = F::DOWN != (layout == Layout::ColMajor);
                let rows: Vec<[usize; 2]> = (0..32)
                    .map(|l| ldmatrix_row::<F>(l, tile, layout))
                    .collect();
                for lane in 0..32 {
                    let (g, t) = (lane / 4, lane % 4);
                    for i in 0..pack * F::MATRICES {
                        // Register `i / pack` of the lane, its element `i % pack` (a 32-bit
                        // element fills it): from matrix `i / pack`, whose row `p` lane
                        // `8 (i / pack) + p` read.
                        let (p, q) = if down {
                            (2 * t + i % 2, g)
                        } else {
                            (g, pack * t + i % pack)
                        };
                        let [r, c] = rows[8 * (i / pack) + p];
                        let got = [r, c + q];
                        let want = at(tile, F::place(lane, i), layout);
                        assert_eq!(got, want, "{name} {layout:?} lane {lane} element {i}");
                    }
                }
            }
        }
        check::<MatrixA<M16N16K16, crate::f16>>("A m16n16k16");
        check::<MatrixA<M16N8K16, half::bf16>>("A m16n8k16");
        check::<MatrixB<M16N8K16, crate::f16>>("B m16n8k16");
        check::<MatrixB<M16N16K16, crate::f16>>("B m16n16k16");
        check::<MatrixA<M16N8K8, Tf32>>("A m16n8k8 tf32");
    }

    #[test]
    fn registers_pack_elements_low_first() {
        let x: [i8; 8] = [1, -1, 2, 3, 4, 5, 6, 7];
        let r: [u32; 2] = registers(&x, 0);
        assert_eq!(r, [0x0302_ff01, 0x0706_0504]);
        let t = [Tf32::from_f32(1.5), Tf32::from_f32(-2.0)];
        assert_eq!(
            registers::<Tf32, 2>(&t, 0),
            [1.5f32.to_bits(), (-2.0f32).to_bits()]
        );
    }

    #[test]
    fn tf32_rounds_to_nearest_with_ties_away() {
        let step = 1.0 / 1024.0;
        assert_eq!(Tf32::from_f32(1.0 + step * 0.49).to_f32(), 1.0);
        assert_eq!(Tf32::from_f32(1.0 + step * 0.5).to_f32(), 1.0 + step);
        assert_eq!(Tf32::from_f32(-1.0 - step * 0.5).to_f32(), -1.0 - step);
        assert!(Tf32::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(Tf32::from_f32(f32::INFINITY).to_f32(), f32::INFINITY);
    }
}
