// Every field of a `DeviceCopy` struct must itself be `DeviceCopy`: no references or pointers.
use kernel_runtime::prelude::*;

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Params {
    pub scale: f32,
    pub table: &'static [f32],
}

fn main() {}
