//! Page-locked host arrays (`Device::pinned`) on every backend: copies to and from the device,
//! on its stream and on streams of the user's, ndarray views, writes that wait for the copy
//! reading the array, add-list in chunks through streams, and wrong shapes and ranges refused.

use gpu_kernels::{add_chunked, add_streamed};
use kernel_runtime::ndarray::{array, Ix1};
use kernel_runtime::{DeviceKind, Error, LaunchConfig, PinnedArray, Stream};
use kernel_suite::test_kernels::times_three_plus;

mod common;
use common::backends;

#[test]
fn values_go_to_the_device_and_back_through_pinned_arrays() {
    for dev in backends() {
        let mut host = dev.pinned::<u32, _>(10_000).unwrap();
        assert!(host.iter().all(|&x| x == 0), "{:?}: zeroed", dev.kind());
        host.iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let mut d = dev.zeros::<u32, _>(10_000).unwrap();
        d.copy_from_pinned(&host).unwrap();
        // The write waits for the copy that reads the array: the device gets the old values.
        host[0] = 77;
        times_three_plus.forall(10_000, (&mut d, 1)).unwrap();
        let mut back = dev.pinned::<u32, _>(10_000).unwrap();
        back.copy_from_device(&d).unwrap();
        let want: Vec<u32> = (0..10_000).map(|i| i * 3 + 1).collect();
        assert_eq!(&back[..], &want[..], "{:?}", dev.kind());
        assert_eq!(host[0], 77);
        assert_eq!(
            back.is_page_locked(),
            matches!(dev.kind(), DeviceKind::Cuda(_))
        );
    }
}

#[test]
fn pinned_arrays_are_ndarray_views_of_their_shape() {
    for dev in backends() {
        let mut host = dev.pinned::<f64, _>((2, 3)).unwrap();
        host.view_mut()
            .assign(&array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let mut d = dev.zeros::<f64, _>((2, 3)).unwrap();
        d.copy_from_pinned(&host).unwrap();
        assert_eq!(d.to_host().unwrap(), host.view(), "{:?}", dev.kind());
        assert_eq!(host.shape(), [2, 3]);
    }
}

#[test]
fn a_copy_between_arrays_of_other_shapes_is_refused() {
    for dev in backends() {
        let host = dev.pinned::<f32, _>(8).unwrap();
        let mut d = dev.zeros::<f32, _>(9).unwrap();
        let err = d.copy_from_pinned(&host).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    }
}

#[test]
fn add_list_in_chunks_through_streams_matches_the_plain_sum() {
    for dev in backends() {
        // 10 000 is no multiple of the chunk: the last chunk is shorter.
        let n = 10_000;
        let (mut a, mut b) = (
            dev.pinned::<f32, _>(n).unwrap(),
            dev.pinned::<f32, _>(n).unwrap(),
        );
        a.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
        b.iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = (n - i) as f32 * 0.5);
        let want: Vec<f32> = a.iter().zip(b.iter()).map(|(x, y)| x + y).collect();
        let mut c = dev.pinned::<f32, _>(n).unwrap();
        let three = [
            dev.stream().unwrap(),
            dev.stream().unwrap(),
            dev.stream().unwrap(),
        ];
        // Each stream's own device buffers, and one device array per operand.
        type Chunked<const S: usize> = fn(
            &PinnedArray<f32, Ix1>,
            &PinnedArray<f32, Ix1>,
            &mut PinnedArray<f32, Ix1>,
            usize,
            &[Stream; S],
        ) -> Result<(), Error>;
        let ways: [(&str, Chunked<3>, Chunked<2>); 2] = [
            ("add_chunked", add_chunked::<3>, add_chunked::<2>),
            ("add_streamed", add_streamed::<3>, add_streamed::<2>),
        ];
        for (name, on_three, on_two) in ways {
            c.fill(0.0);
            on_three(&a, &b, &mut c, 1024, &three).unwrap();
            assert_eq!(&c[..], &want[..], "{:?}: {name}, three streams", dev.kind());
            // Two streams, and a chunk larger than the arrays.
            let two = [dev.stream().unwrap(), dev.stream().unwrap()];
            for chunk in [333, n + 1] {
                c.fill(0.0);
                on_two(&a, &b, &mut c, chunk, &two).unwrap();
                assert_eq!(
                    &c[..],
                    &want[..],
                    "{:?}: {name}, chunks of {chunk}",
                    dev.kind()
                );
            }
        }
    }
}

#[test]
fn copies_on_a_stream_take_ranges_of_pinned_arrays() {
    for dev in backends() {
        let s = dev.stream().unwrap();
        let mut host = dev.pinned::<u32, _>(8).unwrap();
        host.copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut d = dev.zeros::<u32, _>(3).unwrap();
        s.upload(host.slice(5..).unwrap(), &mut d).unwrap();
        // The device array's first elements take the range; the rest stay.
        s.upload(host.slice(..=1).unwrap(), &mut d).unwrap();
        times_three_plus
            .launch_with(
                LaunchConfig::cover(3, 32).unwrap().on_stream(&s),
                (&mut d, 1),
            )
            .unwrap();
        let mut back = dev.pinned::<u32, _>((2, 4)).unwrap();
        s.download(&d, back.slice_mut(1..4).unwrap()).unwrap();
        // Writing the source waits for the copies that read it.
        host.fill(0);
        assert_eq!(&back[..], [0, 4, 7, 25, 0, 0, 0, 0], "{:?}", dev.kind());
        assert_eq!(d.to_vec().unwrap(), [4, 7, 25]);
        // Into and out of parts of a device array: `d[1:3].copy_to_device(h[6:], stream=s)`.
        host.copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        s.upload(host.slice(6..).unwrap(), d.slice_mut(1..).unwrap())
            .unwrap();
        s.download(d.slice(2..).unwrap(), back.slice_mut(..1).unwrap())
            .unwrap();
        s.synchronize().unwrap();
        assert_eq!(d.to_vec().unwrap(), [4, 7, 8], "{:?}", dev.kind());
        assert_eq!(back[0], 8);
    }
}

#[test]
fn copies_on_a_stream_out_of_range_are_refused() {
    for dev in backends() {
        let s = dev.stream().unwrap();
        let (host, mut out) = (
            dev.pinned::<f32, _>(8).unwrap(),
            dev.pinned::<f32, _>(8).unwrap(),
        );
        let mut d = dev.zeros::<f32, _>(4).unwrap();
        let err = host.slice(6..9).err().expect("past the end");
        assert!(
            matches!(
                err,
                Error::OutOfRange {
                    start: 6,
                    end: 9,
                    len: 8
                }
            ),
            "{err}"
        );
        let err = s.upload(host.slice(..).unwrap(), &mut d).unwrap_err();
        assert!(
            matches!(err, Error::OutOfRange { end: 8, len: 4, .. }),
            "{err}"
        );
        let err = s.download(&d, out.slice_mut(..5).unwrap()).unwrap_err();
        assert!(matches!(err, Error::OutOfRange { .. }), "{err}");
        assert!(host.slice(3..3).unwrap().is_empty());
    }
}

#[test]
fn copies_on_a_stream_of_another_device_are_refused() {
    let all = backends();
    for (i, dev) in all.iter().enumerate() {
        let other = &all[(i + 1) % all.len()];
        let s = other.stream().unwrap();
        let mut host = dev.pinned::<u16, _>(4).unwrap();
        host.copy_from_slice(&[1, 2, 3, 4]);
        let mut d = dev.zeros::<u16, _>(4).unwrap();
        let refused = |r: Result<(), Error>| match r {
            Err(Error::DeviceMismatch { argument, .. }) => argument == "the stream",
            _ => false,
        };
        assert!(refused(s.upload(host.slice(..).unwrap(), &mut d)));
        assert!(refused(s.download(&d, host.slice_mut(..).unwrap())));
        // Nothing was copied either way.
        assert_eq!(d.to_vec().unwrap(), [0; 4]);
        assert_eq!(&host[..], [1, 2, 3, 4]);
    }
}

#[test]
fn a_pinned_array_larger_than_memory_can_address_is_refused() {
    for dev in backends() {
        let err = dev
            .pinned::<f64, _>((1usize << 40, 1usize << 30))
            .unwrap_err();
        assert!(
            matches!(err, Error::TooLarge { .. }),
            "{:?}: {err}",
            dev.kind()
        );
    }
}

#[test]
fn the_hosts_own_arrays_are_page_locked_in_place_and_given_back() {
    use kernel_runtime::ndarray::{s, Array1, Array2, ShapeBuilder};
    for dev in backends() {
        let at = format!("{:?}", dev.kind());
        let s = dev.stream().unwrap();
        // A `Vec`, page-locked where it is: the copy on the stream reads its own memory.
        let v: Vec<u32> = (0..10_000).collect();
        let first = v.as_ptr();
        let host = dev.pin(v).unwrap();
        let mut d = dev.zeros::<u32, _>(10_000).unwrap();
        s.upload(host.slice(..).unwrap(), &mut d).unwrap();
        times_three_plus
            .launch_with(
                LaunchConfig::cover(10_000, 256).unwrap().on_stream(&s),
                (&mut d, 1),
            )
            .unwrap();
        let mut back = dev.pin(vec![0u32; 10_000]).unwrap();
        s.download(&d, back.slice_mut(..).unwrap()).unwrap();
        let v = host.into_array().unwrap().into_raw_vec_and_offset().0;
        assert_eq!(v.as_ptr(), first, "{at}: the same memory, no copy");
        let back = back.into_array().unwrap();
        assert_eq!(back[9_999], 3 * 9_999 + 1, "{at}");
        // An array in Fortran order is laid out in C order; a part of a larger one is its own.
        let f = Array2::from_shape_vec((3, 4).f(), (0..12).collect::<Vec<u32>>()).unwrap();
        let pinned = dev.pin(f.clone()).unwrap();
        assert_eq!(pinned.view(), f.view(), "{at}");
        assert_eq!(&pinned[..4], &[0, 3, 6, 9]);
        let tail = Array1::from_iter(0..100u32).slice_move(s![90..]);
        let pinned = dev.pin(tail).unwrap();
        assert_eq!(&pinned[..], &(90..100).collect::<Vec<u32>>()[..], "{at}");
        assert_eq!(pinned.into_array().unwrap().len(), 10);
        // Nothing to lock.
        assert!(dev
            .pin(Vec::<f64>::new())
            .unwrap()
            .into_array()
            .unwrap()
            .is_empty());
    }
}
