//! `#[stencil]`: a function of one point and its neighbours, applied to whole arrays, as
//! Numba's `@stencil`.
//!
//! `#[stencil] fn smooth(x: &Array2<i8>) -> i8 { .. x[[-1, 0]] .. }` keeps the function, its
//! input arrays read through relative indices ([`offsets`]), and adds a value `smooth` with
//! `apply(args, &mut out)` and `run(args)`, on the arrays' device ([`emit`]). The options are
//! Numba's `cval` and `neighborhood` ([`options`]).

mod emit;
mod offsets;
mod options;
mod unroll;

use crate::kernel::params::{self, Kind, Param};
use proc_macro2::TokenStream;
use syn::{ItemFn, ReturnType, Type};

/// The attribute's expansion, or the error that refuses the function.
pub fn stencil(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = options::parse(attr)?;
    let mut func: ItemFn = syn::parse2(item)?;
    let ret = signature(&func.sig)?;
    let params = func
        .sig
        .inputs
        .iter()
        .map(params::parse)
        .collect::<syn::Result<Vec<Param>>>()?;
    let standard = standard_arrays(&options.standard, &params)?;
    let relative: Vec<Param> = params
        .iter()
        .filter(|p| !standard.contains(&p.name.to_string()))
        .cloned()
        .collect();
    let rank = inputs_rank(&func.sig.ident, &relative)?;
    let arrays: Vec<String> = relative
        .iter()
        .filter(|p| matches!(p.kind, Kind::Array { .. }))
        .map(|p| p.name.to_string())
        .collect();
    let declared = options.neighborhood.as_ref().map(|(b, _)| b.as_slice());
    if let Some((bounds, written)) = &options.neighborhood {
        if bounds.len() != rank {
            return Err(syn::Error::new_spanned(
                written,
                format!("the inputs have {rank} axes: give one `(lo, hi)` per axis"),
            ));
        }
    }
    if let Some(([planes, ..], written)) = &options.tile {
        if *planes > 1 && rank < 3 {
            return Err(syn::Error::new_spanned(
                written,
                format!(
                    "the inputs have {rank} axes: a tile of planes needs 3, give `(rows, cols)`"
                ),
            ));
        }
    }
    let found = offsets::rewrite(&mut func.block, &arrays, rank, declared)?;
    let names: Vec<String> = params.iter().map(|p| p.name.to_string()).collect();
    crate::kernel::rewrite::rewrite(
        &mut func.block,
        crate::kernel::rewrite::Scope::Device,
        quote::format_ident!("__KERNEL_SHARED_NONE"),
        &names,
        &func.sig.generics,
    )?;
    let bounds = declared.map_or(found.reach, <[_]>::to_vec);
    let (below, above) = offsets::reach(&bounds);
    Ok(emit::Stencil {
        func,
        params,
        ret,
        rank,
        bounds,
        below,
        above,
        cval: options.cval,
        tile: options.tile.map(|(tile, _)| tile),
        standard,
        constant: found.constant,
    }
    .expand())
}

/// The names of the arrays `named` in `standard_indexing`, or the error: each must be a
/// read-only array parameter.
fn standard_arrays(named: &[syn::Ident], params: &[Param]) -> syn::Result<Vec<String>> {
    named
        .iter()
        .map(|n| match params.iter().find(|p| p.name == *n) {
            Some(Param {
                kind: Kind::Array { mutable: false, .. },
                ..
            }) => Ok(n.to_string()),
            _ => Err(syn::Error::new_spanned(
                n,
                format!("`{n}` in `standard_indexing` is not a read-only array parameter (`&[T]`, `&Array2<T>`, ..)"),
            )),
        })
        .collect()
}

/// The function's result type, or the error that refuses its signature.
fn signature(sig: &syn::Signature) -> syn::Result<Type> {
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new_spanned(a, "a stencil cannot be `async`"));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a stencil cannot be generic: write one per element type",
        ));
    }
    match &sig.output {
        ReturnType::Type(_, t) if !matches!(&**t, Type::Tuple(tt) if tt.elems.is_empty()) => {
            Ok((**t).clone())
        }
        _ => Err(syn::Error::new_spanned(
            &sig.ident,
            "a stencil returns the value of its point: `fn smooth(x: &Array2<i8>) -> i8`",
        )),
    }
}

/// The rank all input arrays share, or the error: a stencil needs one input array at least,
/// reads them all at the same point, and writes none.
fn inputs_rank(name: &syn::Ident, params: &[Param]) -> syn::Result<usize> {
    let mut rank = None;
    for p in params {
        match &p.kind {
            Kind::Array { mutable: true, .. } => {
                return Err(syn::Error::new(
                    p.ty_span,
                    "a stencil reads its input arrays, as `&Array2<T>`: the value it returns is \
                     its output, which `apply` writes",
                ))
            }
            Kind::Array { rank: r, .. } if !(1..=3).contains(r) => {
                return Err(syn::Error::new(
                    p.ty_span,
                    "a stencil's arrays have 1, 2 or 3 axes",
                ))
            }
            Kind::Array { rank: r, .. } => match rank {
                Some(first) if first != *r => {
                    return Err(syn::Error::new(
                        p.ty_span,
                        format!(
                            "the input arrays of a stencil are read at the same point, so have \
                             one shape: this one has {r} axes, the first {first}"
                        ),
                    ))
                }
                _ => rank = Some(*r),
            },
            Kind::Pointer { .. } => {
                return Err(syn::Error::new(
                    p.ty_span,
                    "a stencil takes arrays and values, not raw pointers",
                ))
            }
            Kind::Scalar(_) | Kind::Struct(_) => {}
        }
    }
    rank.ok_or_else(|| {
        syn::Error::new_spanned(
            name,
            "a stencil takes one input array at least, read through relative indices: \
             `fn smooth(x: &Array2<i8>) -> i8`",
        )
    })
}
