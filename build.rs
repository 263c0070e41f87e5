//! Compiles the kernels of this package's library (the test-suite kernels) to PTX.
fn main() {
    kernel_build::build();
}
