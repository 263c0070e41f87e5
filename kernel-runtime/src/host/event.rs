//! [`Event`]: a point in a device's queue of work, or in one of its streams', for timing it and
//! waiting for it (Numba's `cuda.event()`).

use super::device::Device;
use super::error::Error;
use std::time::Instant;

/// A point in a device's queue of work: [`Device::event`] records one after all the work queued
/// on the device, [`Stream::event`](super::stream::Stream::event) after the work queued on one
/// stream.
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

    /// An event recorded on the GPU stream `stream` of `device` (on the CPU backend, the
    /// moment it was recorded).
    pub(crate) fn record_on(
        device: &Device,
        stream: Option<&std::sync::Arc<cudarc::driver::CudaStream>>,
    ) -> Result<Event, Error> {
        let mark = match (device.gpu(), stream) {
            (Some(gpu), Some(s)) => Mark::Cuda(gpu.record_event_on(s)?),
            _ => Mark::Cpu(Instant::now()),
        };
        Ok(Event {
            device: device.clone(),
            mark,
        })
    }

    /// Waits until the work queued before the event has finished (Numba's
    /// `event.synchronize()`); a kernel that failed there is reported here.
    pub fn synchronize(&self) -> Result<(), Error> {
        match (&self.mark, self.device.gpu()) {
            (Mark::Cuda(e), Some(gpu)) => e
                .synchronize()
                .map_err(|e| gpu.error("waiting for an event", e)),
            _ => Ok(()),
        }
    }

    /// Whether the work queued before the event has finished, without waiting (Numba's
    /// `event.query()`).
    pub fn query(&self) -> Result<bool, Error> {
        match (&self.mark, self.device.gpu()) {
            (Mark::Cuda(e), Some(gpu)) => e
                .try_is_complete()
                .map_err(|e| gpu.error("asking whether an event is done", e)),
            _ => Ok(true),
        }
    }

    /// The CUDA event, for a GPU's.
    pub(crate) fn cuda(&self) -> Option<&cudarc::driver::CudaEvent> {
        match &self.mark {
            Mark::Cuda(e) => Some(e),
            Mark::Cpu(_) => None,
        }
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

impl Device {
    /// Records an event on the device's queue, after all the work queued on it so far, its
    /// streams' included: the time between two events is the time the device took for the work
    /// queued between them (on the CPU backend, which runs each call to completion, the
    /// wall-clock time).
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// let dev = Device::cpu();
    /// let start = dev.event()?;
    /// let x = dev.zeros::<f32, _>(1000)?;
    /// let end = dev.event()?;
    /// assert!(start.elapsed_ms(&end)? >= 0.0);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn event(&self) -> Result<Event, Error> {
        Event::record(self)
    }
}
