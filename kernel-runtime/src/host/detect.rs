//! [`detect`]: what the program's kernels can run on, and why (Numba's `cuda.detect()`): the
//! CUDA driver, each GPU and whether it runs the program's PTX, the PTX itself, and the device
//! [`Device::default`] picks.

use super::device::Device;
use super::embedded::modules;
use super::link::{Code, Pieces};
use std::fmt;

/// What the program's kernels can run on: [`detect`]'s report, printed as a few lines.
#[derive(Clone, Debug)]
pub struct Detection {
    /// The CUDA driver's version, `(12, 8)` for 12.8, or why there is no driver.
    pub driver: Result<(u32, u32), String>,
    /// Each GPU the driver sees, in order.
    pub gpus: Vec<GpuReport>,
    /// The program's PTX modules (one per crate target with kernels).
    pub modules: Vec<ModuleReport>,
    /// The device [`Device::default`] runs on, and why.
    pub default: String,
}

/// One GPU of a [`Detection`].
#[derive(Clone, Debug)]
pub struct GpuReport {
    /// Its ordinal: `Device::cuda(ordinal)`, `KERNEL_DEVICE=cuda:ordinal`.
    pub ordinal: usize,
    /// What it is, or why it cannot be opened.
    pub opened: Result<GpuInfo, String>,
    /// How it runs each module's kernels, in the order of [`Detection::modules`] (`cubin
    /// sm_90`, `PTX for sm_80, compiled by the driver`), or why it cannot.
    pub runs: Vec<Result<String, String>>,
}

/// What a [`GpuReport`]'s GPU is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// Its name (`NVIDIA H200`).
    pub name: String,
    /// Its compute capability, `(9, 0)` for sm_90.
    pub compute_capability: (u32, u32),
    /// Its memory, in bytes.
    pub memory_bytes: usize,
}

/// One PTX module of a [`Detection`].
#[derive(Clone, Debug)]
pub struct ModuleReport {
    /// The architecture its PTX is for (`sm_80`).
    pub target: String,
    /// How many kernels it holds.
    pub kernels: usize,
    /// The architectures of the cubins assembled at build time (`KERNEL_CUBIN_ARCHS`).
    pub cubins: Vec<String>,
    /// The architectures of its variants (`Builder::variant`, `sm_90a`).
    pub variants: Vec<String>,
}

/// What the program's kernels can run on (Numba's `cuda.detect()`): the CUDA driver, each GPU
/// the driver sees and how it would run the program's kernels (its cubin, or the PTX the driver
/// compiles, or why not), the PTX modules the build embedded, and the device
/// [`Device::default`] picks, with the reason where that is the CPU backend. It opens each GPU
/// (a context, as `Device::cuda` does) and loads nothing.
///
/// ```
/// let report = kernel_runtime::detect();
/// println!("{report}");
/// // Each GPU the driver sees, with how it runs each of the program's modules.
/// assert_eq!(report.gpus.len(), kernel_runtime::Device::gpu_count());
/// ```
pub fn detect() -> Detection {
    let modules = modules();
    let pieces: Vec<Pieces<'_>> = modules.iter().map(|text| Pieces::of(text)).collect();
    let gpus = (0..Device::gpu_count())
        .map(|ordinal| gpu_report(ordinal, &pieces))
        .collect();
    Detection {
        driver: super::cuda::driver_version(),
        gpus,
        modules: pieces.iter().map(module_report).collect(),
        default: default_device(),
    }
}

fn module_report(pieces: &Pieces<'_>) -> ModuleReport {
    let target = super::link::ptx_target(pieces.main).map_or("?".into(), |t| format!("sm_{t}"));
    ModuleReport {
        target,
        kernels: pieces
            .main
            .lines()
            .filter(|l| l.contains(".entry "))
            .count(),
        cubins: pieces.cubins.iter().map(|c| c.name.to_string()).collect(),
        variants: pieces.variants.iter().map(|v| v.name.to_string()).collect(),
    }
}

fn gpu_report(ordinal: usize, pieces: &[Pieces<'_>]) -> GpuReport {
    let gpu = match Device::cuda(ordinal) {
        Ok(gpu) => gpu,
        Err(e) => {
            return GpuReport {
                ordinal,
                opened: Err(e.to_string()),
                runs: Vec::new(),
            }
        }
    };
    let (major, minor) = gpu.compute_capability().unwrap_or((0, 0));
    let total = gpu.memory_info().map_or(0, |m| m.total);
    let runs = pieces
        .iter()
        .map(|p| match p.code_for(major, minor) {
            Code::Cubin(arch) => Ok(format!("its cubin for {arch}")),
            Code::Variant(arch) => Ok(format!(
                "the PTX of its {arch} variant, compiled by the driver"
            )),
            Code::Ptx(t) => Ok(format!("its PTX for sm_{t}, compiled by the driver")),
            Code::Linked(t) => Ok(format!(
                "its PTX for sm_{t}, linked by the driver with its foreign code"
            )),
            Code::TooNew(t) => Err(format!(
                "its PTX is for sm_{t}, newer than this GPU's sm_{major}{minor}: build with \
                 KERNEL_PTX_ARCH=sm_{major}{minor}"
            )),
        })
        .collect();
    GpuReport {
        ordinal,
        opened: Ok(GpuInfo {
            name: gpu.gpu().map_or_else(|| gpu.name(), |g| g.name.clone()),
            compute_capability: (major, minor),
            memory_bytes: total,
        }),
        runs,
    }
}

/// What [`Device::from_env`] picks, told without opening anything it would not.
fn default_device() -> String {
    let spec = std::env::var("KERNEL_DEVICE").unwrap_or_default();
    if !spec.trim().is_empty() {
        return match Device::from_env() {
            Ok(dev) => format!("{} (KERNEL_DEVICE={spec})", dev.name()),
            Err(e) => format!("none: {e}"),
        };
    }
    match Device::default_gpu() {
        Ok(gpu) => format!("{} (the first GPU)", gpu.name()),
        Err(e) => format!("the CPU backend: {e}"),
    }
}

impl fmt::Display for Detection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.driver {
            Ok((major, minor)) => writeln!(f, "CUDA driver: {major}.{minor}")?,
            Err(why) => writeln!(f, "CUDA driver: none ({why})")?,
        }
        writeln!(f, "GPUs: {}", self.gpus.len())?;
        for gpu in &self.gpus {
            write!(f, "  cuda:{}", gpu.ordinal)?;
            match &gpu.opened {
                Err(why) => writeln!(f, ": cannot be opened: {why}")?,
                Ok(info) => {
                    let (major, minor) = info.compute_capability;
                    let gib = info.memory_bytes as f64 / f64::from(1u32 << 30);
                    writeln!(f, ": {}, sm_{major}{minor}, {gib:.1} GiB", info.name)?;
                }
            }
            for (k, run) in gpu.runs.iter().enumerate() {
                match run {
                    Ok(how) => writeln!(f, "    module {k}: runs {how}")?,
                    Err(why) => writeln!(f, "    module {k}: cannot run: {why}")?,
                }
            }
        }
        writeln!(f, "PTX modules: {}", self.modules.len())?;
        for (k, m) in self.modules.iter().enumerate() {
            write!(
                f,
                "  module {k}: {} kernels, PTX for {}",
                m.kernels, m.target
            )?;
            for (what, archs) in [("cubins", &m.cubins), ("variants", &m.variants)] {
                if !archs.is_empty() {
                    write!(f, ", {what} for {}", archs.join(", "))?;
                }
            }
            writeln!(f)?;
        }
        write!(f, "Device::default(): {}", self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_each_part_and_the_default_device() {
        let report = Detection {
            driver: Ok((12, 8)),
            gpus: vec![GpuReport {
                ordinal: 0,
                opened: Ok(GpuInfo {
                    name: "H200".into(),
                    compute_capability: (9, 0),
                    memory_bytes: 3 << 30,
                }),
                runs: vec![
                    Ok("its cubin for sm_90".into()),
                    Err("its PTX is for sm_100".into()),
                ],
            }],
            modules: vec![ModuleReport {
                target: "sm_80".into(),
                kernels: 3,
                cubins: vec!["sm_90".into()],
                variants: vec!["sm_90a".into()],
            }],
            default: "CUDA device 0 (H200) (the first GPU)".into(),
        };
        let text = report.to_string();
        for line in [
            "CUDA driver: 12.8",
            "  cuda:0: H200, sm_90, 3.0 GiB",
            "    module 0: runs its cubin for sm_90",
            "    module 1: cannot run: its PTX is for sm_100",
            "  module 0: 3 kernels, PTX for sm_80, cubins for sm_90, variants for sm_90a",
            "Device::default(): CUDA device 0 (H200) (the first GPU)",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }
}
