//! [`ToDevice`]: the host data a device array is copied from: slices, arrays, `Vec`s and ndarray
//! arrays of any layout.

use super::shape::Rank;
use crate::device_copy::DeviceCopy;
use ndarray::{ArrayBase, Data, Ix1};

/// Host data that can be copied to a device: slices, arrays, `Vec`s and ndarray arrays.
pub trait ToDevice {
    /// The element type.
    type Elem: DeviceCopy;
    /// The rank of the device array it becomes.
    type Dim: Rank;
    /// Its shape.
    fn host_dim(&self) -> Self::Dim;
    /// Appends its elements, in C order, to `out` (which has room for them).
    fn extend_c_order(&self, out: &mut Vec<Self::Elem>);
    /// Its elements in C order without copying, when they lie so in memory.
    fn as_c_slice(&self) -> Option<&[Self::Elem]> {
        None
    }
}

/// The `ToDevice` of a type whose elements are one slice in order, `as_slice` of it.
macro_rules! contiguous {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> ToDevice for $t {
            type Elem = T;
            type Dim = Ix1;
            fn host_dim(&self) -> Ix1 {
                ndarray::Ix1(self.len())
            }
            fn extend_c_order(&self, out: &mut Vec<T>) {
                out.extend_from_slice(self);
            }
            fn as_c_slice(&self) -> Option<&[T]> {
                Some(self)
            }
        }
    )*};
}

contiguous! {
    impl[T: DeviceCopy] [T];
    impl[T: DeviceCopy, const N: usize] [T; N];
    impl[T: DeviceCopy] Vec<T>;
}

impl<T: DeviceCopy, S: Data<Elem = T>, D: Rank> ToDevice for ArrayBase<S, D> {
    type Elem = T;
    type Dim = D;
    fn host_dim(&self) -> D {
        self.raw_dim()
    }
    fn extend_c_order(&self, out: &mut Vec<T>) {
        match self.as_slice() {
            Some(s) => out.extend_from_slice(s),
            None => out.extend(self.iter().copied()),
        }
    }
    fn as_c_slice(&self) -> Option<&[T]> {
        self.as_slice()
    }
}
