//! Several devices in one process: every GPU the driver sees ([`Device::gpus`], Numba's
//! `cuda.gpus`), and copies between arrays of two devices ([`DeviceArray::to_device`], and
//! [`DeviceArray::copy_from_device`] across devices).
//!
//! Between two GPUs a copy is queued on the receiving GPU's stream, after the work on either GPU
//! that it conflicts with (each array's stream users, across devices); the GPUs reach each
//! other's memory directly where they can, and the driver stages the copy through the host
//! where they cannot. Launches return once queued, so one thread keeps several GPUs busy at
//! once.

use super::array::{DeviceArray, Rank};
use super::cuda;
use super::device::Device;
use super::error::Error;
use crate::device_copy::DeviceCopy;

impl Device {
    /// How many GPUs the CUDA driver sees (`len(cuda.gpus)`): 0 where there is no driver.
    pub fn gpu_count() -> usize {
        cuda::count()
    }

    /// Every GPU the CUDA driver sees, opened (Numba's `cuda.gpus`): none where there is no
    /// driver.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// for gpu in Device::gpus()? {
    ///     println!("{}", gpu.name());
    /// }
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn gpus() -> Result<Vec<Device>, Error> {
        (0..Device::gpu_count()).map(Device::cuda).collect()
    }
}

impl<T: DeviceCopy, D: Rank> DeviceArray<T, D> {
    /// A copy of the array on `device`: another GPU, the CPU backend, or this array's own.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let (a, b) = (Device::cpu(), Device::cpu_checked());
    /// let x = a.to_device(&[1.5f32, 2.5][..])?;
    /// assert_eq!(x.to_device(&b)?.to_vec()?, [1.5, 2.5]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn to_device(&self, device: &Device) -> Result<DeviceArray<T, D>, Error> {
        // The copy overwrites every element.
        let mut copy = DeviceArray::alloc(device, self.raw_dim(), false)?;
        copy.copy_from_device(self)?;
        Ok(copy)
    }
}
