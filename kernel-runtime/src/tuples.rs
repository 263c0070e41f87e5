//! Implementations for every tuple arity a kernel's parameters may have.

/// Calls `$m!` with each tuple arity up to 16, as `(A0 P0 0), (A1 P1 1), ..`.
macro_rules! for_tuples {
    ($m:ident) => {
        $crate::tuples::for_tuples!(@ $m [] [
            (A0 P0 0) (A1 P1 1) (A2 P2 2) (A3 P3 3) (A4 P4 4) (A5 P5 5) (A6 P6 6) (A7 P7 7)
            (A8 P8 8) (A9 P9 9) (A10 P10 10) (A11 P11 11) (A12 P12 12) (A13 P13 13)
            (A14 P14 14) (A15 P15 15)
        ]);
    };
    (@ $m:ident [$($done:tt)*] []) => {};
    (@ $m:ident [$($done:tt)*] [$next:tt $($rest:tt)*]) => {
        $m!($($done,)* $next);
        $crate::tuples::for_tuples!(@ $m [$($done)* $next] [$($rest)*]);
    };
}
pub(crate) use for_tuples;
