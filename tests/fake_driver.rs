//! The CUDA backend's host side, run against the fake CUDA driver of the `fake-cuda` crate:
//! opening a GPU, device memory, copies, launches with every kind of parameter, streams, events,
//! threads, and each way the driver fails. The fake checks every call as the driver does and
//! logs launches with their parameter values; it runs no kernel, so these tests check what
//! reaches the driver, and the GPU tests check what kernels compute.
//!
//! Each test runs itself again in a child process whose `LD_LIBRARY_PATH` leads to the fake
//! `libcuda.so`, with the fake's settings in its environment.

#![cfg(target_os = "linux")]

mod common;
#[path = "fake_driver/happens_before.rs"]
mod happens_before;

use foreign_kernels::{add_foreign, saxpy_foreign};
use gpu_kernels::{
    add, add_chunked, laplace3d, matmul_tensor, matmul_tensor_64x64, matmul_tensor_staged,
    matmul_tensor_tf32, matmul_tiled, quicksort, smooth, smooth_stencil, smooth_words,
    words_blocks, TC_STAGED_SHARED_BYTES, TC_THREADS, TC_THREADS_64X64, WORD_THREADS,
};
use happens_before::Trace;
use kernel_runtime::ndarray::{array, s, Array2, Array3};
use kernel_runtime::{
    Device, DeviceArray, DeviceArray1, DeviceKind, Error, Kernel, LaunchConfig, LaunchError,
};
use kernel_suite::complex_kernels::mandelbrot;
use kernel_suite::gufuncs::{dot, shift};
use kernel_suite::test_kernels::{
    axpy_generic, axpy_raw, bounded_block_sizes, capped_registers, convolve_taps, declared_shared,
    grid_rotate, haxpy, mixed_stencil, off_by_one, reverse_dynamic, reverse_in_blocks,
    saxpy_params, scale3, shared_window_sums, sum_f64, times_three_plus, total_into_scalar, Affine,
    DECLARED_SHARED, LOOKUP, TAPS,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child process to the name of the test it runs.
const CHILD: &str = "FAKE_DRIVER_TEST";

/// Runs `body` in a child process that loads the fake driver, with `env` added to its
/// environment; in that child, `body` runs and gets the driver's log.
fn on_fake_driver(name: &str, env: &[(&str, &str)], body: impl FnOnce(&Log)) {
    on_fake_driver_with(name, env, None, body)
}

/// [`on_fake_driver`], whose check of the log knows the bytes each launch uses that
/// `launches` says.
fn on_fake_driver_with(
    name: &str,
    env: &[(&str, &str)],
    launches: Option<happens_before::Launches>,
    body: impl FnOnce(&Log),
) {
    if std::env::var(CHILD).as_deref() == Ok(name) {
        let log = Log(std::env::var_os("FAKE_CUDA_LOG")
            .expect("set by the parent")
            .into());
        body(&log);
        return;
    }
    let dir = fake_driver_dir();
    let log = dir.join(format!("{name}.log"));
    let _ = std::fs::remove_file(&log);
    let mut paths = vec![dir.clone()];
    paths.extend(
        std::env::var_os("LD_LIBRARY_PATH")
            .map_or_else(Vec::new, |p| std::env::split_paths(&p).collect()),
    );
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("LD_LIBRARY_PATH", std::env::join_paths(paths).unwrap())
        .env(CHILD, name)
        .env("FAKE_CUDA_LOG", &log)
        .env_remove("KERNEL_DEVICE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A host loop that trusts what kernels wrote could spin forever on the fake's memory.
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("`{name}` ran for 120 s on the fake driver: it waits on what no kernel wrote");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the test failed on the fake driver:\n{stdout}\n{stderr}"
    );
    // Whatever a test does, no two streams may use one array unordered.
    let trace = Trace::with_launches(&Log(log).lines(), launches);
    assert!(trace.races().is_empty(), "`{name}`: {:#?}", trace.races());
}

/// A directory whose `libcuda.so` is the fake driver, which cargo builds beside this test.
fn fake_driver_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libfake_cuda.so");
    assert!(
        lib.exists(),
        "{} is missing: build the fake-cuda crate",
        lib.display()
    );
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("libcuda.so");
    // Tests run in parallel: another may have made the link first.
    match std::os::unix::fs::symlink(&lib, &link) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            panic!("{}: {e}", link.display())
        }
        _ => {}
    }
    dir
}

/// The fake driver's log: a line per launch, allocation, free, copy and wait.
struct Log(PathBuf);

impl Log {
    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    /// The launches of `kernel`, each as its line after the kernel's name.
    fn launches(&self, kernel: &str) -> Vec<String> {
        let prefix = format!("launch {kernel} ");
        self.lines()
            .iter()
            .filter_map(|l| l.strip_prefix(&prefix).map(String::from))
            .collect()
    }

    fn count(&self, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }
}

/// GPU 0 of the fake driver.
fn fake_gpu() -> Device {
    let gpu = Device::cuda(0).expect("the fake driver's GPU opens");
    assert_eq!(gpu.name(), "CUDA device 0 (Fake CUDA GPU)");
    gpu
}

/// How a parameter value shows in the log.
/// A struct parameter of 64-bit `fields` as the driver's log shows it: its bytes in hex.
fn words(fields: &[u64]) -> String {
    fields
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The words of a generalized ufunc operand's steps of `step` elements a loop index.
fn steps(step: u64) -> Vec<u64> {
    vec![step, 0, 0, 0, 1, 1, 1, 0]
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// Whether a kernel has PTX to launch; where it has none, says so, and fails where
/// `KERNEL_REQUIRE_PTX=1` (as `cargo xtask test` sets).
fn has_ptx(ptx: Option<&str>) -> bool {
    if ptx.is_some() {
        return true;
    }
    assert!(
        !common::ptx_required(),
        "KERNEL_REQUIRE_PTX=1 but this build has no PTX"
    );
    eprintln!("this build has no PTX: nothing to launch");
    false
}

/// The arguments of an `off_by_one` launch, whose last thread reads one element past `x`.
fn off_by_one_args(gpu: &Device) -> (DeviceArray1<f32>, DeviceArray1<f32>) {
    (
        gpu.to_device(&vec![1.0f32; 100]).unwrap(),
        gpu.zeros::<f32, _>(1).unwrap(),
    )
}

#[test]
fn the_gpu_opens_with_the_limits_the_driver_reports() {
    on_fake_driver(
        "the_gpu_opens_with_the_limits_the_driver_reports",
        &[],
        |_| {
            let gpu = fake_gpu();
            assert_eq!(gpu.kind(), DeviceKind::Cuda(0));
            let limits = gpu.limits();
            assert_eq!(
                (limits.max_threads_per_block, limits.max_shared_bytes),
                (1024, 48 * 1024)
            );
            assert_eq!((limits.max_block.z, limits.max_grid.y), (64, 65535));
            match Device::cuda(1) {
                Err(Error::CudaUnavailable { ordinal: 1, reason }) => {
                    assert!(reason.contains("found 1 GPU"), "{reason}")
                }
                other => panic!("expected CudaUnavailable, got {other:?}"),
            }
            // The default device is the GPU where the program has PTX to run there.
            let default = Device::default();
            if add.ptx().is_some() {
                assert_eq!(default, gpu);
            } else {
                assert_eq!(default.kind(), DeviceKind::Cpu);
            }
        },
    );
}

#[test]
fn arrays_round_trip_through_device_memory_and_are_all_freed() {
    on_fake_driver(
        "arrays_round_trip_through_device_memory_and_are_all_freed",
        &[],
        |log| {
            {
                let gpu = fake_gpu();
                let v: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
                let d = gpu.to_device(&v).unwrap();
                assert_eq!(d.to_vec().unwrap(), v);
                // Part of an array: only its elements, from where they start.
                assert_eq!(d.to_vec_range(10..13).unwrap(), [5.0, 5.5, 6.0]);
                assert_eq!(d.to_vec_range(1000..1000).unwrap(), [0f32; 0]);
                assert!(matches!(
                    d.to_vec_range(999..1001),
                    Err(Error::OutOfRange {
                        start: 999,
                        end: 1001,
                        len: 1000
                    })
                ));
                // Arrays of every rank, from any layout, arrive in C order.
                let m = Array2::from_shape_fn((3, 5), |(i, j)| (10 * i + j) as i32);
                assert_eq!(gpu.to_device(&m).unwrap().to_host().unwrap(), m);
                let t = m.t();
                assert_eq!(gpu.to_device(&t).unwrap().to_host().unwrap(), t);
                let c = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as u16);
                assert_eq!(gpu.to_device(&c).unwrap().to_host().unwrap(), c);
                // Fresh device memory holds garbage: zeros must clear it.
                assert!(gpu
                    .zeros::<u32, _>(100)
                    .unwrap()
                    .to_vec()
                    .unwrap()
                    .iter()
                    .all(|&x| x == 0));
                let mut z = gpu.zeros::<i32, _>((3, 5)).unwrap();
                z.copy_from_host(&m).unwrap();
                let clone = z.try_clone().unwrap();
                drop(z);
                let mut plain = Array2::<i32>::zeros((3, 5));
                clone.copy_to_host(&mut plain).unwrap();
                assert_eq!(plain, m);
                let mut back = Array2::<i32>::zeros((5, 3)).reversed_axes();
                clone.copy_to_host(&mut back).unwrap();
                assert_eq!(back, m);
                let mut strided = Array2::<i32>::zeros((3, 10));
                clone
                    .copy_to_host(&mut strided.slice_mut(s![.., ..;2]))
                    .unwrap();
                assert_eq!(strided.slice(s![.., ..;2]), m);
                let mut other = gpu.empty::<i32, _>((3, 5)).unwrap();
                other.copy_from_device(&clone).unwrap();
                assert_eq!(other.to_host().unwrap(), m);
                assert!(matches!(
                    other.copy_from_host(&array![[1, 2], [3, 4]]),
                    Err(Error::ShapeMismatch { .. })
                ));
                // Seen as words, the same memory: nothing copied, nothing freed twice.
                let bytes = Array2::from_shape_fn((3, 8), |(i, j)| (8 * i + j) as i8);
                let d = gpu.to_device(&bytes).unwrap();
                let at = kernel_runtime::__rt::device_addr(&d);
                let words = d.reinterpret::<u32>().unwrap();
                assert_eq!(
                    (kernel_runtime::__rt::device_addr(&words), words.dim()),
                    (at, (3, 2))
                );
                assert_eq!(words.to_vec().unwrap()[1], u32::from_le_bytes([4, 5, 6, 7]));
                assert_eq!(words.reinterpret::<i8>().unwrap().to_host().unwrap(), bytes);
                // Empty arrays take no device memory.
                assert!(gpu
                    .to_device(&Vec::<u8>::new())
                    .unwrap()
                    .to_vec()
                    .unwrap()
                    .is_empty());
                assert!(gpu
                    .zeros::<f64, _>((0, 4))
                    .unwrap()
                    .to_host()
                    .unwrap()
                    .is_empty());
            }
            assert_eq!(log.count("alloc "), 9, "{:?}", log.lines());
            assert_eq!(log.count("alloc "), log.count("free "), "{:?}", log.lines());
        },
    );
}

#[test]
fn memory_another_library_allocated_works_as_an_array_and_stays_its_owners() {
    on_fake_driver(
        "memory_another_library_allocated_works_as_an_array_and_stays_its_owners",
        &[],
        |log| {
            let gpu = fake_gpu();
            // Another library's allocation, here an array's memory seen by address only.
            let owner = gpu
                .to_device(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0][..])
                .unwrap();
            let ptr = owner.as_device_ptr().expect("a GPU's array has an address");
            {
                // SAFETY: `ptr` holds six f32s of this GPU, alive while `owner` is.
                let mut wrapped =
                    unsafe { DeviceArray::<f32, _>::from_device_ptr(&gpu, ptr, (2, 3)) }.unwrap();
                assert_eq!(wrapped.as_device_ptr(), Some(ptr));
                assert_eq!(
                    wrapped.to_host().unwrap(),
                    array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
                );
                wrapped
                    .copy_from_host(&array![[6.0f32, 5.0, 4.0], [3.0, 2.0, 1.0]])
                    .unwrap();
                if has_ptx(add.ptx()) {
                    // SAFETY: as above.
                    let flat = unsafe { DeviceArray::<f32, _>::from_device_ptr(&gpu, ptr, 6) };
                    let flat = flat.unwrap();
                    let mut sum = gpu.zeros::<f32, _>(6).unwrap();
                    add.launch(1, 32, (&flat, &flat, &mut sum)).unwrap();
                    let launch = &log.launches("add")[0];
                    assert!(launch.contains(&hex(ptr)), "{launch}");
                }
            }
            // Dropping the wrappers freed nothing: the memory is still the owner's.
            assert_eq!(owner.to_vec().unwrap(), [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
            let frees = log.count("free ");
            drop(owner);
            assert_eq!(log.count("free "), frees + 1);
            // Refused: a misaligned or null address, and the CPU backend.
            // SAFETY: each is refused before anything reads the memory.
            unsafe {
                for (dev, at) in [(&gpu, ptr + 2), (&gpu, 0), (&Device::cpu(), ptr)] {
                    let err = DeviceArray::<f32, _>::from_device_ptr(dev, at, 6).unwrap_err();
                    assert!(matches!(err, Error::ForeignMemory { .. }), "{err}");
                }
            }
        },
    );
}

#[test]
fn launches_pass_each_parameter_as_the_ptx_entry_declares_it() {
    on_fake_driver(
        "launches_pass_each_parameter_as_the_ptx_entry_declares_it",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                assert!(matches!(
                    add.launch(
                        1,
                        1,
                        (
                            &gpu.zeros(1).unwrap(),
                            &gpu.zeros(1).unwrap(),
                            &mut gpu.zeros(1).unwrap()
                        )
                    ),
                    Err(Error::NoPtx { .. })
                ));
                return;
            }
            let n = 1000;
            let (a, b) = (
                gpu.zeros::<f32, _>(n).unwrap(),
                gpu.zeros::<f32, _>(n).unwrap(),
            );
            let mut c = gpu.empty::<f32, _>(n).unwrap();
            add.launch_with(LaunchConfig::cover(n, 128).unwrap(), (&a, &b, &mut c))
                .unwrap();
            let ptr = |d: u64| hex(d);
            let len = hex(n as u64);
            let want = [
                ptr(kernel_runtime::__rt::device_addr(&a)),
                len.clone(),
                ptr(kernel_runtime::__rt::device_addr(&b)),
                len.clone(),
                ptr(kernel_runtime::__rt::device_addr(&c)),
                len,
            ]
            .join(",");
            let launch = &log.launches("add")[0];
            assert!(
                launch.starts_with("grid=8,1,1 block=128,1,1 shared=0 "),
                "{launch}"
            );
            assert!(
                launch.ends_with(&format!("params={want}")),
                "{launch} vs {want}"
            );

            // A 2-D array passes its two extents; a by-value struct its bytes; a scalar its bits.
            let img = gpu.zeros::<i8, _>((40, 70)).unwrap();
            let mut out = gpu.zeros::<i8, _>((40, 70)).unwrap();
            smooth
                .launch(((70 + 15) / 16, (40 + 15) / 16), (16, 16), (&img, &mut out))
                .unwrap();
            let launch = &log.launches("smooth")[0];
            let dims = [hex(40), hex(70)].join(",");
            let want = format!(
                "params={},{dims},{},{dims}",
                hex(kernel_runtime::__rt::device_addr(&img)),
                hex(kernel_runtime::__rt::device_addr(&out))
            );
            assert!(launch.starts_with("grid=5,3,1 block=16,16,1 "), "{launch}");
            assert!(launch.ends_with(&want), "{launch} vs {want}");
            // Seen as words: the same memory, a quarter of the extent.
            let img = gpu
                .zeros::<i8, _>((40, 72))
                .unwrap()
                .reinterpret::<u32>()
                .unwrap();
            let mut out = gpu.zeros::<u32, _>((40, 18)).unwrap();
            smooth_words
                .launch(words_blocks(40, 18), (WORD_THREADS, 1), (&img, &mut out))
                .unwrap();
            let launch = &log.launches("smooth_words")[0];
            let dims = [hex(40), hex(18)].join(",");
            let want = format!(
                "params={},{dims},{},{dims}",
                hex(kernel_runtime::__rt::device_addr(&img)),
                hex(kernel_runtime::__rt::device_addr(&out))
            );
            assert!(launch.starts_with("grid=1,5,1 block=128,1,1 "), "{launch}");
            assert!(launch.ends_with(&want), "{launch} vs {want}");

            let p = Affine {
                a: 2.0,
                b: -1.0,
                on: true,
            };
            let x = gpu.zeros::<f32, _>(64).unwrap();
            let mut y = gpu.zeros::<f32, _>(64).unwrap();
            saxpy_params.launch(1, 64, (p, &x, &mut y)).unwrap();
            let launch = &log.launches("saxpy_params")[0];
            let params: Vec<&str> = launch.split("params=").nth(1).unwrap().split(',').collect();
            // 12 bytes: the two floats, the bool, and padding of no set value.
            let fields: String = [2.0f32, -1.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .map(|b| format!("{b:02x}"))
                .collect();
            assert!(
                params[0].len() == 24 && params[0].starts_with(&format!("{fields}01")),
                "{launch}"
            );
            assert_eq!(
                params[1],
                hex(kernel_runtime::__rt::device_addr(&x)),
                "{launch}"
            );

            let cube = gpu.zeros::<f32, _>((2, 3, 4)).unwrap();
            let mut scaled = gpu.zeros::<f32, _>((2, 3, 4)).unwrap();
            scale3
                .launch(1, (4, 3, 2), (&cube, 1.5, &mut scaled))
                .unwrap();
            let launch = &log.launches("scale3")[0];
            let dims = [hex(2), hex(3), hex(4)].join(",");
            let want = format!(
                "params={},{dims},{},{}",
                hex(kernel_runtime::__rt::device_addr(&cube)),
                hex(1.5f32.to_bits() as u64),
                hex(kernel_runtime::__rt::device_addr(&scaled))
            );
            assert!(launch.starts_with("grid=1,1,1 block=4,3,2 "), "{launch}");
            assert!(launch.contains(&want), "{launch} vs {want}");

            // A `Complex32` is one 64-bit parameter, its real part in the low half.
            let mut counts = gpu.zeros::<u32, _>((8, 16)).unwrap();
            let origin = kernel_runtime::cmath::Complex32::new(-2.0, 1.5);
            mandelbrot
                .launch(1, (16, 8), (origin, 0.25f32, 10u32, &mut counts))
                .unwrap();
            let launch = &log.launches("mandelbrot")[0];
            let params: Vec<&str> = launch.split("params=").nth(1).unwrap().split(',').collect();
            let parts = (1.5f32.to_bits() as u64) << 32 | (-2.0f32).to_bits() as u64;
            assert_eq!(params[0], hex(parts), "{launch}");
            assert_eq!(params[1], hex(0.25f32.to_bits() as u64), "{launch}");
            assert_eq!(params[2], hex(10), "{launch}");

            // Shared memory: the static arrays the macro laid out, plus the dynamic bytes asked for.
            let m = gpu.zeros::<f32, _>((32, 32)).unwrap();
            let mut prod = gpu.zeros::<f32, _>((32, 32)).unwrap();
            matmul_tiled
                .launch((2, 2), (16, 16), (&m, &m, &mut prod))
                .unwrap();
            let launch = &log.launches("matmul_tiled")[0];
            assert!(launch.contains(" shared=2048 "), "{launch}");
            let mut data = gpu.zeros::<f64, _>(256).unwrap();
            reverse_dynamic
                .launch_with(
                    LaunchConfig::new(2, 128).unwrap().shared_bytes(128 * 8),
                    &mut data,
                )
                .unwrap();
            let launch = &log.launches("reverse_dynamic")[0];
            assert!(launch.contains(" shared=1024 "), "{launch}");
            gpu.synchronize().unwrap();
        },
    );
}

#[test]
fn a_stencil_launches_tiles_over_its_array_with_the_three_axes() {
    on_fake_driver(
        "a_stencil_launches_tiles_over_its_array_with_the_three_axes",
        &[],
        |log| {
            let gpu = fake_gpu();
            let img = gpu.zeros::<i8, _>((1000, 3000)).unwrap();
            let mut out = gpu.zeros::<i8, _>((1000, 3000)).unwrap();
            let done = smooth_stencil.apply(&img, &mut out);
            if !has_ptx(smooth_stencil.ptx()) {
                assert!(matches!(done, Err(Error::NoPtx { .. })), "{done:?}");
                return;
            }
            done.unwrap();
            let launch = &log.launches("smooth_stencil")[0];
            // Tiles of 4 rows × 4 pixels: 750 columns of tiles in blocks of 128, 250 strips.
            assert!(
                launch.starts_with("grid=6,250,1 block=128,1,1 shared=0 "),
                "{launch}"
            );
            let want = format!(
                "params={},{},{},{},{}",
                hex(kernel_runtime::__rt::device_addr(&img)),
                hex(kernel_runtime::__rt::device_addr(&out)),
                hex(1),
                hex(1000),
                hex(3000)
            );
            assert!(launch.ends_with(&want), "{launch} vs {want}");
            // A new array is zeros first, then the launch.
            let fresh = smooth_stencil.run(&img).unwrap();
            assert_eq!(fresh.shape(), [1000, 3000]);
            assert_eq!(log.launches("smooth_stencil").len(), 2);
            // Views: their first elements' addresses, their rows.
            let want = format!(
                "params={},{},{},{},{}",
                hex(kernel_runtime::__rt::device_addr(&img) + 10 * 3000),
                hex(kernel_runtime::__rt::device_addr(&out) + 500 * 3000),
                hex(1),
                hex(100),
                hex(3000)
            );
            let (rows, into) = (
                img.slice(10..110).unwrap(),
                out.slice_mut(500..600).unwrap(),
            );
            smooth_stencil.apply(rows, into).unwrap();
            let launch = &log.launches("smooth_stencil")[2];
            assert!(launch.starts_with("grid=6,25,1 "), "{launch}");
            assert!(launch.ends_with(&want), "{launch} vs {want}");

            // Three axes: tiles of 4 planes × 4 rows × 1 column, 200 columns in blocks of 128,
            // 75 strips, 3 layers of planes.
            let u = gpu.zeros::<f32, _>((10, 300, 200)).unwrap();
            laplace3d.run(&u).unwrap();
            let launch = &log.launches("laplace3d")[0];
            assert!(
                launch.starts_with("grid=2,75,3 block=128,1,1 shared=0 "),
                "{launch}"
            );

            // Each kind of parameter in its place: an input named `out` is not the output.
            let a = gpu.zeros::<f32, _>((5, 7)).unwrap();
            let b = gpu.zeros::<f32, _>((5, 7)).unwrap();
            let w = gpu.zeros::<f32, _>(3).unwrap();
            let mut res = gpu.zeros::<f32, _>((5, 7)).unwrap();
            mixed_stencil.apply((&a, 0.5, &w, &b), &mut res).unwrap();
            let launch = &log.launches("mixed_stencil")[0];
            let addr = |x: u64| hex(x);
            let want = format!(
                "params={},{},{},{},{},{},{},{},{}",
                addr(kernel_runtime::__rt::device_addr(&a)),
                hex(0.5f32.to_bits() as u64),
                addr(kernel_runtime::__rt::device_addr(&w)),
                hex(3),
                addr(kernel_runtime::__rt::device_addr(&b)),
                addr(kernel_runtime::__rt::device_addr(&res)),
                hex(1),
                hex(5),
                hex(7)
            );
            assert!(launch.ends_with(&want), "{launch} vs {want}");
        },
    );
}

#[test]
fn a_generalized_ufunc_launches_a_thread_per_loop_index_with_each_core() {
    on_fake_driver(
        "a_generalized_ufunc_launches_a_thread_per_loop_index_with_each_core",
        &[],
        |log| {
            let gpu = fake_gpu();
            let x = gpu.zeros::<f64, _>((300, 6)).unwrap();
            let mut out = gpu.zeros::<f64, _>((300, 6)).unwrap();
            let done = shift.apply((&x, 2.5), &mut out);
            if !has_ptx(shift.ptx()) {
                assert!(matches!(done, Err(Error::NoPtx { .. })), "{done:?}");
                return;
            }
            done.unwrap();
            let launch = &log.launches("shift")[0];
            // 300 loop indices in blocks of 128.
            assert!(
                launch.starts_with("grid=3,1,1 block=128,1,1 shared=0 "),
                "{launch}"
            );
            let addr = |a: &DeviceArray<f64, _>| kernel_runtime::__rt::device_addr(a);
            // Each operand its pointer, then the rest as a struct (the driver shows its bytes):
            // `x`'s cores 6 apart, of 6; the scalar's pointer null, its value and steps; the
            // output's cores; then the loop indices.
            let want = format!(
                "params={},{},{},{},{},{},{}",
                hex(addr(&x)),
                words(&[steps(6), vec![6]].concat()),
                hex(0),
                words(&[vec![2.5f64.to_bits()], steps(0)].concat()),
                hex(addr(&out)),
                words(&[steps(6), vec![6]].concat()),
                hex(300)
            );
            assert!(launch.ends_with(&want), "{launch} vs {want}");
            // One `b` for every row of `a`: its step is 0; a new 1-D output.
            let a = gpu.zeros::<f32, _>((1000, 4)).unwrap();
            let b = gpu.zeros::<f32, _>(4).unwrap();
            let c = dot.call((&a, &b)).unwrap();
            assert_eq!(c.shape(), [1000]);
            let launch = &log.launches("dot")[0];
            assert!(launch.starts_with("grid=8,1,1 block=128,1,1 "), "{launch}");
            let want = format!(
                "params={},{},{},{},{},{},{}",
                hex(kernel_runtime::__rt::device_addr(&a)),
                words(&[steps(4), vec![4]].concat()),
                hex(kernel_runtime::__rt::device_addr(&b)),
                words(&[steps(0), vec![4]].concat()),
                hex(kernel_runtime::__rt::device_addr(&c)),
                // The steps alone.
                words(&steps(1)),
                hex(1000)
            );
            assert!(launch.ends_with(&want), "{launch} vs {want}");
            // Every row of `x` against every row of `y`: loops of 4 × 5, which `x` steps
            // through by rows and `y` by columns.
            let x = gpu.zeros::<f32, _>((4, 1, 3)).unwrap();
            let y = gpu.zeros::<f32, _>((1, 5, 3)).unwrap();
            assert_eq!(dot.call((&x, &y)).unwrap().shape(), [4, 5]);
            let launch = &log.launches("dot")[1];
            let by = |strides: [u64; 2]| words(&[strides[0], strides[1], 0, 0, 5, 1, 1, 1, 3]);
            let (sx, sy) = (by([3, 0]), by([0, 3]));
            assert!(launch.contains(&format!(",{sx},")), "{launch} vs {sx}");
            assert!(launch.contains(&format!(",{sy},")), "{launch} vs {sy}");
        },
    );
}

#[test]
fn a_tensor_core_matmul_launches_its_blocks_with_their_shared_tiles() {
    on_fake_driver(
        "a_tensor_core_matmul_launches_its_blocks_with_their_shared_tiles",
        &[],
        |log| {
            let gpu = fake_gpu();
            let a = gpu.zeros::<kernel_runtime::f16, _>((40, 24)).unwrap();
            let b = gpu.zeros::<kernel_runtime::f16, _>((24, 70)).unwrap();
            let mut c = gpu.zeros::<f32, _>((40, 70)).unwrap();
            let done = matmul_tensor.launch((3, 2), TC_THREADS, (&a, &b, &mut c));
            if !has_ptx(matmul_tensor.ptx()) {
                assert!(matches!(done, Err(Error::NoPtx { .. })), "{done:?}");
                return;
            }
            done.unwrap();
            let launch = &log.launches("matmul_tensor")[0];
            // Two buffers of a's 128 x 40 halves and of b's 32 x 136: 37888 bytes.
            assert!(
                launch.starts_with("grid=3,2,1 block=256,1,1 shared=37888 "),
                "{launch}"
            );
            let a_at = hex(kernel_runtime::__rt::device_addr(&a));
            assert!(launch.contains(&format!("params={a_at},")), "{launch}");
        },
    );
}

#[test]
fn a_matmul_in_warps_of_64_by_64_launches_blocks_of_four_warps() {
    on_fake_driver(
        "a_matmul_in_warps_of_64_by_64_launches_blocks_of_four_warps",
        &[],
        |log| {
            let gpu = fake_gpu();
            let a = gpu.zeros::<kernel_runtime::f16, _>((300, 24)).unwrap();
            let b = gpu.zeros::<kernel_runtime::f16, _>((24, 70)).unwrap();
            let mut c = gpu.zeros::<f32, _>((300, 70)).unwrap();
            let done = matmul_tensor_64x64.launch((1, 3), TC_THREADS_64X64, (&a, &b, &mut c));
            if !has_ptx(matmul_tensor_64x64.ptx()) {
                assert!(matches!(done, Err(Error::NoPtx { .. })), "{done:?}");
                return;
            }
            done.unwrap();
            let launch = &log.launches("matmul_tensor_64x64")[0];
            // The tiles of `matmul_tensor`, in blocks of 128 threads.
            assert!(
                launch.starts_with("grid=1,3,1 block=128,1,1 shared=37888 "),
                "{launch}"
            );
            // The staged one's four buffers, in dynamic shared memory it declares: a plain
            // launch gives them.
            matmul_tensor_staged
                .launch((1, 3), TC_THREADS_64X64, (&a, &b, &mut c))
                .unwrap();
            let launch = &log.launches("matmul_tensor_staged")[0];
            let want = format!("grid=1,3,1 block=128,1,1 shared={TC_STAGED_SHARED_BYTES} ");
            assert!(launch.starts_with(&want), "{launch}");
        },
    );
}

#[test]
fn a_tf32_matmul_launches_with_two_buffers_of_its_tiles() {
    on_fake_driver(
        "a_tf32_matmul_launches_with_two_buffers_of_its_tiles",
        &[],
        |log| {
            let gpu = fake_gpu();
            let a = gpu.zeros::<f32, _>((40, 24)).unwrap();
            let b = gpu.zeros::<f32, _>((24, 300)).unwrap();
            let mut c = gpu.zeros::<f32, _>((40, 300)).unwrap();
            let done = matmul_tensor_tf32.launch((3, 1), TC_THREADS, (&a, &b, &mut c));
            if !has_ptx(matmul_tensor_tf32.ptx()) {
                assert!(matches!(done, Err(Error::NoPtx { .. })), "{done:?}");
                return;
            }
            done.unwrap();
            let launch = &log.launches("matmul_tensor_tf32")[0];
            // Two buffers of a's 128 x 20 words and of b's 16 x 136: 37888 bytes.
            assert!(
                launch.starts_with("grid=3,1,1 block=256,1,1 shared=37888 "),
                "{launch}"
            );
        },
    );
}

#[test]
fn a_reduction_on_a_gpu_runs_its_pass_over_the_array_then_over_the_blocks() {
    on_fake_driver(
        "a_reduction_on_a_gpu_runs_its_pass_over_the_array_then_over_the_blocks",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(sum_f64.ptx()) {
                return;
            }
            // 300 000 elements: 1024 blocks of 256 threads, then one block over their values.
            let x = gpu.zeros::<f64, _>(300_000).unwrap();
            sum_f64.reduce(&x).unwrap();
            let launches = log.launches("sum_f64");
            assert_eq!(launches.len(), 2, "{launches:?}");
            assert!(
                launches[0].starts_with("grid=1024,1,1 block=256,1,1 "),
                "{launches:?}"
            );
            assert!(
                launches[1].starts_with("grid=1,1,1 block=256,1,1 "),
                "{launches:?}"
            );
            // 200 elements fit one block: one pass; an empty array launches nothing.
            let x = gpu.zeros::<f64, _>(200).unwrap();
            assert_eq!(
                sum_f64.fold(&gpu.zeros::<f64, _>(0).unwrap(), 2.0).unwrap(),
                2.0
            );
            sum_f64.reduce(&x).unwrap();
            let launches = log.launches("sum_f64");
            assert_eq!(
                launches.len(),
                3,
                "an array of one block's elements takes one pass"
            );
            assert!(
                launches[2].starts_with("grid=1,1,1 block=256,1,1 "),
                "{launches:?}"
            );
        },
    );
}

#[test]
fn declared_dynamic_shared_memory_reaches_the_occupancy_calculator_and_the_launch() {
    on_fake_driver(
        "declared_dynamic_shared_memory_reaches_the_occupancy_calculator_and_the_launch",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(declared_shared.ptx()) {
                return;
            }
            let mut out = gpu.zeros::<u32, _>(1).unwrap();
            declared_shared.forall(1, &mut out).unwrap();
            let asked = format!("occupancy declared_shared dynamic={DECLARED_SHARED} limit=0");
            assert_eq!(log.count(&asked), 1);
            let launch = &log.launches("declared_shared")[0];
            assert!(
                launch.contains(&format!("shared={DECLARED_SHARED} ")),
                "{launch}"
            );
            // What can be resident counts the declared bytes, asked for or not.
            declared_shared
                .max_cooperative_grid_blocks(&gpu, 32, 0)
                .unwrap();
            let asked =
                format!("occupancy-blocks declared_shared threads=32 dynamic={DECLARED_SHARED}");
            assert_eq!(log.count(&asked), 1);
        },
    );
}

#[test]
fn forall_takes_the_block_size_the_occupancy_calculator_gives() {
    on_fake_driver(
        "forall_takes_the_block_size_the_occupancy_calculator_gives",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                return;
            }
            let n = 10_000;
            let (a, b) = (
                gpu.zeros::<f32, _>(n).unwrap(),
                gpu.zeros::<f32, _>(n).unwrap(),
            );
            let mut c = gpu.zeros::<f32, _>(n).unwrap();
            add.forall(n, (&a, &b, &mut c)).unwrap();
            assert_eq!(log.count("occupancy add dynamic=0 limit=0"), 1);
            // The fake GPU suggests 768 threads: 14 blocks cover 10 000 tasks.
            let launch = &log.launches("add")[0];
            assert!(launch.starts_with("grid=14,1,1 block=768,1,1 "), "{launch}");
            add.forall(0, (&a, &b, &mut c)).unwrap();
            assert_eq!(log.launches("add").len(), 1, "no task, no launch");
        },
    );
}

#[test]
fn launch_bounds_cap_the_calculators_block_and_refuse_larger_ones() {
    on_fake_driver(
        "launch_bounds_cap_the_calculators_block_and_refuse_larger_ones",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(bounded_block_sizes.ptx()) {
                return;
            }
            let mut sizes = gpu.zeros::<u32, _>(1000).unwrap();
            // The fake GPU suggests 768 threads; the kernel's bounds allow 128.
            bounded_block_sizes.forall(1000, (&mut sizes, 1)).unwrap();
            let launch = &log.launches("bounded_block_sizes")[0];
            assert!(launch.starts_with("grid=8,1,1 block=128,1,1 "), "{launch}");
            let err = bounded_block_sizes.launch(1, 256, (&mut sizes, 1));
            common::assert_mentions(&err.unwrap_err().to_string(), &["launch_bounds allow 128"]);
            assert_eq!(log.launches("bounded_block_sizes").len(), 1);
        },
    );
}

#[test]
fn a_cooperative_kernel_launches_cooperatively_with_a_counter_for_its_grid_barriers() {
    on_fake_driver(
        "a_cooperative_kernel_launches_cooperatively_with_a_counter_for_its_grid_barriers",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(grid_rotate.ptx()) {
                return;
            }
            // The fake GPU keeps 2048 threads per multiprocessor, and has 132 of them.
            let limit = grid_rotate
                .max_cooperative_grid_blocks(&gpu, 256, 0)
                .unwrap();
            assert_eq!(limit, 8 * 132);
            assert_eq!(
                log.count("occupancy-blocks grid_rotate threads=256 dynamic=0"),
                1
            );
            let mut a = gpu.zeros::<u32, _>(64).unwrap();
            let mut b = gpu.zeros::<u32, _>(64).unwrap();
            grid_rotate.launch(4, 16, (3, &mut a, &mut b)).unwrap();
            gpu.synchronize().unwrap();
            assert!(
                log.launches("grid_rotate").is_empty(),
                "never a plain launch"
            );
            let lines = log.lines();
            let (at, launch) = lines
                .iter()
                .enumerate()
                .find_map(|(i, l)| Some((i, l.strip_prefix("launch-cooperative grid_rotate ")?)))
                .expect("a cooperative launch");
            assert!(launch.starts_with("grid=4,1,1 block=16,1,1 "), "{launch}");
            // The arguments, then the counter: 4 zeroed bytes allocated before the launch and
            // freed after it.
            let params: Vec<&str> = launch
                .rsplit_once("params=")
                .unwrap()
                .1
                .split(',')
                .collect();
            assert_eq!(params.len(), 6, "{launch}");
            assert_eq!(params[0], hex(3));
            let counter = params[5];
            let has = |lines: &[String], line: String| {
                lines
                    .iter()
                    .any(|l| l == &line || l.starts_with(&format!("{line} ")))
            };
            assert!(has(&lines[..at], format!("alloc {counter} 4")), "{lines:?}");
            assert!(has(&lines[at..], format!("free {counter}")), "{lines:?}");
            // A grid larger than what is resident is refused before it reaches the driver.
            let err = grid_rotate
                .launch(limit + 1, 256, (3, &mut a, &mut b))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidLaunch {
                        reason: LaunchError::TooManyCooperativeBlocks { limit: 1056, .. },
                        ..
                    }
                ),
                "{err}"
            );
            assert_eq!(log.count("launch-cooperative "), 1);
        },
    );
}

#[test]
fn a_generic_kernel_launches_the_entry_of_its_types() {
    on_fake_driver(
        "a_generic_kernel_launches_the_entry_of_its_types",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(axpy_generic.ptx()) {
                return;
            }
            let x = gpu.zeros::<f64, _>(10).unwrap();
            let mut y = gpu.zeros::<f64, _>(10).unwrap();
            axpy_generic.launch(1, 32, (2.0f64, &x, &mut y)).unwrap();
            let xi = gpu.zeros::<i32, _>(10).unwrap();
            let mut yi = gpu.zeros::<i32, _>(10).unwrap();
            axpy_generic.launch(1, 32, (2, &xi, &mut yi)).unwrap();
            assert_eq!(log.launches("axpy_generic__f64").len(), 1);
            let launch = &log.launches("axpy_generic__i32")[0];
            assert!(launch.contains(&format!("params={},", hex(2))), "{launch}");
        },
    );
}

#[test]
fn module_arrays_are_the_symbols_of_the_module_the_kernels_run_from() {
    on_fake_driver(
        "module_arrays_are_the_symbols_of_the_module_the_kernels_run_from",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(convolve_taps.ptx()) {
                return;
            }
            let taps = [0.5f32, 1.0, -2.0, 0.25, 4.0];
            // First from a thread on which no context is current yet: `set` makes it current.
            std::thread::scope(|s| s.spawn(|| TAPS.set(&gpu, &taps)).join())
                .unwrap()
                .unwrap();
            assert_eq!(TAPS.to_vec(&gpu).unwrap(), taps);
            let table: Vec<u32> = (0..1000).collect();
            assert_eq!(LOOKUP.to_vec(&gpu).unwrap(), vec![0; 1000], "zeros at load");
            LOOKUP.set(&gpu, &table).unwrap();
            assert_eq!(LOOKUP.to_vec(&gpu).unwrap(), table);
            let x = gpu.zeros::<f32, _>(8).unwrap();
            let mut out = gpu.zeros::<f32, _>(8).unwrap();
            convolve_taps.launch(1, 32, (&x, &mut out)).unwrap();
            // One module: the arrays' and the kernel's, loaded once.
            let lines = log.lines();
            assert_eq!(log.count("load module "), 1, "{lines:?}");
            assert_eq!(log.count("global __kernel_const_TAPS "), 2, "{lines:?}");
            assert!(
                lines.iter().any(
                    |l| l.starts_with("global __kernel_global_LOOKUP ") && l.ends_with(" 4000")
                ),
                "{lines:?}"
            );
            assert_eq!(log.launches("convolve_taps").len(), 1);
        },
    );
}

#[test]
fn foreign_device_code_is_linked_into_the_module_before_it_loads() {
    on_fake_driver(
        "foreign_device_code_is_linked_into_the_module_before_it_loads",
        &[],
        |log| {
            let gpu = fake_gpu();
            let Some(ptx) = saxpy_foreign.ptx() else {
                has_ptx(None);
                return;
            };
            let x = gpu.to_device(&[1.5f32; 8]).unwrap();
            let mut y = gpu.zeros::<f32, _>(8).unwrap();
            let result = saxpy_foreign.forall(8, (2.0f32, &x, &mut y));
            if ptx.contains("// kernel-build link cuda mul.cu") {
                if let Err(err) = &result {
                    // Where no NVRTC is installed, the CUDA C++ cannot be compiled, and the
                    // error says so and what to do.
                    assert!(matches!(err, Error::ForeignCode { file, .. } if file == "mul.cu"));
                    common::assert_mentions(
                        &err.to_string(),
                        &["NVRTC", "was not found", "KERNEL_NVCC"],
                    );
                    return;
                }
            }
            result.unwrap();
            add_foreign.forall(8, (&x, &mut y)).unwrap();
            // One link of three inputs, then one module that both kernels launch from.
            let lines = log.lines();
            let linked: Vec<&String> = lines.iter().filter(|l| l.starts_with("link ")).collect();
            assert_eq!(linked.len(), 6, "{lines:?}");
            assert!(linked[0].starts_with("link create "), "{linked:?}");
            assert_eq!(linked[1], "link add the crate's PTX");
            assert_eq!(linked[2], "link add add.ptx");
            assert_eq!(linked[3], "link add mul.cu");
            assert_eq!(linked[4], "link complete 3 inputs");
            assert!(linked[5].starts_with("link destroy "), "{linked:?}");
            assert_eq!(log.count("load module "), 1, "{lines:?}");
            assert_eq!(log.launches("saxpy_foreign").len(), 1);
            assert_eq!(log.launches("add_foreign").len(), 1);
        },
    );
}

#[test]
fn a_graph_is_captured_on_its_own_stream_and_replayed_with_one_call() {
    on_fake_driver(
        "a_graph_is_captured_on_its_own_stream_and_replayed_with_one_call",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(times_three_plus.ptx()) {
                return;
            }
            let mut x = gpu.zeros::<u32, _>(64).unwrap();
            let mut graph = gpu
                .capture(|| {
                    for by in 0..100 {
                        times_three_plus.launch(1, 64, (&mut x, by))?;
                    }
                    Ok(())
                })
                .unwrap();
            // Captured, not launched.
            assert_eq!(log.launches("times_three_plus").len(), 0);
            assert_eq!(log.count("capture launch times_three_plus "), 100);
            assert_eq!(log.count("capture end 100 launches"), 1);
            graph.launch().unwrap();
            graph.launch().unwrap();
            assert_eq!(log.count("graph launch 100 launches"), 2);
            let launches = log.launches("times_three_plus");
            assert_eq!(launches.len(), 200);
            // Each launch keeps the parameters it was captured with.
            assert!(
                launches[99].ends_with(&format!(",{}", hex(99))),
                "{}",
                launches[99]
            );
            // The capture's stream is not the device's.
            let begin = log
                .lines()
                .into_iter()
                .find(|l| l.starts_with("capture begin "))
                .unwrap();
            let stream = begin.trim_start_matches("capture begin ");
            assert!(
                launches[0].contains(&format!("stream={stream} ")),
                "{}",
                launches[0]
            );
            drop(graph);
            // Another thread's launch during a capture runs, uncaptured.
            let mut y = gpu.zeros::<u32, _>(64).unwrap();
            let graph = gpu
                .capture(|| {
                    std::thread::scope(|s| {
                        s.spawn(|| times_three_plus.launch(1, 64, (&mut y, 7)))
                            .join()
                            .unwrap()
                    })?;
                    times_three_plus.launch(1, 64, (&mut x, 1))
                })
                .unwrap();
            assert_eq!(log.launches("times_three_plus").len(), 201);
            assert_eq!(log.count("capture end 1 launches"), 1);
            drop(graph);
        },
    );
}

#[test]
fn pinned_arrays_are_page_locked_and_copied_on_the_stream() {
    on_fake_driver(
        "pinned_arrays_are_page_locked_and_copied_on_the_stream",
        &[],
        |log| {
            let gpu = fake_gpu();
            let mut host = gpu.pinned::<f32, _>(1000).unwrap();
            assert!(host.is_page_locked());
            host.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
            let mut d = gpu.zeros::<f32, _>(1000).unwrap();
            d.copy_from_pinned(&host).unwrap();
            let mut back = gpu.pinned::<f32, _>(1000).unwrap();
            back.copy_from_device(&d).unwrap();
            assert_eq!(back[999], 999.0);
            drop((host, back));
            assert_eq!(log.count("host alloc 4000"), 2);
            assert_eq!(log.count("host free 4000"), 2);
            // Both copies went straight from and to the page-locked memory.
            assert_eq!(log.count("htod 4000 pinned"), 1);
            assert_eq!(log.count("dtoh 4000 pinned"), 1);
        },
    );
}

#[test]
fn the_hosts_own_memory_is_page_locked_in_place_until_its_copies_are_done() {
    on_fake_driver(
        "the_hosts_own_memory_is_page_locked_in_place_until_its_copies_are_done",
        &[],
        |log| {
            let gpu = fake_gpu();
            let v: Vec<f32> = (0..1000).map(|i| i as f32).collect();
            let at = format!("at={:#x}", v.as_ptr() as usize);
            let host = gpu.pin(v).unwrap();
            assert!(host.is_page_locked());
            let s = gpu.stream().unwrap();
            let mut d = gpu.zeros::<f32, _>(1000).unwrap();
            s.upload(host.slice(..).unwrap(), &mut d).unwrap();
            let mut back = gpu.pin(vec![0.0f32; 1000]).unwrap();
            s.download(d.slice(500..).unwrap(), back.slice_mut(500..).unwrap())
                .unwrap();
            let v = host.into_array().unwrap();
            assert_eq!(v[999], 999.0);
            assert_eq!(back[999], 999.0);
            drop(back);
            // Both locked where they were, copied from and to in place, and unlocked after the
            // host waited for the copies (the happens-before check of every test's log).
            assert_eq!(log.count("host register 4000"), 2);
            assert_eq!(log.count("host unregister 4000"), 2);
            assert_eq!(log.count(&format!("host register 4000 {at}")), 1);
            assert_eq!(log.count("htod 4000 pinned"), 1);
            assert_eq!(log.count("dtoh 2000 pinned"), 1);
        },
    );
}

#[test]
fn profiling_brackets_the_work_it_runs() {
    on_fake_driver("profiling_brackets_the_work_it_runs", &[], |log| {
        let gpu = fake_gpu();
        let mut d = gpu.zeros::<u32, _>(64).unwrap();
        gpu.profiling(|| d.fill(3)).unwrap().unwrap();
        let lines = log.lines();
        let (start, stop) = (
            lines_of(&lines, "profiler start"),
            lines_of(&lines, "profiler stop"),
        );
        let memset = *lines_of(&lines, "memset ").last().unwrap();
        assert!(start.len() == 1 && stop.len() == 1, "{lines:?}");
        assert!(start[0] < memset && memset < stop[0], "{lines:?}");
    });
}

#[test]
fn memory_the_driver_cannot_lock_is_given_back() {
    on_fake_driver(
        "memory_the_driver_cannot_lock_is_given_back",
        &[("FAKE_CUDA_FAIL", "cuMemHostRegister_v2=2")],
        |log| {
            let gpu = fake_gpu();
            let err = gpu.pin(vec![7u8; 100]).unwrap_err();
            assert!(err.to_string().contains("cuMemHostRegister"), "{err}");
            assert_eq!(err.array.to_vec(), vec![7u8; 100]);
            let err: Error = err.into();
            assert!(matches!(err, Error::Cuda { .. }), "{err}");
            let err = gpu.map(vec![9u16; 10]).unwrap_err();
            assert!(err.to_string().contains("cuMemHostRegister"), "{err}");
            assert_eq!(err.array.to_vec(), vec![9u16; 10]);
            assert_eq!(log.count("host register"), 0);
        },
    );
}

/// Launches `times_three_plus` over the 1000 elements of `x` on a new stream of `gpu`, and
/// checks that the launch passed `host` as `x`'s address: the launch's log line.
fn launch_in_place(gpu: &Device, log: &Log, x: &mut DeviceArray1<u32>, host: &str) -> String {
    let s = gpu.stream().unwrap();
    let cfg = LaunchConfig::cover(1000, 128).unwrap().on_stream(&s);
    times_three_plus.launch_with(cfg, (x, 1)).unwrap();
    let launch = log.launches("times_three_plus").remove(0);
    assert!(launch.contains(&format!("params={host},")), "{launch}");
    launch
}

#[test]
fn the_hosts_own_array_is_mapped_in_place_for_the_kernels() {
    on_fake_driver(
        "the_hosts_own_array_is_mapped_in_place_for_the_kernels",
        &[],
        |log| {
            let gpu = fake_gpu();
            let v: Vec<u32> = (0..1000).collect();
            let host = format!("{:#x}", v.as_ptr() as usize);
            let mut x = gpu.map(v).unwrap();
            assert_eq!(
                log.count(&format!("host register 4000 mapped at={host}")),
                1
            );
            // The kernels get the memory's device address, the host's (unified addressing).
            let addr = x.as_device_ptr().map(|p| format!("{p:#x}"));
            assert_eq!(addr.as_ref(), Some(&host));
            if has_ptx(times_three_plus.ptx()) {
                launch_in_place(&gpu, log, &mut x, &host);
            }
            // Given back once the kernel is done (the happens-before check of the log), the
            // same memory, unlocked; nothing was copied.
            let back = x.into_host().unwrap();
            assert_eq!(format!("{:#x}", back.as_ptr() as usize), host);
            assert_eq!(log.count(&format!("host unregister 4000 at={host}")), 1);
            assert_eq!(log.count("htod ") + log.count("dtoh "), 0);
            // Dropped instead, or reinterpreted first: unlocked all the same.
            drop(gpu.map(vec![1.0f64; 10]).unwrap());
            let words = gpu.map(vec![0x0403_0201u32; 8]).unwrap();
            let bytes = words.reinterpret::<u8>().unwrap().into_host().unwrap();
            assert_eq!(bytes.as_slice().unwrap()[..4], [1, 2, 3, 4]);
            assert_eq!(log.count("host register"), 3);
            assert_eq!(log.count("host unregister"), 3);
        },
    );
}

#[test]
fn mapped_arrays_are_host_memory_the_kernels_use_in_place() {
    on_fake_driver(
        "mapped_arrays_are_host_memory_the_kernels_use_in_place",
        &[],
        |log| {
            let gpu = fake_gpu();
            let huge = gpu.mapped::<f64, _>((1usize << 40, 1usize << 30));
            assert!(matches!(huge, Err(Error::TooLarge { .. })), "{huge:?}");
            let mut x = gpu.mapped::<u32, _>(1000).unwrap();
            x.host_view_mut().unwrap().fill(5);
            let host = {
                let lines = log.lines();
                let alloc = &lines[lines_of(&lines, "host alloc 4000 mapped ")[0]];
                alloc.rsplit_once("at=").unwrap().1.to_string()
            };
            // The kernel gets the memory's device address, which is the host's (unified
            // addressing); no copy is made.
            assert_eq!(
                x.as_device_ptr().map(|p| format!("{p:#x}")),
                Some(host.clone())
            );
            if has_ptx(times_three_plus.ptx()) {
                let launch = launch_in_place(&gpu, log, &mut x, &host);
                // The host's view waits for the stream that wrote the memory.
                let _ = x.host_view().unwrap();
                let lines = log.lines();
                let stream = launch
                    .split(" stream=")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap();
                let sync = lines_of(&lines, &format!("sync stream={stream}"));
                assert!(!sync.is_empty(), "{lines:?}");
            }
            assert_eq!(log.count("htod "), 0);
            assert_eq!(log.count("dtoh "), 0);
            drop(x);
            assert_eq!(log.count("host free 4000 "), 1);
            // A GPU's array in device memory is not viewed in place.
            let d = gpu.zeros::<u32, _>(4).unwrap();
            let err = d.host_view().unwrap_err();
            assert!(matches!(err, Error::NotHostVisible { .. }), "{err}");
        },
    );
}

#[test]
fn managed_arrays_are_one_address_for_the_kernels_and_the_host() {
    on_fake_driver(
        "managed_arrays_are_one_address_for_the_kernels_and_the_host",
        &[],
        |log| {
            let gpu = fake_gpu();
            let mut x = gpu.managed::<u32, _>(1000).unwrap();
            assert!(x.is_host_visible());
            assert!(x.host_view().unwrap().iter().all(|&v| v == 0), "zeroed");
            x.host_view_mut().unwrap().fill(5);
            let addr = format!("{:#x}", x.as_device_ptr().unwrap());
            assert_eq!(log.count(&format!("alloc {addr} 4000")), 1);
            if has_ptx(times_three_plus.ptx()) {
                times_three_plus.forall(1000, (&mut x, 1)).unwrap();
                let launch = &log.launches("times_three_plus")[0];
                assert!(launch.contains(&format!("params={addr},")), "{launch}");
                // The host's view waits for the kernel (this driver runs none).
                let syncs = log.count("sync ");
                let _ = x.host_view().unwrap();
                assert!(log.count("sync ") > syncs);
            }
            assert_eq!(log.count("htod "), 0);
            assert_eq!(log.count("dtoh "), 0);
            drop(x);
            assert_eq!(log.count(&format!("free {addr}")), 1);
        },
    );
}

#[test]
fn a_view_passes_its_first_elements_address_and_its_own_extents() {
    on_fake_driver(
        "a_view_passes_its_first_elements_address_and_its_own_extents",
        &[],
        |log| {
            let gpu = fake_gpu();
            let v: Vec<f32> = (0..1000).map(|i| i as f32).collect();
            let a = gpu.to_device(&v).unwrap();
            let mut c = gpu.zeros::<f32, _>(1000).unwrap();
            let at = |array: &DeviceArray1<f32>, first: u64| {
                hex(kernel_runtime::__rt::device_addr(array) + 4 * first)
            };
            // Copies of a view move its bytes alone, from where they start.
            c.slice_mut(10..13)
                .unwrap()
                .copy_from_host(&[1.0, 2.0, 3.0])
                .unwrap();
            let dst = format!("dst={:#x}", kernel_runtime::__rt::device_addr(&c) + 40);
            let uploads = log.lines();
            let uploads = uploads.iter().filter(|l| l.starts_with("htod 12 "));
            assert_eq!(
                uploads.filter(|l| l.contains(&dst)).count(),
                1,
                "{:?}",
                log.lines()
            );
            assert_eq!(
                c.slice(9..14).unwrap().to_vec().unwrap(),
                [0.0, 1.0, 2.0, 3.0, 0.0]
            );
            assert_eq!(a.subarray(999).unwrap().to_vec().unwrap(), [999.0]);
            // A copy between two parts of one array: from the address of each part's first.
            let base = kernel_runtime::__rt::device_addr(&c);
            let (lo, hi) = c.split_at_mut(500).unwrap();
            let last = hi.view().slice(490..).unwrap();
            lo.slice_mut(..10).unwrap().copy_from_device(last).unwrap();
            let copies = log.lines();
            let copy = copies.iter().rfind(|l| l.starts_with("dtod 40 ")).unwrap();
            let (dst, src) = (
                format!("dst={base:#x}"),
                format!("src={:#x}", base + 4 * 990),
            );
            assert!(copy.contains(&dst) && copy.contains(&src), "{copy}");
            if !has_ptx(add.ptx()) {
                return;
            }
            let (x, y) = (a.slice(100..300).unwrap(), a.slice(..200).unwrap());
            add.launch(1, 256, (x, y, c.slice_mut(800..).unwrap()))
                .unwrap();
            let want = [
                at(&a, 100),
                hex(200),
                at(&a, 0),
                hex(200),
                at(&c, 800),
                hex(200),
            ];
            let launch = &log.launches("add")[0];
            assert!(
                launch.ends_with(&format!("params={}", want.join(","))),
                "{launch}"
            );
            // Rows of a 2-D array: the address of the first, and the rows' extents.
            let img = gpu.zeros::<i8, _>((40, 70)).unwrap();
            let mut out = gpu.zeros::<i8, _>((40, 70)).unwrap();
            let (top, _) = out.split_at_mut(16).unwrap();
            smooth
                .launch((5, 1), (16, 16), (img.slice(24..).unwrap(), top))
                .unwrap();
            let launch = &log.launches("smooth")[0];
            let addr = |d: &DeviceArray<i8, _>| kernel_runtime::__rt::device_addr(d);
            let want = format!(
                "params={},{},{},{},{},{}",
                hex(addr(&img) + 24 * 70),
                hex(16),
                hex(70),
                hex(addr(&out)),
                hex(16),
                hex(70)
            );
            assert!(launch.ends_with(&want), "{launch} vs {want}");
        },
    );
}

#[test]
fn a_kernels_attributes_are_what_the_driver_reports_of_its_function() {
    on_fake_driver(
        "a_kernels_attributes_are_what_the_driver_reports_of_its_function",
        &[],
        |_log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                assert!(matches!(add.attributes(&gpu), Err(Error::NoPtx { .. })));
                return;
            }
            // The fake compiles nothing: 32 registers unless capped, no local memory, its
            // binary for the GPU's compute capability (9.0).
            let a = add.attributes(&gpu).unwrap();
            assert_eq!((a.registers, a.local_bytes, a.const_bytes), (32, 0, 0));
            assert_eq!((a.max_threads_per_block, a.binary_version), (1024, 90));
            assert!(a.ptx_version >= 60, "{a:?}");
            // Caps and bounds reach the PTX (`.maxnreg`, `.maxntid`), and the driver's limits.
            assert_eq!(capped_registers.attributes(&gpu).unwrap().registers, 32);
            let bounded = bounded_block_sizes.attributes(&gpu).unwrap();
            assert_eq!(bounded.max_threads_per_block, 128);
            // A block's shared arrays count, where a launch places them.
            assert_eq!(
                reverse_in_blocks.attributes(&gpu).unwrap().shared_bytes,
                512
            );
            // A generic kernel's hold for each of its instances.
            assert_eq!(axpy_generic.attributes(&gpu).unwrap().registers, 32);
        },
    );
}

#[test]
fn a_gpus_free_memory_is_what_its_allocations_leave() {
    on_fake_driver(
        "a_gpus_free_memory_is_what_its_allocations_leave",
        &[],
        |_log| {
            let gpu = fake_gpu();
            let before = gpu.memory_info().unwrap();
            // The fake GPU has 16 GiB.
            assert_eq!(before.total, 1 << 34);
            let a = gpu.zeros::<u8, _>(1 << 30).unwrap();
            let during = gpu.memory_info().unwrap();
            assert_eq!(
                before.free - during.free,
                1 << 30,
                "{before:?} then {during:?}"
            );
            drop(a);
            gpu.synchronize().unwrap();
            assert!(gpu.memory_info().unwrap().free >= during.free);
        },
    );
}

#[test]
fn a_gpu_that_cannot_share_managed_memory_while_kernels_run_refuses_it() {
    on_fake_driver(
        "a_gpu_that_cannot_share_managed_memory_while_kernels_run_refuses_it",
        &[("FAKE_CUDA_CC", "52")],
        |_| {
            let err = fake_gpu().managed::<f32, _>(10).unwrap_err().to_string();
            assert!(err.contains("cannot share managed memory"), "{err}");
            assert!(err.contains("Device::mapped"), "{err}");
        },
    );
}

/// `ptx` followed by a cubin of it for sm_90, as `KERNEL_CUBIN_ARCHS=sm_90` builds a module, and
/// the cubin; none where `KERNEL_PTXAS` names no ptxas (`cargo xtask test` sets it).
fn with_cubin(ptx: &str) -> Option<(&'static str, Vec<u8>)> {
    let ptxas = std::env::var_os("KERNEL_PTXAS")?;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cubin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kernel_ptx.txt");
    std::fs::write(&file, ptx).unwrap();
    let lines = kernel_build::cubin_sections(Path::new(&ptxas), &file, &["sm_90".into()]).unwrap();
    let cubin = std::fs::read(dir.join("kernel_sm_90.cubin")).unwrap();
    Some((Box::leak(format!("{ptx}{lines}").into_boxed_str()), cubin))
}

/// Launches `add` of the module `module` on `gpu` over three arrays of 256 elements.
fn launch_add_of(gpu: &Device, module: &'static str) -> Result<(), Error> {
    use kernel_runtime::__rt::{cuda_launch, gpu_params};
    use kernel_runtime::host::args::Params;
    type AddParams = (&'static [f32], &'static [f32], &'static mut [f32]);
    let (a, b) = (gpu.zeros::<f32, _>(256)?, gpu.zeros::<f32, _>(256)?);
    let mut c = gpu.zeros::<f32, _>(256)?;
    let args = (a.view(), b.view(), c.view_mut());
    let mut params = gpu_params(6);
    AddParams::push_gpu(&args, &mut params);
    let config = LaunchConfig::new(2, 128).unwrap();
    // SAFETY: `add`'s parameters: each array's address and length, as its PTX entry declares.
    unsafe { cuda_launch(gpu, "add", Ok(module), &config, &mut params) }?;
    gpu.synchronize()
}

#[test]
fn a_cubin_is_read_as_its_ptx_declares_and_loaded_on_its_gpu() {
    on_fake_driver(
        "a_cubin_is_read_as_its_ptx_declares_and_loaded_on_its_gpu",
        &[],
        |log| {
            let Some(ptx) = add.ptx().filter(|p| has_ptx(Some(p))) else {
                return;
            };
            let Some((module, cubin)) = with_cubin(ptx) else {
                eprintln!("skipped: KERNEL_PTXAS names no ptxas to make a cubin with");
                return;
            };
            // The fake reads each kernel of the cubin as its PTX entry declares it, and the
            // module arrays of the test kernels' module as their PTX declares them.
            let tests_ptx = times_three_plus.ptx().unwrap();
            let (_, tests_cubin) = with_cubin(tests_ptx).unwrap();
            let tests_read = fake_cuda::cubin::parse(&tests_cubin).unwrap();
            let tests_declared = fake_cuda::ptx::parse(tests_ptx).unwrap();
            assert!(!tests_declared.variables.is_empty());
            assert_eq!(tests_read.variables, tests_declared.variables);
            let from_ptx = fake_cuda::ptx::parse(ptx).unwrap();
            let from_cubin = fake_cuda::cubin::parse(&cubin).unwrap();
            assert_eq!(from_cubin.target, 90);
            for (name, entry) in &from_ptx.entries {
                let read = &from_cubin.entries[name];
                let sizes = |e: &fake_cuda::ptx::Entry| {
                    e.params.iter().map(|p| p.bytes).collect::<Vec<_>>()
                };
                assert_eq!(sizes(read), sizes(entry), "`{name}`'s parameters");
                let shared = (read.static_shared, entry.static_shared);
                assert_eq!(shared.0, shared.1, "`{name}`'s shared memory");
            }
            // The runtime gives an sm_90 GPU the cubin, not the PTX.
            let gpu = fake_gpu();
            launch_add_of(&gpu, module).unwrap();
            let lines = log.lines();
            assert_eq!(lines_of(&lines, "load module ").len(), 1, "{lines:?}");
            assert!(
                lines[lines_of(&lines, "load module ")[0]].ends_with(" cubin"),
                "{lines:?}"
            );
            assert_eq!(log.launches("add").len(), 1);
        },
    );
}

#[test]
fn detection_reports_the_driver_the_gpus_and_how_each_runs_each_module() {
    on_fake_driver(
        "detection_reports_the_driver_the_gpus_and_how_each_runs_each_module",
        &[("FAKE_CUDA_DEVICES", "2")],
        |_| {
            let report = kernel_runtime::detect();
            let text = report.to_string();
            assert_eq!(report.driver, Ok((13, 0)), "{text}");
            assert_eq!(report.gpus.len(), 2, "{text}");
            for gpu in &report.gpus {
                let info = gpu.opened.clone().unwrap();
                assert_eq!(info.name, "Fake CUDA GPU");
                assert!(
                    info.compute_capability == (9, 0) && info.memory_bytes > 0,
                    "{text}"
                );
                assert_eq!(gpu.runs.len(), report.modules.len(), "{text}");
            }
            if !has_ptx(add.ptx()) {
                return;
            }
            // The reference kernels' PTX runs as it is, hopper-kernels' through its sm_90a
            // variant, and the foreign kernels' module linked with its CUDA C++.
            let runs: Vec<&str> = report.gpus[0]
                .runs
                .iter()
                .map(|r| r.as_deref().unwrap())
                .collect();
            assert!(
                runs.iter().any(|r| r.starts_with("its PTX for sm_")),
                "{text}"
            );
            assert!(runs.iter().any(|r| r.contains("sm_90a variant")), "{text}");
            assert!(
                runs.iter().any(|r| r.contains("linked by the driver")),
                "{text}"
            );
            let default = "Device::default(): CUDA device 0 (Fake CUDA GPU) (the first GPU)";
            assert!(text.ends_with(default), "{text}");
        },
    );
}

#[test]
fn detection_tells_what_to_build_for_a_gpu_older_than_the_ptx() {
    on_fake_driver(
        "detection_tells_what_to_build_for_a_gpu_older_than_the_ptx",
        &[("FAKE_CUDA_CC", "60")],
        |_| {
            let report = kernel_runtime::detect();
            if !has_ptx(add.ptx()) {
                return;
            }
            let text = report.to_string();
            // A Pascal GPU: every module's PTX is for a newer one.
            for run in &report.gpus[0].runs {
                let why = run.as_ref().unwrap_err();
                assert!(why.contains("KERNEL_PTX_ARCH=sm_60"), "{text}");
            }
            // So `Device::default()` is the CPU backend, and the report says why.
            assert_eq!(Device::default().kind(), DeviceKind::Cpu);
            let why = "the CPU backend: CUDA device 0 is not usable: the program's PTX is for sm_";
            assert!(report.default.starts_with(why), "{text}");
        },
    );
}

#[test]
fn a_module_with_source_lines_is_compiled_keeping_them() {
    on_fake_driver(
        "a_module_with_source_lines_is_compiled_keeping_them",
        &[],
        |log| {
            let Some(ptx) = add.ptx().filter(|p| has_ptx(Some(p))) else {
                return;
            };
            // What `KERNEL_LINEINFO=1` adds: a line directive in the entry, the file at the end.
            let body = ptx
                .find(".entry add(")
                .and_then(|at| ptx[at..].find('{').map(|b| at + b));
            let at = body.expect("add's entry has a body") + 1;
            let module = format!(
                "{}\n\t.loc\t1 5 0{}\n\t.file\t1 \"/x/src/lib.rs\"\n",
                &ptx[..at],
                &ptx[at..]
            );
            let gpu = fake_gpu();
            launch_add_of(&gpu, Box::leak(module.into_boxed_str())).unwrap();
            let lines = log.lines();
            let (loads, kept) = (
                lines_of(&lines, "load module "),
                lines_of(&lines, "lineinfo "),
            );
            assert!(loads.len() == 1 && kept.len() == 1, "{lines:?}");
            // The crate's own module has none, and loads as it did.
            launch_add_of(&gpu, ptx).unwrap();
            assert_eq!(log.count("load module "), 2);
            assert_eq!(log.count("lineinfo "), 1);
        },
    );
}

/// Launches `add` of a module with an sm_90 cubin on the fake GPU, in `test`'s child with
/// `env`, and checks that the PTX was loaded.
fn loads_the_ptx(test: &str, env: &[(&str, &str)]) {
    on_fake_driver(test, env, |log| {
        let ptx = add.ptx().filter(|p| has_ptx(Some(p)));
        let Some((module, _)) = ptx.and_then(with_cubin) else {
            return;
        };
        launch_add_of(&fake_gpu(), module).unwrap();
        let lines = log.lines();
        let loads = lines_of(&lines, "load module ");
        assert!(
            loads.len() == 1 && !lines[loads[0]].ends_with(" cubin"),
            "{lines:?}"
        );
    });
}

#[test]
fn a_gpu_of_another_architecture_gets_the_ptx_of_a_module_with_cubins() {
    loads_the_ptx(
        "a_gpu_of_another_architecture_gets_the_ptx_of_a_module_with_cubins",
        &[("FAKE_CUDA_CC", "86")],
    );
}

#[test]
fn kernel_jit_loads_the_ptx_of_a_module_with_cubins() {
    loads_the_ptx(
        "kernel_jit_loads_the_ptx_of_a_module_with_cubins",
        &[("KERNEL_JIT", "1")],
    );
}

#[test]
fn two_gpus_copy_to_each_other_after_the_work_they_wait_for() {
    on_fake_driver(
        "two_gpus_copy_to_each_other_after_the_work_they_wait_for",
        &[("FAKE_CUDA_DEVICES", "2")],
        |log| {
            assert_eq!(Device::gpu_count(), 2);
            let gpus = Device::gpus().unwrap();
            assert_eq!(
                gpus.iter().map(Device::kind).collect::<Vec<_>>(),
                [DeviceKind::Cuda(0), DeviceKind::Cuda(1)]
            );
            let (g0, g1) = (&gpus[0], &gpus[1]);
            let x = g0.to_device(&[1.0f32; 256][..]).unwrap();
            let mut y = g0.empty::<f32, _>(256).unwrap();
            if has_ptx(add.ptx()) {
                add.launch(2, 128, (&x, &x, &mut y)).unwrap();
            }
            // Onto the other GPU, straight over the link, after the kernel that wrote `y`.
            let on_1 = y.to_device(g1).unwrap();
            assert_eq!(on_1.device(), g1);
            let lines = log.lines();
            assert_eq!(log.count("peer access "), 1, "{lines:?}");
            let copy = lines_of(&lines, "peer 1024 ")[0];
            if has_ptx(add.ptx()) {
                let launch = lines_of(&lines, "launch add ")[0];
                assert!(Trace::of(&lines).ordered(launch, copy), "{lines:?}");
            }
            // And back, and through the CPU backend.
            let mut back = g0.zeros::<f32, _>(256).unwrap();
            back.copy_from_device(&on_1).unwrap();
            let host = on_1.to_device(&Device::cpu()).unwrap();
            let _ = host.to_device(g1).unwrap().to_vec().unwrap();
            assert_eq!(log.count("peer access "), 2, "one grant each way");
            assert_eq!(log.count("peer 1024 "), 2);
            // A stream of one GPU copies no array of the other.
            let (s1, pinned) = (g1.stream().unwrap(), g0.pinned::<f32, _>(256).unwrap());
            let copies = log.count("htod ");
            let refused = s1.upload(pinned.slice(..).unwrap(), &mut back);
            assert!(
                matches!(
                    refused,
                    Err(Error::DeviceMismatch {
                        argument: "the stream",
                        ..
                    })
                ),
                "{refused:?}"
            );
            assert_eq!(log.count("htod "), copies, "nothing reached the driver");
        },
    );
}

#[test]
fn one_thread_keeps_two_gpus_busy_at_once() {
    on_fake_driver(
        "one_thread_keeps_two_gpus_busy_at_once",
        &[("FAKE_CUDA_DEVICES", "2"), ("FAKE_CUDA_NO_PEER", "1")],
        |log| {
            if !has_ptx(add.ptx()) {
                return;
            }
            let gpus = Device::gpus().unwrap();
            let inputs: Vec<_> = gpus
                .iter()
                .map(|g| g.zeros::<f32, _>(256).unwrap())
                .collect();
            let mut outputs: Vec<_> = gpus
                .iter()
                .map(|g| g.empty::<f32, _>(256).unwrap())
                .collect();
            for (x, y) in inputs.iter().zip(&mut outputs) {
                add.launch(2, 128, (x, x, y)).unwrap();
            }
            // Both launches were queued before anything waited.
            let lines = log.lines();
            let launches = lines_of(&lines, "launch add ");
            assert_eq!(launches.len(), 2);
            assert!(
                lines_of(&lines, "sync ").iter().all(|&s| s > launches[1]),
                "{lines:?}"
            );
            // Without a link between them, a copy is still made (the driver stages it).
            let copied = outputs[0].to_device(&gpus[1]).unwrap();
            assert_eq!(copied.len(), 256);
            assert_eq!(log.count("peer access "), 0);
            assert_eq!(log.count("peer 1024 "), 1);
        },
    );
}

#[test]
fn the_hosts_view_of_a_mapped_array_waits_for_a_graph_that_wrote_it() {
    on_fake_driver(
        "the_hosts_view_of_a_mapped_array_waits_for_a_graph_that_wrote_it",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(times_three_plus.ptx()) {
                return;
            }
            let mut x = gpu.mapped::<u32, _>(64).unwrap();
            let mut graph = gpu
                .capture(|| times_three_plus.launch(1, 64, (&mut x, 1)))
                .unwrap();
            graph.launch().unwrap();
            drop(graph);
            // The device's own stream: the one its allocations are ordered on.
            let _ = gpu.zeros::<u32, _>(1).unwrap();
            let lines = log.lines();
            let alloc = &lines[*lines_of(&lines, "alloc ").last().unwrap()];
            let own = alloc.rsplit_once("stream=").unwrap().1.to_string();
            let _ = x.host_view().unwrap();
            let lines = log.lines();
            let replay = lines_of(&lines, "graph launch ")[0];
            let waited = lines_of(&lines, &format!("sync stream={own}"));
            assert!(waited.iter().any(|&w| w > replay), "{lines:?}");
        },
    );
}

#[test]
fn a_streams_events_time_its_work_alone() {
    on_fake_driver("a_streams_events_time_its_work_alone", &[], |log| {
        let gpu = fake_gpu();
        let s = gpu.stream().unwrap();
        let start = s.event().unwrap();
        let mut x = gpu.zeros::<u32, _>(64).unwrap();
        if has_ptx(times_three_plus.ptx()) {
            let cfg = LaunchConfig::new(1, 64).unwrap().on_stream(&s);
            times_three_plus.launch_with(cfg, (&mut x, 1)).unwrap();
        }
        let end = s.event().unwrap();
        end.synchronize().unwrap();
        assert!(end.query().unwrap());
        assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
        // Both were recorded on the user stream, not the device's (its allocations').
        let lines = log.lines();
        let stream_of = |i: usize| lines[i].rsplit_once("stream=").unwrap().1.to_string();
        let records = lines_of(&lines, "record ");
        let own = stream_of(lines_of(&lines, "alloc ")[0]);
        let (first, last) = (stream_of(records[0]), stream_of(*records.last().unwrap()));
        assert!(first == last && first != own, "{lines:?}");
    });
}

#[test]
fn callbacks_and_futures_wait_on_the_stream_they_were_added_to() {
    on_fake_driver(
        "callbacks_and_futures_wait_on_the_stream_they_were_added_to",
        &[],
        |log| {
            let gpu = fake_gpu();
            let s = gpu.stream().unwrap();
            let mut x = gpu.zeros::<u32, _>(64).unwrap();
            if has_ptx(times_three_plus.ptx()) {
                let cfg = LaunchConfig::new(1, 64).unwrap().on_stream(&s);
                times_three_plus.launch_with(cfg, (&mut x, 1)).unwrap();
            }
            // The driver calls back on a thread of its own; the callback, on the runtime's,
            // uses the device.
            let (tx, rx) = std::sync::mpsc::channel();
            s.add_callback(move |status| tx.send(status.and_then(|()| x.to_vec())).unwrap())
                .unwrap();
            let done = s.done().unwrap();
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            let mut done = std::pin::pin!(done);
            while std::future::Future::poll(done.as_mut(), &mut cx).is_pending() {
                std::thread::yield_now();
            }
            s.synchronize().unwrap();
            assert_eq!(rx.try_recv().unwrap().unwrap().len(), 64);
            // Both were added to the user stream, after its launch.
            let lines = log.lines();
            let stream_of = |i: usize| lines[i].rsplit_once("stream=").unwrap().1.to_string();
            let callbacks = lines_of(&lines, "callback ");
            assert_eq!(callbacks.len(), 2, "{lines:?}");
            let own = stream_of(lines_of(&lines, "alloc ")[0]);
            assert!(callbacks.iter().all(|&i| stream_of(i) != own), "{lines:?}");
            if let Some(&launch) = lines_of(&lines, "launch times_three_plus").first() {
                assert!(launch < callbacks[0], "{lines:?}");
            }
            // The device's future: a callback on its own stream, after it waited for the user
            // stream's work.
            let mut y = gpu.zeros::<u32, _>(64).unwrap();
            if has_ptx(times_three_plus.ptx()) {
                let cfg = LaunchConfig::new(1, 64).unwrap().on_stream(&s);
                times_three_plus.launch_with(cfg, (&mut y, 1)).unwrap();
            }
            let done = gpu.done().unwrap();
            let mut done = std::pin::pin!(done);
            while std::future::Future::poll(done.as_mut(), &mut cx).is_pending() {
                std::thread::yield_now();
            }
            let lines = log.lines();
            let stream_of = |i: usize| lines[i].rsplit_once("stream=").unwrap().1.to_string();
            let last = *lines_of(&lines, "callback ").last().unwrap();
            assert_eq!(stream_of(last), own, "{lines:?}");
            let waits = lines_of(&lines, &format!("wait stream={own} "));
            if has_ptx(times_three_plus.ptx()) {
                let launch = *lines_of(&lines, "launch times_three_plus").last().unwrap();
                assert!(waits.iter().any(|&w| launch < w && w < last), "{lines:?}");
            }
        },
    );
}

#[test]
fn fills_are_memsets_of_each_word_of_an_element() {
    on_fake_driver("fills_are_memsets_of_each_word_of_an_element", &[], |log| {
        use kernel_runtime::vector::U8x3;
        let gpu = fake_gpu();
        let memsets = || log.count("memset ");
        let mut a = gpu.empty::<u64, _>(10).unwrap();
        let before = memsets();
        // Eight bytes, two words: one memset of each word, an element apart.
        a.fill(0x0102_0304_0506_0708).unwrap();
        assert_eq!(memsets(), before + 2);
        // Every byte alike, or one word an element: one memset.
        a.slice_mut(3..5).unwrap().fill(u64::MAX).unwrap();
        let mut b = gpu.empty::<f32, _>(7).unwrap();
        b.fill(2.5).unwrap();
        assert_eq!(memsets(), before + 4);
        let mut want = vec![0x0102_0304_0506_0708u64; 10];
        want[3..5].fill(u64::MAX);
        assert_eq!(a.to_vec().unwrap(), want);
        assert_eq!(b.to_vec().unwrap(), [2.5; 7]);
        // Three bytes: a memset of each, three bytes apart, within the array.
        let mut c = gpu.empty::<U8x3, _>(5).unwrap();
        c.slice_mut(1..).unwrap().fill(U8x3::new(1, 2, 3)).unwrap();
        assert_eq!(memsets(), before + 7);
        assert_eq!(c.to_vec().unwrap()[1..], [U8x3::new(1, 2, 3); 4]);
    });
}

/// The log lines (by index) that start with `prefix`.
fn lines_of(lines: &[String], prefix: &str) -> Vec<usize> {
    (0..lines.len())
        .filter(|&i| lines[i].starts_with(prefix))
        .collect()
}

/// The bytes a launch of `add(a: &[f32], b: &[f32], out: &mut [f32])` uses: each array's
/// pointer and length are its parameters, in order.
fn add_bytes(name: &str, p: &[u64]) -> Option<Vec<(u64, u64, bool)>> {
    (name == "add").then(|| {
        let array = |k: usize, write| (p[2 * k], p[2 * k + 1] * 4, write);
        vec![array(0, false), array(1, false), array(2, true)]
    })
}

#[test]
fn chunks_of_one_array_on_three_streams_overlap() {
    on_fake_driver_with(
        "chunks_of_one_array_on_three_streams_overlap",
        &[],
        Some(add_bytes),
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                return;
            }
            // CUDA's classic overlap: one device array, each chunk copied in, computed and
            // copied out on a stream of its own.
            let (n, chunk) = (3 * 1024, 1024);
            let mut h = gpu.pinned::<f32, _>(n).unwrap();
            h.fill(1.0);
            let (mut d, mut out) = (gpu.zeros::<f32, _>(n).unwrap(), gpu.zeros(n).unwrap());
            let streams = [(); 3].map(|_| gpu.stream().unwrap());
            for (k, s) in streams.iter().enumerate() {
                let r = k * chunk..(k + 1) * chunk;
                s.upload(h.slice(r.clone()).unwrap(), d.slice_mut(r.clone()).unwrap())
                    .unwrap();
                let cfg = LaunchConfig::cover(chunk, 256).unwrap().on_stream(s);
                let (x, y) = (d.slice(r.clone()).unwrap(), d.slice(r.clone()).unwrap());
                add.launch_with(cfg, (x, y, out.slice_mut(r.clone()).unwrap()))
                    .unwrap();
                s.download(out.slice(r.clone()).unwrap(), h.slice_mut(r).unwrap())
                    .unwrap();
            }
            // Then, on the first stream, a use of the first two chunks of both arrays.
            let two = 0..2 * chunk;
            let cfg = LaunchConfig::cover(2 * chunk, 256)
                .unwrap()
                .on_stream(&streams[0]);
            let (x, y) = (
                out.slice(two.clone()).unwrap(),
                out.slice(two.clone()).unwrap(),
            );
            add.launch_with(cfg, (x, y, d.slice_mut(two).unwrap()))
                .unwrap();
            let lines = log.lines();
            let (ins, adds, outs) = (
                lines_of(&lines, "htod 4096 pinned "),
                lines_of(&lines, "launch add "),
                lines_of(&lines, "dtoh 4096 pinned "),
            );
            assert_eq!((ins.len(), adds.len(), outs.len()), (3, 4, 3), "{lines:?}");
            let trace = Trace::with_launches(&lines, Some(add_bytes));
            assert!(trace.races().is_empty(), "{:?}", trace.races());
            let apart = |a: usize, b: usize| !trace.ordered(a, b) && !trace.ordered(b, a);
            for k in 0..3 {
                assert!(trace.ordered(ins[k], adds[k]) && trace.ordered(adds[k], outs[k]));
            }
            // Chunk 1 comes in while chunk 0 is computed, and is computed while chunk 0 goes
            // out; the kernels of the three chunks may run at once.
            assert!(apart(ins[1], adds[0]) && apart(adds[1], outs[0]));
            assert!(apart(adds[0], adds[1]) && apart(adds[1], adds[2]));
            // The last launch reads what chunk 1's kernel wrote and writes what it read: it
            // follows it, but not chunk 2's work, which it does not touch.
            assert!(trace.ordered(adds[1], adds[3]) && trace.ordered(ins[1], adds[3]));
            assert!(apart(adds[2], adds[3]) && apart(outs[2], adds[3]));
            std::hint::black_box(h[n - 1]);
            let trace = Trace::of(&log.lines());
            assert!(outs.iter().all(|&o| trace.host_waited_for(o)));
        },
    );
}

#[test]
fn chunks_on_three_streams_overlap_and_never_race() {
    on_fake_driver(
        "chunks_on_three_streams_overlap_and_never_race",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                return;
            }
            let n = 10_000;
            let (mut a, mut b) = (gpu.pinned::<f32, _>(n).unwrap(), gpu.pinned(n).unwrap());
            a.fill(1.0);
            b.fill(2.0);
            let mut c = gpu.pinned::<f32, _>(n).unwrap();
            let streams = [
                gpu.stream().unwrap(),
                gpu.stream().unwrap(),
                gpu.stream().unwrap(),
            ];
            add_chunked(&a, &b, &mut c, 1024, &streams).unwrap();
            let lines = log.lines();
            let (ins, adds, outs) = (
                lines_of(&lines, "htod 4096 pinned "),
                lines_of(&lines, "launch add "),
                lines_of(&lines, "dtoh 4096 pinned "),
            );
            // Ten chunks, the last of 784 elements; each on stream k % 3.
            assert_eq!(
                (ins.len(), adds.len(), outs.len()),
                (18, 10, 9),
                "{lines:?}"
            );
            assert_eq!(log.count("dtoh 3136 pinned "), 1);
            let trace = Trace::of(&lines);
            // In a chunk: a and b in, the kernel, c out, in order.
            assert!(trace.ordered(ins[1], adds[0]) && trace.ordered(adds[0], outs[0]));
            // Across chunks, nothing waits: chunk 1 comes in while chunk 0 is added, and
            // chunk 2 is added while chunk 1 goes out...
            assert!(!trace.ordered(adds[0], ins[2]) && !trace.ordered(ins[2], adds[0]));
            assert!(!trace.ordered(outs[1], adds[2]) && !trace.ordered(adds[2], outs[1]));
            // ...but chunk 3 reuses chunk 0's buffers on its stream, after it. The copies into
            // `c` on two streams write one array, but not one byte: they are not ordered.
            assert!(trace.ordered(outs[0], ins[6]));
            assert!(!trace.ordered(outs[0], outs[1]) && !trace.ordered(outs[1], outs[0]));
            // Reading `c` waits for every copy into it.
            assert!(outs.iter().any(|&o| !Trace::of(&lines).host_waited_for(o)));
            std::hint::black_box(c[n - 1]);
            let trace = Trace::of(&log.lines());
            assert!(outs.iter().all(|&o| trace.host_waited_for(o)));
        },
    );
}

#[test]
fn streams_that_share_an_array_wait_for_each_other_and_for_nothing_else() {
    on_fake_driver(
        "streams_that_share_an_array_wait_for_each_other_and_for_nothing_else",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                return;
            }
            let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
            let (x1, x2) = (gpu.zeros::<f32, _>(256).unwrap(), gpu.zeros(256).unwrap());
            let mut a = gpu.empty::<f32, _>(256).unwrap();
            let (mut b, mut other) = (gpu.empty::<f32, _>(256).unwrap(), gpu.empty(256).unwrap());
            let cfg = LaunchConfig::new(2, 128).unwrap();
            add.launch_with(cfg.clone().on_stream(&s1), (&x1, &x1, &mut a))
                .unwrap();
            add.launch_with(cfg.clone().on_stream(&s2), (&a, &a, &mut b))
                .unwrap();
            add.launch_with(cfg.clone(), (&x2, &x2, &mut other))
                .unwrap();
            add.launch_with(cfg.on_stream(&s1), (&x1, &x1, &mut a))
                .unwrap();
            let _ = b.to_vec().unwrap();
            drop((a, b, other, x1, x2));
            let lines = log.lines();
            let launches = lines_of(&lines, "launch add ");
            let [write_a, read_a, elsewhere, rewrite_a] = launches[..] else {
                panic!("{lines:?}");
            };
            let trace = Trace::of(&lines);
            assert!(trace.ordered(write_a, read_a), "a read waits for the write");
            assert!(
                trace.ordered(read_a, rewrite_a),
                "a write waits for the read"
            );
            assert!(
                !trace.ordered(write_a, elsewhere),
                "other arrays wait for nothing"
            );
            assert!(!trace.ordered(read_a, elsewhere));
            // A user stream's work starts after the device stream's earlier work.
            assert!(trace.ordered(elsewhere, rewrite_a));
            let copy = lines_of(&lines, "dtoh ")[0];
            assert!(
                trace.ordered(read_a, copy),
                "the host's copy of b waits for its writer"
            );
        },
    );
}

#[test]
fn another_librarys_stream_runs_its_work_and_ours_in_order() {
    on_fake_driver(
        "another_librarys_stream_runs_its_work_and_ours_in_order",
        &[("FAKE_CUDA_DEVICES", "2")],
        |log| {
            use cudarc::driver::{result, sys, CudaContext};
            let gpu = fake_gpu();
            // The other library: the driver's own calls, on GPU 0's primary context, which the
            // runtime made current.
            let theirs = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
            let handle = theirs.cast::<std::ffi::c_void>();
            // SAFETY: `theirs` outlives `s` and its clones.
            let s = unsafe { gpu.external_stream(handle) }.unwrap();
            assert_eq!(s.handle(), Some(handle));
            let x = gpu.zeros::<f32, _>(256).unwrap();
            let (mut y, z) = (
                gpu.empty::<f32, _>(256).unwrap(),
                gpu.zeros::<f32, _>(256).unwrap(),
            );
            let (at_x, at_y, at_z) = (
                x.as_device_ptr().unwrap(),
                y.as_device_ptr().unwrap(),
                z.as_device_ptr().unwrap(),
            );
            // The other library's work on the arrays waits for the device's that made them.
            s.wait(&gpu.event().unwrap()).unwrap();
            // SAFETY: each call writes or reads 1 KiB of arrays alive until the stream is
            // synchronized below, on the context the runtime made current.
            unsafe { sys::cuMemsetD32Async(at_x, 1.0f32.to_bits(), 256, theirs) }
                .result()
                .unwrap();
            if has_ptx(add.ptx()) {
                add.launch_with(
                    LaunchConfig::new(2, 128).unwrap().on_stream(&s),
                    (&x, &x, &mut y),
                )
                .unwrap();
            }
            // SAFETY: as above.
            unsafe { result::memcpy_dtod_async(at_z, at_y, 1024, theirs) }.unwrap();
            s.synchronize().unwrap();
            let lines = log.lines();
            assert_eq!(log.count(&format!("sync stream={:#x}", handle as usize)), 1);
            let trace = Trace::of(&lines);
            assert!(trace.races().is_empty(), "{:?}\n{lines:?}", trace.races());
            if has_ptx(add.ptx()) {
                let launch = lines_of(&lines, "launch add ")[0];
                let (set, copy) = (lines_of(&lines, "memset ")[0], lines_of(&lines, "dtod ")[0]);
                // Their memset, our kernel, their copy: in order, our kernel on a stream of
                // the runtime's that follows theirs.
                assert!(
                    trace.ordered(set, launch) && trace.ordered(launch, copy),
                    "{lines:?}"
                );
                assert!(!lines[launch].contains(&format!("{:#x}", handle as usize)));
            }
            // Events and callbacks are theirs too, and dropping the stream leaves it theirs.
            let event = s.event().unwrap();
            event.synchronize().unwrap();
            drop(s);
            // SAFETY: the stream is the test's, used by nothing else now.
            unsafe { result::stream::destroy(theirs) }.unwrap();
            // Refused: another GPU's stream, a handle the driver does not know, the CPU backend.
            let gpu1 = CudaContext::new(1).unwrap();
            gpu1.bind_to_thread().unwrap();
            let other = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
            for (dev, h) in [
                (&gpu, other.cast()),
                (&gpu, 0xdead0 as *mut std::ffi::c_void),
                (&Device::cpu(), handle),
            ] {
                // SAFETY: refused before the handle is used; the fake driver knows its streams.
                let err = unsafe { dev.external_stream(h) }.unwrap_err();
                assert!(matches!(err, Error::ForeignStream { .. }), "{err}");
            }
            assert!(Device::cpu().stream().unwrap().handle().is_none());
        },
    );
}

#[test]
fn a_launch_past_48_kib_of_shared_memory_opts_in_once_per_size() {
    on_fake_driver(
        "a_launch_past_48_kib_of_shared_memory_opts_in_once_per_size",
        &[],
        |log| {
            let gpu = fake_gpu();
            assert_eq!(gpu.limits().max_shared_bytes_optin, 227 * 1024);
            if !has_ptx(shared_window_sums.ptx()) {
                return;
            }
            let mut sums = gpu.zeros::<u32, _>(2).unwrap();
            for bytes in [16 * 1024, 100 * 1024, 100 * 1024, 200 * 1024] {
                let config = LaunchConfig::new(2, 256).unwrap().shared_bytes(bytes);
                shared_window_sums.launch_with(config, &mut sums).unwrap();
            }
            let lines = log.lines();
            let opt_ins: Vec<&String> = lines
                .iter()
                .filter(|l| l.starts_with("max-dynamic-shared "))
                .collect();
            assert_eq!(
                opt_ins,
                [
                    "max-dynamic-shared shared_window_sums 102400",
                    "max-dynamic-shared shared_window_sums 204800"
                ],
                "{lines:?}"
            );
            let launches = log.launches("shared_window_sums");
            assert_eq!(launches.len(), 4);
            assert!(launches[3].contains(" shared=204800 "), "{}", launches[3]);
        },
    );
}

#[test]
fn shared_memory_past_the_opt_in_limit_never_reaches_the_gpu() {
    on_fake_driver(
        "shared_memory_past_the_opt_in_limit_never_reaches_the_gpu",
        &[("FAKE_CUDA_SHARED_OPTIN", "49152")],
        |log| {
            let gpu = fake_gpu();
            assert_eq!(gpu.limits().shared_bytes_limit(), 48 * 1024);
            let mut sums = gpu.zeros::<u32, _>(1).unwrap();
            let config = LaunchConfig::new(1, 256).unwrap().shared_bytes(100 * 1024);
            let err = shared_window_sums
                .launch_with(config, &mut sums)
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidLaunch {
                        reason: LaunchError::TooMuchSharedMemory { limit: 49152, .. },
                        ..
                    }
                ),
                "{err:?}"
            );
            assert!(err.to_string().contains("at most 49152"), "{err}");
            assert!(log.launches("shared_window_sums").is_empty());
        },
    );
}

#[test]
fn a_half_precision_value_passes_its_bits() {
    on_fake_driver("a_half_precision_value_passes_its_bits", &[], |log| {
        let gpu = fake_gpu();
        if !has_ptx(haxpy.ptx()) {
            return;
        }
        let a = kernel_runtime::f16::from_f32(1.5);
        let x = gpu.zeros::<kernel_runtime::f16, _>(8).unwrap();
        let mut y = gpu.zeros::<kernel_runtime::f16, _>(8).unwrap();
        haxpy.launch(1, 32, (a, &x, &mut y)).unwrap();
        let launch = &log.launches("haxpy")[0];
        assert!(
            launch.contains(&format!("params={},", hex(0x3e00))),
            "{launch}"
        );
        assert_eq!(y.to_vec().unwrap().len(), 8);
    });
}

#[test]
fn a_raw_pointer_passes_its_device_address() {
    on_fake_driver("a_raw_pointer_passes_its_device_address", &[], |log| {
        let gpu = fake_gpu();
        if !has_ptx(axpy_raw.ptx()) {
            return;
        }
        let x = gpu.zeros::<f32, _>(16).unwrap();
        let mut y = gpu.zeros::<f32, _>(16).unwrap();
        let (px, py) = (x.device_ptr(), y.device_ptr_mut().add(4));
        assert_eq!(Some(px.addr()), x.as_device_ptr());
        // SAFETY: 12 elements from each pointer lie within its array.
        unsafe {
            axpy_raw
                .launch(1, 32, (12, 1.5f32, px.clone(), py.clone()))
                .unwrap()
        };
        let launch = &log.launches("axpy_raw")[0];
        let expected = format!(
            "params={},{},{},{}",
            hex(12),
            hex(1.5f32.to_bits() as u64),
            hex(px.addr()),
            hex(py.addr())
        );
        assert!(launch.ends_with(&expected), "{launch} vs {expected}");
    });
}

#[test]
fn a_gpu_without_cooperative_launches_refuses_a_cooperative_kernel() {
    on_fake_driver(
        "a_gpu_without_cooperative_launches_refuses_a_cooperative_kernel",
        &[("FAKE_CUDA_NO_COOPERATIVE", "1")],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(grid_rotate.ptx()) {
                return;
            }
            let mut a = gpu.zeros::<u32, _>(64).unwrap();
            let mut b = gpu.zeros::<u32, _>(64).unwrap();
            let err = grid_rotate.launch(4, 16, (3, &mut a, &mut b)).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidLaunch {
                        reason: LaunchError::NotCooperative { .. },
                        ..
                    }
                ),
                "{err}"
            );
            common::assert_mentions(
                &err.to_string(),
                &["cannot launch cooperatively", "CPU backend"],
            );
            assert_eq!(log.count("launch"), 0);
        },
    );
}

#[test]
fn a_zero_dimensional_array_passes_its_pointer_alone() {
    on_fake_driver(
        "a_zero_dimensional_array_passes_its_pointer_alone",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(total_into_scalar.ptx()) {
                return;
            }
            let x = gpu.zeros::<u64, _>(100).unwrap();
            let (mut total, mut first) = (
                gpu.zeros::<u64, _>(()).unwrap(),
                gpu.zeros::<u64, _>(()).unwrap(),
            );
            total_into_scalar
                .launch(1, 128, (&x, &mut total, &mut first))
                .unwrap();
            let addr = |a: Option<u64>| hex(a.expect("a GPU array"));
            let want = [
                addr(x.as_device_ptr()),
                hex(100),
                addr(total.as_device_ptr()),
                addr(first.as_device_ptr()),
            ]
            .join(",");
            let launch = &log.launches("total_into_scalar")[0];
            assert!(
                launch.ends_with(&format!("params={want}")),
                "{launch} vs {want}"
            );
            assert_eq!(total.value().unwrap(), 0);
        },
    );
}

#[test]
fn launches_outside_the_gpus_limits_never_reach_it() {
    on_fake_driver(
        "launches_outside_the_gpus_limits_never_reach_it",
        &[],
        |log| {
            let gpu = fake_gpu();
            let mut data = gpu.zeros::<f64, _>(4096).unwrap();
            let too_many_threads = reverse_dynamic.launch(1, 2048, &mut data);
            assert!(
                matches!(
                    too_many_threads,
                    Err(Error::InvalidLaunch {
                        kernel: "reverse_dynamic",
                        ..
                    })
                ),
                "{too_many_threads:?}"
            );
            let cfg = LaunchConfig::new(1, 128).unwrap().shared_bytes(228 * 1024);
            let too_much_shared = reverse_dynamic.launch_with(cfg, &mut data);
            assert!(
                matches!(too_much_shared, Err(Error::InvalidLaunch { .. })),
                "{too_much_shared:?}"
            );
            assert_eq!(log.count("launch "), 0, "{:?}", log.lines());
        },
    );
}

#[test]
fn a_failed_driver_call_is_a_typed_error_and_the_gpu_stays_usable() {
    // The second allocation fails, as on a GPU whose memory is full.
    let env = [("FAKE_CUDA_FAIL", "cuMemAllocAsync=2@2")];
    on_fake_driver(
        "a_failed_driver_call_is_a_typed_error_and_the_gpu_stays_usable",
        &env,
        |_| {
            let gpu = fake_gpu();
            let first = gpu.zeros::<f32, _>(10).unwrap();
            match gpu.zeros::<f32, _>(100) {
                Err(err @ Error::OutOfMemory { bytes: 400, .. }) => {
                    common::assert_mentions(
                        &err.to_string(),
                        &["CUDA device 0", "could not allocate 400 bytes"],
                    );
                }
                other => panic!("expected OutOfMemory, got {other:?}"),
            }
            let third = gpu.to_device(&[1.0f32, 2.0][..]).unwrap();
            assert_eq!(third.to_vec().unwrap(), [1.0, 2.0]);
            assert_eq!(first.to_vec().unwrap(), [0.0; 10]);
        },
    );
}

#[test]
fn a_kernel_that_faults_is_named_by_every_later_call() {
    on_fake_driver(
        "a_kernel_that_faults_is_named_by_every_later_call",
        &[("FAKE_CUDA_TRAP", "off_by_one")],
        |_| {
            let gpu = fake_gpu();
            if !has_ptx(off_by_one.ptx()) {
                return;
            }
            let (x, mut out) = off_by_one_args(&gpu);
            // The launch is queued; the fault shows at the next wait, and at every call after it.
            off_by_one.launch(4, 32, (&x, &mut out)).unwrap();
            for err in [gpu.synchronize().unwrap_err(), out.to_vec().unwrap_err()] {
                common::assert_trapped(&err, "off_by_one");
                assert!(
                    err.to_string().contains("CUDA_ERROR_LAUNCH_FAILED"),
                    "{err}"
                );
            }
        },
    );
}

#[test]
fn user_streams_are_ordered_with_the_devices_own_stream() {
    on_fake_driver(
        "user_streams_are_ordered_with_the_devices_own_stream",
        &[],
        |log| {
            let gpu = fake_gpu();
            if !has_ptx(add.ptx()) {
                return;
            }
            let stream = gpu.stream().unwrap();
            let a = gpu.zeros::<f32, _>(256).unwrap();
            let mut c = gpu.empty::<f32, _>(256).unwrap();
            let start = gpu.event().unwrap();
            add.launch_with(
                LaunchConfig::new(2, 128).unwrap().on_stream(&stream),
                (&a, &a, &mut c),
            )
            .unwrap();
            let _ = c.to_vec().unwrap();
            let end = gpu.event().unwrap();
            assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
            // The launch waited for the device's stream, and the copy after it for the launch.
            let lines = log.lines();
            let at = |prefix: &str| {
                lines
                    .iter()
                    .position(|l| l.starts_with(prefix))
                    .unwrap_or_else(|| panic!("no `{prefix}` in {lines:?}"))
            };
            let launch = at("launch add ");
            let user = lines[launch]
                .split(" stream=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string();
            let waits: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.starts_with("wait "))
                .map(|(i, _)| i)
                .collect();
            assert!(
                lines[waits[0]].starts_with(&format!("wait stream={user} ")) && waits[0] < launch,
                "{lines:?}"
            );
            let after = waits
                .iter()
                .find(|&&w| w > launch)
                .expect("a wait after the launch");
            assert!(
                !lines[*after].starts_with(&format!("wait stream={user} ")) && *after < at("dtoh "),
                "{lines:?}"
            );
            stream.synchronize().unwrap();
        },
    );
}

#[test]
fn other_threads_bind_the_gpus_context_before_using_it() {
    on_fake_driver(
        "other_threads_bind_the_gpus_context_before_using_it",
        &[],
        |_| {
            let gpu = fake_gpu();
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let gpu = gpu.clone();
                    std::thread::spawn(move || {
                        let v = vec![t as u64; 100];
                        let d = gpu.to_device(&v).unwrap();
                        gpu.synchronize().unwrap();
                        assert_eq!(d.to_vec().unwrap(), v);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        },
    );
}

#[test]
fn gpus_without_memory_pools_allocate_with_the_plain_allocator() {
    on_fake_driver(
        "gpus_without_memory_pools_allocate_with_the_plain_allocator",
        &[("FAKE_CUDA_NO_MEMORY_POOLS", "1")],
        |log| {
            {
                let gpu = fake_gpu();
                let d = gpu.to_device(&[3u8, 1, 4, 1, 5][..]).unwrap();
                assert_eq!(d.to_vec().unwrap(), [3, 1, 4, 1, 5]);
                assert_eq!(gpu.zeros::<u8, _>(7).unwrap().to_vec().unwrap(), [0; 7]);
            }
            assert_eq!(log.count("alloc "), 2);
            assert_eq!(log.count("free "), 2);
        },
    );
}

/// The error of the first launch on the fake GPU, which must refuse the module as the driver's
/// settings say; `None` where the build has no PTX to load.
fn refused_module() -> Option<String> {
    let gpu = fake_gpu();
    if !has_ptx(add.ptx()) {
        return None;
    }
    let a = gpu.zeros::<f32, _>(4).unwrap();
    let mut c = gpu.zeros::<f32, _>(4).unwrap();
    let err = add.launch(1, 4, (&a, &a, &mut c)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Cuda { .. }), "{msg}");
    Some(msg)
}

#[test]
fn ptx_for_a_newer_gpu_is_refused_with_what_to_do() {
    let env = [("FAKE_CUDA_CC", "60")];
    on_fake_driver(
        "ptx_for_a_newer_gpu_is_refused_with_what_to_do",
        &env,
        |_| {
            if let Some(msg) = refused_module() {
                common::assert_mentions(&msg, &["this GPU is sm_60", "KERNEL_PTX_ARCH=sm_60"]);
            }
        },
    );
}

#[test]
fn ptx_newer_than_the_driver_is_refused_with_what_to_do() {
    // A driver that takes no PTX ISA newer than 5.0, older than any this toolchain writes.
    let env = [("FAKE_CUDA_PTX_ISA", "50")];
    on_fake_driver(
        "ptx_newer_than_the_driver_is_refused_with_what_to_do",
        &env,
        |_| {
            if let Some(msg) = refused_module() {
                let driver = "UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an \
                          unsupported toolchain; the PTX (ISA ";
                common::assert_mentions(&msg, &[driver, "update the NVIDIA driver"]);
            }
        },
    );
}

#[test]
fn a_sort_whose_kernels_go_wrong_stops_with_an_error() {
    // The fake runs no kernel, so the filing of the first pass files nothing: the sort must
    // say so rather than end with the keys unsorted.
    on_fake_driver(
        "a_sort_whose_kernels_go_wrong_stops_with_an_error",
        &[],
        |_| {
            let gpu = fake_gpu();
            if !has_ptx(quicksort::qs_file.ptx()) {
                return;
            }
            let mut keys = gpu
                .to_device(&(0..5000u32).rev().collect::<Vec<_>>())
                .unwrap();
            match quicksort::sort(&mut keys) {
                Err(Error::KernelFault {
                    kernel: "qs_file",
                    message,
                }) => {
                    assert!(message.contains("0 of the 1 segments"), "{message}")
                }
                other => panic!("expected a fault of qs_file, got {other:?}"),
            }
        },
    );
}

#[test]
fn a_driver_without_a_gpu_leaves_the_default_device_on_the_cpu() {
    let env = [("FAKE_CUDA_DEVICES", "0"), ("KERNEL_DEVICE", "cuda")];
    on_fake_driver(
        "a_driver_without_a_gpu_leaves_the_default_device_on_the_cpu",
        &env,
        |_| {
            match Device::from_env() {
                Err(Error::CudaUnavailable { ordinal: 0, reason }) => {
                    assert!(reason.contains("found no GPU"), "{reason}")
                }
                other => panic!("expected CudaUnavailable, got {other:?}"),
            }
            assert_eq!(Device::default().kind(), DeviceKind::Cpu);
        },
    );
}

#[test]
fn launch_blocking_reports_a_fault_at_its_launch() {
    let env = [
        ("FAKE_CUDA_TRAP", "off_by_one"),
        ("KERNEL_LAUNCH_BLOCKING", "1"),
    ];
    on_fake_driver(
        "launch_blocking_reports_a_fault_at_its_launch",
        &env,
        |_| {
            let gpu = fake_gpu();
            if !has_ptx(off_by_one.ptx()) {
                return;
            }
            let (x, mut out) = off_by_one_args(&gpu);
            let err = off_by_one.launch(4, 32, (&x, &mut out)).unwrap_err();
            common::assert_trapped(&err, "off_by_one");
        },
    );
}

mod outside {
    use kernel_runtime::prelude::*;

    /// A kernel outside the crate's library, in a test: its build.rs compiles it into a
    /// module of this test's own.
    #[kernel]
    pub fn outside_the_library(x: &mut [f32]) {
        let i = grid(1);
        if i < x.len() {
            x[i] = 1.0;
        }
    }
}
use outside::outside_the_library;

#[test]
fn a_kernel_in_a_test_has_ptx_of_its_own() {
    on_fake_driver("a_kernel_in_a_test_has_ptx_of_its_own", &[], |log| {
        let gpu = fake_gpu();
        let mut x = gpu.zeros::<f32, _>(4).unwrap();
        let Some(ptx) = outside_the_library.ptx() else {
            // Without a device toolchain: no module, and a launch on a GPU says why.
            assert!(!has_ptx(None));
            let err = outside_the_library.launch(1, 4, &mut x).unwrap_err();
            assert!(err.to_string().contains("wrote no PTX module"), "{err}");
            return;
        };
        assert!(ptx.contains(".entry outside_the_library("), "{ptx}");
        // The library's module is another: the test's kernels are not in it.
        assert!(!add.ptx().unwrap().contains("outside_the_library"));
        outside_the_library.launch(1, 4, &mut x).unwrap();
        gpu.synchronize().unwrap();
        assert_eq!(
            log.launches("outside_the_library").len(),
            1,
            "{:?}",
            log.lines()
        );
    });
}

#[test]
fn an_sm_90_gpu_loads_the_variants_cubin_where_the_build_assembled_one() {
    use base64::Engine;
    on_fake_driver(
        "an_sm_90_gpu_loads_the_variants_cubin_where_the_build_assembled_one",
        &[],
        |log| {
            let Some(module) = add.ptx().filter(|p| has_ptx(Some(p))) else {
                return;
            };
            let Some(ptxas) = std::env::var_os("KERNEL_PTXAS") else {
                eprintln!("skipped: KERNEL_PTXAS names no ptxas to make a cubin with");
                return;
            };
            // A variant of `add`'s module for sm_90a (its PTX retargeted), after its own cubin,
            // as `KERNEL_CUBIN_ARCHS=sm_90` builds a crate with a variant.
            let variant: String = module
                .lines()
                .map(|l| match l.trim() {
                    t if t.starts_with(".version ") => ".version 8.0\n".to_string(),
                    t if t.starts_with(".target ") => ".target sm_90a\n".to_string(),
                    _ => format!("{l}\n"),
                })
                .collect();
            let engine = base64::engine::general_purpose::STANDARD;
            let line = format!(
                "{}sm_90a {}",
                kernel_build::VARIANT_SECTION,
                engine.encode(&variant)
            );
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("variant-cubin-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("kernel_ptx.sm_90a.ptx");
            std::fs::write(&file, &variant).unwrap();
            let archs = ["sm_90a".to_string()];
            let cubin = kernel_build::cubin_sections(Path::new(&ptxas), &file, &archs).unwrap();
            let text = format!("{module}{cubin}{line}\n");
            launch_add_of(&fake_gpu(), Box::leak(text.into_boxed_str())).unwrap();
            let lines = log.lines();
            let loads = lines_of(&lines, "load module ");
            assert!(
                loads.len() == 1 && lines[loads[0]].ends_with(" cubin"),
                "{lines:?}"
            );
        },
    );
}

/// Launches `matmul_wgmma` on the fake GPU of compute capability `cc`, in `test`'s child, and
/// checks the module it loaded: `load module .. ptx sm_90a` for its variant.
fn loads_for_warpgroup_mma(test: &str, cc: &str, loaded: &str) {
    use hopper_kernels::{matmul_wgmma, WG_THREADS};
    on_fake_driver(test, &[("FAKE_CUDA_CC", cc)], |log| {
        if !has_ptx(matmul_wgmma.ptx()) {
            return;
        }
        let gpu = fake_gpu();
        let a = gpu.zeros::<kernel_runtime::f16, _>((64, 64)).unwrap();
        let mut c = gpu.zeros::<f32, _>((64, 64)).unwrap();
        matmul_wgmma
            .launch((1, 1), WG_THREADS, (&a, &a, &mut c))
            .unwrap();
        let lines = log.lines();
        let loads = lines_of(&lines, "load module ");
        assert_eq!(loads.len(), 1, "{lines:?}");
        assert!(lines[loads[0]].ends_with(loaded), "{lines:?}");
        assert_eq!(log.launches("matmul_wgmma").len(), 1);
    });
}

#[test]
fn an_sm_90_gpu_loads_the_modules_sm_90a_variant() {
    loads_for_warpgroup_mma(
        "an_sm_90_gpu_loads_the_modules_sm_90a_variant",
        "90",
        " ptx sm_90a",
    );
}

#[test]
fn an_older_gpu_loads_the_modules_own_ptx() {
    loads_for_warpgroup_mma("an_older_gpu_loads_the_modules_own_ptx", "80", " ptx sm_80");
}

#[test]
fn a_newer_gpu_loads_the_modules_own_ptx() {
    loads_for_warpgroup_mma("a_newer_gpu_loads_the_modules_own_ptx", "100", " ptx sm_80");
}

#[test]
fn a_user_stream_waits_for_the_device_stream_only_after_new_work_there() {
    on_fake_driver(
        "a_user_stream_waits_for_the_device_stream_only_after_new_work_there",
        &[],
        |log| {
            let gpu = fake_gpu();
            let n = 1024;
            let mut h = gpu.pinned::<f32, _>(n).unwrap();
            h.fill(1.0);
            let mut d = gpu.zeros::<f32, _>(n).unwrap();
            let s = gpu.stream().unwrap();
            let from = log.lines().len();
            for _ in 0..3 {
                s.upload(h.slice(..).unwrap(), d.slice_mut(..).unwrap())
                    .unwrap();
                s.download(d.slice(..).unwrap(), h.slice_mut(..).unwrap())
                    .unwrap();
            }
            let mut e = gpu.zeros::<f32, _>(n).unwrap();
            s.upload(h.slice(..).unwrap(), e.slice_mut(..).unwrap())
                .unwrap();
            s.synchronize().unwrap();
            // The device's stream is the one the arrays were allocated and cleared on; the user
            // stream waits for it at its first operation and after the second allocation alone.
            let lines = log.lines();
            let field = |line: &str, name: &str| {
                line.split(' ')
                    .find_map(|w| w.strip_prefix(name))
                    .map(str::to_string)
            };
            let own = field(&lines[lines_of(&lines, "memset ")[0]], "stream=").unwrap();
            let recorded_on_own: Vec<String> = lines
                .iter()
                .filter(|l| l.starts_with("record ") && field(l, "stream=").as_ref() == Some(&own))
                .filter_map(|l| field(l, "event="))
                .collect();
            let waits_for_own: Vec<usize> = (from..lines.len())
                .filter(|&i| {
                    lines[i].starts_with("wait ")
                        && field(&lines[i], "stream=") != Some(own.clone())
                })
                .filter(|&i| recorded_on_own.contains(&field(&lines[i], "event=").unwrap()))
                .collect();
            let allocs = lines_of(&lines, "alloc ");
            assert_eq!(waits_for_own.len(), 2, "{:?}", &lines[from..]);
            assert!(waits_for_own[0] < lines_of(&lines, "htod ")[0]);
            assert!(waits_for_own[1] > allocs[1], "{:?}", &lines[from..]);
            assert!(Trace::of(&lines).races().is_empty());
        },
    );
}

#[test]
fn a_gpus_properties_are_what_its_driver_says() {
    on_fake_driver("a_gpus_properties_are_what_its_driver_says", &[], |_| {
        let gpu = fake_gpu();
        let props = gpu.properties().unwrap();
        assert_eq!(props.name, gpu.name());
        assert_eq!((props.multiprocessors, props.warp_size), (132, 32));
        assert_eq!(props.max_threads_per_block, 1024);
        assert_eq!(props.shared_bytes_per_block, 48 * 1024);
        assert_eq!(props.const_bytes, 64 * 1024);
        assert_eq!(props.total_memory, 1 << 34);
        assert!(props.cooperative_launch && props.managed_memory);
        let hw = props.gpu.unwrap();
        assert_eq!(Some(hw.compute_capability), gpu.compute_capability());
        assert_eq!(hw.uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e00");
        assert_eq!(
            (hw.registers_per_multiprocessor, hw.l2_cache_bytes),
            (65536, 50 << 20)
        );
        assert_eq!(hw.max_threads_per_multiprocessor, 2048);
        assert_eq!(hw.pci, (0, 0x19, 0));
        assert_eq!(hw.peak_memory_bandwidth(), 3_352_320_000_000.0);
    });
}
