// `#[device]` functions may declare static shared arrays (one per block), but not views of the
// dynamic part, whose start only the kernel knows: the kernel passes the view in.
use kernel_runtime::prelude::*;

#[device]
fn stage(x: f32) -> f32 {
    let mut tile = dynamic_shared![f32];
    tile[0] = x;
    tile[0]
}

fn main() {
    let _ = stage(1.0);
}
