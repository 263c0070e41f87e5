//! Block shared memory: static arrays laid out by the `#[kernel]` macro, and the dynamic part.
//!
//! `shared_array![f32; 256]` inside a kernel becomes a [`SharedArray1`] at an offset the macro
//! computed at compile time from every shared array of that kernel ([`layout`]); the total is
//! checked against [`STATIC_LIMIT`] at compile time and passed to the launch as shared bytes.
//! `dynamic_shared![f32]` views the bytes given at launch beyond the static total.

use crate::ctx::Ctx;
use crate::device_copy::AnyBitPattern;
use crate::view::{View1Mut, View2Mut, View3Mut};
use core::ops::{Index, IndexMut};

/// A 1-D array in the block's shared memory (writable by every thread of the block).
pub type SharedArray1<'a, T, const CHECK: bool = true> = View1Mut<'a, T, CHECK>;
/// A 2-D array in the block's shared memory (writable by every thread of the block).
pub type SharedArray2<'a, T, const CHECK: bool = true> = View2Mut<'a, T, CHECK>;
/// A 3-D array in the block's shared memory (writable by every thread of the block).
pub type SharedArray3<'a, T, const CHECK: bool = true> = View3Mut<'a, T, CHECK>;

/// The most static shared memory a kernel may declare: 48 KiB, as CUDA guarantees.
pub const STATIC_LIMIT: usize = 48 * 1024;

/// A message built at compile time: `prefix`, the decimal `n`, then `suffix` (cut at 512
/// bytes), for a `const` check to panic with a number in it.
///
/// ```
/// use kernel_runtime::__rt::ConstMessage;
/// let m = ConstMessage::new("takes ", 57344, " bytes");
/// assert_eq!(m.as_str(), "takes 57344 bytes");
/// ```
pub struct ConstMessage {
    bytes: [u8; 512],
    len: usize,
}

impl ConstMessage {
    /// `prefix`, `n` in decimal, `suffix`.
    pub const fn new(prefix: &str, n: usize, suffix: &str) -> ConstMessage {
        let mut m = ConstMessage {
            bytes: [0; 512],
            len: 0,
        };
        m.push(prefix.as_bytes());
        let (digits, start) = crate::base::decimal(n as u64);
        m.push(digits.split_at(start).1);
        m.push(suffix.as_bytes());
        m
    }

    const fn push(&mut self, text: &[u8]) {
        let mut i = 0;
        while i < text.len() && self.len < self.bytes.len() {
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
    }

    /// The message (whole UTF-8 characters only, where it was cut).
    pub const fn as_str(&self) -> &str {
        let mut len = self.len;
        // A cut inside a character leaves continuation bytes (10xxxxxx) and their lead byte.
        while len > 0 && len == self.bytes.len() && self.bytes[len - 1] & 0xC0 == 0x80 {
            len -= 1;
        }
        if len > 0 && len == self.bytes.len() && self.bytes[len - 1] >= 0xC0 {
            len -= 1;
        }
        match core::str::from_utf8(self.bytes.split_at(len).0) {
            Ok(s) => s,
            Err(_) => "",
        }
    }
}

/// Rounds `n` up to a multiple of `align` (a power of two), staying below `usize::MAX`.
pub const fn align_up(n: usize, align: usize) -> usize {
    n.saturating_add(align - 1) & !(align - 1)
}

/// The bytes of a shared array of `dims` elements of `elem` bytes, saturating: a size past the
/// address space stays above [`STATIC_LIMIT`], for the kernel's check of the limit to report.
///
/// ```
/// use kernel_runtime::__rt::array_bytes;
/// assert_eq!(array_bytes(4, &[16, 16]), 1024);
/// assert_eq!(array_bytes(4, &[usize::MAX]), usize::MAX);
/// ```
pub const fn array_bytes(elem: usize, dims: &[usize]) -> usize {
    let mut bytes = elem;
    let mut k = 0;
    while k < dims.len() {
        bytes = bytes.saturating_mul(dims[k]);
        k += 1;
    }
    bytes
}

/// The offsets of shared arrays given as `(bytes, align)`, packed in order, and the total bytes.
///
/// ```
/// let (offsets, total) = kernel_runtime::__rt::layout([(3, 1), (8, 4)]);
/// assert_eq!(offsets, [0, 4]);
/// assert_eq!(total, 12);
/// ```
pub const fn layout<const K: usize>(arrays: [(usize, usize); K]) -> ([usize; K], usize) {
    let mut offsets = [0usize; K];
    let mut end = 0usize;
    let mut k = 0;
    while k < K {
        let start = align_up(end, arrays[k].1);
        offsets[k] = start;
        end = start.saturating_add(arrays[k].0);
        k += 1;
    }
    (offsets, end)
}

/// The dynamic shared memory of the block from its byte `at` on, as `T`s (`dynamic_shared![T]`,
/// `dynamic_shared![T; at BYTES]`), placed after `static_bytes`: CUDA's
/// `extern __shared__ char s[]` viewed at an offset, as `(T*)(s + at)`. An `at` past the dynamic
/// part, or not a multiple of `T`'s alignment, stops the kernel (a trap on a GPU).
///
/// # Safety
/// Must be called from inside a kernel whose static shared arrays take `static_bytes`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn dynamic<'l, T: AnyBitPattern, L: ?Sized>(
    ctx: &Ctx,
    launch: &'l L,
    static_bytes: usize,
    at: usize,
    name: &'static str,
) -> View1Mut<'l, T> {
    let start = align_up(static_bytes, 16);
    let bytes = ctx.shared_bytes().saturating_sub(start);
    let align = core::mem::align_of::<T>();
    if at > bytes || at & (align - 1) != 0 {
        crate::fault::bad_shared_offset(name, at, bytes, align)
    }
    let len = (bytes - at) / core::mem::size_of::<T>().max(1);
    // SAFETY: the block's shared memory has `shared_bytes()` bytes, of which `start..` are the
    // dynamic part, and `at` lies in it (checked above); `start` is a multiple of 16, `at` of
    // `T`'s alignment, so the view is aligned.
    let ptr = unsafe { ctx.shared_ptr().add(start + at) } as *mut T;
    // SAFETY: as above: `len` elements of `T` fit in `bytes - at`.
    let view = unsafe { View1Mut::from_raw(ptr, [len], name) };
    // SAFETY: the view is in the block's shared memory.
    unsafe { block_private(view) }.within(launch)
}

/// Where the offset of a static shared array counts from: the kernel's shared memory (`&Ctx`),
/// or the place of a `#[device]` function's array ([`At`]).
pub trait SharedBase {
    /// The address offsets count from.
    fn base(&self) -> *mut u8;
}

impl SharedBase for &Ctx {
    #[inline(always)]
    fn base(&self) -> *mut u8 {
        self.shared_ptr()
    }
}

/// The place of a `#[device]` function's shared array (see `function_shared`).
#[derive(Clone, Copy, Debug)]
pub struct At(pub *mut u8);

impl SharedBase for At {
    #[inline(always)]
    fn base(&self) -> *mut u8 {
        self.0
    }
}

/// A static shared array of a kernel at `offset` (computed by [`layout`]).
///
/// # Safety
/// Must be called from inside a kernel whose shared layout reserves `offset..offset+bytes`.
#[inline(always)]
pub unsafe fn array1<'l, T: AnyBitPattern, L: ?Sized>(
    ctx: impl SharedBase,
    launch: &'l L,
    offset: usize,
    len: usize,
    name: &'static str,
) -> View1Mut<'l, T> {
    // SAFETY: the layout reserves this range of the block's shared memory for the array.
    let view = unsafe { View1Mut::from_raw(ctx.base().add(offset) as *mut T, [len], name) };
    // SAFETY: as above.
    unsafe { block_private(view) }.within(launch)
}

/// The static 2-D and 3-D shared arrays of a kernel, at an `offset` computed by [`layout`].
macro_rules! static_arrays {
    ($($(#[$doc:meta])* $name:ident => $view:ident, $rank:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// Must be called from inside a kernel whose shared layout reserves the array's bytes
        /// there.
        #[inline(always)]
        pub unsafe fn $name<'l, T: AnyBitPattern, L: ?Sized>(
            ctx: impl SharedBase,
            launch: &'l L,
            offset: usize,
            dims: [usize; $rank],
            name: &'static str,
        ) -> $view<'l, T> {
            // SAFETY: the layout reserves this range of the block's shared memory for the array.
            let view = unsafe { $view::from_raw(ctx.base().add(offset) as *mut T, dims, name) };
            // SAFETY: as above.
            unsafe { block_private(view) }.within(launch)
        }
    )*};
}

static_arrays! {
    /// A static 2-D shared array of a kernel.
    array2 => View2Mut, 2;
    /// A static 3-D shared array of a kernel.
    array3 => View3Mut, 3;
}

/// The static shared arrays of `bool`s of a kernel (`shared_array![bool; N]`, 2-D and 3-D):
/// the bytes of the array of `u8`s of the same shape, as [`Bools`].
macro_rules! bool_arrays {
    ($($name:ident => $bytes:ident, $view:ident, $dims:ty;)*) => {$(
        #[doc = concat!("[`", stringify!($bytes), "`] of `u8`s as [`Bools`].")]
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($bytes), "`].")]
        #[inline(always)]
        pub unsafe fn $name<'l, L: ?Sized>(
            ctx: impl SharedBase,
            launch: &'l L,
            offset: usize,
            dims: $dims,
            name: &'static str,
        ) -> Bools<$view<'l, u8>> {
            // SAFETY: the caller's contract.
            Bools(unsafe { $bytes(ctx, launch, offset, dims, name) })
        }
    )*};
}

bool_arrays! {
    bools1 => array1, View1Mut, usize;
    bools2 => array2, View2Mut, [usize; 2];
    bools3 => array3, View3Mut, [usize; 3];
}

/// A shared array of `bool`s (`shared_array![bool; N]`, 2-D and 3-D alike), kept in bytes: the
/// block's shared memory is not cleared, and a byte of it need not be a `bool`'s 0 or 1. Its
/// elements read as `true` where their byte is not 0; a write first makes the byte the `bool`
/// it read as, then writes through it. An element read before any thread of the block wrote it
/// holds an unspecified value, as in CUDA, and checked mode reports the read.
///
/// ```
/// use kernel_runtime::prelude::*;
///
/// /// Marks the values seen, then each thread counts the marks of its group of eight.
/// #[kernel]
/// fn marks(values: &[u32], counts: &mut [u32]) {
///     let t = thread_idx().x as usize;
///     let mut seen = shared_array![bool; 64];
///     seen[t] = false;
///     sync_threads();
///     seen[values[t] as usize % 64] = true;
///     sync_threads();
///     if t < 8 {
///         counts[t] = (0..8).filter(|&k| seen[8 * t + k]).count() as u32;
///     }
/// }
///
/// let dev = Device::cpu();
/// let values = dev.to_device(&(0..64).map(|v| 2 * v).collect::<Vec<u32>>()).unwrap();
/// let mut counts = dev.zeros::<u32, _>(8).unwrap();
/// marks.launch(1, 64, (&values, &mut counts)).unwrap();
/// assert_eq!(counts.to_vec().unwrap(), [4; 8]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Bools<V>(V);

impl<V, I> Index<I> for Bools<V>
where
    V: Index<I, Output = u8>,
{
    type Output = bool;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index(&self, index: I) -> &bool {
        if self.0[index] != 0 {
            &true
        } else {
            &false
        }
    }
}

impl<V, I> IndexMut<I> for Bools<V>
where
    V: IndexMut<I, Output = u8>,
{
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index_mut(&mut self, index: I) -> &mut bool {
        let byte = &mut self.0[index];
        *byte = (*byte != 0) as u8;
        // SAFETY: the byte holds 0 or 1 (just written), a `bool` of the same size and
        // alignment; every write through the `&mut bool` keeps it one.
        unsafe { &mut *(byte as *mut u8 as *mut bool) }
    }
}

macro_rules! bools_shape {
    ($($view:ident => $shape:ty;)*) => {$(
        impl<'a, const CHECK: bool> Bools<$view<'a, u8, CHECK>> {
            /// The shape, as the array of numbers' `dim()`.
            #[inline(always)]
            pub fn dim(&self) -> $shape {
                self.0.dim()
            }
            /// The number of elements.
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.0.len()
            }
            /// Whether the array has no elements.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        impl SharedView for Bools<$view<'_, u8>> {
            fn start(&self) -> *const u8 {
                self.0.start()
            }
            fn elem_bytes(&self) -> usize {
                1
            }
            unsafe fn with_trace(self, trace: crate::cpu::check::Trace) -> Self {
                // SAFETY: the caller's contract.
                Bools(unsafe { self.0.with_trace(trace) })
            }
        }
    )*};
}
bools_shape! {
    View1Mut => usize;
    View2Mut => (usize, usize);
    View3Mut => (usize, usize, usize);
}

/// A view of the block's shared memory, marked as such on the CPU backend, where only the
/// block's threads access it, one after another on one OS thread: its atomics are plain
/// updates there (checked mode traces the view again, and keeps them atomic).
///
/// # Safety
/// `view` must lie in the block's shared memory.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
unsafe fn block_private<V: SharedView>(view: V) -> V {
    // SAFETY: the caller's contract; a `BLOCK` trace records nothing.
    unsafe { view.with_trace(crate::cpu::check::Trace::BLOCK) }
}

/// On the GPU, the view as it is.
///
/// # Safety
/// None: the CPU backend's contract.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_private<V>(view: V) -> V {
    view
}

/// A shared array (from [`array1`], [`array2`], [`array3`] or [`dynamic`]) in checked mode: its accesses
/// recorded in the block's shadow of shared memory. Checked mode's body wraps each shared
/// array of the kernel's in this, so that a mistake in the array's type is reported once, at
/// the one function both bodies call.
///
/// # Safety
/// `view` must be one of the block's shared arrays, made in the thread of `ctx`.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
pub unsafe fn traced<V: SharedView>(ctx: &Ctx, view: V) -> V {
    let offset = (view.start() as usize).wrapping_sub(ctx.shared_ptr() as usize);
    // SAFETY: the view lies in the block's shared memory (the caller's contract), of whose bytes
    // the shadow has a slot each.
    let trace = ctx.shared_trace(offset, view.elem_bytes());
    // SAFETY: as above.
    unsafe { view.with_trace(trace) }
}

/// The views a block's shared arrays are.
#[cfg(not(target_arch = "nvptx64"))]
pub trait SharedView: Sized {
    /// The first element's address.
    fn start(&self) -> *const u8;
    /// An element's bytes.
    fn elem_bytes(&self) -> usize;
    /// The view, traced through `trace`.
    ///
    /// # Safety
    /// As the views' `traced`.
    unsafe fn with_trace(self, trace: crate::cpu::check::Trace) -> Self;
}

macro_rules! shared_view {
    ($($view:ident),*) => {$(
        #[cfg(not(target_arch = "nvptx64"))]
        impl<T> SharedView for $view<'_, T> {
            fn start(&self) -> *const u8 {
                self.as_ptr() as *const u8
            }
            fn elem_bytes(&self) -> usize {
                core::mem::size_of::<T>()
            }
            unsafe fn with_trace(self, trace: crate::cpu::check::Trace) -> Self {
                // SAFETY: the caller's contract.
                unsafe { self.traced(trace) }
            }
        }
    )*};
}
shared_view!(View1Mut, View2Mut, View3Mut);

/// A shared array extent: sizes are `usize` constants.
#[inline(always)]
pub const fn extent(n: usize) -> usize {
    n
}

/// A shared array extent as a block-shape hint (`0`, no hint, when it cannot be one).
#[inline(always)]
pub const fn hint_extent(n: usize) -> u32 {
    if n <= 1024 {
        n as u32
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools_read_any_byte_as_a_bool_and_write_only_zero_or_one() {
        // Bytes an earlier kernel left: neither 0 nor 1 but the first.
        let mut bytes = [0u8, 1, 2, 0xff, 7, 0];
        // SAFETY: the view covers `bytes`, which outlive it and nothing else touches.
        let view = unsafe { View1Mut::<u8>::from_raw(bytes.as_mut_ptr(), [6], "flags") };
        let mut flags = Bools(view);
        let read: Vec<bool> = (0..6).map(|i| flags[i]).collect();
        assert_eq!(read, [false, true, true, true, true, false]);
        flags[2] = false;
        flags[3] ^= true;
        let r = &mut flags[4];
        assert!(
            *r,
            "a write makes the byte the bool it read as, then hands it out"
        );
        *r = !*r;
        flags[5] |= true;
        assert_eq!((flags.len(), flags.dim(), flags.is_empty()), (6, 6, false));
        assert_eq!(bytes, [0, 1, 0, 0, 0, 1]);
        // Two and three axes.
        let mut bytes = [9u8; 12];
        // SAFETY: as above.
        let view = unsafe { View2Mut::<u8>::from_raw(bytes.as_mut_ptr(), [3, 4], "grid") };
        let mut grid = Bools(view);
        assert!(grid[[2, 3]] && grid[(1, 0)]);
        grid[[2, 3]] = false;
        assert_eq!(grid.dim(), (3, 4));
        assert_eq!(bytes[11], 0);
    }

    #[test]
    fn layout_aligns_each_array() {
        let (off, total) = layout([(1, 1), (16, 8), (2, 2), (4, 4)]);
        assert_eq!(off, [0, 8, 24, 28]);
        assert_eq!(total, 32);
        let (off, total) = layout::<0>([]);
        assert_eq!(off, [0usize; 0]);
        assert_eq!(total, 0);
    }
}
