// A view of a launch argument is for the launcher, which knows the array is in host memory:
// safe code cannot take one (a GPU's array, or unchecked indices, would read anywhere).
use kernel_runtime::__rt::KernelArg;
use kernel_runtime::prelude::*;

fn main() {
    let dev = Device::cpu();
    let a = dev.zeros::<f32, _>(4).unwrap();
    let v = KernelArg::view::<false>(&a, "a");
    drop(v[1000]);
}
