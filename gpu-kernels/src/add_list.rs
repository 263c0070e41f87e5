//! add-list: `c = a + b`, one thread per element (Numba's `@vectorize` over float32).

use kernel_runtime::prelude::*;

/// `c[i] = a[i] + b[i]` for every `i` below `c.len()`.
#[kernel]
pub fn add(a: &[f32], b: &[f32], c: &mut [f32]) {
    let i = grid(1);
    if i < c.len() {
        c[i] = a[i] + b[i];
    }
}

/// add-list in the form of Numba's original program, `@vectorize(["float32(float32, float32)"],
/// target='cuda')`: `add_vectorized.apply((&a, &b), &mut c)` or `add_vectorized.call((&a, &b))`.
#[vectorize]
pub fn add_vectorized(a: f32, b: f32) -> f32 {
    a + b
}
