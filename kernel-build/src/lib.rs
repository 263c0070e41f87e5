//! Build-time PTX compiler for crates with `#[kernel]` functions.
//!
//! Call it from the build script of a crate that defines kernels:
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     kernel_build::build();
//! }
//! ```
//!
//! What happens:
//!
//! 1. The crate's sources are parsed, from each crate root cargo finds by its conventions
//!    (`src/lib.rs`, `src/main.rs`, `src/bin/`, `examples/`, `tests/`, `benches/`) or that
//!    `Cargo.toml` declares at a path (`[[example]] path = "..."`; `autoexamples = false` and
//!    the like turn the conventions off) through every module; each root with kernels gets a
//!    module of its own. The `#[kernel]` and
//!    `#[device]` functions are taken, with the `const`s,
//!    `static`s, types (and their empty-bodied marker `impl`s) and `macro_rules!` macros they
//!    mention, the `use` items that resolve on the device (`kernel_runtime::…`, `core::…`, and
//!    `crate::`/`self::`/`super::`/sibling-module paths to items that are taken) and the
//!    modules holding them. Methods in `impl` blocks and traits are not taken: device code
//!    calls free `#[device]` functions.
//! 2. A standalone `no_std` device crate is written whose files mirror the crate's own, line
//!    for line: what is taken keeps its line and column, the rest is blank. Compile errors in
//!    device code therefore point at the user's own file and line (the paths are rewritten).
//! 3. The device crate is compiled for `nvptx64-nvidia-cuda` (fat LTO, `panic = "abort"`) by a
//!    nested cargo with a clean environment, and the PTX is copied to
//!    `$OUT_DIR/kernel_ptx.txt` (the library's; `kernel_ptx.test-<name>.txt` for a test, and so
//!    on), where `#[kernel]` finds it, with a copy ending in a NUL beside it (`kernel_ptx.nul`),
//!    which each kernel embeds (a C string the linker keeps once, read with no escaping). A
//!    device crate whose sources and dependencies did not change since its last build is not
//!    built again.

//! 4. Foreign device code that the build script names ([`Builder::link_cuda`],
//!    [`Builder::link_ptx`]) follows the PTX in that file: PTX as it is, CUDA C++ compiled by
//!    `nvcc` where one is found, or else as source with the headers it includes, which the
//!    runtime compiles with NVRTC. The runtime links the pieces when it loads the module.
//! 5. Where `KERNEL_CUBIN_ARCHS` lists architectures and `ptxas` is found, the PTX is also
//!    assembled for each, and the cubins follow it in the file (base64 comment lines): a GPU
//!    of one of them loads its machine code, without the driver's JIT compilation.
//! 6. Each architecture-specific variant the build script asks for ([`Builder::variant`],
//!    `sm_90a`) is the device crate built again for that GPU, its PTX (and its cubin where
//!    `KERNEL_CUBIN_ARCHS` names its family) following in the file: the runtime loads it on that
//!    GPU alone.
//!
//! A device build that fails reports rustc's own errors, at the user's files and lines, as
//! `cargo::error` lines, with a hint where a kernel calls a function that is not `#[device]`.
//!
//! Without a toolchain that can target nvptx64, the crate builds without PTX and the CPU
//! backend runs the kernels; the build says so once with a cargo warning. Set
//! `KERNEL_REQUIRE_PTX=1` to make that an error instead. The device crate is still written and
//! checked, as `no_std`, for the host (`cargo rustc --profile check`, with the host build's
//! own cargo): device code that reaches `std`, a host `static` or a function that is not
//! `#[device]` fails the build at the user's line on every machine, not only where PTX is
//! built. The first such check also checks `kernel-runtime` and its dependencies (about a
//! minute on two cores); later ones take seconds.
//!
//! Environment variables read:
//!
//! | variable | effect |
//! | --- | --- |
//! | `KERNEL_NVPTX_RUSTC`, `KERNEL_NVPTX_CARGO` | use this toolchain (see [`Toolchain::discover`]) |
//! | `KERNEL_PTX_ARCH` | GPU architecture, default `sm_70` (or `Builder::default_arch`) |
//! | `KERNEL_DEVICE_TARGET_DIR` | where the device crates are generated and built, default `<target>/kernel-device` |
//! | `KERNEL_REQUIRE_PTX` | `1`: a missing toolchain is a build error |
//! | `KERNEL_FMA` | `0`: no fused multiply-add contraction (see [`Builder::fma`]) |
//! | `KERNEL_LINEINFO` | `1`: source lines in the PTX and cubins, for profilers (see [`Builder::lineinfo`]) |
//! | `KERNEL_FAST_MATH` | `1`: approximate `f32` division, square root and math functions on the GPU (see [`Builder::fast_math`]) |
//! | `KERNEL_CUBIN_ARCHS` | `sm_80,sm_90`: assemble cubins for these GPUs at build time (with `KERNEL_PTXAS` or `ptxas` on `PATH`) |
//! | `KERNEL_NVCC` | the `nvcc` that compiles [`Builder::link_cuda`] files; `0`: none, NVRTC compiles them at run time |
//! | `DEP_KERNEL_RUNTIME_MANIFEST_DIR` | set by cargo from `kernel-runtime`'s build script: its path |

#![warn(missing_docs)]
// The examples are build scripts: their `fn main` is what they show.
#![allow(clippy::needless_doctest_main)]

mod compile;
mod cubin;
mod devcrate;
mod diagnostics;
mod entries;
mod error;
mod extract;
mod host_only;
mod launch_bounds;
mod link;
mod source;
mod targets;
mod toolchain;
mod variant;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

pub use cubin::{sections as cubin_sections, CUBIN_SECTION, ENV_CUBIN_ARCHS};
pub use error::Error;
pub use link::{ENV_NVCC, SECTION as LINK_SECTION};
pub use targets::module_key;
pub use toolchain::{Toolchain, ENV_NVPTX_CARGO, ENV_NVPTX_RUSTC, TARGET};
pub use variant::VARIANT_SECTION;

/// The variable set for the compilation of a crate whose build script builds its kernels, and
/// of the device crates: `#[kernel]` refuses to expand without it, as a kernel of a crate
/// without this build step could never become PTX.
pub const MARKER: &str = "KERNEL_BUILD";

/// The file in `OUT_DIR` that receives the PTX; `#[kernel]` embeds it from there.
pub const PTX_FILE_NAME: &str = "kernel_ptx.txt";

/// The GPU architecture compiled for when none is chosen.
pub const DEFAULT_ARCH: &str = "sm_70";

/// Environment variable: GPU architecture to compile for (`sm_70`, `sm_80`, ...).
pub const ENV_ARCH: &str = "KERNEL_PTX_ARCH";
/// Environment variable: `1` makes a missing toolchain a build error.
pub const ENV_REQUIRE: &str = "KERNEL_REQUIRE_PTX";
/// Environment variable: `0` turns off the contraction of `a * b + c` into fused multiply-adds.
pub const ENV_FMA: &str = "KERNEL_FMA";
/// Environment variable: `1` puts the kernels' source lines in their PTX ([`Builder::lineinfo`]).
pub const ENV_LINEINFO: &str = "KERNEL_LINEINFO";
/// Environment variable: `1` gives the kernels approximate `f32` math ([`Builder::fast_math`]).
pub const ENV_FAST_MATH: &str = "KERNEL_FAST_MATH";
/// Environment variable: directory where device crates are generated and built.
pub const ENV_DEVICE_TARGET_DIR: &str = "KERNEL_DEVICE_TARGET_DIR";
/// Environment variable (set by cargo from `kernel-runtime`'s build script): the runtime's path.
pub const ENV_RUNTIME_DIR: &str = "DEP_KERNEL_RUNTIME_MANIFEST_DIR";

/// Compiles the calling crate's kernels to PTX, from a build script, with the defaults of
/// [`Builder::new`].
///
/// Without a usable nvptx64 toolchain this prints one `cargo:warning` and the crate builds
/// for the CPU backend only, unless `KERNEL_REQUIRE_PTX=1`, which makes it a build error.
///
/// Any [`Error`] (a device-side compile error of the crate's kernels among them) fails the
/// build with `cargo::error` lines: rustc's own rendered errors at the user's files and lines,
/// then what failed. The build script does not panic.
pub fn build() {
    build_with(Builder::new())
}

/// Compiles the calling crate's kernels to PTX, from a build script, as [`build`] does, with the
/// options of `builder` (foreign code to link, for one). Errors fail the build as [`build`]'s
/// do.
pub fn build_with(builder: Builder) {
    match builder.run() {
        Ok(Outcome::Ptx(_)) => {}
        Ok(Outcome::NoToolchain(tried)) => println!(
            "cargo:warning=kernel-build: no toolchain for {TARGET} was found, so the kernels \
             will run on the CPU backend only (their device code was checked as `no_std` for \
             the host; tried: {}). Run `rustup target add {TARGET}` or set KERNEL_NVPTX_RUSTC \
             to build PTX; set {ENV_REQUIRE}=1 to make this an error.",
            tried.join("; ")
        ),
        Err(e) => {
            // Cargo heads each line with `error: <package>:`; rustc's own heading would repeat it.
            for line in e.to_string().lines() {
                println!(
                    "cargo::error={}",
                    line.strip_prefix("error: ").unwrap_or(line)
                );
            }
        }
    }
}

/// Options of the PTX build. Every option defaults to what cargo tells a build script.
///
/// ```no_run
/// // build.rs
/// fn main() {
///     let ptx = kernel_build::Builder::new().arch("sm_80").build();
///     match ptx {
///         Ok(Some(path)) => println!("cargo:warning=PTX at {}", path.display()),
///         Ok(None) => println!("cargo:warning=no nvptx64 toolchain: CPU backend only"),
///         Err(e) => panic!("{e}"),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    arch: Option<String>,
    default_arch: Option<String>,
    variants: Vec<String>,
    manifest_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    runtime_path: Option<PathBuf>,
    package_name: Option<String>,
    edition: Option<String>,
    extra_dependencies: Vec<(String, String)>,
    require_ptx: Option<bool>,
    fma: Option<bool>,
    lineinfo: Option<bool>,
    fast_math: Option<bool>,
    toolchain: Option<Toolchain>,
    check_only: bool,
    cargo_directives: bool,
    foreign: link::Foreign,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

enum Outcome {
    Ptx(PathBuf),
    NoToolchain(Vec<String>),
}

impl Builder {
    /// Options taken from the environment of a build script.
    pub fn new() -> Self {
        Builder {
            arch: None,
            default_arch: None,
            variants: Vec::new(),
            manifest_dir: None,
            out_dir: None,
            target_dir: None,
            runtime_path: None,
            package_name: None,
            edition: None,
            extra_dependencies: Vec::new(),
            require_ptx: None,
            fma: None,
            lineinfo: None,
            fast_math: None,
            toolchain: None,
            check_only: false,
            cargo_directives: true,
            foreign: link::Foreign::default(),
        }
    }

    /// The GPU architecture (`sm_70`, `sm_80`, `sm_90`, ...). Default: `KERNEL_PTX_ARCH`, else
    /// `sm_70`.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = Some(arch.into());
        self
    }

    /// The GPU architecture where neither [`arch`](Self::arch) nor `KERNEL_PTX_ARCH` names
    /// one (instead of `sm_70`): `default_arch("sm_80")` for a crate whose kernels use the
    /// tensor cores, which `KERNEL_PTX_ARCH=sm_90` still builds for an H100.
    pub fn default_arch(mut self, arch: impl Into<String>) -> Self {
        self.default_arch = Some(arch.into());
        self
    }

    /// Builds the kernels a second time for the architecture-specific `arch` (`sm_90a`), whose
    /// module the runtime loads on that GPU alone: code under
    /// `cfg(target_feature = "sm_90a")` (the warpgroup MMA of `kernel_runtime::wgmma`)
    /// reaches an H100 or H200, and every other GPU runs the module of [`arch`](Self::arch).
    /// Each variant is one more device build of every target with kernels. A variant equal to
    /// the module's own architecture is not built twice; a crate that links foreign code gets
    /// none.
    ///
    /// ```no_run
    /// // build.rs
    /// fn main() {
    ///     kernel_build::build_with(
    ///         kernel_build::Builder::new().default_arch("sm_80").variant("sm_90a"),
    ///     );
    /// }
    /// ```
    pub fn variant(mut self, arch: impl Into<String>) -> Self {
        self.variants.push(arch.into());
        self
    }

    /// The directory of the crate whose kernels are built. Default: `CARGO_MANIFEST_DIR`.
    pub fn manifest_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.manifest_dir = Some(dir.into());
        self
    }

    /// Where `kernel_ptx.txt` is written. Default: `OUT_DIR`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The directory where device crates are generated (`src-<crate>/`) and built, kept
    /// between builds. Default: `KERNEL_DEVICE_TARGET_DIR`, else `kernel-device` in the
    /// cargo target directory that holds `OUT_DIR`.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// The `kernel-runtime` crate the device crate depends on. Default:
    /// `DEP_KERNEL_RUNTIME_MANIFEST_DIR`.
    pub fn runtime_path(mut self, dir: impl Into<PathBuf>) -> Self {
        self.runtime_path = Some(dir.into());
        self
    }

    /// The package name of the crate (the device crate is named `<name>_device`). Default:
    /// `CARGO_PKG_NAME`.
    pub fn package_name(mut self, name: impl Into<String>) -> Self {
        self.package_name = Some(name.into());
        self
    }

    /// The Rust edition of the device crate. Default: the crate's own, read from its
    /// `Cargo.toml`.
    pub fn edition(mut self, edition: impl Into<String>) -> Self {
        self.edition = Some(edition.into());
        self
    }

    /// Adds a dependency to the device crate: `name` and its TOML value, such as
    /// `extra_dependency("libm", "\"0.2\"")` or `extra_dependency("x", "{ path = \"../x\" }")`.
    pub fn extra_dependency(
        mut self,
        name: impl Into<String>,
        toml_value: impl Into<String>,
    ) -> Self {
        self.extra_dependencies
            .push((name.into(), toml_value.into()));
        self
    }

    /// Whether a missing toolchain is an error ([`Error::NoToolchain`]) rather than
    /// `Ok(None)`. Default: `KERNEL_REQUIRE_PTX=1`.
    pub fn require_ptx(mut self, require: bool) -> Self {
        self.require_ptx = Some(require);
        self
    }

    /// Whether the device code contracts a float multiply followed by an add (`a * b + c`) into
    /// one fused multiply-add, rounded once, as nvcc (`-fmad=true`), clang's CUDA mode and
    /// Numba do by default. Faster, and usually more accurate, but results can differ in the
    /// last bits from the CPU backend, which rounds twice as Rust specifies; `false` keeps Rust's
    /// rounding on the GPU too. Explicit `mul_add` calls are fused either way. Default:
    /// `true`, unless `KERNEL_FMA=0`.
    pub fn fma(mut self, contract: bool) -> Self {
        self.fma = Some(contract);
        self
    }

    /// Whether the PTX carries the kernels' source lines (`.loc` directives naming the user's
    /// own files and lines), as Numba's `@cuda.jit(lineinfo=True)` and nvcc's `-lineinfo` do:
    /// Nsight Compute then shows each source line beside its instructions and counters. The
    /// cubins (`KERNEL_CUBIN_ARCHS`) are assembled with `ptxas -lineinfo`, and a GPU that
    /// compiles the PTX is asked to keep the lines; the code is the same. It holds for every
    /// kernel of the crate: rustc compiles the crate's device code at once. Default: `false`,
    /// unless `KERNEL_LINEINFO=1`.
    ///
    /// ```no_run
    /// // build.rs
    /// fn main() {
    ///     kernel_build::build_with(kernel_build::Builder::new().lineinfo(true));
    /// }
    /// ```
    pub fn lineinfo(mut self, lines: bool) -> Self {
        self.lineinfo = Some(lines);
        self
    }

    /// Whether the GPU computes `f32` math approximately, as Numba's `@cuda.jit(fastmath=True)`
    /// and nvcc's `--use_fast_math` do: `a / b` is `div.approx.f32` and `x.sqrt()`
    /// `sqrt.approx.f32` (nvcc's `-prec-div=false -prec-sqrt=false`), and `x.sin()`, `cos`,
    /// `tan`, `exp`, `ln`, `log2`, `log10` and `powf` on `f32` are `kernel_runtime::math::fast`'s
    /// (`__sinf`, `__expf`, ...; their errors are in that module's table); multiply-adds are
    /// contracted as by default ([`fma`](Self::fma)). Denormal numbers are kept, unlike nvcc's
    /// `-ftz=true`, and `f64` is unchanged. It holds for every kernel of the crate: rustc builds
    /// its device code at once. The CPU backend computes each function correctly rounded, so a
    /// GPU's results differ from it by the approximations' errors. Default: `false`, unless
    /// `KERNEL_FAST_MATH=1`.
    ///
    /// ```no_run
    /// // build.rs
    /// fn main() {
    ///     kernel_build::build_with(kernel_build::Builder::new().fast_math(true));
    /// }
    /// ```
    pub fn fast_math(mut self, fast: bool) -> Self {
        self.fast_math = Some(fast);
        self
    }

    /// Uses this toolchain instead of looking for one.
    pub fn toolchain(mut self, toolchain: Toolchain) -> Self {
        self.toolchain = Some(toolchain);
        self
    }

    /// Links the CUDA C++ file `path` (relative to the crate's directory) into the crate's
    /// module: its `extern "C" __device__` functions are the bodies of `#[device(extern)]`
    /// declarations. `nvcc` compiles it to PTX here where it is found (`$KERNEL_NVCC`, `PATH`,
    /// `$CUDA_PATH`, `/usr/local/cuda`); elsewhere it is carried as source, with the headers
    /// it includes from its directory and [`include_dir`](Self::include_dir)s, and the runtime
    /// compiles it with NVRTC when the module is loaded.
    ///
    /// ```no_run
    /// // build.rs
    /// fn main() {
    ///     kernel_build::build_with(
    ///         kernel_build::Builder::new()
    ///             .link_cuda("cuda/mul.cu")
    ///             .include_dir("cuda/include"),
    ///     );
    /// }
    /// ```
    pub fn link_cuda(mut self, path: impl Into<PathBuf>) -> Self {
        self.foreign.cuda.push(path.into());
        self
    }

    /// Links the PTX file `path` (relative to the crate's directory) into the crate's module:
    /// its `.visible .func`s are the bodies of `#[device(extern)]` declarations.
    pub fn link_ptx(mut self, path: impl Into<PathBuf>) -> Self {
        self.foreign.ptx.push(path.into());
        self
    }

    /// A directory (relative to the crate's directory) where the `#include`s of
    /// [`link_cuda`](Self::link_cuda) files are looked for.
    pub fn include_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.foreign.includes.push(path.into());
        self
    }

    /// Only checks the device crate, for the host, as a build without an nvptx64 toolchain
    /// does: `std`, host statics and functions that are not `#[device]` are errors at the
    /// user's line; no PTX is made.
    pub fn check_only(mut self) -> Self {
        self.check_only = true;
        self
    }

    /// Whether to print `cargo:` directives (`rerun-if-changed`, `rustc-env`) on stdout.
    /// Default: true, as a build script needs them.
    pub fn cargo_directives(mut self, print: bool) -> Self {
        self.cargo_directives = print;
        self
    }

    /// Builds the PTX.
    ///
    /// Returns the path of `kernel_ptx.txt` in the output directory, or `Ok(None)` when no
    /// toolchain can compile for nvptx64 (and PTX is not required): the crate then builds for
    /// the CPU backend only. A stale `kernel_ptx.txt` is removed whenever no new one is made.
    pub fn build(self) -> Result<Option<PathBuf>, Error> {
        match self.run()? {
            Outcome::Ptx(path) => Ok(Some(path)),
            Outcome::NoToolchain(_) => Ok(None),
        }
    }

    fn directive(&self, line: impl AsRef<str>) {
        if self.cargo_directives {
            println!("cargo:{}", line.as_ref());
        }
    }

    /// An on/off option: `set`, else whether the variable `name` is `1`.
    fn switch(&self, set: Option<bool>, name: &str) -> bool {
        set.unwrap_or_else(|| self.env(name).is_some_and(|v| v.trim() == "1"))
    }

    fn env(&self, name: &str) -> Option<String> {
        self.directive(format!("rerun-if-env-changed={name}"));
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }

    fn run(self) -> Result<Outcome, Error> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => PathBuf::from(required_env("OUT_DIR")?),
        };
        let ptx_out = out_dir.join(PTX_FILE_NAME);
        devcrate::remove_module(&ptx_out)?;
        // `#[device(extern)]` tells the device crate's host check from the crate by this cfg.
        self.directive("rustc-check-cfg=cfg(kernel_device_crate)");
        for name in [toolchain::ENV_NVPTX_RUSTC, toolchain::ENV_NVPTX_CARGO] {
            self.directive(format!("rerun-if-env-changed={name}"));
        }

        let arch = match &self.arch {
            Some(arch) => arch.clone(),
            None => self
                .env(ENV_ARCH)
                .or_else(|| self.default_arch.clone())
                .unwrap_or_else(|| DEFAULT_ARCH.into()),
        };
        validate_arch(&arch)?;
        let mut variants = Vec::new();
        for variant in &self.variants {
            validate_arch(variant)?;
            if *variant != arch && !variants.contains(variant) {
                variants.push(variant.clone());
            }
        }
        self.directive(format!("rustc-env=KERNEL_PTX_ARCH={arch}"));
        // Tells `#[kernel]` that this crate's kernels are built (see `MARKER`).
        self.directive(format!("rustc-env={MARKER}=1"));

        let require = self.switch(self.require_ptx, ENV_REQUIRE);
        let fma = match self.fma {
            Some(f) => f,
            None => self.env(ENV_FMA).is_none_or(|v| v.trim() != "0"),
        };
        let lineinfo = self.switch(self.lineinfo, ENV_LINEINFO);
        let fast_math = self.switch(self.fast_math, ENV_FAST_MATH);
        // Without a toolchain, the device crate is still written and checked for the host.
        let toolchain = match (&self.toolchain, self.check_only) {
            (_, true) => Err(vec!["check_only() was asked for".to_string()]),
            (Some(tc), false) => Ok(tc.clone()),
            (None, false) => match Toolchain::discover() {
                Ok(tc) => Ok(tc),
                Err(Error::NoToolchain { tried }) if !require => Err(tried),
                Err(e) => return Err(e),
            },
        };

        let manifest_dir = absolute(match &self.manifest_dir {
            Some(dir) => dir.clone(),
            None => PathBuf::from(required_env("CARGO_MANIFEST_DIR")?),
        })?;
        let package = match &self.package_name {
            Some(name) => name.clone(),
            None => required_env("CARGO_PKG_NAME")?
                .to_string_lossy()
                .into_owned(),
        };
        let runtime = absolute(match &self.runtime_path {
            Some(dir) => dir.clone(),
            None => PathBuf::from(self.env(ENV_RUNTIME_DIR).ok_or(Error::MissingRuntimePath)?),
        })?;
        self.directive(format!(
            "rerun-if-changed={}",
            runtime.join("Cargo.toml").display()
        ));
        let device_root = absolute(match &self.target_dir {
            Some(dir) => dir.clone(),
            None => match self.env(ENV_DEVICE_TARGET_DIR) {
                Some(dir) => PathBuf::from(dir),
                None => devcrate::device_root_from_out_dir(&out_dir),
            },
        })?;

        let targets =
            targets::discover(&manifest_dir, &package).ok_or_else(|| Error::NoCrateRoot {
                dir: manifest_dir.clone(),
            })?;
        remove_target_modules(&out_dir)?;
        let host_only = host_only::runtime_host_paths(&runtime);
        let build_rs = manifest_dir.join("build.rs");
        if build_rs.is_file() {
            self.directive(format!("rerun-if-changed={}", build_rs.display()));
        }
        for target in &targets {
            let tree = self.load_sources(&target.root)?;
            let primary = target.key.is_none();
            if !primary && !extract::has_device_code(&tree) {
                continue;
            }
            entries::check_unique(&tree)?;
            let package = match &target.key {
                None => package.clone(),
                Some(key) => format!("{package}-{key}"),
            };
            let job = Job {
                package: &package,
                manifest_dir: &manifest_dir,
                runtime: &runtime,
                device_root: &device_root,
                toolchain: toolchain.as_ref().ok(),
                arch: &arch,
                variants: &variants,
                fma,
                lineinfo,
                fast_math,
                ptx_out: &out_dir.join(target.ptx_file()),
                host_only: &host_only,
                // Foreign code is linked into the library's module.
                foreign: match primary {
                    true => self.foreign_in(&manifest_dir),
                    false => link::Foreign::default(),
                },
            };
            self.compile(&job, &tree)?;
        }
        match toolchain {
            Ok(_) => Ok(Outcome::Ptx(ptx_out)),
            Err(tried) => Ok(Outcome::NoToolchain(tried)),
        }
    }

    /// Runs `build` and the variants' builds beside it, and writes the module file: the PTX,
    /// the foreign code it links, its cubins and variants. The sources the builds read; a
    /// build's errors as `rewrite` makes them.
    fn build_module(
        &self,
        job: &Job<'_>,
        build: &compile::DeviceBuild<'_>,
        rewrite: &impl Fn(String) -> Error,
    ) -> Result<Vec<PathBuf>, Error> {
        // Foreign code is linked into the module's own PTX alone.
        let archs: &[String] = match job.foreign.is_empty() {
            true => job.variants,
            false => &[],
        };
        let dirs: Vec<_> = archs
            .iter()
            .map(|arch| (arch.as_str(), variant::target_dir(job.device_root, arch)))
            .collect();
        let (built, others) = build.run_with(&dirs)?;
        let built = built.map_err(rewrite)?;
        let mut ptx = read_ptx(&built.ptx)?;
        let mut inputs = built.inputs;
        let mut variants = Vec::new();
        for (arch, other) in archs.iter().zip(others) {
            let other = other.map_err(rewrite)?;
            variants.push((arch.as_str(), read_ptx(&other.ptx)?));
            inputs.extend(other.inputs);
        }
        if !job.foreign.is_empty() {
            let nvcc = link::find_nvcc(self.env(link::ENV_NVCC));
            let out_dir = job.ptx_out.parent().unwrap_or(Path::new("."));
            ptx.push_str(&job.foreign.sections(job.arch, nvcc.as_deref(), out_dir)?);
            if !job.variants.is_empty() {
                self.directive(
                    "warning=kernel-build: variants are not built for a crate that links \
                     foreign device code: every GPU gets the module's own PTX",
                );
            }
        }
        devcrate::write_if_changed(job.ptx_out, &ptx)?;
        self.add_trailers(job, &mut ptx, &variants)?;
        Ok(inputs)
    }

    /// Adds what follows the module's PTX in its file: its cubins, for the architectures of
    /// `KERNEL_CUBIN_ARCHS` where `ptxas` is found (see [`cubin`]), then each of `variants`
    /// (architecture and PTX), after its own cubin where its architecture or family is named
    /// (see [`variant`]).
    fn add_trailers(
        &self,
        job: &Job<'_>,
        ptx: &mut String,
        variants: &[(&str, String)],
    ) -> Result<(), Error> {
        let assemble = self.cubin_archs(job);
        if let Some((ptxas, archs)) = &assemble {
            ptx.push_str(&cubin::sections(ptxas, job.ptx_out, archs)?);
        }
        for (arch, text) in variants {
            if let Some((ptxas, archs)) = &assemble {
                let file = job.ptx_out.with_extension(format!("{arch}.ptx"));
                devcrate::write_if_changed(&file, text)?;
                let archs = variant::cubin_archs(arch, archs);
                ptx.push_str(&cubin::sections(ptxas, &file, &archs)?);
            }
            ptx.push_str(&variant::section(arch, text));
        }
        devcrate::write_module(job.ptx_out, ptx)
    }

    /// The `ptxas` and the architectures of `KERNEL_CUBIN_ARCHS` to assemble the module for,
    /// if any. A module that links foreign code gets none: the driver's linker makes its
    /// machine code.
    fn cubin_archs(&self, job: &Job<'_>) -> Option<(PathBuf, Vec<String>)> {
        let archs = cubin::archs(&self.env(cubin::ENV_CUBIN_ARCHS).unwrap_or_default());
        if archs.is_empty() {
            return None;
        }
        if !job.foreign.is_empty() {
            self.directive(
                "warning=kernel-build: KERNEL_CUBIN_ARCHS is ignored for a crate that links \
                 foreign device code: the driver links and compiles its module at load",
            );
            return None;
        }
        let Some(ptxas) = cubin::find_ptxas(self.env("KERNEL_PTXAS")) else {
            self.directive(
                "warning=kernel-build: KERNEL_CUBIN_ARCHS names architectures but no ptxas was \
                 found (KERNEL_PTXAS, PATH): the driver compiles the PTX at load",
            );
            return None;
        };
        Some((ptxas, archs))
    }

    /// The foreign code to link, its paths made absolute from `manifest_dir`, each announced
    /// to cargo.
    fn foreign_in(&self, manifest_dir: &Path) -> link::Foreign {
        let at = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths.iter().map(|p| manifest_dir.join(p)).collect()
        };
        let foreign = link::Foreign {
            cuda: at(&self.foreign.cuda),
            ptx: at(&self.foreign.ptx),
            includes: at(&self.foreign.includes),
        };
        for input in foreign.inputs() {
            self.directive(format!("rerun-if-changed={}", input.display()));
        }
        foreign
    }

    /// Parses the module tree of the crate root `root_file`, announcing every file read to
    /// cargo.
    fn load_sources(&self, root_file: &Path) -> Result<source::SourceTree, Error> {
        let mut read = |path: &Path| {
            let text = fs::read_to_string(path)?;
            self.directive(format!("rerun-if-changed={}", path.display()));
            Ok(text)
        };
        source::load(root_file, &mut read)
    }

    /// Generates the device crate, builds it and copies the PTX out, all under a lock:
    /// concurrent host builds of the same crate (debug and release) take turns.
    fn compile(&self, job: &Job<'_>, tree: &source::SourceTree) -> Result<(), Error> {
        let stem = devcrate::sanitize_crate_name(job.package);
        let crate_name = format!("{stem}_device");
        let device_dir = job.device_root.join(format!("src-{stem}"));
        fs::create_dir_all(&device_dir).map_err(|e| Error::io(&device_dir, e))?;
        let lock_path = job.device_root.join(format!("src-{stem}.lock"));
        let lock = fs::File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;

        let extraction = extract::extract(tree, job.manifest_dir, &device_dir, job.host_only);
        let edition = match &self.edition {
            Some(e) => e.clone(),
            None => devcrate::detect_edition(job.manifest_dir),
        };
        let manifest = devcrate::Manifest {
            package: job.package,
            crate_name: &crate_name,
            edition: &edition,
            lib_path: &extraction.files[0].rel,
            runtime: job.runtime,
            runtime_features: if job.fast_math { &["fast-math"] } else { &[] },
            extra_dependencies: &self.extra_dependencies,
        }
        .render();
        devcrate::write_crate(&device_dir, &manifest, &extraction.files)?;

        let out_dir = job.ptx_out.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
        if extraction.functions.is_empty() {
            // Nothing to compile: an empty module, without spending a device build on it.
            devcrate::write_module(job.ptx_out, "")?;
            return Ok(());
        }

        let manifest_path = device_dir.join("Cargo.toml");
        let rewrite = |stderr: String| {
            let root = diagnostics::workspace_root(job.manifest_dir);
            let files: Vec<_> = extraction
                .files
                .iter()
                .map(|f| {
                    let shown = diagnostics::as_rustc_shows(&f.original, &root);
                    (f.rel.clone(), device_dir.join(&f.rel), shown)
                })
                .collect();
            let text = diagnostics::rewrite_paths(&stderr, &files);
            Error::DeviceCompile {
                diagnostics: diagnostics::with_device_hints(&text, &extract::host_functions(tree)),
            }
        };
        let Some(toolchain) = job.toolchain else {
            let check = compile::HostCheck {
                manifest_path: &manifest_path,
                target_dir: job.device_root,
            };
            return check.run()?.map_err(rewrite);
        };
        // Line directives name the user's files, not their mirrors.
        let mirrors: Vec<_> = extraction
            .files
            .iter()
            .map(|f| (device_dir.join(&f.rel), f.original.clone()))
            .collect();
        let build = compile::DeviceBuild {
            toolchain,
            manifest_path: &manifest_path,
            target_dir: job.device_root,
            crate_name: &crate_name,
            arch: job.arch,
            fma: job.fma,
            fast_math: job.fast_math,
            lines: job.lineinfo.then_some(&mirrors[..]),
        };
        let inputs = self.build_module(job, &build, &rewrite)?;
        drop(lock);

        // The sources of the runtime and macros the device code was built with.
        for input in &inputs {
            if !input.starts_with(&device_dir) && input.is_file() {
                self.directive(format!("rerun-if-changed={}", input.display()));
            }
        }
        Ok(())
    }
}

/// The settings of one build, resolved.
struct Job<'a> {
    package: &'a str,
    manifest_dir: &'a Path,
    runtime: &'a Path,
    device_root: &'a Path,
    /// The device toolchain; `None`: the device crate is only checked for the host.
    toolchain: Option<&'a Toolchain>,
    arch: &'a str,
    /// The architecture-specific variants to build beside it (see [`variant`]).
    variants: &'a [String],
    fma: bool,
    /// Whether the PTX carries source lines ([`Builder::lineinfo`]).
    lineinfo: bool,
    /// Whether `f32` math is approximate ([`Builder::fast_math`]).
    fast_math: bool,
    ptx_out: &'a Path,
    /// The foreign code linked into the module.
    foreign: link::Foreign,
    /// What `kernel_runtime` exports to the host alone ([`host_only::runtime_host_paths`]).
    host_only: &'a HashSet<String>,
}

/// Removes the modules an earlier build wrote for targets other than the library: a target
/// whose kernels are gone, or whose build fails now, keeps none.
fn remove_target_modules(out_dir: &Path) -> Result<(), Error> {
    let Ok(entries) = fs::read_dir(out_dir) else {
        return Ok(());
    };
    for entry in entries.filter_map(Result::ok) {
        if entry
            .file_name()
            .to_str()
            .is_some_and(targets::is_target_module)
        {
            fs::remove_file(entry.path()).map_err(|e| Error::io(entry.path(), e))?;
        }
    }
    Ok(())
}

fn required_env(name: &'static str) -> Result<std::ffi::OsString, Error> {
    std::env::var_os(name).ok_or(Error::MissingEnv { name })
}

/// Checks that `arch` names a GPU architecture (`sm_` followed by digits and an optional
/// letter suffix such as `sm_90a`).
fn validate_arch(arch: &str) -> Result<(), Error> {
    let valid = arch.strip_prefix("sm_").is_some_and(|rest| {
        let digits = rest.trim_end_matches(|c: char| c.is_ascii_lowercase());
        !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
            && rest.len() - digits.len() <= 1
    });
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidArch {
            arch: arch.to_string(),
        })
    }
}

/// The PTX a device build wrote, its entries' launch bounds applied.
fn read_ptx(path: &Path) -> Result<String, Error> {
    let ptx = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(launch_bounds::apply(&ptx))
}

fn absolute(path: PathBuf) -> Result<PathBuf, Error> {
    std::path::absolute(&path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures() {
        for ok in ["sm_70", "sm_80", "sm_90a", "sm_100f"] {
            assert!(validate_arch(ok).is_ok(), "{ok}");
        }
        for bad in ["sm70", "sm_", "compute_70", "sm_7x0", "sm_90ab", ""] {
            assert!(validate_arch(bad).is_err(), "{bad}");
        }
    }
}
