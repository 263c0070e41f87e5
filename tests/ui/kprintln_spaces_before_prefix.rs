// `{:#8x}` pads with spaces before `0x`, which printf cannot do as Rust does: refused, naming
// the forms that it can.
use kernel_runtime::prelude::*;

#[kernel]
fn show(x: &[u32]) {
    let i = grid(1);
    kprintln!("[{:#8x}]", x[i]);
}

fn main() {}
