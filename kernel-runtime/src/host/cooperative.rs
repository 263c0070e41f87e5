//! Cooperative launches from the host: how many blocks can be resident at once, the check of a
//! launch against it, and the GPU's launch with the counter its grid barrier uses (see
//! [`grid`](crate::grid)).

use super::device::Device;
use super::error::{Error, LaunchError};
use super::launch::{IntoDim3, LaunchConfig};
use super::order::{Access, Users};
use super::params::GpuParams;
use crate::dim::Dim3;

/// How many blocks of `block` threads with `shared` bytes of shared memory each a cooperative
/// launch of `kernel` may have on `device`: the GPU's occupancy calculator times its
/// multiprocessors, or the CPU backend's limit on threads alive at once.
fn limit(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    block: Dim3,
    shared: usize,
) -> Result<u64, Error> {
    match device.gpu() {
        Some(gpu) => {
            let ptx = ptx.map_err(|reason| Error::NoPtx { kernel, reason })?;
            let threads = u32::try_from(block.volume()).unwrap_or(u32::MAX);
            gpu.cooperative_blocks(kernel, ptx, threads, shared)
        }
        None => Ok(crate::cpu::sched::cooperative::max_blocks(block.volume())),
    }
}

/// `kernel.max_cooperative_grid_blocks(device, threads, dynamic_shared_bytes)`, as Numba's: the
/// most blocks of `threads` threads a cooperative launch of `kernel` (with `static_shared`
/// bytes of static shared arrays) may have on `device`.
pub fn max_cooperative_grid_blocks(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    threads: impl IntoDim3,
    dynamic_shared: usize,
    static_shared: usize,
) -> Result<u32, Error> {
    let invalid = |reason| Error::InvalidLaunch { kernel, reason };
    let config = LaunchConfig::new(1, threads)
        .map_err(invalid)?
        .shared_bytes(dynamic_shared);
    config
        .validate(device.limits(), static_shared)
        .map_err(invalid)?;
    let shared = config.block_shared_bytes(static_shared);
    let blocks = limit(device, kernel, ptx, config.block, shared)?;
    Ok(u32::try_from(blocks).unwrap_or(u32::MAX))
}

/// Refuses a cooperative launch of `kernel` whose grid is larger than what `device` can keep
/// resident at once.
pub fn check_cooperative(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    config: &LaunchConfig,
    static_shared: usize,
) -> Result<(), Error> {
    // A GPU's cooperative launch allocates its grid barrier's counter, which a capture refuses.
    super::device::permitted(device, "a cooperative launch")?;
    let shared = config.block_shared_bytes(static_shared);
    let limit = limit(device, kernel, ptx, config.block, shared)?;
    let blocks = config.grid.volume();
    if blocks > limit {
        return Err(Error::InvalidLaunch {
            kernel,
            reason: LaunchError::TooManyCooperativeBlocks {
                blocks,
                threads: config.block.volume(),
                limit,
            },
        });
    }
    Ok(())
}

/// Launches a cooperative kernel on `device`'s GPU (`cuLaunchCooperativeKernel`), its last PTX
/// parameter a zeroed counter in device memory for its grid barriers, freed once the launch is
/// done.
///
/// # Safety
/// As [`cuda_launch`](super::kernel::cuda_launch): `params` point at the values of the entry's
/// parameters but the last, in order.
pub unsafe fn cuda_launch_cooperative(
    device: &Device,
    kernel: &'static str,
    ptx: Result<&'static str, &'static str>,
    config: &LaunchConfig,
    static_shared: usize,
    params: &mut GpuParams<'_>,
) -> Result<(), Error> {
    let gpu = device.gpu().ok_or(Error::NoDevice { kernel })?;
    let ptx = ptx.map_err(|reason| Error::NoPtx { kernel, reason })?;
    let (counter, counter_users) = (gpu.alloc(4, true)?, Users::default());
    let mut with_counter = GpuParams {
        pointers: std::mem::take(&mut params.pointers),
        uses: params.uses.clone(),
    };
    with_counter.push(&counter);
    with_counter.uses(counter_users.whole(), Access::Write);
    let shape = config.on_gpu(static_shared, true);
    // SAFETY: the caller's contract, and the counter is the entry's last parameter; it lives
    // until `free`, which the device's stream orders after the launch (its users).
    let launched = config.queue(|| unsafe { gpu.launch(kernel, ptx, &shape, &mut with_counter) });
    gpu.free(counter, &counter_users);
    launched
}
