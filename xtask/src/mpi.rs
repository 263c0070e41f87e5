//! The MPI steps of `cargo xtask test`: Open MPI and what the `mpi` crate needs to build
//! (Debian's `openmpi-bin`, `libopenmpi-dev`, `libclang-dev`), clippy and rustdoc of the `mpi`
//! feature, the distributed examples under `mpirun -np 1`, `2` and `4` on the CPU backend with
//! the same output each time, the collectives' checks (`tests/cluster.rs`) likewise, on the CPU
//! backend and on fake GPUs (through the fake NCCL, and through MPI), and a job that loses a
//! rank (killed), fails on every rank, or fails on one rank while the others wait for it, or
//! asks for NCCL where ranks share a GPU, ending within a bounded time, never hanging.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{self, Context, Result, Steps};
use crate::{bundle, provision};

/// The examples that need the `mpi` feature and run under `mpirun`, with small arguments.
pub const EXAMPLES: [(&str, &[&str]); 2] = [
    ("dist_smooth", &["--n", "600", "--reps", "12"]),
    ("dist_integrate2d", &["--n", "2048"]),
];

/// How long a job that lost a rank may take to end.
const BOUND: Duration = Duration::from_secs(60);

/// The MPI steps of `cargo xtask test` alone
///
/// Installs Open MPI where mpirun is missing (unless --no-provision), then checks the `mpi`
/// feature with clippy and rustdoc, runs the distributed examples under mpirun -np 1, 2 and 4
/// on the CPU backend (the same output each time), and checks that a job that loses a rank,
/// or whose ranks fail, ends within a bounded time.
#[derive(Debug, Default, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Do not install Open MPI
    #[arg(long)]
    no_provision: bool,
}

/// Runs `cargo xtask mpi`.
pub fn run(options: Args) -> Result {
    let ctx = Context::new();
    let mut steps = Steps::new();
    run_steps(&ctx, !options.no_provision, &mut steps);
    println!();
    print!("{}", steps.summary("mpi"));
    match steps.failed() {
        true => Err("`cargo xtask mpi` failed; see the summary above".into()),
        false => Ok(()),
    }
}

/// Installs Open MPI where mpirun is missing, if `install`; whether mpirun is there.
pub fn provision(install: bool, steps: &mut Steps) -> bool {
    if install && util::find_in_path("mpirun").is_none() {
        steps.run("provision: Open MPI", || {
            provision::install_debian_packages(&["openmpi-bin", "libopenmpi-dev", "libclang-dev"])
        });
    }
    util::find_in_path("mpirun").is_some()
}

/// Runs the MPI steps (installing Open MPI first where `provision_mpi`); every step after a
/// failure is skipped.
pub fn run_steps(ctx: &Context, provision_mpi: bool, steps: &mut Steps) {
    if !provision(provision_mpi, steps) {
        steps.skip("MPI", "no mpirun");
        return;
    }
    let mut clippy = ctx.cargo(["clippy", "-p", "kernel-runtime", "--features", "mpi"]);
    clippy.args(["--all-targets", "--", "-D", "warnings"]);
    let mut doc = ctx.cargo([
        "doc",
        "-p",
        "kernel-runtime",
        "--features",
        "mpi",
        "--no-deps",
    ]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    let unit = ctx.cargo([
        "test",
        "-p",
        "kernel-runtime",
        "--features",
        "mpi",
        "--lib",
        "--",
        "cluster",
        "columns",
        "nccl",
    ]);
    for (name, mut cmd) in [
        ("cargo clippy -p kernel-runtime --features mpi", clippy),
        ("cargo doc -p kernel-runtime --features mpi", doc),
        (
            "cargo test -p kernel-runtime --features mpi --lib (cluster, columns, nccl)",
            unit,
        ),
    ] {
        if !steps.run_command(name, &mut cmd) {
            return;
        }
    }
    let mut built = Vec::new();
    let ok = steps.run(
        "cargo build --release --features mpi (examples, tests/cluster.rs)",
        || {
            let mut args = vec![
                "build",
                "--release",
                "--features",
                "mpi",
                "--test",
                "cluster",
            ];
            EXAMPLES
                .iter()
                .for_each(|(name, _)| args.extend(["--example", name]));
            built = bundle::cargo_executables(ctx, &args)?;
            Ok(())
        },
    );
    let path = |target: &str| {
        built
            .iter()
            .find(|a| a.target == target)
            .map(|a| a.executable.clone())
    };
    if !ok {
        return;
    }
    let Some(cluster) = path("cluster") else {
        steps.run("tests/cluster.rs", || {
            Err("cargo built no `cluster` test".into())
        });
        return;
    };
    let ok = steps.run_with(
        "mpirun -np 1, 2, 4: tests/cluster.rs",
        util::Outcome::Fail,
        || same_output_for_any_rank_count(ctx, &cluster, &[], &|_| {}),
    );
    if !ok {
        return;
    }
    let mut fakes = None;
    let ok = steps.run("cargo build --release -p fake-cuda", || {
        fakes = Some(fake_libraries(ctx)?);
        Ok(())
    });
    let Some(fakes) = fakes.filter(|_| ok) else {
        return;
    };
    for (name, nccl) in [("NCCL", "1"), ("MPI", "0")] {
        let ok = steps.run_with(
            &format!("mpirun -np 1, 2, 4 on fake GPUs through {name}: tests/cluster.rs"),
            util::Outcome::Fail,
            || {
                let setup = |cmd: &mut Command| {
                    on_fake_gpus(cmd, &fakes, 4);
                    cmd.env("KERNEL_NCCL", nccl).env("EXPECT_NCCL", nccl);
                };
                same_output_for_any_rank_count(ctx, &cluster, &[], &setup)
            },
        );
        if !ok {
            return;
        }
    }
    let ok = steps.run_with(
        "mpirun: a failing NCCL call ends the job",
        util::Outcome::Fail,
        || {
            let mut job = mpirun(ctx, 2, &cluster, &[]);
            on_fake_gpus(&mut job, &fakes, 4);
            job.env("KERNEL_NCCL", "1")
                .env("FAKE_CUDA_FAIL", "ncclAllReduce=5@2");
            failing_job_ends(job)
        },
    );
    if !ok {
        return;
    }
    let ok = steps.run_with(
        "mpirun: KERNEL_NCCL=1 with two ranks on one GPU fails",
        util::Outcome::Fail,
        || {
            let mut job = mpirun(ctx, 2, &cluster, &[]);
            on_fake_gpus(&mut job, &fakes, 1);
            job.env("KERNEL_NCCL", "1");
            failing_job_ends(job)
        },
    );
    if !ok {
        return;
    }
    for (name, args) in EXAMPLES {
        let Some(program) = path(name) else {
            steps.run(name, || Err(format!("cargo built no example `{name}`")));
            return;
        };
        let ok = steps.run_with(
            &format!("mpirun -np 1, 2, 4: {name}"),
            util::Outcome::Fail,
            || same_output_for_any_rank_count(ctx, &program, args, &|_| {}),
        );
        if !ok {
            return;
        }
    }
    let Some(smooth) = path(EXAMPLES[0].0) else {
        return;
    };
    let killed = || killed_rank_ends_the_job(ctx, &smooth);
    if !steps.run_with(
        "mpirun: a rank killed ends the job",
        util::Outcome::Fail,
        killed,
    ) {
        return;
    }
    let all_fail = || failing_job_ends(mpirun(ctx, 2, &smooth, &["--n", "2"]));
    if !steps.run_with(
        "mpirun: a job whose ranks fail ends",
        util::Outcome::Fail,
        all_fail,
    ) {
        return;
    }
    steps.run_with(
        "mpirun: one failing rank ends the others",
        util::Outcome::Fail,
        || {
            let mut job = mpirun(ctx, 4, &cluster, &[]);
            job.env("FAIL_ON_RANK", "2");
            failing_job_ends(job)
        },
    );
}

/// `mpirun -np N PROGRAM ARGS` on the CPU backend, oversubscribed, unbound (so that each rank
/// may use every core), as root where this runs as root.
fn mpirun(ctx: &Context, ranks: usize, program: &Path, args: &[&str]) -> Command {
    let mut cmd = ctx.command("mpirun");
    if provision::is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args([
        "--oversubscribe",
        "--bind-to",
        "none",
        "-np",
        &ranks.to_string(),
    ])
    .arg(program)
    .args(args)
    .env("KERNEL_DEVICE", "cpu")
    .stdin(Stdio::null());
    cmd
}

/// Builds the fake driver and gives it the names of the CUDA driver and NCCL in a directory of
/// its own, where the ranks' logs go too; that directory.
fn fake_libraries(ctx: &Context) -> Result<PathBuf> {
    let mut build = ctx.cargo(["build", "--release", "-p", "fake-cuda"]);
    util::run_status(&mut build)?;
    let target = util::target_dir(&ctx.root);
    let lib = target.join("release").join("libfake_cuda.so");
    let dir = target.join("fake-gpus");
    // Fresh each run: the ranks' logs are named by process id.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for name in ["libcuda.so", "libnccl.so"] {
        std::os::unix::fs::symlink(&lib, dir.join(name))
            .map_err(|e| format!("linking {name} to {}: {e}", lib.display()))?;
    }
    Ok(dir)
}

/// Makes `cmd`'s ranks compute on `gpus` fake GPUs each, their driver and NCCL the fake in
/// `fakes`, each logging for `tests/cluster.rs`'s check of the order of its streams. The fake
/// NCCL's meeting places (which a job that fails leaves behind) go to `fakes` too, which the
/// next run clears.
fn on_fake_gpus(cmd: &mut Command, fakes: &Path, gpus: u32) {
    cmd.env_remove("KERNEL_DEVICE")
        .env("FAKE_NCCL_DIR", fakes)
        .env("LD_LIBRARY_PATH", fakes)
        .env("FAKE_CUDA_DEVICES", gpus.to_string())
        .env("FAKE_CUDA_LOG", fakes.join("log.%p"));
}

/// Runs `program` on 1, 2 and 4 ranks, `setup` changing each job, and checks that its output
/// is the same each time.
fn same_output_for_any_rank_count(
    ctx: &Context,
    program: &Path,
    args: &[&str],
    setup: &dyn Fn(&mut Command),
) -> Result<String> {
    let mut first: Option<String> = None;
    for ranks in [1, 2, 4] {
        let mut job = mpirun(ctx, ranks, program, args);
        setup(&mut job);
        let out = job
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("could not start mpirun: {e}"))?;
        util::check_status(&format!("mpirun -np {ranks}"), out.status)?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        print!("-np {ranks}:\n{text}");
        match &first {
            None => first = Some(text),
            Some(one) if *one == text => {}
            Some(one) => {
                return Err(format!("-np {ranks} printed\n{text}\nand -np 1\n{one}"));
            }
        }
    }
    Ok("the same output on 1, 2 and 4 ranks".into())
}

/// How long the ranks run before one is killed: past `MPI_Init`. A rank killed while the
/// others still connect to `mpirun` can leave Open MPI 4.1's `mpirun` waiting for them forever
/// (seen once: "PMIX ERROR: UNREACHABLE"); the check is of a rank that dies mid-run.
const SETTLE: Duration = Duration::from_secs(2);

/// Starts a long job of 4 ranks, kills one rank once all have run for [`SETTLE`], and checks
/// that the job ends, failing, within [`BOUND`].
fn killed_rank_ends_the_job(ctx: &Context, program: &Path) -> Result<String> {
    let args = ["--n", "2000", "--reps", "100000000"];
    let mut job = mpirun(ctx, 4, program, &args)
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start mpirun: {e}"))?;
    wait_for_ranks(program, 4, &mut job)?;
    std::thread::sleep(SETTLE);
    let ranks = wait_for_ranks(program, 4, &mut job)?;
    let victim = ranks[1];
    Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    let start = Instant::now();
    let status = wait_bounded(&mut job, BOUND)?;
    if status.success() {
        return Err("the job succeeded although a rank was killed".into());
    }
    Ok(format!(
        "rank process {victim} killed; the job ended ({status}) {:.1} s later",
        start.elapsed().as_secs_f64()
    ))
}

/// Runs `job`, one whose ranks, or one of them, fail (an image too small to split; a rank told
/// to fail while the others wait for it), and checks that it ends, failing, within [`BOUND`].
fn failing_job_ends(mut job: Command) -> Result<String> {
    let mut job = job
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start mpirun: {e}"))?;
    let status = wait_bounded(&mut job, BOUND)?;
    match status.success() {
        true => Err("a job whose ranks failed exited with status 0".into()),
        false => Ok(format!("ended ({status})")),
    }
}

/// The process ids of `count` running copies of `program`, once there are that many.
fn wait_for_ranks(program: &Path, count: usize, job: &mut Child) -> Result<Vec<u32>> {
    let deadline = Instant::now() + BOUND;
    loop {
        let ranks = processes_of(program);
        if ranks.len() >= count {
            return Ok(ranks);
        }
        if job.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
            let _ = job.kill();
            return Err(format!("{count} ranks of {} never ran", program.display()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ids of the processes running `program`, from `/proc`.
fn processes_of(program: &Path) -> Vec<u32> {
    let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<u32> = entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let exe: PathBuf = std::fs::read_link(entry.path().join("exe")).ok()?;
            (exe == program).then_some(pid)
        })
        .collect();
    found.sort_unstable();
    found
}

/// Waits for `job` at most `bound`; past it the job is killed and that is an error.
fn wait_bounded(job: &mut Child, bound: Duration) -> Result<std::process::ExitStatus> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = job
            .try_wait()
            .map_err(|e| format!("waiting for mpirun: {e}"))?
        {
            return Ok(status);
        }
        if Instant::now() > deadline {
            let _ = job.kill();
            return Err(format!(
                "the job was still running {} s on",
                bound.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
