//! Atomic operations on elements of writable arrays and shared arrays, as Numba's
//! `cuda.atomic.*`: each returns the value the element held before.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! fn histogram(data: &[u32], bins: &mut [u32]) {
//!     let i = grid(1);
//!     if i < data.len() {
//!         atomic_add(&bins, (data[i] % 4) as usize, 1);
//!     }
//! }
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! let data = dev.to_device(&(0..100u32).collect::<Vec<_>>())?;
//! let mut bins = dev.zeros::<u32, _>(4)?;
//! histogram.launch(4, 32, (&data, &mut bins))?;
//! assert_eq!(bins.to_vec()?, vec![25; 4]);
//! # Ok(())
//! # }
//! ```

use crate::view::ElementPtr;
use core::sync::atomic::{
    AtomicI32, AtomicI64, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed,
};

/// Element types with atomic add, sub, min, max, exchange and compare-and-swap.
pub trait AtomicNum: Copy + sealed::Sealed {
    /// Atomic `*p += v`, returning the old value.
    ///
    /// # Safety
    /// `p` must be valid and aligned; concurrent accesses to `*p` must all be atomic.
    unsafe fn atomic_add(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p -= v`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_sub(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p = min(*p, v)`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_min(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p = max(*p, v)`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_max(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p = nanmin(*p, v)` (NaN operands ignored), returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_nanmin(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p = nanmax(*p, v)` (NaN operands ignored), returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_nanmax(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p = v`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_exch(p: *mut Self, v: Self) -> Self;
    /// Atomic `if *p == current { *p = new }`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_cas(p: *mut Self, current: Self, new: Self) -> Self;
    /// The value `op` leaves in an element that held `old`, given `v`, as the atomic does.
    #[doc(hidden)]
    fn apply(op: NumOp, old: Self, v: Self) -> Self;
    /// Whether `a` and `b` have the same bits (what a compare-and-swap compares).
    #[doc(hidden)]
    fn same_bits(a: Self, b: Self) -> bool;
}

/// The operations of [`AtomicNum`], for a plain update (see [`plain`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum NumOp {
    Add,
    Sub,
    Min,
    Max,
    NanMin,
    NanMax,
    Exch,
}

/// The operations of [`AtomicInt`], for a plain update (see [`plain`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum IntOp {
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// Integer element types with atomic bitwise operations and CUDA's wrapping inc/dec.
pub trait AtomicInt: AtomicNum {
    /// Atomic `*p &= v`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_and(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p |= v`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_or(p: *mut Self, v: Self) -> Self;
    /// Atomic `*p ^= v`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_xor(p: *mut Self, v: Self) -> Self;
    /// CUDA's `atomicInc`: `*p = if *p >= v { 0 } else { *p + 1 }`, returning the old value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_inc(p: *mut Self, v: Self) -> Self;
    /// CUDA's `atomicDec`: `*p = if *p == 0 || *p > v { v } else { *p - 1 }`, returning the old
    /// value.
    ///
    /// # Safety
    /// As [`AtomicNum::atomic_add`].
    unsafe fn atomic_dec(p: *mut Self, v: Self) -> Self;
    /// The value `op` leaves in an element that held `old`, given `v`, as the atomic does.
    #[doc(hidden)]
    fn apply_int(op: IntOp, old: Self, v: Self) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for i64 {}
    impl Sealed for u64 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for crate::f16 {}
    impl Sealed for half::bf16 {}
}

macro_rules! atomic_int {
    ($t:ty, $a:ty) => {
        impl AtomicNum for $t {
            #[inline(always)]
            unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
                // SAFETY: valid, aligned, all concurrent accesses atomic (caller's contract).
                unsafe { <$a>::from_ptr(p).fetch_add(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_sub(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).fetch_sub(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_min(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).fetch_min(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_max(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).fetch_max(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_nanmin(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above; integers have no NaN.
                unsafe { Self::atomic_min(p, v) }
            }
            #[inline(always)]
            unsafe fn atomic_nanmax(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above; integers have no NaN.
                unsafe { Self::atomic_max(p, v) }
            }
            #[inline(always)]
            unsafe fn atomic_exch(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).swap(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_cas(p: *mut Self, current: Self, new: Self) -> Self {
                // SAFETY: as above.
                match unsafe { <$a>::from_ptr(p) }.compare_exchange(current, new, Relaxed, Relaxed)
                {
                    Ok(old) | Err(old) => old,
                }
            }
            #[inline(always)]
            fn apply(op: NumOp, old: Self, v: Self) -> Self {
                match op {
                    NumOp::Add => old.wrapping_add(v),
                    NumOp::Sub => old.wrapping_sub(v),
                    NumOp::Min | NumOp::NanMin => old.min(v),
                    NumOp::Max | NumOp::NanMax => old.max(v),
                    NumOp::Exch => v,
                }
            }
            #[inline(always)]
            fn same_bits(a: Self, b: Self) -> bool {
                a == b
            }
        }
        impl AtomicInt for $t {
            #[inline(always)]
            unsafe fn atomic_and(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).fetch_and(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_or(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).fetch_or(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_xor(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).fetch_xor(v, Relaxed) }
            }
            #[inline(always)]
            unsafe fn atomic_inc(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                let a = unsafe { <$a>::from_ptr(p) };
                match a.fetch_update(Relaxed, Relaxed, |old| {
                    Some(if old >= v { 0 } else { old + 1 })
                }) {
                    Ok(old) | Err(old) => old,
                }
            }
            #[inline(always)]
            unsafe fn atomic_dec(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                let a = unsafe { <$a>::from_ptr(p) };
                match a.fetch_update(Relaxed, Relaxed, |old| {
                    Some(if old == 0 || old > v { v } else { old - 1 })
                }) {
                    Ok(old) | Err(old) => old,
                }
            }
            #[inline(always)]
            fn apply_int(op: IntOp, old: Self, v: Self) -> Self {
                match op {
                    IntOp::And => old & v,
                    IntOp::Or => old | v,
                    IntOp::Xor => old ^ v,
                    IntOp::Inc => {
                        if old >= v {
                            0
                        } else {
                            old + 1
                        }
                    }
                    IntOp::Dec => {
                        if old == 0 || old > v {
                            v
                        } else {
                            old - 1
                        }
                    }
                }
            }
        }
    };
}
atomic_int!(i32, AtomicI32);
atomic_int!(u32, AtomicU32);
atomic_int!(i64, AtomicI64);
atomic_int!(u64, AtomicU64);

/// `atom.SPACE.add.TYPE` at the generic address `$p` of the state space `$space` (converted to
/// that space's own address first), returning the old value.
#[cfg(target_arch = "nvptx64")]
macro_rules! atom_add {
    ($space:literal, $t:ty, $ptx_ty:literal, $reg:ident, $p:expr, $v:expr) => {{
        let old: $t;
        core::arch::asm!(
            concat!(
                "{{ .reg .u64 a; cvta.to.", $space, ".u64 a, {p}; atom.", $space, ".add.",
                $ptx_ty, " {o}, [a], {v}; }}"
            ),
            o = out($reg) old, p = in(reg64) $p, v = in($reg) $v,
            options(nostack)
        );
        old
    }};
}

/// A float's atomic add: `native` writes out PTX's `atom.add` on the GPU (Rust has no float
/// `fetch_add`), with its state space: a view is global memory or a shared array, and the
/// compiler usually knows which, which folds the test away; `half` does the same for a 16-bit
/// float (`atom.add.noftz.f16`, `.bf16`) where the GPU has the instruction (the target feature
/// named: sm_70 for `f16`, sm_90 for `bf16`), rounded once to the same value as the CPU
/// backend's `old + v` (which adds in `f32`, wide enough that its two roundings are one), and
/// is a compare-and-swap loop on older GPUs and on the CPU backend.
macro_rules! float_add {
    ($t:ty, $p:ident, $v:ident, half $ptx_ty:literal $feature:tt) => {{
        #[cfg(all(target_arch = "nvptx64", target_feature = $feature))]
        {
            let (p, v) = ($p as *mut u16, $v.to_bits());
            let old = if crate::ctx::is_shared(p as *const u8) {
                // SAFETY: `p` is a valid, aligned generic address (caller's contract) in shared
                // memory; the GPU has the instruction (the target feature).
                unsafe { atom_add!("shared", u16, $ptx_ty, reg16, p, v) }
            } else {
                // SAFETY: as above; a view not in shared memory is in global memory.
                unsafe { atom_add!("global", u16, $ptx_ty, reg16, p, v) }
            };
            <$t>::from_bits(old)
        }
        #[cfg(not(all(target_arch = "nvptx64", target_feature = $feature)))]
        // SAFETY: as `update`.
        unsafe {
            update($p, |old| old + $v)
        }
    }};
    ($t:ty, $p:ident, $v:ident, native $ptx_ty:literal $reg:ident) => {{
        #[cfg(target_arch = "nvptx64")]
        if crate::ctx::is_shared($p as *const u8) {
            // SAFETY: `p` is a valid, aligned generic address (caller's contract) in shared
            // memory.
            unsafe { atom_add!("shared", $t, $ptx_ty, $reg, $p, $v) }
        } else {
            // SAFETY: as above; a view not in shared memory is in global memory.
            unsafe { atom_add!("global", $t, $ptx_ty, $reg, $p, $v) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: as `update`.
        unsafe {
            update($p, |old| old + $v)
        }
    }};
}

/// The float atomics, each on the atomic integer of the float's bits but the add
/// ([`float_add`]); every operation rounds as the type's own arithmetic does.
macro_rules! atomic_float {
    ($t:ty, $bits:ty, $a:ty, $($add:tt)*) => {
        impl AtomicNum for $t {
            #[inline(always)]
            unsafe fn atomic_add(p: *mut Self, v: Self) -> Self {
                float_add!($t, p, v, $($add)*)
            }
            #[inline(always)]
            unsafe fn atomic_sub(p: *mut Self, v: Self) -> Self {
                // SAFETY: caller's contract.
                unsafe { Self::atomic_add(p, -v) }
            }
            #[inline(always)]
            unsafe fn atomic_min(p: *mut Self, v: Self) -> Self {
                // SAFETY: caller's contract.
                unsafe { update(p, |old| Self::apply(NumOp::Min, old, v)) }
            }
            #[inline(always)]
            unsafe fn atomic_max(p: *mut Self, v: Self) -> Self {
                // SAFETY: caller's contract.
                unsafe { update(p, |old| Self::apply(NumOp::Max, old, v)) }
            }
            #[inline(always)]
            unsafe fn atomic_nanmin(p: *mut Self, v: Self) -> Self {
                // SAFETY: caller's contract.
                unsafe { update(p, |old| Self::apply(NumOp::NanMin, old, v)) }
            }
            #[inline(always)]
            unsafe fn atomic_nanmax(p: *mut Self, v: Self) -> Self {
                // SAFETY: caller's contract.
                unsafe { update(p, |old| Self::apply(NumOp::NanMax, old, v)) }
            }
            #[inline(always)]
            unsafe fn atomic_exch(p: *mut Self, v: Self) -> Self {
                // SAFETY: caller's contract; same size and alignment as the float.
                let a = unsafe { <$a>::from_ptr(p as *mut $bits) };
                <$t>::from_bits(a.swap(v.to_bits(), Relaxed))
            }
            #[inline(always)]
            unsafe fn atomic_cas(p: *mut Self, current: Self, new: Self) -> Self {
                // SAFETY: caller's contract; compares bit patterns, as CUDA's atomicCAS.
                let a = unsafe { <$a>::from_ptr(p as *mut $bits) };
                match a.compare_exchange(current.to_bits(), new.to_bits(), Relaxed, Relaxed) {
                    Ok(old) | Err(old) => <$t>::from_bits(old),
                }
            }
            #[inline(always)]
            fn apply(op: NumOp, old: Self, v: Self) -> Self {
                match op {
                    NumOp::Add => old + v,
                    NumOp::Sub => old + -v,
                    NumOp::Exch => v,
                    // Numba's rules: `min` and `max` leave the element as it is where either
                    // operand is NaN; `nanmin` and `nanmax` ignore a NaN operand, and replace a
                    // NaN element.
                    _ if v.is_nan() => old,
                    NumOp::Min | NumOp::Max if old.is_nan() => old,
                    _ if old.is_nan() => v,
                    NumOp::Min | NumOp::NanMin => if v < old { v } else { old },
                    NumOp::Max | NumOp::NanMax => if v > old { v } else { old },
                }
            }
            #[inline(always)]
            fn same_bits(a: Self, b: Self) -> bool {
                a.to_bits() == b.to_bits()
            }
        }
        impl Update for $t {
            #[inline(always)]
            unsafe fn update(p: *mut Self, f: impl Fn(Self) -> Self) -> Self {
                // SAFETY: caller's contract; same size and alignment as the float.
                let a = unsafe { <$a>::from_ptr(p as *mut $bits) };
                match a.fetch_update(Relaxed, Relaxed, |old| {
                    Some(f(<$t>::from_bits(old)).to_bits())
                }) {
                    Ok(old) | Err(old) => <$t>::from_bits(old),
                }
            }
        }
    };
}

trait Update: Sized {
    unsafe fn update(p: *mut Self, f: impl Fn(Self) -> Self) -> Self;
}
#[inline(always)]
unsafe fn update<T: Update>(p: *mut T, f: impl Fn(T) -> T) -> T {
    // SAFETY: forwarded caller's contract.
    unsafe { T::update(p, f) }
}

atomic_float!(f32, u32, AtomicU32, native "f32" reg32);
atomic_float!(f64, u64, AtomicU64, native "f64" reg64);
atomic_float!(crate::f16, u16, AtomicU16, half "noftz.f16" "sm_70");
atomic_float!(half::bf16, u16, AtomicU16, half "noftz.bf16" "sm_90");

macro_rules! atomic_fn {
    ($(#[$doc:meta])* $name:ident, $bound:ident, $apply:ident($op:expr)) => {
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name<A, I>(array: &A, index: I, value: A::Elem) -> A::Elem
        where
            A: ElementPtr<I>,
            A::Elem: $bound,
        {
            let p = array.element_ptr(index);
            if array.block_private() {
                // SAFETY: `element_ptr` checked the index; no access to a block-private element
                // is concurrent with another.
                return unsafe { plain(p, |old| <A::Elem as $bound>::$apply($op, old, value)) };
            }
            // SAFETY: `element_ptr` checked the index; the element lives in a writable array;
            // concurrent accesses to it are atomic by the kernel safety contract.
            unsafe { <A::Elem as $bound>::$name(p, value) }
        }
    };
}

/// `*p = f(*p)` without an atomic instruction, returning the old value: an atomic on an element
/// of the block's shared memory on the CPU backend ([`ElementPtr::block_private`]), where the
/// block's threads run one after another on one OS thread.
///
/// # Safety
/// `p` must be valid and aligned, and no access to `*p` concurrent with this one.
#[inline(always)]
unsafe fn plain<T: Copy>(p: *mut T, f: impl FnOnce(T) -> T) -> T {
    // SAFETY: the caller's contract.
    unsafe {
        let old = p.read();
        p.write(f(old));
        old
    }
}

atomic_fn!(
    /// `array[index] += value` atomically; returns the old value.
    atomic_add, AtomicNum, apply(NumOp::Add)
);
atomic_fn!(
    /// `array[index] -= value` atomically; returns the old value.
    atomic_sub, AtomicNum, apply(NumOp::Sub)
);
atomic_fn!(
    /// `array[index] = min(array[index], value)` atomically; returns the old value. For floats,
    /// as Numba's `cuda.atomic.min`: where either is NaN the element keeps its value (see
    /// [`atomic_nanmin`] to ignore NaN operands).
    atomic_min, AtomicNum, apply(NumOp::Min)
);
atomic_fn!(
    /// `array[index] = max(array[index], value)` atomically; returns the old value. For floats,
    /// as Numba's `cuda.atomic.max`: where either is NaN the element keeps its value (see
    /// [`atomic_nanmax`] to ignore NaN operands).
    atomic_max, AtomicNum, apply(NumOp::Max)
);
atomic_fn!(
    /// `array[index] = min(array[index], value)` atomically, a NaN operand ignored (Numba's
    /// `cuda.atomic.nanmin`): a NaN element takes `value`, a NaN `value` changes nothing; returns
    /// the old value.
    atomic_nanmin, AtomicNum, apply(NumOp::NanMin)
);
atomic_fn!(
    /// `array[index] = max(array[index], value)` atomically, a NaN operand ignored (Numba's
    /// `cuda.atomic.nanmax`): a NaN element takes `value`, a NaN `value` changes nothing; returns
    /// the old value.
    atomic_nanmax, AtomicNum, apply(NumOp::NanMax)
);
atomic_fn!(
    /// `array[index] = value` atomically; returns the old value.
    atomic_exch, AtomicNum, apply(NumOp::Exch)
);
atomic_fn!(
    /// `array[index] &= value` atomically; returns the old value.
    atomic_and, AtomicInt, apply_int(IntOp::And)
);
atomic_fn!(
    /// `array[index] |= value` atomically; returns the old value.
    atomic_or, AtomicInt, apply_int(IntOp::Or)
);
atomic_fn!(
    /// `array[index] ^= value` atomically; returns the old value.
    atomic_xor, AtomicInt, apply_int(IntOp::Xor)
);
atomic_fn!(
    /// CUDA's `atomicInc`: `array[index] = if old >= value { 0 } else { old + 1 }`; returns old.
    atomic_inc, AtomicInt, apply_int(IntOp::Inc)
);
atomic_fn!(
    /// CUDA's `atomicDec`: `array[index] = if old == 0 || old > value { value } else { old - 1 }`;
    /// returns old.
    atomic_dec, AtomicInt, apply_int(IntOp::Dec)
);

/// `if array[index] == current { array[index] = new }` atomically; returns the old value.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn atomic_cas<A, I>(array: &A, index: I, current: A::Elem, new: A::Elem) -> A::Elem
where
    A: ElementPtr<I>,
    A::Elem: AtomicNum,
{
    let p = array.element_ptr(index);
    if array.block_private() {
        // SAFETY: as `atomic_add`'s plain update.
        return unsafe {
            plain(p, |old| match A::Elem::same_bits(old, current) {
                true => new,
                false => old,
            })
        };
    }
    // SAFETY: as `atomic_add`.
    unsafe { <A::Elem as AtomicNum>::atomic_cas(p, current, new) }
}
