//! dist_integrate2d: ∫∫ sin(x + y) over [0, π]² by the midpoint rule on an n × n grid, its rows
//! split across the ranks of an MPI job. Each rank sums its band of rows on its device; rank 0
//! gathers the row sums and adds them in row order, so the result is the one a single process
//! computes, bit for bit, for any number of ranks.
//!
//! ```sh
//! cargo build --release --features mpi --example dist_integrate2d
//! mpirun -np 4 target/release/examples/dist_integrate2d [--n 20480]
//! ```

use gpu_kernels::integrate2d_band;
use kernel_examples::cli::Args;
use kernel_runtime::cluster::Cluster;
use kernel_runtime::LaunchConfig;
use std::time::Instant;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() {
    Cluster::run(|cluster| run(cluster, Args::from_env()?))
}

fn run(cluster: &Cluster, args: Args) -> Result {
    let n = args.n.unwrap_or(4096);
    if n == 0 {
        return Err("--n 0: the grid needs a row at least".into());
    }
    let dev = cluster.device();
    let own = cluster.share(n);
    let mut rows = dev.zeros::<f64, _>(own.len())?;
    let start = Instant::now();
    if !own.is_empty() {
        let cfg = LaunchConfig::cover(own.len(), 256)?.on(dev);
        integrate2d_band.launch_with(cfg, (n, own.start, &mut rows))?;
    }
    let all = cluster.gather(&rows, 0)?;
    let elapsed = start.elapsed();
    if let Some(all) = all {
        let value: f64 = all.iter().sum();
        println!("dist_integrate2d: n = {n}");
        println!("integral: {value:?} (exact: 0)");
        eprintln!(
            "{} rank(s) on {}: {:.1} ms",
            cluster.size(),
            dev.name(),
            elapsed.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
