//! A kernel that fails its index check on a GPU traps; the error names the kernel and says the
//! context must be opened again. Its own test binary: a trap spoils the GPU's context for every
//! test of the process.

mod common;

use kernel_runtime::Device;
use kernel_suite::test_kernels::off_by_one;

#[test]
fn a_trapped_kernel_is_an_error_naming_it() {
    let Ok(gpu) = Device::cuda(0) else {
        eprintln!("skipping: no usable GPU");
        return;
    };
    let x = gpu.to_device(&vec![1.0f32; 100]).unwrap();
    let mut out = gpu.zeros::<f32, _>(1).unwrap();
    // The launch itself is queued; the fault shows at the next wait.
    let err = off_by_one
        .launch(4, 32, (&x, &mut out))
        .and_then(|()| gpu.synchronize())
        .unwrap_err();
    common::assert_trapped(&err, "off_by_one");
}
