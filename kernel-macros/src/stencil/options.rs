//! `#[stencil(..)]`'s options, Numba's names: `cval = expr`, the value of the border's points;
//! `neighborhood = ((lo, hi), ..)`, the reach of relative indices computed at run time. And one
//! of this project: `tile = (rows, cols)`, the outputs of one GPU thread, in place of the tile
//! the element type picks (for tuning).

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
    /// The GPU tile, rows × columns, where given.
    pub tile: Option<(usize, usize)>,
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
            "tile" if options.tile.is_none() => options.tile = Some(tile(&pair.value)?),
            "cval" | "neighborhood" | "tile" => {
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
                     run time), as Numba's `@stencil`, and `tile = (rows, cols)` (the outputs \
                     of one GPU thread)",
                ))
            }
        }
    }
    Ok(options)
}

/// `(rows, cols)`: positive integers, at most 16 each.
fn tile(value: &Expr) -> syn::Result<(usize, usize)> {
    let dims = match value {
        Expr::Tuple(t) if t.elems.len() == 2 => (constant(&t.elems[0]), constant(&t.elems[1])),
        _ => (None, None),
    };
    match dims {
        (Some(r @ 1..=16), Some(c @ 1..=16)) => Ok((r as usize, c as usize)),
        _ => Err(syn::Error::new_spanned(
            value,
            "a tile is `(rows, cols)`, the outputs of one GPU thread: 1 to 16 each",
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
