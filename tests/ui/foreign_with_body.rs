// A foreign declaration has no body: its body is the CUDA C++ or PTX that build.rs links.
use kernel_runtime::prelude::*;

#[device(extern, cpu = mul_on_cpu)]
pub fn mul(a: f32, b: f32) -> f32 {
    a * b
}

pub fn mul_on_cpu(a: f32, b: f32) -> f32 {
    a * b
}

#[device(extern, gpu = mul_on_cpu)]
pub fn mul2(a: f32, b: f32) -> f32;

fn main() {}
