//! `#[guvectorize]` on every backend: generalized ufuncs against plain host loops, over loop
//! dimensions, broadcast inputs, scalars and awkward sizes, and the errors of shapes that do
//! not fit a layout.

use kernel_runtime::prelude::*;
use kernel_runtime::DeviceArray0;
use kernel_suite::gufuncs::{
    awkward_names, dot, last_plus_one, matmul_gu, matvec, min_max, running_sum, shift,
    total_and_running,
};
use kernel_suite::reference::SplitMix64;
use ndarray::{Array1, Array3, Axis};

mod common;
use common::{assert_mentions, assert_trapped, backends};

/// `rows × n` random floats from `seed`, small whole numbers so that sums are exact.
fn whole(rows: usize, n: usize, seed: u64) -> Array2<f32> {
    let mut rng = SplitMix64(seed);
    Array2::from_shape_fn((rows, n), |_| (rng.next_u64() % 17) as f32 - 8.0)
}

#[test]
fn dot_products_over_loop_dimensions() {
    for dev in backends() {
        for (rows, n) in [(1, 1), (5, 3), (257, 31), (1000, 1), (3, 1000)] {
            let (a, b) = (whole(rows, n, 1), whole(rows, n, 2));
            let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
            let expect: Array1<f32> = (&a * &b).sum_axis(Axis(1));
            let got = dot.call((&da, &db)).unwrap();
            assert_eq!(
                got.to_host().unwrap(),
                expect,
                "{:?} {rows} x {n}",
                dev.kind()
            );
            // One `b` for every row: Numba's broadcasting of a missing loop dimension.
            let b0 = b.row(0).to_owned();
            let db0 = dev.to_device(&b0).unwrap();
            let mut out = dev.zeros::<f32, _>(rows).unwrap();
            dot.apply((&da, &db0), &mut out).unwrap();
            assert_eq!(out.to_host().unwrap(), a.dot(&b0), "{rows} x {n}");
            // The same row as a 1 × n array: a loop dimension of 1 broadcasts as none.
            let row = dev.to_device(&b0.clone().insert_axis(Axis(0))).unwrap();
            let mut again = dev.zeros::<f32, _>(rows).unwrap();
            dot.apply((&row, &da), &mut again).unwrap();
            assert_eq!(again.to_host().unwrap(), a.dot(&b0), "{rows} x {n}");
        }
        // No loop dimensions: one dot product, a 0-D array.
        let v = dev.to_device(&vec![1.0f32, 2.0, 3.0]).unwrap();
        let one: DeviceArray0<f32> = dot.call((&v, &v)).unwrap();
        assert_eq!(one.value().unwrap(), 14.0);
        // No loop index at all, and cores of no element.
        let none = dev.zeros::<f32, _>((0, 4)).unwrap();
        assert_eq!(dot.call((&none, &none)).unwrap().len(), 0);
        let empty = dev.zeros::<f32, _>((3, 0)).unwrap();
        let zeros = dot.call((&empty, &empty)).unwrap();
        assert_eq!(zeros.to_vec().unwrap(), [0.0; 3]);
    }
}

#[test]
fn scalars_broadcast_or_vary_per_loop_index() {
    for dev in backends() {
        let x = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f64);
        let dx = dev.to_device(&x).unwrap();
        let got = shift.call((&dx, 2.5)).unwrap();
        assert_eq!(got.to_host().unwrap(), &x + 2.5, "{:?}", dev.kind());
        let y = dev.to_device(&vec![10.0, 20.0, 30.0, 40.0]).unwrap();
        let mut out = dev.zeros::<f64, _>((4, 6)).unwrap();
        shift.apply((&dx, &y), &mut out).unwrap();
        let expect = Array2::from_shape_fn((4, 6), |(i, j)| x[[i, j]] + 10.0 * (i + 1) as f64);
        assert_eq!(out.to_host().unwrap(), expect);
    }
}

#[test]
fn matrix_products_per_loop_index() {
    for dev in backends() {
        let (l, m, n, p) = (3, 5, 7, 2);
        let mut rng = SplitMix64(7);
        let a = Array3::from_shape_fn((l, m, n), |_| (rng.next_u64() % 9) as f32 - 4.0);
        let b = Array3::from_shape_fn((l, n, p), |_| (rng.next_u64() % 9) as f32 - 4.0);
        let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
        let got = matmul_gu.call((&da, &db)).unwrap().to_host().unwrap();
        for k in 0..l {
            let expect = a.index_axis(Axis(0), k).dot(&b.index_axis(Axis(0), k));
            assert_eq!(got.index_axis(Axis(0), k), expect, "{:?} {k}", dev.kind());
        }
        // Every loop index times one matrix.
        let b0 = b.index_axis(Axis(0), 0).to_owned();
        let got = matmul_gu.call((&da, &dev.to_device(&b0).unwrap())).unwrap();
        let got = got.to_host().unwrap();
        for k in 0..l {
            assert_eq!(
                got.index_axis(Axis(0), k),
                a.index_axis(Axis(0), k).dot(&b0)
            );
        }
    }
}

/// The README's example: every matrix of a stack times one vector.
fn each(
    dev: &Device,
    a: &Array3<f32>,
    x: &Array1<f32>,
) -> Result<Array2<f32>, kernel_runtime::Error> {
    let (a, x) = (dev.to_device(a)?, dev.to_device(x)?);
    matvec.call((&a, &x))?.to_host()
}

#[test]
fn a_stack_of_matrices_times_one_vector() {
    for dev in backends() {
        let a = Array3::from_shape_fn((6, 4, 3), |(l, i, k)| (l + 2 * i + 3 * k) as f32);
        let x = Array1::from(vec![1.0f32, -2.0, 0.5]);
        let got = each(&dev, &a, &x).unwrap();
        for l in 0..6 {
            assert_eq!(
                got.row(l),
                a.index_axis(Axis(0), l).dot(&x),
                "{:?} {l}",
                dev.kind()
            );
        }
    }
}

#[test]
fn several_outputs_come_back_together() {
    for dev in backends() {
        let x = whole(257, 9, 5);
        let dx = dev.to_device(&x).unwrap();
        let (lo, hi) = min_max.call(&dx).unwrap();
        let fold =
            |f: fn(f32, f32) -> f32, init| x.map_axis(Axis(1), |r| r.fold(init, |a, &b| f(a, b)));
        assert_eq!(
            lo.to_host().unwrap(),
            fold(f32::min, f32::INFINITY),
            "{:?}",
            dev.kind()
        );
        assert_eq!(hi.to_host().unwrap(), fold(f32::max, f32::NEG_INFINITY));
        // Outputs of two kinds, given.
        let ints = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as i64 - 9);
        let di = dev.to_device(&ints).unwrap();
        let mut total = dev.zeros::<i64, _>(4).unwrap();
        let mut running = dev.zeros::<i64, _>((4, 6)).unwrap();
        total_and_running
            .apply(&di, (&mut total, &mut running))
            .unwrap();
        let mut expect = ints.clone();
        expect.accumulate_axis_inplace(Axis(1), |&prev, cur| *cur += prev);
        assert_eq!(running.to_host().unwrap(), expect);
        assert_eq!(total.to_host().unwrap(), ints.sum_axis(Axis(1)));
        // Each output's loop dimensions are the inputs'.
        let mut short = dev.zeros::<i64, _>(3).unwrap();
        let err = total_and_running
            .apply(&di, (&mut short, &mut running))
            .unwrap_err();
        assert_mentions(
            &err.to_string(),
            &["`total` has the loop dimension 3 where `x` has 4"],
        );
    }
}

#[test]
fn loop_dimensions_broadcast_as_numpys() {
    for dev in backends() {
        // Every row of `x` against every row of `y`: Numba's `dot(x[:, None], y[None, :])`.
        let (x, y) = (whole(4, 7, 3), whole(5, 7, 4));
        let x3 = dev.to_device(&x.clone().insert_axis(Axis(1))).unwrap();
        let y3 = dev.to_device(&y.clone().insert_axis(Axis(0))).unwrap();
        let got = dot.call((&x3, &y3)).unwrap().to_host().unwrap();
        assert_eq!(got, x.dot(&y.t()), "{:?}", dev.kind());
        // (4, 1, n) against (5, n): fewer dimensions align at the last.
        let y2 = dev.to_device(&y).unwrap();
        let got = dot.call((&x3, &y2)).unwrap().to_host().unwrap();
        assert_eq!(got, x.dot(&y.t()), "{:?}", dev.kind());
        // A `()` input of one value per column, against a stack of rows: (2, 3, n) and (3).
        let rows = Array3::from_shape_fn((2, 3, 4), |(a, b, c)| (a * 100 + b * 10 + c) as f64);
        let per_column = Array1::from_vec(vec![0.5, -1.0, 7.0]);
        let got = shift
            .call((
                &dev.to_device(&rows).unwrap(),
                &dev.to_device(&per_column).unwrap(),
            ))
            .unwrap()
            .to_host()
            .unwrap();
        let want = Array3::from_shape_fn((2, 3, 4), |(a, b, c)| rows[[a, b, c]] + per_column[b]);
        assert_eq!(got, want, "{:?}", dev.kind());
        // Dimensions that neither match nor are 1 are an error naming both.
        let other = dev.to_device(&whole(3, 7, 5).insert_axis(Axis(1))).unwrap();
        let err = dot.call((&x3, &other)).unwrap_err();
        assert_mentions(
            &err.to_string(),
            &["`b` has the loop dimension 3 where `a` has 4"],
        );
    }
}

#[test]
fn parameters_keep_their_names() {
    for dev in backends() {
        let x = Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as i32);
        let got = awkward_names
            .call((&dev.to_device(&x).unwrap(), -2))
            .unwrap();
        assert_eq!(got.to_host().unwrap(), &x * -2, "{:?}", dev.kind());
    }
}

#[test]
fn running_sums_write_whole_cores() {
    for dev in backends() {
        for (rows, n) in [(1, 1), (7, 9), (40_000, 3)] {
            let x = Array2::from_shape_fn((rows, n), |(i, j)| (i as i64 - j as i64) * 3);
            let got = running_sum.call(&dev.to_device(&x).unwrap()).unwrap();
            let mut expect = x.clone();
            expect.accumulate_axis_inplace(Axis(1), |&prev, cur| *cur += prev);
            assert_eq!(
                got.to_host().unwrap(),
                expect,
                "{:?} {rows} x {n}",
                dev.kind()
            );
        }
    }
}

#[test]
fn shapes_that_do_not_fit_the_layout_are_errors() {
    for dev in backends() {
        let a = dev.zeros::<f32, _>((4, 3)).unwrap();
        let b = dev.zeros::<f32, _>((4, 5)).unwrap();
        let err = dot.call((&a, &b)).unwrap_err();
        assert!(
            matches!(err, kernel_runtime::Error::LayoutMismatch { .. }),
            "{err:?}"
        );
        assert_mentions(
            &err.to_string(),
            &[
                "`dot`",
                "(n),(n)->()",
                "dimension `n` is 3 in `a` and 5 in `b`",
            ],
        );
        let c = dev.zeros::<f32, _>((2, 3)).unwrap();
        let err = dot.call((&a, &c)).unwrap_err().to_string();
        assert_mentions(&err, &["`b` has the loop dimension 2 where `a` has 4"]);
        let mut wrong = dev.zeros::<f32, _>(5).unwrap();
        let err = dot.apply((&a, &a), &mut wrong).unwrap_err().to_string();
        assert_mentions(&err, &["`out` has the loop dimension 5 where `a` has 4"]);
        let mut flat = dev.zeros::<f32, _>((4, 4)).unwrap();
        let err = matmul_gu
            .apply((&a, &a), &mut flat)
            .unwrap_err()
            .to_string();
        assert_mentions(&err, &["dimension `n` is 3 in `a` and 4 in `b`"]);
    }
}

#[test]
fn an_index_past_the_core_stops_the_call() {
    for dev in backends() {
        let x = dev.to_device(&Array2::<u32>::zeros((3, 4))).unwrap();
        let err = last_plus_one.call(&x).unwrap_err();
        if matches!(dev.kind(), kernel_runtime::DeviceKind::Cuda(_)) {
            assert_trapped(&err, "last_plus_one");
        } else {
            assert!(
                matches!(
                    err,
                    kernel_runtime::Error::KernelFault {
                        kernel: "last_plus_one",
                        ..
                    }
                ),
                "{err:?}"
            );
            assert_mentions(&err.to_string(), &["4", "src/gufuncs.rs"]);
        }
    }
}
