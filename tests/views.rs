//! Parts of device arrays passed to kernels and copied, as Numba's `d[i:j]`, `d[i]` and
//! `d.split(n)`, on every backend: a kernel sees a view as an array of its own, its indices
//! checked against the view; checked mode keeps the array's record of unwritten elements.

use gpu_kernels::add_vectorized;
use kernel_runtime::ndarray::{s, Array1, Array2, Array3};
use kernel_runtime::prelude::*;
use kernel_runtime::{Finding, Reader, Stream};
use kernel_suite::gufuncs::{dot, shift};
use kernel_suite::reference::SplitMix64;
use kernel_suite::test_kernels::{
    column_running_sums, copy_row_of, grid_stride_double, row_sums_plus, scale3, sum_row_parts,
    total_into_scalar, weighted_row_sums,
};

mod common;
use common::{assert_mentions, backends};

#[test]
fn a_slice_is_an_array_of_its_own_to_a_kernel() {
    for dev in backends() {
        let x: Vec<i64> = (0..100).collect();
        let d_x = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<i64, _>(100).unwrap();
        // Numba's grid_stride_double[2, 32](d_x[10:60], out[20:70]).
        grid_stride_double
            .launch(
                2,
                32,
                (d_x.slice(10..60).unwrap(), out.slice_mut(20..70).unwrap()),
            )
            .unwrap();
        let want: Vec<i64> = (0..100)
            .map(|i| {
                if (20..70).contains(&i) {
                    2 * (i - 10)
                } else {
                    0
                }
            })
            .collect();
        assert_eq!(out.to_vec().unwrap(), want, "{dev:?}");
        // A view passed by reference, twice, and a view of a view.
        let mut part = out.slice_mut(..50).unwrap();
        let head = d_x.slice(50..).unwrap();
        grid_stride_double
            .launch(1, 64, (&head, &mut part))
            .unwrap();
        grid_stride_double
            .launch(1, 64, (head.slice(..10).unwrap(), part.reborrow()))
            .unwrap();
        assert_eq!(
            part.view().to_vec().unwrap(),
            (100..200).step_by(2).collect::<Vec<_>>()
        );
        assert_eq!(
            out.slice(48..52).unwrap().to_vec().unwrap(),
            [196, 198, 80, 82]
        );
    }
}

#[test]
fn rows_planes_and_elements_are_views_one_rank_less() {
    for dev in backends() {
        let x = Array2::from_shape_fn((8, 6), |(i, j)| (10 * i + j) as u32);
        let d_x = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>((8, 6)).unwrap();
        row_sums_plus
            .launch(
                (1, 1),
                (8, 8),
                (d_x.slice(2..5).unwrap(), out.slice_mut(5..).unwrap()),
            )
            .unwrap();
        let out = out.to_host().unwrap();
        for (r, src) in (5..8).zip(2..5) {
            for j in 1..5 {
                let want = x[[src, j - 1]] + x[[src, j]] + x[[src, j + 1]];
                assert_eq!(out[[r, j]], want, "{dev:?} ({r}, {j})");
            }
        }
        assert!(out.slice(s![..5, ..]).iter().all(|&v| v == 0), "{dev:?}");

        // A plane of a 3-D array is a 2-D array; an element of a 1-D array a 0-D one.
        let cube = Array3::from_shape_fn((3, 4, 5), |(i, j, k)| (i * 100 + j * 10 + k) as f32);
        let d_cube = dev.to_device(&cube).unwrap();
        let mut scaled = dev.zeros::<f32, _>((3, 4, 5)).unwrap();
        scale3
            .launch(
                (1, 1, 1),
                (8, 8, 2),
                (
                    d_cube.slice(1..).unwrap(),
                    2.0f32,
                    scaled.slice_mut(..2).unwrap(),
                ),
            )
            .unwrap();
        let scaled = scaled.to_host().unwrap();
        assert_eq!(
            scaled.slice(s![..2, .., ..]),
            cube.slice(s![1.., .., ..]).mapv(|v| 2.0 * v)
        );
        assert_eq!(
            d_cube.subarray(2).unwrap().to_host().unwrap(),
            cube.slice(s![2, .., ..])
        );
        let d_v = dev.to_device(&(1..=40u64).collect::<Vec<_>>()).unwrap();
        let mut totals = dev.zeros::<u64, _>(4).unwrap();
        let mut firsts = dev.zeros::<u64, _>(4).unwrap();
        for (k, part) in d_v.chunks(10).unwrap().enumerate() {
            let args = (
                part,
                totals.subarray_mut(k).unwrap(),
                firsts.subarray_mut(k).unwrap(),
            );
            total_into_scalar.launch(1, 32, args).unwrap();
        }
        assert_eq!(totals.to_vec().unwrap(), [55, 155, 255, 355], "{dev:?}");
        assert_eq!(firsts.to_vec().unwrap(), [1, 11, 21, 31], "{dev:?}");
    }
}

#[test]
fn chunks_go_to_launches_of_their_own_on_streams_of_their_own() {
    for dev in backends() {
        let x: Vec<i64> = (0..1000).collect();
        let d_x = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<i64, _>(1000).unwrap();
        let streams: Vec<Stream> = (0..3).map(|_| dev.stream().unwrap()).collect();
        // Numba's `for s, a, o in zip(streams, d_x.split(300), out.split(300))`.
        let parts = d_x.chunks(300).unwrap().zip(out.chunks_mut(300).unwrap());
        let mut lens = vec![];
        for (k, (a, o)) in parts.enumerate() {
            lens.push(a.len());
            let config = LaunchConfig::new(2, 64).unwrap().on_stream(&streams[k % 3]);
            grid_stride_double.launch_with(config, (a, o)).unwrap();
        }
        assert_eq!(lens, [300, 300, 300, 100]);
        let want: Vec<i64> = x.iter().map(|v| 2 * v).collect();
        assert_eq!(out.to_vec().unwrap(), want, "{dev:?}");
        // Two halves split apart, launched one after the other, each writing its own.
        let (mut lo, mut hi) = out.split_at_mut(400).unwrap();
        grid_stride_double
            .launch(1, 128, (d_x.slice(600..).unwrap(), &mut lo))
            .unwrap();
        grid_stride_double
            .launch(1, 128, (d_x.slice(..600).unwrap(), &mut hi))
            .unwrap();
        assert_eq!(lo.view().to_vec().unwrap()[..2], [1200, 1202]);
        let out = out.to_vec().unwrap();
        assert_eq!((out[399], out[400], out[999]), (1998, 0, 1198), "{dev:?}");
    }
}

#[test]
fn random_views_of_views_are_the_rows_ndarray_slices() {
    let mut rng = SplitMix64(11);
    let mut below = |n: usize| (rng.next_u64() % (n as u64 + 1)) as usize;
    for dev in backends() {
        let host = Array2::from_shape_fn((37, 5), |(i, j)| (100 * i + j) as i64);
        let d = dev.to_device(&host).unwrap();
        let flat: Vec<i64> = host.iter().copied().collect();
        let d_flat = dev.to_device(&flat).unwrap();
        for _ in 0..40 {
            // Rows a..b, then rows c..e of those: ndarray's slices of the same.
            let (a, b) = {
                let (x, y) = (below(37), below(37));
                (x.min(y), x.max(y))
            };
            let (c, e) = {
                let (x, y) = (below(b - a), below(b - a));
                (x.min(y), x.max(y))
            };
            let view = d.slice(a..b).unwrap().slice(c..e).unwrap();
            assert_eq!(
                view.to_host().unwrap(),
                host.slice(s![a..b, ..]).slice(s![c..e, ..])
            );
            // A kernel on elements a..a+n of one array into elements c..c+n of another.
            let n = below(flat.len() / 2);
            let (a, c) = (below(flat.len() - n), below(flat.len() - n));
            let mut out = dev.zeros::<i64, _>(flat.len()).unwrap();
            let args = (
                d_flat.slice(a..a + n).unwrap(),
                out.slice_mut(c..c + n).unwrap(),
            );
            grid_stride_double.launch(2, 32, args).unwrap();
            let got = out.to_vec().unwrap();
            for (k, g) in got.iter().enumerate() {
                let want = if (c..c + n).contains(&k) {
                    2 * flat[a + k - c]
                } else {
                    0
                };
                assert_eq!(*g, want, "{dev:?}: {a}+{n} into {c}, element {k}");
            }
        }
    }
}

#[test]
fn a_views_elements_copy_to_and_from_the_host_alone() {
    for dev in backends() {
        let mut a = dev.zeros::<i32, _>((4, 3)).unwrap();
        a.slice_mut(1..3)
            .unwrap()
            .copy_from_host(&Array2::from_elem((2, 3), 7))
            .unwrap();
        a.subarray_mut(3)
            .unwrap()
            .copy_from_host(&[1, 2, 3])
            .unwrap();
        let want = Array2::from_shape_fn((4, 3), |(i, j)| match i {
            0 => 0,
            3 => j as i32 + 1,
            _ => 7,
        });
        assert_eq!(a.to_host().unwrap(), want, "{dev:?}");
        // Into a host array, from a transposed one.
        let mut row = Array1::zeros(3);
        a.subarray(3).unwrap().copy_to_host(&mut row).unwrap();
        assert_eq!(row.to_vec(), [1, 2, 3]);
        let t = Array2::from_shape_fn((3, 2), |(i, j)| (10 * i + j) as i32);
        a.slice_mut(..2).unwrap().copy_from_host(&t.t()).unwrap();
        assert_eq!(a.slice(..2).unwrap().to_host().unwrap(), t.t());
        let err = a.slice_mut(..2).unwrap().copy_from_host(&t).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    }
}

#[test]
fn views_copy_between_devices_and_within_an_array() {
    for dev in backends() {
        let mut a = dev.to_device(&(0..10).collect::<Vec<u32>>()).unwrap();
        // `a[0:3] = a[7:10]`, the two halves of one array split apart.
        let (mut head, tail) = a.split_at_mut(5).unwrap();
        head.reborrow()
            .slice_mut(..3)
            .unwrap()
            .copy_from_device(tail.view().slice(2..).unwrap())
            .unwrap();
        assert_eq!(
            a.to_vec().unwrap(),
            [7, 8, 9, 3, 4, 5, 6, 7, 8, 9],
            "{dev:?}"
        );
        // From and to the CPU backend's arrays, whatever the device.
        let cpu = Device::cpu();
        let host = cpu.to_device(&[40u32, 41, 42]).unwrap();
        a.slice_mut(4..7).unwrap().copy_from_device(&host).unwrap();
        let mut back = cpu.zeros::<u32, _>(2).unwrap();
        back.view_mut()
            .copy_from_device(a.slice(5..7).unwrap())
            .unwrap();
        assert_eq!(back.to_vec().unwrap(), [41, 42], "{dev:?}");
        let err = back
            .view_mut()
            .copy_from_device(a.slice(..3).unwrap())
            .unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    }
}

#[test]
fn vectorized_functions_apply_to_views() {
    for dev in backends() {
        let x = dev
            .to_device(&Array2::from_shape_fn((6, 4), |(i, j)| (10 * i + j) as f32))
            .unwrap();
        let mut out = dev.zeros::<f32, _>((6, 4)).unwrap();
        // out[4:6] = x[0:2] + x[2:4]
        let args = (x.slice(..2).unwrap(), x.slice(2..4).unwrap());
        add_vectorized
            .apply(args, out.slice_mut(4..).unwrap())
            .unwrap();
        let out = out.to_host().unwrap();
        assert!(out.slice(s![..4, ..]).iter().all(|&v| v == 0.0), "{dev:?}");
        assert_eq!(out[[5, 3]], 13.0 + 33.0, "{dev:?}");
        let sum = add_vectorized
            .call((x.subarray(5).unwrap(), &x.subarray(0).unwrap()))
            .unwrap();
        assert_eq!(sum.to_vec().unwrap(), [50.0, 52.0, 54.0, 56.0], "{dev:?}");
    }
    // Checked mode reads a view's elements against the array's record, numbered in the view.
    let dev = Device::cpu_checked();
    let mut y = dev.empty::<f32, _>(8).unwrap();
    y.slice_mut(..5).unwrap().copy_from_host(&[1.0; 5]).unwrap();
    let mut out = dev.zeros::<f32, _>(4).unwrap();
    add_vectorized
        .apply((y.slice(..4).unwrap(), y.slice(1..5).unwrap()), &mut out)
        .unwrap();
    let err = add_vectorized.apply((y.slice(..4).unwrap(), y.slice(3..7).unwrap()), &mut out);
    let (array, index) = unwritten_read(err);
    assert_eq!((array.as_str(), index), ("b", vec![2]));
}

#[test]
fn generalized_ufuncs_take_views_of_rows() {
    for dev in backends() {
        let m = Array2::from_shape_fn((6, 3), |(i, j)| (i * 3 + j) as f32);
        let d = dev.to_device(&m).unwrap();
        // dot(m[2:5], m[0]): each of rows 2 to 4 against row 0.
        let got = dot
            .call((&d.slice(2..5).unwrap(), &d.subarray(0).unwrap()))
            .unwrap();
        let want: Vec<f32> = (2..5).map(|i| m.row(i).dot(&m.row(0))).collect();
        assert_eq!(got.to_vec().unwrap(), want, "{dev:?}");
        // Into part of an output: out[1:4] = dot(m[2:5], m[0]).
        let mut out = dev.zeros::<f32, _>(5).unwrap();
        let args = (&d.slice(2..5).unwrap(), &d.subarray(0).unwrap());
        dot.apply(args, &mut out.slice_mut(1..4).unwrap()).unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            [0.0, want[0], want[1], want[2], 0.0],
            "{dev:?}"
        );
    }
    // Checked mode reads a view against its array's record, numbered in the view.
    let dev = Device::cpu_checked();
    let mut y = dev.empty::<f32, _>((4, 2)).unwrap();
    y.slice_mut(..3)
        .unwrap()
        .copy_from_host(&Array2::ones((3, 2)))
        .unwrap();
    // A `()` input of the view's elements alone: the array's unwritten rest is not read.
    let mut ys = dev.empty::<f64, _>(4).unwrap();
    ys.slice_mut(..2)
        .unwrap()
        .copy_from_host(&[10.0, 20.0])
        .unwrap();
    let x = dev.to_device(&Array2::from_elem((2, 3), 1.0f64)).unwrap();
    let shifted = shift
        .call((&x, &ys.slice(..2).unwrap()))
        .unwrap()
        .to_host()
        .unwrap();
    assert_eq!(shifted.row(1).to_vec(), [21.0; 3]);
    let ones = dev.to_device(&[1.0f32, 1.0]).unwrap();
    assert_eq!(
        dot.call((&y.slice(1..3).unwrap(), &ones))
            .unwrap()
            .to_vec()
            .unwrap(),
        [2.0, 2.0]
    );
    // Loop index 1 is the array's row 3, which nothing wrote: its core's element 0.
    match dot.call((&y.slice(2..).unwrap(), &ones)) {
        Err(Error::CheckFailed { finding, .. }) => match *finding {
            Finding::UnwrittenRead {
                array,
                index,
                reader: Reader::LoopIndex { loop_index, .. },
                ..
            } => {
                assert_eq!((array, index, loop_index), ("a", vec![0], 1));
            }
            f => panic!("expected a read of an unwritten element, found: {f}"),
        },
        other => panic!("expected a finding, got {other:?}"),
    }
}

#[test]
fn views_past_the_array_are_errors_that_name_the_shape() {
    let dev = Device::cpu();
    let mut a = dev.zeros::<u8, _>((4, 3)).unwrap();
    let err = a.slice(2..5).unwrap_err();
    assert!(
        matches!(
            err,
            Error::AxisOutOfRange {
                start: 2,
                end: 5,
                ..
            }
        ),
        "{err}"
    );
    assert_mentions(&err.to_string(), &["2..5", "[4, 3]", "0..4"]);
    let (from, to) = (3, 2);
    assert!(matches!(
        a.slice(from..to),
        Err(Error::AxisOutOfRange { .. })
    ));
    assert!(matches!(
        a.subarray_mut(4),
        Err(Error::AxisOutOfRange {
            start: 4,
            end: 5,
            ..
        })
    ));
    assert!(matches!(
        a.split_at_mut(5),
        Err(Error::AxisOutOfRange { .. })
    ));
    let err = a.chunks(0).err().unwrap();
    assert!(matches!(err, Error::EmptyChunks { .. }), "{err}");
    // The ends are views too: empty ones.
    assert!(a.slice(4..).unwrap().is_empty());
    assert_eq!(a.chunks_mut(4).unwrap().count(), 1);
    assert_eq!(dev.zeros::<u8, _>(0).unwrap().chunks(3).unwrap().count(), 0);
}

#[test]
fn an_index_past_a_view_faults_though_the_array_holds_it() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let x = dev.to_device(&[1i64; 10]).unwrap();
        let mut out = dev.zeros::<i64, _>(10).unwrap();
        // `out[i]` for every `i` of `x`, into the first 5 of `out`'s 10.
        let err = grid_stride_double
            .launch(1, 16, (&x, out.slice_mut(..5).unwrap()))
            .unwrap_err();
        assert!(
            matches!(err, Error::KernelFault { .. } | Error::CheckFailed { .. }),
            "{err}"
        );
        assert_mentions(&err.to_string(), &["grid_stride_double", "out", "5"]);
    }
}

/// Writes `out[i] = x[i] + 1`.
#[kernel]
fn plus_one(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < out.len() {
        out[i] = x[i] + 1.0;
    }
}

fn unwritten_read(result: Result<(), Error>) -> (String, Vec<usize>) {
    match result {
        Err(Error::CheckFailed { finding, .. }) => match *finding {
            Finding::UnwrittenRead { array, index, .. } => (array.to_string(), index),
            f => panic!("expected a read of an unwritten element, found: {f}"),
        },
        other => panic!("expected a finding, got {other:?}"),
    }
}

#[test]
fn checked_mode_keeps_the_arrays_record_of_unwritten_elements_through_views() {
    let dev = Device::cpu_checked();
    let ones = dev.to_device(&[1.0f32; 10]).unwrap();
    let mut y = dev.empty::<f32, _>(10).unwrap();
    // A launch on a view writes its elements alone: 3..6.
    plus_one
        .launch(
            1,
            32,
            (ones.slice(..3).unwrap(), y.slice_mut(3..6).unwrap()),
        )
        .unwrap();
    let mut z = dev.zeros::<f32, _>(10).unwrap();
    plus_one
        .launch(1, 32, (y.slice(3..6).unwrap(), z.slice_mut(..3).unwrap()))
        .unwrap();
    assert_eq!(z.to_vec().unwrap()[..3], [3.0; 3]);
    // A read of a view is numbered in the view: its element 3 is the array's 6.
    let got =
        unwritten_read(plus_one.launch(1, 32, (y.slice(3..).unwrap(), z.slice_mut(..5).unwrap())));
    assert_eq!(got, ("x".to_string(), vec![3]));
    // A copy into a view writes it.
    y.slice_mut(6..).unwrap().copy_from_host(&[0.0; 4]).unwrap();
    plus_one
        .launch(1, 32, (y.slice(3..).unwrap(), z.slice_mut(..7).unwrap()))
        .unwrap();
    let got = unwritten_read(plus_one.launch(1, 32, (&y, &mut z)));
    assert_eq!(got.1, vec![0]);
    // Halves split apart count as written: nothing is reported of them.
    let mut w = dev.empty::<f32, _>(10).unwrap();
    let _ = w.split_at_mut(5).unwrap();
    plus_one.launch(1, 32, (&w, &mut z)).unwrap();
}

#[test]
fn kernels_take_subarrays_rows_and_slices_of_their_arrays() {
    let x = Array3::from_shape_fn((5, 7, 9), |(i, j, k)| (100 * i + 10 * j + k) as i64);
    for dev in backends() {
        let d_x = dev.to_device(&x).unwrap();
        for (lo, hi) in [(0, 9), (2, 6), (4, 4), (8, 9)] {
            let mut out = dev.zeros::<i64, _>((5, 7)).unwrap();
            sum_row_parts
                .launch((1, 2), (8, 4), (&d_x, lo, hi, &mut out))
                .unwrap();
            let want = x
                .slice(s![.., .., lo..hi])
                .sum_axis(kernel_runtime::ndarray::Axis(2));
            assert_eq!(out.to_host().unwrap(), want, "{dev:?} {lo}..{hi}");
        }
        // Of a view of planes 1..4, rows 1..3 of `out`: the kernel's parts number from the view.
        let mut out = dev.zeros::<i64, _>((5, 7)).unwrap();
        sum_row_parts
            .launch(
                1,
                (8, 4),
                (d_x.slice(1..4).unwrap(), 3, 5, out.slice_mut(1..3).unwrap()),
            )
            .unwrap();
        let got = out.to_host().unwrap();
        assert_eq!(got.row(0).sum() + got.row(3).sum() + got.row(4).sum(), 0);
        assert_eq!(got[[2, 6]], x.slice(s![2, 6, 3..5]).sum(), "{dev:?}");
        let u = dev.to_device(&x.mapv(|v| v as u32)).unwrap();
        let mut row = dev.zeros::<u32, _>(12).unwrap();
        copy_row_of.launch(1, 16, (&u, 2, 6, &mut row)).unwrap();
        assert_eq!(
            row.to_vec().unwrap()[..10],
            [260, 261, 262, 263, 264, 265, 266, 267, 268, 0]
        );
    }
}

#[test]
fn a_kernels_array_is_an_iterator_of_its_elements() {
    let x = Array2::from_shape_fn((37, 9), |(i, k)| (i * 3 + k) as u32);
    let want: Vec<u32> = x
        .rows()
        .into_iter()
        .map(|r| r.iter().enumerate().map(|(k, &v)| (k as u32 + 1) * v).sum())
        .collect();
    for dev in backends() {
        let d_x = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>(37).unwrap();
        weighted_row_sums.launch(2, 32, (&d_x, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), want, "{dev:?}");
    }
    // Checked mode sees each read: an unwritten element is reported at its place in the row.
    let dev = Device::cpu_checked();
    let mut e = dev.empty::<u32, _>((2, 4)).unwrap();
    e.subarray_mut(0).unwrap().fill(1).unwrap();
    e.subarray_mut(1)
        .unwrap()
        .slice_mut(..3)
        .unwrap()
        .fill(1)
        .unwrap();
    let mut out = dev.zeros::<u32, _>(2).unwrap();
    let got = unwritten_read(weighted_row_sums.launch(1, 32, (&e, &mut out)));
    assert_eq!(got, ("x".to_string(), vec![3]));
}

#[test]
fn a_kernels_2d_array_has_columns_to_index_and_walk() {
    let x = Array2::from_shape_fn((50, 7), |(i, j)| (i * 7 + j) as u32 % 13);
    let mut want = x.clone();
    for mut c in want.columns_mut() {
        let mut total = 0;
        c.iter_mut().for_each(|v| {
            total += *v;
            *v = total;
        });
    }
    for dev in backends() {
        let d_x = dev.to_device(&x).unwrap();
        let mut out = dev.zeros::<u32, _>((50, 7)).unwrap();
        column_running_sums
            .launch(1, 32, (&d_x, 0, &mut out))
            .unwrap();
        assert_eq!(out.to_host().unwrap(), want, "{dev:?}");
    }
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let (d_x, mut out) = (
            dev.zeros::<u32, _>((4, 3)).unwrap(),
            dev.zeros::<u32, _>((4, 3)).unwrap(),
        );
        // Thread 2 asks for column 3 of 3.
        let err = column_running_sums
            .launch(1, 32, (&d_x, 1, &mut out))
            .unwrap_err();
        assert_mentions(
            &err.to_string(),
            &[
                "column 3 does not lie in array `out` of 3 columns",
                "column_running_sums",
            ],
        );
    }
    // Checked mode reports a read through a column at the 2-D array's index.
    let dev = Device::cpu_checked();
    let mut x = dev.empty::<u32, _>((4, 3)).unwrap();
    x.slice_mut(..2).unwrap().fill(1).unwrap();
    let mut out = dev.zeros::<u32, _>((4, 3)).unwrap();
    let got = unwritten_read(column_running_sums.launch(1, 32, (&x, 0, &mut out)));
    assert_eq!(got.0, "x");
    assert_eq!(
        (got.1.len(), got.1[0]),
        (2, 2),
        "the first unwritten row, as `x[[2, j]]`"
    );
}

#[test]
fn a_subarray_or_slice_past_a_kernels_array_stops_it_named() {
    for dev in [Device::cpu(), Device::cpu_checked()] {
        let u = dev.zeros::<u32, _>((3, 4, 5)).unwrap();
        let mut row = dev.zeros::<u32, _>(5).unwrap();
        for (p, i, says) in [
            (4, 0, "slice 4..3 does not lie in array `x` of 3 planes"),
            (3, 0, "subarray 0 does not lie in array `x` of 0 planes"),
            (1, 4, "subarray 4 does not lie in array `x` of 4 rows"),
        ] {
            let err = copy_row_of.launch(1, 8, (&u, p, i, &mut row)).unwrap_err();
            assert_mentions(&err.to_string(), &[says, "copy_row_of", "test_kernels.rs"]);
        }
    }
}

#[test]
fn checked_mode_numbers_a_kernels_subarray_from_its_start() {
    let dev = Device::cpu_checked();
    let mut u = dev.empty::<u32, _>((2, 3, 4)).unwrap();
    u.subarray_mut(0)
        .unwrap()
        .copy_from_host(&Array2::zeros((3, 4)))
        .unwrap();
    let mut row = dev.zeros::<u32, _>(4).unwrap();
    copy_row_of.launch(1, 4, (&u, 0, 2, &mut row)).unwrap();
    // Plane 1 holds nothing written: its row 2 is read from element 0 on.
    let got = unwritten_read(copy_row_of.launch(1, 4, (&u, 1, 2, &mut row)));
    assert_eq!(got, ("x".to_string(), vec![0]));
}

#[test]
fn fills_set_every_element_of_an_array_or_view() {
    use kernel_runtime::vector::{F32x4, U8x3};
    for dev in backends() {
        let at = format!("{dev:?}");
        let mut a = dev.empty::<u64, _>(10).unwrap();
        a.fill(0x0102_0304_0506_0708).unwrap();
        a.slice_mut(3..5).unwrap().fill(0).unwrap();
        let mut want = vec![0x0102_0304_0506_0708u64; 10];
        want[3..5].fill(0);
        assert_eq!(a.to_vec().unwrap(), want, "{at}");
        // Rows of a 2-D array of vectors, and elements of three bytes.
        let mut v = dev.zeros::<F32x4, _>((4, 3)).unwrap();
        v.slice_mut(1..3)
            .unwrap()
            .fill(F32x4::new(1.0, -2.0, 3.5, 0.0))
            .unwrap();
        let got = v.to_vec().unwrap();
        assert_eq!(got[2], F32x4::default(), "{at}");
        assert!(
            got[3..9]
                .iter()
                .all(|&e| e == F32x4::new(1.0, -2.0, 3.5, 0.0)),
            "{at}"
        );
        assert_eq!(got[9], F32x4::default(), "{at}");
        let mut c = dev.empty::<U8x3, _>(5).unwrap();
        c.fill(U8x3::new(1, 2, 3)).unwrap();
        assert_eq!(c.to_vec().unwrap(), vec![U8x3::new(1, 2, 3); 5], "{at}");
        // What a fill wrote is written: checked mode reads it without a report.
        let mut e = dev.empty::<i64, _>(10).unwrap();
        e.fill(3).unwrap();
        let mut out = dev.zeros::<i64, _>(10).unwrap();
        grid_stride_double.launch(1, 32, (&e, &mut out)).unwrap();
        assert_eq!(out.to_vec().unwrap(), [6; 10], "{at}");
    }
}
