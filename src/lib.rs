//! The test suite's shared kernels (from `suite-kernels`, a package of their own so that an
//! edited test does not rebuild them), with the plain-Rust references and the command-line
//! reader of the examples' package.
#![warn(missing_docs)]

pub use kernel_examples::{cli, reference};
pub use suite_kernels::{complex_kernels, gufuncs, test_kernels, warp_kernels};
