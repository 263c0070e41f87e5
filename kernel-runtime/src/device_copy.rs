//! [`DeviceCopy`]: the types that may cross to a device bit for bit, and [`AnyBitPattern`]:
//! those of them that any bits make a value of.

/// Plain data that may be copied to a device bit for bit and for which all-zero bits are a
/// valid value: the element types of device arrays and the types of by-value kernel parameters.
///
/// Implemented for the primitive numbers, `bool` and complex numbers; derive it for your own `#[repr(C)]`
/// structs of such fields with `#[derive(Clone, Copy, DeviceCopy)]`.
///
/// # Safety
/// The type must be `#[repr(C)]` (or a primitive), hold no pointers or references, and every
/// field must itself be `DeviceCopy`; the derive checks all of this.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to a kernel or stored in a device array",
    label = "not plain device data",
    note = "kernel parameters and array elements must be primitive numbers, `bool`, complex numbers (`Complex32`, `Complex64`), or `#[repr(C)]` structs with `#[derive(Clone, Copy, DeviceCopy)]`"
)]
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! impl_device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: primitives are plain bits, all-zero is a valid value.
        unsafe impl DeviceCopy for $t {}
    )* };
}
impl_device_copy!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, bool);
impl_device_copy!(crate::f16, half::bf16);

// SAFETY: arrays of plain data are plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

// SAFETY: `Complex<T>` is `#[repr(C)]`, its two fields `T`s (real, then imaginary): plain data
// when `T` is, all-zero bits are `0 + 0i`.
unsafe impl<T: DeviceCopy> DeviceCopy for num_complex::Complex<T> {}

/// The all-zero value of `T`, which every [`DeviceCopy`] type has: where generated code needs a
/// value before it has one (`#[reduce]`'s accumulator before its first element).
#[doc(hidden)]
#[inline(always)]
pub fn zero<T: DeviceCopy>() -> T {
    // SAFETY: all-zero bits are a value of every `DeviceCopy` type (the trait's contract).
    unsafe { core::mem::zeroed() }
}

/// [`DeviceCopy`] data for which every bit pattern is a valid value and that has no padding:
/// the element types of memory that is not cleared before a kernel reads it (arrays from
/// [`Device::empty`](crate::Device::empty), `shared_array!`, `dynamic_shared!`) and of
/// [`DeviceArray::reinterpret`](crate::DeviceArray::reinterpret)'s result.
///
/// Implemented for the primitive numbers and arrays of them, not for `bool` (only 0 and 1 are
/// values). `#[derive(DeviceCopy)]` implements it for a `#[repr(C)]` struct whose fields all
/// implement it and that has no padding between or after them:
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
///
/// fn uncleared<T: AnyBitPattern>() {}
/// uncleared::<Particle>();
/// ```
///
/// # Safety
/// Every bit pattern of the type's size must be a valid value, and the type must have no
/// padding bytes (which a copy leaves uninitialised, and a later read of the same memory as
/// another type would see).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold the unspecified contents of uncleared memory",
    label = "some bit patterns are not values of this type",
    note = "uncleared arrays (`Device::empty`), shared memory (`shared_array!`, `dynamic_shared!`), module arrays (`constant_array!`, `global_array!`), `reinterpret` and `fill` take numbers, arrays of numbers and `#[derive(DeviceCopy)]` structs of them without padding; a static shared array takes `bool` too (`shared_array![bool; N]`); for other types, use `Device::zeros` and a device array"
)]
pub unsafe trait AnyBitPattern: DeviceCopy {}

macro_rules! impl_any_bit_pattern {
    ($($t:ty),*) => { $(
        // SAFETY: every bit pattern is a value of a primitive integer or float.
        unsafe impl AnyBitPattern for $t {}
    )* };
}
impl_any_bit_pattern!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);
impl_any_bit_pattern!(crate::f16, half::bf16);

// SAFETY: an array is valid when each element is.
unsafe impl<T: AnyBitPattern, const N: usize> AnyBitPattern for [T; N] {}

// SAFETY: two `T`s of one type in a `#[repr(C)]` struct leave no padding, and the pair is valid
// when each is.
unsafe impl<T: AnyBitPattern> AnyBitPattern for num_complex::Complex<T> {}

/// `NoPadding<true>` is [`Holds`]: how `#[derive(DeviceCopy)]` makes a struct [`AnyBitPattern`]
/// only when its fields fill it without padding.
#[doc(hidden)]
pub struct NoPadding<const FILLED: bool>;

/// A condition the compiler checks (see [`NoPadding`]).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "the struct has padding bytes, so not every bit pattern of it is a value",
    label = "its fields do not fill it"
)]
pub trait Holds {}
impl Holds for NoPadding<true> {}

/// Fails at compile time, at the caller's span, unless `T` may cross to a device.
pub const fn assert_device_copy<T: DeviceCopy>() {}
