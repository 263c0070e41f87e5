// A tile copy's runs are shared out evenly among the block's threads: a 4 × 16 tile of f32 in
// runs of 4 is 16 runs, which 12 threads cannot share; nor can 24 threads share the 32 runs of
// an 8 × 16 tile, named by constants in a device function.
use kernel_runtime::pipeline::*;
use kernel_runtime::prelude::*;
use kernel_runtime::{View2, View2Mut};

const ROWS: usize = 8;
const BLOCK: usize = 24;

#[kernel]
fn staged(x: &Array2<f32>, y: &mut Array2<f32>) {
    let mut tile = shared_array![f32; [4, 16]];
    memcpy_async_tile::<f32, 4, 4, 16, 12>(&mut tile, [0, 0], &x, [0, 0]);
    pipeline_commit();
    pipeline_wait_prior::<0>();
    sync_threads();
    y[[0, 0]] = tile[[0, 0]];
}

#[device]
fn stage(tile: &mut View2Mut<f32>, x: &View2<f32>) {
    memcpy_async_tile::<f32, 4, { ROWS }, 16, BLOCK>(tile, [0, 0], x, [0, 0]);
}

fn main() {}
