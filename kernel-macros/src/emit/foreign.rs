//! `#[device(extern)]`: a device function whose body comes from CUDA C++ or PTX linked into the
//! crate's module (Numba's `cuda.declare_device`).
//!
//! ```ignore
//! #[device(extern, cpu = mul_on_cpu)]
//! fn mul_f32_f32(a: f32, b: f32) -> f32;
//! ```
//!
//! On the device the declaration becomes an `extern "C"` function, which the PTX declares
//! (`.extern .func`) and the driver's linker resolves; a safe wrapper of the declared name calls
//! it. On the host the wrapper calls the Rust body named by `cpu = path`; without one it fails
//! the CPU launch that reaches it, naming the function. `name = "symbol"` links a C name other
//! than the Rust one.
//!
//! Only 32- and 64-bit integers and floats pass by value (their PTX parameters are `.b32` and
//! `.b64` on both sides, so the linker checks what it links); a declaration with raw pointers
//! must be an `unsafe fn`, as the foreign body may read and write through them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{FnArg, ForeignItemFn, Pat, ReturnType, Token, Type};

/// The options of `#[device(extern, ..)]`.
pub struct Options {
    /// The Rust function the CPU backend calls instead.
    cpu: Option<syn::Path>,
    /// The symbol the device code links to.
    name: Option<syn::LitStr>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        input.parse::<Token![extern]>()?;
        let mut options = Options {
            cpu: None,
            name: None,
        };
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "cpu" if options.cpu.is_none() => options.cpu = Some(input.parse()?),
                "name" if options.name.is_none() => options.name = Some(input.parse()?),
                "cpu" | "name" => return Err(syn::Error::new(key.span(), "given twice")),
                _ => {
                    return Err(syn::Error::new(
                        key.span(),
                        "`#[device(extern)]` takes `cpu = path` (the Rust body the CPU backend \
                         runs) and `name = \"symbol\"` (the C name to link)",
                    ))
                }
            }
        }
        Ok(options)
    }
}

/// Whether `attr` (the tokens of `#[device(..)]`) declares a foreign function.
pub fn is_foreign(attr: &TokenStream) -> bool {
    matches!(attr.clone().into_iter().next(), Some(proc_macro2::TokenTree::Ident(i)) if i == "extern")
}

/// The expansion of `#[device(extern, ..)] fn name(..) -> T;`.
pub fn declaration(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options: Options = syn::parse2(attr)?;
    let func: ForeignItemFn = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new_spanned(
            &item,
            "`#[device(extern)]` declares a function without a body, ending in `;`: \
             its body comes from the CUDA C++ or PTX that build.rs links",
        )
    })?;
    validate(&func)?;
    Ok(emit(&options, &func))
}

/// Refuses what cannot cross the link soundly: generics, patterns, variadics, and types whose
/// PTX parameters would not match a C definition's.
fn validate(func: &ForeignItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a foreign device function cannot be generic: declare one per C function",
        ));
    }
    if let Some(c) = &sig.constness {
        return Err(syn::Error::new_spanned(
            c,
            "a foreign device function cannot be `const`",
        ));
    }
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new_spanned(
            a,
            "a foreign device function cannot be `async`",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            v,
            "a foreign device function cannot be variadic",
        ));
    }
    let safe = sig.unsafety.is_none();
    for arg in &sig.inputs {
        let FnArg::Typed(pt) = arg else {
            return Err(syn::Error::new_spanned(
                arg,
                "a foreign device function takes no `self`",
            ));
        };
        if !matches!(&*pt.pat, Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none()) {
            return Err(syn::Error::new_spanned(&pt.pat, "name each parameter"));
        }
        check_type(&pt.ty, safe)?;
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        if is_pointer(ty) {
            return Err(syn::Error::new_spanned(
                ty,
                "a foreign device function returns a number or nothing; return pointers \
                 through an out-parameter of an `unsafe fn`",
            ));
        }
        check_type(ty, safe)?;
    }
    Ok(())
}

/// The scalars whose PTX parameter is `.b32` or `.b64` in Rust's and in C's lowering alike.
const SCALARS: [&str; 8] = ["i32", "u32", "i64", "u64", "f32", "f64", "isize", "usize"];

/// Whether `ty` is a raw pointer.
fn is_pointer(ty: &Type) -> bool {
    matches!(ty, Type::Ptr(_))
}

/// A parameter or return type: a scalar, or (in an `unsafe fn`) a raw pointer to one.
fn check_type(ty: &Type, safe: bool) -> syn::Result<()> {
    match ty {
        Type::Path(p) if p.qself.is_none() && SCALARS.iter().any(|s| p.path.is_ident(s)) => Ok(()),
        Type::Ptr(_) if safe => Err(syn::Error::new_spanned(
            ty,
            "a foreign device function that takes a raw pointer must be declared `unsafe fn`: \
             its body reads and writes through it unchecked",
        )),
        Type::Ptr(_) => Ok(()),
        Type::Paren(p) => check_type(&p.elem, safe),
        _ => Err(syn::Error::new_spanned(
            ty,
            "a foreign device function passes i32, u32, i64, u64, isize, usize, f32, f64 (and, \
             in an `unsafe fn`, raw pointers), whose PTX parameters match C's: pass other types \
             through these",
        )),
    }
}

/// The device declaration and wrapper, and the host wrapper.
fn emit(options: &Options, func: &ForeignItemFn) -> TokenStream {
    let attrs = &func.attrs;
    let vis = &func.vis;
    let sig = &func.sig;
    let name = &sig.ident;
    let symbol = options
        .name
        .clone()
        .unwrap_or_else(|| syn::LitStr::new(&name.to_string(), name.span()));
    let link = format_ident!("__kernel_foreign_{}", name);
    let inputs = &sig.inputs;
    let output = &sig.output;
    let args: Vec<_> = sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(pt) => Some(&pt.pat),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let host_body = match (&options.cpu, &sig.unsafety) {
        (Some(cpu), None) => quote!(#cpu(#(#args),*)),
        (Some(cpu), Some(_)) => quote! {
            // SAFETY: the caller keeps this `unsafe fn`'s contract, which its CPU body shares.
            #[allow(unused_unsafe)]
            unsafe { #cpu(#(#args),*) }
        },
        (None, _) => missing_body(&symbol),
    };
    // The device crate's host check has no CPU body: only the device's code is there.
    let checked_body = missing_body(&symbol);
    quote! {
        #[cfg(target_arch = "nvptx64")]
        unsafe extern "C" {
            #[link_name = #symbol]
            fn #link(#inputs) #output;
        }

        #(#attrs)*
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        #vis #sig {
            // SAFETY: the declaration names the foreign body and its parameters, which the
            // driver's linker matches; an `unsafe fn`'s caller keeps the body's contract.
            unsafe { #link(#(#args),*) }
        }

        #(#attrs)*
        #[cfg(all(not(target_arch = "nvptx64"), not(kernel_device_crate)))]
        #[allow(unused_variables)]
        #[inline]
        #vis #sig {
            #host_body
        }

        #(#attrs)*
        #[cfg(all(not(target_arch = "nvptx64"), kernel_device_crate))]
        #[allow(unused_variables)]
        #vis #sig {
            #checked_body
        }
    }
}

/// The host body of a declaration without `cpu = path`: a fault of the CPU launch naming it.
fn missing_body(symbol: &syn::LitStr) -> TokenStream {
    quote!(::kernel_runtime::__rt::foreign_without_cpu_body(#symbol))
}

/// What a declaration with an error leaves beside its `compile_error!`: a function of its
/// signature, where that parses, so that its callers add no errors of their own.
pub fn stand_in(item: &TokenStream) -> TokenStream {
    let Ok(func) = syn::parse2::<ForeignItemFn>(item.clone()) else {
        return quote!();
    };
    let (vis, sig) = (&func.vis, &func.sig);
    quote! {
        #[allow(dead_code, unused_variables)]
        #vis #sig {
            ::core::unreachable!()
        }
    }
}
