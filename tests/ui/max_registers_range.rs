// A thread's registers are capped at 16 to 255, as PTX's `.maxnreg` takes them.
use kernel_runtime::prelude::*;

#[kernel(max_registers = 300)]
pub fn k(x: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        x[i] *= 2.0;
    }
}

fn main() {}
