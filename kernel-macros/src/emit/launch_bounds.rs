//! `#[kernel(launch_bounds = (threads, blocks), max_registers = n)]`: the bounds, checked when
//! the crate compiles (`__rt::launch_bounds`, `__rt::max_registers`); for the device build, a
//! static per PTX entry that the build turns into the entry's `.maxntid`, `.minnctapersm` and
//! `.maxnreg` (and removes); for the host, the most threads the launcher lets a block have.

use crate::kernel::validate::Kernel;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The name of the constant holding the bounds of the kernel `name`.
fn constant(name: &syn::Ident) -> syn::Ident {
    format_ident!("__KERNEL_BOUNDS_{}", name)
}

/// The constant `[threads, blocks, registers]` (0 for each not given), each check reported at
/// its option; nothing for a kernel with neither option.
pub fn item(k: &Kernel) -> Option<TokenStream> {
    let (bounds, registers) = (&k.options.launch_bounds, &k.options.max_registers);
    if bounds.is_none() && registers.is_none() {
        return None;
    }
    let name = constant(&k.func.sig.ident);
    let bounds = bounds.as_ref().map_or(quote!([0, 0]), |b| {
        let threads = &b.threads;
        let blocks = b.blocks.as_ref().map_or(quote!(0), |b| quote!(#b));
        quote_spanned! {threads.span()=>
            ::kernel_runtime::__rt::launch_bounds((#threads) as u64, (#blocks) as u64)
        }
    });
    let registers = registers.as_ref().map_or(quote!(0), |n| {
        quote_spanned! {n.span()=> ::kernel_runtime::__rt::max_registers((#n) as u64)}
    });
    Some(quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::unnecessary_cast)]
        const #name: [u32; 3] = {
            let __bounds: [u32; 2] = #bounds;
            [__bounds[0], __bounds[1], #registers]
        };
    })
}

/// For the device build: the bounds of each of `entries` (the kernel's PTX entries), as a static
/// the build reads from the PTX.
pub fn statics(k: &Kernel, entries: &[String]) -> TokenStream {
    if k.options.launch_bounds.is_none() && k.options.max_registers.is_none() {
        return quote!();
    }
    let name = constant(&k.func.sig.ident);
    let statics = entries.iter().map(|entry| {
        let item = format_ident!("__kernel_launch_bounds_{}", entry);
        quote! {
            #[unsafe(no_mangle)]
            #[used]
            static #item: [u32; 3] = #name;
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
