//! What a `#[vectorize]` function's launch takes from the host API: its arrays' device and
//! shapes checked, their pointers, and how the GPU launch uses them.

use super::args::pick_device;
use super::array::{DeviceArray, Rank};
use super::device::Device;
use super::device_view::{DeviceView, DeviceViewMut, IntoDeviceView};
use super::error::Error;
use super::launch::LaunchConfig;
use super::order::Access;
use super::params::GpuParams;
use crate::cpu::check::unflatten;
use crate::cpu::finding::{Finding, Reader};
use crate::cpu::unwritten::Marks;
use crate::device_copy::DeviceCopy;

/// The device all `arrays` of an element-wise call live on.
pub fn common_device(
    kernel: &'static str,
    arrays: &[(&'static str, &Device)],
) -> Result<Device, Error> {
    pick_device(kernel, None, &mut arrays.iter().copied())
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

/// Checked mode's test of `view`, argument `argument` of the element-wise function
/// `function`, which reads every element: the first element nothing has written is
/// [`Finding::UnwrittenRead`](crate::Finding::UnwrittenRead), numbered in the view.
pub fn reads_whole<T: DeviceCopy, D: Rank>(
    function: &'static str,
    argument: &'static str,
    view: &DeviceView<'_, T, D>,
) -> Result<(), Error> {
    let record = view.unwritten_record();
    whole_read(function, argument, record.marks(), view.shape())
}

/// [`reads_whole`] of an array of shape `shape` whose unwritten elements `marks` has, if any.
pub(crate) fn whole_read(
    function: &'static str,
    argument: &'static str,
    marks: Option<&Marks>,
    shape: &[usize],
) -> Result<(), Error> {
    let len = shape.iter().product();
    let Some((marks, first)) = marks.and_then(|m| Some((m, m.first_below(len)?))) else {
        return Ok(());
    };
    Err(Error::CheckFailed {
        kernel: function,
        finding: Box::new(Finding::UnwrittenRead {
            array: argument,
            index: unflatten(first, shape),
            reader: Reader::Element,
            origin: marks.origin(),
        }),
    })
}

/// Whether a launch on `device` goes to a GPU (else the CPU backend runs it).
#[inline]
pub fn on_gpu(device: &Device) -> bool {
    device.gpu().is_some()
}

/// Launches `kernel` of the PTX module `ptx` (or the reason there is none) on the GPU `device`,
/// without shared memory.
///
/// # Safety
/// `params` must point at one value per parameter of the PTX entry, of its type, in order
/// (the macro writes them from the function's signature), and the arrays among them must be
/// the device's.
pub unsafe fn cuda_launch(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    config: &LaunchConfig,
    params: &mut GpuParams<'_>,
) -> Result<(), Error> {
    let gpu = device.gpu().ok_or(Error::NoDevice { kernel })?;
    let ptx = ptx.map_err(|reason| Error::NoPtx { kernel, reason })?;
    // SAFETY: the caller's contract.
    config.queue(|| unsafe { gpu.launch(kernel, ptx, &config.on_gpu(0, false), params) })
}

/// Launches the PTX entry `kernel` of `ptx` on the GPU `device` as a grid-stride loop over
/// `items` (the elements of a `#[vectorize]` call, the loop indices of a `#[guvectorize]` one):
/// enough blocks of `threads` threads for them, at most the device allows.
///
/// # Safety
/// As [`cuda_launch`]'s.
pub unsafe fn grid_stride_launch(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    (items, threads): (usize, u32),
    params: &mut GpuParams<'_>,
) -> Result<(), Error> {
    let blocks = items
        .div_ceil(threads as usize)
        .clamp(1, device.limits().max_grid.x as usize);
    let config = LaunchConfig::new(blocks, threads)
        .map_err(|reason| Error::InvalidLaunch { kernel, reason })?;
    // SAFETY: the caller's contract.
    unsafe { cuda_launch(device, kernel, ptx, &config, params) }
}

/// The device address of `array`'s first element, an array or a view (a `#[vectorize]`
/// launch passes pointers alone).
pub fn device_addr<'a, T: DeviceCopy, D: Rank>(array: impl IntoDeviceView<'a, T, D>) -> u64 {
    array.into_view().addr
}

/// The elements of `view` in host memory: all of them on the CPU backend, none on a GPU.
pub fn host_elements<'a, T: DeviceCopy, D: Rank>(view: &DeviceView<'a, T, D>) -> &'a [T] {
    view.host_elements()
}

/// A pointer to `view`'s elements, to read, on the CPU backend.
pub fn host_ptr<T: DeviceCopy, D: Rank>(view: &DeviceView<'_, T, D>) -> *mut T {
    view.host.as_ptr().cast_mut()
}

/// A pointer to `view`'s elements, to write, on the CPU backend; checked mode counts every
/// element written.
pub fn host_ptr_mut<T: DeviceCopy, D: Rank>(view: &mut DeviceViewMut<'_, T, D>) -> *mut T {
    view.forget_unwritten();
    view.host.as_mut_ptr()
}

/// A zero-filled array of `view`'s shape and device, for `#[vectorize]`'s `call`.
pub fn zeros_like<R: DeviceCopy, T: DeviceCopy, D: Rank>(
    view: &DeviceView<'_, T, D>,
) -> Result<DeviceArray<R, D>, Error> {
    DeviceArray::zeros(view.device, view.dim.clone())
}

/// Room for the pointers to a GPU launch's `count` PTX parameters.
pub fn gpu_params<'a>(count: usize) -> GpuParams<'a> {
    GpuParams::with_capacity(count)
}

/// Records that an element-wise launch reads `array` (an array or a view of one).
pub fn reads<'a, T: DeviceCopy, D: Rank>(
    params: &mut GpuParams<'a>,
    array: impl IntoDeviceView<'a, T, D>,
) {
    params.uses(array.into_view().span(), Access::Read);
}

/// Records that an element-wise launch writes `array` (an array or a view of one).
pub fn writes<'a, T: DeviceCopy, D: Rank>(
    params: &mut GpuParams<'a>,
    array: impl IntoDeviceView<'a, T, D>,
) {
    params.uses(array.into_view().span(), Access::Write);
}
