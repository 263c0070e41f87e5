//! Finding a Rust toolchain that can compile for `nvptx64-nvidia-cuda`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The target triple of the device build.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// Environment variable: path of a `rustc` to use for the device build (explicit override).
pub const ENV_NVPTX_RUSTC: &str = "KERNEL_NVPTX_RUSTC";
/// Environment variable: path of the `cargo` to go with [`ENV_NVPTX_RUSTC`].
pub const ENV_NVPTX_CARGO: &str = "KERNEL_NVPTX_CARGO";

const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_CORE_SRC: &str = "/usr/lib/rustlib/src/rust/library/core";

/// A toolchain able to compile for `nvptx64-nvidia-cuda`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The compiler.
    pub rustc: PathBuf,
    /// The cargo that drives it (run with `RUSTC` set to [`Toolchain::rustc`]).
    pub cargo: PathBuf,
    /// Whether `core` must be built from source (`-Zbuild-std=core`): true when the target's
    /// precompiled `core` is not installed and the library source is used instead.
    pub build_std: bool,
    /// The major version of the LLVM its rustc generates code with (`rustc -vV`), where it
    /// says: which of LLVM's options the device build may pass.
    pub llvm: Option<u32>,
    /// Where it was found, for messages.
    pub origin: String,
}

impl Toolchain {
    /// Looks for a toolchain, in this order:
    ///
    /// 1. `KERNEL_NVPTX_RUSTC` (and `KERNEL_NVPTX_CARGO`, else the `cargo` next to that rustc,
    ///    else `cargo`): an explicit override, an error if unusable;
    /// 2. a rustup toolchain with the `nvptx64-nvidia-cuda` target installed;
    /// 3. Debian's `/usr/bin/rustc` and `/usr/bin/cargo` with the library source in
    ///    `/usr/lib/rustlib/src` (then `core` is built from source).
    ///
    /// Returns [`Error::NoToolchain`] listing what was tried when none is usable.
    pub fn discover() -> Result<Toolchain, Error> {
        if let Some(rustc) = non_empty_env(ENV_NVPTX_RUSTC) {
            return from_override(&rustc);
        }
        let mut tried = vec![format!("{ENV_NVPTX_RUSTC}: not set")];
        if let Some(tc) = from_rustup(&mut tried) {
            return Ok(tc);
        }
        if let Some(tc) = from_debian(&mut tried) {
            return Ok(tc);
        }
        Err(Error::NoToolchain { tried })
    }
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Runs a command of the toolchain, with `RUSTUP_TOOLCHAIN` cleared so that rustup proxies do
/// not follow the host build's toolchain; returns its stdout when it succeeds.
fn output(program: impl AsRef<OsStr>, args: &[&str]) -> Result<String, String> {
    let program = program.as_ref();
    let out = Command::new(program)
        .args(args)
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.to_string_lossy()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "`{} {}` failed: {}",
            program.to_string_lossy(),
            args.join(" "),
            stderr.trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the sysroot of `rustc` holds the precompiled target library (else `core` must be
/// built from source).
fn has_target_libs(rustc: &Path) -> Result<bool, String> {
    let dir = sysroot(rustc)?.join("lib/rustlib").join(TARGET).join("lib");
    Ok(dir.is_dir())
}

/// The major version of the LLVM that `rustc` uses.
fn llvm_major(rustc: &Path) -> Option<u32> {
    parse_llvm_major(&output(rustc, &["-vV"]).ok()?)
}

/// The major version in `rustc -vV`'s line `LLVM version: 22.1.8`.
fn parse_llvm_major(verbose_version: &str) -> Option<u32> {
    let version = verbose_version
        .lines()
        .find_map(|line| line.strip_prefix("LLVM version:"))?;
    version.trim().split('.').next()?.parse().ok()
}

fn sysroot(rustc: &Path) -> Result<PathBuf, String> {
    Ok(PathBuf::from(
        output(rustc, &["--print", "sysroot"])?.trim(),
    ))
}

/// Whether `core` can be built from source when `rustc` lacks the target's precompiled
/// library: `-Zbuild-std` takes the library source in its own sysroot (rustup's `rust-src`,
/// Debian's `rust-web-src`).
fn has_core_source(rustc: &Path) -> Result<bool, String> {
    Ok(sysroot(rustc)?
        .join("lib/rustlib/src/rust/library/core")
        .is_dir())
}

fn from_override(rustc: &str) -> Result<Toolchain, Error> {
    let bad = |variable, value: &str, reason: String| Error::BadToolchainOverride {
        variable,
        value: value.to_string(),
        reason,
    };
    let rustc_path = PathBuf::from(rustc);
    let installed = has_target_libs(&rustc_path).map_err(|r| bad(ENV_NVPTX_RUSTC, rustc, r))?;
    if !installed && !has_core_source(&rustc_path).map_err(|r| bad(ENV_NVPTX_RUSTC, rustc, r))? {
        return Err(bad(
            ENV_NVPTX_RUSTC,
            rustc,
            format!(
                "this rustc has neither the {TARGET} target's library nor the library source \
                 to build `core` from; install one (`rustup target add {TARGET}`, or \
                 `rustup component add rust-src` for a nightly rustc)"
            ),
        ));
    }
    let cargo = match non_empty_env(ENV_NVPTX_CARGO) {
        Some(cargo) => {
            output(&cargo, &["--version"]).map_err(|r| bad(ENV_NVPTX_CARGO, &cargo, r))?;
            PathBuf::from(cargo)
        }
        None => {
            let sibling =
                rustc_path.with_file_name(format!("cargo{}", std::env::consts::EXE_SUFFIX));
            if sibling.is_file() {
                sibling
            } else {
                PathBuf::from("cargo")
            }
        }
    };
    Ok(Toolchain {
        llvm: llvm_major(&rustc_path),
        rustc: rustc_path,
        cargo,
        build_std: !installed,
        origin: format!("{ENV_NVPTX_RUSTC}={rustc}"),
    })
}

/// A toolchain that `rustup toolchain list -v` names: its name and, where rustup gives it, its
/// directory.
#[derive(Debug, PartialEq, Eq)]
struct Listed {
    name: String,
    dir: Option<PathBuf>,
}

/// The toolchains in the output of `rustup toolchain list -v` (`NAME [(default)] [(active)]
/// PATH` per line; a rustup that prints no path gives the name alone).
fn parse_toolchain_list(list: &str) -> Vec<Listed> {
    if list.contains("no installed toolchains") {
        return Vec::new();
    }
    list.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?.to_string();
            let dir = words
                .last()
                .filter(|w| !w.starts_with('('))
                .map(PathBuf::from);
            Some(Listed { name, dir })
        })
        .collect()
}

/// Whether the toolchain has the target's library: in its directory where the list gave one
/// (no process to run), else as `rustup +NAME target list --installed` says.
fn has_target(toolchain: &Listed) -> Result<bool, String> {
    if let Some(dir) = toolchain.dir.as_ref().filter(|d| d.is_dir()) {
        return Ok(dir.join("lib/rustlib").join(TARGET).join("lib").is_dir());
    }
    let plus = format!("+{}", toolchain.name);
    let targets = output("rustup", &[&plus, "target", "list", "--installed"])?;
    Ok(targets.lines().any(|l| l.trim() == TARGET))
}

/// The toolchain's `tool` (`rustc`, `cargo`): in its directory's `bin`, else where `rustup
/// +NAME which` finds it.
fn tool_of(toolchain: &Listed, tool: &str) -> Result<PathBuf, String> {
    let exe = format!("{tool}{}", std::env::consts::EXE_SUFFIX);
    if let Some(path) = toolchain.dir.as_ref().map(|d| d.join("bin").join(&exe)) {
        if path.is_file() {
            return Ok(path);
        }
    }
    let plus = format!("+{}", toolchain.name);
    output("rustup", &[&plus, "which", tool]).map(|p| PathBuf::from(p.trim()))
}

fn from_rustup(tried: &mut Vec<String>) -> Option<Toolchain> {
    let list = match output("rustup", &["toolchain", "list", "-v"]) {
        Ok(list) => list,
        Err(e) => {
            tried.push(format!("rustup: {e}"));
            return None;
        }
    };
    let toolchains = parse_toolchain_list(&list);
    if toolchains.is_empty() {
        tried.push("rustup: no toolchains installed".into());
    }
    for toolchain in toolchains {
        let name = &toolchain.name;
        match has_target(&toolchain) {
            Ok(true) => {}
            Ok(false) => {
                tried.push(format!(
                    "rustup toolchain {name}: target {TARGET} not installed"
                ));
                continue;
            }
            Err(e) => {
                tried.push(format!("rustup toolchain {name}: {e}"));
                continue;
            }
        }
        match (tool_of(&toolchain, "rustc"), tool_of(&toolchain, "cargo")) {
            (Ok(rustc), Ok(cargo)) => {
                return Some(Toolchain {
                    llvm: llvm_major(&rustc),
                    rustc,
                    cargo,
                    build_std: false,
                    origin: format!("rustup toolchain {name}"),
                });
            }
            (Err(e), _) | (_, Err(e)) => tried.push(format!("rustup toolchain {name}: {e}")),
        }
    }
    None
}

fn from_debian(tried: &mut Vec<String>) -> Option<Toolchain> {
    let missing: Vec<&str> = [DEBIAN_RUSTC, DEBIAN_CARGO, DEBIAN_CORE_SRC]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if !missing.is_empty() {
        tried.push(format!("{DEBIAN_RUSTC}: missing {}", missing.join(", ")));
        return None;
    }
    let rustc = PathBuf::from(DEBIAN_RUSTC);
    // Its two questions to rustc at once: each starts a rustc.
    let (installed, llvm) = std::thread::scope(|s| {
        let llvm = s.spawn(|| llvm_major(&rustc));
        (has_target_libs(&rustc), llvm.join().ok().flatten())
    });
    match installed {
        Ok(installed) => Some(Toolchain {
            llvm,
            rustc,
            cargo: PathBuf::from(DEBIAN_CARGO),
            build_std: !installed,
            origin: format!("{DEBIAN_RUSTC} with the library source"),
        }),
        Err(e) => {
            tried.push(format!("{DEBIAN_RUSTC}: {e}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchain_list_names_and_directories() {
        let listed = |name: &str, dir: Option<&str>| Listed {
            name: name.to_string(),
            dir: dir.map(PathBuf::from),
        };
        let list = "stable-x86_64-unknown-linux-gnu (default) /r/toolchains/stable\n\
                    nightly-x86_64-unknown-linux-gnu /r/toolchains/nightly\n\
                    1.95.0-x86_64-unknown-linux-gnu (active)\n";
        assert_eq!(
            parse_toolchain_list(list),
            [
                listed(
                    "stable-x86_64-unknown-linux-gnu",
                    Some("/r/toolchains/stable")
                ),
                listed(
                    "nightly-x86_64-unknown-linux-gnu",
                    Some("/r/toolchains/nightly")
                ),
                listed("1.95.0-x86_64-unknown-linux-gnu", None),
            ]
        );
        assert!(parse_toolchain_list("no installed toolchains\n").is_empty());
        assert!(parse_toolchain_list("").is_empty());
    }

    #[test]
    fn a_listed_directory_says_whether_the_target_is_installed() {
        let root = std::env::temp_dir().join(format!("kernel-build-tc-{}", std::process::id()));
        let libs = root.join("lib/rustlib").join(TARGET).join("lib");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let toolchain = Listed {
            name: "no-such-toolchain".into(),
            dir: Some(root.clone()),
        };
        assert_eq!(has_target(&toolchain), Ok(false));
        std::fs::create_dir_all(&libs).unwrap();
        assert_eq!(has_target(&toolchain), Ok(true));
        let rustc = root
            .join("bin")
            .join(format!("rustc{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&rustc, "").unwrap();
        assert_eq!(tool_of(&toolchain, "rustc"), Ok(rustc));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn llvm_versions() {
        let rustc = "rustc 1.96.0 (ac68faa20 2026-05-25)\nbinary: rustc\n\
                     host: x86_64-unknown-linux-gnu\nrelease: 1.96.0\nLLVM version: 22.1.8\n";
        assert_eq!(parse_llvm_major(rustc), Some(22));
        assert_eq!(parse_llvm_major("LLVM version: 9.0\n"), Some(9));
        assert_eq!(parse_llvm_major("rustc 1.96.0\nrelease: 1.96.0\n"), None);
        assert_eq!(parse_llvm_major("LLVM version: unknown\n"), None);
    }
}
