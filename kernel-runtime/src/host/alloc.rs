//! [`Device`]'s array constructors: an array copied from the host ([`Device::to_device`]),
//! zero-filled ([`Device::zeros`]) or left as allocated ([`Device::empty`]), and their `_like`
//! forms.

use super::array::{DeviceArray, Rank, ShapeArg, ToDevice};
use super::device::Device;
use super::error::Error;
use crate::device_copy::{AnyBitPattern, DeviceCopy};

impl Device {
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
    /// integers), and a kernel's or stencil's read of an element that nothing has written is
    /// reported ([`Finding::UnwrittenRead`](crate::Finding::UnwrittenRead)).
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
