//! Generalized ufuncs of the test suite (`#[guvectorize]`, Numba's `@guvectorize`): one of
//! each kind of core, input and output.

use kernel_runtime::prelude::*;

/// The dot product of two vectors: `(n),(n)->()`, the result returned.
#[guvectorize("(n),(n)->()")]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0;
    for k in 0..a.len() {
        s += a[k] * b[k];
    }
    s
}

/// A vector plus a scalar: `(n),()->(n)`; the scalar is one value for every loop index, or an
/// array of one per loop index.
#[guvectorize("(n),()->(n)")]
pub fn shift(x: &[f64], y: f64, out: &mut [f64]) {
    for i in 0..x.len() {
        out[i] = x[i] + y;
    }
}

/// The product of two matrices: `(m,n),(n,p)->(m,p)`.
#[guvectorize("(m,n),(n,p)->(m,p)")]
pub fn matmul_gu(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    let (m, n) = a.dim();
    let p = b.dim().1;
    for i in 0..m {
        for j in 0..p {
            let mut s = 0.0;
            for k in 0..n {
                s += a[[i, k]] * b[[k, j]];
            }
            c[[i, j]] = s;
        }
    }
}

/// The running sums of a vector: `(n)->(n)`.
#[guvectorize("(n)->(n)")]
pub fn running_sum(x: &[i64], out: &mut [i64]) {
    let mut s = 0;
    for i in 0..x.len() {
        s += x[i];
        out[i] = s;
    }
}

/// Reads one past the end of its core: `(n)->()`, a bug the views catch.
#[guvectorize("(n)->()")]
pub fn last_plus_one(x: &[u32]) -> u32 {
    x[x.len()]
}

/// A matrix times a vector: `(m,n),(n)->(m)`, the README's example.
#[guvectorize("(m,n),(n)->(m)")]
pub fn matvec(a: &Array2<f32>, x: &[f32], y: &mut [f32]) {
    let (m, n) = a.dim();
    for i in 0..m {
        let mut s = 0.0;
        for k in 0..n {
            s += a[[i, k]] * x[k];
        }
        y[i] = s;
    }
}

/// Parameters named as the expansion's own variables would be, were they not kept apart:
/// `(n),()->(n)`.
#[guvectorize("(n),()->(n)")]
pub fn awkward_names(plan: &[i32], i: i32, loops: &mut [i32]) {
    for device in 0..plan.len() {
        loops[device] = plan[device] * i;
    }
}

/// The least and the greatest element: `(n)->(),()`, two outputs of no core dimension.
#[guvectorize("(n)->(),()")]
pub fn min_max(x: &[f32], lo: &mut f32, hi: &mut f32) {
    *lo = f32::INFINITY;
    *hi = f32::NEG_INFINITY;
    for k in 0..x.len() {
        *lo = lo.min(x[k]);
        *hi = hi.max(x[k]);
    }
}

/// A vector's sum and its running sums: `(n)->(),(n)`, outputs of two kinds.
#[guvectorize("(n)->(),(n)")]
pub fn total_and_running(x: &[i64], total: &mut i64, running: &mut [i64]) {
    let mut s = 0;
    for i in 0..x.len() {
        s += x[i];
        running[i] = s;
    }
    *total = s;
}

/// The root mean square of a vector: `(n)->()`, its division and square root approximate in
/// the device build (Numba's `@guvectorize(.., target='cuda', fastmath=True)`).
#[guvectorize("(n)->()", fastmath)]
pub fn fast_rms(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for k in 0..x.len() {
        s += x[k] * x[k];
    }
    (s / x.len() as f32).sqrt()
}

/// `a / b + sqrt(a)`, element by element, approximate in the device build (Numba's
/// `@vectorize(.., target='cuda', fastmath=True)`).
#[vectorize(fastmath)]
pub fn fast_ratio(a: f32, b: f32) -> f32 {
    a / b + a.sqrt()
}
