//! dist_smooth: smooth, step after step, over an image split by rows across the ranks of an MPI
//! job. Each rank holds its band of rows with one halo row of each neighbour, exchanges the
//! halos before every step (`Cluster::exchange_rows`) and smooths its band on its device; the
//! checksum at the end is the one a single process computes, bit for bit.
//!
//! ```sh
//! cargo build --release --features mpi --example dist_smooth
//! mpirun -np 4 target/release/examples/dist_smooth [--n 2000] [--reps 50]
//! ```
//!
//! `--n` is the image's side, `--reps` the number of steps. The result goes to stdout, the
//! timing and the bytes exchanged per step to stderr.

use gpu_kernels::smooth;
use kernel_examples::cli::Args;
use kernel_runtime::cluster::Cluster;
use kernel_runtime::ndarray::Array2;
use std::time::Instant;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() {
    Cluster::run(|cluster| run(cluster, Args::from_env()?))
}

/// The image every run starts from: the benchmarks' pattern.
fn pixel(i: usize, j: usize) -> i8 {
    (((i * 31 + j * 17) % 251) as i32 - 125) as i8
}

fn run(cluster: &Cluster, args: Args) -> Result {
    let (n, steps) = (args.n.unwrap_or(1000), args.reps.unwrap_or(20));
    if n < 3 || n < cluster.size() {
        return Err(format!("--n {n}: the image needs 3 rows and one per rank at least").into());
    }
    let dev = cluster.device();
    let own = cluster.share(n);
    let above = usize::from(cluster.rank() > 0);
    let below = usize::from(cluster.rank() + 1 < cluster.size());
    let first = own.start - above;
    let held = own.len() + above + below;
    let image = Array2::from_shape_fn((held, n), |(i, j)| pixel(first + i, j));
    let mut x = dev.to_device(&image)?;
    // The edges of the image are never written: they stay as they are in both arrays.
    let mut out = x.try_clone()?;
    let blocks = (n.div_ceil(16), held.div_ceil(16));
    cluster.barrier();
    let start = Instant::now();
    for _ in 0..steps {
        cluster.exchange_rows(&mut x, 1)?;
        smooth.launch(blocks, (16, 16), (&x, &mut out))?;
        std::mem::swap(&mut x, &mut out);
    }
    dev.synchronize()?;
    cluster.barrier();
    let elapsed = start.elapsed();

    // An exact checksum of this rank's rows, summed over the ranks.
    let mine = x.to_vec_range(above * n..(above + own.len()) * n)?;
    let partial: i64 = mine
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let (i, j) = (own.start + k / n, k % n);
            v as i64 * ((i + 2 * j) % 7 + 1) as i64
        })
        .sum();
    let mut total = dev.to_device(&[partial][..])?;
    cluster.all_reduce_sum(&mut total)?;
    if cluster.rank() == 0 {
        println!("dist_smooth: {n}x{n} i8 image, {steps} steps");
        println!("checksum: {}", total.to_vec()?[0]);
        let exchanged = 2 * (cluster.size() - 1) * n;
        eprintln!(
            "{} rank(s) on {}: {:.1} ms, {:.3} ms per step; {exchanged} bytes exchanged per \
             step ({} per rank at most)",
            cluster.size(),
            dev.name(),
            elapsed.as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e3 / steps.max(1) as f64,
            if cluster.size() > 1 { 2 * n } else { 0 },
        );
    }
    Ok(())
}
