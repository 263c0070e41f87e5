//! A stencil body's relative indices: each `x[[-1, 0]]` of an input array becomes a call of the
//! neighbour reader `x([-1, 0])`, and the neighbourhood is what the constant indices reach, or
//! the one declared, which every constant index must lie in. An index computed at run time is
//! checked against the declared neighbourhood where it is read; without one it is refused.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{BinOp, Block, Expr, ExprIndex, UnOp};

/// The integer `e` spells, where it is a constant: `3`, `-1`, `(2)`.
pub fn constant(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => constant(&u.expr).map(|v| -v),
        Expr::Paren(p) => constant(&p.expr),
        Expr::Group(g) => constant(&g.expr),
        _ => None,
    }
}

/// What the rewrite found: the constant indices' reach per axis, `(lo, hi)` with the centre.
pub struct Found {
    pub reach: Vec<(i64, i64)>,
    /// Whether every relative index is a constant.
    pub constant: bool,
}

/// Rewrites the relative indices of `block`'s input `arrays` (all of rank `rank`), checking
/// them against `declared`, where given.
pub fn rewrite(
    block: &mut Block,
    arrays: &[String],
    rank: usize,
    declared: Option<&[(i64, i64)]>,
) -> syn::Result<Found> {
    let mut pass = Pass {
        arrays,
        known: Vec::new(),
        rank,
        declared,
        reach: vec![(0, 0); rank],
        computed: false,
        errors: Vec::new(),
    };
    pass.visit_block_mut(block);
    let mut errors = pass.errors.into_iter();
    if let Some(mut first) = errors.next() {
        errors.for_each(|e| first.combine(e));
        return Err(first);
    }
    Ok(Found {
        reach: pass.reach,
        constant: !pass.computed,
    })
}

struct Pass<'a> {
    arrays: &'a [String],
    /// The counters of the unrolled loops around the code being rewritten, with their values.
    known: Vec<(String, i64)>,
    rank: usize,
    declared: Option<&'a [(i64, i64)]>,
    reach: Vec<(i64, i64)>,
    /// Whether an index was computed at run time.
    computed: bool,
    errors: Vec<syn::Error>,
}

impl Pass<'_> {
    /// The input array `e` names, if it names one.
    fn array(&self, e: &Expr) -> Option<syn::Ident> {
        match e {
            Expr::Path(p) if p.qself.is_none() => p
                .path
                .get_ident()
                .filter(|i| self.arrays.contains(&i.to_string()))
                .cloned(),
            Expr::Group(g) => self.array(&g.expr),
            Expr::Paren(p) => self.array(&p.expr),
            _ => None,
        }
    }

    /// The components of a relative index of rank `self.rank`: `[a, b]`, or `a` for rank 1.
    fn components<'e>(&self, name: &syn::Ident, index: &'e Expr) -> syn::Result<Vec<&'e Expr>> {
        let parts: Vec<&Expr> = match index {
            Expr::Array(a) => a.elems.iter().collect(),
            other => vec![other],
        };
        if parts.len() != self.rank {
            let example = ["-1", "0", "1"][..self.rank].join(", ");
            return Err(syn::Error::new_spanned(
                index,
                format!(
                    "`{name}` has {} axes: read a neighbour with one relative index per axis, \
                     `{name}[[{example}]]`",
                    self.rank
                ),
            ));
        }
        Ok(parts)
    }

    /// The reader call that replaces `ix`, the relative index of array `name`.
    fn read(&mut self, name: &syn::Ident, ix: &ExprIndex) -> syn::Result<TokenStream> {
        let parts = self.components(name, &ix.index)?;
        let mut computed = false;
        let mut out = Vec::new();
        for (axis, part) in parts.into_iter().enumerate() {
            match super::unroll::value(part, &self.known) {
                Some(v) => {
                    self.check(axis, v, part.span())?;
                    let (lo, hi) = &mut self.reach[axis];
                    (*lo, *hi) = ((*lo).min(v), (*hi).max(v));
                    out.push(super::unroll::literal(v, ""));
                }
                None => {
                    computed = true;
                    if self.declared.is_none() {
                        return Err(syn::Error::new_spanned(
                            part,
                            "this relative index is computed at run time, so the stencil's \
                             neighbourhood cannot be bounded from it: declare the neighbourhood \
                             it stays in, `#[stencil(neighborhood = ((-1, 1), ..))]`, one \
                             `(lo, hi)` per axis",
                        ));
                    }
                    out.push(quote_spanned!(part.span()=> (#part) as isize));
                }
            }
        }
        let span = ix.span();
        self.computed |= computed;
        Ok(if computed {
            quote_spanned!(span=> #name.at(::kernel_runtime::__rt::stencil_within([#(#out),*], __REACH)))
        } else {
            quote_spanned!(span=> #name.at([#(#out),*]))
        })
    }

    /// An error where the constant `v` on `axis` leaves the declared neighbourhood.
    fn check(&self, axis: usize, v: i64, span: Span) -> syn::Result<()> {
        match self.declared {
            Some(d) if v < d[axis].0 || v > d[axis].1 => Err(syn::Error::new(
                span,
                format!(
                    "relative index {v} on axis {axis} is outside the declared neighbourhood \
                     ({}, {}) of that axis: widen `neighborhood` to cover it",
                    d[axis].0, d[axis].1
                ),
            )),
            _ => Ok(()),
        }
    }

    /// An error where `target`, the place an assignment writes, is an input array's.
    fn refuse_write(&mut self, target: &Expr) {
        let mut base = target;
        while let Expr::Index(ix) = base {
            base = &ix.expr;
        }
        if let Some(name) = self.array(base) {
            self.errors.push(syn::Error::new_spanned(
                target,
                format!(
                    "a stencil reads its input arrays and cannot write `{name}`: the value of \
                     each point is what the function returns"
                ),
            ));
        }
    }
}

impl VisitMut for Pass<'_> {
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        let arrays = self.arrays;
        if crate::syntax::mentions(mac.tokens.clone(), &|i| arrays.contains(&i.to_string())) {
            self.errors.push(syn::Error::new_spanned(
                &*mac,
                "a stencil's input arrays are read outside macros, whose arguments the stencil \
                 cannot check: bind the neighbour first, `let v = x[[0, 1]];`, and pass `v`",
            ));
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Index(ix) => {
                if let Some(name) = self.array(&ix.expr) {
                    self.visit_expr_mut(&mut ix.index);
                    match self.read(&name, ix).and_then(syn::parse2::<Expr>) {
                        Ok(call) => *e = call,
                        Err(err) => self.errors.push(err),
                    }
                    return;
                }
            }
            Expr::ForLoop(f) => {
                if let Some((counter, copies)) = super::unroll::copies(f) {
                    let mut blocks = Vec::new();
                    for (v, mut block) in copies {
                        self.known.push((counter.clone(), v));
                        self.visit_block_mut(&mut block);
                        self.known.pop();
                        blocks.push(block);
                    }
                    *e = syn::parse_quote!({ #(#blocks)* });
                    return;
                }
                half_open(&mut f.expr);
            }
            Expr::Assign(a) => self.refuse_write(&a.left),
            Expr::Binary(b) if is_compound(&b.op) => self.refuse_write(&b.left),
            Expr::Reference(r) if r.mutability.is_some() => self.refuse_write(&r.expr),
            Expr::Path(_) => {
                if let Some(name) = self.array(e) {
                    self.errors.push(syn::Error::new_spanned(
                        &*e,
                        format!(
                            "`{name}` is an input of the stencil, read only through relative \
                             indices: `{name}[[-1, 0]]` is the neighbour one row up"
                        ),
                    ));
                }
                return;
            }
            _ => {}
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Rewrites a loop's `a..=b` of constants as `a..(b + 1)`: the same values, in a range the
/// compiler unrolls fully (an inclusive range's iterator keeps a flag that stops it), so that
/// relative indices made of loop counters become constants.
fn half_open(range: &mut Expr) {
    let Expr::Range(r) = range else { return };
    let (Some(start), Some(end)) = (&r.start, &r.end) else {
        return;
    };
    if matches!(r.limits, syn::RangeLimits::Closed(_))
        && constant(start).is_some()
        && constant(end).is_some()
    {
        let (start, end) = (start.clone(), end.clone());
        *range = syn::parse_quote!(#start..(#end + 1));
    }
}

/// Whether `op` assigns (`+=` and the like).
fn is_compound(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// The reach of a neighbourhood as the runtime's `below` and `above` per axis, the centre
/// always in.
pub fn reach(bounds: &[(i64, i64)]) -> (Vec<usize>, Vec<usize>) {
    bounds
        .iter()
        .map(|&(lo, hi)| ((-lo).max(0) as usize, hi.max(0) as usize))
        .unzip()
}
