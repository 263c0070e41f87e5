//! The PTX modules embedded in the program, gathered at link time.

/// The PTX modules embedded in the program: one entry per kernel whose crate's `build.rs`
/// compiled PTX (the `#[kernel]` macro adds them). `Device::default()` picks a GPU only when
/// there is PTX to run on it.
#[linkme::distributed_slice]
pub static PTX_MODULES: [&'static str];
