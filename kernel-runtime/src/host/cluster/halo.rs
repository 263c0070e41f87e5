//! Halo exchanges between ranks that split a 2-D array: by rows ([`Cluster::exchange_rows`])
//! or in blocks over a process grid ([`Cluster::exchange_blocks`]). Rows are contiguous and go
//! whole; columns go as bands (`host::columns`), packed on the GPU for NCCL or copied alone
//! between the array and the host for MPI.

use std::ops::Range;

use mpi::datatype::Equivalence;
use ndarray::Ix2;

use super::{share, Cluster};
use crate::device_copy::DeviceCopy;
use crate::host::array::DeviceArray;
use crate::host::error::Error;
use crate::host::nccl::{Nccl, Transfer};
use crate::host::order::Access;

impl Cluster {
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
            return nccl.group(&transfers, &[(a.span(), Access::Write)]);
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
        uses.extend([(out.span(), Access::Read), (into.span(), Access::Write)]);
    }
    nccl.group(&transfers, &uses)?;
    for (_, _, into, halo_at) in &sides {
        a.columns_from_device(*halo_at, into)?;
    }
    Ok(())
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
        Some(end) if end >= start.saturating_add(halo) => Ok(start..end),
        _ => Err(Error::ShapeMismatch {
            what: format!("the {what} of rank {rank}'s array for a halo exchange of {halo}"),
            expected: vec![start
                .saturating_add(halo)
                .saturating_add(if after { halo } else { 0 })],
            found: vec![len],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::halo_room;

    #[test]
    fn halos_past_the_array_are_refused_for_any_size() {
        assert_eq!(halo_room(10, 2, true, true, 0, "rows").unwrap(), 2..8);
        assert_eq!(halo_room(4, 2, false, true, 0, "rows").unwrap(), 0..2);
        for halo in [6, usize::MAX / 2, usize::MAX] {
            assert!(halo_room(10, halo, true, true, 1, "rows").is_err());
            assert!(halo_room(10, halo, true, false, 1, "rows").is_err());
        }
    }
}
