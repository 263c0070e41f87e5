//! NCCL, for the collectives of a [`Cluster`](super::cluster::Cluster) whose ranks each hold a
//! GPU of their own: the arrays stay in device memory and move between the GPUs over NVLink,
//! PCIe or the network, on the device's stream, instead of through host memory and MPI.
//!
//! The library is cudarc's binding, loaded at run time: a job finds `libnccl.so` on the library
//! path or goes through MPI. Every rank must agree, since a collective is either NCCL's on
//! every rank or MPI's on every rank; [`Nccl::open`] decides for the whole job (`KERNEL_NCCL`:
//! `0` never, `1` always or fail, unset where it can). The communicator's unique id goes from
//! rank 0 to the others over MPI.

use std::ffi::c_void;

use cudarc::nccl::{result, sys};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

use super::array::{DeviceArray, Rank};
use super::cuda::CudaDevice;
use super::device::Device;
use super::error::Error;
use super::order::{Access, Use};
use super::reduce_op::ReduceOp;
use crate::device_copy::DeviceCopy;

/// `KERNEL_NCCL`: `0` keeps every collective on MPI, `1` requires NCCL.
const KERNEL_NCCL: &str = "KERNEL_NCCL";

/// This rank's NCCL communicator, on its GPU.
pub(crate) struct Nccl {
    comm: sys::ncclComm_t,
    device: Device,
}

/// One transfer of a group: a send of `bytes` at `at` to rank `peer`, or a receive into them.
pub(crate) struct Transfer {
    peer: usize,
    at: u64,
    bytes: usize,
    send: bool,
}

impl Transfer {
    /// A send of the `bytes` bytes of device memory at `at` to rank `peer`.
    pub(crate) fn send(peer: usize, at: u64, bytes: usize) -> Transfer {
        Transfer {
            peer,
            at,
            bytes,
            send: true,
        }
    }

    /// A receive of `bytes` bytes from rank `peer` into device memory at `at`.
    pub(crate) fn recv(peer: usize, at: u64, bytes: usize) -> Transfer {
        Transfer {
            peer,
            at,
            bytes,
            send: false,
        }
    }
}

impl Nccl {
    /// The job's NCCL communicator on this rank's `device`, where every rank can have one:
    /// each holds a GPU of its own on its node (`local_ranks` ranks share the node) and loads
    /// NCCL, and `KERNEL_NCCL` is not `0`. Collective over `world`.
    ///
    /// # Errors
    /// [`Error::Mpi`] where `KERNEL_NCCL=1` and some rank cannot use NCCL; NCCL's errors in
    /// making the communicator.
    pub(crate) fn open(
        world: &SimpleCommunicator,
        local_ranks: usize,
        device: &Device,
    ) -> Result<Option<Nccl>, Error> {
        let wanted = std::env::var(KERNEL_NCCL).ok();
        let here = match (wanted.as_deref(), device.gpu()) {
            (Some("0"), _) => Err("KERNEL_NCCL=0".to_string()),
            (_, None) => Err("a rank computes on the CPU backend".into()),
            (_, Some(_)) if local_ranks > Device::gpu_count() => Err(format!(
                "{local_ranks} ranks share this node's {} GPU(s), and NCCL needs one per rank",
                Device::gpu_count()
            )),
            // SAFETY: loading the library runs only its initialisers.
            (_, Some(_)) if !guarded(|| unsafe { sys::is_culib_present() }) => {
                Err("libnccl.so is not on the library path".into())
            }
            _ => Ok(()),
        };
        let mut every = 0i32;
        world.all_reduce_into(
            &i32::from(here.is_ok()),
            &mut every,
            SystemOperation::logical_and(),
        );
        match (every, wanted.as_deref()) {
            (0, Some("1")) => Err(Error::Mpi {
                message: format!(
                    "KERNEL_NCCL=1, but not every rank can use NCCL{}",
                    here.err().map_or(String::new(), |why| format!(": {why}"))
                ),
            }),
            (0, _) => Ok(None),
            _ => Nccl::init(world, device).map(Some),
        }
    }

    /// Makes the communicator: rank 0's unique id, broadcast over MPI, then every rank joins.
    fn init(world: &SimpleCommunicator, device: &Device) -> Result<Nccl, Error> {
        let mut id = [0u8; 128];
        if world.rank() == 0 {
            let made = call("making NCCL's unique id", result::get_uniqueid)?;
            for (to, &from) in id.iter_mut().zip(made.internal.iter()) {
                *to = from as u8;
            }
        }
        world.process_at_rank(0).broadcast_into(&mut id[..]);
        let unique = sys::ncclUniqueId {
            internal: id.map(|b| b as std::ffi::c_char),
        };
        let mut comm = std::ptr::null_mut();
        let (ranks, rank) = (world.size(), world.rank());
        let gpu = gpu(device);
        gpu.queue("joining the NCCL communicator", &[], |_| {
            // SAFETY: `comm` is an out-pointer; the context of this rank's GPU is current.
            call("joining the NCCL communicator", || unsafe {
                result::comm_init_rank(&mut comm, ranks, unique, rank)
            })?;
            Ok(())
        })?;
        Ok(Nccl {
            comm,
            device: device.clone(),
        })
    }

    /// Whether the collectives on arrays of `device` go through this communicator.
    pub(crate) fn serves(&self, device: &Device) -> bool {
        *device == self.device
    }

    /// `ncclBroadcast` of `a`'s bytes from rank `root`, in place.
    pub(crate) fn broadcast<T: DeviceCopy, D: Rank>(
        &self,
        a: &mut DeviceArray<T, D>,
        root: usize,
    ) -> Result<(), Error> {
        let (at, bytes) = (*a.device_addr(), a.len() * std::mem::size_of::<T>());
        let at = at as usize as *mut c_void;
        let (what, comm) = ("an NCCL broadcast", self.comm);
        self.queue(what, &[(a.span(), Access::Write)], |s| {
            // SAFETY: `at` holds `bytes` bytes of this GPU's memory, ordered on the stream.
            call(what, || unsafe {
                result::broadcast(at, at, bytes, BYTES, root as i32, comm, s)
            })
        })
    }

    /// `ncclAllReduce` of `a` in place with `op` (`root` `None`), or `ncclReduce` onto rank
    /// `root`'s `a`, where NCCL has `T`'s type; `None` where not.
    pub(crate) fn reduce<T: DeviceCopy, D: Rank>(
        &self,
        a: &mut DeviceArray<T, D>,
        op: ReduceOp,
        root: Option<usize>,
    ) -> Option<Result<(), Error>> {
        let kind = data_type::<T>()?;
        let at = *a.device_addr() as usize as *mut c_void;
        let len = a.len();
        let op = match op {
            ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
            ReduceOp::Prod => sys::ncclRedOp_t::ncclProd,
            ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
            ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
        };
        let comm = self.comm;
        let what = match root {
            None => "an NCCL all-reduce",
            Some(_) => "an NCCL reduce",
        };
        Some(self.queue(what, &[(a.span(), Access::Write)], |s| {
            // SAFETY: `at` holds `len` elements of `kind` in this GPU's memory.
            call(what, || unsafe {
                match root {
                    None => result::all_reduce(at, at, len, kind, op, comm, s),
                    Some(r) => result::reduce(at, at, len, kind, op, r as i32, comm, s),
                }
            })
        }))
    }

    /// Sends and receives as one group, so that no order of the ranks' calls deadlocks, after
    /// the work the array uses `uses` conflict with.
    pub(crate) fn group(&self, transfers: &[Transfer], uses: &[Use<'_>]) -> Result<(), Error> {
        let comm = self.comm;
        self.queue("NCCL sends and receives", uses, |s| {
            call("starting an NCCL group", result::group_start)?;
            for t in transfers.iter().filter(|t| t.bytes > 0) {
                let (at, peer) = (t.at as usize as *mut c_void, t.peer as i32);
                // SAFETY: the caller gives ranges of this GPU's memory, ordered on the stream.
                call("an NCCL send or receive", || unsafe {
                    match t.send {
                        true => result::send(at, t.bytes, BYTES, peer, comm, s),
                        false => result::recv(at, t.bytes, BYTES, peer, comm, s),
                    }
                })?;
            }
            call("ending an NCCL group", result::group_end)
        })
    }

    /// Queues `work` on the GPU's stream after the conflicting work on `uses`.
    fn queue(
        &self,
        what: &str,
        uses: &[Use<'_>],
        work: impl FnOnce(sys::cudaStream_t) -> Result<result::NcclStatus, NcclFailure>,
    ) -> Result<(), Error> {
        gpu(&self.device).queue(what, uses, |stream| {
            work(stream.cast())?;
            Ok(())
        })
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        // The communicator's queued work ends first; a failure here is the GPU's, which the
        // program has seen or will see elsewhere.
        let _ = gpu(&self.device).wait_own_stream();
        // SAFETY: the communicator is this value's, no call uses it any more, and none of its
        // work is still queued.
        let _ = call("leaving the NCCL communicator", || unsafe {
            result::comm_destroy(self.comm)
        });
    }
}

/// The device's GPU: a communicator is made only on a GPU.
fn gpu(device: &Device) -> &CudaDevice {
    device.gpu().expect("NCCL is used on GPUs alone")
}

/// Any element type, as bytes: what broadcasts, sends and receives move.
const BYTES: sys::ncclDataType_t = sys::ncclDataType_t::ncclUint8;

/// NCCL's name of `T`, where NCCL reduces it.
fn data_type<T: 'static>() -> Option<sys::ncclDataType_t> {
    use std::any::TypeId;
    use sys::ncclDataType_t as N;
    let t = TypeId::of::<T>();
    let table = [
        (TypeId::of::<i8>(), N::ncclInt8),
        (TypeId::of::<u8>(), N::ncclUint8),
        (TypeId::of::<i32>(), N::ncclInt32),
        (TypeId::of::<u32>(), N::ncclUint32),
        (TypeId::of::<i64>(), N::ncclInt64),
        (TypeId::of::<u64>(), N::ncclUint64),
        (TypeId::of::<half::f16>(), N::ncclFloat16),
        (TypeId::of::<half::bf16>(), N::ncclBfloat16),
        (TypeId::of::<f32>(), N::ncclFloat32),
        (TypeId::of::<f64>(), N::ncclFloat64),
    ];
    table.iter().find(|(id, _)| *id == t).map(|&(_, n)| n)
}

/// Runs the NCCL call `what`; its error, or a panic of the loader (a function missing from an
/// old NCCL), as one that says what failed.
fn call<T>(what: &str, f: impl FnOnce() -> Result<T, result::NcclError>) -> Result<T, NcclFailure> {
    let failed = |message| NcclFailure {
        what: what.to_string(),
        message,
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(failed(describe(e.0))),
        Err(payload) => Err(failed(format!(
            "NCCL is missing a function: {}",
            crate::cpu::fault::describe_panic(payload)
        ))),
    }
}

/// `ncclInvalidUsage (invalid usage)`: the result's name and NCCL's words for it.
fn describe(e: sys::ncclResult_t) -> String {
    let words = std::panic::catch_unwind(|| {
        // SAFETY: NCCL returns a static NUL-terminated string for every result.
        unsafe { std::ffi::CStr::from_ptr(sys::ncclGetErrorString(e)) }
            .to_string_lossy()
            .into_owned()
    });
    match words {
        Ok(words) => format!("NCCL returned {e:?} ({words})"),
        Err(_) => format!("NCCL returned {e:?}"),
    }
}

/// Whether `f` ran without a panic and said yes.
fn guarded(f: impl FnOnce() -> bool) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(false)
}

/// A failed NCCL call: which, and why.
struct NcclFailure {
    what: String,
    message: String,
}

impl From<NcclFailure> for Error {
    fn from(e: NcclFailure) -> Error {
        Error::Cuda {
            op: e.what,
            message: format!("{}; KERNEL_NCCL=0 keeps the collectives on MPI", e.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::data_type;
    use cudarc::nccl::sys::ncclDataType_t as N;

    #[test]
    fn types_nccl_sums_are_named_and_others_are_not() {
        assert_eq!(data_type::<f32>(), Some(N::ncclFloat32));
        assert_eq!(data_type::<u64>(), Some(N::ncclUint64));
        assert_eq!(data_type::<half::bf16>(), Some(N::ncclBfloat16));
        assert_eq!(data_type::<i16>(), None);
        assert_eq!(data_type::<(f32, f32)>(), None);
    }
}
