// An uncleared array holds whatever bits the memory had: not every byte is a `bool`.
use kernel_runtime::prelude::*;

fn main() {
    let dev = Device::cpu();
    let flags = dev.empty::<bool, _>(16).unwrap();
    drop(flags);
}
