//! `cargo xtask bench`: runs the benchmarks in `benches/`, one `cargo bench --bench NAME` each,
//! and prints a summary with their wall times.
//!
//! The benchmarks are discovered from the directory, so a new file there is picked up without
//! touching this command. After `cpu_backend`, the Numba peers run (from a virtual environment
//! under the target directory that this command makes, with numba, matplotlib and scipy from PyPI) and
//! the report `benches/results/cpu-DATE.md` is written with its chart `cpu-DATE.png`.

use std::ffi::OsString;

use crate::cpu_report::{self, Row, PROGRAMS};
use crate::provision;
use crate::util::{self, Context, Outcome, Result, Steps};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the benchmarks in benches/
///
/// Runs `cargo bench --bench NAME` for every file in benches/ (or only the NAMEs given).
/// Arguments after `--` are appended to each cargo bench command, so
/// `cargo xtask bench -- -- --quick` passes --quick to the benchmark harness.
/// After cpu_backend, the Numba peers run and benches/results/cpu-DATE.md is written.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Benchmarks to run (all of them when none is given)
    #[arg(value_name = "NAME")]
    names: Vec<String>,
    /// Arguments appended to every `cargo bench` command
    #[arg(last = true, value_name = "CARGO_BENCH_ARGS")]
    cargo_args: Vec<OsString>,
}

/// Runs `cargo xtask bench`.
pub fn run(options: Args) -> Result {
    let mut ctx = Context::new();
    if let Some(ptxas) = provision::find_ptxas(&ctx.root) {
        ctx.set_env("KERNEL_PTXAS", ptxas);
    }

    let available = util::discover_targets(&ctx.root.join("benches"));
    let selected = select(&available, &options.names)?;
    if selected.is_empty() {
        println!("no benchmarks in benches/");
        return Ok(());
    }

    let mut steps = Steps::new();
    for name in &selected {
        let mut cmd = ctx.cargo(["bench", "--bench", name]);
        cmd.args(&options.cargo_args);
        steps.run_command(&format!("bench {name}"), &mut cmd);
    }

    // The Numba peers and the report, in the same run as the CPU benchmarks.
    if selected.iter().any(|n| n == "cpu_backend") {
        cpu_peers_and_report(&ctx, &mut steps);
    }

    println!();
    print!("{}", steps.summary("bench"));
    if steps.failed() {
        Err("some benchmarks failed; see the summary above".into())
    } else {
        Ok(())
    }
}

/// Runs the Numba peers (when a Python with numba can be had) and writes the CPU report from
/// criterion's results and theirs.
fn cpu_peers_and_report(ctx: &Context, steps: &mut Steps) {
    let mut peers = Vec::new();
    let mut python = None;
    let mut note = String::from("the Numba peers did not run");
    steps.run_with("numba environment", Outcome::Warn, || {
        let py = numba_python(ctx)?;
        python = Some(py);
        Ok(String::new())
    });
    match &python {
        Some(py) => {
            let script = ctx.root.join("benches/peers/numba_cpu.py");
            steps.run_with("peers numba_cpu", Outcome::Warn, || {
                let out = capture(ctx.command(py).arg(&script))?;
                peers = cpu_report::parse_peer_lines(&out);
                note = format!("{} Numba results", peers.len());
                Ok(note.clone())
            });
        }
        None => println!("numba peers skipped: no Python environment with numba (see above)"),
    }
    steps.run("cpu report", || {
        let criterion = util::target_dir(&ctx.root).join("criterion");
        let rows: Vec<_> = PROGRAMS
            .iter()
            .map(|p| {
                let peer = |name: &str| {
                    peers
                        .iter()
                        .find(|t| p.peer == Some(t.program.as_str()) && t.peer.starts_with(name))
                        .cloned()
                };
                let row = Row {
                    ours_ms: cpu_report::criterion_median_ms(&criterion, p.group, p.function),
                    rayon_ms: cpu_report::criterion_median_ms(&criterion, p.group, "rayon"),
                    numba: peer("numba.njit"),
                    simulator: peer("numba CUDA simulator"),
                    scipy: peer("scipy.ndimage").filter(|_| p.name.contains("#[stencil]")),
                };
                (p, row)
            })
            .collect();
        let date = cpu_report::today();
        let dir = ctx.root.join("benches/results");
        let machine = machine();
        let peers_note = if peers.is_empty() {
            "not run: numba was not available".to_string()
        } else {
            "numba.njit(parallel=True) at the same sizes, Numba's CUDA simulator at small ones"
                .to_string()
        };
        let md = dir.join(format!("cpu-{date}.md"));
        let mut text = cpu_report::markdown(&date, &machine, &peers_note, &rows);
        let checked: Vec<_> = cpu_report::CHECKED_PROGRAMS
            .iter()
            .map(|&(name, size)| {
                let time = |mode: &str| {
                    cpu_report::criterion_median_ms(
                        &criterion,
                        "checked",
                        &format!("{name}_{mode}"),
                    )
                };
                (name, size, time("fast"), time("checked"))
            })
            .collect();
        text.push_str(&cpu_report::checked_section(&checked));
        text.push_str(&cpu_report::scipy_section(&rows));
        std::fs::write(&md, &text).map_err(|e| format!("writing {}: {e}", md.display()))?;
        print!("{text}");
        let json = util::target_dir(&ctx.root).join(format!("cpu-ratios-{date}.json"));
        std::fs::write(&json, cpu_report::ratios_json(&rows))
            .map_err(|e| format!("writing {}: {e}", json.display()))?;
        if let Some(py) = &python {
            let png = dir.join(format!("cpu-{date}.png"));
            let chart = ctx.root.join("benches/peers/ratios_chart.py");
            let title = format!("CPU backend, {date}");
            let out = capture(ctx.command(py).arg(chart).arg(&json).arg(&png).arg(title))?;
            print!("{out}");
        }
        println!("wrote {}", md.display());
        Ok(())
    });
}

/// A Python with numba, matplotlib and scipy: `KERNEL_BENCH_PYTHON`, else a virtual environment
/// under the target directory, made (and filled from PyPI) when it is missing.
fn numba_python(ctx: &Context) -> Result<PathBuf> {
    if let Some(py) = std::env::var_os("KERNEL_BENCH_PYTHON") {
        return Ok(PathBuf::from(py));
    }
    let venv = util::target_dir(&ctx.root).join("bench-venv");
    let python = venv.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", "import numba, matplotlib, scipy"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if python.is_file() && has(&python) {
        return Ok(python);
    }
    let python3 = util::find_in_path("python3").ok_or("python3 is not installed")?;
    if !python.is_file() {
        util::run_status(ctx.command(&python3).arg("-m").arg("venv").arg(&venv))
            .map_err(|e| format!("python3 -m venv failed ({e}); Debian needs python3-venv"))?;
    }
    util::run_status(ctx.command(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "numba",
        "matplotlib",
        "scipy",
    ]))
    .map_err(|e| format!("pip install numba matplotlib scipy failed: {e}"))?;
    if has(&python) {
        Ok(python)
    } else {
        Err("numba, matplotlib or scipy does not import after installing them".into())
    }
}

/// Runs `cmd` and returns its standard output (standard error passes through).
/// The machine in words: its CPU's model where `/proc/cpuinfo` names it, its logical CPUs, and
/// which of the vector features that decide how the CPU backend's loops vectorize it has.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!(
        "{model}, {cpus} logical CPUs, vector features: {}",
        vector_features()
    )
}

#[cfg(target_arch = "x86_64")]
fn vector_features() -> String {
    let features = [
        ("sse4.2", std::arch::is_x86_feature_detected!("sse4.2")),
        ("avx2", std::arch::is_x86_feature_detected!("avx2")),
        ("fma", std::arch::is_x86_feature_detected!("fma")),
        ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
        ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
        ("avx512vl", std::arch::is_x86_feature_detected!("avx512vl")),
    ];
    let has: Vec<&str> = features.iter().filter(|f| f.1).map(|f| f.0).collect();
    let avx512 = features[3..].iter().all(|f| f.1);
    format!(
        "{} (the thread loops' AVX-512 copies {})",
        has.join(", "),
        if avx512 { "run" } else { "do not run" }
    )
}

#[cfg(not(target_arch = "x86_64"))]
fn vector_features() -> String {
    format!("those of {}", std::env::consts::ARCH)
}

fn capture(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start `{}`: {e}", util::display_command(cmd)))?;
    util::check_status(&util::display_command(cmd), out.status)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The benchmarks to run: all of `available`, or the `wanted` ones, which must exist.
fn select(available: &[String], wanted: &[String]) -> Result<Vec<String>> {
    if wanted.is_empty() {
        return Ok(available.to_vec());
    }
    for name in wanted {
        if !available.contains(name) {
            return Err(format!(
                "no benchmark `{name}` in benches/ (available: {})",
                available.join(", ")
            ));
        }
    }
    Ok(wanted.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_passthrough() {
        let o: Args = util::parse_args(&["smooth", "--", "--", "--quick"]).unwrap();
        assert_eq!(o.names, ["smooth"]);
        assert_eq!(o.cargo_args, ["--", "--quick"]);
        let o: Args = util::parse_args(&[]).unwrap();
        assert!(o.names.is_empty() && o.cargo_args.is_empty());
        assert!(util::parse_args::<Args>(&["--bogus"]).is_err());
    }

    #[test]
    fn selects_benchmarks() {
        let all = ["add".to_string(), "smooth".to_string()];
        assert_eq!(select(&all, &[]).unwrap(), all);
        assert_eq!(select(&all, &["smooth".into()]).unwrap(), ["smooth"]);
        assert!(select(&all, &["nope".into()]).is_err());
    }
}
