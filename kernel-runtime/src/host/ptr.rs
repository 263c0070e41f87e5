//! Raw device pointers for `unsafe` kernels: [`DevicePtr`], a typed address in one device's
//! memory, and the view the CPU backend gives a kernel of it.
//!
//! A kernel that takes raw pointers (`*const T`, `*mut T`) is an `unsafe fn`, and so are its
//! launches: the caller promises what no type can check, that each pointer addresses memory of
//! the launch's device, valid for every access the kernel makes through it while the launch
//! runs, with no other thread of the launch writing an element another reads or writes (as for
//! arrays). What is checked: each pointer's device is the launch's. Checked mode does not trace
//! accesses through raw pointers.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! /// `y[i] += a x[i]` for `i < n`, through raw pointers.
//! #[kernel]
//! unsafe fn axpy_raw(n: usize, a: f32, x: *const f32, y: *mut f32) {
//!     let i = grid(1);
//!     if i < n {
//!         // SAFETY: the launch's contract: `x` and `y` hold `n` elements.
//!         unsafe { *y.add(i) += a * *x.add(i) };
//!     }
//! }
//!
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! let x = dev.to_device(&[1.0f32, 2.0, 3.0][..])?;
//! let mut y = dev.zeros::<f32, _>(3)?;
//! // SAFETY: both arrays hold 3 elements and live until the launch returns.
//! unsafe { axpy_raw.launch(1, 32, (3, 2.0, x.device_ptr(), y.device_ptr_mut()))? };
//! assert_eq!(y.to_vec()?, vec![2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```

use super::device::Device;
use core::marker::PhantomData;

/// A typed address in the memory of one device (for the CPU backend, the host's): what an
/// `unsafe` kernel's raw pointer parameter takes. Making one is safe, as it is only a number
/// until an `unsafe` launch hands it to a kernel.
pub struct DevicePtr<T> {
    device: Device,
    addr: u64,
    _elem: PhantomData<*mut T>,
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        DevicePtr {
            device: self.device.clone(),
            addr: self.addr,
            _elem: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevicePtr({:#x} on {})", self.addr, self.device.name())
    }
}

impl<T> DevicePtr<T> {
    /// The address `addr` in `device`'s memory: a GPU's device address (from another
    /// library), or on the CPU backend a host address.
    pub fn new(device: &Device, addr: u64) -> DevicePtr<T> {
        DevicePtr {
            device: device.clone(),
            addr,
            _elem: PhantomData,
        }
    }

    /// The address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The address, where a GPU launch's parameter points.
    pub(crate) fn addr_ref(&self) -> &u64 {
        &self.addr
    }

    /// The device whose memory the address is in.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The address `count` elements further on (wrapping, as it is only a number).
    pub fn add(&self, count: usize) -> DevicePtr<T> {
        let bytes = (count as u64).wrapping_mul(std::mem::size_of::<T>() as u64);
        DevicePtr::new(&self.device, self.addr.wrapping_add(bytes))
    }
}

/// A raw pointer as the CPU backend hands it to a kernel's threads, which the body gets back
/// with [`get`](SyncPtr::get).
#[repr(transparent)]
pub struct SyncPtr<T>(*mut T);

impl<T> Clone for SyncPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SyncPtr<T> {}

// SAFETY: the pointer is only dereferenced by the kernel's `unsafe` code, under the contract of
// its `unsafe` launch, which covers the threads sharing it.
unsafe impl<T> Sync for SyncPtr<T> {}

impl<T> crate::cpu::launch::shapes::LaunchView for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Send for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// The CPU view of `ptr`.
    pub(crate) fn of(ptr: &DevicePtr<T>) -> SyncPtr<T> {
        SyncPtr(ptr.addr as usize as *mut T)
    }

    /// The pointer.
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
}
