// A device function's shared array above the 48 KiB of static shared memory a kernel may
// declare is refused at compile time.
use kernel_runtime::prelude::*;

#[device]
fn stage(x: f64) -> f64 {
    let mut tile = shared_array![f64; 8192];
    tile[0] = x;
    tile[0]
}

fn main() {
    let _ = stage(1.0);
}
