//! [`DeviceCopy`]: the types that may cross to a device bit for bit.

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
