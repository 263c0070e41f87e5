// Arrays are passed by reference (`&Array2<T>`, `&mut Array2<T>`), not by value.
use kernel_runtime::prelude::*;

#[kernel]
fn sum_rows(x: Array2<f32>, out: &mut [f32]) {
    let (i, _) = grid(2);
    out[i] = x[[i, 0]];
}

fn main() {}
