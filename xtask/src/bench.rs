//! `cargo xtask bench`: runs the benchmarks in `benches/`, one `cargo bench --bench NAME` each,
//! and prints a summary with their wall times.
//!
//! The benchmarks are discovered from the directory, so a new file there is picked up without
//! touching this command. Later steps (collecting criterion's results, comparing the CPU and GPU
//! backends) belong after the loop in [`run`].

use std::ffi::OsString;

use crate::provision;
use crate::util::{self, Context, Result, Steps};

/// Options of `cargo xtask bench`.
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    /// Benchmarks to run; all of them when empty.
    names: Vec<String>,
    /// Arguments appended to every `cargo bench` command.
    cargo_args: Vec<OsString>,
}

/// Parses `[NAME...] [-- CARGO_BENCH_ARGS...]`.
fn parse_args(args: Vec<OsString>) -> Result<Options> {
    let (names, cargo_args) = util::split_at_dashes(args);
    let names = names
        .into_iter()
        .map(|n| match n.to_str() {
            Some(s) if !s.starts_with('-') => Ok(s.to_string()),
            _ => Err(format!(
                "unknown option {} for `cargo xtask bench` (arguments for cargo bench go after `--`)",
                n.to_string_lossy()
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Options { names, cargo_args })
}

/// Runs `cargo xtask bench`.
pub fn run(args: Vec<OsString>) -> Result {
    let options = parse_args(args)?;
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

    // The CPU peer of smooth, in the same run (it says so itself when numba is missing).
    if options.names.is_empty() || options.names.iter().any(|n| n == "cpu_backend") {
        let script = ctx.root.join("benches/peers/smooth_numba.py");
        if script.is_file() {
            let mut cmd = ctx.command("python3");
            cmd.arg(&script);
            steps.run_command("peer smooth_numba", &mut cmd);
        }
    }

    println!();
    print!("{}", steps.summary("bench"));
    if steps.failed() {
        Err("some benchmarks failed; see the summary above".into())
    } else {
        Ok(())
    }
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
        let args = ["smooth", "--", "--", "--quick"]
            .map(OsString::from)
            .to_vec();
        let o = parse_args(args).unwrap();
        assert_eq!(o.names, ["smooth"]);
        assert_eq!(o.cargo_args, ["--", "--quick"].map(OsString::from));
        assert!(parse_args(vec!["--bogus".into()]).is_err());
    }

    #[test]
    fn selects_benchmarks() {
        let all = ["add".to_string(), "smooth".to_string()];
        assert_eq!(select(&all, &[]).unwrap(), all);
        assert_eq!(select(&all, &["smooth".into()]).unwrap(), ["smooth"]);
        assert!(select(&all, &["nope".into()]).is_err());
    }
}
