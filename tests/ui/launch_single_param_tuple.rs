// A kernel with one parameter takes the bare argument, not a 1-tuple `(&mut x,)`.
use kernel_runtime::prelude::*;

#[kernel]
pub fn double(x: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        x[i] *= 2.0;
    }
}

fn main() {
    let dev = Device::cpu();
    let mut x = dev.to_device(&[1.0f32, 2.0][..]).unwrap();
    double.launch(1, 2, (&mut x,)).unwrap();
}
