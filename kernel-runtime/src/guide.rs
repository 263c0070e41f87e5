//! The guide, chapter by chapter: from a crate of your own to the whole device API, the backends
//! and the tools. Every example in it runs as a test; the repository's README is the quick
//! start.
//!
//! | chapter | what |
//! | --- | --- |
//! | [`your_crate`] | the manifest, the build script, where kernels live, the PTX, the toolchain, build errors, devices |
//! | [`writing_kernels`] | parameters, coordinates, shared memory, barriers, warps, atomics, math, random numbers, reductions, generics, module arrays, half precision, printing, foreign code, graphs, streams |
//! | [`porting_from_numba`] | Numba's names and ours, and the idioms that differ |
//! | [`safety`] | what the types rule out, and what a kernel's author promises |
//! | [`generated_code`] | what `#[kernel]` expands to, and the launch every kernel goes through |
//! | [`cpu_backend`] | thread loops, split barriers, coroutines, cooperative launches |
//! | [`checked_mode`] | the debugger: what it finds and what it costs |
//! | [`gpu`] | the device build, loading, streams, errors, the fake driver |
//! | [`mpi`] | many processes over MPI and NCCL |
//! | [`benchmarks`] | the reference programs against Numba, CuPy, CUDA C++ and rayon |
//! | [`repository`] | the crates of the repository and the commands that check it |

#[doc = include_str!("../guide/your_crate.md")]
pub mod your_crate {}

#[doc = include_str!("../guide/writing_kernels.md")]
pub mod writing_kernels {}

#[doc = include_str!("../guide/porting_from_numba.md")]
pub mod porting_from_numba {}

#[doc = include_str!("../guide/safety.md")]
pub mod safety {}

#[doc = include_str!("../guide/generated_code.md")]
pub mod generated_code {}

#[doc = include_str!("../guide/cpu_backend.md")]
pub mod cpu_backend {}

#[doc = include_str!("../guide/checked_mode.md")]
pub mod checked_mode {}

#[doc = include_str!("../guide/gpu.md")]
pub mod gpu {}

#[doc = include_str!("../guide/mpi.md")]
pub mod mpi {}

#[doc = include_str!("../guide/benchmarks.md")]
pub mod benchmarks {}

#[doc = include_str!("../guide/repository.md")]
pub mod repository {}
