//! Loops over constant ranges in a stencil's body, `for i in -2..=2 { .. }`, become straight-line
//! copies of their body, the counter a known constant in each. A relative index made of counters
//! (`x[[i, j + 1]]`) is then a constant too: the macro bounds it as it bounds `x[[-2, 1]]`, and
//! the compiler sees every read at a fixed offset, as it needs to keep a tile in registers and
//! to vectorize a row.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::visit::Visit;
use syn::{BinOp, Block, Expr, ExprForLoop, Pat, UnOp};

/// The most copies of one loop's body.
const MOST_COPIES: i64 = 32;

/// The value of `e` where it is an integer constant, given the counters `known`: literals,
/// counters, and `+`, `-`, `*` and negation of those.
pub fn value(e: &Expr, known: &[(String, i64)]) -> Option<i64> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => value(&u.expr, known).map(|v| -v),
        Expr::Paren(p) => value(&p.expr, known),
        Expr::Group(g) => value(&g.expr, known),
        Expr::Path(p) if p.qself.is_none() => {
            let name = p.path.get_ident()?.to_string();
            known
                .iter()
                .rev()
                .find(|(k, _)| *k == name)
                .map(|&(_, v)| v)
        }
        Expr::Binary(b) => {
            let (l, r) = (value(&b.left, known)?, value(&b.right, known)?);
            match b.op {
                BinOp::Add(_) => l.checked_add(r),
                BinOp::Sub(_) => l.checked_sub(r),
                BinOp::Mul(_) => l.checked_mul(r),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The loop's counter and, for each of its values in order, the copy of its body that binds it:
/// where the loop runs over a range of constants (`a..b`, `a..=b`) with at most
/// [`MOST_COPIES`] values, its counter is a plain name its body does not bind again, and its
/// body neither breaks nor continues.
pub fn copies(f: &ExprForLoop) -> Option<(String, Vec<(i64, Block)>)> {
    let Pat::Ident(counter) = &*f.pat else {
        return None;
    };
    if counter.mutability.is_some() || counter.by_ref.is_some() || counter.subpat.is_some() {
        return None;
    }
    let Expr::Range(range) = &*f.expr else {
        return None;
    };
    let (start, end) = (range.start.as_deref()?, range.end.as_deref()?);
    let (lo, mut hi) = (value(start, &[])?, value(end, &[])?);
    if matches!(range.limits, syn::RangeLimits::Closed(_)) {
        hi += 1;
    }
    let name = counter.ident.to_string();
    if f.label.is_some() || !(0..=MOST_COPIES).contains(&(hi - lo)) || !plain(&f.body, &name) {
        return None;
    }
    let suffix = [start, end]
        .iter()
        .find_map(|e| suffix_of(e))
        .unwrap_or_default();
    let ident = &counter.ident;
    let body = &f.body;
    let copies = (lo..hi)
        .map(|v| {
            let lit = literal(v, &suffix);
            (v, syn::parse_quote!({ let #ident = #lit; #body }))
        })
        .collect();
    Some((name, copies))
}

/// The type suffix of an integer literal in `e` (`isize` of `-2isize`), if it has one.
fn suffix_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) if !i.suffix().is_empty() => Some(i.suffix().to_string()),
        Expr::Unary(u) => suffix_of(&u.expr),
        Expr::Paren(p) => suffix_of(&p.expr),
        Expr::Group(g) => suffix_of(&g.expr),
        _ => None,
    }
}

/// The literal `v`, with the type suffix `suffix` (none where it is empty).
pub fn literal(v: i64, suffix: &str) -> TokenStream {
    let abs: Literal = format!("{}{suffix}", v.unsigned_abs())
        .parse()
        .expect("digits and a type suffix make a literal");
    if v < 0 {
        quote!(-#abs)
    } else {
        quote!(#abs)
    }
}

/// Whether `body` neither breaks nor continues, and binds no name `counter`.
fn plain(body: &Block, counter: &str) -> bool {
    let mut check = Plain {
        counter,
        plain: true,
    };
    check.visit_block(body);
    check.plain
}

struct Plain<'a> {
    counter: &'a str,
    plain: bool,
}

impl Visit<'_> for Plain<'_> {
    fn visit_expr_break(&mut self, _: &syn::ExprBreak) {
        self.plain = false;
    }
    fn visit_expr_continue(&mut self, _: &syn::ExprContinue) {
        self.plain = false;
    }
    fn visit_pat_ident(&mut self, p: &syn::PatIdent) {
        self.plain &= p.ident != self.counter;
        syn::visit::visit_pat_ident(self, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_of_constants_become_copies_and_others_stay() {
        let f: ExprForLoop = syn::parse_quote!(for i in -1..=1isize {
            s += x[[i, 0]];
        });
        let (name, made) = copies(&f).expect("a loop of constants");
        assert_eq!(name, "i");
        assert_eq!(made.iter().map(|c| c.0).collect::<Vec<_>>(), [-1, 0, 1]);
        let first = &made[0].1;
        assert_eq!(
            quote!(#first).to_string(),
            quote!({
                let i = -1isize;
                {
                    s += x[[i, 0]];
                }
            })
            .to_string()
        );
        for kept in [
            quote!(for i in 0..n {
                s += x[i];
            }),
            quote!(for i in 0..3 {
                if s > 9 {
                    break;
                }
                s += x[i];
            }),
            quote!(for i in 0..3 {
                let i = 2;
                s += x[i];
            }),
            quote!(for mut i in 0..3 {
                s += x[i];
            }),
            quote!(for i in 0..100 {
                s += x[i];
            }),
        ] {
            let f: ExprForLoop = syn::parse2(kept.clone()).unwrap();
            assert!(copies(&f).is_none(), "{kept}");
        }
        let known = [("i".to_string(), -2), ("j".to_string(), 1)];
        let e: Expr = syn::parse_quote!(i * 2 + (j - 3));
        assert_eq!(value(&e, &known), Some(-6));
        assert_eq!(value(&syn::parse_quote!(k + 1), &known), None);
    }
}
