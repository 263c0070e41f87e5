// A fill sets elements from the bytes of one value: a struct with padding has bytes that are
// not initialised, so it is not a value to fill with.
use kernel_runtime::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Padded {
    tag: u8,
    value: u32,
}

fn main() {
    let dev = Device::cpu();
    let mut a = dev.zeros::<Padded, _>(16).unwrap();
    a.fill(Padded { tag: 1, value: 2 }).unwrap();
}
