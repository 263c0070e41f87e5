//! Workspace automation, run as `cargo xtask <command>` (the alias lives in `.cargo/config.toml`).
//!
//! | command | what it does |
//! | --- | --- |
//! | `test` | provisions the device toolchain and `ptxas`, then runs fmt, clippy, the test suite and every example |
//! | `ptx` | builds the kernels to PTX and reports registers, spills, stack and shared memory per kernel |
//! | `bench` | runs every benchmark in `benches/`, the Numba peers, and writes the CPU report |
//! | `compile-time` | times a kernel's edit loop (and with `--fresh-clone` the test command), `benches/results/compile-DATE.md` |
//! | `gpu-bundle DIR` | packs release examples and test binaries with a `run.sh` for a machine with a GPU |
//! | `imports` | checks that no crate's files import each other in a circle |
//! | `mutants` | mutation testing of the safety nets with cargo-mutants, a shard a day, and the score |
//!
//! The crate depends on pure Rust crates only, so it builds on a fresh clone before anything
//! else has been provisioned.

mod bench;
mod bundle;
mod compile_time;
mod cpu_report;
mod imports;
mod mpi;
mod mutants;
mod provision;
mod ptx;
mod ptxas_info;
mod sass;
mod test;
mod util;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// The environment variables the commands read, shown after the list of commands.
const ENVIRONMENT: &str = "\
Environment:
  KERNEL_NVPTX_RUSTC  rustc to use for the device build (counts as a usable toolchain)
  KERNEL_PTXAS        ptxas to use (otherwise PATH, then the tool cache)
  KERNEL_TOOLS_DIR    tool cache (default: <workspace>/target/tools)";

/// Workspace automation for the kernel DSL.
#[derive(Debug, Parser)]
#[command(bin_name = "cargo xtask", after_help = ENVIRONMENT)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The commands.
#[derive(Debug, Subcommand)]
enum Command {
    Test(test::Args),
    Ptx(ptx::Args),
    Bench(bench::Args),
    CompileTime(compile_time::Args),
    GpuBundle(bundle::Args),
    Mutants(mutants::Args),
    Mpi(mpi::Args),
    Imports(imports::Args),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Some(Command::Test(args)) => test::run(args),
        Some(Command::Ptx(args)) => ptx::run(args),
        Some(Command::Bench(args)) => bench::run(args),
        Some(Command::CompileTime(args)) => compile_time::run(args),
        Some(Command::GpuBundle(args)) => bundle::run(args),
        Some(Command::Mutants(args)) => mutants::run(args),
        Some(Command::Mpi(args)) => mpi::run(args),
        Some(Command::Imports(args)) => imports::run(args),
        None => Cli::command()
            .print_help()
            .map_err(|e| format!("cannot print the help: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: error: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_is_named_as_before() {
        let names: Vec<_> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "test",
                "ptx",
                "bench",
                "compile-time",
                "gpu-bundle",
                "mutants",
                "mpi",
                "imports"
            ]
        );
        assert!(Cli::try_parse_from(["xtask"]).unwrap().command.is_none());
        assert!(Cli::try_parse_from(["xtask", "bogus"]).is_err());
    }
}
