//! Arrays that the host and a GPU's kernels share in place. Mapped (zero-copy) arrays, as Numba's
//! `cuda.mapped_array`: [`Device::mapped`] makes a device array in page-locked host memory that a
//! GPU's kernels read and write in place, over the bus. Managed arrays, as Numba's
//! `cuda.managed_array`: [`Device::managed`] makes one in managed memory, whose pages the driver
//! moves to the GPU or to the host where they are used. [`DeviceArray::host_view`] lets the host
//! read and write either where it is, with no copy.
//!
//! A mapped array is worth it where each element crosses the bus once (a kernel that reads its
//! input once, a result read once by the host); a managed one where kernels use it many times
//! between the host's uses, or where it is larger than the GPU's memory. On the CPU backend
//! every array is host memory: `mapped` and `managed` are `zeros`, and the host views any array
//! in place.

use ndarray::{ArrayView, ArrayViewMut, Dimension};

use super::array::{checked_len, DeviceArray, InPlace, Rank, ShapeArg};
use super::cuda::CudaDevice;
use super::device::permitted;
use super::device::Device;
use super::error::Error;
use super::order::Access;
use super::pinned::{c_order_array, taken, PinError};
use crate::device_copy::DeviceCopy;

impl Device {
    /// A zero-filled array of `shape` in host memory that this device's kernels use in place
    /// (Numba's `cuda.mapped_array`): it launches as any device array, and
    /// [`host_view`](DeviceArray::host_view) reads it on the host without a copy.
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    /// # #[kernel]
    /// # fn fill(v: u32, out: &mut [u32]) { let i = grid(1); if i < out.len() { out[i] = v; } }
    /// let dev = Device::cpu();
    /// let mut flags = dev.mapped::<u32, _>(100)?;
    /// fill.launch_with(LaunchConfig::cover(100, 64)?, (7, &mut flags))?;
    /// // Waits for the kernel, then reads the memory it wrote.
    /// assert_eq!(flags.host_view()?[99], 7);
    /// flags.host_view_mut()?[0] = 1;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Cuda`] where the GPU cannot map host memory; [`Error::OutOfMemory`] where the
    /// host has no page-locked memory to give.
    pub fn mapped<T: DeviceCopy, S: ShapeArg>(
        &self,
        shape: S,
    ) -> Result<DeviceArray<T, S::Dim>, Error> {
        self.in_place(shape, |gpu, bytes| {
            let (host, ptr) = gpu.alloc_mapped(bytes)?;
            Ok((InPlace::Mapped(host as usize), ptr))
        })
    }

    /// A zero-filled array of `shape` in managed memory (Numba's `cuda.managed_array`): one
    /// address that this device's kernels and the host both use, its pages moved by the driver
    /// to where they are used. It launches as any device array, and
    /// [`host_view`](DeviceArray::host_view) reads it on the host without a copy.
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    /// # #[kernel]
    /// # fn fill(v: u32, out: &mut [u32]) { let i = grid(1); if i < out.len() { out[i] = v; } }
    /// let dev = Device::cpu();
    /// let mut counts = dev.managed::<u32, _>(100)?;
    /// counts.host_view_mut()?[3] = 5;
    /// fill.launch_with(LaunchConfig::cover(100, 64)?, (7, &mut counts))?;
    /// // Waits for the kernel, then reads the memory it wrote.
    /// assert_eq!(counts.host_view()?[3], 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Cuda`] where the GPU cannot share managed memory with the host while kernels
    /// run (`concurrentManagedAccess`: GPUs before Pascal, Windows); [`Error::OutOfMemory`]
    /// where the driver has no managed memory to give.
    pub fn managed<T: DeviceCopy, S: ShapeArg>(
        &self,
        shape: S,
    ) -> Result<DeviceArray<T, S::Dim>, Error> {
        self.in_place(shape, |gpu, bytes| {
            Ok((InPlace::Managed, gpu.alloc_managed(bytes)?))
        })
    }

    /// A zero-filled array of `shape` that the host reaches in place: on a GPU, in the memory
    /// that `alloc(gpu, bytes)` gives (how the host reaches it, and its device address);
    /// `zeros` on the CPU backend, and for no elements.
    fn in_place<T: DeviceCopy, S: ShapeArg>(
        &self,
        shape: S,
        alloc: impl FnOnce(&CudaDevice, usize) -> Result<(InPlace, u64), Error>,
    ) -> Result<DeviceArray<T, S::Dim>, Error> {
        let Some(gpu) = self.gpu() else {
            return self.zeros(shape);
        };
        let dim = shape.into_shape()?;
        let bytes = checked_len(dim.slice(), std::mem::size_of::<T>())? * std::mem::size_of::<T>();
        if bytes == 0 {
            return DeviceArray::zeros(self, dim);
        }
        let (mapped, ptr) = alloc(gpu, bytes)?;
        let Some(host) = mapped.host(ptr) else {
            unreachable!("`alloc` gives memory that the host reaches, mapped or managed");
        };
        // SAFETY: the host reaches the `bytes` bytes at `host`, which no kernel uses yet (for
        // managed memory, `alloc_managed` made sure the host may touch it while kernels run);
        // all-zero bits are a `T` (`DeviceCopy`).
        unsafe { (host as *mut u8).write_bytes(0, bytes) };
        // SAFETY: memory of this GPU that the host reaches as `mapped`, holding `dim`'s
        // elements.
        Ok(unsafe { DeviceArray::from_mapped(self, dim, mapped, ptr) })
    }
}

impl Device {
    /// The host's own array, mapped where it is for this device's kernels (Numba's
    /// `with cuda.mapped(a) as d:`, `cuMemHostRegister` with `CU_MEMHOSTREGISTER_DEVICEMAP`):
    /// it moves into a device array that kernels read and write in place, over the bus, with
    /// no copy, and [`into_host`](DeviceArray::into_host) gives it back once they are done,
    /// with what they wrote. A `Vec` becomes a 1-D array; an array not in C order is copied into
    /// C order first. On the CPU backend the array's memory is the host's anyway.
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    /// # #[kernel]
    /// # fn fill(v: u32, out: &mut [u32]) { let i = grid(1); if i < out.len() { out[i] = v; } }
    /// let dev = Device::default();
    /// let mut flags = dev.map(vec![0u32; 100])?;
    /// fill.launch_with(LaunchConfig::cover(100, 64)?, (7, &mut flags))?;
    /// let flags = flags.into_host()?; // waits for the kernel; the same memory, unlocked
    /// assert_eq!(flags[99], 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A [`PinError`] that gives the array back, with the reason: a GPU that cannot map host
    /// memory, or a driver that cannot lock this much; `?` turns it into an [`Error`].
    pub fn map<T: DeviceCopy, D: Rank>(
        &self,
        host: impl Into<ndarray::Array<T, D>>,
    ) -> Result<DeviceArray<T, D>, Box<PinError<T, D>>> {
        let back = |error, array| Box::new(PinError { error, array });
        let (mut v, dim, bytes) = taken(self, host.into(), "mapping host memory")?;
        let Some(gpu) = self.gpu().filter(|_| bytes > 0) else {
            return match self.gpu() {
                // No elements: nothing to map.
                Some(_) => DeviceArray::zeros(self, dim.clone())
                    .map_err(|e| back(e, c_order_array(dim, v))),
                None => Ok(DeviceArray::from_vec(self, dim, v)),
            };
        };
        let host = v.as_mut_ptr();
        // SAFETY: the `Vec`'s `bytes` stay allocated while they are mapped: the array owns
        // them, never resizes them, and unlocks them before it gives them up; the host reaches
        // them only through the array's views, which wait for its kernels.
        match unsafe { gpu.map_host(host.cast(), bytes) } {
            Ok(ptr) => {
                let v = std::mem::ManuallyDrop::new(v);
                // SAFETY: `map_host` mapped the `Vec`'s elements, `dim`'s, at `ptr`; the
                // array now owns the `Vec`'s memory.
                Ok(unsafe { DeviceArray::from_registered(self, dim, (host, v.capacity()), ptr) })
            }
            Err(error) => Err(back(error, c_order_array(dim, v))),
        }
    }
}

impl<T: DeviceCopy, D: Rank> DeviceArray<T, D> {
    /// The elements as a host ndarray array, once the work queued on the array is done:
    /// without a copy for the host's own array from [`Device::map`] (its memory unlocked) and
    /// for any array of the CPU backend, copied from a GPU's memory otherwise (as
    /// [`to_host`](Self::to_host)).
    ///
    /// # Errors
    /// A kernel that failed, reported by the wait, and the errors of the copy.
    pub fn into_host(mut self) -> Result<ndarray::Array<T, D>, Error> {
        permitted(self.device(), "copying from the device")?;
        match self.take_host_vec()? {
            Some(v) => Ok(c_order_array(self.raw_dim(), v)),
            None => self.to_host(),
        }
    }

    /// Whether the host can view the array in place: an array of the CPU backend, or a GPU's
    /// in mapped or managed memory ([`Device::mapped`], [`Device::managed`]).
    pub fn is_host_visible(&self) -> bool {
        self.device().gpu().is_none() || self.mapped_host().is_some() || self.is_empty()
    }

    /// The array as the host sees it in place, once the kernels and copies queued on the GPU
    /// that write it are done (a kernel that failed is reported here).
    ///
    /// # Errors
    /// [`Error::NotHostVisible`] for a GPU's array in device memory: copy it with
    /// [`to_host`](Self::to_host), or make it with [`Device::mapped`] or [`Device::managed`].
    pub fn host_view(&self) -> Result<ArrayView<'_, T, D>, Error> {
        let ptr = match self.device().gpu() {
            None => self.host_ptr(),
            Some(_) => self.mapped_elements(Access::Read)?,
        };
        // SAFETY: `ptr` leads to the array's elements in host memory, which no queued work
        // writes any more, and none can while `self` is borrowed.
        Ok(unsafe { ArrayView::from_shape_ptr(self.raw_dim(), ptr) })
    }

    /// The array as the host sees it in place, writable, once the kernels and copies queued
    /// on the GPU that use it are done.
    ///
    /// # Errors
    /// As [`host_view`](Self::host_view)'s.
    pub fn host_view_mut(&mut self) -> Result<ArrayViewMut<'_, T, D>, Error> {
        let ptr = match self.device().gpu() {
            None => self.host_ptr_mut(),
            Some(_) => self.mapped_elements(Access::Write)?,
        };
        // SAFETY: as in `host_view`, with `self` borrowed uniquely and no queued work reading
        // the elements.
        Ok(unsafe { ArrayViewMut::from_shape_ptr(self.raw_dim(), ptr) })
    }

    /// The host address of a GPU's array in mapped or managed memory, after waiting for the
    /// GPU work that a host use `access` conflicts with.
    fn mapped_elements(&self, access: Access) -> Result<*mut T, Error> {
        if self.is_empty() {
            return Ok(std::ptr::NonNull::dangling().as_ptr());
        }
        let ptr = self.mapped_host().ok_or_else(|| Error::NotHostVisible {
            shape: self.shape().to_vec(),
        })?;
        if let Some(gpu) = self.device().gpu() {
            self.users()
                .host_wait(access)
                .map_err(|e| gpu.error("waiting for the GPU", e))?;
            // A graph's kernels run in the device's stream's order, not the array's users'.
            gpu.wait_own_stream()?;
        }
        Ok(ptr)
    }
}
