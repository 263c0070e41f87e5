//! Module arrays (`constant_array!`, `global_array!`) on every backend: values set by the host
//! and read by kernels, zeros before any `set`, a wrong length refused, an index past the end a
//! fault naming the array, and snapshots that a `set` leaves alone.
//!
//! The CPU backends share one copy of each array, so each array here is set by one test only.

use kernel_runtime::{Device, Error};
use kernel_suite::test_kernels::{
    convolve_empty, convolve_taps, gather_lookup, scale_pairs, Pair, BLOCK_PAIRS, LOOKUP,
    NEVER_SET, NO_TAPS, TAPS,
};

mod common;
use common::backends;

#[test]
fn kernels_read_the_constant_taps_the_host_set() {
    let x: Vec<f32> = (0..300).map(|i| (i % 17) as f32 - 8.0).collect();
    for (round, dev) in backends().into_iter().enumerate() {
        let taps: Vec<f32> = (0..5).map(|k| (k + round) as f32 * 0.5 - 1.0).collect();
        TAPS.set(&dev, &taps).unwrap();
        assert_eq!(TAPS.to_vec(&dev).unwrap(), taps);
        let xs = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f32, _>(x.len()).unwrap();
        convolve_taps.launch(3, 128, (&xs, &mut out)).unwrap();
        let mut expected = vec![0.0f32; x.len()];
        for (i, e) in expected.iter_mut().enumerate().take(x.len() - 4) {
            *e = (0..5).fold(0.0, |acc, k| acc + taps[k] * x[i + k]);
        }
        assert_eq!(out.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn an_empty_constant_array_is_declared_set_and_read_as_numba_allows() {
    let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
    for dev in backends() {
        NO_TAPS.set(&dev, &[]).unwrap();
        assert_eq!(NO_TAPS.to_vec(&dev).unwrap(), Vec::<f32>::new());
        assert!(
            NO_TAPS.set(&dev, &[1.0]).is_err(),
            "a value for an empty array"
        );
        let xs = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f32, _>(x.len()).unwrap();
        convolve_empty.launch(1, 128, (&xs, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), x, "{:?}", dev.kind());
    }
}

#[test]
fn kernels_gather_from_a_global_table_and_unset_arrays_are_zeros() {
    let keys: Vec<u32> = (0..5000u32).map(|i| (i * 7919) % 1000).collect();
    for dev in backends() {
        assert_eq!(NEVER_SET.to_vec(&dev).unwrap(), vec![0.0; 3]);
        let table: Vec<u32> = (0..1000u32).map(|i| i * i + 1).collect();
        LOOKUP.set(&dev, &table).unwrap();
        let k = dev.to_device(&keys).unwrap();
        let mut out = dev.zeros::<u32, _>(keys.len()).unwrap();
        gather_lookup.forall(keys.len(), (&k, &mut out)).unwrap();
        let expected: Vec<u32> = keys.iter().map(|&k| table[k as usize]).collect();
        assert_eq!(out.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn a_constant_array_of_structs_is_read_across_a_barrier() {
    let pairs = [
        Pair { n: 1, x: 0.5 },
        Pair { n: 2, x: -1.0 },
        Pair { n: 3, x: 4.0 },
        Pair { n: 0, x: 7.0 },
    ];
    let x: Vec<f32> = (0..200).map(|i| i as f32).collect();
    for dev in backends() {
        BLOCK_PAIRS.set(&dev, &pairs).unwrap();
        let xs = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f32, _>(x.len()).unwrap();
        scale_pairs.launch(7, 32, (&xs, &mut out)).unwrap();
        let expected: Vec<f32> = (0..x.len())
            .map(|i| {
                let p = pairs[(i / 32) % 4];
                p.n as f32 * x[i] + p.x
            })
            .collect();
        assert_eq!(out.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn values_of_the_wrong_length_are_refused() {
    let dev = Device::cpu();
    match TAPS.set(&dev, &[1.0; 4]) {
        Err(Error::ShapeMismatch {
            expected, found, ..
        }) => assert_eq!((expected, found), (vec![5], vec![4])),
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
    assert_eq!((TAPS.len(), TAPS.name()), (5, "TAPS"));
}

#[test]
fn an_index_past_the_end_is_a_fault_naming_the_array() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let keys = dev.to_device(&[3u32, 1000][..]).unwrap();
        let mut out = dev.zeros::<u32, _>(2).unwrap();
        let err = gather_lookup.launch(1, 2, (&keys, &mut out)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("LOOKUP") && text.contains("1000"),
            "{:?}: {text}",
            dev.kind()
        );
    }
}

#[test]
fn a_snapshot_keeps_its_values_when_the_array_is_set() {
    // Host code may read too: a snapshot is never written, a `set` installs new values.
    kernel_runtime::global_array!(static HISTORY: [i64; 2]);
    let dev = Device::cpu();
    HISTORY.set(&dev, &[1, 2]).unwrap();
    let before = HISTORY.read();
    HISTORY.set(&dev, &[3, 4]).unwrap();
    assert_eq!((before[0], before[1]), (1, 2));
    assert_eq!(HISTORY.read()[1], 4);
    assert_eq!(HISTORY.to_vec(&dev).unwrap(), vec![3, 4]);
}

// A terabyte: more than a host or a GPU holds.
kernel_runtime::global_array!(static HUGE: [u8; 1usize << 40]);

#[test]
fn an_array_the_host_cannot_hold_is_an_error_not_an_abort() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let err = HUGE.to_vec(&dev).unwrap_err();
        assert!(
            matches!(err, Error::OutOfMemory { bytes, .. } if bytes == 1 << 40),
            "{err}"
        );
    }
}

mod snapshot {
    use kernel_runtime::prelude::*;

    // Set by `a_launch_reads_one_snapshot_while_another_thread_sets` alone.
    kernel_runtime::constant_array!(pub static EPOCH: [u32; 1]);

    /// Each thread spins a while, then records the epoch it reads.
    #[kernel]
    pub fn record_epoch(out: &mut [u32]) {
        let i = grid(1);
        if i < out.len() {
            let mut x = i as u32;
            for _ in 0..200 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            }
            out[i] = EPOCH.read()[0] + (x & 0);
        }
    }
}

#[test]
fn a_launch_reads_one_snapshot_while_another_thread_sets() {
    use snapshot::{record_epoch, EPOCH};
    let dev = Device::cpu();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut epoch = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                epoch += 1;
                EPOCH.set(&dev, &[epoch]).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let mut out = dev.zeros::<u32, _>(1 << 16).unwrap();
        let mut mixed = 0;
        for _ in 0..20 {
            record_epoch.launch(256, 256, &mut out).unwrap();
            let seen = out.to_vec().unwrap();
            mixed += usize::from(seen.iter().any(|&e| e != seen[0]));
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(mixed, 0, "launches that read several epochs, of 20");
    });
}
