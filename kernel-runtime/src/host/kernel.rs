//! Kernel arguments: how each argument of a launch is checked, passed to a GPU and seen by the
//! CPU backend.
//!
//! The launcher `#[kernel]` writes names each argument once per step and leaves the rest to
//! [`KernelArg`], as cudarc's `PushKernelArg` does for its launches: `&DeviceArray` (read),
//! `&mut DeviceArray` (written) and [`DeviceCopy`] values ([`Value`]) are the three kinds.

use super::array::{DeviceArray, Rank};
use super::device::Device;
use super::error::Error;
use super::launch::LaunchConfig;
use super::order::Access;
use super::params::GpuParams;
use super::ptr::{DevicePtr, SyncPtr};
use crate::cpu::check::LaunchShadows;
use crate::device_copy::DeviceCopy;
use crate::view::{View0, View0Mut, View1, View1Mut, View2, View2Mut, View3, View3Mut};
use ndarray::{Ix0, Ix1, Ix2, Ix3};

/// One argument of a kernel launch.
pub trait KernelArg {
    /// What the kernel's body sees on the CPU backend, with index checks on or off.
    type View<const CHECK: bool>;

    /// The device the argument's memory lives on; none for a value.
    fn device(&self) -> Option<&Device>;

    /// Appends pointers to the argument's PTX parameters, in order: an array's device address
    /// and then its extents, a value itself. They point into `self`. An array also records how
    /// the launch uses it.
    fn push_gpu<'p>(&'p self, params: &mut GpuParams<'p>);

    /// The CPU backend's view, named `name` in fault reports, its accesses not traced.
    ///
    /// # Safety
    /// The argument's memory must be the host's (the launch runs on the CPU backend: a GPU's
    /// array has no host elements to view), and with `CHECK` false every index the body takes
    /// must be within the array (the kernel's `boundscheck = false` promise).
    unsafe fn view<const CHECK: bool>(self, name: &'static str) -> Self::View<CHECK>;

    /// Checked mode's view, its accesses traced in `shadows`.
    ///
    /// # Safety
    /// As for [`view`](Self::view); and the view must not be used after `shadows` is dropped.
    unsafe fn traced_view<const CHECK: bool>(
        self,
        name: &'static str,
        shadows: &mut LaunchShadows,
    ) -> Self::View<CHECK>;
}

/// A by-value argument: what the launcher wraps each scalar and struct in. Its type is checked
/// to be [`DeviceCopy`] where the kernel is defined (one error there, not one per use); a GPU
/// launch reads it through a pointer to it, in place.
#[repr(transparent)]
pub struct Value<T>(pub T);

impl<T> KernelArg for Value<T> {
    type View<const CHECK: bool> = T;

    #[inline(always)]
    fn device(&self) -> Option<&Device> {
        None
    }

    fn push_gpu<'p>(&'p self, params: &mut GpuParams<'p>) {
        params.push(&self.0);
    }

    #[inline(always)]
    unsafe fn view<const CHECK: bool>(self, _name: &'static str) -> T {
        self.0
    }

    #[inline(always)]
    unsafe fn traced_view<const CHECK: bool>(
        self,
        _name: &'static str,
        _shadows: &mut LaunchShadows,
    ) -> T {
        self.0
    }
}

/// A raw pointer argument of an `unsafe` kernel: its address, in the launch's device.
impl<T> KernelArg for DevicePtr<T> {
    type View<const CHECK: bool> = SyncPtr<T>;

    #[inline(always)]
    fn device(&self) -> Option<&Device> {
        Some(DevicePtr::device(self))
    }

    fn push_gpu<'p>(&'p self, params: &mut GpuParams<'p>) {
        params.push(self.addr_ref());
    }

    #[inline(always)]
    unsafe fn view<const CHECK: bool>(self, _name: &'static str) -> SyncPtr<T> {
        SyncPtr::of(&self)
    }

    #[inline(always)]
    unsafe fn traced_view<const CHECK: bool>(
        self,
        _name: &'static str,
        _shadows: &mut LaunchShadows,
    ) -> SyncPtr<T> {
        SyncPtr::of(&self)
    }
}

/// The `KernelArg` of a device array borrowed as `$borrow` with rank `$ix`: `$view`.
macro_rules! array_arg {
    ($ix:ty, $rank:literal, $view:ident, $($borrow:tt)+) => {
        impl<'a, T: DeviceCopy> KernelArg for $($borrow)+ DeviceArray<T, $ix> {
            type View<const CHECK: bool> = $view<'a, T, CHECK>;

            #[inline(always)]
            fn device(&self) -> Option<&Device> {
                Some((**self).device())
            }

            fn push_gpu<'p>(&'p self, params: &mut GpuParams<'p>) {
                params.push((**self).device_addr());
                self.dims_slice().iter().for_each(|d| params.push(d));
                params.uses((**self).users(), array_arg!(@access $($borrow)+));
            }

            #[inline(always)]
            unsafe fn view<const CHECK: bool>(self, name: &'static str) -> $view<'a, T, CHECK> {
                let dims: [usize; $rank] = self.dims_array();
                let ptr = array_arg!(@ptr self, $($borrow)+);
                // SAFETY: the memory is the host's (the caller's contract), so the view covers
                // the array's elements; it lives no longer than the borrow of the array
                // (`within`), which the launch holds until every thread has run.
                unsafe { $view::from_raw(ptr, dims, name) }.within(&*self)
            }

            #[inline(always)]
            unsafe fn traced_view<const CHECK: bool>(
                self,
                name: &'static str,
                shadows: &mut LaunchShadows,
            ) -> $view<'a, T, CHECK> {
                let trace = array_arg!(@trace shadows, name, self, $($borrow)+);
                // SAFETY: the caller's contract, which is `view`'s, and it keeps `shadows`, which
                // the trace points into, for as long as the view.
                unsafe { KernelArg::view::<CHECK>(self, name).traced(trace) }
            }
        }
    };
    (@trace $shadows:ident, $name:ident, $array:ident, &'a mut) => {
        $shadows.writable($name, $array.dims_slice())
    };
    (@trace $shadows:ident, $name:ident, $array:ident, &'a) => {
        $shadows.read_only()
    };
    (@access &'a mut) => {
        Access::Write
    };
    (@access &'a) => {
        Access::Read
    };
    (@ptr $array:ident, &'a mut) => {
        $array.host_ptr_mut()
    };
    (@ptr $array:ident, &'a) => {
        $array.host_ptr()
    };
}

array_arg!(Ix0, 0, View0, &'a);
array_arg!(Ix1, 1, View1, &'a);
array_arg!(Ix2, 2, View2, &'a);
array_arg!(Ix3, 3, View3, &'a);
array_arg!(Ix0, 0, View0Mut, &'a mut);
array_arg!(Ix1, 1, View1Mut, &'a mut);
array_arg!(Ix2, 2, View2Mut, &'a mut);
array_arg!(Ix3, 3, View3Mut, &'a mut);

/// The device all `arrays` of an element-wise call live on.
pub fn common_device(
    kernel: &'static str,
    arrays: &[(&'static str, &Device)],
) -> Result<Device, Error> {
    pick_device(kernel, None, arrays.iter().copied())
}

/// The error of an argument `argument` of the element-wise function `function` whose
/// shape differs from the output's.
pub fn same_shape(
    function: &'static str,
    argument: &'static str,
    expected: &[usize],
    found: &[usize],
) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            what: format!(
                "argument `{argument}` of `{function}` (the output's shape is the one expected)"
            ),
            expected: expected.to_vec(),
            found: found.to_vec(),
        })
    }
}

/// Whether a launch on `device` goes to a GPU (else the CPU backend runs it).
#[inline]
pub fn on_gpu(device: &Device) -> bool {
    device.gpu().is_some()
}

/// Whether a launch on `device` runs in the CPU backend's checked mode.
#[inline]
pub fn checked(device: &Device) -> bool {
    device.is_checked()
}

/// Launches `kernel` of the PTX module `ptx` (or the reason there is none) on the GPU `device`, with `static_shared` bytes
/// of static shared arrays and the configuration's dynamic bytes after them.
///
/// # Safety
/// `params` must point at one value per parameter of the PTX entry, of its type, in order
/// (the macro writes them from the kernel's signature, and the PTX tests check the entry's
/// parameter list against it), and the arrays among them must be the device's.
pub unsafe fn cuda_launch(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    config: &LaunchConfig,
    static_shared: usize,
    params: &mut GpuParams<'_>,
) -> Result<(), Error> {
    let gpu = device.gpu().ok_or(Error::NoDevice { kernel })?;
    let ptx = ptx.map_err(|reason| Error::NoPtx { kernel, reason })?;
    // SAFETY: the caller's contract.
    unsafe { gpu.launch(kernel, ptx, &config.on_gpu(static_shared, false), params) }
}

/// The device a launch runs on: the configuration's, else the first array argument's; every
/// array argument must live there. `args` are the arguments' names and devices (none for a
/// value), as [`KernelArg::device`] gives them.
pub fn launch_device(
    kernel: &'static str,
    cfg: &LaunchConfig,
    args: &[(&'static str, Option<&Device>)],
) -> Result<Device, Error> {
    let arrays = args.iter().filter_map(|&(name, d)| Some((name, d?)));
    pick_device(kernel, cfg.device.as_ref(), arrays)
}

/// The configuration of `kernel.forall(tasks)`, as Numba's: one-dimensional blocks of the size
/// the GPU's occupancy calculator gives the kernel (256 threads on the CPU backend), enough of
/// them for a thread per task, on the device of the array arguments `args` (as
/// [`launch_device`] takes them); `None` for no task.
pub fn forall_config(
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    tasks: usize,
    args: &[(&'static str, Option<&Device>)],
) -> Result<Option<LaunchConfig>, Error> {
    let arrays = args.iter().filter_map(|&(name, d)| Some((name, d?)));
    let device = pick_device(kernel, None, arrays)?;
    if tasks == 0 {
        return Ok(None);
    }
    let threads = match device.gpu() {
        Some(gpu) => {
            let ptx = ptx.map_err(|reason| Error::NoPtx { kernel, reason })?;
            gpu.block_size(kernel, ptx)?
        }
        None => 256,
    };
    let config = LaunchConfig::cover(tasks, threads)
        .map_err(|reason| Error::InvalidLaunch { kernel, reason })?;
    Ok(Some(config.on(&device)))
}

fn pick_device<'d>(
    kernel: &'static str,
    explicit: Option<&Device>,
    mut arrays: impl Iterator<Item = (&'static str, &'d Device)> + Clone,
) -> Result<Device, Error> {
    let device = match (explicit, arrays.clone().next()) {
        (Some(d), _) => d.clone(),
        (None, Some((_, d))) => d.clone(),
        (None, None) => return Err(Error::NoDevice { kernel }),
    };
    match arrays.find(|(_, d)| **d != device) {
        Some((argument, found)) => Err(Error::DeviceMismatch {
            kernel,
            argument,
            expected: device.name(),
            found: found.name(),
        }),
        None => Ok(device),
    }
}

/// The shape every one of `shapes` has, if they agree (the CPU backend then runs a version of
/// the kernel in which those arrays share their extents).
#[inline]
pub fn common_dims<const N: usize>(shapes: &[[usize; N]]) -> Option<[usize; N]> {
    let first = *shapes.first()?;
    shapes.iter().all(|s| *s == first).then_some(first)
}

/// The device address of `array` (a `#[vectorize]` launch passes pointers alone).
pub fn device_addr<T: DeviceCopy, D: Rank>(array: &DeviceArray<T, D>) -> u64 {
    *array.device_addr()
}

/// A pointer to `array`'s elements, to read, on the CPU backend.
pub fn host_ptr<T: DeviceCopy, D: Rank>(array: &DeviceArray<T, D>) -> *mut T {
    array.host_ptr()
}

/// A pointer to `array`'s elements, to write, on the CPU backend.
pub fn host_ptr_mut<T: DeviceCopy, D: Rank>(array: &mut DeviceArray<T, D>) -> *mut T {
    array.host_ptr_mut()
}

/// Room for the pointers to a GPU launch's `count` PTX parameters.
pub fn gpu_params<'a>(count: usize) -> GpuParams<'a> {
    GpuParams::with_capacity(count)
}

/// Records that a `#[vectorize]` launch reads `array`.
pub fn reads<'a, T: DeviceCopy, D: Rank>(params: &mut GpuParams<'a>, array: &'a DeviceArray<T, D>) {
    params.uses(array.users(), Access::Read);
}

/// Records that a `#[vectorize]` launch writes `array`.
pub fn writes<'a, T: DeviceCopy, D: Rank>(
    params: &mut GpuParams<'a>,
    array: &'a DeviceArray<T, D>,
) {
    params.uses(array.users(), Access::Write);
}
