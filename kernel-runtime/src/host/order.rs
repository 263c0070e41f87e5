//! Stream ordering by array: which streams of a GPU used an array since it was last written, so
//! that work on one stream waits only for the work of other streams it conflicts with.
//!
//! Every GPU array (and page-locked host array) carries its [`Users`]. An operation on a stream
//! that reads the array waits for the stream of its last write; one that writes it waits for
//! that stream and for every stream that read it since. The wait is an event recorded on the
//! other stream when the operation is queued, so it covers the conflicting work and whatever
//! that stream queued before it. Work that touches no common array is never ordered, so copies
//! and kernels on two streams overlap; work that does is never unordered, so safe code cannot
//! race two streams on one array.

use cudarc::driver::{sys, CudaStream, DriverError};
use std::sync::{Arc, Mutex};

/// How an operation uses an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// The streams that used one array since its last write (see the module doc).
#[derive(Default)]
pub(crate) struct Users(Mutex<State>);

#[derive(Default)]
struct State {
    /// The stream of the last write, if a stream wrote the array since the host last waited.
    writer: Option<Arc<CudaStream>>,
    /// The streams that read it since, the writer's excepted.
    readers: Vec<Arc<CudaStream>>,
}

impl Users {
    /// Orders `on` after the other streams' uses that a use `access` conflicts with, and
    /// records the use.
    pub(crate) fn order(&self, on: &Arc<CudaStream>, access: Access) -> Result<(), DriverError> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(writer) = &state.writer {
            join(on, writer)?;
        }
        match access {
            Access::Read => {
                let seen = |s: &Arc<CudaStream>| Arc::ptr_eq(s, on);
                if !state.writer.as_ref().is_some_and(seen) && !state.readers.iter().any(seen) {
                    state.readers.push(on.clone());
                }
            }
            Access::Write => {
                for reader in &state.readers {
                    join(on, reader)?;
                }
                state.readers.clear();
                state.writer = Some(on.clone());
            }
        }
        Ok(())
    }

    /// Waits on the host for the streams that a host use `access` of the memory conflicts
    /// with: the writer for a read, every user for a write. They are forgotten, as the host has
    /// waited for them; a read leaves the readers, since a later write must still wait for them.
    pub(crate) fn host_wait(&self, access: Access) -> Result<(), DriverError> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = match access {
            Access::Read => Vec::new(),
            Access::Write => std::mem::take(&mut state.readers),
        };
        all.extend(state.writer.take());
        drop(state);
        all.iter().try_for_each(|stream| stream.synchronize())
    }
}

/// Makes `on` wait for the work queued on `other` so far (nothing where they are one stream).
pub(crate) fn join(on: &CudaStream, other: &CudaStream) -> Result<(), DriverError> {
    if std::ptr::eq(on, other) {
        return Ok(());
    }
    let event = other.record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
    on.wait(&event)
}

/// One array's use by an operation: its users, and how.
pub(crate) type Use<'a> = (&'a Users, Access);
