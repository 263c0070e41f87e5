//! A GPU's properties, read from its driver (`cuDeviceGetAttribute`, `cuDeviceTotalMem`,
//! `cuDeviceGetUuid`).

use super::CudaDevice;
use crate::host::error::Error;
use crate::host::properties::{uuid_text, GpuProperties, Hardware};
use cudarc::driver::sys;

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
            gpu,
        })
    }
}
