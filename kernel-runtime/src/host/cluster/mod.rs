//! Many processes over MPI, behind the `mpi` feature: [`Cluster`] is this process's place in
//! the job `mpirun` or `srun` started (its rank among how many), the device it computes on, and
//! what its device arrays take part in: broadcast, all-reduce and reduce, gather, all-gather and
//! scatter (`parts.rs`), sends and receives between two ranks (`p2p.rs`), and the exchange of
//! halos between ranks that split an array by rows or in blocks (`halo.rs`).
//!
//! The layer sits on the `mpi` crate. Each rank takes a GPU by its rank on its node (local rank
//! modulo the node's GPUs), or the CPU backend where there is none, and `KERNEL_DEVICE` chooses
//! as it does for [`Device::from_env`].
//!
//! Where every rank holds a GPU of its own and finds NCCL, the collectives go through NCCL
//! ([`Cluster::uses_nccl`]): GPU memory to GPU memory, queued on the device's stream in order
//! with the kernels. Elsewhere (the CPU backend, ranks sharing a GPU, no `libnccl.so`, or
//! `KERNEL_NCCL=0`) they stage the arrays through host memory and move them over MPI.
//!
//! [`Cluster::run`] ends the whole job when one rank fails: an error or a panic on any rank
//! calls `MPI_Abort`, so no rank waits forever in a collective for one that stopped, and
//! `mpirun` ends every rank when one dies.
//!
//! NCCL's side is `host::nccl`.

use std::fmt::Display;
use std::ops::Range;

use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

use super::array::{DeviceArray, Rank};
use super::device::Device;
use super::error::Error;
use super::nccl::Nccl;
use crate::device_copy::DeviceCopy;

mod halo;
mod p2p;
mod parts;

pub use super::reduce_op::ReduceOp;

/// This process's place in an MPI job, and its device (see the module doc).
///
/// ```no_run
/// use kernel_runtime::cluster::Cluster;
/// Cluster::run(|cluster| {
///     let mut x = cluster.device().to_device(&[cluster.rank() as f64; 4][..])?;
///     cluster.all_reduce_sum(&mut x)?;
///     if cluster.rank() == 0 {
///         println!("{:?}", x.to_vec()?);
///     }
///     Ok::<(), kernel_runtime::Error>(())
/// })
/// ```
pub struct Cluster {
    // Dropped first: leaves the NCCL communicator while MPI and the GPU live.
    nccl: Option<Nccl>,
    world: SimpleCommunicator,
    local_rank: usize,
    device: Device,
    // Dropped last: finalises MPI.
    _universe: Universe,
}

impl Cluster {
    /// Initialises MPI and chooses this rank's device.
    ///
    /// # Errors
    /// [`Error::Mpi`] where MPI was initialised already in this process, or where
    /// `KERNEL_NCCL=1` and some rank cannot use NCCL; the errors of opening the rank's GPU and
    /// of joining NCCL.
    pub fn init() -> Result<Cluster, Error> {
        let universe = mpi::initialize().ok_or_else(|| Error::Mpi {
            message: "MPI is initialised already: make one Cluster per process".into(),
        })?;
        let world = universe.world();
        let node = world.split_shared(world.rank());
        let (local_rank, local_ranks) = (node.rank() as usize, node.size() as usize);
        let device = match std::env::var_os("KERNEL_DEVICE") {
            Some(_) => Device::from_env()?,
            None => match Device::gpu_count() {
                0 => Device::cpu(),
                gpus => Device::cuda(local_rank % gpus)?,
            },
        };
        let nccl = Nccl::open(&world, local_ranks, &device)?;
        Ok(Cluster {
            nccl,
            world,
            local_rank,
            device,
            _universe: universe,
        })
    }

    /// Runs `work` on this rank and exits the process: with status 0 where it returns `Ok`
    /// (after MPI is finalised), else, having printed the error, through `MPI_Abort`, which
    /// ends every rank of the job. A panic in `work` aborts the job likewise.
    pub fn run<E: Display>(work: impl FnOnce(&Cluster) -> Result<(), E>) -> ! {
        let cluster = match Cluster::init() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let worked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&cluster)));
        let failure = match worked {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some("a panic (reported above)".to_string()),
        };
        if let Some(failure) = failure {
            eprintln!(
                "error on rank {}: {failure}; ending every rank",
                cluster.rank()
            );
            cluster.world.abort(1);
        }
        drop(cluster);
        std::process::exit(0)
    }

    /// This process's rank, from 0.
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    /// How many ranks the job has.
    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// This process's rank among the ranks of its node, which picks its GPU.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// The device this rank computes on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the collectives on arrays of [`device`](Self::device) go through NCCL (see the
    /// module doc), rather than through host memory and MPI.
    pub fn uses_nccl(&self) -> bool {
        self.nccl.is_some()
    }

    /// Waits until every rank has called it.
    pub fn barrier(&self) {
        self.world.barrier();
    }

    /// This rank's share of `n` items split in order over the ranks, as evenly as whole items
    /// allow (the first `n % size` ranks take one more).
    pub fn share(&self, n: usize) -> Range<usize> {
        share(n, self.size(), self.rank())
    }

    /// Makes `a` on every rank a copy of `a` on rank `root`.
    pub fn broadcast<T, D>(&self, a: &mut DeviceArray<T, D>, root: usize) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        let root_rank = self.peer(root)?;
        if let Some(nccl) = self.nccl_for(a.device())? {
            return nccl.broadcast(a, root);
        }
        let mut values = a.to_vec()?;
        self.world
            .process_at_rank(root_rank)
            .broadcast_into(&mut values[..]);
        a.copy_from_host_at(0, &values)
    }

    /// Makes `a` on every rank the element-wise sum of `a` over the ranks:
    /// [`all_reduce`](Self::all_reduce) with [`ReduceOp::Sum`].
    pub fn all_reduce_sum<T, D>(&self, a: &mut DeviceArray<T, D>) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        self.all_reduce(a, ReduceOp::Sum)
    }

    /// Makes `a` on every rank the element-wise reduction `op` of `a` over the ranks (mpi4py's
    /// `comm.Allreduce(MPI.IN_PLACE, a, op)`). A floating-point sum's or product's rounding
    /// depends on the order of the operations, and so on the number of ranks:
    /// [`gather`](Self::gather) and a reduction in a fixed order give the same bits for any
    /// number.
    ///
    /// ```no_run
    /// use kernel_runtime::cluster::{Cluster, ReduceOp};
    /// Cluster::run(|cluster| {
    ///     let mut worst = cluster.device().to_device(&[cluster.rank() as f32 * 0.5])?;
    ///     cluster.all_reduce(&mut worst, ReduceOp::Max)?;
    ///     Ok::<(), kernel_runtime::Error>(())
    /// })
    /// ```
    pub fn all_reduce<T, D>(&self, a: &mut DeviceArray<T, D>, op: ReduceOp) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        if let Some(done) = self
            .nccl_for(a.device())?
            .and_then(|n| n.reduce(a, op, None))
        {
            return done;
        }
        let mine = a.to_vec()?;
        let mut all = mine.clone();
        self.world
            .all_reduce_into(&mine[..], &mut all[..], mpi_op(op));
        a.copy_from_host_at(0, &all)
    }

    /// Makes `a` on rank `root` the element-wise reduction `op` of `a` over the ranks, leaving
    /// the other ranks' `a` as it was (mpi4py's `comm.Reduce(MPI.IN_PLACE, a, op, root)`).
    ///
    /// # Errors
    /// [`Error::Mpi`] where `root` is not a rank of the job.
    pub fn reduce<T, D>(
        &self,
        a: &mut DeviceArray<T, D>,
        op: ReduceOp,
        root: usize,
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        let root_process = self.world.process_at_rank(self.peer(root)?);
        if let Some(done) = self
            .nccl_for(a.device())?
            .and_then(|n| n.reduce(a, op, Some(root)))
        {
            return done;
        }
        let mine = a.to_vec()?;
        if self.rank() != root {
            root_process.reduce_into(&mine[..], mpi_op(op));
            return Ok(());
        }
        let mut all = mine.clone();
        root_process.reduce_into_root(&mine[..], &mut all[..], mpi_op(op));
        a.copy_from_host_at(0, &all)
    }

    /// The communicator that moves arrays of `device`, where NCCL does.
    ///
    /// # Errors
    /// [`Error::Mpi`] for an array of another device than this rank's while NCCL serves it:
    /// every rank must take part in a collective the same way.
    fn nccl_for(&self, device: &Device) -> Result<Option<&Nccl>, Error> {
        match &self.nccl {
            Some(nccl) if !nccl.serves(device) => Err(Error::Mpi {
                message: format!(
                    "the collectives go through NCCL on {}, and take arrays of that device \
                     alone, not of {}; copy the array there with `to_device`",
                    self.device.name(),
                    device.name()
                ),
            }),
            nccl => Ok(nccl.as_ref()),
        }
    }

    /// The MPI rank of `rank`, checked to be one of the job's.
    fn peer(&self, rank: usize) -> Result<mpi::Rank, Error> {
        if rank >= self.size() {
            return Err(Error::Mpi {
                message: format!("rank {rank} is not in this job of {} ranks", self.size()),
            });
        }
        Ok(rank as mpi::Rank)
    }
}

/// MPI's operation for `op`.
fn mpi_op(op: ReduceOp) -> SystemOperation {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Prod => SystemOperation::product(),
        ReduceOp::Max => SystemOperation::max(),
        ReduceOp::Min => SystemOperation::min(),
    }
}

/// Rank `rank`'s share of `n` items split in order over `size` ranks.
fn share(n: usize, size: usize, rank: usize) -> Range<usize> {
    let (base, extra) = (n / size, n % size);
    let start = rank * base + rank.min(extra);
    start..start + base + usize::from(rank < extra)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_cover_the_items_in_order() {
        for (n, size) in [(10, 3), (2, 4), (0, 2), (7, 1)] {
            let parts: Vec<_> = (0..size).map(|r| share(n, size, r)).collect();
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts[size - 1].end, n);
            assert!(parts.windows(2).all(|w| w[0].end == w[1].start));
            assert!(parts
                .iter()
                .all(|p| p.len() == n / size || p.len() == n / size + 1));
        }
    }
}
