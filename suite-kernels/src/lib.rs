//! The kernels the test suite shares: its integration tests and benchmarks use them through the
//! `kernel-suite` package's library, which re-exports them.
#![warn(missing_docs)]

pub mod complex_kernels;
pub mod gufuncs;
pub mod test_kernels;
pub mod warp_kernels;
