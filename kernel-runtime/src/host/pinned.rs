//! [`PinnedArray`]: page-locked host memory, as Numba's `cuda.pinned_array`, whose copies to and
//! from a GPU run at the bus's full speed and asynchronously, on the device's stream or on a
//! stream of the user's ([`Stream::upload`](super::stream::Stream::upload),
//! [`Stream::download`](super::stream::Stream::download)).

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ops::RangeBounds;

use ndarray::{ArrayView, ArrayViewMut, Dimension};

use super::array::{checked_len, DeviceArray, Rank, ShapeArg};
use super::device::permitted;
use super::device::Device;
use super::error::Error;
use super::host_vec::{within, zeroed_vec};
use super::order::{Access, Users};
use super::transfer::{PinnedSlice, PinnedSliceMut};
use crate::device_copy::DeviceCopy;

/// A host array in page-locked memory of a GPU's context (`cuMemHostAlloc`; on the CPU
/// backend, ordinary memory). Copies between it and the device
/// ([`DeviceArray::copy_from_pinned`], [`PinnedArray::copy_from_device`], and on a stream of
/// the user's [`Stream::upload`](super::stream::Stream::upload) and
/// [`Stream::download`](super::stream::Stream::download)) are queued and return at once, so
/// the host can go on while they run. Reading the array (`&a[..]`, [`view`](Self::view)) first
/// waits for the copies queued into it; writing or dropping it, for every copy queued on it.
/// So the host never sees a half-copied array, never changes one a copy is reading, and never
/// frees memory a copy uses.
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
    /// The GPU streams whose copies use the memory.
    users: Users,
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
        let len = checked_len(dim.slice(), std::mem::size_of::<T>())?;
        let bytes = len * std::mem::size_of::<T>();
        let memory = match self.gpu() {
            Some(gpu) if bytes > 0 => {
                let ptr = gpu.alloc_host(bytes)?.cast::<T>();
                // SAFETY: `ptr` holds `bytes` bytes; all-zero bits are a `T` (`DeviceCopy`).
                unsafe { ptr.cast::<u8>().write_bytes(0, bytes) };
                Memory::Pinned(ptr, len)
            }
            _ => {
                permitted(self, "allocating an array")?;
                Memory::Host(zeroed_vec(len, || self.name())?)
            }
        };
        Ok(PinnedArray {
            device: self.clone(),
            dim,
            memory,
            users: Users::default(),
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

    /// Waits until the copies that conflict with a host use `access` of the memory are done. A
    /// failed wait (a lost context) stops every copy with the context, so the memory is free to
    /// use either way.
    fn settle(&self, access: Access) {
        let _ = self.users.host_wait(access);
    }

    /// The elements, after [`settle`](Self::settle).
    fn elements(&self) -> &[T] {
        self.settle(Access::Read);
        match &self.memory {
            // SAFETY: `len` elements at `ptr`, owned by `self`, no copy writing them.
            Memory::Pinned(ptr, len) => unsafe { std::slice::from_raw_parts(*ptr, *len) },
            Memory::Host(v) => v,
        }
    }

    /// The elements, writable, after [`settle`](Self::settle).
    fn elements_mut(&mut self) -> &mut [T] {
        self.settle(Access::Write);
        match &mut self.memory {
            // SAFETY: `len` elements at `ptr`, owned by `self` and borrowed uniquely, no copy
            // reading or writing them.
            Memory::Pinned(ptr, len) => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
            Memory::Host(v) => v,
        }
    }

    /// The elements `range` (in C order) as the source of a copy to a device
    /// ([`Stream::upload`](super::stream::Stream::upload)), as Numba's `a[start:end]`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] where `range` does not lie within the array.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<PinnedSlice<'_, T>, Error> {
        let (start, end) = within(range, self.len())?;
        Ok(PinnedSlice {
            // In the allocation: `start <= end <= len`.
            ptr: self.first().wrapping_add(start),
            len: end - start,
            users: &self.users,
            device: &self.device,
            _elements: PhantomData,
        })
    }

    /// The elements `range` (in C order) as the destination of a copy from a device
    /// ([`Stream::download`](super::stream::Stream::download)).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] where `range` does not lie within the array.
    pub fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<PinnedSliceMut<'_, T>, Error> {
        let (start, end) = within(range, self.len())?;
        let first = match &mut self.memory {
            Memory::Pinned(ptr, _) => *ptr,
            Memory::Host(v) => v.as_mut_ptr(),
        };
        Ok(PinnedSliceMut {
            // In the allocation: `start <= end <= len`.
            ptr: first.wrapping_add(start),
            len: end - start,
            users: &self.users,
            device: &self.device,
            _elements: PhantomData,
        })
    }

    /// The number of elements (without waiting for the copies queued on them).
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address of the first element, to read, waiting for nothing.
    fn first(&self) -> *const T {
        match &self.memory {
            Memory::Pinned(ptr, _) => *ptr,
            Memory::Host(v) => v.as_ptr(),
        }
    }

    /// Overwrites the array with a device array of its shape, on the same device: on a GPU the
    /// copy is queued on the device's stream after the work it depends on, and the array's
    /// next use waits for it.
    pub fn copy_from_device(&mut self, src: &DeviceArray<T, D>) -> Result<(), Error> {
        check_pair(
            "PinnedArray::copy_from_device",
            &self.device,
            self.shape(),
            src,
        )?;
        self.slice_mut(..)?.copy_from(None, src.view())
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
        src.slice(..)?.copy_to(None, self.view_mut())
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
        self.settle(Access::Write);
        if let (Memory::Pinned(ptr, _), Some(gpu)) = (&self.memory, self.device.gpu()) {
            gpu.free_host(ptr.cast::<c_void>());
        }
    }
}
