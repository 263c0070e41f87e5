//! Foreign device code linked into the crate's module: PTX files, and CUDA C++ files compiled to
//! PTX by `nvcc` at build time where it is found, or else carried as source, with the headers
//! they include, for the runtime to compile with NVRTC.
//!
//! Each piece follows the crate's PTX in the module file, after a line of its own:
//!
//! ```text
//! // kernel-build link ptx NAME       PTX, from a .ptx file or nvcc
//! // kernel-build link cuda NAME      CUDA C++ source, for NVRTC
//! // kernel-build link header NAME    a header it includes, as its #include names it
//! ```
//!
//! `kernel_runtime` reads the same lines when it loads the module and links the pieces with
//! the driver's linker.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The start of the line before each linked piece.
pub const SECTION: &str = "// kernel-build link ";

/// Environment variable: the `nvcc` to compile CUDA C++ with at build time; `0` compiles none
/// (the runtime's NVRTC compiles them instead).
pub const ENV_NVCC: &str = "KERNEL_NVCC";

/// The foreign code a crate links, as its build script named it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Foreign {
    /// CUDA C++ files.
    pub cuda: Vec<PathBuf>,
    /// PTX files.
    pub ptx: Vec<PathBuf>,
    /// Where `#include` looks, after the including file's directory.
    pub includes: Vec<PathBuf>,
}

impl Foreign {
    /// Whether nothing is linked.
    pub fn is_empty(&self) -> bool {
        self.cuda.is_empty() && self.ptx.is_empty()
    }

    /// Every file and directory whose change must rebuild the module.
    pub fn inputs(&self) -> impl Iterator<Item = &PathBuf> {
        self.cuda.iter().chain(&self.ptx).chain(&self.includes)
    }

    /// The sections that follow the crate's PTX: each PTX file, and each CUDA C++ file compiled
    /// by `nvcc` for `arch` (into `out_dir`) or carried as source with its headers.
    pub fn sections(
        &self,
        arch: &str,
        nvcc: Option<&Path>,
        out_dir: &Path,
    ) -> Result<String, Error> {
        let mut text = String::new();
        for path in &self.ptx {
            push(&mut text, "ptx", &file_name(path), &read(path)?);
        }
        let mut headers = BTreeMap::new();
        for path in &self.cuda {
            match nvcc {
                Some(nvcc) => {
                    let ptx = self.nvcc(nvcc, path, arch, out_dir)?;
                    push(&mut text, "ptx", &file_name(path), &ptx);
                }
                None => {
                    let source = read(path)?;
                    self.headers(path, &source, &mut headers)?;
                    push(&mut text, "cuda", &file_name(path), &source);
                }
            }
        }
        for (name, header) in &headers {
            push(&mut text, "header", name, header);
        }
        Ok(text)
    }

    /// `path` compiled to PTX by `nvcc`, relocatable, so its `extern "C"` device functions stay
    /// visible to the linker.
    fn nvcc(&self, nvcc: &Path, path: &Path, arch: &str, out_dir: &Path) -> Result<String, Error> {
        let dir = out_dir.join("foreign");
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let out = dir.join(format!("{}.ptx", file_name(path)));
        let mut cmd = Command::new(nvcc);
        cmd.args(["-ptx", "-rdc=true"])
            .arg(format!("-arch={}", arch.replace("sm_", "compute_")));
        for include in &self.includes {
            cmd.arg("-I").arg(include);
        }
        cmd.arg(path).arg("-o").arg(&out);
        let output = cmd.output().map_err(|e| Error::io(nvcc, e))?;
        if !output.status.success() {
            return Err(Error::Nvcc {
                file: path.to_path_buf(),
                command: format!("{cmd:?}"),
                output: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        read(&out)
    }

    /// Adds to `found` every header that `source` (the file `path`) includes and that is found
    /// beside it or in an include directory, by the name its `#include` gives, recursively.
    /// Headers found nowhere are left to NVRTC's own.
    fn headers(
        &self,
        path: &Path,
        source: &str,
        found: &mut BTreeMap<String, String>,
    ) -> Result<(), Error> {
        let dir = path.parent().unwrap_or(Path::new("."));
        for name in includes(source) {
            if found.contains_key(name) {
                continue;
            }
            let candidates = std::iter::once(dir).chain(self.includes.iter().map(PathBuf::as_path));
            let Some(file) = candidates.map(|d| d.join(name)).find(|f| f.is_file()) else {
                continue;
            };
            let text = read(&file)?;
            found.insert(name.to_string(), text.clone());
            self.headers(&file, &text, found)?;
        }
        Ok(())
    }
}

/// The names of the files `source` includes (`#include "x.h"` and `#include <x.h>`).
fn includes(source: &str) -> impl Iterator<Item = &str> {
    source.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix('#')?.trim_start();
        let rest = rest.strip_prefix("include")?.trim();
        let (open, close) = match rest.chars().next()? {
            '"' => ('"', '"'),
            '<' => ('<', '>'),
            _ => return None,
        };
        let inner = rest.strip_prefix(open)?;
        inner.find(close).map(|end| &inner[..end])
    })
}

/// Appends one section.
fn push(text: &mut String, kind: &str, name: &str, body: &str) {
    text.push('\n');
    text.push_str(SECTION);
    text.push_str(kind);
    text.push(' ');
    text.push_str(name);
    text.push('\n');
    text.push_str(body);
    if !body.ends_with('\n') {
        text.push('\n');
    }
}

/// A file's name, for the sections and the messages.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A file's text.
fn read(path: &Path) -> Result<String, Error> {
    fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// The `nvcc` to compile CUDA C++ with: `$KERNEL_NVCC` (`0`: none), then `nvcc` on `PATH`, then
/// `$CUDA_PATH/bin`, `$CUDA_HOME/bin` and `/usr/local/cuda/bin`.
pub(crate) fn find_nvcc(variable: Option<String>) -> Option<PathBuf> {
    if variable.as_deref().is_some_and(|v| v.trim() == "0") {
        return None;
    }
    let homes = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|home| PathBuf::from(home).join("bin"))
        .chain(Some(PathBuf::from("/usr/local/cuda/bin")));
    find_tool("nvcc", variable, homes)
}

/// The program `name`: `variable`'s value where set, else the first found on `PATH`, then in
/// `dirs`.
pub(crate) fn find_tool(
    name: &str,
    variable: Option<String>,
    dirs: impl IntoIterator<Item = PathBuf>,
) -> Option<PathBuf> {
    if let Some(path) = variable {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(dirs)
        .map(|dir| dir.join(name))
        .find(|tool| tool.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_quoted_and_angled_includes() {
        let source = "#include \"a.h\"\n  #  include <b/c.h>\n// #include \"no.h\"\nint x;\n";
        assert_eq!(includes(source).collect::<Vec<_>>(), ["a.h", "b/c.h"]);
    }

    #[test]
    fn carries_sources_with_the_headers_found_and_ptx_as_it_is() {
        let dir = std::env::temp_dir().join(format!("kernel-build-link-{}", std::process::id()));
        let inc = dir.join("inc");
        fs::create_dir_all(&inc).unwrap();
        fs::write(
            dir.join("mul.cu"),
            "#include \"scale.h\"\n#include <cuda_fp16.h>\n",
        )
        .unwrap();
        fs::write(inc.join("scale.h"), "#include \"deep.h\"\n#define S 2\n").unwrap();
        fs::write(inc.join("deep.h"), "#define D 1\n").unwrap();
        fs::write(dir.join("add.ptx"), ".visible .func add()\n").unwrap();
        let foreign = Foreign {
            cuda: vec![dir.join("mul.cu")],
            ptx: vec![dir.join("add.ptx")],
            includes: vec![inc],
        };
        let text = foreign.sections("sm_70", None, &dir).unwrap();
        let expected = "\n// kernel-build link ptx add.ptx\n.visible .func add()\n\
            \n// kernel-build link cuda mul.cu\n#include \"scale.h\"\n#include <cuda_fp16.h>\n\
            \n// kernel-build link header deep.h\n#define D 1\n\
            \n// kernel-build link header scale.h\n#include \"deep.h\"\n#define S 2\n";
        assert_eq!(text, expected);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn compiles_with_nvcc_and_reports_its_errors() {
        let dir = std::env::temp_dir().join(format!("kernel-build-nvcc-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // A stand-in nvcc: writes its arguments as the PTX, or fails for `bad.cu`.
        let nvcc = dir.join("nvcc");
        fs::write(
            &nvcc,
            "#!/bin/sh\ncase \"$*\" in *bad.cu*) echo 'bad.cu(1): error' >&2; exit 1;; esac\n\
             for a; do last=$a; done; echo \"$*\" > \"$last\"\n",
        )
        .unwrap();
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&nvcc)
            .status()
            .unwrap();
        fs::write(dir.join("mul.cu"), "").unwrap();
        let foreign = Foreign {
            cuda: vec![dir.join("mul.cu")],
            ptx: vec![],
            includes: vec![PathBuf::from("/inc")],
        };
        let text = foreign.sections("sm_80", Some(&nvcc), &dir).unwrap();
        assert!(
            text.starts_with(
                "\n// kernel-build link ptx mul.cu\n-ptx -rdc=true -arch=compute_80 -I /inc "
            ),
            "{text}"
        );
        let bad = Foreign {
            cuda: vec![dir.join("bad.cu")],
            ..Foreign::default()
        };
        let err = bad
            .sections("sm_80", Some(&nvcc), &dir)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.cu(1): error") && err.contains("KERNEL_NVCC"),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
