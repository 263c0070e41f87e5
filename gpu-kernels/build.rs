//! Compiles the reference programs' kernels to PTX: for sm_80 (the tensor cores' `mma.sync`
//! needs it) unless `KERNEL_PTX_ARCH` names another.
fn main() {
    println!("cargo:rerun-if-env-changed=KERNEL_PTX_ARCH");
    let arch = std::env::var("KERNEL_PTX_ARCH").unwrap_or_else(|_| "sm_80".into());
    kernel_build::build_with(kernel_build::Builder::new().arch(arch));
}
