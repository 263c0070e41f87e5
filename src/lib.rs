//! Shared pieces of the examples, integration tests and benchmarks: plain-Rust reference
//! implementations of the reference programs and a small command-line reader.
#![warn(missing_docs)]

pub mod cli;
pub mod complex_kernels;
pub mod gufuncs;
pub mod reference;
pub mod test_kernels;
pub mod warp_kernels;
