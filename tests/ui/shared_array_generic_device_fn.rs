// A device function's shared array is one per block, whatever the instance: its type cannot be
// the function's parameter.
use kernel_runtime::prelude::*;

#[device]
fn stage<T: Copy + Default>(x: T) -> T {
    let mut tile = shared_array![T; 32];
    tile[0] = x;
    tile[0]
}

fn main() {
    let _ = stage(1.0f32);
}
