//! [`DeviceCopy`]: the types that may cross to a device bit for bit, and [`AnyBitPattern`]:
//! those of them that any bits make a value of.

/// Plain data that may be copied to a device bit for bit and for which all-zero bits are a
/// valid value: the element types of device arrays and the types of by-value kernel parameters.
///
/// Implemented for the primitive numbers and `bool`; derive it for your own `#[repr(C)]`
/// structs of such fields with `#[derive(Clone, Copy, DeviceCopy)]`.
///
/// # Safety
/// The type must be `#[repr(C)]` (or a primitive), hold no pointers or references, and every
/// field must itself be `DeviceCopy`; the derive checks all of this.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to a kernel or stored in a device array",
    label = "not plain device data",
    note = "kernel parameters and array elements must be primitive numbers, `bool`, or `#[repr(C)]` structs with `#[derive(Clone, Copy, DeviceCopy)]`"
)]
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! impl_device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: primitives are plain bits, all-zero is a valid value.
        unsafe impl DeviceCopy for $t {}
    )* };
}
impl_device_copy!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, bool);

// SAFETY: arrays of plain data are plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// [`DeviceCopy`] data for which every bit pattern is a valid value: the element types of
/// arrays from [`Device::empty`](crate::Device::empty), whose memory is not cleared.
///
/// Implemented for the primitive numbers and arrays of them, not for `bool`. A `#[repr(C)]`
/// struct of such fields may implement it by hand:
///
/// ```
/// use kernel_runtime::{AnyBitPattern, DeviceCopy};
///
/// #[derive(Clone, Copy, DeviceCopy)]
/// #[repr(C)]
/// struct Particle {
///     position: [f32; 3],
///     id: u32,
/// }
/// // SAFETY: every field is a number or an array of numbers.
/// unsafe impl AnyBitPattern for Particle {}
/// ```
///
/// # Safety
/// Every bit pattern of the type's size (padding aside) must be a valid value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold the unspecified contents of an uncleared device array",
    label = "some bit patterns are not values of this type",
    note = "`Device::empty` takes numbers and arrays of numbers; use `Device::zeros` for `bool` and other types"
)]
pub unsafe trait AnyBitPattern: DeviceCopy {}

macro_rules! impl_any_bit_pattern {
    ($($t:ty),*) => { $(
        // SAFETY: every bit pattern is a value of a primitive integer or float.
        unsafe impl AnyBitPattern for $t {}
    )* };
}
impl_any_bit_pattern!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

// SAFETY: an array is valid when each element is.
unsafe impl<T: AnyBitPattern, const N: usize> AnyBitPattern for [T; N] {}
