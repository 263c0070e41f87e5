//! The coordinates of the running thread: `thread_idx()`, `block_idx()`, `grid(n)`, ...
//!
//! Inside a `#[kernel]` or `#[device]` function the macro rewrites `grid(1)`, `grid(2)`,
//! `grid(3)`, `gridsize(n)`, `thread_idx()`, `block_idx()`, `block_dim()` and `grid_dim()` into
//! calls on a [`Ctx`], the thread's context: on the GPU it reads the special registers, on the
//! CPU backend it holds the simulated thread's coordinates in registers. The free functions of
//! this module give the same values from anywhere (host code outside a kernel sees zeros).

use crate::dim::Dim3;

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::launch::context::Ctx;

/// The context of one kernel thread: on the GPU a zero-sized handle on the special registers.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy, Debug)]
pub struct Ctx;

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 __kernel_shared[];");

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    /// Whether a generic address lies in shared memory (PTX `isspacep.shared`).
    #[link_name = "llvm.nvvm.isspacep.shared"]
    fn isspacep_shared(p: *const u8) -> bool;
    /// Whether a generic address lies in global memory (PTX `isspacep.global`).
    #[link_name = "llvm.nvvm.isspacep.global"]
    fn isspacep_global(p: *const u8) -> bool;
}

/// Whether the generic address `p` lies in global memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn is_global(p: *const u8) -> bool {
    // SAFETY: `isspacep.global` only inspects the address.
    unsafe { isspacep_global(p) }
}

/// Whether the generic address `p` lies in the block's shared memory. The compiler folds it to a
/// constant where it knows `p`'s state space (a shared array's element, a kernel argument's).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn is_shared(p: *const u8) -> bool {
    // SAFETY: `isspacep.shared` only inspects the address.
    unsafe { isspacep_shared(p) }
}

/// `p + zero`, known to the compiler to point into shared memory (see [`Ctx::shared_ptr`]).
///
/// # Safety
/// `p` must be a generic address in the shared window (`cvta.shared` made it), and `zero` 0.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn known_shared(p: *mut u8, zero: usize) -> *mut u8 {
    // SAFETY: the caller's contract: the assumption holds, and `p + 0` is `p`.
    unsafe {
        let shared = is_shared(p);
        let read = shared as u32;
        core::arch::asm!("// {0}", in(reg32) read, options(nomem, nostack));
        core::hint::assert_unchecked(shared);
        p.add(zero)
    }
}

#[cfg(target_arch = "nvptx64")]
impl Ctx {
    /// The context of the calling thread (how a `#[device]` function reads it).
    #[doc(hidden)]
    #[inline(always)]
    pub fn current() -> Ctx {
        Ctx
    }
    /// `threadIdx`.
    #[inline(always)]
    pub fn thread_idx(&self) -> Dim3 {
        // SAFETY: reading special registers has no side effects.
        unsafe {
            use core::arch::nvptx::*;
            Dim3::new(
                _thread_idx_x() as u32,
                _thread_idx_y() as u32,
                _thread_idx_z() as u32,
            )
        }
    }
    /// `blockIdx`.
    #[inline(always)]
    pub fn block_idx(&self) -> Dim3 {
        // SAFETY: reading special registers has no side effects.
        unsafe {
            use core::arch::nvptx::*;
            Dim3::new(
                _block_idx_x() as u32,
                _block_idx_y() as u32,
                _block_idx_z() as u32,
            )
        }
    }
    /// `blockDim`.
    #[inline(always)]
    pub fn block_dim(&self) -> Dim3 {
        // SAFETY: reading special registers has no side effects.
        unsafe {
            use core::arch::nvptx::*;
            Dim3::new(
                _block_dim_x() as u32,
                _block_dim_y() as u32,
                _block_dim_z() as u32,
            )
        }
    }
    /// `gridDim`.
    #[inline(always)]
    pub fn grid_dim(&self) -> Dim3 {
        // SAFETY: reading special registers has no side effects.
        unsafe {
            use core::arch::nvptx::*;
            Dim3::new(
                _grid_dim_x() as u32,
                _grid_dim_y() as u32,
                _grid_dim_z() as u32,
            )
        }
    }
    /// The start of the block's shared memory, as a generic pointer that the compiler knows
    /// to point into shared memory, so that accesses through it become `ld.shared` /
    /// `st.shared` / `atom.shared` rather than generic ones (slower, and 64-bit addresses).
    ///
    /// Rust has no shared-memory pointer type. LLVM's address-space inference turns generic
    /// accesses into shared ones when an `llvm.assume(isspacep.shared(p))` covers their base
    /// `p`, and the accesses reach `p` through address arithmetic: hence the zero offset the
    /// `cvta` block returns alongside (unknown to LLVM, so every access has a `getelementptr`
    /// on `p`; ptxas folds the zero away). The empty `asm` reads the assumption's condition:
    /// an assumption whose condition has no other use is dropped before the inference runs.
    #[inline(always)]
    pub fn shared_ptr(&self) -> *mut u8 {
        let (p, zero): (*mut u8, usize);
        // SAFETY: takes the generic address of the kernel's shared block; no memory access.
        unsafe {
            core::arch::asm!(
                "cvta.shared.u64 {p}, __kernel_shared;",
                "mov.u64 {z}, 0;",
                p = out(reg64) p,
                z = out(reg64) zero,
                options(pure, nomem, nostack)
            );
        }
        // SAFETY: `p` is a generic address in the shared window (`cvta.shared` made it), and
        // `zero` is 0.
        unsafe { known_shared(p, zero) }
    }
    /// The bytes of shared memory the block has (static arrays and dynamic part together).
    #[inline(always)]
    pub fn shared_bytes(&self) -> usize {
        let n: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {n}, %dynamic_smem_size;", n = out(reg32) n);
        }
        n as usize
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl Ctx {
    /// The context of the calling thread (zeros outside a kernel): how a `#[device]` function
    /// reads it.
    #[doc(hidden)]
    #[inline]
    pub fn current() -> Ctx {
        crate::cpu::launch::tls::current_ctx()
    }
    /// `threadIdx`.
    #[inline(always)]
    pub fn thread_idx(&self) -> Dim3 {
        self.thread
    }
    /// `blockIdx`.
    #[inline(always)]
    pub fn block_idx(&self) -> Dim3 {
        self.block
    }
    /// `blockDim`.
    #[inline(always)]
    pub fn block_dim(&self) -> Dim3 {
        self.block_dim
    }
    /// `gridDim`.
    #[inline(always)]
    pub fn grid_dim(&self) -> Dim3 {
        self.grid_dim
    }
    /// The start of the block's shared memory.
    #[inline(always)]
    pub fn shared_ptr(&self) -> *mut u8 {
        self.shared
    }
    /// The bytes of shared memory the block has (static arrays and dynamic part together).
    #[inline(always)]
    pub fn shared_bytes(&self) -> usize {
        self.shared_bytes
    }
    /// How a shared array `offset` bytes into the block's shared memory, of elements of
    /// `elem` bytes, is checked: not at all outside checked mode.
    #[inline(always)]
    pub(crate) fn shared_trace(&self, offset: usize, elem: usize) -> crate::cpu::check::Trace {
        crate::cpu::check::Trace::shared(self.shared_shadow, offset, elem)
    }
}

impl Ctx {
    /// The thread's lane in its warp, as [`lane_id`](crate::warp::lane_id) gives it.
    #[inline(always)]
    pub fn lane_id(&self) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        return crate::warp::lane_id();
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.block_dim.flatten(self.thread) % crate::warp::WARP_SIZE
        }
    }
    /// The lanes below the thread's, as [`lanemask_lt`](crate::warp::lanemask_lt) gives them.
    #[inline(always)]
    pub fn lanemask_lt(&self) -> u32 {
        (1u32 << self.lane_id()) - 1
    }
    /// `grid(1)`: the absolute thread index along x.
    #[inline(always)]
    pub fn grid_1d(&self) -> usize {
        let (t, b, d) = (self.thread_idx(), self.block_idx(), self.block_dim());
        b.x as usize * d.x as usize + t.x as usize
    }
    /// `grid(2)`: the absolute thread indices along x and y.
    #[inline(always)]
    pub fn grid_2d(&self) -> (usize, usize) {
        let (t, b, d) = (self.thread_idx(), self.block_idx(), self.block_dim());
        (
            b.x as usize * d.x as usize + t.x as usize,
            b.y as usize * d.y as usize + t.y as usize,
        )
    }
    /// `grid(3)`: the absolute thread indices along x, y and z.
    #[inline(always)]
    pub fn grid_3d(&self) -> (usize, usize, usize) {
        let (t, b, d) = (self.thread_idx(), self.block_idx(), self.block_dim());
        (
            b.x as usize * d.x as usize + t.x as usize,
            b.y as usize * d.y as usize + t.y as usize,
            b.z as usize * d.z as usize + t.z as usize,
        )
    }
    /// `gridsize(1)`: the number of threads of the grid along x.
    #[inline(always)]
    pub fn gridsize_1d(&self) -> usize {
        let (g, d) = (self.grid_dim(), self.block_dim());
        g.x as usize * d.x as usize
    }
    /// `gridsize(2)`: the number of threads of the grid along x and y.
    #[inline(always)]
    pub fn gridsize_2d(&self) -> (usize, usize) {
        let (g, d) = (self.grid_dim(), self.block_dim());
        (g.x as usize * d.x as usize, g.y as usize * d.y as usize)
    }
    /// `gridsize(3)`: the number of threads of the grid along x, y and z.
    #[inline(always)]
    pub fn gridsize_3d(&self) -> (usize, usize, usize) {
        let (g, d) = (self.grid_dim(), self.block_dim());
        (
            g.x as usize * d.x as usize,
            g.y as usize * d.y as usize,
            g.z as usize * d.z as usize,
        )
    }
}

/// `threadIdx` of the calling thread.
#[inline]
pub fn thread_idx() -> Dim3 {
    Ctx::current().thread_idx()
}
/// `blockIdx` of the calling thread.
#[inline]
pub fn block_idx() -> Dim3 {
    Ctx::current().block_idx()
}
/// `blockDim` of the running launch.
#[inline]
pub fn block_dim() -> Dim3 {
    Ctx::current().block_dim()
}
/// `gridDim` of the running launch.
#[inline]
pub fn grid_dim() -> Dim3 {
    Ctx::current().grid_dim()
}
