// Launching a kernel that takes raw pointers is `unsafe`: the caller promises what they address.
use kernel_runtime::prelude::*;

#[kernel]
unsafe fn scale(n: usize, x: *mut f32) {
    let i = grid(1);
    if i < n {
        unsafe { *x.add(i) *= 2.0 };
    }
}

fn main() -> Result<(), kernel_runtime::Error> {
    let dev = Device::cpu();
    let mut x = dev.zeros::<f32, _>(4)?;
    scale.launch(1, 4, (4, x.device_ptr_mut()))
}
