//! The CUDA backend: a GPU's context and stream, the ordering of its streams, kernel launches,
//! all through `cudarc`'s driver API, loaded at run time; its memory and copies (`memory`), the
//! modules loaded once per context (`modules`) and graph capture (`capture`) have files of
//! their own.
//!
//! Every driver call is made only after [`probe`] has found `libcuda`: `cudarc` panics when a
//! function of a missing library is called, and a missing GPU must be an error, never a panic.

use super::error::{Error, LaunchError};
use super::limits::Limits;
use super::order::{self, Use};
use super::params::GpuParams;
use crate::dim::Dim3;
use cudarc::driver::{result, sys, CudaContext, CudaStream, DriverError};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

mod capture;
mod memory;
mod modules;
mod properties;

pub(crate) use capture::Captured;
use memory::keep_freed_memory;
#[cfg(feature = "mpi")]
pub(crate) use memory::Pitched;
use modules::Modules;
pub use properties::GpuProperties;
pub(crate) use properties::Hardware;

/// Errors that leave a context unusable: a kernel trapped (a failed index check) or touched
/// memory it must not, and every later call in the context fails the same way.
const STICKY: &[sys::CUresult] = &[
    sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
    sys::CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
    sys::CUresult::CUDA_ERROR_LAUNCH_FAILED,
    sys::CUresult::CUDA_ERROR_ASSERT,
    sys::CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
    sys::CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE,
    sys::CUresult::CUDA_ERROR_INVALID_PC,
    sys::CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
    sys::CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
];

/// What a launch asks of a GPU: its grid and blocks, each block's shared memory (static and
/// dynamic), the user stream to queue it on (the device's own where none), and whether its
/// blocks must all be resident at once (a cooperative launch).
pub(crate) struct Launch<'a> {
    pub(crate) grid: Dim3,
    pub(crate) block: Dim3,
    pub(crate) shared_bytes: usize,
    pub(crate) stream: Option<&'a Arc<CudaStream>>,
    pub(crate) cooperative: bool,
}

/// Runs `f`, turning a panic of `cudarc` (a driver too old to have a function it loads) into an
/// error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(describe(e)),
        Err(payload) => Err(format!(
            "{what}: the CUDA driver is missing a function: {}",
            crate::cpu::fault::describe_panic(payload)
        )),
    }
}

/// `CUDA_ERROR_NAME: what the driver says`.
fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    }
}

/// Whether the CUDA driver library can be loaded; `Err` says why not and what to do.
pub(crate) fn probe() -> Result<(), String> {
    // SAFETY: only tries to open the library; calls nothing in it.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(
            "the CUDA driver library (libcuda.so) is not installed or not on the loader path: \
             install the NVIDIA driver, or run on Device::cpu()"
                .into(),
        )
    }
}

/// The CUDA driver's version (`(12, 8)`), or why there is no driver.
pub(crate) fn driver_version() -> Result<(u32, u32), String> {
    probe()?;
    let mut v = 0;
    // SAFETY: `v` receives one integer; the call needs no context.
    guarded("asking the driver's version", || unsafe {
        sys::cuDriverGetVersion(&mut v).result()
    })?;
    let v = v.max(0) as u32;
    Ok((v / 1000, v % 1000 / 10))
}

/// How many GPUs the CUDA driver sees: 0 where there is no driver.
pub(crate) fn count() -> usize {
    if probe().is_err() {
        return 0;
    }
    guarded("counting CUDA devices", || {
        result::init()?;
        result::device::get_count()
    })
    .map_or(0, |n| n.max(0) as usize)
}

/// A graph capture this thread is making (see [`CudaDevice::capture`]).
struct Capture {
    /// The device it captures on, by address.
    device: usize,
    /// The stream its launches are captured on.
    stream: Arc<CudaStream>,
    /// Memory freed during the capture: the graph may use it, so it is freed with the graph.
    frees: Vec<sys::CUdeviceptr>,
}

thread_local! {
    static CAPTURE: std::cell::RefCell<Option<Capture>> = const { std::cell::RefCell::new(None) };
}

/// A stream ordered for an operation ([`CudaDevice::enter`]): dropped once the operation is
/// queued, it marks the device's stream as having new work where it is that stream.
#[must_use = "hold the guard until the operation is queued"]
pub(super) struct Entered<'s> {
    dev: &'s CudaDevice,
    stream: &'s Arc<CudaStream>,
}

impl std::ops::Deref for Entered<'_> {
    type Target = Arc<CudaStream>;

    fn deref(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if Arc::ptr_eq(self.stream, &self.dev.stream) {
            self.dev.mark_own_work();
        }
    }
}

/// A GPU's context, the stream all work on it is queued on, and the modules loaded into it.
pub(crate) struct CudaDevice {
    pub(crate) ordinal: usize,
    pub(crate) name: String,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Loaded modules (one per crate of kernels).
    modules: Mutex<Modules>,
    /// The user streams work was queued on since the device's stream last caught up with them
    /// all ([`barrier`](Self::barrier)), each with the count of `own_work` it last waited for.
    pending: Mutex<Vec<(Arc<CudaStream>, u64)>>,
    /// How many times work was queued on the device's stream: a user stream that waited for
    /// it at one count need not wait again while the count stays ([`enter`](Self::enter)).
    own_work: AtomicU64,
    /// The GPUs (by ordinal) whose memory this one's context was let at directly
    /// (`cuCtxEnablePeerAccess`), or found unable to be.
    peers: Mutex<HashMap<usize, bool>>,
    /// The dynamic shared memory each function was allowed past 48 KiB
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), by function handle.
    opted_in: Mutex<HashMap<usize, usize>>,
    /// The last kernel launched: the one an asynchronous fault is reported against.
    last_kernel: Mutex<Option<&'static str>>,
    /// `KERNEL_LAUNCH_BLOCKING=1`: wait for each kernel, so a fault is reported by its launch.
    blocking: bool,
    /// Whether the GPU has a stream-ordered memory pool (`cuMemAllocAsync`); without one,
    /// memory comes from `cuMemAlloc` and is freed after the stream has caught up.
    pools: bool,
    /// Whether [`keep_freed_memory`] took: the pool is then trimmed when the device is dropped.
    keeps_freed_memory: bool,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl CudaDevice {
    /// Opens GPU `ordinal`: its primary context and a stream of its own.
    pub(crate) fn open(ordinal: usize) -> Result<CudaDevice, String> {
        probe()?;
        let count = guarded("counting CUDA devices", || {
            result::init()?;
            result::device::get_count()
        })?;
        if ordinal >= count.max(0) as usize {
            return Err(match count {
                0 => "the CUDA driver found no GPU".to_string(),
                n => format!("the CUDA driver found {n} GPU(s), numbered from 0"),
            });
        }
        let ctx = guarded("creating the CUDA context", || CudaContext::new(ordinal))?;
        // SAFETY: this backend queues all work of a device on its one stream, in order, and
        // tracks nothing across streams, so cudarc's per-allocation events are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = guarded("creating a CUDA stream", || ctx.new_stream())?;
        let pools = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
            .is_ok_and(|v| v > 0);
        // Only speed depends on it: without it, memory is mapped afresh after each wait.
        let keeps_freed_memory = pools
            && guarded("keeping freed device memory for reuse", || {
                keep_freed_memory(&ctx)
            })
            .is_ok();
        let name = ctx.name().unwrap_or_else(|_| "CUDA GPU".into());
        Ok(CudaDevice {
            ordinal,
            name,
            ctx,
            stream,
            modules: Mutex::new(Modules::default()),
            pending: Mutex::new(Vec::new()),
            own_work: AtomicU64::new(0),
            peers: Mutex::new(HashMap::new()),
            opted_in: Mutex::new(HashMap::new()),
            last_kernel: Mutex::new(None),
            blocking: std::env::var("KERNEL_LAUNCH_BLOCKING").is_ok_and(|v| v == "1"),
            pools,
            keeps_freed_memory,
        })
    }

    /// The GPU's launch limits (the CUDA defaults where the driver does not say).
    pub(crate) fn limits(&self) -> Limits {
        use sys::CUdevice_attribute::*;
        let get = |attr, default: u32| {
            self.ctx
                .attribute(attr)
                .ok()
                .filter(|&v| v > 0)
                .map_or(default, |v| v as u32)
        };
        let d = Limits::CUDA_DEFAULT;
        Limits {
            max_block: Dim3::new(
                get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, d.max_block.x),
                get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, d.max_block.y),
                get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, d.max_block.z),
            ),
            max_grid: Dim3::new(
                get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, d.max_grid.x),
                get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, d.max_grid.y),
                get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, d.max_grid.z),
            ),
            max_threads_per_block: get(
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                d.max_threads_per_block,
            ),
            max_shared_bytes: get(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                d.max_shared_bytes as u32,
            ) as usize,
            max_shared_bytes_optin: get(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                d.max_shared_bytes_optin as u32,
            ) as usize,
        }
    }

    /// Makes the context current on the calling thread.
    fn bind(&self) -> Result<(), Error> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.error("binding the CUDA context", e))
    }

    /// Starts (`start`) or stops the profiler's collection for the context
    /// (`cuProfilerStart`, `cuProfilerStop`).
    pub(crate) fn profiler(&self, start: bool) -> Result<(), Error> {
        self.bind()?;
        // SAFETY: plain driver calls on the bound context.
        let (r, op) = unsafe {
            match start {
                true => (sys::cuProfilerStart(), "starting the profiler"),
                false => (sys::cuProfilerStop(), "stopping the profiler"),
            }
        };
        r.result().map_err(|e| self.error(op, e))
    }

    /// Binds, and orders the device's stream after all the work queued on user streams so far:
    /// what comes after it on the device's stream sees every result, as a wait for the whole
    /// device, a module array's values and a graph's replay must.
    pub(crate) fn barrier(&self) -> Result<(), Error> {
        self.bind()?;
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        for (user, _) in pending {
            order::join(&self.stream, &user)
                .map_err(|e| self.error("ordering the device's stream after a user stream", e))?;
        }
        Ok(())
    }

    /// The device's stream, ordered after all the work queued on every stream so far (outside
    /// a capture): what is queued on it next runs once the whole device has caught up.
    pub(crate) fn whole_device(&self, what: &str) -> Result<&Arc<CudaStream>, Error> {
        self.outside_capture(what)?;
        self.barrier()?;
        Ok(&self.stream)
    }

    /// Orders `stream` (the device's own or a user stream) for an operation with the array
    /// uses `uses`: a user stream after the work queued on the device's stream so far, and
    /// either after the other streams' uses of the same bytes that they conflict with, each
    /// such stream joined once ([`order`]).
    ///
    /// A user stream waits for the device's stream only where work was queued there since it
    /// last did: an operation on a user stream costs no driver call of its own besides. The
    /// guard returned marks work queued on the device's stream once it drops, so hold it until
    /// the operation is queued.
    fn enter<'s>(
        &'s self,
        stream: &'s Arc<CudaStream>,
        uses: &[Use<'_>],
    ) -> Result<Entered<'s>, Error> {
        let failed = |e| self.error("ordering a stream after the work it depends on", e);
        if !Arc::ptr_eq(stream, &self.stream) {
            // Read before the wait, so that work queued meanwhile is waited for next time.
            let seen = self.own_work.load(Ordering::SeqCst);
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            match pending.iter_mut().find(|(s, _)| Arc::ptr_eq(s, stream)) {
                Some((_, waited)) if *waited == seen => {}
                Some((_, waited)) => {
                    order::join(stream, &self.stream).map_err(failed)?;
                    *waited = seen;
                }
                None => {
                    order::join(stream, &self.stream).map_err(failed)?;
                    pending.push((stream.clone(), seen));
                }
            }
        }
        // Each stream the uses conflict with, once however many arrays they share.
        let mut waits: Vec<Arc<CudaStream>> = Vec::new();
        for (span, access) in uses {
            for other in span.users.record(stream, *access, span.bytes) {
                if !waits.iter().any(|w| Arc::ptr_eq(w, &other)) {
                    waits.push(other);
                }
            }
        }
        waits
            .iter()
            .try_for_each(|other| order::join(stream, other))
            .map_err(failed)?;
        Ok(Entered { dev: self, stream })
    }

    /// Marks work queued on the device's stream, after it is queued (see [`enter`](Self::enter)).
    fn mark_own_work(&self) {
        self.own_work.fetch_add(1, Ordering::SeqCst);
    }

    /// Queues another library's work (`what`: NCCL's collectives) on the device's stream,
    /// ordered by the array uses `uses` like a copy: `work` gets the context bound and the
    /// stream.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn queue(
        &self,
        what: &str,
        uses: &[Use<'_>],
        work: impl FnOnce(sys::CUstream) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.outside_capture(what)?;
        let stream = self.copy_stream(None, uses)?;
        work(stream.cu_stream())
    }

    /// A new stream of the device (Numba's `cuda.stream()`).
    pub(crate) fn new_stream(&self) -> Result<Arc<CudaStream>, Error> {
        self.bind()?;
        self.ctx
            .new_stream()
            .map_err(|e| self.error("creating a stream", e))
    }

    /// Another library's stream of this GPU, `handle`, once the driver says it belongs to the
    /// context the runtime uses; dropping the wrapper leaves the stream to its owner.
    ///
    /// # Safety
    /// `handle` is a stream that exists, and stays so while the wrapper is used.
    pub(crate) unsafe fn borrow_stream(
        &self,
        handle: sys::CUstream,
    ) -> Result<Arc<CudaStream>, Error> {
        let refused = |reason: String| Error::ForeignStream {
            handle: handle as usize,
            reason,
        };
        self.bind()?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: the caller's contract; `ctx` receives one context handle.
        let asked = guarded("cuStreamGetCtx", || unsafe {
            sys::cuStreamGetCtx(handle, &mut ctx).result()
        });
        match asked {
            Err(e) => Err(refused(format!("the driver does not know it: {e}"))),
            Ok(()) if ctx != self.ctx.cu_ctx() => Err(refused(format!(
                "it belongs to another context than {}'s primary one, which the runtime \
                 uses: make it with that GPU's primary context current",
                self.name
            ))),
            // SAFETY: the caller's contract.
            Ok(()) => Ok(unsafe { self.ctx.wrap_borrowed_stream(handle) }),
        }
    }

    /// Makes stream `on` wait for the work queued on `other` so far: how one of the runtime's
    /// streams and another library's it stands for follow each other.
    pub(crate) fn follow(&self, on: &CudaStream, other: &CudaStream) -> Result<(), Error> {
        self.outside_capture("queuing work on another library's stream")?;
        self.bind()?;
        order::join(on, other).map_err(|e| self.error("ordering another library's stream", e))
    }

    /// The error of a failed driver call; a sticky one is reported against the last kernel.
    pub(crate) fn error(&self, op: &str, e: DriverError) -> Error {
        if STICKY.contains(&e.0) {
            let kernel = self
                .last_kernel
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or("(none launched)");
            Error::KernelTrapped {
                kernel,
                message: describe(e),
            }
        } else {
            Error::Cuda {
                op: op.to_string(),
                message: describe(e),
            }
        }
    }

    /// The GPU's free and total memory, in bytes (`cuMemGetInfo`).
    pub(crate) fn memory_info(&self) -> Result<(usize, usize), Error> {
        self.bind()?;
        result::mem_get_info().map_err(|e| self.error("reading the GPU's free memory", e))
    }

    /// Waits for all work queued on the device.
    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        self.outside_capture("waiting for the GPU")?;
        self.barrier()?;
        self.wait_own_stream()
    }

    /// Waits for the work queued on the device's own stream (not its user streams').
    pub(crate) fn wait_own_stream(&self) -> Result<(), Error> {
        self.outside_capture("waiting for the GPU")?;
        self.bind()?;
        self.stream
            .synchronize()
            .map_err(|e| self.error("waiting for the GPU", e))
    }

    /// The block size the driver's occupancy calculator gives `kernel` (of the module `ptx`)
    /// with `dynamic_shared` bytes of dynamic shared memory a block: the size that keeps the
    /// most threads resident.
    pub(crate) fn block_size(
        &self,
        kernel: &'static str,
        ptx: &'static str,
        dynamic_shared: usize,
    ) -> Result<u32, Error> {
        self.bind()?;
        let f = self.function(kernel, ptx)?;
        // SAFETY: `f` is a live function of this context; the dynamic shared memory each block
        // gets, no limit.
        let (_, block) =
            unsafe { result::occupancy::max_potential_block_size(f, None, dynamic_shared, 0) }
                .map_err(|e| {
                    self.error(&format!("asking the block size of kernel `{kernel}`"), e)
                })?;
        Ok(block.max(1) as u32)
    }

    /// How many blocks of `threads` threads with `shared` bytes of shared memory each a
    /// cooperative launch of `kernel` (of the module `ptx`) may have: what the occupancy
    /// calculator keeps resident per multiprocessor, times the multiprocessors. An error names a
    /// GPU that cannot launch cooperatively.
    pub(crate) fn cooperative_blocks(
        &self,
        kernel: &'static str,
        ptx: &'static str,
        threads: u32,
        shared: usize,
    ) -> Result<u64, Error> {
        use sys::CUdevice_attribute::*;
        self.bind()?;
        let attribute = |attr, what: &str| {
            self.ctx
                .attribute(attr)
                .map_err(|e| self.error(&format!("asking the GPU's {what}"), e))
        };
        if attribute(
            CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
            "cooperative launch support",
        )? != 1
        {
            return Err(Error::InvalidLaunch {
                kernel,
                reason: LaunchError::NotCooperative {
                    device: self.name.clone(),
                },
            });
        }
        let sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors")?;
        let f = self.function_with_shared(kernel, ptx, shared)?;
        // SAFETY: `f` is a live function of this context.
        let per_sm = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(f, threads as i32, shared)
        }
        .map_err(|e| self.error(&format!("asking the occupancy of kernel `{kernel}`"), e))?;
        Ok(per_sm.max(0) as u64 * sms.max(0) as u64)
    }

    /// Launches `kernel` from the module `ptx` with `params`, one pointer per PTX parameter and
    /// the uses of the arrays among them, on the device's stream or on the configuration's user
    /// stream; a `cooperative` launch through `cuLaunchCooperativeKernel`. It waits for the
    /// work of other streams it conflicts with ([`enter`](Self::enter)).
    ///
    /// # Safety
    /// `params` must point at values of the types and in the order of the entry's parameters,
    /// and every device pointer among them must hold what the kernel may address.
    pub(crate) unsafe fn launch(
        &self,
        kernel: &'static str,
        ptx: &'static str,
        shape: &Launch<'_>,
        params: &mut GpuParams<'_>,
    ) -> Result<(), Error> {
        self.bind()?;
        let (on, shared_bytes) = (shape.stream, shape.shared_bytes);
        let f = self.function_with_shared(kernel, ptx, shared_bytes)?;
        let captured = self.capture_stream();
        let stream = match (on, &captured) {
            (None, Some(capture)) => capture,
            (Some(_), Some(_)) => {
                return Err(Error::InCapture {
                    what: format!("launching kernel `{kernel}` on a stream of its own"),
                })
            }
            (None, None) => &self.stream,
            (Some(user), None) => user,
        };
        // A capture orders nothing: its replay waits for all the work before it.
        let _entered = match captured {
            None => Some(self.enter(stream, &params.uses)?),
            Some(_) => None,
        };
        *self.last_kernel.lock().unwrap_or_else(|p| p.into_inner()) = Some(kernel);
        let (g, b) = (shape.grid, shape.block);
        let launch = match shape.cooperative {
            true => result::launch_cooperative_kernel,
            false => result::launch_kernel,
        };
        // SAFETY: the caller's contract; the configuration was validated against the limits.
        unsafe {
            launch(
                f,
                (g.x, g.y, g.z),
                (b.x, b.y, b.z),
                shared_bytes as u32,
                stream.cu_stream(),
                &mut params.pointers,
            )
        }
        .map_err(|e| self.error(&format!("launching kernel `{kernel}`"), e))?;
        if self.blocking && captured.is_none() {
            stream
                .synchronize()
                .map_err(|e| self.error(&format!("running kernel `{kernel}`"), e))?;
        }
        Ok(())
    }

    /// The stream of this thread's capture on this device, if it is capturing.
    fn capture_stream(&self) -> Option<Arc<CudaStream>> {
        let me = self as *const Self as usize;
        CAPTURE.with(|c| {
            c.borrow()
                .as_ref()
                .filter(|c| c.device == me)
                .map(|c| c.stream.clone())
        })
    }

    /// `Err` where this thread is capturing a graph on this device: `what` cannot be captured.
    fn outside_capture(&self, what: &str) -> Result<(), Error> {
        match self.capture_stream() {
            Some(_) => Err(Error::InCapture { what: what.into() }),
            None => Ok(()),
        }
    }

    /// Where this thread is capturing on this device, keeps `ptr` to free with the graph.
    fn defer_free_in_capture(&self, ptr: sys::CUdeviceptr) -> bool {
        let me = self as *const Self as usize;
        CAPTURE.with(|c| match c.borrow_mut().as_mut() {
            Some(capture) if capture.device == me => {
                capture.frees.push(ptr);
                true
            }
            _ => false,
        })
    }

    /// Records an event on `stream` after the work queued on it so far.
    pub(crate) fn record_event_on(
        &self,
        stream: &Arc<CudaStream>,
    ) -> Result<cudarc::driver::CudaEvent, Error> {
        self.bind()?;
        stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| self.error("recording an event", e))
    }

    /// Records an event on the device's stream after all the work queued on the device so
    /// far, its user streams' included.
    pub(crate) fn record_event(&self) -> Result<cudarc::driver::CudaEvent, Error> {
        self.barrier()?;
        self.record_event_on(&self.stream)
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // The barrier orders the device's stream after every user stream's work.
        if self.barrier().is_ok() {
            let _ = self.stream.synchronize();
            // SAFETY: no launch can use a module any more: the device is being dropped.
            unsafe {
                self.modules
                    .get_mut()
                    .unwrap_or_else(|p| p.into_inner())
                    .unload()
            };
            // The memory kept for reuse goes back to the driver; the pool releases only memory
            // that no allocation holds.
            if self.keeps_freed_memory {
                let _ = guarded("trimming the memory pool", || {
                    // SAFETY: the device handle is the context's own; its default pool is never
                    // destroyed.
                    unsafe {
                        let pool = result::device::get_default_mem_pool(self.ctx.cu_device())?;
                        result::mem_pool::trim_to(pool, 0)
                    }
                });
            }
        }
    }
}
