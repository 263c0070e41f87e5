// A generalized ufunc's elements are plain device data, as a kernel's are.
use kernel_runtime::prelude::*;

#[guvectorize("(n)->()")]
pub fn longest(x: &[String]) -> usize {
    x.len()
}

fn main() {}
