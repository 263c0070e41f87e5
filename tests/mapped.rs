//! Mapped (zero-copy) and managed arrays (`Device::mapped`, `Device::managed`, Numba's
//! `cuda.mapped_array` and `cuda.managed_array`) on every backend: kernels write and read them
//! in place, the host views them in place after the kernels that use them, and a GPU's array in
//! device memory is not viewed in place.

use kernel_runtime::ndarray::array;
use kernel_runtime::{DeviceKind, Error, LaunchConfig};
use kernel_suite::test_kernels::times_three_plus;

mod common;
use common::backends;

#[test]
fn kernels_and_the_host_share_a_mapped_array_in_place() {
    for dev in backends() {
        let mut x = dev.mapped::<u32, _>(1000).unwrap();
        assert!(x.is_host_visible());
        assert!(x.host_view().unwrap().iter().all(|&v| v == 0), "zeroed");
        x.host_view_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = i as u32);
        times_three_plus.forall(1000, (&mut x, 1)).unwrap();
        // The view waits for the kernel that wrote the array.
        let want: Vec<u32> = (0..1000).map(|i| i * 3 + 1).collect();
        assert_eq!(x.host_view().unwrap().to_vec(), want, "{:?}", dev.kind());
        // Copies see it as any array.
        assert_eq!(x.to_vec().unwrap(), want);
        let s = dev.stream().unwrap();
        let cfg = LaunchConfig::cover(1000, 128).unwrap().on_stream(&s);
        times_three_plus.launch_with(cfg, (&mut x, 0)).unwrap();
        assert_eq!(
            x.host_view().unwrap()[1],
            12,
            "{:?}: after the stream's kernel",
            dev.kind()
        );
    }
}

#[test]
fn kernels_and_the_host_share_a_managed_array_in_place() {
    for dev in backends() {
        let mut x = match dev.managed::<u32, _>((10, 100)) {
            Ok(x) => x.ravel(),
            // A GPU that cannot share managed memory while kernels run says so.
            Err(e @ Error::Cuda { .. }) => {
                assert!(e.to_string().contains("Device::mapped"), "{e}");
                continue;
            }
            Err(e) => panic!("{:?}: {e}", dev.kind()),
        };
        assert!(x.is_host_visible());
        x.host_view_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = i as u32);
        times_three_plus.forall(1000, (&mut x, 2)).unwrap();
        let want: Vec<u32> = (0..1000).map(|i| i * 3 + 2).collect();
        assert_eq!(x.host_view().unwrap().to_vec(), want, "{:?}", dev.kind());
        assert_eq!(x.to_vec().unwrap(), want);
        let empty = dev.managed::<f32, _>(0).unwrap();
        assert_eq!(empty.host_view().unwrap().len(), 0);
    }
}

#[test]
fn mapped_arrays_have_any_shape() {
    for dev in backends() {
        let mut m = dev.mapped::<f64, _>((2, 3)).unwrap();
        m.host_view_mut()
            .unwrap()
            .assign(&array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(
            m.to_host().unwrap(),
            array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        );
        let empty = dev.mapped::<f32, _>(0).unwrap();
        assert_eq!(empty.host_view().unwrap().len(), 0);
    }
}

#[test]
fn only_arrays_in_host_memory_are_viewed_in_place() {
    for dev in backends() {
        let d = dev.zeros::<f32, _>(4).unwrap();
        match dev.kind() {
            DeviceKind::Cuda(_) => {
                assert!(!d.is_host_visible());
                let err = d.host_view().unwrap_err();
                assert!(matches!(err, Error::NotHostVisible { .. }), "{err}");
            }
            _ => assert_eq!(d.host_view().unwrap().to_vec(), [0.0; 4]),
        }
    }
}

#[test]
fn a_mapped_array_larger_than_memory_can_address_is_refused() {
    for dev in backends() {
        let err = dev
            .mapped::<f64, _>((1usize << 40, 1usize << 30))
            .unwrap_err();
        assert!(
            matches!(err, Error::TooLarge { .. }),
            "{:?}: {err}",
            dev.kind()
        );
    }
}
