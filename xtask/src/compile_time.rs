//! `cargo xtask compile-time`: how long the edit loop takes, as `benches/results/compile-DATE.md`.
//!
//! Four measurements, each the median of several runs on this machine:
//! (a) a crate of one kernel outside the workspace, its kernel edited, rebuilt in release (PTX
//! and host); (b) one kernel of `gpu-kernels` edited, that crate rebuilt in release (the
//! workspace's release profile, which compiles incrementally); (c) the same reference programs
//! written by hand as rayon loops (`xtask/rayon_reference.rs`), in a crate of their own, `add`
//! edited, rebuilt in release: the cost of the CPU code alone, with no DSL, which (b) is
//! measured against; (d) with `--fresh-clone`, `cargo xtask test` on a fresh clone of the
//! committed tree.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cpu_report::today;
use crate::util::{self, Context, Result};

/// Times the kernel edit loop and the test command
///
/// Writes benches/results/compile-DATE.md with each measurement's runs, median and goal.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Runs of each measurement (the median is reported)
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Also time `cargo xtask test` on a fresh clone (minutes a run)
    #[arg(long)]
    fresh_clone: bool,
}

/// One measurement: what was timed, its goal in seconds and the runs' times.
struct Measurement {
    what: &'static str,
    goal_s: f64,
    times: Vec<Duration>,
}

/// Runs `cargo xtask compile-time`.
pub fn run(args: Args) -> Result {
    let ctx = Context::new();
    let runs = args.runs.max(1);
    let mut rows = vec![
        Measurement {
            what: "(a) a one-kernel crate outside the workspace: kernel edited, release rebuild (PTX and host)",
            goal_s: 1.5,
            times: one_kernel_crate(&ctx, runs)?,
        },
        Measurement {
            what: "(b) one kernel of `gpu-kernels` edited: release rebuild of that crate",
            goal_s: 8.0,
            times: gpu_kernels_edit(&ctx, runs)?,
        },
        Measurement {
            what: "(c) the same programs as hand-written rayon loops (no DSL): `add` edited, release rebuild",
            goal_s: f64::INFINITY,
            times: rayon_reference(&ctx, runs)?,
        },
    ];
    if args.fresh_clone {
        rows.push(Measurement {
            what: "(d) `cargo xtask test` on a fresh clone",
            goal_s: 480.0,
            times: fresh_clone_test(&ctx, runs)?,
        });
    }
    let date = today();
    let path = ctx
        .root
        .join("benches")
        .join("results")
        .join(format!("compile-{date}.md"));
    let text = report(&date, &rows);
    std::fs::write(&path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("{text}");
    println!("written to {}", path.display());
    Ok(())
}

/// (a): a crate of one kernel in the target directory, built once, then edited and rebuilt.
fn one_kernel_crate(ctx: &Context, runs: usize) -> Result<Vec<Duration>> {
    let dir = util::target_dir(&ctx.root)
        .join("compile-time")
        .join("one-kernel");
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = |p: &str| ctx.root.join(p).display().to_string();
    let manifest = format!(
        "[package]\nname = \"one-kernel\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nkernel-runtime = {{ path = \"{}\" }}\n\n\
         [build-dependencies]\nkernel-build = {{ path = \"{}\" }}\n\n[workspace]\n",
        path("kernel-runtime"),
        path("kernel-build"),
    );
    write(&dir.join("Cargo.toml"), &manifest)?;
    write(
        &dir.join("build.rs"),
        "fn main() {\n    kernel_build::build();\n}\n",
    )?;
    let lib = dir.join("src").join("lib.rs");
    let kernel = |k: usize| {
        format!(
            "use kernel_runtime::prelude::*;\n\n#[kernel]\npub fn scale(x: &mut [f32]) {{\n    \
             let i = grid(1);\n    if i < x.len() {{\n        x[i] *= {k}.0;\n    }}\n}}\n"
        )
    };
    let build = || {
        let mut cmd = ctx.cargo(["build", "--release", "--quiet"]);
        cmd.current_dir(&dir);
        cmd
    };
    write(&lib, &kernel(1))?;
    util::run_status(&mut build())?;
    (0..runs)
        .map(|run| {
            write(&lib, &kernel(run + 2))?;
            time(&mut build())
        })
        .collect()
}

/// (c): the rayon reference programs in a crate in the target directory, built once, then
/// `add` edited (its sum's operands swapped, then back) and rebuilt.
fn rayon_reference(ctx: &Context, runs: usize) -> Result<Vec<Duration>> {
    let dir = util::target_dir(&ctx.root)
        .join("compile-time")
        .join("rayon-reference");
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    write(
        &dir.join("Cargo.toml"),
        "[package]\nname = \"rayon-reference\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nrayon = \"1\"\n\n[profile.release]\ncodegen-units = 4\n\n[workspace]\n",
    )?;
    let source = include_str!("../rayon_reference.rs");
    let (from, to) = ("|((c, a), b)| *c = a + b", "|((c, a), b)| *c = b + a");
    if !source.contains(from) {
        return Err(format!("xtask/rayon_reference.rs no longer holds `{from}`"));
    }
    let edited = source.replacen(from, to, 1);
    let lib = dir.join("src").join("lib.rs");
    let build = || {
        let mut cmd = ctx.cargo(["build", "--release", "--quiet"]);
        cmd.current_dir(&dir);
        cmd
    };
    write(&lib, source)?;
    util::run_status(&mut build())?;
    (0..runs)
        .map(|run| {
            write(&lib, if run % 2 == 0 { &edited } else { source })?;
            time(&mut build())
        })
        .collect()
}

/// (b): `add` of `gpu-kernels` edited (its sum's operands swapped, then back), the crate rebuilt;
/// the file is restored however the runs end.
fn gpu_kernels_edit(ctx: &Context, runs: usize) -> Result<Vec<Duration>> {
    let file = ctx.root.join("gpu-kernels").join("src").join("add_list.rs");
    let original =
        std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let (from, to) = ("c[i] = a[i] + b[i];", "c[i] = b[i] + a[i];");
    if !original.contains(from) {
        return Err(format!("{} no longer holds `{from}`", file.display()));
    }
    let edited = original.replacen(from, to, 1);
    let _restore = Restore {
        path: file.clone(),
        text: original.clone(),
    };
    let build = || ctx.cargo(["build", "--release", "--quiet", "-p", "gpu-kernels"]);
    util::run_status(&mut build())?;
    (0..runs)
        .map(|run| {
            write(&file, if run % 2 == 0 { &edited } else { &original })?;
            time(&mut build())
        })
        .collect()
}

/// (c): a fresh clone of the committed tree per run, `cargo xtask test` in it.
fn fresh_clone_test(ctx: &Context, runs: usize) -> Result<Vec<Duration>> {
    let base = util::target_dir(&ctx.root).join("compile-time");
    (0..runs)
        .map(|run| {
            let clone = base.join(format!("clone-{run}"));
            let _ = std::fs::remove_dir_all(&clone);
            let mut git = ctx.command("git");
            git.args(["clone", "--quiet"]).arg(&ctx.root).arg(&clone);
            util::run_status(&mut git)?;
            let mut test = ctx.cargo(["xtask", "test"]);
            test.current_dir(&clone);
            let took = time(&mut test);
            let _ = std::fs::remove_dir_all(&clone);
            took
        })
        .collect()
}

/// Puts a file's text back when dropped.
struct Restore {
    path: PathBuf,
    text: String,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.path, &self.text) {
            eprintln!("xtask: cannot restore {}: {e}", self.path.display());
        }
    }
}

fn write(path: &Path, text: &str) -> Result {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The wall time of `cmd`, which must succeed.
fn time(cmd: &mut Command) -> Result<Duration> {
    let start = Instant::now();
    util::run_status(cmd)?;
    Ok(start.elapsed())
}

/// The middle run (the lower middle of an even number).
fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[(sorted.len() - 1) / 2]
}

/// The report: a row per measurement with its runs, median, goal and verdict, and (b) against
/// (c), whose ratio the goal of (b) also bounds (at most 2).
fn report(date: &str, rows: &[Measurement]) -> String {
    let mut out = format!(
        "# Compile time, {date}\n\nMeasured by `cargo xtask compile-time` on this machine ({} \
         logical CPUs): the median of each measurement's runs.\n\n\
         | measurement | runs (s) | median (s) | goal (s) | verdict |\n| --- | --- | --- | --- | --- |\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for row in rows {
        let runs: Vec<String> = row
            .times
            .iter()
            .map(|t| format!("{:.1}", t.as_secs_f64()))
            .collect();
        let median = median(&row.times).as_secs_f64();
        let (goal, verdict) = match row.goal_s.is_finite() {
            true if median <= row.goal_s => (format!("≤ {}", row.goal_s), "met"),
            true => (format!("≤ {}", row.goal_s), "not met"),
            false => ("—".to_string(), "—"),
        };
        out.push_str(&format!(
            "| {} | {} | {median:.1} | {goal} | {verdict} |\n",
            row.what,
            runs.join(", "),
        ));
    }
    if let (Some(b), Some(c)) = (rows.get(1), rows.get(2)) {
        let ratio = median(&b.times).as_secs_f64() / median(&c.times).as_secs_f64();
        let verdict = if ratio <= 2.0 { "met" } else { "not met" };
        out.push_str(&format!(
            "\n(b) / (c), the DSL's edit loop against the same CPU code written by hand: \
             {ratio:.2} (goal ≤ 2: {verdict}).\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_run() {
        let s = Duration::from_secs;
        assert_eq!(median(&[s(5), s(1), s(3)]), s(3));
        assert_eq!(median(&[s(4), s(2)]), s(2));
    }

    #[test]
    fn the_report_gives_each_verdict() {
        let rows = [
            Measurement {
                what: "fast",
                goal_s: 2.0,
                times: vec![Duration::from_millis(1500)],
            },
            Measurement {
                what: "slow",
                goal_s: 2.0,
                times: vec![Duration::from_secs(3)],
            },
        ];
        let text = report("2026-01-01", &rows);
        assert!(text.contains("| fast | 1.5 | 1.5 | ≤ 2 | met |"), "{text}");
        assert!(
            text.contains("| slow | 3.0 | 3.0 | ≤ 2 | not met |"),
            "{text}"
        );
        assert!(!text.contains("(b) / (c)"), "{text}");
    }

    #[test]
    fn the_report_sets_the_dsl_against_hand_written_rayon() {
        let row = |what, goal_s, ms| Measurement {
            what,
            goal_s,
            times: vec![Duration::from_millis(ms)],
        };
        let text = report(
            "2026-01-01",
            &[
                row("a", 1.5, 700),
                row("b", 8.0, 6000),
                row("c", f64::INFINITY, 4000),
            ],
        );
        assert!(text.contains("| c | 4.0 | 4.0 | — | — |"), "{text}");
        assert!(
            text.contains("(b) / (c)") && text.contains("1.50 (goal ≤ 2: met)"),
            "{text}"
        );
    }
}

/// The rayon programs (c) times, as a module of the tests: the clippy and test runs check
/// that they compile and compute what the kernels do.
#[cfg(test)]
#[path = "../rayon_reference.rs"]
mod rayon_reference;

#[cfg(test)]
mod reference_tests {
    use super::rayon_reference as r;

    #[test]
    fn the_rayon_programs_compute_the_reference_results() {
        let (a, b) = (vec![1.0f32; 1000], vec![2.0f32; 1000]);
        let mut c = vec![0.0f32; 1000];
        r::add(&a, &b, &mut c);
        assert!(c.iter().all(|&v| v == 3.0));
        r::add_wide(&b, &b, &mut c);
        assert!(c.iter().all(|&v| v == 4.0));
        let x: Vec<i8> = (0..25).map(|v| v as i8).collect();
        let mut out = vec![0i8; 25];
        r::smooth(&x, &mut out, 5, 5);
        assert_eq!(out[6], 6);
        assert!((r::integrate2d(64)).abs() < 1e-9);
        assert!(r::integrate2d_blocks(64, 16).iter().sum::<f64>().abs() < 1e-9);
        let (m, k) = (3, 2);
        let mut prod = vec![0.0f32; 2 * m];
        r::matmul(
            &[1.0, 2.0, 3.0, 4.0],
            &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
            &mut prod,
            k,
            m,
        );
        assert_eq!(prod, [1.0, 2.0, 0.0, 3.0, 4.0, 0.0]);
        let mut keys: Vec<u32> = (0..100_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        r::quicksort(&mut keys);
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        let mut states = vec![r::Xoroshiro128p(1, 2); 4];
        let mut hits = vec![0u32; 4];
        r::pi_hits(&mut states, 1000, &mut hits);
        assert!(hits.iter().all(|&h| (700..=870).contains(&h)), "{hits:?}");
        let mut cube = vec![0.0f32; 8];
        r::fill_uniform_3d(&mut states, &mut cube, 2);
        assert!(cube.iter().all(|v| (0.0..1.0).contains(v)));
        let (mut u, mut next) = (vec![0.0, 1.0, 0.0], vec![0.0; 3]);
        r::heat_steps(1, 0.25, &mut u, &mut next);
        assert_eq!(u, [0.0, 0.5, 0.0]);
    }
}
