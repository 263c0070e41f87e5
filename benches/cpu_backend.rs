//! The CPU backend against hand-written rayon code of the same algorithms.
//!
//! Each group times one reference kernel launched on `Device::cpu()` (arrays already on the
//! device, launch only) and, beside it, what a Rust programmer would write with rayon for the
//! same computation. The ratio of the two is the price of writing the kernel once for the GPU
//! and running it on the CPU. Two more groups price what the backend does beside: `checked`,
//! checked mode against the fast backend, and `warp`, warp shuffles (each a stop of every
//! thread's coroutine) against split barriers. `gufunc` is a `#[guvectorize]` function beside the
//! rayon loop that computes the same; `mandelbrot`, Numba's classic example in `complex64`, is
//! work that differs from point to point; `rows`, a thread's loop over a row of a matrix (by
//! index, or through the row's own array and iterator), few threads with much work each.
//!
//! ```sh
//! cargo bench --bench cpu_backend            # or: -- --quick, -- smooth
//! ```

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use gpu_kernels::{
    add, add_vectorized, gaussian5x5, integrate2d_shared, laplace3d, matmul_tiled, smooth,
    smooth_stencil, GAUSS5, INTEGRATE_TPB, TPB,
};
use kernel_runtime::prelude::*;
use kernel_suite::complex_kernels::{escape_time, mandelbrot};
use kernel_suite::gufuncs::dot;
use kernel_suite::reference::{self, SplitMix64};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Duration;

const ADD_N: usize = 10_000_000;
const SMOOTH_N: usize = 10_000;
/// The Laplacian's grid: 256³ `f32`, 64 MiB.
const LAPLACE_N: usize = 256;
const INTEGRATE_N: usize = 2048;
const MATMUL_N: usize = 512;
const SORT_N: usize = 1 << 22;
/// The image side of checked mode's cost: the debugger's price on the stencil.
const CHECKED_SMOOTH_N: usize = 1024;
/// The length of add in checked mode beside the fast backend.
const CHECKED_ADD_N: usize = 1 << 20;
/// The `n` of integrate2d in checked mode beside the fast backend (shared memory, barriers).
const CHECKED_INTEGRATE_N: usize = 1024;
/// The values summed per warp in the price of warp collectives.
const WARP_N: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// The rayon baselines.

/// `c = a + b` with zipped parallel iterators.
fn add_rayon(a: &[f32], b: &[f32], c: &mut [f32]) {
    c.par_iter_mut()
        .zip(a.par_iter())
        .zip(b.par_iter())
        .for_each(|((c, a), b)| *c = a + b);
}

/// The 3×3 mean over an `n × m` image in C order, in parallel over the interior output rows,
/// each reading the three input rows around it; the border is left as it is.
fn smooth_rayon(x: &[i8], out: &mut [i8], n: usize, m: usize) {
    if n < 3 || m < 3 {
        return;
    }
    out[m..(n - 1) * m]
        .par_chunks_mut(m)
        .enumerate()
        .for_each(|(r, row)| {
            let up = &x[r * m..(r + 1) * m];
            let mid = &x[(r + 1) * m..(r + 2) * m];
            let down = &x[(r + 2) * m..(r + 3) * m];
            for (((o, u), c), d) in row[1..m - 1]
                .iter_mut()
                .zip(up.windows(3))
                .zip(mid.windows(3))
                .zip(down.windows(3))
            {
                let s = u[0] as i32
                    + u[1] as i32
                    + u[2] as i32
                    + c[0] as i32
                    + c[1] as i32
                    + c[2] as i32
                    + d[0] as i32
                    + d[1] as i32
                    + d[2] as i32;
                *o = s.div_euclid(9) as i8;
            }
        });
}

/// ∫∫ sin(x + y) over [0, π]² by the midpoint rule, in parallel over the x rows.
fn integrate2d_rayon(n: usize) -> f64 {
    (0..n)
        .into_par_iter()
        .map(|i| reference::integrate2d_row(n, i))
        .sum()
}

/// `c = a @ b` (`n × k` by `k × m`, C order): in parallel over the rows of `c`, i-k-j order so
/// the inner loop runs along rows of `b` and `c` and vectorizes.
fn matmul_rayon(a: &[f32], b: &[f32], c: &mut [f32], k: usize, m: usize) {
    c.par_chunks_mut(m).enumerate().for_each(|(i, crow)| {
        crow.fill(0.0);
        let arow = &a[i * k..(i + 1) * k];
        for (&aiq, brow) in arow.iter().zip(b.chunks_exact(m)) {
            for (cj, &bj) in crow.iter_mut().zip(brow) {
                *cj += aiq * bj;
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// The groups.

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| rng.next_f32()).collect()
}

/// `gpu_kernels::add` without index checks: the kernel's author promises in-bounds indices.
#[kernel(boundscheck = false)]
fn add_unchecked(a: &[f32], b: &[f32], c: &mut [f32]) {
    let i = grid(1);
    if i < c.len() {
        c[i] = a[i] + b[i];
    }
}

/// Adds `a` into `c` in place: a compound assignment, which reads the element it writes (in
/// checked mode, a read and a write of `c` per thread).
#[kernel]
fn accumulate(a: &[f32], c: &mut [f32]) {
    let i = grid(1);
    if i < c.len() {
        c[i] += a[i];
    }
}

/// `gpu_kernels::smooth`'s body under the `#[kernel]` attribute given, its guard spelled as given.
macro_rules! smooth_with {
    ($(#[$attr:meta])* $name:ident, |$i:ident, $j:ident, $n:ident, $m:ident| $guard:expr) => {
        $(#[$attr])*
        fn $name(x: &Array2<i8>, out: &mut Array2<i8>) {
            let ($j, $i) = grid(2);
            let ($n, $m) = x.dim();
            if $guard {
                let s = x[[$i - 1, $j - 1]] as i32
                    + x[[$i - 1, $j]] as i32
                    + x[[$i - 1, $j + 1]] as i32
                    + x[[$i, $j - 1]] as i32
                    + x[[$i, $j]] as i32
                    + x[[$i, $j + 1]] as i32
                    + x[[$i + 1, $j - 1]] as i32
                    + x[[$i + 1, $j]] as i32
                    + x[[$i + 1, $j + 1]] as i32;
                out[[$i, $j]] = s.div_euclid(9) as i8;
            }
        }
    };
}

smooth_with!(
    /// `gpu_kernels::smooth` without index checks.
    #[kernel(boundscheck = false)]
    smooth_unchecked,
    |i, j, n, m| 1 <= i && i + 1 < n && 1 <= j && j + 1 < m
);
smooth_with!(
    /// `gpu_kernels::smooth` with its guard written as the Numba original writes it
    /// (`1 <= i < n - 1`), index checks on.
    #[kernel]
    smooth_numba_guard,
    |i, j, n, m| 1 <= i && i < n - 1 && 1 <= j && j < m - 1
);

fn bench_add(c: &mut Criterion) {
    let dev = Device::cpu();
    let (a, b) = (random_f32(ADD_N, 1), random_f32(ADD_N, 2));
    let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
    let mut dc = dev.zeros::<f32, _>(ADD_N).unwrap();
    let cfg = LaunchConfig::cover(ADD_N, 256).unwrap();
    let mut hc = vec![0.0f32; ADD_N];

    add.launch_with(cfg.clone(), (&da, &db, &mut dc)).unwrap();
    add_rayon(&a, &b, &mut hc);
    assert_eq!(dc.to_vec().unwrap(), hc, "add: kernel and rayon disagree");

    let mut g = c.benchmark_group("add");
    g.throughput(Throughput::Elements(ADD_N as u64));
    g.bench_function("kernel", |bch| {
        bch.iter(|| add.launch_with(cfg.clone(), (&da, &db, &mut dc)).unwrap())
    });
    g.bench_function("kernel_unchecked", |bch| {
        bch.iter(|| {
            add_unchecked
                .launch_with(cfg.clone(), (&da, &db, &mut dc))
                .unwrap()
        })
    });
    g.bench_function("vectorize", |bch| {
        bch.iter(|| add_vectorized.apply((&da, &db), &mut dc).unwrap())
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| add_rayon(black_box(&a), black_box(&b), &mut hc))
    });
    g.finish();
}

/// Rows of the generalized ufuncs' inputs, and their length: one dot product a row.
const DOT_ROWS: usize = 1 << 20;
const DOT_N: usize = 16;

/// The dot product of each row pair, rows of `n`: what `#[guvectorize("(n),(n)->()")]`
/// computes, in the same order.
fn dot_rayon(a: &[f32], b: &[f32], out: &mut [f32], n: usize) {
    out.par_iter_mut()
        .zip(a.par_chunks(n).zip(b.par_chunks(n)))
        .for_each(|(o, (a, b))| *o = a.iter().zip(b).fold(0.0, |s, (x, y)| s + x * y));
}

fn bench_gufunc(c: &mut Criterion) {
    let dev = Device::cpu();
    let (a, b) = (
        random_f32(DOT_ROWS * DOT_N, 3),
        random_f32(DOT_ROWS * DOT_N, 4),
    );
    let shape = (DOT_ROWS, DOT_N);
    let da = dev
        .to_device(&Array2::from_shape_vec(shape, a.clone()).unwrap())
        .unwrap();
    let db = dev
        .to_device(&Array2::from_shape_vec(shape, b.clone()).unwrap())
        .unwrap();
    let mut dout = dev.zeros::<f32, _>(DOT_ROWS).unwrap();
    let mut hout = vec![0.0f32; DOT_ROWS];
    dot.apply((&da, &db), &mut dout).unwrap();
    dot_rayon(&a, &b, &mut hout, DOT_N);
    assert_eq!(
        dout.to_vec().unwrap(),
        hout,
        "dot: gufunc and rayon disagree"
    );

    let mut g = c.benchmark_group("gufunc");
    g.throughput(Throughput::Elements((DOT_ROWS * DOT_N) as u64));
    g.bench_function("dot", |bch| {
        bch.iter(|| dot.apply((&da, &db), &mut dout).unwrap())
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| dot_rayon(black_box(&a), black_box(&b), &mut hout, DOT_N))
    });
    g.finish();
}

/// The Mandelbrot set's grid: rows, columns and the most iterations.
const MANDEL: (usize, usize, u32) = (768, 1024, 200);

/// `mandelbrot` as a rayon programmer writes it: the rows in parallel.
fn mandelbrot_rayon(origin: Complex32, step: f32, out: &mut [u32]) {
    let (_, cols, max_iter) = MANDEL;
    out.par_chunks_mut(cols).enumerate().for_each(|(y, row)| {
        for (x, o) in row.iter_mut().enumerate() {
            let c = origin + Complex32::new(x as f32 * step, y as f32 * step);
            *o = escape_time(c, max_iter);
        }
    });
}

fn bench_mandelbrot(c: &mut Criterion) {
    let dev = Device::cpu();
    let (rows, cols, max_iter) = MANDEL;
    let (origin, step) = (Complex32::new(-2.2, -1.2), 3.2 / cols as f32);
    let mut dout = dev.zeros::<u32, _>((rows, cols)).unwrap();
    let mut hout = vec![0u32; rows * cols];
    let blocks = ((cols as u32).div_ceil(16), (rows as u32).div_ceil(8));
    let launch = |out: &mut DeviceArray2<u32>| {
        mandelbrot
            .launch(blocks, (16, 8), (origin, step, max_iter, out))
            .unwrap()
    };
    launch(&mut dout);
    mandelbrot_rayon(origin, step, &mut hout);
    assert_eq!(
        dout.to_vec().unwrap(),
        hout,
        "mandelbrot: kernel and rayon disagree"
    );

    let mut g = c.benchmark_group("mandelbrot");
    g.throughput(Throughput::Elements((rows * cols) as u64));
    g.bench_function("kernel", |bch| bch.iter(|| launch(&mut dout)));
    g.bench_function("rayon", |bch| {
        bch.iter(|| mandelbrot_rayon(black_box(origin), step, &mut hout))
    });
    g.finish();
}

fn bench_smooth(c: &mut Criterion) {
    let dev = Device::cpu();
    let n = SMOOTH_N;
    let mut rng = SplitMix64(3);
    let x: Vec<i8> = (0..n * n).map(|_| rng.next_u64() as i8).collect();
    let dx = dev
        .to_device(&ndarray::Array2::from_shape_vec((n, n), x.clone()).unwrap())
        .unwrap();
    let mut dout = dev.zeros_like::<i8, _, _>(&dx).unwrap();
    let blocks = (n.div_ceil(16), n.div_ceil(16));
    let mut hout = vec![0i8; n * n];

    smooth.launch(blocks, (16, 16), (&dx, &mut dout)).unwrap();
    smooth_rayon(&x, &mut hout, n, n);
    assert!(
        dout.to_vec().unwrap() == hout,
        "smooth: kernel and rayon disagree"
    );

    let mut g = c.benchmark_group("smooth");
    g.throughput(Throughput::Elements((n * n) as u64));
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    g.bench_function("kernel", |bch| {
        bch.iter(|| smooth.launch(blocks, (16, 16), (&dx, &mut dout)).unwrap())
    });
    g.bench_function("kernel_numba_guard", |bch| {
        bch.iter(|| {
            smooth_numba_guard
                .launch(blocks, (16, 16), (&dx, &mut dout))
                .unwrap()
        })
    });
    g.bench_function("kernel_unchecked", |bch| {
        bch.iter(|| {
            smooth_unchecked
                .launch(blocks, (16, 16), (&dx, &mut dout))
                .unwrap()
        })
    });
    smooth_stencil.apply(&dx, &mut dout).unwrap();
    assert!(
        dout.to_vec().unwrap() == hout,
        "smooth: the stencil and rayon disagree"
    );
    g.bench_function("stencil", |bch| {
        bch.iter(|| smooth_stencil.apply(&dx, &mut dout).unwrap())
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| smooth_rayon(black_box(&x), &mut hout, n, n))
    });
    g.finish();
}

/// The 7-point Laplacian of an `n³` grid in C order, in parallel over the interior planes; the
/// border is left as it is.
fn laplace_rayon(u: &[f32], out: &mut [f32], n: usize) {
    if n < 3 {
        return;
    }
    let plane = n * n;
    out[plane..(n - 1) * plane]
        .par_chunks_mut(plane)
        .enumerate()
        .for_each(|(z, slab)| {
            let c = (z + 1) * plane;
            for y in 1..n - 1 {
                let row = c + y * n;
                for x in 1..n - 1 {
                    let i = row + x;
                    slab[y * n + x] =
                        u[i - plane] + u[i + plane] + u[i - n] + u[i + n] + u[i - 1] + u[i + 1]
                            - 6.0 * u[i];
                }
            }
        });
}

/// The 7-point Laplacian, a 3-D `#[stencil]`, against rayon.
fn bench_laplace(c: &mut Criterion) {
    let dev = Device::cpu();
    let n = LAPLACE_N;
    let u: Vec<f32> = (0..n * n * n).map(|i| (i % 13) as f32).collect();
    let du = dev
        .to_device(&ndarray::Array3::from_shape_vec((n, n, n), u.clone()).unwrap())
        .unwrap();
    let mut dout = dev.zeros_like::<f32, _, _>(&du).unwrap();
    let mut hout = vec![0f32; n * n * n];
    laplace3d.apply(&du, &mut dout).unwrap();
    laplace_rayon(&u, &mut hout, n);
    assert!(
        dout.to_vec().unwrap() == hout,
        "laplace3d: the stencil and rayon disagree"
    );
    let mut g = c.benchmark_group("laplace3d");
    g.throughput(Throughput::Elements((n * n * n) as u64));
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    g.bench_function("stencil", |bch| {
        bch.iter(|| laplace3d.apply(&du, &mut dout).unwrap())
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| laplace_rayon(black_box(&u), &mut hout, n))
    });
    g.finish();
}

/// The 5 × 5 Gaussian blur over an `n × m` image in C order, in parallel over the interior
/// output rows, each reading the five input rows around it; the border is left as it is.
fn gaussian_rayon(x: &[u8], out: &mut [u8], n: usize, m: usize) {
    if n < 5 || m < 5 {
        return;
    }
    out[2 * m..(n - 2) * m]
        .par_chunks_mut(m)
        .enumerate()
        .for_each(|(r, row)| {
            for (j, o) in row[2..m - 2].iter_mut().enumerate() {
                let mut s = 128u32;
                for (a, weights) in GAUSS5.iter().enumerate() {
                    let above = &x[(r + a) * m + j..(r + a) * m + j + 5];
                    for (w, v) in weights.iter().zip(above) {
                        s += w * *v as u32;
                    }
                }
                *o = (s >> 8) as u8;
            }
        });
}

/// The 5 × 5 Gaussian blur, a `#[stencil]` whose neighbourhood is walked by loops, against
/// rayon.
fn bench_gaussian(c: &mut Criterion) {
    let dev = Device::cpu();
    let n = SMOOTH_N;
    let mut rng = SplitMix64(5);
    let x: Vec<u8> = (0..n * n).map(|_| rng.next_u64() as u8).collect();
    let dx = dev
        .to_device(&ndarray::Array2::from_shape_vec((n, n), x.clone()).unwrap())
        .unwrap();
    let mut dout = dev.zeros_like::<u8, _, _>(&dx).unwrap();
    let mut hout = vec![0u8; n * n];
    gaussian5x5.apply(&dx, &mut dout).unwrap();
    gaussian_rayon(&x, &mut hout, n, n);
    assert!(
        dout.to_vec().unwrap() == hout,
        "gaussian: the stencil and rayon disagree"
    );
    let mut g = c.benchmark_group("gaussian");
    g.throughput(Throughput::Elements((n * n) as u64));
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    g.bench_function("stencil", |bch| {
        bch.iter(|| gaussian5x5.apply(&dx, &mut dout).unwrap())
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| gaussian_rayon(black_box(&x), &mut hout, n, n))
    });
    g.finish();
}

fn bench_integrate2d(c: &mut Criterion) {
    let dev = Device::cpu();
    let n = INTEGRATE_N;
    let blocks = n.div_ceil(INTEGRATE_TPB);
    let mut sums = dev.zeros::<f64, _>(blocks).unwrap();

    integrate2d_shared
        .launch(blocks, INTEGRATE_TPB, (n, &mut sums))
        .unwrap();
    let (k, r) = (
        sums.to_vec().unwrap().iter().sum::<f64>(),
        integrate2d_rayon(n),
    );
    assert!(
        (k - r).abs() < 1e-9,
        "integrate2d: kernel {k} and rayon {r} disagree"
    );

    let mut g = c.benchmark_group("integrate2d_shared");
    g.throughput(Throughput::Elements((n * n) as u64));
    g.sample_size(20);
    g.bench_function("kernel", |bch| {
        bch.iter(|| {
            integrate2d_shared
                .launch(blocks, INTEGRATE_TPB, (black_box(n), &mut sums))
                .unwrap()
        })
    });
    g.bench_function("rayon", |bch| bch.iter(|| integrate2d_rayon(black_box(n))));
    g.finish();
}

fn bench_matmul(c: &mut Criterion) {
    let dev = Device::cpu();
    let n = MATMUL_N;
    let (a, b) = (random_f32(n * n, 4), random_f32(n * n, 5));
    let to2 = |v: &Vec<f32>| ndarray::Array2::from_shape_vec((n, n), v.clone()).unwrap();
    let (da, db) = (
        dev.to_device(&to2(&a)).unwrap(),
        dev.to_device(&to2(&b)).unwrap(),
    );
    let mut dc = dev.zeros::<f32, _>((n, n)).unwrap();
    let blocks = (n.div_ceil(TPB), n.div_ceil(TPB));
    let mut hc = vec![0.0f32; n * n];

    matmul_tiled
        .launch(blocks, (TPB, TPB), (&da, &db, &mut dc))
        .unwrap();
    matmul_rayon(&a, &b, &mut hc, n, n);
    let worst = dc
        .to_vec()
        .unwrap()
        .iter()
        .zip(&hc)
        .fold(0.0f32, |w, (x, y)| w.max((x - y).abs()));
    assert!(worst < 1e-3, "matmul: kernel and rayon differ by {worst}");

    let mut g = c.benchmark_group("matmul");
    g.throughput(Throughput::Elements((2 * n * n * n) as u64));
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    g.bench_function("kernel", |bch| {
        bch.iter(|| {
            matmul_tiled
                .launch(blocks, (TPB, TPB), (&da, &db, &mut dc))
                .unwrap()
        })
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| matmul_rayon(black_box(&a), black_box(&b), &mut hc, n, n))
    });
    g.finish();
}

fn bench_quicksort(c: &mut Criterion) {
    let dev = Device::cpu();
    let mut rng = SplitMix64(6);
    let keys: Vec<u32> = (0..SORT_N).map(|_| rng.next_u64() as u32).collect();
    let mut sorted = dev.to_device(&keys).unwrap();
    gpu_kernels::quicksort::sort(&mut sorted).unwrap();
    let mut want = keys.clone();
    want.par_sort_unstable();
    assert!(
        sorted.to_vec().unwrap() == want,
        "quicksort: kernels and rayon disagree"
    );

    // Each sample sorts a fresh copy of the same keys; the copy is not timed.
    let mut g = c.benchmark_group("quicksort");
    g.throughput(Throughput::Elements(SORT_N as u64));
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    g.bench_function("kernel", |bch| {
        bch.iter_batched_ref(
            || dev.to_device(&keys).unwrap(),
            |d| gpu_kernels::quicksort::sort(d).unwrap(),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("rayon", |bch| {
        bch.iter_batched_ref(
            || keys.clone(),
            |k| k.par_sort_unstable(),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Checked mode against the fast CPU backend on one launch of the smooth stencil: the price of
/// recording every write and checking every index.
fn bench_checked(c: &mut Criterion) {
    let mut g = c.benchmark_group("checked");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let modes = [("fast", Device::cpu()), ("checked", Device::cpu_checked())];

    let n = CHECKED_SMOOTH_N;
    let mut rng = SplitMix64(5);
    let x = ndarray::Array2::from_shape_fn((n, n), |_| rng.next_u64() as i8);
    let blocks = (n.div_ceil(16), n.div_ceil(16));
    let mut results = Vec::new();
    for (mode, dev) in &modes {
        let dx = dev.to_device(&x).unwrap();
        let mut dout = dev.zeros_like::<i8, _, _>(&dx).unwrap();
        smooth.launch(blocks, (16, 16), (&dx, &mut dout)).unwrap();
        results.push(dout.to_vec().unwrap());
        g.bench_function(format!("smooth_{mode}"), |bch| {
            bch.iter(|| smooth.launch(blocks, (16, 16), (&dx, &mut dout)).unwrap())
        });
    }
    assert!(
        results[0] == results[1],
        "checked: smooth's two modes disagree"
    );

    let (a, b) = (random_f32(CHECKED_ADD_N, 1), random_f32(CHECKED_ADD_N, 2));
    let cfg = LaunchConfig::cover(CHECKED_ADD_N, 256).unwrap();
    for (mode, dev) in &modes {
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        let mut dc = dev.zeros::<f32, _>(CHECKED_ADD_N).unwrap();
        g.bench_function(format!("add_{mode}"), |bch| {
            bch.iter(|| add.launch_with(cfg.clone(), (&da, &db, &mut dc)).unwrap())
        });
    }

    for (mode, dev) in &modes {
        let da = dev.to_device(&a).unwrap();
        let mut dc = dev.zeros::<f32, _>(CHECKED_ADD_N).unwrap();
        g.bench_function(format!("accumulate_{mode}"), |bch| {
            bch.iter(|| accumulate.launch_with(cfg.clone(), (&da, &mut dc)).unwrap())
        });
    }

    let n = CHECKED_INTEGRATE_N;
    let blocks = n.div_ceil(INTEGRATE_TPB);
    for (mode, dev) in &modes {
        let mut sums = dev.zeros::<f64, _>(blocks).unwrap();
        g.bench_function(format!("integrate2d_{mode}"), |bch| {
            bch.iter(|| {
                integrate2d_shared
                    .launch(blocks, INTEGRATE_TPB, (n, &mut sums))
                    .unwrap()
            })
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// The price of warp collectives: split into thread loops with an exchange per collective, or
// as coroutines that each collective stops.

/// A kernel in which every lane gets its warp's sum of `x`, by a butterfly of five
/// `shfl_xor_sync`s, under the `#[kernel]` attribute given: one body for both runs.
macro_rules! warp_sum_by_shuffles {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        fn $name(x: &[f32], sums: &mut [f32]) {
            let i = grid(1);
            let mut s = x[i];
            let mut offset = WARP_SIZE / 2;
            while offset > 0 {
                s += shfl_xor_sync(u32::MAX, s, offset);
                offset /= 2;
            }
            sums[i] = s;
        }
    };
}

warp_sum_by_shuffles!(
    /// Split at its shuffles.
    #[kernel]
    warp_sum_shuffles
);
warp_sum_by_shuffles!(
    /// As coroutines (`barriers` keeps the macro from splitting it).
    #[kernel(barriers)]
    warp_sum_coroutines
);

/// The same sums through shared memory, by a tree of five steps with barriers, which the
/// `#[kernel]` macro splits into thread loops.
#[kernel]
fn warp_sum_shared(x: &[f32], sums: &mut [f32]) {
    let mut s = shared_array![f32; 256];
    let (i, t) = (grid(1), thread_idx().x as usize);
    s[t] = x[i];
    sync_threads();
    let mut offset = 16;
    while offset > 0 {
        let v = if t % 32 < offset { s[t + offset] } else { 0.0 };
        sync_threads();
        s[t] += v;
        sync_threads();
        offset /= 2;
    }
    sums[i] = s[t - t % 32];
}

fn bench_warp(c: &mut Criterion) {
    const {
        assert!(warp_sum_shared::META.split && warp_sum_shuffles::META.split);
        assert!(!warp_sum_coroutines::META.split);
    };
    let dev = Device::cpu();
    // Small integers: every order of summing gives the same floats.
    let x: Vec<f32> = (0..WARP_N).map(|i| (i % 7) as f32).collect();
    let dx = dev.to_device(&x).unwrap();
    let mut sums = dev.zeros::<f32, _>(WARP_N).unwrap();
    let mut g = c.benchmark_group("warp");
    g.throughput(Throughput::Elements(WARP_N as u64));
    g.sampling_mode(SamplingMode::Flat).sample_size(10);
    let blocks = WARP_N / 256;
    warp_sum_shuffles
        .launch(blocks, 256, (&dx, &mut sums))
        .unwrap();
    let by_shuffles = sums.to_vec().unwrap();
    warp_sum_coroutines
        .launch(blocks, 256, (&dx, &mut sums))
        .unwrap();
    assert!(
        by_shuffles == sums.to_vec().unwrap(),
        "warp: coroutines disagree"
    );
    warp_sum_shared
        .launch(blocks, 256, (&dx, &mut sums))
        .unwrap();
    assert!(
        by_shuffles == sums.to_vec().unwrap(),
        "warp: shared memory disagrees"
    );
    g.bench_function("shuffles", |b| {
        b.iter(|| {
            warp_sum_shuffles
                .launch(blocks, 256, (&dx, &mut sums))
                .unwrap()
        })
    });
    g.bench_function("coroutines", |b| {
        b.iter(|| {
            warp_sum_coroutines
                .launch(blocks, 256, (&dx, &mut sums))
                .unwrap()
        })
    });
    g.bench_function("shared", |b| {
        b.iter(|| {
            warp_sum_shared
                .launch(blocks, 256, (&dx, &mut sums))
                .unwrap()
        })
    });
    g.finish();
}

/// saxpy, one element per thread: the form the grid-stride loop is measured against.
#[kernel]
fn saxpy_per_thread(a: f32, x: &[f32], y: &mut [f32]) {
    let i = grid(1);
    if i < y.len() {
        y[i] += a * x[i];
    }
}

/// saxpy as CUDA's and Numba's grid-stride loop, launched with fewer threads than elements.
#[kernel]
fn saxpy_grid_stride(a: f32, x: &[f32], y: &mut [f32]) {
    let n = y.len();
    let mut i = grid(1);
    while i < n {
        y[i] += a * x[i];
        i += gridsize(1);
    }
}

/// The grid-stride loop written with `step_by`.
#[kernel]
fn saxpy_step_by(a: f32, x: &[f32], y: &mut [f32]) {
    for i in (grid(1)..y.len()).step_by(gridsize(1)) {
        y[i] += a * x[i];
    }
}

/// saxpy on a 2-D array as a 2-D grid-stride nest, rows outer.
#[kernel]
fn saxpy_grid_stride_2d(a: f32, x: &Array2<f32>, y: &mut Array2<f32>) {
    let (x0, y0) = grid(2);
    let (sx, sy) = gridsize(2);
    let (h, w) = y.dim();
    for r in (y0..h).step_by(sy) {
        for c in (x0..w).step_by(sx) {
            y[[r, c]] += a * x[[r, c]];
        }
    }
}

/// The grid-stride loop, the most common CUDA idiom, against the same saxpy one element per
/// thread and a rayon loop: 10⁷ f32, 256 blocks of 256 threads; and the 2-D nest on 10⁷ f32 as
/// 2500 rows of 4000, 16 × 16 blocks of 16 × 16 threads.
fn bench_grid_stride(c: &mut Criterion) {
    let dev = Device::cpu();
    let x: Vec<f32> = (0..ADD_N).map(|i| (i % 97) as f32).collect();
    let dx = dev.to_device(&x).unwrap();
    let mut dy = dev.zeros::<f32, _>(ADD_N).unwrap();
    let mut hy = vec![0.0f32; ADD_N];
    let per_thread = LaunchConfig::cover(ADD_N, 256).unwrap();

    saxpy_grid_stride
        .launch(256, 256, (2.0, &dx, &mut dy))
        .unwrap();
    hy.par_iter_mut().zip(&x).for_each(|(y, x)| *y += 2.0 * x);
    assert_eq!(dy.to_vec().unwrap(), hy, "saxpy: kernel and rayon disagree");

    let mut g = c.benchmark_group("grid_stride");
    g.throughput(Throughput::Elements(ADD_N as u64));
    g.bench_function("kernel", |bch| {
        bch.iter(|| {
            saxpy_grid_stride
                .launch(256, 256, (2.0, &dx, &mut dy))
                .unwrap()
        })
    });
    g.bench_function("kernel_step_by", |bch| {
        bch.iter(|| saxpy_step_by.launch(256, 256, (2.0, &dx, &mut dy)).unwrap())
    });
    let x2 = ndarray::Array2::from_shape_vec((2500, ADD_N / 2500), x.clone()).unwrap();
    let dx2 = dev.to_device(&x2).unwrap();
    let mut dy2 = dev.zeros::<f32, _>(x2.dim()).unwrap();
    saxpy_grid_stride_2d
        .launch((16, 16), (16, 16), (2.0, &dx2, &mut dy2))
        .unwrap();
    let flat: Vec<f32> = dy2.to_host().unwrap().into_iter().collect();
    assert_eq!(flat, hy, "saxpy 2-D: kernel and rayon disagree");
    g.bench_function("kernel_2d", |bch| {
        bch.iter(|| {
            saxpy_grid_stride_2d
                .launch((16, 16), (16, 16), (2.0, &dx2, &mut dy2))
                .unwrap()
        })
    });
    g.bench_function("per_thread", |bch| {
        bch.iter(|| {
            saxpy_per_thread
                .launch_with(per_thread.clone(), (2.0, &dx, &mut dy))
                .unwrap()
        })
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| {
            hy.par_iter_mut()
                .zip(black_box(&x))
                .for_each(|(y, x)| *y += 2.0 * x)
        })
    });
    g.finish();
}

/// The side of the matrix whose row sums price a kernel's own ways of reading a row.
const ROWS_N: usize = 4096;

/// Row `i`'s sum, written with indices (`for k in 0..m { s += x[[i, k]] }`), under the
/// `#[kernel]` attribute given.
macro_rules! row_sums_with {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        fn $name(x: &Array2<u32>, out: &mut [u32]) {
            let i = grid(1);
            if i < out.len() {
                let mut s = 0u32;
                for k in 0..x.dim().1 {
                    s = s.wrapping_add(x[[i, k]]);
                }
                out[i] = s;
            }
        }
    };
}
row_sums_with!(
    #[kernel]
    row_sums_indexed
);
row_sums_with!(
    #[kernel(boundscheck = false)]
    row_sums_unchecked
);

/// Row `i`'s sum through the row's own array and its iterator: `x.row(i).iter()`.
#[kernel]
fn row_sums_iter(x: &Array2<u32>, out: &mut [u32]) {
    let i = grid(1);
    if i < out.len() {
        out[i] = x.row(i).iter().fold(0u32, |s, &v| s.wrapping_add(v));
    }
}

/// A kernel's ways of reading a row (indices `x[[i, k]]`, the row's iterator
/// `x.row(i).iter()`) against rayon's sums of the same rows.
fn bench_rows(c: &mut Criterion) {
    let dev = Device::cpu();
    let x = ndarray::Array2::from_shape_fn((ROWS_N, ROWS_N), |(i, k)| (i * 31 + k) as u32);
    let dx = dev.to_device(&x).unwrap();
    let mut out = dev.zeros::<u32, _>(ROWS_N).unwrap();
    let host: Vec<u32> = x.as_slice().unwrap().to_vec();
    let mut sums = vec![0u32; ROWS_N];
    let cfg = LaunchConfig::cover(ROWS_N, 128).unwrap();
    let rayon_sums = |sums: &mut [u32]| {
        sums.par_iter_mut()
            .zip(host.par_chunks(ROWS_N))
            .for_each(|(s, row)| *s = row.iter().fold(0u32, |a, &v| a.wrapping_add(v)))
    };
    rayon_sums(&mut sums);

    let mut g = c.benchmark_group("rows");
    g.throughput(Throughput::Elements((ROWS_N * ROWS_N) as u64));
    let mut kernel = |name: &str, launch: &dyn Fn(&mut kernel_runtime::DeviceArray1<u32>)| {
        launch(&mut out);
        assert_eq!(
            out.to_vec().unwrap(),
            sums,
            "{name}: kernel and rayon disagree"
        );
        g.bench_function(name, |bch| bch.iter(|| launch(&mut out)));
    };
    kernel("indexed", &|out| {
        row_sums_indexed
            .launch_with(cfg.clone(), (&dx, out))
            .unwrap()
    });
    kernel("unchecked", &|out| {
        row_sums_unchecked
            .launch_with(cfg.clone(), (&dx, out))
            .unwrap()
    });
    kernel("iter", &|out| {
        row_sums_iter.launch_with(cfg.clone(), (&dx, out)).unwrap()
    });
    g.bench_function("rayon", |bch| bch.iter(|| rayon_sums(black_box(&mut sums))));
    g.finish();
}

criterion_group!(
    benches,
    bench_rows,
    bench_grid_stride,
    bench_warp,
    bench_checked,
    bench_add,
    bench_gufunc,
    bench_mandelbrot,
    bench_smooth,
    bench_gaussian,
    bench_laplace,
    bench_integrate2d,
    bench_matmul,
    bench_quicksort
);
criterion_main!(benches);
