//! [`DeviceView`] and [`DeviceViewMut`]: part of a device array along its first axis, as
//! Numba's `d[i:j]`, `d[i]` and `d.split(n)` are. A kernel takes a view for an array parameter
//! of its rank as it takes a whole array, and copies read and write a view's elements alone.
//!
//! A view is always rows of the C-order array, so its elements are contiguous and a kernel sees
//! it as it sees an array: an address and extents. A view borrows its array, so the borrow
//! checker keeps a writable view apart from every other use of the array, as `&mut` does; two
//! writable views of one array come only from splitting one ([`DeviceViewMut::split_at_mut`],
//! [`chunks_mut`](DeviceViewMut::chunks_mut)), which keeps them disjoint.
//!
//! On a GPU, work on a view is ordered with the array's other work on other streams as work on
//! the whole array is (see [`Stream`](crate::Stream)): parts of one array written on two
//! streams are written one after the other. Copies and kernels that are to overlap on streams
//! take an array each, as Numba's examples of streams do.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! fn double(x: &mut [f32]) {
//!     let i = grid(1);
//!     if i < x.len() {
//!         x[i] *= 2.0;
//!     }
//! }
//!
//! let dev = Device::default();
//! let mut x = dev.to_device(&vec![1.0f32; 10])?;
//! double.launch(1, 32, x.slice_mut(2..5)?)?; // Numba's double[1, 32](x[2:5])
//! assert_eq!(x.to_vec()?, [1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
//! assert_eq!(x.slice(..3)?.to_vec()?, [1.0, 1.0, 2.0]);
//! # Ok::<(), kernel_runtime::Error>(())
//! ```
//!
//! In checked mode, a view keeps its array's record of elements nothing has written: a launch
//! on it reports a read of one, and its writes count. Views split apart from one another count
//! their elements written when they are split, as a raw pointer's kernel does.

use std::borrow::Cow;
use std::ops::{Range, RangeBounds};

use ndarray::{Array, ArrayBase, DataMut};

use super::array::{DeviceArray, ToDevice};
use super::bytes::bytes_of;
use super::device::{permitted, Device};
use super::error::Error;
use super::host_vec::{c_order_vec, copied_vec, the_host, within, zeroed_vec};
use super::order::{Access, Bytes, Span, Users};
use super::shape::{Rank, Sliceable};
use crate::cpu::unwritten::Unwritten;
use crate::device_copy::{AnyBitPattern, DeviceCopy};

/// Rows of a device array along its first axis, read-only: what `&[T]` and `&ArrayN<T>` kernel
/// parameters take besides whole arrays, and what copies back to the host read.
///
/// Made by [`DeviceArray::view`](crate::DeviceArray::view), [`slice`](Self::slice) (Numba's
/// `d[i:j]`), [`subarray`](Self::subarray) (`d[i]`), [`split_at`](Self::split_at) and
/// [`chunks`](Self::chunks) (`d.split(n)`).
pub struct DeviceView<'a, T: DeviceCopy, D: Rank> {
    pub(crate) device: &'a Device,
    pub(crate) users: &'a Users,
    /// The device address of the first element, on a GPU (0 on the CPU backend).
    pub(crate) addr: u64,
    /// The elements in host memory, on the CPU backend (none on a GPU).
    pub(crate) host: &'a [T],
    /// The array's record of unwritten elements, where it keeps one for the view.
    pub(crate) unwritten: Option<&'a Unwritten>,
    /// Where the view's first element is in the array, for the record.
    pub(crate) start: usize,
    pub(crate) dim: D,
}

/// Rows of a device array along its first axis, writable: what `&mut [T]` and `&mut ArrayN<T>`
/// kernel parameters take besides whole arrays, and what copies from the host write.
///
/// Made by [`DeviceArray::view_mut`](crate::DeviceArray::view_mut),
/// [`slice_mut`](Self::slice_mut), [`subarray_mut`](Self::subarray_mut),
/// [`split_at_mut`](Self::split_at_mut) and [`chunks_mut`](Self::chunks_mut).
pub struct DeviceViewMut<'a, T: DeviceCopy, D: Rank> {
    pub(crate) device: &'a Device,
    pub(crate) users: &'a Users,
    /// As [`DeviceView`]'s.
    pub(crate) addr: u64,
    pub(crate) host: &'a mut [T],
    /// The array's record of unwritten elements, where this view alone writes the array's
    /// elements it holds (not after a split).
    pub(crate) unwritten: Option<&'a mut Unwritten>,
    pub(crate) start: usize,
    pub(crate) dim: D,
}

impl<T: DeviceCopy, D: Rank> Clone for DeviceView<'_, T, D> {
    fn clone(&self) -> Self {
        DeviceView {
            dim: self.dim.clone(),
            ..*self
        }
    }
}

impl<T: DeviceCopy + std::fmt::Debug, D: Rank> std::fmt::Debug for DeviceView<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceView")
            .field("device", &self.device.name())
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

impl<T: DeviceCopy + std::fmt::Debug, D: Rank> std::fmt::Debug for DeviceViewMut<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceViewMut")
            .field("device", &self.device.name())
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

/// The rows `range` of an array of shape `dim`: their shape, and their elements (C order).
fn rows<D: Sliceable>(dim: &D, range: impl RangeBounds<usize>) -> Result<(D, Range<usize>), Error> {
    let (start, end) = within(range, dim[0]).map_err(|e| match e {
        Error::OutOfRange { start, end, .. } => Error::AxisOutOfRange {
            start,
            end,
            shape: dim.slice().to_vec(),
        },
        e => e,
    })?;
    let row: usize = dim.slice()[1..].iter().product();
    let mut part = dim.clone();
    part[0] = end - start;
    Ok((part, start * row..end * row))
}

/// The address of element `first` of a view at `addr` (0 on the CPU backend).
fn addr_of<T>(addr: u64, first: usize) -> u64 {
    match addr {
        0 => 0,
        _ => addr + (first * std::mem::size_of::<T>()) as u64,
    }
}

/// [`Error::EmptyChunks`] where `n` is 0.
fn chunk_rows<D: Rank>(n: usize, dim: &D) -> Result<usize, Error> {
    match n {
        0 => Err(Error::EmptyChunks {
            shape: dim.slice().to_vec(),
        }),
        n => Ok(n),
    }
}

/// The shape and device of a view, read-only or writable.
macro_rules! shape_of_view {
    ($view:ident) => {
        impl<'a, T: DeviceCopy, D: Rank> $view<'a, T, D> {
            /// The device the view's array lives on.
            pub fn device(&self) -> &'a Device {
                self.device
            }

            /// The shape, outermost dimension first.
            pub fn shape(&self) -> &[usize] {
                self.dim.slice()
            }

            /// The shape as ndarray's `dim()` pattern: `n`, `(n, m)` or `(n, m, k)`.
            pub fn dim(&self) -> D::Pattern {
                self.dim.clone().into_pattern()
            }

            /// The number of elements.
            pub fn len(&self) -> usize {
                self.dim.size()
            }

            /// Whether the view has no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// The bytes of its array the view holds, for ordering streams.
            pub(crate) fn span(&self) -> Span<'a> {
                self.users.span(Bytes::elements::<T>(self.addr, self.len()))
            }
        }
    };
}
shape_of_view!(DeviceView);
shape_of_view!(DeviceViewMut);

/// Views of `n` rows each of `first`, in order, the last holding what is left: `rows` gives a
/// view's rows, `split` splits one.
fn chunks_of<V>(
    first: V,
    n: usize,
    rows: impl Fn(&V) -> usize,
    split: impl Fn(V, usize) -> Result<(V, V), Error>,
) -> impl Iterator<Item = V> {
    let mut rest = Some(first);
    std::iter::from_fn(move || {
        let view = rest.take().filter(|v| rows(v) > 0)?;
        let k = n.min(rows(&view));
        let (head, tail) = split(view, k).ok()?;
        rest = Some(tail);
        Some(head)
    })
}

impl<'a, T: DeviceCopy, D: Rank> DeviceView<'a, T, D> {
    /// The view's elements `elements` (C order, within it) under the shape `dim`.
    fn part<E: Rank>(self, elements: Range<usize>, dim: E) -> DeviceView<'a, T, E> {
        DeviceView {
            device: self.device,
            users: self.users,
            addr: addr_of::<T>(self.addr, elements.start),
            host: self.host.get(elements.clone()).unwrap_or_default(),
            unwritten: self.unwritten,
            start: self.start + elements.start,
            dim,
        }
    }

    /// The elements `range` of the view in C order, as a 1-D view; outside it,
    /// [`Error::OutOfRange`].
    pub(crate) fn elements(
        self,
        range: Range<usize>,
    ) -> Result<DeviceView<'a, T, ndarray::Ix1>, Error> {
        let (start, end) = within(range, self.len())?;
        Ok(self.part(start..end, ndarray::Ix1(end - start)))
    }

    /// Copies the view back to the host as a `Vec` in C order (on a GPU, after the work queued
    /// before; a kernel that failed there is reported here): only its bytes cross.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        permitted(self.device, "copying from the device")?;
        match self.device.gpu() {
            Some(gpu) => {
                let mut v = zeroed_vec(self.len(), the_host)?;
                gpu.download(&mut v, self.addr, self.users)?;
                Ok(v)
            }
            None => copied_vec(self.host, the_host),
        }
    }

    /// Copies the view back to the host as an ndarray array.
    pub fn to_host(&self) -> Result<Array<T, D>, Error> {
        let v = self.to_vec()?;
        let found = vec![v.len()];
        Array::from_shape_vec(self.dim.clone(), v).map_err(|_| Error::ShapeMismatch {
            what: "to_host".into(),
            expected: self.shape().to_vec(),
            found,
        })
    }

    /// Copies the view into a host array of the same shape, as Numba's `d.copy_to_host(out)`:
    /// from a GPU into an `out` in C order, straight into its memory.
    pub fn copy_to_host<S: DataMut<Elem = T>>(
        &self,
        out: &mut ArrayBase<S, D>,
    ) -> Result<(), Error> {
        if out.raw_dim() != self.dim {
            return Err(Error::ShapeMismatch {
                what: "the host array given to copy_to_host".into(),
                expected: self.shape().to_vec(),
                found: out.shape().to_vec(),
            });
        }
        match (self.device.gpu(), out.as_slice_mut()) {
            (Some(gpu), Some(slice)) => {
                permitted(self.device, "copying from the device")?;
                gpu.download(slice, self.addr, self.users)
            }
            (None, Some(slice)) => {
                permitted(self.device, "copying from the device")?;
                slice.copy_from_slice(self.host);
                Ok(())
            }
            (_, None) => {
                let v = self.to_vec()?;
                out.iter_mut().zip(v).for_each(|(o, v)| *o = v);
                Ok(())
            }
        }
    }
}

impl<'a, T: DeviceCopy, D: Sliceable> DeviceView<'a, T, D> {
    /// The rows `range` of the first axis, as Numba's `d[i:j]`.
    ///
    /// ```
    /// use kernel_runtime::{Device, ndarray::array};
    /// let a = Device::cpu().to_device(&array![[1, 2], [3, 4], [5, 6]])?;
    /// assert_eq!(a.view().slice(1..)?.to_host()?, array![[3, 4], [5, 6]]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::AxisOutOfRange`] where `range` does not lie within the first axis.
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<Self, Error> {
        let (dim, elements) = rows(&self.dim, range)?;
        Ok(self.part(elements, dim))
    }

    /// Index `i` of the first axis, one rank less, as Numba's `d[i]`: a row of a 2-D array, a
    /// plane of a 3-D one, an element of a 1-D one (a 0-D view).
    ///
    /// # Errors
    /// [`Error::AxisOutOfRange`] where `i` is past the first axis.
    pub fn subarray(self, i: usize) -> Result<DeviceView<'a, T, D::Sub>, Error> {
        let (dim, elements) = rows(&self.dim, i..i.saturating_add(1))?;
        Ok(self.part(elements, Sliceable::row_dim(&dim)))
    }

    /// The rows before `k` and from `k` on.
    ///
    /// # Errors
    /// [`Error::AxisOutOfRange`] where `k` is past the first axis.
    pub fn split_at(self, k: usize) -> Result<(Self, Self), Error> {
        let tail = self.clone().slice(k..)?;
        Ok((self.slice(..k)?, tail))
    }

    /// Views of `n` rows each, in order, the last holding what is left, as Numba's
    /// `d.split(n)`.
    ///
    /// # Errors
    /// [`Error::EmptyChunks`] where `n` is 0.
    pub fn chunks(self, n: usize) -> Result<impl Iterator<Item = DeviceView<'a, T, D>>, Error> {
        let n = chunk_rows(n, &self.dim)?;
        Ok(chunks_of(self, n, |v| v.dim[0], Self::split_at))
    }
}

impl<'a, T: DeviceCopy, D: Rank> DeviceViewMut<'a, T, D> {
    /// The same elements, read-only: to copy them back to the host, or pass them to a
    /// read-only parameter.
    pub fn view(&self) -> DeviceView<'_, T, D> {
        DeviceView {
            device: self.device,
            users: self.users,
            addr: self.addr,
            host: &*self.host,
            unwritten: self.unwritten.as_deref(),
            start: self.start,
            dim: self.dim.clone(),
        }
    }

    /// The same elements, writable, for a shorter borrow: to pass the view to several
    /// launches in turn (`&mut v` does the same).
    pub fn reborrow(&mut self) -> DeviceViewMut<'_, T, D> {
        DeviceViewMut {
            device: self.device,
            users: self.users,
            addr: self.addr,
            host: &mut *self.host,
            unwritten: self.unwritten.as_deref_mut(),
            start: self.start,
            dim: self.dim.clone(),
        }
    }

    /// The view's elements `elements` (C order, within it) under the shape `dim`.
    fn part<E: Rank>(self, elements: Range<usize>, dim: E) -> DeviceViewMut<'a, T, E> {
        DeviceViewMut {
            device: self.device,
            users: self.users,
            addr: addr_of::<T>(self.addr, elements.start),
            host: self.host.get_mut(elements.clone()).unwrap_or_default(),
            unwritten: self.unwritten,
            start: self.start + elements.start,
            dim,
        }
    }

    /// As [`DeviceView`]'s `elements`, writable.
    pub(crate) fn elements(
        self,
        range: Range<usize>,
    ) -> Result<DeviceViewMut<'a, T, ndarray::Ix1>, Error> {
        let (start, end) = within(range, self.len())?;
        Ok(self.part(start..end, ndarray::Ix1(end - start)))
    }

    /// Overwrites the view with host data of the same shape, as Numba's `d[i:j] = h` or
    /// `d[i:j].copy_to_device(h)`: only its bytes cross.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let mut a = Device::cpu().zeros::<u32, _>(5)?;
    /// a.slice_mut(3..)?.copy_from_host(&[7, 8])?;
    /// assert_eq!(a.to_vec()?, [0, 0, 0, 7, 8]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    pub fn copy_from_host<H: ToDevice<Elem = T, Dim = D> + ?Sized>(
        &mut self,
        host: &H,
    ) -> Result<(), Error> {
        permitted(self.device, "copying to the device")?;
        let dim = host.host_dim();
        if dim != self.dim {
            return Err(Error::ShapeMismatch {
                what: "the host data given to copy_from_host".into(),
                expected: self.shape().to_vec(),
                found: dim.slice().to_vec(),
            });
        }
        let gathered;
        let values = match host.as_c_slice() {
            Some(slice) => slice,
            None => {
                gathered = c_order_vec(host, the_host)?;
                &gathered[..]
            }
        };
        match self.device.gpu() {
            Some(gpu) => gpu.upload(self.addr, self.users, values),
            None => {
                self.host.copy_from_slice(values);
                self.forget_unwritten();
                Ok(())
            }
        }
    }

    /// Overwrites the view with `src` (a device array or a view of one) of the same shape, as
    /// Numba's `d[i:j].copy_to_device(e[k:l])`: a copy within the device's memory, or from
    /// another device (between two GPUs, straight over their link where they have one).
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let dev = Device::cpu();
    /// let mut a = dev.to_device(&[1, 2, 3, 4, 5, 6])?;
    /// let (mut head, tail) = a.split_at_mut(3)?;
    /// head.copy_from_device(&tail)?;
    /// assert_eq!(a.to_vec()?, [4, 5, 6, 4, 5, 6]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] where the shapes differ.
    pub fn copy_from_device<'s>(
        &mut self,
        src: impl IntoDeviceView<'s, T, D>,
    ) -> Result<(), Error> {
        let src = src.into_view();
        permitted(self.device, "copying on the device")?;
        if src.dim != self.dim {
            return Err(Error::ShapeMismatch {
                what: "the source array of copy_from_device".into(),
                expected: self.shape().to_vec(),
                found: src.shape().to_vec(),
            });
        }
        let bytes = self.len() * std::mem::size_of::<T>();
        let uses = [(src.span(), Access::Read), (self.span(), Access::Write)];
        match (self.device.gpu(), src.device.gpu()) {
            (Some(to), Some(_)) if self.device == src.device => {
                to.copy(self.addr, src.addr, bytes, &uses)
            }
            (Some(to), Some(from)) => to.copy_from_peer(self.addr, from, src.addr, bytes, &uses),
            (Some(to), None) => to.upload(self.addr, self.users, src.host),
            (None, Some(from)) => {
                self.forget_unwritten();
                from.download(self.host, src.addr, src.users)
            }
            (None, None) => {
                self.host.copy_from_slice(src.host);
                self.forget_unwritten();
                Ok(())
            }
        }
    }

    /// Records a write of every element of the view, in its array's record.
    pub(crate) fn forget_unwritten(&mut self) {
        let range = self.start..self.start + self.len();
        if let Some(u) = self.unwritten.as_deref_mut() {
            u.clear_range(range);
        }
    }

    /// The record of the view's unwritten elements, numbered from its first, for a checked
    /// launch that writes it.
    pub(crate) fn unwritten_window(&self) -> Unwritten {
        self.view().unwritten_record().into_owned()
    }

    /// Records the writes of a checked launch: `window` is what it left unwritten of
    /// [`unwritten_window`](Self::unwritten_window).
    pub(crate) fn written(&mut self, window: &Unwritten) {
        let (start, len) = (self.start, self.len());
        if let Some(u) = self.unwritten.as_deref_mut() {
            u.written_within(start, len, window);
        }
    }
}

impl<T: AnyBitPattern, D: Rank> DeviceViewMut<'_, T, D> {
    /// Sets every element of the view to `value`, as Numba's `d[i:j] = v` (CuPy's
    /// `a.fill(v)`): on a GPU, memsets on the device's stream, no host data crossing.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let mut a = Device::cpu().zeros::<f32, _>(6)?;
    /// a.slice_mut(2..5)?.fill(1.5)?;
    /// assert_eq!(a.to_vec()?, [0.0, 0.0, 1.5, 1.5, 1.5, 0.0]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// `T` is a number, a vector type or a padding-free `#[derive(DeviceCopy)]` struct, whose
    /// bytes are all initialised (a `bool` array starts from [`Device::zeros`] or a kernel).
    pub fn fill(&mut self, value: T) -> Result<(), Error> {
        permitted(self.device, "filling an array")?;
        match self.device.gpu() {
            Some(gpu) => gpu.fill(self.addr, self.users, bytes_of(&[value]), self.len()),
            None => {
                self.host.fill(value);
                self.forget_unwritten();
                Ok(())
            }
        }
    }
}

impl<'a, T: DeviceCopy, D: Sliceable> DeviceViewMut<'a, T, D> {
    /// The rows `range` of the first axis, writable, as Numba's `d[i:j]`.
    ///
    /// # Errors
    /// [`Error::AxisOutOfRange`] where `range` does not lie within the first axis.
    pub fn slice_mut(self, range: impl RangeBounds<usize>) -> Result<Self, Error> {
        let (dim, elements) = rows(&self.dim, range)?;
        Ok(self.part(elements, dim))
    }

    /// Index `i` of the first axis, one rank less, writable, as Numba's `d[i]`.
    ///
    /// # Errors
    /// [`Error::AxisOutOfRange`] where `i` is past the first axis.
    pub fn subarray_mut(self, i: usize) -> Result<DeviceViewMut<'a, T, D::Sub>, Error> {
        let (dim, elements) = rows(&self.dim, i..i.saturating_add(1))?;
        Ok(self.part(elements, Sliceable::row_dim(&dim)))
    }

    /// The rows before `k` and from `k` on, both writable, each for a launch or copy of its
    /// own. In checked mode the view's elements then count as written.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let mut a = Device::cpu().zeros::<u32, _>(5)?;
    /// let (mut head, mut tail) = a.view_mut().split_at_mut(2)?;
    /// head.copy_from_host(&[1, 2])?;
    /// tail.copy_from_host(&[3, 4, 5])?;
    /// assert_eq!(a.to_vec()?, [1, 2, 3, 4, 5]);
    /// # Ok::<(), kernel_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::AxisOutOfRange`] where `k` is past the first axis.
    pub fn split_at_mut(mut self, k: usize) -> Result<(Self, Self), Error> {
        let (head_dim, head) = rows(&self.dim, ..k)?;
        let (tail_dim, tail) = rows(&self.dim, k..)?;
        self.forget_unwritten();
        let split = head.end.min(self.host.len());
        let (first, second) = std::mem::take(&mut self.host).split_at_mut(split);
        let half = |host, elements: Range<usize>, dim| DeviceViewMut {
            device: self.device,
            users: self.users,
            addr: addr_of::<T>(self.addr, elements.start),
            host,
            unwritten: None,
            start: self.start + elements.start,
            dim,
        };
        Ok((half(first, head, head_dim), half(second, tail, tail_dim)))
    }

    /// Writable views of `n` rows each, in order, the last holding what is left, as Numba's
    /// `d.split(n)`: each may go to a launch of its own. In checked mode the view's elements
    /// then count as written.
    ///
    /// # Errors
    /// [`Error::EmptyChunks`] where `n` is 0.
    pub fn chunks_mut(
        self,
        n: usize,
    ) -> Result<impl Iterator<Item = DeviceViewMut<'a, T, D>>, Error> {
        let n = chunk_rows(n, &self.dim)?;
        Ok(chunks_of(self, n, |v| v.dim[0], Self::split_at_mut))
    }
}

/// What reads as a view: a device array, or a view of one, by reference or by value
/// (`#[reduce]`'s `reduce` and `fold` take one).
pub trait IntoDeviceView<'a, T: DeviceCopy, D: Rank> {
    /// The elements as a read-only view.
    fn into_view(self) -> DeviceView<'a, T, D>;
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceView<'a, T, D> for &'a DeviceArray<T, D> {
    fn into_view(self) -> DeviceView<'a, T, D> {
        self.view()
    }
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceView<'a, T, D> for &'a mut DeviceArray<T, D> {
    fn into_view(self) -> DeviceView<'a, T, D> {
        self.view()
    }
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceView<'a, T, D> for DeviceView<'a, T, D> {
    fn into_view(self) -> DeviceView<'a, T, D> {
        self
    }
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceView<'a, T, D> for &'a DeviceView<'_, T, D> {
    fn into_view(self) -> DeviceView<'a, T, D> {
        self.clone()
    }
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceView<'a, T, D> for &'a DeviceViewMut<'_, T, D> {
    fn into_view(self) -> DeviceView<'a, T, D> {
        self.view()
    }
}

/// What writes as a view: a device array borrowed uniquely, or a writable view of one
/// ([`Stream::upload`](crate::Stream::upload) takes one).
pub trait IntoDeviceViewMut<'a, T: DeviceCopy, D: Rank> {
    /// The elements as a writable view.
    fn into_view_mut(self) -> DeviceViewMut<'a, T, D>;
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceViewMut<'a, T, D> for &'a mut DeviceArray<T, D> {
    fn into_view_mut(self) -> DeviceViewMut<'a, T, D> {
        self.view_mut()
    }
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceViewMut<'a, T, D> for DeviceViewMut<'a, T, D> {
    fn into_view_mut(self) -> DeviceViewMut<'a, T, D> {
        self
    }
}

impl<'a, T: DeviceCopy, D: Rank> IntoDeviceViewMut<'a, T, D> for &'a mut DeviceViewMut<'_, T, D> {
    fn into_view_mut(self) -> DeviceViewMut<'a, T, D> {
        self.reborrow()
    }
}

impl<'a, T: DeviceCopy, D: Rank> DeviceView<'a, T, D> {
    /// The elements in host memory: all of them on the CPU backend, none on a GPU.
    pub(crate) fn host_elements(&self) -> &'a [T] {
        self.host
    }

    /// The record of the view's unwritten elements, numbered from its first: its array's own
    /// where the two start together, else a window of it, which the caller keeps while it reads.
    pub(crate) fn unwritten_record(&self) -> Cow<'a, Unwritten> {
        match self.unwritten {
            Some(u) if self.start == 0 => Cow::Borrowed(u),
            Some(u) => Cow::Owned(u.window(self.start..self.start + self.len())),
            None => Cow::Owned(Unwritten::default()),
        }
    }
}

/// The whole array as a view.
impl<T: DeviceCopy, D: Rank> DeviceArray<T, D> {
    /// The whole array as a read-only view: what a kernel's `&` parameter takes of it.
    pub fn view(&self) -> DeviceView<'_, T, D> {
        let (device, users, addr, host, unwritten) = self.parts();
        DeviceView {
            device,
            users,
            addr,
            host,
            unwritten: Some(unwritten),
            start: 0,
            dim: self.raw_dim(),
        }
    }

    /// The whole array as a writable view: what a kernel's `&mut` parameter takes of it.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T, D> {
        let dim = self.raw_dim();
        let (device, users, addr, host, unwritten) = self.parts_mut();
        DeviceViewMut {
            device,
            users,
            addr,
            host,
            unwritten: Some(unwritten),
            start: 0,
            dim,
        }
    }
}

/// Numba's slicing of a device array along its first axis, through [`DeviceArray::view`] and
/// [`DeviceArray::view_mut`].
impl<T: DeviceCopy, D: Sliceable> DeviceArray<T, D> {
    /// The rows `range` of the first axis, as Numba's `d[i:j]`: see [`DeviceView::slice`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T, D>, Error> {
        self.view().slice(range)
    }

    /// The rows `range` of the first axis, writable: see [`DeviceViewMut::slice_mut`].
    pub fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceViewMut<'_, T, D>, Error> {
        self.view_mut().slice_mut(range)
    }

    /// Index `i` of the first axis, as Numba's `d[i]`: see [`DeviceView::subarray`].
    pub fn subarray(&self, i: usize) -> Result<DeviceView<'_, T, D::Sub>, Error> {
        self.view().subarray(i)
    }

    /// Index `i` of the first axis, writable: see [`DeviceViewMut::subarray_mut`].
    pub fn subarray_mut(&mut self, i: usize) -> Result<DeviceViewMut<'_, T, D::Sub>, Error> {
        self.view_mut().subarray_mut(i)
    }

    /// The rows before `k` and from `k` on, both writable: see
    /// [`DeviceViewMut::split_at_mut`].
    #[allow(clippy::type_complexity)]
    pub fn split_at_mut(
        &mut self,
        k: usize,
    ) -> Result<(DeviceViewMut<'_, T, D>, DeviceViewMut<'_, T, D>), Error> {
        self.view_mut().split_at_mut(k)
    }

    /// Views of `n` rows each, as Numba's `d.split(n)`: see [`DeviceView::chunks`].
    pub fn chunks(&self, n: usize) -> Result<impl Iterator<Item = DeviceView<'_, T, D>>, Error> {
        self.view().chunks(n)
    }

    /// Writable views of `n` rows each: see [`DeviceViewMut::chunks_mut`].
    pub fn chunks_mut(
        &mut self,
        n: usize,
    ) -> Result<impl Iterator<Item = DeviceViewMut<'_, T, D>>, Error> {
        self.view_mut().chunks_mut(n)
    }
}
