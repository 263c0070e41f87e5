//! A stand-in for NCCL, `libnccl.so`, beside the fake driver: the functions the runtime's
//! collectives call, with NCCL's rules, between the processes of an MPI job on fake GPUs.
//!
//! The unique id names a directory that rank 0 makes (in `FAKE_NCCL_DIR`, else the temporary
//! directory); the ranks meet there through files. A
//! send writes a file that the receiving rank reads and removes; a collective has every rank
//! write a file (its call, and its data where the others need it), then read the others'. Each
//! call runs when it is queued, as the fake driver's copies do, reading and writing the fake
//! GPU's memory, which must be allocations of the communicator's context. Inside
//! `ncclGroupStart`/`ncclGroupEnd` the calls wait for the group's end, where the sends go
//! first, so that no order of the ranks' calls deadlocks; outside a group a send waits until
//! its receiver took it, as NCCL's may, so that a program that deadlocks on NCCL hangs here
//! too, until `FAKE_NCCL_TIMEOUT` seconds (default 60) pass and the call fails.
//!
//! Checked: the ranks of a communicator are distinct GPUs (by host and device), every rank
//! makes the same collective with the same count, type and root, a receive gets the bytes it
//! asked for, and the stream is the communicator's context's. Each call is a line of
//! `FAKE_CUDA_LOG`, with the memory it reads (`src=`) and writes (`dst=`).

#![allow(non_camel_case_types)]

use crate::driver::{call, fail, Driver, Failure};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `ncclResult_t`.
type NcclResult = u32;
const SYSTEM_ERROR: NcclResult = 2;
const INTERNAL_ERROR: NcclResult = 3;
const INVALID_ARGUMENT: NcclResult = 4;
const INVALID_USAGE: NcclResult = 5;
const REMOTE_ERROR: NcclResult = 6;

/// `ncclUniqueId`: 128 bytes; here a directory's path, NUL-terminated.
#[repr(C)]
pub struct ncclUniqueId {
    internal: [c_char; 128],
}

type Comm = *mut c_void;

/// One rank's communicator.
struct Communicator {
    dir: PathBuf,
    rank: usize,
    ranks: usize,
    ctx: usize,
    /// Collectives made so far.
    collectives: u64,
    /// Messages sent to each rank, and received from each, so far.
    sent: HashMap<usize, u64>,
    received: HashMap<usize, u64>,
}

/// The live communicators, by handle.
static COMMS: Mutex<Option<HashMap<usize, Communicator>>> = Mutex::new(None);

/// A call queued inside a group.
struct Queued {
    comm: usize,
    stream: usize,
    op: Op,
}

#[derive(Clone, Copy)]
enum Op {
    Send { at: u64, bytes: usize, peer: usize },
    Recv { at: u64, bytes: usize, peer: usize },
}

thread_local! {
    /// The calling thread's open groups: their depth, and the calls queued in them.
    static GROUP: RefCell<(u32, Vec<Queued>)> = const { RefCell::new((0, Vec::new())) };
}

/// Runs an NCCL function under the driver's lock, with the communicator `comm`.
fn with_comm(
    name: &'static str,
    comm: Comm,
    body: impl FnOnce(&mut Driver, &mut Communicator) -> Result<(), Failure>,
) -> NcclResult {
    call(name, |d| {
        let mut comms = COMMS.lock().unwrap_or_else(|p| p.into_inner());
        match comms
            .get_or_insert_with(HashMap::new)
            .get_mut(&(comm as usize))
        {
            Some(c) => body(d, c),
            None => fail(
                INVALID_ARGUMENT,
                format!("{comm:?} is not a live communicator"),
            ),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetVersion(version: *mut c_int) -> NcclResult {
    call("ncclGetVersion", |_| crate::put(version, 22_305))
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetErrorString(result: NcclResult) -> *const c_char {
    let text: &'static [u8] = match result {
        0 => b"no error\0",
        SYSTEM_ERROR => b"unhandled system error\0",
        INVALID_ARGUMENT => b"invalid argument\0",
        INVALID_USAGE => b"invalid usage\0",
        REMOTE_ERROR => b"remote process exited or there was a network error\0",
        _ => b"internal error\0",
    };
    text.as_ptr().cast()
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetUniqueId(id: *mut ncclUniqueId) -> NcclResult {
    call("ncclGetUniqueId", |_| {
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.subsec_nanos());
        let name = format!("fake-nccl-{}-{n}-{nanos}", std::process::id());
        // The id holds 128 bytes: a FAKE_NCCL_DIR too deep gives way to the temporary directory.
        let dir = std::env::var_os("FAKE_NCCL_DIR")
            .map(|d| PathBuf::from(d).join(&name))
            .filter(|d| d.as_os_str().len() < 128)
            .unwrap_or_else(|| std::env::temp_dir().join(&name));
        std::fs::create_dir_all(&dir).or_else(|e| system(&dir, e))?;
        let path = dir.to_string_lossy().into_owned().into_bytes();
        if path.len() >= 128 {
            return fail(INTERNAL_ERROR, "the temporary directory's path is too long");
        }
        let mut internal = [0 as c_char; 128];
        for (to, &from) in internal.iter_mut().zip(&path) {
            *to = from as c_char;
        }
        crate::put(id, ncclUniqueId { internal })
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommInitRank(
    comm: *mut Comm,
    ranks: c_int,
    id: ncclUniqueId,
    rank: c_int,
) -> NcclResult {
    call("ncclCommInitRank", |d| {
        if ranks < 1 || rank < 0 || rank >= ranks {
            return fail(INVALID_ARGUMENT, format!("rank {rank} of {ranks}"));
        }
        let bytes: Vec<u8> = id.internal.iter().map(|&c| c as u8).collect();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let dir = PathBuf::from(String::from_utf8_lossy(&bytes[..end]).into_owned());
        if end == 0 || !dir.is_dir() {
            return fail(
                INVALID_ARGUMENT,
                "a unique id that ncclGetUniqueId did not make",
            );
        }
        let ctx = d.current()?;
        let Some(device) = d.device_of(ctx) else {
            return fail(
                INVALID_USAGE,
                "the current context is not a device's primary context",
            );
        };
        let (rank, ranks) = (rank as usize, ranks as usize);
        let me = format!("{} {device} {ranks}", host_name());
        publish(&dir, &format!("member.{rank}"), me.as_bytes())?;
        let mut seen = HashMap::new();
        for r in 0..ranks {
            let theirs =
                String::from_utf8_lossy(&wait_for(&dir, &format!("member.{r}"))?).into_owned();
            let (gpu, count) = theirs.rsplit_once(' ').unwrap_or((&theirs, ""));
            if count != ranks.to_string() {
                return fail(
                    INVALID_USAGE,
                    format!("rank {r} joined {count} ranks, not {ranks}"),
                );
            }
            if let Some(other) = seen.insert(gpu.to_string(), r) {
                return fail(
                    INVALID_USAGE,
                    format!("ranks {other} and {r} use one GPU ({gpu}): Duplicate GPU detected"),
                );
            }
        }
        let handle = Box::into_raw(Box::new(0u8)) as usize;
        let made = Communicator {
            dir,
            rank,
            ranks,
            ctx,
            collectives: 0,
            sent: HashMap::new(),
            received: HashMap::new(),
        };
        let mut comms = COMMS.lock().unwrap_or_else(|p| p.into_inner());
        comms.get_or_insert_with(HashMap::new).insert(handle, made);
        d.log(format_args!(
            "nccl-init rank={rank} ranks={ranks} comm={handle:#x}"
        ));
        crate::put(comm, handle as Comm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommDestroy(comm: Comm) -> NcclResult {
    leave("ncclCommDestroy", comm)
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommAbort(comm: Comm) -> NcclResult {
    leave("ncclCommAbort", comm)
}

/// Takes `comm` out of the live communicators; the last rank to leave removes the directory.
fn leave(name: &'static str, comm: Comm) -> NcclResult {
    let result = with_comm(name, comm, |d, c| {
        publish(&c.dir, &format!("gone.{}", c.rank), b"")?;
        if (0..c.ranks).all(|r| c.dir.join(format!("gone.{r}")).exists()) {
            let _ = std::fs::remove_dir_all(&c.dir);
        }
        d.log(format_args!("nccl-destroy comm={:#x}", comm as usize));
        Ok(())
    });
    if result == 0 {
        let mut comms = COMMS.lock().unwrap_or_else(|p| p.into_inner());
        comms
            .get_or_insert_with(HashMap::new)
            .remove(&(comm as usize));
        // SAFETY: the handle is the box `ncclCommInitRank` made, freed once.
        drop(unsafe { Box::from_raw(comm.cast::<u8>()) });
    }
    result
}

#[no_mangle]
pub unsafe extern "C" fn ncclGroupStart() -> NcclResult {
    call("ncclGroupStart", |_| {
        GROUP.with(|g| g.borrow_mut().0 += 1);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclGroupEnd() -> NcclResult {
    call("ncclGroupEnd", |d| {
        let queued = GROUP.with(|g| {
            let mut g = g.borrow_mut();
            match g.0 {
                0 => fail(INVALID_USAGE, "ncclGroupEnd without ncclGroupStart"),
                1 => {
                    g.0 = 0;
                    Ok(std::mem::take(&mut g.1))
                }
                _ => {
                    g.0 -= 1;
                    Ok(Vec::new())
                }
            }
        })?;
        let mut comms = COMMS.lock().unwrap_or_else(|p| p.into_inner());
        let comms = comms.get_or_insert_with(HashMap::new);
        let (sends, receives): (Vec<_>, Vec<_>) = queued
            .into_iter()
            .partition(|q| matches!(q.op, Op::Send { .. }));
        for q in sends.into_iter().chain(receives) {
            let Some(c) = comms.get_mut(&q.comm) else {
                return fail(INVALID_ARGUMENT, "a communicator destroyed inside a group");
            };
            c.run(d, q.stream, q.op)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclSend(
    buffer: *const c_void,
    count: usize,
    kind: u32,
    peer: c_int,
    comm: Comm,
    stream: *mut c_void,
) -> NcclResult {
    point_to_point(
        "ncclSend",
        (buffer as u64, count, kind),
        peer,
        comm,
        stream,
        true,
    )
}

#[no_mangle]
pub unsafe extern "C" fn ncclRecv(
    buffer: *mut c_void,
    count: usize,
    kind: u32,
    peer: c_int,
    comm: Comm,
    stream: *mut c_void,
) -> NcclResult {
    point_to_point(
        "ncclRecv",
        (buffer as u64, count, kind),
        peer,
        comm,
        stream,
        false,
    )
}

/// `ncclSend` (`send`) or `ncclRecv`: checked now, run now or at the group's end.
fn point_to_point(
    name: &'static str,
    (at, count, kind): (u64, usize, u32),
    peer: c_int,
    comm: Comm,
    stream: *mut c_void,
    send: bool,
) -> NcclResult {
    with_comm(name, comm, |d, c| {
        let (bytes, peer) = (bytes(count, kind)?, c.member("peer", peer)?);
        let stream = c.stream(d, stream as usize)?;
        d.range_in(c.ctx, at, bytes)?;
        let op = match send {
            true => Op::Send { at, bytes, peer },
            false => Op::Recv { at, bytes, peer },
        };
        let queued = GROUP.with(|g| {
            let mut g = g.borrow_mut();
            let open = g.0 > 0;
            if open {
                g.1.push(Queued {
                    comm: comm as usize,
                    stream,
                    op,
                });
            }
            open
        });
        if queued {
            return Ok(());
        }
        c.run(d, stream, op)?;
        if let Op::Send { .. } = op {
            c.taken(peer)?;
        }
        Ok(())
    })
}

impl Communicator {
    /// `rank`, checked to be one of the communicator's (`what` names it).
    fn member(&self, what: &str, rank: c_int) -> Result<usize, Failure> {
        match usize::try_from(rank) {
            Ok(r) if r < self.ranks => Ok(r),
            _ => fail(
                INVALID_ARGUMENT,
                format!("{what} {rank} of {} ranks", self.ranks),
            ),
        }
    }

    /// Checks that `stream` is of this communicator's context; its number.
    fn stream(&self, d: &Driver, stream: usize) -> Result<usize, Failure> {
        match d.current() {
            Ok(ctx) if ctx == self.ctx => d.stream(stream),
            _ => fail(
                INVALID_USAGE,
                "the current context is not the communicator's GPU's",
            ),
        }
    }

    /// Runs a send or a receive.
    fn run(&mut self, d: &mut Driver, stream: usize, op: Op) -> Result<(), Failure> {
        match op {
            Op::Send { at, bytes, peer } => {
                let n = next(&mut self.sent, peer);
                let from = d.range_in(self.ctx, at, bytes)?;
                // SAFETY: `range_in` checked that `bytes` bytes at `from` are device memory.
                let data = unsafe { std::slice::from_raw_parts(from, bytes) };
                publish(&self.dir, &format!("p2p.{}.{peer}.{n}", self.rank), data)?;
                d.log(format_args!(
                    "nccl-send {bytes} stream={stream:#x} src={at:#x} peer={peer}"
                ));
            }
            Op::Recv { at, bytes, peer } => {
                let n = next(&mut self.received, peer);
                let name = format!("p2p.{peer}.{}.{n}", self.rank);
                let data = wait_for(&self.dir, &name)?;
                let _ = std::fs::remove_file(self.dir.join(&name));
                if data.len() != bytes {
                    return fail(
                        INVALID_USAGE,
                        format!(
                            "rank {peer} sent {} bytes; {bytes} were received",
                            data.len()
                        ),
                    );
                }
                let to = d.range_in(self.ctx, at, bytes)?;
                // SAFETY: `range_in` checked that `bytes` bytes at `to` are device memory.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), to, bytes) };
                d.log(format_args!(
                    "nccl-recv {bytes} stream={stream:#x} dst={at:#x} peer={peer}"
                ));
            }
        }
        Ok(())
    }

    /// Waits until rank `peer` took this rank's last message to it.
    fn taken(&self, peer: usize) -> Result<(), Failure> {
        let n = self.sent.get(&peer).copied().unwrap_or(1) - 1;
        let name = format!("p2p.{}.{peer}.{n}", self.rank);
        wait_until(
            || !self.dir.join(&name).exists(),
            || {
                format!(
                    "rank {peer} did not receive message {n} of rank {}",
                    self.rank
                )
            },
        )
    }

    /// A collective: publishes this rank's call (`head`) and `data`, and returns every
    /// rank's data in rank order, having checked that they made the same call.
    fn collective(&mut self, head: &str, data: &[u8]) -> Result<Vec<Vec<u8>>, Failure> {
        let seq = self.collectives;
        self.collectives += 1;
        let mut mine = format!("{head}\n").into_bytes();
        mine.extend_from_slice(data);
        publish(&self.dir, &format!("coll.{seq}.{}", self.rank), &mine)?;
        (0..self.ranks)
            .map(|r| {
                let theirs = wait_for(&self.dir, &format!("coll.{seq}.{r}"))?;
                let split = theirs.iter().position(|&b| b == b'\n').unwrap_or(0);
                let their_head = String::from_utf8_lossy(&theirs[..split]);
                if their_head != head {
                    return fail(
                        INVALID_USAGE,
                        format!(
                            "collective {seq}: rank {} made `{head}`, rank {r} `{their_head}`",
                            self.rank
                        ),
                    );
                }
                Ok(theirs[split + 1..].to_vec())
            })
            .collect()
    }
}

#[no_mangle]
pub unsafe extern "C" fn ncclBroadcast(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    kind: u32,
    root: c_int,
    comm: Comm,
    stream: *mut c_void,
) -> NcclResult {
    with_comm("ncclBroadcast", comm, |d, c| {
        let (bytes, root) = (bytes(count, kind)?, c.member("root", root)?);
        let stream = c.stream(d, stream as usize)?;
        let to = d.range_in(c.ctx, recv as u64, bytes)?;
        let data = match c.rank == root {
            true => {
                let from = d.range_in(c.ctx, send as u64, bytes)?;
                // SAFETY: `range_in` checked that `bytes` bytes at `from` are device memory.
                unsafe { std::slice::from_raw_parts(from, bytes) }.to_vec()
            }
            false => Vec::new(),
        };
        let all = c.collective(&format!("broadcast {count} {kind} {root}"), &data)?;
        // SAFETY: `to` holds `bytes` bytes; the root's data has that many.
        unsafe { std::ptr::copy(all[root].as_ptr(), to, bytes) };
        d.log(format_args!(
            "nccl-broadcast {bytes} stream={stream:#x} dst={:#x} src={:#x}",
            recv as u64, send as u64
        ));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclAllReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    kind: u32,
    op: u32,
    comm: Comm,
    stream: *mut c_void,
) -> NcclResult {
    let call = Reduction {
        send,
        recv,
        count,
        kind,
        op,
    };
    with_comm("ncclAllReduce", comm, |d, c| {
        call.run(d, c, stream as usize, None)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    kind: u32,
    op: u32,
    root: c_int,
    comm: Comm,
    stream: *mut c_void,
) -> NcclResult {
    let call = Reduction {
        send,
        recv,
        count,
        kind,
        op,
    };
    with_comm("ncclReduce", comm, |d, c| {
        let root = c.member("root", root)?;
        call.run(d, c, stream as usize, Some(root))
    })
}

/// The arguments of `ncclAllReduce` and `ncclReduce`.
struct Reduction {
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    kind: u32,
    op: u32,
}

impl Reduction {
    /// Reduces every rank's `send` into `recv` on every rank (`root` `None`) or on `root`'s.
    fn run(
        &self,
        d: &mut Driver,
        c: &mut Communicator,
        stream: usize,
        root: Option<usize>,
    ) -> Result<(), Failure> {
        let (count, kind, op) = (self.count, self.kind, self.op);
        let bytes = bytes(count, kind)?;
        if op > 3 {
            return fail(INVALID_ARGUMENT, format!("no reduction {op}"));
        }
        let stream = c.stream(d, stream)?;
        let (send, recv) = (self.send as u64, self.recv as u64);
        let from = d.range_in(c.ctx, send, bytes)?;
        let writes = root.is_none_or(|r| r == c.rank);
        let to = match writes {
            true => Some(d.range_in(c.ctx, recv, bytes)?),
            false => None,
        };
        // SAFETY: `range_in` checked that `bytes` bytes at `from` are device memory.
        let mine = unsafe { std::slice::from_raw_parts(from, bytes) }.to_vec();
        let head = format!("reduce {count} {kind} {op} {root:?}");
        let all = c.collective(&head, &mine)?;
        if let Some(to) = to {
            let reduced = reduce(kind, op, &all)?;
            // SAFETY: `to` holds `bytes` bytes, as many as the reduction.
            unsafe { std::ptr::copy_nonoverlapping(reduced.as_ptr(), to, bytes) };
        }
        let what = if root.is_none() {
            "allreduce"
        } else {
            "reduce"
        };
        let dst = to.map_or(String::new(), |_| format!(" dst={recv:#x}"));
        d.log(format_args!(
            "nccl-{what} {bytes} stream={stream:#x}{dst} src={send:#x}"
        ));
        Ok(())
    }
}

/// The element-wise reduction `op` (`ncclSum`, `ncclProd`, `ncclMax`, `ncclMin`), in rank
/// order, of arrays of NCCL type `kind`.
fn reduce(kind: u32, op: u32, all: &[Vec<u8>]) -> Result<Vec<u8>, Failure> {
    macro_rules! fold {
        ($t:ty, $add:expr, $mul:expr) => {{
            const N: usize = std::mem::size_of::<$t>();
            let read = |b: &[u8]| <$t>::from_le_bytes(b.try_into().expect("N bytes"));
            let combine = |a: $t, b: $t| -> $t {
                match op {
                    0 => $add(a, b),
                    1 => $mul(a, b),
                    2 => {
                        if b > a {
                            b
                        } else {
                            a
                        }
                    }
                    _ => {
                        if b < a {
                            b
                        } else {
                            a
                        }
                    }
                }
            };
            let mut out = all[0].clone();
            for other in &all[1..] {
                for (o, t) in out.chunks_mut(N).zip(other.chunks(N)) {
                    o.copy_from_slice(&combine(read(o), read(t)).to_le_bytes());
                }
            }
            Ok(out)
        }};
    }
    macro_rules! int {
        ($t:ty) => {
            fold!($t, <$t>::wrapping_add, <$t>::wrapping_mul)
        };
    }
    match kind {
        _ if op > 3 => fail(INTERNAL_ERROR, format!("the fake has no reduction {op}")),
        0 => int!(i8),
        1 => int!(u8),
        2 => int!(i32),
        3 => int!(u32),
        4 => int!(i64),
        5 => int!(u64),
        7 => fold!(f32, |a: f32, b: f32| a + b, |a: f32, b: f32| a * b),
        8 => fold!(f64, |a: f64, b: f64| a + b, |a: f64, b: f64| a * b),
        _ => fail(
            INTERNAL_ERROR,
            format!("the fake does not reduce type {kind}"),
        ),
    }
}

/// The bytes of `count` elements of NCCL type `kind`.
fn bytes(count: usize, kind: u32) -> Result<usize, Failure> {
    match count.checked_mul(size_of(kind)?) {
        Some(bytes) => Ok(bytes),
        None => fail(INVALID_ARGUMENT, format!("{count} elements of type {kind}")),
    }
}

/// The bytes of an element of NCCL type `kind`.
fn size_of(kind: u32) -> Result<usize, Failure> {
    match kind {
        0 | 1 | 10 | 11 => Ok(1),
        6 | 9 => Ok(2),
        2 | 3 | 7 => Ok(4),
        4 | 5 | 8 => Ok(8),
        _ => fail(INVALID_ARGUMENT, format!("no NCCL type {kind}")),
    }
}

/// The number of the next message to or from `peer`.
fn next(counts: &mut HashMap<usize, u64>, peer: usize) -> u64 {
    let n = counts.entry(peer).or_insert(0);
    *n += 1;
    *n - 1
}

/// Writes `data` as `dir/name`, whole or not at all as the other ranks see it.
fn publish(dir: &Path, name: &str, data: &[u8]) -> Result<(), Failure> {
    let part = dir.join(format!(".{name}.{}", std::process::id()));
    std::fs::write(&part, data).or_else(|e| system(&part, e))?;
    std::fs::rename(&part, dir.join(name)).or_else(|e| system(&part, e))
}

/// The contents of `dir/name`, once another rank published it.
fn wait_for(dir: &Path, name: &str) -> Result<Vec<u8>, Failure> {
    let path = dir.join(name);
    let mut data = None;
    wait_until(
        || {
            data = std::fs::read(&path).ok();
            data.is_some()
        },
        || format!("no rank published {name}"),
    )?;
    Ok(data.unwrap_or_default())
}

/// Polls `done` until it holds, or fails after `FAKE_NCCL_TIMEOUT` seconds.
fn wait_until(
    mut done: impl FnMut() -> bool,
    what: impl FnOnce() -> String,
) -> Result<(), Failure> {
    let limit = std::env::var("FAKE_NCCL_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(60), Duration::from_secs);
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            return fail(REMOTE_ERROR, format!("{} in {limit:?}", what()));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn system<T>(path: &Path, e: std::io::Error) -> Result<T, Failure> {
    fail(SYSTEM_ERROR, format!("{}: {e}", path.display()))
}

/// This machine's name, which tells GPUs of two hosts apart.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
