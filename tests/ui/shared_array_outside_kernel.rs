// `shared_array!` is only meaningful directly inside a `#[kernel]` function.
use kernel_runtime::prelude::*;

fn main() {
    let tile = shared_array![f32; 256];
    let _ = tile;
}
