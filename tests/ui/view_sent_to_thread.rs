// A kernel's array view cannot be moved into a thread that may outlive the launch.
use kernel_runtime::prelude::*;
use std::thread::spawn;

#[kernel]
pub fn leak(mut out: &mut [f32]) {
    spawn(move || out[0] = 1.0);
}

fn main() {}
