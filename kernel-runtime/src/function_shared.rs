//! The shared arrays of `#[device]` functions: `shared_array!` in a device function gives one
//! array per block of each kernel that calls it, as CUDA's `__shared__` in a `__device__`
//! function and Numba's `cuda.shared.array` in a device function do. Every call of the function
//! in the block sees the same array, whichever of the block's threads makes it.
//!
//! - On a GPU each array is a `.shared` variable of the PTX module, which the macro declares and
//!   names after the function; ptxas gives each kernel that reaches it a copy per block.
//! - On the CPU backend each array is a site in a list the linker gathers (`cpu::launch::sites`).
//!   A block's shared memory holds, past the kernel's own bytes, an area with a place for every
//!   site of the program: the arrays live as long as their block, all blocks of a cooperative
//!   launch have their own, and checked mode's record of the block's shared memory covers
//!   them, so their races and reads of elements never written are found as in the kernel's own
//!   arrays.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! /// The sum of the block's values, through an array of the function's own.
//! #[device]
//! fn block_sum(v: f32) -> f32 {
//!     let t = thread_idx().x as usize;
//!     let mut part = shared_array![f32; 32];
//!     part[t] = v;
//!     sync_threads();
//!     let total = (0..32).map(|k| part[k]).sum();
//!     sync_threads(); // before another call writes `part`
//!     total
//! }
//!
//! #[kernel(barriers)] // the barriers are in `block_sum`, which the macro does not see
//! fn sums(x: &[f32], out: &mut [f32]) {
//!     let i = grid(1);
//!     let s = block_sum(x[i]);
//!     out[i] = s;
//! }
//!
//! let dev = Device::cpu();
//! let x = dev.to_device(&(0..64).map(|v| v as f32).collect::<Vec<_>>()).unwrap();
//! let mut out = dev.zeros::<f32, _>(64).unwrap();
//! sums.launch(2, 32, (&x, &mut out)).unwrap();
//! let out = out.to_vec().unwrap();
//! assert_eq!((out[0], out[63]), (496.0, 1520.0));
//! ```

#[cfg(not(target_arch = "nvptx64"))]
use crate::{cpu::launch::sites, ctx::Ctx};

/// The site of an array of `len` elements of `T` on the CPU backend, or a compile-time error
/// where it exceeds the static shared memory a kernel may declare.
#[cfg(not(target_arch = "nvptx64"))]
pub const fn site<T>(len: usize) -> sites::Site {
    let bytes = bytes::<T>(len);
    assert!(
        bytes <= crate::shared::STATIC_LIMIT,
        "a shared array of a #[device] function takes more than the 48 KiB of static shared \
         memory a kernel may declare"
    );
    sites::Site::new(bytes, core::mem::align_of::<T>())
}

/// The bytes of an array of `len` elements of `T`, at least one (a PTX variable has one byte
/// at least), saturating.
pub const fn bytes<T>(len: usize) -> usize {
    match core::mem::size_of::<T>().checked_mul(len) {
        Some(0) => 1,
        Some(b) => b,
        None => usize::MAX,
    }
}

/// The place of `site`'s array in the running block's shared memory.
///
/// # Panics
/// Outside a kernel's block (a device function called from host code), or where `site` is not
/// one of the program's sites.
#[cfg(not(target_arch = "nvptx64"))]
pub fn place(ctx: &Ctx, site: &'static sites::Site) -> crate::shared::At {
    let (Some(at), false) = (
        sites::offset(site, ctx.shared_bytes()),
        ctx.shared_ptr().is_null(),
    ) else {
        panic!(
            "a `shared_array!` of a #[device] function belongs to a block of a kernel: call the \
             function from a kernel"
        )
    };
    // SAFETY: the block's shared memory holds `sites::block_bytes(shared_bytes)` bytes, the
    // site's array among them.
    crate::shared::At(unsafe { ctx.shared_ptr().add(at) })
}

/// A device function's shared array, traced in checked mode as the kernel's own arrays are.
///
/// # Safety
/// `view` must be a device function's shared array made in the thread of `ctx`.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
pub unsafe fn traced<V: crate::shared::SharedView>(ctx: &crate::ctx::Ctx, view: V) -> V {
    if ctx.shared_shadow.is_some() {
        // SAFETY: the caller's contract: the view lies in the block's shared memory.
        unsafe { crate::shared::traced(ctx, view) }
    } else {
        view
    }
}

/// On a GPU, the view as it is.
///
/// # Safety
/// None: the CPU backend's contract.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn traced<V>(_: &crate::ctx::Ctx, view: V) -> V {
    view
}

/// On a GPU, the place of a device function's array: `p`, the generic address of its `.shared`
/// variable, known to point into shared memory.
///
/// # Safety
/// `p` must be a generic address in the shared window (`cvta.shared` made it), and `zero` 0.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn symbol(p: *mut u8, zero: usize) -> crate::shared::At {
    // SAFETY: the caller's contract.
    crate::shared::At(unsafe { crate::ctx::known_shared(p, zero) })
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn sites_have_their_bytes_and_alignment() {
        let s = site::<f64>(3);
        assert_eq!((s.bytes, s.align), (24, 8));
        assert_eq!(bytes::<u8>(0), 1);
        assert_eq!(bytes::<u64>(usize::MAX), usize::MAX);
    }
}
