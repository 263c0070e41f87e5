//! Helpers shared by the integration tests.

use kernel_runtime::{Device, DeviceKind};

/// The backends to run on: the CPU backend, its checked mode (which must find nothing wrong
/// with the kernels it runs), and the default device when it is another one.
// Only the test binaries that run kernels on every backend use it.
#[allow(dead_code)]
pub fn backends() -> Vec<Device> {
    let mut devs = vec![Device::cpu(), Device::cpu_checked()];
    match Device::from_env() {
        Ok(d) if !matches!(d.kind(), DeviceKind::Cpu | DeviceKind::CpuChecked) => devs.push(d),
        Ok(_) => {}
        Err(e) => eprintln!("skipping the GPU backend: {e}"),
    }
    devs
}

/// Asserts that `msg` contains every one of `needles`, naming the first one missing.
#[track_caller]
pub fn assert_mentions(msg: &str, needles: &[&str]) {
    for needle in needles {
        assert!(msg.contains(needle), "`{needle}` missing from: {msg}");
    }
}

/// Asserts that `err` is the GPU fault of `kernel`, with what to do about the lost context.
// Only the test binaries that launch on a GPU, real or fake, use it.
#[allow(dead_code)]
#[track_caller]
pub fn assert_trapped(err: &kernel_runtime::Error, kernel: &str) {
    let msg = err.to_string();
    assert!(
        matches!(err, kernel_runtime::Error::KernelTrapped { kernel: k, .. } if *k == kernel),
        "expected a fault of `{kernel}`: {msg}"
    );
    assert_mentions(&msg, &["Device::cuda"]);
}

/// Whether the build must have PTX (`KERNEL_REQUIRE_PTX=1`, as `cargo xtask test` sets), so that a
/// test finding none fails instead of saying so and passing.
// Only the test binaries that look at PTX use it.
#[allow(dead_code)]
pub fn ptx_required() -> bool {
    std::env::var("KERNEL_REQUIRE_PTX").is_ok_and(|v| v == "1")
}
