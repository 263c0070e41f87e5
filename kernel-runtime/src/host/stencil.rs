//! What a `#[stencil]` function's call takes from the host API: its GPU launch's shape.

use super::error::Error;
use super::launch::LaunchConfig;
use crate::stencil::{gpu_blocks, Geometry, BLOCK_THREADS};

/// The launch of a stencil `function` with tiles of `S × K` over `g`: [`gpu_blocks`] blocks of
/// [`BLOCK_THREADS`] threads.
pub fn gpu_config<const S: usize, const K: usize>(
    function: &'static str,
    g: &Geometry,
) -> Result<LaunchConfig, Error> {
    let [x, y, z] = gpu_blocks::<S, K>(g);
    LaunchConfig::new((x, y, z), (BLOCK_THREADS as usize, 1, 1)).map_err(|reason| {
        Error::InvalidLaunch {
            kernel: function,
            reason,
        }
    })
}
