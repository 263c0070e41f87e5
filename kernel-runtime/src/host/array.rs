//! [`DeviceArray`]: a 1-, 2- or 3-D array (C order) in a device's memory, to and from slices,
//! `Vec` and `ndarray`.

use super::bytes::{bytes_of, bytes_of_mut, cast_vec};
use super::device::permitted;
use super::device::Device;
use super::error::Error;
use super::host_vec::{c_order_vec, copied_vec, reserve, zeroed_vec};
use super::order::{Access, Bytes, Span, Users};
use super::ptr::DevicePtr;
pub use super::shape::{Rank, ShapeArg, ShapeComponent, Sliceable};
pub use super::to_device::ToDevice;
use crate::cpu::unwritten::Unwritten;
use crate::device_copy::{AnyBitPattern, DeviceCopy};
use ndarray::{Array, ArrayBase, DataMut, Dimension, Ix0, Ix1, Ix2, Ix3};

/// A 0-D device array, one value: what a `&Array0<T>` / `&mut Array0<T>` kernel parameter
/// takes, as a kernel's scalar result (`out[()] = v`, `atomic_add(&out, (), v)`).
pub type DeviceArray0<T> = DeviceArray<T, Ix0>;
/// A 1-D device array: what a `&[T]` / `&mut [T]` kernel parameter takes.
pub type DeviceArray1<T> = DeviceArray<T, Ix1>;
/// A 2-D device array: what a `&Array2<T>` / `&mut Array2<T>` kernel parameter takes.
pub type DeviceArray2<T> = DeviceArray<T, Ix2>;
/// A 3-D device array: what a `&Array3<T>` / `&mut Array3<T>` kernel parameter takes.
pub type DeviceArray3<T> = DeviceArray<T, Ix3>;

/// An array in a device's memory, in C order.
///
/// ```
/// use kernel_runtime::{Device, ndarray::array};
/// let dev = Device::cpu();
/// let a = dev.to_device(&array![[1, 2, 3], [4, 5, 6]])?;
/// assert_eq!(a.dim(), (2, 3));
/// assert_eq!(a.to_host()?, array![[1, 2, 3], [4, 5, 6]]);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
pub struct DeviceArray<T: DeviceCopy, D: Rank> {
    device: Device,
    dim: D,
    data: Storage<T>,
    /// Whether the array frees its memory: not where it wraps memory another library
    /// allocated ([`from_device_ptr`](DeviceArray::from_device_ptr)).
    owned: bool,
    /// The GPU streams that used the memory, by which work on them is ordered.
    users: Users,
    /// Where the host reaches a GPU's array in place, if it does ([`Device::mapped`],
    /// [`Device::managed`]).
    mapped: InPlace,
    /// In checked mode, the elements nothing has written since `empty` made the array.
    unwritten: Unwritten,
}

/// Where the host reaches a GPU's array in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum InPlace {
    /// Nowhere: device memory.
    #[default]
    No,
    /// Mapped page-locked host memory at this host address.
    Mapped(usize),
    /// Managed memory, at its device address.
    Managed,
    /// The host's own `Vec` of the array's elements, page-locked and mapped where it is
    /// ([`Device::map`]): its allocation at `host` of `layout` (which a reinterpreted array
    /// keeps, whatever its element type).
    Registered {
        host: usize,
        layout: std::alloc::Layout,
    },
}

impl InPlace {
    /// The host address of memory at the device address `ptr` that the host reaches so.
    pub(crate) fn host(self, ptr: u64) -> Option<usize> {
        match self {
            InPlace::No => None,
            InPlace::Mapped(host) | InPlace::Registered { host, .. } => Some(host),
            InPlace::Managed => Some(ptr as usize),
        }
    }
}

/// Where the elements are.
enum Storage<T> {
    /// In host memory, for the CPU backend.
    Host(Vec<T>),
    /// In a GPU's memory (null when empty), freed through the array's device.
    Gpu(u64),
}

impl<T: DeviceCopy, D: Rank> Drop for DeviceArray<T, D> {
    fn drop(&mut self) {
        if let (Storage::Gpu(ptr), Some(gpu), true) = (&self.data, self.device.gpu(), self.owned) {
            match self.mapped {
                InPlace::No => gpu.free(*ptr, &self.users),
                InPlace::Mapped(host) => {
                    // A failed wait (a lost context) stops every kernel with the context.
                    let _ = self.users.host_wait(Access::Write);
                    gpu.free_host(host as *mut std::ffi::c_void);
                }
                InPlace::Managed => {
                    // As above.
                    let _ = self.users.host_wait(Access::Write);
                    gpu.free_managed(*ptr);
                }
                InPlace::Registered { host, layout } => {
                    // As above.
                    let _ = self.users.host_wait(Access::Write);
                    let _ = gpu.wait_own_stream();
                    gpu.unregister_host(host as *mut std::ffi::c_void);
                    // SAFETY: the allocation of the `Vec` `map` took apart, of this layout; no
                    // kernel uses it any more, and the elements need no drop (`DeviceCopy`).
                    unsafe { std::alloc::dealloc(host as *mut u8, layout) };
                }
            }
        }
    }
}

/// `len` elements in host memory, each byte `byte` (see [`reserve`](super::host_vec::reserve)).
///
/// # Safety
/// `T` must be valid with every byte `byte`.
unsafe fn filled_vec<T>(
    len: usize,
    byte: u8,
    place: impl FnOnce() -> String,
) -> Result<Vec<T>, Error> {
    let mut v = reserve::<T>(len, place)?;
    // SAFETY: the `len` elements lie in the buffer just allocated, and are values of `T` once
    // written (the caller's contract).
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr(), byte, len);
        v.set_len(len);
    }
    Ok(v)
}

impl<T: DeviceCopy + std::fmt::Debug, D: Rank> std::fmt::Debug for DeviceArray<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceArray")
            .field("device", &self.device.name())
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

/// The elements of an array of `shape` with elements of `elem` bytes, where its bytes fit the
/// address space; else [`Error::TooLarge`].
pub(crate) fn checked_len(shape: &[usize], elem: usize) -> Result<usize, Error> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|n| {
            n.checked_mul(elem.max(1))
                .is_some_and(|b| b <= isize::MAX as usize)
        })
        .ok_or_else(|| Error::TooLarge {
            shape: shape.to_vec(),
        })
}

impl<T: AnyBitPattern, D: Rank> DeviceArray<T, D> {
    /// An array of `dim` on `device` whose memory a GPU does not clear; see [`Device::empty`].
    pub(crate) fn empty(device: &Device, dim: D) -> Result<Self, Error> {
        permitted(device, "allocating an array")?;
        if !device.is_checked() {
            return Self::alloc(device, dim, false);
        }
        // Checked mode (host memory): all-one bits, so that reads of what no kernel wrote show.
        let len = checked_len(dim.slice(), std::mem::size_of::<T>())?;
        Ok(DeviceArray {
            device: device.clone(),
            dim,
            // SAFETY: all-one bits are a value of `T` (the `AnyBitPattern` contract).
            data: Storage::Host(unsafe { filled_vec(len, 0xFF, || device.name()) }?),
            owned: true,
            users: Users::default(),
            mapped: InPlace::No,
            unwritten: Unwritten::all(len),
        })
    }
}

impl<T: DeviceCopy, D: Rank> DeviceArray<T, D> {
    pub(crate) fn zeros(device: &Device, dim: D) -> Result<Self, Error> {
        Self::alloc(device, dim, true)
    }

    /// An array of `dim` on `device`; on a GPU its memory is cleared only when `zeroed` (the
    /// caller then overwrites all of it before anything reads it), on the host always.
    pub(crate) fn alloc(device: &Device, dim: D, zeroed: bool) -> Result<Self, Error> {
        permitted(device, "allocating an array")?;
        let len = checked_len(dim.slice(), std::mem::size_of::<T>())?;
        let data = match device.gpu() {
            Some(gpu) => Storage::Gpu(gpu.alloc(len * std::mem::size_of::<T>(), zeroed)?),
            None => Storage::Host(zeroed_vec(len, || device.name())?),
        };
        Ok(DeviceArray {
            device: device.clone(),
            dim,
            data,
            owned: true,
            users: Users::default(),
            mapped: InPlace::No,
            unwritten: Unwritten::default(),
        })
    }

    pub(crate) fn from_host<H: ToDevice<Elem = T, Dim = D> + ?Sized>(
        device: &Device,
        host: &H,
    ) -> Result<Self, Error> {
        let dim = host.host_dim();
        permitted(device, "copying to the device")?;
        checked_len(dim.slice(), std::mem::size_of::<T>())?;
        if device.gpu().is_some() {
            // The copy overwrites every element.
            let mut array = Self::alloc(device, dim, false)?;
            array.copy_from_host(host)?;
            return Ok(array);
        }
        let v = c_order_vec(host, || device.name())?;
        Ok(Self::from_vec(device, dim, v))
    }

    /// The device address of a GPU's array, for another library to use (cudarc, a CUDA C++
    /// function through FFI); `None` for an array of the CPU backend. The address stays valid
    /// while the array lives; what the other library does with it is its business.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let a = Device::cpu().zeros::<f32, _>(4)?;
    /// assert_eq!(a.as_device_ptr(), None);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn as_device_ptr(&self) -> Option<u64> {
        match self.data {
            Storage::Gpu(ptr) => Some(ptr),
            Storage::Host(_) => None,
        }
    }

    /// The address of the first element, for a raw pointer parameter of an `unsafe` kernel
    /// that reads the array (`*const T`): valid while the array lives and no launch writes it
    /// (on the CPU backend, a host address). A launch that takes it is not ordered with the
    /// array's use on other streams ([`Stream`](crate::Stream)): keep both on one stream.
    pub fn device_ptr(&self) -> DevicePtr<T> {
        match self.data {
            Storage::Gpu(ptr) => DevicePtr::new(&self.device, ptr),
            Storage::Host(_) => DevicePtr::new(&self.device, self.host_ptr() as usize as u64),
        }
    }

    /// As [`device_ptr`](Self::device_ptr), for a kernel that writes the array (`*mut T`).
    pub fn device_ptr_mut(&mut self) -> DevicePtr<T> {
        match self.data {
            Storage::Gpu(ptr) => DevicePtr::new(&self.device, ptr),
            Storage::Host(_) => {
                let addr = self.host_ptr_mut() as usize as u64;
                DevicePtr::new(&self.device, addr)
            }
        }
    }

    /// An array of `shape` over GPU memory that another library allocated, at the device
    /// address `ptr` of `device`'s context (from cudarc, or an FFI call): kernels launch on it
    /// and copies read and write it as any array's, and dropping it leaves the memory to its
    /// owner.
    ///
    /// Refused with [`Error::ForeignMemory`] on the CPU backend (copy the data with
    /// `to_device`), for a null or misaligned address, or a shape too large to address.
    ///
    /// # Safety
    /// `ptr` must be the address of `shape`'s elements (C order) in `device`'s context, valid
    /// and holding values of `T` for as long as the array lives, and nothing else may write
    /// it while the array is in use (kernels and copies run on the device's own stream).
    pub unsafe fn from_device_ptr<S: ShapeArg<Dim = D>>(
        device: &Device,
        ptr: u64,
        shape: S,
    ) -> Result<Self, Error> {
        let dim = shape.into_shape()?;
        let len = checked_len(dim.slice(), std::mem::size_of::<T>())?;
        let refuse = |reason: &str| {
            Err(Error::ForeignMemory {
                ptr,
                reason: reason.to_string(),
            })
        };
        if device.gpu().is_none() {
            return refuse("it can only wrap a GPU's memory; on the CPU backend, copy the data with `to_device`");
        }
        if ptr == 0 && len > 0 {
            return refuse("the address is null");
        }
        if !ptr.is_multiple_of(std::mem::align_of::<T>() as u64) {
            return refuse(&format!(
                "the address is not aligned to the {} bytes of `{}`",
                std::mem::align_of::<T>(),
                std::any::type_name::<T>()
            ));
        }
        Ok(DeviceArray {
            device: device.clone(),
            dim,
            data: Storage::Gpu(ptr),
            owned: false,
            users: Users::default(),
            mapped: InPlace::No,
            unwritten: Unwritten::default(),
        })
    }

    /// A copy of the array on the same device.
    pub fn try_clone(&self) -> Result<Self, Error> {
        match (&self.data, self.device.gpu()) {
            (Storage::Gpu(_), Some(_)) => {
                // The copy overwrites every element.
                let mut copy = Self::alloc(&self.device, self.dim.clone(), false)?;
                copy.copy_from_device(self)?;
                Ok(copy)
            }
            _ => Ok(DeviceArray {
                device: self.device.clone(),
                dim: self.dim.clone(),
                data: Storage::Host(copied_vec(self.host(), || self.device.name())?),
                owned: true,
                users: Users::default(),
                mapped: InPlace::No,
                unwritten: self.unwritten.clone(),
            }),
        }
    }

    /// The elements of an array in host memory (none for a GPU's).
    fn host(&self) -> &[T] {
        match &self.data {
            Storage::Host(v) => v,
            Storage::Gpu(_) => &[],
        }
    }

    /// The device the array lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The shape, outermost dimension first.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The shape as ndarray's `dim()` pattern: `n`, `(n, m)` or `(n, m, k)`.
    pub fn dim(&self) -> D::Pattern {
        self.dim.clone().into_pattern()
    }

    /// The shape as an ndarray dimension.
    pub fn raw_dim(&self) -> D {
        self.dim.clone()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of axes (Numba's `d.ndim`).
    pub fn ndim(&self) -> usize {
        self.dim.ndim()
    }

    /// The bytes the elements take (Numba's `d.nbytes`).
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// let d = Device::cpu().zeros::<f32, _>((3, 4))?;
    /// assert_eq!((d.ndim(), d.nbytes(), d.strides()), (2, 48, vec![16, 4]));
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn nbytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }

    /// The bytes between neighbours along each axis (Numba's `d.strides`): C order, the last
    /// axis' elements side by side.
    pub fn strides(&self) -> Vec<usize> {
        let mut step = std::mem::size_of::<T>();
        let mut out = vec![0; self.ndim()];
        for (k, &n) in self.dim.slice().iter().enumerate().rev() {
            out[k] = step;
            step *= n;
        }
        out
    }

    /// Copies the array back to the host as an ndarray array (on a GPU, after the work queued
    /// before; a kernel that failed there is reported here).
    pub fn to_host(&self) -> Result<Array<T, D>, Error> {
        self.view().to_host()
    }

    /// Copies the array back to the host as a `Vec` in C order.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        self.view().to_vec()
    }

    /// Copies the elements `range` of the array (in C order) back to the host, as Numba's
    /// `d_a[start:end].copy_to_host()` of a 1-D array: only those bytes cross to the host.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let dev = Device::cpu();
    /// let a = dev.to_device(&[5u32, 6, 7, 8])?;
    /// assert_eq!(a.to_vec_range(1..3)?, [6, 7]);
    /// assert!(a.to_vec_range(3..5).is_err());
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfRange`] where `range` does not lie within the array.
    pub fn to_vec_range(&self, range: std::ops::Range<usize>) -> Result<Vec<T>, Error> {
        permitted(&self.device, "copying from the device")?;
        self.view().elements(range)?.to_vec()
    }

    /// Overwrites the elements from `start` on (in C order) with `values`, as Numba's
    /// `d_a[start:end].copy_to_device(values)` of a 1-D array: only those bytes cross to the
    /// device.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let mut a = Device::cpu().zeros::<u32, _>(5)?;
    /// a.copy_from_host_at(3, &[7, 8])?;
    /// assert_eq!(a.to_vec()?, [0, 0, 0, 7, 8]);
    /// assert!(a.copy_from_host_at(4, &[1, 2]).is_err());
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfRange`] where the elements do not lie within the array.
    pub fn copy_from_host_at(&mut self, start: usize, values: &[T]) -> Result<(), Error> {
        permitted(&self.device, "copying to the device")?;
        let range = start..start.saturating_add(values.len());
        self.view_mut().elements(range)?.copy_from_host(values)
    }

    /// Sets every element to `value`, as Numba's `d[:] = v` (CuPy's `a.fill(v)`): on a GPU,
    /// memsets on the device's stream. See [`DeviceViewMut::fill`](crate::DeviceViewMut::fill)
    /// for parts of arrays.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let mut a = Device::cpu().empty::<u16, _>((2, 3))?;
    /// a.fill(7)?;
    /// assert_eq!(a.to_vec()?, [7; 6]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn fill(&mut self, value: T) -> Result<(), Error>
    where
        T: AnyBitPattern,
    {
        self.view_mut().fill(value)
    }

    /// Overwrites the array with host data of the same shape.
    pub fn copy_from_host<H: ToDevice<Elem = T, Dim = D> + ?Sized>(
        &mut self,
        host: &H,
    ) -> Result<(), Error> {
        self.view_mut().copy_from_host(host)
    }

    /// Overwrites the array with another array of the same shape: a copy within the device's
    /// memory, or from another device's array (between two GPUs, straight over their link where
    /// they have one). See [`DeviceViewMut::copy_from_device`](crate::DeviceViewMut) for parts
    /// of arrays.
    pub fn copy_from_device(&mut self, src: &DeviceArray<T, D>) -> Result<(), Error> {
        self.view_mut().copy_from_device(src)?;
        // Between arrays of the CPU backend, what was unwritten in the source is in the copy.
        if self.device.gpu().is_none() && src.device.gpu().is_none() {
            self.copy_unwritten(src);
        }
        Ok(())
    }

    /// Copies the array into a host array of the same shape, as Numba's
    /// `d_a.copy_to_host(out)`. From a GPU into an `out` laid out in C order, the copy goes
    /// straight into `out`'s memory and allocates nothing, so a loop that reuses `out` copies
    /// as fast as `cudaMemcpy` does (400 MB in 28 ms on an H200's host, where a copy into
    /// fresh pages, as [`to_vec`](Self::to_vec) makes, takes 250).
    pub fn copy_to_host<S: DataMut<Elem = T>>(
        &self,
        out: &mut ArrayBase<S, D>,
    ) -> Result<(), Error> {
        self.view().copy_to_host(out)
    }

    /// The array's bytes as elements of `U`, as Numba's and CuPy's `a.view(np.uint32)`: the
    /// last axis holds as many `U`s as its bytes make, the others stay. On a GPU no byte moves;
    /// on the CPU backend they are copied where `U` needs a stricter alignment than `T`.
    ///
    /// It lets a kernel take an image of bytes four at a time:
    ///
    /// ```
    /// use kernel_runtime::{Device, ndarray::array};
    /// let dev = Device::cpu();
    /// let bytes = dev.to_device(&array![[1u8, 0, 0, 0, 2, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 1]])?;
    /// let words = bytes.reinterpret::<u32>()?;
    /// assert_eq!(words.dim(), (2, 2));
    /// let back = words.reinterpret::<u8>()?;
    /// assert_eq!(back.to_host()?, array![[1u8, 0, 0, 0, 2, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 1]]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// The words hold the bytes in the machine's order (little-endian on GPUs and x86); a kernel
    /// that takes bytes apart reads them with `u32::from_le`.
    ///
    /// Both element types are [`AnyBitPattern`]: numbers, arrays of them and padding-free
    /// `#[derive(DeviceCopy)]` structs, so that every byte read is initialised and every byte
    /// pattern written makes a value (a `bool` array is converted by a kernel instead).
    ///
    /// # Errors
    /// [`Error::Reinterpret`] where the last axis's bytes are not a whole number of `U`s, where
    /// `T` or `U` has no size, or where the array's memory is not aligned for `U`.
    pub fn reinterpret<U>(mut self) -> Result<DeviceArray<U, D>, Error>
    where
        T: AnyBitPattern,
        U: AnyBitPattern,
    {
        let (size, to_size) = (std::mem::size_of::<T>(), std::mem::size_of::<U>());
        let refuse = |reason: String| Error::Reinterpret {
            shape: self.shape().to_vec(),
            from: std::any::type_name::<T>(),
            to: std::any::type_name::<U>(),
            reason,
        };
        if size == 0 || to_size == 0 {
            return Err(refuse("types without a size have no bytes to share".into()));
        }
        let mut dim = self.dim.clone();
        match dim.ndim().checked_sub(1) {
            // A 0-D array's one element: the same bytes as one `U`, or nothing to divide.
            None if size != to_size => {
                return Err(refuse(format!(
                    "a 0-D array holds one element of {size} bytes, and `U` takes {to_size}"
                )))
            }
            None => {}
            Some(last) => {
                let bytes = dim[last] * size;
                if !bytes.is_multiple_of(to_size) {
                    return Err(refuse(format!(
                        "the last axis holds {bytes} bytes, not a multiple of {to_size}; pad \
                         it, or view a type whose size divides it"
                    )));
                }
                dim[last] = bytes / to_size;
            }
        }
        if let Storage::Gpu(ptr) = self.data {
            if !ptr.is_multiple_of(std::mem::align_of::<U>() as u64) {
                return Err(refuse(format!(
                    "its memory at {ptr:#x} is not aligned to {} bytes",
                    std::mem::align_of::<U>()
                )));
            }
        }
        // The storage moves to the new array, which frees it; this one is left none (a null
        // pointer is never freed). Host memory whose allocation `U` cannot take over (another
        // alignment, or a capacity that is not whole `U`s) is copied, and stays here if the
        // copy cannot be allocated.
        let data = match std::mem::replace(&mut self.data, Storage::Gpu(0)) {
            Storage::Gpu(ptr) => Storage::Gpu(ptr),
            Storage::Host(v) => match cast_vec(v) {
                Ok(out) => Storage::Host(out),
                Err(v) => match zeroed_vec::<U>(dim.size(), || self.device.name()) {
                    Ok(mut out) => {
                        bytes_of_mut(&mut out).copy_from_slice(bytes_of(&v));
                        Storage::Host(out)
                    }
                    Err(e) => {
                        self.data = Storage::Host(v);
                        return Err(e);
                    }
                },
            },
        };
        let unwritten = self.unwritten.reinterpret(size, to_size, dim.size());
        Ok(DeviceArray {
            device: self.device.clone(),
            dim,
            data,
            owned: self.owned,
            users: std::mem::take(&mut self.users),
            mapped: std::mem::take(&mut self.mapped),
            unwritten,
        })
    }

    /// The same elements, in C order, under another shape of as many, as Numba's
    /// `d.reshape(shape)`: the array moves into the new one, its memory where it was (no
    /// copy, on a GPU or on the host).
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    ///
    /// let dev = Device::default();
    /// let flat = dev.to_device(&(0..6).collect::<Vec<i32>>())?;
    /// let m = flat.reshape((2, 3))?;
    /// assert_eq!(m.to_host()?[[1, 0]], 3);
    /// assert_eq!(m.ravel().to_vec()?, [0, 1, 2, 3, 4, 5]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] where `shape` holds another number of elements; a negative
    /// extent is the shape's own error.
    pub fn reshape<S: ShapeArg>(self, shape: S) -> Result<DeviceArray<T, S::Dim>, Error> {
        let dim = shape.into_shape()?;
        if dim.size() != self.dim.size() {
            return Err(Error::ShapeMismatch {
                what: format!(
                    "a reshape of an array of {} elements, which keeps them all",
                    self.dim.size()
                ),
                expected: self.shape().to_vec(),
                found: dim.slice().to_vec(),
            });
        }
        Ok(self.moved_to(dim))
    }

    /// The elements in C order as a 1-D array, as Numba's `d.ravel()` (no copy).
    pub fn ravel(self) -> DeviceArray<T, Ix1> {
        let n = self.len();
        self.moved_to(Ix1(n))
    }

    /// The array under the shape `dim`, of as many elements.
    fn moved_to<E: Rank>(mut self, dim: E) -> DeviceArray<T, E> {
        // The storage moves to the new array, which frees it; this one is left none (a null
        // pointer is never freed).
        DeviceArray {
            device: self.device.clone(),
            dim,
            data: std::mem::replace(&mut self.data, Storage::Gpu(0)),
            owned: self.owned,
            users: std::mem::take(&mut self.users),
            mapped: std::mem::take(&mut self.mapped),
            unwritten: std::mem::take(&mut self.unwritten),
        }
    }

    /// A pointer for the CPU backend's kernel views that only read (dangling for a GPU's
    /// array, which a CPU launch never takes).
    pub(crate) fn host_ptr(&self) -> *mut T {
        match &self.data {
            Storage::Host(v) => v.as_ptr() as *mut T,
            Storage::Gpu(_) => std::ptr::NonNull::dangling().as_ptr(),
        }
    }

    /// A pointer for the CPU backend's kernel views that write; checked mode counts every
    /// element written from then on (see [`Unwritten`]).
    pub(crate) fn host_ptr_mut(&mut self) -> *mut T {
        self.unwritten.clear();
        match &mut self.data {
            Storage::Host(v) => v.as_mut_ptr(),
            Storage::Gpu(_) => std::ptr::NonNull::dangling().as_ptr(),
        }
    }

    /// Takes the record of unwritten elements of `src`, copied into this array on the CPU
    /// backend, where this array's device is checked: what was unwritten in the source is
    /// unwritten in the copy.
    pub(crate) fn copy_unwritten(&mut self, src: &Self) {
        if self.device.is_checked() {
            self.unwritten = src.unwritten.clone();
        }
    }

    /// An array of `dim` on the GPU `device` at the device address `ptr`, which the host
    /// reaches `mapped`, and which the array frees.
    ///
    /// # Safety
    /// `ptr` holds `dim`'s elements, initialised: mapped page-locked memory from
    /// `alloc_mapped` of `device`'s GPU whose host address `mapped` gives, or managed memory
    /// from its `alloc_managed`.
    pub(crate) unsafe fn from_mapped(device: &Device, dim: D, mapped: InPlace, ptr: u64) -> Self {
        DeviceArray {
            device: device.clone(),
            dim,
            data: Storage::Gpu(ptr),
            owned: true,
            users: Users::default(),
            mapped,
            unwritten: Unwritten::default(),
        }
    }

    /// The CPU backend's array of the elements `v` (in C order) of shape `dim`.
    pub(crate) fn from_vec(device: &Device, dim: D, v: Vec<T>) -> Self {
        DeviceArray {
            device: device.clone(),
            dim,
            data: Storage::Host(v),
            owned: true,
            users: Users::default(),
            mapped: InPlace::No,
            unwritten: Unwritten::default(),
        }
    }

    /// The host's own elements of an array of [`Device::map`] or of the CPU backend, taken out
    /// of it once the work that uses them is done; `None` for a GPU's memory.
    pub(crate) fn take_host_vec(&mut self) -> Result<Option<Vec<T>>, Error> {
        if let Some(gpu) = self.device.gpu() {
            let InPlace::Registered { host, layout } = self.mapped else {
                return Ok(None);
            };
            self.users
                .host_wait(Access::Write)
                .map_err(|e| gpu.error("waiting for the GPU", e))?;
            gpu.wait_own_stream()?;
            gpu.unregister_host(host as *mut std::ffi::c_void);
            (self.mapped, self.owned) = (InPlace::No, false);
            let (size, len) = (std::mem::size_of::<T>(), self.len());
            if size > 0 && layout.align() == std::mem::align_of::<T>() && layout.size() % size == 0
            {
                // SAFETY: the allocation of a `Vec` of `T`'s alignment, as many `T`s as its
                // size holds, the first `len` of them the array's; unlocked, no kernel uses it
                // any more, and the array no longer frees it.
                let v = unsafe { Vec::from_raw_parts(host as *mut T, len, layout.size() / size) };
                return Ok(Some(v));
            }
            // A reinterpreted array whose allocation a `Vec<T>` cannot take over: copied.
            // SAFETY: the array's `len` elements at `host`, which nothing else uses.
            let v = unsafe { std::slice::from_raw_parts(host as *const T, len) }.to_vec();
            // SAFETY: the allocation of the `Vec` `map` took apart, of this layout.
            unsafe { std::alloc::dealloc(host as *mut u8, layout) };
            return Ok(Some(v));
        }
        match &mut self.data {
            Storage::Host(v) => Ok(Some(std::mem::take(v))),
            Storage::Gpu(_) => Ok(None),
        }
    }

    /// A GPU's array of shape `dim` in the elements of a `Vec` taken apart, at `host` with
    /// room for `capacity`, which `map_host` mapped at the device address `ptr`.
    ///
    /// # Safety
    /// As [`from_mapped`](Self::from_mapped)'s, the `Vec` holding `dim`'s elements and owned by
    /// the array from now on.
    pub(crate) unsafe fn from_registered(
        device: &Device,
        dim: D,
        (host, capacity): (*mut T, usize),
        ptr: u64,
    ) -> Self {
        let layout = std::alloc::Layout::array::<T>(capacity).expect("a `Vec`'s own layout");
        let mapped = InPlace::Registered {
            host: host as usize,
            layout,
        };
        // SAFETY: the caller's contract.
        unsafe { Self::from_mapped(device, dim, mapped, ptr) }
    }

    /// The host address of a GPU's array in mapped host memory or managed memory.
    pub(crate) fn mapped_host(&self) -> Option<*mut T> {
        let Storage::Gpu(ptr) = self.data else {
            return None;
        };
        self.mapped.host(ptr).map(|host| host as *mut T)
    }

    /// What a view of the whole array holds: its device, users, device address (0 on the
    /// host), host elements (none on a GPU) and record of unwritten elements.
    #[allow(clippy::type_complexity)]
    pub(crate) fn parts(&self) -> (&Device, &Users, u64, &[T], &Unwritten) {
        let addr = *self.device_addr();
        (
            &self.device,
            &self.users,
            addr,
            self.host(),
            &self.unwritten,
        )
    }

    /// As [`parts`](Self::parts), writable.
    #[allow(clippy::type_complexity)]
    pub(crate) fn parts_mut(&mut self) -> (&Device, &Users, u64, &mut [T], &mut Unwritten) {
        let addr = *self.device_addr();
        let host: &mut [T] = match &mut self.data {
            Storage::Host(v) => v,
            Storage::Gpu(_) => &mut [],
        };
        (&self.device, &self.users, addr, host, &mut self.unwritten)
    }

    /// The GPU streams that used the array (see [`order`](super::order)).
    pub(crate) fn users(&self) -> &Users {
        &self.users
    }

    /// All the array's bytes, for ordering streams.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn span(&self) -> Span<'_> {
        self.users
            .span(Bytes::at(*self.device_addr(), self.nbytes()))
    }

    /// The device address of a GPU's array, where a GPU launch's parameter points (0 for a
    /// host array).
    pub(crate) fn device_addr(&self) -> &u64 {
        match &self.data {
            Storage::Gpu(ptr) => ptr,
            Storage::Host(_) => &0,
        }
    }
}

impl<T: DeviceCopy> DeviceArray<T, Ix0> {
    /// The one value of a 0-D array, as a kernel left it.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let total = Device::cpu().zeros::<f32, _>(())?;
    /// assert_eq!(total.value()?, 0.0);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn value(&self) -> Result<T, Error> {
        let v = self.to_vec()?;
        Ok(v[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array3};

    #[test]
    fn a_zero_dimensional_array_holds_one_value_and_reinterprets_whole() {
        let dev = Device::cpu();
        let one = dev.to_device(&ndarray::arr0(1.5f32)).unwrap();
        assert_eq!(one.value().unwrap(), 1.5);
        let bits = one.reinterpret::<u32>().unwrap();
        assert_eq!(bits.value().unwrap(), 1.5f32.to_bits());
        assert!(matches!(
            bits.reinterpret::<u16>(),
            Err(Error::Reinterpret { .. })
        ));
    }

    #[test]
    fn round_trips_every_rank() {
        let dev = Device::cpu();
        let v = vec![1.0f32, 2.0, 3.0];
        assert_eq!(dev.to_device(&v).unwrap().to_vec().unwrap(), v);
        let a2 = array![[1i8, 2], [3, 4], [5, 6]];
        let d2 = dev.to_device(&a2).unwrap();
        assert_eq!(d2.dim(), (3, 2));
        assert_eq!(d2.to_host().unwrap(), a2);
        let a3 = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as u16);
        assert_eq!(dev.to_device(&a3).unwrap().to_host().unwrap(), a3);
        // A non-contiguous view is copied in logical C order.
        let t = a2.t();
        assert_eq!(
            dev.to_device(&t).unwrap().to_vec().unwrap(),
            vec![1, 3, 5, 2, 4, 6]
        );
    }

    #[test]
    fn empty_arrays_have_their_shape_and_a_checked_fill() {
        let e = Device::cpu().empty::<u32, _>((2, 3)).unwrap();
        assert_eq!(e.dim(), (2, 3));
        assert_eq!(e.to_vec().unwrap(), vec![0; 6]);
        let checked = Device::cpu_checked();
        let f = checked.empty::<f32, _>(4).unwrap();
        assert!(f.to_vec().unwrap().iter().all(|v| v.is_nan()));
        let like = checked.empty_like::<i16, _, _>(&e).unwrap();
        assert_eq!(like.to_host().unwrap(), Array::from_elem((2, 3), -1i16));
        assert!(matches!(
            checked.empty::<u8, _>((usize::MAX, 2)),
            Err(Error::TooLarge { .. })
        ));
    }

    #[test]
    fn allocations_the_host_cannot_make_are_errors() {
        for dev in [Device::cpu(), Device::cpu_checked()] {
            for err in [
                dev.zeros::<u8, _>(usize::MAX / 2).unwrap_err(),
                // 2^58 bytes: more than a 57-bit address space maps, even where the host
                // overcommits memory (a 2^46-byte array was given on such a machine).
                dev.empty::<u8, _>(1usize << 58).unwrap_err(),
                dev.empty::<u64, _>((1usize << 28, 1usize << 27))
                    .unwrap_err(),
            ] {
                let msg = err.to_string();
                assert!(
                    matches!(err, Error::OutOfMemory { bytes, .. } if bytes >= 1 << 46),
                    "{err:?}"
                );
                assert!(msg.contains("could not allocate"), "{msg}");
            }
            // Past the address space: too large, whatever memory there is.
            assert!(matches!(
                dev.zeros::<u16, _>(usize::MAX / 2 + 1),
                Err(Error::TooLarge { .. })
            ));
        }
    }

    #[test]
    fn emptiness_counts_every_axis() {
        let dev = Device::cpu();
        assert!(!dev.zeros::<u8, _>((2, 3)).unwrap().is_empty());
        for shape in [(0, 3, 1), (2, 0, 1), (2, 3, 0)] {
            let e = dev.zeros::<u8, _>(shape).unwrap();
            assert!(e.is_empty(), "{shape:?}");
            assert_eq!(e.len(), 0, "{shape:?}");
        }
        assert_eq!(dev.zeros::<u8, _>((2, 3, 4)).unwrap().len(), 24);
    }

    #[test]
    fn zeros_and_shape_errors() {
        let dev = Device::cpu();
        let z = dev.zeros::<f64, _>((2, 3)).unwrap();
        assert_eq!(z.to_host().unwrap(), Array::<f64, _>::zeros((2, 3)));
        let negative = dev.zeros::<f32, _>((3, -5)).unwrap_err();
        assert!(
            matches!(negative, Error::NegativeExtent { value: -5, ref shape } if shape == &[3, -5]),
            "{negative:?}"
        );
        assert!(negative.to_string().contains("is negative"), "{negative}");
        assert!(matches!(
            dev.empty::<u8, _>(-1i8),
            Err(Error::NegativeExtent { value: -1, .. })
        ));
        assert!(matches!(
            dev.zeros::<f32, _>((usize::MAX, 2)),
            Err(Error::TooLarge { .. })
        ));
        let mut d = dev.zeros::<i32, _>(3).unwrap();
        let err = d.copy_from_host(&[1, 2][..]).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }));
        assert_eq!(
            err.to_string(),
            "shape mismatch in the host data given to copy_from_host: expected [3], found [2]"
        );
        d.copy_from_host(&[1, 2, 3][..]).unwrap();
        let mut out = ndarray::Array1::<i32>::zeros(4);
        assert!(matches!(
            d.copy_to_host(&mut out),
            Err(Error::ShapeMismatch { .. })
        ));
        let mut out = ndarray::Array1::<i32>::zeros(3);
        d.copy_to_host(&mut out).unwrap();
        assert_eq!(out.to_vec(), vec![1, 2, 3]);
    }

    #[test]
    fn reinterpret_scales_the_last_axis_and_keeps_the_bytes() {
        let dev = Device::cpu();
        let a = Array3::from_shape_fn((2, 3, 8), |(i, j, k)| (i * 64 + j * 8 + k) as i8);
        let words = dev.to_device(&a).unwrap().reinterpret::<u32>().unwrap();
        assert_eq!(words.dim(), (2, 3, 2));
        let first = words.to_vec().unwrap()[0];
        assert_eq!(first, u32::from_le_bytes([0, 1, 2, 3]));
        // Back to bytes, and through a type of the same alignment (no copy then).
        let floats = words.reinterpret::<f32>().unwrap();
        assert_eq!(floats.dim(), (2, 3, 2));
        let bytes = floats.reinterpret::<i8>().unwrap();
        assert_eq!(bytes.to_host().unwrap(), a);
        // Wider elements into narrower ones.
        let wide = dev.to_device(&vec![u64::MAX, 1]).unwrap();
        let halves = wide.reinterpret::<[u16; 2]>().unwrap();
        assert_eq!(
            halves.to_vec().unwrap(),
            [[0xFFFF; 2], [0xFFFF; 2], [1, 0], [0, 0]]
        );
    }

    #[test]
    fn reinterpret_refuses_what_does_not_divide() {
        let dev = Device::cpu();
        let odd = dev.to_device(&array![[1u8, 2, 3], [4, 5, 6]]).unwrap();
        let err = odd.reinterpret::<u16>().unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Reinterpret { ref shape, .. } if shape == &[2, 3]));
        assert!(msg.contains("`u8` cannot be seen as `u16`"), "{msg}");
        assert!(msg.contains("3 bytes, not a multiple of 2"), "{msg}");
        let unit = dev.to_device(&vec![1u32; 4]).unwrap();
        assert!(matches!(
            unit.reinterpret::<[u8; 0]>(),
            Err(Error::Reinterpret { .. })
        ));
    }
}
