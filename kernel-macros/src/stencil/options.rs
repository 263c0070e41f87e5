//! `#[stencil(..)]`'s options, Numba's names: `cval = expr`, the value of the border's points;
//! `neighborhood = ((lo, hi), ..)`, the reach of relative indices computed at run time. And one
//! of this project: `tile = (rows, cols)` or `(planes, rows, cols)`, the outputs of one GPU
//! thread, in place of the tile the arrays' rank and element type pick (for tuning).

use super::offsets::constant;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, MetaNameValue, Token};

/// The options given.
#[derive(Default)]
pub struct Options {
    /// The border's value, where given (else the border keeps its value, or is zero in a new
    /// array).
    pub cval: Option<Expr>,
    /// The declared neighbourhood: `(lo, hi)` per axis, and where it was written.
    pub neighborhood: Option<(Vec<(i64, i64)>, Expr)>,
    /// The GPU tile, planes × rows × columns, where given, and where it was written.
    pub tile: Option<([usize; 3], Expr)>,
    /// The arrays indexed as usual, not relative to the point (Numba's `standard_indexing`).
    pub standard: Vec<syn::Ident>,
}

/// Parses the attribute's tokens.
pub fn parse(attr: proc_macro2::TokenStream) -> syn::Result<Options> {
    let pairs = Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse2(attr)?;
    let mut options = Options::default();
    for pair in pairs {
        let name = pair
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match name.as_str() {
            "cval" if options.cval.is_none() => options.cval = Some(pair.value),
            "neighborhood" if options.neighborhood.is_none() => {
                options.neighborhood = Some((bounds(&pair.value)?, pair.value));
            }
            "tile" if options.tile.is_none() => {
                options.tile = Some((tile(&pair.value)?, pair.value));
            }
            "standard_indexing" if options.standard.is_empty() => {
                options.standard = names(&pair.value)?;
            }
            "cval" | "neighborhood" | "tile" | "standard_indexing" => {
                return Err(syn::Error::new_spanned(
                    &pair.path,
                    format!("`{name}` is given twice"),
                ))
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    &pair.path,
                    "`#[stencil]` takes `cval = value` (the border's value) and \
                     `neighborhood = ((lo, hi), ..)` (the reach of relative indices computed at \
                     run time) and `standard_indexing = (w, ..)` (arrays indexed as usual), as \
                     Numba's `@stencil`, and `tile = (rows, cols)` or `(planes, rows, cols)` \
                     (the outputs of one GPU thread)",
                ))
            }
        }
    }
    Ok(options)
}

/// `(a, b)`, `a` or `("a", "b")`: the names of parameters.
fn names(value: &Expr) -> syn::Result<Vec<syn::Ident>> {
    let one = |e: &Expr| match e {
        Expr::Path(p) => p.path.get_ident().cloned(),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => s.parse().ok(),
        _ => None,
    };
    let all: Option<Vec<syn::Ident>> = match value {
        Expr::Tuple(t) => t.elems.iter().map(one).collect(),
        Expr::Paren(p) => one(&p.expr).map(|n| vec![n]),
        other => one(other).map(|n| vec![n]),
    };
    all.filter(|n| !n.is_empty()).ok_or_else(|| {
        syn::Error::new_spanned(
            value,
            "`standard_indexing` names the array parameters indexed as usual: \
             `standard_indexing = (weights, ..)`",
        )
    })
}

/// `(rows, cols)` or `(planes, rows, cols)`: positive integers, at most 16 each; as planes,
/// rows, columns.
fn tile(value: &Expr) -> syn::Result<[usize; 3]> {
    let dims: Option<Vec<usize>> = match value {
        Expr::Tuple(t) if (2..=3).contains(&t.elems.len()) => t
            .elems
            .iter()
            .map(|e| {
                constant(e)
                    .filter(|v| (1..=16).contains(v))
                    .map(|v| v as usize)
            })
            .collect(),
        _ => None,
    };
    match dims.as_deref() {
        Some(&[rows, cols]) => Ok([1, rows, cols]),
        Some(&[planes, rows, cols]) => Ok([planes, rows, cols]),
        _ => Err(syn::Error::new_spanned(
            value,
            "a tile is `(rows, cols)` or `(planes, rows, cols)`, the outputs of one GPU \
             thread: 1 to 16 each",
        )),
    }
}

/// `((lo, hi), ..)`, or `(lo, hi)` alone for one axis: integer bounds, `lo <= hi`.
fn bounds(value: &Expr) -> syn::Result<Vec<(i64, i64)>> {
    let wrong = || {
        syn::Error::new_spanned(
            value,
            "a neighbourhood is a tuple of `(lo, hi)` integer pairs, one per axis: \
             `neighborhood = ((-1, 1), (-2, 2))`, or `(-3, 0)` for one axis",
        )
    };
    let Expr::Tuple(outer) = value else {
        return Err(wrong());
    };
    let pair = |e: &Expr| match e {
        Expr::Tuple(t) if t.elems.len() == 2 => {
            match (constant(&t.elems[0]), constant(&t.elems[1])) {
                (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
                _ => None,
            }
        }
        _ => None,
    };
    let one = outer.elems.len() == 2 && outer.elems.iter().all(|e| constant(e).is_some());
    if one {
        return pair(value).map(|p| vec![p]).ok_or_else(wrong);
    }
    outer
        .elems
        .iter()
        .map(|e| pair(e).ok_or_else(wrong))
        .collect()
}
