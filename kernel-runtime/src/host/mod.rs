//! The host API: devices, device arrays, launch configurations and errors.

pub mod array;
pub(crate) mod bytes;
#[cfg(feature = "mpi")]
pub mod cluster;
pub(crate) mod cooperative;
pub(crate) mod cuda;
pub mod device;
pub(crate) mod embedded;
pub mod error;
pub mod event;
pub mod graph;
pub mod instance;
pub(crate) mod kernel;
pub mod launch;
pub(crate) mod link;
pub mod mapped;
pub(crate) mod order;
pub(crate) mod params;
pub mod peers;
pub mod pinned;
pub mod ptr;
pub mod shape;
pub mod stream;
pub mod to_device;
pub mod transfer;
