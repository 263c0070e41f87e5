// `#[derive(DeviceCopy)]` needs `#[repr(C)]`: the layout must be the same on host and device.
use kernel_runtime::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
pub struct Params {
    pub scale: f32,
    pub offset: f32,
}

fn main() {}
