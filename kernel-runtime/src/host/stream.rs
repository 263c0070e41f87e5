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
/// after the work of other streams that uses the same arrays: a read after the array's last
/// write, a write after its last write and the reads since. Nothing else waits, so copies and
/// kernels on two streams that share no array overlap, and work that shares one never races.
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
    cuda: Option<Arc<CudaStream>>,
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
            callbacks: Arc::default(),
        })
    }

    /// The device the stream queues work on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The GPU stream, for a CUDA device's.
    pub(crate) fn cuda(&self) -> Option<&Arc<CudaStream>> {
        self.cuda.as_ref()
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
        Event::record_on(&self.device, self.cuda.as_ref())
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
        callback::add_callback(&self.device, self.cuda.as_ref(), &self.callbacks, f)
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
        callback::done(&self.device, self.cuda.as_ref())
    }

    /// Waits until the work queued on this stream has finished; a kernel that failed there is
    /// reported here. It waits, too, for the callbacks added before it
    /// ([`add_callback`](Self::add_callback)), and reports the first that panicked (in a
    /// callback, it waits for none).
    pub fn synchronize(&self) -> Result<(), Error> {
        if let (Some(s), Some(gpu)) = (&self.cuda, self.device.gpu()) {
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
}
