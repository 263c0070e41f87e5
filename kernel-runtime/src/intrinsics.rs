//! CUDA's integer and selection intrinsics under the names CUDA C++ and Numba give them
//! (`__popc`, `cuda.popc`, ...), for kernels ported as they are written. Each is the Rust method
//! of the same meaning (`count_ones`, `reverse_bits`, `leading_zeros`, ...), which lowers to
//! the same PTX instruction (`popc`, `brev`, `clz`, `selp`); both spellings work in kernels.
//!
//! ```
//! use kernel_runtime::prelude::*;
//! assert_eq!(popc(0b1011u32), 3);
//! assert_eq!(brev(1u32), 1 << 31);
//! assert_eq!(clz(1u64), 63);
//! assert_eq!((ffs(0u32), ffs(0b1000i32)), (0, 4));
//! assert_eq!(selp(true, 1.5f32, 2.5), 1.5);
//! assert_eq!(fma(2.0f32, 3.0, 1.0), 7.0);
//! ```

pub use crate::math::{cbrt, fma};

/// The integer types of the bit intrinsics: CUDA's `int`, `unsigned`, `long long` and
/// `unsigned long long`, and the narrower ones Numba accepts.
pub trait Bits: Copy + sealed::Sealed {
    /// The bits set (`__popc`, `__popcll`).
    fn popc(self) -> u32;
    /// The bits in reverse order (`__brev`, `__brevll`).
    fn brev(self) -> Self;
    /// The zero bits above the highest set bit; the width for 0 (`__clz`, `__clzll`).
    fn clz(self) -> u32;
    /// The zero bits below the lowest set bit; the width for 0.
    fn ctz(self) -> u32;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! bits {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Bits for $t {
            #[inline(always)]
            fn popc(self) -> u32 {
                self.count_ones()
            }
            #[inline(always)]
            fn brev(self) -> Self {
                self.reverse_bits()
            }
            #[inline(always)]
            fn clz(self) -> u32 {
                self.leading_zeros()
            }
            #[inline(always)]
            fn ctz(self) -> u32 {
                self.trailing_zeros()
            }
        }
    )*};
}
bits!(i8, u8, i16, u16, i32, u32, i64, u64);

/// `__popc(x)`, Numba's `cuda.popc(x)`: the number of bits set (`x.count_ones()`).
#[inline(always)]
pub fn popc<T: Bits>(x: T) -> u32 {
    x.popc()
}

/// `__brev(x)`, Numba's `cuda.brev(x)`: the bits in reverse order (`x.reverse_bits()`).
#[inline(always)]
pub fn brev<T: Bits>(x: T) -> T {
    x.brev()
}

/// `__clz(x)`, Numba's `cuda.clz(x)`: the zero bits above the highest set bit, the type's width
/// for 0 (`x.leading_zeros()`).
#[inline(always)]
pub fn clz<T: Bits>(x: T) -> u32 {
    x.clz()
}

/// `__ffs(x)`, Numba's `cuda.ffs(x)`: the 1-based position of the lowest set bit, 0 for 0
/// (`x.trailing_zeros() + 1` where `x != 0`).
#[inline(always)]
pub fn ffs<T: Bits>(x: T) -> u32 {
    let z = x.ctz();
    if z == 8 * core::mem::size_of::<T>() as u32 {
        0
    } else {
        z + 1
    }
}

/// Numba's `cuda.selp(pred, a, b)` (PTX's `selp`): `a` where `pred` holds, else `b`, both
/// evaluated.
#[inline(always)]
pub fn selp<T>(pred: bool, a: T, b: T) -> T {
    if pred {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_intrinsic_matches_cudas_definition() {
        assert_eq!((popc(u64::MAX), popc(-1i8), popc(0u16)), (64, 8, 0));
        assert_eq!((brev(0b1u8), brev(0x8000_0000u32)), (0x80, 1));
        assert_eq!((clz(0u32), clz(u32::MAX), clz(1i16)), (32, 0, 15));
        assert_eq!(
            (ffs(0u64), ffs(1u64), ffs(1u64 << 63), ffs(i32::MIN)),
            (0, 1, 64, 32)
        );
        assert_eq!((selp(false, 1, 2), cbrt(27.0f64)), (2, 3.0));
    }
}
