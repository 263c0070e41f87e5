//! The host API: devices, device arrays, launch configurations and errors.

pub mod array;
pub mod device;
pub mod error;
pub mod launch;
