// A shared array whose size overflows is refused as too big, at the array, not with the text of
// an overflowing constant.
use kernel_runtime::prelude::*;

#[kernel]
pub fn huge(out: &mut [f32]) {
    let tile = shared_array![f32; usize::MAX];
    out[0] = tile[0];
}

fn main() {
    let _ = huge;
}
