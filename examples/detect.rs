//! What this machine runs the reference kernels on (Numba's `numba.cuda.detect()`): the CUDA
//! driver, each GPU and how it would run them (a cubin, or PTX the driver compiles, or why
//! not), their PTX modules, and the device `Device::default()` picks.
//!
//! ```sh
//! cargo run --example detect
//! ```
//!
//! A program of your own calls `kernel_runtime::detect()` the same way: it reports that
//! program's kernels.

use kernel_runtime::Kernel;

fn main() {
    // The reference kernels are this program's: `gpu_kernels::add` is one of them.
    let _ = gpu_kernels::add.ptx();
    println!("{}", kernel_runtime::detect());
}
