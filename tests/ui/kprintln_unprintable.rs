use kernel_runtime::prelude::*;

#[kernel]
pub fn show(x: &[f32]) {
    // A whole array does not print: its elements do.
    kprintln!("{}", x);
}

fn main() {}
