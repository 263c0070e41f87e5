//! Mapped (zero-copy) arrays, as Numba's `cuda.mapped_array`: [`Device::mapped`] makes a device
//! array in page-locked host memory that a GPU's kernels read and write in place, over the bus,
//! and [`DeviceArray::host_view`] lets the host read and write it where it is, with no copy.
//!
//! Worth it where each element crosses the bus once (a kernel that reads its input once, a
//! result read once by the host); an array that kernels read many times belongs in device
//! memory. On the CPU backend every array is host memory: `mapped` is `zeros`, and the host
//! views any array in place.

use ndarray::{ArrayView, ArrayViewMut, Dimension};

use super::array::{checked_len, DeviceArray, Rank, ShapeArg};
use super::device::Device;
use super::error::Error;
use super::order::Access;
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
        let Some(gpu) = self.gpu() else {
            return self.zeros(shape);
        };
        let dim = shape.into_shape()?;
        let bytes = checked_len(dim.slice(), std::mem::size_of::<T>())? * std::mem::size_of::<T>();
        if bytes == 0 {
            return DeviceArray::zeros(self, dim);
        }
        let (host, ptr) = gpu.alloc_mapped(bytes)?;
        // SAFETY: `host` holds `bytes` bytes; all-zero bits are a `T` (`DeviceCopy`).
        unsafe { host.cast::<u8>().write_bytes(0, bytes) };
        // SAFETY: the two addresses of mapped memory of this GPU, holding `dim`'s elements.
        Ok(unsafe { DeviceArray::from_mapped(self, dim, host as usize, ptr) })
    }
}

impl<T: DeviceCopy, D: Rank> DeviceArray<T, D> {
    /// Whether the host can view the array in place: an array of the CPU backend, or a GPU's
    /// in mapped memory ([`Device::mapped`]).
    pub fn is_host_visible(&self) -> bool {
        self.device().gpu().is_none() || self.mapped_host().is_some() || self.is_empty()
    }

    /// The array as the host sees it in place, once the kernels and copies queued on the GPU
    /// that write it are done (a kernel that failed is reported here).
    ///
    /// # Errors
    /// [`Error::NotHostVisible`] for a GPU's array in device memory: copy it with
    /// [`to_host`](Self::to_host), or make it with [`Device::mapped`].
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

    /// The host address of a GPU's array in mapped memory, after waiting for the GPU work
    /// that a host use `access` conflicts with.
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
