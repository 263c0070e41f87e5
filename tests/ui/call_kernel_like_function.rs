// A kernel is launched (`add.launch(blocks, threads, (args..))`), not called like a function.
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
    let b = dev.to_device(&[3.0f32, 4.0][..]).unwrap();
    let mut c = dev.zeros::<f32, _>(2).unwrap();
    add(&a, &b, &mut c);
}
