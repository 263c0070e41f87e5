// A view of a launch argument is for the launcher, which knows the array is in host memory:
// safe code cannot take one (a GPU's array, or unchecked indices, would read anywhere).
use kernel_runtime::host::kernel::Param;
use kernel_runtime::prelude::*;

fn main() {
    let dev = Device::cpu();
    let a = dev.zeros::<f32, _>(4).unwrap();
    let mut arg = a.view();
    let v = <&'static [f32] as Param>::view::<false>(&mut arg, "a");
    drop(v[1000]);
}
