// Rule: a stencil reads its inputs outside macros, where each relative index is checked.
use kernel_runtime::prelude::*;

#[stencil]
fn shown(x: &[i32]) -> i32 {
    kprintln!("{}", x[5]);
    x[0]
}

fn main() {}
