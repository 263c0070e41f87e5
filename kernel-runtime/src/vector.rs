//! CUDA's vector types (`float4`, `int2`, `uchar4`, ...; Numba's `float32x4`, `int32x2`,
//! `uint8x4`): two to four numbers side by side, with CUDA's alignment, so that an array of
//! them is read and written a whole vector at a time (`ld.global.v4.f32` for an `F32x4`).
//!
//! | CUDA C++ | Numba | here |
//! | --- | --- | --- |
//! | `float4 v = make_float4(a, b, c, d);` | `v = float32x4(a, b, c, d)` | `let v = F32x4::new(a, b, c, d);` |
//! | `v.x`, `v.w = 1.0f` | `v.x` | `v.x`, `v.w = 1.0` |
//! | `float2`, `float3`, `double2`, `int4`, `uint2`, `char4`, `uchar4`, `short2`, `ushort4`, `longlong2`, `ulonglong2`, ... | `float32x2`, `float32x3`, `float64x2`, `int32x4`, `uint32x2`, `int8x4`, `uint8x4`, `int16x2`, `uint16x4`, `int64x2`, `uint64x2`, ... | `F32x2`, `F32x3`, `F64x2`, `I32x4`, `U32x2`, `I8x4`, `U8x4`, `I16x2`, `U16x4`, `I64x2`, `U64x2`, ... |
//! | `reinterpret_cast<const float4 *>(p)` | | `d.reinterpret::<F32x4>()?` on the host |
//!
//! Each type is `#[repr(C)]` with CUDA's alignment (its size for two or four elements, up to 16
//! bytes; the element's for three), so that it has no padding and the same layout on the host
//! and the device: they are [`DeviceCopy`] and [`AnyBitPattern`], kernel parameters and array
//! elements. `+`, `-`, `*` and `/` (and their assignments) work element by element, by another
//! vector or by a number of the element type, and `-v` of signed and float vectors, as CUDA's
//! `helper_math.h` has them for floats, with its `dot`, `length`, `normalize` and (of three
//! elements) `cross` of float vectors.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! use kernel_runtime::vector::F32x4;
//!
//! #[kernel]
//! fn scale4(a: f32, x: &[F32x4], out: &mut [F32x4]) {
//!     let i = grid(1);
//!     if i < out.len() {
//!         out[i] = x[i] * a + F32x4::splat(1.0);
//!     }
//! }
//!
//! let dev = Device::default();
//! let x = dev.to_device(&(0..1000).map(|i| i as f32).collect::<Vec<_>>())?;
//! let x4 = x.reinterpret::<F32x4>()?; // 250 vectors, as CUDA's `(float4 *)x`
//! let mut out = dev.zeros::<F32x4, _>(250)?;
//! scale4.launch(1, 256, (2.0, &x4, &mut out))?;
//! assert_eq!(out.to_vec()?[1], F32x4::new(9.0, 11.0, 13.0, 15.0));
//! # Ok::<(), kernel_runtime::Error>(())
//! ```

use crate::device_copy::{AnyBitPattern, DeviceCopy};
use crate::math::DeviceFloat;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// One vector type: `$name` of `$n` × `$t` with the fields `$f`, aligned to `$align` bytes,
/// CUDA's `$cuda$n` and Numba's `$numba` x `$n`.
macro_rules! vector {
    ($name:ident, $t:ty, $align:literal, $n:literal, $cuda:literal, $numba:literal: $($f:ident),+) => {
        #[doc = concat!($n, " × `", stringify!($t), "`, aligned to ", $align, " bytes: CUDA's `", $cuda, $n, "`, Numba's `", $numba, "x", $n, "`.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        #[repr(C, align($align))]
        pub struct $name {
            $(
                #[doc = concat!("The `", stringify!($f), "` element.")]
                pub $f: $t,
            )+
        }

        const _: () = assert!(
            core::mem::size_of::<$name>() == $n * core::mem::size_of::<$t>(),
            "a vector type has no padding"
        );

        // SAFETY: `#[repr(C)]` fields of a primitive number, no pointer; all-zero bits are
        // zeros. (Not listed among the types a missing `DeviceCopy` could be: the numbers are.)
        #[diagnostic::do_not_recommend]
        unsafe impl DeviceCopy for $name {}
        // SAFETY: every bit pattern is a value of each field, and the assertion above proves
        // that there is no padding.
        #[diagnostic::do_not_recommend]
        unsafe impl AnyBitPattern for $name {}

        impl $name {
            #[doc = concat!("The vector of these elements, as CUDA's `make_", $cuda, $n, "`.")]
            #[inline(always)]
            pub const fn new($($f: $t),+) -> Self {
                $name { $($f),+ }
            }

            /// Every element `v`.
            #[inline(always)]
            pub const fn splat(v: $t) -> Self {
                $name { $($f: v),+ }
            }

            /// The elements in order, `x` first.
            #[inline(always)]
            pub const fn to_array(self) -> [$t; $n] {
                [$(self.$f),+]
            }
        }

        impl From<[$t; $n]> for $name {
            #[inline(always)]
            fn from([$($f),+]: [$t; $n]) -> Self {
                $name { $($f),+ }
            }
        }

        impl From<$name> for [$t; $n] {
            #[inline(always)]
            fn from(v: $name) -> Self {
                v.to_array()
            }
        }

        vector!(@op $name, $t, Add, add, AddAssign, add_assign, +, $($f),+);
        vector!(@op $name, $t, Sub, sub, SubAssign, sub_assign, -, $($f),+);
        vector!(@op $name, $t, Mul, mul, MulAssign, mul_assign, *, $($f),+);
        vector!(@op $name, $t, Div, div, DivAssign, div_assign, /, $($f),+);
    };
    (@op $name:ident, $t:ty, $op:ident, $method:ident, $assign:ident, $assign_method:ident, $sym:tt, $($f:ident),+) => {
        impl $op for $name {
            type Output = $name;
            #[inline(always)]
            fn $method(self, o: $name) -> $name {
                $name { $($f: self.$f $sym o.$f),+ }
            }
        }
        impl $op<$t> for $name {
            type Output = $name;
            #[inline(always)]
            fn $method(self, o: $t) -> $name {
                $name { $($f: self.$f $sym o),+ }
            }
        }
        impl $assign for $name {
            #[inline(always)]
            fn $assign_method(&mut self, o: $name) {
                *self = *self $sym o;
            }
        }
        impl $assign<$t> for $name {
            #[inline(always)]
            fn $assign_method(&mut self, o: $t) {
                *self = *self $sym o;
            }
        }
    };
}

/// The three vector types of an element type: of two, three and four, CUDA's alignments.
macro_rules! vectors {
    ($($t:ty: $x2:ident $a2:literal, $x3:ident $a3:literal, $x4:ident $a4:literal, $cuda:literal, $numba:literal;)*) => {$(
        vector!($x2, $t, $a2, 2, $cuda, $numba: x, y);
        vector!($x3, $t, $a3, 3, $cuda, $numba: x, y, z);
        vector!($x4, $t, $a4, 4, $cuda, $numba: x, y, z, w);
    )*};
}

vectors! {
    i8: I8x2 2, I8x3 1, I8x4 4, "char", "int8";
    u8: U8x2 2, U8x3 1, U8x4 4, "uchar", "uint8";
    i16: I16x2 4, I16x3 2, I16x4 8, "short", "int16";
    u16: U16x2 4, U16x3 2, U16x4 8, "ushort", "uint16";
    i32: I32x2 8, I32x3 4, I32x4 16, "int", "int32";
    u32: U32x2 8, U32x3 4, U32x4 16, "uint", "uint32";
    i64: I64x2 16, I64x3 8, I64x4 16, "longlong", "int64";
    u64: U64x2 16, U64x3 8, U64x4 16, "ulonglong", "uint64";
    f32: F32x2 8, F32x3 4, F32x4 16, "float", "float32";
    f64: F64x2 16, F64x3 8, F64x4 16, "double", "float64";
}

/// `-v`, element by element, for vectors of signed numbers and floats.
macro_rules! negatable {
    ($($name:ident: $($f:ident),+;)*) => {$(
        impl Neg for $name {
            type Output = $name;
            #[inline(always)]
            fn neg(self) -> $name {
                $name { $($f: -self.$f),+ }
            }
        }
    )*};
}

negatable! {
    I8x2: x, y; I8x3: x, y, z; I8x4: x, y, z, w;
    I16x2: x, y; I16x3: x, y, z; I16x4: x, y, z, w;
    I32x2: x, y; I32x3: x, y, z; I32x4: x, y, z, w;
    I64x2: x, y; I64x3: x, y, z; I64x4: x, y, z, w;
    F32x2: x, y; F32x3: x, y, z; F32x4: x, y, z, w;
    F64x2: x, y; F64x3: x, y, z; F64x4: x, y, z, w;
}

/// The geometry of float vectors, as CUDA's `helper_math.h` has it: `dot`, `length`,
/// `normalize`.
macro_rules! geometric {
    ($($name:ident: $t:ty: $($f:ident),+;)*) => {$(
        impl $name {
            /// The sum of the elements' products, CUDA's `dot(a, b)`.
            #[inline(always)]
            pub fn dot(self, o: $name) -> $t {
                0.0 $(+ self.$f * o.$f)+
            }
            /// The Euclidean length, CUDA's `length(v)`.
            #[inline(always)]
            pub fn length(self) -> $t {
                DeviceFloat::sqrt(self.dot(self))
            }
            /// The vector scaled to length 1, CUDA's `normalize(v)` (NaNs for a zero vector).
            #[inline(always)]
            pub fn normalize(self) -> $name {
                self / self.length()
            }
        }
    )*};
}

geometric! {
    F32x2: f32: x, y; F32x3: f32: x, y, z; F32x4: f32: x, y, z, w;
    F64x2: f64: x, y; F64x3: f64: x, y, z; F64x4: f64: x, y, z, w;
}

/// `cross` of three-element float vectors, CUDA's `cross(a, b)`.
macro_rules! cross {
    ($($name:ident),*) => {$(
        impl $name {
            /// The cross product, CUDA's `cross(a, b)`: perpendicular to both, right-handed.
            #[inline(always)]
            pub fn cross(self, o: $name) -> $name {
                $name::new(
                    self.y * o.z - self.z * o.y,
                    self.z * o.x - self.x * o.z,
                    self.x * o.y - self.y * o.x,
                )
            }
        }
    )*};
}

cross!(F32x3, F64x3);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_cudas() {
        use core::mem::{align_of, size_of};
        assert_eq!((size_of::<F32x4>(), align_of::<F32x4>()), (16, 16));
        assert_eq!((size_of::<F32x3>(), align_of::<F32x3>()), (12, 4));
        assert_eq!((size_of::<U8x4>(), align_of::<U8x4>()), (4, 4));
        assert_eq!((size_of::<I16x2>(), align_of::<I16x2>()), (4, 4));
        assert_eq!((size_of::<F64x4>(), align_of::<F64x4>()), (32, 16));
        assert_eq!((size_of::<I64x3>(), align_of::<I64x3>()), (24, 8));
    }

    #[test]
    fn arithmetic_is_element_by_element() {
        let mut v = F32x4::new(1.0, 2.0, 3.0, 4.0);
        assert_eq!(v + F32x4::splat(1.0), F32x4::new(2.0, 3.0, 4.0, 5.0));
        assert_eq!(v * 2.0 - v, v);
        v /= F32x4::new(1.0, 2.0, 3.0, 4.0);
        assert_eq!(v.to_array(), [1.0; 4]);
        let mut c = U8x3::from([250, 5, 0]);
        c += 5;
        assert_eq!(<[u8; 3]>::from(c), [255, 10, 5]);
        assert_eq!(I32x2::new(7, -9) / 2, I32x2::new(3, -4));
        assert_eq!(-I8x3::new(1, -2, 0), I8x3::new(-1, 2, 0));
    }

    #[test]
    fn float_vectors_have_cudas_geometry() {
        let (a, b) = (F32x3::new(1.0, 0.0, 0.0), F32x3::new(0.0, 1.0, 0.0));
        assert_eq!(a.cross(b), F32x3::new(0.0, 0.0, 1.0));
        assert_eq!(b.cross(a), -a.cross(b));
        assert_eq!(F64x4::new(1.0, 2.0, 3.0, 4.0).dot(F64x4::splat(1.0)), 10.0);
        assert_eq!(F32x2::new(3.0, 4.0).length(), 5.0);
        assert_eq!(F64x2::new(0.0, -2.0).normalize(), F64x2::new(0.0, -1.0));
    }
}
