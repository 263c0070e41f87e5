//! device_bench: the five reference programs timed on the default device, for the GPU benchmark
//! report (`run.sh bench` in the GPU bundle), beside the device-to-device copy bandwidth and the
//! cost of launching an empty kernel.
//!
//! Each program runs on inputs every peer (`benches/peers/`) builds the same way, and ends with
//! a check value that the report compares across implementations. Times:
//! - kernel: the median, over `--reps` runs after a warm-up, of the time between two device
//!   events around the launches (the whole sort for quicksort);
//! - end to end: the median wall time from host inputs to host results.
//!
//! One JSON line per measurement (`{"impl": "rust", ...}`) follows the readable lines. Sizes are
//! the originals on a GPU (add 10^8, smooth 10000², integrate2d n = 102400, quicksort 2^26,
//! matmul 4096²) and smaller on the CPU backend.
//!
//! ```sh
//! cargo run --release --example device_bench [-- --reps 20]
//! ```

mod common;

use common::{kernel_ms, median, report, Result};
use gpu_kernels::{
    add, add_chunked, add_streamed, add_wide, empty3, gaussian5x5, integrate2d_shared, laplace3d,
    matmul_tensor, matmul_tensor_64x64, matmul_tensor_staged, matmul_tensor_tf32,
    matmul_tensor_tf32_64x64, matmul_tensor_tf32_staged, matmul_tiled, quicksort, smooth,
    smooth_stencil, smooth_strips, smooth_words, strips_blocks, words_blocks, ADD_WIDE,
    INTEGRATE_TPB, STRIP_ROWS, STRIP_THREADS, TC_THREADS, TC_THREADS_64X64, TC_TILE, TPB,
    WORD_THREADS,
};
use hopper_kernels::{matmul_wgmma, matmul_wgmma_tf32, matmul_wgmma_wide, WG_THREADS};
use kernel_examples::cli::Args;
use kernel_runtime::ndarray::{Ix1, Ix2};
use kernel_runtime::prelude::*;
use kernel_runtime::PinnedArray;
use rayon::prelude::*;
use std::time::Instant;

const NAME: &str = "device_bench";

/// One measurement, printed as a JSON line.
#[derive(Clone)]
struct Line {
    /// Which implementation: `rust` (our kernels) or `rayon` (the host's sort).
    imp: &'static str,
    program: &'static str,
    size: String,
    kernel_ms: f64,
    e2e_ms: Option<f64>,
    /// Bytes the kernel must move at least (for the fraction of bandwidth).
    bytes: Option<f64>,
    check: String,
}

impl Line {
    fn print(&self) {
        let opt = |v: Option<f64>| v.map_or("null".into(), |v| format!("{v}"));
        report(
            if self.imp == "rust" {
                self.program
            } else {
                self.imp
            },
            format!(
                "kernel {:.3} ms, end to end {} ms, check {}",
                self.kernel_ms,
                self.e2e_ms.map_or("-".into(), |v| format!("{v:.1}")),
                self.check
            ),
        );
        println!(
            "{{\"impl\": \"{}\", \"program\": \"{}\", \"size\": \"{}\", \"kernel_ms\": {}, \"e2e_ms\": {}, \"bytes\": {}, \"check\": \"{}\"}}",
            self.imp,
            self.program,
            self.size,
            self.kernel_ms,
            opt(self.e2e_ms),
            opt(self.bytes),
            self.check
        );
    }
}

/// The median wall time of `f`, over `reps` runs after one warm-up.
fn wall_ms(reps: usize, mut f: impl FnMut() -> Result) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}

fn main() {
    common::main(NAME, run);
}

fn run(args: Args) -> Result {
    if args.n.is_some() || args.png {
        return Err("device_bench takes --reps only: its sizes are the programs' own".into());
    }
    let dev = Device::default();
    let gpu = !common::is_cpu(&dev);
    report("device", dev.name());
    ptx_target();
    let reps = args.reps.unwrap_or(if gpu { 20 } else { 3 }).max(1);
    let pick = |original: usize, cpu: usize| if gpu { original } else { cpu };

    first_launch(&dev)?.print();
    copy_bandwidth(&dev, reps, pick(100_000_000, 1_000_000))?.print();
    launch_overhead(&dev)?.print();
    graph_overhead(&dev)?.print();
    for wide in [false, true] {
        bench_add(&dev, reps, pick(100_000_000, 1_000_000), wide)?.print();
    }
    for line in bench_add_pinned(&dev, reps, pick(100_000_000, 1_000_000))? {
        line.print();
    }
    for line in bench_smooth(&dev, reps, pick(10_000, 1_000))? {
        line.print();
    }
    bench_laplace3d(&dev, reps, pick(512, 64))?.print();
    bench_gaussian(&dev, reps, pick(10_000, 1_000))?.print();
    bench_integrate2d(&dev, reps, pick(102_400, 1_024))?.print();
    let keys = sort_keys(pick(1 << 26, 1 << 18))?;
    let (sorted, passes) = bench_quicksort(&dev, reps.min(5), &keys)?;
    sorted.print();
    quicksort_pass(&dev, reps, &keys, passes)?.print();
    bench_matmul(&dev, reps.min(10), pick(4096, 256))?.print();
    let (reps, n) = (reps.min(10), pick(8192, 256));
    let mut f16_matmuls: Vec<Timed<f16>> = vec![
        ("matmul-f16", "64x32", &|g, x| {
            matmul_tensor.launch(g, TC_THREADS, x)
        }),
        ("matmul-f16-64x64", "64x64", &|g, x| {
            matmul_tensor_64x64.launch(g, TC_THREADS_64X64, x)
        }),
        ("matmul-f16-staged", "64x64, 4 stages", &|g, x| {
            matmul_tensor_staged.launch(g, TC_THREADS_64X64, x)
        }),
    ];
    // Warpgroup MMA runs on an H100 or H200 (the module's sm_90a variant) and the CPU.
    if matches!(dev.compute_capability(), None | Some((9, 0))) {
        f16_matmuls.push((
            "matmul-f16-wgmma",
            "8 (2 warpgroups of 64x128, wgmma, 4 stages)",
            &|g, x| matmul_wgmma.launch(g, WG_THREADS, x),
        ));
        f16_matmuls.push((
            "matmul-f16-wgmma-wide",
            "8 (2 warpgroups of 64x256, wgmma, 4 stages)",
            // The matrices are square: half as many blocks across as down (WG_WIDE columns).
            &|(_, rows), x| matmul_wgmma_wide.launch((rows.div_ceil(2), rows), WG_THREADS, x),
        ));
    }
    for line in bench_matmul_tensor(&dev, reps, n, &f16_matmuls)? {
        line.print();
    }
    let mut tf32_matmuls: Vec<Timed<f32>> = vec![
        ("matmul-tf32", "64x32", &|g, x| {
            matmul_tensor_tf32.launch(g, TC_THREADS, x)
        }),
        ("matmul-tf32-64x64", "64x64", &|g, x| {
            matmul_tensor_tf32_64x64.launch(g, TC_THREADS_64X64, x)
        }),
        ("matmul-tf32-staged", "64x32, 4 stages of 8", &|g, x| {
            matmul_tensor_tf32_staged.launch(g, TC_THREADS, x)
        }),
    ];
    if matches!(dev.compute_capability(), None | Some((9, 0))) {
        tf32_matmuls.push((
            "matmul-tf32-wgmma",
            "8 (2 warpgroups of 64x128, wgmma k8, 4 stages)",
            &|g, x| matmul_wgmma_tf32.launch(g, WG_THREADS, x),
        ));
    }
    for line in bench_matmul_tf32(&dev, reps, n, &tf32_matmuls)? {
        line.print();
    }
    Ok(())
}

/// Prints what the kernels' PTX was built for (`.version`, `.target`): the report says it,
/// since ptxas can only use what the target allows.
fn ptx_target() {
    let Some(ptx) = add.ptx() else { return };
    let directive = |name: &str| {
        ptx.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map_or("?", str::trim)
    };
    let (version, target) = (directive(".version "), directive(".target "));
    report("ptx", format!("PTX ISA {version}, .target {target}"));
    println!("{{\"info\": \"ptx\", \"version\": \"{version}\", \"target\": \"{target}\"}}");
}

/// Device-to-device copy of `n` f32: the bandwidth the memory-bound programs are held to.
fn copy_bandwidth(dev: &Device, reps: usize, n: usize) -> Result<Line> {
    let src = dev.zeros::<f32, _>(n)?;
    let mut dst = dev.empty::<f32, _>(n)?;
    let ms = kernel_ms(dev, reps, || Ok(dst.copy_from_device(&src)?))?;
    let bytes = 2.0 * 4.0 * n as f64;
    Ok(Line {
        imp: "rust",
        program: "copy",
        size: format!("{n} f32"),
        kernel_ms: ms,
        e2e_ms: None,
        bytes: Some(bytes),
        check: format!("{:.1} GB/s", bytes / ms / 1e6),
    })
}

/// Wall time of the first launch of a kernel of `gpu-kernels` (the first use of its module) and
/// the wait for it: on a GPU, loading the module's cubin where the build assembled one for
/// this GPU (`KERNEL_CUBIN_ARCHS`), else compiling its PTX (and with `KERNEL_JIT=1`).
fn first_launch(dev: &Device) -> Result<Line> {
    let (a, b) = (dev.zeros::<f32, _>(1)?, dev.zeros::<f32, _>(1)?);
    let mut c = dev.zeros::<f32, _>(1)?;
    dev.synchronize()?;
    let start = std::time::Instant::now();
    empty3.launch(1, 1, (&a, &b, &mut c))?;
    dev.synchronize()?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let cubin = add
        .ptx()
        .is_some_and(|p| p.contains("// kernel-build cubin "));
    let jit = std::env::var("KERNEL_JIT").is_ok_and(|v| v.trim() == "1");
    Ok(Line {
        imp: "rust",
        program: "first-launch",
        size: match (cubin, jit) {
            (true, false) => "module with a cubin for its arch".into(),
            (true, true) => "module PTX compiled by the driver (KERNEL_JIT=1)".into(),
            (false, _) => "module PTX compiled by the driver".into(),
        },
        kernel_ms: ms,
        e2e_ms: None,
        bytes: None,
        check: format!("{ms:.1} ms"),
    })
}

/// Wall time per launch of an empty 3-argument kernel, 1000 launches then one wait.
fn launch_overhead(dev: &Device) -> Result<Line> {
    let (a, b) = (dev.zeros::<f32, _>(1)?, dev.zeros::<f32, _>(1)?);
    let mut c = dev.zeros::<f32, _>(1)?;
    let launches = 1000;
    let ms = wall_ms(5, || {
        for _ in 0..launches {
            empty3.launch(1, 1, (&a, &b, &mut c))?;
        }
        Ok(dev.synchronize()?)
    })?;
    Ok(Line {
        imp: "rust",
        program: "launch",
        size: "empty kernel, 3 arrays".into(),
        kernel_ms: ms / launches as f64,
        e2e_ms: None,
        bytes: None,
        check: format!("{:.2} us per launch", ms / launches as f64 * 1e3),
    })
}

/// Wall time per kernel of a graph of 100 launches of the empty 3-argument kernel, replayed 10
/// times then one wait: what [`launch_overhead`] costs when the launches are captured once.
fn graph_overhead(dev: &Device) -> Result<Line> {
    let (a, b) = (dev.zeros::<f32, _>(1)?, dev.zeros::<f32, _>(1)?);
    let mut c = dev.zeros::<f32, _>(1)?;
    let (kernels, replays) = (100, 10);
    let mut graph = dev.capture(|| {
        for _ in 0..kernels {
            empty3.launch(1, 1, (&a, &b, &mut c))?;
        }
        Ok(())
    })?;
    let ms = wall_ms(5, || {
        for _ in 0..replays {
            graph.launch()?;
        }
        Ok(dev.synchronize()?)
    })?;
    let per_kernel = ms / (kernels * replays) as f64;
    Ok(Line {
        imp: "rust",
        program: "graph",
        size: format!("{kernels} empty kernels in a graph"),
        kernel_ms: per_kernel,
        e2e_ms: None,
        bytes: None,
        check: format!("{:.2} us per kernel", per_kernel * 1e3),
    })
}

/// add-list, one element per thread (`add`, the original program) or [`ADD_WIDE`] of them
/// (`add_wide`, as `add-wide`).
fn bench_add(dev: &Device, reps: usize, n: usize, wide: bool) -> Result<Line> {
    let ones = common::host_vec(n, |_| 1.0f32)?;
    let cfg = LaunchConfig::cover(if wide { n.div_ceil(ADD_WIDE) } else { n }, 256)?;
    let launch = |a: &DeviceArray1<f32>, b: &DeviceArray1<f32>, c: &mut DeviceArray1<f32>| {
        if wide {
            add_wide.launch_with(cfg.clone(), (a, b, c))
        } else {
            add.launch_with(cfg.clone(), (a, b, c))
        }
    };
    let (da, db) = (dev.to_device(&ones)?, dev.to_device(&ones)?);
    let mut dc = dev.empty::<f32, _>(n)?;
    let kernel = kernel_ms(dev, reps, || Ok(launch(&da, &db, &mut dc)?))?;
    let mut out = Vec::new();
    let e2e = wall_ms(reps.min(5), || {
        let (da, db) = (dev.to_device(&ones)?, dev.to_device(&ones)?);
        // Zeros, so that an element the kernel missed shows in the check.
        let mut dc = dev.zeros::<f32, _>(n)?;
        launch(&da, &db, &mut dc)?;
        out = dc.to_vec()?;
        Ok(())
    })?;
    let sum: f64 = out.iter().map(|&v| v as f64).sum();
    Ok(Line {
        imp: "rust",
        program: if wide { "add-wide" } else { "add" },
        size: format!("{n} f32"),
        kernel_ms: kernel,
        e2e_ms: Some(e2e),
        bytes: Some(12.0 * n as f64),
        check: format!("{sum:.1}"),
    })
}

/// add-list from host inputs to host results in page-locked host arrays (`Device::pinned`,
/// Numba's `cuda.pinned_array`), filled before the timing: the same work as `add`'s end to end,
/// with copies at the bus's full speed (`add-pinned`); and the same in 16 chunks through three
/// streams, whose copies overlap the kernels, with device buffers for each stream
/// (`add-streams`, `add_chunked`) and with one device array per operand (`add-streamed`,
/// `add_streamed`).
fn bench_add_pinned(dev: &Device, reps: usize, n: usize) -> Result<Vec<Line>> {
    let mut a = dev.pinned::<f32, _>(n)?;
    a.fill(1.0);
    let mut b = dev.pinned::<f32, _>(n)?;
    b.fill(1.0);
    let mut c = dev.pinned::<f32, _>(n)?;
    let cfg = LaunchConfig::cover(n, 256)?;
    let run = |c: &mut PinnedArray<f32, Ix1>| -> Result {
        let (mut da, mut db) = (dev.empty::<f32, _>(n)?, dev.empty::<f32, _>(n)?);
        da.copy_from_pinned(&a)?;
        db.copy_from_pinned(&b)?;
        // Zeros, so that an element the kernel missed shows in the check.
        let mut dc = dev.zeros::<f32, _>(n)?;
        add.launch_with(cfg.clone(), (&da, &db, &mut dc))?;
        c.copy_from_device(&dc)?;
        Ok(())
    };
    let e2e = wall_ms(reps.min(5), || {
        run(&mut c)?;
        // Reading the result waits for its copy.
        std::hint::black_box(c[n - 1]);
        Ok(())
    })?;
    let sum: f64 = c.iter().map(|&v| v as f64).sum();
    let (da, db) = (dev.zeros::<f32, _>(n)?, dev.zeros::<f32, _>(n)?);
    let mut dc = dev.empty::<f32, _>(n)?;
    let kernel = kernel_ms(dev, reps, || {
        Ok(add.launch_with(cfg.clone(), (&da, &db, &mut dc))?)
    })?;
    let streams = [dev.stream()?, dev.stream()?, dev.stream()?];
    c.fill(0.0);
    let streamed = wall_ms(reps.min(5), || {
        add_chunked(&a, &b, &mut c, n.div_ceil(16), &streams)?;
        std::hint::black_box(c[n - 1]);
        Ok(())
    })?;
    let streamed_sum: f64 = c.iter().map(|&v| v as f64).sum();
    c.fill(0.0);
    let one_array = wall_ms(reps.min(5), || {
        add_streamed(&a, &b, &mut c, n.div_ceil(16), &streams)?;
        std::hint::black_box(c[n - 1]);
        Ok(())
    })?;
    let one_array_sum: f64 = c.iter().map(|&v| v as f64).sum();
    let line = |program, e2e, sum: f64| Line {
        imp: "rust",
        program,
        size: format!("{n} f32"),
        kernel_ms: kernel,
        e2e_ms: Some(e2e),
        bytes: Some(12.0 * n as f64),
        check: format!("{sum:.1}"),
    };
    Ok(vec![
        line("add-pinned", e2e, sum),
        line("add-streams", streamed, streamed_sum),
        line("add-streamed", one_array, one_array_sum),
    ])
}

/// smooth one pixel per thread (the original program), in strips of rows, in strips of words of
/// four pixels (`n` a multiple of 4), and as a `#[stencil]`.
fn bench_smooth(dev: &Device, reps: usize, n: usize) -> Result<[Line; 5]> {
    let x = Array2::from_shape_fn((n, n), |(i, j)| {
        (((i * 31 + j * 17) % 251) as i32 - 125) as i8
    });
    let blocks = (n.div_ceil(16), n.div_ceil(16));
    let dx = dev.to_device(&x)?;
    let mut dout = dev.zeros::<i8, _>((n, n))?;
    let kernel = kernel_ms(dev, reps, || {
        Ok(smooth.launch(blocks, (16, 16), (&dx, &mut dout))?)
    })?;
    let mut out = Array2::<i8>::zeros((0, 0));
    let e2e = wall_ms(reps.min(5), || {
        let dx = dev.to_device(&x)?;
        let mut dout = dev.zeros::<i8, _>((n, n))?;
        smooth.launch(blocks, (16, 16), (&dx, &mut dout))?;
        out = dout.to_host()?;
        Ok(())
    })?;
    let check = |out: &Array2<i8>| {
        let sum: i64 = out
            .indexed_iter()
            .map(|((i, j), &v)| v as i64 * ((i + 2 * j) % 7 + 1) as i64)
            .sum();
        sum.to_string()
    };
    let per_pixel = Line {
        imp: "rust",
        program: "smooth",
        size: format!("{n}x{n} i8"),
        kernel_ms: kernel,
        e2e_ms: Some(e2e),
        bytes: Some(2.0 * (n * n) as f64),
        check: check(&out),
    };

    // End to end from and to page-locked host arrays, filled before the timing.
    let mut hx = dev.pinned::<i8, _>((n, n))?;
    hx.view_mut().assign(&x);
    let mut hout = dev.pinned::<i8, _>((n, n))?;
    let e2e = wall_ms(reps.min(5), || {
        let mut dx = dev.empty::<i8, _>((n, n))?;
        dx.copy_from_pinned(&hx)?;
        let mut dout = dev.zeros::<i8, _>((n, n))?;
        smooth.launch(blocks, (16, 16), (&dx, &mut dout))?;
        hout.copy_from_device(&dout)?;
        // Reading the result waits for its copy.
        std::hint::black_box(hout[n * n - 1]);
        Ok(())
    })?;
    let pinned = Line {
        program: "smooth-pinned",
        e2e_ms: Some(e2e),
        check: check(&hout.view().to_owned()),
        ..per_pixel.clone()
    };

    let mut dout = dev.zeros::<i8, _>((n, n))?;
    let kernel = kernel_ms(dev, reps, || {
        let args = (&dx, &mut dout);
        Ok(smooth_strips.launch(strips_blocks(n, n), (STRIP_THREADS, 1), args)?)
    })?;
    let strips = Line {
        imp: "rust",
        program: "smooth-strips",
        size: format!("{n}x{n} i8, strips of {STRIP_ROWS} rows"),
        kernel_ms: kernel,
        e2e_ms: None,
        bytes: Some(2.0 * (n * n) as f64),
        check: check(&dout.to_host()?),
    };

    // The same bytes, four to a word.
    let (dx, w) = (dx.reinterpret::<u32>()?, n / 4);
    let mut dout = dev.zeros::<i8, _>((n, n))?.reinterpret::<u32>()?;
    let kernel = kernel_ms(dev, reps, || {
        let args = (&dx, &mut dout);
        Ok(smooth_words.launch(words_blocks(n, w), (WORD_THREADS, 1), args)?)
    })?;
    let words = Line {
        imp: "rust",
        program: "smooth-words",
        size: format!("{n}x{n} i8 as u32 words, strips of {STRIP_ROWS} rows"),
        kernel_ms: kernel,
        e2e_ms: None,
        bytes: Some(2.0 * (n * n) as f64),
        check: check(&dout.reinterpret::<i8>()?.to_host()?),
    };

    // As a `#[stencil]`, the macro's mapping of threads to pixels.
    let mut dout = dev.zeros::<i8, _>((n, n))?;
    let dx = dx.reinterpret::<i8>()?;
    let kernel = kernel_ms(dev, reps, || Ok(smooth_stencil.apply(&dx, &mut dout)?))?;
    let stencil = Line {
        imp: "rust",
        program: "smooth-stencil",
        size: format!("{n}x{n} i8, `#[stencil]`"),
        kernel_ms: kernel,
        e2e_ms: None,
        bytes: Some(2.0 * (n * n) as f64),
        check: check(&dout.to_host()?),
    };
    Ok([per_pixel, pinned, strips, words, stencil])
}

/// The 7-point Laplacian of an `n³` grid of `f32`, a `#[stencil]`.
fn bench_laplace3d(dev: &Device, reps: usize, n: usize) -> Result<Line> {
    let u = Array3::from_shape_fn((n, n, n), |(z, y, x)| ((z * 31 + y * 7 + x) % 13) as f32);
    let du = dev.to_device(&u)?;
    let mut dout = dev.zeros::<f32, _>((n, n, n))?;
    let kernel = kernel_ms(dev, reps, || Ok(laplace3d.apply(&du, &mut dout)?))?;
    let out = dout.to_host()?;
    // Small integers throughout: every backend's sum is exact.
    let check: f64 = out
        .indexed_iter()
        .map(|((z, y, x), &v)| v as f64 * ((z + 2 * y + 3 * x) % 5) as f64)
        .sum();
    Ok(Line {
        imp: "rust",
        program: "laplace3d",
        size: format!("{n}^3 f32, `#[stencil]`"),
        kernel_ms: kernel,
        e2e_ms: None,
        bytes: Some(2.0 * 4.0 * (n * n * n) as f64),
        check: check.to_string(),
    })
}

/// The 5 × 5 Gaussian blur of an `n × n` `u8` image, a `#[stencil]` whose neighbourhood is
/// walked by loops.
fn bench_gaussian(dev: &Device, reps: usize, n: usize) -> Result<Line> {
    let x = Array2::from_shape_fn((n, n), |(i, j)| ((i * 31 + j * 17) % 251) as u8);
    let dx = dev.to_device(&x)?;
    let mut dout = dev.zeros::<u8, _>((n, n))?;
    let kernel = kernel_ms(dev, reps, || Ok(gaussian5x5.apply(&dx, &mut dout)?))?;
    let check: u64 = dout
        .to_host()?
        .indexed_iter()
        .map(|((i, j), &v)| v as u64 * ((i + 2 * j) % 7 + 1) as u64)
        .sum();
    Ok(Line {
        imp: "rust",
        program: "gaussian",
        size: format!("{n}x{n} u8, 5x5, `#[stencil]`"),
        kernel_ms: kernel,
        e2e_ms: None,
        bytes: Some(2.0 * (n * n) as f64),
        check: check.to_string(),
    })
}

fn bench_integrate2d(dev: &Device, reps: usize, n: usize) -> Result<Line> {
    let blocks = n.div_ceil(INTEGRATE_TPB);
    let mut sums = dev.empty::<f64, _>(blocks)?;
    let kernel = kernel_ms(dev, reps, || {
        Ok(integrate2d_shared.launch(blocks, INTEGRATE_TPB, (n, &mut sums))?)
    })?;
    let mut value = 0.0;
    let e2e = wall_ms(reps.min(5), || {
        let mut sums = dev.empty::<f64, _>(blocks)?;
        integrate2d_shared.launch(blocks, INTEGRATE_TPB, (n, &mut sums))?;
        value = sums.to_vec()?.iter().sum();
        Ok(())
    })?;
    // The integral is 0; nine decimals hide the summation order's last bits.
    let check = format!("{:.9}", value + 0.0).replace("-0.000000000", "0.000000000");
    Ok(Line {
        imp: "rust",
        program: "integrate2d",
        size: format!("n = {n}, shared"),
        kernel_ms: kernel,
        e2e_ms: Some(e2e),
        bytes: None,
        check,
    })
}

/// The `n` keys every implementation of quicksort sorts (as `sort_keys` in peer_common.py).
fn sort_keys(n: usize) -> Result<Vec<u32>> {
    common::host_vec(n, |i| ((i as u64 * 2_654_435_761) % (1 << 32)) as u32 >> 8)
}

/// The whole sort of `keys`, and the number of splitting passes it makes.
fn bench_quicksort(dev: &Device, reps: usize, keys: &[u32]) -> Result<(Line, usize)> {
    let n = keys.len();
    let mut d = dev.to_device(keys)?;
    let mut fresh = dev.to_device(keys)?;
    // Each timed sort starts from the unsorted keys, copied on the device before the events.
    let passes = quicksort::sort(&mut d)?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        d.copy_from_device(&fresh)?;
        let start = dev.event()?;
        quicksort::sort(&mut d)?;
        let end = dev.event()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    let mut out = Vec::new();
    let e2e = wall_ms(reps.min(3), || {
        fresh = dev.to_device(keys)?;
        quicksort::sort(&mut fresh)?;
        out = fresh.to_vec()?;
        Ok(())
    })?;
    if !out.windows(2).all(|w| w[0] <= w[1]) {
        common::mismatch(NAME, "quicksort: the keys are not sorted");
    }
    rayon_sort(keys, reps)?.print();
    let check = out.iter().enumerate().fold(0u64, |s, (k, &v)| {
        s.wrapping_add(v as u64 * (k as u64 % 7 + 1))
    });
    let line = Line {
        imp: "rust",
        program: "quicksort",
        size: format!("{n} u32"),
        kernel_ms: median(times),
        e2e_ms: Some(e2e),
        bytes: None,
        check: check.to_string(),
    };
    Ok((line, passes))
}

/// One splitting pass of the quicksort over all of `keys` (its pivot, count and scatter
/// kernels, one segment), to set beside the whole sort, which made `passes` of them: the passes
/// times this is about what splitting costs (later passes split many segments at once), the
/// rest of the sort is its small-run sorts and the host's turns between passes. The line's
/// check is `passes`.
fn quicksort_pass(dev: &Device, reps: usize, keys: &[u32], passes: usize) -> Result<Line> {
    let n = keys.len();
    let d = dev.to_device(keys)?;
    let mut scratch = dev.empty::<u32, _>(n)?;
    let mut pass = quicksort::SplitPass::new(dev, &[0, n as u32])?;
    let ms = kernel_ms(dev, reps, || Ok(pass.launch(&d, &mut scratch)?))?;
    Ok(Line {
        imp: "rust",
        program: "quicksort-pass",
        size: format!("{n} u32, one splitting pass"),
        kernel_ms: ms,
        e2e_ms: None,
        // The keys read twice (counted, then scattered) and written once.
        bytes: Some(3.0 * 4.0 * n as f64),
        check: passes.to_string(),
    })
}

/// The host's own parallel sort of the same keys (`par_sort_unstable`), the CPU peer the GPU
/// quicksort is measured against.
fn rayon_sort(keys: &[u32], reps: usize) -> Result<Line> {
    let mut v = keys.to_vec();
    let ms = wall_ms(reps, || {
        v.copy_from_slice(keys);
        v.par_sort_unstable();
        Ok(())
    })?;
    let check = v.iter().enumerate().fold(0u64, |s, (k, &x)| {
        s.wrapping_add(x as u64 * (k as u64 % 7 + 1))
    });
    Ok(Line {
        imp: "rayon",
        program: "quicksort",
        size: format!("{} u32, host par_sort_unstable", keys.len()),
        kernel_ms: ms,
        e2e_ms: Some(ms),
        bytes: None,
        check: check.to_string(),
    })
}

/// A launch of a tensor-core matmul of `E` matrices into `f32` over `blocks`.
type Matmul<E> = dyn Fn(
    (u32, u32),
    (
        &DeviceArray<E, Ix2>,
        &DeviceArray<E, Ix2>,
        &mut DeviceArray<f32, Ix2>,
    ),
) -> std::result::Result<(), kernel_runtime::Error>;

/// A tensor-core matmul to time: its program's name, its warps' parts, its launch.
type Timed<'l, E> = (&'static str, &'static str, &'l Matmul<E>);

/// matmul of `f16` matrices into `f32` on tensor cores, by each of `matmuls` on the same
/// inputs. The inputs are 0, 1 and -1 in a pattern (as `peer_common.matmul_f16_inputs`), so
/// every sum is a small integer, exact in `f16` and `f32` alike: cuBLAS's `f16` result has the
/// same sum.
fn bench_matmul_tensor(
    dev: &Device,
    reps: usize,
    n: usize,
    matmuls: &[Timed<'_, f16>],
) -> Result<Vec<Line>> {
    let a = Array2::from_shape_fn((n, n), |(i, j)| {
        f16::from_f32(((i * 7 + j * 3) % 13 == 0) as u8 as f32)
    });
    let b = Array2::from_shape_fn((n, n), |(i, j)| {
        f16::from_f32(match (i * 5 + j * 11) % 17 {
            0 => 1.0,
            1 => -1.0,
            _ => 0.0,
        })
    });
    let (da, db) = (dev.to_device(&a)?, dev.to_device(&b)?);
    time_matmuls(dev, reps, (n, "f16"), (&da, &db), matmuls, |sum| {
        format!("{sum:.1}")
    })
}

/// Each of `matmuls` timed over `a` and `b`, `n × n`, its line's size naming the inputs'
/// `kind` and its check the sum of its product as `check` writes it.
fn time_matmuls<E: kernel_runtime::DeviceCopy>(
    dev: &Device,
    reps: usize,
    (n, kind): (usize, &str),
    (a, b): (&DeviceArray<E, Ix2>, &DeviceArray<E, Ix2>),
    matmuls: &[Timed<'_, E>],
    check: impl Fn(f64) -> String,
) -> Result<Vec<Line>> {
    let blocks = (n.div_ceil(TC_TILE) as u32, n.div_ceil(TC_TILE) as u32);
    let mut lines = Vec::new();
    for &(program, warps, launch) in matmuls {
        // Each its own product, so that its check sums what it wrote alone.
        let mut c = dev.empty::<f32, _>((n, n))?;
        let kernel = kernel_ms(dev, reps, || Ok(launch(blocks, (a, b, &mut c))?))?;
        let sum: f64 = c.to_host()?.iter().map(|&v| v as f64).sum();
        lines.push(Line {
            imp: "rust",
            program,
            size: format!("{n}x{n} {kind}, tensor cores, warps of {warps}"),
            kernel_ms: kernel,
            e2e_ms: None,
            bytes: None,
            check: check(sum),
        });
    }
    Ok(lines)
}

/// Multiples of 1/8 and 1/16 below 1: each a `tf32` already, and every partial sum exact in
/// `f32`, so every correct implementation gets the same bits whatever its summation order.
fn matmul_inputs(n: usize) -> (Array2<f32>, Array2<f32>) {
    let a = Array2::from_shape_fn((n, n), |(i, j)| {
        ((i * 7 + j * 3) % 13) as f32 * 0.125 - 0.75
    });
    let b = Array2::from_shape_fn((n, n), |(i, j)| {
        ((i * 5 + j * 11) % 17) as f32 * 0.0625 - 0.5
    });
    (a, b)
}

fn bench_matmul_tf32(
    dev: &Device,
    reps: usize,
    n: usize,
    matmuls: &[Timed<'_, f32>],
) -> Result<Vec<Line>> {
    let (a, b) = matmul_inputs(n);
    let (da, db) = (dev.to_device(&a)?, dev.to_device(&b)?);
    time_matmuls(dev, reps, (n, "f32 as tf32"), (&da, &db), matmuls, |sum| {
        format!("{sum:.4}")
    })
}

fn bench_matmul(dev: &Device, reps: usize, n: usize) -> Result<Line> {
    let (a, b) = matmul_inputs(n);
    let blocks = (n.div_ceil(TPB), n.div_ceil(TPB));
    let (da, db) = (dev.to_device(&a)?, dev.to_device(&b)?);
    let mut dc = dev.empty::<f32, _>((n, n))?;
    let kernel = kernel_ms(dev, reps, || {
        Ok(matmul_tiled.launch(blocks, (TPB, TPB), (&da, &db, &mut dc))?)
    })?;
    let mut out = Array2::<f32>::zeros((0, 0));
    let e2e = wall_ms(reps.min(3), || {
        let (da, db) = (dev.to_device(&a)?, dev.to_device(&b)?);
        let mut dc = dev.empty::<f32, _>((n, n))?;
        matmul_tiled.launch(blocks, (TPB, TPB), (&da, &db, &mut dc))?;
        out = dc.to_host()?;
        Ok(())
    })?;
    let sum: f64 = out.iter().map(|&v| v as f64).sum();
    Ok(Line {
        imp: "rust",
        program: "matmul",
        size: format!("{n}x{n} f32"),
        kernel_ms: kernel,
        e2e_ms: Some(e2e),
        bytes: None,
        check: format!("{sum:.4}"),
    })
}
