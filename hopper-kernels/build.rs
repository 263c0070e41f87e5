//! Compiles the kernels to PTX for sm_80 unless `KERNEL_PTX_ARCH` names another, and a variant
//! for sm_90a, where the warpgroup MMA exists. The variant is a second device build of this
//! crate alone: the reference kernels (`gpu-kernels`) rebuild without it.
fn main() {
    kernel_build::build_with(
        kernel_build::Builder::new()
            .default_arch("sm_80")
            .variant("sm_90a"),
    );
}
