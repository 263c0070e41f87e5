//! Workspace automation, run as `cargo xtask <command>` (the alias lives in `.cargo/config.toml`).
//!
//! | command | what it does |
//! | --- | --- |
//! | `test` | provisions the device toolchain and `ptxas`, then runs fmt, clippy, the test suite and every example |
//! | `ptx` | builds the kernels to PTX and reports registers, spills, stack and shared memory per kernel |
//! | `bench` | runs every benchmark in `benches/`, the Numba peers, and writes the CPU report |
//! | `gpu-bundle DIR` | packs release examples and test binaries with a `run.sh` for a machine with a GPU |
//! | `mutants` | mutation testing of the safety nets with cargo-mutants, a shard a day, and the score |
//!
//! The crate depends on pure Rust crates only, so it builds on a fresh clone before anything
//! else has been provisioned.

mod bench;
mod bundle;
mod cpu_report;
mod mutants;
mod provision;
mod ptx;
mod ptxas_info;
mod test;
mod util;

use std::ffi::OsString;
use std::process::ExitCode;

/// The text printed by `cargo xtask help`.
const USAGE: &str = "\
Workspace automation for the kernel DSL.

USAGE:
    cargo xtask <COMMAND> [OPTIONS]

COMMANDS:
    test [--quick] [--no-provision] [-- CARGO_TEST_ARGS...]
        The project's test command (what CI runs). Provisions the nvptx64 device toolchain
        (Debian packages rustc-web, cargo-web, rust-web-src when no toolchain is usable) and
        ptxas (from the PyPI wheel nvidia-cuda-nvcc-cu12), then runs, stopping at the first
        failure:
            cargo fmt --all -- --check
            cargo clippy --workspace --all-targets -- -D warnings
            cargo test --workspace [CARGO_TEST_ARGS...]
            cargo build --release --examples, then every example with its default arguments
        with KERNEL_REQUIRE_PTX=1 and KERNEL_PTXAS set for every step.
            --quick          skip the release examples
            --no-provision   skip installing the toolchain and ptxas (an existing ptxas is still used)

    ptx [--arch sm_XX]... [--no-build]
        Builds gpu-kernels with KERNEL_REQUIRE_PTX=1, assembles the PTX of every crate with
        kernels using ptxas (sm_70, sm_80 and sm_90 unless --arch is given) and prints registers,
        spill stores/loads, stack frame and static shared memory per kernel.

    bench [NAME...] [-- CARGO_BENCH_ARGS...]
        Runs `cargo bench --bench NAME` for every file in benches/ (or only the NAMEs given).
        Arguments after `--` are appended to each cargo bench command, so
        `cargo xtask bench -- -- --quick` passes --quick to the benchmark harness.

    gpu-bundle DIR [--arch sm_NN] [--exclude TARGET]... [--no-strip] [--no-provision]
        Builds the release examples and release test binaries, copies them (stripped) to DIR/bin
        and writes DIR/run.sh, which runs each one on a machine with a GPU, logs to DIR/log and
        writes DIR/summary.txt. Fails when the bundle exceeds 64 MiB.

    mutants [--shard K/N | --all | --list]
        Mutation testing of the safety nets (launch configurations, device arrays, views,
        checked mode's shadow memory, coroutine stacks) with cargo-mutants, installed from
        crates.io when missing: each mutant is built and the tests that guard these files run
        against it. Takes one shard of forty (about a dozen mutants), a different one each
        day, unless --shard K/N (0-based) or --all says otherwise; prints the score and every
        mutant no test caught.
        Run it before a change to those files lands.

    help
        Prints this text.

ENVIRONMENT:
    KERNEL_NVPTX_RUSTC   rustc to use for the device build (counts as a usable toolchain)
    KERNEL_PTXAS         ptxas to use (otherwise PATH, then the tool cache)
    KERNEL_TOOLS_DIR     tool cache (default: <workspace>/target/tools)
";

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let command = args.remove(0);
    let result = match command.to_str().unwrap_or("") {
        "test" => test::run(args),
        "ptx" => ptx::run(args),
        "bench" => bench::run(args),
        "gpu-bundle" => bundle::run(args),
        "mutants" => mutants::run(args),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!(
            "unknown command `{other}`; run `cargo xtask help` for the list"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: error: {message}");
            ExitCode::FAILURE
        }
    }
}
