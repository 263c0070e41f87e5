// A generic type is a kernel parameter when it is plain device data (`Complex32` is); an
// `Option` is not, and is refused at its type.
use kernel_runtime::prelude::*;

#[kernel]
pub fn scale(z: Complex32, factor: Option<f32>, out: &mut [Complex32]) {
    let i = grid(1);
    if i < out.len() {
        out[i] = z * factor.unwrap_or(1.0);
    }
}

fn main() {}
