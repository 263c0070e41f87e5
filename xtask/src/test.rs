//! `cargo xtask test`: the project's test command, and what CI runs on a fresh clone.
//!
//! Provisions the device toolchain and `ptxas` (unless `--no-provision`), then runs fmt, clippy,
//! rustdoc, the debug test suite and every release example, stopping at the first failure, and
//! prints a summary with each step's wall time.

use std::ffi::OsString;

use crate::util::{self, Context, Outcome, Result, Steps};
use crate::{imports, mpi, provision};

/// The project's test command (what CI runs)
///
/// Provisions the nvptx64 device toolchain (Debian packages rustc-web, cargo-web, rust-web-src
/// when no toolchain is usable) and ptxas (from the PyPI wheel nvidia-cuda-nvcc-cu12), then
/// runs, stopping at the first failure:
///   - cargo xtask imports (no crate's files or folders import each other in a circle)
///   - cargo fmt --all -- --check
///   - cargo clippy --workspace --all-targets -- -D warnings
///   - RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps
///   - cargo test --workspace [CARGO_TEST_ARGS...]
///   - cargo build --release --examples (with the `mpi` feature and tests/cluster.rs where
///     Open MPI is there: Debian's openmpi-bin, libopenmpi-dev, libclang-dev, installed first
///     where mpirun is missing), then every example with its default arguments
///   - clippy and rustdoc of the `mpi` feature, the distributed examples under mpirun -np 1, 2
///     and 4 (the same output each time), and jobs that lose a rank or fail ending in bounded
///     time
///
/// with KERNEL_REQUIRE_PTX=1 and KERNEL_PTXAS set for every step.
#[derive(Debug, Default, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Skip the release build and run of the examples
    #[arg(long)]
    quick: bool,
    /// Skip installing the toolchain and ptxas (an existing ptxas is still used)
    #[arg(long)]
    no_provision: bool,
    /// Arguments for `cargo test --workspace`
    #[arg(last = true, value_name = "CARGO_TEST_ARGS")]
    test_args: Vec<OsString>,
}

/// Runs `cargo xtask test`.
pub fn run(options: Args) -> Result {
    let mut ctx = Context::new();
    let mut steps = Steps::new();

    let ptxas = if options.no_provision {
        steps.skip("provision: device toolchain", "--no-provision");
        steps.skip("provision: ptxas", "--no-provision");
        provision::find_ptxas(&ctx.root)
    } else {
        // A missing toolchain or ptxas does not stop the run: with KERNEL_REQUIRE_PTX=1 the
        // build then fails and names what is missing, which is what CI is there to notice.
        steps.run_with("provision: device toolchain", Outcome::Warn, || {
            provision::device_toolchain()
                .map_err(|e| format!("{e}; the device build will fail under KERNEL_REQUIRE_PTX=1"))
        });
        provisioned(&mut steps, "provision: ptxas", || {
            provision::ptxas(&ctx.root)
        })
    };
    match &ptxas {
        Some(path) => ctx.set_env("KERNEL_PTXAS", path),
        None => eprintln!("xtask: warning: no ptxas available; KERNEL_PTXAS is not set"),
    }
    if !options.no_provision {
        provision_link_tools(&mut ctx, &mut steps);
    }
    ctx.set_env("KERNEL_REQUIRE_PTX", "1");
    // Open MPI first, so that the release build of the examples builds the `mpi` feature's too,
    // once for both.
    let mpi = !options.quick && mpi::provision(!options.no_provision, &mut steps);

    run_checks(&ctx, &options, mpi, &mut steps);

    println!();
    print!("{}", steps.summary("test"));
    if steps.failed() {
        Err("`cargo xtask test` failed; see the summary above".into())
    } else {
        Ok(())
    }
}

/// NVRTC, for the tests that load a module whose CUDA C++ is compiled at run time (on
/// `LD_LIBRARY_PATH`), `nvlink`, for the offline check that foreign code links
/// (`KERNEL_NVLINK`), and `nvdisasm`, for a kernel's SASS (`KERNEL_NVDISASM`). Without them
/// those tests check less, and say so.
fn provision_link_tools(ctx: &mut Context, steps: &mut Steps) {
    if let Some(dir) = provisioned(steps, "provision: NVRTC", || provision::nvrtc(&ctx.root)) {
        let mut paths = vec![dir];
        paths.extend(std::env::split_paths(
            &std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
        ));
        if let Ok(joined) = std::env::join_paths(paths) {
            ctx.set_env("LD_LIBRARY_PATH", joined);
        }
    }
    if let Some(path) = provisioned(steps, "provision: nvlink", || provision::nvlink(&ctx.root)) {
        ctx.set_env("KERNEL_NVLINK", path);
    }
    let nvdisasm = || provision::nvdisasm(&ctx.root);
    if let Some(path) = provisioned(steps, "provision: nvdisasm", nvdisasm) {
        ctx.set_env("KERNEL_NVDISASM", path);
    }
}

/// Runs the provisioning step `name`, whose failure warns without stopping the run: the path
/// it gives, or `None`.
fn provisioned(
    steps: &mut Steps,
    name: &str,
    provide: impl FnOnce() -> Result<std::path::PathBuf>,
) -> Option<std::path::PathBuf> {
    let mut found = None;
    steps.run_with(name, Outcome::Warn, || {
        let path = provide()?;
        let note = path.display().to_string();
        found = Some(path);
        Ok(note)
    });
    found
}

/// The checks proper: every step after the first failure is recorded as skipped. With `mpi`
/// (Open MPI is there), the release build is the `mpi` feature's, which the MPI steps reuse.
fn run_checks(ctx: &Context, options: &Args, mpi: bool, steps: &mut Steps) {
    let mut plan: Vec<(String, std::process::Command)> = vec![
        (
            "cargo fmt --all -- --check".into(),
            ctx.cargo(["fmt", "--all", "--", "--check"]),
        ),
        (
            "cargo clippy --workspace --all-targets -- -D warnings".into(),
            ctx.cargo([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        ),
    ];
    // Broken intra-doc links (to a renamed or private item) fail here, not on a reader.
    let mut doc = ctx.cargo(["doc", "--workspace", "--no-deps"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    plan.push((
        "RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps".into(),
        doc,
    ));
    let mut test = ctx.cargo(["test", "--workspace"]);
    test.args(&options.test_args);
    plan.push((util::display_command(&test), test));

    // The distributed examples need the `mpi` feature and run under `mpirun` (`mpi`).
    let examples: Vec<String> = util::discover_targets(&ctx.root.join("examples"))
        .into_iter()
        .filter(|name| !mpi::EXAMPLES.iter().any(|(m, _)| m == name))
        .collect();
    if !options.quick {
        let features: &[&str] = if mpi { &["--features", "mpi"] } else { &[] };
        let mut build = ctx.cargo(["build", "--release", "--examples"]);
        build.args(features);
        if mpi {
            build.args(["--test", "cluster"]);
        }
        plan.push((util::display_command(&build), build));
        for name in &examples {
            let mut run = ctx.cargo(["run", "--release", "--example", name]);
            run.args(features);
            plan.push((format!("example {name}"), run));
        }
    }

    // The import graph first: it reads the sources alone, in a second.
    let mut failed = !steps.run_with("imports: no circle", Outcome::Fail, || {
        imports::check(&ctx.root).map(|lines| lines.replace('\n', "; "))
    });
    for (name, mut cmd) in plan {
        if failed {
            steps.skip(&name, "after an earlier failure");
        } else if !steps.run_command(&name, &mut cmd) {
            failed = true;
        }
    }
    if options.quick {
        steps.skip("release examples", "--quick");
        steps.skip("MPI", "--quick");
    } else if failed {
        steps.skip("MPI", "after an earlier failure");
    } else {
        // Open MPI was provisioned above: where mpirun is still missing, this records the skip.
        mpi::run_steps(ctx, false, steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags_and_passthrough() {
        let o: Args = util::parse_args(&["--quick", "--no-provision", "--", "-p", "x"]).unwrap();
        assert!(o.quick && o.no_provision);
        assert_eq!(o.test_args, ["-p", "x"]);
        let o: Args = util::parse_args(&[]).unwrap();
        assert!(!o.quick && !o.no_provision && o.test_args.is_empty());
        // Flags after `--` belong to cargo test.
        let o: Args = util::parse_args(&["--", "--quick"]).unwrap();
        assert!(!o.quick);
        assert!(util::parse_args::<Args>(&["--bogus"]).is_err());
        assert!(util::parse_args::<Args>(&["stray"]).is_err());
    }
}
