//! Foreign device functions (`#[device(extern)]`) on every backend: a saxpy whose multiply is
//! CUDA C++ (`foreign-kernels/cuda/mul.cu`, with a header from an include directory) runs the
//! Rust body on the CPU backends and the linked CUDA C++ on a GPU; an add whose body is PTX alone
//! fails a CPU launch with an error naming it, and runs on a GPU.

use foreign_kernels::{add_foreign, mul_on_cpu, offset_rows, saxpy_foreign};
use kernel_runtime::{DeviceKind, Error};

mod common;
use common::{assert_mentions, backends};

#[test]
fn a_saxpy_multiplies_with_the_foreign_function_on_every_backend() {
    let n = 1000;
    let a = 3.0f32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 13) as f32 * 1.5).collect();
    // mul.cu: a * b * FOREIGN_SCALE (0.5), rounded as the CPU body rounds; the add is not fused
    // into a call.
    let expected: Vec<f32> = x
        .iter()
        .zip(&y)
        .map(|(&x, &y)| mul_on_cpu(a, x) + y)
        .collect();
    for dev in backends() {
        let xs = dev.to_device(&x).unwrap();
        let mut ys = dev.to_device(&y).unwrap();
        saxpy_foreign.forall(n, (a, &xs, &mut ys)).unwrap();
        assert_eq!(ys.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn a_foreign_function_without_a_cpu_body_fails_the_cpu_launch_naming_it() {
    let x = vec![1.0f32; 64];
    for dev in backends() {
        let xs = dev.to_device(&x).unwrap();
        let mut ys = dev.to_device(&x).unwrap();
        let result = add_foreign.forall(64, (&xs, &mut ys));
        if matches!(dev.kind(), DeviceKind::Cpu | DeviceKind::CpuChecked) {
            let err = result.unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::KernelFault {
                        kernel: "add_foreign",
                        ..
                    }
                ),
                "{err}"
            );
            assert_mentions(
                &err.to_string(),
                &[
                    "add_f32_f32",
                    "no CPU body",
                    "#[device(extern, cpu = path)]",
                ],
            );
        } else {
            // On a GPU the PTX body (ptx/add.ptx) runs.
            result.unwrap();
            assert_eq!(ys.to_vec().unwrap(), vec![2.0f32; 64]);
        }
    }
}

#[test]
fn a_raw_pointer_crosses_the_link_in_an_unsafe_declaration() {
    let (count, width) = (50u32, 7u32);
    let values: Vec<f32> = (0..count * width).map(|i| i as f32).collect();
    let expected: Vec<f32> = values.iter().map(|v| v + 0.25).collect();
    for dev in backends() {
        let mut rows = dev.to_device(&values).unwrap();
        // SAFETY: `rows` holds `count` rows of `width` values, one per thread.
        unsafe {
            offset_rows
                .launch(2, 32, (rows.device_ptr_mut(), count, width, 0.25f32))
                .unwrap()
        };
        assert_eq!(rows.to_vec().unwrap(), expected, "{:?}", dev.kind());
    }
}

#[test]
fn the_cpu_body_runs_on_the_host_as_a_plain_function() {
    assert_eq!(foreign_kernels::mul_f32_f32(3.0, 4.0), 6.0);
}
