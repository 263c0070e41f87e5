// A copy of three f16 (6 bytes): cp.async moves 4, 8 or 16 bytes.
use kernel_runtime::pipeline::*;
use kernel_runtime::prelude::*;

#[kernel]
fn staged(x: &Array2<f16>, y: &mut Array2<f16>) {
    let mut tile = shared_array![f16; [4, 8]];
    memcpy_async::<f16, 3>(&mut tile, [0, 0], &x, [0, 0], 3);
    pipeline_commit();
    pipeline_wait_prior::<0>();
    sync_threads();
    y[[0, 0]] = tile[[0, 0]];
}

fn main() {}
