//! Hopper's warpgroup matrix multiply-accumulate: PTX's `wgmma.mma_async` (sm_90a). The 128
//! threads of a *warpgroup* (four consecutive warps of a block) multiply a 64 × 16 tile of `A`
//! by a 16 × `N` tile of `B`, both read from shared memory by the tensor cores, into a 64 × `N`
//! accumulator held in their registers, `N / 2` elements a thread. One instruction does the
//! work of `N / 8` warps' `mma_sync`, and the operands never pass through registers.
//!
//! | CUDA C++ / PTX | here |
//! | --- | --- |
//! | `wgmma.fence.sync.aligned` | [`fence`] |
//! | `wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 d, da, db, p, 1, 1, 0, 1`, for each `k16` of a staged tile | `mma_async::<M64N128K16, f16, M, K>(&mut d, &sa, m, &sb, n, accumulate)` |
//! | `wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 d, da, db, p, 1, 1`, for each `k8` | `mma_async::<M64N128K8, f32, M, K>(..)` |
//! | `wgmma.commit_group.sync.aligned` | [`commit_group`] |
//! | `wgmma.wait_group.sync.aligned N` | [`wait_group::<N>`](wait_group) |
//! | `fence.proxy.async.shared::cta` | [`fence_shared`] |
//!
//! The element types ([`WgElement`]) are `f16` and `bf16` in the `M64N..K16` shapes, and `f32`
//! in the `M64N..K8` ones, multiplied as `tf32`: the tensor cores keep 10 bits of each
//! element's mantissa and drop the rest (the PTX ISA: `wgmma` truncates the lower 13 bits),
//! where [`Tf32::from_f32`](crate::wmma::Tf32::from_f32) rounds. A shape that does not
//! multiply a type is a compile error at the call.
//!
//! # The operands' layout in shared memory
//!
//! The tensor cores read *core matrices* of 8 rows of 16 bytes. Here each operand tile is a
//! 2-D shared array of `T::ROW` columns, 16 bytes (8 of 16-bit elements, 4 of `f32`), so that
//! each of its rows is a core matrix's row, and a tile is a stack of column strips:
//!
//! - `A`, `M` rows by `K` columns (`M` a multiple of 64), K-major: element `(m, k)` at
//!   [`a_place::<T, M>(m, k)`](a_place), `[k / W · M + m, k % W]` with `W = T::ROW`; the array
//!   is `[K / W · M, W]`.
//! - `B`, `K` rows by `N` columns (`N` a multiple of 8), for `f16` and `bf16` N-major (the
//!   instruction's `imm-trans-b`): element `(k, n)` at [`b_place::<T, K, N>(k, n)`](b_place),
//!   `[n / 8 · K + k, n % 8]`, the array `[N / 8 · K, 8]`, so that a row-major `B` stages
//!   without a transpose. `tf32` takes `B` K-major only: `[k / 4 · N + n, k % 4]`, the array
//!   `[K / 4 · N, 4]`, staged transposed.
//!
//! [`stage_a`] and [`stage_b`] copy such tiles from a row-major matrix in global memory with
//! `cp.async`, zeros past its edges: runs of 16 bytes, or for a `tf32` `B` each element alone.
//! These are the PTX ISA's canonical layouts without swizzle.
//!
//! # The accumulator
//!
//! Thread `t` of the warpgroup (warp `w = t / 32`, `g = t % 32 / 4`, `q = t % 4`) holds
//! element `i` at row `16 w + g + 8 (i / 2 % 2)`, column `8 (i / 4) + 2 q + i % 2`: per warp, the
//! layout of `mma_sync`'s accumulator, `N / 8` of them side by side. [`WgAccumulator::place`]
//! gives it.
//!
//! # Asynchrony
//!
//! On the GPU an `mma_async` starts the product and returns; the tensor cores read the
//! operands and write the accumulator's registers until the thread's [`wait_group`] lets its
//! group go. So:
//!
//! 1. the block writes the tiles (the copies waited for, `pipeline_wait_prior`), then
//!    [`fence_shared`] makes them visible to the tensor cores, then a barrier;
//! 2. [`fence`], then the `mma_async` calls of a group, then [`commit_group`];
//! 3. [`wait_group::<N>`](wait_group): at most the `N` latest groups still run. A tile may be
//!    written again once the groups that read it are done; the accumulator is read after
//!    the wait for its last product's group (the PTX ISA makes an earlier read undefined).
//!    Its elements are reached through [`WgAccumulator::for_each`] alone.
//!
//! The CPU backend multiplies at the call, so what it computes does not depend on these steps.
//! It checks that each is called as the GPU needs: in a block of whole warpgroups, by all 32
//! lanes of each warp together, at one place, with the same tiles (a lane that returned, or
//! lanes at two places, is an error at the call). Checked mode also compares the four warps of
//! each warpgroup, one operation after another, and treats the products' reads of their tiles
//! as the threads' reads, in flight until the warp's `wait_group` lets their group go: a write
//! to a tile before then ([`Finding::OperandInFlight`](crate::Finding::OperandInFlight)), or
//! by another warp before the barrier after it, is reported, as are tiles read before the
//! barrier that orders their staging (a data race), tiles nothing wrote, an accumulator read
//! before the wait for its last product, and a product into an accumulator written since the
//! warp's last [`fence`].
//!
//! # Where it runs
//!
//! `wgmma` exists only in PTX for exactly sm_90a (H100, H200). A crate whose kernels call it
//! builds a variant for it (`kernel_build::Builder::variant("sm_90a")`), which the runtime
//! loads on such a GPU; in the crate's own module, for other GPUs, these functions trap (the
//! launch fails). The CPU backend runs them everywhere.
//!
//! # Results
//!
//! As [`mma_sync`](crate::wmma::mma_sync)'s: products exact in `f32`, the CPU backend adding
//! them to the accumulator one after another, `k` from 0; a GPU's order may differ by the
//! rounding of each addition.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! use kernel_runtime::pipeline::{pipeline_commit, pipeline_wait_prior};
//! use kernel_runtime::wgmma::*;
//!
//! /// One warpgroup computes the 64 × 64 product `a · b` of 64 × 16 by 16 × 64.
//! #[kernel]
//! fn warpgroup_product(a: &Array2<f16>, b: &Array2<f16>, out: &mut Array2<f32>) {
//!     let mut sa = shared_array![f16; [2 * 64, 8]];
//!     let mut sb = shared_array![f16; [8 * 16, 8]];
//!     stage_a::<f16, 64, 16, 128>(&mut sa, &a, [0, 0]);
//!     stage_b::<f16, 16, 64, 128>(&mut sb, &b, [0, 0]);
//!     pipeline_commit();
//!     pipeline_wait_prior::<0>();
//!     fence_shared();
//!     sync_threads();
//!     let mut acc = WgAccumulator::<M64N64K16>::new();
//!     fence();
//!     mma_async::<M64N64K16, f16, 64, 16>(&mut acc, &sa, 0, &sb, 0, false);
//!     commit_group();
//!     wait_group::<0>();
//!     acc.for_each(thread_idx().x as usize, |at, x| out[at] = *x);
//! }
//!
//! let dev = Device::cpu();
//! let a = Array2::from_shape_fn((64, 16), |(i, k)| f16::from_f32((i % 5 + k) as f32));
//! let b = Array2::from_shape_fn((16, 64), |(k, j)| f16::from_f32(if k == j % 16 { 1.0 } else { 0.0 }));
//! let mut out = dev.zeros::<f32, _>((64, 64)).unwrap();
//! warpgroup_product.launch(1, 128, (&dev.to_device(&a).unwrap(), &dev.to_device(&b).unwrap(), &mut out)).unwrap();
//! assert_eq!(out.to_host().unwrap()[[7, 35]], (7 % 5 + 3) as f32); // a[7, 35 % 16]
//! ```

use crate::device_copy::AnyBitPattern;
use crate::pipeline::{Destination, Source};

/// The threads of a warpgroup.
pub const WARPGROUP: usize = 128;

/// The element types of the warpgroup's operand tiles, multiplied into `f32`: `f16` and `bf16`,
/// and `f32` as `tf32` (the tensor cores keep 10 bits of its mantissa, truncating the rest).
#[diagnostic::on_unimplemented(
    message = "warpgroup MMA does not multiply tiles of `{Self}`",
    label = "`wgmma` stages and multiplies `f16`, `bf16` or `f32` (as `tf32`) tiles",
    note = "stage the operands as `f16`, `bf16` or `f32`; integer tiles multiply with `wmma::mma_sync`"
)]
pub trait WgElement: Copy + AnyBitPattern + Send + Sync + sealed::WgElement + 'static {
    /// Elements in a core matrix's row of 16 bytes, the operand arrays' columns: 8, or 4 of
    /// `f32`.
    const ROW: usize;
    /// Which instruction multiplies it.
    const KIND: WgKind;
    /// The element as the tensor cores multiply it: exactly, or for `f32` its `tf32` (the low
    /// 13 bits of the mantissa dropped, as the PTX ISA says `wgmma` does).
    fn value(self) -> f32;
    #[doc(hidden)]
    /// Stages a tile of `A`, or of `B` where `B` is true: see [`stage_a`] and [`stage_b`].
    fn stage_tile<D, X, const B: bool, const R: usize, const C: usize, const THREADS: usize>(
        dst: &mut D,
        src: &X,
        from: [usize; 2],
    ) where
        D: Destination<Self>,
        X: Source<Self>;
}

/// The operand types as the instruction names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgKind {
    /// `.f16`, `B` N-major.
    F16,
    /// `.bf16`, `B` N-major.
    Bf16,
    /// `.tf32` from `f32`, `B` K-major.
    Tf32,
}

impl WgKind {
    /// Whether `B` is N-major (the instruction's `imm-trans-b`): its rows `K`, a row-major
    /// matrix staged as it is. `tf32` takes `B` K-major only, staged transposed.
    pub const fn b_n_major(self) -> bool {
        !matches!(self, WgKind::Tf32)
    }
}

macro_rules! elements {
    ($($ty:ty, $row:literal, $kind:ident, |$v:ident| $value:expr, $b:ident;)*) => {$(
        impl sealed::WgElement for $ty {}
        impl WgElement for $ty {
            const ROW: usize = $row;
            const KIND: WgKind = WgKind::$kind;
            #[inline(always)]
            fn value(self) -> f32 {
                let $v = self;
                $value
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn stage_tile<D, X, const B: bool, const R: usize, const C: usize, const THREADS: usize>(
                dst: &mut D,
                src: &X,
                from: [usize; 2],
            ) where
                D: Destination<Self>,
                X: Source<Self>,
            {
                elements!(@$b (dst, src, from) stage::<$ty, D, X, $row, R, C, THREADS>(dst, src, from))
            }
        }
    )*};
    // Both operands in runs of 16 bytes (`B` N-major).
    (@rows $args:tt $rows:expr) => { $rows };
    // `B` K-major, transposed as it is staged (`tf32`).
    (@transposed ($dst:ident, $src:ident, $from:ident) $rows:expr) => {
        match B {
            true => stage_transposed::<D, X, R, C, THREADS>($dst, $src, $from),
            false => $rows,
        }
    };
}

elements! {
    crate::f16, 8, F16, |v| v.to_f32(), rows;
    half::bf16, 8, Bf16, |v| v.to_f32(), rows;
    f32, 4, Tf32, |v| f32::from_bits(v.to_bits() & !0x1fff), transposed;
}

/// A warpgroup accumulator's shape `m64nNkK`: its columns `N`, the depth `K` of one
/// instruction, and a thread's `N / 2` elements.
pub trait WgShape: sealed::WgShape + Copy {
    /// The accumulator's columns.
    const N: usize;
    /// The depth of one instruction: 16 for `f16` and `bf16`, 8 for `tf32`.
    const K: usize;
    /// A thread's elements, `[f32; N / 2]`.
    type Regs: Copy + AsRef<[f32]> + AsMut<[f32]>;
    /// `Regs` of zeros.
    const ZERO: Self::Regs;
}

/// The shapes whose instruction multiplies `T`: `m64nNk16` 16-bit elements, `m64nNk8` `f32` as
/// `tf32`.
#[diagnostic::on_unimplemented(
    message = "the warpgroup shape `{Self}` does not multiply `{T}`",
    label = "no `wgmma` instruction multiplies `{T}` in this shape",
    note = "`f16` and `bf16` go with the `M64N..K16` shapes, `f32` (as `tf32`) with `M64N..K8`"
)]
pub trait WgTakes<T: WgElement>: WgShape {}

mod sealed {
    pub trait WgShape {}
    pub trait WgElement {}
}

macro_rules! shapes {
    ($($name:ident $n:literal $k:literal $doc:literal;)*) => {$(
        #[doc = $doc]
        #[derive(Clone, Copy, Debug)]
        pub struct $name;
        impl sealed::WgShape for $name {}
        impl WgShape for $name {
            const N: usize = $n;
            const K: usize = $k;
            type Regs = [f32; $n / 2];
            const ZERO: Self::Regs = [0.0; $n / 2];
        }
    )*};
}

shapes! {
    M64N8K16 8 16 "`m64n8k16`: 64 × 16 by 16 × 8, 4 elements a thread.";
    M64N64K16 64 16 "`m64n64k16`: 64 × 16 by 16 × 64, 32 elements a thread.";
    M64N128K16 128 16 "`m64n128k16`: 64 × 16 by 16 × 128, 64 elements a thread.";
    M64N256K16 256 16 "`m64n256k16`: 64 × 16 by 16 × 256, 128 elements a thread.";
    M64N8K8 8 8 "`m64n8k8` of `tf32`: 64 × 8 by 8 × 8, 4 elements a thread.";
    M64N64K8 64 8 "`m64n64k8` of `tf32`: 64 × 8 by 8 × 64, 32 elements a thread.";
    M64N128K8 128 8 "`m64n128k8` of `tf32`: 64 × 8 by 8 × 128, 64 elements a thread.";
    M64N256K8 256 8 "`m64n256k8` of `tf32`: 64 × 8 by 8 × 256, 128 elements a thread.";
}

// Written out, so that a shape that does not take a type lists these in its error.
impl WgTakes<crate::f16> for M64N8K16 {}
impl WgTakes<half::bf16> for M64N8K16 {}
impl WgTakes<crate::f16> for M64N64K16 {}
impl WgTakes<half::bf16> for M64N64K16 {}
impl WgTakes<crate::f16> for M64N128K16 {}
impl WgTakes<half::bf16> for M64N128K16 {}
impl WgTakes<crate::f16> for M64N256K16 {}
impl WgTakes<half::bf16> for M64N256K16 {}
impl WgTakes<f32> for M64N8K8 {}
impl WgTakes<f32> for M64N64K8 {}
impl WgTakes<f32> for M64N128K8 {}
impl WgTakes<f32> for M64N256K8 {}

/// The thread's part of a warpgroup's 64 × `S::N` accumulator, in `f32`. Its elements are
/// the tensor cores' until the warp waits for the group of the last product into it
/// ([`wait_group`]): [`for_each`](Self::for_each) before then is undefined on a GPU, and checked
/// mode stops the kernel there. A product into it after its threads wrote it ([`new`](Self::new),
/// [`for_each`](Self::for_each)) needs a [`fence`] between, which checked mode checks too.
#[derive(Clone, Copy, Debug)]
pub struct WgAccumulator<S: WgShape> {
    /// The thread's elements (see [`place`](Self::place)).
    pub(crate) x: S::Regs,
    /// Checked mode: the group of the last product into it, while the warp may not have waited
    /// for it.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(crate) group: Option<u32>,
    /// Checked mode: the warp's count of fences when its threads last wrote the elements.
    #[cfg(not(target_arch = "nvptx64"))]
    pub(crate) written: Option<u32>,
}

impl<S: WgShape> WgAccumulator<S> {
    /// An accumulator of zeros.
    #[inline(always)]
    pub fn new() -> Self {
        WgAccumulator {
            x: S::ZERO,
            #[cfg(not(target_arch = "nvptx64"))]
            group: None,
            #[cfg(not(target_arch = "nvptx64"))]
            written: imp::fences(),
        }
    }

    /// Calls `f` with the row and column of each of thread `t`'s elements (see
    /// [`place`](Self::place)) and the element, as straight-line code: on a GPU the elements
    /// stay in registers, where a loop the compiler leaves rolled would index them in memory.
    /// Call it once the warp has waited for the accumulator's last product ([`wait_group`]), or
    /// before any product.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn for_each(&mut self, t: usize, mut f: impl FnMut([usize; 2], &mut f32)) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            imp::settled(&mut self.group);
            self.written = imp::fences();
        }
        let x = self.x.as_mut();
        macro_rules! upto {
            ($($i:literal)*) => { $( if $i < x.len() { f(Self::place(t, $i), &mut x[$i]) } )* };
        }
        upto!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60
            61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89
            90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113
            114 115 116 117 118 119 120 121 122 123 124 125 126 127
        );
    }

    /// The row and column of element `i` of thread `t` of the warpgroup (`t % 128`).
    #[inline(always)]
    pub const fn place(t: usize, i: usize) -> [usize; 2] {
        let (w, lane) = (t % WARPGROUP / 32, t % 32);
        [
            16 * w + lane / 4 + 8 * (i / 2 % 2),
            8 * (i / 4) + 2 * (lane % 4) + i % 2,
        ]
    }
}

impl<S: WgShape> Default for WgAccumulator<S> {
    fn default() -> Self {
        Self::new()
    }
}

/// Where element `(m, k)` of a tile of `A` of `M` rows lies in its shared array of `T::ROW`
/// columns (16 bytes): strips of `T::ROW` columns of `A`, stacked.
#[inline(always)]
pub const fn a_place<T: WgElement, const M: usize>(m: usize, k: usize) -> [usize; 2] {
    in_strips(T::ROW, M, m, k)
}

/// Where element `(k, n)` of a tile of `B`, `K` rows by `N` columns, lies in its shared array of
/// `T::ROW` columns: N-major for 16-bit elements, strips of 8 columns of `B` stacked (each `K`
/// rows, a row of `B`'s a row of the array); K-major for `tf32`, strips of 4 rows of `B`
/// transposed (each `N` rows, a column of `B`'s a row of the array).
#[inline(always)]
pub const fn b_place<T: WgElement, const K: usize, const N: usize>(
    k: usize,
    n: usize,
) -> [usize; 2] {
    b_at::<T>(k, n, K, N)
}

/// [`b_place`] in a tile `depth` rows by `width` columns.
#[inline(always)]
const fn b_at<T: WgElement>(k: usize, n: usize, depth: usize, width: usize) -> [usize; 2] {
    match T::KIND.b_n_major() {
        true => in_strips(T::ROW, depth, k, n),
        false => in_strips(T::ROW, width, n, k),
    }
}

/// The descriptor's strides of a tile of `A` of `M` rows ([`a_place`]), in bytes: from a core
/// matrix to the next along `K` (the leading byte offset) and along `M` (the stride byte
/// offset). `A` is K-major: the canonical layout without swizzle `((8,m),(T,2)):((1T,SBO),(1,LBO))`,
/// `T` elements in 16 bytes.
#[inline(always)]
#[cfg_attr(not(target_feature = "sm_90a"), allow(dead_code))] // the GPU's descriptors
pub(crate) fn a_strides<T: WgElement, const M: usize>() -> (usize, usize) {
    let at = |m, k| byte_at::<T>(a_place::<T, M>(m, k));
    strides(at(0, 0), at(0, T::ROW), at(8, 0))
}

/// The descriptor's strides of a tile of `B`, `depth` rows by `width` columns ([`b_place`]), in
/// bytes: from a core matrix to the next along `K` (leading) and along `N` (stride). N-major,
/// the canonical layout without swizzle `((T,1,n),(8,k)):((1,T,SBO),(1T,LBO))`; K-major, as
/// `A`'s.
#[inline(always)]
#[cfg_attr(not(target_feature = "sm_90a"), allow(dead_code))] // the GPU's descriptors
pub(crate) fn b_strides<T: WgElement>(depth: usize, width: usize) -> (usize, usize) {
    let at = |k, n| byte_at::<T>(b_at::<T>(k, n, depth, width));
    let next_k = if T::KIND.b_n_major() { 8 } else { T::ROW };
    strides(at(0, 0), at(next_k, 0), at(0, 8))
}

/// The bytes from the core matrix at byte `origin` to the next along `K` (at `next_k`) and along
/// `M` or `N` (at `next_mn`).
#[inline(always)]
const fn strides(origin: usize, next_k: usize, next_mn: usize) -> (usize, usize) {
    (next_k - origin, next_mn - origin)
}

/// The byte of an operand's array, rows of 16 bytes, at `[row, col]`.
#[inline(always)]
const fn byte_at<T>([row, col]: [usize; 2]) -> usize {
    16 * row + size_of::<T>() * col
}

/// Where element `(row, col)` lies when strips of `w` columns, `rows` rows each, are stacked:
/// `A` by its rows `m`, an N-major `B` by its rows `k`, a K-major `B` by its columns `n`.
#[inline(always)]
const fn in_strips(w: usize, rows: usize, row: usize, col: usize) -> [usize; 2] {
    [col / w * rows + row, col % w]
}

/// Starts copying the `M × K` tile of `a` at `from` into `dst`, laid out as `A`'s tile
/// ([`a_place`]), zeros past `a`'s edges: the block's `THREADS` threads each start their share
/// of its runs of 16 bytes (`cp.async` where `a`'s rows allow, plain copies elsewhere). Each
/// thread then commits and waits as after `memcpy_async`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn stage_a<T: WgElement, const M: usize, const K: usize, const THREADS: usize>(
    dst: &mut impl Destination<T>,
    a: &impl Source<T>,
    from: [usize; 2],
) {
    T::stage_tile::<_, _, false, M, K, THREADS>(dst, a, from);
}

/// Starts copying the `K × N` tile of `b` at `from` into `dst`, laid out as `B`'s tile
/// ([`b_place`]), zeros past `b`'s edges, as [`stage_a`] does; for `tf32`, transposed, each
/// element alone (`cp.async` of 4 bytes).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn stage_b<T: WgElement, const K: usize, const N: usize, const THREADS: usize>(
    dst: &mut impl Destination<T>,
    b: &impl Source<T>,
    from: [usize; 2],
) {
    T::stage_tile::<_, _, true, K, N, THREADS>(dst, b, from);
}

/// The row and the strip of run `r` of a tile of `strips` strips: runs go down 8 rows of a
/// strip, then across the strips, then to the next 8 rows. Each 8 threads of a warp then write
/// a core matrix, 128 contiguous bytes of shared memory (no two in one bank), and a warp reads
/// 64 contiguous bytes of each of 8 rows of the matrix (whole sectors).
#[inline(always)]
const fn run_at(r: usize, strips: usize) -> (usize, usize) {
    (r / (8 * strips) * 8 + r % 8, r % (8 * strips) / 8)
}

/// The calling thread's share of the runs of `W` elements (16 bytes) of the `R × C` tile of
/// `src` at `from`, each to its place in `dst` ([`in_strips`]). A tile that lies wholly in
/// `src`, its rows at multiples of 16 bytes, is checked once and copied run by run with
/// `cp.async` alone; others run by run, each checked, zeros past the edges.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn stage<T, D, X, const W: usize, const R: usize, const C: usize, const THREADS: usize>(
    dst: &mut D,
    src: &X,
    from: [usize; 2],
) where
    T: AnyBitPattern,
    D: Destination<T>,
    X: Source<T>,
{
    const {
        assert!(
            R.is_multiple_of(8) && R > 0 && C.is_multiple_of(W) && C > 0,
            "a tile of whole core matrices"
        )
    };
    let t = crate::pipeline::block_thread::<THREADS>("wgmma::stage");
    let d0 = crate::pipeline::place_in(dst, src.label(), [0, 0], [R * C / W, W], W);
    let (aligned, inside) = crate::pipeline::source_place::<T, W, R, C>(src, from, dst.label());
    let cols = src.extent()[1];
    let s0 = src.first().wrapping_add(from[0] * cols + from[1]);
    let place = |r: usize| {
        let (row, strip) = run_at(r, C / W);
        (in_strips(W, R, row, W * strip), [row, W * strip])
    };
    if aligned && inside {
        each_run::<THREADS>(t, R * C / W, |r| {
            let (to, [row, col]) = place(r);
            let (d, s) = (
                d0.wrapping_add(W * to[0]),
                s0.wrapping_add(row * cols + col),
            );
            crate::pipeline::copy_checked_run::<T, W>(dst, to, d, s);
        });
    } else {
        each_run::<THREADS>(t, R * C / W, |r| {
            let (to, [row, col]) = place(r);
            stage_run::<T, W>(dst, src, to, [from[0] + row, from[1] + col], aligned);
        });
    }
}

/// The calling thread's share of the `K × N` tile of `f32` `src` at `from`, transposed into a
/// K-major `B` in `dst` ([`b_place`]), each element alone (`cp.async` of 4 bytes), zeros past
/// the edges. Each 32 consecutive copies, a warp's, fill one core matrix: `src`'s 8 columns in
/// 4 rows, 32 contiguous bytes of each, to 128 contiguous bytes of shared memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn stage_transposed<D, X, const K: usize, const N: usize, const THREADS: usize>(
    dst: &mut D,
    src: &X,
    from: [usize; 2],
) where
    D: Destination<f32>,
    X: Source<f32>,
{
    const {
        assert!(
            K.is_multiple_of(4) && K > 0 && N.is_multiple_of(8) && N > 0,
            "a tile of whole core matrices"
        )
    };
    let t = crate::pipeline::block_thread::<THREADS>("wgmma::stage_b");
    let d0 = crate::pipeline::place_in(dst, src.label(), [0, 0], [K / 4 * N, 4], 1);
    let (_, inside) = crate::pipeline::source_place::<f32, 1, K, N>(src, from, dst.label());
    let [rows, cols] = src.extent();
    let s0 = src.first().wrapping_add(from[0] * cols + from[1]);
    // Copy `e`: lane `e % 32` of core matrix `e / 32`, the matrices down `K` first.
    let place = |e: usize| {
        let (q, lane) = (e / 32, e % 32);
        let (k, n) = (q % (K / 4) * 4 + lane / 8, q / (K / 4) * 8 + lane % 8);
        (in_strips(4, N, n, k), [k, n])
    };
    if inside {
        each_run::<THREADS>(t, K * N, |e| {
            let (to, [k, n]) = place(e);
            let (d, s) = (
                d0.wrapping_add(4 * to[0] + to[1]),
                s0.wrapping_add(k * cols + n),
            );
            crate::pipeline::copy_checked_run::<f32, 1>(dst, to, d, s);
        });
    } else {
        each_run::<THREADS>(t, K * N, |e| {
            let (to, [k, n]) = place(e);
            let at = [from[0] + k, from[1] + n];
            let valid = (at[0] < rows && at[1] < cols) as usize;
            crate::pipeline::memcpy_async::<f32, 1>(dst, to, src, at, valid);
        });
    }
}

/// Calls `f` with each of thread `t`'s runs of `runs`: `t`, `t + THREADS`, ..; a constant
/// count of them where `THREADS` divides `runs` (a constant).
#[inline(always)]
fn each_run<const THREADS: usize>(t: usize, runs: usize, mut f: impl FnMut(usize)) {
    if runs.is_multiple_of(THREADS) {
        for p in 0..runs / THREADS {
            f(t + p * THREADS);
        }
    } else {
        let mut r = t;
        while r < runs {
            f(r);
            r += THREADS;
        }
    }
}

/// One run of `W` elements from `src[at]` to `dst[to]`, zeros past `src`'s edges: `cp.async`
/// where `src`'s rows allow (`aligned`), else plain copies.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn stage_run<T: AnyBitPattern, const W: usize>(
    dst: &mut impl Destination<T>,
    src: &impl Source<T>,
    to: [usize; 2],
    [i, k]: [usize; 2],
    aligned: bool,
) {
    let [rows, cols] = src.extent();
    let valid = if i < rows {
        cols.saturating_sub(k).min(W)
    } else {
        0
    };
    if aligned {
        crate::pipeline::memcpy_async::<T, W>(dst, to, src, [i, k], valid);
    } else {
        let s = src.first().wrapping_add(i * cols + k);
        crate::pipeline::copy_now::<T, W>(dst, to, s, valid);
    }
}

/// `wgmma.fence.sync.aligned`: orders the warpgroup's earlier accesses of the accumulators'
/// registers before the `mma_async` calls that follow. Every thread of the warpgroup calls it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn fence() {
    imp::sync_op(Op::Fence);
}

/// `wgmma.commit_group.sync.aligned`: the thread's `mma_async` calls since its last commit
/// become a group. Every thread of the warpgroup calls it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn commit_group() {
    imp::sync_op(Op::Commit);
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most the thread's `N` latest groups
/// still run: the others' accumulators are written, and their operands read. Every thread of
/// the warpgroup calls it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn wait_group<const N: u32>() {
    const { assert!(N <= 7, "wait_group takes 0 to 7") };
    imp::sync_op(Op::Wait(N));
}

/// `fence.proxy.async.shared::cta`: makes the thread's writes to shared memory (stores and
/// finished copies) visible to the tensor cores' reads of `mma_async`. Call it after the
/// copies are waited for and before the barrier that precedes the products. (Nothing in a
/// module for another GPU, where there are no such reads.)
#[inline(always)]
pub fn fence_shared() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
    // SAFETY: a memory fence; no operands.
    unsafe {
        core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack))
    };
}

/// The warpgroup operations that take no operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Fence,
    Commit,
    Wait(u32),
    Mma,
}

/// `wgmma.mma_async`, `K / S::K` times (up to 8): `d = A · B + d` (or `A · B` where
/// `accumulate` is false) for the 64 × `K` tile of `A` from row `m` (a multiple of 64) of `sa`,
/// a tile of `A` of `M` rows and `K` columns laid out as [`a_place`], and the `K` × `S::N` tile
/// of `B` from column `n` (a multiple of 8) of `sb`, a tile of `B` of `K` rows laid out as
/// [`b_place`] (for `tf32`, as wide as `sb` holds). Every thread of the warpgroup calls it
/// together, at one place, with the same tiles.
///
/// One call issues the whole depth of the staged tiles, its checks made before the first
/// instruction: the tensor cores then take the instructions back to back.
///
/// # Panics
/// Where a tile does not lie in its array, or an array is not a shared array of 16-byte rows
/// (a fault of the kernel, as an index out of bounds).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_async<S: WgTakes<T>, T: WgElement, const M: usize, const K: usize>(
    d: &mut WgAccumulator<S>,
    sa: &impl Source<T>,
    m: usize,
    sb: &impl Source<T>,
    n: usize,
    accumulate: bool,
) {
    const {
        assert!(
            M.is_multiple_of(64) && M > 0 && K.is_multiple_of(S::K) && K > 0 && K <= 8 * S::K,
            "A's rows are a multiple of 64, the depth a multiple of the shape's up to 8 of them"
        );
    };
    let width = b_width::<T, K>(sb);
    let fits = m.is_multiple_of(64)
        && n.is_multiple_of(8)
        && m < M
        && (T::KIND.b_n_major() || n + S::N <= width)
        && operand_in(sa, a_place::<T, M>(m + 63, K - 1))
        && operand_in(sb, b_at::<T>(K - 1, n + S::N - 1, K, width));
    if !fits {
        crate::fault::misplaced_operands(sa.label(), sb.label());
    }
    imp::mma::<S, T, M, K>(d, (sa, m), (sb, n, width), accumulate);
}

/// The columns of the tile of `B`, `K` deep, that `sb` holds where it is K-major (`tf32`): its
/// rows over its strips (the column count does not matter to an N-major `B`: 0).
#[inline(always)]
fn b_width<T: WgElement, const K: usize>(sb: &impl Source<T>) -> usize {
    match T::KIND.b_n_major() {
        true => 0,
        false => sb.extent()[0] / (K / T::ROW),
    }
}

/// Whether `x` is a shared array of rows of 16 bytes, from a multiple of 16 bytes (as a
/// descriptor addresses it), that holds `last`.
#[inline(always)]
fn operand_in<T: WgElement>(x: &impl Source<T>, [row, _]: [usize; 2]) -> bool {
    let [rows, cols] = x.extent();
    let first = x.first() as *const u8;
    cols == T::ROW
        && row < rows
        && crate::pipeline::in_shared(first)
        && crate::pipeline::shared_offset(first).is_multiple_of(16)
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod gpu;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use gpu as imp;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
mod imp {
    //! A module for other GPUs: `wgmma` does not exist there.
    use super::*;

    #[inline(always)]
    pub(super) fn sync_op(_: Op) {
        crate::fault::trap()
    }

    #[inline(always)]
    pub(super) fn mma<S: WgShape, T: WgElement, const M: usize, const K: usize>(
        _: &mut WgAccumulator<S>,
        _: (&impl Source<T>, usize),
        _: (&impl Source<T>, usize, usize),
        _: bool,
    ) {
        crate::fault::trap()
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod cpu;
#[cfg(not(target_arch = "nvptx64"))]
use cpu as imp;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_holds_the_elements_the_ptx_isa_gives_it() {
        type Acc = WgAccumulator<M64N128K16>;
        // Warp 0, lane 0: rows 0 and 8, column pairs every 8.
        assert_eq!(Acc::place(0, 0), [0, 0]);
        assert_eq!(Acc::place(0, 1), [0, 1]);
        assert_eq!(Acc::place(0, 2), [8, 0]);
        assert_eq!(Acc::place(0, 3), [8, 1]);
        assert_eq!(Acc::place(0, 4), [0, 8]);
        // Lane 5 of warp 1 (thread 37): row 16 + 1, columns from 2.
        assert_eq!(Acc::place(37, 0), [17, 2]);
        // The last element of the last thread: the tile's corner.
        assert_eq!(Acc::place(127, 63), [63, 127]);
        // The 128 threads' 64 elements cover the 64 × 128 tile once.
        let mut seen = vec![false; 64 * 128];
        for t in 0..WARPGROUP {
            for i in 0..64 {
                let [r, c] = Acc::place(t, i);
                assert!(!std::mem::replace(&mut seen[r * 128 + c], true));
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn a_warp_stages_whole_core_matrices() {
        // Lanes 0-7: rows 0-7 of strip 0; lanes 8-15 of strip 1; past the strips, rows 8-15.
        assert_eq!(run_at(0, 8), (0, 0));
        assert_eq!(run_at(7, 8), (7, 0));
        assert_eq!(run_at(8, 8), (0, 1));
        assert_eq!(run_at(63, 8), (7, 7));
        assert_eq!(run_at(64, 8), (8, 0));
        // Every run of a 16-row tile of 2 strips once.
        let mut seen: Vec<_> = (0..32).map(|r| run_at(r, 2)).collect();
        seen.sort();
        let all: Vec<_> = (0..16).flat_map(|m| (0..2).map(move |s| (m, s))).collect();
        assert_eq!(seen, all);
    }

    /// Asserts that the `n` elements at `place(0)`, `place(1)`, .. lie `step` bytes apart.
    fn assert_steps<T>(n: usize, step: usize, place: impl Fn(usize) -> [usize; 2]) {
        for i in 0..n {
            assert_eq!(byte_at::<T>(place(i)), byte_at::<T>(place(0)) + step * i);
        }
    }

    #[test]
    fn the_descriptors_describe_the_operands_as_laid_out() {
        type H = crate::f16;
        // The canonical layouts without swizzle: within a core matrix, A's row (one m) holds 8
        // consecutive k and an N-major B's row (one k) 8 consecutive n, the rows 16 bytes apart.
        assert_steps::<H>(8, 2, |k| a_place::<H, 128>(3, k));
        assert_steps::<H>(8, 2, |n| b_place::<H, 64, 8>(5, n));
        assert_steps::<H>(8, 16, |m| a_place::<H, 128>(m, 2));
        assert_steps::<H>(8, 16, |k| b_place::<H, 64, 8>(k, 3));
        // A, K-major: the next 8 k a strip of M rows on, the next 8 m a core matrix on.
        assert_eq!(a_strides::<H, 64>(), (16 * 64, 128));
        assert_eq!(a_strides::<H, 128>(), (16 * 128, 128));
        // B, N-major: the next 8 k a core matrix on, the next 8 n a strip of K rows on.
        assert_eq!(b_strides::<H>(16, 0), (128, 16 * 16));
        assert_eq!(b_strides::<H>(64, 0), (128, 16 * 64));
        // Every core matrix, not only the first, lies where the strides put it.
        let (lead, stride) = b_strides::<H>(64, 0);
        assert_eq!(
            byte_at::<H>(b_place::<H, 64, 8>(40, 24)),
            5 * lead + 3 * stride
        );
        let (lead, stride) = a_strides::<H, 128>();
        assert_eq!(
            byte_at::<H>(a_place::<H, 128>(72, 48)),
            6 * lead + 9 * stride
        );
    }

    #[test]
    fn tf32_operands_are_k_major_both() {
        // A core matrix's row: 4 consecutive k of one m of A, of one n of B; rows 16 bytes apart.
        assert_steps::<f32>(4, 4, |k| a_place::<f32, 64>(3, k));
        assert_steps::<f32>(4, 4, |k| b_place::<f32, 32, 128>(k, 5));
        assert_steps::<f32>(8, 16, |m| a_place::<f32, 64>(m, 1));
        assert_steps::<f32>(8, 16, |n| b_place::<f32, 32, 128>(2, n));
        // The next 4 k a strip on (of M rows of A, of N rows of B), the next 8 rows a core
        // matrix on: ((8,m),(T,2)):((1T,SBO),(1,LBO)) for both.
        assert_eq!(a_strides::<f32, 128>(), (16 * 128, 128));
        assert_eq!(b_strides::<f32>(32, 128), (16 * 128, 128));
        let (lead, stride) = b_strides::<f32>(32, 128);
        assert_eq!(
            byte_at::<f32>(b_place::<f32, 32, 128>(12, 40)),
            3 * lead + 5 * stride
        );
        // Truncated to tf32: the low 13 bits of the mantissa dropped.
        assert_eq!(
            (1.0f32 + 1.0 / 1024.0 + 1.0 / 2048.0).value(),
            1.0 + 1.0 / 1024.0
        );
        assert_eq!((-1.0f32 - 1.0 / 4096.0).value(), -1.0);
    }

    #[test]
    fn operands_lie_in_strips_of_eight_columns() {
        // A of 128 rows: column 19 is column 3 of strip 2, rows 256 on.
        assert_eq!(a_place::<crate::f16, 128>(5, 19), [261, 3]);
        // B of 64 rows: column 21 is column 5 of strip 2, rows 128 on.
        assert_eq!(b_place::<crate::f16, 64, 32>(19, 21), [147, 5]);
        // Each row of a strip is 16 bytes of a core matrix: 8 consecutive elements along K of A,
        // along N of B.
        assert_eq!(a_place::<crate::f16, 64>(0, 8), [64, 0]);
        assert_eq!(b_place::<crate::f16, 16, 8>(1, 7), [1, 7]);
        // tf32: strips of 4 columns; B transposed, a row of the array a column of B.
        assert_eq!(a_place::<f32, 64>(5, 9), [133, 1]);
        assert_eq!(b_place::<f32, 32, 128>(9, 21), [277, 1]);
    }
}
