use kernel_runtime::prelude::*;

// A module array starts all zeros and is read back as its bytes: its elements take any bits.
global_array!(pub static FLAGS: [bool; 8]);

fn main() {}
