//! A stand-in for the CUDA driver library, `libcuda.so`, to test the CUDA backend's host side on
//! machines without a GPU.
//!
//! It implements the driver functions the backend calls, with the driver's rules: `cuInit`
//! first, a current context for every call that needs one, live handles, copies within
//! allocations, launches within the GPU's limits, PTX for a GPU no newer than this one and
//! cubins for its architecture alone, each kernel parameter read with the size its PTX entry
//! (or the cubin's attributes) declares. A call that breaks a rule
//! returns the driver's error code and says why on stderr. Device memory is host memory (new
//! memory holds `0xCD` bytes); kernels are not run. A launch whose pointer parameter is not in
//! the context's memory faults the context, as the kernel would: every later call fails.
//!
//! The environment sets it up: `FAKE_CUDA_LOG=FILE` (a line per launch, allocation, free, copy
//! and wait), `FAKE_CUDA_DEVICES=N`, `FAKE_CUDA_CC=XY` (compute capability, default 90),
//! `FAKE_CUDA_PTX_ISA=XY` (the newest PTX ISA the driver takes, default 90),
//! `FAKE_CUDA_NO_MEMORY_POOLS=1`, `FAKE_CUDA_NO_PEER=1`, `FAKE_CUDA_FAIL=FUNCTION=CODE[@N]` (the `N`th call, or every
//! call, fails), `FAKE_CUDA_TRAP=KERNEL` (launches of `KERNEL` fault). Tests load it by putting
//! a directory with `libcuda.so` linked to this library first on `LD_LIBRARY_PATH`; a link
//! `libnccl.so` to it there makes it NCCL too ([`nccl`]), sharing the fake GPUs' memory.

// The functions are the driver's, with its names, and the driver API's documentation is their
// contract.
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod cubin;
mod driver;
pub mod nccl;
mod pitched;
pub mod ptx;

use driver::{call, fail, CuResult, Failure, CODES, INVALID_VALUE};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::OnceLock;

type Handle = *mut c_void;
type DevicePtr = u64;

/// Writes `value` through an out-pointer of the caller.
fn put<T>(out: *mut T, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return fail(INVALID_VALUE, "a null out-pointer");
    }
    // SAFETY: the driver API's contract: a non-null out-pointer points at storage for a `T`.
    unsafe { out.write(value) };
    Ok(())
}

fn handle(h: Handle) -> usize {
    h as usize
}

#[no_mangle]
pub unsafe extern "C" fn cuInit(_flags: c_uint) -> CuResult {
    call("cuInit", |d| {
        d.init();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(code: CuResult, out: *mut *const c_char) -> CuResult {
    error_text("cuGetErrorName", code, out, true)
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(code: CuResult, out: *mut *const c_char) -> CuResult {
    error_text("cuGetErrorString", code, out, false)
}

/// The name (`name`) or the description of `code`, as a C string that lives as long as the
/// process.
fn error_text(
    function: &'static str,
    code: CuResult,
    out: *mut *const c_char,
    name: bool,
) -> CuResult {
    type Texts = Vec<(CString, CString)>;
    static TEXTS: OnceLock<Texts> = OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        let c_string = |s: &str| CString::new(s).expect("no NUL in the texts");
        CODES
            .iter()
            .map(|&(_, n, t)| (c_string(n), c_string(t)))
            .collect()
    });
    call(function, |_| {
        let Some(i) = CODES.iter().position(|&(c, ..)| c == code) else {
            return fail(INVALID_VALUE, format!("unknown result code {code}"));
        };
        let (n, t) = &texts[i];
        put(out, if name { n.as_ptr() } else { t.as_ptr() })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CuResult {
    call("cuDeviceGetCount", |d| put(count, d.device_count()))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CuResult {
    call("cuDeviceGet", |d| put(device, d.device(ordinal)?))
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> CuResult {
    call("cuDeviceGetName", |d| {
        d.device(device)?;
        let text = driver::NAME.as_bytes();
        if name.is_null() || len <= text.len() as c_int {
            return fail(INVALID_VALUE, "no room for the name");
        }
        // SAFETY: `name` has room for `len` bytes, more than the name and its NUL.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), name.cast::<u8>(), text.len());
            *name.add(text.len()) = 0;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_uint,
    device: c_int,
) -> CuResult {
    call("cuDeviceGetAttribute", |d| {
        d.device(device)?;
        match d.attribute(attribute) {
            Some(v) => put(value, v),
            None => fail(
                INVALID_VALUE,
                format!("attribute {attribute} is not known to this driver"),
            ),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, device: c_int) -> CuResult {
    call("cuDeviceTotalMem_v2", |d| {
        d.device(device)?;
        put(bytes, driver::MEMORY_BYTES)
    })
}

/// The fake GPU's UUID: its ordinal in the last byte, the bytes before it counting up.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut [u8; 16], device: c_int) -> CuResult {
    call("cuDeviceGetUuid", |d| {
        d.device(device)?;
        let mut bytes: [u8; 16] = std::array::from_fn(|i| 0x10 + i as u8);
        bytes[15] = device as u8;
        put(uuid, bytes)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut Handle, device: c_int) -> CuResult {
    call("cuDevicePrimaryCtxRetain", |d| {
        put(ctx, d.retain_primary(device)? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: c_int) -> CuResult {
    call("cuDevicePrimaryCtxRelease_v2", |d| {
        d.release_primary(device)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CuResult {
    call("cuDriverGetVersion", |d| put(version, d.version()))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut Handle) -> CuResult {
    call("cuCtxGetCurrent", |d| {
        put(ctx, d.current_handle() as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: Handle) -> CuResult {
    call("cuCtxSetCurrent", |d| d.set_current(handle(ctx)))
}

/// The one memory pool of every device: its handle is the device's ordinal plus one.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetDefaultMemPool(pool: *mut Handle, device: c_int) -> CuResult {
    call("cuDeviceGetDefaultMemPool", |d| {
        d.device(device)?;
        d.memory_pools()?;
        put(pool, (device as usize + 1) as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    pool: Handle,
    _attribute: c_uint,
    value: *mut c_void,
) -> CuResult {
    call("cuMemPoolSetAttribute", |d| {
        d.device(handle(pool) as c_int - 1)?;
        if value.is_null() {
            return fail(INVALID_VALUE, "a null attribute value");
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolTrimTo(pool: Handle, _keep: usize) -> CuResult {
    call("cuMemPoolTrimTo", |d| {
        d.device(handle(pool) as c_int - 1).map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut Handle, _flags: c_uint) -> CuResult {
    call("cuStreamCreate", |d| {
        put(stream, d.create_stream()? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: Handle) -> CuResult {
    call("cuStreamDestroy_v2", |d| d.destroy_stream(handle(stream)))
}

/// The context of a created stream, or the current one for the built-in streams 0 and 2.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx(stream: Handle, ctx: *mut Handle) -> CuResult {
    call("cuStreamGetCtx", |d| {
        put(ctx, d.stream_context(handle(stream))? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamSynchronize(stream: Handle) -> CuResult {
    call("cuStreamSynchronize", |d| {
        let s = d.stream(handle(stream))?;
        d.log(format_args!("sync stream={s:#x}"));
        Ok(())
    })
}

/// `CUstreamCallback`.
type StreamCallback = Option<unsafe extern "C" fn(Handle, CuResult, *mut c_void)>;

#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback(
    stream: Handle,
    callback: StreamCallback,
    data: *mut c_void,
    flags: c_uint,
) -> CuResult {
    let code = call("cuStreamAddCallback", |d| {
        let s = d.stream(handle(stream))?;
        if callback.is_none() || flags != 0 {
            return fail(INVALID_VALUE, "a null callback, or flags other than 0");
        }
        d.log(format_args!("callback stream={s:#x}"));
        Ok(())
    });
    if let (SUCCESS, Some(callback)) = (code, callback) {
        // The driver calls back on a thread of its own once the work queued before has
        // finished, which here it has; the stream's later work waits for the callback.
        let (stream, data) = (stream as usize, data as usize);
        // SAFETY: the driver API's contract: the callback takes the stream, a status and the
        // caller's data, and makes no driver call (none that needs this driver's lock).
        let called = std::thread::spawn(move || unsafe {
            callback(stream as Handle, SUCCESS, data as *mut c_void)
        });
        let _ = called.join();
    }
    code
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent(
    stream: Handle,
    event: Handle,
    _flags: c_uint,
) -> CuResult {
    call("cuStreamWaitEvent", |d| {
        d.wait_event(handle(stream), handle(event))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(event: *mut Handle, flags: c_uint) -> CuResult {
    call("cuEventCreate", |d| {
        put(event, d.create_event(flags)? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord(event: Handle, stream: Handle) -> CuResult {
    call("cuEventRecord", |d| {
        d.record_event(handle(event), handle(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventSynchronize(event: Handle) -> CuResult {
    call("cuEventSynchronize", |d| d.sync_event(handle(event)))
}

/// The fake runs each call to completion: a recorded event is always done.
#[no_mangle]
pub unsafe extern "C" fn cuEventQuery(event: Handle) -> CuResult {
    call("cuEventQuery", |d| d.sync_event(handle(event)))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: Handle, end: Handle) -> CuResult {
    call("cuEventElapsedTime", |d| {
        put(ms, d.elapsed(handle(start), handle(end))?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy_v2(event: Handle) -> CuResult {
    call("cuEventDestroy_v2", |d| d.destroy_event(handle(event)))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CuResult {
    call("cuMemGetInfo_v2", |d| {
        let (f, t) = d.memory_info()?;
        put(free, f)?;
        put(total, t)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut DevicePtr, bytes: usize) -> CuResult {
    call("cuMemAlloc_v2", |d| put(ptr, d.alloc(bytes, None)?))
}

/// `CU_MEM_ATTACH_GLOBAL` and `CU_MEM_ATTACH_HOST`: who may reach managed memory at first.
const ATTACH_FLAGS: [c_uint; 2] = [1, 2];

/// Managed memory is device memory here, which is host memory already.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocManaged(
    ptr: *mut DevicePtr,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    call("cuMemAllocManaged", |d| {
        if !ATTACH_FLAGS.contains(&flags) {
            return fail(INVALID_VALUE, format!("attach flags {flags}"));
        }
        put(ptr, d.alloc(bytes, None)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(ptr: DevicePtr) -> CuResult {
    call("cuMemFree_v2", |d| d.free(ptr, None))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    ptr: *mut DevicePtr,
    bytes: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemAllocAsync", |d| {
        let stream = d.stream(handle(stream))?;
        d.memory_pools()?;
        put(ptr, d.alloc(bytes, Some(stream))?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync(ptr: DevicePtr, stream: Handle) -> CuResult {
    call("cuMemFreeAsync", |d| {
        let stream = d.stream(handle(stream))?;
        d.memory_pools()?;
        d.free(ptr, Some(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD8Async(
    ptr: DevicePtr,
    byte: u8,
    bytes: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD8Async", |d| {
        let stream = d.stream(handle(stream))?;
        let at = d.range(ptr, bytes)?;
        // SAFETY: `range` checked that the bytes lie in one live allocation.
        unsafe { at.write_bytes(byte, bytes) };
        d.log(format_args!("memset {ptr:#x} {bytes} stream={stream:#x}"));
        Ok(())
    })
}

/// Sets `width` words `word` at the start of each of `height` rows `pitch` bytes apart from
/// `ptr`, on `stream`: the driver's 1-D (one row) and 2-D memsets of 1-, 2- and 4-byte words.
fn memset_rows(
    name: &'static str,
    (ptr, pitch): (DevicePtr, usize),
    word: &[u8],
    (width, height): (usize, usize),
    stream: Handle,
) -> CuResult {
    call(name, |d| {
        let stream = d.stream(handle(stream))?;
        let row = width * word.len();
        if !ptr.is_multiple_of(word.len() as u64) || (height > 1 && pitch < row) {
            return fail(
                INVALID_VALUE,
                format!("{ptr:#x} is not aligned to its {}-byte words, or the pitch {pitch} is less than a row of {row} bytes", word.len()),
            );
        }
        let span = match height {
            0 => 0,
            h => pitch * (h - 1) + row,
        };
        let at = d.range(ptr, span)?;
        for r in 0..height {
            for c in 0..width {
                // SAFETY: `range` checked that the span, which holds every row, lies in one live
                // allocation.
                unsafe {
                    at.add(r * pitch + c * word.len())
                        .copy_from_nonoverlapping(word.as_ptr(), word.len())
                };
            }
        }
        d.log(format_args!("memset {ptr:#x} {span} stream={stream:#x}"));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD16Async(
    ptr: DevicePtr,
    v: u16,
    n: usize,
    stream: Handle,
) -> CuResult {
    memset_rows(
        "cuMemsetD16Async",
        (ptr, 0),
        &v.to_ne_bytes(),
        (n, 1),
        stream,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD32Async(
    ptr: DevicePtr,
    v: u32,
    n: usize,
    stream: Handle,
) -> CuResult {
    memset_rows(
        "cuMemsetD32Async",
        (ptr, 0),
        &v.to_ne_bytes(),
        (n, 1),
        stream,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD2D8Async(
    ptr: DevicePtr,
    pitch: usize,
    v: u8,
    width: usize,
    height: usize,
    stream: Handle,
) -> CuResult {
    memset_rows(
        "cuMemsetD2D8Async",
        (ptr, pitch),
        &[v],
        (width, height),
        stream,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD2D16Async(
    ptr: DevicePtr,
    pitch: usize,
    v: u16,
    width: usize,
    height: usize,
    stream: Handle,
) -> CuResult {
    memset_rows(
        "cuMemsetD2D16Async",
        (ptr, pitch),
        &v.to_ne_bytes(),
        (width, height),
        stream,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuMemsetD2D32Async(
    ptr: DevicePtr,
    pitch: usize,
    v: u32,
    width: usize,
    height: usize,
    stream: Handle,
) -> CuResult {
    memset_rows(
        "cuMemsetD2D32Async",
        (ptr, pitch),
        &v.to_ne_bytes(),
        (width, height),
        stream,
    )
}

/// Copies `bytes` from `src` to `dst` on `stream`, each either device memory (checked) or host
/// memory.
///
/// # Safety
/// Host memory must hold `bytes` bytes.
unsafe fn copy(
    d: &mut driver::Driver,
    (what, stream): (&str, Handle),
    dst: Result<*mut u8, Failure>,
    src: Result<*const u8, Failure>,
    bytes: usize,
) -> Result<(), Failure> {
    let stream = d.stream(handle(stream))?;
    let (dst, src) = (dst?, src?);
    if bytes > 0 && (dst.is_null() || src.is_null()) {
        return fail(INVALID_VALUE, "a null host pointer");
    }
    // SAFETY: device memory was checked to hold `bytes`; host memory is the caller's contract.
    unsafe { std::ptr::copy(src, dst, bytes) };
    let pinned = d.page_locked(dst.cast_const(), bytes) || d.page_locked(src, bytes);
    d.log(format_args!(
        "{what} {bytes}{} stream={stream:#x} dst={:#x} src={:#x}",
        if pinned { " pinned" } else { "" },
        dst as usize,
        src as usize
    ));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: DevicePtr,
    src: *const c_void,
    bytes: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyHtoDAsync_v2", |d| {
        d.stream(handle(stream))?;
        let to = d.range(dst, bytes);
        // SAFETY: the driver API's contract: `src` holds `bytes` bytes.
        unsafe { copy(d, ("htod", stream), to, Ok(src.cast()), bytes) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: DevicePtr,
    bytes: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyDtoHAsync_v2", |d| {
        d.stream(handle(stream))?;
        let from = d.range(src, bytes).map(|p| p.cast_const());
        // SAFETY: the driver API's contract: `dst` has room for `bytes` bytes.
        unsafe { copy(d, ("dtoh", stream), Ok(dst.cast()), from, bytes) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: DevicePtr,
    src: DevicePtr,
    bytes: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyDtoDAsync_v2", |d| {
        d.stream(handle(stream))?;
        let (to, from) = (
            d.range(dst, bytes),
            d.range(src, bytes).map(|p| p.cast_const()),
        );
        // SAFETY: both ranges were checked to lie in device memory.
        unsafe { copy(d, ("dtod", stream), to, from, bytes) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: DevicePtr,
    dst_ctx: Handle,
    src: DevicePtr,
    src_ctx: Handle,
    bytes: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyPeerAsync", |d| {
        let (to, from) = ((dst, handle(dst_ctx)), (src, handle(src_ctx)));
        d.copy_peer(to, from, bytes, handle(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can: *mut c_int,
    device: c_int,
    peer: c_int,
) -> CuResult {
    call("cuDeviceCanAccessPeer", |d| {
        put(can, c_int::from(d.can_access_peer(device, peer)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer: Handle, _flags: c_uint) -> CuResult {
    call("cuCtxEnablePeerAccess", |d| {
        d.enable_peer_access(handle(peer))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CuResult {
    // SAFETY: the caller's, the driver API's contract.
    call("cuModuleLoadData", |d| unsafe {
        load_data(d, module, image)
    })
}

/// `CU_JIT_GENERATE_LINE_INFO`: the one option of a module load the fake reads.
const JIT_GENERATE_LINE_INFO: c_int = 13;

/// `cuModuleLoadData` with options: a load that keeps source lines is logged as such.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    count: c_uint,
    options: *mut c_int,
    values: *mut *mut c_void,
) -> CuResult {
    call("cuModuleLoadDataEx", |d| {
        // SAFETY: the caller's, the driver API's contract.
        unsafe { load_data(d, module, image) }?;
        for i in 0..count as usize {
            // SAFETY: the driver API's contract: `count` options and values.
            let (option, value) = unsafe { (*options.add(i), *values.add(i)) };
            if option == JIT_GENERATE_LINE_INFO && !value.is_null() {
                // SAFETY: `load_data` wrote the handle.
                let h = unsafe { *module } as usize;
                d.log(format_args!("lineinfo module={h:#x}"));
            }
        }
        Ok(())
    })
}

/// Loads the PTX or cubin `image` into the current context.
///
/// # Safety
/// The driver API's contract: `image` is a NUL-terminated PTX text or a cubin, `module` a
/// place for a handle.
unsafe fn load_data(
    d: &mut driver::Driver,
    module: *mut Handle,
    image: *const c_void,
) -> Result<(), Failure> {
    if image.is_null() {
        return fail(INVALID_VALUE, "a null image");
    }
    // SAFETY: the driver API's contract: a PTX image is a NUL-terminated string, and a
    // cubin's ELF header holds a NUL within its first bytes.
    let text = unsafe { CStr::from_ptr(image.cast()) };
    if cubin::is_elf(text.to_bytes()) {
        // SAFETY: the driver API's contract: an ELF image holds the bytes its headers
        // give, which `image_len` reads in order.
        let read = |n: usize| unsafe { std::slice::from_raw_parts(image.cast::<u8>(), n) }.to_vec();
        let len = cubin::image_len(read).map_err(|e| Failure(driver::INVALID_IMAGE, e))?;
        // SAFETY: as above.
        let bytes = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), len) };
        return put(module, d.load_cubin(bytes)? as Handle);
    }
    let text = text
        .to_str()
        .map_err(|_| Failure(driver::INVALID_PTX, "the PTX is not UTF-8".into()))?;
    put(module, d.load_module(text)? as Handle)
}

/// `CU_MEMHOSTALLOC_DEVICEMAP` (and `CU_MEMHOSTREGISTER_DEVICEMAP`, the same bit): the memory
/// is mapped into the device's address space.
const DEVICEMAP: c_uint = 2;

#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    out: *mut *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    call("cuMemHostAlloc", |d| {
        let mapped = flags & DEVICEMAP != 0;
        put(out, d.alloc_host(bytes, mapped)?.cast::<c_void>())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    out: *mut DevicePtr,
    ptr: *mut c_void,
    flags: c_uint,
) -> CuResult {
    call("cuMemHostGetDevicePointer_v2", |d| {
        if flags != 0 {
            return fail(INVALID_VALUE, "the flags must be 0");
        }
        put(out, d.mapped_device_pointer(ptr.cast())?)
    })
}

/// `cuProfilerStart` and `cuProfilerStop`: a line in the log, in a context.
fn profiler(name: &'static str, what: &str) -> CuResult {
    call(name, |d| {
        d.current()?;
        d.log(format_args!("profiler {what}"));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuProfilerStart() -> CuResult {
    profiler("cuProfilerStart", "start")
}

#[no_mangle]
pub unsafe extern "C" fn cuProfilerStop() -> CuResult {
    profiler("cuProfilerStop", "stop")
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    ptr: *mut c_void,
    bytes: usize,
    flags: c_uint,
) -> CuResult {
    call("cuMemHostRegister_v2", |d| {
        if flags & !DEVICEMAP != 0 {
            return fail(
                INVALID_VALUE,
                "flags other than CU_MEMHOSTREGISTER_DEVICEMAP are not supported by this driver",
            );
        }
        d.register_host(ptr.cast::<u8>(), bytes, flags & DEVICEMAP != 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostUnregister(ptr: *mut c_void) -> CuResult {
    call("cuMemHostUnregister", |d| {
        d.unregister_host(ptr.cast::<u8>())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(ptr: *mut c_void) -> CuResult {
    call("cuMemFreeHost", |d| d.free_host(ptr.cast::<u8>()))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(stream: Handle, _mode: c_int) -> CuResult {
    call("cuStreamBeginCapture_v2", |d| {
        d.begin_capture(handle(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture(stream: Handle, graph: *mut Handle) -> CuResult {
    call("cuStreamEndCapture", |d| {
        put(graph, d.end_capture(handle(stream))? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut Handle,
    graph: Handle,
    _flags: u64,
) -> CuResult {
    call("cuGraphInstantiateWithFlags", |d| {
        put(exec, d.instantiate(handle(graph))? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphLaunch(exec: Handle, stream: Handle) -> CuResult {
    call("cuGraphLaunch", |d| {
        d.launch_graph(handle(exec), handle(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecDestroy(exec: Handle) -> CuResult {
    call("cuGraphExecDestroy", |d| {
        d.destroy_graph(handle(exec), true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphDestroy(graph: Handle) -> CuResult {
    call("cuGraphDestroy", |d| d.destroy_graph(handle(graph), false))
}

/// `CU_JIT_ERROR_LOG_BUFFER` and `..._SIZE_BYTES`: the options a link reads.
const JIT_ERROR_LOG_BUFFER: c_int = 5;
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
/// `CU_JIT_INPUT_PTX`: the one input a link takes.
const JIT_INPUT_PTX: c_int = 1;

#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate_v2(
    count: c_uint,
    options: *mut c_int,
    values: *mut *mut c_void,
    state: *mut Handle,
) -> CuResult {
    call("cuLinkCreate_v2", |d| {
        let (mut buffer, mut size) = (std::ptr::null_mut(), 0usize);
        for i in 0..count as usize {
            // SAFETY: the driver API's contract: `count` options and values.
            let (option, value) = unsafe { (*options.add(i), *values.add(i)) };
            match option {
                JIT_ERROR_LOG_BUFFER => buffer = value.cast::<u8>(),
                JIT_ERROR_LOG_BUFFER_SIZE_BYTES => size = value as usize,
                _ => {}
            }
        }
        put(state, d.link_create(Some((buffer, size)))? as Handle)
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: Handle,
    kind: c_int,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    _count: c_uint,
    _options: *mut c_int,
    _values: *mut *mut c_void,
) -> CuResult {
    call("cuLinkAddData_v2", |d| {
        if kind != JIT_INPUT_PTX {
            return fail(driver::NOT_SUPPORTED, "the fake links PTX only");
        }
        if data.is_null() || size == 0 {
            return fail(INVALID_VALUE, "no data");
        }
        // SAFETY: the driver API's contract: `size` bytes at `data`.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        let text = CStr::from_bytes_until_nul(bytes)
            .ok()
            .and_then(|t| t.to_str().ok())
            .ok_or_else(|| {
                Failure(
                    driver::INVALID_PTX,
                    "PTX input is not NUL-terminated UTF-8".into(),
                )
            })?;
        // SAFETY: a null or NUL-terminated name, as the API takes.
        let name = unsafe { symbol_name(name) }.unwrap_or_else(|_| "(unnamed)".into());
        d.link_add(handle(state), &name, text)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkComplete(
    state: Handle,
    image: *mut *mut c_void,
    size: *mut usize,
) -> CuResult {
    call("cuLinkComplete", |d| {
        let (at, bytes) = d.link_complete(handle(state))?;
        put(image, at as *mut c_void)?;
        put(size, bytes)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkDestroy(state: Handle) -> CuResult {
    call("cuLinkDestroy", |d| d.link_destroy(handle(state)))
}

/// The name a module lookup asks for; a null name is refused as the driver refuses it.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn symbol_name<'a>(name: *const c_char) -> Result<std::borrow::Cow<'a, str>, Failure> {
    if name.is_null() {
        return fail(INVALID_VALUE, "a null name");
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { CStr::from_ptr(name) }.to_string_lossy())
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    function: *mut Handle,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    call("cuModuleGetFunction", |d| {
        // SAFETY: the driver API's contract: `name` is null or a NUL-terminated string.
        let name = unsafe { symbol_name(name) }?;
        put(function, d.function(handle(module), &name)? as Handle)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncSetAttribute(
    function: Handle,
    attribute: c_int,
    value: c_int,
) -> CuResult {
    call("cuFuncSetAttribute", |d| {
        d.set_function_attribute(handle(function), attribute as u32, value)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    function: Handle,
) -> CuResult {
    call("cuFuncGetAttribute", |d| {
        put(
            value,
            d.function_attribute(handle(function), attribute as u32)?,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut DevicePtr,
    bytes: *mut usize,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    call("cuModuleGetGlobal_v2", |d| {
        // SAFETY: the driver API's contract: `name` is null or a NUL-terminated string.
        let name = unsafe { symbol_name(name) }?;
        let (address, size) = d.global(handle(module), &name)?;
        // Either output may be null: the driver then leaves it out.
        if !dptr.is_null() {
            put(dptr, address)?;
        }
        if !bytes.is_null() {
            put(bytes, size)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(
    min_grid_size: *mut c_int,
    block_size: *mut c_int,
    function: Handle,
    _block_size_to_dynamic_shared: *const c_void,
    dynamic_shared: usize,
    block_size_limit: c_int,
) -> CuResult {
    call("cuOccupancyMaxPotentialBlockSize", |d| {
        let (grid, block) = d.block_size(handle(function), dynamic_shared, block_size_limit)?;
        put(min_grid_size, grid)?;
        put(block_size, block)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    blocks: *mut c_int,
    function: Handle,
    block_size: c_int,
    dynamic_shared: usize,
) -> CuResult {
    call("cuOccupancyMaxActiveBlocksPerMultiprocessor", |d| {
        put(
            blocks,
            d.resident_blocks(handle(function), block_size, dynamic_shared)?,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(module: Handle) -> CuResult {
    call("cuModuleUnload", |d| d.unload_module(handle(module)))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLaunchKernel(
    function: Handle,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    if !extra.is_null() {
        return call("cuLaunchKernel", |_| {
            fail(INVALID_VALUE, "`extra` is not supported by this driver")
        });
    }
    let shape = [grid_x, grid_y, grid_z, block_x, block_y, block_z];
    // SAFETY: the driver API's contract, passed on.
    unsafe { launch(false, function, shape, shared_bytes, stream, params) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLaunchCooperativeKernel(
    function: Handle,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
) -> CuResult {
    let shape = [grid_x, grid_y, grid_z, block_x, block_y, block_z];
    // SAFETY: the driver API's contract, passed on.
    unsafe { launch(true, function, shape, shared_bytes, stream, params) }
}

/// `cuLaunchKernel` or, where `cooperative`, `cuLaunchCooperativeKernel`, of the grid and block
/// `shape` (grid x, y, z, then block x, y, z).
///
/// # Safety
/// The driver API's contract: `params` holds one pointer per parameter, each to its value.
unsafe fn launch(
    cooperative: bool,
    function: Handle,
    shape: [c_uint; 6],
    shared_bytes: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
) -> CuResult {
    let name = match cooperative {
        true => "cuLaunchCooperativeKernel",
        false => "cuLaunchKernel",
    };
    call(name, |d| {
        // SAFETY: the caller's contract.
        unsafe {
            d.launch(
                handle(function),
                [shape[0], shape[1], shape[2]],
                [shape[3], shape[4], shape[5]],
                shared_bytes,
                handle(stream),
                params.cast_const().cast(),
                cooperative,
            )
        }
    })
}
