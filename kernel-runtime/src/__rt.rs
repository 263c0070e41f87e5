//! Support for the code the `#[kernel]` macro generates; not a public API.

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::check::LaunchShadows;
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::exec::{
    enter_thread, run, run_bounded, run_split, wide_vectors, BlockRun, LaunchSpec,
};
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::fault::KernelFault;
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::lockstep::{operands, Operands};
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::cpu::warp::each_lane;
pub use crate::device_copy::{Holds, NoPadding};
pub use crate::shared::{array_bytes, layout, STATIC_LIMIT};

/// A shared array extent: sizes are `usize` constants.
#[inline(always)]
pub const fn extent(n: usize) -> usize {
    n
}

/// A shared array extent as a block-shape hint (`0`, no hint, when it cannot be one).
#[inline(always)]
pub const fn hint_extent(n: usize) -> u32 {
    if n <= 1024 {
        n as u32
    } else {
        0
    }
}

/// The shape every one of `shapes` has, if they agree (the CPU backend then runs a version of
/// the kernel in which those arrays share their extents).
#[inline]
pub fn common_dims<const N: usize>(shapes: &[[usize; N]]) -> Option<[usize; N]> {
    let first = *shapes.first()?;
    shapes.iter().all(|s| *s == first).then_some(first)
}

/// Fails at compile time, at the caller's span, unless `T` may cross to a device.
pub const fn assert_device_copy<T: crate::DeviceCopy>() {}

/// The PTX modules embedded in the program: one entry per kernel whose crate's `build.rs`
/// compiled PTX (the `#[kernel]` macro adds them). `Device::default()` picks a GPU only when
/// there is PTX to run on it.
#[cfg(not(target_arch = "nvptx64"))]
#[linkme::distributed_slice]
pub static PTX_MODULES: [&'static str];

#[cfg(not(target_arch = "nvptx64"))]
pub use linkme;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use crate::host::device::Device;
    use crate::host::error::Error;
    use crate::host::launch::LaunchConfig;

    /// The device all `arrays` of an element-wise call live on.
    pub fn common_device(
        kernel: &'static str,
        arrays: &[(&'static str, &Device)],
    ) -> Result<Device, Error> {
        pick_device(kernel, None, arrays)
    }

    /// The error of an argument `argument` of the element-wise function `function` whose
    /// shape differs from the output's.
    pub fn same_shape(
        function: &'static str,
        argument: &'static str,
        expected: &[usize],
        found: &[usize],
    ) -> Result<(), Error> {
        if expected == found {
            Ok(())
        } else {
            Err(Error::ShapeMismatch {
                what: format!("argument `{argument}` of `{function}` (the output's shape is the one expected)"),
                expected: expected.to_vec(),
                found: found.to_vec(),
            })
        }
    }

    /// Whether a launch on `device` goes to a GPU (else the CPU backend runs it).
    #[inline]
    pub fn on_gpu(device: &Device) -> bool {
        device.gpu().is_some()
    }

    /// Whether a launch on `device` runs in the CPU backend's checked mode.
    #[inline]
    pub fn checked(device: &Device) -> bool {
        device.is_checked()
    }

    /// Launches `kernel` of the PTX module `ptx` on the GPU `device`, with `static_shared` bytes
    /// of static shared arrays and the configuration's dynamic bytes after them.
    ///
    /// # Safety
    /// `params` must point at one value per parameter of the PTX entry, of its type, in order
    /// (the macro writes them from the kernel's signature, and the PTX tests check the entry's
    /// parameter list against it), and the arrays among them must be the device's.
    pub unsafe fn cuda_launch(
        device: &Device,
        kernel: &'static str,
        ptx: Option<&'static str>,
        config: &LaunchConfig,
        static_shared: usize,
        params: &mut [*mut ::core::ffi::c_void],
    ) -> Result<(), Error> {
        let gpu = device.gpu().ok_or(Error::NoDevice { kernel })?;
        let ptx = ptx.ok_or(Error::NoPtx { kernel })?;
        let shared = config.block_shared_bytes(static_shared);
        let on = config.stream.as_ref().and_then(|s| s.cuda());
        // SAFETY: the caller's contract.
        unsafe { gpu.launch(kernel, ptx, config, shared, params, on) }
    }

    /// The device a launch runs on: the configuration's, else the first array argument's; every
    /// array argument must live there.
    pub fn launch_device(
        kernel: &'static str,
        cfg: &LaunchConfig,
        arrays: &[(&'static str, &Device)],
    ) -> Result<Device, Error> {
        pick_device(kernel, cfg.device.as_ref(), arrays)
    }

    fn pick_device(
        kernel: &'static str,
        explicit: Option<&Device>,
        arrays: &[(&'static str, &Device)],
    ) -> Result<Device, Error> {
        let device = match (explicit, arrays.first()) {
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

/// A pointer the CPU backend shares between worker threads for element-wise launches, whose
/// ranges never overlap.
#[derive(Clone, Copy)]
pub struct SharedPtr<T>(pub *mut T);
impl<T> SharedPtr<T> {
    /// The pointer (a method, so that closures capture the whole `SharedPtr`).
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
}
// SAFETY: used only by `elementwise`, whose workers touch disjoint ranges.
unsafe impl<T> Send for SharedPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedPtr<T> {}

#[cfg(not(target_arch = "nvptx64"))]
mod elementwise {
    use rayon::prelude::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// Elements per task of an element-wise launch on the CPU backend.
    const CHUNK: usize = 1 << 15;

    /// Runs `f(lo, hi)` over disjoint ranges covering `0..n`, in parallel; a panic becomes the
    /// returned message, with its source line (described on the thread that panicked).
    pub fn elementwise<F: Fn(usize, usize) + Sync>(n: usize, f: F) -> Result<(), String> {
        (0..n.div_ceil(CHUNK)).into_par_iter().try_for_each(|c| {
            let _panics = crate::cpu::fault::KernelPanics::begin();
            catch_unwind(AssertUnwindSafe(|| f(c * CHUNK, ((c + 1) * CHUNK).min(n))))
                .map_err(crate::cpu::fault::describe_panic)
        })
    }
}
#[cfg(not(target_arch = "nvptx64"))]
pub use elementwise::elementwise;

/// Per-thread "has exited" flags of a split kernel's block.
#[cfg(not(target_arch = "nvptx64"))]
pub fn flags(n: usize) -> Vec<bool> {
    vec![false; n]
}

/// Per-thread slots of a local that lives across a barrier in a split kernel.
///
/// A region saves the local for every thread that finishes it; later regions run only the
/// threads that have not exited, so every slot they read was saved. Values are never dropped
/// (kernel locals are plain device data).
#[cfg(not(target_arch = "nvptx64"))]
pub struct Slots<T>(Vec<core::mem::MaybeUninit<T>>);

#[cfg(not(target_arch = "nvptx64"))]
impl<T: Clone> Slots<T> {
    /// Slots for `n` threads, none saved yet.
    pub fn new(n: usize) -> Self {
        Slots((0..n).map(|_| core::mem::MaybeUninit::uninit()).collect())
    }

    /// Thread `t`'s saved value.
    ///
    /// # Safety
    /// `t` is below the thread count and thread `t` saved a value.
    #[inline(always)]
    pub unsafe fn get(&self, t: usize) -> T {
        debug_assert!(t < self.0.len());
        // SAFETY: per the contract.
        unsafe { self.0.get_unchecked(t).assume_init_ref().clone() }
    }

    /// Saves thread `t`'s value.
    ///
    /// # Safety
    /// `t` is below the thread count.
    #[inline(always)]
    pub unsafe fn set(&mut self, t: usize, value: T) {
        debug_assert!(t < self.0.len());
        // SAFETY: per the contract.
        unsafe { *self.0.get_unchecked_mut(t) = core::mem::MaybeUninit::new(value) }
    }
}
