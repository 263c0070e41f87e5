//! Helpers shared by the integration tests.

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
