//! What a `fastmath` body's device build calls in place of `/`, `/=` and the float methods
//! `sqrt`, `sin`, `cos`, `tan`, `exp`, `ln`, `log2`, `log10` and `powf` (and `math`'s
//! functions of them, `math::log` and `math::pow` for `ln` and `powf`)
//! (`#[kernel(fastmath)]`, `#[device(fastmath)]`, `#[vectorize(fastmath)]`,
//! `#[guvectorize(.., fastmath)]`, Numba's `@cuda.jit(fastmath=True)`): on `f32` (and
//! references to it), the approximate instructions of [`fast`]; on any other type, the
//! operation itself.
//! Which one is chosen where the body is compiled for its types, so a generic kernel's `f32`
//! instance is approximate and its `f64` one is not, as Numba compiles each signature.
//!
//! The choice is specialization, which the device build (and only it) compiles with; the CPU
//! backend runs the body as written.

use super::{fast, DeviceFloat};
use core::ops::{Div, DivAssign};

/// `a / b`, approximate where both are `f32` or references to it.
pub trait Quotient<B>: Div<B> + Sized {
    /// The quotient.
    fn quotient(self, b: B) -> Self::Output;
}

impl<A: Div<B>, B> Quotient<B> for A {
    #[inline(always)]
    default fn quotient(self, b: B) -> A::Output {
        self / b
    }
}

/// The `f32` quotients: of values, and of references to them (`&a / b`).
macro_rules! fast_quotient {
    ($(<$($l:lifetime),*> $a:ty, $b:ty;)*) => {$(
        impl<$($l),*> Quotient<$b> for $a {
            #[inline(always)]
            fn quotient(self, b: $b) -> f32 {
                fast::div(f32::clone(&self), f32::clone(&b))
            }
        }
    )*};
}

fast_quotient! {
    <> f32, f32;
    <'a> &'a f32, f32;
    <'b> f32, &'b f32;
    <'a, 'b> &'a f32, &'b f32;
}

/// `a /= b`, approximate where both are `f32` (`b` or a reference to it).
pub trait QuotientAssign<B>: DivAssign<B> {
    /// Divides in place.
    fn quotient_assign(&mut self, b: B);
}

impl<A: DivAssign<B>, B> QuotientAssign<B> for A {
    #[inline(always)]
    default fn quotient_assign(&mut self, b: B) {
        *self /= b
    }
}

impl QuotientAssign<f32> for f32 {
    #[inline(always)]
    fn quotient_assign(&mut self, b: f32) {
        *self = fast::div(*self, b)
    }
}

impl<'b> QuotientAssign<&'b f32> for f32 {
    #[inline(always)]
    fn quotient_assign(&mut self, b: &'b f32) {
        *self = fast::div(*self, *b)
    }
}

/// `a / b` in a `fastmath` body.
#[inline(always)]
pub fn div<A: Div<B>, B>(a: A, b: B) -> A::Output {
    a.quotient(b)
}

/// `a /= b` in a `fastmath` body.
#[inline(always)]
pub fn div_assign<A: DivAssign<B>, B>(a: &mut A, b: B) {
    a.quotient_assign(b)
}

macro_rules! fast_methods {
    ($($name:ident => $fast:path, ($($arg:ident),*);)*) => {
        /// The float methods a `fastmath` body's calls go to: [`DeviceFloat`]'s, approximate
        /// on `f32`.
        #[diagnostic::on_unimplemented(
            message = "a `fastmath` body calls a float method on `{Self}`, which has no fast form",
            label = "`fastmath` rewrites `.sqrt()`, `.sin()`, `.cos()`, `.tan()`, `.exp()`, `.ln()`, \
                     `.log2()`, `.log10()` and `.powf()` calls",
            note = "call a method of your own type by its path, `Type::sin(x)`, which the rewrite leaves as it is"
        )]
        pub trait FastFloat: DeviceFloat {
            $(
                #[doc = concat!("`", stringify!($name), "`, approximate on `f32`.")]
                fn $name(self $(, $arg: Self)*) -> Self;
            )*
        }

        // Not named in errors: a type without the methods is told that it has no fast form,
        // not that it lacks `DeviceFloat`'s.
        #[diagnostic::do_not_recommend]
        impl<T: DeviceFloat> FastFloat for T {
            $(
                #[inline(always)]
                default fn $name(self $(, $arg: Self)*) -> Self {
                    DeviceFloat::$name(self $(, $arg)*)
                }
            )*
        }

        impl FastFloat for f32 {
            $(
                #[inline(always)]
                fn $name(self $(, $arg: Self)*) -> Self {
                    $fast(self $(, $arg)*)
                }
            )*
        }

        $(
            #[doc = concat!("`x.", stringify!($name), "()` in a `fastmath` body.")]
            #[inline(always)]
            pub fn $name<T: FastFloat>(x: T $(, $arg: T)*) -> T {
                FastFloat::$name(x $(, $arg)*)
            }
        )*
    };
}

fast_methods! {
    sqrt => fast::sqrt, ();
    sin => fast::sin, ();
    cos => fast::cos, ();
    tan => fast::tan, ();
    exp => fast::exp, ();
    ln => fast::log, ();
    log2 => fast::log2, ();
    log10 => fast::log10, ();
    powf => fast::pow, (n);
}
