//! Point-to-point transfers of device arrays between two ranks: [`Cluster::send`],
//! [`Cluster::recv`] and [`Cluster::send_recv`] (mpi4py's `comm.Send`, `comm.Recv` and
//! `comm.Sendrecv` of device arrays), through NCCL where it serves the arrays, else staged
//! through host memory over MPI.
//!
//! Before any data moves, the two ranks compare the arrays' lengths over MPI, and both refuse
//! the transfer where they differ, or where one of them cannot take part (an array of another
//! device under NCCL): a receive never overruns its array, and no rank is left waiting in NCCL
//! for a transfer its peer refused.

use mpi::datatype::Equivalence;
use mpi::traits::{Communicator, Destination, Source};

use super::Cluster;
use crate::device_copy::DeviceCopy;
use crate::host::array::{DeviceArray, Rank};
use crate::host::error::Error;
use crate::host::nccl::Transfer;
use crate::host::order::Access;

/// The length a rank announces for a transfer it cannot take part in.
const REFUSED: u64 = u64::MAX;

impl Cluster {
    /// Sends `a`'s elements to rank `to`, which receives them with [`recv`](Self::recv) (or
    /// [`send_recv`](Self::send_recv)) into an array of the same length. Returns once `a` may
    /// be reused. As with MPI's blocking sends, two ranks that each send to the other before
    /// receiving may wait for each other forever: use [`send_recv`](Self::send_recv) for
    /// exchanges and rings.
    ///
    /// ```no_run
    /// use kernel_runtime::cluster::Cluster;
    /// Cluster::run(|cluster| {
    ///     let mut a = cluster.device().zeros::<f32, _>(1024)?;
    ///     match cluster.rank() {
    ///         0 => cluster.send(&a, 1)?,
    ///         1 => cluster.recv(&mut a, 0)?,
    ///         _ => {}
    ///     }
    ///     Ok::<(), kernel_runtime::Error>(())
    /// })
    /// ```
    ///
    /// # Errors
    /// [`Error::Mpi`] where `to` is not a rank of the job, or is this rank;
    /// [`Error::ShapeMismatch`] where the receiving array's length differs (on both ranks).
    pub fn send<T, D>(&self, a: &DeviceArray<T, D>, to: usize) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        self.transfer(Some((a, to)), None::<(&mut DeviceArray<T, D>, usize)>)
    }

    /// Receives into `a` the elements rank `from` sends with [`send`](Self::send) (or
    /// [`send_recv`](Self::send_recv)) from an array of the same length.
    ///
    /// # Errors
    /// As [`send`](Self::send)'s.
    pub fn recv<T, D>(&self, a: &mut DeviceArray<T, D>, from: usize) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
    {
        self.transfer(None::<(&DeviceArray<T, D>, usize)>, Some((a, from)))
    }

    /// Sends `out` to rank `to` and receives into `into` from rank `from` at once (MPI's
    /// `Sendrecv`), so that a ring or a chain of ranks that each send and receive never waits
    /// for itself.
    ///
    /// # Errors
    /// As [`send`](Self::send)'s, for either transfer.
    pub fn send_recv<T, D, E>(
        &self,
        out: &DeviceArray<T, D>,
        to: usize,
        into: &mut DeviceArray<T, E>,
        from: usize,
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
        E: Rank,
    {
        self.transfer(Some((out, to)), Some((into, from)))
    }

    /// A send, a receive, or both (see [`send`](Self::send)).
    fn transfer<T, D, E>(
        &self,
        out: Option<(&DeviceArray<T, D>, usize)>,
        into: Option<(&mut DeviceArray<T, E>, usize)>,
    ) -> Result<(), Error>
    where
        T: DeviceCopy + Equivalence,
        D: Rank,
        E: Rank,
    {
        let to = out.as_ref().map(|(_, to)| self.other(*to)).transpose()?;
        let from = into
            .as_ref()
            .map(|(_, from)| self.other(*from))
            .transpose()?;
        let devices = [
            out.as_ref().map(|(a, _)| a.device()),
            into.as_ref().map(|(a, _)| a.device()),
        ];
        let mut nccl = Ok(None);
        for device in devices.into_iter().flatten() {
            nccl = nccl.and_then(|_| self.nccl_for(device));
        }
        // A rank that cannot take part says so in the handshake, so its peer refuses too.
        let length = |a: usize| if nccl.is_ok() { a as u64 } else { REFUSED };
        let lengths = (
            out.as_ref().map(|(a, _)| length(a.len())),
            into.as_ref().map(|(a, _)| length(a.len())),
        );
        let agreed = self.agree_on_lengths((to, lengths.0), (from, lengths.1));
        let nccl = nccl?;
        agreed?;
        let size = std::mem::size_of::<T>();
        match nccl {
            Some(nccl) => {
                let mut transfers = Vec::new();
                let mut uses = Vec::new();
                if let (Some((a, _)), Some(to)) = (&out, to) {
                    transfers.push(Transfer::send(to, *a.device_addr(), a.len() * size));
                    uses.push((a.span(), Access::Read));
                }
                if let (Some((a, _)), Some(from)) = (&into, from) {
                    transfers.push(Transfer::recv(from, *a.device_addr(), a.len() * size));
                    uses.push((a.span(), Access::Write));
                }
                nccl.group(&transfers, &uses)
            }
            None => {
                let send = match (&out, to) {
                    (Some((a, _)), Some(to)) => Some((to, a.to_vec()?)),
                    _ => None,
                };
                let recv = into
                    .as_ref()
                    .zip(from)
                    .map(|((a, _), from)| (from, a.len()));
                match (self.swap(send, recv)?, into) {
                    (Some(got), Some((a, _))) => a.copy_from_host_at(0, &got),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Tells the receiving rank `to` the length `out` of the array this rank sends and hears
    /// the length of the one it receives into; tells the sending rank `from` the length `into`
    /// of the array this rank receives into and hears the length it sends. Both sides of each
    /// transfer then refuse it alike where the two differ.
    fn agree_on_lengths(
        &self,
        (to, out): (Option<usize>, Option<u64>),
        (from, into): (Option<usize>, Option<u64>),
    ) -> Result<(), Error> {
        let tell = |rank: Option<usize>, n: Option<u64>| rank.zip(n).map(|(r, n)| (r, vec![n]));
        let sent = self.swap(tell(to, out), from.map(|from| (from, 1)))?;
        let room = self.swap(tell(from, into), to.map(|to| (to, 1)))?;
        let differ = |(rank, mine, theirs): (Option<usize>, Option<u64>, Option<Vec<u64>>)| {
            let (rank, mine, theirs) = (rank?, mine?, theirs?[0]);
            match (mine, theirs) {
                _ if mine == theirs => None,
                (_, REFUSED) => Some(Error::Mpi {
                    message: format!("rank {rank} refused the transfer (its own error says why)"),
                }),
                _ => Some(Error::ShapeMismatch {
                    what: format!("a transfer between ranks {} and {rank}", self.rank()),
                    expected: vec![mine as usize],
                    found: vec![theirs as usize],
                }),
            }
        };
        match differ((from, into, sent)).or_else(|| differ((to, out, room))) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `rank`, checked to be another rank of the job.
    fn other(&self, rank: usize) -> Result<usize, Error> {
        self.peer(rank)?;
        match rank == self.rank() {
            true => Err(Error::Mpi {
                message: format!("rank {rank} sends to or receives from itself"),
            }),
            false => Ok(rank),
        }
    }

    /// Sends `send`'s elements to its rank and receives `recv.1` elements from its rank, at
    /// once where there are both (`MPI_Sendrecv`), so that a chain of ranks never deadlocks.
    pub(super) fn swap<T: DeviceCopy + Equivalence>(
        &self,
        send: Option<(usize, Vec<T>)>,
        recv: Option<(usize, usize)>,
    ) -> Result<Option<Vec<T>>, Error> {
        let process = |rank: usize| self.world.process_at_rank(rank as mpi::Rank);
        let mut got = match recv {
            Some((_, len)) => crate::host::host_vec::zeroed_vec::<T>(len, || "the host".into())?,
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
}
