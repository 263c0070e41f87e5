//! Arrays declared at module level that kernels read and host code fills at run time:
//! [`constant_array!`](crate::constant_array) puts one in constant memory (CUDA's `__constant__`,
//! Numba's `cuda.const.array_like`), [`global_array!`](crate::global_array) in global memory
//! (CUDA's `__device__`, the global device array a Numba kernel closes over).
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! constant_array!(pub static TAPS: [f32; 3]);
//!
//! #[kernel]
//! pub fn filter(x: &[f32], out: &mut [f32]) {
//!     let i = grid(1);
//!     let taps = TAPS.read();
//!     if i + 2 < x.len() {
//!         out[i] = taps.get(0) * x[i] + taps.get(1) * x[i + 1] + taps.get(2) * x[i + 2];
//!     }
//! }
//!
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! TAPS.set(&dev, &[0.25, 0.5, 0.25])?;
//! let x = dev.to_device(&[4.0f32, 8.0, 4.0, 0.0][..])?;
//! let mut out = dev.zeros::<f32, _>(4)?;
//! filter.launch(1, 32, (&x, &mut out))?;
//! assert_eq!(out.to_vec()?, vec![6.0, 4.0, 0.0, 0.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Kernels only read these arrays: what a kernel computes goes to its array parameters. Every
//! array starts all zeros on each device. [`ModuleArray::set`] is ordered with the device's
//! other work (a kernel launched before it reads the old values, one launched after the new).
//!
//! On a GPU the array is a symbol of its crate's PTX module, found with `cuModuleGetGlobal`;
//! kernels read constant memory through the constant cache, which serves one address to a whole
//! warp at once (best when a warp's threads read the same element), and global memory as any
//! array. Constant memory holds 64 KiB per module.
//!
//! On the CPU backend, which all CPU devices share, the values are kept behind an
//! [`arc_swap::ArcSwapOption`]: [`ModuleArray::read`] takes a snapshot that `set` never changes
//! (it installs new values beside it), so a kernel, or host code, holding a snapshot can never
//! see a write, and no lock is taken per element. arc-swap is the crate made for exactly this
//! (reads that neither block nor contend, writes that swap a whole value).

use core::ops::Index;

use crate::device_copy::AnyBitPattern;

/// The memory a [`ModuleArray`] lives in on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Constant memory (`.const`), cached and broadcast to a warp; 64 KiB per module.
    Constant,
    /// Global memory (`.global`).
    Global,
}

/// An array of `N` values of `T` declared at module level by
/// [`constant_array!`](crate::constant_array) or [`global_array!`](crate::global_array):
/// kernels [`read`](ModuleArray::read) it, host code [`set`](ModuleArray::set)s it per device.
pub struct ModuleArray<T: 'static, const N: usize> {
    /// The name the user declared.
    name: &'static str,
    /// The symbol in the PTX module (which the GPU build reaches through `address`).
    #[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
    symbol: &'static str,
    space: Space,
    /// The symbol's generic address (on the GPU).
    #[cfg(target_arch = "nvptx64")]
    address: fn() -> *const u8,
    #[cfg(target_arch = "nvptx64")]
    elements: core::marker::PhantomData<[T; N]>,
    /// The PTX module that declares the symbol, or why there is none.
    #[cfg(not(target_arch = "nvptx64"))]
    ptx: Result<&'static str, &'static str>,
    /// The values on the CPU backend; `None` until set or read.
    #[cfg(not(target_arch = "nvptx64"))]
    cpu: arc_swap::ArcSwapOption<[T; N]>,
}

impl<T: AnyBitPattern, const N: usize> ModuleArray<T, N> {
    /// What the macros declare a module array with.
    ///
    /// # Safety
    /// `address` gives the generic address of a symbol named `symbol`, aligned for `T` and
    /// holding `N` values of `T`, which no kernel writes, in `space`.
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    pub const unsafe fn __declare(
        name: &'static str,
        symbol: &'static str,
        space: Space,
        address: fn() -> *const u8,
    ) -> Self {
        ModuleArray {
            name,
            symbol,
            space,
            address,
            elements: core::marker::PhantomData,
        }
    }

    /// What the macros declare a module array with.
    ///
    /// # Safety
    /// `ptx`, where it is a module, declares a symbol named `symbol` in `space` holding `N`
    /// values of `T`, which no kernel of it writes.
    #[doc(hidden)]
    #[cfg(not(target_arch = "nvptx64"))]
    pub const unsafe fn __declare(
        name: &'static str,
        symbol: &'static str,
        space: Space,
        ptx: Result<&'static str, &'static str>,
    ) -> Self {
        ModuleArray {
            name,
            symbol,
            space,
            ptx,
            cpu: arc_swap::ArcSwapOption::const_empty(),
        }
    }

    /// The name it was declared with.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The memory it lives in on a GPU.
    pub const fn space(&self) -> Space {
        self.space
    }

    /// Its number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether it has no elements.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// The values, for a kernel to index: `let taps = TAPS.read(); taps[0]`. On the GPU this is
    /// the symbol's address; on the CPU backend, a snapshot of the values set last.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn read(&'static self) -> ModuleView<T, N> {
        ModuleView {
            name: self.name,
            space: self.space,
            data: (self.address)().cast(),
        }
    }

    /// The values, for a kernel to index: `let taps = TAPS.read(); taps[0]`. On the GPU this is
    /// the symbol's address; on the CPU backend, a snapshot of the values set last.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline]
    pub fn read(&'static self) -> ModuleView<T, N> {
        let mut data = self.cpu.load_full();
        if data.is_none() {
            // First use: all zeros, as on a GPU. A concurrent first `set` or read wins.
            let _ = self
                .cpu
                .compare_and_swap(&None::<std::sync::Arc<_>>, Some(self.zeroed_in_kernel()));
            data = self.cpu.load_full();
        }
        ModuleView {
            name: self.name,
            data: data.unwrap_or_else(|| self.zeroed_in_kernel()),
        }
    }

    /// The zeros a kernel reads before any `set`; where the host cannot hold them, a panic,
    /// which the launch returns as the kernel's fault.
    #[cfg(not(target_arch = "nvptx64"))]
    fn zeroed_in_kernel(&self) -> std::sync::Arc<[T; N]> {
        zeroed().unwrap_or_else(|| {
            panic!(
                "module array `{}` ({} bytes) does not fit in the host's memory",
                self.name,
                core::mem::size_of::<[T; N]>()
            )
        })
    }
}

/// `N` zeros of `T`, made on the heap; `None` where the host cannot give the bytes.
#[cfg(not(target_arch = "nvptx64"))]
fn zeroed<T: AnyBitPattern, const N: usize>() -> Option<std::sync::Arc<[T; N]>> {
    // An `Arc` aborts the process where its allocation fails: ask the allocator for the bytes
    // first, so that a size it cannot give is an error.
    let layout = std::alloc::Layout::new::<[T; N]>();
    if !crate::zeroed::host_can_hold(layout.size()) {
        return None;
    }
    if layout.size() > 0 {
        // SAFETY: the layout has a non-zero size; the memory is freed at once, unread.
        unsafe {
            let probe = std::alloc::alloc(layout);
            if probe.is_null() {
                return None;
            }
            std::alloc::dealloc(probe, layout);
        }
    }
    let mut fresh = std::sync::Arc::<[T; N]>::new_uninit();
    let slot = std::sync::Arc::get_mut(&mut fresh).expect("a new Arc is unique");
    // SAFETY: every byte of the slot is written; all-zero bytes are a value of `T`
    // (`AnyBitPattern`), so of `[T; N]`.
    Some(unsafe {
        slot.as_mut_ptr().write_bytes(0, 1);
        fresh.assume_init()
    })
}

/// What [`ModuleArray::read`] gives a kernel: the array's values, indexed as `view[i]`.
pub struct ModuleView<T: 'static, const N: usize> {
    name: &'static str,
    #[cfg(target_arch = "nvptx64")]
    space: Space,
    #[cfg(target_arch = "nvptx64")]
    data: *const T,
    #[cfg(not(target_arch = "nvptx64"))]
    data: std::sync::Arc<[T; N]>,
}

impl<T, const N: usize> Clone for ModuleView<T, N> {
    #[inline(always)]
    fn clone(&self) -> Self {
        ModuleView {
            name: self.name,
            #[cfg(target_arch = "nvptx64")]
            space: self.space,
            data: self.data.clone(),
        }
    }
}

impl<T: Copy, const N: usize> ModuleView<T, N> {
    /// Element `i`, by value. On the GPU this is the load made for the array's memory: through
    /// the constant cache (`ld.const`) for a constant array, through the read-only data cache
    /// (`ld.global.nc`) for a global one; `view[i]` reads through a generic pointer instead.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: usize) -> T {
        if i >= N {
            crate::fault::out_of_bounds(self.name, &[i], &[N], crate::fault::AccessKind::Read)
        }
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: `data` addresses `N` values of `T` in `space` that no kernel writes
            // (`ModuleArray::__declare`), and `i < N`.
            unsafe { load(self.space, self.data.add(i)) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.data[i]
        }
    }
}

/// The value at the generic address `p` of `space`, loaded as that space's loads do: 8 or 4
/// bytes at a time where `T`'s size and alignment allow, else through the generic pointer.
///
/// # Safety
/// `p` addresses a `T` in `space` that nothing writes while the kernel runs.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load<T: Copy>(space: Space, p: *const T) -> T {
    use core::mem::{align_of, size_of, MaybeUninit};
    let mut out = MaybeUninit::<T>::uninit();
    if size_of::<T>() % 8 == 0 && align_of::<T>() >= 8 {
        for w in 0..size_of::<T>() / 8 {
            // SAFETY: word `w` lies within the `T` at `p`, which the caller vouches for.
            let v = unsafe { load_word::<u64>(space, p.cast::<u64>().add(w)) };
            // SAFETY: word `w` lies within `out`.
            unsafe { out.as_mut_ptr().cast::<u64>().add(w).write(v) };
        }
    } else if size_of::<T>() % 4 == 0 && align_of::<T>() >= 4 {
        for w in 0..size_of::<T>() / 4 {
            // SAFETY: as above, for 4-byte words.
            let v = unsafe { load_word::<u32>(space, p.cast::<u32>().add(w)) };
            // SAFETY: word `w` lies within `out`.
            unsafe { out.as_mut_ptr().cast::<u32>().add(w).write(v) };
        }
    } else {
        // SAFETY: the caller's contract.
        return unsafe { p.read() };
    }
    // SAFETY: every byte of `out` was copied from the `T` at `p`.
    unsafe { out.assume_init() }
}

/// One 4- or 8-byte word at the generic address `p` of `space`.
///
/// # Safety
/// As [`load`]'s.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_word<W: Word>(space: Space, p: *const W) -> W {
    // SAFETY: the caller's contract.
    unsafe { W::load(space, p) }
}

/// The words [`load_word`] loads.
#[cfg(target_arch = "nvptx64")]
trait Word: Copy {
    /// # Safety
    /// As [`load`]'s.
    unsafe fn load(space: Space, p: *const Self) -> Self;
}

/// `Word` for a word type: its register class and its loads' type suffix.
#[cfg(target_arch = "nvptx64")]
macro_rules! word {
    ($t:ty, $reg:ident, $bits:literal) => {
        impl Word for $t {
            #[inline(always)]
            unsafe fn load(space: Space, p: *const $t) -> $t {
                let v: $t;
                // SAFETY: the caller's contract: `p` addresses a word of `space` that nothing
                // writes.
                unsafe {
                    match space {
                        Space::Constant => core::arch::asm!(
                            concat!("{{ .reg .b64 a; cvta.to.const.u64 a, {p}; ld.const.b", $bits, " {v}, [a]; }}"),
                            p = in(reg64) p, v = out($reg) v, options(pure, readonly, nostack)
                        ),
                        Space::Global => core::arch::asm!(
                            concat!("{{ .reg .b64 a; cvta.to.global.u64 a, {p}; ld.global.nc.b", $bits, " {v}, [a]; }}"),
                            p = in(reg64) p, v = out($reg) v, options(pure, readonly, nostack)
                        ),
                    }
                }
                v
            }
        }
    };
}

#[cfg(target_arch = "nvptx64")]
word!(u32, reg32, "32");
#[cfg(target_arch = "nvptx64")]
word!(u64, reg64, "64");

impl<T, const N: usize> ModuleView<T, N> {
    /// Its number of elements, `N`.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether it has no elements.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }
}

impl<T, const N: usize> Index<usize> for ModuleView<T, N> {
    type Output = T;

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index(&self, i: usize) -> &T {
        if i >= N {
            crate::fault::out_of_bounds(self.name, &[i], &[N], crate::fault::AccessKind::Read)
        }
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: `data` addresses `N` values of `T` that no kernel writes
            // (`ModuleArray::__declare`), and `i < N`.
            unsafe { &*self.data.add(i) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            &self.data[i]
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{ModuleArray, Space};
    use crate::device_copy::AnyBitPattern;
    use crate::host::cuda::CudaDevice;
    use crate::host::device::permitted;
    use crate::host::order::Users;
    use crate::{Device, Error};

    impl<T: AnyBitPattern, const N: usize> ModuleArray<T, N> {
        /// Gives the array `values` on `dev`, after the work queued there before: the kernels
        /// launched on `dev` from now on read them. `values` must hold `N` elements.
        ///
        /// On the CPU backend every CPU device shares the one copy.
        pub fn set(&'static self, dev: &Device, values: &[T]) -> Result<(), Error> {
            if values.len() != N {
                return Err(Error::ShapeMismatch {
                    what: format!("the values for module array `{}`", self.name),
                    expected: vec![N],
                    found: vec![values.len()],
                });
            }
            permitted(dev, "setting a module array")?;
            match dev.gpu() {
                // An empty array has nothing to copy (and its symbol a byte of padding).
                Some(_) if core::mem::size_of::<[T; N]>() == 0 => Ok(()),
                Some(gpu) => {
                    let at = self.symbol_on(gpu)?;
                    // Kernels on any stream may read the array: the copy waits for them all.
                    gpu.barrier()?;
                    gpu.upload(at, &Users::default(), values)
                }
                None => {
                    let mut fresh = super::zeroed::<T, N>().ok_or_else(|| self.no_room())?;
                    std::sync::Arc::get_mut(&mut fresh)
                        .expect("a new Arc is unique")
                        .copy_from_slice(values);
                    // A `set` from another host thread waits for the CPU launches running.
                    let _no_launch = crate::cpu::launch::alone();
                    self.cpu.store(Some(fresh));
                    Ok(())
                }
            }
        }

        /// The values the array holds on `dev`, after the work queued there before.
        pub fn to_vec(&'static self, dev: &Device) -> Result<Vec<T>, Error> {
            permitted(dev, "copying a module array to the host")?;
            match dev.gpu() {
                Some(gpu) => {
                    // SAFETY: all-zero bytes are a value of `T`; the download overwrites them.
                    let mut out = unsafe { crate::zeroed::zeroed_vec::<T>(N) }
                        .ok_or_else(|| self.no_room())?;
                    // An empty array has nothing to copy (and its symbol a byte of padding).
                    if core::mem::size_of::<[T; N]>() > 0 {
                        let at = self.symbol_on(gpu)?;
                        // Kernels on any stream may write the array: the copy waits for them all.
                        gpu.barrier()?;
                        gpu.download(&mut out, at, &Users::default())?;
                    }
                    Ok(out)
                }
                None => {
                    // SAFETY: all-zero bytes are a value of `T` (`AnyBitPattern`).
                    let mut out = unsafe { crate::zeroed::zeroed_vec::<T>(N) }
                        .ok_or_else(|| self.no_room())?;
                    if let Some(data) = self.cpu.load_full() {
                        out.copy_from_slice(&data[..]);
                    }
                    Ok(out)
                }
            }
        }

        /// The error of a copy of the array that the host cannot hold.
        fn no_room(&self) -> Error {
            Error::OutOfMemory {
                bytes: core::mem::size_of::<[T; N]>(),
                place: "the host".into(),
            }
        }

        /// The symbol's device address on `gpu`, checked to hold `N` values of `T`.
        fn symbol_on(&self, gpu: &CudaDevice) -> Result<cudarc::driver::sys::CUdeviceptr, Error> {
            let ptx = self.ptx.map_err(|reason| Error::NoModuleArray {
                name: self.name,
                reason,
            })?;
            let (at, bytes) = gpu.global(self.name, self.symbol, ptx)?;
            if bytes != core::mem::size_of::<[T; N]>() {
                return Err(Error::Cuda {
                    op: format!("finding module array `{}`", self.name),
                    message: format!(
                        "its symbol `{}` holds {bytes} bytes, not the {} of {N} values: the PTX \
                         module is not the one its crate built",
                        self.symbol,
                        core::mem::size_of::<[T; N]>()
                    ),
                });
            }
            Ok(at)
        }
    }

    impl<T, const N: usize> core::fmt::Debug for ModuleArray<T, N> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            let space = match self.space {
                Space::Constant => "constant",
                Space::Global => "global",
            };
            write!(f, "ModuleArray `{}` ({space}, {N} values)", self.name)
        }
    }
}
