use kernel_runtime::prelude::*;

#[kernel]
pub fn show(x: &[f32]) {
    let i = grid(1);
    kprintln!("{:x}", x[i]);
}

fn main() {}
