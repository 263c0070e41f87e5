//! A kernel that panics on the CPU backend: the launch returns the panic's message with its
//! source line, block and thread, and prints nothing.

use kernel_runtime::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;
use common::assert_mentions;

/// Refuses negative inputs with an `assert!`.
#[kernel]
pub fn checked_sqrt(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        assert!(x[i] >= 0.0, "negative input {}", x[i]); // panics here
        out[i] = x[i].sqrt();
    }
}

/// `f(x)` element-wise, refusing negative inputs too.
#[vectorize]
pub fn checked_root(x: f32) -> f32 {
    assert!(x >= 0.0, "negative input"); // vectorized panic
    x.sqrt()
}

fn line_of(needle: &str) -> usize {
    let text = include_str!("cpu_faults.rs");
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

/// Panics that reached the hook the program set.
static HOOKED: AtomicUsize = AtomicUsize::new(0);

/// One test, so that the program's hook is set before the first launch of this process.
#[test]
fn a_kernel_panic_is_an_error_with_its_source_line_and_prints_nothing() {
    std::panic::set_hook(Box::new(|_| {
        HOOKED.fetch_add(1, Ordering::SeqCst);
    }));
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let mut x = vec![1.0f32; 64];
        x[35] = -4.0;
        let dx = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<f32, _>(64).unwrap();
        let err = checked_sqrt.launch(2, 32, (&dx, &mut out)).unwrap_err();
        let at = format!(
            "panicked at tests/cpu_faults.rs:{}:",
            line_of("// panics here")
        );
        assert_mentions(
            &err.to_string(),
            &[
                "checked_sqrt",
                &at,
                "negative input -4",
                "block (1, 0, 0), thread (3, 0, 0)",
            ],
        );

        let mut out = dev.zeros::<f32, _>(64).unwrap();
        let err = checked_root.apply(&dx, &mut out).unwrap_err();
        let at = format!("tests/cpu_faults.rs:{}:", line_of("// vectorized panic"));
        assert_mentions(&err.to_string(), &[&at, "negative input"]);
    }
    assert_eq!(
        HOOKED.load(Ordering::SeqCst),
        0,
        "a kernel panic reached the hook"
    );
    // A panic of the program's own still reaches its hook.
    assert!(std::panic::catch_unwind(|| panic!("the program's own")).is_err());
    assert_eq!(HOOKED.load(Ordering::SeqCst), 1);
}
