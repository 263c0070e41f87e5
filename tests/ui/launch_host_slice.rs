// Arrays are launched from device memory (`dev.to_device(..)`), not from host slices.
use kernel_runtime::prelude::*;

#[kernel]
pub fn double(x: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        x[i] *= 2.0;
    }
}

fn main() {
    let mut host = vec![1.0f32, 2.0, 3.0];
    double.launch(1, 3, &mut host[..]).unwrap();
}
