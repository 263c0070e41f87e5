//! What checked mode reports: a bug of the kernel, with the threads and source lines involved.

use crate::dim::Dim3;
use std::fmt;
use std::panic::Location;

pub use super::unwritten::Origin;
pub use crate::base::AccessKind;

fn verb(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "read it",
        AccessKind::Write => "wrote it",
        AccessKind::Atomic => "updated it atomically",
    }
}

/// One access of one thread, as a report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Read, write or atomic.
    pub kind: AccessKind,
    /// The block of the thread.
    pub block: Dim3,
    /// The thread, within its block.
    pub thread: Dim3,
    /// The source line of the access, when it is known.
    pub at: Option<&'static Location<'static>>,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "thread {} of block {} {}",
            self.thread,
            self.block,
            verb(self.kind)
        )?;
        if let Some(at) = self.at {
            write!(f, " at {at}")?;
        }
        Ok(())
    }
}

/// A bug that checked mode ([`Device::cpu_checked`](crate::Device::cpu_checked)) found in a
/// kernel; the launch returns it as [`Error::CheckFailed`](crate::Error::CheckFailed).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Finding {
    /// An index outside the array's shape (an index below zero shows as the negative number it
    /// wrapped from).
    OutOfBounds {
        /// The array (the kernel's parameter, or the shared array's variable).
        array: &'static str,
        /// The index, one entry per dimension.
        index: Vec<usize>,
        /// The array's shape.
        shape: Vec<usize>,
        /// The access.
        access: Access,
    },
    /// Two threads touched one element, at least one of them writing, with nothing ordering
    /// them: they are in different blocks, or in one block with no barrier between the two
    /// accesses (nor a `syncwarp()` of both, for lanes of one warp); atomics race only with
    /// plain accesses.
    DataRace {
        /// The array.
        array: &'static str,
        /// The element.
        index: Vec<usize>,
        /// The access that came first.
        first: Access,
        /// The access that came second.
        second: Access,
    },
    /// A read of a shared-memory element that no thread of the block wrote before.
    UninitializedSharedRead {
        /// The shared array.
        array: &'static str,
        /// The element.
        index: Vec<usize>,
        /// The read.
        access: Access,
    },
    /// A read of an array element that nothing has written: the array was made by
    /// [`Device::empty`](crate::Device::empty), or the element is in the border that a
    /// stencil's `apply` without a `cval` left.
    UnwrittenRead {
        /// The array (the kernel's or stencil's parameter).
        array: &'static str,
        /// The element.
        index: Vec<usize>,
        /// Who read it, and where.
        reader: Reader,
        /// Why nothing has written it.
        origin: Origin,
    },
    /// A write to shared memory that a warpgroup product
    /// ([`wgmma::mma_async`](crate::wgmma::mma_async)) may still read on a GPU: its warpgroup
    /// had not waited for the product's group ([`wgmma::wait_group`](crate::wgmma::wait_group)),
    /// or no barrier lies between that wait and another warp's write.
    OperandInFlight {
        /// The shared array written.
        array: &'static str,
        /// The element.
        index: Vec<usize>,
        /// The write.
        write: Access,
        /// The product's call.
        product: &'static Location<'static>,
        /// The warpgroup of the product, within the block.
        warpgroup: u32,
    },
    /// A barrier that part of a block reached while another thread of the block exited, or
    /// waited at another barrier.
    DivergentBarrier {
        /// The block.
        block: Dim3,
        /// The barrier (`sync_threads()`, ...) and where it is.
        barrier: String,
        /// A thread waiting there.
        waiting: Dim3,
        /// How many threads wait there, of how many in the block.
        count: (usize, usize),
        /// What a thread that is not there did instead.
        other: (Dim3, String),
    },
    /// A grid barrier (`grid_sync()`) of a cooperative launch that part of the grid reached
    /// while another block exited without reaching it.
    DivergentGridBarrier {
        /// The grid barrier and where it is.
        barrier: String,
        /// A block waiting there.
        waiting: Dim3,
        /// How many blocks wait there, of how many in the grid.
        count: (u64, u64),
        /// A block that exited without reaching it.
        exited: Dim3,
    },
    /// A warp collective (`shfl_sync`, `ballot_sync`, `syncwarp`, ...) that cannot complete: a
    /// lane of its mask waits elsewhere (lanes that returned or do not exist take no part), or
    /// the caller's mask leaves the caller out.
    DivergentWarp {
        /// The block.
        block: Dim3,
        /// The collective, its mask and where it is.
        collective: String,
        /// A thread waiting there.
        waiting: Dim3,
        /// Why it cannot complete: the lane that does not come and what it did instead.
        problem: String,
    },
}

/// Who read an element that nothing has written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reader {
    /// A kernel's thread.
    Thread(Access),
    /// A stencil's function, at a point of its output.
    Stencil {
        /// The point.
        point: Vec<usize>,
        /// The read in the stencil's function.
        at: &'static Location<'static>,
    },
    /// A function that reads every element of the argument, one for each element of its
    /// output (`#[vectorize]`) or each loop index (a `()` input of `#[guvectorize]`).
    Element,
    /// A generalized ufunc (`#[guvectorize]`), in the core of a loop index (flat, in C
    /// order): the element's index is in that core.
    LoopIndex {
        /// The loop index.
        loop_index: usize,
        /// The read in the function.
        at: &'static Location<'static>,
    },
}

impl fmt::Display for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reader::Thread(access) => write!(f, "{access}"),
            Reader::Stencil { point, at } => write!(
                f,
                "the stencil read it at {at}, for its point {}",
                signed_index(point)
            ),
            Reader::Element => write!(
                f,
                "the function reads every element of it, one for each element (or loop index) \
                 of its output"
            ),
            Reader::LoopIndex { loop_index, at } => write!(
                f,
                "the generalized ufunc read it at {at}, in the core of its loop index \
                 {loop_index}"
            ),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Empty => write!(
                f,
                "the array was made by `empty` and nothing has written the element since: \
                 write it before reading it, or make the array with `zeros`"
            ),
            Origin::Border(stencil) => write!(
                f,
                "it is in the border that stencil `{stencil}` left unwritten, having no `cval`: \
                 give `{stencil}` a `cval`, or make its output with `zeros`"
            ),
        }
    }
}

/// An index as the user wrote it: one that wrapped below zero shows as the negative number.
pub(crate) fn signed_index(index: &[usize]) -> String {
    let parts: Vec<String> = index
        .iter()
        .map(|&i| {
            if i > isize::MAX as usize {
                format!("{}", i as isize)
            } else {
                i.to_string()
            }
        })
        .collect();
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    }
}

fn element(array: &str, index: &[usize]) -> String {
    format!("`{array}[{}]`", signed_index(index))
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::OutOfBounds {
                array,
                index,
                shape,
                access,
            } => {
                let wrapped = if index.iter().any(|&i| i > isize::MAX as usize) {
                    " (a negative index: it wrapped around)"
                } else {
                    ""
                };
                write!(
                    f,
                    "out-of-bounds access to {}{wrapped}, array `{array}` has shape {shape:?}: {access}",
                    element(array, index),
                )
            }
            Finding::DataRace {
                array,
                index,
                first,
                second,
            } => {
                let why = if first.block != second.block {
                    "threads of different blocks are not ordered within a launch: use atomics, or split the work into two launches".to_string()
                } else {
                    format!(
                        "both are in block {} with no sync_threads() (nor, for lanes of one warp, a syncwarp() of both) between the two accesses",
                        first.block
                    )
                };
                write!(
                    f,
                    "data race on {}: {first}, then {second}; {why}",
                    element(array, index)
                )
            }
            Finding::UninitializedSharedRead {
                array,
                index,
                access,
            } => write!(
                f,
                "read of uninitialized shared memory {}: {access}, and no thread of the block had written it in this launch",
                element(array, index)
            ),
            Finding::UnwrittenRead {
                array,
                index,
                reader,
                origin,
            } => write!(
                f,
                "read of unwritten element {}: {reader}; {origin}",
                element(array, index)
            ),
            Finding::OperandInFlight {
                array,
                index,
                write,
                product,
                warpgroup,
            } => write!(
                f,
                "write to {} while a warpgroup product may still read it: {write}, but \
                 warpgroup {warpgroup} (threads {} to {}) started wgmma::mma_async at {product} \
                 on it and had not waited for it; call wgmma::wait_group for its group, and \
                 sync_threads() where other warps write it, before writing its operands",
                element(array, index),
                128 * warpgroup,
                128 * warpgroup + 127
            ),
            Finding::DivergentBarrier {
                block,
                barrier,
                waiting,
                count,
                other,
            } => write!(
                f,
                "divergent barrier in block {block}: {} of {} threads wait at {barrier} (first: thread {waiting}), but thread {} {}",
                count.0, count.1, other.0, other.1
            ),
            Finding::DivergentGridBarrier {
                barrier,
                waiting,
                count,
                exited,
            } => write!(
                f,
                "divergent grid barrier: {} of {} blocks wait at {barrier} (first: block {waiting}), but block {exited} exited without reaching it",
                count.0, count.1
            ),
            Finding::DivergentWarp {
                block,
                collective,
                waiting,
                problem,
            } => write!(
                f,
                "divergent warp in block {block}: thread {waiting} waits at {collective}, but {problem}"
            ),
        }
    }
}
