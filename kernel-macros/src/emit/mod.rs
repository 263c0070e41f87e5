//! Emission: each target of a kernel from its one model, side by side: the PTX entry
//! (`device`), the host launcher (`launcher`), the CPU backend's fast run (`cpu`) and checked
//! mode's (`checked`); and the other macros' items (`vectorize`, `reduce`, `derive`, `module_array`, `print`).

pub mod checked;
pub mod cpu;
pub mod derive;
pub mod device;
pub mod foreign;
pub mod launch_bounds;
pub mod launcher;
pub mod module_array;
pub mod print;
pub mod reduce;
pub mod vectorize;

use crate::kernel::validate::Kernel;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};

/// Everything a `#[kernel]` becomes: its shared-memory layout and type checks, its PTX entry,
/// and its launcher, which holds the CPU backend's bodies.
pub fn kernel(k: Kernel) -> TokenStream {
    let layout = has_layout(&k).then(|| shared_layout(&k));
    let bounds = launch_bounds::item(&k);
    let checks = type_checks(&k);
    let entry = device::entry(&k);
    let plan = cpu::CpuPlan::of(&k);
    let launcher = launcher::launcher(&k, &plan);
    let calls = &k.body.checks;
    quote! {
        #layout
        #bounds
        #checks
        #(#calls)*
        #entry
        #launcher
    }
}

/// Whether the kernel has a shared-memory layout: static shared arrays, or dynamic shared memory
/// (placed after them).
pub fn has_layout(k: &Kernel) -> bool {
    let layout = k.layout.to_string();
    crate::syntax::mentions(k.func.block.to_token_stream(), &|i| *i == layout)
}

/// The static shared-memory layout, computed and checked at compile time; a total over the
/// limit is reported at the last shared array, the one that tips it over.
fn shared_layout(k: &Kernel) -> TokenStream {
    let (shared, layout) = (&k.body.shared, &k.layout);
    let nshared = shared.len();
    let entries = shared.iter().map(|d| {
        let elem = &d.elem;
        let dims = &d.dims;
        quote!((
            ::kernel_runtime::__rt::array_bytes(::core::mem::size_of::<#elem>(), &[#(::kernel_runtime::__rt::extent(#dims)),*]),
            ::core::mem::align_of::<#elem>(),
        ))
    });
    let too_big = format!(
        "kernel `{}`: its static shared arrays take ",
        k.func.sig.ident
    );
    let what_to_do = " bytes, past the 48 KiB (49152) a GPU gives a block without opting in: \
        take what is past it from `dynamic_shared![T]`, sized at launch with \
        `LaunchConfig::shared_bytes`, which a launch opts in to up to the device's \
        `Limits::max_shared_bytes_optin` (227 KiB on an H100)";
    let at = shared
        .last()
        .map(|d| d.span)
        .unwrap_or_else(proc_macro2::Span::call_site);
    let shared_check = quote_spanned! {at=>
        const _: () = if #layout.1 > ::kernel_runtime::__rt::STATIC_LIMIT {
            ::core::panic!("{}", ::kernel_runtime::__rt::ConstMessage::new(#too_big, #layout.1, #what_to_do).as_str())
        };
    };
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const #layout: ([usize; #nshared], usize) = ::kernel_runtime::__rt::layout::<#nshared>([#(#entries),*]);
        #shared_check
    }
}

/// Every element and by-value type must be plain device data; the error points at the type
/// (at its first mention: a type is checked once). A type parameter's instances are checked
/// where the launcher's bound names it.
fn type_checks(k: &Kernel) -> TokenStream {
    let mut seen = std::collections::HashSet::new();
    let checks = k.params.iter().filter_map(|p| {
        let ty = p.data_ty();
        if k.generic.as_ref().is_some_and(|g| g.mentions(ty))
            || !seen.insert(quote!(#ty).to_string())
        {
            return None;
        }
        Some(quote_spanned! {p.ty_span=>
            const _: () = ::kernel_runtime::__rt::assert_device_copy::<#ty>();
        })
    });
    quote!(#(#checks)*)
}

/// Refuses an `async` or generic signature of a function that `what` (`"a vectorized
/// function"`) names, which its launcher maps over arrays of one element type.
pub fn plain_signature(sig: &syn::Signature, what: &str) -> syn::Result<()> {
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new_spanned(
            a,
            format!("{what} cannot be `async`"),
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            format!("{what} cannot be generic: write one per element type"),
        ));
    }
    Ok(())
}

/// The type the signature returns, where it returns one other than `()`.
pub fn returned(sig: &syn::Signature) -> Option<syn::Type> {
    match &sig.output {
        syn::ReturnType::Type(_, t) if !matches!(&**t, syn::Type::Tuple(tt) if tt.elems.is_empty()) => {
            Some((**t).clone())
        }
        _ => None,
    }
}

/// What an attribute that keeps a function as the scalar operation beside the launcher it
/// makes of its name (`#[vectorize]`, `#[reduce]`) takes of it: the function is renamed
/// `{prefix}{name}` and made private, its docs move to the launcher.
pub struct Scalar {
    pub name: syn::Ident,
    pub vis: syn::Visibility,
    pub docs: Vec<syn::Attribute>,
    /// The function's new name.
    pub scalar: syn::Ident,
}

impl Scalar {
    pub fn take(func: &mut syn::ItemFn, prefix: &str) -> Scalar {
        let name = func.sig.ident.clone();
        let vis = std::mem::replace(&mut func.vis, syn::Visibility::Inherited);
        let (docs, rest) = func.attrs.drain(..).partition(|a| a.path().is_ident("doc"));
        func.attrs = rest;
        let scalar = quote::format_ident!("{}{}", prefix, name);
        func.sig.ident = scalar.clone();
        Scalar {
            name,
            vis,
            docs,
            scalar,
        }
    }
}
