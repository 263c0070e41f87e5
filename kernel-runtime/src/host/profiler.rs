//! The part of a program a profiler collects: Numba's `cuda.profile_start()`,
//! `cuda.profile_stop()` and `with cuda.profiling():`, CUDA's `cudaProfilerStart`/`Stop`, which
//! Nsight Systems follows with `--capture-range=cudaProfilerApi` and Nsight Compute with
//! `--profile-from-start off`.

use super::device::Device;
use super::error::Error;

impl Device {
    /// Starts the profiler's collection of this device's work (`cuProfilerStart`); nothing on
    /// the CPU backend.
    pub fn profile_start(&self) -> Result<(), Error> {
        self.profiler(true)
    }

    /// Stops the profiler's collection of this device's work (`cuProfilerStop`); nothing on the
    /// CPU backend.
    pub fn profile_stop(&self) -> Result<(), Error> {
        self.profiler(false)
    }

    /// Runs `f` with the profiler collecting this device's work, as Numba's
    /// `with cuda.profiling():`: started before, stopped after, even if `f` panics.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let dev = Device::default();
    /// let mut d = dev.zeros::<f32, _>(1 << 20)?;
    /// dev.profiling(|| d.fill(1.0))??; // only this part is in the profile
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn profiling<R>(&self, f: impl FnOnce() -> R) -> Result<R, Error> {
        struct Stop<'a>(&'a Device);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                let _ = self.0.profile_stop();
            }
        }
        self.profile_start()?;
        let stop = Stop(self);
        let r = f();
        std::mem::forget(stop);
        self.profile_stop().map(|()| r)
    }

    fn profiler(&self, start: bool) -> Result<(), Error> {
        self.usable()?;
        match self.gpu() {
            Some(gpu) => gpu.profiler(start),
            None => Ok(()),
        }
    }
}
