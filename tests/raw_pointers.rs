//! `unsafe` kernels that take raw pointers, on every backend: pointers to arrays and into them,
//! and a pointer of another device refused.

use kernel_runtime::{Device, DevicePtr, Error};
use kernel_suite::test_kernels::axpy_raw;

mod common;
use common::backends;

#[test]
fn raw_pointers_reach_the_arrays_they_address() {
    for dev in backends() {
        let x = dev
            .to_device(&(0..100).map(|i| i as f32).collect::<Vec<_>>())
            .unwrap();
        let mut y = dev.to_device(&vec![1.0f32; 100]).unwrap();
        // SAFETY: both arrays hold 100 elements and outlive the launch.
        unsafe {
            axpy_raw
                .launch(1, 128, (100, 2.0, x.device_ptr(), y.device_ptr_mut()))
                .unwrap()
        };
        let expected: Vec<f32> = (0..100).map(|i| 2.0 * i as f32 + 1.0).collect();
        assert_eq!(y.to_vec().unwrap(), expected, "{:?}", dev.kind());
        // Pointers into the arrays: the last 10 elements of y from the first 10 of x.
        let (from, to) = (x.device_ptr(), y.device_ptr_mut().add(90));
        // SAFETY: 10 elements from each pointer lie within its array.
        unsafe { axpy_raw.launch(1, 32, (10, -1.0, from, to)).unwrap() };
        let mut expected = expected;
        for k in 0..10 {
            expected[90 + k] -= k as f32;
        }
        assert_eq!(y.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn a_pointer_of_another_device_is_refused() {
    let (cpu, checked) = (Device::cpu(), Device::cpu_checked());
    let x = cpu.zeros::<f32, _>(4).unwrap();
    let mut y = checked.zeros::<f32, _>(4).unwrap();
    // SAFETY: refused before anything runs.
    let err =
        unsafe { axpy_raw.launch(1, 4, (4, 1.0, x.device_ptr(), y.device_ptr_mut())) }.unwrap_err();
    assert!(
        matches!(err, Error::DeviceMismatch { argument: "y", .. }),
        "{err}"
    );
    let p: DevicePtr<f32> = DevicePtr::new(&cpu, 0x1000);
    assert_eq!((p.add(3).addr(), p.device()), (0x100c, &cpu));
}
