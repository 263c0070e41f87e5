//! Kernels that call foreign device functions (`#[device(extern)]`), whose bodies `build.rs`
//! links from `cuda/` and `ptx/`: a multiply in CUDA C++ with a Rust body for the CPU backend, and an
//! add in PTX with none.

use kernel_runtime::prelude::*;

/// `a * b * FOREIGN_SCALE` (0.5, from `cuda/include/foreign_scale.h`), from
/// `cuda/mul.cu`; the CPU backend runs [`mul_on_cpu`].
#[device(extern, cpu = mul_on_cpu)]
pub fn mul_f32_f32(a: f32, b: f32) -> f32;

/// The CPU backend's body of [`mul_f32_f32`].
pub fn mul_on_cpu(a: f32, b: f32) -> f32 {
    a * b * 0.5
}

/// `a + b`, from `ptx/add.ptx`: a GPU runs it; a CPU launch that reaches it fails, naming it.
#[device(extern)]
pub fn add_f32_f32(a: f32, b: f32) -> f32;

/// `y = mul_f32_f32(a, x) + y`: a saxpy whose multiply is CUDA C++.
#[kernel]
pub fn saxpy_foreign(a: f32, x: &[f32], y: &mut [f32]) {
    let i = grid(1);
    if i < y.len() {
        y[i] += mul_f32_f32(a, x[i]);
    }
}

/// `y = add_f32_f32(x, y)`: an add that is PTX.
#[kernel]
pub fn add_foreign(x: &[f32], y: &mut [f32]) {
    let i = grid(1);
    if i < y.len() {
        y[i] = add_f32_f32(x[i], y[i]);
    }
}

/// Adds `by` to the `n` values at `values`, from `cuda/mul.cu`; the CPU backend runs
/// [`offset_on_cpu`].
///
/// # Safety
///
/// `values` addresses `n` values that no other thread touches during the call.
#[device(extern, cpu = offset_on_cpu, name = "offset_f32")]
pub unsafe fn offset(values: *mut f32, n: u32, by: f32);

/// The CPU backend's body of [`offset`].
///
/// # Safety
///
/// As [`offset`].
pub unsafe fn offset_on_cpu(values: *mut f32, n: u32, by: f32) {
    for k in 0..n as usize {
        // SAFETY: the caller's contract: `n` values at `values`, this thread's alone.
        unsafe { *values.add(k) += by };
    }
}

/// Adds `by` to every element of each thread's row of `rows` (`width` values each) through the
/// foreign [`offset`], which takes a raw pointer.
#[kernel]
pub unsafe fn offset_rows(rows: *mut f32, count: u32, width: u32, by: f32) {
    let r = grid(1);
    if r < count as usize {
        // SAFETY: the launch's pointer addresses `count` rows of `width` values, and each
        // thread touches its own row.
        unsafe { offset(rows.add(r * width as usize), width, by) };
    }
}
