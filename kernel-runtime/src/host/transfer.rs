//! Copies between page-locked host memory and a device, queued on a stream: the ranges of a
//! [`PinnedArray`](super::pinned::PinnedArray) they copy ([`PinnedSlice`], [`PinnedSliceMut`]) and [`Stream::upload`] /
//! [`Stream::download`], Numba's `cuda.to_device(a[i:j], stream=s)` and
//! `d.copy_to_host(a[i:j], stream=s)`.
//!
//! Such a copy returns at once. It waits for the work of other streams on the same bytes (see
//! [`Stream`]), and the host waits for it before it uses the page-locked memory again, so
//! chunks copied in, computed and copied out on two or three streams overlap while no safe
//! program can see a half-done copy.

use std::marker::PhantomData;

use super::array::Rank;
use super::device::permitted;
use super::device::Device;
use super::device_view::{DeviceView, DeviceViewMut, IntoDeviceView, IntoDeviceViewMut};
use super::error::Error;
use super::order::{Access, Bytes, Span, Users};
use super::stream::Stream;
use crate::device_copy::DeviceCopy;

/// Elements of a [`PinnedArray`](super::pinned::PinnedArray) that a copy reads:
/// [`PinnedArray::slice`](super::pinned::PinnedArray::slice).
pub struct PinnedSlice<'a, T> {
    pub(crate) ptr: *const T,
    pub(crate) len: usize,
    pub(crate) users: &'a Users,
    pub(crate) device: &'a Device,
    pub(crate) _elements: PhantomData<&'a [T]>,
}

/// Elements of a [`PinnedArray`](super::pinned::PinnedArray) that a copy writes:
/// [`PinnedArray::slice_mut`](super::pinned::PinnedArray::slice_mut).
pub struct PinnedSliceMut<'a, T> {
    pub(crate) ptr: *mut T,
    pub(crate) len: usize,
    pub(crate) users: &'a Users,
    pub(crate) device: &'a Device,
    pub(crate) _elements: PhantomData<&'a mut [T]>,
}

impl<'a, T> PinnedSlice<'a, T> {
    /// The host bytes the slice holds, for ordering streams.
    fn span(&self) -> Span<'a> {
        self.users
            .span(Bytes::elements::<T>(self.ptr as u64, self.len))
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<'a, T> PinnedSliceMut<'a, T> {
    /// The host bytes the slice holds, for ordering streams.
    fn span(&self) -> Span<'a> {
        self.users
            .span(Bytes::elements::<T>(self.ptr as u64, self.len))
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: DeviceCopy> PinnedSlice<'_, T> {
    /// Copies the elements into the first of `dst`'s, on `stream` (the device's own where none).
    pub(crate) fn copy_to<D: Rank>(
        self,
        stream: Option<&Stream>,
        mut dst: DeviceViewMut<'_, T, D>,
    ) -> Result<(), Error> {
        check(
            "Stream::upload",
            self.device,
            stream,
            dst.device,
            self.len,
            dst.len(),
        )?;
        match dst.device.gpu() {
            Some(gpu) => {
                let uses = [(self.span(), Access::Read), (dst.span(), Access::Write)];
                // SAFETY: `len` elements of page-locked memory of the array `users` belongs to,
                // which waits for the copy before the host writes or frees them; `dst` holds at
                // least as many (checked).
                let op = || unsafe {
                    gpu.upload_on(
                        stream.and_then(Stream::cuda),
                        dst.addr,
                        self.ptr,
                        self.len,
                        &uses,
                    )
                };
                Stream::queue_on(stream, op)
            }
            None => {
                dst.forget_unwritten();
                // SAFETY: both backends' memory is the host's here: `len` elements at `ptr`,
                // borrowed for reading, and at least as many in `dst`, borrowed uniquely.
                unsafe { std::ptr::copy_nonoverlapping(self.ptr, dst.host.as_mut_ptr(), self.len) };
                Ok(())
            }
        }
    }
}

impl<T: DeviceCopy> PinnedSliceMut<'_, T> {
    /// Copies the first elements of `src` into these, on `stream` (the device's own where none).
    pub(crate) fn copy_from<D: Rank>(
        self,
        stream: Option<&Stream>,
        src: DeviceView<'_, T, D>,
    ) -> Result<(), Error> {
        check(
            "Stream::download",
            self.device,
            stream,
            src.device,
            self.len,
            src.len(),
        )?;
        match src.device.gpu() {
            Some(gpu) => {
                let uses = [(src.span(), Access::Read), (self.span(), Access::Write)];
                // SAFETY: `len` elements of page-locked memory of the array `users` belongs to,
                // which waits for the copy before the host uses or frees them; `src` holds at
                // least as many (checked).
                let op = || unsafe {
                    gpu.download_on(
                        stream.and_then(Stream::cuda),
                        self.ptr,
                        self.len,
                        src.addr,
                        &uses,
                    )
                };
                Stream::queue_on(stream, op)
            }
            None => {
                // SAFETY: as in `copy_to`, the other way.
                unsafe { std::ptr::copy_nonoverlapping(src.host.as_ptr(), self.ptr, self.len) };
                Ok(())
            }
        }
    }
}

/// Refuses the copy `op` between page-locked memory of `pinned` and an array of `array`, on
/// `stream`, where the devices differ, or where the host's `len` elements are more than the
/// array's `array_len`.
fn check(
    op: &'static str,
    pinned: &Device,
    stream: Option<&Stream>,
    array: &Device,
    len: usize,
    array_len: usize,
) -> Result<(), Error> {
    permitted(array, "copying between the host and the device")?;
    let mismatch = |argument, found: &Device| Error::DeviceMismatch {
        kernel: op,
        argument,
        expected: array.name(),
        found: found.name(),
    };
    if pinned != array {
        return Err(mismatch("the page-locked array", pinned));
    }
    if let Some(s) = stream.filter(|s| s.device() != array) {
        return Err(mismatch("the stream", s.device()));
    }
    if len > array_len {
        return Err(Error::OutOfRange {
            start: 0,
            end: len,
            len: array_len,
        });
    }
    Ok(())
}

impl Stream {
    /// Queues on this stream a copy of page-locked host elements into the first elements of
    /// `dst` (a device array, `&mut d`, or a writable view of one, `d.slice_mut(i..j)?`), and
    /// returns at once (Numba's `cuda.to_device(a[i:j], stream=s)`, `d[i:j].copy_to_device(a,
    /// stream=s)`). The copy waits for the work on other streams that uses `dst`'s array, and
    /// the host's next write to the page-locked array waits for it.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let dev = Device::cpu();
    /// let s = dev.stream()?;
    /// let mut host = dev.pinned::<u32, _>(6)?;
    /// host.copy_from_slice(&[1, 2, 3, 4, 5, 6]);
    /// let mut chunk = dev.zeros::<u32, _>(2)?;
    /// s.upload(host.slice(2..4)?, &mut chunk)?;
    /// let mut back = dev.pinned::<u32, _>(6)?;
    /// s.download(&chunk, back.slice_mut(4..)?)?;
    /// assert_eq!(&back[..], [0, 0, 0, 0, 3, 4]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OutOfRange`] where `dst` holds fewer elements than `src`;
    /// [`Error::DeviceMismatch`] where the arrays or the stream are of other devices.
    pub fn upload<'d, T: DeviceCopy, D: Rank>(
        &self,
        src: PinnedSlice<'_, T>,
        dst: impl IntoDeviceViewMut<'d, T, D>,
    ) -> Result<(), Error> {
        src.copy_to(Some(self), dst.into_view_mut())
    }

    /// Queues on this stream a copy of the first elements of `src` (a device array, `&d`, or a
    /// view of one, `d.slice(i..j)?`) into page-locked host elements, and returns at once
    /// (Numba's `d[i:j].copy_to_host(a[i:j], stream=s)`). The copy waits for the work on other
    /// streams that writes `src`'s array, and the host's next use of the page-locked array
    /// waits for it.
    ///
    /// # Errors
    /// As [`upload`](Self::upload)'s, where `src` holds fewer elements than `dst`.
    pub fn download<'s, T: DeviceCopy, D: Rank>(
        &self,
        src: impl IntoDeviceView<'s, T, D>,
        dst: PinnedSliceMut<'_, T>,
    ) -> Result<(), Error> {
        dst.copy_from(Some(self), src.into_view())
    }
}
