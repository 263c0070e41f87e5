// Only 32- and 64-bit integers and floats (and raw pointers, in an `unsafe fn`) cross the link:
// their PTX parameters match C's, so the linker checks what it joins.
use kernel_runtime::prelude::*;

#[derive(Clone, Copy)]
pub struct Pair {
    pub a: f32,
    pub b: f32,
}

#[device(extern)]
pub fn pair_sum(p: Pair) -> f32;

#[device(extern)]
pub fn halve(x: u8) -> u8;

fn main() {}
