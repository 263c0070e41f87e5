// An instance that does not meet the type parameter's bounds is refused where it is listed,
// though nothing launches it.
use kernel_runtime::prelude::*;

#[kernel(instances(f32, String))]
fn scale<T: DeviceNumber>(a: T, x: &mut [T]) {
    let i = grid(1);
    if i < x.len() {
        x[i] = x[i] * a;
    }
}

fn main() {}
