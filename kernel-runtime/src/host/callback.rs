//! Host work after a stream's work: [`Stream::add_callback`](crate::Stream::add_callback)
//! (Numba's `stream.add_callback`) and [`Stream::done`](crate::Stream::done), a future (Numba's
//! `await stream.async_done()`), and [`Device::done`], the whole device's.
//!
//! The driver calls back on a thread of its own, where CUDA forbids calls into the driver. So
//! the driver's callback only marks its `Completion`, wakes the future waiting for it, and
//! hands a user's function to one thread of this runtime, which runs it where the device may be
//! used: a callback may copy, launch and wait. Unlike CUDA's host functions, the stream's later
//! work does not wait for it. Written by hand: cudarc wraps no stream callback, and no crate
//! bridges CUDA's to futures.

use super::device::{permitted, Device};
use super::error::Error;
use crate::cpu::fault::payload_text;
use cudarc::driver::{sys, CudaStream, DriverError};
use std::cell::Cell;
use std::ffi::c_void;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A user's function, given the status of the work before it.
type Then = Box<dyn FnOnce(sys::CUresult) + Send>;

/// Work for the callback thread.
type Job = Box<dyn FnOnce() + Send>;

/// The point of a stream that a callback or a future waits for: reached once the driver calls
/// back with the status of the work queued before it.
struct Completion {
    state: Mutex<Reached>,
}

struct Reached {
    status: Option<sys::CUresult>,
    waker: Option<Waker>,
    then: Option<Then>,
}

/// Locks `m`, whose state stays whole if a holder panicked (each update is one assignment).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Completion {
    fn new(then: Option<Then>) -> Arc<Completion> {
        Arc::new(Completion {
            state: Mutex::new(Reached {
                status: None,
                waker: None,
                then,
            }),
        })
    }

    /// Marks the point reached with `status`, wakes its future and starts its function.
    fn reach(&self, status: sys::CUresult) {
        let (waker, then) = {
            let mut s = lock(&self.state);
            s.status = Some(status);
            (s.waker.take(), s.then.take())
        };
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(then) = then {
            run_later(Box::new(move || then(status)));
        }
    }
}

/// The driver's callback: `data` is a `Completion` that [`reach_after`] leaked for it.
unsafe extern "C" fn reached(_stream: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    // SAFETY: `data` is the `Arc<Completion>` leaked for this one call, taken back once.
    let completion = unsafe { Arc::from_raw(data.cast_const().cast::<Completion>()) };
    // A panic must not unwind into the driver; a waker's is the executor's to report.
    let _ = catch_unwind(AssertUnwindSafe(|| completion.reach(status)));
}

/// Runs `job` on the callback thread, started on first use.
fn run_later(job: Job) {
    static RUNNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);
    let mut runner = lock(&RUNNER);
    let job = match runner.as_ref() {
        Some(tx) => match tx.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    let started = std::thread::Builder::new()
        .name("stream callbacks".into())
        .spawn(move || {
            ON_RUNNER.with(|on| on.set(true));
            for job in rx {
                job();
            }
        });
    let job = match started {
        Ok(_) => match tx.send(job) {
            Ok(()) => {
                *runner = Some(tx);
                return;
            }
            Err(mpsc::SendError(job)) => job,
        },
        Err(_) => job,
    };
    // No thread to be had: the job runs here, with the lock released for its own callbacks.
    drop(runner);
    job();
}

thread_local! {
    /// Whether this thread runs callbacks: a callback's `Stream::synchronize` does not wait for
    /// the callbacks behind it.
    static ON_RUNNER: Cell<bool> = const { Cell::new(false) };
}

/// A stream's callbacks not yet returned, and the messages of those that panicked.
#[derive(Default)]
pub(crate) struct Callbacks {
    pending: Mutex<(usize, Vec<String>)>,
    returned: Condvar,
}

impl Callbacks {
    fn begin(&self) {
        lock(&self.pending).0 += 1;
    }

    fn end(&self, panicked: Option<String>) {
        let mut p = lock(&self.pending);
        p.0 -= 1;
        p.1.extend(panicked);
        self.returned.notify_all();
    }

    /// Waits until the callbacks added so far have returned (at once on the callback thread),
    /// and reports the first that panicked since the last wait.
    pub(crate) fn wait(&self) -> Result<(), Error> {
        let mut p = lock(&self.pending);
        if !ON_RUNNER.with(Cell::get) {
            while p.0 > 0 {
                p = self.returned.wait(p).unwrap_or_else(|e| e.into_inner());
            }
        }
        match std::mem::take(&mut p.1).into_iter().next() {
            Some(message) => Err(Error::CallbackPanicked { message }),
            None => Ok(()),
        }
    }
}

/// The status of the work before a callback, as the stream's `synchronize` would report it.
fn status_of(device: &Device, status: sys::CUresult) -> Result<(), Error> {
    match (status, device.gpu()) {
        (sys::CUresult::CUDA_SUCCESS, _) | (_, None) => Ok(()),
        (e, Some(gpu)) => Err(gpu.error("the work before a stream callback", DriverError(e))),
    }
}

/// [`Stream::add_callback`](crate::Stream::add_callback): calls `f` once the work queued so far
/// on `stream` (none on the CPU backend) has finished, counted in `callbacks`.
pub(crate) fn add_callback(
    device: &Device,
    stream: Option<&Arc<CudaStream>>,
    callbacks: &Arc<Callbacks>,
    f: impl FnOnce(Result<(), Error>) + Send + 'static,
) -> Result<(), Error> {
    callbacks.begin();
    let (tracked, on) = (callbacks.clone(), device.clone());
    let then: Then = Box::new(move |status| {
        let ran = catch_unwind(AssertUnwindSafe(|| f(status_of(&on, status))));
        tracked.end(ran.err().map(|p| {
            payload_text(&*p).map_or(
                "a panic with a payload that is not text".into(),
                String::from,
            )
        }));
    });
    reach_after(device, stream, Some(then))
        .map(drop)
        .inspect_err(|_| callbacks.end(None))
}

/// [`Stream::done`](crate::Stream::done): a future of the point after the work queued so far on
/// `stream`.
pub(crate) fn done(device: &Device, stream: Option<&Arc<CudaStream>>) -> Result<StreamDone, Error> {
    Ok(StreamDone {
        completion: reach_after(device, stream, None)?,
        device: device.clone(),
    })
}

impl Device {
    /// A future that completes once the work queued on this device so far, on every stream,
    /// has finished, with its status: what [`synchronize`](Device::synchronize) waits for,
    /// awaited (`dev.done()?.await?`) instead of blocking a thread. Ready at once on the CPU
    /// backend.
    pub fn done(&self) -> Result<StreamDone, Error> {
        let stream = match self.gpu() {
            Some(gpu) => Some(gpu.whole_device("awaiting the device")?),
            None => None,
        };
        done(self, stream)
    }
}

/// A completion reached once the work queued so far on `stream` has finished, then calling
/// `then`.
fn reach_after(
    device: &Device,
    stream: Option<&Arc<CudaStream>>,
    then: Option<Then>,
) -> Result<Arc<Completion>, Error> {
    permitted(device, "a stream callback")?;
    let completion = Completion::new(then);
    let (Some(s), Some(gpu)) = (stream, device.gpu()) else {
        completion.reach(sys::CUresult::CUDA_SUCCESS);
        return Ok(completion);
    };
    let fail = |e| gpu.error("adding a stream callback", e);
    s.context().bind_to_thread().map_err(fail)?;
    let data = Arc::into_raw(completion.clone())
        .cast_mut()
        .cast::<c_void>();
    // SAFETY: `s` is a live stream of the bound context; `reached` takes `data` back once, when
    // the driver calls it, and makes no driver call.
    let added = unsafe { sys::cuStreamAddCallback(s.cu_stream(), Some(reached), data, 0) };
    if let Err(e) = added.result() {
        // SAFETY: the driver refused the callback, so `reached` never takes `data`.
        drop(unsafe { Arc::from_raw(data.cast_const().cast::<Completion>()) });
        return Err(fail(e));
    }
    Ok(completion)
}

/// The completion of a stream's work queued before [`Stream::done`](crate::Stream::done): a
/// future of its status.
#[must_use = "a future does nothing unless awaited"]
pub struct StreamDone {
    completion: Arc<Completion>,
    device: Device,
}

impl std::fmt::Debug for StreamDone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let done = lock(&self.completion.state).status.is_some();
        f.debug_struct("StreamDone").field("done", &done).finish()
    }
}

impl Future for StreamDone {
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = lock(&self.completion.state);
        match s.status {
            Some(status) => Poll::Ready(status_of(&self.device, status)),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
