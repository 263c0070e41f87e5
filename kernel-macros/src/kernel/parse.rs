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
    /// A generic kernel's instances (`instances(f32, f64)`, or tuples for several type
    /// parameters), as written.
    pub instances: Option<Instances>,
}

/// The `instances(..)` option: the list, and where it was written.
pub struct Instances {
    pub span: proc_macro2::Span,
    pub types: Vec<syn::Type>,
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
        instances: None,
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
            Meta::List(list) if list.path.is_ident("instances") => {
                let types =
                    list.parse_args_with(Punctuated::<syn::Type, Token![,]>::parse_terminated)?;
                options.instances = Some(Instances {
                    span: syn::spanned::Spanned::span(&list),
                    types: types.into_iter().collect(),
                });
            }
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "unknown kernel option: expected `boundscheck = false`, `barriers` or \
                     `instances(T1, T2, ..)`",
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
