//! integrate2d: ∫∫ sin(x + y) over [0, π]² (exactly 0) by the midpoint rule on an n × n grid,
//! one thread per x row summing over y; two versions: per-row sums added on the host, and
//! per-block sums reduced in shared memory with `sync_threads` (the host adds the blocks).
//!
//! The original's n = 100·1024 means 10^10 sine evaluations per version: a fraction of a second
//! on a GPU, far too slow on the CPU backend, whose default is n = 4096.
//!
//! ```sh
//! cargo run --release --example integrate2d [-- --n 8192 --reps 5]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{integrate2d_rows, integrate2d_shared, INTEGRATE_TPB};
use kernel_examples::{cli::Args, reference};
use kernel_runtime::prelude::*;
use std::f64::consts::PI;

const NAME: &str = "integrate2d";
/// The original's grid: n = 100·1024.
const ORIGINAL: usize = 100 * 1024;
/// The CPU backend's default grid.
const CPU_DEFAULT: usize = 4096;
/// Above this n the sequential reference (n² sines on one core) is not run; the results are
/// checked against the exact value and each other instead.
const REFERENCE_MAX: usize = 16_384;
/// The tolerance, relative to ∫∫ |sin(x + y)| = 2π (the value itself is 0, so the size of what
/// is summed is the scale).
const REL_TOL: f64 = 1e-9;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, CPU_DEFAULT, ORIGINAL, |n| {
        format!("n = {n} ({n}² midpoints)")
    })?;
    let blocks = n.div_ceil(INTEGRATE_TPB);
    let ((mut rows, mut sums), to_dev) = common::time(|| {
        let rows = dev.empty::<f64, _>(n)?;
        let sums = dev.empty::<f64, _>(blocks)?;
        dev.synchronize()?;
        Ok((rows, sums))
    })?;
    report(
        "to device",
        format!(
            "{} (no input; output arrays of {n} and {blocks} f64 allocated)",
            common::ms(to_dev)
        ),
    );

    println!("per-row version ({INTEGRATE_TPB} threads per block, the host adds the rows):");
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            integrate2d_rows.launch(blocks, INTEGRATE_TPB, (n, &mut rows))?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    report("  kernel", timing.describe(""));
    let (per_row, back) = common::time(|| Ok(rows.to_vec()?.iter().sum::<f64>()))?;
    report("  to host", format!("{} (and the sum)", common::ms(back)));

    println!("shared-memory version (each block reduces its rows, the host adds the blocks):");
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            integrate2d_shared.launch(blocks, INTEGRATE_TPB, (n, &mut sums))?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    report("  kernel", timing.describe(""));
    let (shared, back) = common::time(|| Ok(sums.to_vec()?.iter().sum::<f64>()))?;
    report("  to host", format!("{} (and the sum)", common::ms(back)));

    let tol = REL_TOL * 2.0 * PI;
    let (expect, against) = if n <= REFERENCE_MAX {
        let (r, t) = common::time(|| Ok(reference::integrate2d(n)))?;
        report(
            "reference",
            format!("{r:+.6e} (plain Rust, one core, {})", common::ms(t)),
        );
        (r, "the reference")
    } else {
        report(
            "reference",
            format!(
                "skipped: n > {REFERENCE_MAX} is {n}² sines on one core; \
                 checking against the exact value and each other"
            ),
        );
        if (per_row - shared).abs() > tol {
            common::mismatch(
                NAME,
                format!("the versions disagree: {per_row:e} and {shared:e}"),
            );
        }
        (0.0, "the exact value")
    };

    let mut ok = true;
    for (name, v) in [("per-row", per_row), ("shared", shared)] {
        let diff = (v - expect).abs();
        report(
            name,
            format!(
                "{v:+.6e}   error against the exact 0: {:.3e}   against {against}: {diff:.3e}",
                v.abs()
            ),
        );
        ok &= diff <= tol;
    }
    if !ok {
        common::mismatch(
            NAME,
            format!("a result is further than {tol:.3e} (1e-9 · 2π) from {against}"),
        );
    }
    report(
        "check",
        format!("OK, both within {REL_TOL:e} · 2π of {against}"),
    );
    Ok(())
}
