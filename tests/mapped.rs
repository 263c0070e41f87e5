//! Mapped (zero-copy) and managed arrays (`Device::mapped`, `Device::managed`, Numba's
//! `cuda.mapped_array` and `cuda.managed_array`) and the host's own arrays mapped in place
//! (`Device::map`, Numba's `cuda.mapped(a)`) on every backend: kernels write and read them in
//! place, the host views them in place after the kernels that use them, and a GPU's array in
//! device memory is not viewed in place.

use kernel_runtime::ndarray::{array, Array2};
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

#[test]
fn the_hosts_own_array_is_mapped_in_place_and_given_back() {
    for dev in backends() {
        let v: Vec<u32> = (0..1000).collect();
        let at = v.as_ptr();
        let mut x = dev.map(v).unwrap();
        assert!(x.is_host_visible());
        assert_eq!(x.host_view().unwrap()[999], 999);
        times_three_plus.forall(1000, (&mut x, 1)).unwrap();
        let back = x.into_host().unwrap();
        let want: Vec<u32> = (0..1000).map(|i| i * 3 + 1).collect();
        assert_eq!(back.to_vec(), want, "{:?}", dev.kind());
        // The same memory: no copy was made either way.
        assert_eq!(back.as_ptr(), at, "{:?}", dev.kind());
        // An array not in C order is mapped in C order; no elements, no mapping.
        let t = Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as f32).reversed_axes();
        let m = dev.map(t.clone()).unwrap();
        assert_eq!(m.to_host().unwrap(), t);
        assert_eq!(m.into_host().unwrap(), t);
        let none = dev.map(Vec::<f64>::new()).unwrap();
        assert_eq!(none.into_host().unwrap().len(), 0);
        // Reinterpreted, as another element type: given back all the same.
        let bytes = dev
            .map(vec![0x0403_0201u32; 4])
            .unwrap()
            .reinterpret::<u8>();
        let bytes = bytes.unwrap().into_host().unwrap();
        assert_eq!(bytes.as_slice().unwrap()[..4], [1, 2, 3, 4]);
        // Any array comes back to the host, copied from a GPU's memory.
        let d = dev.to_device(&[1.0f32, 2.0]).unwrap();
        assert_eq!(d.into_host().unwrap().to_vec(), [1.0, 2.0]);
    }
}
