//! add-list: `c = a + b` over 100,000,000 `f32` ones, as Numba's
//! `@vectorize(["float32(float32, float32)"], target='cuda')` original: once as a `#[kernel]`
//! with one thread per element, once as the `#[vectorize]` element-wise function; then from
//! host to host through page-locked arrays, in chunks on three streams whose copies and
//! kernels overlap: into each stream's own device buffers (`add_chunked`), and into one device
//! array per operand (`add_streamed`).
//!
//! ```sh
//! cargo run --release --example add_list [-- --n 1e6 --reps 5]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{add, add_chunked, add_streamed, add_vectorized};
use kernel_examples::{cli::Args, reference};
use kernel_runtime::ndarray::Ix1;
use kernel_runtime::prelude::*;
use kernel_runtime::{PinnedArray, Stream};

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
    drop((c, ones));
    streamed(&dev, n, args.reps)
}

/// Chunks of the streamed run: enough for the copies of one to hide another's kernel.
const CHUNKS: usize = 16;

/// add-list from page-locked host arrays to one, in [`CHUNKS`] chunks on three streams.
fn streamed(dev: &Device, n: usize, reps: Option<usize>) -> Result {
    let (mut a, mut b) = (dev.pinned::<f32, _>(n)?, dev.pinned::<f32, _>(n)?);
    a.fill(1.0);
    b.fill(1.0);
    let mut c = dev.pinned::<f32, _>(n)?;
    let streams = [dev.stream()?, dev.stream()?, dev.stream()?];
    type Chunked = fn(
        &PinnedArray<f32, Ix1>,
        &PinnedArray<f32, Ix1>,
        &mut PinnedArray<f32, Ix1>,
        usize,
        &[Stream; 3],
    ) -> std::result::Result<(), Error>;
    let ways: [(&str, &str, Chunked); 2] = [
        ("streamed", "each stream's device buffers", add_chunked::<3>),
        (
            "streamed",
            "one device array per operand",
            add_streamed::<3>,
        ),
    ];
    for (label, buffers, run) in ways {
        c.fill(0.0);
        let timing = common::measure(reps, 3, || {
            let ((), t) = common::time(|| {
                run(&a, &b, &mut c, n.div_ceil(CHUNKS), &streams)?;
                // Reading the result waits for its last copy.
                std::hint::black_box(c[n - 1]);
                Ok(())
            })?;
            Ok(t)
        })?;
        let how = format!("host to host, {CHUNKS} chunks on 3 streams, {buffers}");
        report(label, timing.describe(&how));
        if let Some(i) = c.iter().position(|&v| v != 2.0) {
            common::mismatch(NAME, format!("{buffers}: c[{i}] = {} but 1 + 1 is 2", c[i]));
        }
    }
    report(
        "check",
        format!("OK, the streamed sum is 2.0 in all {n} elements"),
    );
    Ok(())
}
