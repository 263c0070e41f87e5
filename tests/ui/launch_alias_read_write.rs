// One array cannot be passed both as input (`&`) and as output (`&mut`) of a launch.
use kernel_runtime::prelude::*;

#[kernel]
pub fn copy(src: &[f32], dst: &mut [f32]) {
    let i = grid(1);
    if i < dst.len() {
        dst[i] = src[i];
    }
}

fn main() {
    let dev = Device::cpu();
    let mut x = dev.to_device(&[1.0f32, 2.0][..]).unwrap();
    copy.launch(1, 2, (&x, &mut x)).unwrap();
}
