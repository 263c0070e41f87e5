//! Block-uniform locals of a split kernel: locals that every thread of a block holds with the
//! same value, so that the CPU backend keeps one copy per block and computes it once, outside
//! the thread loops, instead of a slot per thread restored and saved in each region.
//!
//! A local is uniform when the `let` that declares it (its only binding in the body) and every
//! assignment to it are statements of the block's own sequence (the body, or a loop of it that
//! holds a barrier: what every thread runs, in the same order), made of uniform values only:
//! literals, constants, scalar parameters the body does not reassign, elements of read-only
//! arrays at uniform indices, the block's coordinates and shape, other uniform locals, and
//! arithmetic on them. Nothing else may change it or take its address. The bitonic sort's
//! `size` and `stride`, loop counters of the block, are such locals; `thread_idx()`, a shared
//! array's element or a `#[device]` function's result never are.

use crate::syntax::{assigns, mentions_sync, Changes};
use crate::vocab::NUMBER_METHODS;
use quote::quote;
use std::collections::{HashMap, HashSet};
use syn::visit::Visit;
use syn::{Block, Expr, Pat, Stmt};

/// What decides uniformity: the kernel's parameters (with whether the body reassigns each) and
/// the locals found uniform so far.
pub struct Uniform {
    params: Vec<(String, bool)>,
    /// The parameters that are read-only arrays: no thread writes them during a launch.
    read_only: Vec<String>,
    /// Every name the body binds somewhere.
    bound: HashSet<String>,
    names: HashSet<String>,
}

impl Uniform {
    /// The uniform locals of `block`, whose bindings are counted in `decls`, in a kernel whose
    /// read-only array parameters are `read_only`.
    pub fn of(
        block: &Block,
        params: &[(String, bool)],
        read_only: &[String],
        decls: &HashMap<String, usize>,
    ) -> Uniform {
        let mut seq = Sequence::default();
        seq.collect(&block.stmts);
        // Everything that changes a local other than the sequence's own assignments to it.
        let mut others = Changes::default();
        let mut outside = Outside {
            own: &seq.assignments,
            changes: &mut others,
        };
        outside.visit_block(block);
        let mut u = Uniform {
            params: params.to_vec(),
            read_only: read_only.to_vec(),
            bound: decls.keys().cloned().collect(),
            names: seq
                .lets
                .iter()
                .flat_map(|(names, _)| names.iter())
                .chain(&seq.loop_vars)
                .filter(|n| decls.get(*n) == Some(&1) && !others.may_change(n))
                .cloned()
                .collect(),
        };
        // Drop the locals that read a non-uniform value until none does.
        loop {
            let before = u.names.len();
            for (names, init) in &seq.lets {
                if names.iter().any(|n| u.names.contains(n)) && !u.expr(init) {
                    for n in names {
                        u.names.remove(n);
                    }
                }
            }
            for &(name, value) in &seq.assigned {
                if u.names.contains(&name.to_string()) && !u.expr(value) {
                    u.names.remove(&name.to_string());
                }
            }
            // A tuple `let` is uniform only as a whole.
            for (names, _) in &seq.lets {
                if !names.iter().all(|n| u.names.contains(n)) {
                    for n in names {
                        u.names.remove(n);
                    }
                }
            }
            if u.names.len() == before {
                return u;
            }
        }
    }

    /// No local of `block` uniform, but its parameters and constants still are: for bodies
    /// whose lanes take their own paths through loops (warp runs).
    pub fn without_locals(
        params: &[(String, bool)],
        read_only: &[String],
        decls: &HashMap<String, usize>,
    ) -> Uniform {
        Uniform {
            params: params.to_vec(),
            read_only: read_only.to_vec(),
            bound: decls.keys().cloned().collect(),
            names: HashSet::new(),
        }
    }

    /// Whether `stmt`, a statement of the block's sequence, declares or assigns uniform locals:
    /// it then runs once per block.
    pub fn statement(&self, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Local(l) => {
                let mut names = Vec::new();
                plain_names(&l.pat, &mut names)
                    && !names.is_empty()
                    && names.iter().all(|n| self.names.contains(n))
            }
            Stmt::Expr(e, Some(_)) => {
                assignment(e).is_some_and(|(name, _)| self.names.contains(&name.to_string()))
            }
            _ => false,
        }
    }

    /// Whether `e` has the same value in every thread of a block: made of literals, constants
    /// (names neither bound in the body nor parameters), unreassigned parameters (a scalar, or
    /// an array's length), elements of read-only arrays at uniform indices, the block's index
    /// and shape, the grid's, and uniform locals.
    pub fn expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Lit(_) => true,
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Cast(c) => self.expr(&c.expr),
            Expr::Unary(u) => {
                matches!(u.op, syn::UnOp::Neg(_) | syn::UnOp::Not(_)) && self.expr(&u.expr)
            }
            Expr::Binary(b) => !assigns(&b.op) && self.expr(&b.left) && self.expr(&b.right),
            Expr::Tuple(t) => t.elems.iter().all(|e| self.expr(e)),
            Expr::Field(f) => self.expr(&f.base),
            // An element of a read-only array at a uniform index.
            Expr::Index(i) => {
                matches!(&*i.expr, Expr::Path(p) if p.path.get_ident().is_some_and(|a| self.is_read_only(a)))
                    && self.expr(&i.index)
            }
            // The block's coordinates and shape, and the grid's.
            Expr::MethodCall(m) if is_context(&m.receiver) => {
                m.args.is_empty()
                    && ["block_idx", "block_dim", "grid_dim"]
                        .contains(&m.method.to_string().as_str())
            }
            Expr::MethodCall(m) => {
                NUMBER_METHODS.contains(&m.method.to_string().as_str())
                    && m.turbofish.is_none()
                    && self.expr(&m.receiver)
                    && m.args.iter().all(|a| self.expr(a))
            }
            Expr::If(i) => {
                self.expr(&i.cond)
                    && self.block(&i.then_branch)
                    && i.else_branch.as_ref().is_some_and(|(_, e)| self.expr(e))
            }
            Expr::Block(b) => b.label.is_none() && self.block(&b.block),
            Expr::Path(p) => match p.path.get_ident() {
                // `module::CONST`, `u32::MAX`.
                None => p.qself.is_none() && p.path.segments.len() > 1,
                Some(id) => {
                    let name = id.to_string();
                    let param = self.params.iter().find(|(p, _)| *p == name);
                    // The macro's own names (`__kctx`, the thread's context) are not constants.
                    !name.starts_with("__")
                        && (self.names.contains(&name)
                            || param.is_some_and(|(_, reassigned)| !reassigned)
                            || param.is_none() && !self.bound.contains(&name))
                }
            },
            _ => false,
        }
    }

    /// Whether `name` is a read-only array parameter the body does not reassign.
    pub fn is_read_only(&self, name: &proc_macro2::Ident) -> bool {
        self.read_only.iter().any(|a| name == a)
            && self
                .params
                .iter()
                .any(|(p, reassigned)| name == p && !reassigned)
    }

    /// A block of one uniform expression.
    fn block(&self, b: &Block) -> bool {
        matches!(b.stmts.as_slice(), [Stmt::Expr(e, None)] if self.expr(e))
    }
}

/// `__kctx`, the thread's context, as the kernel's rewritten body names it.
pub(crate) fn is_context(e: &Expr) -> bool {
    matches!(e, Expr::Path(p) if p.path.is_ident("__kctx"))
}

/// The names bound by a `let` pattern of plain names (`x`, `mut x`, `x: u32`, `(a, b)`).
fn plain_names(pat: &Pat, out: &mut Vec<String>) -> bool {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            out.push(p.ident.to_string());
            true
        }
        Pat::Type(t) => plain_names(&t.pat, out),
        Pat::Tuple(t) => t.elems.iter().all(|p| plain_names(p, out)),
        _ => false,
    }
}

/// `name = value` or `name op= value`: the local and the value.
fn assignment(e: &Expr) -> Option<(&syn::Ident, &Expr)> {
    let (left, right) = match e {
        Expr::Assign(a) => (&*a.left, &*a.right),
        Expr::Binary(b) if assigns(&b.op) => (&*b.left, &*b.right),
        _ => return None,
    };
    match left {
        Expr::Path(p) => Some((p.path.get_ident()?, right)),
        _ => None,
    }
}

/// The `let`s and assignments of the block's sequence: the body's statements, and those of the
/// loops among them that hold a barrier, as the splitter runs them.
#[derive(Default)]
struct Sequence<'a> {
    lets: Vec<(Vec<String>, &'a Expr)>,
    /// The variables of the loops over ranges that hold a barrier: the splitter checks that
    /// every thread agrees on the bounds.
    loop_vars: Vec<String>,
    assigned: Vec<(&'a syn::Ident, &'a Expr)>,
    /// The assignment expressions above, by address.
    assignments: HashSet<*const Expr>,
}

impl<'a> Sequence<'a> {
    fn collect(&mut self, stmts: &'a [Stmt]) {
        for stmt in stmts {
            match stmt {
                Stmt::Local(l) => {
                    let mut names = Vec::new();
                    if let (true, Some(init)) = (plain_names(&l.pat, &mut names), &l.init) {
                        if init.diverge.is_none() {
                            self.lets.push((names, &init.expr));
                        }
                    }
                }
                Stmt::Expr(e, Some(_)) if assignment(e).is_some() => {
                    let (name, value) = assignment(e).expect("checked above");
                    self.assigned.push((name, value));
                    self.assignments.insert(e);
                }
                Stmt::Expr(Expr::ForLoop(f), _) if mentions_sync(quote!(#stmt)) => {
                    let mut names = Vec::new();
                    if matches!(&*f.pat, Pat::Ident(_)) && plain_names(&f.pat, &mut names) {
                        self.loop_vars.extend(names);
                    }
                    self.collect(&f.body.stmts)
                }
                Stmt::Expr(Expr::While(w), _) if mentions_sync(quote!(#stmt)) => {
                    self.collect(&w.body.stmts)
                }
                _ => {}
            }
        }
    }
}

/// Visits a body for what changes locals, leaving out the sequence's own assignments (`own`),
/// whose values it still visits.
struct Outside<'s, 'c> {
    own: &'s HashSet<*const Expr>,
    changes: &'c mut Changes,
}

impl<'ast> Visit<'ast> for Outside<'_, '_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if self.own.contains(&(e as *const Expr)) {
            if let Some((_, value)) = assignment(e) {
                self.visit_expr(value);
            }
            return;
        }
        self.changes.note(e);
        syn::visit::visit_expr(self, e);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.changes.visit_macro(m);
    }
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.changes.note_pat(p);
        syn::visit::visit_pat_ident(self, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::visit::Visit;

    fn uniform(body: &Block, params: &[(String, bool)]) -> Vec<String> {
        struct Decls(HashMap<String, usize>);
        impl<'ast> Visit<'ast> for Decls {
            fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                *self.0.entry(p.ident.to_string()).or_default() += 1;
            }
        }
        let mut decls = Decls(HashMap::new());
        decls.visit_block(body);
        let mut names: Vec<_> = Uniform::of(body, params, &["table".to_string()], &decls.0)
            .names
            .into_iter()
            .collect();
        names.sort();
        names
    }

    #[test]
    fn block_loop_counters_are_uniform() {
        let body: Block = syn::parse_quote!({
            let tid = __kctx.thread_idx().x;
            for round in 0..ROUNDS {
                let shift = round * 2 + (n >> 3).trailing_zeros();
                let mut width = __kctx.block_dim().x / 2;
                while width > 0 {
                    if tid < width {
                        s[tid] += s[tid + width] >> shift;
                    }
                    sync_threads();
                    width /= if width > 64 { 4 } else { 2 };
                }
            }
        });
        let params = [("n".to_string(), false)];
        assert_eq!(uniform(&body, &params), ["round", "shift", "width"]);
        // An element of a read-only array at a uniform index, not at a thread's or of another
        // array.
        let body: Block = syn::parse_quote!({
            let tid = __kctx.thread_idx().x as usize;
            let b = __kctx.block_idx().x as usize;
            let len = table[3 * b + 1];
            let mine = table[tid];
            let other = out[b];
            sync_threads();
        });
        let params = [("table".to_string(), false), ("out".to_string(), false)];
        assert_eq!(uniform(&body, &params), ["b", "len"]);
    }

    #[test]
    fn a_local_any_thread_may_see_otherwise_is_not_uniform() {
        let params = [("n".to_string(), false), ("m".to_string(), true)];
        for (stmt, why) in [
            (
                quote!(if t == 0 {
                    k = 1;
                }),
                "assigned in a branch",
            ),
            (
                quote!(for i in 0..3 {
                    k += i;
                }),
                "assigned in a loop without a barrier",
            ),
            (quote!(k = t;), "assigned a thread's value"),
            (quote!(k = s[0];), "assigned a shared element"),
            (quote!(k = f(1);), "assigned a function's result"),
            (quote!(k = m;), "assigned a parameter the body reassigns"),
            (quote!(g(&mut k);), "borrowed mutably"),
            (quote!(let p = &k;), "borrowed"),
            (quote!(k.set_bit(1);), "given to a method"),
            (quote!(trace!(k);), "named in a macro"),
            (quote!(let k = 0;), "bound twice"),
        ] {
            let body: Block = syn::parse_quote!({
                let t = __kctx.thread_idx().x;
                let mut k = n * 2 + __kctx.block_idx().x;
                #stmt
                sync_threads();
            });
            assert_eq!(uniform(&body, &params), Vec::<String>::new(), "{why}");
        }
        let body: Block = syn::parse_quote!({
            let mut k = n * 2 + __kctx.block_idx().x;
            sync_threads();
            k = k.min(N);
        });
        assert_eq!(uniform(&body, &params), ["k"]);
    }

    #[test]
    fn without_locals_a_local_is_never_a_constant() {
        let decls = HashMap::from([("k".to_string(), 1)]);
        let u = Uniform::without_locals(&[("n".into(), false)], &[], &decls);
        assert!(!u.expr(&syn::parse_quote!(k > 1)));
        assert!(u.expr(&syn::parse_quote!(n / 2 + LIMIT)));
    }
}
