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
use super::host_vec::{copied_vec, within, zeroed_vec};
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
    /// The host's own elements, page-locked in a GPU's context ([`Device::pin`]).
    Registered(Vec<T>),
    /// The CPU backend's (or no element).
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

impl Device {
    /// The host's own array, page-locked where it is (Numba's `with cuda.pinned(a):`,
    /// `cuMemHostRegister`): it moves into a [`PinnedArray`], with no copy, for copies that run
    /// asynchronously at the bus's speed, and [`into_array`](PinnedArray::into_array) gives it
    /// back once they are done. A `Vec` becomes a 1-D array; an array not in C order is
    /// copied into C order first.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let dev = Device::default();
    /// let s = dev.stream()?;
    /// let host = dev.pin((0..1000).map(|i| i as f32).collect::<Vec<_>>())?;
    /// let mut d = dev.zeros::<f32, _>(1000)?;
    /// s.upload(host.slice(..)?, &mut d)?; // returns at once on a GPU
    /// let back = host.into_array()?; // waits for the copy, then unlocks the memory
    /// assert_eq!(back[999], 999.0);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// A [`PinError`] that gives the array back, with the driver's refusal (where the host
    /// cannot lock that much memory, say): `?` turns it into an [`Error`].
    pub fn pin<T: DeviceCopy, D: Rank>(
        &self,
        host: impl Into<ndarray::Array<T, D>>,
    ) -> Result<PinnedArray<T, D>, Box<PinError<T, D>>> {
        let (mut v, dim, bytes) = taken(self, host.into(), "page-locking host memory")?;
        let memory = match self.gpu() {
            Some(gpu) if bytes > 0 => {
                // SAFETY: the `Vec`'s `bytes` stay allocated while it is registered: the array
                // owns it, never resizes it, and unregisters it before giving it up.
                match unsafe { gpu.register_host(v.as_mut_ptr().cast::<c_void>(), bytes) } {
                    Ok(()) => Memory::Registered(v),
                    Err(error) => {
                        let array = c_order_array(dim, v);
                        return Err(Box::new(PinError { error, array }));
                    }
                }
            }
            _ => Memory::Host(v),
        };
        Ok(PinnedArray {
            device: self.clone(),
            dim,
            memory,
            users: Users::default(),
        })
    }
}

/// What [`taken`] gives: a host array's elements in C order, its shape and their bytes; or
/// the array given back with the reason.
pub(crate) type Taken<T, D> = Result<(Vec<T>, D, usize), Box<PinError<T, D>>>;

/// The host's array `host`, taken for `what` (page-locking or mapping it) on `dev`; or given
/// back where the device refuses (an unusable `KERNEL_DEVICE`).
pub(crate) fn taken<T: DeviceCopy, D: Rank>(
    dev: &Device,
    host: ndarray::Array<T, D>,
    what: &str,
) -> Taken<T, D> {
    if let Err(error) = permitted(dev, what) {
        return Err(Box::new(PinError { error, array: host }));
    }
    let (v, dim) = c_order(host);
    let bytes = std::mem::size_of_val(&v[..]);
    Ok((v, dim, bytes))
}

/// A host array [`Device::pin`] or [`Device::map`] could not page-lock, given back with the
/// reason.
pub struct PinError<T, D> {
    /// Why the memory could not be page-locked.
    pub error: Error,
    /// The array, as it was given (in C order).
    pub array: ndarray::Array<T, D>,
}

impl<T, D: Rank> std::fmt::Debug for PinError<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinError")
            .field("error", &self.error)
            .field("shape", &self.array.shape())
            .finish_non_exhaustive()
    }
}

impl<T, D> std::fmt::Display for PinError<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl<T, D: Rank> std::error::Error for PinError<T, D> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<T, D> From<Box<PinError<T, D>>> for Error {
    fn from(e: Box<PinError<T, D>>) -> Error {
        e.error
    }
}

/// The array of shape `dim` whose elements, in C order, are `v` (as many as `dim` holds):
/// what [`c_order`] took apart.
pub(crate) fn c_order_array<T, D: Rank>(dim: D, v: Vec<T>) -> ndarray::Array<T, D> {
    ndarray::Array::from_shape_vec(dim, v).expect("the elements of the array's own shape")
}

/// The elements of `a` in C order, in a `Vec` of their own, and its shape: `a`'s own
/// allocation where `a` is in C order.
pub(crate) fn c_order<T: Clone, D: Rank>(a: ndarray::Array<T, D>) -> (Vec<T>, D) {
    let dim = a.raw_dim();
    let a = match a.is_standard_layout() {
        true => a,
        false => a.as_standard_layout().into_owned(),
    };
    let (mut v, offset) = a.into_raw_vec_and_offset();
    v.drain(..offset.unwrap_or(0).min(v.len()));
    v.truncate(dim.size());
    (v, dim)
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
        matches!(self.memory, Memory::Pinned(..) | Memory::Registered(_))
    }

    /// The elements as an ndarray array of their own, once the copies queued on them are done:
    /// the host's own array back from [`Device::pin`], its memory unlocked, or a copy of
    /// page-locked memory from [`Device::pinned`].
    pub fn into_array(mut self) -> Result<ndarray::Array<T, D>, Error> {
        self.settle(Access::Write);
        let v = match &mut self.memory {
            Memory::Registered(v) => {
                if let Some(gpu) = self.device.gpu() {
                    gpu.unregister_host(v.as_mut_ptr().cast::<c_void>());
                }
                let v = std::mem::take(v);
                self.memory = Memory::Host(Vec::new());
                v
            }
            Memory::Host(v) => std::mem::take(v),
            Memory::Pinned(..) => copied_vec(self.elements(), || self.device.name())?,
        };
        let (dim, len) = (self.dim.clone(), v.len());
        ndarray::Array::from_shape_vec(dim, v).map_err(|_| Error::ShapeMismatch {
            what: "the elements of a pinned array".into(),
            expected: self.shape().to_vec(),
            found: vec![len],
        })
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
            Memory::Registered(v) | Memory::Host(v) => v,
        }
    }

    /// The elements, writable, after [`settle`](Self::settle).
    fn elements_mut(&mut self) -> &mut [T] {
        self.settle(Access::Write);
        match &mut self.memory {
            // SAFETY: `len` elements at `ptr`, owned by `self` and borrowed uniquely, no copy
            // reading or writing them.
            Memory::Pinned(ptr, len) => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
            Memory::Registered(v) | Memory::Host(v) => v,
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
            Memory::Registered(v) | Memory::Host(v) => v.as_mut_ptr(),
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
            Memory::Registered(v) | Memory::Host(v) => v.as_ptr(),
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
        match (&mut self.memory, self.device.gpu()) {
            (Memory::Pinned(ptr, _), Some(gpu)) => gpu.free_host(ptr.cast::<c_void>()),
            (Memory::Registered(v), Some(gpu)) => {
                gpu.unregister_host(v.as_mut_ptr().cast::<c_void>())
            }
            _ => {}
        }
    }
}
