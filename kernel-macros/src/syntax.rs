//! Token and statement helpers shared by the passes: which names a piece of code mentions,
//! what it may change, whether it only computes with the thread's own locals.

use crate::vocab::{CONTEXT_METHODS, NUMBER_METHODS};
use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use std::collections::HashMap;
use syn::visit::Visit;
use syn::{Expr, Stmt};

pub(crate) fn count_idents(tokens: TokenStream, counts: &mut HashMap<String, usize>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => *counts.entry(i.to_string()).or_default() += 1,
            TokenTree::Group(g) => count_idents(g.stream(), counts),
            _ => {}
        }
    }
}

/// The names of the type and const parameters of `generics`.
pub(crate) fn generic_names(generics: &syn::Generics) -> impl Iterator<Item = String> + '_ {
    generics.params.iter().filter_map(|p| match p {
        syn::GenericParam::Type(t) => Some(t.ident.to_string()),
        syn::GenericParam::Const(c) => Some(c.ident.to_string()),
        syn::GenericParam::Lifetime(_) => None,
    })
}

/// Whether `tokens` hold an identifier for which `hit` holds, at any depth.
pub(crate) fn mentions(tokens: TokenStream, hit: &impl Fn(&proc_macro2::Ident) -> bool) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => hit(&i),
        TokenTree::Group(g) => mentions(g.stream(), hit),
        _ => false,
    })
}

/// Whether `tokens` hold a barrier: a block barrier (`sync_threads*`) or the grid of a
/// cooperative launch (`this_grid()` and `grid_sync()`, once rewritten, name `__kgrid`).
pub(crate) fn mentions_sync(tokens: TokenStream) -> bool {
    mentions(tokens, &|i| {
        let i = i.to_string();
        i.starts_with("sync_threads") || i == GRID
    })
}

/// The name the body pass gives a cooperative launch's grid (`this_grid()`).
pub(crate) const GRID: &str = "__kgrid";

/// Whether `stmt` only reads and writes the thread's own locals: no call, macro, indexing,
/// dereference, `unsafe` or closure, nothing that leaves it early, and loops only over ranges.
pub(crate) fn private(stmt: &Stmt) -> bool {
    let mut check = Private(true);
    check.visit_stmt(stmt);
    check.0
}

/// Whether evaluating the expression `header` reads no more than the thread's own locals, and
/// so cannot depend on which thread is current: no call or macro (a coordinate, a `#[device]`
/// function) and no indexing (checked mode records an access as the current thread's).
pub(crate) fn private_expr(header: &TokenStream) -> bool {
    syn::parse2::<Expr>(header.clone()).is_ok_and(|e| {
        let mut check = Private(true);
        check.visit_expr(&e);
        check.0
    })
}

/// The visitor of [`private`] and [`private_expr`]: whether all it visited is private.
struct Private(bool);

impl<'ast> Visit<'ast> for Private {
    fn visit_expr(&mut self, e: &'ast Expr) {
        let ok = match e {
            Expr::Call(_)
            | Expr::MethodCall(_)
            | Expr::Macro(_)
            | Expr::Index(_)
            | Expr::Unsafe(_)
            | Expr::Closure(_)
            | Expr::Async(_)
            | Expr::Await(_)
            | Expr::Return(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Try(_)
            | Expr::TryBlock(_)
            | Expr::Yield(_)
            | Expr::Verbatim(_) => false,
            Expr::Unary(u) => !matches!(u.op, syn::UnOp::Deref(_)),
            Expr::ForLoop(f) => matches!(&*f.expr, Expr::Range(_)),
            _ => true,
        };
        if ok {
            syn::visit::visit_expr(self, e);
        } else {
            self.0 = false;
        }
    }
    fn visit_local(&mut self, l: &'ast syn::Local) {
        if l.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
            self.0 = false;
        }
        syn::visit::visit_local(self, l);
    }
    fn visit_item(&mut self, _: &'ast syn::Item) {
        self.0 = false;
    }
    fn visit_macro(&mut self, _: &'ast syn::Macro) {
        self.0 = false;
    }
}

/// Whether `method` is one of the context's or of numbers' ([`NUMBER_METHODS`]),
/// which read their receiver and change nothing: a local they are called on keeps its value, and
/// a binding made of them can be evaluated again.
pub(crate) fn pure_method(method: &syn::Ident) -> bool {
    let method = method.to_string();
    CONTEXT_METHODS.contains(&method.as_str()) || NUMBER_METHODS.contains(&method.as_str())
}

/// The locals a region may change, by their names: those it assigns to, in whole or in part
/// (`x = ..`, `x[i] += ..`, `(a, b) = ..`), borrows (`&mut x`, or `&x`, through which a `Cell`
/// could change), calls a method on (but a [`pure_method`]) or names in a macro; all of them
/// (`all`) where a pattern binds by reference.
#[derive(Default)]
pub(crate) struct Changes {
    pub(crate) names: HashMap<String, usize>,
    all: bool,
}

impl Changes {
    pub(crate) fn of(stmts: &[Stmt]) -> Changes {
        let mut changes = Changes::default();
        for s in stmts {
            changes.visit_stmt(s);
        }
        changes
    }

    pub(crate) fn may_change(&self, name: &str) -> bool {
        self.all || self.names.contains_key(name)
    }

    /// Notes what `e` itself may change, not its subexpressions.
    pub(crate) fn note(&mut self, e: &Expr) {
        let target = match e {
            Expr::Assign(a) => Some(&*a.left),
            Expr::Binary(b) if assigns(&b.op) => Some(&*b.left),
            Expr::Reference(r) => Some(&*r.expr),
            Expr::MethodCall(m) => (!pure_method(&m.method)).then_some(&*m.receiver),
            _ => None,
        };
        if let Some(target) = target {
            self.place(target);
        }
    }

    /// Notes a pattern that may bind by reference.
    pub(crate) fn note_pat(&mut self, p: &syn::PatIdent) {
        self.all |= p.by_ref.is_some();
    }

    /// Takes the names of the place `e` as changed: of its base where it indexes (`x[i]`: `x`,
    /// not `i`) or takes a field, of each element of a tuple, every name in it otherwise.
    fn place(&mut self, e: &Expr) {
        match e {
            Expr::Index(i) => self.place(&i.expr),
            Expr::Field(f) => self.place(&f.base),
            Expr::Paren(p) => self.place(&p.expr),
            Expr::Group(g) => self.place(&g.expr),
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.place(e)),
            _ => count_idents(quote!(#e), &mut self.names),
        }
    }
}

impl<'ast> Visit<'ast> for Changes {
    fn visit_expr(&mut self, e: &'ast Expr) {
        self.note(e);
        syn::visit::visit_expr(self, e);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        count_idents(m.tokens.clone(), &mut self.names);
    }
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.note_pat(p);
        syn::visit::visit_pat_ident(self, p);
    }
}

/// Whether `op` is a compound assignment (`+=`, `<<=`, ...).
pub fn assigns(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The names of a path's segments, in order: `["kernel_runtime", "math", "sqrt"]` for
/// `::kernel_runtime::math::sqrt`.
pub(crate) fn segment_names(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// Whether `e` is the plain name `name`.
pub(crate) fn is_name(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name))
}

/// `e` without the parentheses and invisible groups around it.
pub(crate) fn unparen(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => unparen(&p.expr),
        Expr::Group(g) => unparen(&g.expr),
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::Block;

    #[test]
    fn a_region_saves_only_the_locals_it_may_change() {
        let body: Block = syn::parse_quote!({
            let two = stride % 2 == 1;
            s[a] = s[b].min(n);
            acc += s[t];
            (lo, hi) = (hi, lo);
            tally.push(k);
            f(&cell, &mut out, w.max(1));
            write!(log, "{}", shown);
            let g = |i: usize| grid[i] = 0;
        });
        let changes = Changes::of(&body.stmts);
        for name in [
            "s", "acc", "lo", "hi", "tally", "cell", "out", "log", "shown", "grid",
        ] {
            assert!(changes.may_change(name), "{name}");
        }
        for name in ["stride", "a", "b", "n", "t", "k", "w", "f", "i"] {
            assert!(!changes.may_change(name), "{name}");
        }
        // A binding by reference may change anything through a `Cell`.
        let body: Block = syn::parse_quote!({
            if let Some(ref c) = maybe {
                c.set(1);
            }
        });
        assert!(Changes::of(&body.stmts).may_change("stride"));
    }
}
