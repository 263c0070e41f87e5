//! The CUDA backend: a GPU's context and stream, device memory, PTX modules loaded once per
//! context, kernel launches, all through `cudarc`'s driver API, loaded at run time.
//!
//! Every driver call is made only after [`probe`] has found `libcuda`: `cudarc` panics when a
//! function of a missing library is called, and a missing GPU must be an error, never a panic.

use super::device::Limits;
use super::error::{Error, LaunchError};
use super::launch::LaunchConfig;
use super::link;
use super::order::{self, Access, Use, Users};
use super::params::GpuParams;
use crate::dim::Dim3;
use cudarc::driver::{result, sys, CudaContext, CudaStream, DriverError};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

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

/// Whether the driver refused a module for its PTX (a newer ISA or GPU than it serves), where
/// advice on the driver or `KERNEL_PTX_ARCH` helps; not for errors such as a missing context.
fn is_refused_ptx(code: sys::CUresult) -> bool {
    use sys::CUresult::*;
    matches!(
        code,
        CUDA_ERROR_INVALID_PTX | CUDA_ERROR_UNSUPPORTED_PTX_VERSION | CUDA_ERROR_NO_BINARY_FOR_GPU
    )
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

/// Makes the GPU's stream-ordered memory pool, which every allocation of this backend draws on,
/// keep the memory freed into it for later allocations.
///
/// By default the pool hands all its unused memory back to the driver at every wait for the GPU
/// (a copy to the host, an event's time), so a loop that waits and allocates on each turn (as
/// every pass of a quicksort does) has the driver map fresh memory each time, while the GPU
/// idles. CuPy's and PyTorch's allocators keep freed memory the same way; dropping the device
/// gives it back ([`CudaDevice`]'s `Drop`).
fn keep_freed_memory(ctx: &CudaContext) -> Result<(), DriverError> {
    let mut keep = u64::MAX;
    // SAFETY: the device handle is the context's own; the release threshold is a `cuuint64_t`,
    // which `keep` is, and the driver only reads it during the call.
    unsafe {
        let pool = result::device::get_default_mem_pool(ctx.cu_device())?;
        result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        )
    }
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

/// `KERNEL_JIT=1`: load the PTX of every module, never a cubin built ahead of time.
fn jit_only() -> bool {
    std::env::var("KERNEL_JIT").is_ok_and(|v| v.trim() == "1")
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

/// A captured graph: the executable graph (none where nothing was captured), the stream it was
/// captured on, and the memory to free once it is gone.
pub(crate) struct Captured {
    pub graph: Option<cudarc::driver::CudaGraph>,
    stream: Arc<CudaStream>,
    frees: Vec<sys::CUdeviceptr>,
}

/// The dynamic shared memory a function may have without opting in (CUDA's 48 KiB).
const OPT_IN_ABOVE: usize = 48 * 1024;

/// A GPU's context, the stream all work on it is queued on, and the modules loaded into it.
pub(crate) struct CudaDevice {
    pub(crate) ordinal: usize,
    pub(crate) name: String,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Loaded modules (one per crate of kernels).
    modules: Mutex<Modules>,
    /// The user streams work was queued on since the device's stream last caught up with them
    /// all ([`barrier`](Self::barrier)).
    pending: Mutex<Vec<Arc<CudaStream>>>,
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

/// The PTX modules loaded into a context, and where each one's text was seen.
#[derive(Default)]
struct Modules {
    loaded: Vec<Module>,
    /// The index in `loaded` of the module of the PTX text at each address.
    by_address: HashMap<usize, usize>,
}

/// A loaded PTX module and the functions looked up in it.
struct Module {
    module: sys::CUmodule,
    /// Its text.
    ptx: &'static str,
    functions: HashMap<&'static str, sys::CUfunction>,
}

// SAFETY: CUDA driver handles may be used from any thread once their context is current there;
// every use binds the context first.
unsafe impl Send for Module {}

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

    /// Binds, and orders the device's stream after all the work queued on user streams so far:
    /// what comes after it on the device's stream sees every result, as a wait for the whole
    /// device, a module array's values and a graph's replay must.
    pub(crate) fn barrier(&self) -> Result<(), Error> {
        self.bind()?;
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        for user in pending {
            order::join(&self.stream, &user)
                .map_err(|e| self.error("ordering the device's stream after a user stream", e))?;
        }
        Ok(())
    }

    /// Orders `stream` (the device's own or a user stream) for an operation with the array
    /// uses `uses`: a user stream after the work queued on the device's stream so far, and
    /// either after the other streams' conflicting uses of the arrays ([`order`]).
    fn enter(&self, stream: &Arc<CudaStream>, uses: &[Use<'_>]) -> Result<(), Error> {
        let failed = |e| self.error("ordering a stream after the work it depends on", e);
        if !Arc::ptr_eq(stream, &self.stream) {
            order::join(stream, &self.stream).map_err(failed)?;
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if !pending.iter().any(|s| Arc::ptr_eq(s, stream)) {
                pending.push(stream.clone());
            }
        }
        for (users, access) in uses {
            users.order(stream, *access).map_err(failed)?;
        }
        Ok(())
    }

    /// A new stream of the device (Numba's `cuda.stream()`).
    pub(crate) fn new_stream(&self) -> Result<Arc<CudaStream>, Error> {
        self.bind()?;
        self.ctx
            .new_stream()
            .map_err(|e| self.error("creating a stream", e))
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

    /// Waits for all work queued on the device.
    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        self.outside_capture("waiting for the GPU")?;
        self.barrier()?;
        self.stream
            .synchronize()
            .map_err(|e| self.error("waiting for the GPU", e))
    }

    /// Waits for the work queued on the device's own stream (not its user streams').
    pub(crate) fn wait_own_stream(&self) -> Result<(), Error> {
        self.outside_capture("waiting for the GPU")?;
        self.bind()?;
        self.stream
            .synchronize()
            .map_err(|e| self.error("waiting for the GPU", e))
    }

    /// `bytes` of device memory, zeroed when `zeroed` (else for the caller to overwrite whole
    /// before any read), or a null pointer for none.
    pub(crate) fn alloc(&self, bytes: usize, zeroed: bool) -> Result<sys::CUdeviceptr, Error> {
        if bytes == 0 {
            return Ok(0);
        }
        self.outside_capture("allocating device memory")?;
        self.bind()?;
        let s = self.stream.cu_stream();
        let failed = |e: DriverError| match e.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory {
                place: format!("CUDA device {} ({})", self.ordinal, self.name),
                bytes,
            },
            _ => self.error(&format!("allocating {bytes} bytes"), e),
        };
        // SAFETY: allocation and clearing are ordered on the device's stream, before any later
        // use of the memory on that stream; memory from `cuMemAlloc` is not in use by anything.
        unsafe {
            let ptr = if self.pools {
                result::malloc_async(s, bytes).map_err(failed)?
            } else {
                result::malloc_sync(bytes).map_err(failed)?
            };
            if zeroed {
                result::memset_d8_async(ptr, 0, bytes, s)
                    .map_err(|e| self.error("clearing device memory", e))?;
            }
            Ok(ptr)
        }
    }

    /// Frees memory from [`alloc`](Self::alloc), whose users are `users`, after the work
    /// queued on it.
    pub(crate) fn free(&self, ptr: sys::CUdeviceptr, users: &Users) {
        if ptr == 0 || self.defer_free_in_capture(ptr) || self.bind().is_err() {
            return;
        }
        if self.enter(&self.stream, &[(users, Access::Write)]).is_err() {
            return;
        }
        // SAFETY: `ptr` came from `alloc` and is not used again; without a pool, the stream has
        // finished all work that could use it. A failure (a context already lost) leaks the
        // memory with its context.
        unsafe {
            if self.pools {
                let _ = result::free_async(ptr, self.stream.cu_stream());
            } else if self.stream.synchronize().is_ok() {
                let _ = result::free_sync(ptr);
            }
        }
    }

    /// Copies `src` to device memory at `dst` (whose users are `users`), which holds at least
    /// its bytes, on the device's stream.
    pub(crate) fn upload<T: Copy>(
        &self,
        dst: sys::CUdeviceptr,
        users: &Users,
        src: &[T],
    ) -> Result<(), Error> {
        // SAFETY: a copy from pageable memory returns once `src` has been staged, so `src` may
        // change afterwards; `dst` holds its bytes.
        unsafe {
            self.upload_on(
                None,
                dst,
                src.as_ptr(),
                src.len(),
                &[(users, Access::Write)],
            )
        }
    }

    /// Queues a copy of the `len` elements at `src` to device memory at `dst` on `stream` (the
    /// device's own where none), ordered by the uses `uses` of the arrays it copies between.
    ///
    /// # Safety
    /// `src` holds `len` elements and `dst` their bytes; where `src` is page-locked, it stays
    /// allocated and unwritten until the copy is done (its users are then among `uses`).
    pub(crate) unsafe fn upload_on<T: Copy>(
        &self,
        stream: Option<&Arc<CudaStream>>,
        dst: sys::CUdeviceptr,
        src: *const T,
        len: usize,
        uses: &[Use<'_>],
    ) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        self.outside_capture("copying to the GPU")?;
        self.bind()?;
        let stream = stream.unwrap_or(&self.stream);
        self.enter(stream, uses)?;
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.cu_stream()) }
            .result()
            .map_err(|e| self.error("copying to the GPU", e))
    }

    /// Copies device memory at `src` (whose users are `users`) into `dst`, after the work it
    /// waits for.
    pub(crate) fn download<T: Copy>(
        &self,
        dst: &mut [T],
        src: sys::CUdeviceptr,
        users: &Users,
    ) -> Result<(), Error> {
        let (to, len) = (dst.as_mut_ptr(), dst.len());
        // SAFETY: `dst` holds `len` elements, borrowed until the stream is waited for below.
        unsafe { self.download_on(None, to, len, src, &[(users, Access::Read)]) }?;
        self.wait_own_stream()
    }

    /// Queues a copy of device memory at `src` into the `len` elements at `dst` on `stream`
    /// (the device's own where none), ordered by the uses `uses` of the arrays it copies
    /// between.
    ///
    /// # Safety
    /// `dst` holds `len` elements and `src` their bytes; `dst` stays allocated and untouched
    /// until the copy is done.
    pub(crate) unsafe fn download_on<T: Copy>(
        &self,
        stream: Option<&Arc<CudaStream>>,
        dst: *mut T,
        len: usize,
        src: sys::CUdeviceptr,
        uses: &[Use<'_>],
    ) -> Result<(), Error> {
        self.outside_capture("copying from the GPU")?;
        if len == 0 {
            return Ok(());
        }
        self.bind()?;
        let stream = stream.unwrap_or(&self.stream);
        self.enter(stream, uses)?;
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.cu_stream()) }
            .result()
            .map_err(|e| self.error("copying from the GPU", e))
    }

    /// Copies `bytes` from device memory `src` to `dst`, ordered by the uses `uses` of the two.
    pub(crate) fn copy(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        uses: &[Use<'_>],
    ) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        self.outside_capture("copying on the GPU")?;
        self.bind()?;
        self.enter(&self.stream, uses)?;
        // SAFETY: both regions hold `bytes` bytes and are distinct allocations.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }
            .map_err(|e| self.error("copying on the GPU", e))
    }

    /// Copies `bytes` from `src` in the memory of the GPU `from` to `dst` in this one's, on
    /// this GPU's stream, ordered by the uses `uses` of the two arrays: straight between the
    /// GPUs where they reach each other's memory, else staged by the driver through the host.
    pub(crate) fn copy_from_peer(
        &self,
        dst: sys::CUdeviceptr,
        from: &CudaDevice,
        src: sys::CUdeviceptr,
        bytes: usize,
        uses: &[Use<'_>],
    ) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        self.outside_capture("copying between GPUs")?;
        from.outside_capture("copying between GPUs")?;
        self.bind()?;
        self.reach(from);
        self.enter(&self.stream, uses)?;
        // Ordering may have made the other GPU's context current.
        self.bind()?;
        let (to_ctx, from_ctx) = (self.ctx.cu_ctx(), from.ctx.cu_ctx());
        let s = self.stream.cu_stream();
        // SAFETY: `dst` holds `bytes` in this context and `src` in `from`'s; the stream waits
        // for the work that writes `src` or uses `dst` (`enter`).
        unsafe { sys::cuMemcpyPeerAsync(dst, to_ctx, src, from_ctx, bytes, s) }
            .result()
            .map_err(|e| self.error("copying between GPUs", e))
    }

    /// Lets this GPU's context at `peer`'s memory where the two GPUs allow it (once per pair);
    /// copies between them then go straight over the link. Where they cannot, copies still
    /// work, staged through the host, so a refusal is only remembered.
    fn reach(&self, peer: &CudaDevice) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        if peer.ordinal == self.ordinal || peers.contains_key(&peer.ordinal) {
            return;
        }
        let mut can = 0;
        // SAFETY: two device handles of the driver; `can` is written.
        let allowed = unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, self.ctx.cu_device(), peer.ctx.cu_device())
        }
        .result()
        .is_ok_and(|()| can == 1)
            // SAFETY: this context is current (the caller bound it), and `peer`'s is live.
            && unsafe { sys::cuCtxEnablePeerAccess(peer.ctx.cu_ctx(), 0) }
                .result()
                .is_ok();
        peers.insert(peer.ordinal, allowed);
    }

    /// The entry point `kernel` of the module `ptx`, loading the module on first use.
    fn function(&self, kernel: &'static str, ptx: &'static str) -> Result<sys::CUfunction, Error> {
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        let module = self.module(&mut modules, &format!("kernel `{kernel}`"), ptx)?;
        if let Some(&f) = module.functions.get(kernel) {
            return Ok(f);
        }
        let name = CString::new(kernel).expect("kernel names are identifiers");
        // SAFETY: `module.module` is a live module of this context.
        let f = unsafe { result::module::get_function(module.module, name) }
            .map_err(|e| self.error(&format!("finding kernel `{kernel}` in its PTX module"), e))?;
        module.functions.insert(kernel, f);
        Ok(f)
    }

    /// The function `kernel` of the module `ptx`, allowed `shared` bytes of dynamic shared
    /// memory: past 48 KiB, a GPU launches a function only up to what it was allowed
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), which is raised here once per size.
    /// The kernels' static shared arrays live in the dynamic window too, so `shared` is a
    /// block's whole shared memory.
    fn function_with_shared(
        &self,
        kernel: &'static str,
        ptx: &'static str,
        shared: usize,
    ) -> Result<sys::CUfunction, Error> {
        let f = self.function(kernel, ptx)?;
        if shared <= OPT_IN_ABOVE {
            return Ok(f);
        }
        let mut opted = self.opted_in.lock().unwrap_or_else(|p| p.into_inner());
        let allowed = opted.entry(f as usize).or_insert(0);
        if *allowed < shared {
            let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            // SAFETY: `f` is a live function of this context; the launch was validated against
            // the device's opt-in limit.
            unsafe { result::function::set_function_attribute(f, attr, shared as i32) }.map_err(
                |e| {
                    self.error(
                        &format!("allowing kernel `{kernel}` {shared} bytes of shared memory"),
                        e,
                    )
                },
            )?;
            *allowed = shared;
        }
        Ok(f)
    }

    /// The device address and size of the module-level variable `symbol` of the module `ptx`
    /// (declared as `name`), loading the module on first use.
    pub(crate) fn global(
        &self,
        name: &str,
        symbol: &str,
        ptx: &'static str,
    ) -> Result<(sys::CUdeviceptr, usize), Error> {
        self.bind()?;
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        let module = self.module(&mut modules, &format!("module array `{name}`"), ptx)?;
        let c_symbol = CString::new(symbol).expect("symbols are identifiers");
        // SAFETY: `module.module` is a live module of this context.
        unsafe { result::module::get_global(module.module, c_symbol) }.map_err(|e| {
            self.error(
                &format!("finding module array `{name}` in its PTX module"),
                e,
            )
        })
    }

    /// The loaded module of the PTX text `ptx` (for `what`, in messages), loading it on first
    /// use. Modules are found by the text's address, and a text at a new address by its
    /// contents: two copies of one crate's PTX must be one module, or a module array set in one
    /// would not be what the kernels of the other read.
    fn module<'m>(
        &self,
        modules: &'m mut Modules,
        what: &str,
        ptx: &'static str,
    ) -> Result<&'m mut Module, Error> {
        let index = match modules.by_address.get(&(ptx.as_ptr() as usize)) {
            Some(&index) => index,
            None => {
                let index = match modules.loaded.iter().position(|m| m.ptx == ptx) {
                    Some(index) => index,
                    None => {
                        modules.loaded.push(self.load(what, ptx)?);
                        modules.loaded.len() - 1
                    }
                };
                modules.by_address.insert(ptx.as_ptr() as usize, index);
                index
            }
        };
        Ok(&mut modules.loaded[index])
    }

    /// Loads the PTX text `ptx` (for `what`, in messages) into this context: as it is, or,
    /// where it carries foreign device code, linked with it (see [`link`]).
    fn load(&self, what: &str, ptx: &'static str) -> Result<Module, Error> {
        let pieces = link::Pieces::of(ptx);
        let (major, minor) = self.compute_capability();
        let cubin = match jit_only() {
            true => None,
            false => pieces.cubin_for(major, minor),
        };
        let image = if pieces.is_linked() {
            self.linked_image(&pieces)?
        } else if let Some(cubin) = cubin {
            cubin
        } else {
            CString::new(pieces.main)
                .map_err(|_| Error::Cuda {
                    op: format!("loading the PTX of {what}"),
                    message: "the PTX text holds a NUL byte".into(),
                })?
                .into_bytes_with_nul()
        };
        // SAFETY: `image` is a NUL-terminated PTX module, a linked image, or a cubin for this
        // GPU's architecture; the driver compiles or loads it.
        let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(|e| {
                let refused = is_refused_ptx(e.0);
                let mut err = self.error(&format!("loading the PTX module of {what}"), e);
                if let (true, Error::Cuda { message, .. }) = (refused, &mut err) {
                    message.truncate(message.trim_end_matches('.').len());
                    message.push_str(&self.load_advice(pieces.main));
                }
                err
            })?;
        Ok(Module {
            module,
            ptx,
            functions: HashMap::new(),
        })
    }

    /// The image of a module with foreign pieces: its CUDA C++ compiled by NVRTC for this GPU,
    /// and every piece joined by the driver's linker.
    fn linked_image(&self, pieces: &link::Pieces) -> Result<Vec<u8>, Error> {
        let (major, minor) = self.compute_capability();
        let arch = format!("compute_{major}{minor}");
        let compiled = pieces
            .cuda
            .iter()
            .map(|piece| {
                Ok((
                    piece.name,
                    link::nvrtc_compile(*piece, &pieces.headers, &arch)?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let mut inputs = vec![("the crate's PTX", pieces.main)];
        inputs.extend(pieces.ptx.iter().map(|p| (p.name, p.text)));
        inputs.extend(compiled.iter().map(|(name, ptx)| (*name, ptx.as_str())));
        link::link(&inputs).map_err(|message| {
            let names: Vec<&str> = inputs[1..].iter().map(|(name, _)| *name).collect();
            Error::ForeignCode {
                file: names.join("`, `"),
                message,
            }
        })
    }

    /// This GPU's compute capability (major, minor).
    fn compute_capability(&self) -> (u32, u32) {
        use sys::CUdevice_attribute::*;
        let cc = |attr| self.ctx.attribute(attr).map_or(0, |v| v as u32);
        (
            cc(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            cc(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )
    }

    /// What to do about a module the driver refused for its PTX: PTX for a newer GPU than this one must be
    /// built for this one; PTX of an ISA newer than the driver needs a newer driver.
    fn load_advice(&self, ptx: &str) -> String {
        let directive = |name: &str| {
            ptx.lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .map(str::trim)
        };
        let target = directive(".target ")
            .and_then(|t| t.split(',').next())
            .and_then(|t| t.trim().strip_prefix("sm_"))
            .and_then(|t| {
                t.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                    .parse::<u32>()
                    .ok()
            });
        let gpu = match self.compute_capability() {
            (0, _) => None,
            (major, minor) => Some(10 * major + minor),
        };
        let isa = directive(".version ").unwrap_or("?");
        match (target, gpu) {
            (Some(t), Some(g)) if t > g => format!(
                "; the PTX is for sm_{t} and this GPU is sm_{g}: build it for this GPU with \
                 KERNEL_PTX_ARCH=sm_{g}"
            ),
            (Some(t), _) => format!(
                "; the PTX (ISA {isa}, sm_{t}) suits this GPU, so the driver may be older than \
                 PTX ISA {isa}: update the NVIDIA driver, or build for an older GPU with \
                 KERNEL_PTX_ARCH"
            ),
            (None, _) => "; the PTX names no `.target`".into(),
        }
    }

    /// The block size the driver's occupancy calculator gives `kernel` (of the module `ptx`)
    /// without dynamic shared memory: the size that keeps the most threads resident.
    pub(crate) fn block_size(&self, kernel: &'static str, ptx: &'static str) -> Result<u32, Error> {
        self.bind()?;
        let f = self.function(kernel, ptx)?;
        // SAFETY: `f` is a live function of this context; no dynamic shared memory, no limit.
        let (_, block) = unsafe { result::occupancy::max_potential_block_size(f, None, 0, 0) }
            .map_err(|e| self.error(&format!("asking the block size of kernel `{kernel}`"), e))?;
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
        config: &LaunchConfig,
        shared_bytes: usize,
        params: &mut GpuParams<'_>,
        cooperative: bool,
    ) -> Result<(), Error> {
        self.bind()?;
        let on = config.stream.as_ref().and_then(|s| s.cuda());
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
        if captured.is_none() {
            self.enter(stream, &params.uses)?;
        }
        *self.last_kernel.lock().unwrap_or_else(|p| p.into_inner()) = Some(kernel);
        let (g, b) = (config.grid, config.block);
        let launch = match cooperative {
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

    /// `bytes` of page-locked host memory (`cuMemHostAlloc`), which copies to and from the GPU
    /// reach at full speed and without staging.
    pub(crate) fn alloc_host(&self, bytes: usize) -> Result<*mut c_void, Error> {
        self.outside_capture("allocating page-locked host memory")?;
        self.bind()?;
        // SAFETY: a plain allocation; the caller frees it with `free_host`.
        unsafe { result::malloc_host(bytes, 0) }.map_err(|e| match e.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory {
                place: format!("page-locked host memory for CUDA device {}", self.ordinal),
                bytes,
            },
            _ => self.error(
                &format!("allocating {bytes} bytes of page-locked host memory"),
                e,
            ),
        })
    }

    /// `bytes` of page-locked host memory mapped into the GPU's address space
    /// (`CU_MEMHOSTALLOC_DEVICEMAP`), as its host address and its device address: kernels read
    /// and write it in place, over the bus. Freed with [`free_host`](Self::free_host).
    pub(crate) fn alloc_mapped(&self, bytes: usize) -> Result<(*mut c_void, u64), Error> {
        use sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
        self.outside_capture("allocating mapped host memory")?;
        self.bind()?;
        if self
            .ctx
            .attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
            .ok()
            != Some(1)
        {
            return Err(Error::Cuda {
                op: "allocating mapped host memory".into(),
                message: format!(
                    "{} cannot map host memory: use Device::pinned and copies",
                    self.name
                ),
            });
        }
        // SAFETY: a plain allocation; it is freed with `free_host` below or by the caller.
        let host =
            unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }.map_err(|e| {
                match e.0 {
                    sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory {
                        place: format!("mapped host memory for CUDA device {}", self.ordinal),
                        bytes,
                    },
                    _ => self.error(
                        &format!("allocating {bytes} bytes of mapped host memory"),
                        e,
                    ),
                }
            })?;
        let mut device = 0;
        // SAFETY: `host` is mapped page-locked memory of this context; flags must be 0.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }.result();
        match mapped {
            Ok(()) => Ok((host, device)),
            Err(e) => {
                self.free_host(host);
                Err(self.error("finding the device address of mapped host memory", e))
            }
        }
    }

    /// Frees memory from [`alloc_host`](Self::alloc_host), whose transfers have finished.
    pub(crate) fn free_host(&self, ptr: *mut c_void) {
        if ptr.is_null() || self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` came from `alloc_host`, and no transfer uses it any more.
        let _ = unsafe { result::free_host(ptr) };
    }

    /// Records an event on the device's stream after all the work queued on the device so
    /// far, its user streams' included.
    pub(crate) fn record_event(&self) -> Result<cudarc::driver::CudaEvent, Error> {
        self.barrier()?;
        self.stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| self.error("recording an event", e))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // The barrier orders the device's stream after every user stream's work.
        if self.barrier().is_ok() {
            let _ = self.stream.synchronize();
            for m in self
                .modules
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .loaded
                .iter()
            {
                // SAFETY: no launch can use the module any more: the device is being dropped.
                let _ = unsafe { result::module::unload(m.module) };
            }
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
