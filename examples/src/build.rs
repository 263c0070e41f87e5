//! Compiles the kernels the examples define themselves (`checked_mode`'s) to PTX.
fn main() {
    kernel_build::build();
}
