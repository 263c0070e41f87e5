//! Host memory for what device arrays copy in and out: vectors allocated without aborting (an
//! allocation the host cannot make is [`Error::OutOfMemory`]), and the bounds of ranges of
//! elements.

use std::ops::RangeBounds;

use ndarray::Dimension;

use super::error::Error;
use super::to_device::ToDevice;
use crate::device_copy::DeviceCopy;

/// Room for `len` elements of host memory, for an array of `place` (a device's name, or the
/// host): an allocation the host cannot make is [`Error::OutOfMemory`], never an abort.
pub(crate) fn reserve<T>(len: usize, place: impl FnOnce() -> String) -> Result<Vec<T>, Error> {
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    let mut v = Vec::new();
    if !crate::zeroed::host_can_hold(bytes) || v.try_reserve_exact(len).is_err() {
        return Err(Error::OutOfMemory {
            place: place(),
            bytes,
        });
    }
    Ok(v)
}

/// `len` zero elements in host memory (see [`reserve`]), from the allocator's zeroed memory:
/// fresh pages from the system are zero already, and are touched only as they are used.
pub(crate) fn zeroed_vec<T: DeviceCopy>(
    len: usize,
    place: impl FnOnce() -> String,
) -> Result<Vec<T>, Error> {
    // SAFETY: all-zero bits are a value of `T` (the `DeviceCopy` contract).
    unsafe { crate::zeroed::zeroed_vec(len) }.ok_or_else(|| Error::OutOfMemory {
        place: place(),
        bytes: len.saturating_mul(std::mem::size_of::<T>()),
    })
}

/// A copy of `items` in host memory (see [`reserve`]).
pub(crate) fn copied_vec<T: Copy>(
    items: &[T],
    place: impl FnOnce() -> String,
) -> Result<Vec<T>, Error> {
    let mut v = reserve(items.len(), place)?;
    v.extend_from_slice(items);
    Ok(v)
}

/// The elements of `host` in C order, in host memory (see [`reserve`]).
pub(crate) fn c_order_vec<H: ToDevice + ?Sized>(
    host: &H,
    place: impl FnOnce() -> String,
) -> Result<Vec<H::Elem>, Error> {
    let mut v = reserve(host.host_dim().size(), place)?;
    host.extend_c_order(&mut v);
    Ok(v)
}

/// The bounds of `range` within `len` elements, as `(start, end)`; elements that do not lie
/// within them are [`Error::OutOfRange`].
pub(crate) fn within(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize), Error> {
    let (start, end) = crate::base::range_ends(&range, len);
    if start > end || end > len {
        return Err(Error::OutOfRange { start, end, len });
    }
    Ok((start, end))
}

/// The host, as [`Error::OutOfMemory`] names it for copies coming back from a device.
pub(crate) fn the_host() -> String {
    "the host".to_string()
}
