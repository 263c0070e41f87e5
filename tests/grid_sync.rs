//! Cooperative launches and grid barriers (`grid_sync()`, `this_grid()`) on every backend:
//! phases that read what other blocks wrote in the phase before, a `#[device]` function taking
//! the grid, the limit on a cooperative grid, a grid barrier that part of the grid skips, and
//! checked mode's order across grid barriers.

use kernel_runtime::{Device, Error, Finding, Kernel, LaunchError};
use kernel_suite::reference::SplitMix64;
use kernel_suite::test_kernels::{
    grid_neighbours, grid_phase_race, grid_prefix_sums, grid_ranks, grid_rotate,
    grid_sum_in_branch, grid_sync_skipped_by_block0, grid_sync_skipped_by_threads,
};

mod common;
use common::{assert_mentions, backends};

#[test]
fn grid_barriers_at_the_top_level_split_the_kernel_into_thread_loops() {
    const { assert!(grid_rotate::META.split && grid_rotate::META.cooperative) };
    const { assert!(grid_sync_skipped_by_block0::META.split) };
    // The grid passed to a device function: the threads run as coroutines.
    const { assert!(!grid_prefix_sums::META.split && grid_prefix_sums::META.cooperative) };
}

#[test]
fn phases_read_what_other_blocks_wrote_before_the_barrier() {
    for dev in backends() {
        for (blocks, threads, n, steps) in [(1, 32, 32, 3), (4, 16, 64, 5), (7, 33, 200, 17)] {
            let start: Vec<u32> = (0..n as u32).collect();
            let mut a = dev.to_device(&start).unwrap();
            let mut b = dev.zeros::<u32, _>(n).unwrap();
            grid_rotate
                .launch(blocks, threads, (steps, &mut a, &mut b))
                .unwrap();
            let expected: Vec<u32> = (0..n).map(|i| ((i + steps as usize) % n) as u32).collect();
            assert_eq!(a.to_vec().unwrap(), expected, "{:?}", dev.kind());
        }
    }
}

#[test]
fn a_device_function_takes_the_grid_for_a_grid_wide_scan() {
    for dev in backends() {
        for (blocks, n) in [(1, 100), (3, 1000), (8, 4097)] {
            let mut rng = SplitMix64(n as u64);
            let x: Vec<u64> = (0..n).map(|_| rng.next_u64() % 1000).collect();
            let dx = dev.to_device(&x).unwrap();
            let mut parts = dev.zeros::<u64, _>(blocks).unwrap();
            let mut out = dev.zeros::<u64, _>(n).unwrap();
            grid_prefix_sums
                .launch(blocks, 256, (&dx, &mut parts, &mut out))
                .unwrap();
            let expected: Vec<u64> = x
                .iter()
                .scan(0, |run, &v| {
                    *run += v;
                    Some(*run)
                })
                .collect();
            assert_eq!(out.to_vec().unwrap(), expected, "{:?}, n = {n}", dev.kind());
        }
    }
}

#[test]
fn ranks_in_the_grid_run_blocks_then_threads_x_fastest() {
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>(48).unwrap();
        grid_ranks.launch((2, 3), (4, 2), &mut out).unwrap();
        let expected: Vec<u32> = (0..48).map(|r| 48 - r).collect();
        assert_eq!(out.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn a_cooperative_grid_larger_than_what_is_resident_is_refused() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let limit = grid_rotate
            .max_cooperative_grid_blocks(&dev, 256, 0)
            .unwrap();
        assert!(limit >= 1, "{limit}");
        let mut a = dev.zeros::<u32, _>(8).unwrap();
        let mut b = dev.zeros::<u32, _>(8).unwrap();
        grid_rotate.launch(limit, 256, (1, &mut a, &mut b)).unwrap();
        let err = grid_rotate
            .launch(limit + 1, 256, (1, &mut a, &mut b))
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidLaunch {
                    reason: LaunchError::TooManyCooperativeBlocks { .. },
                    ..
                }
            ),
            "{err}"
        );
        assert_mentions(
            &err.to_string(),
            &["cooperative launch", "max_cooperative_grid_blocks"],
        );
        // Smaller blocks: more of them.
        let more = grid_rotate
            .max_cooperative_grid_blocks(&dev, 64, 0)
            .unwrap();
        assert!(more > limit, "{more} vs {limit}");
        // A block the device cannot have is refused as a launch would be.
        assert!(grid_rotate
            .max_cooperative_grid_blocks(&dev, 2048, 0)
            .is_err());
    }
}

#[test]
fn a_grid_barrier_that_a_block_skips_is_reported() {
    let mut out = Device::cpu().zeros::<u32, _>(64).unwrap();
    let err = grid_sync_skipped_by_block0
        .launch(4, 16, &mut out)
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::KernelFault { .. }), "{msg}");
    assert_mentions(
        &msg,
        &[
            "divergent grid barrier",
            "3 of 4 blocks",
            "grid_sync()",
            "test_kernels.rs",
            "block (0, 0, 0) exited",
        ],
    );

    let dev = Device::cpu_checked();
    let mut out = dev.zeros::<u32, _>(64).unwrap();
    let err = grid_sync_skipped_by_block0
        .launch(4, 16, &mut out)
        .unwrap_err();
    let Error::CheckFailed { finding, .. } = &err else {
        panic!("expected a finding: {err}")
    };
    assert!(
        matches!(
            **finding,
            Finding::DivergentGridBarrier { count: (3, 4), .. }
        ),
        "{finding}"
    );
}

#[test]
fn threads_that_leave_before_a_grid_barrier_count_as_arrived() {
    for dev in backends() {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        // NVIDIA's laplace and sessionize: `if i >= n: return`, then grid barriers.
        grid_sync_skipped_by_threads
            .launch(2, 32, (16, &mut out))
            .unwrap_or_else(|e| panic!("{:?}: {e}", dev.kind()));
        let want: Vec<u32> = (0..64).map(|i| u32::from(i % 32 < 16)).collect();
        assert_eq!(out.to_vec().unwrap(), want, "{:?}", dev.kind());
        grid_sync_skipped_by_threads
            .launch(2, 32, (32, &mut out))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), [1; 64]);
        // Past the array's end in one block of 64: the last 24 threads leave.
        let mut short = dev.zeros::<u32, _>(40).unwrap();
        exits::leave_past_the_end
            .launch(1, 64, &mut short)
            .unwrap_or_else(|e| panic!("{:?}: {e}", dev.kind()));
        assert_eq!(short.to_vec().unwrap(), [1; 40]);
    }
}

mod exits {
    use kernel_runtime::prelude::*;

    /// The threads past the end leave; the others meet at a grid barrier, then write.
    #[kernel]
    pub fn leave_past_the_end(out: &mut [u32]) {
        let i = grid(1);
        if i >= out.len() {
            return;
        }
        grid_sync();
        out[i] = 1;
    }
}

#[test]
fn a_fault_in_one_block_stops_a_cooperative_launch() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        // `b` is too short for the blocks past the first two: their threads index past it,
        // while the first two wait at the grid barrier.
        let mut a = dev.zeros::<u32, _>(64).unwrap();
        let mut b = dev.zeros::<u32, _>(32).unwrap();
        let err = grid_rotate.launch(4, 16, (3, &mut a, &mut b)).unwrap_err();
        assert_mentions(&err.to_string(), &["grid_rotate", "`b`", "32"]);
    }
}

#[test]
fn a_grid_barrier_in_a_branch_runs_the_threads_as_coroutines() {
    const { assert!(!grid_sum_in_branch::META.split) };
    for dev in backends() {
        for (blocks, threads) in [(1, 1), (5, 1), (3, 64), (4, 33)] {
            let n = blocks * threads;
            let x: Vec<u32> = (1..=n as u32).collect();
            let dx = dev.to_device(&x).unwrap();
            let mut parts = dev.zeros::<u32, _>(blocks).unwrap();
            let mut out = dev.zeros::<u32, _>(1).unwrap();
            grid_sum_in_branch
                .launch(blocks, threads, (&dx, &mut parts, &mut out))
                .unwrap();
            assert_eq!(
                out.to_vec().unwrap(),
                [x.iter().sum::<u32>()],
                "{:?}",
                dev.kind()
            );
        }
    }
}

#[test]
fn checked_mode_orders_accesses_across_grid_barriers_and_finds_races_within_a_phase() {
    let dev = Device::cpu_checked();
    // Writes of one phase read by other blocks in the next: no race, on any grid.
    for blocks in [2, 5] {
        let mut out = dev.zeros::<u32, _>(blocks).unwrap();
        let mut seen = dev.zeros::<u32, _>(blocks).unwrap();
        grid_neighbours
            .launch(blocks, 32, (&mut out, &mut seen))
            .unwrap();
        let expected: Vec<u32> = (0..blocks).map(|b| ((b + 1) % blocks) as u32 + 1).collect();
        assert_eq!(seen.to_vec().unwrap(), expected);
    }
    // Two blocks write one element in one phase: a race between blocks 0 and 1.
    let mut out = dev.zeros::<u32, _>(1).unwrap();
    let mut seen = dev.zeros::<u32, _>(64).unwrap();
    let err = grid_phase_race
        .launch(2, 32, (&mut out, &mut seen))
        .unwrap_err();
    let Error::CheckFailed { finding, .. } = &err else {
        panic!("expected a race: {err}")
    };
    let Finding::DataRace { first, second, .. } = &**finding else {
        panic!("expected a race: {finding}")
    };
    assert_eq!((first.block.x, second.block.x), (0, 1), "{finding}");
    // One block alone has no one to race with.
    let mut out = dev.zeros::<u32, _>(1).unwrap();
    grid_phase_race
        .launch(1, 32, (&mut out, &mut seen))
        .unwrap();
    assert_eq!(seen.to_vec().unwrap()[..32], [0; 32]);
}

mod reads_then_writes {
    use kernel_runtime::prelude::*;

    /// Each thread reads its element and the next, then, after the grid barrier, writes its own:
    /// an element two blocks read in phase 0 is written in phase 1.
    #[kernel]
    pub fn shift_sum(x: &mut [i32], y: &mut [i32]) {
        let i = grid(1);
        let n = x.len();
        let v = x[i] + if i + 1 < n { x[i + 1] } else { 0 };
        y[i] = v;
        grid_sync();
        x[i] = v;
    }
}

#[test]
fn reads_of_two_blocks_then_a_write_after_the_grid_barrier_are_ordered() {
    for dev in backends() {
        let host: Vec<i32> = (0..64).collect();
        let mut x = dev.to_device(&host).unwrap();
        let mut y = dev.zeros::<i32, _>(64).unwrap();
        reads_then_writes::shift_sum
            .launch(2, 32, (&mut x, &mut y))
            .unwrap_or_else(|e| panic!("{:?}: {e}", dev.kind()));
        let want: Vec<i32> = (0..64)
            .map(|i| i + if i < 63 { i + 1 } else { 0 })
            .collect();
        assert_eq!(x.to_vec().unwrap(), want, "{:?}", dev.kind());
    }
}

mod first_leaves {
    use kernel_runtime::prelude::*;

    /// Thread 0 of each block leaves before the grid barrier, which on a GPU it arrives at for
    /// its block.
    #[kernel]
    pub fn first_thread_leaves(out: &mut [u32]) {
        if thread_idx().x == 0 {
            return;
        }
        grid_sync();
        out[grid(1)] = 1;
    }
}

#[test]
fn a_block_whose_first_thread_left_is_an_error_where_a_gpu_would_hang() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        let err = first_leaves::first_thread_leaves
            .launch(2, 32, &mut out)
            .unwrap_err();
        assert_mentions(
            &err.to_string(),
            &[
                "thread (0, 0, 0) has exited",
                "grid_sync()",
                "would never end",
            ],
        );
    }
}
