// Launch arguments must match the kernel's parameters: `&[f32]` takes a `DeviceArray1<f32>`.
use kernel_runtime::prelude::*;

#[kernel]
pub fn add(a: &[f32], b: &[f32], c: &mut [f32]) {
    let i = grid(1);
    if i < c.len() {
        c[i] = a[i] + b[i];
    }
}

fn main() {
    let dev = Device::cpu();
    let a: DeviceArray1<f64> = dev.to_device(&[1.0f64, 2.0][..]).unwrap();
    let b = dev.to_device(&[3.0f32, 4.0][..]).unwrap();
    let mut c = dev.zeros::<f32, _>(2).unwrap();
    add.launch(1, 2, (&a, &b, &mut c)).unwrap();
}
