//! add-list: `c = a + b` over 100,000,000 `f32` ones, as Numba's
//! `@vectorize(["float32(float32, float32)"], target='cuda')` original: once as a `#[kernel]`
//! with one thread per element, once as the `#[vectorize]` element-wise function.
//!
//! ```sh
//! cargo run --release --example add_list [-- --n 1e6 --reps 5]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{add, add_vectorized};
use kernel_runtime::prelude::*;
use kernel_suite::{cli::Args, reference};

const NAME: &str = "add_list";
/// The original's size: 100,000,000 elements.
const ORIGINAL: usize = 100_000_000;
const THREADS: u32 = 256;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, ORIGINAL, ORIGINAL, |n| {
        format!("{n} f32 elements (a = b = 1.0)")
    })?;
    let ones = common::host_vec(n, |_| 1.0f32)?;

    let ((da, db, mut dc), to_dev) = common::time(|| {
        let da = dev.to_device(&ones)?;
        let db = dev.to_device(&ones)?;
        let dc = dev.empty::<f32, _>(n)?;
        dev.synchronize()?;
        Ok((da, db, dc))
    })?;
    report(
        "to device",
        format!("{} (a, b; c allocated)", common::ms(to_dev)),
    );

    let cfg = LaunchConfig::cover(n, THREADS)?;
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            add.launch_with(cfg.clone(), (&da, &db, &mut dc))?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    report("kernel", timing.describe(""));
    let vectorized = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            add_vectorized.apply((&da, &db), &mut dc)?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    report("vectorize", vectorized.describe(""));
    drop((da, db));

    let (c, back) = common::time(|| Ok(dc.to_vec()?))?;
    report("to host", common::ms(back));

    // Exact: 1.0 + 1.0 is 2.0 in every rounding mode; checked against the reference in
    // chunks, so that the check does not double the memory the run needs.
    const CHUNK: usize = 1 << 20;
    for (k, (got, a)) in c.chunks(CHUNK).zip(ones.chunks(CHUNK)).enumerate() {
        let expect = reference::add(a, a);
        if let Some(i) = got.iter().zip(&expect).position(|(g, e)| g != e) {
            common::mismatch(
                NAME,
                format!(
                    "c[{}] = {} but the reference gives {}",
                    k * CHUNK + i,
                    got[i],
                    expect[i]
                ),
            );
        }
    }
    report(
        "check",
        format!("OK, all {n} elements equal the reference (2.0)"),
    );
    Ok(())
}
