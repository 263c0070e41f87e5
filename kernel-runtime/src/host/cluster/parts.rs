//! Collectives over an array in parts, one per rank, in rank order: [`Cluster::gather`] (the
//! parts to one rank), [`Cluster::all_gather`] (to every rank) and [`Cluster::scatter`] (from
//! one rank to all). The parts may differ in length; the ranks learn each other's over MPI
//! first. Through NCCL every part moves by grouped sends and receives, GPU to GPU; else
//! through host memory over MPI's `Gatherv`, `Allgatherv` and `Scatterv`.

use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use ndarray::Ix1;

use super::Cluster;
use crate::device_copy::DeviceCopy;
use crate::host::array::{DeviceArray, Rank};
use crate::host::error::Error;
use crate::host::host_vec::zeroed_vec;
use crate::host::nccl::Transfer;
use crate::host::order::Access;

impl Cluster {
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
                    let send = Transfer::send(root, *a.device_addr(), bytes_of::<T>(a.len()));
                    nccl.group(&[send], &[(a.span(), Access::Read)])?;
                }
                None => root_process.gather_varcount_into(&a.to_vec()?[..]),
            }
            return Ok(None);
        }
        let mut counts = vec![0 as mpi::Count; self.size()];
        root_process.gather_into_root(&len, &mut counts[..]);
        if let Some(nccl) = nccl {
            let all = DeviceArray::alloc(a.device(), Ix1(total(&counts)), false)?;
            let mut transfers = vec![Transfer::send(
                root,
                *a.device_addr(),
                bytes_of::<T>(a.len()),
            )];
            transfers.extend(receives(&all, &counts));
            let uses = [(a.span(), Access::Read), (all.span(), Access::Write)];
            nccl.group(&transfers, &uses)?;
            return all.to_vec().map(Some);
        }
        let mine = a.to_vec()?;
        let displs = displacements(&counts);
        let mut all = zeroed_vec::<T>(total(&counts), || "the host".into())?;
        let mut parts = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        root_process.gather_varcount_into_root(&mine[..], &mut parts);
        Ok(Some(all))
    }

    /// The elements of `a` on every rank, concatenated in rank order, as an array of `a`'s
    /// device on every rank (mpi4py's `comm.Allgatherv`); the arrays may differ in length.
    ///
    /// ```no_run
    /// use kernel_runtime::cluster::Cluster;
    /// Cluster::run(|cluster| {
    ///     let mine = cluster.device().to_device(&[cluster.rank() as u32; 2])?;
    ///     let all = cluster.all_gather(&mine)?; // [0, 0, 1, 1, 2, 2, ...] on every rank
    ///     Ok::<(), kernel_runtime::Error>(())
    /// })
    /// ```
    pub fn all_gather<T, D>(&self, a: &DeviceArray<T, D>) -> Result<DeviceArray<T, Ix1>, Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        let nccl = self.nccl_for(a.device())?;
        let mut counts = vec![0 as mpi::Count; self.size()];
        self.world
            .all_gather_into(&(a.len() as mpi::Count), &mut counts[..]);
        // Every element is received.
        let mut all = DeviceArray::alloc(a.device(), Ix1(total(&counts)), false)?;
        if let Some(nccl) = nccl {
            let bytes = bytes_of::<T>(a.len());
            let mut transfers: Vec<Transfer> = (0..self.size())
                .map(|peer| Transfer::send(peer, *a.device_addr(), bytes))
                .collect();
            transfers.extend(receives(&all, &counts));
            let uses = [(a.span(), Access::Read), (all.span(), Access::Write)];
            nccl.group(&transfers, &uses)?;
            return Ok(all);
        }
        let mine = a.to_vec()?;
        let displs = displacements(&counts);
        let mut host = zeroed_vec::<T>(total(&counts), || "the host".into())?;
        let mut parts = PartitionMut::new(&mut host[..], &counts[..], &displs[..]);
        self.world.all_gather_varcount_into(&mine[..], &mut parts);
        all.copy_from_host_at(0, &host)?;
        Ok(all)
    }

    /// Splits `a`, given on rank `root` (`None` elsewhere; ignored on other ranks), into
    /// consecutive parts, one per rank in rank order, each as long as that rank's `into`, and
    /// copies each rank's part into its `into` (mpi4py's `comm.Scatterv`).
    ///
    /// ```no_run
    /// use kernel_runtime::{cluster::Cluster, DeviceArray1};
    /// Cluster::run(|cluster| {
    ///     let mut mine = cluster.device().zeros::<f32, _>(1000)?;
    ///     if cluster.rank() == 0 {
    ///         let whole = cluster.device().zeros::<f32, _>(1000 * cluster.size())?;
    ///         cluster.scatter(Some(&whole), &mut mine, 0)?;
    ///     } else {
    ///         cluster.scatter(None::<&DeviceArray1<f32>>, &mut mine, 0)?;
    ///     }
    ///     Ok::<(), kernel_runtime::Error>(())
    /// })
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] on every rank where `a` is missing on the root or its length is
    /// not the sum of the ranks' `into` lengths; [`Error::Mpi`] where `root` is not a rank.
    pub fn scatter<T, D, E>(
        &self,
        a: Option<&DeviceArray<T, D>>,
        into: &mut DeviceArray<T, E>,
        root: usize,
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
        E: Rank,
    {
        let root_process = self.world.process_at_rank(self.peer(root)?);
        let nccl = self.nccl_for(into.device())?;
        let mut counts = vec![0 as mpi::Count; self.size()];
        let len = into.len() as mpi::Count;
        let a = a.filter(|_| self.rank() == root);
        if self.rank() == root {
            root_process.gather_into_root(&len, &mut counts[..]);
        } else {
            root_process.gather_into(&len);
        }
        // The root's length (MAX for none) and the parts' total, that every rank judges alike.
        let mut split = [
            a.map_or(u64::MAX, |a| a.len() as u64),
            total(&counts) as u64,
        ];
        root_process.broadcast_into(&mut split[..]);
        if split[0] != split[1] {
            return Err(Error::ShapeMismatch {
                what: format!("the array rank {root} scatters, for the ranks' parts"),
                expected: vec![split[1] as usize],
                found: (split[0] != u64::MAX)
                    .then_some(split[0] as usize)
                    .into_iter()
                    .collect(),
            });
        }
        match (nccl, a) {
            (Some(nccl), a) => {
                let mut transfers = vec![Transfer::recv(
                    root,
                    *into.device_addr(),
                    bytes_of::<T>(into.len()),
                )];
                let mut uses = vec![(into.span(), Access::Write)];
                if let Some(a) = a {
                    // Under NCCL the root's array must be of its device too.
                    self.nccl_for(a.device())?;
                    transfers.extend(sends(a, &counts));
                    uses.push((a.span(), Access::Read));
                }
                nccl.group(&transfers, &uses)
            }
            (None, Some(a)) => {
                let all = a.to_vec()?;
                let displs = displacements(&counts);
                let parts = Partition::new(&all[..], &counts[..], &displs[..]);
                let mut mine = zeroed_vec::<T>(into.len(), || "the host".into())?;
                root_process.scatter_varcount_into_root(&parts, &mut mine[..]);
                into.copy_from_host_at(0, &mine)
            }
            (None, None) => {
                let mut mine = zeroed_vec::<T>(into.len(), || "the host".into())?;
                root_process.scatter_varcount_into(&mut mine[..]);
                into.copy_from_host_at(0, &mine)
            }
        }
    }
}

/// The bytes of `n` elements of `T`.
fn bytes_of<T>(n: usize) -> usize {
    n * std::mem::size_of::<T>()
}

/// The elements of every part together.
fn total(counts: &[mpi::Count]) -> usize {
    counts.iter().map(|&c| c as usize).sum()
}

/// Where each part starts, in elements.
fn displacements(counts: &[mpi::Count]) -> Vec<mpi::Count> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect()
}

/// A receive of each part from the rank of its place into its place in `all`.
fn receives<'a, T: DeviceCopy>(
    all: &DeviceArray<T, Ix1>,
    counts: &'a [mpi::Count],
) -> impl Iterator<Item = Transfer> + 'a {
    parts::<T>(*all.device_addr(), counts).map(|(peer, at, bytes)| Transfer::recv(peer, at, bytes))
}

/// A send of each part of `a` to the rank of its place.
fn sends<'a, T, D>(
    a: &DeviceArray<T, D>,
    counts: &'a [mpi::Count],
) -> impl Iterator<Item = Transfer> + 'a
where
    T: DeviceCopy,
    D: Rank,
{
    parts::<T>(*a.device_addr(), counts).map(|(peer, at, bytes)| Transfer::send(peer, at, bytes))
}

/// Each part's rank, device address (from `base`) and bytes.
fn parts<T>(base: u64, counts: &[mpi::Count]) -> impl Iterator<Item = (usize, u64, usize)> + '_ {
    counts.iter().enumerate().scan(base, |at, (peer, &c)| {
        let bytes = bytes_of::<T>(c as usize);
        let here = *at;
        *at += bytes as u64;
        Some((peer, here, bytes))
    })
}
