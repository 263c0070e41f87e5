use kernel_runtime::prelude::*;

#[reduce]
fn both(a: bool, b: bool) -> bool {
    a && b
}

fn main() {}
