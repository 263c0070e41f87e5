// A struct is as good as its fields: a `bool` field has bit patterns that are not values, and
// padding is left uninitialised by every copy, so neither may live in shared memory.
use kernel_runtime::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Flagged {
    value: f32,
    set: bool,
}

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Padded {
    tag: u8,
    value: u32,
}

#[kernel]
pub fn flags(out: &mut [f32]) {
    let s = shared_array![Flagged; 4];
    let p = shared_array![Padded; 4];
    out[0] = s[0].value + p[0].value as f32;
}

fn main() {}
