//! Compiles the kernels that the integration tests, benchmarks and GPU benchmark programs of
//! this package define themselves to PTX: for sm_80 (the tensor cores' `mma.sync` needs it)
//! unless `KERNEL_PTX_ARCH` names another. The kernels they share are `suite-kernels`', so that
//! an edited test rebuilds this package's small library, not those kernels.
fn main() {
    kernel_build::build_with(kernel_build::Builder::new().default_arch("sm_80"));
}
