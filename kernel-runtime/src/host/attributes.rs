//! What a GPU compiled of a kernel: its registers, memory and limits, as the driver reports
//! them (`cuFuncGetAttribute`) and Numba's `kernel.get_regs_per_thread()`,
//! `get_shared_mem_per_block()`, `get_local_mem_per_thread()`, `get_const_mem_size()` and
//! `get_max_threads_per_block()` read them.

use cudarc::driver::sys::CUfunction_attribute as A;

use super::device::Device;
use super::error::Error;

/// What a GPU compiled of a kernel ([`Kernel::attributes`](crate::Kernel::attributes)): where
/// its registers and local memory go, the occupancy calculator and a profiler start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelAttributes {
    /// Registers each thread uses (Numba's `get_regs_per_thread`).
    pub registers: u32,
    /// Bytes of static shared memory each block uses (`get_shared_mem_per_block`): the
    /// kernel's shared arrays (which a launch places at the start of the block's dynamic
    /// shared memory) and what its module declares.
    pub shared_bytes: usize,
    /// Bytes of local memory each thread uses, its stack and spilled registers
    /// (`get_local_mem_per_thread`).
    pub local_bytes: usize,
    /// Bytes of constant memory the kernel uses (`get_const_mem_size`).
    pub const_bytes: usize,
    /// The most threads a block may have on this GPU: 1024, or fewer where the kernel's launch
    /// bounds or registers allow fewer (`get_max_threads_per_block`).
    pub max_threads_per_block: u32,
    /// The PTX ISA version the kernel's module declares, `10 * major + minor`.
    pub ptx_version: u32,
    /// The architecture of the binary the GPU runs, `10 * major + minor` (90: sm_90).
    pub binary_version: u32,
}

/// The attributes read, in the order of [`KernelAttributes::of`]'s values.
const READ: [A; 7] = [
    A::CU_FUNC_ATTRIBUTE_NUM_REGS,
    A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
    A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
    A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
    A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    A::CU_FUNC_ATTRIBUTE_PTX_VERSION,
    A::CU_FUNC_ATTRIBUTE_BINARY_VERSION,
];

impl KernelAttributes {
    /// The attributes of the driver's values of [`READ`].
    fn of(values: [i32; 7]) -> KernelAttributes {
        let [registers, shared, local, constant, threads, ptx, binary] =
            values.map(|v| u32::try_from(v).unwrap_or(0));
        KernelAttributes {
            registers,
            shared_bytes: shared as usize,
            local_bytes: local as usize,
            const_bytes: constant as usize,
            max_threads_per_block: threads,
            ptx_version: ptx,
            binary_version: binary,
        }
    }

    /// The attributes that hold for both of two instances of a generic kernel: the larger
    /// use of each resource, the smaller limit.
    fn either(self, other: KernelAttributes) -> KernelAttributes {
        KernelAttributes {
            registers: self.registers.max(other.registers),
            shared_bytes: self.shared_bytes.max(other.shared_bytes),
            local_bytes: self.local_bytes.max(other.local_bytes),
            const_bytes: self.const_bytes.max(other.const_bytes),
            max_threads_per_block: self.max_threads_per_block.min(other.max_threads_per_block),
            ptx_version: self.ptx_version.max(other.ptx_version),
            binary_version: self.binary_version.max(other.binary_version),
        }
    }
}

/// The attributes of `kernel`, whose PTX entries are `entries` in the module `ptx`, with
/// `static_shared` bytes of shared arrays, on the GPU `device`; a generic kernel's hold for
/// every instance (see [`KernelAttributes::either`]).
pub(crate) fn of_kernel(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    entries: impl Iterator<Item = &'static str>,
    static_shared: usize,
) -> Result<KernelAttributes, Error> {
    let Some(gpu) = device.gpu() else {
        return Err(Error::NoGpuFunction {
            kernel,
            device: device.name(),
        });
    };
    let ptx = ptx.map_err(|reason| Error::NoPtx { kernel, reason })?;
    let mut all: Option<KernelAttributes> = None;
    for entry in entries {
        let mut one = KernelAttributes::of(gpu.function_attributes(entry, ptx, READ)?);
        one.shared_bytes += crate::shared::align_up(static_shared, 16);
        all = Some(all.map_or(one, |a| a.either(one)));
    }
    all.ok_or(Error::NoPtx {
        kernel,
        reason: "the kernel has no PTX entry",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generic_kernels_attributes_hold_for_every_instance() {
        let a = KernelAttributes::of([40, 1024, 0, 8, 1024, 78, 90]);
        let b = KernelAttributes::of([64, 512, 16, 0, 768, 78, 90]);
        let both = a.either(b);
        assert_eq!(
            (both.registers, both.shared_bytes, both.local_bytes),
            (64, 1024, 16)
        );
        assert_eq!((both.const_bytes, both.max_threads_per_block), (8, 768));
        assert_eq!((both.ptx_version, both.binary_version), (78, 90));
        assert_eq!(
            KernelAttributes::of([-1; 7]).registers,
            0,
            "no negative count"
        );
    }
}
