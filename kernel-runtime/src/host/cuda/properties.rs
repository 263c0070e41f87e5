//! A GPU's properties, read from its driver (`cuDeviceGetAttribute`, `cuDeviceTotalMem`,
//! `cuDeviceGetUuid`): what [`Device::properties`](crate::Device::properties) gives of a GPU.

use super::CudaDevice;
use crate::host::error::Error;
use cudarc::driver::sys;

/// What a GPU's hardware has ([`DeviceProperties::gpu`](crate::DeviceProperties::gpu)), by
/// CUDA's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuProperties {
    /// The ordinal of the GPU, as [`Device::cuda`](crate::Device::cuda) takes it.
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

/// What [`Device::properties`](crate::Device::properties) gives beyond a device's launch
/// limits: a GPU's from its driver (`gpu` its hardware), the CPU backend's of its own.
pub(crate) struct Hardware {
    pub multiprocessors: u32,
    pub warp_size: u32,
    pub const_bytes: usize,
    pub total_memory: usize,
    pub cooperative_launch: bool,
    pub managed_memory: bool,
    pub gpu: Option<GpuProperties>,
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

impl CudaDevice {
    /// What [`Device::properties`](crate::Device::properties) gives of this GPU beyond its
    /// launch limits.
    pub(crate) fn properties(&self) -> Result<Hardware, Error> {
        use sys::CUdevice_attribute::*;
        let failed = |e| self.error("reading the GPU's properties", e);
        let get = |attr| self.ctx.attribute(attr).map(|v| v.max(0) as u32);
        let get = |attr| get(attr).map_err(failed);
        let uuid = self.ctx.uuid().map_err(failed)?;
        let gpu = GpuProperties {
            ordinal: self.ordinal,
            compute_capability: self.compute_capability(),
            uuid: uuid_text(&uuid.bytes.map(|b| b as u8)),
            max_threads_per_multiprocessor: get(
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
            shared_bytes_per_multiprocessor: get(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )? as usize,
            registers_per_block: get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            registers_per_multiprocessor: get(
                CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            )?,
            l2_cache_bytes: get(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            memory_bus_bits: get(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            memory_clock_khz: get(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            clock_khz: get(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            copy_engines: get(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)?,
            integrated: get(CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0,
            pci: (
                get(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
                get(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
                get(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
            ),
        };
        Ok(Hardware {
            multiprocessors: get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: get(CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            const_bytes: get(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)? as usize,
            total_memory: self.ctx.total_mem().map_err(failed)?,
            cooperative_launch: get(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
            managed_memory: get(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0,
            gpu: Some(gpu),
        })
    }
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
