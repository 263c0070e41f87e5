//! The one door for the code that `#[kernel]`, `#[vectorize]` and `#[derive(DeviceCopy)]`
//! write: re-exports only, not a public API.

pub use crate::base::assert_reducible;
pub use crate::device_copy::{assert_device_copy, Holds, NoPadding};
#[cfg(target_arch = "nvptx64")]
pub use crate::function_shared::symbol as shared_symbol;
pub use crate::function_shared::{bytes as shared_site_bytes, traced as function_traced};
pub use crate::launch_bounds::checked as launch_bounds;
pub use crate::launch_bounds::max_registers;
pub use crate::pipeline::runs_shared as tile_runs_shared;
#[cfg(target_arch = "nvptx64")]
pub use crate::print::gpu_print;
pub use crate::print::{Format, KernelPrint, PrintFloat, PrintInteger, Spec};
pub use crate::shared::{
    array1 as shared_array1, array2 as shared_array2, array3 as shared_array3, array_bytes,
    bools1 as shared_bools1, bools2 as shared_bools2, bools3 as shared_bools3,
    dynamic as dynamic_shared, extent, hint_extent, layout, At, ConstMessage, STATIC_LIMIT,
};
pub use crate::warp::shfl_down_words;
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::{
    cpu::launch::sites::{Site as SharedSite, SITES as FUNCTION_SHARED},
    function_shared::{place as shared_place, site as shared_site},
    print::{cpu_print, snprintf},
    shared::traced as traced_shared,
};

#[cfg(target_arch = "nvptx64")]
pub use crate::stencil::gpu_walk as stencil_gpu_walk;
pub use crate::stencil::{
    tile_cols as stencil_tile_cols, tile_planes as stencil_tile_planes,
    tile_rows as stencil_tile_rows, within as stencil_within, words_fit as stencil_words_fit,
    Geometry as StencilGeometry, Neighbours as StencilNeighbours, Point as StencilPoint,
    Reach as StencilReach, Window as StencilWindow,
};

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::grid::hooks::cpu_grid;
#[cfg(target_arch = "nvptx64")]
pub use crate::grid::hooks::gpu_grid;

pub use crate::ctx::{block_dim, block_idx, grid_dim, thread_idx};
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::host::array::{DeviceArray, Rank};
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::host::device_view::{DeviceView, DeviceViewMut, IntoDeviceView, IntoDeviceViewMut};
pub use crate::sync::sync_threads;
pub use crate::warp::{lane_id, shfl_down_sync};
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::{
    cpu::bodies::{
        Blocks, Cooperative, Coroutines, FastRun, Grid, Split, SplitCooperative, Strided, Strided2,
        WholeRow,
    },
    cpu::check::{NoRecord, SpanRecord},
    cpu::elementwise::elementwise,
    cpu::exec::{all_exited, BlockRun},
    cpu::fault::KernelFault,
    cpu::launch::enter_thread,
    cpu::lockstep::{operands, Operands},
    cpu::reduction::reduce as reduce_host,
    cpu::rows::Span,
    cpu::sched::warp::each_lane,
    cpu::slots::{flags, Slots},
    cpu::tasks::SharedPtr,
    fault::foreign_without_cpu_body,
    host::args::{Args, KernelArgs, Views},
    host::elementwise::{
        common_device, cuda_launch, device_addr, gpu_params, grid_stride_launch, host_elements,
        host_ptr, host_ptr_mut, on_gpu, reads, reads_whole, same_shape, writes, zeros_like,
    },
    host::embedded::{module_text, PTX_MODULES},
    host::error::Error,
    host::gufunc::{
        device_of as gu_device, made_output as gu_output, made_shapes as gu_shapes,
        plan as gu_plan, run_cpu as gu_cpu, GuInput, GuOutput, Layout as GuLayout,
        Operand as GuOperand,
    },
    host::instance::KernelInstance,
    host::kernel::{ByValue, KernelArg},
    host::launch::{IntoDim3, LaunchConfig},
    host::launcher::{
        body, launch, Instance, Kernel, KernelMeta, Sizing, NOT_IN_MODULE, NO_MODULE,
    },
    host::ptr::SyncPtr,
    host::stencil::{
        cpu_input as stencil_input, cpu_marks as stencil_marks, cpu_out as stencil_out,
        cpu_standard0 as stencil_standard0, cpu_standard1 as stencil_standard1,
        cpu_standard2 as stencil_standard2, cpu_standard3 as stencil_standard3,
        gpu_config as stencil_config, view_mode as stencil_view_mode,
        view_tested as stencil_view_tested,
    },
    stencil::rows::{checked_rows as stencil_checked_rows, rows as stencil_rows},
    stencil::Input as StencilInput,
};
#[cfg(not(target_arch = "nvptx64"))]
pub use ndarray::{Array0, Array2, Array3, Ix1};

pub use crate::cores::{CoreShape, Cores, ScalarShape, Scalars};
pub use crate::ctx::Ctx;
pub use crate::device_copy::{zero, AnyBitPattern, DeviceCopy};
#[cfg(target_arch = "nvptx64")]
pub use crate::math::fastmath;
pub use crate::math::DeviceFloat;
pub use crate::module_array::{ModuleArray, Space};
pub use crate::view::{Proven, View0, View0Mut, View1, View1Mut, View2, View2Mut, View3, View3Mut};
pub use kernel_macros::kernel;
#[cfg(not(target_arch = "nvptx64"))]
pub use linkme;
