use kernel_runtime::prelude::*;

constant_array!(pub static TAPS: [f32; 3] = [0.25, 0.5, 0.25]);

fn main() {}
