//! The numbers kernels compute with: [`DeviceNumber`], the bound of a generic kernel's element
//! types (`#[kernel(instances(f32, f64))] fn axpy<T: DeviceNumber>(..)`), beside
//! [`DeviceFloat`](crate::math::DeviceFloat) for the float methods.

use crate::device_copy::DeviceCopy;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Rem, Sub, SubAssign};

/// A primitive number a kernel computes with on every target: plain device data with
/// arithmetic, comparison, zero and one.
///
/// ```
/// use kernel_runtime::prelude::*;
///
/// #[kernel(instances(f32, i64))]
/// fn scale<T: DeviceNumber>(a: T, x: &mut [T]) {
///     let i = grid(1);
///     if i < x.len() {
///         x[i] = a * x[i] + T::ONE;
///     }
/// }
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let dev = Device::cpu();
/// let mut x = dev.to_device(&[1i64, 2, 3][..])?;
/// scale.launch(1, 32, (10, &mut x))?;
/// assert_eq!(x.to_vec()?, vec![11, 21, 31]);
/// # Ok(())
/// # }
/// ```
pub trait DeviceNumber:
    DeviceCopy
    + PartialEq
    + PartialOrd
    + Default
    + core::fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The smallest value (`-inf` for floats).
    const LOWEST: Self;
    /// The largest value (`inf` for floats).
    const HIGHEST: Self;
}

macro_rules! device_number {
    (int $($t:ty),*) => {$(
        impl DeviceNumber for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
        }
    )*};
    (float $($t:ty),*) => {$(
        impl DeviceNumber for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
        }
    )*};
}
device_number!(int i8, i16, i32, i64, u8, u16, u32, u64, isize, usize);
device_number!(float f32, f64);

macro_rules! device_number_half {
    ($($t:ty),*) => {$(
        impl DeviceNumber for $t {
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
        }
    )*};
}
device_number_half!(crate::f16, half::bf16);
