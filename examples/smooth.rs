//! smooth: the 3×3 mean stencil (sum widened to `i32`, floor division by 9 as Python's `// 9`)
//! over a 10000 × 10000 `i8` image, one thread per pixel on `(16, 16)` blocks, as the `cuda.grid(2)` original;
//! then the same stencil written as Numba's `@stencil` writes it, a `#[stencil]`
//! (`gpu_kernels::smooth_stencil`), which maps threads to pixels itself.
//!
//! The input is a checkerboard of eight squares a side with pseudo-random noise; `--png`
//! writes it and the smoothed output as `smooth_in.png` and `smooth_out.png` (grayscale, the
//! `i8` value plus 128) in the current directory.
//!
//! ```sh
//! cargo run --release --example smooth [-- --n 2000 --reps 5 --png]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{smooth, smooth_stencil};
use kernel_examples::{cli::Args, reference};
use kernel_runtime::prelude::*;
use ndarray::Array2;

const NAME: &str = "smooth";
/// The original's image: 10000 × 10000 (also the CPU backend's default).
const ORIGINAL: usize = 10_000;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    let dev = Device::default();
    let n = common::problem_size(&dev, &args, ORIGINAL, ORIGINAL, |n| {
        format!("{n} × {n} i8 image")
    })?;
    let x = image(n)?;

    let ((dx, mut out), to_dev) = common::time(|| {
        let dx = dev.to_device(&x)?;
        let out = dev.zeros_like::<i8, _, _>(&dx)?;
        dev.synchronize()?;
        Ok((dx, out))
    })?;
    report("to device", common::ms(to_dev));

    let blocks = (n.div_ceil(16), n.div_ceil(16));
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            smooth.launch(blocks, (16, 16), (&dx, &mut out))?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    let per_pixel = timing.median().as_secs_f64() * 1e9 / (n * n) as f64;
    report(
        "kernel",
        timing.describe(&format!("{per_pixel:.2} ns per pixel")),
    );

    let (y, back) = common::time(|| Ok(out.to_host()?))?;
    report("to host", common::ms(back));

    // Bit for bit: integer arithmetic, and the border is left as it was (zero).
    let expect = reference::smooth(&x, &Array2::zeros((n, n)));
    if let Some(((i, j), (got, want))) = y
        .indexed_iter()
        .zip(expect.iter())
        .map(|((ij, g), w)| (ij, (*g, *w)))
        .find(|(_, (g, w))| g != w)
    {
        common::mismatch(
            NAME,
            format!("out[{i}, {j}] = {got} but the reference gives {want}"),
        );
    }
    report(
        "check",
        "OK, bit-identical to the plain-Rust reference".to_string(),
    );

    // The `#[stencil]` form, into a fresh output.
    let mut out = dev.zeros_like::<i8, _, _>(&dx)?;
    let timing = common::measure(args.reps, 3, || {
        let ((), t) = common::time(|| {
            smooth_stencil.apply(&dx, &mut out)?;
            Ok(dev.synchronize()?)
        })?;
        Ok(t)
    })?;
    let per_pixel = timing.median().as_secs_f64() * 1e9 / (n * n) as f64;
    let same = out.to_host()? == y;
    if !same {
        common::mismatch(NAME, "the #[stencil] form differs from the kernel's output");
    }
    report(
        "#[stencil]",
        timing.describe(&format!("{per_pixel:.2} ns per pixel, the same image")),
    );

    if args.png {
        let ((), t) = common::time(|| {
            write_png("smooth_in.png", &x)?;
            write_png("smooth_out.png", &y)
        })?;
        report(
            "png",
            format!(
                "wrote smooth_in.png and smooth_out.png in {}",
                common::ms(t)
            ),
        );
    }
    Ok(())
}

/// A checkerboard of 8 × 8 squares of ±64 with noise in [-32, 31] added: the smoothing shows
/// as the noise fading while the squares stay.
fn image(n: usize) -> Result<Array2<i8>> {
    let mut v = common::host_vec(common::area(n, n)?, |_| 0i8)?;
    let side = (n / 8).max(1);
    let mut rng = reference::SplitMix64(0x5EED);
    for (i, row) in v.chunks_mut(n).enumerate() {
        let mut bits = 0u64;
        for (j, p) in row.iter_mut().enumerate() {
            if j & 7 == 0 {
                bits = rng.next_u64();
            }
            let noise = ((bits >> (8 * (j & 7))) as u8 as i8) >> 2;
            let base: i8 = if (i / side + j / side) & 1 == 0 {
                -64
            } else {
                64
            };
            *p = base + noise;
        }
    }
    Ok(Array2::from_shape_vec((n, n), v)?)
}

/// Writes `img` as an 8-bit grayscale PNG, mapping `i8` to `u8` by adding 128.
fn write_png(path: &str, img: &Array2<i8>) -> Result {
    let (h, w) = img.dim();
    let too_large = || format!("{h} × {w} is too large for a PNG");
    let file = std::fs::File::create(path).map_err(|e| format!("cannot create {path}: {e}"))?;
    let mut enc = png::Encoder::new(
        std::io::BufWriter::new(file),
        u32::try_from(w).map_err(|_| too_large())?,
        u32::try_from(h).map_err(|_| too_large())?,
    );
    enc.set_color(png::ColorType::Grayscale);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    let mut writer = enc.write_header()?;
    let bytes: Vec<u8> = img.iter().map(|&v| (v as u8) ^ 0x80).collect();
    writer.write_image_data(&bytes)?;
    writer.finish()?;
    Ok(())
}
