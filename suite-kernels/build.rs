//! Compiles the test suite's shared kernels to PTX: for sm_80 (the tensor cores' `mma.sync`
//! needs it) unless `KERNEL_PTX_ARCH` names another.
fn main() {
    kernel_build::build_with(kernel_build::Builder::new().default_arch("sm_80"));
}
