//! What the example programs share: flags, the problem-size line, timing, failing cleanly.
//!
//! Each example includes this file with `mod common;`; not every example uses every item.
#![allow(dead_code)]

use kernel_examples::cli::Args;
use kernel_runtime::{Device, DeviceKind};
use std::time::{Duration, Instant};

/// The error of an example's `run`: a library error, an I/O error or a message.
pub type BoxError = Box<dyn std::error::Error>;
/// The result of an example's `run`.
pub type Result<T = ()> = std::result::Result<T, BoxError>;

/// Runs an example's body: prints its error (with `Display`, not `Debug`) and exits with
/// status 1 when it fails.
pub fn main(name: &str, run: impl FnOnce(Args) -> Result) {
    let args = parse_args(name);
    if let Err(e) = run(args) {
        eprintln!("{name}: error: {e}");
        std::process::exit(1);
    }
}

/// The example's flags; `--help` prints them and exits 0, a bad flag exits 2.
fn parse_args(name: &str) -> Args {
    if std::env::args().skip(1).any(|a| a == "-h" || a == "--help") {
        println!(
            "usage: cargo run --release --example {name} -- [--n N] [--reps N] [--png]\n  \
             --n N     problem size (1000, 1e6 or 2^20)\n  \
             --reps N  timed kernel runs after the warm-up\n  \
             --png     (smooth) write smooth_in.png and smooth_out.png\n\
             KERNEL_DEVICE=cpu|cpu-checked|cuda|cuda:N picks the device"
        );
        std::process::exit(0);
    }
    match Args::from_env() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(2);
        }
    }
}

/// Ends the example with status 1 and a message saying what did not match.
pub fn mismatch(name: &str, what: impl std::fmt::Display) -> ! {
    eprintln!("{name}: FAILED: {what}");
    std::process::exit(1);
}

/// Whether `dev` is the CPU backend (checked mode included).
pub fn is_cpu(dev: &Device) -> bool {
    matches!(dev.kind(), DeviceKind::Cpu | DeviceKind::CpuChecked)
}

/// Prints the device line and chooses the problem size: `--n` when given, else `original` on
/// a GPU and `cpu_default` on the CPU backend (saying so when it is smaller than the original).
/// `describe` turns a size into words (`10000 × 10000 i8 image`). `--n 0` is an error.
pub fn problem_size(
    dev: &Device,
    args: &Args,
    cpu_default: usize,
    original: usize,
    describe: impl Fn(usize) -> String,
) -> Result<usize> {
    report("device", dev.name());
    Ok(match args.n {
        Some(0) => return Err("--n must be at least 1".into()),
        Some(n) => {
            report("problem", format!("{} (--n)", describe(n)));
            n
        }
        None if is_cpu(dev) && cpu_default < original => {
            report(
                "problem",
                format!(
                    "{}, the CPU backend's default; the GPU original is {} (--n {original})",
                    describe(cpu_default),
                    describe(original)
                ),
            );
            cpu_default
        }
        None => {
            report("problem", describe(original));
            original
        }
    })
}

/// A `Vec` of `n` elements from `f`, or an error (not an abort) when it cannot be allocated.
pub fn host_vec<T>(n: usize, mut f: impl FnMut(usize) -> T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| format!("cannot allocate {n} elements on the host"))?;
    v.extend((0..n).map(&mut f));
    Ok(v)
}

/// `n * m`, or an error saying the shape is too large.
pub fn area(n: usize, m: usize) -> Result<usize> {
    n.checked_mul(m)
        .ok_or_else(|| format!("a {n} × {m} array is too large").into())
}

/// Times `f` once.
pub fn time<R>(f: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
    let t = Instant::now();
    let r = f()?;
    Ok((r, t.elapsed()))
}

/// Kernel timings: the warm-up run and the runs after it.
pub struct Timing {
    /// The first run (it pays for first-touch page faults, thread-pool start-up, caches).
    pub warmup: Duration,
    /// The runs after the warm-up, in order.
    pub runs: Vec<Duration>,
    /// Whether the runs after the warm-up were left out because the warm-up was slow.
    pub slow: bool,
}

impl Timing {
    /// The median of the runs after the warm-up, else the warm-up itself.
    pub fn median(&self) -> Duration {
        if self.runs.is_empty() {
            return self.warmup;
        }
        let mut r = self.runs.clone();
        r.sort();
        let k = r.len();
        if k % 2 == 1 {
            r[k / 2]
        } else {
            (r[k / 2 - 1] + r[k / 2]) / 2
        }
    }

    /// `123.4 ms  (median of 5 runs after a warm-up of 130.2 ms; EXTRA)`.
    pub fn describe(&self, extra: &str) -> String {
        let how = match self.runs.len() {
            0 if self.slow => "one run, not repeated as it is slow: --reps N repeats it".into(),
            0 => "one run".into(),
            1 => format!("one run after a warm-up of {}", ms(self.warmup)),
            k => format!("median of {k} runs after a warm-up of {}", ms(self.warmup)),
        };
        let sep = if extra.is_empty() { "" } else { "; " };
        format!("{}  ({how}{sep}{extra})", ms(self.median()))
    }
}

/// Runs `f` (which times its own kernel work and returns the time) once as a warm-up, then
/// `--reps` times, or `default_reps` times when the warm-up took under a second.
pub fn measure(
    reps: Option<usize>,
    default_reps: usize,
    mut f: impl FnMut() -> Result<Duration>,
) -> Result<Timing> {
    let warmup = f()?;
    let slow = reps.is_none() && warmup >= Duration::from_secs(1);
    let reps = if slow {
        0
    } else {
        reps.unwrap_or(default_reps)
    };
    let mut runs = Vec::with_capacity(reps);
    for _ in 0..reps {
        runs.push(f()?);
    }
    Ok(Timing { warmup, runs, slow })
}

/// A duration in milliseconds, `12.345 ms`.
pub fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v < 10.0 {
        format!("{v:.3} ms")
    } else {
        format!("{v:.1} ms")
    }
}

/// Prints one timing line, aligned with the others.
pub fn report(label: &str, value: impl std::fmt::Display) {
    println!("{:<10} {value}", format!("{label}:"));
}

/// The median of `v`: its middle value, or the mean of its two middle ones.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let k = v.len();
    if k % 2 == 1 {
        v[k / 2]
    } else {
        (v[k / 2 - 1] + v[k / 2]) / 2.0
    }
}

/// The median time in ms between events around `f` on `dev`, over `reps` runs after one
/// warm-up.
pub fn kernel_ms(dev: &Device, reps: usize, mut f: impl FnMut() -> Result) -> Result<f64> {
    f()?;
    dev.synchronize()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = dev.event()?;
        f()?;
        let end = dev.event()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    Ok(median(times))
}
