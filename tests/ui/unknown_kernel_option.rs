// `#[kernel(..)]` knows the options `boundscheck = false`, `barriers`, `fastmath`,
// `launch_bounds`, `max_registers`, `dynamic_shared` and `instances(..)` only; `fastmath` takes
// a boolean or nothing; `#[device(..)]` knows `fastmath` (and `extern`) only, and so do
// `#[vectorize(..)]` and `#[guvectorize("layout", ..)]`.
use kernel_runtime::prelude::*;

#[kernel(cache)]
fn fill(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

#[kernel(fastmath = 1)]
fn fill_fast(out: &mut [f32]) {
    out[grid(1)] = 1.0;
}

#[device(inline)]
fn half(x: f32) -> f32 {
    x / 2.0
}

#[vectorize(cache)]
fn twice(x: f32) -> f32 {
    2.0 * x
}

#[guvectorize("(n)->()", target = "cuda")]
fn total(x: &[f32]) -> f32 {
    x.iter().sum()
}

fn main() {}
