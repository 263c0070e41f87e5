//! Kernels on Hopper's warpgroup MMA (`kernel_runtime::wgmma`, sm_90a): the `f16` matmul in
//! tiles of 128 × 128 and 128 × 256, the `tf32` one in tiles of 128 × 128, and one
//! warpgroup's product of a tile for each accumulator shape. `build.rs` compiles them to PTX and adds the module's sm_90a variant,
//! which an H100 or H200 loads; other GPUs trap in them, and the CPU backend runs them
//! everywhere. They stand apart from the reference kernels (`gpu-kernels`) so that those
//! rebuild without the variant's second device build.
#![warn(missing_docs)]

pub mod warpgroup;

pub use warpgroup::{
    matmul_wgmma, matmul_wgmma_tf32, matmul_wgmma_wide, wg_product_bf16_n64, wg_product_n128,
    wg_product_n64, wg_product_n8, wg_product_tf32_n64, wg_product_tf32_n8, WG_DEPTH,
    WG_SHARED_BYTES, WG_STAGES, WG_TF32_DEPTH, WG_THREADS, WG_TILE, WG_WIDE, WG_WIDE_SHARED_BYTES,
};
