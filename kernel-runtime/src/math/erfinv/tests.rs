// The reference values keep the digits mpmath gave, past what an f64 holds.
#![allow(clippy::excessive_precision)]

use super::*;

/// Within `ulps` units in the last place of `want` (an `f64` value, rounded to `F`'s
/// precision by `eps`).
fn near(got: f64, want: f64, eps: f64, ulps: f64) -> bool {
    (got - want).abs() <= ulps * eps * want.abs().max(f64::MIN_POSITIVE)
}

/// `(y, erfinv(y))`, from mpmath at 40 digits.
const ERFINV: [(f64, f64); 14] = [
    (1e-300, 8.862_269_254_527_580_4e-301),
    (1e-20, 8.862_269_254_527_579_7e-21),
    (1e-8, 8.862_269_254_527_580_6e-9),
    (0.001, 0.000_886_227_157_466_552_12),
    (0.1, 0.088_855_990_494_257_692),
    (0.3, 0.272_462_714_726_754_35),
    (0.5, 0.476_936_276_204_469_87),
    (0.500_000_01, 0.476_936_287_330_318_18),
    (0.7, 0.732_869_077_959_216_78),
    (0.9, 1.163_087_153_676_674_2),
    (0.99, 1.821_386_367_718_449_5),
    (0.999_999, 3.458_910_737_275_498_8),
    (0.999_999_999_9, 4.572_824_958_544_925),
    (-0.999, -2.326_753_765_513_524_5),
];

/// `(z, erfcinv(z))`, from mpmath at 60 digits (the tails solving `ln erfc(x) = ln z`).
const ERFCINV: [(f64, f64); 11] = [
    (1e-300, 26.209_469_960_516_124),
    (1e-100, 15.065_574_702_592_646),
    (1e-20, 6.601_580_622_355_142_6),
    (1e-10, 4.572_824_967_389_485_3),
    (5e-8, 3.854_658_576_953_545_4),
    (0.01, 1.821_386_367_718_449_7),
    (0.75, 0.225_312_055_012_178_1),
    (1.25, -0.225_312_055_012_178_1),
    (1.5, -0.476_936_276_204_469_87),
    (1.9, -1.163_087_153_676_673_8),
    (1.999_99, -3.123_413_274_339_873_4),
];

#[test]
fn f64_values_are_within_two_ulps() {
    for (y, want) in ERFINV {
        assert!(
            near(erfinv(y), want, f64::EPSILON, 2.0),
            "erfinv({y}) = {} not {want}",
            erfinv(y)
        );
        assert_eq!(erfinv(-y), -erfinv(y), "odd at {y}");
    }
    for (z, want) in ERFCINV {
        let got = erfcinv(z);
        assert!(
            near(got, want, f64::EPSILON, 2.0),
            "erfcinv({z}) = {got} not {want}"
        );
    }
    // Python's NormalDist().inv_cdf and mpmath.
    let normal = [
        (1e-300, -37.047_096_299_361_199),
        (1e-10, -6.361_340_902_404_056),
        (0.025, -1.959_963_984_540_054_2),
        (0.975, 1.959_963_984_540_053_9),
        (0.999_999, 4.753_424_308_817_087_8),
    ];
    for (p, want) in normal {
        let got = normcdfinv(p);
        assert!(
            near(got, want, f64::EPSILON, 4.0),
            "normcdfinv({p}) = {got} not {want}"
        );
    }
    assert_eq!(normcdfinv(0.5f64), 0.0);
}

#[test]
fn f32_values_are_within_two_ulps() {
    let eps = f32::EPSILON as f64;
    for (y, want) in ERFINV
        .iter()
        .filter(|(y, _)| (*y as f32) != 0.0 && *y as f32 as f64 == *y)
    {
        let got = erfinv(*y as f32) as f64;
        assert!(
            near(got, *want, eps, 2.0),
            "erfinv({y}f32) = {got} not {want}"
        );
    }
    // At the f32 values nearest 1e-30 and 1e-10.
    for (z, want) in [(1e-30f32, 8.148_616_222_98), (1e-10, 4.572_824_965_96)] {
        let got = erfcinv(z) as f64;
        assert!(
            near(got, want, eps, 2.0),
            "erfcinv({z}f32) = {got} not {want}"
        );
    }
    // The least subnormal has one bit: every x in about [10.0, 10.04] has it as `erfcf(x)`.
    let least = erfcinv(f32::from_bits(1));
    assert!((least - 10.019_834).abs() < 1e-3 && libm::erfcf(least) == f32::from_bits(1));
    assert!(near(
        normcdfinv(0.975f32) as f64,
        1.959_963_984_540_054,
        eps,
        2.0
    ));
}

#[test]
fn the_ends_are_infinite_and_outside_them_nan() {
    assert_eq!(
        (erfinv(1.0f64), erfinv(-1.0f64)),
        (f64::INFINITY, f64::NEG_INFINITY)
    );
    assert_eq!(
        (erfcinv(0.0f32), erfcinv(2.0f32)),
        (f32::INFINITY, f32::NEG_INFINITY)
    );
    assert_eq!(
        (normcdfinv(0.0f64), normcdfinv(1.0f64)),
        (f64::NEG_INFINITY, f64::INFINITY)
    );
    for bad in [1.5, -1.000_000_1, f64::NAN, f64::INFINITY] {
        assert!(erfinv(bad).is_nan(), "erfinv({bad})");
    }
    for bad in [-0.1f32, 2.1, f32::NAN] {
        assert!(erfcinv(bad).is_nan(), "erfcinv({bad})");
    }
    assert_eq!(erfinv(0.0f64), 0.0);
}

#[test]
fn the_inverse_rises_and_undoes_erf() {
    let mut last = f64::NEG_INFINITY;
    for i in -999..=999 {
        let y = i as f64 / 1000.0;
        let x = erfinv(y);
        assert!(x > last, "not increasing at {y}");
        last = x;
        // erf's slope is at most 2/√π, so erf(x) moves by no more than that times x's error.
        assert!(
            (libm::erf(x) - y).abs() <= 4.0 * f64::EPSILON,
            "erf(erfinv({y}))"
        );
    }
}
