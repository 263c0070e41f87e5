//! Support for the code the `#[kernel]` macro generates; not a public API.

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::exec::{run, LaunchSpec};
pub use crate::shared::{align_up, layout, STATIC_LIMIT};

/// A shared array extent: sizes are `usize` constants.
#[inline(always)]
pub const fn extent(n: usize) -> usize {
    n
}

/// Fails at compile time, at the caller's span, unless `T` may cross to a device.
pub const fn assert_device_copy<T: crate::DeviceCopy>() {}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use crate::host::device::Device;
    use crate::host::error::Error;
    use crate::host::launch::LaunchConfig;

    /// The device a launch runs on: the configuration's, else the first array argument's; every
    /// array argument must live there.
    pub fn launch_device(
        kernel: &'static str,
        cfg: &LaunchConfig,
        arrays: &[(&'static str, &Device)],
    ) -> Result<Device, Error> {
        let device = match (&cfg.device, arrays.first()) {
            (Some(d), _) => d.clone(),
            (None, Some((_, d))) => (*d).clone(),
            (None, None) => return Err(Error::NoDevice { kernel }),
        };
        for (name, d) in arrays {
            if **d != device {
                return Err(Error::DeviceMismatch {
                    kernel,
                    argument: name,
                    expected: device.name(),
                    found: d.name(),
                });
            }
        }
        Ok(device)
    }
}
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;
