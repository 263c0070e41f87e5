//! Compiles this crate's kernels to PTX, linked with its foreign device code: CUDA C++
//! (`cuda/mul.cu`) that includes a header from an include directory of its own
//! (`cuda/include`), and hand-written PTX (`ptx/add.ptx`).
fn main() {
    kernel_build::build_with(
        kernel_build::Builder::new()
            .link_cuda("cuda/mul.cu")
            .include_dir("cuda/include")
            .link_ptx("ptx/add.ptx"),
    );
}
