// A foreign body may read and write through a raw pointer unchecked: its declaration must be
// an `unsafe fn`, so that callers say they keep its contract.
use kernel_runtime::prelude::*;

#[device(extern)]
pub fn scale_in_place(values: *mut f32, n: u32, by: f32);

fn main() {}
