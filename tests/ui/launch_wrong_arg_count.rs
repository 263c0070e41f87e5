// A launch passes exactly one argument per kernel parameter.
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
    let a = dev.to_device(&[1.0f32, 2.0][..]).unwrap();
    let mut c = dev.zeros::<f32, _>(2).unwrap();
    add.launch(1, 2, (&a, &mut c)).unwrap();
}
