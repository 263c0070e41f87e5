use gpu_kernels::*;
use kernel_runtime::prelude::*;
use kernel_suite::reference;
use ndarray::Array2;

#[test]
fn smoke() {
    let dev = Device::cpu();
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let da = dev.to_device(&a).unwrap();
    let mut dc = dev.zeros::<f32, _>(n).unwrap();
    add.launch(n.div_ceil(256), 256, (&da, &da, &mut dc))
        .unwrap();
    assert_eq!(dc.to_vec().unwrap(), reference::add(&a, &a));

    let x = Array2::from_shape_fn((37, 53), |(i, j)| ((i * 31 + j * 17) % 255) as i8);
    let dx = dev.to_device(&x).unwrap();
    let mut out = dev.zeros_like(&dx).unwrap();
    smooth
        .launch(
            (53usize.div_ceil(16), 37usize.div_ceil(16)),
            (16, 16),
            (&dx, &mut out),
        )
        .unwrap();
    assert_eq!(
        out.to_host().unwrap(),
        reference::smooth(&x, &Array2::zeros((37, 53)))
    );

    let n = 1000usize;
    let mut rows = dev.zeros::<f64, _>(n).unwrap();
    integrate2d_rows
        .launch(n.div_ceil(128), 128, (n, &mut rows))
        .unwrap();
    let v: f64 = rows.to_vec().unwrap().iter().sum();
    let nb = n.div_ceil(INTEGRATE_TPB);
    let mut blocks = dev.zeros::<f64, _>(nb).unwrap();
    integrate2d_shared
        .launch(nb, INTEGRATE_TPB, (n, &mut blocks))
        .unwrap();
    let w: f64 = blocks.to_vec().unwrap().iter().sum();
    println!("{v} {w} {}", reference::integrate2d(n));
    assert!((v - w).abs() < 1e-9);

    let a = Array2::from_shape_fn((33, 20), |(i, j)| (i + j) as f32 * 0.5);
    let b = Array2::from_shape_fn((20, 17), |(i, j)| i as f32 - j as f32);
    let (da, db) = (dev.to_device(&a).unwrap(), dev.to_device(&b).unwrap());
    let mut dc = dev.zeros::<f32, _>((33, 17)).unwrap();
    matmul_tiled
        .launch(
            (17usize.div_ceil(TPB), 33usize.div_ceil(TPB)),
            (TPB, TPB),
            (&da, &db, &mut dc),
        )
        .unwrap();
    assert_eq!(dc.to_host().unwrap(), reference::matmul(&a, &b));

    let mut rng = reference::SplitMix64(7);
    let keys: Vec<u32> = (0..100_000).map(|_| rng.next_u64() as u32 % 5000).collect();
    let mut dk = dev.to_device(&keys).unwrap();
    gpu_kernels::quicksort::sort(&mut dk).unwrap();
    assert!(reference::is_sorted_permutation(
        &keys,
        &dk.to_vec().unwrap()
    ));
}
