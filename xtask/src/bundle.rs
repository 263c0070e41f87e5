//! `cargo xtask gpu-bundle DIR`: packs the optimised examples and test binaries into a
//! directory that can be copied to a machine with an NVIDIA GPU and run there with `DIR/run.sh`,
//! which needs neither cargo nor the sources.
//!
//! Layout:
//!
//! ```text
//! DIR/bin.tar.xz         bin/, packed; run.sh unpacks it on its first run:
//!   bin/example-NAME     examples (run without arguments)
//!   bin/test-NAME        integration test binaries (`tests/NAME.rs`)
//!   bin/unit-NAME        unit test binaries of library crates
//! DIR/run.sh             runs each binary, logs to DIR/log/BIN.log, writes DIR/summary.txt;
//!                        `run.sh bench` runs the GPU benchmark, `run.sh profile` reads the
//!                        hardware counters of its kernels
//! DIR/peers/             the benchmark's peers and scripts
//! ```
//!
//! Binaries are stripped when `strip` is available and packed with xz over a window larger than
//! any two of them: each binary carries the same PTX and cubins of the test kernels (13 MB with
//! their source lines), which xz then stores once (the 42 binaries, 1.6 GB, pack into 11.6 MiB,
//! where gzip's 32 KB window left 358 MiB). The whole directory must stay under 64 MiB.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::provision;
use crate::util::{self, Context, Result};

/// `bin/`, packed.
const PACKED_BIN: &str = "bin.tar.xz";

/// How xz packs `bin/`: its fastest preset, over a dictionary that holds more than two of the
/// largest binaries, so that what they share is stored once.
const XZ: &str = "xz -T1 --lzma2=preset=1,dict=192MiB";

/// The most the bundle directory may hold.
const MAX_BUNDLE_BYTES: u64 = 64 * 1024 * 1024;

/// Targets always left out: the automation itself has no business on a GPU machine; the fake
/// CUDA driver and its tests stand in for a GPU where there is none; and the tests that need
/// cargo, the sources or the nvptx64 toolchain (`compile_fail`, `device_build`, `own_crate`), or that check
/// host-side logic and PTX text only (`kernel_macros`, `kernel_build`, `ptx`), prove nothing
/// more there, and would take the bundle past its 64 MiB.
const DEFAULT_EXCLUDES: [&str; 9] = [
    "xtask",
    "fake_cuda",
    "fake_driver",
    "compile_fail",
    "device_build",
    "own_crate",
    "kernel_macros",
    "kernel_build",
    "ptx",
];

/// Packs the examples and test binaries for a machine with a GPU
///
/// Builds the examples and test binaries in the bench profile (optimised, whole), copies them
/// (stripped) to DIR/bin and writes DIR/run.sh, which runs each one on a machine with a GPU,
/// logs to DIR/log and writes DIR/summary.txt. Fails when the bundle exceeds 64 MiB.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The bundle directory
    dir: PathBuf,
    /// The GPU architecture to build the PTX for (KERNEL_PTX_ARCH)
    #[arg(long, value_name = "sm_NN")]
    arch: Option<String>,
    /// A target name (or bundle name) to leave out (repeatable)
    #[arg(long = "exclude", value_name = "TARGET")]
    excludes: Vec<String>,
    /// Keep the binaries' symbols
    #[arg(long)]
    no_strip: bool,
    /// Skip provisioning the device toolchain and ptxas
    #[arg(long)]
    no_provision: bool,
}

/// One executable that cargo reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Artifact {
    /// The target's name (`smooth`, `kernel_runtime`, `gpu`).
    pub(crate) target: String,
    /// The target's first kind (`example`, `lib`, `test`, `bin`, `proc-macro`).
    kind: String,
    /// Built as a test harness.
    test: bool,
    /// The path of the executable.
    pub(crate) executable: PathBuf,
}

impl Artifact {
    /// The file name in `DIR/bin`.
    fn bundle_name(&self) -> String {
        let prefix = match (self.kind.as_str(), self.test) {
            ("example", false) => "example",
            ("example", true) => "example-test",
            ("test", _) => "test",
            ("bin", _) => "bin",
            ("bench", _) => "bench",
            _ => "unit",
        };
        format!("{prefix}-{}", self.target)
    }
}

/// The fields of a cargo `--message-format=json` message that name an executable.
#[derive(Deserialize)]
struct Message {
    reason: String,
    executable: Option<PathBuf>,
    target: Option<MessageTarget>,
    #[serde(default)]
    profile: MessageProfile,
}

/// The `target` of a cargo message.
#[derive(Deserialize)]
struct MessageTarget {
    name: String,
    #[serde(default)]
    kind: Vec<String>,
}

/// The `profile` of a cargo message.
#[derive(Default, Deserialize)]
struct MessageProfile {
    #[serde(default)]
    test: bool,
}

/// The executables in cargo's `--message-format=json` output: `compiler-artifact` messages with
/// a non-null `executable`. Lines that are not JSON objects are skipped.
fn parse_artifacts(stdout: &str) -> Vec<Artifact> {
    stdout
        .lines()
        .filter(|line| line.trim_start().starts_with('{'))
        .filter_map(|line| serde_json::from_str::<Message>(line).ok())
        .filter(|m| m.reason == "compiler-artifact")
        .filter_map(|m| {
            let target = m.target?;
            Some(Artifact {
                kind: target.kind.into_iter().next().unwrap_or("unknown".into()),
                target: target.name,
                test: m.profile.test,
                executable: m.executable?,
            })
        })
        .collect()
}

/// Runs a cargo command with JSON messages on stdout (diagnostics still rendered on stderr) and
/// returns the executables it reported.
pub(crate) fn cargo_executables(ctx: &Context, args: &[&str]) -> Result<Vec<Artifact>> {
    let mut cmd = ctx.cargo(args);
    cmd.arg("--message-format=json-render-diagnostics")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let line = util::display_command(&cmd);
    println!("==> [xtask] {line}");
    let output = cmd
        .output()
        .map_err(|e| format!("could not start `{line}`: {e}"))?;
    util::check_status(&line, output.status)?;
    Ok(parse_artifacts(&String::from_utf8_lossy(&output.stdout)))
}

/// The binaries to bundle, named: examples from the first build, test harnesses from the second,
/// without excluded targets; a name taken twice gets a numeric suffix.
fn select(
    examples: Vec<Artifact>,
    tests: Vec<Artifact>,
    excludes: &[String],
) -> Vec<(String, Artifact)> {
    let excluded = |a: &Artifact| {
        let name = a.bundle_name();
        DEFAULT_EXCLUDES.contains(&a.target.as_str())
            || excludes.iter().any(|e| *e == a.target || *e == name)
    };
    let wanted = examples
        .into_iter()
        .filter(|a| a.kind == "example" && !a.test)
        .chain(tests.into_iter().filter(|a| a.test))
        .filter(|a| !excluded(a));
    let mut seen_paths = BTreeSet::new();
    let mut taken = BTreeSet::new();
    let mut chosen = Vec::new();
    for artifact in wanted {
        if !seen_paths.insert(artifact.executable.clone()) {
            continue;
        }
        let base = artifact.bundle_name();
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}-{n}");
            n += 1;
        }
        chosen.push((name, artifact));
    }
    chosen
}

/// Runs `cargo xtask gpu-bundle`.
pub fn run(options: Args) -> Result {
    let mut ctx = Context::new();
    let dir = std::env::current_dir()
        .map_err(|e| format!("no current directory: {e}"))?
        .join(&options.dir);

    if !options.no_provision {
        if let Err(e) = provision::device_toolchain() {
            eprintln!("xtask: warning: {e}; the build needs PTX and will fail");
        }
        if let Err(e) = provision::ptxas(&ctx.root) {
            eprintln!("xtask: warning: ptxas: {e}");
        }
    }
    if let Some(ptxas) = provision::find_ptxas(&ctx.root) {
        ctx.set_env("KERNEL_PTXAS", ptxas);
    }
    // A bundle for a GPU machine without PTX in it would test only the CPU backend.
    ctx.set_env("KERNEL_REQUIRE_PTX", "1");
    // PTX for the bundle's GPU (`sm_90` for a Hopper) lets ptxas use all of it; the default
    // (`sm_70`) runs on any GPU since Volta, which the driver compiles it for at load time.
    // The bundle's GPU also gets the machine code for it, assembled here: its first launches
    // load it instead of compiling the PTX (`KERNEL_JIT=1` there compiles the PTX anyway).
    if let Some(arch) = &options.arch {
        ctx.set_env("KERNEL_PTX_ARCH", arch);
        ctx.set_env("KERNEL_CUBIN_ARCHS", arch);
    }
    // Source lines in the PTX and cubins, for `run.sh profile`'s source counters: the same
    // instructions (the PTX differs by its `.loc` lines alone), each with its line. ptxas puts
    // the whole PTX text into a cubin of PTX with lines, and every binary carries its package's
    // modules; xz stores each once for all the binaries (see `pack_bin`).
    ctx.set_env("KERNEL_LINEINFO", "1");

    // The benchmarks' profile: the crates built whole, not in the release profile's
    // incremental units, so that the host code around the GPU's is at its fastest.
    let examples = cargo_executables(&ctx, &["build", "--profile", "bench", "--examples"])?;
    let tests = cargo_executables(
        &ctx,
        &["test", "--profile", "bench", "--workspace", "--no-run"],
    )?;
    let chosen = select(examples, tests, &options.excludes);
    if chosen.is_empty() {
        return Err("cargo reported no examples or test binaries to bundle".into());
    }

    prepare_dir(&dir)?;
    let bin = dir.join("bin");
    let strip = if options.no_strip {
        None
    } else {
        util::find_in_path("strip")
    };
    if strip.is_none() && !options.no_strip {
        eprintln!("xtask: warning: no `strip` found; bundling binaries with their symbols");
    }
    for (name, artifact) in &chosen {
        let dest = bin.join(name);
        std::fs::copy(&artifact.executable, &dest).map_err(|e| {
            format!(
                "copying {} to {}: {e}",
                artifact.executable.display(),
                dest.display()
            )
        })?;
        if let Some(strip) = &strip {
            let mut cmd = Command::new(strip);
            cmd.arg(&dest);
            util::run_status(&mut cmd)?;
        }
    }
    let unpacked = binary_sizes(&bin, &chosen);
    pack_bin(&dir)?;
    write_script(&dir.join("run.sh"), RUN_SCRIPT)?;
    copy_peers(&ctx.root.join("benches/peers"), &dir.join("peers"))?;

    let mut sizes = Vec::new();
    collect_sizes(&dir, &mut sizes).map_err(|e| format!("measuring {}: {e}", dir.display()))?;
    let total: u64 = sizes.iter().map(|(_, size)| size).sum();
    println!();
    for (name, size) in &unpacked {
        println!("  {:>9}  bin/{name}", format_size(*size));
    }
    println!(
        "bundle: {} binaries ({} unpacked), {} in {}",
        chosen.len(),
        format_size(unpacked.iter().map(|(_, size)| size).sum()),
        format_size(total),
        dir.display()
    );
    if total > MAX_BUNDLE_BYTES {
        sizes.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
        let largest: Vec<String> = sizes
            .iter()
            .take(5)
            .map(|(path, size)| format!("{} ({})", path.display(), format_size(*size)))
            .collect();
        return Err(format!(
            "the bundle is {}, over the limit of {}; largest files: {}. \
             Leave targets out with --exclude TARGET (sizes before packing: bin/NAME above)",
            format_size(total),
            format_size(MAX_BUNDLE_BYTES),
            largest.join(", ")
        ));
    }
    println!("run it on the GPU machine with: {}/run.sh", dir.display());
    Ok(())
}

/// Each chosen binary's name and size in `bin`.
fn binary_sizes(bin: &Path, chosen: &[(String, Artifact)]) -> Vec<(String, u64)> {
    chosen
        .iter()
        .map(|(name, _)| {
            let size = std::fs::metadata(bin.join(name)).map_or(0, |m| m.len());
            (name.clone(), size)
        })
        .collect()
}

/// Packs `dir/bin` into `dir/bin.tar.xz` (see the module doc) and removes `dir/bin`; `run.sh`
/// unpacks it.
fn pack_bin(dir: &Path) -> Result {
    if util::find_in_path("xz").is_none() {
        return Err("xz is needed to pack the bundle's binaries (apt install xz-utils)".into());
    }
    let mut cmd = Command::new("tar");
    cmd.arg("-I")
        .arg(XZ)
        .arg("-cf")
        .arg(dir.join(PACKED_BIN))
        .arg("-C")
        .arg(dir)
        .arg("bin");
    util::run_status(&mut cmd)?;
    let bin = dir.join("bin");
    std::fs::remove_dir_all(&bin).map_err(|e| format!("cannot remove {}: {e}", bin.display()))
}

/// Creates `dir` and removes what an earlier bundle left in it (only the paths this command
/// writes, so a mistaken DIR loses nothing else).
fn prepare_dir(dir: &Path) -> Result {
    for sub in ["bin", "log", "peers"] {
        let path = dir.join(sub);
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
    }
    // `bin.tar.gz`: how bundles were packed before.
    for file in ["run.sh", "summary.txt", PACKED_BIN, "bin.tar.gz"] {
        let path = dir.join(file);
        if path.exists() {
            std::fs::remove_file(&path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
    }
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))
}

/// The GPU benchmark's peers and scripts, for `run.sh bench` and `run.sh profile`: every file
/// of `benches/peers/` but the CPU ones, with their directories.
fn copy_peers(from: &Path, to: &Path) -> Result {
    const CPU_ONLY: &[&str] = &["numba_cpu.py", "ratios_chart.py"];
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", from.display()))?;
        let (path, name) = (entry.path(), entry.file_name());
        let dest = to.join(&name);
        if name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            copy_peers(&path, &dest)?;
        } else if !CPU_ONLY.contains(&name.to_string_lossy().as_ref()) {
            std::fs::copy(&path, &dest)
                .map_err(|e| format!("copying {} to {}: {e}", path.display(), dest.display()))?;
        }
    }
    Ok(())
}

/// Writes an executable script.
fn write_script(path: &Path, text: &str) -> Result {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

/// Every file under `dir` with its size.
fn collect_sizes(dir: &Path, out: &mut Vec<(PathBuf, u64)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            collect_sizes(&entry.path(), out)?;
        } else {
            out.push((entry.path(), meta.len()));
        }
    }
    Ok(())
}

/// Bytes in KiB/MiB with one decimal.
fn format_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else if b >= KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// `DIR/run.sh`: runs every binary in `bin/`, tees its output to `log/NAME.log` and writes
/// `summary.txt`; exits non-zero when any binary fails.
const RUN_SCRIPT: &str = r#"#!/usr/bin/env bash
# Runs every binary of this bundle on this machine, one after the other.
#
#   ./run.sh [ARGS...]
#
# ARGS go to the test binaries (for example a test name filter, or --nocapture); examples run
# with their default arguments. Each binary's output is shown and kept in log/NAME.log;
# summary.txt gets the date, the GPU (from nvidia-smi) and PASS/FAIL per binary.
# BUNDLE_TIMEOUT (seconds, default 300) limits each binary where `timeout` exists.
#
#   ./run.sh bench
#
# runs the GPU benchmark instead: ours beside the Numba, CuPy and CUDA C++ peers, writing
# results/gpu-DATE.md (see peers/gpu_bench.sh).
#
#   ./run.sh profile [KERNEL...]
#
# reads the hardware counters of the benchmark's kernels with Nsight Compute, writing
# results/profile-DATE.txt (see peers/gpu_profile.sh).
set -u
cd "$(dirname "$0")"
here=$(pwd)
if [ -f bin.tar.xz ] && [ ! -d bin ]; then
    # tar's xz, else Python's (its lzma module is in every Python 3).
    if command -v xz >/dev/null; then
        tar -xJf bin.tar.xz || exit 1
    else
        python3 -c 'import tarfile; tarfile.open("bin.tar.xz").extractall()' || exit 1
    fi
fi
if [ "${1:-}" = bench ]; then
    shift
    exec bash "$here/peers/gpu_bench.sh" "$@"
fi
if [ "${1:-}" = profile ]; then
    shift
    exec bash "$here/peers/gpu_profile.sh" "$@"
fi
mkdir -p log
summary="$here/summary.txt"
limit=${BUNDLE_TIMEOUT:-300}

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    if command -v nvidia-smi >/dev/null 2>&1; then
        gpus=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | paste -sd ';' -)
        echo "gpu: ${gpus:-none reported}"
    else
        echo "gpu: nvidia-smi not found"
    fi
} >"$summary"

runner=()
if command -v timeout >/dev/null 2>&1; then
    runner=(timeout "$limit")
fi

pass=0
fail=0
for bin in "$here"/bin/*; do
    [ -f "$bin" ] && [ -x "$bin" ] || continue
    name=$(basename "$bin")
    args=()
    case "$name" in
        example-*) ;;
        *) args=("$@") ;;
    esac
    echo "==> $name"
    start=$(date +%s)
    ${runner[@]+"${runner[@]}"} "$bin" ${args[@]+"${args[@]}"} 2>&1 | tee "log/$name.log"
    rc=${PIPESTATUS[0]}
    secs=$(( $(date +%s) - start ))
    if [ "$rc" -eq 0 ]; then
        status=PASS
        pass=$((pass + 1))
    else
        status=FAIL
        fail=$((fail + 1))
    fi
    echo "$status $name (exit $rc, ${secs}s)" >>"$summary"
done
echo "total: $pass passed, $fail failed" >>"$summary"

echo
cat "$summary"
[ "$fail" -eq 0 ]
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(target: &str, kind: &str, test: bool, exe: &str) -> Artifact {
        Artifact {
            target: target.into(),
            kind: kind.into(),
            test,
            executable: exe.into(),
        }
    }

    #[test]
    fn parses_cargo_messages() {
        let stdout = r#"{"reason":"compiler-artifact","package_id":"path+file:///w#kernel-suite@0.1.0","manifest_path":"/w/Cargo.toml","target":{"kind":["example"],"crate_types":["bin"],"name":"smooth","src_path":"/w/examples/smooth.rs","edition":"2021","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["/w/target/release/examples/smooth"],"executable":"/w/target/release/examples/smooth","fresh":true}
{"reason":"compiler-artifact","package_id":"registry+https://example.invalid/index#libc@0.2.1","target":{"kind":["lib"],"crate_types":["lib"],"name":"libc","src_path":"/r/lib.rs","test":true},"profile":{"test":false},"features":[],"filenames":["/w/target/release/deps/liblibc.rlib"],"executable":null,"fresh":true}
{"reason":"build-script-executed","package_id":"x","linked_libs":[],"linked_paths":[],"cfgs":[],"env":[],"out_dir":"/w/target/release/build/x/out"}
{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"kernel_runtime","test":true},"profile":{"test":true},"executable":"/w/target/release/deps/kernel_runtime-0a1b"}
not json at all
{"reason":"compiler-artifact","target":{"kind":["test"],"name":"gpu","test":true},"profile":{"test":true},"executable":"/w/target/release/deps/gpu-9f8e"}
{"reason":"build-finished","success":true}
"#;
        let found = parse_artifacts(stdout);
        assert_eq!(
            found,
            [
                artifact(
                    "smooth",
                    "example",
                    false,
                    "/w/target/release/examples/smooth"
                ),
                artifact(
                    "kernel_runtime",
                    "lib",
                    true,
                    "/w/target/release/deps/kernel_runtime-0a1b"
                ),
                artifact("gpu", "test", true, "/w/target/release/deps/gpu-9f8e"),
            ]
        );
        assert_eq!(found[0].bundle_name(), "example-smooth");
        assert_eq!(found[1].bundle_name(), "unit-kernel_runtime");
        assert_eq!(found[2].bundle_name(), "test-gpu");
    }

    #[test]
    fn selects_and_names_binaries() {
        let examples = vec![
            artifact("add", "example", false, "/t/examples/add"),
            artifact("add", "example", false, "/t/examples/add"),
        ];
        let tests = vec![
            artifact("xtask", "bin", true, "/t/deps/xtask-1"),
            artifact("gpu", "test", true, "/t/deps/gpu-1"),
            artifact("gpu", "test", true, "/t/deps/gpu-2"),
            artifact("fake_driver", "test", true, "/t/deps/fake_driver-1"),
            artifact("fake_cuda", "lib", true, "/t/deps/fake_cuda-1"),
            artifact("compile_fail", "test", true, "/t/deps/compile_fail-1"),
            artifact("smooth", "example", false, "/t/examples/smooth"),
        ];
        let chosen = select(examples, tests, &["smooth".into()]);
        let names: Vec<_> = chosen.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["example-add", "test-gpu", "test-gpu-2"]);
    }

    #[test]
    fn parses_options() {
        let o: Args =
            util::parse_args(&["out", "--exclude", "compile_fail", "--no-strip"]).unwrap();
        assert_eq!(o.dir, PathBuf::from("out"));
        assert_eq!(o.excludes, ["compile_fail"]);
        assert!(o.no_strip && !o.no_provision);
        assert_eq!(o.arch, None);
        let o: Args = util::parse_args(&["--arch", "sm_90", "out"]).unwrap();
        assert_eq!(
            (o.arch.as_deref(), o.dir),
            (Some("sm_90"), PathBuf::from("out"))
        );
        for bad in [&["out", "--arch"][..], &[], &["a", "b"], &["a", "--bogus"]] {
            assert!(util::parse_args::<Args>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(2048), "2.0 KiB");
        assert_eq!(format_size(MAX_BUNDLE_BYTES), "64.0 MiB");
    }

    #[test]
    fn run_script_is_bash() {
        assert!(RUN_SCRIPT.starts_with("#!/usr/bin/env bash\n"));
        assert!(
            RUN_SCRIPT.contains("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader")
        );
    }
}
