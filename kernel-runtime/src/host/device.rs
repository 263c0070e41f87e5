//! [`Device`]: where kernels run and arrays live.

use super::array::{DeviceArray, Rank, ShapeArg, ToDevice};
use super::cuda::{self, CudaDevice};
use super::error::Error;
use super::event::Event;
use super::stream::Stream;
use crate::device_copy::{AnyBitPattern, DeviceCopy};
use crate::dim::Dim3;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

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

/// The limits a launch is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest block dimensions.
    pub max_block: Dim3,
    /// Largest grid dimensions.
    pub max_grid: Dim3,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Most shared memory (static and dynamic) per block without opting in, in bytes: 48 KiB.
    pub max_shared_bytes: usize,
    /// Most shared memory per block with the opt-in (CUDA's
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: 227 KiB on an H100 or H200,
    /// 163 KiB on an A100, 96 KiB on a V100). A launch whose dynamic shared memory takes a block
    /// past `max_shared_bytes` opts in by itself, up to this.
    pub max_shared_bytes_optin: usize,
}

impl Limits {
    /// The limits every CUDA GPU since compute capability 3.0 offers without opting in.
    pub const CUDA_DEFAULT: Limits = Limits {
        max_block: Dim3::new(1024, 1024, 64),
        max_grid: Dim3::new(2_147_483_647, 65535, 65535),
        max_threads_per_block: 1024,
        max_shared_bytes: 48 * 1024,
        max_shared_bytes_optin: 48 * 1024,
    };

    /// The CPU backend's limits: CUDA's defaults, so that a kernel that launches on the CPU
    /// launches on a GPU, and the shared memory of the largest GPUs' opt-in (227 KiB, sm_90).
    pub const CPU: Limits = Limits {
        max_shared_bytes_optin: 227 * 1024,
        ..Limits::CUDA_DEFAULT
    };

    /// The most shared memory a block can have, opting in where the device allows.
    pub fn shared_bytes_limit(&self) -> usize {
        self.max_shared_bytes.max(self.max_shared_bytes_optin)
    }
}

#[derive(Debug)]
struct Inner {
    kind: DeviceKind,
    limits: Limits,
    /// The GPU, for a CUDA device.
    cuda: Option<CudaDevice>,
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
    /// The device `KERNEL_DEVICE` names (`cpu`, `cpu-checked`, `cuda`, `cuda:N`), else a usable CUDA GPU, else
    /// the CPU backend. When the device asked for cannot be used, says why once on stderr and
    /// runs on the CPU; [`Device::from_env`] returns that error instead.
    fn default() -> Self {
        Self::from_env().unwrap_or_else(|e| cpu_because(&e))
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

    /// The one CPU-backend device of `kind`, made at its first use.
    fn host(cell: &'static OnceLock<Device>, kind: DeviceKind) -> Device {
        cell.get_or_init(|| Device {
            inner: Arc::new(Inner {
                kind,
                limits: Limits::CPU,
                cuda: None,
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
    /// shared memory no thread of the block has written. `KERNEL_DEVICE=cpu-checked` makes it
    /// the default device.
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

    /// Records an event on the device's queue, after all the work queued on it so far, its
    /// streams' included: the time between two events is the time the device took for the work
    /// queued between them (on the CPU backend, which runs each call to completion, the
    /// wall-clock time).
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// let dev = Device::cpu();
    /// let start = dev.event()?;
    /// let x = dev.zeros::<f32, _>(1000)?;
    /// let end = dev.event()?;
    /// assert!(start.elapsed_ms(&end)? >= 0.0);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn event(&self) -> Result<Event, Error> {
        Event::record(self)
    }

    /// A new stream of this device, for kernels and copies that may run at the same time as
    /// other streams' ([`LaunchConfig::on_stream`](crate::LaunchConfig::on_stream),
    /// [`Stream::upload`], [`Stream::download`]).
    pub fn stream(&self) -> Result<Stream, Error> {
        Stream::new(self)
    }

    /// The device `KERNEL_DEVICE` names: `cpu`, `cpu-checked` ([`Device::cpu_checked`]), `cuda`
    /// (GPU 0) or `cuda:N`; unset or empty
    /// means the first usable CUDA GPU when the program has PTX for its kernels, else the CPU
    /// backend (saying once on stderr why).
    pub fn from_env() -> Result<Device, Error> {
        let spec = std::env::var("KERNEL_DEVICE").unwrap_or_default();
        match Self::parse_spec(spec.trim())? {
            Some(DeviceKind::Cpu) => Ok(Device::cpu()),
            Some(DeviceKind::CpuChecked) => Ok(Device::cpu_checked()),
            Some(DeviceKind::Cuda(n)) => Device::cuda(n),
            None if super::embedded::PTX_MODULES.is_empty() => {
                Ok(cpu_because(&Error::NoPtxAnywhere))
            }
            None => Ok(Device::cuda(0).unwrap_or_else(|e| cpu_because(&e))),
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

    /// A human-readable name: `CPU backend (8 threads)`, ...
    pub fn name(&self) -> String {
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
        super::graph::outside_cpu_replay(self, "waiting for the device")?;
        match self.gpu() {
            Some(gpu) => gpu.synchronize(),
            None => Ok(()),
        }
    }

    /// Copies a slice, `Vec` or `ndarray` array to this device.
    pub fn to_device<H: ToDevice + ?Sized>(
        &self,
        host: &H,
    ) -> Result<DeviceArray<H::Elem, H::Dim>, Error> {
        DeviceArray::from_host(self, host)
    }

    /// A zero-filled array of `shape` (`n`, `(n, m)` or `(n, m, k)`).
    pub fn zeros<T: DeviceCopy, S: ShapeArg>(
        &self,
        shape: S,
    ) -> Result<DeviceArray<T, S::Dim>, Error> {
        DeviceArray::zeros(self, shape.into_shape()?)
    }

    /// An array of `shape` whose memory is not cleared, like Numba's `cuda.device_array` or
    /// `cupy.empty`: for outputs and scratch space that a kernel overwrites before anything
    /// reads them. Saves the memory-wide clearing [`zeros`](Self::zeros) costs on a GPU.
    ///
    /// Its elements are unspecified until written: on a GPU, whatever the memory held; on the
    /// CPU backend, zeros; in checked mode, all-one bits (NaN for floats, `MAX` or -1 for
    /// integers), so that a kernel reading elements it never wrote shows it in its results.
    ///
    /// ```
    /// use kernel_runtime::{Device, ndarray::Array2};
    /// let dev = Device::cpu();
    /// let mut out = dev.empty::<f32, _>((2, 3))?;
    /// out.copy_from_host(&Array2::from_elem((2, 3), 1.0f32))?;
    /// assert_eq!(out.to_vec()?, vec![1.0; 6]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn empty<T: AnyBitPattern, S: ShapeArg>(
        &self,
        shape: S,
    ) -> Result<DeviceArray<T, S::Dim>, Error> {
        DeviceArray::empty(self, shape.into_shape()?)
    }

    /// An uncleared array with the shape of `like`: [`empty`](Self::empty) for its shape.
    pub fn empty_like<T: AnyBitPattern, U: DeviceCopy, D: Rank>(
        &self,
        like: &DeviceArray<U, D>,
    ) -> Result<DeviceArray<T, D>, Error> {
        DeviceArray::empty(self, like.raw_dim())
    }

    /// A zero-filled array with the shape of `like`.
    pub fn zeros_like<T: DeviceCopy, U: DeviceCopy, D: Rank>(
        &self,
        like: &DeviceArray<U, D>,
    ) -> Result<DeviceArray<T, D>, Error> {
        DeviceArray::zeros(self, like.raw_dim())
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
}
