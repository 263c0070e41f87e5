// A `&mut [T]` parameter needs a `&mut DeviceArray1<T>` argument, not a shared borrow.
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
    let x = dev.to_device(&[1.0f32, 2.0][..]).unwrap();
    double.launch(1, 2, &x).unwrap();
}
