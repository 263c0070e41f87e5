// A shared array is the block's memory for one launch: it cannot outlive the launch either.
use kernel_runtime::prelude::*;
use std::sync::Mutex;

static KEPT: Mutex<Option<SharedArray1<'static, u32>>> = Mutex::new(None);

#[kernel]
pub fn keep_shared(out: &mut [u32]) {
    let s = shared_array![u32; 32];
    *KEPT.lock().unwrap() = Some(s);
    out[0] = 1;
}

fn main() {}
