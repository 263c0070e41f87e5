//! The guard of a grid-level kernel, for the CPU backend's rows (`__rt::run_grid`).
//!
//! Where a kernel's body is `let`s that only compute (`grid(n)`, extents, arithmetic) and then
//! one `if C { .. }`, the tests of `C` (its `&&` terms, from the first on) that compare the
//! thread's `grid(n).0`, or that plus an offset, with a value the same for a whole row
//! (`1 <= j`, `j + 1 < m`), and those that do not depend on the thread's x at all (`i + 1 < n`),
//! give the span of a row in which they all hold. The runtime computes it once per row, from the
//! row's first thread, and runs the threads inside it with the flag `__inner`, which the
//! rewritten body reads in place of those tests: `(__inner || 1 <= j)`. The loop over them
//! then has no guarded store and vectorizes as a hand-written loop over the row's interior.
//!
//! The span's tests evaluate what the kernel evaluates, in its order: each only while some
//! thread of the row still passes the tests before it, so a test that would fail or panic in
//! the span fails or panics in the kernel too.

use super::{proof, record};
use crate::syntax::{is_name, mentions, pure_method, unparen};
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::{HashMap, HashSet};
use syn::visit::Visit;
use syn::{BinOp, Block, Expr, Local, Pat, Stmt};

/// What the guard gives the CPU backend's rows.
pub struct Guard {
    /// The body of the span closure (`__kctx`, `__bound` and `__span`, the row, in scope; the
    /// views bound before it): the kernel's `let`s, then each test narrowing `__span`.
    pub span: TokenStream,
    /// The kernel's body with each test the span decides made `(__inner || test)`.
    pub body: Block,
    /// The body of checked mode's record of a span (`__kctx` and `__span`, a span of a row in
    /// which the guard holds, in scope; the views bound before it): the kernel's `let`s, then
    /// each access of the guarded statement to a writable array given to `__rec` (see
    /// [`record`](super::record)); `None` where the accesses cannot be recorded for a span at
    /// once.
    pub record: Option<TokenStream>,
}

/// What a kernel with index checks gives the guard, for the proofs of its accesses (see
/// [`proof`](super::proof)): its array parameters with their ranks, the parameters it
/// declares `mut`, and its writable arrays.
pub struct Checks {
    pub arrays: HashMap<String, usize>,
    pub mutable: HashSet<String>,
    pub writable: HashSet<String>,
}

/// The guard of a body of the shape the module describes, if it has a test on the thread's x.
/// With `checks` (a kernel with index checks), only where every access to an array parameter
/// in the guarded statement is proven for the span: the span then checks them, once per row.
pub fn guard(block: &Block, checks: Option<&Checks>) -> Option<Guard> {
    let (block, names) = normal_form(block)?;
    let block = &block;
    let (last, prefix) = block.stmts.split_last()?;
    let Stmt::Expr(Expr::If(branch), _) = last else {
        return None;
    };
    let lets = locals(prefix);
    let terms = terms(&branch.cond);
    let tests: Vec<Test> = terms.iter().map_while(|t| names.test(t)).collect();
    if !tests.iter().any(|t| matches!(t, Test::Span(..))) {
        return None;
    }
    let decided = terms
        .iter()
        .take(tests.len())
        .map(|t| quote!((__inner || #t)));
    let rest = terms.iter().skip(tests.len()).map(|t| quote!(#t));
    let cond: Expr = syn::parse_quote!(#(#decided)&&* #(&& #rest)*);
    let mut body = block.clone();
    if let Some(Stmt::Expr(Expr::If(branch), _)) = body.stmts.last_mut() {
        *branch.cond = cond;
    }
    let (proofs, records) = match checks {
        Some(checks) => {
            let (proof, records) = prove(&mut body, &lets, &names, checks)?;
            (vec![proof], records.filter(|_| tests.len() == terms.len()))
        }
        None => (Vec::new(), None),
    };
    let record = records.map(|records| {
        quote! {
            #(#lets)*
            let __first = __span.lo;
            let __last = __span.hi - 1;
            #(#records)*
        }
    });
    let narrow = tests.iter().map(Test::narrow);
    Some(Guard {
        record,
        span: quote! {
            #(#lets)*
            #(
                if __span.is_empty() {
                    return __span;
                }
                #narrow
            )*
            #(
                if __span.is_empty() {
                    return __span;
                }
                #proofs
            )*
            __span
        },
        body,
    })
}

/// `block` as the guard takes it, `let`s that compute and then one `if` without `else`: the
/// block itself, or what its nested `if`s (`if a { if b { .. } }`, as `if a && b { .. }`) or
/// its early returns (`if c { return; } ..`, as `if !c { .. }`) mean; with the names of its
/// `let`s that vary with the thread's x.
fn normal_form(block: &Block) -> Option<(Block, Varying)> {
    let lets = block
        .stmts
        .iter()
        .take_while(|s| matches!(s, Stmt::Local(l) if computes(l)))
        .count();
    let (prefix, rest) = block.stmts.split_at(lets);
    let names = Varying::of(&locals(prefix))?;
    let (cond, then) = match rest {
        [Stmt::Expr(Expr::If(b), _)] if b.else_branch.is_none() => nested(b),
        _ => early_returns(rest, &names)?,
    };
    let mut stmts = prefix.to_vec();
    stmts.push(Stmt::Expr(syn::parse_quote!(if #cond #then), None));
    let block = Block {
        brace_token: block.brace_token,
        stmts,
    };
    Some((block, names))
}

/// The `let`s of `stmts`.
fn locals(stmts: &[Stmt]) -> Vec<&Local> {
    stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Local(l) => Some(l),
            _ => None,
        })
        .collect()
}

/// `e` as an operand of `&&`: in parentheses where it binds more loosely (`a || b`).
fn operand(e: &Expr) -> TokenStream {
    match e {
        Expr::Binary(b) if !matches!(b.op, BinOp::Or(_)) => quote!(#e),
        Expr::Binary(_) | Expr::Let(_) | Expr::Closure(_) | Expr::Range(_) | Expr::Assign(_) => {
            quote!((#e))
        }
        _ => quote!(#e),
    }
}

/// The condition and body of `if a { if b { .. } }` as one `if`: `a && b`.
fn nested(branch: &syn::ExprIf) -> (Expr, Block) {
    let (mut cond, mut then) = ((*branch.cond).clone(), branch.then_branch.clone());
    while let [Stmt::Expr(Expr::If(inner), _)] = then.stmts.as_slice() {
        if inner.else_branch.is_some() {
            break;
        }
        let (a, b) = (operand(&cond), operand(&inner.cond));
        cond = syn::parse_quote!(#a && #b);
        then = inner.then_branch.clone();
    }
    (cond, then)
}

/// The condition and body that the statements `if c1 { return; } if c2 { return; } ..` mean:
/// `!c1 && !c2`, and the statements after them.
fn early_returns(stmts: &[Stmt], names: &Varying) -> Option<(Expr, Block)> {
    let returns = stmts
        .iter()
        .take_while(|s| early_return(s).is_some())
        .count();
    if returns == 0 || returns == stmts.len() {
        return None;
    }
    let negated = stmts[..returns]
        .iter()
        .filter_map(early_return)
        .map(|c| names.not(c));
    let negated = negated.map(|n| operand(&n));
    let cond: Expr = syn::parse_quote!(#(#negated)&&*);
    let body = &stmts[returns..];
    Some((cond, syn::parse_quote!({ #(#body)* })))
}

/// The condition of `if c { return; }` (no `else`, no value).
fn early_return(s: &Stmt) -> Option<&Expr> {
    let Stmt::Expr(Expr::If(b), _) = s else {
        return None;
    };
    let only_return = match b.then_branch.stmts.as_slice() {
        [Stmt::Expr(Expr::Return(r), _)] => r.expr.is_none(),
        _ => false,
    };
    (only_return && b.else_branch.is_none()).then_some(&*b.cond)
}

/// The proofs of the accesses of `body`'s guarded statement, which it rewrites to index them
/// as proven in the span (see [`proof`](super::proof)), and the record of its accesses to
/// writable arrays where they can be recorded for a span at once (see
/// [`record`](super::record)); `None` where an access cannot be proven.
fn prove(
    body: &mut Block,
    lets: &[&Local],
    names: &Varying,
    checks: &Checks,
) -> Option<(TokenStream, Option<Vec<TokenStream>>)> {
    let mut before = HashSet::new();
    let mut unfixed: HashSet<String> = names.names.union(&checks.mutable).cloned().collect();
    for l in lets {
        for (name, mutable) in bound_names_mut(&l.pat) {
            if mutable {
                unfixed.insert(name.clone());
            }
            before.insert(name);
        }
    }
    let names = proof::Names {
        arrays: &checks.arrays,
        x: &names.x,
        unfixed,
        bound_before: before,
    };
    let last = body.stmts.pop()?;
    let guarded = Block {
        brace_token: body.brace_token,
        stmts: vec![last],
    };
    let (span, mut proven) = proof::prove(&guarded, &names)?;
    let records = record::record(&guarded, &names, &checks.writable);
    body.stmts.append(&mut proven.stmts);
    Some((span, records))
}

/// One test the span decides.
enum Test<'a> {
    /// A test the same for a whole row: the row's span, or none.
    Row(&'a Expr),
    /// `j + offset <op> bound`, as `Span`'s method of that name (`lt`, `le`, `gt`, `ge`).
    Span(&'static str, TokenStream, &'a Expr),
}

impl Test<'_> {
    fn narrow(&self) -> TokenStream {
        match self {
            Test::Row(t) => quote! {
                if !(#t) {
                    return ::kernel_runtime::__rt::Span::EMPTY;
                }
            },
            Test::Span(method, offset, bound) => {
                let method = syn::Ident::new(method, proc_macro2::Span::call_site());
                quote!(let __span = __span.#method(#offset, #bound);)
            }
        }
    }
}

/// The name of the thread's x (`j` of `let (j, i) = grid(2);`) and every name whose value
/// may depend on it.
struct Varying {
    x: String,
    names: HashSet<String>,
}

impl Varying {
    /// The names of `lets`, the first of which to bind `grid(n)` names the thread's x; `None`
    /// where none does, or a later `let` binds the x's name again.
    fn of(lets: &[&Local]) -> Option<Varying> {
        let at = lets
            .iter()
            .position(|l| l.init.as_ref().is_some_and(|i| grid_call(&i.expr)))?;
        let x = x_name(&lets[at].pat)?;
        let mut names: HashSet<String> = [x.clone(), "__kctx".to_string()].into();
        for l in &lets[at + 1..] {
            let bound = bound_names(&l.pat);
            if bound.contains(&x) {
                return None;
            }
            let init = l.init.as_ref().map(|i| &i.expr);
            if mentions(quote!(#init), &|i| names.contains(&i.to_string())) {
                names.extend(bound);
            }
        }
        // Names bound before the coordinates cannot depend on them.
        Some(Varying { x, names })
    }

    fn varies(&self, e: &Expr) -> bool {
        mentions(quote!(#e), &|i| self.names.contains(&i.to_string()))
    }

    /// What the span makes of the term `t` of the guard, if it decides it.
    fn test<'a>(&self, t: &'a Expr) -> Option<Test<'a>> {
        let e = unparen(t);
        if !computes_expr(e) {
            return None;
        }
        if !self.varies(e) {
            return Some(Test::Row(t));
        }
        let Expr::Binary(b) = e else {
            return None;
        };
        let (method, mirrored) = match b.op {
            BinOp::Lt(_) => ("lt", "gt"),
            BinOp::Le(_) => ("le", "ge"),
            BinOp::Gt(_) => ("gt", "lt"),
            BinOp::Ge(_) => ("ge", "le"),
            _ => return None,
        };
        if let (Some(offset), false) = (self.offset(&b.left), self.varies(&b.right)) {
            return Some(Test::Span(method, offset, &b.right));
        }
        if let (Some(offset), false) = (self.offset(&b.right), self.varies(&b.left)) {
            return Some(Test::Span(mirrored, offset, &b.left));
        }
        None
    }

    /// `!e`, pushed through `||` and into comparisons of the thread's x plus a value with
    /// another (unsigned, so that `!(j < m)` is `j >= m` and `!(j == 0)` is `j > 0`); other
    /// terms as `!(term)`.
    fn not(&self, e: &Expr) -> Expr {
        let e = unparen(e);
        let x_side = |a: &Expr, b: &Expr| self.offset(a).is_some() || self.offset(b).is_some();
        match e {
            Expr::Binary(b) if matches!(b.op, BinOp::Or(_)) => {
                let (l, r) = (self.not(&b.left), self.not(&b.right));
                let (l, r) = (operand(&l), operand(&r));
                syn::parse_quote!(#l && #r)
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => (*u.expr).clone(),
            Expr::Binary(b) if x_side(&b.left, &b.right) => {
                let (l, r) = (&b.left, &b.right);
                let zero =
                    |e: &Expr| matches!(unparen(e), Expr::Lit(l) if quote!(#l).to_string() == "0");
                match b.op {
                    BinOp::Lt(_) => syn::parse_quote!(#l >= #r),
                    BinOp::Le(_) => syn::parse_quote!(#l > #r),
                    BinOp::Gt(_) => syn::parse_quote!(#l <= #r),
                    BinOp::Ge(_) => syn::parse_quote!(#l < #r),
                    BinOp::Eq(_) if zero(r) => syn::parse_quote!(#l > #r),
                    BinOp::Eq(_) if zero(l) => syn::parse_quote!(#l < #r),
                    _ => syn::parse_quote!(!(#e)),
                }
            }
            _ => syn::parse_quote!(!(#e)),
        }
    }

    /// `c` where `e` is the thread's x plus `c` (`j`, `j + c`, `c + j`), `c` the same for a row.
    fn offset(&self, e: &Expr) -> Option<TokenStream> {
        let e = unparen(e);
        if is_name(e, &self.x) {
            return Some(quote!(0));
        }
        let Expr::Binary(b) = e else {
            return None;
        };
        if !matches!(b.op, BinOp::Add(_)) {
            return None;
        }
        let (l, r) = (&*b.left, &*b.right);
        if is_name(unparen(l), &self.x) && !self.varies(r) {
            return Some(quote!(#r));
        }
        if is_name(unparen(r), &self.x) && !self.varies(l) {
            return Some(quote!(#l));
        }
        None
    }
}

/// Whether `e` is `__kctx.grid_1d()`, `grid_2d()` or `grid_3d()` (what `grid(n)` became).
fn grid_call(e: &Expr) -> bool {
    matches!(e, Expr::MethodCall(m)
        if is_name(&m.receiver, "__kctx")
            && ["grid_1d", "grid_2d", "grid_3d"].contains(&m.method.to_string().as_str()))
}

/// `j` of `j` or `(j, ..)` (through a type ascription).
fn x_name(p: &Pat) -> Option<String> {
    match p {
        Pat::Type(t) => x_name(&t.pat),
        Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        Pat::Tuple(t) => match t.elems.first()? {
            Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn bound_names(p: &Pat) -> HashSet<String> {
    bound_names_mut(p).into_iter().map(|(n, _)| n).collect()
}

/// The names `p` binds, each with whether it is bound `mut`.
fn bound_names_mut(p: &Pat) -> Vec<(String, bool)> {
    struct Names(Vec<(String, bool)>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push((p.ident.to_string(), p.mutability.is_some()));
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut names = Names(Vec::new());
    names.visit_pat(p);
    names.0
}

/// The `&&` terms of `cond`, in order, each as written.
fn terms(cond: &Expr) -> Vec<&Expr> {
    match cond {
        Expr::Binary(b) if matches!(b.op, BinOp::And(_)) => {
            let mut t = terms(&b.left);
            t.extend(terms(&b.right));
            t
        }
        Expr::Paren(p) if matches!(&*p.expr, Expr::Binary(b) if matches!(b.op, BinOp::And(_))) => {
            terms(&p.expr)
        }
        // A condition that `macro_rules!` passed as an `expr` fragment.
        Expr::Group(g) => terms(&g.expr),
        _ => vec![cond],
    }
}

/// Whether the `let` binds a value computed from names alone ([`computes_expr`]).
pub(crate) fn computes(l: &Local) -> bool {
    l.init
        .as_ref()
        .is_some_and(|i| i.diverge.is_none() && computes_expr(&i.expr))
}

/// Whether evaluating `e` only computes: literals, names, arithmetic, comparisons, casts,
/// fields, tuples and the methods that read their receiver and change nothing (the context's,
/// numbers', extents'); no call, index, borrow, block or macro. Evaluating it again gives the
/// same value and changes nothing.
pub(crate) fn computes_expr(e: &Expr) -> bool {
    struct Computes(bool);
    impl<'ast> Visit<'ast> for Computes {
        fn visit_expr(&mut self, e: &'ast Expr) {
            let ok = match e {
                Expr::Lit(_)
                | Expr::Path(_)
                | Expr::Paren(_)
                | Expr::Group(_)
                | Expr::Cast(_)
                | Expr::Field(_)
                | Expr::Tuple(_) => true,
                Expr::Unary(u) => !matches!(u.op, syn::UnOp::Deref(_)),
                Expr::Binary(b) => !crate::syntax::assigns(&b.op),
                Expr::MethodCall(m) => pure_method(&m.method) && m.turbofish.is_none(),
                _ => false,
            };
            if ok {
                syn::visit::visit_expr(self, e);
            } else {
                self.0 = false;
            }
        }
    }
    let mut check = Computes(true);
    check.visit_expr(e);
    check.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span_of(block: Block) -> Option<String> {
        guard(&block, None).map(|g| g.span.to_string())
    }

    #[test]
    fn a_stencil_guard_gives_the_rows_interior() {
        let block: Block = syn::parse_quote!({
            let (j, i) = __kctx.grid_2d();
            let (n, m) = x.dim();
            if 1 <= i && i + 1 < n && (1 <= j && j + 1 < m) && x[[i, j]] > 0 {
                out[[i, j]] = 1;
            }
        });
        let g = guard(&block, None).expect("a guard");
        let span = g.span.to_string();
        assert!(span.contains("if ! (1 <= i)"), "{span}");
        assert!(span.contains("__span . ge (0 , 1)"), "{span}");
        assert!(span.contains("__span . lt (1 , m)"), "{span}");
        assert!(
            !span.contains("x [["),
            "an index is the body's own test: {span}"
        );
        let cond = match g.body.stmts.last() {
            Some(Stmt::Expr(Expr::If(b), _)) => b.cond.clone(),
            _ => unreachable!(),
        };
        let cond = quote!(#cond).to_string();
        assert_eq!(cond.matches("__inner ||").count(), 4, "{cond}");
        assert!(cond.ends_with("&& x [[i , j]] > 0"), "{cond}");
    }

    #[test]
    fn a_condition_from_a_macro_fragment_is_seen_through() {
        // `macro_rules!` hands an `expr` fragment over in an invisible group.
        let cond: Expr = syn::parse_quote!(1 <= j && j < m - 1);
        let group = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote!(#cond));
        let block: Block = syn::parse_quote!({
            let (j, i) = __kctx.grid_2d();
            let (n, m) = x.dim();
            if #group {
                out[[i, j]] = x[[i, (j).wrapping_sub(1)]];
            }
        });
        let checks = Checks {
            arrays: [("x".to_string(), 2), ("out".to_string(), 2)].into(),
            mutable: HashSet::new(),
            writable: ["out".to_string()].into(),
        };
        let guard = guard(&block, Some(&checks)).expect("a guard");
        let span = guard.span.to_string();
        assert!(span.contains("__span . lt (0 , m - 1)"), "{span}");
        assert_eq!(span.matches("Span :: within").count(), 2, "{span}");
        let record = guard.record.expect("a record").to_string();
        assert_eq!(
            record.matches("__rec . write (out . __traced ()").count(),
            1,
            "{record}"
        );
        assert!(
            !record.contains("x . __traced"),
            "read-only arrays need no record: {record}"
        );
    }

    #[test]
    fn nested_ifs_and_early_returns_are_one_guard() {
        let nested = span_of(syn::parse_quote!({
            let (j, i) = __kctx.grid_2d();
            let (n, m) = x.dim();
            if i < n {
                if 1 <= j && j < m - 1 {
                    out[[i, j]] = 1;
                }
            }
        }))
        .expect("a guard");
        assert!(nested.contains("if ! (i < n)"), "{nested}");
        assert!(nested.contains("__span . lt (0 , m - 1)"), "{nested}");
        let early: Block = syn::parse_quote!({
            let (j, i) = __kctx.grid_2d();
            let (n, m) = x.dim();
            if i >= n || j == 0 || !(j + 1 < m) {
                return;
            }
            let s = x[[i, j]];
            out[[i, j]] = s;
        });
        let g = guard(&early, None).expect("a guard");
        let span = g.span.to_string();
        assert!(span.contains("if ! (! (i >= n))"), "{span}");
        assert!(span.contains("__span . gt (0 , 0)"), "{span}");
        assert!(span.contains("__span . lt (1 , m)"), "{span}");
        let stmts = &g.body.stmts;
        let body = quote!(#(#stmts)*).to_string();
        assert!(body.contains("let s = x [[i , j]]"), "{body}");
        assert!(!body.contains("return"), "{body}");
        // A test on a float keeps its negation whole.
        let float = span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            if t < 0.5 || i >= n {
                return;
            }
            c[i] = 0.0;
        }))
        .expect("a guard");
        assert!(float.contains("if ! (! (t < 0.5))"), "{float}");
    }

    #[test]
    fn mirrored_and_one_dimensional_tests() {
        let span = span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            if n > i + k && i >= lo {
                c[i] = 0.0;
            }
        }))
        .expect("a guard");
        assert!(span.contains("__span . lt (k , n)"), "{span}");
        assert!(span.contains("__span . ge (0 , lo)"), "{span}");
    }

    #[test]
    fn bodies_it_leaves_alone() {
        // A test on a value computed from the thread's x.
        assert!(span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            let k = i * 2;
            if k < n {
                c[k] = 0.0;
            }
        }))
        .is_none());
        // A `let` that reads memory, or the x's name bound again.
        assert!(span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            let n = lens[0];
            if i < n {
                c[i] = 0.0;
            }
        }))
        .is_none());
        assert!(span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            let i = i / 2;
            if i < n {
                c[i] = 0.0;
            }
        }))
        .is_none());
        // Statements after the `if`, an `else`, no coordinates, a call in the first test.
        assert!(span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            if i < n {
                c[i] = 0.0;
            }
            c[0] = 1.0;
        }))
        .is_none());
        assert!(span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            if i < n {
                c[i] = 0.0;
            } else {
                c[0] = 1.0;
            }
        }))
        .is_none());
        assert!(span_of(syn::parse_quote!({
            let i = 3;
            if i < n {
                c[i] = 0.0;
            }
        }))
        .is_none());
        assert!(span_of(syn::parse_quote!({
            let i = __kctx.grid_1d();
            if limit(i) && i < n {
                c[i] = 0.0;
            }
        }))
        .is_none());
    }
}
