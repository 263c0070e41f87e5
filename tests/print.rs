//! `kprintln!` on the CPU backends, and on a GPU where one opens: each test launches in a child
//! process whose stdout it reads (the harness does not capture what kernels print, nor what
//! `vprintf` writes), and checks every thread's lines, in each thread's order.

use kernel_runtime::Device;
use kernel_suite::test_kernels::{print_after_barrier, print_lines};
use std::process::Command;

/// Set in the child process to the device it launches on.
const CHILD: &str = "KPRINTLN_TEST_DEVICE";

/// The devices to print on: both CPU backends, and the first GPU where one opens.
fn devices() -> Vec<&'static str> {
    let mut names = vec!["cpu", "cpu-checked"];
    if Device::cuda(0).is_ok() {
        names.push("gpu");
    }
    names
}

/// The device a child process launches on.
fn child_device(name: &str) -> Device {
    match name {
        "cpu" => Device::cpu(),
        "gpu" => Device::cuda(0).unwrap(),
        _ => Device::cpu_checked(),
    }
}

/// Runs `test` in a child process on `device` and returns its stdout lines.
fn child_lines(test: &str, device: &str) -> Vec<String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, device)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// The line thread `i` prints first (C's `%#x` of a non-zero value is Rust's `{:#x}`).
fn first_line(i: usize, x: f32, flag: bool) -> String {
    format!(
        "block {} thread {:<2}: x={:.2} big={} hex={:#x} neg={} {} ok%",
        i / 16,
        i % 16,
        x,
        i as u64 * 1_000_000_007,
        (i as u32 + 1) * 255,
        -(i as i64),
        flag
    )
}

#[test]
fn a_two_block_kernel_prints_every_threads_lines_in_order() {
    let n = 30;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 1.25 - 3.0).collect();
    let flags: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
    if let Ok(device) = std::env::var(CHILD) {
        let dev = child_device(&device);
        let (xs, fs) = (dev.to_device(&x).unwrap(), dev.to_device(&flags).unwrap());
        print_lines.launch(2, 16, (&xs, &fs)).unwrap();
        // A GPU's `vprintf` buffer reaches stdout when the host synchronizes.
        dev.synchronize().unwrap();
        return;
    }
    for device in devices() {
        let lines = child_lines(
            "a_two_block_kernel_prints_every_threads_lines_in_order",
            device,
        );
        // The harness's `test NAME ... ` may precede the first line.
        let printed: Vec<&str> = lines
            .iter()
            .map(|l| l.rsplit("... ").next().unwrap_or(l))
            .filter(|l| l.starts_with("block ") || l.starts_with("done "))
            .collect();
        assert_eq!(printed.len(), 2 * n, "{device}: {lines:?}");
        for i in 0..n {
            let first = first_line(i, x[i], flags[i] != 0);
            let done = format!("done {i:03}");
            let at = |text: &str| printed.iter().position(|&l| l == text);
            let (a, b) = (at(&first), at(&done));
            assert!(
                a.is_some() && b.is_some(),
                "{device}: thread {i}: {first:?} in {printed:?}"
            );
            assert!(a < b, "{device}: thread {i}'s lines out of order");
        }
    }
}

#[test]
fn a_split_kernel_prints_locals_it_keeps_across_a_barrier() {
    if let Ok(device) = std::env::var(CHILD) {
        let dev = child_device(&device);
        let mut out = dev.zeros::<u32, _>(64).unwrap();
        print_after_barrier.launch(1, 64, &mut out).unwrap();
        dev.synchronize().unwrap();
        return;
    }
    for device in devices() {
        let lines = child_lines(
            "a_split_kernel_prints_locals_it_keeps_across_a_barrier",
            device,
        );
        for t in 0..64u32 {
            let line = format!("thread {t} read {}", (t + 1) % 64 * 10);
            assert!(
                lines.iter().any(|l| l.ends_with(&line)),
                "{device}: {line:?} in {lines:?}"
            );
        }
    }
}

mod formats {
    use kernel_runtime::prelude::*;

    /// One thread prints the forms where C's `printf` and Rust's `format!` part ways.
    #[kernel]
    pub fn print_formats(x: &[i8]) {
        if grid(1) == 0 {
            kprintln!(
                "formats [{:#x}] [{:#X}] [{:#o}] [{:x}] [{:5}] [{:>5}] [{:#010x}] [{:<#6x}]",
                0u32,
                255u32,
                8u32,
                x[0],
                true,
                false,
                255u32,
                15u8
            );
        }
    }
}

#[test]
fn alternate_forms_bits_and_alignment_print_as_rust_formats_them() {
    if let Ok(device) = std::env::var(CHILD) {
        let dev = child_device(&device);
        let x = dev.to_device(&[-1i8][..]).unwrap();
        formats::print_formats.launch(1, 1, &x).unwrap();
        dev.synchronize().unwrap();
        return;
    }
    let want = format!(
        "formats [{:#x}] [{:#X}] [{:#o}] [{:x}] [{:5}] [{:>5}] [{:#010x}] [{:<#6x}]",
        0u32, 255u32, 8u32, -1i8, true, false, 255u32, 15u8
    );
    for device in devices() {
        let lines = child_lines(
            "alternate_forms_bits_and_alignment_print_as_rust_formats_them",
            device,
        );
        assert!(
            lines.iter().any(|l| l.ends_with(&want)),
            "{device}: {want:?} in {lines:?}"
        );
    }
}
