//! Index checks once per span: the proofs that let a guarded grid-level kernel with index checks
//! run the threads of a row's span (see [`guard`](super::guard)) without checking each access.
//!
//! An access `x[[e0, e1]]` to an array parameter whose every component is either the same for
//! the whole row (`i - 1`, `n`, `2`) or the thread's x plus such a value (`j`, `j + 1`, `j - 1`)
//! takes, over a span of consecutive x, components that each only grow by one per thread. The
//! span closure computes each component at the span's first and last thread, with wrapping
//! arithmetic; where every component is nondecreasing between the two and the last within the
//! array's extent, every thread of the span indexes within the array, whatever path its body
//! takes. The rows then run the span with the access as a `Proven` index
//! (`kernel_runtime::view::Proven`), which the view does not check. Where the proof fails for a row, its span is empty: each thread of the row runs
//! the kernel's guard and checks, as written.
//!
//! A value is the same for the whole row when its names are neither the thread's x nor
//! computed from it, are bound in no pattern of the guarded body (a closure's parameter, a
//! `for`, a `let` there could shadow them), and cannot change (no `mut` binding). The proofs
//! are all or nothing: a body with one access they cannot decide keeps its guard and checks
//! for every thread, as the optimiser then sees them.

use crate::syntax::{is_name, unparen};
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::{HashMap, HashSet};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{BinOp, Block, Expr, Lit};

/// What the proofs need of the kernel: its array parameters, by name, with their ranks, and the
/// names that may change (parameters declared `mut`, names bound `mut` before the guard, names
/// the guard's `let`s compute from the thread's x).
pub struct Names<'a> {
    pub arrays: &'a HashMap<String, usize>,
    pub x: &'a str,
    /// Names whose value is not the same for the whole row, or may change.
    pub unfixed: HashSet<String>,
    /// Names the `let`s before the guard bind (a view's name bound again is no view).
    pub bound_before: HashSet<String>,
}

/// The proofs of the guarded `body` and the body with each proven access's index made a
/// `Proven` one; `None` where an access to an array parameter cannot be proven.
pub fn prove(body: &Block, names: &Names<'_>) -> Option<(TokenStream, Block)> {
    let mut bound = Bound(HashSet::new());
    bound.visit_block(body);
    let mut accesses = Accesses {
        names,
        bound: &bound.0,
        proofs: Vec::new(),
        failed: false,
    };
    accesses.visit_block(body);
    if accesses.failed {
        return None;
    }
    let mut proofs: Vec<String> = Vec::new();
    let mut tokens = Vec::new();
    for p in accesses.proofs {
        if !proofs.contains(&p.to_string()) {
            proofs.push(p.to_string());
            tokens.push(p);
        }
    }
    let mut rewritten = body.clone();
    Rewrite {
        names,
        bound: &bound.0,
    }
    .visit_block_mut(&mut rewritten);
    if tokens.is_empty() {
        return Some((TokenStream::new(), rewritten));
    }
    let span = quote! {
        let __first = __span.lo;
        let __last = __span.hi - 1;
        if !(#(#tokens)&&*) {
            return __rt::Span::EMPTY;
        }
    };
    Some((span, rewritten))
}

/// Every name a pattern of the body binds.
pub(super) struct Bound(pub(super) HashSet<String>);

impl<'ast> Visit<'ast> for Bound {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

/// The proof of each access to an array parameter.
struct Accesses<'n, 'a> {
    names: &'n Names<'a>,
    bound: &'n HashSet<String>,
    proofs: Vec<TokenStream>,
    failed: bool,
}

impl<'ast> Visit<'ast> for Accesses<'_, '_> {
    fn visit_expr_index(&mut self, e: &'ast syn::ExprIndex) {
        // A 0-D view's one element needs no proof (and has no check).
        if let Some(rank @ 1..) = array(&e.expr, self.names, self.bound) {
            match proof(&e.expr, &e.index, rank, self.names, self.bound) {
                Some(p) => self.proofs.push(p),
                None => self.failed = true,
            }
        }
        syn::visit::visit_expr_index(self, e);
    }
}

/// The rank of the array parameter that `base` names, where it is one the body does not bind
/// again.
pub(super) fn array(base: &Expr, names: &Names<'_>, bound: &HashSet<String>) -> Option<usize> {
    let Expr::Path(p) = unparen(base) else {
        return None;
    };
    let name = p.path.get_ident()?.to_string();
    if bound.contains(&name) || names.bound_before.contains(&name) {
        return None;
    }
    names.arrays.get(&name).copied()
}

/// The components of an index of `rank`: `[a, b]`, `(a, b)`, or the index itself for rank 1.
fn components(index: &Expr, rank: usize) -> Option<Vec<&Expr>> {
    let parts: Vec<&Expr> = match unparen(index) {
        Expr::Array(a) if rank > 1 => a.elems.iter().collect(),
        Expr::Tuple(t) if rank > 1 => t.elems.iter().collect(),
        e if rank == 1 => vec![e],
        _ => return None,
    };
    (parts.len() == rank).then_some(parts)
}

/// `shape within at the first and last thread`, for the access `base[index]`.
fn proof(
    base: &Expr,
    index: &Expr,
    rank: usize,
    names: &Names<'_>,
    bound: &HashSet<String>,
) -> Option<TokenStream> {
    let (first, last) = ends(index, rank, names, bound)?;
    Some(quote! {
        __rt::Span::within(#base.shape(), #first, #last)
    })
}

/// The index `index` of an array of `rank` at the span's first and last thread (`__first`,
/// `__last` in scope), as arrays; `None` where a component is not the thread's x plus a value
/// the same for the whole row, nor such a value.
pub(super) fn ends(
    index: &Expr,
    rank: usize,
    names: &Names<'_>,
    bound: &HashSet<String>,
) -> Option<(TokenStream, TokenStream)> {
    let parts = components(index, rank)?;
    let value = |x: TokenStream| -> Option<Vec<TokenStream>> {
        let mut eval = Eval {
            names,
            bound,
            x: &x,
        };
        parts.iter().map(|p| eval.value(p)).collect()
    };
    let first = value(quote!(__first))?;
    let last = value(quote!(__last))?;
    Some((quote!([#(#first),*]), quote!([#(#last),*])))
}

/// A component's value for the thread whose x is `x`, in wrapping arithmetic.
struct Eval<'n, 'a> {
    names: &'n Names<'a>,
    bound: &'n HashSet<String>,
    x: &'n TokenStream,
}

impl Eval<'_, '_> {
    /// The value of `e`, the thread's x at most once and only added; `None` for any other form.
    fn value(&mut self, e: &Expr) -> Option<TokenStream> {
        let (tokens, xs) = self.term(e)?;
        (xs <= 1).then_some(tokens)
    }

    /// The value of `e` and how many times the thread's x is added in it.
    fn term(&mut self, e: &Expr) -> Option<(TokenStream, usize)> {
        match unparen(e) {
            Expr::Path(_) if is_name(unparen(e), self.names.x) => {
                (!self.bound.contains(self.names.x)).then(|| (self.x.clone(), 1))
            }
            Expr::Path(p) => {
                let name = p.path.get_ident()?;
                let s = name.to_string();
                if self.names.unfixed.contains(&s) || self.bound.contains(&s) {
                    return None;
                }
                Some((quote!(::kernel_runtime::ArrayIndex::index(#name)), 0))
            }
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => {
                    let v: u64 = i.base10_parse().ok()?;
                    let v = proc_macro2::Literal::u64_suffixed(v);
                    Some((quote!((#v as usize)), 0))
                }
                _ => None,
            },
            Expr::Binary(b) => match b.op {
                BinOp::Add(_) => self.sum(&b.left, &b.right, true),
                BinOp::Sub(_) => self.sum(&b.left, &b.right, false),
                _ => None,
            },
            // What `#[kernel]` makes of `i - 1` in an index (an index below zero wraps, and the
            // check reports it).
            Expr::MethodCall(m) if m.args.len() == 1 && m.turbofish.is_none() => {
                match m.method.to_string().as_str() {
                    "wrapping_add" => self.sum(&m.receiver, &m.args[0], true),
                    "wrapping_sub" => self.sum(&m.receiver, &m.args[0], false),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `l + r` (`add`) or `l - r`, the thread's x not subtracted.
    fn sum(&mut self, l: &Expr, r: &Expr, add: bool) -> Option<(TokenStream, usize)> {
        let (l, lx) = self.term(l)?;
        let (r, rx) = self.term(r)?;
        match add {
            true => Some((quote!(usize::wrapping_add(#l, #r)), lx + rx)),
            false if rx == 0 => Some((quote!(usize::wrapping_sub(#l, #r)), lx)),
            false => None,
        }
    }
}

/// Makes each proven access's index a `Proven` one, proven where the thread lies in the span
/// (`__inner`).
struct Rewrite<'n, 'a> {
    names: &'n Names<'a>,
    bound: &'n HashSet<String>,
}

impl VisitMut for Rewrite<'_, '_> {
    fn visit_expr_index_mut(&mut self, e: &mut syn::ExprIndex) {
        syn::visit_mut::visit_expr_index_mut(self, e);
        if array(&e.expr, self.names, self.bound).is_some_and(|rank| rank > 0) {
            let index = &e.index;
            *e.index = syn::parse_quote!({
                let __index = #index;
                // SAFETY: `__inner` holds only for the threads of the span, whose indices the
                // span's proofs found within the array.
                unsafe { __rt::Proven::new(__index, __inner) }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<'a>(arrays: &'a HashMap<String, usize>, unfixed: &[&str]) -> Names<'a> {
        Names {
            arrays,
            x: "j",
            unfixed: unfixed.iter().map(|s| s.to_string()).collect(),
            bound_before: ["n", "m"].iter().map(|s| s.to_string()).collect(),
        }
    }

    fn arrays() -> HashMap<String, usize> {
        [
            ("x".to_string(), 2),
            ("out".to_string(), 2),
            ("v".to_string(), 1),
        ]
        .into()
    }

    #[test]
    fn a_stencils_accesses_are_proven_at_the_spans_ends() {
        let arrays = arrays();
        let body: Block = syn::parse_quote!({
            out[[i, j]] = x[[i - 1, j + 1]] + x[(i, (j).wrapping_sub(1))] + v[j] + v[3] + s[()];
        });
        let (span, body) = prove(&body, &names(&arrays, &["j"])).expect("proven");
        let span = span.to_string();
        assert_eq!(span.matches("Span :: within").count(), 5, "{span}");
        assert!(
            span.contains("usize :: wrapping_sub (__first , (1u64 as usize))"),
            "{span}"
        );
        assert!(
            span.contains("usize :: wrapping_add (__last , (1u64 as usize))"),
            "{span}"
        );
        let body = quote!(#body).to_string();
        assert_eq!(
            body.matches("Proven :: new (__index , __inner)").count(),
            5,
            "{body}"
        );
    }

    #[test]
    fn an_access_it_cannot_decide_declines_them_all() {
        let arrays = arrays();
        let refused: [Block; 6] = [
            // The x twice, or subtracted; a name computed from the x.
            syn::parse_quote!({
                out[[i, j + j]] = 0;
            }),
            syn::parse_quote!({
                out[[i, n - j]] = 0;
            }),
            syn::parse_quote!({
                out[[i, k]] = 0;
            }),
            // A name the body binds, a product, an element as an index.
            syn::parse_quote!({
                for s in 0..3 {
                    out[[i, j + s]] = 0;
                }
            }),
            syn::parse_quote!({
                out[[i * 2, j]] = 0;
            }),
            syn::parse_quote!({
                out[[i, j]] = x[[v[j], j]];
            }),
        ];
        for body in refused {
            let text = quote!(#body).to_string();
            assert!(
                prove(&body, &names(&arrays, &["j", "k"])).is_none(),
                "{text}"
            );
        }
    }

    #[test]
    fn other_arrays_and_shadowed_views_are_left_as_they_are() {
        let arrays = arrays();
        // `t` is a local array, `x` a view bound again in the body.
        let body: Block = syn::parse_quote!({
            let t = [1, 2];
            let x = t;
            out[[i, j]] = t[1] + x[0];
        });
        let (span, body) = prove(&body, &names(&arrays, &["j"])).expect("proven");
        assert_eq!(span.to_string().matches("within").count(), 1);
        assert_eq!(quote!(#body).to_string().matches("Proven").count(), 1);
    }
}
