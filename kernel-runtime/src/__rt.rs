//! The one door for the code that `#[kernel]`, `#[vectorize]` and `#[derive(DeviceCopy)]`
//! write: re-exports only, not a public API.

pub use crate::device_copy::{assert_device_copy, Holds, NoPadding};
pub use crate::shared::{array_bytes, extent, hint_extent, layout, ConstMessage, STATIC_LIMIT};

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::grid::hooks::cpu_grid;
#[cfg(target_arch = "nvptx64")]
pub use crate::grid::hooks::gpu_grid;

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::{
    cpu::bodies::{
        Blocks, Cooperative, Coroutines, FastRun, Grid, Split, SplitCooperative, WholeRow,
    },
    cpu::elementwise::{elementwise, SharedPtr},
    cpu::exec::{all_exited, enter_thread, BlockRun},
    cpu::fault::KernelFault,
    cpu::lockstep::{operands, Operands},
    cpu::reduction::reduce as reduce_host,
    cpu::rows::Span,
    cpu::slots::{flags, Slots},
    cpu::warp::each_lane,
    fault::foreign_without_cpu_body,
    host::args::{Args, KernelArgs, Views},
    host::elementwise::{
        common_device, cuda_launch, device_addr, gpu_params, host_ptr, host_ptr_mut, on_gpu, reads,
        same_shape, writes,
    },
    host::embedded::PTX_MODULES,
    host::error::Error,
    host::instance::KernelInstance,
    host::kernel::{ByValue, KernelArg},
    host::launch::{IntoDim3, LaunchConfig},
    host::launcher::{
        body, launch, Instance, Kernel, KernelMeta, Sizing, NOT_IN_MODULE, NO_MODULE,
    },
    host::ptr::SyncPtr,
};
#[cfg(not(target_arch = "nvptx64"))]
pub use ndarray::{Array0, Array2, Array3};

pub use crate::ctx::Ctx;
pub use crate::view::{View0, View0Mut, View1, View1Mut, View2, View2Mut, View3, View3Mut};
#[cfg(not(target_arch = "nvptx64"))]
pub use linkme;
