//! The device's `f16`: the `half` crate's `f16`, as the GPU computes it.
//!
//! `half::f16` converts and rounds in software wherever its target has no conversion
//! instructions it knows, which is the case for nvptx64: an `f16` add there was a hundred
//! integer instructions. On the GPU, `kernel_runtime::f16` is this type instead, with the same
//! bits, layout and methods, whose conversions are PTX's `cvt` and whose `+`, `-` and `*` are
//! `add.rn.f16`, `sub.rn.f16` and `mul.rn.f16` (sm_53 on; the oldest GPU the runtime builds for
//! is sm_70). Each rounds once, to the value `half::f16` gives on the host, so the CPU backend
//! still computes a GPU's values bit for bit: `/` and `%` are computed in `f32`, as `half` does,
//! and an `f32` holds every sum, difference and product of two `f16`s exactly. The `.rn`
//! instructions are never contracted into fused multiply-adds. Everything that is not
//! arithmetic (classification, constants) is `half`'s own, on the bits. A NaN made by a
//! conversion has the GPU's canonical bits, which may not be the ones `half` keeps.
//!
//! Host code, the CPU backend among it, uses `half::f16` itself: the two are one type to the
//! program, as a kernel's parameters pass the bits.

#![allow(non_camel_case_types)]

use core::cmp::Ordering;
use core::num::FpCategory;
use core::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

type H = half::f16;

/// A 16-bit float (IEEE 754 binary16), as `half::f16` on the host: see the
/// [module](self).
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct f16(u16);

/// One PTX instruction `$instr d, a[, b];` on 16-bit registers.
macro_rules! ptx16 {
    ($instr:literal, $a:expr $(, $b:expr)?) => {{
        let out: u16;
        // SAFETY: an arithmetic instruction on registers: it reads and writes no memory.
        unsafe {
            core::arch::asm!(
                concat!($instr, " {o}, {a}", $(ptx16!(@second $b),)? ";"),
                o = out(reg16) out,
                a = in(reg16) $a,
                $(b = in(reg16) $b,)?
                options(pure, nomem, nostack)
            )
        };
        out
    }};
    (@second $b:expr) => {
        ", {b}"
    };
}

/// One PTX conversion `$instr d, v;` from a `$from` register to a `$to` register of `$ty` bits.
macro_rules! cvt {
    ($instr:literal, $to:ident $ty:ty, $from:ident $v:expr) => {{
        let out: $ty;
        // SAFETY: a conversion between registers: it reads and writes no memory.
        unsafe {
            core::arch::asm!(
                concat!($instr, " {o}, {v};"),
                o = out($to) out,
                v = in($from) $v,
                options(pure, nomem, nostack)
            )
        };
        out
    }};
}

/// `half::f16`'s constants, as this type's.
macro_rules! consts {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("`half::f16::", stringify!($name), "`.")]
        pub const $name: f16 = f16(H::$name.to_bits());
    )*};
}

impl f16 {
    consts!(
        EPSILON,
        INFINITY,
        MAX,
        MIN,
        MIN_POSITIVE,
        NAN,
        NEG_INFINITY,
        MIN_POSITIVE_SUBNORMAL,
        MAX_SUBNORMAL,
        ONE,
        ZERO,
        NEG_ZERO,
        NEG_ONE,
        E,
        PI,
        FRAC_1_PI,
        FRAC_1_SQRT_2,
        FRAC_2_PI,
        FRAC_2_SQRT_PI,
        FRAC_PI_2,
        FRAC_PI_3,
        FRAC_PI_4,
        FRAC_PI_6,
        FRAC_PI_8,
        LN_10,
        LN_2,
        LOG10_E,
        LOG10_2,
        LOG2_E,
        LOG2_10,
        SQRT_2,
    );
    /// `half::f16::DIGITS`.
    pub const DIGITS: u32 = H::DIGITS;
    /// `half::f16::MANTISSA_DIGITS`.
    pub const MANTISSA_DIGITS: u32 = H::MANTISSA_DIGITS;
    /// `half::f16::MAX_10_EXP`.
    pub const MAX_10_EXP: i32 = H::MAX_10_EXP;
    /// `half::f16::MAX_EXP`.
    pub const MAX_EXP: i32 = H::MAX_EXP;
    /// `half::f16::MIN_10_EXP`.
    pub const MIN_10_EXP: i32 = H::MIN_10_EXP;
    /// `half::f16::MIN_EXP`.
    pub const MIN_EXP: i32 = H::MIN_EXP;
    /// `half::f16::RADIX`.
    pub const RADIX: u32 = H::RADIX;

    /// The float of these bits.
    #[inline(always)]
    pub const fn from_bits(bits: u16) -> f16 {
        f16(bits)
    }

    /// The float's bits.
    #[inline(always)]
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// `half`'s own value: the same bits.
    #[inline(always)]
    const fn h(self) -> H {
        H::from_bits(self.0)
    }

    /// `value` rounded to the nearest `f16` (ties to even): one `cvt.rn.f16.f32`.
    #[inline(always)]
    pub fn from_f32(value: f32) -> f16 {
        f16(cvt!("cvt.rn.f16.f32", reg16 u16, reg32 value.to_bits()))
    }

    /// `value` rounded to the nearest `f16` (ties to even), once: one `cvt.rn.f16.f64`.
    #[inline(always)]
    pub fn from_f64(value: f64) -> f16 {
        f16(cvt!("cvt.rn.f16.f64", reg16 u16, reg64 value.to_bits()))
    }

    /// The value as an `f32`, exactly: one `cvt.f32.f16`.
    #[inline(always)]
    pub fn to_f32(self) -> f32 {
        f32::from_bits(cvt!("cvt.f32.f16", reg32 u32, reg16 self.0))
    }

    /// The value as an `f64`, exactly: one `cvt.f64.f16`.
    #[inline(always)]
    pub fn to_f64(self) -> f64 {
        f64::from_bits(cvt!("cvt.f64.f16", reg64 u64, reg16 self.0))
    }

    /// `half::f16::from_f32_const`.
    pub const fn from_f32_const(value: f32) -> f16 {
        f16(H::from_f32_const(value).to_bits())
    }

    /// `half::f16::from_f64_const`.
    pub const fn from_f64_const(value: f64) -> f16 {
        f16(H::from_f64_const(value).to_bits())
    }

    /// `half::f16::to_f32_const`.
    pub const fn to_f32_const(self) -> f32 {
        self.h().to_f32_const()
    }

    /// `half::f16::to_f64_const`.
    pub const fn to_f64_const(self) -> f64 {
        self.h().to_f64_const()
    }

    /// The bits as little-endian bytes.
    pub const fn to_le_bytes(self) -> [u8; 2] {
        self.0.to_le_bytes()
    }

    /// The bits as big-endian bytes.
    pub const fn to_be_bytes(self) -> [u8; 2] {
        self.0.to_be_bytes()
    }

    /// The bits as native-endian bytes.
    pub const fn to_ne_bytes(self) -> [u8; 2] {
        self.0.to_ne_bytes()
    }

    /// The float of little-endian bytes.
    pub const fn from_le_bytes(bytes: [u8; 2]) -> f16 {
        f16(u16::from_le_bytes(bytes))
    }

    /// The float of big-endian bytes.
    pub const fn from_be_bytes(bytes: [u8; 2]) -> f16 {
        f16(u16::from_be_bytes(bytes))
    }

    /// The float of native-endian bytes.
    pub const fn from_ne_bytes(bytes: [u8; 2]) -> f16 {
        f16(u16::from_ne_bytes(bytes))
    }

    /// Whether the value is NaN.
    pub const fn is_nan(self) -> bool {
        self.h().is_nan()
    }

    /// Whether the value is infinite.
    pub const fn is_infinite(self) -> bool {
        self.h().is_infinite()
    }

    /// Whether the value is neither infinite nor NaN.
    pub const fn is_finite(self) -> bool {
        self.h().is_finite()
    }

    /// Whether the value is normal: not zero, subnormal, infinite or NaN.
    pub const fn is_normal(self) -> bool {
        self.h().is_normal()
    }

    /// The value's category.
    pub const fn classify(self) -> FpCategory {
        self.h().classify()
    }

    /// 1 with the value's sign, or NaN.
    pub const fn signum(self) -> f16 {
        f16(self.h().signum().to_bits())
    }

    /// Whether the sign bit is clear.
    pub const fn is_sign_positive(self) -> bool {
        self.h().is_sign_positive()
    }

    /// Whether the sign bit is set.
    pub const fn is_sign_negative(self) -> bool {
        self.h().is_sign_negative()
    }

    /// The value's magnitude with `sign`'s sign.
    pub const fn copysign(self, sign: f16) -> f16 {
        f16(self.h().copysign(sign.h()).to_bits())
    }

    /// The larger value, ignoring a NaN.
    pub fn max(self, other: f16) -> f16 {
        f16(self.h().max(other.h()).to_bits())
    }

    /// The smaller value, ignoring a NaN.
    pub fn min(self, other: f16) -> f16 {
        f16(self.h().min(other.h()).to_bits())
    }

    /// The value restricted to `min..=max`.
    pub fn clamp(self, min: f16, max: f16) -> f16 {
        f16(self.h().clamp(min.h(), max.h()).to_bits())
    }

    /// IEEE 754's total order of the values.
    pub fn total_cmp(&self, other: &f16) -> Ordering {
        self.h().total_cmp(&other.h())
    }
}

impl From<f16> for H {
    #[inline(always)]
    fn from(v: f16) -> H {
        v.h()
    }
}

impl From<H> for f16 {
    #[inline(always)]
    fn from(v: H) -> f16 {
        f16(v.to_bits())
    }
}

impl From<f16> for f32 {
    #[inline(always)]
    fn from(v: f16) -> f32 {
        v.to_f32()
    }
}

impl From<f16> for f64 {
    #[inline(always)]
    fn from(v: f16) -> f64 {
        v.to_f64()
    }
}

impl From<i8> for f16 {
    #[inline(always)]
    fn from(v: i8) -> f16 {
        f16::from_f32(v.into())
    }
}

impl From<u8> for f16 {
    #[inline(always)]
    fn from(v: u8) -> f16 {
        f16::from_f32(v.into())
    }
}

impl PartialEq for f16 {
    #[inline(always)]
    fn eq(&self, other: &f16) -> bool {
        self.to_f32() == other.to_f32()
    }
}

impl PartialOrd for f16 {
    #[inline(always)]
    fn partial_cmp(&self, other: &f16) -> Option<Ordering> {
        self.to_f32().partial_cmp(&other.to_f32())
    }
}

impl core::fmt::Debug for f16 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.h(), f)
    }
}

impl core::fmt::Display for f16 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.h(), f)
    }
}

impl Neg for f16 {
    type Output = f16;
    #[inline(always)]
    fn neg(self) -> f16 {
        f16(self.0 ^ 0x8000)
    }
}

impl Neg for &f16 {
    type Output = f16;
    #[inline(always)]
    fn neg(self) -> f16 {
        -*self
    }
}

/// An operator of `f16`, by value and by reference, and its assignment: `$compute(a, b)` on the
/// bits.
macro_rules! operator {
    ($tr:ident $method:ident, $assign:ident $assign_method:ident, |$a:ident, $b:ident| $compute:expr) => {
        impl $tr for f16 {
            type Output = f16;
            #[inline(always)]
            fn $method(self, rhs: f16) -> f16 {
                let ($a, $b) = (self, rhs);
                $compute
            }
        }
        impl $tr<&f16> for f16 {
            type Output = f16;
            #[inline(always)]
            fn $method(self, rhs: &f16) -> f16 {
                self.$method(*rhs)
            }
        }
        impl $tr<f16> for &f16 {
            type Output = f16;
            #[inline(always)]
            fn $method(self, rhs: f16) -> f16 {
                (*self).$method(rhs)
            }
        }
        impl $tr<&f16> for &f16 {
            type Output = f16;
            #[inline(always)]
            fn $method(self, rhs: &f16) -> f16 {
                (*self).$method(*rhs)
            }
        }
        impl $assign for f16 {
            #[inline(always)]
            fn $assign_method(&mut self, rhs: f16) {
                *self = (*self).$method(rhs);
            }
        }
        impl $assign<&f16> for f16 {
            #[inline(always)]
            fn $assign_method(&mut self, rhs: &f16) {
                *self = (*self).$method(*rhs);
            }
        }
    };
}

operator!(Add add, AddAssign add_assign, |a, b| f16(ptx16!("add.rn.f16", a.0, b.0)));
operator!(Sub sub, SubAssign sub_assign, |a, b| f16(ptx16!("sub.rn.f16", a.0, b.0)));
operator!(Mul mul, MulAssign mul_assign, |a, b| f16(ptx16!("mul.rn.f16", a.0, b.0)));
operator!(Div div, DivAssign div_assign, |a, b| f16::from_f32(a.to_f32() / b.to_f32()));
operator!(Rem rem, RemAssign rem_assign, |a, b| f16::from_f32(a.to_f32() % b.to_f32()));

/// Sums and products are accumulated in `f32` and rounded once, as `half` does on the host.
impl core::iter::Sum for f16 {
    fn sum<I: Iterator<Item = f16>>(iter: I) -> f16 {
        f16::from_f32(iter.map(f16::to_f32).sum())
    }
}

impl<'a> core::iter::Sum<&'a f16> for f16 {
    fn sum<I: Iterator<Item = &'a f16>>(iter: I) -> f16 {
        f16::from_f32(iter.map(|v| v.to_f32()).sum())
    }
}

impl core::iter::Product for f16 {
    fn product<I: Iterator<Item = f16>>(iter: I) -> f16 {
        f16::from_f32(iter.map(f16::to_f32).product())
    }
}

impl<'a> core::iter::Product<&'a f16> for f16 {
    fn product<I: Iterator<Item = &'a f16>>(iter: I) -> f16 {
        f16::from_f32(iter.map(|v| v.to_f32()).product())
    }
}
