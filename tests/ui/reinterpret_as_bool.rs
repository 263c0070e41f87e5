// Reinterpreted bytes are any bits: not every byte is a `bool`.
use kernel_runtime::prelude::*;

fn main() {
    let dev = Device::cpu();
    let bytes = dev.to_device(&[0u8, 1, 2][..]).unwrap();
    let flags = bytes.reinterpret::<bool>().unwrap();
    drop(flags);
}
