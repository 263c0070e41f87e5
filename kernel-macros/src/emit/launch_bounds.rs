//! `#[kernel(launch_bounds = (threads, blocks))]`: the bounds, checked when the crate compiles
//! (`__rt::launch_bounds`); for the device build, a static per PTX entry that the build turns
//! into the entry's `.maxntid` and `.minnctapersm` (and removes); for the host, the most threads
//! the launcher lets a block have.

use crate::kernel::validate::Kernel;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The name of the constant holding the bounds of the kernel `name`.
fn constant(name: &syn::Ident) -> syn::Ident {
    format_ident!("__KERNEL_BOUNDS_{}", name)
}

/// The constant `[threads, blocks]` (blocks 0 where none is given), its check reported at the
/// option; nothing for a kernel without bounds.
pub fn item(k: &Kernel) -> Option<TokenStream> {
    let bounds = k.options.launch_bounds.as_ref()?;
    let name = constant(&k.func.sig.ident);
    let threads = &bounds.threads;
    let blocks = match &bounds.blocks {
        Some(b) => quote!(#b),
        None => quote!(0),
    };
    Some(quote_spanned! {threads.span()=>
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::unnecessary_cast)]
        const #name: [u32; 2] =
            ::kernel_runtime::__rt::launch_bounds((#threads) as u64, (#blocks) as u64);
    })
}

/// For the device build: the bounds of each of `entries` (the kernel's PTX entries), as a static
/// the build reads from the PTX.
pub fn statics(k: &Kernel, entries: &[String]) -> TokenStream {
    if k.options.launch_bounds.is_none() {
        return quote!();
    }
    let name = constant(&k.func.sig.ident);
    let statics = entries.iter().map(|entry| {
        let item = format_ident!("__kernel_launch_bounds_{}", entry);
        quote! {
            #[unsafe(no_mangle)]
            #[used]
            static #item: [u32; 2] = #name;
        }
    });
    quote!(#(#statics)*)
}

/// The launcher's field of the most threads a block may have.
pub fn meta_field(k: &Kernel) -> Option<TokenStream> {
    k.options.launch_bounds.as_ref()?;
    let name = constant(&k.func.sig.ident);
    Some(quote!(max_threads: #name[0],))
}
