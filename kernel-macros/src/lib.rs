//! The attributes of the kernel DSL: `#[kernel]`, `#[device]` and `#[derive(DeviceCopy)]`.
//!
//! Each is split into parse → validate → expand, one module each; every error is a spanned
//! `syn::Error` pointing at the user's own code, never a panic.
//! Use them through `kernel_runtime` (`use kernel_runtime::prelude::*;`).

mod checked;
mod derive;
mod expand;
mod lockstep;
mod params;
mod parse;
mod rewrite;
mod split;
mod uniform;
mod validate;
mod vectorize;

use proc_macro::TokenStream;

/// Marks a function as a kernel, launched over a grid of blocks of threads.
///
/// The function becomes a value named like it, with `launch(blocks, threads, (args..))` and
/// `launch_with(config, (args..))`; its body is compiled for the CPU backend and, from the
/// crate's `build.rs`, to PTX. Options: `#[kernel(boundscheck = false)]` drops index checks,
/// `#[kernel(barriers)]` forces barrier support when `sync_threads()` is only called from
/// `#[device]` functions.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    parse::kernel(attr.into(), item.into())
        .and_then(validate::kernel)
        .map(expand::kernel)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Marks a function callable from kernels (and from host code): the build-time compiler takes
/// it into the device crate; `grid(n)`, `thread_idx()` and friends work inside it.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    parse::device(attr.into(), item.into())
        .and_then(validate::device)
        .map(expand::device)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Makes an element-wise function applicable to whole arrays, as Numba's `@vectorize`:
/// `#[vectorize] fn add(a: f32, b: f32) -> f32 { a + b }` gives `add.apply((&a, &b), &mut c)`,
/// `add.call((&a, &b))` (a new array) and `add.scalar(x, y)`.
#[proc_macro_attribute]
pub fn vectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    vectorize::vectorize(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `DeviceCopy` for a `#[repr(C)]` struct whose fields are all `DeviceCopy`.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(item: TokenStream) -> TokenStream {
    derive::device_copy(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
