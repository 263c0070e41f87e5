//! The 1-D heat equation (a Laplace operator stepped in time) on a rod with a hot middle and
//! ends held at 0: thousands of explicit time steps in one cooperative launch, whose threads
//! meet at a grid barrier between steps (Numba: `cuda.cg.this_grid().sync()`), timed against one
//! launch per step; both checked against the same time stepping on the host.
//!
//! ```sh
//! cargo run --release --example heat_1d [-- --n 16384 --reps 3]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{heat_step, heat_steps};
use kernel_examples::cli::Args;
use kernel_runtime::prelude::*;

const NAME: &str = "heat_1d";
/// Points of the rod: the GPU's default, and the CPU backend's.
const ORIGINAL: usize = 1 << 16;
const CPU_DEFAULT: usize = 1 << 12;
const STEPS: u32 = 2000;
/// `α Δt / Δx²`: stable, as it is at most 1/2.
const K: f32 = 0.25;
const THREADS: u32 = 256;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, CPU_DEFAULT, ORIGINAL, |n| {
        format!("{n} points × {STEPS} steps")
    })?;
    let start = common::host_vec(n, |i| {
        if (n * 2 / 5..n * 3 / 5).contains(&i) {
            100.0f32
        } else {
            0.0
        }
    })?;
    let expected = host_steps(&start);

    // As many blocks as the points need, and no more than can be resident at once.
    let resident = heat_steps.max_cooperative_grid_blocks(&dev, THREADS, 0)?;
    let blocks = n.div_ceil(THREADS as usize).min(resident as usize);
    report(
        "grid",
        format!("{blocks} blocks of {THREADS} (at most {resident} resident at once)"),
    );
    let mut u = dev.to_device(&start)?;
    let mut next = dev.zeros::<f32, _>(n)?;
    let one = common::measure(args.reps, 3, || {
        u.copy_from_host(start.as_slice())?;
        let ((), t) = common::time(|| {
            heat_steps.launch(blocks, THREADS, (STEPS, K, &mut u, &mut next))?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    check(&u.to_vec()?, &expected, "one cooperative launch")?;
    report(
        "grid sync",
        one.describe(&format!("{STEPS} steps, 2 grid barriers each")),
    );

    let per_step = common::measure(args.reps, 3, || {
        u.copy_from_host(start.as_slice())?;
        let ((), t) = common::time(|| {
            for _ in 0..STEPS / 2 {
                heat_step.launch(n.div_ceil(THREADS as usize), THREADS, (K, &u, &mut next))?;
                heat_step.launch(n.div_ceil(THREADS as usize), THREADS, (K, &next, &mut u))?;
            }
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    check(&u.to_vec()?, &expected, "a launch per step")?;
    report("per step", per_step.describe(&format!("{STEPS} launches")));
    report(
        "ratio",
        format!(
            "one cooperative launch takes {:.2}× the time of a launch per step",
            one.median().as_secs_f64() / per_step.median().as_secs_f64()
        ),
    );
    Ok(())
}

/// The same time stepping on the host, in `f32`, as the kernels compute it.
fn host_steps(start: &[f32]) -> Vec<f32> {
    let n = start.len();
    let (mut u, mut next) = (start.to_vec(), start.to_vec());
    for _ in 0..STEPS {
        for i in 1..n.saturating_sub(1) {
            next[i] = u[i] + K * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut u, &mut next);
    }
    u
}

/// Compares `got` with the host's: within 1e-3 of the hottest point (the GPU may fuse the
/// multiply and add of a step, which rounds once instead of twice).
fn check(got: &[f32], expected: &[f32], how: &str) -> Result {
    let worst = got
        .iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    if worst > 0.1 {
        common::mismatch(
            NAME,
            format!("{how}: a point is {worst} away from the host's"),
        );
    }
    let heat: f64 = got.iter().map(|&v| f64::from(v)).sum();
    report(
        "checked",
        format!("{how}: within {worst:.1e} of the host; total heat {heat:.1}"),
    );
    Ok(())
}
