//! Every way a host call can fail, as one typed error that says what to do.

use crate::dim::Dim3;

/// The error of every fallible host call.
///
/// Its `Debug` is its message, as `Display` writes it: what `fn main() -> Result<(), Error>`
/// prints when it returns one.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The launch configuration is not valid for the kernel or the device.
    #[error("invalid launch of kernel `{kernel}`: {reason}")]
    InvalidLaunch {
        /// The kernel.
        kernel: &'static str,
        /// What is wrong.
        reason: LaunchError,
    },
    /// A launch configuration no kernel can run with
    /// ([`LaunchConfig::new`](crate::LaunchConfig::new)), passed on by `?`.
    #[error("invalid launch configuration: {0}")]
    InvalidConfig(#[from] LaunchError),
    /// The kernel stopped on a fault: an index out of bounds, a divergent barrier, a panic.
    #[error("kernel `{kernel}` failed: {message}")]
    KernelFault {
        /// The kernel.
        kernel: &'static str,
        /// What happened, with the block and thread.
        message: String,
    },
    /// Checked mode ([`Device::cpu_checked`](crate::Device::cpu_checked)) found a bug in the
    /// kernel: an index out of bounds, a data race, a divergent barrier or a read of shared
    /// memory never written.
    #[error("kernel `{kernel}` has a bug: {finding}")]
    CheckFailed {
        /// The kernel.
        kernel: &'static str,
        /// What was found, with the threads and source lines involved.
        finding: Box<crate::cpu::finding::Finding>,
    },
    /// Two shapes that must agree do not.
    #[error("shape mismatch in {what}: expected {expected:?}, found {found:?}")]
    ShapeMismatch {
        /// Which argument or array has the shape `found`.
        what: String,
        /// The shape required.
        expected: Vec<usize>,
        /// The shape given.
        found: Vec<usize>,
    },
    /// The arrays of a `#[guvectorize]` function's call do not fit its layout.
    #[error("the arrays of a call of `{function}` do not fit its layout {layout}: {reason}")]
    LayoutMismatch {
        /// The function called.
        function: &'static str,
        /// Its layout, `"(n),(n)->()"`.
        layout: &'static str,
        /// What does not fit, and where.
        reason: String,
    },
    /// A kernel argument lives on another device than the launch.
    #[error("kernel `{kernel}`: argument `{argument}` lives on {found}, the launch runs on {expected}; copy it with `to_device` first")]
    DeviceMismatch {
        /// The kernel.
        kernel: &'static str,
        /// The parameter.
        argument: &'static str,
        /// The launch's device.
        expected: String,
        /// The argument's device.
        found: String,
    },
    /// An array would hold more bytes than the address space.
    #[error("an array of shape {shape:?} is too large to allocate: it would hold more bytes than the address space")]
    TooLarge {
        /// The shape asked for.
        shape: Vec<usize>,
    },
    /// An extent of a shape is negative.
    #[error("extent {value} of the shape {shape:?} is negative: extents count elements, from 0")]
    NegativeExtent {
        /// The shape as given.
        shape: Vec<i128>,
        /// The first negative extent.
        value: i128,
    },
    /// A device, or the host, could not supply the memory asked for.
    #[error("{place} could not allocate {bytes} bytes; free arrays that are no longer needed, or work in smaller pieces")]
    OutOfMemory {
        /// Where: a device's name, or the host.
        place: String,
        /// The bytes asked for.
        bytes: usize,
    },
    /// A launch meant for a GPU was given a device that is not one.
    #[error("kernel `{kernel}` was sent to a GPU launch on a device that is not a GPU; launch it on a GPU's `Device`, `launch_with(LaunchConfig::new(..).on(&gpu), ..)`")]
    NoDevice {
        /// The kernel.
        kernel: &'static str,
    },
    /// A CUDA device was asked for and cannot be used.
    #[error("CUDA device {ordinal} is not usable: {reason}")]
    CudaUnavailable {
        /// The device ordinal asked for.
        ordinal: usize,
        /// Why not, and what to do.
        reason: String,
    },
    /// A kernel on a GPU stopped on a fault: a failed index check (a trap) or an illegal memory
    /// access. Kernels run asynchronously, so this may come from a later call than the launch
    /// (`KERNEL_LAUNCH_BLOCKING=1` makes each launch wait for its kernel).
    #[error("kernel `{kernel}` failed on the GPU ({message}); the CUDA context is now unusable: drop every array and the Device, then open the GPU again with Device::cuda(n)")]
    KernelTrapped {
        /// The kernel launched last before the fault was seen.
        kernel: &'static str,
        /// What the driver reported.
        message: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA error while {op}: {message}")]
    Cuda {
        /// What was being done.
        op: String,
        /// What the driver reported.
        message: String,
    },
    /// Foreign device code (`kernel_build::Builder::link_cuda` / `link_ptx`) could not be made
    /// part of its module: NVRTC missing or refusing a CUDA C++ file, or the linker refusing.
    #[error("the foreign device code `{file}` cannot join its module: {message}")]
    ForeignCode {
        /// The file it came from, or the module's pieces where the link failed.
        file: String,
        /// Why, and what to do.
        message: String,
    },
    /// The host asked to view in place an array in a GPU's memory
    /// ([`DeviceArray::host_view`](crate::DeviceArray::host_view)).
    #[error("the array of shape {shape:?} is in a GPU's memory, which the host cannot view in place: copy it with `to_host`, or make it with `Device::mapped` or `Device::managed`")]
    NotHostVisible {
        /// The array's shape.
        shape: Vec<usize>,
    },
    /// A function given to [`Stream::add_callback`](crate::Stream::add_callback) panicked;
    /// the stream's `synchronize` reports it.
    #[error("a stream callback panicked: {message}; the stream's work before it had finished, and later callbacks still run")]
    CallbackPanicked {
        /// The panic's message.
        message: String,
    },
    /// Something that a graph cannot hold was asked for while its work was being captured
    /// ([`Device::capture`](crate::Device::capture)).
    #[error("{what} is not possible while a graph is being captured: a graph holds the kernel launches on the device's stream; allocate, copy and wait before or after `Device::capture`")]
    InCapture {
        /// What was asked for.
        what: String,
    },
    /// The kernel has no PTX to run on a GPU.
    #[error("kernel `{kernel}` has no PTX: {reason}; or run it on Device::cpu()")]
    NoPtx {
        /// The kernel.
        kernel: &'static str,
        /// Why, as its crate's build found it.
        reason: &'static str,
    },
    /// A CUDA toolkit program that a kernel's inspection runs (`ptxas`, `nvdisasm`) could not
    /// be run or refused its input.
    #[error("`{tool}`: {message}")]
    Tool {
        /// The program.
        tool: &'static str,
        /// What went wrong, and what to do.
        message: String,
    },
    /// A module array has no symbol in any PTX module, so a GPU cannot hold it.
    #[error("module array `{name}` is not in a PTX module: {reason}; or use it on Device::cpu()")]
    NoModuleArray {
        /// The array.
        name: &'static str,
        /// Why, as its crate's build found it.
        reason: &'static str,
    },
    /// No kernel of the program has PTX, so a GPU could not run any of them.
    #[error("no kernel of this program has PTX, so it cannot run on a GPU: the crates that define them need a build.rs calling `kernel_build::build()` on a machine with the nvptx64 toolchain (with KERNEL_REQUIRE_PTX=1, a build without one fails and says why)")]
    NoPtxAnywhere,
    /// An MPI job could not do what was asked (`cluster`, behind the `mpi` feature).
    #[error("MPI: {message}")]
    Mpi {
        /// What went wrong, and what to do.
        message: String,
    },
    /// Memory another library allocated cannot be wrapped as an array
    /// ([`DeviceArray::from_device_ptr`](crate::DeviceArray::from_device_ptr)).
    #[error("cannot wrap the memory at {ptr:#x} as an array: {reason}")]
    ForeignMemory {
        /// The address given.
        ptr: u64,
        /// Why not, and what to do.
        reason: String,
    },
    /// Another library's stream cannot be used as one of a device's
    /// ([`Device::external_stream`](crate::Device::external_stream)).
    #[error("cannot use the stream {handle:#x} of another library: {reason}")]
    ForeignStream {
        /// The stream's handle, a `CUstream`.
        handle: usize,
        /// Why not, and what to do.
        reason: String,
    },
    /// An array's bytes cannot be seen as elements of another type
    /// ([`DeviceArray::reinterpret`](crate::DeviceArray::reinterpret)).
    #[error("an array of shape {shape:?} of `{from}` cannot be seen as `{to}`: {reason}")]
    Reinterpret {
        /// The array's shape.
        shape: Vec<usize>,
        /// Its element type.
        from: &'static str,
        /// The element type asked for.
        to: &'static str,
        /// Why not, and what to do.
        reason: String,
    },
    /// A range of elements that the array does not hold
    /// ([`DeviceArray::to_vec_range`](crate::DeviceArray::to_vec_range)).
    #[error(
        "elements {start}..{end} asked of an array of {len}: the range must lie within 0..{len}"
    )]
    OutOfRange {
        /// The range's first element.
        start: usize,
        /// The element after its last.
        end: usize,
        /// The array's number of elements.
        len: usize,
    },
    /// A slice or subarray of a device array's first axis that the array does not hold
    /// ([`DeviceArray::slice`](crate::DeviceArray::slice), `subarray`, `split_at`).
    #[error("{start}..{end} of the first axis asked of an array of shape {shape:?}: it must lie within 0..{}", shape.first().copied().unwrap_or(0))]
    AxisOutOfRange {
        /// The first index along the axis.
        start: usize,
        /// The index after the last.
        end: usize,
        /// The shape of the array or view sliced.
        shape: Vec<usize>,
    },
    /// Chunks of no rows asked of a device array ([`DeviceArray::chunks`](crate::DeviceArray::chunks)).
    #[error("chunks of 0 along the first axis asked of an array of shape {shape:?}: a chunk holds at least 1")]
    EmptyChunks {
        /// The shape of the array or view split.
        shape: Vec<usize>,
    },
    /// What a GPU compiled of a kernel, asked of a device that compiles nothing
    /// ([`Kernel::attributes`](crate::Kernel::attributes) on the CPU backend).
    #[error("the attributes of kernel `{kernel}` are those of its compiled GPU function, and {device} compiles none: ask them of a GPU's `Device` (`Device::cuda(0)?`)")]
    NoGpuFunction {
        /// The kernel.
        kernel: &'static str,
        /// The device asked.
        device: String,
    },
    /// `KERNEL_DEVICE` holds something other than `cpu`, `cpu-checked` or `cuda[:N]`.
    #[error(
        "KERNEL_DEVICE={value:?} is not understood: use `cpu`, `cpu-checked`, `cuda` or `cuda:N`"
    )]
    BadDeviceSpec {
        /// The value found.
        value: String,
    },
    /// The device `KERNEL_DEVICE` names could not be opened, so
    /// [`Device::default`](crate::Device::default) stands in for it with a device that refuses
    /// all work.
    #[error(
        "KERNEL_DEVICE={asked} cannot be used: {reason}. Unset \
         KERNEL_DEVICE to run on a GPU where one is usable and on the CPU backend elsewhere, \
         or set it to `cpu`"
    )]
    DeviceUnavailable {
        /// The value of `KERNEL_DEVICE`.
        asked: String,
        /// Why the device could not be opened.
        reason: String,
    },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// What is wrong with a launch configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// A grid or block dimension is zero.
    #[error("{what} {dims} has a zero dimension; every dimension must be at least 1")]
    ZeroDim {
        /// `grid` or `block`.
        what: &'static str,
        /// The dimensions given.
        dims: Dim3,
    },
    /// A dimension does not fit in 32 bits or is negative.
    #[error("{what} dimension {axis} is {value}, out of range (0 < n < 2^32)")]
    DimOutOfRange {
        /// `grid` or `block` (empty where the shape is not yet a launch's).
        what: &'static str,
        /// `x`, `y` or `z`.
        axis: char,
        /// The value given.
        value: i128,
    },
    /// More threads per block than the device allows.
    #[error("a block of {dims} has {threads} threads; the limit is {limit}")]
    TooManyThreads {
        /// The block dimensions.
        dims: Dim3,
        /// Their product.
        threads: u64,
        /// The device's limit.
        limit: u64,
    },
    /// More threads per block than the kernel's `launch_bounds` allow.
    #[error(
        "a block of {dims} has {threads} threads, and the kernel's launch_bounds allow {bound}: \
         launch blocks of at most {bound} threads, or raise the bound in #[kernel(launch_bounds \
         = ..)]"
    )]
    PastLaunchBounds {
        /// The block dimensions.
        dims: Dim3,
        /// Their product.
        threads: u64,
        /// The kernel's bound.
        bound: u32,
    },
    /// A block or grid dimension above the device's limit.
    #[error("{what} dimension {axis} is {value}; the limit is {limit}")]
    DimTooLarge {
        /// `grid` or `block`.
        what: &'static str,
        /// `x`, `y` or `z`.
        axis: char,
        /// The value given.
        value: u32,
        /// The device's limit.
        limit: u32,
    },
    /// A cooperative launch of more blocks than can be resident at once.
    #[error("a cooperative launch of {blocks} blocks of {threads} threads; at most {limit} such blocks can be resident at once on this device: launch `kernel.max_cooperative_grid_blocks(..)` blocks or fewer, and let each thread do more work")]
    TooManyCooperativeBlocks {
        /// The grid's blocks.
        blocks: u64,
        /// The threads of each.
        threads: u64,
        /// How many can be resident at once.
        limit: u64,
    },
    /// A cooperative launch on a GPU that cannot launch cooperatively.
    #[error("{device} cannot launch cooperatively (it has no cooperative launch support): run the kernel on another GPU or on the CPU backend, or split it at its grid barriers into one launch per phase")]
    NotCooperative {
        /// The GPU's name.
        device: String,
    },
    /// More shared memory than the device gives a block, even opting in.
    #[error("{bytes} bytes of shared memory per block ({static_bytes} static + {dynamic_bytes} dynamic); the device gives a block at most {limit}, opting in (its Limits::max_shared_bytes_optin): ask for less dynamic shared memory, or run on a device with more")]
    TooMuchSharedMemory {
        /// Static plus dynamic bytes.
        bytes: usize,
        /// The kernel's static shared arrays.
        static_bytes: usize,
        /// The dynamic bytes asked for.
        dynamic_bytes: usize,
        /// The device's limit.
        limit: usize,
    },
}
