use kernel_runtime::prelude::*;

// 80 000 bytes: more than the 64 KiB of constant memory.
constant_array!(pub static BIG: [f32; 20_000]);

fn main() {}
