//! [`Graph`]: kernel launches captured once and replayed with one call, as CUDA graphs
//! (`cudaStreamBeginCapture`, `cudaGraphLaunch`) are.

use super::cuda::Captured;
use super::device::{replaying_on_cpu, Device};
use super::error::Error;

/// Kernel launches captured once by [`Device::capture`] and replayed by [`Graph::launch`]: on a
/// GPU one `cuGraphLaunch` replays every launch, at a fraction of their launch costs; on the
/// CPU backend the captured work runs again.
///
/// The graph holds the arrays its work borrows for as long as it lives (`'a`), so none can be
/// freed or changed by the host between replays; read the results once it is dropped. Inside
/// the captured work, launches on the device's stream are recorded and nothing runs;
/// allocating, copying, waiting and cooperative launches (which allocate their grid barrier's
/// counter) are [`Error::InCapture`]: on a GPU while capturing, on the CPU backend while
/// replaying, so a program tested there does the same on a GPU.
///
/// ```
/// use kernel_runtime::prelude::*;
/// # #[kernel]
/// # fn add_one(x: &mut [f32]) { let i = grid(1); if i < x.len() { x[i] += 1.0; } }
/// let dev = Device::cpu();
/// let mut x = dev.zeros::<f32, _>(1000)?;
/// let mut steps = dev.capture(|| {
///     for _ in 0..10 {
///         add_one.launch(4, 256, &mut x)?;
///     }
///     Ok(())
/// })?;
/// steps.launch()?;
/// steps.launch()?;
/// drop(steps);
/// assert_eq!(x.to_vec()?[999], 20.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Graph<'a> {
    device: Device,
    work: Box<dyn FnMut() -> Result<(), Error> + 'a>,
    captured: Option<Captured>,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("device", &self.device.name())
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Captures the kernel launches that `work` makes on this device into a [`Graph`], none of
    /// them running yet (Numba and CUDA C++: stream capture into a CUDA graph). On a GPU the
    /// launches of this thread on the device's own stream are recorded, on a stream of the
    /// capture's own; an error or panic in `work` ends the capture and is returned.
    pub fn capture<'a>(
        &self,
        mut work: impl FnMut() -> Result<(), Error> + 'a,
    ) -> Result<Graph<'a>, Error> {
        let captured = match self.gpu() {
            Some(gpu) => Some(gpu.capture(&mut work)?),
            None => None,
        };
        Ok(Graph {
            device: self.clone(),
            work: Box::new(work),
            captured,
        })
    }
}

impl Graph<'_> {
    /// Replays the captured launches, after the work queued on the device before and before
    /// the work queued after, as one launch of kernels would be.
    pub fn launch(&mut self) -> Result<(), Error> {
        match (self.device.gpu(), &self.captured) {
            (Some(gpu), Some(captured)) => gpu.launch_graph(captured),
            (Some(_), None) => Ok(()),
            (None, _) => {
                let work = &mut self.work;
                replaying_on_cpu(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)))
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
        }
    }

    /// The device the graph runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        if let (Some(gpu), Some(captured)) = (self.device.gpu(), self.captured.take()) {
            gpu.release(captured);
        }
    }
}
