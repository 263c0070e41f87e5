//! The warpgroup's operations on an sm_90a GPU: the PTX instructions, the operands' shared
//! memory described to the tensor cores by 64-bit matrix descriptors.

use super::*;

/// A matrix descriptor without swizzle: the operand's start, and the bytes from one core
/// matrix to the next along `K` (`leading`) and along `M` or `N` (`stride`), each in units of
/// 16 bytes in 14 bits (the start's shared address below 256 KiB).
#[inline(always)]
fn descriptor(start: *const u8, leading: usize, stride: usize) -> u64 {
    let field = |bytes: u64| (bytes >> 4) & 0x3fff;
    let addr = crate::pipeline::shared_addr(start) as u64;
    field(addr) | field(leading as u64) << 16 | field(stride as u64) << 32
}

pub(super) fn sync_op(op: Op) {
    macro_rules! wait {
        ($($n:literal)*) => {
            match op {
                $(Op::Wait($n) => {
                    // SAFETY: waits on the thread's own groups; every thread of the warpgroup
                    // calling it is the caller's contract. Not `nomem`: the accumulators and the
                    // operands' shared memory are settled here.
                    unsafe {
                        core::arch::asm!(
                            concat!("wgmma.wait_group.sync.aligned ", $n, ";"),
                            options(nostack)
                        )
                    }
                })*
                _ => {}
            }
        };
    }
    match op {
        // SAFETY: as `wait_group`'s.
        Op::Fence => unsafe { core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack)) },
        // SAFETY: as `wait_group`'s.
        Op::Commit => unsafe {
            core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack))
        },
        _ => wait!(0 1 2 3 4 5 6 7),
    }
}

/// `"{}, {}, .."`: one positional operand for each register.
macro_rules! regs {
    ($first:literal $($i:literal)*) => { concat!("{}" $(, regs!(@next $i))*) };
    (@next $i:literal) => { ", {}" };
}

/// `wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T` of the accumulator's registers `$x[$i]`, the
/// descriptors `$da` and `$db`, and the instruction's last operands `$tail` (the scales of `A`
/// and `B`, and for 16-bit types whether each is transposed).
macro_rules! wgmma {
    ($n:literal, $k:literal, $ty:literal, $tail:literal, $x:expr, $da:expr, $db:expr, $acc:expr; $($i:literal)*) => {
        // SAFETY: the descriptors name tiles in the block's shared memory (checked by the
        // caller); the warpgroup's threads meeting here is the caller's contract. Not `nomem`:
        // the tensor cores read shared memory.
        unsafe {
            core::arch::asm!(
                // One line: the PTX's lines that start with `.` are its directives.
                concat!("{{ .reg .pred p; setp.ne.b32 p, {acc}, 0; ",
                    "wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                    " {{", regs!($($i)*), "}}, {da}, {db}, p, ", $tail, "; }}"),
                $(inout(reg32) $x[$i],)*
                da = in(reg64) $da,
                db = in(reg64) $db,
                acc = in(reg32) $acc,
                options(nostack)
            )
        }
    };
}

/// One width's instruction, for each operand type: `A` K-major, `B` N-major for 16-bit types
/// (`imm-trans-b` 1), K-major for `tf32` (which takes no transpose operands).
macro_rules! shape {
    ($n:literal, $kind:expr, $x:expr, $da:expr, $db:expr, $acc:expr; $($i:literal)*) => {
        match $kind {
            WgKind::F16 => wgmma!($n, "16", "f16", "1, 1, 0, 1", $x, $da, $db, $acc; $($i)*),
            WgKind::Bf16 => wgmma!($n, "16", "bf16", "1, 1, 0, 1", $x, $da, $db, $acc; $($i)*),
            WgKind::Tf32 => wgmma!($n, "8", "tf32", "1, 1", $x, $da, $db, $acc; $($i)*),
        }
    };
}

#[inline(always)]
pub(super) fn mma<S: WgShape, T: WgElement, const M: usize, const K: usize>(
    d: &mut WgAccumulator<S>,
    (sa, m): (&impl Source<T>, usize),
    (sb, n, width): (&impl Source<T>, usize, usize),
    accumulate: bool,
) {
    let x = d.x.as_mut();
    let (a, b) = (sa.first() as *const u8, sb.first() as *const u8);
    // Straight-line steps, so that the accumulator's elements stay in registers.
    macro_rules! steps {
        ($($step:literal)*) => {
            $( if $step < K / S::K {
                issue::<S, T, M, K>(x, (a, m), (b, n, width), $step, accumulate || $step > 0)
            } )*
        };
    }
    steps!(0 1 2 3 4 5 6 7);
}

/// The instruction of step `step` (`S::K` deep): the tiles of `A` from row `m` of the array at
/// `a` and of `B` from column `n` of the array at `b`, `width` columns wide where K-major.
#[inline(always)]
fn issue<S: WgShape, T: WgElement, const M: usize, const K: usize>(
    x: &mut [f32],
    (a, m): (*const u8, usize),
    (b, n, width): (*const u8, usize, usize),
    step: usize,
    accumulate: bool,
) {
    let k = S::K * step;
    let (a0, b0) = (a_place::<T, M>(m, k)[0], b_at::<T>(k, n, K, width)[0]);
    let ((a_lead, a_stride), (b_lead, b_stride)) = (a_strides::<T, M>(), b_strides::<T>(K, width));
    let da = descriptor(a.wrapping_add(16 * a0), a_lead, a_stride);
    let db = descriptor(b.wrapping_add(16 * b0), b_lead, b_stride);
    let acc = accumulate as u32;
    match S::N {
        8 => shape!("8", T::KIND, x, da, db, acc; 0 1 2 3),
        64 => shape!("64", T::KIND, x, da, db, acc;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31),
        128 => shape!("128", T::KIND, x, da, db, acc;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60
            61 62 63),
        _ => shape!("256", T::KIND, x, da, db, acc;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60
            61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89
            90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113
            114 115 116 117 118 119 120 121 122 123 124 125 126 127),
    }
}
