//! `cargo xtask compile-time`: how long the edit loop takes, as `benches/results/compile-DATE.md`.
//!
//! Three measurements, each the median of several runs on this machine:
//! (a) a crate of one kernel outside the workspace, its kernel edited, rebuilt in release (PTX
//! and host); (b) one kernel of `gpu-kernels` edited, that crate rebuilt in release; (c) with
//! `--fresh-clone`, `cargo xtask test` on a fresh clone of the committed tree.

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
            goal_s: 5.0,
            times: gpu_kernels_edit(&ctx, runs)?,
        },
    ];
    if args.fresh_clone {
        rows.push(Measurement {
            what: "(c) `cargo xtask test` on a fresh clone",
            goal_s: 300.0,
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

/// The report: a row per measurement with its runs, median, goal and verdict.
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
        let verdict = if median <= row.goal_s {
            "met"
        } else {
            "not met"
        };
        out.push_str(&format!(
            "| {} | {} | {median:.1} | ≤ {} | {verdict} |\n",
            row.what,
            runs.join(", "),
            row.goal_s
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
    }
}
