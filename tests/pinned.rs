//! Page-locked host arrays (`Device::pinned`) on every backend: copies to and from the device,
//! ndarray views, writes that wait for the copy reading the array, and wrong shapes refused.

use kernel_runtime::ndarray::array;
use kernel_runtime::{DeviceKind, Error};
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
