// A kernel takes device arrays: a host `Vec` passed for an array parameter says how to copy it.
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
    let a = vec![1.0f32; 4];
    let b = dev.to_device(&a).unwrap();
    let mut c = dev.zeros::<f32, _>(4).unwrap();
    add.launch(1, 4, (&a, &b, &mut c)).unwrap();
}
