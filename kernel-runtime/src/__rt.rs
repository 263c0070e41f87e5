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
    cpu::check::LaunchShadows,
    cpu::elementwise::{elementwise, SharedPtr},
    cpu::exec::{
        enter_thread, run, run_cooperative, run_split, run_split_cooperative, wide_vectors,
        BlockRun, LaunchSpec,
    },
    cpu::fault::KernelFault,
    cpu::lockstep::{operands, Operands},
    cpu::reduction::reduce as reduce_host,
    cpu::rows::{run_grid, Span},
    cpu::slots::{flags, Slots},
    cpu::warp::each_lane,
    fault::foreign_without_cpu_body,
    host::cooperative::{check_cooperative, cuda_launch_cooperative, max_cooperative_grid_blocks},
    host::embedded::PTX_MODULES,
    host::kernel::{
        checked, common_device, common_dims, cuda_launch, device_addr, forall_config, gpu_params,
        host_ptr, host_ptr_mut, launch_device, on_gpu, reads, same_shape, writes, KernelArg, Value,
    },
    host::params::GpuParams,
    host::ptr::SyncPtr,
    view::hooks::LaunchView,
};
#[cfg(not(target_arch = "nvptx64"))]
pub use linkme;
