// A reference to a reference (`&&[f32]`) cannot be a kernel parameter.
use kernel_runtime::prelude::*;

#[kernel]
fn copy(a: &&[f32], out: &mut [f32]) {
    let i = grid(1);
    out[i] = a[i];
}

fn main() {}
