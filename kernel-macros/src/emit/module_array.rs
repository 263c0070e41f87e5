//! `constant_array!` and `global_array!`: a module-level array that kernels read and host code
//! fills, declared as `static NAME: [T; N]` and made a `kernel_runtime::ModuleArray<T, N>`.
//!
//! On the device it is a PTX variable, `.visible .const` or `.visible .global`, declared by
//! `global_asm!` (Rust has no constant address space of its own) and addressed with `mov` and
//! `cvta`; on the host, the array's name, its symbol and the crate's PTX module where it holds
//! the symbol.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, Token, TypeArray, Visibility};

use super::launcher::{module_text, ptx_holding};

/// The memory an array lives in on a GPU.
#[derive(Clone, Copy)]
pub enum Space {
    Constant,
    Global,
}

impl Space {
    /// The PTX state space.
    fn ptx(self) -> &'static str {
        match self {
            Space::Constant => "const",
            Space::Global => "global",
        }
    }

    /// The runtime's name of the space.
    fn runtime(self) -> TokenStream {
        match self {
            Space::Constant => quote!(::kernel_runtime::__rt::Space::Constant),
            Space::Global => quote!(::kernel_runtime::__rt::Space::Global),
        }
    }
}

/// `#[attrs] vis static NAME: [T; N]`, with or without the `;`.
struct Declaration {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    ty: TypeArray,
}

impl Parse for Declaration {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        input.parse::<Token![static]>()?;
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "a module array's type is an array type, `[T; N]`")
        })?;
        if input.peek(Token![=]) {
            return Err(input.error(
                "a module array has no initial value: it starts all zeros on each device, and \
                 host code gives it values with `NAME.set(&device, &values)`",
            ));
        }
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("one module array per macro call"));
        }
        Ok(Declaration {
            attrs,
            vis,
            name,
            ty,
        })
    }
}

/// The expansion of `constant_array!` / `global_array!`.
pub fn module_array(input: TokenStream, space: Space) -> syn::Result<TokenStream> {
    let Declaration {
        attrs,
        vis,
        name,
        ty,
    } = syn::parse2(input)?;
    let (elem, len) = (&ty.elem, &ty.len);
    let name_str = syn::ext::IdentExt::unraw(&name).to_string();
    let symbol = format!("__kernel_{}_{name_str}", space.ptx());
    let declare = format!(
        ".visible .{} .align {{a}} .b8 {symbol}[{{b}}];",
        space.ptx()
    );
    let address = format!(
        "mov.u64 {{p}}, {symbol};\ncvta.{}.u64 {{p}}, {{p}};",
        space.ptx()
    );
    let ptx = match ptx_holding(&format!(" {symbol}[")) {
        Some(p) => {
            let text = module_text(&p);
            quote!(::core::result::Result::Ok(#text))
        }
        None => {
            let reason = no_ptx_reason_of_array();
            quote!(::core::result::Result::Err(#reason))
        }
    };
    let space_rt = space.runtime();
    let limit = match space {
        Space::Constant => quote! {
            ::core::assert!(
                ::core::mem::size_of::<[#elem; #len]>() <= 65536,
                "constant memory holds 64 KiB per module: declare a larger array with global_array!"
            );
        },
        Space::Global => quote!(),
    };
    Ok(quote! {
        #(#attrs)*
        #vis static #name: ::kernel_runtime::__rt::ModuleArray<#elem, { #len }> = {
            const _: () = {
                #limit
            };
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn address() -> *const u8 {
                let p: u64;
                // SAFETY: reads the address of a symbol this macro declared; touches no memory.
                unsafe {
                    ::core::arch::asm!(#address, p = out(reg64) p,
                        options(pure, nomem, nostack, preserves_flags));
                }
                p as *const u8
            }
            // SAFETY: the `global_asm!` beside declares the symbol with the size and alignment
            // of `[T; N]`, and kernels have no way to write a module array.
            #[cfg(target_arch = "nvptx64")]
            let origin = address;
            #[cfg(not(target_arch = "nvptx64"))]
            let origin = #ptx;
            unsafe { ::kernel_runtime::__rt::ModuleArray::__declare(#name_str, #symbol, #space_rt, origin) }
        };
        #[cfg(target_arch = "nvptx64")]
        ::core::arch::global_asm!(
            #declare,
            a = const ::core::mem::align_of::<#elem>(),
            // PTX has no empty arrays: an empty module array's symbol holds one byte, unread.
            b = const {
                let bytes = ::core::mem::size_of::<[#elem; #len]>();
                if bytes == 0 { 1 } else { bytes }
            },
        );
    })
}

/// Why an array's crate has no PTX module holding it, for the error of a GPU `set`.
fn no_ptx_reason_of_array() -> TokenStream {
    match ptx_holding("") {
        None => quote!(::kernel_runtime::__rt::NO_MODULE),
        Some(_) => quote! {
            "the PTX module its crate's build.rs compiled for this target does not declare \
             it: only arrays that a kernel of the target reads are there"
        },
    }
}
