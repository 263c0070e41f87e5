//! The test suite's kernels, shared by the integration tests and benchmarks, with the plain-Rust
//! references and the command-line reader of the examples' package.
#![warn(missing_docs)]

pub mod complex_kernels;
pub mod gufuncs;
pub mod test_kernels;
pub mod warp_kernels;

pub use kernel_examples::{cli, reference};
