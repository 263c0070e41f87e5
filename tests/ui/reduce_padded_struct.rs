use kernel_runtime::prelude::*;

/// Twelve bytes of fields in sixteen: four of padding, which a warp cannot move as words.
#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Padded {
    value: f64,
    index: u32,
}

#[reduce]
fn first(a: Padded, b: Padded) -> Padded {
    if a.index <= b.index {
        a
    } else {
        b
    }
}

fn main() {}
