//! [`Event`]: a point in a device's queue of work, for timing it (Numba's `cuda.event()`).

use super::device::Device;
use super::error::Error;
use std::time::Instant;

/// A point in a device's queue of work; [`Device::event`] records one.
///
/// ```
/// # use kernel_runtime::Device;
/// let dev = Device::cpu();
/// let (start, end) = (dev.event()?, dev.event()?);
/// println!("{} ms", start.elapsed_ms(&end)?);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
pub struct Event {
    device: Device,
    mark: Mark,
}

enum Mark {
    /// The CPU backend runs every call to completion: the event is the moment it was recorded.
    Cpu(Instant),
    /// A CUDA event recorded on the device's stream.
    Cuda(cudarc::driver::CudaEvent),
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("device", &self.device.name())
            .finish_non_exhaustive()
    }
}

impl Event {
    pub(crate) fn record(device: &Device) -> Result<Event, Error> {
        let mark = match device.gpu() {
            Some(gpu) => Mark::Cuda(gpu.record_event()?),
            None => Mark::Cpu(Instant::now()),
        };
        Ok(Event {
            device: device.clone(),
            mark,
        })
    }

    /// Milliseconds from this event to `end`, once the work before `end` has finished.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, Error> {
        match (&self.mark, &end.mark) {
            (Mark::Cpu(a), Mark::Cpu(b)) => {
                Ok(b.saturating_duration_since(*a).as_secs_f64() as f32 * 1e3)
            }
            (Mark::Cuda(a), Mark::Cuda(b)) if self.device == end.device => {
                let gpu = self.device.gpu().expect("a CUDA event's device is a GPU");
                a.elapsed_ms(b)
                    .map_err(|e| gpu.error("timing between two events", e))
            }
            _ => Err(Error::DeviceMismatch {
                kernel: "Event::elapsed_ms",
                argument: "end",
                expected: self.device.name(),
                found: end.device.name(),
            }),
        }
    }
}
