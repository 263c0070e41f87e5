//! How much memory a device has, and how much of it is free: Numba's
//! `cuda.current_context().get_memory_info()`, to size the pieces of a problem before
//! allocating them.

use super::device::Device;
use super::error::Error;

/// A device's memory, in bytes ([`Device::memory_info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryInfo {
    /// What is free: on a GPU, what no allocation of any process holds; on the CPU backend,
    /// what the host can still give without swapping (`MemAvailable`).
    pub free: usize,
    /// All of it.
    pub total: usize,
}

impl Device {
    /// The device's free and total memory, as Numba's
    /// `cuda.current_context().get_memory_info()`: a GPU's as its driver reports it, the
    /// host's for the CPU backend.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let m = Device::cpu().memory_info()?;
    /// assert!(m.free <= m.total && m.total > 0);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Cuda`] where the driver cannot say; [`Error::DeviceUnavailable`] for a device
    /// `KERNEL_DEVICE` named that could not be opened.
    pub fn memory_info(&self) -> Result<MemoryInfo, Error> {
        self.usable()?;
        let (free, total) = match self.gpu() {
            Some(gpu) => gpu.memory_info()?,
            None => crate::zeroed::host_memory(),
        };
        Ok(MemoryInfo { free, total })
    }
}
