//! `cargo xtask mutants`: mutation testing of the safety nets, with cargo-mutants.
//!
//! The files that keep safe programs from undefined behaviour and report bad input (launch
//! configurations, device arrays, views, checked mode's shadow memory, coroutine stacks) are
//! mutated one change at a time, and the tests that guard them run against each mutant: a
//! mutant that no test catches is a bug that would ship unnoticed. Every mutant takes a build
//! and a test run (some forty seconds on two cores), so one run takes a shard of them (one of
//! forty, about a dozen), a different one each day unless `--shard` says which; `--all` takes
//! every one (some five hours). The score and the mutants no test
//! caught are printed at the end; run it before a change to these files lands.
//!
//! The views of `view.rs` are written by `macro_rules!`, where cargo-mutants makes no mutants:
//! their index checks and lengths are guarded by unit tests that were checked by mutating them
//! by hand.
//!
//! cargo-mutants is installed with `cargo install cargo-mutants --locked` when it is not on
//! `PATH`.

use std::path::Path;

use crate::util::{self, Context, Result};

/// The files mutated.
const FILES: [&str; 5] = [
    "kernel-runtime/src/host/launch.rs",
    "kernel-runtime/src/host/array.rs",
    "kernel-runtime/src/view.rs",
    "kernel-runtime/src/cpu/check/lane.rs",
    "kernel-runtime/src/cpu/fibers.rs",
];

/// The tests run against each mutant: every library's unit tests and the integration tests
/// that exercise these files (the compile-fail suite and the examples are left out: no mutant
/// of these files changes what compiles).
const TESTS: [&str; 7] = [
    "--lib",
    "--test=checked",
    "--test=cpu_stack",
    "--test=kernels",
    "--test=warp",
    "--test=fake_driver",
    "--test=devices",
];

/// Shards a day's run takes one of: about a dozen mutants, at some forty seconds each on two
/// cores once the scratch copy of the tree is built.
const SHARDS: u64 = 40;

/// Mutation testing of the safety nets with cargo-mutants
///
/// Mutates the safety nets (launch configurations, device arrays, views, checked mode's shadow
/// memory, coroutine stacks) with cargo-mutants, installed with `cargo install` when missing:
/// each mutant is built and the tests that guard these files run against it. Takes one shard
/// of forty (about a dozen mutants), a different one each day, unless --shard or --all says
/// otherwise; prints the score and every mutant no test caught.
/// Run it before a change to those files lands.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Test shard K of N (0-based) instead of the day's
    #[arg(long, value_name = "K/N", value_parser = parse_shard, group = "selection")]
    shard: Option<Selection>,
    /// Test every mutant (some five hours)
    #[arg(long, group = "selection")]
    all: bool,
    /// Only list the mutants
    #[arg(long, group = "selection")]
    list: bool,
}

/// Which mutants to test.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Selection {
    /// Shard `k` of `n` (0-based, as cargo-mutants counts).
    Shard(u64, u64),
    /// Every mutant.
    All,
    /// None: only list them.
    List,
}

impl Args {
    /// The mutants chosen: the day's shard (`today` in days since 1970) unless told otherwise.
    fn selection(&self, today: u64) -> Selection {
        match (&self.shard, self.all, self.list) {
            (Some(shard), _, _) => shard.clone(),
            (None, true, _) => Selection::All,
            (None, false, true) => Selection::List,
            (None, false, false) => Selection::Shard(today % SHARDS, SHARDS),
        }
    }
}

/// `K/N` with `K < N`.
fn parse_shard(text: &str) -> Result<Selection> {
    let bad = || String::from("expected K/N with 0 <= K < N, such as 3/10");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k >= n {
        return Err(bad());
    }
    Ok(Selection::Shard(k, n))
}

/// Runs `cargo xtask mutants`.
pub fn run(args: Args) -> Result {
    let today = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    let selection = args.selection(today);
    let ctx = Context::new();
    ensure_installed(&ctx)?;

    let out = util::target_dir(&ctx.root).join("mutants");
    let mut cmd = ctx.cargo([
        "mutants",
        "--workspace",
        "--no-shuffle",
        // Each mutant runs the workspace's tests named below, where the files' own package's
        // would leave out the integration tests; the baseline run, which cargo-mutants limits
        // to the mutated package, would refuse those names, so it is skipped (the suite
        // passes before any change lands) and the timeout is given instead of measured.
        "--test-workspace",
        "true",
        "--baseline=skip",
        "--timeout",
        "600",
        // Helpers of the files' own unit tests are not code under test.
        "--exclude-re",
        "tests::",
    ]);
    for file in FILES {
        cmd.args(["--file", file]);
    }
    match selection {
        Selection::List => {
            cmd.arg("--list");
            return util::run_status(&mut cmd);
        }
        Selection::Shard(k, n) => {
            cmd.arg(format!("--shard={k}/{n}"));
        }
        Selection::All => {}
    }
    cmd.arg("--output").arg(&out).arg("--").args(TESTS);
    println!("==> [xtask] {}", util::display_command(&cmd));
    let status = cmd
        .status()
        .map_err(|e| format!("could not start cargo mutants: {e}"))?;
    // cargo-mutants exits 2 when a mutant was missed and 3 on timeouts: the score says so.
    if !matches!(status.code(), Some(0 | 2 | 3)) {
        return Err(format!("cargo mutants failed ({status})"));
    }
    report(&out.join("mutants.out"))
}

/// Installs cargo-mutants unless cargo finds it.
fn ensure_installed(ctx: &Context) -> Result {
    let found = ctx
        .cargo(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Ok(());
    }
    println!("==> [xtask] cargo install cargo-mutants --locked");
    util::run_status(&mut ctx.cargo(["install", "cargo-mutants", "--locked"]))
}

/// Prints the score of the run whose results are in `dir`, and the mutants no test caught.
fn report(dir: &Path) -> Result {
    let lines = |name: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(name))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    };
    let (caught, missed) = (lines("caught.txt"), lines("missed.txt"));
    let (timeout, unviable) = (lines("timeout.txt"), lines("unviable.txt"));
    println!();
    println!(
        "{}",
        score(caught.len(), missed.len(), timeout.len(), unviable.len())
    );
    for m in &missed {
        println!("  missed: {m}");
    }
    Ok(())
}

/// The score line: caught (a timeout counts as caught: the mutant hangs the tests) of viable.
fn score(caught: usize, missed: usize, timeout: usize, unviable: usize) -> String {
    let viable = caught + missed + timeout;
    let percent = if viable == 0 {
        100.0
    } else {
        100.0 * (caught + timeout) as f64 / viable as f64
    };
    format!(
        "mutants: {} of {viable} caught ({percent:.1} %): {caught} by a failing test, \
         {timeout} by a timeout, {missed} missed; {unviable} did not build",
        caught + timeout
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(args: &[&str], today: u64) -> clap::error::Result<Selection> {
        util::parse_args::<Args>(args).map(|a| a.selection(today))
    }

    #[test]
    fn a_day_takes_one_shard_unless_told() {
        assert_eq!(selection(&[], 83).unwrap(), Selection::Shard(3, 40));
        assert_eq!(
            selection(&["--shard", "7/12"], 23).unwrap(),
            Selection::Shard(7, 12)
        );
        assert_eq!(selection(&["--all"], 0).unwrap(), Selection::All);
        assert_eq!(selection(&["--list"], 0).unwrap(), Selection::List);
        for bad in ["3", "3/3", "a/4", "-1/4"] {
            assert!(selection(&["--shard", bad], 0).is_err(), "{bad}");
        }
        assert!(selection(&["--shard"], 0).is_err());
        assert!(selection(&["--fast"], 0).is_err());
        assert!(selection(&["--all", "--list"], 0).is_err());
    }

    #[test]
    fn the_score_counts_timeouts_as_caught() {
        assert_eq!(
            score(160, 20, 8, 12),
            "mutants: 168 of 188 caught (89.4 %): 160 by a failing test, 8 by a timeout, 20 missed; 12 did not build"
        );
        assert!(score(0, 0, 0, 3).contains("(100.0 %)"));
    }
}
