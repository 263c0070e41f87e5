//! What a device is and how much of each thing it has: CUDA's `cudaGetDeviceProperties`, and
//! Numba's device attributes (`cuda.get_current_device().MULTIPROCESSOR_COUNT`, `.name`,
//! `.compute_capability`, `.uuid`), to size a launch for the device it runs on.

use super::device::Device;
use super::error::Error;
use crate::dim::Dim3;

pub use super::cuda::GpuProperties;
use super::cuda::Hardware;

/// A device's properties ([`Device::properties`]): what both backends have, and a GPU's
/// hardware besides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The device's name, as [`Device::name`] gives it.
    pub name: String,
    /// The blocks that run at once, one per unit: a GPU's multiprocessors (CUDA's
    /// `multiProcessorCount`, Numba's `MULTIPROCESSOR_COUNT`: 132 on an H100 SXM), the CPU
    /// backend's worker threads. A grid-stride loop's launch of a few blocks per unit keeps them
    /// all busy.
    pub multiprocessors: u32,
    /// Threads of a warp: 32.
    pub warp_size: u32,
    /// Most threads of one block.
    pub max_threads_per_block: u32,
    /// Largest block dimensions.
    pub max_block: Dim3,
    /// Largest grid dimensions.
    pub max_grid: Dim3,
    /// Shared memory a block may have without opting in, in bytes (48 KiB).
    pub shared_bytes_per_block: usize,
    /// Shared memory a block may have where its launch opts in, in bytes (227 KiB on an H100).
    pub shared_bytes_per_block_optin: usize,
    /// Constant memory, in bytes (64 KiB): what `constant_array!`s may hold in all.
    pub const_bytes: usize,
    /// The device's memory, in bytes: a GPU's, or the host's for the CPU backend.
    pub total_memory: usize,
    /// Whether grid barriers may be launched (`cooperative` kernels).
    pub cooperative_launch: bool,
    /// Whether managed memory (`Device::managed`) is supported.
    pub managed_memory: bool,
    /// A GPU's hardware; `None` on the CPU backend.
    pub gpu: Option<GpuProperties>,
}

impl Device {
    /// What the device is and how much of each thing it has, as CUDA's
    /// `cudaGetDeviceProperties` and Numba's device attributes give them: a GPU's from its
    /// driver; for the CPU backend its worker threads as multiprocessors and its launch limits,
    /// which are CUDA's.
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    ///
    /// #[kernel]
    /// fn scale(a: f32, x: &mut [f32]) {
    ///     let mut i = grid(1);
    ///     while i < x.len() {
    ///         x[i] *= a;
    ///         i += gridsize(1);
    ///     }
    /// }
    ///
    /// let dev = Device::default();
    /// let props = dev.properties()?;
    /// let mut x = dev.to_device(&vec![1.0f32; 100_000])?;
    /// // Numba: scale[4 * dev.MULTIPROCESSOR_COUNT, 256](2.0, x)
    /// scale.launch(4 * props.multiprocessors, 256, (2.0f32, &mut x))?;
    /// assert!(x.to_vec()?.iter().all(|&v| v == 2.0));
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Cuda`] where the driver cannot say; [`Error::DeviceUnavailable`] for a device
    /// `KERNEL_DEVICE` named that could not be opened.
    pub fn properties(&self) -> Result<DeviceProperties, Error> {
        self.usable()?;
        let limits = *self.limits();
        let hardware = match self.gpu() {
            Some(gpu) => gpu.properties()?,
            // The CPU backend's: its worker threads, CUDA's warp and constant memory, the
            // host's memory, and every kind of launch and array.
            None => Hardware {
                multiprocessors: rayon::current_num_threads() as u32,
                warp_size: crate::base::WARP_SIZE,
                const_bytes: 64 * 1024,
                total_memory: crate::zeroed::host_memory().1,
                cooperative_launch: true,
                managed_memory: true,
                gpu: None,
            },
        };
        Ok(DeviceProperties {
            name: self.name(),
            multiprocessors: hardware.multiprocessors,
            warp_size: hardware.warp_size,
            max_threads_per_block: limits.max_threads_per_block,
            max_block: limits.max_block,
            max_grid: limits.max_grid,
            shared_bytes_per_block: limits.max_shared_bytes,
            shared_bytes_per_block_optin: limits.shared_bytes_limit(),
            const_bytes: hardware.const_bytes,
            total_memory: hardware.total_memory,
            cooperative_launch: hardware.cooperative_launch,
            managed_memory: hardware.managed_memory,
            gpu: hardware.gpu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_backend_has_a_multiprocessor_per_worker_and_cudas_limits() {
        let props = Device::cpu().properties().unwrap();
        assert_eq!(props.multiprocessors as usize, rayon::current_num_threads());
        assert_eq!((props.warp_size, props.max_threads_per_block), (32, 1024));
        assert_eq!(props.shared_bytes_per_block, 48 * 1024);
        assert!(props.total_memory > 0 && props.gpu.is_none());
        assert_eq!(props.name, Device::cpu().name());
    }
}
