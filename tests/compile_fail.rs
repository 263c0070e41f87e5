//! The compile-fail suite: every program under `tests/ui/` misuses a kernel in one way, and must
//! be refused at compile time with the diagnostic recorded next to it (`.stderr`).
//!
//! Regenerate the expected output after a deliberate change of a message with
//! `TRYBUILD=overwrite cargo test --test compile_fail`, then read the new `.stderr` files.

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
