//! What a device is and how much of each thing it has: CUDA's `cudaGetDeviceProperties`, and
//! Numba's device attributes (`cuda.get_current_device().MULTIPROCESSOR_COUNT`, `.name`,
//! `.compute_capability`, `.uuid`), to size a launch for the device it runs on.

use super::device::Device;
use super::error::Error;
use crate::dim::Dim3;

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

/// What a GPU's hardware has ([`DeviceProperties::gpu`]), by CUDA's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuProperties {
    /// The ordinal of the GPU, as [`Device::cuda`] takes it.
    pub ordinal: usize,
    /// The compute capability, `(9, 0)` for an H100 or H200.
    pub compute_capability: (u32, u32),
    /// The GPU's UUID as `nvidia-smi -L` prints it (`GPU-` and 32 hexadecimal digits in five
    /// groups), Numba's `device.uuid`.
    pub uuid: String,
    /// Most threads resident on one multiprocessor (`maxThreadsPerMultiProcessor`: 2048).
    pub max_threads_per_multiprocessor: u32,
    /// Shared memory of one multiprocessor, in bytes (`sharedMemPerMultiprocessor`).
    pub shared_bytes_per_multiprocessor: usize,
    /// 32-bit registers a block may have (`regsPerBlock`).
    pub registers_per_block: u32,
    /// 32-bit registers of one multiprocessor (`regsPerMultiprocessor`).
    pub registers_per_multiprocessor: u32,
    /// The second-level cache, in bytes (`l2CacheSize`).
    pub l2_cache_bytes: usize,
    /// The width of the memory bus, in bits (`memoryBusWidth`).
    pub memory_bus_bits: u32,
    /// The memory's clock, in kHz (`memoryClockRate`).
    pub memory_clock_khz: u32,
    /// The multiprocessors' clock, in kHz (`clockRate`).
    pub clock_khz: u32,
    /// Copy engines: how many copies can run at once beside kernels (`asyncEngineCount`).
    pub copy_engines: u32,
    /// Whether the GPU shares the host's memory (`integrated`).
    pub integrated: bool,
    /// Where the GPU is on the PCI bus: domain, bus and device (`pciDomainID`, `pciBusID`,
    /// `pciDeviceID`).
    pub pci: (u32, u32, u32),
}

impl GpuProperties {
    /// The memory's theoretical bandwidth in bytes a second, as CUDA's samples compute it from
    /// the clock and the bus (two transfers a clock): the bound a memory-bound kernel's measured
    /// bandwidth is read against.
    ///
    /// ```
    /// # use kernel_runtime::GpuProperties;
    /// # fn peak(gpu: &GpuProperties) -> f64 {
    /// gpu.peak_memory_bandwidth() / 1e9 // GB/s
    /// # }
    /// ```
    pub fn peak_memory_bandwidth(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * (self.memory_bus_bits as f64 / 8.0)
    }
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
        let mut props = DeviceProperties {
            name: self.name(),
            multiprocessors: rayon::current_num_threads() as u32,
            warp_size: crate::base::WARP_SIZE,
            max_threads_per_block: limits.max_threads_per_block,
            max_block: limits.max_block,
            max_grid: limits.max_grid,
            shared_bytes_per_block: limits.max_shared_bytes,
            shared_bytes_per_block_optin: limits.shared_bytes_limit(),
            const_bytes: 64 * 1024,
            total_memory: crate::zeroed::host_memory().1,
            cooperative_launch: true,
            managed_memory: true,
            gpu: None,
        };
        if let Some(gpu) = self.gpu() {
            let hardware = gpu.properties()?;
            props.multiprocessors = hardware.multiprocessors;
            props.warp_size = hardware.warp_size;
            props.const_bytes = hardware.const_bytes;
            props.total_memory = hardware.total_memory;
            props.cooperative_launch = hardware.cooperative_launch;
            props.managed_memory = hardware.managed_memory;
            props.gpu = Some(hardware.gpu);
        }
        Ok(props)
    }
}

/// What [`Device::properties`] reads from a GPU's driver beyond its launch limits.
pub(crate) struct Hardware {
    pub multiprocessors: u32,
    pub warp_size: u32,
    pub const_bytes: usize,
    pub total_memory: usize,
    pub cooperative_launch: bool,
    pub managed_memory: bool,
    pub gpu: GpuProperties,
}

/// `bytes`, a driver's UUID, as `nvidia-smi -L` prints it: `GPU-` and the hexadecimal digits
/// in groups of 8, 4, 4, 4 and 12.
pub(crate) fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let groups = [
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..],
    ];
    format!("GPU-{}", groups.join("-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_reads_as_nvidia_smi_prints_it() {
        let bytes: [u8; 16] = core::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            uuid_text(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }

    #[test]
    fn the_cpu_backend_has_a_multiprocessor_per_worker_and_cudas_limits() {
        let props = Device::cpu().properties().unwrap();
        assert_eq!(props.multiprocessors as usize, rayon::current_num_threads());
        assert_eq!((props.warp_size, props.max_threads_per_block), (32, 1024));
        assert_eq!(props.shared_bytes_per_block, 48 * 1024);
        assert!(props.total_memory > 0 && props.gpu.is_none());
        assert_eq!(props.name, Device::cpu().name());
    }

    #[test]
    fn peak_bandwidth_is_two_transfers_a_clock_over_the_bus() {
        // An H100 SXM's HBM3: 5120 bits at 2619 MHz, 3.35 TB/s.
        let gpu = GpuProperties {
            ordinal: 0,
            compute_capability: (9, 0),
            uuid: String::new(),
            max_threads_per_multiprocessor: 2048,
            shared_bytes_per_multiprocessor: 233_472,
            registers_per_block: 65536,
            registers_per_multiprocessor: 65536,
            l2_cache_bytes: 50 << 20,
            memory_bus_bits: 5120,
            memory_clock_khz: 2_619_000,
            clock_khz: 1_980_000,
            copy_engines: 3,
            integrated: false,
            pci: (0, 0x19, 0),
        };
        assert_eq!(gpu.peak_memory_bandwidth(), 3_352_320_000_000.0);
    }
}
