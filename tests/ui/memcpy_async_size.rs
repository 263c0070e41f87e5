// A copy of three f16 (6 bytes), and a tile's runs of twelve (24 bytes): cp.async moves 4, 8
// or 16 bytes.
use kernel_runtime::pipeline::*;
use kernel_runtime::prelude::*;

#[kernel]
fn staged(x: &Array2<f16>, y: &mut Array2<f16>) {
    let mut tile = shared_array![f16; [4, 12]];
    memcpy_async::<f16, 3>(&mut tile, [0, 0], &x, [0, 0], 3);
    memcpy_async_tile::<f16, 12, 2, 12, 2>(&mut tile, [0, 0], &x, [0, 0]);
    pipeline_commit();
    pipeline_wait_prior::<0>();
    sync_threads();
    y[[0, 0]] = tile[[0, 0]];
}

fn main() {}
