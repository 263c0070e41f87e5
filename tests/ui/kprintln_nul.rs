// A NUL character would end printf's format string: the rest of the line would not print.
use kernel_runtime::prelude::*;

#[kernel]
fn show(x: &[f32]) {
    let i = grid(1);
    kprintln!("a\0b {}", x[i]);
}

fn main() {}
