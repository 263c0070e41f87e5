//! matmul: Numba's documented shared-memory tiled matrix product, `c = a @ b`, on square
//! `f32` matrices with 16 × 16 tiles (TPB = 16): 4096 × 4096 on a GPU, 1024 × 1024 on the
//! CPU backend.
//!
//! ```sh
//! cargo run --release --example matmul [-- --n 512 --reps 5]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{matmul_tiled, TPB};
use kernel_examples::{cli::Args, reference};
use kernel_runtime::prelude::*;
use ndarray::{s, Array2};

const NAME: &str = "matmul";
/// The GPU size: 4096 × 4096.
const ORIGINAL: usize = 4096;
/// The CPU backend's default: 1024 × 1024.
const CPU_DEFAULT: usize = 1024;
/// Multiply-adds the check against the sequential `f64` reference may spend (about a second):
/// every row of `c` up to n = 512, else rows at an odd stride, so that every row of a tile is
/// among them.
const CHECK_BUDGET: usize = 1 << 28;
/// The tolerance, relative to the largest entry of the reference.
const REL_TOL: f64 = 1e-3;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, CPU_DEFAULT, ORIGINAL, |n| {
        format!("{n} × {n} f32 matrices, {TPB} × {TPB} tiles")
    })?;
    let a = random_matrix(n, 1)?;
    let b = random_matrix(n, 2)?;

    let ((da, db, mut dc), to_dev) = common::time(|| {
        let da = dev.to_device(&a)?;
        let db = dev.to_device(&b)?;
        let dc = dev.empty::<f32, _>((n, n))?;
        dev.synchronize()?;
        Ok((da, db, dc))
    })?;
    report(
        "to device",
        format!("{} (a, b; c allocated)", common::ms(to_dev)),
    );

    let blocks = (n.div_ceil(TPB), n.div_ceil(TPB));
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            matmul_tiled.launch(blocks, (TPB, TPB), (&da, &db, &mut dc))?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    let gflops = 2.0 * (n as f64).powi(3) / timing.median().as_secs_f64() / 1e9;
    report("kernel", timing.describe(&format!("{gflops:.2} GFLOP/s")));

    let (c, back) = common::time(|| Ok(dc.to_host()?))?;
    report("to host", common::ms(back));

    // Against the f64 reference (a sequential triple loop): all rows, or every `step`-th.
    let want = (CHECK_BUDGET / n.saturating_mul(n)).clamp(1, n);
    let step = n.div_ceil(want) | 1;
    let (rows, t) = common::time(|| {
        let r = reference::matmul(&a.slice(s![..;step, ..]).to_owned(), &b);
        Ok(r)
    })?;
    let got = c.slice(s![..;step, ..]);
    let scale = rows.iter().fold(0.0f64, |m, &v| m.max((v as f64).abs()));
    let (worst, at) = got
        .indexed_iter()
        .zip(rows.iter())
        .map(|(((i, j), &g), &r)| {
            let d = (g as f64 - r as f64).abs();
            (if d.is_nan() { f64::INFINITY } else { d }, (i * step, j))
        })
        .fold(
            (0.0, (0, 0)),
            |best, cur| if cur.0 > best.0 { cur } else { best },
        );
    let checked = rows.nrows();
    if worst > REL_TOL * scale {
        common::mismatch(
            NAME,
            format!(
                "c[{}, {}] is {worst:.3e} from the reference, more than {REL_TOL:e} × {scale:.3} \
                 (the largest entry)",
                at.0, at.1
            ),
        );
    }
    report(
        "check",
        format!(
            "OK, {checked} of {n} rows within {REL_TOL:e} × the largest entry of the f64 \
             reference (worst error {worst:.2e}, largest entry {scale:.2}; reference {})",
            common::ms(t)
        ),
    );
    Ok(())
}

/// An `n × n` matrix of pseudo-random values in [-1, 1).
fn random_matrix(n: usize, seed: u64) -> Result<Array2<f32>> {
    let mut rng = reference::SplitMix64(seed);
    let v = common::host_vec(common::area(n, n)?, |_| rng.next_f32())?;
    Ok(Array2::from_shape_vec((n, n), v)?)
}
