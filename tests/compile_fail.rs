//! The compile-fail suite: every program under `tests/ui/` misuses a kernel in one way, and must
//! be refused at compile time with the diagnostic recorded next to it (`.stderr`).
//!
//! Regenerate the expected output after a deliberate change of a message with
//! `TRYBUILD=overwrite cargo test --test compile_fail`, then read the new `.stderr` files.

use std::path::Path;

#[test]
fn compile_fail() {
    // The programs' build scripts build the crates' device code again, in trybuild's own
    // target directory: they share the test build's device crates and their build cache.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let shared = target.join("kernel-device");
    if std::env::var_os("KERNEL_DEVICE_TARGET_DIR").is_none() && shared.is_dir() {
        // Set before trybuild starts any thread; no other test of this binary reads it.
        std::env::set_var("KERNEL_DEVICE_TARGET_DIR", &shared);
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
