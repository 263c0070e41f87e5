//! Checked mode's record of a guarded grid-level kernel's span: which elements of its writable
//! arrays the threads of a row's span access, given once for the whole span.
//!
//! Where the span proves every access of the guarded statement (see [`proof`]) and that
//! statement's block reads or writes its writable arrays only at its top level (in no `if`,
//! `match`, loop, closure or right-hand side of `&&` and `||`, with no `return`, `break`,
//! `continue` or `?` anywhere in it), every thread of the span makes each of those accesses
//! exactly once, at an index whose components are each the same for the whole row or grow by
//! one per thread. The record gives each access, in the order the block makes them, to the
//! runtime's `SpanRecord` with its index at the span's first and last thread; checked mode
//! then records it for all of the span's threads at once, while they run as the fast backend
//! runs them. Any other use of a writable array (an argument, an atomic, a method other than
//! its shape's, a reference to an element) leaves the kernel without a record, and checked
//! mode runs its threads one at a time.

use super::proof::{self, Names};
use crate::syntax::{assigns, mentions, unparen};
use proc_macro2::TokenStream;
use quote::quote_spanned;
use std::collections::HashSet;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{BinOp, Block, Expr, Stmt};

/// The record's statements for the guarded statement `guarded` (`if c { .. }`, every test of
/// `c` decided by the span), with `__first` and `__last` (the span's ends) in scope; `None`
/// where its accesses to the `writable` arrays cannot be recorded for a span at once.
pub fn record(
    guarded: &Block,
    names: &Names<'_>,
    writable: &HashSet<String>,
) -> Option<Vec<TokenStream>> {
    let [Stmt::Expr(Expr::If(branch), _)] = guarded.stmts.as_slice() else {
        return None;
    };
    let mut bound = proof::Bound(HashSet::new());
    bound.visit_block(guarded);
    if branch.else_branch.is_some() {
        return None;
    }
    let mut accesses = Accesses {
        names,
        bound: &bound.0,
        writable,
        depth: 0,
        records: Vec::new(),
        failed: false,
    };
    accesses.visit_expr(&branch.cond);
    accesses.visit_block(&branch.then_branch);
    (!accesses.failed).then_some(accesses.records)
}

/// The record of each access to a writable array, in order; `failed` once one cannot be
/// recorded for a span at once.
struct Accesses<'n, 'a> {
    names: &'n Names<'a>,
    bound: &'n HashSet<String>,
    writable: &'n HashSet<String>,
    /// How many conditional constructs enclose the expression visited.
    depth: usize,
    records: Vec<TokenStream>,
    failed: bool,
}

/// What an access to an element does.
#[derive(Clone, Copy)]
enum Kind {
    Read,
    Write,
    /// A compound assignment (`c[i] += ..`): a read, then a write.
    Update,
}

impl Accesses<'_, '_> {
    /// Whether `e` names a writable array parameter.
    fn writable(&self, e: &Expr) -> bool {
        proof::array(e, self.names, self.bound).is_some()
            && matches!(unparen(e), Expr::Path(p) if p.path.get_ident()
                .is_some_and(|i| self.writable.contains(&i.to_string())))
    }

    /// Records the access `e` (`base[index]`, `base` a writable array) of `kind`.
    fn access(&mut self, e: &syn::ExprIndex, kind: Kind) {
        self.visit_expr(&e.index);
        let Some(rank @ 1..) = proof::array(&e.expr, self.names, self.bound) else {
            self.failed = true;
            return;
        };
        let Some((first, last)) = proof::ends(&e.index, rank, self.names, self.bound) else {
            self.failed = true;
            return;
        };
        if self.depth > 0 {
            self.failed = true;
            return;
        }
        let (base, span) = (&e.expr, e.span());
        self.records.push(match kind {
            Kind::Read => quote_spanned!(span=> __rec.read(#base.__traced(), #first, #last);),
            Kind::Write => quote_spanned!(span=> __rec.write(#base.__traced(), #first, #last);),
            Kind::Update => quote_spanned!(span=> __rec.update(#base.__traced(), #first, #last);),
        });
    }

    /// Visits `e` as code that some threads of the span may not run.
    fn conditional(&mut self, e: &Expr) {
        self.depth += 1;
        self.visit_expr(e);
        self.depth -= 1;
    }

    /// The element `e` indexes, where it is one of a writable array.
    fn element<'e>(&self, e: &'e Expr) -> Option<&'e syn::ExprIndex> {
        match unparen(e) {
            Expr::Index(i) if self.writable(&i.expr) => Some(i),
            _ => None,
        }
    }
}

impl<'ast> Visit<'ast> for Accesses<'_, '_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if self.failed {
            return;
        }
        match e {
            Expr::Assign(a) => match self.element(&a.left) {
                Some(place) => {
                    self.visit_expr(&a.right);
                    self.access(place, Kind::Write);
                }
                None => syn::visit::visit_expr(self, e),
            },
            Expr::Binary(b) if assigns(&b.op) => match self.element(&b.left) {
                Some(place) => {
                    self.visit_expr(&b.right);
                    self.access(place, Kind::Update);
                }
                None => syn::visit::visit_expr(self, e),
            },
            Expr::Binary(b) if matches!(b.op, BinOp::And(_) | BinOp::Or(_)) => {
                self.visit_expr(&b.left);
                self.conditional(&b.right);
            }
            Expr::Index(i) if self.writable(&i.expr) => self.access(i, Kind::Read),
            Expr::If(_)
            | Expr::Match(_)
            | Expr::While(_)
            | Expr::ForLoop(_)
            | Expr::Loop(_)
            | Expr::Closure(_)
            | Expr::Async(_)
            | Expr::TryBlock(_)
            | Expr::Let(_) => {
                self.depth += 1;
                syn::visit::visit_expr(self, e);
                self.depth -= 1;
            }
            Expr::Return(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Try(_)
            | Expr::Yield(_)
            | Expr::Await(_)
            | Expr::Field(_)
            | Expr::Reference(_)
                if self.leaves_or_holds(e) =>
            {
                self.failed = true
            }
            Expr::MethodCall(m)
                if self.writable(&m.receiver) || self.element(&m.receiver).is_some() =>
            {
                let shape =
                    ["len", "dim", "shape", "is_empty"].contains(&m.method.to_string().as_str());
                if !shape || self.element(&m.receiver).is_some() {
                    self.failed = true;
                }
            }
            Expr::Path(_) if self.writable(e) => self.failed = true,
            Expr::Macro(m) if self.mentions_writable(m.mac.tokens.clone()) => self.failed = true,
            _ => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        if self.mentions_writable(m.mac.tokens.clone()) {
            self.failed = true;
        }
    }
}

impl Accesses<'_, '_> {
    /// Whether `e` leaves the block early, or is a field or reference of an element of a
    /// writable array (which the record cannot follow).
    fn leaves_or_holds(&self, e: &Expr) -> bool {
        match e {
            Expr::Field(f) => self.element(&f.base).is_some(),
            Expr::Reference(r) => self.element(&r.expr).is_some(),
            _ => true,
        }
    }

    /// Whether `tokens` name a writable array.
    fn mentions_writable(&self, tokens: TokenStream) -> bool {
        mentions(tokens, &|i| self.writable.contains(&i.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use std::collections::HashMap;

    fn arrays() -> HashMap<String, usize> {
        [
            ("x".to_string(), 2),
            ("out".to_string(), 2),
            ("v".to_string(), 1),
        ]
        .into()
    }

    /// The record of `if (__inner || j < m) { body }`, as text.
    fn record_of(body: TokenStream) -> Option<String> {
        let arrays = arrays();
        let names = Names {
            arrays: &arrays,
            x: "j",
            unfixed: ["j".to_string()].into(),
            bound_before: ["n", "m"].iter().map(|s| s.to_string()).collect(),
        };
        let writable: HashSet<String> = ["out".to_string(), "v".to_string()].into();
        let guarded: Block = syn::parse_quote!({ if (__inner || j < m) { #body } });
        record(&guarded, &names, &writable).map(|r| quote!(#(#r)*).to_string())
    }

    #[test]
    fn top_level_accesses_of_writable_arrays_are_recorded_in_order() {
        let r = record_of(quote! {
            let s = x[[i, j]] + v[j + 1];
            out[[i, j]] = s * 2.0;
            v[j] += s;
        })
        .expect("a record");
        assert_eq!(r.matches("__rec .").count(), 3, "{r}");
        let order = ["read (v", "write (out", "update (v"];
        let mut at = 0;
        for call in order {
            at += r[at..]
                .find(call)
                .unwrap_or_else(|| panic!("{call} in order: {r}"));
        }
        assert!(
            !r.contains("x . __traced"),
            "read-only arrays need no record: {r}"
        );
        // A shape's method, and a condition that only reads its array's shape.
        assert!(record_of(quote! { out[[i, j]] = out.dim().0 as f32; }).is_some());
    }

    #[test]
    fn accesses_that_not_every_thread_makes_once_leave_no_record() {
        let refused = [
            quote! { if x[[i, j]] > 0.0 { out[[i, j]] = 1.0; } },
            quote! { for k in 0..2 { out[[i, j]] += 1.0; } },
            quote! { let b = x[[i, j]] > 0.0 && v[j] > 0.0; },
            quote! { if x[[i, j]] > 0.0 { return; } out[[i, j]] = 1.0; },
            quote! { out[[i, j]] = 1.0; let r = &mut v[j]; },
            quote! { helper(&out); },
            quote! { atomic_add(&v, j, 1.0); },
            quote! { println!("{}", v[j]); },
            quote! { out[[i, j * 2]] = 1.0; },
        ];
        for body in refused {
            let text = body.to_string();
            assert_eq!(record_of(body), None, "{text}");
        }
    }
}
