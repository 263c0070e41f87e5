//! quicksort: sorts 2^24 pseudo-random `u32` keys in device memory with a parallel multi-pivot
//! quicksort (`gpu_kernels::quicksort::sort`: every large segment split at once into up to 32
//! parts around pivots taken from a sorted sample of its keys, by blocks that count their chunk's
//! keys per part, then order the chunk by part in shared memory and claim room in each part with
//! one atomic apiece; the parts filed on the device; small runs finished by a bitonic sort in
//! shared memory).
//!
//! ```sh
//! cargo run --release --example quicksort [-- --n 2^20 --reps 5]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::quicksort;
use kernel_examples::{cli::Args, reference};
use kernel_runtime::prelude::*;

const NAME: &str = "quicksort";
/// The GPU size: 2^24 keys.
const ORIGINAL: usize = 1 << 24;
/// The CPU backend's default: 2^22 keys.
const CPU_DEFAULT: usize = 1 << 22;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, CPU_DEFAULT, ORIGINAL, |n| {
        if n.is_power_of_two() {
            format!("2^{} = {n} u32 keys", n.trailing_zeros())
        } else {
            format!("{n} u32 keys")
        }
    })?;
    let mut rng = reference::SplitMix64(0x9E37);
    let keys = common::host_vec(n, |_| rng.next_u64() as u32)?;

    let (mut dk, to_dev) = common::time(|| {
        let dk = dev.to_device(&keys)?;
        dev.synchronize()?;
        Ok(dk)
    })?;
    report("to device", common::ms(to_dev));

    // Each run sorts the same unsorted keys: they are copied back in before it, untimed.
    let mut passes = 0;
    let mut fresh = true;
    let timing = common::measure(args.reps, 3, || {
        if !fresh {
            dk.copy_from_host(&keys)?;
            dev.synchronize()?;
        }
        fresh = false;
        let (p, t) = common::time(|| {
            let p = quicksort::sort(&mut dk)?;
            dev.synchronize()?;
            Ok(p)
        })?;
        passes = p;
        Ok(t)
    })?;
    report(
        "sort",
        timing.describe(&format!("{passes} splitting passes")),
    );

    let (sorted, back) = common::time(|| Ok(dk.to_vec()?))?;
    report("to host", common::ms(back));

    let (ok, t) = common::time(|| Ok(reference::is_sorted_permutation(&keys, &sorted)))?;
    if !ok {
        let at = sorted.windows(2).position(|w| w[0] > w[1]);
        common::mismatch(
            NAME,
            match at {
                Some(i) => format!("out of order at {i}: {} > {}", sorted[i], sorted[i + 1]),
                None => "sorted, but not a permutation of the input".to_string(),
            },
        );
    }
    report(
        "check",
        format!(
            "OK, sorted and a permutation of the input (checked in {}, \
             including a host sort_unstable)",
            common::ms(t)
        ),
    );
    Ok(())
}
