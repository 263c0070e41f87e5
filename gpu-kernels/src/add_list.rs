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
