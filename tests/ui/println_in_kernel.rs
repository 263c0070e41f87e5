// `println!` is not available in kernels: device code is `no_std`, without stdout.
use kernel_runtime::prelude::*;

#[kernel]
fn show(x: &[f32]) {
    let i = grid(1);
    println!("{}", x[i]);
}

fn main() {}
