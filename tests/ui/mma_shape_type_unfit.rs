// Each shape multiplies the types its depth holds: `tf32` goes with m16n8k8, not m16n8k16.
use kernel_runtime::wmma::*;

fn main() {
    let _ = MatrixA::<M16N8K16, Tf32>::new();
}
