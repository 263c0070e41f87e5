// An input with core dimensions takes an array: a scalar fits only a `()` core.
use kernel_runtime::prelude::*;

#[guvectorize("(n),(n)->()")]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0;
    for k in 0..a.len() {
        s += a[k] * b[k];
    }
    s
}

fn main() {
    let dev = Device::cpu();
    let a = dev.zeros::<f32, _>((4, 3)).unwrap();
    let mut out = dev.zeros::<f32, _>(4).unwrap();
    dot.apply((&a, 2.0f32), &mut out).unwrap();
}
