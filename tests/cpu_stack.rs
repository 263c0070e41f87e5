//! The stacks of threads that the CPU backend runs as coroutines: room for what CUDA allows a
//! thread, and an error naming `KERNEL_CPU_STACK_KIB`, never a crash, for a thread that needs
//! more, in a block of a cooperative launch too.

use kernel_runtime::prelude::*;

mod common;
use common::assert_mentions;

/// Words of `scratch`: 320 KiB, within CUDA's 512 KiB of local memory a thread.
const LEGAL: usize = 80 * 1024;

/// Each thread fills 320 KiB of locals, meets the block at a barrier, and reads them back.
#[kernel(barriers)]
pub fn big_locals(out: &mut [u32]) {
    let mut scratch = [0u32; LEGAL];
    let t = thread_idx().x as usize;
    let mut k = 0;
    while k < LEGAL {
        scratch[k] = (k + t) as u32;
        k += 4096;
    }
    sync_threads();
    let i = grid(1);
    if i < out.len() {
        out[i] = scratch[4096 * (t % 20)];
    }
}

/// A call `levels` deep, each level with 64 KiB of locals.
#[device]
fn deep(levels: u32) -> u32 {
    let mut frame = [levels; 16 * 1024];
    if levels == 0 {
        return core::hint::black_box(frame)[0];
    }
    frame[levels as usize] = deep(levels - 1);
    core::hint::black_box(frame)[levels as usize] + 1
}

/// Each thread goes `levels` calls deep, then meets the block at a barrier.
#[kernel(barriers)]
pub fn deep_calls(levels: u32, out: &mut [u32]) {
    let depth = deep(levels);
    sync_threads();
    let i = grid(1);
    if i < out.len() {
        out[i] = depth;
    }
}

#[test]
fn a_thread_has_the_local_memory_cuda_allows() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        big_locals.launch(2, 32, &mut out).unwrap();
        let expect: Vec<u32> = (0..64)
            .map(|i| (4096 * (i % 32 % 20) + i % 32) as u32)
            .collect();
        assert_eq!(out.to_vec().unwrap(), expect);
    }
}

#[test]
fn a_stack_overflow_is_an_error_naming_the_setting() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        // 2 levels (192 KiB of locals, more in a debug build's frames) fit.
        deep_calls.launch(2, 32, (2, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![2; 64]);
        // 64 levels (4 MiB) do not.
        let err = deep_calls.launch(2, 32, (64, &mut out)).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(
                err,
                Error::KernelFault {
                    kernel: "deep_calls",
                    ..
                }
            ),
            "{msg}"
        );
        assert_mentions(
            &msg,
            &[
                "overflowed its 1024 KiB stack",
                "KERNEL_CPU_STACK_KIB=2048",
                "thread (",
            ],
        );
        // The workers go on: the next launch runs.
        big_locals.launch(2, 32, &mut out).unwrap();
    }
}

/// Each thread goes `levels` calls deep between two grid barriers: a cooperative kernel split
/// at them, whose thread loops run on each block's stack.
#[kernel]
pub fn deep_calls_between_grid_barriers(levels: u32, out: &mut [u32]) {
    let i = grid(1);
    grid_sync();
    let depth = deep(levels);
    grid_sync();
    if i < out.len() {
        out[i] = depth;
    }
}

#[test]
fn a_stack_overflow_in_a_cooperative_launch_is_an_error_naming_the_setting() {
    const { assert!(deep_calls_between_grid_barriers::META.split) };
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        deep_calls_between_grid_barriers
            .launch(2, 32, (2, &mut out))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![2; 64]);
        let err = deep_calls_between_grid_barriers
            .launch(2, 32, (64, &mut out))
            .unwrap_err();
        assert_mentions(
            &err.to_string(),
            &["overflowed its 1024 KiB stack", "KERNEL_CPU_STACK_KIB=2048"],
        );
    }
}
