//! `#[derive(DeviceCopy)]`: plain data that may cross to a device.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

pub fn device_copy(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let name = &input.ident;
    let mut repr_c = false;
    for attr in &input.attrs {
        if attr.path().is_ident("repr") {
            attr.parse_nested_meta(|m| {
                if m.path.is_ident("C") || m.path.is_ident("transparent") {
                    repr_c = true;
                }
                Ok(())
            })?;
        }
    }
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        _ => {
            return Err(syn::Error::new_spanned(
                name,
                "`DeviceCopy` can only be derived for structs",
            ))
        }
    };
    if !repr_c {
        return Err(syn::Error::new_spanned(
            name,
            "`DeviceCopy` needs `#[repr(C)]`: a struct crossing to the device must have the same layout on the host and on the GPU",
        ));
    }
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "`DeviceCopy` cannot be derived for generic structs",
        ));
    }
    let types = match fields {
        Fields::Named(f) => f.named.iter().map(|f| &f.ty).collect::<Vec<_>>(),
        Fields::Unnamed(f) => f.unnamed.iter().map(|f| &f.ty).collect(),
        Fields::Unit => Vec::new(),
    };
    let checks = types.iter().map(|ty| {
        quote_spanned! {ty.span()=>
            const _: () = ::kernel_runtime::__rt::assert_device_copy::<#ty>();
        }
    });
    Ok(quote! {
        #(#checks)*
        // SAFETY: `#[repr(C)]`, and every field is `DeviceCopy` (checked above).
        unsafe impl ::kernel_runtime::__rt::DeviceCopy for #name {}
        // SAFETY: every field takes any bits and they fill the struct: no padding. The bounds
        // name no generic parameter, so each holds or not once for all; `for<'__k>` makes the
        // compiler weigh them as it would a generic bound (an impl that simply does not apply)
        // rather than refuse one that does not hold.
        unsafe impl ::kernel_runtime::__rt::AnyBitPattern for #name
        where
            #(for<'__k> #types: ::kernel_runtime::__rt::AnyBitPattern,)*
            for<'__k> ::kernel_runtime::__rt::NoPadding<{
                ::core::mem::size_of::<#name>() == 0 #(+ ::core::mem::size_of::<#types>())*
            }>: ::kernel_runtime::__rt::Holds,
        {
        }
    })
}
