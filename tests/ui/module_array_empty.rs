use kernel_runtime::prelude::*;

// A module array holds at least one element.
global_array!(pub static NOTHING: [u32; 0]);

fn main() {}
