//! [`Limits`]: what a device allows a launch, checked before it is queued.

use crate::dim::Dim3;

/// The limits a launch is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest block dimensions.
    pub max_block: Dim3,
    /// Largest grid dimensions.
    pub max_grid: Dim3,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Most shared memory (static and dynamic) per block without opting in, in bytes: 48 KiB.
    pub max_shared_bytes: usize,
    /// Most shared memory per block with the opt-in (CUDA's
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: 227 KiB on an H100 or H200,
    /// 163 KiB on an A100, 96 KiB on a V100). A launch whose dynamic shared memory takes a block
    /// past `max_shared_bytes` opts in by itself, up to this.
    pub max_shared_bytes_optin: usize,
}

impl Limits {
    /// The limits every CUDA GPU since compute capability 3.0 offers without opting in.
    pub const CUDA_DEFAULT: Limits = Limits {
        max_block: Dim3::new(1024, 1024, 64),
        max_grid: Dim3::new(2_147_483_647, 65535, 65535),
        max_threads_per_block: 1024,
        max_shared_bytes: 48 * 1024,
        max_shared_bytes_optin: 48 * 1024,
    };

    /// The CPU backend's limits: CUDA's defaults, so that a kernel that launches on the CPU
    /// launches on a GPU, and the shared memory of the largest GPUs' opt-in (227 KiB, sm_90).
    pub const CPU: Limits = Limits {
        max_shared_bytes_optin: 227 * 1024,
        ..Limits::CUDA_DEFAULT
    };

    /// The most shared memory a block can have, opting in where the device allows.
    pub fn shared_bytes_limit(&self) -> usize {
        self.max_shared_bytes.max(self.max_shared_bytes_optin)
    }
}
