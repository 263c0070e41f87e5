//! Generic kernels on every backend: one PTX entry per instance that `#[kernel(instances(..))]`
//! lists, the launch's types picking it, with one or two type parameters, with barriers.

use kernel_runtime::{Device, Kernel};
use kernel_suite::test_kernels::{axpy_generic, count_above, grid_rotate_generic, widen_add};

mod common;
use common::backends;

/// `axpy_generic` of `T` on `dev`: `a x + y` for `x = 0, 1, ..`, `y = 1, 1, ..`.
fn axpy<T>(dev: &Device, a: T, from: impl Fn(usize) -> T) -> Vec<T>
where
    T: kernel_runtime::DeviceNumber,
    (T,): kernel_runtime::KernelInstance<axpy_generic>,
{
    let n = 300;
    let x = dev
        .to_device(&(0..n).map(&from).collect::<Vec<_>>())
        .unwrap();
    let mut y = dev.to_device(&vec![from(1); n]).unwrap();
    axpy_generic
        .launch(n.div_ceil(128), 128, (a, &x, &mut y))
        .unwrap();
    y.to_vec().unwrap()
}

#[test]
fn each_instance_runs_with_its_own_type() {
    for dev in backends() {
        let what = format!("{:?}", dev.kind());
        let f = axpy(&dev, 0.5f32, |i| i as f32);
        assert_eq!(
            f,
            (0..300).map(|i| 0.5 * i as f32 + 1.0).collect::<Vec<_>>(),
            "{what}"
        );
        let d = axpy(&dev, 0.25f64, |i| i as f64);
        assert_eq!(
            d,
            (0..300).map(|i| 0.25 * i as f64 + 1.0).collect::<Vec<_>>(),
            "{what}"
        );
        let s = axpy(&dev, -3i32, |i| i as i32);
        assert_eq!(
            s,
            (0..300i32).map(|i| -3 * i + 1).collect::<Vec<_>>(),
            "{what}"
        );
        let u = axpy(&dev, 1u64 << 40, |i| i as u64);
        assert_eq!(
            u,
            (0..300).map(|i| (i as u64) << 40 | 1).collect::<Vec<_>>(),
            "{what}"
        );
    }
}

#[test]
fn two_type_parameters_take_their_instances_as_pairs() {
    for dev in backends() {
        let x = dev.to_device(&[1.5f32, -2.25, 3.0][..]).unwrap();
        let mut out = dev.to_device(&[0.1f64, 0.2, 0.3][..]).unwrap();
        widen_add.launch(1, 32, (&x, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), [1.5 + 0.1, -2.25 + 0.2, 3.0 + 0.3]);
        let x = dev.to_device(&[i32::MAX, i32::MIN][..]).unwrap();
        let mut out = dev.to_device(&[1i64, -1][..]).unwrap();
        widen_add.launch(1, 32, (&x, &mut out)).unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            [i32::MAX as i64 + 1, i32::MIN as i64 - 1]
        );
    }
}

#[test]
fn a_generic_kernel_with_barriers_splits_as_any_other() {
    const { assert!(count_above::META.split) };
    for dev in backends() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 256) as u8).collect();
        let x = dev.to_device(&bytes).unwrap();
        let mut counts = dev.zeros::<u32, _>(8).unwrap();
        count_above
            .launch(8, 128, (200u8, &x, &mut counts))
            .unwrap();
        let expected: Vec<u32> = bytes
            .chunks(128)
            .map(|c| c.iter().filter(|&&b| b > 200).count() as u32)
            .collect();
        assert_eq!(counts.to_vec().unwrap(), expected, "{:?}", dev.kind());
        let x = dev.to_device(&[0.5f64, 2.5, 1.5][..]).unwrap();
        let mut counts = dev.zeros::<u32, _>(1).unwrap();
        count_above
            .launch(1, 128, (1.0f64, &x, &mut counts))
            .unwrap();
        assert_eq!(counts.to_vec().unwrap(), [2]);
    }
}

#[test]
fn a_generic_kernel_can_be_cooperative() {
    assert_eq!(
        grid_rotate_generic::META.instances[1],
        (
            "grid_rotate_generic__f64",
            &["u32", "ptr", "usize", "ptr", "usize", "ptr"][..]
        )
    );
    for dev in backends() {
        let start: Vec<f64> = (0..100).map(|i| i as f64 / 4.0).collect();
        let mut a = dev.to_device(&start).unwrap();
        let mut b = dev.zeros::<f64, _>(100).unwrap();
        let blocks = grid_rotate_generic
            .max_cooperative_grid_blocks(&dev, 32, 0)
            .unwrap()
            .min(4);
        grid_rotate_generic
            .launch(blocks, 32, (7, &mut a, &mut b))
            .unwrap();
        let expected: Vec<f64> = (0..100).map(|i| start[(i + 7) % 100]).collect();
        assert_eq!(a.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn the_instances_are_listed_with_their_entries_and_parameters() {
    let entries: Vec<&str> = axpy_generic::META.instances.iter().map(|i| i.0).collect();
    assert_eq!(
        entries,
        [
            "axpy_generic__f32",
            "axpy_generic__f64",
            "axpy_generic__i32",
            "axpy_generic__u64",
            "axpy_generic__f16"
        ]
    );
    assert_eq!(
        axpy_generic::META.instances[1].1,
        ["f64", "ptr", "usize", "ptr", "usize"]
    );
    assert_eq!(widen_add::META.instances[1].0, "widen_add__i32__i64");
}
