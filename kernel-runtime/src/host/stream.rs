//! [`Stream`]: a queue of work on a device besides its own, as Numba's `cuda.stream()`.

use super::callback::{self, Callbacks, StreamDone};
use super::device::Device;
use super::error::Error;
use super::event::Event;
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// A queue of work on a device besides its own, as Numba's `cuda.stream()`: kernel launches
/// (`LaunchConfig::on_stream`) and copies of page-locked arrays ([`upload`](Self::upload),
/// [`download`](Self::download)).
///
/// Work on a stream starts after the work queued on the device's own stream before it, and
/// after the work of other streams that uses the same bytes of an array: a read after their
/// writes, a write after their writes and reads. Nothing else waits, so copies and kernels on
/// two streams that share no byte overlap (chunks of one array too: `d.slice_mut(r)?` on
/// each stream), and work that shares one never races.
/// The device's own copies, launches and frees wait in the same way for the streams that used
/// their arrays; [`Device::synchronize`], [`Device::event`], module arrays and graph replays
/// wait for every stream. On the CPU backend every call runs to completion, and a stream only
/// names its device.
///
/// ```
/// use kernel_runtime::prelude::*;
/// # use kernel_runtime::LaunchConfig;
/// # #[kernel]
/// # fn fill(v: u32, out: &mut [u32]) { let i = grid(1); if i < out.len() { out[i] = v; } }
/// let dev = Device::cpu();
/// let (s1, s2) = (dev.stream()?, dev.stream()?);
/// let (mut a, mut b) = (dev.zeros::<u32, _>(100)?, dev.zeros::<u32, _>(100)?);
/// fill.launch_with(LaunchConfig::cover(100, 64)?.on_stream(&s1), (1, &mut a))?;
/// fill.launch_with(LaunchConfig::cover(100, 64)?.on_stream(&s2), (2, &mut b))?;
/// s1.synchronize()?;
/// assert_eq!(a.to_vec()?[99] + b.to_vec()?[0], 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Stream {
    device: Device,
    /// The runtime's stream of a GPU: the work is queued and ordered here.
    cuda: Option<Arc<CudaStream>>,
    /// Another library's stream that `cuda` stands for ([`Device::external_stream`]): each
    /// operation waits for its work so far, and its later work for the operation.
    theirs: Option<Arc<CudaStream>>,
    callbacks: Arc<Callbacks>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.device.name())
            .finish_non_exhaustive()
    }
}

impl Stream {
    pub(crate) fn new(device: &Device) -> Result<Stream, Error> {
        let cuda = match device.gpu() {
            Some(gpu) => Some(gpu.new_stream()?),
            None => None,
        };
        Ok(Stream {
            device: device.clone(),
            cuda,
            theirs: None,
            callbacks: Arc::default(),
        })
    }

    /// The device the stream queues work on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The GPU stream to queue work on, for a CUDA device's.
    pub(crate) fn cuda(&self) -> Option<&Arc<CudaStream>> {
        self.cuda.as_ref()
    }

    /// The GPU stream whose end is this stream's: another library's where the stream is one.
    pub(crate) fn end(&self) -> Option<&Arc<CudaStream>> {
        self.theirs.as_ref().or(self.cuda.as_ref())
    }

    /// Runs `op`, which queues work on [`cuda`](Self::cuda): for another library's stream,
    /// after the work queued there so far, and before what is queued there next.
    pub(crate) fn queue<R>(&self, op: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
        let (Some(theirs), Some(ours), Some(gpu)) = (&self.theirs, &self.cuda, self.device.gpu())
        else {
            return op();
        };
        gpu.follow(ours, theirs)?;
        let out = op();
        gpu.follow(theirs, ours)?;
        out
    }

    /// [`queue`](Self::queue) on `stream`, or `op` alone on the device's own stream (`None`).
    pub(crate) fn queue_on<R>(
        stream: Option<&Stream>,
        op: impl FnOnce() -> Result<R, Error>,
    ) -> Result<R, Error> {
        match stream {
            Some(s) => s.queue(op),
            None => op(),
        }
    }

    /// The stream's handle, a `CUstream`, for another library to queue work on (Numba's
    /// `stream.handle`): that work runs in order with this stream's. `None` on the CPU backend.
    ///
    /// The runtime does not see which arrays the other library's work uses: it is ordered with
    /// this stream's work alone, and the work of other streams on the same arrays waits for it
    /// only where it waits for this stream's.
    pub fn handle(&self) -> Option<*mut std::ffi::c_void> {
        self.end().map(|s| s.cu_stream().cast())
    }

    /// Records an event after the work queued on this stream so far (Numba's
    /// `event.record(stream)`): two of them time the stream's work between them.
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// let s = Device::cpu().stream()?;
    /// let (start, end) = (s.event()?, s.event()?);
    /// end.synchronize()?;
    /// assert!(end.query()? && start.elapsed_ms(&end)? >= 0.0);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn event(&self) -> Result<Event, Error> {
        Event::record_on(&self.device, self.end())
    }

    /// Makes the work queued on this stream from now on wait until the work before `event`
    /// has finished (CUDA's `cuStreamWaitEvent`, Numba's `event.wait(stream)`); the host does
    /// not wait, but on the CPU backend, whose streams run each call to completion, for a
    /// GPU's event. It orders what the runtime cannot see: another library's work queued on
    /// [`handle`](Self::handle) after the device's work on the arrays it uses.
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// let dev = Device::cpu();
    /// let x = dev.zeros::<f32, _>(1000)?;
    /// let s = dev.stream()?;
    /// s.wait(&dev.event()?)?; // work on `s` now follows the device's so far: `x`'s zeros
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn wait(&self, event: &Event) -> Result<(), Error> {
        match (event.cuda(), self.device.gpu().zip(self.end())) {
            (Some(e), Some((gpu, s))) => s
                .wait(e)
                .map_err(|e| gpu.error("making a stream wait for an event", e)),
            (Some(_), None) => event.synchronize(),
            (None, _) => Ok(()),
        }
    }

    /// Calls `f` on a thread of the runtime once the work queued on this stream so far has
    /// finished, with its status (Numba's `stream.add_callback(f, arg)`, CUDA's
    /// `cuStreamAddCallback`): `Err` where a kernel there failed. `f` may use the device: it
    /// runs on no driver thread, and the stream's later work does not wait for it.
    /// [`synchronize`](Self::synchronize) waits for the callbacks added before it and reports
    /// the first that panicked. On the CPU backend, where work is done when queued, `f` is
    /// called at once, on the runtime's thread as well.
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// use std::sync::mpsc;
    /// let s = Device::cpu().stream()?;
    /// let (tx, rx) = mpsc::channel();
    /// s.add_callback(move |status| tx.send(status.is_ok()).unwrap())?;
    /// s.synchronize()?;
    /// assert!(rx.recv().unwrap());
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn add_callback(
        &self,
        f: impl FnOnce(Result<(), Error>) + Send + 'static,
    ) -> Result<(), Error> {
        callback::add_callback(&self.device, self.end(), &self.callbacks, f)
    }

    /// A future that completes once the work queued on this stream so far has finished (Numba's
    /// `await stream.async_done()`), with its status: `Err` where a kernel there failed. It
    /// needs no particular executor; an async task awaits the GPU without holding a thread.
    ///
    /// ```
    /// # use kernel_runtime::prelude::*;
    /// # #[kernel]
    /// # fn fill(v: u32, out: &mut [u32]) { let i = grid(1); if i < out.len() { out[i] = v; } }
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let waker = std::task::Waker::noop();
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
    /// #             return v;
    /// #         }
    /// #     }
    /// # }
    /// # use kernel_runtime::LaunchConfig;
    /// let dev = Device::cpu();
    /// let s = dev.stream()?;
    /// let mut out = dev.zeros::<u32, _>(100)?;
    /// fill.launch_with(LaunchConfig::cover(100, 64)?.on_stream(&s), (7, &mut out))?;
    /// let done = s.done()?;
    /// block_on(done)?; // `s.done()?.await?` in an async fn
    /// assert_eq!(out.to_vec()?[99], 7);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn done(&self) -> Result<StreamDone, Error> {
        callback::done(&self.device, self.end())
    }

    /// Waits until the work queued on this stream has finished; a kernel that failed there is
    /// reported here. It waits, too, for the callbacks added before it
    /// ([`add_callback`](Self::add_callback)), and reports the first that panicked (in a
    /// callback, it waits for none).
    pub fn synchronize(&self) -> Result<(), Error> {
        if let (Some(s), Some(gpu)) = (self.end(), self.device.gpu()) {
            s.synchronize()
                .map_err(|e| gpu.error("waiting for a stream", e))?;
        }
        self.callbacks.wait()
    }
}

impl Device {
    /// A new stream of this device, for kernels and copies that may run at the same time as
    /// other streams' ([`LaunchConfig::on_stream`](crate::LaunchConfig::on_stream),
    /// [`Stream::upload`], [`Stream::download`]).
    pub fn stream(&self) -> Result<Stream, Error> {
        Stream::new(self)
    }

    /// Another library's stream of this GPU, `handle` (a `CUstream`), as a stream of this
    /// device (Numba's `cuda.external_stream(ptr)`): launches and copies on it run in order with
    /// the work the other library queues there, before and after, and are ordered with this
    /// device's other streams as on any stream. Dropping the last clone leaves the stream to its
    /// owner.
    ///
    /// Each operation is queued on a stream of the runtime's that waits for the other stream's
    /// work so far, which then waits for the operation: two event waits an operation. Refused
    /// with [`Error::ForeignStream`] on the CPU backend and where the stream belongs to another
    /// context than the GPU's primary one, which the runtime uses.
    ///
    /// ```no_run
    /// # use kernel_runtime::Device;
    /// # fn theirs() -> *mut std::ffi::c_void { std::ptr::null_mut() }
    /// let gpu = Device::cuda(0)?;
    /// let handle = theirs(); // a `CUstream` of another library, on GPU 0
    /// // SAFETY: the other library keeps the stream until `s` and its clones are dropped.
    /// let s = unsafe { gpu.external_stream(handle) }?;
    /// assert_eq!(s.handle(), Some(handle));
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Safety
    /// `handle` is a stream of this GPU that exists until the returned [`Stream`] and its
    /// clones are dropped.
    pub unsafe fn external_stream(&self, handle: *mut std::ffi::c_void) -> Result<Stream, Error> {
        let Some(gpu) = self.gpu() else {
            return Err(Error::ForeignStream {
                handle: handle as usize,
                reason: format!(
                    "{} runs no GPU stream: use it on a GPU's `Device`",
                    self.name()
                ),
            });
        };
        // SAFETY: the caller's contract.
        let theirs = unsafe { gpu.borrow_stream(handle.cast()) }?;
        let mut stream = Stream::new(self)?;
        stream.theirs = Some(theirs);
        Ok(stream)
    }
}
