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

/// The toolchain names in the output of `rustup toolchain list`.
fn parse_toolchain_list(list: &str) -> Vec<String> {
    if list.contains("no installed toolchains") {
        return Vec::new();
    }
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn from_rustup(tried: &mut Vec<String>) -> Option<Toolchain> {
    let list = match output("rustup", &["toolchain", "list"]) {
        Ok(list) => list,
        Err(e) => {
            tried.push(format!("rustup: {e}"));
            return None;
        }
    };
    let names = parse_toolchain_list(&list);
    if names.is_empty() {
        tried.push("rustup: no toolchains installed".into());
    }
    for name in names {
        let plus = format!("+{name}");
        let installed = match output("rustup", &[&plus, "target", "list", "--installed"]) {
            Ok(targets) => targets.lines().any(|l| l.trim() == TARGET),
            Err(e) => {
                tried.push(format!("rustup toolchain {name}: {e}"));
                continue;
            }
        };
        if !installed {
            tried.push(format!(
                "rustup toolchain {name}: target {TARGET} not installed"
            ));
            continue;
        }
        let which = |tool: &str| output("rustup", &[&plus, "which", tool]);
        match (which("rustc"), which("cargo")) {
            (Ok(rustc), Ok(cargo)) => {
                let rustc = PathBuf::from(rustc.trim());
                return Some(Toolchain {
                    llvm: llvm_major(&rustc),
                    rustc,
                    cargo: PathBuf::from(cargo.trim()),
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
    match has_target_libs(&rustc) {
        Ok(installed) => Some(Toolchain {
            llvm: llvm_major(&rustc),
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
    fn toolchain_list_names() {
        let list = "stable-x86_64-unknown-linux-gnu (default)\n\
                    nightly-x86_64-unknown-linux-gnu\n\
                    1.95.0-x86_64-unknown-linux-gnu (active)\n";
        assert_eq!(
            parse_toolchain_list(list),
            [
                "stable-x86_64-unknown-linux-gnu",
                "nightly-x86_64-unknown-linux-gnu",
                "1.95.0-x86_64-unknown-linux-gnu"
            ]
        );
        assert!(parse_toolchain_list("no installed toolchains\n").is_empty());
        assert!(parse_toolchain_list("").is_empty());
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
