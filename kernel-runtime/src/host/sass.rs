//! A kernel's machine code (SASS) for a GPU architecture, as Numba's `kernel.inspect_sass()`
//! gives it: its own PTX ([`ptx_listing`](super::ptx_listing)) assembled by the CUDA toolkit's
//! `ptxas` and disassembled by its `nvdisasm`, which no GPU is needed for.
//!
//! A kernel that calls foreign device code (`#[device(extern)]`) is assembled relocatable: its
//! listing shows the call, the foreign code being linked in at load time.
//!
//! The tools are the toolkit's, found where `ptxas` and `nvdisasm` are named by
//! `KERNEL_PTXAS` and `KERNEL_NVDISASM`, else in `$CUDA_HOME/bin`, `$CUDA_PATH/bin` or
//! `/usr/local/cuda/bin`, else on `PATH`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::Error;

/// The SASS of the PTX module `ptx` (a kernel's listing) for `arch` (`sm_90`): `nvdisasm`'s
/// listing of the cubin `ptxas` makes of it.
pub(crate) fn of_ptx(ptx: &str, arch: &str) -> Result<String, Error> {
    let valid = arch.strip_prefix("sm_").is_some_and(|n| {
        let digits = n.trim_end_matches(['a', 'f']);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    if !valid {
        return Err(tool_error(
            "ptxas",
            format!("`{arch}` is not a GPU architecture: name one as `sm_90`"),
        ));
    }
    let dir = scratch_dir()?;
    let result = assemble_and_disassemble(&dir, ptx, arch);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// [`of_ptx`] in the scratch directory `dir`.
fn assemble_and_disassemble(dir: &Path, ptx: &str, arch: &str) -> Result<String, Error> {
    let (source, cubin) = (dir.join("kernel.ptx"), dir.join("kernel.cubin"));
    std::fs::write(&source, ptx)
        .map_err(|e| tool_error("ptxas", format!("writing {}: {e}", source.display())))?;
    let mut ptxas = tool("ptxas", "KERNEL_PTXAS");
    ptxas
        .arg(format!("-arch={arch}"))
        .arg("-o")
        .arg(&cubin)
        .arg(&source);
    if calls_foreign_code(ptx) {
        // Relocatable: the foreign functions are in the pieces linked at load time.
        ptxas.arg("--compile-only");
    }
    run("ptxas", &mut ptxas)?;
    let mut nvdisasm = tool("nvdisasm", "KERNEL_NVDISASM");
    nvdisasm.arg("--print-code").arg(&cubin);
    run("nvdisasm", &mut nvdisasm)
}

/// Whether the module declares a function it does not define, but for the system calls that
/// `ptxas` provides: a kernel's call of foreign device code (`#[device(extern)]`).
fn calls_foreign_code(ptx: &str) -> bool {
    const SYSTEM: [&str; 4] = ["vprintf", "malloc", "free", "__assertfail"];
    ptx.lines().any(|line| {
        let name = line.trim_end().rsplit([' ', '\t']).next().unwrap_or("");
        line.starts_with(".extern .func") && !SYSTEM.contains(&name)
    })
}

/// A directory of this call's own for the tools' files.
fn scratch_dir() -> Result<PathBuf, Error> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let name = format!("kernel-sass-{}-{call}", std::process::id());
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| tool_error("ptxas", format!("creating {}: {e}", dir.display())))?;
    Ok(dir)
}

/// The command of the toolkit's tool `name`, where the module doc says it is looked for.
fn tool(name: &'static str, variable: &str) -> Command {
    if let Some(path) = std::env::var_os(variable) {
        return Command::new(path);
    }
    let homes = ["CUDA_HOME", "CUDA_PATH"]
        .into_iter()
        .filter_map(std::env::var_os);
    let dirs = homes.map(|home| PathBuf::from(home).join("bin"));
    let found = dirs
        .chain(Some(PathBuf::from("/usr/local/cuda/bin")))
        .map(|dir| dir.join(name))
        .find(|path| path.is_file());
    Command::new(found.unwrap_or_else(|| PathBuf::from(name)))
}

/// Runs `cmd`, the tool `name`: what it printed, or its error.
fn run(name: &'static str, cmd: &mut Command) -> Result<String, Error> {
    let out = cmd.output().map_err(|e| {
        let missing = e.kind() == std::io::ErrorKind::NotFound;
        let hint = if missing {
            format!(
                "not found: install the CUDA toolkit, or name the tool with KERNEL_{}",
                name.to_uppercase()
            )
        } else {
            e.to_string()
        };
        tool_error(name, hint)
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(tool_error(name, stderr.trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The error of the tool `tool`.
fn tool_error(tool: &'static str, message: String) -> Error {
    Error::Tool { tool, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_architecture_is_named_as_sm_and_its_number() {
        for bad in ["90", "sm_", "sm_x", "compute_90"] {
            let err = of_ptx("", bad).unwrap_err().to_string();
            assert!(err.contains("is not a GPU architecture"), "{err}");
        }
    }

    #[test]
    fn only_a_call_of_foreign_code_makes_the_cubin_relocatable() {
        let printf = ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 a\n)\n;";
        let foreign = ".extern .func  (.param .b32 func_retval0) mul_f32_f32\n(\n)\n;";
        assert!(!calls_foreign_code(printf));
        assert!(calls_foreign_code(&format!("{printf}\n{foreign}")));
        assert!(!calls_foreign_code(
            ".func  (.param .b32 func_retval0) mul_f32_f32\n("
        ));
    }

    #[test]
    fn a_missing_tool_says_how_to_name_it() {
        let mut cmd = Command::new("/nonexistent/kernel-runtime-test/ptxas");
        let err = run("ptxas", &mut cmd).unwrap_err().to_string();
        assert!(
            err.contains("KERNEL_PTXAS") && err.contains("CUDA toolkit"),
            "{err}"
        );
    }
}
