//! Checked mode, the debugger of kernels: a histogram whose threads add to their bin with a
//! plain `+=` often gives the right counts on the fast CPU backend (and loses updates only
//! when two blocks happen to meet), and checked mode reports the race with both threads and
//! the source line; the version with `atomic_add` passes.
//!
//! ```sh
//! cargo run --release --example checked_mode
//! ```

mod common;

use common::{mismatch, Result};
use kernel_runtime::prelude::*;
use kernel_runtime::Finding;

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
