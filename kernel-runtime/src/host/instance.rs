//! The instances of generic kernels: which PTX entry runs a launch with given type parameters.

/// The PTX entry of the instance of the generic kernel `K` for the type parameters `Self` (a
/// tuple, one type per parameter): `#[kernel(instances(..))]` implements it for each instance
/// it lists, and a launch with types it does not list is a compile error.
#[diagnostic::on_unimplemented(
    message = "kernel `{K}` has no instance for the type parameters `{Self}`",
    label = "no PTX entry for these types",
    note = "add them to the kernel's `#[kernel(instances(..))]`; `{K}::META.instances` lists those it has"
)]
pub trait KernelInstance<K> {
    /// The PTX entry point: `kernel__type`, as `{K}::META.instances` lists it.
    const ENTRY: &'static str;
}
