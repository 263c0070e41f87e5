//! Running the nested cargo that compiles the device crate to PTX, and translating what it says.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::diagnostics;
use crate::toolchain::{Toolchain, TARGET};
use crate::Error;

/// The oldest PTX ISA the device code is written for: 6.3 (CUDA 10.0), the first with every
/// warp instruction the device API uses (`activemask` is 6.2).
const MIN_PTX_ISA: &str = "target-feature=+ptx63";

/// The flag that raises the PTX ISA to [`MIN_PTX_ISA`] for `arch`, where LLVM's default for it
/// is older (6.0 for sm_70, 6.1 for sm_72, older yet below): from sm_75 on, the default is
/// already 6.3 or newer, and naming an older ISA than an architecture needs is an error.
fn isa_flag(arch: &str) -> Option<&'static str> {
    let digits: String = arch
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (digits.parse::<u32>().ok()? < 75).then_some(MIN_PTX_ISA)
}

/// Whether the nested cargo must not inherit the environment variable `key`: everything cargo
/// sets for a build script or reads as build configuration, the jobserver, and wrappers.
/// Registry and network settings (`CARGO_HOME`, `CARGO_NET_*`, `CARGO_HTTP_*`,
/// `CARGO_REGISTRIES_*`, `CARGO_REGISTRY_*`) are kept so that dependencies resolve as they do
/// for the host build.
pub(crate) fn must_clear(key: &str) -> bool {
    const KEEP_PREFIXES: [&str; 4] = [
        "CARGO_NET_",
        "CARGO_HTTP_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
    ];
    const CLEAR: [&str; 19] = [
        "CARGO",
        "OUT_DIR",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "RUSTC_BOOTSTRAP",
        "MAKEFLAGS",
        "MFLAGS",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTDOC",
        "TARGET",
        "HOST",
        "NUM_JOBS",
        "OPT_LEVEL",
        "PROFILE",
        "DEBUG",
    ];
    if key == "CARGO_HOME" || KEEP_PREFIXES.iter().any(|p| key.starts_with(p)) {
        return false;
    }
    key.starts_with("CARGO_")
        || key.starts_with("__CARGO")
        || key.starts_with("DEP_")
        || CLEAR.contains(&key)
}

/// A command for `cargo`, without the variables the host build's cargo set ([`must_clear`]).
fn nested_cargo(cargo: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(cargo);
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_none_or(must_clear) {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// Runs a nested cargo (with `--message-format=json`); when it fails, `Ok(Err(..))` with its
/// errors as rustc rendered them ([`diagnostics::errors`]).
fn run_nested(cmd: &mut Command) -> Result<Result<(), String>, Error> {
    let out = cmd.output().map_err(|e| Error::Spawn {
        program: cmd.get_program().to_string_lossy().into_owned(),
        source: e,
    })?;
    if out.status.success() {
        return Ok(Ok(()));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    Ok(Err(diagnostics::errors(&stdout, &stderr)))
}

/// The code generator's flag for `fma`: NVPTX contracts only when the level is given (level 2
/// also fuses a product that has other uses, as clang's CUDA mode does).
fn fma_flag(contract: bool) -> String {
    format!(
        "llvm-args=-nvptx-fma-level={}",
        if contract { 2 } else { 0 }
    )
}

/// The code generator's flag for loop unrolling: LLVM's NVPTX target gives partial and runtime
/// unrolling a quarter of the size budget other targets get, leaving the rest to ptxas, which
/// does not unroll a loop whose trip count it does not know. With the whole budget, a loop like
/// integrate2d's (a sine per step) unrolls by four, as nvcc unrolls CUDA C++'s, and the
/// independent steps overlap.
const UNROLL_FLAG: &str = "llvm-args=-unroll-partial-threshold=300";

/// The flag that leaves LLVM's correlated-value propagation out of the optimization pipeline.
/// Where that pass knows a division's or remainder's operands to be small, it narrows the
/// operation to the narrowest power-of-two width that holds them: 16 bits for a sum of bytes.
/// NVPTX declares 16-bit integers native, so the narrowing stays to the PTX, where ptxas, whose
/// registers are 32 bits wide, emulates each 16-bit operation with byte permutes and
/// sign extensions. For sm_90 the `i8` smooth stencil (`s.div_euclid(9)` of a sum of bytes)
/// issued 25.5 instructions a pixel with the pass and issues 17.4 without it; of the 161 other
/// kernels of this repository's `gpu-kernels` and test suite, 11 change, 8 of them to fewer
/// instructions and 3 to 8 more.
const NO_NARROWING_FLAG: &str = "llvm-args=-opt-disable=correlated-propagation";

/// [`NO_NARROWING_FLAG`], for an LLVM that takes `-opt-disable` (21 on): an older one would
/// refuse the unknown option, and keeps the pass.
fn narrowing_flag(llvm: Option<u32>) -> Option<&'static str> {
    (llvm? >= 21).then_some(NO_NARROWING_FLAG)
}

/// `f32` division as `div.approx.f32` (nvcc's `-prec-div=false`), for fast math.
const FAST_DIV_FLAG: &str = "llvm-args=-nvptx-prec-divf32=0";
/// `f32` square root as `sqrt.approx.f32` (nvcc's `-prec-sqrt=false`), for fast math.
const FAST_SQRT_FLAG: &str = "llvm-args=-nvptx-prec-sqrtf32=0";

/// Source lines as PTX's `.loc` directives and nothing else: a fuller debug level makes DWARF
/// sections that `ptxas` refuses.
const LINE_INFO_FLAG: &str = "debuginfo=line-directives-only";

/// One device build.
pub(crate) struct DeviceBuild<'a> {
    pub toolchain: &'a Toolchain,
    pub manifest_path: &'a Path,
    pub target_dir: &'a Path,
    pub crate_name: &'a str,
    pub arch: &'a str,
    /// Whether float multiply-adds are contracted into fused multiply-adds.
    pub fma: bool,
    /// Whether `f32` division and square root are approximate ([`crate::Builder::fast_math`]).
    pub fast_math: bool,
    /// Where the PTX carries source lines: each generated file and the user's file it mirrors,
    /// which the lines name.
    pub lines: Option<&'a [(PathBuf, PathBuf)]>,
}

/// The outcomes of a build and of its variants' (see [`DeviceBuild::run_with`]).
pub(crate) type Outcomes = (Result<Built, String>, Vec<Result<Built, String>>);

/// What a successful device build produced.
pub(crate) struct Built {
    /// The PTX file.
    pub ptx: PathBuf,
    /// The source files the build depended on (from cargo's dep-info), when known.
    pub inputs: Vec<PathBuf>,
}

impl DeviceBuild<'_> {
    /// The nested cargo command, with a clean environment.
    pub(crate) fn command(&self) -> Command {
        let mut cmd = nested_cargo(&self.toolchain.cargo);
        // Every crate of the build for the one GPU, the runtime's too: its code for newer GPUs
        // (`cfg(target_feature = "sm_80")`) is chosen where it is compiled, not where it is used.
        cmd.env(crate::MARKER, "1")
            .env("RUSTC", &self.toolchain.rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .env(
                "CARGO_ENCODED_RUSTFLAGS",
                format!("-Ctarget-cpu={}", self.arch),
            )
            .args(["rustc", "--release", "--lib", "--target", TARGET]);
        if self.toolchain.build_std {
            cmd.arg("-Zbuild-std=core");
        }
        let linker = if Path::new("/bin/true").exists() {
            "/bin/true"
        } else {
            "true"
        };
        cmd.arg("--manifest-path")
            .arg(self.manifest_path)
            .arg("--target-dir")
            .arg(self.target_dir)
            .args(["--color", "never", "--message-format=json", "--"])
            .args(["--emit=asm", "-C"])
            .arg(format!("target-cpu={}", self.arch));
        if let Some(isa) = isa_flag(self.arch) {
            cmd.args(["-C", isa]);
        }
        cmd.args(["-C", &format!("linker={linker}")])
            .args(["-C", &fma_flag(self.fma)])
            .args(["-C", UNROLL_FLAG]);
        if let Some(flag) = narrowing_flag(self.toolchain.llvm) {
            cmd.args(["-C", flag]);
        }
        if self.fast_math {
            cmd.args(["-C", FAST_DIV_FLAG, "-C", FAST_SQRT_FLAG]);
        }
        if let Some(mirrors) = self.lines {
            cmd.args(["-C", LINE_INFO_FLAG]);
            for (generated, original) in mirrors {
                let mut remap = std::ffi::OsString::from("--remap-path-prefix=");
                remap.push(generated);
                remap.push("=");
                remap.push(original);
                cmd.arg(remap);
            }
        }
        if let Some(dir) = self.manifest_path.parent() {
            cmd.current_dir(dir);
        }
        cmd
    }

    /// Runs the build and, at the same time, one for each of `variants` (an architecture and
    /// the target directory it builds in): a build's last steps, LLVM's code generation for the
    /// one crate, take a core alone, and the variants take the others. Each build's outcome as
    /// [`run`](Self::run) gives it, the variants' in their order.
    pub(crate) fn run_with(&self, variants: &[(&str, PathBuf)]) -> Result<Outcomes, Error> {
        std::thread::scope(|scope| {
            let builds: Vec<_> = variants
                .iter()
                .map(|(arch, target_dir)| {
                    let build = DeviceBuild {
                        arch,
                        target_dir,
                        ..*self
                    };
                    scope.spawn(move || build.run())
                })
                .collect();
            let main = self.run()?;
            let others = builds
                .into_iter()
                .map(|b| b.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<Result<Vec<_>, Error>>()?;
            Ok((main, others))
        })
    }

    /// Runs the build, unless [`up_to_date`](Self::up_to_date). On failure, its errors as
    /// rustc rendered them (the caller rewrites the paths).
    pub(crate) fn run(&self) -> Result<Result<Built, String>, Error> {
        if let Some(built) = self.up_to_date() {
            return Ok(Ok(built));
        }
        let stamp = self.outputs().stamp;
        let _ = std::fs::remove_file(&stamp);
        if let Err(text) = run_nested(&mut self.command())? {
            return Ok(Err(text));
        }
        let Outputs { ptx, dep_info, .. } = self.outputs();
        if !ptx.is_file() {
            return Err(Error::MissingPtx { path: ptx });
        }
        let inputs = std::fs::read_to_string(dep_info)
            .map(|d| parse_dep_info(&d))
            .unwrap_or_default();
        std::fs::write(&stamp, self.stamp()).map_err(|e| Error::io(&stamp, e))?;
        Ok(Ok(Built { ptx, inputs }))
    }

    /// What the nested build writes, and the stamp of the command that wrote it.
    fn outputs(&self) -> Outputs {
        let release = self.target_dir.join(TARGET).join("release");
        Outputs {
            ptx: release.join("deps").join(format!("{}.s", self.crate_name)),
            dep_info: release.join(format!("{}.d", self.crate_name)),
            stamp: release.join(format!("{}.kernel-build", self.crate_name)),
        }
    }

    /// The compiler, the command, its flags and the variables it sets: a build by another is
    /// not reused.
    fn stamp(&self) -> String {
        let cmd = self.command();
        let args: Vec<_> = cmd.get_args().collect();
        let set: Vec<_> = cmd.get_envs().filter(|(_, v)| v.is_some()).collect();
        format!(
            "{:?} {:?} {args:?} {set:?}",
            self.toolchain.rustc,
            cmd.get_program()
        )
    }

    /// The last build's PTX, where it was made by this same command and nothing it was built
    /// from (the device crate's files and manifest, the runtime's and the macros' sources, as
    /// its dep-info lists them) changed since: the nested cargo would find it fresh too, but
    /// takes a few tenths of a second to say so, for every target with kernels.
    fn up_to_date(&self) -> Option<Built> {
        let Outputs {
            ptx,
            dep_info,
            stamp,
        } = self.outputs();
        if std::fs::read_to_string(stamp).ok()? != self.stamp() {
            return None;
        }
        let built = std::fs::metadata(&ptx).ok()?.modified().ok()?;
        let inputs = parse_dep_info(&std::fs::read_to_string(dep_info).ok()?);
        let newer = |path: &Path| {
            std::fs::metadata(path)
                .and_then(|m| m.modified())
                .map_or(true, |t| t > built)
        };
        if inputs.is_empty() || newer(self.manifest_path) || inputs.iter().any(|p| newer(p)) {
            return None;
        }
        Some(Built { ptx, inputs })
    }
}

/// The files of one nested build.
struct Outputs {
    ptx: PathBuf,
    dep_info: PathBuf,
    stamp: PathBuf,
}

/// A check of the device crate for the host, where no toolchain can build it for the device:
/// the crate is `#![no_std]` there too, so `std`, host statics and functions that are not
/// `#[device]` fail here, at the user's line, on a machine that builds no PTX.
pub(crate) struct HostCheck<'a> {
    pub manifest_path: &'a Path,
    /// The device builds' directory; the check keeps its own under it.
    pub target_dir: &'a Path,
}

impl HostCheck<'_> {
    /// The nested check, with a clean environment and the host build's own cargo and
    /// rustc (`CARGO` and `RUSTC`, as cargo gives them to a build script).
    pub(crate) fn command(&self) -> Command {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = nested_cargo(cargo);
        cmd.env(crate::MARKER, "1");
        if let Some(rustc) = std::env::var_os("RUSTC") {
            cmd.env("RUSTC", rustc);
        }
        // An rlib: a `cdylib` would also want a panic handler, which a `no_std` crate has
        // only on the device.
        cmd.args([
            "rustc",
            "--lib",
            "--profile",
            "check",
            "--crate-type",
            "rlib",
        ])
        .arg("--manifest-path")
        .arg(self.manifest_path)
        .arg("--target-dir")
        .arg(self.target_dir.join("host-check"))
        .args(["--color", "never", "--message-format=json"])
        // Tells `#[device(extern)]` that the CPU bodies it names stayed in the user's crate.
        .args(["--", "--cfg", "kernel_device_crate"]);
        if let Some(dir) = self.manifest_path.parent() {
            cmd.current_dir(dir);
        }
        cmd
    }

    /// Runs the check; on failure, its diagnostics as they came.
    pub(crate) fn run(&self) -> Result<Result<(), String>, Error> {
        run_nested(&mut self.command())
    }
}

/// The prerequisites listed in a Makefile-style dep-info file (`target: dep dep...`).
pub(crate) fn parse_dep_info(text: &str) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for line in text.lines() {
        // The target ends at the first unescaped ": ".
        let Some(colon) = line
            .find(": ")
            .or_else(|| line.strip_suffix(':').map(str::len))
        else {
            continue;
        };
        let deps = &line[(colon + 1).min(line.len())..];
        let mut current = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                c if c.is_whitespace() => {
                    if !current.is_empty() {
                        paths.push(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                c => current.push(c),
            }
        }
        if !current.is_empty() {
            paths.push(PathBuf::from(current));
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_hygiene() {
        for cleared in [
            "CARGO_MANIFEST_DIR",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "CARGO_MAKEFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO",
            "OUT_DIR",
            "RUSTFLAGS",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "MAKEFLAGS",
            "MFLAGS",
            "RUSTUP_TOOLCHAIN",
            "RUSTC",
            "RUSTDOC",
            "DEP_KERNEL_RUNTIME_MANIFEST_DIR",
            "__CARGO_FIX_PLZ",
        ] {
            assert!(must_clear(cleared), "{cleared}");
        }
        for kept in [
            "CARGO_HOME",
            "CARGO_NET_OFFLINE",
            "CARGO_HTTP_PROXY",
            "PATH",
            "HOME",
            "RUSTUP_HOME",
        ] {
            assert!(!must_clear(kept), "{kept}");
        }
    }

    /// The arguments of the device build's command for a toolchain of `llvm`.
    fn args(llvm: Option<u32>, fma: bool) -> Vec<String> {
        args_with(llvm, fma, false, None)
    }

    /// [`args`], with fast math or not, and source lines where `lines` has the mirrors.
    fn args_with(
        llvm: Option<u32>,
        fma: bool,
        fast_math: bool,
        lines: Option<&[(PathBuf, PathBuf)]>,
    ) -> Vec<String> {
        let toolchain = Toolchain {
            rustc: PathBuf::from("rustc"),
            cargo: PathBuf::from("cargo"),
            build_std: true,
            llvm,
            origin: "test".into(),
        };
        let build = DeviceBuild {
            toolchain: &toolchain,
            manifest_path: Path::new("/dev/Cargo.toml"),
            target_dir: Path::new("/dev/target"),
            crate_name: "x_device",
            arch: "sm_90",
            fma,
            fast_math,
            lines,
        };
        build
            .command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_command_asks_for_fma_contraction_or_not() {
        for (fma, level) in [(true, "2"), (false, "0")] {
            let args = args(Some(22), fma);
            let flag = format!("llvm-args=-nvptx-fma-level={level}");
            assert!(args.contains(&flag), "{args:?}");
            assert!(args.contains(&UNROLL_FLAG.to_string()), "{args:?}");
            assert!(args.contains(&"target-cpu=sm_90".to_string()), "{args:?}");
            assert!(!args.iter().any(|a| a.contains("ptx63")), "{args:?}");
        }
    }

    #[test]
    fn source_lines_are_asked_for_with_the_users_paths() {
        let flag = LINE_INFO_FLAG.to_string();
        assert!(!args(Some(22), true).contains(&flag));
        let mirrors = [(
            PathBuf::from("/t/kernel-device/src-x/src/lib.rs"),
            PathBuf::from("/home/me/x/src/lib.rs"),
        )];
        let args = args_with(Some(22), true, false, Some(&mirrors));
        assert!(args.contains(&flag), "{args:?}");
        let remap = "--remap-path-prefix=/t/kernel-device/src-x/src/lib.rs=/home/me/x/src/lib.rs";
        assert!(args.contains(&remap.to_string()), "{args:?}");
    }

    #[test]
    fn fast_math_asks_for_approximate_division_and_square_root() {
        let flags = [FAST_DIV_FLAG.to_string(), FAST_SQRT_FLAG.to_string()];
        let plain = args(Some(22), true);
        assert!(!flags.iter().any(|f| plain.contains(f)), "{plain:?}");
        let fast = args_with(Some(22), true, true, None);
        assert!(flags.iter().all(|f| fast.contains(f)), "{fast:?}");
    }

    #[test]
    fn narrowing_is_left_out_where_llvm_can_be_told() {
        let has = |llvm| args(llvm, true).contains(&NO_NARROWING_FLAG.to_string());
        assert!(has(Some(21)) && has(Some(22)));
        assert!(!has(Some(20)) && !has(None));
    }

    #[test]
    fn the_ptx_isa_is_raised_for_older_targets_only() {
        for arch in ["sm_70", "sm_72", "sm_61", "sm_52"] {
            assert_eq!(isa_flag(arch), Some(MIN_PTX_ISA), "{arch}");
        }
        for arch in ["sm_75", "sm_80", "sm_90", "sm_90a", "sm_100f", "compute_70"] {
            assert_eq!(isa_flag(arch), None, "{arch}");
        }
    }

    #[test]
    fn dep_info() {
        let d = "/t/x.ptx: /dev/src/lib.rs /rt/src/a\\ b.rs\n\n/dev/src/lib.rs:\n";
        assert_eq!(
            parse_dep_info(d),
            [
                PathBuf::from("/dev/src/lib.rs"),
                PathBuf::from("/rt/src/a b.rs")
            ]
        );
    }
}
