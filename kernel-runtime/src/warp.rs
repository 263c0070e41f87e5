//! Warp-level primitives: the lane, shuffles, votes, matches and the warp barrier, as CUDA's
//! `__shfl_sync` family and Numba's `cuda.shfl_sync`, `cuda.ballot_sync`, ... name them.
//!
//! A warp is 32 threads of a block that follow one another in the block's linear order
//! (`x` fastest, then `y`, then `z`): threads `0..32` are warp 0, `32..64` warp 1, and so on.
//! Each collective takes a `mask` of the lanes that take part: every lane it names must call
//! the same collective with the same mask (on the GPU, as in CUDA, anything else is undefined;
//! the CPU backend reports it, naming the lane that did not come and what it did instead), and
//! each calling lane must name itself.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! /// Each warp's sum, by a butterfly of shuffles: every lane ends with the whole sum.
//! #[kernel]
//! pub fn warp_sums(x: &[f32], sums: &mut [f32]) {
//!     let i = grid(1);
//!     let mut v = if i < x.len() { x[i] } else { 0.0 };
//!     let mut offset = WARP_SIZE / 2;
//!     while offset > 0 {
//!         v += shfl_xor_sync(u32::MAX, v, offset);
//!         offset /= 2;
//!     }
//!     if lane_id() == 0 && i / 32 < sums.len() {
//!         sums[i / 32] = v;
//!     }
//! }
//!
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! let x = dev.to_device(&vec![1.0f32; 100])?;
//! let mut sums = dev.zeros::<f32, _>(4)?;
//! warp_sums.launch(1, 128, (&x, &mut sums))?;
//! assert_eq!(sums.to_vec()?, vec![32.0, 32.0, 32.0, 4.0]);
//! # Ok(())
//! # }
//! ```
//!
//! On the CPU backend the `#[kernel]` macro splits a kernel at its collectives, as it does at
//! its barriers, when each stands where it can be moved out of its statement (not in a branch
//! of an expression, a closure or a macro, and after nothing in its statement that reads
//! memory or calls a function) in the body, an `if` statement or a `for`/`while` loop: the
//! statements between two collectives run warp by warp as thread loops over the warp's lanes,
//! and each collective's results are computed at once from the operands the lanes left. A
//! `while` loop runs while any lane's condition holds, with the lanes whose condition holds,
//! so lanes may leave it at different rounds; an `if` runs its first branch with the lanes
//! whose condition holds, then its second with the others; the lanes of a mask meet at one
//! call of a collective. Other kernels with collectives (`activemask()`, a barrier in a
//! branch, ...) run their threads as coroutines, which meet at each collective as they do at
//! `sync_threads()`, by collective and mask wherever the call is, as on a GPU since Volta. A
//! collective in a `#[device]` function needs `#[kernel(barriers)]` on the kernel, as a
//! barrier there does; checked mode runs every kernel with collectives as coroutines.
//!
//! Lanes that pass data through memory need a `syncwarp(mask)` naming both between the write
//! and the read (or a `sync_threads()`): of the collectives, only `syncwarp` orders memory
//! accesses, as PTX defines them. Checked mode follows the same rule, and reports a read of
//! another lane's write with only a shuffle or a vote between, or a `syncwarp` of one's own
//! half-warp, as a data race.

pub use crate::base::{WarpValue, WARP_SIZE};
#[cfg(not(target_arch = "nvptx64"))]
use crate::cpu::sched::{
    rendezvous::{ShflMode, WarpOp},
    warp::meet,
};

/// The calling thread's lane in its warp, `0..32` (CUDA's `%laneid`, Numba's `cuda.laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let lane: u32;
        // SAFETY: reads a special register, which holds 0 to 31 (the compiler then knows the
        // range: indices made from the lane need no check of their own against it).
        unsafe {
            core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack));
            core::hint::assert_unchecked(lane < 32);
        }
        lane
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::sched::warp::lane_id()
}

/// The lanes below the caller's: `(1 << lane_id()) - 1` (CUDA's `%lanemask_lt`, Numba's
/// `cuda.lanemask_lt()`). `(ballot & lanemask_lt()).count_ones()` is the caller's rank among
/// the lanes whose vote was true.
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    (1u32 << lane_id()) - 1
}

/// One `shfl.sync` of 32 bits; `c` packs the clamp and segment mask as PTX defines them.
#[cfg(target_arch = "nvptx64")]
macro_rules! shfl32 {
    ($mode:literal, $c:literal, $mask:expr, $v:expr, $b:expr) => {{
        let r: u32;
        // SAFETY: a warp shuffle; the lanes of `mask` meeting here is the caller's contract.
        unsafe {
            core::arch::asm!(
                concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {b}, ", $c, ", {m};"),
                r = out(reg32) r, v = in(reg32) $v, b = in(reg32) $b, m = in(reg32) $mask,
                options(nostack)
            );
        }
        r
    }};
}

/// A shuffle of either width, by two 32-bit ones for a 64-bit value.
#[cfg(target_arch = "nvptx64")]
macro_rules! shfl {
    ($mode:literal, $c:literal, $mask:expr, $value:expr, $b:expr) => {{
        let (mask, b, bits) = ($mask, $b, $value.to_bits());
        let lo = shfl32!($mode, $c, mask, bits as u32, b) as u64;
        if T::WIDE {
            let hi = shfl32!($mode, $c, mask, (bits >> 32) as u32, b) as u64;
            T::from_bits(hi << 32 | lo)
        } else {
            T::from_bits(lo)
        }
    }};
}

/// `__shfl_sync(mask, value, src_lane)`: `value` as lane `src_lane % 32` passed it. A source
/// lane outside `mask` gives an undefined value on the GPU (the CPU backend returns the
/// caller's own).
#[inline(always)]
#[track_caller]
pub fn shfl_sync<T: WarpValue>(mask: u32, value: T, src_lane: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    return shfl!("idx", "31", mask, value, src_lane);
    #[cfg(not(target_arch = "nvptx64"))]
    T::from_bits(meet(
        WarpOp::Shfl(ShflMode::Idx),
        mask,
        value.to_bits(),
        src_lane,
    ))
}

/// `__shfl_up_sync(mask, value, delta)`: `value` as lane `lane_id() - delta` passed it; lanes
/// below `delta` keep their own.
#[inline(always)]
#[track_caller]
pub fn shfl_up_sync<T: WarpValue>(mask: u32, value: T, delta: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    return shfl!("up", "0", mask, value, delta);
    #[cfg(not(target_arch = "nvptx64"))]
    T::from_bits(meet(
        WarpOp::Shfl(ShflMode::Up),
        mask,
        value.to_bits(),
        delta,
    ))
}

/// `__shfl_down_sync(mask, value, delta)`: `value` as lane `lane_id() + delta` passed it; lanes
/// whose source would be past lane 31 keep their own.
#[inline(always)]
#[track_caller]
pub fn shfl_down_sync<T: WarpValue>(mask: u32, value: T, delta: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    return shfl!("down", "31", mask, value, delta);
    #[cfg(not(target_arch = "nvptx64"))]
    T::from_bits(meet(
        WarpOp::Shfl(ShflMode::Down),
        mask,
        value.to_bits(),
        delta,
    ))
}

/// `__shfl_xor_sync(mask, value, lane_mask)`: `value` as lane `lane_id() ^ lane_mask` passed
/// it (a butterfly step); lanes whose source would be past lane 31 keep their own.
#[inline(always)]
#[track_caller]
pub fn shfl_xor_sync<T: WarpValue>(mask: u32, value: T, lane_mask: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    return shfl!("bfly", "31", mask, value, lane_mask);
    #[cfg(not(target_arch = "nvptx64"))]
    T::from_bits(meet(
        WarpOp::Shfl(ShflMode::Xor),
        mask,
        value.to_bits(),
        lane_mask,
    ))
}

/// The most 32-bit words [`shfl_down_words`] moves: values of up to 64 bytes.
const MAX_WORDS: usize = 16;

/// [`shfl_down_sync`] of any plain value without padding, moved as its 32-bit words one after
/// the other (CUB's `ShuffleDown`; the last word padded with zeros): what `#[reduce]`'s pass
/// moves between lanes, whatever its value type (`Complex64`, a `#[repr(C)]` struct of a value
/// and its index). Every lane of `mask` calls it with the same type.
#[doc(hidden)]
#[inline(always)]
#[track_caller]
pub fn shfl_down_words<T: crate::AnyBitPattern>(mask: u32, value: T, delta: u32) -> T {
    const {
        assert!(
            core::mem::size_of::<T>() <= 4 * MAX_WORDS,
            "a warp moves values of at most 64 bytes"
        )
    };
    let (size, mut words) = (core::mem::size_of::<T>(), [0u32; MAX_WORDS]);
    // SAFETY: `T` is no larger than the words (checked above) and has no padding
    // (`AnyBitPattern`): its bytes are initialised.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&value as *const T).cast::<u8>(),
            words.as_mut_ptr().cast::<u8>(),
            size,
        )
    };
    // Straight-line code of a constant length, so that the words stay in registers.
    macro_rules! each {
        ($($w:literal)*) => { $( if $w < size.div_ceil(4) {
            words[$w] = shfl_down_sync(mask, words[$w], delta);
        } )* };
    }
    each!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    // SAFETY: the bytes are a `T`'s, another lane's or this one's, and any bits are a `T`
    // (`AnyBitPattern`).
    unsafe { words.as_ptr().cast::<T>().read_unaligned() }
}

/// A vote of the lanes of `mask`: `vote.sync.MODE` with the result as a `u32`.
#[cfg(target_arch = "nvptx64")]
macro_rules! vote {
    ($mode:literal, $mask:expr, $pred:expr) => {{
        let r: u32;
        // SAFETY: a warp vote; the lanes of `mask` meeting here is the caller's contract.
        unsafe {
            core::arch::asm!(
                concat!(
                    "{{ .reg .pred p, q; setp.ne.u32 p, {v}, 0; vote.sync.", $mode,
                    ".pred q, p, {m}; selp.u32 {r}, 1, 0, q; }}"
                ),
                v = in(reg32) $pred as u32, m = in(reg32) $mask, r = out(reg32) r,
                options(nostack)
            );
        }
        r != 0
    }};
}

/// `__ballot_sync(mask, pred)`: bit `i` is set when lane `i` of `mask` passed `true`.
#[inline(always)]
#[track_caller]
pub fn ballot_sync(mask: u32, pred: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a warp vote; the lanes of `mask` meeting here is the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {r}, p, {m}; }}",
                v = in(reg32) pred as u32, m = in(reg32) mask, r = out(reg32) r,
                options(nostack)
            );
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        meet(WarpOp::Ballot, mask, pred as u64, 0) as u32
    }
}

/// `__all_sync(mask, pred)`: whether every lane of `mask` passed `true`.
#[inline(always)]
#[track_caller]
pub fn all_sync(mask: u32, pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    return vote!("all", mask, pred);
    #[cfg(not(target_arch = "nvptx64"))]
    {
        meet(WarpOp::All, mask, pred as u64, 0) != 0
    }
}

/// `__any_sync(mask, pred)`: whether some lane of `mask` passed `true`.
#[inline(always)]
#[track_caller]
pub fn any_sync(mask: u32, pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    return vote!("any", mask, pred);
    #[cfg(not(target_arch = "nvptx64"))]
    {
        meet(WarpOp::Any, mask, pred as u64, 0) != 0
    }
}

/// `__uni_sync(mask, pred)` (Numba's `eq_sync`): whether every lane of `mask` passed the same
/// `pred`.
#[inline(always)]
#[track_caller]
pub fn eq_sync(mask: u32, pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    return vote!("uni", mask, pred);
    #[cfg(not(target_arch = "nvptx64"))]
    {
        meet(WarpOp::Eq, mask, pred as u64, 0) != 0
    }
}

/// A match of the lanes of `mask` on the bits of `value`: `match.MODE.sync` at its width.
#[cfg(target_arch = "nvptx64")]
macro_rules! match_sync {
    ($mode:literal, $mask:expr, $value:expr) => {{
        let bits = $value.to_bits();
        let r: u32;
        // SAFETY: a warp match; the lanes of `mask` meeting here is the caller's contract.
        unsafe {
            if T::WIDE {
                core::arch::asm!(
                    concat!("match.", $mode, ".sync.b64 {r}, {v}, {m};"),
                    r = out(reg32) r, v = in(reg64) bits, m = in(reg32) $mask,
                    options(nostack)
                );
            } else {
                core::arch::asm!(
                    concat!("match.", $mode, ".sync.b32 {r}, {v}, {m};"),
                    r = out(reg32) r, v = in(reg32) bits as u32, m = in(reg32) $mask,
                    options(nostack)
                );
            }
        }
        r
    }};
}

/// `__match_any_sync(mask, value)`: the lanes of `mask` that passed the same bits as the caller.
#[inline(always)]
#[track_caller]
pub fn match_any_sync<T: WarpValue>(mask: u32, value: T) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    return match_sync!("any", mask, value);
    #[cfg(not(target_arch = "nvptx64"))]
    {
        meet(WarpOp::MatchAny, mask, value.to_bits(), 0) as u32
    }
}

/// `__match_all_sync(mask, value, &pred)`: `(mask, true)` when every lane of `mask` passed the
/// same bits, else `(0, false)` (Numba's `match_all_sync` returns the same pair).
#[inline(always)]
#[track_caller]
pub fn match_all_sync<T: WarpValue>(mask: u32, value: T) -> (u32, bool) {
    #[cfg(target_arch = "nvptx64")]
    let r = match_sync!("all", mask, value);
    #[cfg(not(target_arch = "nvptx64"))]
    let r = meet(WarpOp::MatchAll, mask, value.to_bits(), 0) as u32;
    (r, r != 0)
}

/// `__syncwarp(mask)`: waits until every lane of `mask` has reached a `syncwarp` with the same
/// mask, and orders what each of them wrote or read before it with what each does after it
/// (the only collective that orders memory accesses; see the module's note).
#[inline(always)]
#[track_caller]
pub fn syncwarp(mask: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a warp barrier; the lanes of `mask` meeting here is the caller's contract.
    unsafe {
        core::arch::asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    meet(WarpOp::Sync, mask, 0, 0);
}

/// `__activemask()`: the lanes of the caller's warp that run with it now. On the CPU backend,
/// whose warps run as coroutines where a kernel calls it, the lanes that have not returned and
/// call it at the same place together: in a branch, the lanes that took it, as a warp that runs
/// the branch in lockstep gives.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn activemask() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: reads which lanes are active; no memory access.
        unsafe {
            core::arch::asm!("activemask.b32 {r};", r = out(reg32) r, options(nostack));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::sched::warp::activemask()
}
