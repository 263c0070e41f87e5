// Each warpgroup shape multiplies the types its depth holds: `f32` tiles (as `tf32`) go with the
// `k8` shapes, not `m64n64k16`.
use kernel_runtime::pipeline::Source;
use kernel_runtime::wgmma::*;

#[allow(dead_code)]
fn product(sa: &impl Source<f32>, sb: &impl Source<f32>) -> WgAccumulator<M64N64K16> {
    let mut acc = WgAccumulator::<M64N64K16>::new();
    mma_async::<M64N64K16, f32, 64, 16>(&mut acc, sa, 0, sb, 0, false);
    acc
}

fn main() {}
