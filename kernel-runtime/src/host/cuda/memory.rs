//! A GPU's memory: device memory from its stream-ordered pool, page-locked and mapped host
//! memory, and the copies between them and between two GPUs, each ordered after the work it
//! depends on ([`order`](super::super::order)).

use super::{CudaDevice, Entered};
use crate::host::error::Error;
use crate::host::order::{Access, Bytes, Use, Users};
use cudarc::driver::{result, sys, CudaContext, CudaStream, DriverError};
use std::ffi::c_void;
use std::sync::Arc;

/// Makes the GPU's stream-ordered memory pool, which every allocation of this backend draws on,
/// keep the memory freed into it for later allocations.
///
/// By default the pool hands all its unused memory back to the driver at every wait for the GPU
/// (a copy to the host, an event's time), so a loop that waits and allocates on each turn (as
/// every pass of a quicksort does) has the driver map fresh memory each time, while the GPU
/// idles. CuPy's and PyTorch's allocators keep freed memory the same way; dropping the device
/// gives it back ([`CudaDevice`]'s `Drop`).
pub(super) fn keep_freed_memory(ctx: &CudaContext) -> Result<(), DriverError> {
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

/// One side of a strided copy ([`CudaDevice::copy_pitched`]): its first byte, in the GPU's
/// memory or the host's, and the bytes from one row's start to the next's.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) enum Pitched {
    Device(sys::CUdeviceptr, usize),
    Host(*mut u8, usize),
}

#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl Pitched {
    /// `CUDA_MEMCPY2D`'s fields for this side: memory type, host address, device address and
    /// pitch.
    fn parts(self) -> (sys::CUmemorytype, *mut c_void, sys::CUdeviceptr, usize) {
        match self {
            Pitched::Device(at, pitch) => {
                let kind = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
                (kind, std::ptr::null_mut(), at, pitch)
            }
            Pitched::Host(at, pitch) => {
                (sys::CUmemorytype::CU_MEMORYTYPE_HOST, at.cast(), 0, pitch)
            }
        }
    }

    fn is_host(self) -> bool {
        matches!(self, Pitched::Host(..))
    }
}

impl CudaDevice {
    /// `bytes` of device memory, zeroed when `zeroed` (else for the caller to overwrite whole
    /// before any read), or a null pointer for none.
    pub(crate) fn alloc(&self, bytes: usize, zeroed: bool) -> Result<sys::CUdeviceptr, Error> {
        if bytes == 0 {
            return Ok(0);
        }
        self.outside_capture("allocating device memory")?;
        self.bind()?;
        let s = self.stream.cu_stream();
        let place = || format!("CUDA device {} ({})", self.ordinal, self.name);
        let failed = |e| self.allocation_error(e, bytes, "", place);
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
            self.mark_own_work();
            Ok(ptr)
        }
    }

    /// Frees memory from [`alloc`](Self::alloc), whose users are `users`, after the work
    /// queued on it.
    pub(crate) fn free(&self, ptr: sys::CUdeviceptr, users: &Users) {
        if ptr == 0 || self.defer_free_in_capture(ptr) || self.bind().is_err() {
            return;
        }
        let Ok(_entered) = self.enter(&self.stream, &[(users.whole(), Access::Write)]) else {
            return;
        };
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
                &[(users.span(Bytes::at(dst, size_of_val(src))), Access::Write)],
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
        let stream = self.copy_stream(stream, uses)?;
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.cu_stream()) }
            .result()
            .map_err(|e| self.error("copying to the GPU", e))
    }

    /// Sets each of the `count` elements of `value.len()` bytes at `dst` (whose users are
    /// `users`) to the bytes `value`: one memset where every byte is the same or an element is
    /// one word, else one memset with a pitch of an element for each word of it.
    pub(crate) fn fill(
        &self,
        dst: sys::CUdeviceptr,
        users: &Users,
        value: &[u8],
        count: usize,
    ) -> Result<(), Error> {
        let size = value.len();
        if count == 0 || size == 0 {
            return Ok(());
        }
        self.outside_capture("filling device memory")?;
        let s = self
            .copy_stream(
                None,
                &[(users.span(Bytes::at(dst, count * size)), Access::Write)],
            )?
            .cu_stream();
        // Every byte alike: one byte's memset over them all. Else the widest word an element
        // (and its address) is made of: one memset of each word of the element, an element
        // apart, or a plain one where the element is one word.
        let (word, pattern) = match value.iter().all(|&b| b == value[0]) {
            true => (1, &value[..1]),
            false => {
                let fits = |w: usize| size.is_multiple_of(w) && dst.is_multiple_of(w as u64);
                ([4, 2, 1].into_iter().find(|&w| fits(w)).unwrap_or(1), value)
            }
        };
        let (whole, plain) = (count * size / word, pattern.len() == word);
        for (k, w) in pattern.chunks(word).enumerate() {
            let at = dst + (k * word) as u64;
            // SAFETY: `dst` holds `count` elements of `size` bytes, ordered on `s` after their
            // users; each memset writes word `k` of every element (or every word, all alike).
            let set = unsafe {
                match (word, plain) {
                    (1, true) => sys::cuMemsetD8Async(at, w[0], whole, s),
                    (2, true) => {
                        sys::cuMemsetD16Async(at, u16::from_ne_bytes([w[0], w[1]]), whole, s)
                    }
                    (4, true) => {
                        let v = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]);
                        sys::cuMemsetD32Async(at, v, whole, s)
                    }
                    (1, false) => sys::cuMemsetD2D8Async(at, size, w[0], 1, count, s),
                    (2, false) => sys::cuMemsetD2D16Async(
                        at,
                        size,
                        u16::from_ne_bytes([w[0], w[1]]),
                        1,
                        count,
                        s,
                    ),
                    _ => {
                        let v = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]);
                        sys::cuMemsetD2D32Async(at, size, v, 1, count, s)
                    }
                }
            };
            set.result()
                .map_err(|e| self.error("filling device memory", e))?;
        }
        Ok(())
    }

    /// Copies device memory at `src` (whose users are `users`) into `dst`, after the work it
    /// waits for.
    pub(crate) fn download<T: Copy>(
        &self,
        dst: &mut [T],
        src: sys::CUdeviceptr,
        users: &Users,
    ) -> Result<(), Error> {
        let uses = [(users.span(Bytes::at(src, size_of_val(dst))), Access::Read)];
        let (to, len) = (dst.as_mut_ptr(), dst.len());
        // SAFETY: `dst` holds `len` elements, borrowed until the stream is waited for below.
        unsafe { self.download_on(None, to, len, src, &uses) }?;
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
        let stream = self.copy_stream(stream, uses)?;
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.cu_stream()) }
            .result()
            .map_err(|e| self.error("copying from the GPU", e))
    }

    /// Copies `height` rows of `width` bytes from `src` to `dst` (`cuMemcpy2D`), on the
    /// device's stream after the work the uses `uses` conflict with; where either side is host
    /// memory, waits for the copy.
    ///
    /// # Safety
    /// Each side holds `height` rows of `width` bytes at its pitch, the two apart; host memory
    /// stays allocated for the call.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) unsafe fn copy_pitched(
        &self,
        dst: Pitched,
        src: Pitched,
        (width, height): (usize, usize),
        uses: &[Use<'_>],
    ) -> Result<(), Error> {
        if width == 0 || height == 0 {
            return Ok(());
        }
        self.outside_capture("a strided copy")?;
        let stream = self.copy_stream(None, uses)?;
        let (src_kind, src_host, src_device, src_pitch) = src.parts();
        let (dst_kind, dst_host, dst_device, dst_pitch) = dst.parts();
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src_kind,
            srcHost: src_host,
            srcDevice: src_device,
            srcArray: std::ptr::null_mut(),
            srcPitch: src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_kind,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstArray: std::ptr::null_mut(),
            dstPitch: dst_pitch,
            WidthInBytes: width,
            Height: height,
        };
        // SAFETY: the caller's contract; host memory is waited for below.
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }
            .result()
            .map_err(|e| self.error("a strided copy", e))?;
        match src.is_host() || dst.is_host() {
            true => self.wait_own_stream(),
            false => Ok(()),
        }
    }

    /// Binds the context and orders `stream` (the device's own where none) for a copy, or
    /// another library's work ([`queue`](CudaDevice::queue)), with the array uses `uses`: the
    /// stream to queue it on.
    pub(super) fn copy_stream<'s>(
        &'s self,
        stream: Option<&'s Arc<CudaStream>>,
        uses: &[Use<'_>],
    ) -> Result<Entered<'s>, Error> {
        self.bind()?;
        self.enter(stream.unwrap_or(&self.stream), uses)
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
        let stream = self.copy_stream(None, uses)?;
        // SAFETY: both regions hold `bytes` bytes and do not overlap: the destination is borrowed
        // uniquely, so no source that shares a byte with it can be borrowed meanwhile.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
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
        let _entered = self.enter(&self.stream, uses)?;
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

    /// `bytes` of page-locked host memory (`cuMemHostAlloc`), which copies to and from the GPU
    /// reach at full speed and without staging.
    pub(crate) fn alloc_host(&self, bytes: usize) -> Result<*mut c_void, Error> {
        self.outside_capture("allocating page-locked host memory")?;
        self.bind()?;
        // SAFETY: a plain allocation; the caller frees it with `free_host`.
        unsafe { result::malloc_host(bytes, 0) }.map_err(|e| {
            let place = || format!("page-locked host memory for CUDA device {}", self.ordinal);
            self.allocation_error(e, bytes, " of page-locked host memory", place)
        })
    }

    /// `bytes` of page-locked host memory mapped into the GPU's address space
    /// (`CU_MEMHOSTALLOC_DEVICEMAP`), as its host address and its device address: kernels read
    /// and write it in place, over the bus. Freed with [`free_host`](Self::free_host).
    pub(crate) fn alloc_mapped(&self, bytes: usize) -> Result<(*mut c_void, u64), Error> {
        self.can_map("allocating mapped host memory")?;
        // SAFETY: a plain allocation; it is freed with `free_host` below or by the caller.
        let host =
            unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }.map_err(|e| {
                let place = || format!("mapped host memory for CUDA device {}", self.ordinal);
                self.allocation_error(e, bytes, " of mapped host memory", place)
            })?;
        // SAFETY: `host` is mapped page-locked memory of this context.
        match unsafe { self.device_address(host) } {
            Ok(device) => Ok((host, device)),
            Err(e) => {
                self.free_host(host);
                Err(e)
            }
        }
    }

    /// Page-locks the host's own `bytes` at `ptr` and maps them for this GPU's kernels
    /// (`cuMemHostRegister` with `CU_MEMHOSTREGISTER_DEVICEMAP`): their device address.
    /// Unlocked with [`unregister_host`](Self::unregister_host).
    ///
    /// # Safety
    /// The `bytes` at `ptr` must stay allocated until they are unlocked, and the host must not
    /// use them while a kernel may.
    pub(crate) unsafe fn map_host(&self, ptr: *mut c_void, bytes: usize) -> Result<u64, Error> {
        self.can_map("mapping host memory")?;
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemHostRegister_v2(ptr, bytes, sys::CU_MEMHOSTREGISTER_DEVICEMAP) }
            .result()
            .map_err(|e| self.error("mapping host memory (cuMemHostRegister)", e))?;
        // SAFETY: `ptr` was just registered as mapped memory of this context.
        unsafe { self.device_address(ptr) }.inspect_err(|_| self.unregister_host(ptr))
    }

    /// Whether this GPU maps host memory (`op`, what for, names it in the error), in a
    /// current context outside a capture.
    fn can_map(&self, op: &str) -> Result<(), Error> {
        use sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
        self.outside_capture(op)?;
        self.bind()?;
        let can = self.ctx.attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
        if can.ok() != Some(1) {
            return Err(Error::Cuda {
                op: op.into(),
                message: format!(
                    "{} cannot map host memory: use Device::pinned and copies",
                    self.name
                ),
            });
        }
        Ok(())
    }

    /// The device address of mapped page-locked memory at `host`.
    ///
    /// # Safety
    /// `host` must be mapped page-locked memory of this context.
    unsafe fn device_address(&self, host: *mut c_void) -> Result<u64, Error> {
        let mut device = 0;
        // SAFETY: the caller's contract; the flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }
            .result()
            .map_err(|e| self.error("finding the device address of mapped host memory", e))?;
        Ok(device)
    }

    /// `bytes` of managed memory (`cuMemAllocManaged`, attached to every stream): one address
    /// that the GPU's kernels and the host both use, the driver moving its pages to where they
    /// are used. Only on a GPU where the host may touch managed memory while kernels run
    /// (`CONCURRENT_MANAGED_ACCESS`): elsewhere a host access during any kernel faults the
    /// process, which a safe view must not risk. Freed with
    /// [`free_managed`](Self::free_managed).
    pub(crate) fn alloc_managed(&self, bytes: usize) -> Result<u64, Error> {
        use sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS;
        self.outside_capture("allocating managed memory")?;
        self.bind()?;
        let concurrent = self
            .ctx
            .attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
            .ok();
        if concurrent != Some(1) {
            return Err(Error::Cuda {
                op: "allocating managed memory".into(),
                message: format!(
                    "{} cannot share managed memory with the host while kernels run: use \
                     Device::mapped, or device arrays and copies",
                    self.name
                ),
            });
        }
        let global = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL;
        // SAFETY: a plain allocation; the caller frees it with `free_managed`.
        unsafe { result::malloc_managed(bytes, global) }.map_err(|e| {
            let place = || format!("managed memory of CUDA device {}", self.ordinal);
            self.allocation_error(e, bytes, " of managed memory", place)
        })
    }

    /// The error of an allocation of `bytes` (`kind`: ` of managed memory`, ...) that failed
    /// with `e`: [`Error::OutOfMemory`] at `place` where the driver has no more, else the
    /// driver's error.
    fn allocation_error(
        &self,
        e: DriverError,
        bytes: usize,
        kind: &str,
        place: impl FnOnce() -> String,
    ) -> Error {
        match e.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory {
                place: place(),
                bytes,
            },
            _ => self.error(&format!("allocating {bytes} bytes{kind}"), e),
        }
    }

    /// Frees memory from [`alloc_managed`](Self::alloc_managed), which no queued work uses.
    pub(crate) fn free_managed(&self, ptr: sys::CUdeviceptr) {
        if ptr == 0 || self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` came from `alloc_managed`, and no work uses it any more. A failure (a
        // context already lost) leaks the memory with its context.
        let _ = unsafe { result::free_sync(ptr) };
    }

    /// Page-locks the `bytes` of host memory at `ptr` in the GPU's context
    /// (`cuMemHostRegister`), so that copies to and from it run asynchronously at the bus's
    /// speed; [`unregister_host`](Self::unregister_host) undoes it.
    ///
    /// # Safety
    /// `ptr` holds `bytes` bytes, which stay allocated until they are unregistered.
    pub(crate) unsafe fn register_host(&self, ptr: *mut c_void, bytes: usize) -> Result<(), Error> {
        self.outside_capture("page-locking host memory")?;
        self.bind()?;
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemHostRegister_v2(ptr, bytes, 0) }
            .result()
            .map_err(|e| self.error("page-locking host memory (cuMemHostRegister)", e))
    }

    /// Unlocks memory from [`register_host`](Self::register_host), which no transfer uses any
    /// more. A failure (a context already lost) leaves nothing to undo.
    pub(crate) fn unregister_host(&self, ptr: *mut c_void) {
        if ptr.is_null() || self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` was registered by `register_host` and is unregistered once.
        let _ = unsafe { sys::cuMemHostUnregister(ptr) };
    }

    /// Frees memory from [`alloc_host`](Self::alloc_host), whose transfers have finished.
    pub(crate) fn free_host(&self, ptr: *mut c_void) {
        if ptr.is_null() || self.bind().is_err() {
            return;
        }
        // SAFETY: `ptr` came from `alloc_host`, and no transfer uses it any more.
        let _ = unsafe { result::free_host(ptr) };
    }
}
