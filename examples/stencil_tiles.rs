//! Tile shapes for `#[stencil]` on a GPU, side by side: the smooth stencil (10000² `i8`) and
//! the 7-point Laplacian (512³ `f32`) with each tile of `tile = (rows, cols)` or
//! `(planes, rows, cols)` outputs per thread, timed between CUDA events, each checked against
//! the default tile's result. The defaults (`kernel_runtime::stencil::tile_planes`,
//! `tile_rows`, `tile_cols`) come from its figures.
//!
//! Then where the smooth stencil's time goes, in its default tile: the same nine reads with
//! no arithmetic but an exclusive or (`smooth xor`), and its sum without the division by 9
//! (`smooth sum`), each checked against the CPU backend's result. Their times against the
//! whole stencil's and the copy bandwidth say how much of it the loads and stores take, how
//! much the sums and how much the division.
//!
//! ```sh
//! cargo run --release --example stencil_tiles [-- --reps 10]
//! ```

mod common;

use common::{report, Result};
use gpu_kernels::{laplace3d, smooth_stencil};
use kernel_examples::cli::Args;
use kernel_runtime::prelude::*;

const NAME: &str = "stencil_tiles";

/// The smooth stencil with tiles of 1 × 4.
#[stencil(tile = (1, 4))]
fn smooth_1x4(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 2 × 4.
#[stencil(tile = (2, 4))]
fn smooth_2x4(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 4 × 4.
#[stencil(tile = (4, 4))]
fn smooth_4x4(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 2 × 8.
#[stencil(tile = (2, 8))]
fn smooth_2x8(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 1 × 16.
#[stencil(tile = (1, 16))]
fn smooth_1x16(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 8 × 4.
#[stencil(tile = (8, 4))]
fn smooth_8x4(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 16 × 4.
#[stencil(tile = (16, 4))]
fn smooth_16x4(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 4 × 8.
#[stencil(tile = (4, 8))]
fn smooth_4x8(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 8 × 8.
#[stencil(tile = (8, 8))]
fn smooth_8x8(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 2 × 16.
#[stencil(tile = (2, 16))]
fn smooth_2x16(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil with tiles of 4 × 16.
#[stencil(tile = (4, 16))]
fn smooth_4x16(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s.div_euclid(9) as i8
}

/// The smooth stencil's nine reads, folded by exclusive or: its loads and stores, with as
/// little arithmetic as keeps every read.
#[stencil]
fn smooth_xor(x: &Array2<i8>) -> i8 {
    x[[-1, -1]]
        ^ x[[-1, 0]]
        ^ x[[-1, 1]]
        ^ x[[0, -1]]
        ^ x[[0, 0]]
        ^ x[[0, 1]]
        ^ x[[1, -1]]
        ^ x[[1, 0]]
        ^ x[[1, 1]]
}

/// The smooth stencil's sum of nine, its low byte: the smooth stencil less its division.
#[stencil]
fn smooth_sum(x: &Array2<i8>) -> i8 {
    let s = x[[-1, -1]] as i32
        + x[[-1, 0]] as i32
        + x[[-1, 1]] as i32
        + x[[0, -1]] as i32
        + x[[0, 0]] as i32
        + x[[0, 1]] as i32
        + x[[1, -1]] as i32
        + x[[1, 0]] as i32
        + x[[1, 1]] as i32;
    s as i8
}

/// The 7-point Laplacian with tiles of 1 × 1.
#[stencil(tile = (1, 1))]
fn laplace_1x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 16 rows × 1, one plane (the default before tiles of planes).
#[stencil(tile = (16, 1))]
fn laplace_16x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 4 rows × 2.
#[stencil(tile = (4, 2))]
fn laplace_4x2(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 2 planes × 4 rows × 1.
#[stencil(tile = (2, 4, 1))]
fn laplace_2x4x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 4 planes × 4 rows × 1 (the default).
#[stencil(tile = (4, 4, 1))]
fn laplace_4x4x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 8 planes × 4 rows × 1.
#[stencil(tile = (8, 4, 1))]
fn laplace_8x4x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 4 planes × 8 rows × 1.
#[stencil(tile = (4, 8, 1))]
fn laplace_4x8x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The 7-point Laplacian with tiles of 8 planes × 2 rows × 1.
#[stencil(tile = (8, 2, 1))]
fn laplace_8x2x1(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// A stencil's call on its input and output.
type Apply<'a, I, O> = &'a dyn Fn(&I, &mut O) -> std::result::Result<(), kernel_runtime::Error>;

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    if args.n.is_some() || args.png {
        return Err("stencil_tiles takes --reps only".into());
    }
    let dev = Device::default();
    let gpu = !common::is_cpu(&dev);
    report("device", dev.name());
    let reps = args.reps.unwrap_or(if gpu { 10 } else { 2 }).max(1);
    let n = if gpu { 10_000 } else { 500 };
    let x = dev.to_device(&Array2::from_shape_fn((n, n), |(i, j)| {
        (((i * 31 + j * 17) % 251) as i32 - 125) as i8
    }))?;
    let expect = smooth_stencil.run(&x)?.to_host()?;
    let smooth: [(&str, Apply<_, _>); 11] = [
        ("1x4", &|x, o| smooth_1x4.apply(x, o)),
        ("2x4", &|x, o| smooth_2x4.apply(x, o)),
        ("4x4", &|x, o| smooth_4x4.apply(x, o)),
        ("8x4", &|x, o| smooth_8x4.apply(x, o)),
        ("16x4", &|x, o| smooth_16x4.apply(x, o)),
        ("4x8", &|x, o| smooth_4x8.apply(x, o)),
        ("8x8", &|x, o| smooth_8x8.apply(x, o)),
        ("2x16", &|x, o| smooth_2x16.apply(x, o)),
        ("4x16", &|x, o| smooth_4x16.apply(x, o)),
        ("2x8", &|x, o| smooth_2x8.apply(x, o)),
        ("1x16", &|x, o| smooth_1x16.apply(x, o)),
    ];
    for (tile, apply) in smooth {
        let mut out = dev.zeros::<i8, _>((n, n))?;
        let ms = common::kernel_ms(&dev, reps, || Ok(apply(&x, &mut out)?))?;
        line(
            "smooth",
            tile,
            ms,
            2.0 * (n * n) as f64,
            out.to_host()? == expect,
        );
    }
    let parts: [(&str, Apply<_, _>); 2] = [
        ("xor", &|x, o| smooth_xor.apply(x, o)),
        ("sum", &|x, o| smooth_sum.apply(x, o)),
    ];
    let cpu = Device::cpu();
    let x_cpu = cpu.to_device(&x.to_host()?)?;
    for (part, apply) in parts {
        let mut out = dev.zeros::<i8, _>((n, n))?;
        let ms = common::kernel_ms(&dev, reps, || Ok(apply(&x, &mut out)?))?;
        let mut on_cpu = cpu.zeros::<i8, _>((n, n))?;
        apply(&x_cpu, &mut on_cpu)?;
        let same = out.to_host()? == on_cpu.to_host()?;
        line(
            &format!("smooth {part}"),
            "4x4",
            ms,
            2.0 * (n * n) as f64,
            same,
        );
    }
    let n = if gpu { 512 } else { 48 };
    let u = dev.to_device(&Array3::from_shape_fn((n, n, n), |(z, y, x)| {
        ((z * 31 + y * 7 + x) % 13) as f32
    }))?;
    let expect = laplace3d.run(&u)?.to_host()?;
    let laplace: [(&str, Apply<_, _>); 8] = [
        ("1x1", &|u, o| laplace_1x1.apply(u, o)),
        ("16x1", &|u, o| laplace_16x1.apply(u, o)),
        ("4x2", &|u, o| laplace_4x2.apply(u, o)),
        ("2x4x1", &|u, o| laplace_2x4x1.apply(u, o)),
        ("4x4x1", &|u, o| laplace_4x4x1.apply(u, o)),
        ("8x4x1", &|u, o| laplace_8x4x1.apply(u, o)),
        ("4x8x1", &|u, o| laplace_4x8x1.apply(u, o)),
        ("8x2x1", &|u, o| laplace_8x2x1.apply(u, o)),
    ];
    for (tile, apply) in laplace {
        let mut out = dev.zeros::<f32, _>((n, n, n))?;
        let ms = common::kernel_ms(&dev, reps, || Ok(apply(&u, &mut out)?))?;
        line(
            "laplace3d",
            tile,
            ms,
            8.0 * (n * n * n) as f64,
            out.to_host()? == expect,
        );
    }
    Ok(())
}

/// One variant's figures, as a line and as JSON.
fn line(program: &str, tile: &str, ms: f64, bytes: f64, same: bool) {
    let gbs = bytes / ms / 1e6;
    println!(
        "{program} tile {tile}: {:.1} µs, {gbs:.0} GB/s, same result: {same}",
        ms * 1e3
    );
    println!(
        "{{\"program\": \"{program}\", \"tile\": \"{tile}\", \"kernel_ms\": {ms}, \"gbs\": {gbs}, \"same\": {same}}}"
    );
}
