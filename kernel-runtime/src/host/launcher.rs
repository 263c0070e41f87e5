//! The launch protocol. What `#[kernel]` writes of a kernel is a description of it
//! ([`KernelMeta`], through [`Kernel`]) and its bodies ([`Instance`]); every launch, whether
//! `launch`, `launch_with` or `forall` ([`Sizing`]), on a stream or in a graph, cooperative or
//! not, is one call of [`launch`], which drives it: checks it, passes its arguments, orders it
//! with the work of other streams, and sends it to a GPU, the CPU backend's fast run or its
//! checked mode.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! fn scale(k: f32, x: &mut [f32]) {
//!     let i = grid(1);
//!     if i < x.len() {
//!         x[i] *= k;
//!     }
//! }
//!
//! // What the macro recorded of the kernel.
//! assert_eq!(scale::META.name, "scale");
//! assert_eq!(scale::META.params, ["k", "x"]);
//! assert_eq!(scale::META.instances[0].1, ["f32", "ptr", "usize"]);
//! ```

use super::args::{Args, Params};
use super::attributes::KernelAttributes;
use super::cooperative::{check_cooperative, cuda_launch_cooperative};
use super::device::Device;
use super::error::{Error, LaunchError};
use super::launch::{IntoDim3, LaunchConfig};
use super::params::GpuParams;
use crate::cpu::bodies::FastRun;
use crate::cpu::check::LaunchShadows;
use crate::cpu::fault::KernelFault;
use crate::cpu::launch::context::Ctx;
use crate::cpu::launch::LaunchSpec;

/// Why a kernel has no PTX module: its crate's `build.rs` wrote none.
pub const NO_MODULE: &str = "its crate's build.rs wrote no PTX module: it must call \
    `kernel_build::build()`, on a machine with the nvptx64 toolchain (see kernel-build)";

/// Why a kernel has no PTX module: its crate's module does not hold it.
pub const NOT_IN_MODULE: &str = "the PTX module its crate's build.rs compiled for this target \
    does not hold it: kernel-build builds src/lib.rs, src/main.rs, src/bin/, examples/, tests/ \
    and benches/ where cargo finds them by its conventions, as written: a target at another path \
    gets none, nor does a kernel that a `macro_rules!` macro writes: define the kernel, written \
    out, in the library";

/// What `#[kernel]` records of a kernel: its name and parameters, its PTX entries, its shared
/// memory, its PTX module, and how the CPU backend runs it.
#[derive(Clone, Copy)]
pub struct KernelMeta {
    /// The kernel's name (its PTX entry; a generic kernel's entries add their types to it).
    pub name: &'static str,
    /// The names of its parameters, in order.
    pub params: &'static [&'static str],
    /// The PTX entries (one, or one per instance of a generic kernel) and the parameters of
    /// each, in order: `ptr` and one `usize` per dimension for each array, the type's name for
    /// each scalar or struct, and `ptr` for a cooperative kernel's grid barrier counter.
    pub instances: &'static [(&'static str, &'static [&'static str])],
    /// The bytes of static shared memory its `shared_array!`s take.
    pub static_shared_bytes: usize,
    /// The PTX module holding it (its crate's kernels), or why there is none.
    pub ptx: Result<&'static str, &'static str>,
    /// Whether it has barriers or warp collectives (the CPU backend then splits it or runs its
    /// threads as coroutines).
    pub barriers: bool,
    /// Whether the CPU backend runs it split at its barriers and warp collectives into thread
    /// loops (else, with either, as coroutines).
    pub split: bool,
    /// Whether it waits at grid barriers (`grid_sync()`): every launch of it is cooperative,
    /// its grid no larger than what can be resident at once.
    pub cooperative: bool,
    /// Whether code outside its body may ask for the running thread's coordinates (a
    /// `#[device]` function calling `thread_idx()`): the CPU backend then records them.
    pub thread_context: bool,
    /// Whether only grid-level indices (`grid(n)`) tell its threads apart: the CPU backend then
    /// runs them as rows along x.
    pub grid_level: bool,
    /// The most threads a block of it may have (`#[kernel(launch_bounds = ..)]`), or 0 for the
    /// device's limit.
    pub max_threads: u32,
    /// The dynamic shared memory every launch of it gives each block at least
    /// (`#[kernel(dynamic_shared = bytes)]`): a launch whose configuration asks for less, or
    /// none (`launch`, `forall`), gets this much.
    pub dynamic_shared_bytes: usize,
}

impl std::fmt::Debug for KernelMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelMeta")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("instances", &self.instances)
            .field("static_shared_bytes", &self.static_shared_bytes)
            .field("ptx", &self.ptx.map(|ptx| format!("{} bytes", ptx.len())))
            .field("barriers", &self.barriers)
            .field("split", &self.split)
            .field("cooperative", &self.cooperative)
            .field("thread_context", &self.thread_context)
            .field("grid_level", &self.grid_level)
            .field("max_threads", &self.max_threads)
            .field("dynamic_shared_bytes", &self.dynamic_shared_bytes)
            .finish()
    }
}

impl KernelMeta {
    /// A kernel of no name, parameter or entry, without shared memory, barriers or PTX, whose
    /// threads only grid-level indices tell apart: what `#[kernel]` writes a kernel's
    /// description over, field by field, where the kernel differs.
    pub const BASE: KernelMeta = KernelMeta {
        name: "",
        params: &[],
        instances: &[],
        static_shared_bytes: 0,
        ptx: Err("no PTX module"),
        barriers: false,
        split: false,
        cooperative: false,
        thread_context: false,
        grid_level: false,
        max_threads: 0,
        dynamic_shared_bytes: 0,
    };

    /// The dynamic shared memory a launch that asks for `asked` bytes gives each block: at
    /// least what the kernel declares.
    fn dynamic_shared(&self, asked: usize) -> usize {
        asked.max(self.dynamic_shared_bytes)
    }

    /// What the CPU backend needs to know of a launch of the kernel with `config`.
    fn spec(&self, config: &LaunchConfig) -> LaunchSpec {
        LaunchSpec {
            kernel: self.name,
            grid: config.grid,
            block: config.block,
            shared_bytes: config.block_shared_bytes(self.static_shared_bytes),
            barriers: self.barriers,
            thread_context: self.thread_context,
            grid_level: self.grid_level,
        }
    }

    /// The PTX module, or the error of a GPU launch without one.
    fn module(&self) -> Result<&'static str, Error> {
        self.ptx.map_err(|reason| Error::NoPtx {
            kernel: self.name,
            reason,
        })
    }
}

/// A kernel: the value `#[kernel]` names like the function, whose methods launch it.
///
/// The macro implements it; its launch methods (`launch`, `launch_with`, `forall`) are the
/// value's own, typed by the kernel's parameters.
pub trait Kernel {
    /// What the macro recorded of the kernel.
    const META: KernelMeta;

    /// The PTX module holding this kernel (its crate's kernels), when the crate's `build.rs`
    /// compiled one.
    fn ptx(&self) -> Option<&'static str> {
        Self::META.ptx.ok()
    }

    /// This kernel's PTX alone, as Numba's `kernel.inspect_asm()` gives it: its crate's module
    /// cut to the header and what the kernel's entries use (every instance's, for a generic
    /// kernel), the functions they call and the variables they name, in the module's order; a
    /// module `ptxas` assembles by itself.
    ///
    /// ```
    /// use kernel_runtime::prelude::*;
    ///
    /// #[kernel]
    /// fn scale(a: f32, x: &mut [f32]) {
    ///     let i = grid(1);
    ///     if i < x.len() {
    ///         x[i] *= a;
    ///     }
    /// }
    ///
    /// match scale.inspect_ptx() {
    ///     Ok(ptx) => assert!(ptx.contains(".entry scale(")),
    ///     // Built without an nvptx64 toolchain, or without `kernel_build` in `build.rs`.
    ///     Err(e) => assert!(e.to_string().contains("scale"), "{e}"),
    /// }
    /// ```
    ///
    /// # Errors
    /// [`Error::NoPtx`] where the crate has no PTX module, or its module no entry of this
    /// kernel's.
    fn inspect_ptx(&self) -> Result<String, Error> {
        let meta = &Self::META;
        let module = super::link::Pieces::of(meta.module()?).main;
        let entries: Vec<&str> = meta.instances.iter().map(|&(entry, _)| entry).collect();
        super::ptx_listing::listing(module, &entries).ok_or(Error::NoPtx {
            kernel: meta.name,
            reason: "its crate's PTX module has no entry of that name: build the crate again",
        })
    }

    /// This kernel's machine code for the GPU architecture `arch` (`"sm_90"`), as Numba's
    /// `kernel.inspect_sass()` gives it: [`inspect_ptx`](Self::inspect_ptx)'s module assembled
    /// by the CUDA toolkit's `ptxas` and disassembled by its `nvdisasm` (`KERNEL_PTXAS`,
    /// `KERNEL_NVDISASM`, else `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, else
    /// `PATH`), with no GPU needed.
    ///
    /// # Errors
    /// As [`inspect_ptx`](Self::inspect_ptx)'s; [`Error::Tool`] where `arch` names no
    /// architecture, a tool is missing, or `ptxas` refuses the module for `arch`.
    fn inspect_sass(&self, arch: &str) -> Result<String, Error> {
        super::sass::of_ptx(&self.inspect_ptx()?, arch)
    }

    /// The most blocks of `threads` threads (with `dynamic_shared_bytes` of dynamic shared
    /// memory each, or what the kernel declares where that is more, as its launches give) that
    /// a cooperative launch of this kernel may have on `device`: what can be resident at once,
    /// as Numba's `kernel.max_cooperative_grid_blocks(blockdim, dynsmemsize)`; a generic
    /// kernel's is the least of its instances'.
    fn max_cooperative_grid_blocks(
        &self,
        device: &Device,
        threads: impl IntoDim3 + Copy,
        dynamic_shared_bytes: usize,
    ) -> Result<u32, Error> {
        let meta = &Self::META;
        let mut blocks = u32::MAX;
        for &(entry, _) in meta.instances {
            blocks = blocks.min(super::cooperative::max_cooperative_grid_blocks(
                device,
                entry,
                meta.ptx,
                threads,
                meta.dynamic_shared(dynamic_shared_bytes),
                meta.static_shared_bytes,
            )?);
        }
        Ok(blocks)
    }

    /// What the GPU `device` compiled of this kernel: its registers, shared, local and
    /// constant memory, and the most threads a block of it may have, as Numba's
    /// `kernel.get_regs_per_thread()` and the others read them from the driver; a generic
    /// kernel's hold for every instance (its largest use of each, its smallest limit).
    ///
    /// # Errors
    /// [`Error::NoGpuFunction`] on the CPU backend, which compiles nothing;
    /// [`Error::NoPtx`] where the crate has no PTX module.
    fn attributes(&self, device: &Device) -> Result<KernelAttributes, Error> {
        let meta = &Self::META;
        let entries = meta.instances.iter().map(|&(entry, _)| entry);
        let shared = meta.static_shared_bytes;
        super::attributes::of_kernel(device, meta.name, meta.ptx, entries, shared)
    }
}

/// What one instance of a kernel runs: its PTX entry, and its bodies for the CPU backend's
/// fast run (a [`FastRun`]) and checked mode (one thread, `checked(ctx, views, false)`, where
/// a kernel's fast body serves for it where the two are the same).
#[derive(Clone, Copy, Debug)]
pub struct Instance<F, G> {
    /// The PTX entry.
    pub entry: &'static str,
    /// The fast run's body, in the form the CPU backend runs it in.
    pub fast: F,
    /// Checked mode's body.
    pub checked: G,
}

impl<F, G> Instance<F, G> {
    /// The instance of PTX entry `entry`, with these bodies.
    pub const fn new(entry: &'static str, fast: F, checked: G) -> Self {
        Instance {
            entry,
            fast,
            checked,
        }
    }
}

/// A kernel's body, as `#[kernel]` writes it: a closure, which this passes on (its argument
/// may carry `#[inline(always)]`, which a closure bound by `let` may not).
#[inline(always)]
pub const fn body<F>(body: F) -> F {
    body
}

/// How a launch is sized: what `launch`, `launch_with` or `forall` was given.
#[derive(Debug)]
pub enum Sizing {
    /// `launch(blocks, threads)`: the configuration, or why it is not one.
    Blocks(Result<LaunchConfig, LaunchError>),
    /// `launch_with(config)`.
    Config(LaunchConfig),
    /// `forall(tasks)`: one-dimensional blocks of the size the GPU's occupancy calculator gives
    /// the instance (256 threads on the CPU backend), enough of them for a thread per task, on
    /// the arguments' device; no task, no launch (as Numba's `kernel.forall(tasks)`).
    Tasks(usize),
}

impl Sizing {
    /// `blocks` blocks of `threads` threads.
    pub fn blocks(blocks: impl IntoDim3, threads: impl IntoDim3) -> Sizing {
        Sizing::Blocks(LaunchConfig::new(blocks, threads))
    }
}

/// The configuration of a `forall(tasks)` of the instance `entry` of `meta` on `device`, as
/// [`Sizing::Tasks`] says; `None` for no task.
fn cover(
    meta: &KernelMeta,
    entry: &'static str,
    tasks: usize,
    device: &Device,
) -> Result<Option<LaunchConfig>, Error> {
    if tasks == 0 {
        return Ok(None);
    }
    let threads = match device.gpu() {
        Some(gpu) => gpu.block_size(entry, meta.module()?, meta.dynamic_shared_bytes)?,
        None => 256,
    };
    // The driver's calculator keeps within the bounds the kernel's PTX holds; the CPU's size too.
    let threads = match meta.max_threads {
        0 => threads,
        bound => threads.min(bound),
    };
    let config = LaunchConfig::cover(tasks, threads).map_err(|reason| Error::InvalidLaunch {
        kernel: meta.name,
        reason,
    })?;
    Ok(Some(config.on(device)))
}

/// Launches `instance` of `kernel` with `args`, sized as `sizing` says: the launch's device
/// (the configuration's, else the arguments'), the configuration checked against its limits
/// (and a cooperative launch against what can be resident), then the GPU's launch, checked
/// mode's run or the fast CPU run, whose faults name the kernel.
///
/// Only what depends on the kernel's parameters and bodies is compiled per kernel; the rest of
/// the launch is compiled once, in this crate.
///
/// # Safety
/// `instance` must be `kernel`'s own: its PTX entry takes the parameters that `args` push, and
/// with index checks off (`CHECK` false) its bodies keep every index within its array (the
/// kernel's `boundscheck = false` promise). Where `args` hold raw pointers, each must address
/// memory of the launch's device, valid for every access the bodies make through it, without
/// races.
pub unsafe fn launch<K, S, F, G, const CHECK: bool>(
    _kernel: &K,
    sizing: Sizing,
    args: Args<'_, S>,
    instance: Instance<F, G>,
) -> Result<(), Error>
where
    K: Kernel,
    S: Params,
    F: FastRun<S, CHECK>,
    G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
{
    let entry = instance.entry;
    let mut bound = Launch::<S, F, G, CHECK> {
        args: args.0,
        instance: Some(instance),
    };
    // SAFETY: the caller's contract.
    unsafe { drive(&K::META, entry, sizing, &mut bound) }
}

/// A launch's arguments and bodies, as [`drive`] uses them: the one part of a launch compiled
/// per kernel.
trait Bound {
    /// The device the launch runs on: `explicit` where the configuration names one, else the
    /// arguments'.
    fn device(&self, meta: &KernelMeta, explicit: Option<&Device>) -> Result<Device, Error>;

    /// Appends pointers to the arguments' PTX parameters.
    fn push_gpu<'p>(&'p self, params: &mut GpuParams<'p>);

    /// Runs the launch of `spec` on the CPU backend, in checked mode where `checked` says.
    ///
    /// # Safety
    /// As [`launch`], every array argument on the CPU backend.
    unsafe fn run_cpu(
        &mut self,
        meta: &KernelMeta,
        spec: &LaunchSpec,
        checked: bool,
    ) -> Result<(), KernelFault>;
}

/// [`Bound`] of a kernel of the parameters `S`, with the bodies `F` and `G` (until the run
/// takes them).
struct Launch<'a, S: Params, F, G, const CHECK: bool> {
    args: S::Args<'a>,
    instance: Option<Instance<F, G>>,
}

impl<S, F, G, const CHECK: bool> Bound for Launch<'_, S, F, G, CHECK>
where
    S: Params,
    F: FastRun<S, CHECK>,
    G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
{
    fn device(&self, meta: &KernelMeta, explicit: Option<&Device>) -> Result<Device, Error> {
        S::device(&self.args, meta.name, meta.params, explicit)
    }

    fn push_gpu<'p>(&'p self, params: &mut GpuParams<'p>) {
        S::push_gpu(&self.args, params)
    }

    unsafe fn run_cpu(
        &mut self,
        meta: &KernelMeta,
        spec: &LaunchSpec,
        checked: bool,
    ) -> Result<(), KernelFault> {
        let Some(instance) = self.instance.take() else {
            return Ok(());
        };
        if checked {
            // SAFETY: the caller's contract.
            return unsafe { run_checked::<S, F, G, CHECK>(spec, meta, &mut self.args, instance) };
        }
        // SAFETY: the caller's contract.
        let views = unsafe { S::views::<CHECK>(&mut self.args, meta.params) };
        instance.fast.run(spec, views)
    }
}

/// [`launch`] of the instance `entry` of `meta`, its arguments and bodies `bound`.
///
/// # Safety
/// As [`launch`].
unsafe fn drive(
    meta: &KernelMeta,
    entry: &'static str,
    sizing: Sizing,
    bound: &mut dyn Bound,
) -> Result<(), Error> {
    let explicit = match &sizing {
        Sizing::Config(config) => config.device.as_ref(),
        _ => None,
    };
    let device = bound.device(meta, explicit)?;
    let on_stream = matches!(&sizing, Sizing::Config(c) if c.stream.is_some());
    super::device::launch_permitted(&device, meta.name, on_stream)?;
    let Some(config) = configure(meta, entry, sizing, &device)? else {
        return Ok(());
    };
    if device.gpu().is_some() {
        let mut params = GpuParams::with_capacity(meta.instances.first().map_or(0, |i| i.1.len()));
        bound.push_gpu(&mut params);
        // SAFETY: the caller's contract: `params` are the entry's, the arrays the device's.
        return unsafe { gpu_launch(meta, entry, &device, &config, &mut params) };
    }
    let spec = meta.spec(&config);
    // Module arrays keep their values while the launch runs, as a GPU orders a `set` after it.
    let _reading = crate::cpu::launch::running();
    // SAFETY: the launch runs on the CPU backend, where every array argument lives (`device`
    // checked); the rest is the caller's contract.
    let run = unsafe { bound.run_cpu(meta, &spec, device.is_checked()) };
    run.map_err(|fault| fault.into_error(meta.name))
}

/// Checked mode's run of a launch of `spec`: the launch's shadows, the views traced in them,
/// then the kernel's threads, as its form `F` runs them in checked mode
/// ([`FastRun::run_checked`]).
///
/// # Safety
/// As [`launch`], on the CPU backend, where every array argument lives.
unsafe fn run_checked<S, F, G, const CHECK: bool>(
    spec: &LaunchSpec,
    meta: &KernelMeta,
    args: &mut S::Args<'_>,
    instance: Instance<F, G>,
) -> Result<(), KernelFault>
where
    S: Params,
    F: FastRun<S, CHECK>,
    G: for<'v> Fn(Ctx, S::Views<'v, CHECK>, bool) + Copy + Sync,
{
    let mut shadows = LaunchShadows::new(spec)?;
    // SAFETY: the caller's contract; the views live in this frame, after `shadows`.
    let views = unsafe { S::traced_views::<CHECK>(args, meta.params, &mut shadows) };
    let (fast, checked) = (instance.fast, instance.checked);
    let run = fast.run_checked(&shadows, spec, meta.cooperative, views, checked);
    S::after_checked(args, &mut shadows);
    run
}

/// The configuration of a launch of the instance `entry` of `meta` on `device` that `sizing`
/// asks for, with at least the dynamic shared memory the kernel declares, checked: within the
/// device's limits, and a cooperative launch's grid within what can be resident at once. `None`
/// for a `forall` of no task.
fn configure(
    meta: &KernelMeta,
    entry: &'static str,
    sizing: Sizing,
    device: &Device,
) -> Result<Option<LaunchConfig>, Error> {
    let mut config = match sizing {
        Sizing::Config(config) => config,
        Sizing::Blocks(config) => config.map_err(|reason| Error::InvalidLaunch {
            kernel: meta.name,
            reason,
        })?,
        Sizing::Tasks(tasks) => match cover(meta, entry, tasks, device)? {
            Some(config) => config,
            None => return Ok(None),
        },
    };
    config.dynamic_shared_bytes = meta.dynamic_shared(config.dynamic_shared_bytes);
    check(meta, entry, device, &config)?;
    Ok(Some(config))
}

/// The checks before a launch of the instance `entry` of `kernel` on `device`: the
/// configuration within the device's limits, and a cooperative launch's grid within what can
/// be resident at once.
fn check(
    meta: &KernelMeta,
    entry: &'static str,
    device: &Device,
    config: &LaunchConfig,
) -> Result<(), Error> {
    let invalid = |reason| Error::InvalidLaunch {
        kernel: meta.name,
        reason,
    };
    config
        .validate(device.limits(), meta.static_shared_bytes)
        .map_err(invalid)?;
    let threads = config.block.volume();
    if meta.max_threads > 0 && threads > meta.max_threads as u64 {
        return Err(invalid(LaunchError::PastLaunchBounds {
            dims: config.block,
            threads,
            bound: meta.max_threads,
        }));
    }
    if meta.cooperative {
        check_cooperative(device, entry, meta.ptx, config, meta.static_shared_bytes)?;
    }
    Ok(())
}

/// The GPU's launch of the instance `entry` of `kernel`, cooperative where the kernel is.
///
/// # Safety
/// `params` must point at one value per parameter of the PTX entry (but a cooperative kernel's
/// counter, which this adds), of its type, in order, and the arrays among them must be the
/// device's.
unsafe fn gpu_launch(
    meta: &KernelMeta,
    entry: &'static str,
    device: &Device,
    config: &LaunchConfig,
    params: &mut GpuParams<'_>,
) -> Result<(), Error> {
    let shared = meta.static_shared_bytes;
    if meta.cooperative {
        // SAFETY: the caller's contract.
        return unsafe { cuda_launch_cooperative(device, entry, meta.ptx, config, shared, params) };
    }
    let gpu = device.gpu().ok_or(Error::NoDevice { kernel: meta.name })?;
    let ptx = meta.module()?;
    // SAFETY: the caller's contract.
    config.queue(|| unsafe { gpu.launch(entry, ptx, &config.on_gpu(shared, false), params) })
}
