//! Parsing: the attribute's options and the function item.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, ItemFn, Lit, Meta, Token};

/// The options of `#[kernel(...)]`.
pub struct KernelOptions {
    /// Index checks on (default) or off (`boundscheck = false`).
    pub boundscheck: bool,
    /// Barrier support forced on (`barriers`).
    pub barriers: bool,
}

/// A parsed `#[kernel]` item.
pub struct KernelItem {
    pub options: KernelOptions,
    pub func: ItemFn,
}

pub fn kernel(attr: TokenStream, item: TokenStream) -> syn::Result<KernelItem> {
    let mut options = KernelOptions {
        boundscheck: true,
        barriers: false,
    };
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    for meta in metas {
        match &meta {
            Meta::NameValue(nv) if nv.path.is_ident("boundscheck") => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => options.boundscheck = b.value,
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "`boundscheck` takes `true` or `false`",
                    ))
                }
            },
            Meta::Path(p) if p.is_ident("barriers") => options.barriers = true,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "unknown kernel option: expected `boundscheck = false` or `barriers`",
                ))
            }
        }
    }
    let func = syn::parse2::<ItemFn>(item)?;
    Ok(KernelItem { options, func })
}

pub fn device(attr: TokenStream, item: TokenStream) -> syn::Result<ItemFn> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "`#[device]` takes no options",
        ));
    }
    syn::parse2::<ItemFn>(item)
}
