//! The errors of the build-time PTX compiler.

use std::path::PathBuf;

/// Everything that can stop the PTX build.
///
/// Each message says what went wrong and what to do about it; [`crate::build`] turns any of them
/// into a build error of the crate being built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No toolchain able to compile for `nvptx64-nvidia-cuda` was found.
    ///
    /// Only returned as an error when PTX is required (`KERNEL_REQUIRE_PTX=1` or
    /// [`crate::Builder::require_ptx`]); otherwise the build goes on without PTX.
    #[error(
        "no toolchain that can compile for nvptx64-nvidia-cuda was found (tried: {}). \
         Install one with `rustup target add nvptx64-nvidia-cuda`, or install Debian's \
         `rustc-web cargo-web rust-web-src` packages, or point KERNEL_NVPTX_RUSTC (and \
         KERNEL_NVPTX_CARGO) at a rustc that has the target",
        tried.join("; ")
    )]
    NoToolchain {
        /// Each place looked at, with the reason it was not usable.
        tried: Vec<String>,
    },

    /// The toolchain named by an explicit override (`KERNEL_NVPTX_RUSTC` /
    /// `KERNEL_NVPTX_CARGO`) cannot be used.
    #[error(
        "{variable}={value} cannot be used: {reason}. Fix the variable or unset it to let \
         the toolchain be found automatically"
    )]
    BadToolchainOverride {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },

    /// `nvcc` could not compile a CUDA C++ file that the build script links.
    #[error(
        "nvcc could not compile {} to PTX ({command}):\n{output}\nFix the file, choose an \
         architecture this nvcc supports with KERNEL_PTX_ARCH, or set KERNEL_NVCC=0 to compile \
         it at run time with NVRTC instead",
        file.display()
    )]
    Nvcc {
        /// The CUDA C++ file.
        file: PathBuf,
        /// The command that ran.
        command: String,
        /// What nvcc printed.
        output: String,
    },

    /// `ptxas` could not assemble the crate's PTX for an architecture of `KERNEL_CUBIN_ARCHS`.
    #[error(
        "ptxas could not assemble the kernels' PTX for {arch} ({command}):\n{output}\nList \
         architectures this ptxas supports, no older than KERNEL_PTX_ARCH, in \
         KERNEL_CUBIN_ARCHS, or unset it to leave the compiling to the driver"
    )]
    Ptxas {
        /// The architecture.
        arch: String,
        /// The command that ran.
        command: String,
        /// What ptxas printed.
        output: String,
    },

    /// A source file of the crate could not be parsed.
    #[error("{}:{line}: cannot parse this file for the device build: {msg}", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// The line (1-based) the parser stopped at.
        line: usize,
        /// The parser's message.
        msg: String,
    },

    /// The crate has no root source file where it was looked for.
    #[error(
        "no crate root in {}: neither src/lib.rs nor src/main.rs exists; kernels are \
         looked for from the crate root",
        dir.display()
    )]
    NoCrateRoot {
        /// The manifest directory looked in.
        dir: PathBuf,
    },

    /// Two kernels (or `#[vectorize]` functions) of one name in one crate: their PTX entry
    /// points, named like them, would clash.
    #[error(
        "two kernels are named `{name}` ({first} and {second}): a kernel's PTX entry point is \
         named like it, so kernel names must be unique in a crate; rename one"
    )]
    DuplicateKernel {
        /// The name.
        name: String,
        /// Where the first is defined (`file:line`).
        first: String,
        /// Where the second is.
        second: String,
    },

    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A program of the toolchain could not be started.
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The device crate did not compile. The diagnostics name the user's own files and lines.
    #[error("{diagnostics}{}", device_compile_summary(diagnostics))]
    DeviceCompile {
        /// The compiler's errors as rustc rendered them, with the paths of generated files
        /// replaced by the original ones.
        diagnostics: String,
    },

    /// The nested build reported success but left no PTX where it should be.
    #[error(
        "the device build succeeded but wrote no PTX at {}; is the toolchain's cargo \
         too old for `--emit=asm` with `cargo rustc`?",
        path.display()
    )]
    MissingPtx {
        /// Where the PTX was expected.
        path: PathBuf,
    },

    /// The path of the `kernel-runtime` crate is unknown.
    #[error(
        "the path of the kernel-runtime crate is unknown: DEP_KERNEL_RUNTIME_MANIFEST_DIR is \
         not set. Add `kernel-runtime` to the [dependencies] of this crate (its build script \
         publishes the path), or call `Builder::runtime_path`"
    )]
    MissingRuntimePath,

    /// An environment variable that cargo sets for build scripts is missing.
    #[error(
        "environment variable {name} is not set: call this from a build script, or set the \
         matching `Builder` option"
    )]
    MissingEnv {
        /// The variable.
        name: &'static str,
    },

    /// The requested GPU architecture is not of the form `sm_<number>`.
    #[error(
        "`{arch}` is not a GPU architecture rustc knows: use `sm_<number>` such as sm_70, \
         sm_80 or sm_90 (KERNEL_PTX_ARCH or `Builder::arch`)"
    )]
    InvalidArch {
        /// The rejected value.
        arch: String,
    },
}

/// What [`Error::DeviceCompile`] says above the compiler's errors: which build failed, and,
/// where the errors come from reaching for `std`, what device code uses instead.
pub(crate) fn device_compile_summary(diagnostics: &str) -> String {
    let mut summary = String::from(
        "the device (nvptx64) build of the #[kernel] and #[device] code failed with the \
         errors above",
    );
    if crate::diagnostics::reaches_std(diagnostics) {
        summary.push_str(
            "; device code is `#![no_std]`: use `core` and `kernel_runtime` in place of `std`",
        );
    }
    summary
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
