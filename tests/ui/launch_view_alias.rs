// A writable view of an array borrows it: the array cannot be passed beside the view.
use kernel_runtime::prelude::*;

#[kernel]
pub fn copy(src: &[f32], dst: &mut [f32]) {
    let i = grid(1);
    if i < dst.len() {
        dst[i] = src[i];
    }
}

fn main() -> Result<(), Error> {
    let dev = Device::cpu();
    let mut x = dev.to_device(&[1.0f32, 2.0, 3.0, 4.0][..])?;
    let tail = x.slice_mut(2..)?;
    copy.launch(1, 2, (&x, tail))?;
    Ok(())
}
