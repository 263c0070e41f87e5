// A kernel's array view lives only as long as its launch: it cannot be kept in a `static`,
// through which host code would later write into freed memory.
use kernel_runtime::prelude::*;
use std::sync::Mutex;

static KEPT: Mutex<Option<View1Mut<'static, f32>>> = Mutex::new(None);

#[kernel]
pub fn keep(out: &mut [f32]) {
    *KEPT.lock().unwrap() = Some(out);
}

fn main() {}
