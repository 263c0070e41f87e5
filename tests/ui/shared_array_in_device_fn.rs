// `#[device]` functions cannot declare shared arrays: declare them in the kernel, pass them in.
use kernel_runtime::prelude::*;

#[device]
fn stage(x: f32) -> f32 {
    let mut tile = shared_array![f32; 256];
    tile[0] = x;
    tile[0]
}

fn main() {
    let _ = stage(1.0);
}
