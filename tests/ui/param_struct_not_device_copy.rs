// A struct passed to a kernel must be `#[repr(C)]` and derive `DeviceCopy`.
use kernel_runtime::prelude::*;

#[derive(Clone, Copy)]
pub struct Params {
    pub scale: f32,
    pub offset: f32,
}

#[kernel]
pub fn affine(p: Params, x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    out[i] = p.scale * x[i] + p.offset;
}

fn main() {
    let _ = affine;
}
