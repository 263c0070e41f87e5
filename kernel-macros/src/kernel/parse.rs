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
    /// Approximate `f32` division and functions in the device build (`fastmath`).
    pub fastmath: bool,
    /// A generic kernel's instances (`instances(f32, f64)`, or tuples for several type
    /// parameters), as written.
    pub instances: Option<Instances>,
    /// `launch_bounds = threads` or `launch_bounds = (threads, blocks)`.
    pub launch_bounds: Option<LaunchBounds>,
    /// `max_registers = n`: each thread's registers capped at `n`.
    pub max_registers: Option<Expr>,
    /// `dynamic_shared = bytes`: the dynamic shared memory every launch gives a block at least
    /// (a constant `usize` expression).
    pub dynamic_shared: Option<Expr>,
}

/// The `launch_bounds` option: a block's most threads, and the blocks to keep resident on a
/// multiprocessor, as written (constant expressions).
pub struct LaunchBounds {
    pub threads: Expr,
    pub blocks: Option<Expr>,
}

impl LaunchBounds {
    /// `threads` or `(threads)` or `(threads, blocks)`, as CUDA's `__launch_bounds__` and
    /// Numba's `launch_bounds`; Numba's third bound (blocks per cluster) is refused.
    fn parse(value: &Expr) -> syn::Result<LaunchBounds> {
        let items: Vec<Expr> = match value {
            Expr::Tuple(t) => t.elems.iter().cloned().collect(),
            Expr::Paren(p) => vec![(*p.expr).clone()],
            other => vec![other.clone()],
        };
        match items.as_slice() {
            [threads] => Ok(LaunchBounds {
                threads: threads.clone(),
                blocks: None,
            }),
            [threads, blocks] => Ok(LaunchBounds {
                threads: threads.clone(),
                blocks: Some(blocks.clone()),
            }),
            _ => Err(syn::Error::new_spanned(
                value,
                "`launch_bounds` takes a block's most threads, or `(threads, blocks)` with the \
                 blocks to keep resident on a multiprocessor (a bound of blocks per cluster is \
                 not taken)",
            )),
        }
    }
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
        fastmath: false,
        instances: None,
        launch_bounds: None,
        max_registers: None,
        dynamic_shared: None,
    };
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    for meta in metas {
        match &meta {
            Meta::NameValue(nv) if nv.path.is_ident("boundscheck") => {
                options.boundscheck = boolean(&nv.value, "`boundscheck` takes `true` or `false`")?
            }
            Meta::Path(p) if p.is_ident("barriers") => options.barriers = true,
            meta if meta.path().is_ident("fastmath") => options.fastmath = fastmath(meta)?,
            Meta::NameValue(nv) if nv.path.is_ident("launch_bounds") => {
                options.launch_bounds = Some(LaunchBounds::parse(&nv.value)?);
            }
            Meta::NameValue(nv) if nv.path.is_ident("max_registers") => {
                options.max_registers = Some(nv.value.clone());
            }
            Meta::NameValue(nv) if nv.path.is_ident("dynamic_shared") => {
                options.dynamic_shared = Some(nv.value.clone());
            }
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
                    "unknown kernel option: expected `boundscheck = false`, `barriers`, \
                     `fastmath`, `launch_bounds = (threads, blocks)`, `max_registers = n`, \
                     `dynamic_shared = bytes` or `instances(T1, T2, ..)`",
                ))
            }
        }
    }
    let func = syn::parse2::<ItemFn>(item)?;
    Ok(KernelItem { options, func })
}

/// The value of a `fastmath` option (see the `fastmath` module): `fastmath`, or
/// `fastmath = true` or `false` (Numba's `fastmath=True`).
fn fastmath(meta: &Meta) -> syn::Result<bool> {
    match meta {
        Meta::Path(_) => Ok(true),
        Meta::NameValue(nv) => boolean(
            &nv.value,
            "`fastmath` takes `true` or `false`, or stands alone",
        ),
        Meta::List(list) => Err(syn::Error::new_spanned(
            list,
            "`fastmath` takes no list: write `fastmath` or `fastmath = true`",
        )),
    }
}

/// The options of an attribute that takes `fastmath` alone, `unknown` the error at any other:
/// whether it is given.
pub fn fastmath_only(attr: TokenStream, unknown: &str) -> syn::Result<bool> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    let mut fast = false;
    for meta in metas {
        if !meta.path().is_ident("fastmath") {
            return Err(syn::Error::new_spanned(meta, unknown));
        }
        fast = fastmath(&meta)?;
    }
    Ok(fast)
}

/// A `true` or `false` literal, `message` the error at anything else.
fn boolean(value: &Expr, message: &str) -> syn::Result<bool> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value),
        other => Err(syn::Error::new_spanned(other, message)),
    }
}

/// A `#[device]` function and its options.
pub struct DeviceItem {
    /// Approximate `f32` division and functions in the device build (`fastmath`).
    pub fastmath: bool,
    pub func: ItemFn,
}

pub fn device(attr: TokenStream, item: TokenStream) -> syn::Result<DeviceItem> {
    let fastmath = fastmath_only(
        attr,
        "unknown device function option: expected `fastmath`, or `extern` for a foreign \
         declaration",
    )?;
    Ok(DeviceItem {
        fastmath,
        func: syn::parse2::<ItemFn>(item)?,
    })
}
