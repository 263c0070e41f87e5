// The body of the test suite's `#[device(extern)] fn mul_f32_f32(a: f32, b: f32) -> f32`:
// CUDA C++, linked into the crate's module (build.rs: `link_cuda`).
#include "foreign_scale.h"

extern "C" __device__ float mul_f32_f32(float a, float b) {
    return a * b * FOREIGN_SCALE;
}

// The body of `#[device(extern, name = "offset_f32")] unsafe fn offset(values: *mut f32, n: u32,
// by: f32)`: a raw pointer crosses the link.
extern "C" __device__ void offset_f32(float *values, unsigned int n, float by) {
    for (unsigned int k = 0; k < n; ++k) {
        values[k] += by;
    }
}
