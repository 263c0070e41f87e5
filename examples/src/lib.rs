//! The example programs' package: the reference programs (add-list, smooth, integrate2d,
//! quicksort, matmul and friends) as runnable programs over `gpu-kernels`, with what they share:
//! plain-Rust references their results are checked against, and a small command-line reader.
//! A package of its own, so that `cargo run --release --example smooth` builds the examples'
//! kernels alone, not the test suite's.
#![warn(missing_docs)]

pub mod cli;
pub mod reference;
