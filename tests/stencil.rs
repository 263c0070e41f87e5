//! `#[stencil]` on every backend: the values of a plain host loop, bit for bit, at sizes that
//! leave no interior, one row or one column, and sizes that are no multiple of a GPU tile.

mod common;

use common::{assert_mentions, backends};
use gpu_kernels::{gaussian5x5, smooth_stencil, GAUSS5};
use kernel_runtime::ndarray::s;
use kernel_runtime::prelude::*;
use kernel_suite::reference::{self, SplitMix64};

/// A blend of two arrays at different neighbours, the weight `g` given at the call, `-1` on the
/// border. (Its names are those the generated code uses for its own values, which must not
/// hide them.)
#[stencil(cval = -1.0)]
fn blend(a: &Array2<f32>, out: &Array2<f32>, g: f32) -> f32 {
    g * a[[0, -1]] + (1.0 - g) * out[[1, 0]]
}

/// A central difference over a vector.
#[stencil]
fn central(x: &[f64]) -> f64 {
    (x[1] - x[-1]) * 0.5
}

/// The 7-point Laplacian.
#[stencil]
fn laplace(u: &Array3<f32>) -> f32 {
    u[[-1, 0, 0]] + u[[1, 0, 0]] + u[[0, -1, 0]] + u[[0, 1, 0]] + u[[0, 0, -1]] + u[[0, 0, 1]]
        - 6.0 * u[[0, 0, 0]]
}

/// The sum of the `2 r + 1` elements around each, `r` given at the call: its indices are
/// computed, so its neighbourhood is declared.
#[stencil(neighborhood = ((-2, 2),), cval = 0)]
fn window(x: &[i32], r: i32) -> i32 {
    let mut s = 0;
    let mut k = -r;
    while k <= r {
        s += x[k];
        k += 1;
    }
    s
}

/// A 1-D convolution whose taps are an array indexed as usual, Numba's `standard_indexing`.
#[stencil(standard_indexing = (taps), cval = -1.0)]
fn convolve(x: &[f32], taps: &[f32]) -> f32 {
    taps[0] * x[-1] + taps[1] * x[0] + taps[2] * x[1]
}

/// A tap past the end of the taps: an index fault, as in a kernel.
#[stencil(standard_indexing = ("taps"))]
fn convolve_past(x: &[f32], taps: &[f32]) -> f32 {
    taps[3] * x[0]
}

fn image(n: usize, m: usize) -> Array2<i8> {
    let mut rng = SplitMix64((n * 7919 + m) as u64);
    Array2::from_shape_fn((n, m), |_| rng.next_u64() as i8)
}

#[test]
fn smooth_is_the_host_loop_bit_for_bit_at_every_shape() {
    for dev in backends() {
        for (n, m) in [
            (257, 131),
            (1, 300),
            (300, 1),
            (2, 2),
            (3, 3),
            (9, 5),
            (17, 64),
            (64, 17),
        ] {
            let x = image(n, m);
            let dx = dev.to_device(&x).unwrap();
            let new = smooth_stencil.run(&dx).unwrap().to_host().unwrap();
            assert_eq!(
                new,
                reference::smooth(&x, &Array2::zeros((n, m))),
                "{n}×{m} {dev:?}"
            );
            // Without a `cval`, `apply` leaves the border as it was.
            let sevens = Array2::from_elem((n, m), 7i8);
            let mut out = dev.to_device(&sevens).unwrap();
            smooth_stencil.apply(&dx, &mut out).unwrap();
            assert_eq!(
                out.to_host().unwrap(),
                reference::smooth(&x, &sevens),
                "{n}×{m}"
            );
        }
    }
    assert_eq!(smooth_stencil::NEIGHBORHOOD, [(-1, 1), (-1, 1)]);
}

#[test]
fn a_neighbourhood_walked_by_loops_is_the_host_loop() {
    assert_eq!(gaussian5x5::NEIGHBORHOOD, [(-2, 2), (-2, 2)]);
    for dev in backends() {
        for (n, m) in [
            (131, 257),
            (4, 9),
            (5, 5),
            (9, 4),
            (1, 40),
            (40, 1),
            (23, 70),
        ] {
            let x = image(n, m).mapv(|v| v as u8);
            let got = gaussian5x5
                .run(&dev.to_device(&x).unwrap())
                .unwrap()
                .to_host()
                .unwrap();
            let expect = Array2::from_shape_fn((n, m), |(i, j)| {
                if !((2..n.saturating_sub(2)).contains(&i) && (2..m.saturating_sub(2)).contains(&j))
                {
                    return 0;
                }
                let mut s = 128u32;
                for (a, row) in GAUSS5.iter().enumerate() {
                    for (b, w) in row.iter().enumerate() {
                        s += w * x[[i + a - 2, j + b - 2]] as u32;
                    }
                }
                (s >> 8) as u8
            });
            assert_eq!(got, expect, "{n}×{m} {dev:?}");
        }
    }
}

#[test]
fn several_arrays_and_a_value_combine_and_cval_fills_the_border() {
    assert_eq!(blend::NEIGHBORHOOD, [(0, 1), (-1, 0)]);
    for dev in backends() {
        for (n, m) in [(13, 70), (1, 5), (2, 1), (40, 3)] {
            let a = Array2::from_shape_fn((n, m), |(i, j)| (i * m + j) as f32);
            let b = Array2::from_shape_fn((n, m), |(i, j)| (i as f32) - (j as f32) * 0.5);
            let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
            let w = 0.25f32;
            let expect = Array2::from_shape_fn((n, m), |(i, j)| {
                if i + 1 < n && j >= 1 {
                    w * a[[i, j - 1]] + (1.0 - w) * b[[i + 1, j]]
                } else {
                    -1.0
                }
            });
            let got = blend.run((&da, &db, w)).unwrap().to_host().unwrap();
            assert_eq!(got, expect, "{n}×{m} {dev:?}");
            let mut out = dev.zeros::<f32, _>((n, m)).unwrap();
            blend.apply((&da, &db, w), &mut out).unwrap();
            assert_eq!(out.to_host().unwrap(), expect, "{n}×{m} {dev:?}");
        }
    }
}

#[test]
fn one_axis_and_three_axes() {
    for dev in backends() {
        for n in [1, 2, 3, 1000, 50_001] {
            let x: Vec<f64> = (0..n).map(|i| ((i * i) % 97) as f64).collect();
            let got = central
                .run(&dev.to_device(&x[..]).unwrap())
                .unwrap()
                .to_vec()
                .unwrap();
            let expect: Vec<f64> = (0..n)
                .map(|i| {
                    if i >= 1 && i + 1 < n {
                        (x[i + 1] - x[i - 1]) * 0.5
                    } else {
                        0.0
                    }
                })
                .collect();
            assert_eq!(got, expect, "n={n} {dev:?}");
        }
        for (d, n, m) in [(5, 7, 9), (1, 3, 3), (3, 3, 3), (12, 33, 65)] {
            let u =
                Array3::from_shape_fn((d, n, m), |(z, y, x)| ((z * 31 + y * 7 + x) % 13) as f32);
            let got = laplace
                .run(&dev.to_device(&u).unwrap())
                .unwrap()
                .to_host()
                .unwrap();
            let expect = Array3::from_shape_fn((d, n, m), |(z, y, x)| {
                let inside =
                    (1..d - 1).contains(&z) && (1..n - 1).contains(&y) && (1..m - 1).contains(&x);
                if !inside {
                    return 0.0;
                }
                u[[z - 1, y, x]]
                    + u[[z + 1, y, x]]
                    + u[[z, y - 1, x]]
                    + u[[z, y + 1, x]]
                    + u[[z, y, x - 1]]
                    + u[[z, y, x + 1]]
                    - 6.0 * u[[z, y, x]]
            });
            assert_eq!(got, expect, "{d}×{n}×{m} {dev:?}");
        }
    }
}

#[test]
fn computed_indices_stay_in_the_declared_neighbourhood() {
    assert_eq!(window::NEIGHBORHOOD, [(-2, 2)]);
    let x: Vec<i32> = (0..40).map(|i| i * 3 - 20).collect();
    for dev in backends() {
        let dx = dev.to_device(&x[..]).unwrap();
        let got = window.run((&dx, 2)).unwrap().to_vec().unwrap();
        let expect: Vec<i32> = (0..40)
            .map(|i| {
                if (2..38).contains(&i) {
                    x[i - 2..=i + 2].iter().sum()
                } else {
                    0
                }
            })
            .collect();
        assert_eq!(got, expect, "{dev:?}");
    }
    // A GPU traps, and its context is lost: the CPU backends alone show the message.
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let dx = dev.to_device(&x[..]).unwrap();
        let err = window.run((&dx, 3)).unwrap_err();
        assert!(
            matches!(err, kernel_runtime::Error::KernelFault { .. }),
            "{err:?}"
        );
        assert_mentions(
            &err.to_string(),
            &[
                "window",
                "relative index [-3] is outside the stencil's neighbourhood ((-2, 2))",
                "stencil.rs",
            ],
        );
    }
}

#[test]
fn an_array_indexed_as_usual_has_a_shape_of_its_own() {
    let x: Vec<f32> = (0..50).map(|i| (i * i % 17) as f32).collect();
    let taps = [0.25f32, 0.5, 0.25];
    let expect: Vec<f32> = (0..50)
        .map(|i| {
            if (1..49).contains(&i) {
                taps[0] * x[i - 1] + taps[1] * x[i] + taps[2] * x[i + 1]
            } else {
                -1.0
            }
        })
        .collect();
    for dev in backends() {
        let (dx, dt) = (
            dev.to_device(&x[..]).unwrap(),
            dev.to_device(&taps[..]).unwrap(),
        );
        let got = convolve.run((&dx, &dt)).unwrap().to_vec().unwrap();
        assert_eq!(got, expect, "{dev:?}");
        // The taps as a view of part of a longer array, as Numba's `f(x, w[2:5])`.
        let mut longer = [9.0f32; 8];
        longer[2..5].copy_from_slice(&taps);
        let longer = dev.to_device(&longer[..]).unwrap();
        let part = longer.slice(2..5).unwrap();
        let viewed = convolve.run((&dx, part)).unwrap().to_vec().unwrap();
        assert_eq!(viewed, expect, "{dev:?}");
    }
    assert_eq!(convolve::NEIGHBORHOOD, [(-1, 1)]);
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let (dx, dt) = (
            dev.to_device(&x[..]).unwrap(),
            dev.to_device(&taps[..]).unwrap(),
        );
        let err = convolve_past.run((&dx, &dt)).unwrap_err();
        assert_mentions(
            &err.to_string(),
            &["index 3 is out of bounds of array `taps`", "[3]"],
        );
    }
}

#[test]
fn every_kind_of_parameter_in_any_order() {
    use kernel_suite::test_kernels::mixed_stencil;
    let (n, m) = (6, 9);
    let a = Array2::from_shape_fn((n, m), |(i, j)| (i * m + j) as f32);
    let b = Array2::from_shape_fn((n, m), |(i, j)| (i as f32) * 0.5 - j as f32);
    let w = [3.0f32, 0.0, 0.0];
    let expect = Array2::from_shape_fn((n, m), |(i, j)| {
        if i >= 1 && j + 1 < m {
            0.5 * a[[i, j + 1]] + w[0] * b[[i - 1, j]]
        } else {
            -1.0
        }
    });
    for dev in backends() {
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        let dw = dev.to_device(&w[..]).unwrap();
        let got = mixed_stencil
            .run((&da, 0.5, &dw, &db))
            .unwrap()
            .to_host()
            .unwrap();
        assert_eq!(got, expect, "{dev:?}");
    }
}

#[test]
fn arrays_of_other_shapes_or_devices_are_refused() {
    let dev = Device::cpu();
    let x = dev.to_device(&image(4, 5)).unwrap();
    let mut out = dev.zeros::<i8, _>((5, 4)).unwrap();
    let err = smooth_stencil.apply(&x, &mut out).unwrap_err();
    assert!(
        matches!(err, kernel_runtime::Error::ShapeMismatch { .. }),
        "{err:?}"
    );
    assert_mentions(
        &err.to_string(),
        &["argument `x` of `smooth_stencil`", "[4, 5]", "[5, 4]"],
    );
    let other = Device::cpu_checked();
    let mut elsewhere = other.zeros::<i8, _>((4, 5)).unwrap();
    assert!(smooth_stencil.apply(&x, &mut elsewhere).is_err());
}

#[test]
fn views_of_arrays_are_stencil_arrays_of_their_own() {
    for dev in backends() {
        // Rows 3..20 of a 24 × 31 image, into rows 5..22 of an output of 26 rows: the view is
        // the whole stencil array, its first and last rows its border.
        let x = image(24, 31);
        let (dx, mut out) = (
            dev.to_device(&x).unwrap(),
            dev.to_device(&Array2::from_elem((26, 31), 7i8)).unwrap(),
        );
        let part = x.slice(s![3..20, ..]).to_owned();
        smooth_stencil
            .apply(dx.slice(3..20).unwrap(), out.slice_mut(5..22).unwrap())
            .unwrap();
        let got = out.to_host().unwrap();
        let want = reference::smooth(&part, &Array2::from_elem((17, 31), 7i8));
        assert_eq!(got.slice(s![5..22, ..]), want, "{dev:?}");
        // Around the view, the output is as it was.
        assert!(got.slice(s![..5, ..]).iter().all(|&v| v == 7), "{dev:?}");
        assert!(got.slice(s![22.., ..]).iter().all(|&v| v == 7), "{dev:?}");
        // `run` on a view makes an array of its shape.
        let new = smooth_stencil.run(dx.slice(3..20).unwrap()).unwrap();
        assert_eq!(new.shape(), [17, 31]);
        assert_eq!(
            new.to_host().unwrap(),
            reference::smooth(&part, &Array2::zeros((17, 31)))
        );
        // A view of another shape than the output's is refused.
        let err = smooth_stencil
            .apply(dx.slice(0..10).unwrap(), out.slice_mut(0..11).unwrap())
            .unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    }
}
