//! Write GPU kernels as plain Rust functions, launch them the way Numba's `cuda.jit` users do.
//!
//! A kernel is a function marked [`kernel`]. The same source is compiled twice: for the host,
//! where the CPU backend runs it (every simulated thread with its own block and thread
//! coordinates), and, from the crate's `build.rs`, for `nvptx64-nvidia-cuda`, where it becomes a
//! PTX entry point.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
//!     let i = grid(1);
//!     if i < y.len() {
//!         y[i] += a * x[i];
//!     }
//! }
//!
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! let x = dev.to_device(&[1.0f32, 2.0, 3.0][..])?;
//! let mut y = dev.zeros::<f32, _>(3)?;
//! axpy.launch(1, 32, (2.0, &x, &mut y))?;
//! assert_eq!(y.to_vec()?, vec![2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```
//!
//! The [`guide`] has a chapter for each part: a crate of your own, the device API, porting from
//! Numba, the backends, checked mode, MPI.
//!
//! # The safety contract of kernels
//!
//! Launching a kernel is safe for the host program, but kernels run as many threads at once, so
//! a kernel must keep these promises (as in CUDA C++ and Numba):
//! - no two threads write the same element, and no thread reads an element another thread
//!   writes, between two barriers (block-level; for two lanes of one warp, a `syncwarp` of both
//!   is one too) or within one launch (grid-level), unless every such access is an atomic
//!   operation;
//! - every thread of a block reaches each `sync_threads()` or has exited (the CPU backend
//!   reports threads that wait at different barriers as an error), and every thread of a
//!   cooperative launch reaches each `grid_sync()` or has exited, the first of each block
//!   included (see [`grid`]);
//! - every lane that a warp collective's mask names (`shfl_sync`, `ballot_sync`, ...) reaches it
//!   with the same mask, and each caller names itself (see [`warp`]; the CPU backend reports a
//!   collective that cannot complete);
//! - with `#[kernel(boundscheck = false)]`, every index is within its array's shape; by default
//!   indices are checked (a trap on the GPU, an error naming the array, index, shape, block and
//!   thread on the CPU).
//!
//!
//! A kernel that takes raw pointers is an `unsafe fn`, and so are its launches: the caller also
//! promises what the pointers address (see [`host::ptr`]).
//!
//! The CPU backend's checked mode ([`Device::cpu_checked`], `KERNEL_DEVICE=cpu-checked`) finds
//! where a kernel breaks these promises: races, divergent barriers and bad indices, and reads of
//! shared memory or array elements never written, each reported as a [`Finding`] with its
//! threads and lines.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        core_float_math,
        link_llvm_intrinsics,
        min_specialization,
        stmt_expr_attributes
    )
)]
// `link_llvm_intrinsics` names `llvm.nvvm.isspacep.shared`, which no stable path reaches (see
// `ctx::is_shared`, used by `Ctx::shared_ptr` and the float atomics).
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![warn(missing_docs)]

pub mod atomic;
mod base;
pub mod cmath;
pub mod cores;
pub mod ctx;
pub mod device_copy;
pub mod dim;
pub mod fault;
pub mod fp16;
pub(crate) mod function_shared;
pub mod grid;
#[cfg(target_arch = "nvptx64")]
pub mod half16;
pub mod intrinsics;
pub mod launch_bounds;
pub mod math;
pub mod module_array;
pub mod number;
pub mod pipeline;
pub(crate) mod print;
pub mod random;
pub(crate) mod shared;
pub mod stencil;
pub mod sync;
pub mod vector;
pub mod view;
pub mod warp;
pub mod wgmma;
pub mod wmma;

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) mod cpu;
#[cfg(not(target_arch = "nvptx64"))]
pub mod guide;
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;
#[cfg(not(target_arch = "nvptx64"))]
mod tuples;
#[cfg(not(target_arch = "nvptx64"))]
mod zeroed;

#[doc(hidden)]
pub mod __rt;

pub use ctx::{block_dim, block_idx, grid_dim, thread_idx, Ctx};
pub use device_copy::{AnyBitPattern, DeviceCopy};
pub use dim::Dim3;
pub use grid::GridGroup;
/// Half-precision floats (the `half` crate's), as kernel scalars and array elements; on the GPU,
/// `f16` is the same bits computed with PTX's half-precision instructions (the device's own
/// `half16::f16`, whose values are `half`'s).
pub use half::bf16;
#[cfg(not(target_arch = "nvptx64"))]
pub use half::f16;
#[cfg(target_arch = "nvptx64")]
pub use half16::f16;
pub use kernel_macros::{
    constant_array, device, global_array, guvectorize, kernel, kprintln, reduce, stencil,
    vectorize, DeviceCopy,
};
pub use module_array::{ModuleArray, ModuleView};
pub use number::DeviceNumber;
pub use shared::{Bools, SharedArray1, SharedArray2, SharedArray3};
pub use view::{
    ArrayIndex, Iter, View0, View0Mut, View1, View1Mut, View2, View2Mut, View3, View3Mut,
};

#[cfg(not(target_arch = "nvptx64"))]
pub use cpu::finding::{Access, AccessKind, Finding, Origin, Reader};
#[cfg(not(target_arch = "nvptx64"))]
pub use host::{
    args::KernelArgs,
    array::{
        DeviceArray, DeviceArray0, DeviceArray1, DeviceArray2, DeviceArray3, Rank, Sliceable,
        ToDevice,
    },
    attributes::KernelAttributes,
    callback::StreamDone,
    detect::{detect, Detection, GpuInfo, GpuReport, ModuleReport},
    device::{Device, DeviceKind, Limits},
    device_view::{DeviceView, DeviceViewMut, IntoDeviceView, IntoDeviceViewMut},
    error::{Error, LaunchError},
    event::Event,
    graph::Graph,
    gufunc::{GuInput, GuOutput},
    instance::KernelInstance,
    kernel::{ByValue, KernelArg},
    launch::{IntoDim3, LaunchConfig},
    launcher::{Kernel, KernelMeta},
    memory_info::MemoryInfo,
    pinned::{PinError, PinnedArray},
    properties::{DeviceProperties, GpuProperties},
    ptr::DevicePtr,
    stream::Stream,
    transfer::{PinnedSlice, PinnedSliceMut},
};

/// Many processes over MPI (the `mpi` feature).
#[cfg(all(feature = "mpi", not(target_arch = "nvptx64")))]
pub use host::cluster;

/// Re-exports for host code that builds and reads arrays.
#[cfg(not(target_arch = "nvptx64"))]
pub use ndarray;

/// Everything a kernel and its host program use: `use kernel_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::atomic::{
        atomic_add, atomic_and, atomic_cas, atomic_dec, atomic_exch, atomic_inc, atomic_max,
        atomic_min, atomic_nanmax, atomic_nanmin, atomic_or, atomic_sub, atomic_xor,
    };
    pub use crate::cmath::{self, Complex32, Complex64};
    pub use crate::ctx::{block_dim, block_idx, grid_dim, thread_idx};
    pub use crate::fp16;
    pub use crate::grid::GridGroup;
    pub use crate::intrinsics::{brev, cbrt, clz, ffs, fma, popc, selp};
    pub use crate::math::{self, DeviceFloat};
    pub use crate::number::DeviceNumber;
    pub use crate::random::{
        xoroshiro128p_normal_f32, xoroshiro128p_normal_f64, xoroshiro128p_uniform_f32,
        xoroshiro128p_uniform_f64, Xoroshiro128pState,
    };
    pub use crate::sync::{
        nanosleep, sync_threads, sync_threads_and, sync_threads_count, sync_threads_or,
        threadfence, threadfence_block, threadfence_system,
    };
    pub use crate::warp::{
        activemask, all_sync, any_sync, ballot_sync, eq_sync, lane_id, lanemask_lt, match_all_sync,
        match_any_sync, shfl_down_sync, shfl_sync, shfl_up_sync, shfl_xor_sync, syncwarp,
        WarpValue, WARP_SIZE,
    };
    pub use crate::{bf16, f16};
    pub use crate::{
        constant_array, device, global_array, guvectorize, kernel, kprintln, reduce, stencil,
        vectorize, DeviceCopy, Dim3,
    };
    pub use crate::{dynamic_shared, shared_array};
    pub use crate::{
        SharedArray1, SharedArray2, SharedArray3, View0, View0Mut, View1, View1Mut, View2,
        View2Mut, View3, View3Mut,
    };

    #[cfg(not(target_arch = "nvptx64"))]
    pub use crate::random::create_xoroshiro128p_states;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use crate::{
        Device, DeviceArray, DeviceArray1, DeviceArray2, DeviceArray3, Error, Kernel, LaunchConfig,
    };
    #[cfg(not(target_arch = "nvptx64"))]
    pub use ndarray::{Array0, Array1, Array2, Array3};
}

/// A static shared-memory array of the block: `shared_array![f32; 256]`,
/// `shared_array![f32; [TPB, TPB]]` or `shared_array![f32; [D, TPB, TPB]]`, sizes known at
/// compile time.
///
/// Only meaningful directly inside a `#[kernel]` function, whose macro lays every shared array
/// out at a fixed offset of the block's shared memory; anywhere else it is a compile error.
#[macro_export]
macro_rules! shared_array {
    ($($t:tt)*) => {
        compile_error!("`shared_array!` can only be used directly inside a `#[kernel]` function")
    };
}

/// The block's dynamic shared memory as a slice of `T`: `dynamic_shared![f32]`; its length is
/// the dynamic shared bytes given at launch divided by the size of `T`.
///
/// Only meaningful directly inside a `#[kernel]` function; anywhere else it is a compile error.
#[macro_export]
macro_rules! dynamic_shared {
    ($($t:tt)*) => {
        compile_error!("`dynamic_shared!` can only be used directly inside a `#[kernel]` function")
    };
}
