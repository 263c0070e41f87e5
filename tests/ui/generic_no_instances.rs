// `instances()` with no type is a compile error at the list, not a panic of the macro.
use kernel_runtime::prelude::*;

#[kernel(instances())]
fn scale<T: DeviceNumber>(a: T, x: &mut [T]) {
    let i = grid(1);
    if i < x.len() {
        x[i] = x[i] * a;
    }
}

fn main() {}
