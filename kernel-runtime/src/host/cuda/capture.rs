//! Graph capture on a GPU: the launches a closure makes on this thread, captured on a stream
//! of their own, and the replay of the graph on the device's stream.

use super::{Capture, CudaDevice, CAPTURE};
use crate::host::error::Error;
use crate::host::order::Users;
use cudarc::driver::{sys, CudaStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A captured graph: the executable graph (none where nothing was captured), the stream it was
/// captured on, and the memory to free once it is gone.
pub(crate) struct Captured {
    pub graph: Option<cudarc::driver::CudaGraph>,
    stream: Arc<CudaStream>,
    frees: Vec<sys::CUdeviceptr>,
}

impl CudaDevice {
    /// Captures the kernels that `work` launches on this device from this thread into a graph,
    /// on a stream of its own, none of them running; other threads' work is not captured.
    /// Allocating, copying and waiting are refused in `work` ([`Error::InCapture`]).
    pub(crate) fn capture(
        &self,
        work: &mut dyn FnMut() -> Result<(), Error>,
    ) -> Result<Captured, Error> {
        if CAPTURE.with(|c| c.borrow().is_some()) {
            return Err(Error::InCapture {
                what: "capturing a graph".into(),
            });
        }
        let stream = self.new_stream()?;
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .map_err(|e| self.error("starting a graph capture", e))?;
        CAPTURE.with(|c| {
            *c.borrow_mut() = Some(Capture {
                device: self as *const Self as usize,
                stream: stream.clone(),
                frees: Vec::new(),
            })
        });
        let worked = catch_unwind(AssertUnwindSafe(&mut *work));
        let frees = CAPTURE
            .with(|c| c.borrow_mut().take())
            .map_or_else(Vec::new, |c| c.frees);
        let ended = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(|e| self.error("ending a graph capture", e));
        let (graph, ended) = match ended {
            Ok(graph) => (graph, Ok(())),
            Err(e) => (None, Err(e)),
        };
        let captured = Captured {
            graph,
            stream,
            frees,
        };
        match (worked, ended) {
            (Ok(Ok(())), Ok(())) => Ok(captured),
            (Ok(Err(e)), _) | (Ok(Ok(())), Err(e)) => {
                self.release(captured);
                Err(e)
            }
            (Err(panic), _) => {
                self.release(captured);
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Replays a captured graph on the device's stream: after the work queued before it, and
    /// before the work queued after.
    pub(crate) fn launch_graph(&self, captured: &Captured) -> Result<(), Error> {
        self.outside_capture("launching a graph")?;
        let Some(graph) = &captured.graph else {
            return Ok(());
        };
        self.barrier()?;
        captured
            .stream
            .join(&self.stream)
            .map_err(|e| self.error("ordering a graph after the device's work", e))?;
        graph
            .launch()
            .map_err(|e| self.error("launching a graph", e))?;
        self.stream
            .join(&captured.stream)
            .map_err(|e| self.error("ordering the device's work after a graph", e))?;
        self.mark_own_work();
        if self.blocking {
            self.synchronize()?;
        }
        Ok(())
    }

    /// Destroys a captured graph, then frees the memory freed during its capture, after all the
    /// work queued on the device (its arrays' users are gone with them).
    pub(crate) fn release(&self, captured: Captured) {
        let Captured { graph, frees, .. } = captured;
        drop(graph);
        if !frees.is_empty() && self.barrier().is_ok() {
            for ptr in frees {
                self.free(ptr, &Users::default());
            }
        }
    }
}
