//! Random numbers in kernels, as in Numba's documentation of `numba.cuda.random`: π estimated
//! from random points of the unit square (each thread its own xoroshiro128+ generator, states
//! made from one seed as Numba makes them), then a 3-D array filled with uniform numbers through
//! `grid(3)` and `gridsize(3)`. The same seed gives the same numbers on every run and backend.
//!
//! ```sh
//! cargo run --release --example monte_carlo_pi [-- --n 1048576 --reps 5]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{fill_uniform_3d, pi_hits};
use kernel_examples::cli::Args;
use kernel_runtime::prelude::*;
use kernel_runtime::random::create_xoroshiro128p_states;

const NAME: &str = "monte_carlo_pi";
/// Threads (and generators) of the GPU original.
const ORIGINAL: usize = 1 << 20;
/// The CPU backend's default.
const CPU_DEFAULT: usize = 1 << 16;
/// Points each thread draws.
const DRAWS: u32 = 1000;
const SEED: u64 = 1;
const THREADS: usize = 256;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, CPU_DEFAULT, ORIGINAL, |n| {
        format!("{n} threads × {DRAWS} points")
    })?;
    let (mut states, t) = common::time(|| Ok(create_xoroshiro128p_states(&dev, n, SEED, 0)?))?;
    report(
        "states",
        format!("{} ({n} generators, seed {SEED})", common::ms(t)),
    );
    let mut hits = dev.zeros::<u32, _>(n)?;
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            pi_hits.launch(
                n.div_ceil(THREADS),
                THREADS,
                (&mut states, DRAWS, &mut hits),
            )?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    let points = n as f64 * f64::from(DRAWS);
    let inside: u64 = hits.to_vec()?.iter().map(|&h| u64::from(h)).sum();
    let pi = 4.0 * inside as f64 / points;
    // The estimate's standard deviation is 4 sqrt(p (1 - p) / points), p = π/4.
    let sigma =
        4.0 * (0.25 * std::f64::consts::PI * (1.0 - 0.25 * std::f64::consts::PI) / points).sqrt();
    let error = pi - std::f64::consts::PI;
    report("kernel", timing.describe(""));
    report(
        "π",
        format!(
            "{pi:.6} (error {error:+.2e}, {:.1} standard deviations)",
            error / sigma
        ),
    );
    if error.abs() > 6.0 * sigma {
        common::mismatch(NAME, format!("π estimated as {pi}, more than 6σ from π"));
    }
    fill(&dev)
}

/// Fills a 3-D array twice from the same seed through a grid smaller than the array: the same
/// numbers both times, with the mean and spread of uniform ones.
fn fill(dev: &Device) -> Result {
    let shape = (37, 50, 61);
    let (blocks, threads) = ((2, 2, 2), (8, 4, 2));
    let generators = 2 * 8 * 2 * 4 * 2 * 2;
    let mut arrays = Vec::new();
    for _ in 0..2 {
        let mut states = create_xoroshiro128p_states(dev, generators, SEED, 0)?;
        let mut out = dev.zeros::<f32, _>(shape)?;
        fill_uniform_3d.launch(blocks, threads, (&mut states, &mut out))?;
        arrays.push(out.to_host()?);
    }
    let a = &arrays[0];
    let mean = a.iter().map(|&v| f64::from(v)).sum::<f64>() / a.len() as f64;
    let var = a
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    report(
        "3-D fill",
        format!("{shape:?} f32 by {generators} threads: mean {mean:.4}, variance {var:.4} (uniform: 0.5, 0.0833)"),
    );
    if arrays[0] != arrays[1] {
        common::mismatch(NAME, "two fills from one seed differ");
    }
    if (mean - 0.5).abs() > 0.01
        || (var - 1.0 / 12.0).abs() > 0.005
        || a.iter().any(|&v| !(0.0..=1.0).contains(&v))
    {
        common::mismatch(
            NAME,
            format!("the fill does not look uniform: mean {mean}, variance {var}"),
        );
    }
    Ok(())
}
