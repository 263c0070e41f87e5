// A launch with types the generic kernel does not list is a compile error naming what to add.
use kernel_runtime::prelude::*;

#[kernel(instances(f32, f64))]
fn fill<T: DeviceNumber>(value: T, out: &mut [T]) {
    let i = grid(1);
    if i < out.len() {
        out[i] = value;
    }
}

fn main() -> Result<(), kernel_runtime::Error> {
    let dev = Device::cpu();
    let mut out = dev.zeros::<u16, _>(4)?;
    fill.launch(1, 4, (7u16, &mut out))
}
