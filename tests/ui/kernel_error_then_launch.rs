// A kernel with an error is reported once: its launches and its device function's calls add
// no errors of their own.
use kernel_runtime::prelude::*;

#[device]
fn twice(x: f32) -> f32 {
    println!("{x}");
    x * 2.0
}

#[kernel]
fn scale(a: &mut [f32]) -> f32 {
    let i = grid(1);
    a[i] = twice(a[i]);
    a[i]
}

fn main() {
    let dev = Device::cpu();
    let mut a = dev.zeros::<f32, _>(4).unwrap();
    scale.launch(1, 4, (&mut a,)).unwrap();
    scale
        .launch_with(LaunchConfig::cover(4, 4).unwrap(), (&mut a,))
        .unwrap();
    assert_eq!(twice(1.0), 2.0);
}
