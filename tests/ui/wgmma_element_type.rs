// Warpgroup MMA multiplies `f16`, `bf16` and `f32` (as `tf32`) tiles: an `f64` tile is refused at
// the call, with the types it takes.
use kernel_runtime::pipeline::Source;
use kernel_runtime::wgmma::*;

#[allow(dead_code)]
fn product(sa: &impl Source<f64>, sb: &impl Source<f64>) -> WgAccumulator<M64N8K16> {
    let mut acc = WgAccumulator::<M64N8K16>::new();
    mma_async::<M64N8K16, f64, 64, 16>(&mut acc, sa, 0, sb, 0, false);
    acc
}

fn main() {}
