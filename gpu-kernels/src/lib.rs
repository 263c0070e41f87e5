//! The reference programs' kernels: add-list, smooth (per pixel and in strips), integrate2d
//! (per-row and shared-memory reduction), quicksort, tiled matmul and matmul on tensor cores, Monte Carlo π and a random
//! 3-D fill, the 1-D heat equation stepped in one cooperative launch or one launch per step, and
//! an empty kernel that measures launch overhead. `build.rs` compiles them to
//! PTX; the CPU backend runs them everywhere.
#![warn(missing_docs)]

pub mod add_list;
pub mod heat;
pub mod integrate;
pub mod matmul;
pub mod monte_carlo;
pub mod overhead;
pub mod quicksort;
pub mod stencil;
pub mod tensor;

pub use add_list::{add, add_vectorized, add_wide, ADD_WIDE};
#[cfg(not(target_arch = "nvptx64"))]
pub use add_list::{add_chunked, add_streamed};
pub use heat::{heat_step, heat_steps};
pub use integrate::{integrate2d_band, integrate2d_rows, integrate2d_shared, INTEGRATE_TPB};
pub use matmul::{matmul_tiled, TPB};
pub use monte_carlo::{fill_uniform_3d, pi_hits};
pub use overhead::empty3;
pub use quicksort::{qs_copy, qs_count, qs_file, qs_pivots, qs_scatter, qs_sort_small};
pub use stencil::{
    gaussian5x5, laplace3d, smooth, smooth_stencil, smooth_strips, smooth_words, GAUSS5,
    STRIP_ROWS, STRIP_THREADS, WORD_THREADS,
};
#[cfg(not(target_arch = "nvptx64"))]
pub use stencil::{strips_blocks, words_blocks};
pub use tensor::{
    matmul_tensor, matmul_tensor_64x64, matmul_tensor_staged, matmul_tensor_tf32,
    matmul_tensor_tf32_64x64, matmul_tensor_tf32_staged, TC_STAGED_SHARED_BYTES, TC_STAGES,
    TC_THREADS, TC_THREADS_64X64, TC_TILE,
};
