//! Choosing a device: the CUDA backend where a driver and a GPU are, the CPU backend otherwise,
//! and a typed error, never a panic, for a GPU that cannot be used; every GPU the driver sees,
//! and arrays copied between any two devices.

use gpu_kernels::add;
use kernel_runtime::ndarray::array;
use kernel_runtime::{Device, DeviceKind, Error, Kernel, LaunchConfig};
use std::future::Future;
use std::pin::pin;
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};

/// The CPU backend, and GPU 0 where it opens.
fn usable_devices() -> Vec<Device> {
    let mut devices = vec![Device::cpu()];
    devices.extend(Device::cuda(0).ok());
    devices
}

#[test]
fn a_gpu_that_cannot_be_used_is_a_typed_error() {
    // No machine has GPU 4096: with a driver it is not found, without one the driver is missing.
    match Device::cuda(4096) {
        Err(Error::CudaUnavailable {
            ordinal: 4096,
            reason,
        }) => {
            if !Device::cuda_driver_present() {
                assert!(reason.contains("libcuda"), "{reason}");
            }
        }
        other => panic!("expected CudaUnavailable, got {other:?}"),
    }
}

#[test]
fn the_default_device_is_a_gpu_only_where_one_is_usable() {
    let default = Device::default();
    match Device::cuda(0) {
        Ok(gpu) if std::env::var("KERNEL_DEVICE").is_err() => assert_eq!(default, gpu),
        Ok(_) => {}
        Err(_) => {
            if std::env::var("KERNEL_DEVICE").is_err() {
                assert_eq!(default.kind(), DeviceKind::Cpu);
            }
        }
    }
}

#[test]
fn arrays_round_trip_and_kernels_run_on_every_usable_device() {
    for dev in usable_devices() {
        let n = 1000;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let da = dev.to_device(&a).unwrap();
        let copy = da.try_clone().unwrap();
        // Uncleared: the kernel writes every element.
        let mut dc = dev.empty::<f32, _>(n).unwrap();
        let start = dev.event().unwrap();
        add.launch_with(LaunchConfig::cover(n, 128).unwrap(), (&da, &copy, &mut dc))
            .unwrap();
        let end = dev.event().unwrap();
        dev.synchronize().unwrap();
        assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
        let want: Vec<f32> = a.iter().map(|v| v * 2.0).collect();
        assert_eq!(dc.to_vec().unwrap(), want, "{}", dev.name());
        let none = dev.zeros::<u8, _>(0).unwrap();
        assert!(none.to_vec().unwrap().is_empty());
        let none = dev.empty::<u8, _>((0, 3)).unwrap();
        assert!(none.to_vec().unwrap().is_empty());
    }
}

/// A point without padding: any bytes make one.
#[derive(Clone, Copy, Debug, PartialEq, kernel_runtime::DeviceCopy)]
#[repr(C)]
struct Point {
    x: f32,
    y: f32,
}

#[test]
fn arrays_of_padding_free_structs_reinterpret_as_their_fields() {
    for dev in usable_devices() {
        let points = [Point { x: 1.0, y: 2.0 }, Point { x: 3.0, y: 4.0 }];
        let coords = dev
            .to_device(&points[..])
            .unwrap()
            .reinterpret::<f32>()
            .unwrap();
        assert_eq!(
            coords.to_vec().unwrap(),
            [1.0, 2.0, 3.0, 4.0],
            "{}",
            dev.name()
        );
        let back = coords.reinterpret::<Point>().unwrap();
        assert_eq!(back.to_vec().unwrap(), points, "{}", dev.name());
    }
}

#[test]
fn arrays_of_another_device_are_refused() {
    let Ok(gpu) = Device::cuda(0) else {
        eprintln!("skipping: no usable GPU");
        return;
    };
    let a = Device::cpu().to_device(&[1.0f32; 4][..]).unwrap();
    let b = gpu.to_device(&[1.0f32; 4][..]).unwrap();
    let mut c = gpu.zeros::<f32, _>(4).unwrap();
    assert!(matches!(
        add.launch(1, 4, (&a, &b, &mut c)),
        Err(Error::DeviceMismatch { argument: "b", .. })
    ));
}

#[test]
fn launches_on_streams_see_earlier_copies_and_are_seen_by_later_ones() {
    for dev in usable_devices() {
        let n = 100_000;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (s1, s2) = (dev.stream().unwrap(), dev.stream().unwrap());
        let da = dev.to_device(&a).unwrap();
        let (mut b, mut c) = (
            dev.zeros::<f32, _>(n).unwrap(),
            dev.zeros::<f32, _>(n).unwrap(),
        );
        let cfg = LaunchConfig::cover(n, 256).unwrap();
        add.launch_with(cfg.clone().on_stream(&s1), (&da, &da, &mut b))
            .unwrap();
        add.launch_with(cfg.clone().on_stream(&s2), (&da, &da, &mut c))
            .unwrap();
        // The device's own launch waits for both streams' kernels.
        let mut d = dev.zeros::<f32, _>(n).unwrap();
        add.launch_with(cfg, (&b, &c, &mut d)).unwrap();
        s1.synchronize().unwrap();
        let want: Vec<f32> = a.iter().map(|v| v * 4.0).collect();
        assert_eq!(d.to_vec().unwrap(), want, "{}", dev.name());
        drop((b, c));
        s2.synchronize().unwrap();
    }
}

#[test]
fn kernels_on_another_librarys_stream_run_between_its_own_work() {
    use cudarc::driver::result::{memcpy_dtoh_async, stream};
    for dev in usable_devices() {
        let n = 1 << 20;
        let x = dev.to_device(&vec![1.5f32; n]).unwrap();
        if !matches!(dev.kind(), DeviceKind::Cuda(_)) {
            // SAFETY: refused before the handle is used.
            let err = unsafe { dev.external_stream(std::ptr::null_mut()) }.unwrap_err();
            assert!(matches!(err, Error::ForeignStream { .. }), "{err}");
            continue;
        }
        // The other library: the driver's own calls, on the context the runtime made current.
        let theirs = stream::create(stream::StreamKind::NonBlocking).unwrap();
        // SAFETY: the stream is destroyed after `s`, its only user.
        let s = unsafe { dev.external_stream(theirs.cast()) }.unwrap();
        let mut y = dev.zeros::<f32, _>(n).unwrap();
        s.wait(&dev.event().unwrap()).unwrap();
        add.launch_with(
            LaunchConfig::cover(n, 256).unwrap().on_stream(&s),
            (&x, &x, &mut y),
        )
        .unwrap();
        let mut back = vec![0.0f32; n];
        // SAFETY: `y` holds `n` f32s; `back` is waited for by `s.synchronize()` below.
        unsafe { memcpy_dtoh_async(&mut back, y.as_device_ptr().unwrap(), theirs) }.unwrap();
        s.synchronize().unwrap();
        assert!(back.iter().all(|&v| v == 3.0), "{}", dev.name());
        drop(s);
        // SAFETY: nothing uses the stream now.
        unsafe { stream::destroy(theirs) }.unwrap();
    }
}

/// Runs `f` to completion on this thread, which sleeps while it is pending: the least executor.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut f = pin!(f);
    loop {
        match f.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

#[test]
fn callbacks_and_futures_follow_a_streams_work() {
    for dev in usable_devices() {
        let n = 100_000;
        let s = dev.stream().unwrap();
        let a = dev.to_device(&vec![1.0f32; n]).unwrap();
        let mut c = dev.zeros::<f32, _>(n).unwrap();
        let cfg = LaunchConfig::cover(n, 256).unwrap().on_stream(&s);
        add.launch_with(cfg.clone(), (&a, &a, &mut c)).unwrap();
        // A callback runs off the caller's thread once the kernel is done, and may use the
        // device; the stream's `synchronize` waits for it.
        let (tx, rx) = mpsc::channel();
        let caller = std::thread::current().id();
        s.add_callback(move |status| {
            let read = status.and_then(|()| c.to_vec());
            tx.send((read, std::thread::current().id())).unwrap();
        })
        .unwrap();
        s.synchronize().unwrap();
        let (read, thread) = rx.try_recv().expect("synchronize waited for the callback");
        assert_eq!(read.unwrap(), vec![2.0; n], "{}", dev.name());
        assert_ne!(thread, caller);
        // A future of the stream's work, awaited by an executor that sleeps; a task holding it
        // may move between threads, as multithreaded executors move tasks.
        fn movable<T: Send + Sync + 'static>(_: &T) {}
        let mut d = dev.zeros::<f32, _>(n).unwrap();
        add.launch_with(cfg, (&a, &a, &mut d)).unwrap();
        let done = s.done().unwrap();
        movable(&done);
        block_on(done).unwrap();
        assert_eq!(d.to_vec().unwrap()[n - 1], 2.0);
        // The whole device's, over its own stream and the user's.
        let mut e = dev.zeros::<f32, _>(n).unwrap();
        add.launch_with(cfg_for(&s, n), (&a, &d, &mut e)).unwrap();
        block_on(dev.done().unwrap()).unwrap();
        assert_eq!(e.to_vec().unwrap()[0], 3.0);
        // A callback that panics is reported once, by the stream's next `synchronize`.
        s.add_callback(|_| panic!("the callback's own panic"))
            .unwrap();
        let (tx, rx) = mpsc::channel();
        s.add_callback(move |_| tx.send(()).unwrap()).unwrap();
        let err = s.synchronize().unwrap_err();
        assert!(
            matches!(&err, Error::CallbackPanicked { message } if message == "the callback's own panic"),
            "{err}"
        );
        rx.try_recv().expect("later callbacks still run");
        s.synchronize().unwrap();
        // Callbacks of one stream run in the order they were added, between its launches.
        let (tx, rx) = mpsc::channel();
        for k in 0..200 {
            let tx = tx.clone();
            s.add_callback(move |_| tx.send(k).unwrap()).unwrap();
            if k % 50 == 0 {
                add.launch_with(cfg_for(&s, n), (&a, &a, &mut d)).unwrap();
            }
        }
        s.synchronize().unwrap();
        assert_eq!(
            rx.try_iter().collect::<Vec<_>>(),
            (0..200).collect::<Vec<_>>()
        );
    }
}

/// A launch configuration covering `n` elements on stream `s`.
fn cfg_for(s: &kernel_runtime::Stream, n: usize) -> LaunchConfig {
    LaunchConfig::cover(n, 256).unwrap().on_stream(s)
}

#[test]
fn the_program_lists_its_ptx_exactly_when_its_kernels_have_some() {
    // The kernels of gpu-kernels and of this crate register their modules; with no PTX built,
    // the list is empty and `Device::default()` stays on the CPU.
    let listed = !kernel_runtime::__rt::PTX_MODULES.is_empty();
    assert_eq!(listed, add.ptx().is_some());
    if let Some(ptx) = add.ptx() {
        assert!(kernel_runtime::__rt::PTX_MODULES.contains(&ptx));
    }
}

#[test]
fn arrays_copy_between_any_two_devices() {
    let mut devices = usable_devices();
    devices.push(Device::cpu_checked());
    let want = array![[1u16, 2, 3], [4, 5, 6]];
    for from in &devices {
        let x = from.to_device(&want).unwrap();
        for to in &devices {
            let y = x.to_device(to).unwrap();
            assert_eq!(y.device(), to);
            assert_eq!(y.to_host().unwrap(), want, "{from} to {to}");
            let mut z = to.zeros::<u16, _>((2, 3)).unwrap();
            z.copy_from_device(&x).unwrap();
            assert_eq!(z.to_host().unwrap(), want, "{from} into {to}");
        }
    }
    // A shape that differs is refused, whatever the devices.
    let mut other = Device::cpu_checked().zeros::<u16, _>((3, 2)).unwrap();
    let err = other
        .copy_from_device(&Device::cpu().to_device(&want).unwrap())
        .unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
}

#[test]
fn the_gpus_the_driver_sees_open_as_devices() {
    let Ok(gpus) = Device::gpus() else {
        return;
    };
    assert_eq!(gpus.len(), Device::gpu_count());
    for (i, gpu) in gpus.iter().enumerate() {
        assert_eq!(gpu.kind(), DeviceKind::Cuda(i));
    }
}

#[test]
fn every_usable_device_says_what_it_has() {
    for dev in usable_devices() {
        let props = dev.properties().unwrap();
        let what = dev.name();
        assert!(
            props.multiprocessors >= 1 && props.warp_size == 32,
            "{what}"
        );
        assert!(props.max_threads_per_block >= 1024, "{what}");
        assert!(props.shared_bytes_per_block_optin >= props.shared_bytes_per_block);
        assert!(
            props.total_memory > 0 && props.const_bytes >= 64 * 1024,
            "{what}"
        );
        let gpu = props.gpu.as_ref();
        assert_eq!(gpu.map(|g| g.compute_capability), dev.compute_capability());
        if let Some(g) = gpu {
            // `GPU-` and 32 hexadecimal digits in five groups.
            assert_eq!((g.uuid.len(), &g.uuid[..4]), (40, "GPU-"), "{what}");
            assert!(g.registers_per_multiprocessor >= 65536 / 2, "{what}");
            assert!(g.peak_memory_bandwidth() > 1e11, "{what}: {g:?}");
        }
        println!("{what}: {props:?}");
    }
}
