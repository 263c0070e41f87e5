//! [`Device`]: where kernels run and arrays live.

use super::cuda::{self, CudaDevice};
use super::error::Error;
pub use super::limits::Limits;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

thread_local! {
    /// Whether this thread is replaying a graph of the CPU backend, whose work may do only
    /// what a GPU's graph holds.
    static CPU_REPLAY: Cell<bool> = const { Cell::new(false) };
}

/// `Err` where `what` (an allocation, a copy, a wait, a launch) cannot be done on `device`:
/// it stands for a device `KERNEL_DEVICE` named that could not be opened
/// ([`Error::DeviceUnavailable`]), or this thread replays a graph of the CPU backend, which
/// refuses it as a GPU refuses it in a capture, so that a program tested on the CPU backend does
/// on a GPU what it did there.
pub(crate) fn permitted(device: &Device, what: &str) -> Result<(), Error> {
    device.usable()?;
    match device.gpu().is_none() && CPU_REPLAY.with(Cell::get) {
        true => Err(Error::InCapture { what: what.into() }),
        false => Ok(()),
    }
}

/// `Err` where this thread replays a graph of the CPU backend and `kernel` is launched on a
/// stream of its own, which a GPU's capture refuses.
pub(crate) fn launch_permitted(
    device: &Device,
    kernel: &str,
    on_stream: bool,
) -> Result<(), Error> {
    match on_stream {
        true => permitted(
            device,
            &format!("launching kernel `{kernel}` on a stream of its own"),
        ),
        false => device.usable(),
    }
}

/// Runs `f` as a replay of a CPU backend's graph ([`permitted`] refuses in it).
pub(crate) fn replaying_on_cpu<R>(f: impl FnOnce() -> R) -> R {
    let outer = CPU_REPLAY.with(|r| r.replace(true));
    let result = f();
    CPU_REPLAY.with(|r| r.set(outer));
    result
}

/// Which backend a [`Device`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The CPU backend: every simulated thread runs on the host's cores.
    Cpu,
    /// The CPU backend in checked mode: out-of-bounds indices, data races, divergent barriers
    /// and reads of shared memory never written are reported with their threads.
    CpuChecked,
    /// The CUDA GPU with this ordinal.
    Cuda(usize),
}

#[derive(Debug)]
struct Inner {
    kind: DeviceKind,
    limits: Limits,
    /// The GPU, for a CUDA device.
    cuda: Option<CudaDevice>,
    /// Why the device `KERNEL_DEVICE` named could not be opened, for the stand-in that
    /// [`Device::default`] returns then: everything done on it fails so.
    unavailable: Option<Unavailable>,
}

/// A device that `KERNEL_DEVICE` named and that could not be opened.
#[derive(Debug)]
struct Unavailable {
    asked: String,
    reason: String,
}

/// A device kernels run on and arrays live on: a CUDA GPU or the CPU backend. Cheap to clone.
///
/// ```
/// use kernel_runtime::{Device, DeviceKind};
/// let dev = Device::cpu();
/// assert_eq!(dev.kind(), DeviceKind::Cpu);
/// let x = dev.to_device(&[1u8, 2, 3][..])?;
/// assert_eq!(x.to_vec()?, [1, 2, 3]);
/// # Ok::<(), kernel_runtime::Error>(())
/// ```
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

/// The device's [`name`](Device::name): `CPU backend (8 threads)`, `CUDA device 0 (NVIDIA H200)`.
impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// `Device("CPU backend (8 threads)")`: the name, not the handles behind it.
impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Device").field(&self.name()).finish()
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.inner.kind == other.inner.kind
    }
}
impl Eq for Device {}

impl Default for Device {
    /// The device `KERNEL_DEVICE` names (`cpu`, `cpu-checked`, `cuda`, `cuda:N`), else a usable
    /// CUDA GPU, else the CPU backend (saying once on stderr why it is not a GPU).
    ///
    /// A device that `KERNEL_DEVICE` names is not replaced by another: where it cannot be
    /// opened (no driver, no such GPU, a value not understood), the device returned stands for
    /// it, and every allocation, copy, wait and launch on it returns
    /// [`Error::DeviceUnavailable`], which says why. [`Device::from_env`] returns that error at
    /// once.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// // With KERNEL_DEVICE=cuda where no GPU is usable:
    /// # std::env::set_var("KERNEL_DEVICE", "cuda:9999");
    /// let dev = Device::default();
    /// let err = dev.to_device(&[1.0f32, 2.0][..]).unwrap_err();
    /// assert!(err.to_string().starts_with("KERNEL_DEVICE=cuda:9999 cannot be used: CUDA device 9999"));
    /// # std::env::remove_var("KERNEL_DEVICE");
    /// ```
    fn default() -> Self {
        let asked = std::env::var("KERNEL_DEVICE").unwrap_or_default();
        Self::from_env().unwrap_or_else(|e| Device::unavailable(asked.trim(), &e))
    }
}

/// The CPU backend, after saying once on stderr why it is not a GPU.
fn cpu_because(e: &Error) -> Device {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| eprintln!("kernel-runtime: running on the CPU backend: {e}"));
    Device::cpu()
}

impl Device {
    /// The CPU backend: blocks spread over all cores.
    pub fn cpu() -> Device {
        static CPU: OnceLock<Device> = OnceLock::new();
        Self::host(&CPU, DeviceKind::Cpu)
    }

    /// `Err` where this device stands for one `KERNEL_DEVICE` named that could not be opened.
    pub(crate) fn usable(&self) -> Result<(), Error> {
        match &self.inner.unavailable {
            Some(why) => Err(Error::DeviceUnavailable {
                asked: why.asked.clone(),
                reason: why.reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The stand-in for the device `asked` names, which could not be opened because of
    /// `reason`.
    fn unavailable(asked: &str, reason: &Error) -> Device {
        let reason = match reason {
            Error::BadDeviceSpec { .. } => {
                "the value is none of `cpu`, `cpu-checked`, `cuda` and `cuda:N`".to_string()
            }
            other => other.to_string(),
        };
        Device {
            inner: Arc::new(Inner {
                kind: DeviceKind::Cpu,
                limits: Limits::CPU,
                cuda: None,
                unavailable: Some(Unavailable {
                    asked: asked.to_string(),
                    reason,
                }),
            }),
        }
    }

    /// The one CPU-backend device of `kind`, made at its first use.
    fn host(cell: &'static OnceLock<Device>, kind: DeviceKind) -> Device {
        cell.get_or_init(|| Device {
            inner: Arc::new(Inner {
                kind,
                limits: Limits::CPU,
                cuda: None,
                unavailable: None,
            }),
        })
        .clone()
    }

    /// The CPU backend in checked mode, the debugger of kernels: the same kernels, every thread
    /// tracked, every access to a writable or shared array recorded, and the launch's first bug
    /// returned as [`Error::CheckFailed`] with the threads and source lines involved: an index
    /// out of bounds (in kernels with `boundscheck = false` too), a data race (two threads of
    /// different blocks, or of one block between two barriers, touch an element and one of them
    /// writes, unless both use atomics), a barrier that part of a block does not reach, a read of
    /// shared memory no thread of the block has written, a read of an array element nothing has
    /// written since [`empty`](Self::empty) (or that a stencil left as border).
    /// `KERNEL_DEVICE=cpu-checked` makes it the default device.
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    /// use kernel_runtime::Finding;
    ///
    /// #[kernel]
    /// fn total(x: &[f32], out: &mut [f32]) {
    ///     let i = grid(1);
    ///     if i < x.len() {
    ///         out[0] += x[i]; // every thread updates out[0]: needs atomic_add
    ///     }
    /// }
    ///
    /// let dev = Device::cpu_checked();
    /// let x = dev.to_device(&[1.0f32; 64][..])?;
    /// let mut out = dev.zeros::<f32, _>(1)?;
    /// match total.launch(2, 32, (&x, &mut out)) {
    ///     Err(Error::CheckFailed { finding, .. }) => {
    ///         assert!(matches!(*finding, Finding::DataRace { array: "out", .. }));
    ///         println!("{finding}");
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn cpu_checked() -> Device {
        static CHECKED: OnceLock<Device> = OnceLock::new();
        Self::host(&CHECKED, DeviceKind::CpuChecked)
    }

    /// Whether this is the CPU backend in checked mode.
    pub fn is_checked(&self) -> bool {
        self.inner.kind == DeviceKind::CpuChecked
    }

    /// The CUDA GPU with this ordinal: its primary context and a stream of its own, on which
    /// every copy and launch of this device is queued in order. While a `Device` of the GPU is
    /// alive, this returns that one.
    ///
    /// Without the CUDA driver library or the GPU, a typed error that says so:
    ///
    /// ```
    /// # use kernel_runtime::{Device, Error};
    /// match Device::cuda(0) {
    ///     Ok(gpu) => println!("running on {}", gpu.name()),
    ///     Err(Error::CudaUnavailable { reason, .. }) => println!("no GPU: {reason}"),
    ///     Err(e) => panic!("{e}"),
    /// }
    /// ```
    pub fn cuda(ordinal: usize) -> Result<Device, Error> {
        static OPEN: OnceLock<Mutex<HashMap<usize, Weak<Inner>>>> = OnceLock::new();
        let mut open = OPEN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(inner) = open.get(&ordinal).and_then(Weak::upgrade) {
            return Ok(Device { inner });
        }
        let gpu = CudaDevice::open(ordinal)
            .map_err(|reason| Error::CudaUnavailable { ordinal, reason })?;
        let inner = Arc::new(Inner {
            kind: DeviceKind::Cuda(ordinal),
            limits: gpu.limits(),
            cuda: Some(gpu),
            unavailable: None,
        });
        open.insert(ordinal, Arc::downgrade(&inner));
        Ok(Device { inner })
    }

    /// Whether a CUDA driver library is there to try (no GPU is opened).
    pub fn cuda_driver_present() -> bool {
        cuda::probe().is_ok()
    }

    /// The GPU behind a CUDA device.
    pub(crate) fn gpu(&self) -> Option<&CudaDevice> {
        self.inner.cuda.as_ref()
    }

    /// The device `KERNEL_DEVICE` names: `cpu`, `cpu-checked` ([`Device::cpu_checked`]), `cuda`
    /// (GPU 0) or `cuda:N`; unset or empty means the first CUDA GPU where the program has PTX
    /// for its kernels and the GPU runs some of it (a GPU older than all of it runs none), else
    /// the CPU backend (saying once on stderr why). [`detect`](crate::detect) reports the choice.
    pub fn from_env() -> Result<Device, Error> {
        let spec = std::env::var("KERNEL_DEVICE").unwrap_or_default();
        match Self::parse_spec(spec.trim())? {
            Some(DeviceKind::Cpu) => Ok(Device::cpu()),
            Some(DeviceKind::CpuChecked) => Ok(Device::cpu_checked()),
            Some(DeviceKind::Cuda(n)) => Device::cuda(n),
            None => Ok(Device::default_gpu().unwrap_or_else(|e| cpu_because(&e))),
        }
    }

    /// The GPU that [`Device::from_env`] picks where `KERNEL_DEVICE` names none: GPU 0, where
    /// the program has PTX and the GPU opens and runs some of it (a GPU older than all of it
    /// runs none); else why the CPU backend runs the kernels.
    pub(crate) fn default_gpu() -> Result<Device, Error> {
        if super::embedded::PTX_MODULES.is_empty() {
            return Err(Error::NoPtxAnywhere);
        }
        let gpu = Device::cuda(0)?;
        let (major, minor) = gpu.compute_capability().unwrap_or((0, 0));
        match super::embedded::runs_none(major, minor) {
            Some(reason) => Err(Error::CudaUnavailable { ordinal: 0, reason }),
            None => Ok(gpu),
        }
    }

    fn parse_spec(spec: &str) -> Result<Option<DeviceKind>, Error> {
        let bad = || Error::BadDeviceSpec {
            value: spec.to_string(),
        };
        match spec.to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "cpu" => Ok(Some(DeviceKind::Cpu)),
            "cpu-checked" | "checked" => Ok(Some(DeviceKind::CpuChecked)),
            "cuda" | "gpu" => Ok(Some(DeviceKind::Cuda(0))),
            s => match s.strip_prefix("cuda:") {
                Some(n) => n
                    .parse()
                    .map(|n| Some(DeviceKind::Cuda(n)))
                    .map_err(|_| bad()),
                None => Err(bad()),
            },
        }
    }

    /// Which backend this is.
    pub fn kind(&self) -> DeviceKind {
        self.inner.kind
    }

    /// The launch limits of this device.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// A GPU's compute capability, `(9, 0)` for an H100 or H200; `None` on the CPU backend. A
    /// module's variant for an architecture (`sm_90a`) runs on the GPUs it names.
    pub fn compute_capability(&self) -> Option<(u32, u32)> {
        self.inner.cuda.as_ref().map(|gpu| gpu.compute_capability())
    }

    /// A human-readable name: `CPU backend (8 threads)`, ...
    pub fn name(&self) -> String {
        if let Some(why) = &self.inner.unavailable {
            return format!("unavailable device (KERNEL_DEVICE={})", why.asked);
        }
        match (&self.inner.cuda, self.inner.kind) {
            (Some(gpu), _) => format!("CUDA device {} ({})", gpu.ordinal, gpu.name),
            (None, DeviceKind::Cuda(n)) => format!("CUDA device {n}"),
            (None, DeviceKind::Cpu) => {
                format!("CPU backend ({} threads)", rayon::current_num_threads())
            }
            (None, DeviceKind::CpuChecked) => format!(
                "CPU backend in checked mode ({} threads)",
                rayon::current_num_threads()
            ),
        }
    }

    /// Waits until all work queued on this device, on every stream, has finished (immediate on
    /// the CPU); a kernel that failed on the GPU since the last wait is reported here.
    pub fn synchronize(&self) -> Result<(), Error> {
        permitted(self, "waiting for the device")?;
        match self.gpu() {
            Some(gpu) => gpu.synchronize(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_specs() {
        assert_eq!(Device::parse_spec("").unwrap(), None);
        assert_eq!(Device::parse_spec("CPU").unwrap(), Some(DeviceKind::Cpu));
        assert_eq!(
            Device::parse_spec("cuda").unwrap(),
            Some(DeviceKind::Cuda(0))
        );
        assert_eq!(
            Device::parse_spec("cuda:3").unwrap(),
            Some(DeviceKind::Cuda(3))
        );
        let bad = Device::parse_spec("tpu").unwrap_err();
        assert!(matches!(bad, Error::BadDeviceSpec { .. }));
        assert!(bad.to_string().contains("`cpu-checked`"), "{bad}");
        assert!(matches!(
            Device::parse_spec("cuda:x"),
            Err(Error::BadDeviceSpec { .. })
        ));
    }

    #[test]
    fn a_device_displays_as_its_name() {
        let threads = rayon::current_num_threads();
        assert_eq!(
            Device::cpu().to_string(),
            format!("CPU backend ({threads} threads)")
        );
        assert_eq!(
            format!("{}", Device::cpu_checked()),
            format!("CPU backend in checked mode ({threads} threads)")
        );
        assert_eq!(
            format!("{:?}", Device::cpu()),
            format!("Device(\"CPU backend ({threads} threads)\")")
        );
    }

    #[test]
    fn a_missing_gpu_is_a_typed_error() {
        // An ordinal no machine has: the driver, where there is one, finds no such GPU.
        let err = Device::cuda(4096).unwrap_err();
        assert!(
            matches!(err, Error::CudaUnavailable { ordinal: 4096, .. }),
            "{err}"
        );
        if !Device::cuda_driver_present() {
            let msg = Device::cuda(0).unwrap_err().to_string();
            assert!(msg.contains("libcuda"), "{msg}");
        }
    }

    #[test]
    fn a_named_device_that_cannot_open_refuses_all_work() {
        let reason = Device::cuda(4096).unwrap_err();
        let dev = Device::unavailable("cuda:4096", &reason);
        assert_eq!(dev.name(), "unavailable device (KERNEL_DEVICE=cuda:4096)");
        let refusals = [
            dev.to_device(&[1.0f32][..]).map(drop),
            dev.zeros::<f32, _>(4).map(drop),
            dev.synchronize(),
        ];
        for err in refusals.map(Result::unwrap_err) {
            assert!(matches!(err, Error::DeviceUnavailable { .. }), "{err}");
            // What `main`'s `?` prints is the sentence, not a struct dump.
            assert_eq!(format!("{err:?}"), err.to_string());
            assert!(err.to_string().contains(&reason.to_string()), "{err}");
        }
        let bad = Device::unavailable("gpu2", &Device::parse_spec("gpu2").unwrap_err());
        let err = bad.synchronize().unwrap_err().to_string();
        assert!(
            err.starts_with("KERNEL_DEVICE=gpu2 cannot be used: the value is none of"),
            "{err}"
        );
    }
}
