// Widths above 65535 are refused, as `format!` refuses them.
use kernel_runtime::prelude::*;

#[kernel]
fn show(x: &[f32]) {
    let i = grid(1);
    kprintln!("[{:4294967295}]", x[i]);
}

fn main() {}
