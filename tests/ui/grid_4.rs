// `grid(n)` takes 1, 2 or 3 dimensions.
use kernel_runtime::prelude::*;

#[kernel]
fn fill(out: &mut [f32]) {
    let (i, _, _, _) = grid(4);
    out[i] = 1.0;
}

fn main() {}
