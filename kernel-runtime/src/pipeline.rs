//! Asynchronous copies from global to shared memory: PTX's `cp.async` (sm_80 and later), as
//! CUDA's pipeline primitives name it. A thread starts copies, commits them as a group, and
//! waits for all but its latest groups: the copies of a tile then fly while the block
//! computes on the tile before it.
//!
//! | CUDA C++ | here |
//! | --- | --- |
//! | `__pipeline_memcpy_async(&s[r][c], &g[i][k], 16)` | `memcpy_async::<f16, 8>(&mut s, [r, c], &g, [i, k], 8)` |
//! | `__pipeline_memcpy_async(dst, src, 16, 16 - 2 * valid)` (zero fill) | `memcpy_async::<f16, 8>(.., valid)` |
//! | `__pipeline_commit()` | `pipeline_commit()` |
//! | `__pipeline_wait_prior(1)` | `pipeline_wait_prior::<1>()` |
//! | `cooperative_groups::memcpy_async(block, ...)` of a 2-D tile | [`memcpy_async_tile`] |
//!
//! A copy moves `N` elements, 4, 8 or 16 bytes, from a row of a 2-D array in global memory to a
//! row of a 2-D shared array: the first `valid` of them (at most `N`) from `src`, zeros in the
//! rest, so that a tile past a matrix's edge needs no branch; where `valid` is 0, `from` may
//! lie outside `src`. The shared array is written once the thread's `pipeline_wait_prior`
//! lets its group go: other threads read it after that and a barrier, as after a store. A copy
//! of another size is a compile error at the call: under `cargo check` where the element type
//! is a number type named in the call (`memcpy_async::<f16, 3>`), when the kernel is built
//! otherwise (a generic `T`).
//!
//! Every copy is checked, whatever the kernel's `boundscheck`: both rows must hold the
//! elements, `dst` must be a shared array and `src` not, and both must start at a multiple of
//! the copy's bytes: in shared memory, as the block's arrays lie there (a shared array packed
//! after another of other bytes may start off such a multiple), and from the array's first
//! element in global memory (a GPU's arrays start at a multiple of 256 bytes). A copy that breaks one stops the kernel: a trap on the
//! GPU, an error at the call on the CPU backend.
//!
//! The CPU backend copies at once, so a thread that reads its own copy's destination before
//! waiting reads the copy there, where a GPU may not have written it yet. Checked mode records
//! each element written as the thread's write at the call.
//!
//! A kernel or device function that calls these fails to build for a GPU below sm_80, at the
//! call.
//!
//! ```
//! use kernel_runtime::pipeline::*;
//! use kernel_runtime::prelude::*;
//!
//! /// Each block stages 8 rows of 32 through shared memory and writes them back doubled.
//! #[kernel]
//! fn doubled(x: &Array2<f32>, y: &mut Array2<f32>) {
//!     let mut tile = shared_array![f32; [8, 32]];
//!     let t = thread_idx().x as usize; // 64 threads: 4 floats each
//!     let (r, c) = (t / 8, 4 * (t % 8));
//!     let row = 8 * block_idx().x as usize + r;
//!     let valid = if row < x.dim().0 { 4 } else { 0 };
//!     memcpy_async::<f32, 4>(&mut tile, [r, c], &x, [row, c], valid);
//!     pipeline_commit();
//!     pipeline_wait_prior::<0>();
//!     sync_threads();
//!     if row < y.dim().0 {
//!         for k in 0..4 {
//!             y[[row, c + k]] = 2.0 * tile[[r, c + k]];
//!         }
//!     }
//! }
//!
//! let dev = Device::cpu();
//! let x = Array2::from_shape_fn((13, 32), |(i, j)| (i * 32 + j) as f32);
//! let mut y = dev.zeros::<f32, _>((13, 32)).unwrap();
//! doubled.launch(2, 64, (&dev.to_device(&x).unwrap(), &mut y)).unwrap();
//! assert_eq!(y.to_host().unwrap(), x.mapv(|v| 2.0 * v));
//! ```

use crate::device_copy::AnyBitPattern;
use crate::view::{View2, View2Mut};

mod tile;
pub(crate) use tile::{block_thread, place_in, source_place};
pub use tile::{memcpy_async_tile, runs_shared};

/// A 2-D array a copy reads: an array parameter of the kernel (or any 2-D view).
pub trait Source<T> {
    /// The first element's address.
    fn first(&self) -> *const T;
    /// The rows and columns.
    fn extent(&self) -> [usize; 2];
    /// The array's name, for reports.
    fn label(&self) -> &'static str;
    /// `self[at]`, as the kernel's own read (checked mode records it).
    fn read(&self, at: [usize; 2]) -> T
    where
        T: Copy;
}

/// A 2-D array a copy writes: a shared array of the block.
pub trait Destination<T>: Source<T> {
    /// The first element's address.
    fn first_mut(&mut self) -> *mut T;
    /// `self[at] = v`, as the kernel's own store (checked mode records it).
    fn put(&mut self, at: [usize; 2], v: T);
}

macro_rules! source {
    ($($view:ident),*) => {$(
        impl<T, const C: bool> Source<T> for $view<'_, T, C> {
            #[inline(always)]
            fn first(&self) -> *const T {
                self.as_ptr()
            }
            #[inline(always)]
            fn extent(&self) -> [usize; 2] {
                self.shape()
            }
            #[inline(always)]
            fn label(&self) -> &'static str {
                self.name()
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn read(&self, at: [usize; 2]) -> T
            where
                T: Copy,
            {
                self[at]
            }
        }
    )*};
}
source!(View2, View2Mut);

impl<T: Send + Sync, const C: bool> Destination<T> for View2Mut<'_, T, C> {
    #[inline(always)]
    fn first_mut(&mut self) -> *mut T {
        self.as_mut_ptr()
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn put(&mut self, at: [usize; 2], v: T) {
        self[at] = v;
    }
}

/// `__pipeline_memcpy_async`: starts copying `N` elements (4, 8 or 16 bytes) from
/// `src[from..]` to `dst[to..]` along their rows, the first `valid` from `src` and zeros in the
/// rest. See the module's rules.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn memcpy_async<T: AnyBitPattern, const N: usize>(
    dst: &mut impl Destination<T>,
    to: [usize; 2],
    src: &impl Source<T>,
    from: [usize; 2],
    valid: usize,
) {
    const {
        assert!(
            matches!(N * size_of::<T>(), 4 | 8 | 16),
            "a copy moves 4, 8 or 16 bytes"
        )
    };
    use crate::fault::{misplaced_copy, out_of_bounds, AccessKind};
    let (valid, bytes) = (valid.min(N), N * size_of::<T>());
    let [rows, cols] = dst.extent();
    if to[0] >= rows || to[1] + N > cols {
        let last = [to[0], to[1] + N - 1];
        out_of_bounds(dst.label(), &last, &[rows, cols], AccessKind::Write);
    }
    let [src_rows, src_cols] = src.extent();
    if valid > 0 && (from[0] >= src_rows || from[1] + valid > src_cols) {
        let last = [from[0], from[1] + valid - 1];
        out_of_bounds(src.label(), &last, &[src_rows, src_cols], AccessKind::Read);
    }
    let d = dst.first_mut().wrapping_add(to[0] * cols + to[1]);
    let s = src.first().wrapping_add(from[0] * src_cols + from[1]);
    let (d, s) = (d as *mut u8, s as *const u8);
    if !in_shared(d) || valid > 0 && !imp::global(s) {
        misplaced_copy(
            dst.label(),
            src.label(),
            "the destination is not a shared array, or the source is not in global memory",
        );
    }
    let s_at = (from[0] * src_cols + from[1]) * size_of::<T>();
    let aligned = shared_offset(d).is_multiple_of(bytes)
        && (valid == 0 || s_at.is_multiple_of(bytes) && imp::aligned(s, bytes));
    if !aligned {
        misplaced_copy(
            dst.label(),
            src.label(),
            "not at a multiple of the copy's bytes",
        );
    }
    imp::copy::<T, N>(dst, to, d, s as *const T, valid);
}

/// Copies at once `N` elements from `s` to `dst[to..]` along its row, the first `valid` from
/// `s` and zeros in the rest, as the thread's loads and stores.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn copy_now<T: AnyBitPattern, const N: usize>(
    dst: &mut impl Destination<T>,
    to: [usize; 2],
    s: *const T,
    valid: usize,
) {
    for e in 0..N {
        let v = if e < valid {
            // SAFETY: the first `valid` elements from `s` lie in the source's row, checked by
            // the caller.
            unsafe { *s.add(e) }
        } else {
            // SAFETY: every bit pattern, zeros too, is a `T` (`AnyBitPattern`).
            unsafe { core::mem::zeroed() }
        };
        dst.put([to[0], to[1] + e], v);
    }
}

/// Starts copying `N` elements from `s` to `d`, the address of `dst[to]`, where the caller has
/// checked both ends as [`memcpy_async`] does: a run of a tile checked whole.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn copy_checked_run<T: AnyBitPattern, const N: usize>(
    dst: &mut impl Destination<T>,
    to: [usize; 2],
    d: *mut T,
    s: *const T,
) {
    imp::copy::<T, N>(dst, to, d as *mut u8, s, N);
}

/// `__pipeline_commit`: the thread's copies since its last commit become a group.
#[inline(always)]
pub fn pipeline_commit() {
    imp::commit();
}

/// `__pipeline_wait_prior(N)`: waits until at most the thread's `N` latest groups are still
/// copying; the others' elements are then in shared memory (for the other threads of the block,
/// after a barrier).
#[inline(always)]
pub fn pipeline_wait_prior<const N: u32>() {
    imp::wait::<N>();
}

/// Whether `p` lies in the running block's shared memory.
#[inline(always)]
pub(crate) fn in_shared(p: *const u8) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        crate::ctx::is_shared(p)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let block = crate::cpu::launch::tls::block();
        let bytes = crate::cpu::launch::sites::block_bytes(block.shared_bytes);
        let start = block.shared as usize;
        (start..start.wrapping_add(bytes)).contains(&(p as usize))
    }
}

/// The offset of `p` in the running block's shared memory, where the kernel's arrays lie as on
/// a GPU. The shared memory starts at a multiple of 16 bytes, so the alignment the hardware asks
/// of an address there is this offset's; where `p` is an array's element, the compiler knows
/// the offset from the array's place and the index.
#[inline(always)]
pub(crate) fn shared_offset(p: *const u8) -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        (p as usize).wrapping_sub(crate::ctx::Ctx::current().shared_ptr() as usize)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        (p as usize).wrapping_sub(crate::cpu::launch::tls::block().shared as usize)
    }
}

/// The 32-bit address in the shared state space of `p`, a generic address in the running
/// block's shared memory, as `cp.async` and `ldmatrix` take it: from [`shared_offset`], whose
/// arithmetic the compiler sees, rather than by converting the generic address in PTX (which
/// ptxas does with the window's upper bits in a register pair for each access).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn shared_addr(p: *const u8) -> u32 {
    let base: u32;
    // SAFETY: takes the shared-space address of the kernel's shared block; no memory access.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 b; mov.u64 b, __kernel_shared; cvt.u32.u64 {base}, b; }}",
            base = out(reg32) base,
            options(pure, nomem, nostack)
        );
    }
    base.wrapping_add(shared_offset(p) as u32)
}

/// `cp.async`, `cp.async.commit_group` and `cp.async.wait_group`.
#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::Destination;

    /// Whether `s` lies in global memory.
    #[inline(always)]
    pub(super) fn global(s: *const u8) -> bool {
        crate::ctx::is_global(s)
    }

    /// Whether `s` lies at a multiple of `bytes` (the hardware's alignment).
    #[inline(always)]
    pub(super) fn aligned(s: *const u8, bytes: usize) -> bool {
        (s as usize).is_multiple_of(bytes)
    }

    /// `cp.async` of `valid` of `N` elements from `s` to `d`, zeros in the rest.
    #[inline(always)]
    pub(super) fn copy<T, const N: usize>(
        _: &mut impl Destination<T>,
        _: [usize; 2],
        d: *mut u8,
        s: *const T,
        valid: usize,
    ) {
        let (read, d) = ((valid * size_of::<T>()) as u32, super::shared_addr(d));
        macro_rules! cp {
            ($cache:literal, $bytes:literal) => {
                // SAFETY: `d` lies in shared memory and holds `N` elements of the shared array,
                // `s` (where any byte is read) in global memory holding `valid` of the array's,
                // both aligned to the copy's bytes: all checked by the caller.
                unsafe {
                    core::arch::asm!(
                        concat!("{{ .reg .u64 s; cvta.to.global.u64 s, {s}; cp.async.", $cache,
                            ".shared.global [{d}], [s], ", $bytes, ", {n}; }}"),
                        d = in(reg32) d, s = in(reg64) s, n = in(reg32) read, options(nostack)
                    )
                }
            };
        }
        match N * size_of::<T>() {
            16 => cp!("cg", "16"),
            8 => cp!("ca", "8"),
            _ => cp!("ca", "4"),
        }
    }

    #[inline(always)]
    pub(super) fn commit() {
        // SAFETY: groups the thread's copies; no operand.
        unsafe { core::arch::asm!("cp.async.commit_group;", options(nostack)) };
    }

    #[inline(always)]
    pub(super) fn wait<const N: u32>() {
        // SAFETY: waits on the thread's own groups; the shared memory they write is then the
        // thread's to read (a memory clobber: the compiler reads it after).
        unsafe { core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack)) };
    }
}

/// The CPU backend: each copy at once, element by element, as the thread's stores.
#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use super::Destination;
    use crate::device_copy::AnyBitPattern;

    /// Whether `s` lies outside the block's shared memory: in an array of the launch's.
    pub(super) fn global(s: *const u8) -> bool {
        !super::in_shared(s)
    }

    /// Host memory holds an array at its elements' alignment only: the copy's comes from the
    /// offset in the array, which the caller checks.
    pub(super) fn aligned(_: *const u8, _: usize) -> bool {
        true
    }

    #[track_caller]
    pub(super) fn copy<T: AnyBitPattern, const N: usize>(
        dst: &mut impl Destination<T>,
        to: [usize; 2],
        _: *mut u8,
        s: *const T,
        valid: usize,
    ) {
        super::copy_now::<T, N>(dst, to, s, valid);
    }

    pub(super) fn commit() {}

    pub(super) fn wait<const N: u32>() {}
}
