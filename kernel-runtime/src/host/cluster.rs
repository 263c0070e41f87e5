//! Many processes over MPI, behind the `mpi` feature: [`Cluster`] is this process's place in
//! the job `mpirun` or `srun` started (its rank among how many), the device it computes on, and
//! the collectives its device arrays take part in: broadcast, all-reduce, gather, and the
//! exchange of halos between ranks that split an array by rows or in blocks.
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

use std::fmt::Display;
use std::ops::Range;

use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};
use ndarray::Ix2;

use super::array::{DeviceArray, Rank};
use super::device::Device;
use super::error::Error;
use super::nccl::{Nccl, Transfer};
use super::order::Access;
use crate::device_copy::DeviceCopy;

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

    /// Makes `a` on every rank the element-wise sum of `a` over the ranks. A floating-point
    /// sum's rounding depends on MPI's order of addition, and so on the number of ranks:
    /// [`gather`](Self::gather) and a sum in a fixed order give the same bits for any number.
    pub fn all_reduce_sum<T, D>(&self, a: &mut DeviceArray<T, D>) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        if let Some(summed) = self.nccl_for(a.device())?.and_then(|n| n.all_reduce_sum(a)) {
            return summed;
        }
        let mine = a.to_vec()?;
        let mut sum = mine.clone();
        self.world
            .all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum());
        a.copy_from_host_at(0, &sum)
    }

    /// The elements of `a` on every rank, concatenated in rank order, on rank `root` (`None`
    /// on the others); the arrays may differ in length.
    pub fn gather<T, D>(&self, a: &DeviceArray<T, D>, root: usize) -> Result<Option<Vec<T>>, Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        let root_process = self.world.process_at_rank(self.peer(root)?);
        let nccl = self.nccl_for(a.device())?;
        let len = a.len() as mpi::Count;
        if self.rank() != root {
            root_process.gather_into(&len);
            match nccl {
                Some(nccl) => {
                    let bytes = a.len() * std::mem::size_of::<T>();
                    let send = Transfer::send(root, *a.device_addr(), bytes);
                    nccl.group(&[send], &[(a.users(), Access::Read)])?;
                }
                None => root_process.gather_varcount_into(&a.to_vec()?[..]),
            }
            return Ok(None);
        }
        let mut counts = vec![0 as mpi::Count; self.size()];
        root_process.gather_into_root(&len, &mut counts[..]);
        if let Some(nccl) = nccl {
            return gather_on_gpus(nccl, a, root, &counts).map(Some);
        }
        let mine = a.to_vec()?;
        let displs: Vec<mpi::Count> = counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let total = counts.iter().map(|&c| c as usize).sum();
        let mut all = crate::host::array::zeroed_vec::<T>(total, || "the host".into())?;
        let mut parts = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        root_process.gather_varcount_into_root(&mine[..], &mut parts);
        Ok(Some(all))
    }

    /// Exchanges halo rows between ranks that split a 2-D array by rows in rank order (rank 0
    /// at the top). `a` holds this rank's rows, with `halo` rows of the rank above before them
    /// (none on rank 0) and `halo` rows of the rank below after them (none on the last rank).
    /// This rank's first and last `halo` own rows go to its neighbours' halos, and theirs come
    /// into its own: after the call, a stencil of reach `halo` computes this rank's rows as on
    /// the whole array.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] where `a` has fewer rows than its halos and `halo` own rows.
    pub fn exchange_rows<T>(&self, a: &mut DeviceArray<T, Ix2>, halo: usize) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
    {
        let me = self.rank();
        let above = me.checked_sub(1);
        let below = Some(me + 1).filter(|&r| r < self.size());
        self.exchange_vertical(a, halo, (above, below))
    }

    /// Exchanges halos between ranks that split a 2-D array in blocks over a process grid of
    /// `grid = (rows, cols)` ranks, in row-major order (rank `r * cols + c` holds block `(r,
    /// c)`; [`block`](Self::block) gives its rows and columns). `a` holds this rank's block
    /// with `halo` rows or columns of each neighbour around it, on the sides that have one.
    /// After the call every halo holds the neighbours' elements, corners included (the rows
    /// are exchanged first, then the columns, whole): a stencil of reach `halo` computes the
    /// block as on the whole array.
    ///
    /// # Errors
    /// [`Error::Mpi`] where the grid does not have this job's number of ranks;
    /// [`Error::ShapeMismatch`] where the block is smaller than its halos and `halo` own rows
    /// and columns.
    pub fn exchange_blocks<T>(
        &self,
        a: &mut DeviceArray<T, Ix2>,
        grid: (usize, usize),
        halo: usize,
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
    {
        let (r, c) = self.grid_place(grid)?;
        let me = self.rank();
        let north = (r > 0).then(|| me - grid.1);
        let south = (r + 1 < grid.0).then(|| me + grid.1);
        let west = (c > 0).then(|| me - 1);
        let east = (c + 1 < grid.1).then(|| me + 1);
        self.exchange_vertical(a, halo, (north, south))?;
        self.exchange_horizontal(a, halo, (west, east))
    }

    /// This rank's block of an array of `shape` split over a process grid of `grid = (rows,
    /// cols)` ranks in row-major order: its rows and its columns.
    ///
    /// # Errors
    /// [`Error::Mpi`] where the grid does not have this job's number of ranks.
    pub fn block(
        &self,
        shape: (usize, usize),
        grid: (usize, usize),
    ) -> Result<(Range<usize>, Range<usize>), Error> {
        let (r, c) = self.grid_place(grid)?;
        Ok((share(shape.0, grid.0, r), share(shape.1, grid.1, c)))
    }

    /// This rank's row and column in a process grid of `grid` ranks.
    fn grid_place(&self, grid: (usize, usize)) -> Result<(usize, usize), Error> {
        if grid.0.checked_mul(grid.1) != Some(self.size()) {
            return Err(Error::Mpi {
                message: format!(
                    "a process grid of {} × {} is not this job's {} ranks",
                    grid.0,
                    grid.1,
                    self.size()
                ),
            });
        }
        Ok((self.rank() / grid.1, self.rank() % grid.1))
    }

    /// Exchanges `halo` whole rows of `a` with the ranks `up` and `down` (where there are).
    fn exchange_vertical<T>(
        &self,
        a: &mut DeviceArray<T, Ix2>,
        halo: usize,
        (up, down): (Option<usize>, Option<usize>),
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
    {
        let (rows, cols) = a.dim();
        let own = halo_room(
            rows,
            halo,
            up.is_some(),
            down.is_some(),
            self.rank(),
            "rows",
        )?;
        let block = halo * cols;
        let top = own.start * cols;
        let bottom = own.end * cols;
        if let Some(nccl) = self.nccl_for(a.device())? {
            let size = std::mem::size_of::<T>();
            let (base, bytes) = (*a.device_addr(), block * size);
            let at = |element: usize| base + (element * size) as u64;
            let mut transfers = Vec::new();
            if let Some(down) = down {
                transfers.push(Transfer::send(down, at(bottom - block), bytes));
                transfers.push(Transfer::recv(down, at(bottom), bytes));
            }
            if let Some(up) = up {
                transfers.push(Transfer::send(up, at(top), bytes));
                transfers.push(Transfer::recv(up, at(top - block), bytes));
            }
            return nccl.group(&transfers, &[(a.users(), Access::Write)]);
        }
        // Down: own last rows to the rank below's top halo; up: own first rows to the rank
        // above's bottom halo.
        let last = match down {
            Some(_) => a.to_vec_range(bottom - block..bottom)?,
            None => Vec::new(),
        };
        if let Some(got) = self.swap(down.map(|d| (d, last)), up.map(|u| (u, block)))? {
            a.copy_from_host_at(top - block, &got)?;
        }
        let first = match up {
            Some(_) => a.to_vec_range(top..top + block)?,
            None => Vec::new(),
        };
        if let Some(got) = self.swap(up.map(|u| (u, first)), down.map(|d| (d, block)))? {
            a.copy_from_host_at(bottom, &got)?;
        }
        Ok(())
    }

    /// Exchanges `halo` whole columns of `a` with the ranks `left` and `right` (where there
    /// are): through NCCL, the columns packed on the GPU; else over MPI, the columns copied
    /// alone between the array and the host (in place where the host sees the array).
    fn exchange_horizontal<T>(
        &self,
        a: &mut DeviceArray<T, Ix2>,
        halo: usize,
        sides: (Option<usize>, Option<usize>),
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
    {
        let (left, right) = sides;
        let (rows, cols) = a.dim();
        let rank = self.rank();
        let own = halo_room(cols, halo, left.is_some(), right.is_some(), rank, "columns")?;
        if left.is_none() && right.is_none() {
            return Ok(());
        }
        if let Some(nccl) = self.nccl_for(a.device())? {
            return columns_through_nccl(nccl, a, own, halo, sides);
        }
        let to_right = match right {
            Some(r) => Some((r, a.columns_to_vec(own.end - halo..own.end)?)),
            None => None,
        };
        if let Some(got) = self.swap(to_right, left.map(|l| (l, rows * halo)))? {
            a.columns_from_slice(own.start - halo, &got)?;
        }
        let to_left = match left {
            Some(l) => Some((l, a.columns_to_vec(own.start..own.start + halo)?)),
            None => None,
        };
        if let Some(got) = self.swap(to_left, right.map(|r| (r, rows * halo)))? {
            a.columns_from_slice(own.end, &got)?;
        }
        Ok(())
    }

    /// Sends `send`'s elements to its rank and receives `recv.1` elements from its rank, at
    /// once where there are both (`MPI_Sendrecv`), so that a chain of ranks never deadlocks.
    fn swap<T: DeviceCopy + Equivalence>(
        &self,
        send: Option<(usize, Vec<T>)>,
        recv: Option<(usize, usize)>,
    ) -> Result<Option<Vec<T>>, Error> {
        let process = |rank: usize| self.world.process_at_rank(rank as mpi::Rank);
        let mut got = match recv {
            Some((_, len)) => crate::host::array::zeroed_vec::<T>(len, || "the host".into())?,
            None => Vec::new(),
        };
        match (&send, recv) {
            (Some((to, values)), Some((from, _))) => {
                let (to, from) = (process(*to), process(from));
                mpi::point_to_point::send_receive_into(&values[..], &to, &mut got[..], &from);
            }
            (Some((to, values)), None) => process(*to).send(&values[..]),
            (None, Some((from, _))) => {
                process(from).receive_into(&mut got[..]);
            }
            (None, None) => {}
        }
        Ok(recv.map(|_| got))
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

/// [`Cluster::exchange_blocks`]'s exchange of `halo` columns of `a` (whose own columns are
/// `own`) with the ranks `left` and `right` through NCCL: each side's columns packed into an
/// array of the GPU, sent and received as one group, and unpacked into the halos.
fn columns_through_nccl<T: DeviceCopy>(
    nccl: &Nccl,
    a: &mut DeviceArray<T, Ix2>,
    own: Range<usize>,
    halo: usize,
    (left, right): (Option<usize>, Option<usize>),
) -> Result<(), Error> {
    let n = a.dim().0 * halo;
    // Every element of each buffer is overwritten: packed, or received.
    let buffer = || DeviceArray::<T, ndarray::Ix1>::alloc(a.device(), ndarray::Ix1(n), false);
    // Per side: the rank, its columns to send, and the room for its halo.
    let mut sides = Vec::new();
    for (peer, send, halo_at) in [
        (left, own.start, own.start.saturating_sub(halo)),
        (right, own.end - halo, own.end),
    ] {
        let Some(peer) = peer else { continue };
        let mut out = buffer()?;
        a.columns_to_device(send..send + halo, &mut out)?;
        sides.push((peer, out, buffer()?, halo_at));
    }
    let size = std::mem::size_of::<T>();
    let mut transfers = Vec::new();
    let mut uses = Vec::new();
    for (peer, out, into, _) in &sides {
        transfers.push(Transfer::send(*peer, *out.device_addr(), n * size));
        transfers.push(Transfer::recv(*peer, *into.device_addr(), n * size));
        uses.extend([(out.users(), Access::Read), (into.users(), Access::Write)]);
    }
    nccl.group(&transfers, &uses)?;
    for (_, _, into, halo_at) in &sides {
        a.columns_from_device(*halo_at, into)?;
    }
    Ok(())
}

/// Rank `root`'s part of [`Cluster::gather`] through NCCL: `a` and every other rank's array
/// (`counts` elements each, in rank order) into one array on its GPU, then to the host.
fn gather_on_gpus<T: DeviceCopy, D: Rank>(
    nccl: &Nccl,
    a: &DeviceArray<T, D>,
    root: usize,
    counts: &[mpi::Count],
) -> Result<Vec<T>, Error> {
    let size = std::mem::size_of::<T>();
    let total = counts.iter().map(|&c| c as usize).sum();
    // Every element is received.
    let all = DeviceArray::<T, ndarray::Ix1>::alloc(a.device(), ndarray::Ix1(total), false)?;
    let mut transfers = vec![Transfer::send(root, *a.device_addr(), a.len() * size)];
    let mut at = *all.device_addr();
    for (peer, &count) in counts.iter().enumerate() {
        let bytes = count as usize * size;
        transfers.push(Transfer::recv(peer, at, bytes));
        at += bytes as u64;
    }
    let uses = [(a.users(), Access::Read), (all.users(), Access::Write)];
    nccl.group(&transfers, &uses)?;
    all.to_vec()
}

/// The own rows (or columns) of an extent of `len` with `halo` on each side that has a
/// neighbour (`before`, `after`), or the error of a block too small for its halos on `rank`.
fn halo_room(
    len: usize,
    halo: usize,
    before: bool,
    after: bool,
    rank: usize,
    what: &str,
) -> Result<Range<usize>, Error> {
    let start = if before { halo } else { 0 };
    let end = len.checked_sub(if after { halo } else { 0 });
    match end {
        Some(end) if end >= start + halo => Ok(start..end),
        _ => Err(Error::ShapeMismatch {
            what: format!("the {what} of rank {rank}'s array for a halo exchange of {halo}"),
            expected: vec![start + halo + if after { halo } else { 0 }],
            found: vec![len],
        }),
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
