//! The low-level types the device API and the CPU backend share: the warp's width, the ends of
//! a range, the kinds of access to an element, the values a warp exchanges, the decimal digits that compile-time
//! messages are built with. They sit below both, so that neither
//! needs the other for them.

/// Threads in a warp (Numba's `cuda.warpsize`).
pub const WARP_SIZE: u32 = 32;

/// The ends `(start, end)` of `range` over `len` entries, as given: a caller tests
/// `start <= end <= len`. An end of `..=usize::MAX` saturates, so it fails that test.
#[inline(always)]
pub fn range_ends(range: &impl core::ops::RangeBounds<usize>, len: usize) -> (usize, usize) {
    use core::ops::Bound;
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start, end)
}

/// How a thread touches an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// A plain read.
    Read,
    /// A plain write (a compound assignment such as `a[i] += x` is a read, then a write).
    Write,
    /// An atomic operation (`atomic_add`, ...).
    Atomic,
}

/// The values a warp can shuffle and match: 32- and 64-bit integers and floats, and
/// [`Complex32`](num_complex::Complex32). A 64-bit value moves as two 32-bit halves on the GPU.
#[diagnostic::on_unimplemented(
    message = "a warp cannot shuffle or match a `{Self}`",
    label = "not a 32- or 64-bit integer or float",
    note = "shuffles and matches take i32, u32, f32, i64, u64, f64 or Complex32: convert the \
            value first (`v as u32`; a Complex64 as its `re` and `im`), and back after"
)]
pub trait WarpValue: Copy + sealed::Sealed {
    /// The value's bits, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value of `bits` (its low 32 for a 32-bit type).
    fn from_bits(bits: u64) -> Self;
    /// Whether the value is 64 bits wide.
    const WIDE: bool;
}

mod sealed {
    pub trait Sealed {}
}

/// The value types of a `#[reduce]`: plain data without padding, which the pass moves between
/// the lanes of a warp as its bytes (`warp::shfl_down_words`).
#[diagnostic::on_unimplemented(
    message = "`#[reduce]` cannot reduce values of `{Self}`",
    label = "not plain data without padding",
    note = "a reduction's values move between a warp's lanes as their bytes: numbers (not \
            `bool`), complex numbers, arrays of them, and `#[repr(C)]` structs of them without \
            padding (`#[derive(Clone, Copy, DeviceCopy)]`), of up to 64 bytes"
)]
pub trait Reducible: crate::AnyBitPattern {}
impl<T: crate::AnyBitPattern> Reducible for T {}

/// Fails at compile time, at the caller's span, unless `T` is a `#[reduce]`'s value type.
pub const fn assert_reducible<T: Reducible>() {}

macro_rules! warp_value {
    ($($t:ty => $bits:ty, $wide:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl WarpValue for $t {
            #[inline(always)]
            fn to_bits(self) -> u64 {
                <$bits>::from_ne_bytes(self.to_ne_bytes()) as u64
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self {
                <$t>::from_ne_bytes((bits as $bits).to_ne_bytes())
            }
            const WIDE: bool = $wide;
        }
    )*};
}

warp_value! {
    i32 => u32, false;
    u32 => u32, false;
    f32 => u32, false;
    i64 => u64, true;
    u64 => u64, true;
    f64 => u64, true;
}

impl sealed::Sealed for num_complex::Complex32 {}
/// The real part in the low 32 bits, the imaginary part in the high ones.
impl WarpValue for num_complex::Complex32 {
    #[inline(always)]
    fn to_bits(self) -> u64 {
        self.re.to_bits() as u64 | (self.im.to_bits() as u64) << 32
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        Self::new(
            f32::from_bits(bits as u32),
            f32::from_bits((bits >> 32) as u32),
        )
    }
    const WIDE: bool = true;
}

/// The decimal digits of `n`: a buffer and where they start in it (compile-time messages and
/// format strings build their numbers with it).
pub(crate) const fn decimal(mut n: u64) -> ([u8; 20], usize) {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return (digits, k);
        }
    }
}
