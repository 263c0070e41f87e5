//! Sine and cosine for the device, built on fused multiply-adds.
//!
//! The `libm` crate's `sin` and `cos` are written for hosts without a fused multiply-add: they
//! reduce the argument in several rounded steps, choose between many special cases and are too
//! large to inline, so every call from a kernel was an out-of-line call with a 584-byte stack
//! frame. GPUs do a multiply-add in one instruction, and this is the shape CUDA's own math takes:
//! - `q`, the nearest integer to `x / (π/2)`, and `r = x - q·π/2` in three exact fused steps
//!   (π/2 split in three floats, Cody and Waite's reduction);
//! - a polynomial for `sin r` or `cos r` on `[-π/4, π/4]`, picked and signed by `q mod 4`: its
//!   coefficients are a row of one table, so each thread evaluates one polynomial and no branch
//!   diverges. They are minimax fits to the relative error of `sin` and `cos`
//!   (`kernel-runtime/tools/trig_fit.py`, a Remez exchange in 60 digits), a few hundred times
//!   below the float's last place with a term fewer than Taylor's series needs.
//!
//! Beyond `|x| < 2^20` (`2^17` for `f32`), and for infinities and NaN, `libm`'s reduction (exact
//! for every argument) takes over. The host's unit tests hold both to within 2 ulp of the
//! standard library over many arguments.

macro_rules! trig {
    ($t:ident, $bits:ident, $sin:ident, $cos:ident, $libm_sin:path, $libm_cos:path,
     limit: $limit:expr, tiny: $tiny:expr,
     two_over_pi: $two_over_pi:expr, pio2: [$c1:expr, $c2:expr, $c3:expr],
     sin: [$sl:expr, $($s:expr),*], cos: [$cl:expr, $($c:expr),*]) => {
        use crate::math::DeviceFloat;

        /// Fused multiply-add, one rounding: [`DeviceFloat::mul_add`], one instruction on the
        /// device.
        #[inline(always)]
        fn fma(a: $t, b: $t, c: $t) -> $t {
            DeviceFloat::mul_add(a, b, c)
        }

        /// The coefficients, in `z = r²` and highest power first, of `(sin r - r) / r` in the
        /// first row (whose last, the constant, is 0) and of `(cos r - 1) / r²` in the second,
        /// less the leading ones ([`LEADING`]). One table, so that a thread evaluates one
        /// polynomial whatever its quadrant: the row is a load indexed by the quadrant's parity,
        /// where a branch would diverge and a select would need both polynomials. The rows must
        /// be as long as each other (the type checks it); six `f64` keep the second row on a
        /// 16-byte boundary, so that each row is three 16-byte loads.
        #[repr(C, align(16))]
        struct Coefficients([[$t; [$($s),*].len()]; 2]);

        static COEFFICIENTS: Coefficients = Coefficients([[$($s),*], [$($c),*]]);

        /// The leading coefficients of the sine's and the cosine's rows: a select between two
        /// immediates, one load fewer per row.
        const LEADING: [$t; 2] = [$sl, $cl];

        /// `sin(r + q·π/2)` for the reduced argument `r` (`|r| <= π/4`).
        #[inline(always)]
        fn quadrant(r: $t, q: i32) -> $t {
            let z = r * r;
            let odd = (q & 1) as usize;
            let row = &COEFFICIENTS.0[odd];
            let mut p = if odd == 0 { LEADING[0] } else { LEADING[1] };
            for c in row {
                p = fma(p, z, *c);
            }
            // sin r = r + r·p, cos r = 1 + z·p: one fused step either way.
            let (a, b) = if odd == 0 { (r, r) } else { (z, 1.0) };
            let v = fma(a, p, b);
            // Quadrants 2 and 3 negate: the sign bit flipped by bit 1 of `q`.
            let flip = ((q as $bits) & 2) << ($bits::BITS - 2);
            <$t>::from_bits(v.to_bits() ^ flip)
        }

        /// `x` reduced to `r` in `[-π/4, π/4]` and the quadrant `q` with `x = r + q·π/2`.
        ///
        /// # Safety
        /// `|x| < limit` (so that `q` is an `i32`, converted unchecked: one instruction).
        #[inline(always)]
        unsafe fn reduce(x: $t) -> ($t, i32) {
            let q = round(x * $two_over_pi);
            // `x - q·c1` is exact: both are multiples of c1's last place, and the difference
            // is below 1. The two smaller parts of π/2 then add one rounding each.
            let r = fma(-q, $c1, x);
            let r = fma(-q, $c2, r);
            let r = fma(-q, $c3, r);
            // SAFETY: `|q| <= |x|·2/π + 1 < 2^21` (the caller's `|x| < limit`), an integer.
            (r, unsafe { q.to_int_unchecked::<i32>() })
        }

        /// Nearest integer, ties to even (one instruction on the device).
        #[inline(always)]
        fn round(x: $t) -> $t {
            #[cfg(target_arch = "nvptx64")]
            {
                core::$t::math::round_ties_even(x)
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                x.round_ties_even()
            }
        }

        /// Sine (radians).
        #[inline]
        pub fn $sin(x: $t) -> $t {
            let a = x.abs();
            if a < $limit {
                // There sin x rounds to x (and keeps the sign of zero, which the polynomial
                // would lose).
                if a < $tiny {
                    return x;
                }
                // SAFETY: `|x| < limit`.
                let (r, q) = unsafe { reduce(x) };
                quadrant(r, q)
            } else {
                $libm_sin(x)
            }
        }

        /// Cosine (radians).
        #[inline]
        pub fn $cos(x: $t) -> $t {
            if x.abs() < $limit {
                // SAFETY: `|x| < limit`.
                let (r, q) = unsafe { reduce(x) };
                quadrant(r, q.wrapping_add(1))
            } else {
                $libm_cos(x)
            }
        }
    };
}

/// The `f64` functions.
pub mod f64 {
    trig! {
        f64, u64, sin, cos, libm::sin, libm::cos,
        limit: 1_048_576.0,
        tiny: 1.0 / 67_108_864.0,
        two_over_pi: core::f64::consts::FRAC_2_PI,
        // π/2 = c1 + c2 + c3 to 160 bits.
        pio2: [
            f64::from_bits(0x3FF9_21FB_5444_2D18),
            f64::from_bits(0x3C91_A626_3314_5C07),
            f64::from_bits(0xB91F_1976_B7ED_8FBC)
        ],
        // Up to r^13, relative error of sin below 3.7e-18 (2^-58) on [-π/4, π/4].
        sin: [
            1.5896197634200846e-10,
            -2.505074721816166e-8,
            2.7557313618017072e-6,
            -0.00019841269829580166,
            0.008333333333322108,
            -0.1666666666666663,
            0.0
        ],
        // Up to r^14, relative error of cos below 3.9e-20 (2^-64).
        cos: [
            -1.1353257534537238e-11,
            2.0875581651333636e-9,
            -2.755731311357471e-7,
            2.48015872840804e-5,
            -0.0013888888888861973,
            0.04166666666666647,
            -0.5
        ]
    }
}

/// The `f32` functions.
pub mod f32 {
    trig! {
        f32, u32, sin, cos, libm::sinf, libm::cosf,
        limit: 131_072.0,
        tiny: 1.0 / 4_096.0,
        two_over_pi: core::f32::consts::FRAC_2_PI,
        // π/2 = c1 + c2 + c3 to 72 bits.
        pio2: [
            f32::from_bits(0x3FC9_0FDB),
            f32::from_bits(0xB33B_BD2E),
            f32::from_bits(0xA6F7_2CED)
        ],
        // Up to r^7, relative error of sin below 3.8e-9 (2^-28) on [-π/4, π/4].
        sin: [-0.00019515218, 0.00833216, -0.16666655, 0.0],
        // Up to r^8, relative error of cos below 6.4e-11 (2^-33).
        cos: [2.4383482e-5, -0.0013886681, 0.04166662, -0.5]
    }
}

#[cfg(test)]
mod tests {
    /// Distance in units in the last place between two `f64`s of the same sign.
    fn ulps64(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        let (a, b) = (a.to_bits() as i64, b.to_bits() as i64);
        a.abs_diff(b)
    }

    fn ulps32(a: f32, b: f32) -> u64 {
        if a == b {
            return 0;
        }
        let (a, b) = (a.to_bits() as i32, b.to_bits() as i32);
        a.abs_diff(b) as u64
    }

    /// Arguments: a sweep of the fast path's range, multiples of π/2 and their neighbours
    /// (where the reduction cancels most), small and special values, and the fallback's range.
    fn args64() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            1e-300,
            -1e-20,
            1e-9,
            0.5,
            1.0,
            3.0,
            1e6,
            1_048_575.9,
            1_048_576.0,
            1e22,
            f64::MAX,
            f64::MIN_POSITIVE,
        ];
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let scale = [1.0, 10.0, 1e3, 1e6, 2e6][i % 5];
            v.push((2.0 * u - 1.0) * scale);
        }
        for k in 1..5_000 {
            let m = k as f64 * core::f64::consts::FRAC_PI_2;
            v.extend([m, m.next_up(), m.next_down(), -m]);
        }
        v
    }

    #[test]
    fn f64_sin_cos_within_two_ulp_of_std() {
        for x in args64() {
            for (got, want) in [(super::f64::sin(x), x.sin()), (super::f64::cos(x), x.cos())] {
                let e = ulps64(got, want);
                assert!(e <= 2, "x = {x:e}: {got:e} vs {want:e} ({e} ulp)");
            }
        }
        assert!(super::f64::sin(-0.0).is_sign_negative());
        assert!(super::f64::sin(f64::NAN).is_nan() && super::f64::cos(f64::INFINITY).is_nan());
    }

    #[test]
    fn f32_sin_cos_within_two_ulp_of_correct_rounding() {
        let mut s = 0x2545_F491u32;
        let mut args: Vec<f32> = vec![0.0, -0.0, 1e-30, 0.5, 1.0, 3.0, 131_071.99, 131_072.0, 1e10];
        for i in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let u = (s >> 8) as f32 / (1u32 << 24) as f32;
            let scale = [1.0, 10.0, 1e3, 1e5, 2e5][i % 5];
            args.push((2.0 * u - 1.0) * scale);
        }
        for k in 1..5_000 {
            let m = k as f32 * core::f32::consts::FRAC_PI_2;
            args.extend([m, m.next_up(), m.next_down(), -m]);
        }
        for x in args {
            let d = x as f64;
            for (got, want) in [
                (super::f32::sin(x), d.sin() as f32),
                (super::f32::cos(x), d.cos() as f32),
            ] {
                let e = ulps32(got, want);
                assert!(e <= 2, "x = {x:e}: {got:e} vs {want:e} ({e} ulp)");
            }
        }
        assert!(super::f32::sin(-0.0).is_sign_negative());
    }
}
