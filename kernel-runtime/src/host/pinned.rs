//! [`PinnedArray`]: page-locked host memory, as Numba's `cuda.pinned_array`, whose copies to and
//! from a GPU run at the bus's full speed and asynchronously on the device's stream.

use std::ffi::c_void;
use std::sync::Mutex;

use cudarc::driver::CudaEvent;
use ndarray::{ArrayView, ArrayViewMut, Dimension};

use super::array::{zeroed_vec, DeviceArray, Rank, ShapeArg};
use super::device::Device;
use super::error::Error;
use super::graph::outside_cpu_replay;
use crate::device_copy::DeviceCopy;

/// A host array in page-locked memory of a GPU's context (`cuMemHostAlloc`; on the CPU
/// backend, ordinary memory). Copies between it and the device
/// ([`DeviceArray::copy_from_pinned`], [`PinnedArray::copy_from_device`]) are queued on the
/// device's stream and return at once, so the host can go on while they run; reading or writing
/// the array (`&a[..]`, [`view`](Self::view), dropping it) first waits for the copies queued on
/// it, so the host never sees a half-copied array and never frees memory a copy uses.
///
/// ```
/// use kernel_runtime::prelude::*;
/// let dev = Device::cpu();
/// let mut host = dev.pinned::<f32, _>(1000)?;
/// host.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
/// let mut d = dev.zeros::<f32, _>(1000)?;
/// d.copy_from_pinned(&host)?;
/// let mut back = dev.pinned::<f32, _>(1000)?;
/// back.copy_from_device(&d)?;
/// assert_eq!(back[999], 999.0);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
pub struct PinnedArray<T: DeviceCopy, D: Rank> {
    device: Device,
    dim: D,
    memory: Memory<T>,
    /// The event after the last copy queued on this memory.
    pending: Mutex<Option<CudaEvent>>,
}

/// Where a [`PinnedArray`]'s elements are.
enum Memory<T> {
    /// Page-locked memory of a GPU's context, `len` elements.
    Pinned(*mut T, usize),
    /// The CPU backend's.
    Host(Vec<T>),
}

// SAFETY: a `PinnedArray` owns its elements as a `Vec` does; the raw pointer is not shared.
unsafe impl<T: DeviceCopy + Send, D: Rank> Send for PinnedArray<T, D> {}
// SAFETY: shared access only reads the elements (after waiting for the copies into them).
unsafe impl<T: DeviceCopy + Sync, D: Rank> Sync for PinnedArray<T, D> {}

impl Device {
    /// A zero-filled host array of `shape` in page-locked memory (Numba's
    /// `cuda.pinned_array`): see [`PinnedArray`].
    pub fn pinned<T: DeviceCopy, S: ShapeArg>(
        &self,
        shape: S,
    ) -> Result<PinnedArray<T, S::Dim>, Error> {
        let dim = shape.into_shape()?;
        let len = dim.size();
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::TooLarge {
                shape: dim.slice().to_vec(),
            })?;
        let memory = match self.gpu() {
            Some(gpu) if bytes > 0 => {
                let ptr = gpu.alloc_host(bytes)?.cast::<T>();
                // SAFETY: `ptr` holds `bytes` bytes; all-zero bits are a `T` (`DeviceCopy`).
                unsafe { ptr.cast::<u8>().write_bytes(0, bytes) };
                Memory::Pinned(ptr, len)
            }
            _ => {
                outside_cpu_replay(self, "allocating an array")?;
                Memory::Host(zeroed_vec(len, || self.name())?)
            }
        };
        Ok(PinnedArray {
            device: self.clone(),
            dim,
            memory,
            pending: Mutex::new(None),
        })
    }
}

impl<T: DeviceCopy, D: Rank> PinnedArray<T, D> {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The device whose context the memory is page-locked in.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the memory is page-locked (on a GPU's context), not the CPU backend's.
    pub fn is_page_locked(&self) -> bool {
        matches!(self.memory, Memory::Pinned(..))
    }

    /// The elements as an ndarray view, once the copies queued on them are done.
    pub fn view(&self) -> ArrayView<'_, T, D> {
        ArrayView::from_shape(self.dim.clone(), self).expect("the shape holds the elements")
    }

    /// The elements as a writable ndarray view, once the copies queued on them are done.
    pub fn view_mut(&mut self) -> ArrayViewMut<'_, T, D> {
        let dim = self.dim.clone();
        ArrayViewMut::from_shape(dim, self).expect("the shape holds the elements")
    }

    /// Waits until the copies queued on the memory are done. A failed wait (a lost context)
    /// stops every copy with the context, so the memory is free to use either way.
    fn settle(&self) {
        let event = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(event) = event {
            let _ = event.synchronize();
        }
    }

    /// The elements, after [`settle`](Self::settle).
    fn elements(&self) -> &[T] {
        self.settle();
        match &self.memory {
            // SAFETY: `len` elements at `ptr`, owned by `self`, no copy writing them.
            Memory::Pinned(ptr, len) => unsafe { std::slice::from_raw_parts(*ptr, *len) },
            Memory::Host(v) => v,
        }
    }

    /// The elements, writable, after [`settle`](Self::settle).
    fn elements_mut(&mut self) -> &mut [T] {
        self.settle();
        match &mut self.memory {
            // SAFETY: `len` elements at `ptr`, owned by `self` and borrowed uniquely, no copy
            // reading or writing them.
            Memory::Pinned(ptr, len) => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
            Memory::Host(v) => v,
        }
    }

    /// Overwrites the array with a device array of its shape, on the same device: on a GPU the
    /// copy is queued on the device's stream after the work queued before it, and the array's
    /// next use waits for it.
    pub fn copy_from_device(&mut self, src: &DeviceArray<T, D>) -> Result<(), Error> {
        check_pair(
            "PinnedArray::copy_from_device",
            &self.device,
            self.shape(),
            src,
        )?;
        let device = self.device.clone();
        match (src.as_device_ptr(), device.gpu()) {
            (Some(from), Some(gpu)) if self.is_page_locked() => {
                let dst = self.elements_mut();
                // SAFETY: `dst` is page-locked memory of `self`, which waits for the event
                // before any other use and before it is freed; `from` holds as many elements.
                let event = unsafe { gpu.download_async(dst, from) }?;
                *self.pending.get_mut().unwrap_or_else(|p| p.into_inner()) = Some(event);
                Ok(())
            }
            _ => {
                let values = src.to_vec()?;
                self.elements_mut().copy_from_slice(&values);
                Ok(())
            }
        }
    }
}

impl<T: DeviceCopy, D: Rank> DeviceArray<T, D> {
    /// Overwrites the array with a page-locked host array of its shape, on the same device: on
    /// a GPU the copy is queued on the device's stream and returns at once; the host's next
    /// write to `src` waits for it.
    pub fn copy_from_pinned(&mut self, src: &PinnedArray<T, D>) -> Result<(), Error> {
        check_pair(
            "DeviceArray::copy_from_pinned",
            &src.device,
            src.shape(),
            self,
        )?;
        match (self.as_device_ptr(), src.device.gpu()) {
            (Some(to), Some(gpu)) if src.is_page_locked() => {
                let values = src.elements();
                // SAFETY: `values` is page-locked memory of `src`, which waits for the event
                // before any write and before it is freed; `to` holds as many elements.
                let event = unsafe { gpu.upload_async(to, values) }?;
                *src.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(event);
                Ok(())
            }
            _ => self.copy_from_host(&src.view()),
        }
    }
}

/// Refuses the copy `op` between a pinned array of `shape` on `device` and `array` of another
/// shape or device.
fn check_pair<T: DeviceCopy, D: Rank>(
    op: &'static str,
    device: &Device,
    shape: &[usize],
    array: &DeviceArray<T, D>,
) -> Result<(), Error> {
    if array.shape() != shape {
        return Err(Error::ShapeMismatch {
            what: format!("the arrays of {op}"),
            expected: shape.to_vec(),
            found: array.shape().to_vec(),
        });
    }
    if array.device() != device {
        return Err(Error::DeviceMismatch {
            kernel: op,
            argument: "the device array",
            expected: device.name(),
            found: array.device().name(),
        });
    }
    Ok(())
}

impl<T: DeviceCopy, D: Rank> std::ops::Deref for PinnedArray<T, D> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.elements()
    }
}

impl<T: DeviceCopy, D: Rank> std::ops::DerefMut for PinnedArray<T, D> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.elements_mut()
    }
}

impl<T: DeviceCopy, D: Rank> std::fmt::Debug for PinnedArray<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedArray")
            .field("device", &self.device.name())
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

impl<T: DeviceCopy, D: Rank> Drop for PinnedArray<T, D> {
    fn drop(&mut self) {
        self.settle();
        if let (Memory::Pinned(ptr, _), Some(gpu)) = (&self.memory, self.device.gpu()) {
            gpu.free_host(ptr.cast::<c_void>());
        }
    }
}
