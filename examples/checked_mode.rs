//! Checked mode, the debugger of kernels: a histogram whose threads add to their bin with a
//! plain `+=` often gives the right counts on the fast CPU backend (and loses updates only
//! when two blocks happen to meet), and checked mode reports the race with both threads and
//! the source line; the version with `atomic_add` passes. Then a blur applied twice, the first
//! pass into an array from `empty`: without a `cval` it leaves its border unwritten, which the
//! second pass reads, and checked mode reports the read with its line.
//!
//! ```sh
//! cargo run --release --example checked_mode
//! ```

mod common;

use common::{mismatch, Result};
use gpu_kernels::smooth_stencil;
use kernel_runtime::prelude::*;
use kernel_runtime::{Finding, Origin};

const NAME: &str = "checked_mode";

/// Counts the values of `data` into `bins`, racing on the bins.
#[kernel]
fn histogram_racy(data: &[u32], bins: &mut [u32]) {
    let i = grid(1);
    if i < data.len() {
        bins[data[i] as usize % 4] += 1;
    }
}

/// The same count with atomics.
#[kernel]
fn histogram(data: &[u32], bins: &mut [u32]) {
    let i = grid(1);
    if i < data.len() {
        atomic_add(&bins, data[i] as usize % 4, 1);
    }
}

fn main() {
    common::main(NAME, |_| run());
}

fn run() -> Result {
    histograms()?;
    blurred_twice()
}

/// The smooth stencil twice, its first output made by `empty`.
fn blurred_twice() -> Result {
    let image = ndarray::Array2::from_shape_fn((6, 8), |(i, j)| (i * 8 + j) as i8);
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let x = dev.to_device(&image)?;
        let mut once = dev.empty::<i8, _>((6, 8))?;
        smooth_stencil.apply(&x, &mut once)?;
        println!(
            "{}, a blur of a blur whose border nothing wrote:",
            dev.name()
        );
        match smooth_stencil.run(&once) {
            Ok(twice) => println!("  row 1 {:?}: no error", twice.to_host()?.row(1).to_vec()),
            Err(Error::CheckFailed { finding, .. }) => {
                let border = Origin::Border("smooth_stencil");
                if !matches!(*finding, Finding::UnwrittenRead { origin, .. } if origin == border) {
                    mismatch(
                        NAME,
                        format!("expected a read of the border, found: {finding}"),
                    );
                }
                println!("  {finding}");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The histogram with a plain `+=` and with `atomic_add`.
fn histograms() -> Result {
    let values: Vec<u32> = (0..1000).collect();
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let data = dev.to_device(&values)?;
        let mut bins = dev.zeros::<u32, _>(4)?;
        let racy = histogram_racy.launch(4, 256, (&data, &mut bins));
        println!("{}, plain `+=`:", dev.name());
        match racy {
            Ok(()) => {
                let bins = bins.to_vec()?;
                let verdict = if bins == [250; 4] {
                    "right by luck"
                } else {
                    "wrong: updates were lost, and nothing said so"
                };
                println!("  bins {bins:?}: {verdict}");
            }
            Err(Error::CheckFailed { finding, .. }) => {
                if !matches!(*finding, Finding::DataRace { array: "bins", .. }) {
                    mismatch(NAME, format!("expected a race on `bins`, found: {finding}"));
                }
                println!("  {finding}");
            }
            Err(e) => return Err(e.into()),
        }
        let mut bins = dev.zeros::<u32, _>(4)?;
        histogram.launch(4, 256, (&data, &mut bins))?;
        println!("{}, atomic_add: bins {:?}", dev.name(), bins.to_vec()?);
        if bins.to_vec()? != [250; 4] {
            mismatch(NAME, "the atomic histogram is wrong");
        }
    }
    Ok(())
}
