//! Publishes this crate's manifest directory to the build scripts of crates that depend on it
//! (`DEP_KERNEL_RUNTIME_MANIFEST_DIR`), so that the build-time PTX compiler can point the
//! generated device crate at this very source tree.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=manifest_dir={dir}");
    println!("cargo::rerun-if-changed=build.rs");
    // The kernels of this crate's documentation run on the CPU backend: `#[kernel]` needs no
    // device build for them (kernel-build sets this for a crate whose kernels it builds).
    println!("cargo::rustc-env=KERNEL_BUILD=1");
}
