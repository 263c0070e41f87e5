//! Machine code ahead of time: where `KERNEL_CUBIN_ARCHS` names GPU architectures and `ptxas`
//! is found, the crate's PTX is assembled for each of them at build time, and each cubin follows
//! the PTX in the module file as one comment line, base64-encoded:
//!
//! ```text
//! // kernel-build cubin sm_90 f0VMRgIBAUEAAAAA...
//! ```
//!
//! PTX tools read the line as a comment. `kernel_runtime` loads the cubin for a GPU of its
//! architecture (the same major version, and a minor version at least the cubin's), so the
//! first launch skips the driver's JIT compilation; other GPUs get the PTX.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;

use crate::Error;

/// Environment variable: the architectures to assemble cubins for (`sm_80,sm_90`); unset or
/// empty: none.
pub const ENV_CUBIN_ARCHS: &str = "KERNEL_CUBIN_ARCHS";

/// The start of each cubin's line.
pub const CUBIN_SECTION: &str = "// kernel-build cubin ";

/// The architectures of a `KERNEL_CUBIN_ARCHS` value.
pub(crate) fn archs(value: &str) -> Vec<String> {
    value
        .split([',', ' '])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

/// The `ptxas` to assemble with: `$KERNEL_PTXAS`, else `ptxas` on `PATH`.
pub(crate) fn find_ptxas(variable: Option<String>) -> Option<PathBuf> {
    crate::link::find_tool("ptxas", variable, [])
}

/// The cubin lines for `archs` (`sm_90`, ...): the module file `ptx_file` assembled by `ptxas`
/// for each, the cubins written beside it as `kernel_ARCH.cubin`. The build appends them to the
/// module file; a tool that makes a module by hand does the same.
///
/// A module with source lines (`.loc` directives, [`Builder::lineinfo`](crate::Builder::lineinfo))
/// is assembled with `-lineinfo`, which keeps them in the cubins.
pub fn sections(ptxas: &Path, ptx_file: &Path, archs: &[String]) -> Result<String, Error> {
    let ptx = std::fs::read_to_string(ptx_file).map_err(|e| Error::io(ptx_file, e))?;
    let lines = has_source_lines(&ptx);
    let mut text = String::new();
    for arch in archs {
        crate::validate_arch(arch)?;
        let out = ptx_file.with_file_name(format!("kernel_{arch}.cubin"));
        let mut cmd = Command::new(ptxas);
        cmd.arg(format!("-arch={arch}"));
        if lines {
            cmd.arg("-lineinfo");
        }
        cmd.arg("-o").arg(&out).arg(ptx_file);
        let output = cmd.output().map_err(|e| Error::io(ptxas, e))?;
        if !output.status.success() {
            return Err(Error::Ptxas {
                arch: arch.clone(),
                command: format!("{cmd:?}"),
                output: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let cubin = std::fs::read(&out).map_err(|e| Error::io(&out, e))?;
        text.push_str(CUBIN_SECTION);
        text.push_str(arch);
        text.push(' ');
        text.push_str(&base64::engine::general_purpose::STANDARD.encode(cubin));
        text.push('\n');
    }
    Ok(text)
}

/// Whether PTX text carries source lines: a `.loc` directive.
pub(crate) fn has_source_lines(ptx: &str) -> bool {
    ptx.lines().any(
        |l| matches!(l.trim_start().strip_prefix(".loc"), Some(r) if r.starts_with([' ', '\t'])),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn reads_architecture_lists() {
        assert_eq!(archs("sm_80, sm_90"), ["sm_80", "sm_90"]);
        assert_eq!(archs(" "), Vec::<String>::new());
    }

    #[test]
    fn assembles_each_architecture_and_reports_ptxas_errors() {
        let dir = std::env::temp_dir().join(format!("kernel-build-cubin-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // A stand-in ptxas: writes its arguments before `-o` as the cubin, or fails for sm_52.
        let ptxas = dir.join("ptxas");
        fs::write(
            &ptxas,
            "#!/bin/sh\ncase \"$1\" in -arch=sm_52) echo 'ptxas fatal: no' >&2; exit 1;; esac\n\
             flags=\"$1\"; shift\n\
             while [ \"$1\" != -o ]; do flags=\"$flags $1\"; shift; done\n\
             printf '%s' \"$flags\" > \"$2\"\n",
        )
        .unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(&ptxas)
            .status()
            .unwrap();
        let ptx = dir.join("kernel_ptx.txt");
        fs::write(&ptx, ".version 7.8\n").unwrap();
        let text = sections(&ptxas, &ptx, &archs("sm_80,sm_90")).unwrap();
        let encode = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(
            text,
            format!(
                "// kernel-build cubin sm_80 {}\n// kernel-build cubin sm_90 {}\n",
                encode("-arch=sm_80"),
                encode("-arch=sm_90")
            )
        );
        // PTX with source lines keeps them in its cubins.
        fs::write(&ptx, ".version 7.8\n\t.loc\t1 3 0\n").unwrap();
        let text = sections(&ptxas, &ptx, &archs("sm_90")).unwrap();
        let cubin = format!(
            "// kernel-build cubin sm_90 {}\n",
            encode("-arch=sm_90 -lineinfo")
        );
        assert_eq!(text, cubin);
        let err = sections(&ptxas, &ptx, &archs("sm_52"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ptxas fatal: no") && err.contains("KERNEL_CUBIN_ARCHS"),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
