//! Shared memory past 48 KiB per block: a launch opts in where the device allows it (on a GPU,
//! `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), and past the device's opt-in limit it is
//! refused with the limit and what to do.

use kernel_runtime::{Device, Error, LaunchConfig, LaunchError};
use kernel_suite::test_kernels::shared_window_sums;

mod common;
use common::backends;

/// What `shared_window_sums` leaves in `sums[b]` for a window of `len` words.
fn expected(blocks: usize, len: usize) -> Vec<u32> {
    (0..blocks)
        .map(|b| (0..len).map(|k| (k % 7 + b) as u32).sum())
        .collect()
}

#[test]
fn a_block_takes_100_kib_of_shared_memory_where_the_device_opts_in() {
    let bytes = 100 * 1024;
    for dev in backends() {
        if dev.limits().shared_bytes_limit() < bytes {
            eprintln!(
                "{}: at most {} bytes per block",
                dev.name(),
                dev.limits().shared_bytes_limit()
            );
            continue;
        }
        let mut sums = dev.zeros::<u32, _>(3).unwrap();
        let config = LaunchConfig::new(3, 256).unwrap().shared_bytes(bytes);
        shared_window_sums.launch_with(config, &mut sums).unwrap();
        assert_eq!(
            sums.to_vec().unwrap(),
            expected(3, bytes / 4),
            "{:?}",
            dev.kind()
        );
    }
}

#[test]
fn the_cpu_backend_opts_in_as_far_as_the_largest_gpus() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let limits = dev.limits();
        assert_eq!(
            (limits.max_shared_bytes, limits.max_shared_bytes_optin),
            (48 * 1024, 227 * 1024)
        );
        let mut sums = dev.zeros::<u32, _>(1).unwrap();
        let config = LaunchConfig::new(1, 64).unwrap().shared_bytes(227 * 1024);
        shared_window_sums.launch_with(config, &mut sums).unwrap();
        assert_eq!(sums.to_vec().unwrap(), expected(1, 227 * 256));
        let config = LaunchConfig::new(1, 64)
            .unwrap()
            .shared_bytes(227 * 1024 + 16);
        match shared_window_sums.launch_with(config, &mut sums) {
            Err(Error::InvalidLaunch {
                reason: reason @ LaunchError::TooMuchSharedMemory { limit, .. },
                ..
            }) => {
                assert_eq!(limit, 227 * 1024);
                assert!(reason.to_string().contains("ask for less"), "{reason}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
