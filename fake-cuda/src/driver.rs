//! The fake driver's objects (contexts, streams, events, modules, functions, memory) and the
//! checks a real driver makes on them: a call without a current context, a stale handle, a copy
//! outside device memory or a launch outside the GPU's limits fails with the code the driver
//! would return, and the reason is printed on stderr.

use crate::{cubin, ptx};
use std::alloc::Layout;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// `CUresult`.
pub type CuResult = u32;

pub const SUCCESS: CuResult = 0;
pub const INVALID_VALUE: CuResult = 1;
pub const OUT_OF_MEMORY: CuResult = 2;
pub const NOT_INITIALIZED: CuResult = 3;
pub const INVALID_DEVICE: CuResult = 101;
pub const INVALID_CONTEXT: CuResult = 201;
pub const INVALID_IMAGE: CuResult = 200;
pub const NO_BINARY_FOR_GPU: CuResult = 209;
pub const INVALID_PTX: CuResult = 218;
pub const UNSUPPORTED_PTX_VERSION: CuResult = 222;
pub const INVALID_HANDLE: CuResult = 400;
pub const NOT_FOUND: CuResult = 500;
/// The block size the fake GPU's occupancy calculator suggests for every kernel.
pub const OCCUPANCY_BLOCK: i32 = 768;
pub const ILLEGAL_ADDRESS: CuResult = 700;
pub const LAUNCH_FAILED: CuResult = 719;
pub const COOPERATIVE_LAUNCH_TOO_LARGE: CuResult = 720;
pub const NOT_SUPPORTED: CuResult = 801;
pub const ILLEGAL_STATE: CuResult = 401;
pub const HOST_MEMORY_ALREADY_REGISTERED: CuResult = 712;
pub const HOST_MEMORY_NOT_REGISTERED: CuResult = 713;

/// The codes above with their `cuGetErrorName` and `cuGetErrorString`, as the driver has them.
#[rustfmt::skip]
pub const CODES: &[(CuResult, &str, &str)] = &[
    (SUCCESS, "CUDA_SUCCESS", "no error"),
    (INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    (OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    (NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    (INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    (INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
    (INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    (NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"),
    (INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    (UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        "the provided PTX was compiled with an unsupported toolchain."),
    (INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    (NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    (ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    (LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    (COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
        "too many blocks in cooperative launch"),
    (NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    (ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"),
    (HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        "part or all of the requested memory range is already mapped"),
    (HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        "pointer does not correspond to a registered memory region"),
];

/// The name every fake GPU reports.
pub const NAME: &str = "Fake CUDA GPU";
/// Device memory each fake GPU has.
pub const MEMORY_BYTES: usize = 1 << 34;
/// Dynamic plus static shared memory a block may have.
pub const SHARED_PER_BLOCK: usize = 48 * 1024;
/// Shared memory of one multiprocessor, for the occupancy calculator.
pub const SHARED_PER_SM: usize = 228 * 1024;

/// A failed call: the code to return and why, for stderr.
pub struct Failure(pub CuResult, pub String);

pub fn fail<T>(code: CuResult, why: impl Into<String>) -> Result<T, Failure> {
    Err(Failure(code, why.into()))
}

/// The log's note of the stream a call was ordered on, if any: ` stream=0x..`.
pub fn on(stream: Option<usize>) -> String {
    stream.map_or_else(String::new, |s| format!(" stream={s:#x}"))
}

/// How the fake GPUs behave, from the environment of the process.
struct Config {
    /// `FAKE_CUDA_DEVICES`: how many GPUs (default 1).
    devices: i32,
    /// `FAKE_CUDA_CC`: the compute capability, as `10 * major + minor` (default 90).
    cc: u32,
    /// `FAKE_CUDA_PTX_ISA`: the newest PTX ISA the driver compiles, as `10 * major + minor`
    /// (default 90, CUDA 13.0's).
    ptx_isa: u32,
    /// `FAKE_CUDA_NO_MEMORY_POOLS=1`: the GPUs have no stream-ordered allocator.
    no_pools: bool,
    /// `FAKE_CUDA_NO_COOPERATIVE=1`: the GPUs cannot launch cooperatively.
    no_cooperative: bool,
    /// `FAKE_CUDA_NO_PEER=1`: no GPU reaches another's memory (copies between them are still
    /// allowed, as the driver stages them through the host).
    no_peer: bool,
    /// `FAKE_CUDA_SHARED_OPTIN=BYTES`: the shared memory a block can have by opting in
    /// (default 227 KiB, an H100's; 49152 for a GPU that gives no more than 48 KiB).
    shared_optin: usize,
    /// `FAKE_CUDA_FAIL=FUNCTION=CODE[@N]`: the `N`th call of `FUNCTION` (every call without
    /// `@N`) fails with `CODE`.
    fail: Option<(String, CuResult, Option<u32>)>,
    /// `FAKE_CUDA_TRAP=KERNEL`: launches of `KERNEL` fault as a trap does.
    trap: Option<String>,
    /// `FAKE_CUDA_LOG=FILE`: a line per launch, allocation, free, copy and wait (`%p` in the
    /// name is the process id, for the ranks of an MPI job).
    log: Option<File>,
}

impl Config {
    fn from_env() -> Config {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let fail = var("FAKE_CUDA_FAIL").and_then(|spec| {
            let (function, rest) = spec.split_once('=')?;
            let (code, nth) = match rest.split_once('@') {
                Some((code, nth)) => (code, Some(nth.parse().ok()?)),
                None => (rest, None),
            };
            Some((function.to_string(), code.parse().ok()?, nth))
        });
        Config {
            devices: var("FAKE_CUDA_DEVICES")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
            cc: var("FAKE_CUDA_CC")
                .and_then(|v| v.parse().ok())
                .unwrap_or(90),
            ptx_isa: var("FAKE_CUDA_PTX_ISA")
                .and_then(|v| v.parse().ok())
                .unwrap_or(90),
            no_pools: var("FAKE_CUDA_NO_MEMORY_POOLS").is_some_and(|v| v == "1"),
            no_cooperative: var("FAKE_CUDA_NO_COOPERATIVE").is_some_and(|v| v == "1"),
            no_peer: var("FAKE_CUDA_NO_PEER").is_some_and(|v| v == "1"),
            shared_optin: var("FAKE_CUDA_SHARED_OPTIN")
                .and_then(|v| v.parse().ok())
                .unwrap_or(227 * 1024),
            fail,
            trap: var("FAKE_CUDA_TRAP"),
            log: var("FAKE_CUDA_LOG").and_then(|path| {
                let path = path.replace("%p", &std::process::id().to_string());
                File::options().create(true).append(true).open(path).ok()
            }),
        }
    }
}

struct Context {
    /// `cuDevicePrimaryCtxRetain` calls not yet released.
    retained: u32,
    /// A sticky error: once a kernel faulted, every call in the context returns it.
    fault: Option<CuResult>,
}

struct Stream {
    ctx: usize,
    /// The launches captured since `cuStreamBeginCapture`, while it captures.
    capture: Option<Vec<String>>,
}

struct Event {
    ctx: usize,
    timing: bool,
    recorded: Option<Instant>,
}

struct Module {
    ctx: usize,
    ptx: ptx::Module,
    /// The device memory of each module-level variable, all zeros at load.
    globals: HashMap<String, (u64, usize)>,
}

/// A link in progress (`cuLinkCreate`): its PTX inputs, where its error log goes, and the image
/// `cuLinkComplete` made, which lives as long as the link.
pub struct Link {
    ctx: usize,
    inputs: Vec<String>,
    log: Option<(*mut u8, usize)>,
    image: Option<std::ffi::CString>,
}

struct Function {
    module: usize,
    name: String,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: the dynamic shared memory a launch
    /// may ask for; 48 KiB less the static bytes until raised.
    max_dynamic_shared: usize,
}

struct Allocation {
    len: usize,
    ctx: usize,
    layout: Layout,
}

/// Everything the driver holds.
pub struct Driver {
    config: Config,
    initialized: bool,
    /// Handles are distinct numbers across kinds, so that a handle of one kind passed as
    /// another is refused.
    next_handle: usize,
    /// The primary context of each device, once retained.
    primary: HashMap<i32, usize>,
    contexts: HashMap<usize, Context>,
    streams: HashMap<usize, Stream>,
    events: HashMap<usize, Event>,
    modules: HashMap<usize, Module>,
    functions: HashMap<usize, Function>,
    links: HashMap<usize, Link>,
    /// Captured graphs and their executable instances: the launches each replays.
    graphs: HashMap<usize, Vec<String>>,
    execs: HashMap<usize, Vec<String>>,
    /// Page-locked host memory (`cuMemHostAlloc`), by address: its bytes, and whether it is
    /// mapped into the device's address space (`CU_MEMHOSTALLOC_DEVICEMAP`).
    host_memory: HashMap<usize, (usize, bool)>,
    /// The host's own memory page-locked by `cuMemHostRegister`, by address: its bytes, and
    /// whether it is mapped (`CU_MEMHOSTREGISTER_DEVICEMAP`).
    registered: HashMap<usize, (usize, bool)>,
    /// Device memory: host memory at the addresses handed out.
    memory: BTreeMap<u64, Allocation>,
    /// Calls made so far, by function, for `FAKE_CUDA_FAIL`.
    calls: HashMap<&'static str, u32>,
}

// SAFETY: the raw memory an `Allocation` describes is only touched under the driver's lock.
unsafe impl Send for Driver {}

static DRIVER: Mutex<Option<Driver>> = Mutex::new(None);

thread_local! {
    /// The calling thread's current context (0 for none).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// Writes `text` into a link's error log, cut to its size and NUL-terminated.
fn write_log(log: Option<(*mut u8, usize)>, text: &str) {
    let Some((at, size)) = log.filter(|(at, size)| !at.is_null() && *size > 0) else {
        return;
    };
    let n = text.len().min(size - 1);
    // SAFETY: the caller of cuLinkCreate gave `size` writable bytes at `at`, alive for the link.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), at, n);
        at.add(n).write(0);
    }
}

/// Runs the driver function `name`: counts the call, applies `FAKE_CUDA_FAIL`, then `body`.
/// A failure's reason goes to stderr.
pub fn call(name: &'static str, body: impl FnOnce(&mut Driver) -> Result<(), Failure>) -> CuResult {
    let mut guard: MutexGuard<'_, Option<Driver>> =
        DRIVER.lock().unwrap_or_else(|p| p.into_inner());
    let driver = guard.get_or_insert_with(|| Driver {
        config: Config::from_env(),
        initialized: false,
        next_handle: 0x100,
        primary: HashMap::new(),
        contexts: HashMap::new(),
        streams: HashMap::new(),
        events: HashMap::new(),
        modules: HashMap::new(),
        functions: HashMap::new(),
        links: HashMap::new(),
        graphs: HashMap::new(),
        execs: HashMap::new(),
        host_memory: HashMap::new(),
        registered: HashMap::new(),
        memory: BTreeMap::new(),
        calls: HashMap::new(),
    });
    let result = driver.injected(name).and_then(|()| {
        if !driver.initialized && !matches!(name, "cuInit" | "cuGetErrorName" | "cuGetErrorString")
        {
            return fail(NOT_INITIALIZED, "cuInit was not called");
        }
        body(driver)
    });
    match result {
        Ok(()) => 0,
        Err(Failure(code, why)) => {
            eprintln!("fake CUDA driver: {name}: {why}");
            code
        }
    }
}

impl Driver {
    fn injected(&mut self, name: &'static str) -> Result<(), Failure> {
        let count = self.calls.entry(name).or_insert(0);
        *count += 1;
        match &self.config.fail {
            Some((function, code, nth)) if function == name && nth.is_none_or(|n| n == *count) => {
                fail(
                    *code,
                    format!("failing call {count} as FAKE_CUDA_FAIL asks"),
                )
            }
            _ => Ok(()),
        }
    }

    fn handle(&mut self) -> usize {
        self.next_handle += 1;
        self.next_handle
    }

    /// Appends a line to `FAKE_CUDA_LOG`.
    pub fn log(&mut self, line: std::fmt::Arguments<'_>) {
        if let Some(file) = &mut self.config.log {
            let _ = writeln!(file, "{line}");
        }
    }

    pub fn init(&mut self) {
        self.initialized = true;
    }

    pub fn device_count(&self) -> i32 {
        self.config.devices
    }

    pub fn device(&self, ordinal: i32) -> Result<i32, Failure> {
        if (0..self.config.devices).contains(&ordinal) {
            Ok(ordinal)
        } else {
            fail(INVALID_DEVICE, format!("no device {ordinal}"))
        }
    }

    /// `cuDeviceGetAttribute`; `None` for an attribute this driver does not know.
    pub fn attribute(&self, attribute: u32) -> Option<i32> {
        let cc = self.config.cc as i32;
        Some(match attribute {
            1 => 1024,                                    // max threads per block
            2 | 3 => 1024,                                // max block x, y
            4 => 64,                                      // max block z
            5 => i32::MAX,                                // max grid x
            6 | 7 => 65535,                               // max grid y, z
            8 => SHARED_PER_BLOCK as i32,                 // max shared memory per block
            97 => self.config.shared_optin as i32,        // ... with the opt-in
            10 => 32,                                     // warp size
            16 => 132,                                    // multiprocessors
            75 => cc / 10,                                // compute capability major
            95 => i32::from(!self.config.no_cooperative), // cooperative launch
            76 => cc % 10,                                // compute capability minor
            115 => i32::from(!self.config.no_pools),      // memory pools supported
            19 => 1,                                      // can map host memory
            83 => 1,                                      // managed memory
            89 => i32::from(cc >= 60),                    // concurrent managed access
            // An H100 SXM's hardware, for `Device::properties`.
            9 => 65536,      // total constant memory
            12 => 65536,     // registers per block
            13 => 1_980_000, // clock, kHz
            18 => 0,         // integrated
            36 => 2_619_000, // memory clock, kHz
            37 => 5120,      // memory bus width, bits
            38 => 50 << 20,  // L2 cache bytes
            39 => 2048,      // max threads per multiprocessor
            40 => 3,         // async engines
            33 => 0x19,      // PCI bus
            34 => 0,         // PCI device
            50 => 0,         // PCI domain
            81 => 233_472,   // shared memory per multiprocessor
            82 => 65536,     // registers per multiprocessor
            _ => return None,
        })
    }

    /// Whether GPU `device` can reach `peer`'s memory: any two GPUs of the fake can, unless
    /// `FAKE_CUDA_NO_PEER=1`.
    pub fn can_access_peer(&self, device: i32, peer: i32) -> Result<bool, Failure> {
        self.device(device)?;
        self.device(peer)?;
        Ok(device != peer && !self.config.no_peer)
    }

    /// Lets the current context reach the memory of `peer` (`cuCtxEnablePeerAccess`).
    pub fn enable_peer_access(&mut self, peer: usize) -> Result<(), Failure> {
        let ctx = self.current()?;
        if self.config.no_peer || ctx == peer || !self.contexts.contains_key(&peer) {
            return fail(
                INVALID_DEVICE,
                "these GPUs cannot reach each other's memory",
            );
        }
        self.log(format_args!("peer access ctx={ctx:#x} peer={peer:#x}"));
        Ok(())
    }

    /// Copies `bytes` from `src` in the context `src_ctx` to `dst` in `dst_ctx`, on `stream` of
    /// the current context (`cuMemcpyPeerAsync`).
    pub fn copy_peer(
        &mut self,
        (dst, dst_ctx): (u64, usize),
        (src, src_ctx): (u64, usize),
        bytes: usize,
        stream: usize,
    ) -> Result<(), Failure> {
        self.stream(stream)?;
        let (to, from) = (
            self.range_in(dst_ctx, dst, bytes)?,
            self.range_in(src_ctx, src, bytes)?,
        );
        // SAFETY: both ranges were checked to lie in live allocations.
        unsafe { std::ptr::copy(from, to, bytes) };
        self.log(format_args!(
            "peer {bytes} stream={stream:#x} dst={dst:#x} src={src:#x}"
        ));
        Ok(())
    }

    pub fn retain_primary(&mut self, device: i32) -> Result<usize, Failure> {
        self.device(device)?;
        let ctx = match self.primary.get(&device) {
            Some(&ctx) => ctx,
            None => {
                let ctx = self.handle();
                self.primary.insert(device, ctx);
                self.contexts.insert(
                    ctx,
                    Context {
                        retained: 0,
                        fault: None,
                    },
                );
                ctx
            }
        };
        self.contexts.get_mut(&ctx).expect("primary").retained += 1;
        Ok(ctx)
    }

    /// Releases a retain of `device`'s primary context; the last one destroys the context and
    /// everything in it, and names what the program left there.
    pub fn release_primary(&mut self, device: i32) -> Result<(), Failure> {
        let Some(&ctx) = self.primary.get(&device) else {
            return fail(
                INVALID_CONTEXT,
                format!("device {device}'s primary context was never retained"),
            );
        };
        let c = self.contexts.get_mut(&ctx).expect("primary");
        c.retained -= 1;
        if c.retained > 0 {
            return Ok(());
        }
        self.contexts.remove(&ctx);
        self.primary.remove(&device);
        let leaked = |n: usize, what: &str| {
            if n > 0 {
                eprintln!("fake CUDA driver: the context was destroyed with {n} {what} left in it");
            }
        };
        let n = self.streams.len();
        self.streams.retain(|_, s| s.ctx != ctx);
        leaked(n - self.streams.len(), "stream(s)");
        let n = self.events.len();
        self.events.retain(|_, e| e.ctx != ctx);
        leaked(n - self.events.len(), "event(s)");
        let modules: Vec<usize> = self
            .modules
            .iter()
            .filter(|(_, m)| m.ctx == ctx)
            .map(|(&h, _)| h)
            .collect();
        leaked(modules.len(), "module(s)");
        for m in modules {
            self.unload(m);
        }
        let blocks: Vec<u64> = self
            .memory
            .iter()
            .filter(|(_, a)| a.ctx == ctx)
            .map(|(&p, _)| p)
            .collect();
        leaked(blocks.len(), "allocation(s)");
        for p in blocks {
            self.release(p);
        }
        if CURRENT.get() == ctx {
            CURRENT.set(0);
        }
        Ok(())
    }

    /// The device whose primary context `ctx` is.
    pub fn device_of(&self, ctx: usize) -> Option<i32> {
        self.primary
            .iter()
            .find_map(|(&device, &c)| (c == ctx).then_some(device))
    }

    /// The CUDA version of the driver, as `cuDriverGetVersion` gives it (`12080` for 12.8):
    /// the version whose newest PTX ISA is `FAKE_CUDA_PTX_ISA` (8.0 is CUDA 12.0's, 9.0 13.0's).
    pub fn version(&self) -> i32 {
        let isa = self.config.ptx_isa as i32;
        match isa >= 90 {
            true => 13000 + (isa - 90) * 10,
            false => 12000 + (isa - 80).max(0) * 10,
        }
    }

    pub fn current_handle(&self) -> usize {
        CURRENT.get()
    }

    pub fn set_current(&mut self, ctx: usize) -> Result<(), Failure> {
        if ctx != 0 && !self.contexts.contains_key(&ctx) {
            return fail(INVALID_CONTEXT, format!("context {ctx:#x} does not exist"));
        }
        CURRENT.set(ctx);
        Ok(())
    }

    /// The calling thread's current context, which must exist and not have faulted.
    pub fn current(&self) -> Result<usize, Failure> {
        let ctx = CURRENT.get();
        match self.contexts.get(&ctx) {
            None => fail(INVALID_CONTEXT, "no context is current on this thread"),
            Some(Context {
                fault: Some(code), ..
            }) => fail(*code, "the context faulted earlier"),
            Some(_) => Ok(ctx),
        }
    }

    /// Checks that `stream` (0 and 2 are the current context's built-in streams) belongs to the
    /// current context; returns its number for the log.
    pub fn stream(&self, stream: usize) -> Result<usize, Failure> {
        let ctx = self.current()?;
        if stream == 0 || stream == 2 {
            return Ok(stream);
        }
        match self.streams.get(&stream) {
            Some(s) if s.ctx == ctx => Ok(stream),
            Some(_) => fail(
                INVALID_CONTEXT,
                format!("stream {stream:#x} belongs to another context"),
            ),
            None => fail(INVALID_HANDLE, format!("stream {stream:#x} does not exist")),
        }
    }

    /// The context `stream` belongs to (the current one for the built-in streams 0 and 2).
    pub fn stream_context(&self, stream: usize) -> Result<usize, Failure> {
        if stream == 0 || stream == 2 {
            return self.current();
        }
        match self.streams.get(&stream) {
            Some(s) => Ok(s.ctx),
            None => fail(INVALID_HANDLE, format!("stream {stream:#x} does not exist")),
        }
    }

    pub fn create_stream(&mut self) -> Result<usize, Failure> {
        let ctx = self.current()?;
        let h = self.handle();
        self.streams.insert(h, Stream { ctx, capture: None });
        Ok(h)
    }

    pub fn destroy_stream(&mut self, stream: usize) -> Result<(), Failure> {
        self.current()?;
        match self.streams.remove(&stream) {
            Some(_) => Ok(()),
            None => fail(INVALID_HANDLE, format!("stream {stream:#x} does not exist")),
        }
    }

    pub fn create_event(&mut self, flags: u32) -> Result<usize, Failure> {
        let ctx = self.current()?;
        let h = self.handle();
        let timing = flags & 2 == 0; // CU_EVENT_DISABLE_TIMING
        self.events.insert(
            h,
            Event {
                ctx,
                timing,
                recorded: None,
            },
        );
        Ok(h)
    }

    fn event(&self, event: usize) -> Result<&Event, Failure> {
        let ctx = self.current()?;
        match self.events.get(&event) {
            Some(e) if e.ctx == ctx => Ok(e),
            Some(_) => fail(
                INVALID_CONTEXT,
                format!("event {event:#x} belongs to another context"),
            ),
            None => fail(INVALID_HANDLE, format!("event {event:#x} does not exist")),
        }
    }

    pub fn record_event(&mut self, event: usize, stream: usize) -> Result<(), Failure> {
        self.event(event)?;
        self.stream(stream)?;
        self.events.get_mut(&event).expect("checked").recorded = Some(Instant::now());
        self.log(format_args!("record event={event:#x} stream={stream:#x}"));
        Ok(())
    }

    /// Checks `event` exists (waiting on one never recorded is allowed and returns at once).
    pub fn sync_event(&self, event: usize) -> Result<(), Failure> {
        self.event(event).map(|_| ())
    }

    /// Makes `stream` wait for `event`, which may be another context's (another GPU's).
    pub fn wait_event(&mut self, stream: usize, event: usize) -> Result<(), Failure> {
        self.stream(stream)?;
        if !self.events.contains_key(&event) {
            return fail(INVALID_HANDLE, format!("event {event:#x} does not exist"));
        }
        self.log(format_args!("wait stream={stream:#x} event={event:#x}"));
        Ok(())
    }

    pub fn elapsed(&self, start: usize, end: usize) -> Result<f32, Failure> {
        let (a, b) = (self.event(start)?, self.event(end)?);
        if !a.timing || !b.timing {
            return fail(
                INVALID_HANDLE,
                "an event created with CU_EVENT_DISABLE_TIMING was timed",
            );
        }
        match (a.recorded, b.recorded) {
            (Some(a), Some(b)) => Ok(b.saturating_duration_since(a).as_secs_f32() * 1e3),
            _ => fail(INVALID_HANDLE, "an event that was never recorded was timed"),
        }
    }

    pub fn destroy_event(&mut self, event: usize) -> Result<(), Failure> {
        self.event(event)?;
        self.events.remove(&event);
        Ok(())
    }

    /// Checks that the GPUs have memory pools, and with them the stream-ordered allocator.
    pub fn memory_pools(&self) -> Result<(), Failure> {
        if self.config.no_pools {
            return fail(NOT_SUPPORTED, "this GPU has no memory pools");
        }
        Ok(())
    }

    /// `cuMemGetInfo`: the device memory no allocation holds, and all of it.
    pub fn memory_info(&self) -> Result<(usize, usize), Failure> {
        self.current()?;
        let in_use: usize = self.memory.values().map(|a| a.len).sum();
        Ok((MEMORY_BYTES.saturating_sub(in_use), MEMORY_BYTES))
    }

    /// `bytes` of device memory in the current context, filled with 0xCD as fresh memory holds
    /// whatever was there before.
    pub fn alloc(&mut self, bytes: usize, stream: Option<usize>) -> Result<u64, Failure> {
        let ctx = self.current()?;
        if bytes == 0 {
            return fail(INVALID_VALUE, "an allocation of 0 bytes");
        }
        let in_use: usize = self.memory.values().map(|a| a.len).sum();
        if in_use.saturating_add(bytes) > MEMORY_BYTES {
            return fail(
                OUT_OF_MEMORY,
                format!("{bytes} bytes asked for, {in_use} in use"),
            );
        }
        let layout = Layout::from_size_align(bytes, 256)
            .map_err(|e| Failure(OUT_OF_MEMORY, e.to_string()))?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return fail(
                OUT_OF_MEMORY,
                format!("the host has no {bytes} bytes to give"),
            );
        }
        // SAFETY: `ptr` was just allocated with `bytes` bytes.
        unsafe { ptr.write_bytes(0xCD, bytes) };
        let address = ptr as u64;
        self.memory.insert(
            address,
            Allocation {
                len: bytes,
                ctx,
                layout,
            },
        );
        self.log(format_args!("alloc {address:#x} {bytes}{}", on(stream)));
        Ok(address)
    }

    pub fn free(&mut self, address: u64, stream: Option<usize>) -> Result<(), Failure> {
        let ctx = self.current()?;
        match self.memory.get(&address) {
            Some(a) if a.ctx == ctx => {
                self.release(address);
                self.log(format_args!("free {address:#x}{}", on(stream)));
                Ok(())
            }
            Some(_) => fail(
                INVALID_CONTEXT,
                format!("{address:#x} belongs to another context"),
            ),
            None => fail(
                INVALID_VALUE,
                format!("{address:#x} is not the start of an allocation"),
            ),
        }
    }

    fn release(&mut self, address: u64) {
        if let Some(a) = self.memory.remove(&address) {
            // SAFETY: the allocation was made by `alloc` with this layout and is freed once.
            unsafe { std::alloc::dealloc(address as *mut u8, a.layout) };
        }
    }

    /// Checks that `bytes` from `address` lie in one allocation of the current context.
    pub fn range(&self, address: u64, bytes: usize) -> Result<*mut u8, Failure> {
        let ctx = self.current()?;
        self.range_in(ctx, address, bytes)
    }

    /// `bytes` at `address` in the memory of the context `ctx`.
    pub fn range_in(&self, ctx: usize, address: u64, bytes: usize) -> Result<*mut u8, Failure> {
        match self.memory.range(..=address).next_back() {
            Some((&start, a)) if a.ctx == ctx && address - start + bytes as u64 <= a.len as u64 => {
                Ok(address as *mut u8)
            }
            _ if self.in_mapped(address, bytes) => Ok(address as *mut u8),
            _ => fail(
                INVALID_VALUE,
                format!("{bytes} bytes at {address:#x} are not in an allocation of this context"),
            ),
        }
    }

    pub fn load_module(&mut self, text: &str) -> Result<usize, Failure> {
        let ctx = self.current()?;
        let ptx = ptx::parse(text).map_err(|e| Failure(INVALID_PTX, e))?;
        if ptx.version > self.config.ptx_isa {
            return fail(
                UNSUPPORTED_PTX_VERSION,
                format!(
                    "PTX ISA {}.{} is newer than this driver's",
                    ptx.version / 10,
                    ptx.version % 10
                ),
            );
        }
        if let Some(error) = ptx::link_errors(&[text]).into_iter().next() {
            return fail(INVALID_PTX, format!("{error}: link it with cuLink* first"));
        }
        let cc = self.config.cc;
        let suffix = if ptx.specific { "a" } else { "" };
        if ptx.target > cc || ptx.specific && ptx.target != cc {
            return fail(
                INVALID_PTX,
                format!(
                    "the PTX targets sm_{}{suffix}, the GPU is sm_{cc}",
                    ptx.target
                ),
            );
        }
        let what = format!(" ptx sm_{}{suffix}", ptx.target);
        self.install(ctx, ptx, &what)
    }

    /// Loads a cubin (see [`cubin`]): machine code for one GPU, which a GPU of another major
    /// version, or an older minor one, cannot run.
    pub fn load_cubin(&mut self, image: &[u8]) -> Result<usize, Failure> {
        let ctx = self.current()?;
        let module = cubin::parse(image).map_err(|e| Failure(INVALID_IMAGE, e))?;
        let cc = self.config.cc;
        if module.target / 10 != cc / 10 || module.target > cc {
            return fail(
                NO_BINARY_FOR_GPU,
                format!("the cubin is for sm_{}, the GPU is sm_{cc}", module.target),
            );
        }
        self.install(ctx, module, " cubin")
    }

    /// Makes `module` a module of `ctx`, its variables zeroed in device memory; `what` follows
    /// the log's `load module` line.
    fn install(&mut self, ctx: usize, ptx: ptx::Module, what: &str) -> Result<usize, Failure> {
        let mut globals = HashMap::new();
        for (name, &bytes) in &ptx.variables {
            let address = self.alloc(bytes, None)?;
            // SAFETY: `alloc` just gave `bytes` bytes at `address`.
            unsafe { (address as *mut u8).write_bytes(0, bytes) };
            globals.insert(name.clone(), (address, bytes));
        }
        let h = self.handle();
        self.modules.insert(h, Module { ctx, ptx, globals });
        self.log(format_args!("load module {h:#x}{what}"));
        Ok(h)
    }

    /// The address and size of the module-level variable `name` of `module`.
    pub fn global(&mut self, module: usize, name: &str) -> Result<(u64, usize), Failure> {
        let ctx = self.current()?;
        let found = match self.modules.get(&module) {
            Some(m) if m.ctx == ctx => m.globals.get(name).copied(),
            Some(_) => return fail(INVALID_CONTEXT, "the module belongs to another context"),
            None => return fail(INVALID_HANDLE, format!("module {module:#x} does not exist")),
        };
        let Some((address, bytes)) = found else {
            return fail(NOT_FOUND, format!("the module has no variable `{name}`"));
        };
        self.log(format_args!("global {name} {address:#x} {bytes}"));
        Ok((address, bytes))
    }

    pub fn function(&mut self, module: usize, name: &str) -> Result<usize, Failure> {
        let ctx = self.current()?;
        match self.modules.get(&module) {
            Some(m) if m.ctx == ctx => {
                if !m.ptx.entries.contains_key(name) {
                    return fail(NOT_FOUND, format!("the module has no entry `{name}`"));
                }
            }
            Some(_) => return fail(INVALID_CONTEXT, "the module belongs to another context"),
            None => return fail(INVALID_HANDLE, format!("module {module:#x} does not exist")),
        }
        let h = self.handle();
        self.functions.insert(
            h,
            Function {
                module,
                name: name.to_string(),
                max_dynamic_shared: SHARED_PER_BLOCK
                    .saturating_sub(self.modules[&module].ptx.entries[name].static_shared),
            },
        );
        Ok(h)
    }

    /// `bytes` of "page-locked" host memory: host memory the driver keeps track of.
    pub fn alloc_host(&mut self, bytes: usize, mapped: bool) -> Result<*mut u8, Failure> {
        self.current()?;
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 4096)
            .map_err(|_| Failure(INVALID_VALUE, format!("{bytes} bytes")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return fail(OUT_OF_MEMORY, format!("{bytes} bytes of host memory"));
        }
        self.host_memory.insert(ptr as usize, (bytes, mapped));
        let how = if mapped { " mapped" } else { "" };
        self.log(format_args!(
            "host alloc {bytes}{how} at={:#x}",
            ptr as usize
        ));
        Ok(ptr)
    }

    /// Every range of page-locked host memory, as its first byte and its size: the allocations
    /// of `cuMemHostAlloc` and the host's own ranges `cuMemHostRegister` locked.
    fn locked_ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let allocated = self.host_memory.iter().map(|(&at, &(size, _))| (at, size));
        let registered = self.registered.iter().map(|(&at, &(size, _))| (at, size));
        allocated.chain(registered)
    }

    /// Whether `bytes` at `ptr` lie in one allocation of page-locked host memory, or in one
    /// range of the host's memory page-locked where it is.
    pub fn page_locked(&self, ptr: *const u8, bytes: usize) -> bool {
        let at = ptr as usize;
        self.locked_ranges()
            .any(|(start, size)| at >= start && at + bytes <= start + size)
    }

    /// Page-locks `bytes` of the host's memory at `ptr` (`cuMemHostRegister`), mapped into the
    /// device's address space where `mapped`, which no other page-locked range may share a
    /// byte with.
    pub fn register_host(
        &mut self,
        ptr: *mut u8,
        bytes: usize,
        mapped: bool,
    ) -> Result<(), Failure> {
        self.current()?;
        let at = ptr as usize;
        if ptr.is_null() || bytes == 0 {
            return fail(INVALID_VALUE, "a null pointer or no bytes to page-lock");
        }
        if self
            .locked_ranges()
            .any(|(start, size)| at < start + size && start < at + bytes)
        {
            return fail(
                HOST_MEMORY_ALREADY_REGISTERED,
                format!("{bytes} bytes at {at:#x} share memory with a page-locked range"),
            );
        }
        self.registered.insert(at, (bytes, mapped));
        let how = if mapped { " mapped" } else { "" };
        self.log(format_args!("host register {bytes}{how} at={at:#x}"));
        Ok(())
    }

    /// Unlocks a range from [`register_host`](Self::register_host), given its first byte.
    pub fn unregister_host(&mut self, ptr: *mut u8) -> Result<(), Failure> {
        self.current()?;
        let Some((bytes, _)) = self.registered.remove(&(ptr as usize)) else {
            return fail(
                HOST_MEMORY_NOT_REGISTERED,
                format!("{ptr:?} is not the start of a range cuMemHostRegister page-locked"),
            );
        };
        self.log(format_args!(
            "host unregister {bytes} at={:#x}",
            ptr as usize
        ));
        Ok(())
    }

    /// The device address of mapped page-locked memory at `ptr` (`cuMemHostGetDevicePointer`):
    /// the same address, as on a GPU with unified addressing.
    pub fn mapped_device_pointer(&self, ptr: *const u8) -> Result<u64, Failure> {
        self.current()?;
        let at = ptr as usize;
        match self
            .host_memory
            .get(&at)
            .or_else(|| self.registered.get(&at))
        {
            Some(&(_, true)) => Ok(ptr as u64),
            Some(_) => fail(
                INVALID_VALUE,
                "the memory was page-locked without CU_MEMHOSTALLOC_DEVICEMAP",
            ),
            None => fail(INVALID_VALUE, format!("{ptr:?} is not page-locked memory")),
        }
    }

    /// Whether `bytes` at `address` lie in mapped page-locked memory, which kernels and copies
    /// reach as device memory.
    fn in_mapped(&self, address: u64, bytes: usize) -> bool {
        let at = address as usize;
        self.host_memory
            .iter()
            .chain(&self.registered)
            .any(|(&start, &(size, mapped))| mapped && at >= start && at + bytes <= start + size)
    }

    /// Frees memory from [`alloc_host`](Self::alloc_host).
    pub fn free_host(&mut self, ptr: *mut u8) -> Result<(), Failure> {
        let Some((bytes, _)) = self.host_memory.remove(&(ptr as usize)) else {
            return fail(
                INVALID_VALUE,
                format!("{ptr:?} is not page-locked memory of this driver"),
            );
        };
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 4096).expect("allocated so");
        // SAFETY: `ptr` came from `alloc_host` with this layout and is freed once.
        unsafe { std::alloc::dealloc(ptr, layout) };
        self.log(format_args!("host free {bytes} at={:#x}", ptr as usize));
        Ok(())
    }

    /// Starts capturing the launches made on `stream` (not the legacy or per-thread stream).
    pub fn begin_capture(&mut self, stream: usize) -> Result<(), Failure> {
        self.stream(stream)?;
        match self.streams.get_mut(&stream) {
            Some(s) if s.capture.is_none() => s.capture = Some(Vec::new()),
            Some(_) => return fail(ILLEGAL_STATE, "the stream is capturing already"),
            None => return fail(NOT_SUPPORTED, "the fake captures on created streams only"),
        }
        self.log(format_args!("capture begin {stream:#x}"));
        Ok(())
    }

    /// Ends the capture on `stream`: a graph of the launches captured.
    pub fn end_capture(&mut self, stream: usize) -> Result<usize, Failure> {
        self.stream(stream)?;
        let Some(launches) = self.streams.get_mut(&stream).and_then(|s| s.capture.take()) else {
            return fail(ILLEGAL_STATE, "the stream is not capturing");
        };
        let h = self.handle();
        self.log(format_args!("capture end {} launches", launches.len()));
        self.graphs.insert(h, launches);
        Ok(h)
    }

    /// An executable instance of `graph`.
    pub fn instantiate(&mut self, graph: usize) -> Result<usize, Failure> {
        self.current()?;
        let Some(launches) = self.graphs.get(&graph).cloned() else {
            return fail(INVALID_VALUE, format!("graph {graph:#x} does not exist"));
        };
        let h = self.handle();
        self.execs.insert(h, launches);
        Ok(h)
    }

    /// Replays `exec` on `stream`: each launch it holds, logged as launched.
    pub fn launch_graph(&mut self, exec: usize, stream: usize) -> Result<(), Failure> {
        self.stream(stream)?;
        let Some(launches) = self.execs.get(&exec).cloned() else {
            return fail(
                INVALID_VALUE,
                format!("graph instance {exec:#x} does not exist"),
            );
        };
        self.log(format_args!("graph launch {} launches", launches.len()));
        for line in launches {
            self.log(format_args!("{line}"));
        }
        Ok(())
    }

    /// Destroys a graph (`exec`: false) or an executable instance of one.
    pub fn destroy_graph(&mut self, h: usize, exec: bool) -> Result<(), Failure> {
        let removed = match exec {
            true => self.execs.remove(&h),
            false => self.graphs.remove(&h),
        };
        match removed {
            Some(_) => Ok(()),
            None => fail(INVALID_VALUE, format!("graph {h:#x} does not exist")),
        }
    }

    /// Starts a link whose errors go to `log` (a buffer and its size), if given.
    pub fn link_create(&mut self, log: Option<(*mut u8, usize)>) -> Result<usize, Failure> {
        let ctx = self.current()?;
        let h = self.handle();
        let link = Link {
            ctx,
            inputs: Vec::new(),
            log,
            image: None,
        };
        self.links.insert(h, link);
        self.log(format_args!("link create {h:#x}"));
        Ok(h)
    }

    /// The link `h`, of the current context.
    fn link(&mut self, h: usize) -> Result<&mut Link, Failure> {
        let ctx = self.current()?;
        match self.links.get_mut(&h) {
            Some(link) if link.ctx == ctx => Ok(link),
            Some(_) => fail(INVALID_CONTEXT, "the link belongs to another context"),
            None => fail(INVALID_HANDLE, format!("link {h:#x} does not exist")),
        }
    }

    /// Adds the PTX `text` (named `name`) to the link `h`.
    pub fn link_add(&mut self, h: usize, name: &str, text: &str) -> Result<(), Failure> {
        if let Err(e) = ptx::parse(text) {
            let link = self.link(h)?;
            write_log(link.log, &format!("{name}: {e}"));
            return fail(INVALID_PTX, format!("{name}: {e}"));
        }
        self.link(h)?.inputs.push(text.to_string());
        self.log(format_args!("link add {name}"));
        Ok(())
    }

    /// Links the inputs of `h`: every `.extern` function must be defined by one of them with
    /// the types it is declared with. The image is the inputs, one after the other.
    pub fn link_complete(&mut self, h: usize) -> Result<(*const u8, usize), Failure> {
        let link = self.link(h)?;
        let texts: Vec<&str> = link.inputs.iter().map(String::as_str).collect();
        let errors = ptx::link_errors(&texts);
        if !errors.is_empty() {
            write_log(link.log, &errors.join("\n"));
            return fail(INVALID_IMAGE, errors.join("; "));
        }
        let image = std::ffi::CString::new(link.inputs.join("\n"))
            .map_err(|_| Failure(INVALID_VALUE, "an input holds a NUL byte".into()))?;
        let (at, size) = (image.as_ptr().cast::<u8>(), image.as_bytes_with_nul().len());
        let inputs = link.inputs.len();
        link.image = Some(image);
        self.log(format_args!("link complete {inputs} inputs"));
        Ok((at, size))
    }

    /// Ends the link `h`, and its image with it.
    pub fn link_destroy(&mut self, h: usize) -> Result<(), Failure> {
        self.link(h)?;
        self.links.remove(&h);
        self.log(format_args!("link destroy {h:#x}"));
        Ok(())
    }

    pub fn unload_module(&mut self, module: usize) -> Result<(), Failure> {
        self.current()?;
        if !self.modules.contains_key(&module) {
            return fail(INVALID_HANDLE, format!("module {module:#x} does not exist"));
        }
        self.unload(module);
        Ok(())
    }

    fn unload(&mut self, module: usize) {
        if let Some(m) = self.modules.remove(&module) {
            for (address, _) in m.globals.into_values() {
                self.release(address);
            }
        }
        self.functions.retain(|_, f| f.module != module);
    }

    /// The module and name of `function`, which must belong to the current context.
    fn function_of(&self, function: usize) -> Result<(usize, String), Failure> {
        let ctx = self.current()?;
        let Some(f) = self.functions.get(&function) else {
            return fail(
                INVALID_HANDLE,
                format!("function {function:#x} does not exist"),
            );
        };
        if self.modules[&f.module].ctx != ctx {
            return fail(INVALID_CONTEXT, "the function belongs to another context");
        }
        Ok((f.module, f.name.clone()))
    }

    /// The occupancy calculator's answer for `function`: the fake GPU always suggests blocks of
    /// [`OCCUPANCY_BLOCK`] threads (or `limit`, when smaller and not 0) and two blocks per
    /// multiprocessor; logged as `occupancy NAME dynamic=BYTES limit=LIMIT`.
    pub fn block_size(
        &mut self,
        function: usize,
        dynamic: usize,
        limit: i32,
    ) -> Result<(i32, i32), Failure> {
        let (_, name) = self.function_of(function)?;
        self.log(format_args!(
            "occupancy {name} dynamic={dynamic} limit={limit}"
        ));
        let block = if limit > 0 {
            OCCUPANCY_BLOCK.min(limit)
        } else {
            OCCUPANCY_BLOCK
        };
        let sms = self.attribute(16).expect("known");
        Ok((2 * sms, block))
    }

    /// The blocks of `threads` threads with `dynamic` bytes of dynamic shared memory that one
    /// multiprocessor of the fake GPU keeps resident: 2048 threads, 32 blocks and
    /// [`SHARED_PER_SM`] bytes of shared memory per multiprocessor; logged as
    /// `occupancy-blocks NAME threads=THREADS dynamic=BYTES`.
    pub fn resident_blocks(
        &mut self,
        function: usize,
        threads: i32,
        dynamic: usize,
    ) -> Result<i32, Failure> {
        let (module, name) = self.function_of(function)?;
        if !(1..=1024).contains(&threads) {
            return fail(INVALID_VALUE, format!("a block of {threads} threads"));
        }
        let shared = dynamic + self.modules[&module].ptx.entries[&name].static_shared;
        self.log(format_args!(
            "occupancy-blocks {name} threads={threads} dynamic={dynamic}"
        ));
        Ok(resident(threads as usize, shared) as i32)
    }

    /// `cuFuncSetAttribute`: only `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (8), up to
    /// the opt-in limit less the function's static shared memory.
    pub fn set_function_attribute(
        &mut self,
        function: usize,
        attribute: u32,
        value: i32,
    ) -> Result<(), Failure> {
        let (module, name) = self.function_of(function)?;
        if attribute != 8 {
            return fail(INVALID_VALUE, format!("function attribute {attribute}"));
        }
        let static_shared = self.modules[&module].ptx.entries[&name].static_shared;
        let most = self.config.shared_optin.saturating_sub(static_shared);
        if value < 0 || value as usize > most {
            return fail(
                INVALID_VALUE,
                format!(
                    "`{name}`: {value} bytes of dynamic shared memory, over the {most} it can have"
                ),
            );
        }
        self.functions
            .get_mut(&function)
            .expect("checked")
            .max_dynamic_shared = value as usize;
        self.log(format_args!("max-dynamic-shared {name} {value}"));
        Ok(())
    }

    /// `cuFuncGetAttribute`. The fake compiles nothing, so a function's registers are its
    /// `.maxnreg`, else 32, and it has no local or constant memory of its own; its threads per
    /// block are its `.maxntid`'s, else 1024; its binary is for the GPU's compute capability.
    pub fn function_attribute(&self, function: usize, attribute: u32) -> Result<i32, Failure> {
        let (module, name) = self.function_of(function)?;
        let (ptx, entry) = (
            &self.modules[&module].ptx,
            &self.modules[&module].ptx.entries[&name],
        );
        let value = match attribute {
            0 => entry.max_threads.unwrap_or(1024).min(1024),
            1 => entry.static_shared,
            2 | 3 => 0,
            4 => entry.max_registers.unwrap_or(32) as usize,
            5 => ptx.version as usize,
            6 => self.config.cc as usize,
            8 => self.functions[&function].max_dynamic_shared,
            _ => return fail(INVALID_VALUE, format!("function attribute {attribute}")),
        };
        Ok(value as i32)
    }

    /// Checks a launch as the driver does and logs it with its parameters' values; runs
    /// nothing. A pointer parameter outside the context's memory, or `FAKE_CUDA_TRAP`, makes
    /// the context fault as the kernel would have: the launch succeeds and every later call
    /// fails.
    ///
    /// # Safety
    /// `params` must be null or hold one readable pointer per parameter of the entry, each to
    /// as many readable bytes as the parameter has.
    ///
    /// A `cooperative` launch (`cuLaunchCooperativeKernel`) is refused on a GPU without
    /// cooperative launches, and when its grid is larger than what is resident at once; it is
    /// logged as `launch-cooperative`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch(
        &mut self,
        function: usize,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: usize,
        params: *const *const u8,
        cooperative: bool,
    ) -> Result<(), Failure> {
        let ctx = self.current()?;
        let stream = self.stream(stream)?;
        let (module, name) = self.function_of(function)?;
        let entry = self.modules[&module].ptx.entries[&name].clone();
        let limits = [(5, 6, 7), (2, 3, 4)];
        for (dims, (x, y, z), what) in [(grid, limits[0], "grid"), (block, limits[1], "block")] {
            let max = [x, y, z].map(|a| self.attribute(a).expect("known") as u32);
            if dims.iter().zip(max).any(|(&d, m)| d == 0 || d > m) {
                return fail(
                    INVALID_VALUE,
                    format!("`{name}`: {what} {dims:?} is outside 1..={max:?}"),
                );
            }
        }
        if block.iter().map(|&d| d as u64).product::<u64>() > 1024 {
            return fail(
                INVALID_VALUE,
                format!("`{name}`: block {block:?} has more than 1024 threads"),
            );
        }
        let allowed = self.functions[&function].max_dynamic_shared;
        if shared as usize > allowed {
            return fail(
                INVALID_VALUE,
                format!(
                    "`{name}`: {shared} bytes of dynamic shared memory ({} static) are over the \
                     {allowed} the function allows (cuFuncSetAttribute raises it)",
                    entry.static_shared
                ),
            );
        }
        if cooperative {
            self.cooperative(&name, grid, block, shared as usize + entry.static_shared)?;
        }
        if params.is_null() && !entry.params.is_empty() {
            return fail(
                INVALID_VALUE,
                format!(
                    "`{name}` takes {} parameters and none were given",
                    entry.params.len()
                ),
            );
        }
        let mut values = Vec::with_capacity(entry.params.len());
        let mut stray = None;
        for (i, p) in entry.params.iter().enumerate() {
            // SAFETY: the caller's contract: one pointer per parameter.
            let at = unsafe { *params.add(i) };
            if at.is_null() {
                return fail(
                    INVALID_VALUE,
                    format!("`{name}`: parameter {i} is a null pointer"),
                );
            }
            // SAFETY: the caller's contract: the pointer leads to the parameter's `p.bytes`.
            let bytes = unsafe { std::slice::from_raw_parts(at, p.bytes) };
            let mut word = [0u8; 8];
            if p.bytes <= 8 {
                word[..p.bytes].copy_from_slice(bytes);
                values.push(format!("{:#x}", u64::from_le_bytes(word)));
            } else {
                values.push(bytes.iter().map(|b| format!("{b:02x}")).collect());
            }
            let address = u64::from_le_bytes(word);
            if p.pointer && address != 0 && self.range(address, 1).is_err() {
                stray = Some(format!("`{name}`: parameter {i} is {address:#x}, which is not in this context's memory"));
            }
        }
        let what = if cooperative {
            "launch-cooperative"
        } else {
            "launch"
        };
        let line = format!(
            "{what} {name} grid={},{},{} block={},{},{} shared={shared} stream={stream:#x} params={}",
            grid[0], grid[1], grid[2], block[0], block[1], block[2], values.join(",")
        );
        if let Some(capture) = self
            .streams
            .get_mut(&stream)
            .and_then(|s| s.capture.as_mut())
        {
            capture.push(line.clone());
            self.log(format_args!("capture {line}"));
            return Ok(());
        }
        self.log(format_args!("{line}"));
        let fault = match stray {
            Some(why) => Some((ILLEGAL_ADDRESS, why)),
            None if self.config.trap.as_deref() == Some(&name) => Some((
                LAUNCH_FAILED,
                format!("`{name}` traps, as FAKE_CUDA_TRAP asks"),
            )),
            None => None,
        };
        if let Some((code, why)) = fault {
            eprintln!("fake CUDA driver: cuLaunchKernel: {why}; the context is now unusable");
            self.contexts.get_mut(&ctx).expect("current").fault = Some(code);
        }
        Ok(())
    }

    /// Refuses the cooperative launch of `name` that the GPU cannot make.
    fn cooperative(
        &self,
        name: &str,
        grid: [u32; 3],
        block: [u32; 3],
        shared: usize,
    ) -> Result<(), Failure> {
        if self.config.no_cooperative {
            return fail(
                NOT_SUPPORTED,
                format!("`{name}`: this GPU cannot launch cooperatively"),
            );
        }
        let threads = block.iter().map(|&d| d as usize).product::<usize>();
        let sms = self.attribute(16).expect("known") as u64;
        let limit = resident(threads, shared) as u64 * sms;
        let blocks = grid.iter().map(|&d| d as u64).product::<u64>();
        if blocks > limit {
            return fail(
                COOPERATIVE_LAUNCH_TOO_LARGE,
                format!("`{name}`: a cooperative grid of {blocks} blocks; at most {limit} are resident at once"),
            );
        }
        Ok(())
    }
}

/// The blocks of `threads` threads with `shared` bytes of shared memory that one multiprocessor
/// of the fake GPU keeps resident.
fn resident(threads: usize, shared: usize) -> usize {
    let by_shared = SHARED_PER_SM.checked_div(shared).unwrap_or(usize::MAX);
    (2048 / threads.max(1)).min(32).min(by_shared)
}
