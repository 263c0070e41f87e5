//! The grid-stride loop of a grid-level kernel, for the CPU backend's flat run
//! (`__rt::Strided`).
//!
//! Where a 1-D kernel's body is `let`s that only compute, then
//! `let mut i = grid(1); while i < n { ..; i += gridsize(1); }`, or
//! `for i in (grid(1)..n).step_by(gridsize(1)) { .. }`, and nothing after (CUDA's and Numba's
//! grid-stride loop), its threads between them visit every index below `n` once. The CPU
//! backend then runs the loop's body once per index, in index order, split over the cores,
//! where the threads would each walk the array a grid's stride at a time. The body may not
//! change `i`, nor anything `n` is computed from, nor leave the loop early.

use crate::split::guard::{computes, computes_expr};
use crate::syntax::mentions;
use crate::syntax::{is_name, unparen};
use quote::{quote, ToTokens};
use std::collections::HashSet;
use syn::visit::Visit;
use syn::{BinOp, Block, Expr, Local, Pat, Stmt};

/// A grid-stride loop, taken apart.
pub struct Stride {
    /// The loop's index (`i`).
    pub index: syn::Ident,
    /// The `let`s before it, which compute the same for every thread.
    pub lets: Vec<Local>,
    /// `n` of `while i < n`.
    pub bound: Expr,
    /// The loop's statements, but its last, the step.
    pub body: Vec<Stmt>,
}

/// The grid-stride loop of a body of the shape the module describes, as a `while` loop or as
/// `for i in (grid(1)..n).step_by(gridsize(1)) { .. }`.
pub fn stride(block: &Block) -> Option<Stride> {
    let (last, prefix) = block.stmts.split_last()?;
    if let Stmt::Expr(Expr::ForLoop(f), _) = last {
        return stepped(f, lets_of(prefix)?);
    }
    let (start, lets) = prefix.split_last()?;
    let index = start_of(start)?;
    let Stmt::Expr(Expr::While(w), _) = last else {
        return None;
    };
    let Expr::Binary(cond) = unparen(&w.cond) else {
        return None;
    };
    let name = index.to_string();
    if !matches!(cond.op, BinOp::Lt(_)) || !is_name(unparen(&cond.left), &name) {
        return None;
    }
    let (step, body) = w.body.stmts.split_last()?;
    if !is_step(step, &name) {
        return None;
    }
    following(index, lets_of(lets)?, &cond.right, body)
}

/// `for i in (grid(1)..n).step_by(gridsize(1)) { .. }`.
fn stepped(f: &syn::ExprForLoop, lets: Vec<Local>) -> Option<Stride> {
    let Pat::Ident(p) = &*f.pat else { return None };
    let Expr::MethodCall(step) = unparen(&f.expr) else {
        return None;
    };
    let by_gridsize = step.args.len() == 1 && ctx_call(&step.args[0], "gridsize_1d");
    if step.method != "step_by" || !by_gridsize || p.subpat.is_some() {
        return None;
    }
    let Expr::Range(r) = unparen(&step.receiver) else {
        return None;
    };
    let from_grid = r.start.as_deref().is_some_and(|e| ctx_call(e, "grid_1d"));
    if !from_grid || !matches!(r.limits, syn::RangeLimits::HalfOpen(_)) {
        return None;
    }
    following(p.ident.clone(), lets, r.end.as_deref()?, &f.body.stmts)
}

/// The loop of index `index` up to `bound` with the statements `body`, where the flat run can
/// follow it: `bound` only computes, and neither it nor the index changes in `body`, which
/// does not leave the loop early.
fn following(index: syn::Ident, lets: Vec<Local>, bound: &Expr, body: &[Stmt]) -> Option<Stride> {
    if !computes_expr(bound) {
        return None;
    }
    let assigned = Assigned::of(body)?;
    let name = index.to_string();
    let fixed = !mentions(bound.to_token_stream(), &|i| {
        let i = i.to_string();
        i == name || assigned.0.contains(&i)
    });
    (fixed && !assigned.0.contains(&name)).then(|| Stride {
        index,
        lets,
        bound: bound.clone(),
        body: body.to_vec(),
    })
}

/// The `let`s before the loop, where each computes the same for every thread.
fn lets_of(stmts: &[Stmt]) -> Option<Vec<Local>> {
    stmts
        .iter()
        .map(|s| match s {
            Stmt::Local(l) if computes(l) && !mentions_grid(l) => Some(l.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `e` is `__kctx.method()`: what the body pass makes of `grid(1)` (`grid_1d`) and
/// `gridsize(1)` (`gridsize_1d`).
fn ctx_call(e: &Expr, method: &str) -> bool {
    matches!(unparen(e), Expr::MethodCall(m)
        if m.method == method && m.args.is_empty() && is_name(&m.receiver, "__kctx"))
}

/// `i` of `let mut i = grid(1);`.
fn start_of(s: &Stmt) -> Option<syn::Ident> {
    let Stmt::Local(l) = s else { return None };
    let init = l.init.as_ref()?;
    if !ctx_call(&init.expr, "grid_1d") || init.diverge.is_some() {
        return None;
    }
    match &l.pat {
        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => Some(p.ident.clone()),
        _ => None,
    }
}

/// Whether `s` is `i += gridsize(1);`.
fn is_step(s: &Stmt, index: &str) -> bool {
    let Stmt::Expr(Expr::Binary(b), Some(_)) = s else {
        return false;
    };
    matches!(b.op, BinOp::AddAssign(_))
        && is_name(unparen(&b.left), index)
        && ctx_call(&b.right, "gridsize_1d")
}

/// Whether a `let` reads the thread's grid index (its value would differ between threads).
fn mentions_grid(l: &Local) -> bool {
    mentions(l.to_token_stream(), &|i| {
        let i = i.to_string();
        i == "grid_1d" || i == "grid_2d" || i == "grid_3d"
    })
}

/// The names the loop's statements assign (`x = ..`, `x += ..`, `&mut x`); `None` where they
/// leave the loop early (`break`, `continue`, `return`, `?`), which the flat run cannot follow.
struct Assigned(HashSet<String>);

impl Assigned {
    fn of(stmts: &[Stmt]) -> Option<Assigned> {
        let mut v = Visitor {
            names: HashSet::new(),
            leaves: false,
        };
        for s in stmts {
            v.visit_stmt(s);
        }
        (!v.leaves).then_some(Assigned(v.names))
    }
}

struct Visitor {
    names: HashSet<String>,
    leaves: bool,
}

impl Visitor {
    fn target(&mut self, e: &Expr) {
        if let Expr::Path(p) = unparen(e) {
            if let Some(i) = p.path.get_ident() {
                self.names.insert(i.to_string());
            }
        }
    }
}

impl<'ast> Visit<'ast> for Visitor {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Assign(a) => self.target(&a.left),
            Expr::Binary(b) if crate::syntax::assigns(&b.op) => self.target(&b.left),
            Expr::Reference(r) if r.mutability.is_some() => self.target(&r.expr),
            Expr::Break(_) | Expr::Continue(_) | Expr::Return(_) | Expr::Try(_) => {
                self.leaves = true
            }
            // A closure's `return` leaves the closure, not the loop; what it assigns counts.
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // A macro's tokens may assign or leave: count every name in them as assigned.
        let mut names = std::collections::HashMap::new();
        crate::syntax::count_idents(m.tokens.clone(), &mut names);
        self.names.extend(names.into_keys());
        self.leaves |= mentions(m.tokens.clone(), &|i| {
            matches!(i.to_string().as_str(), "break" | "continue" | "return")
        });
    }
}

/// The statements of the flat run's body of one index: the `let`s, the index, the loop's body
/// under the loop's own test, which always holds there and tells the optimiser that the index
/// is below the bound (an array's length, as a rule: its index checks then go).
pub fn index_body(s: &Stride) -> proc_macro2::TokenStream {
    let (lets, index, bound, body) = (&s.lets, &s.index, &s.bound, &s.body);
    quote! {
        #(#lets)*
        let #index: usize = __index;
        if #index < #bound {
            #(#body)*
        }
    }
}

/// The statements of the flat run's bound: the `let`s, then `n`.
pub fn bound_body(s: &Stride) -> proc_macro2::TokenStream {
    let (lets, bound) = (&s.lets, &s.bound);
    quote! {
        #(#lets)*
        #bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_stride_loop_is_found() {
        let block: Block = syn::parse_quote!({
            let n = y.len();
            let mut i = __kctx.grid_1d();
            while i < n {
                y[i] = a * x[i] + y[i];
                i += __kctx.gridsize_1d();
            }
        });
        let s = stride(&block).unwrap();
        assert_eq!(s.index, "i");
        assert_eq!(s.bound.to_token_stream().to_string(), "n");
        assert_eq!(s.body.len(), 1);
    }

    #[test]
    fn the_step_by_form_is_found_too() {
        let block: Block = syn::parse_quote!({
            for i in (__kctx.grid_1d()..y.len()).step_by(__kctx.gridsize_1d()) {
                y[i] = 2.0 * y[i];
            }
        });
        let s = stride(&block).unwrap();
        assert_eq!(s.index, "i");
        assert_eq!(s.bound.to_token_stream().to_string(), "y . len ()");
        let other_step: Block = syn::parse_quote!({
            for i in (__kctx.grid_1d()..y.len()).step_by(2) {
                y[i] = 0.0;
            }
        });
        assert!(stride(&other_step).is_none());
    }

    #[test]
    fn loops_the_flat_run_cannot_follow_are_left_alone() {
        let cases: [Block; 5] = [
            // `n` changes in the loop.
            syn::parse_quote!({
                let mut n = y.len();
                let mut i = __kctx.grid_1d();
                while i < n {
                    n -= 1;
                    i += __kctx.gridsize_1d();
                }
            }),
            // The loop leaves early.
            syn::parse_quote!({
                let mut i = __kctx.grid_1d();
                while i < y.len() {
                    if y[i] > 0.0 {
                        break;
                    }
                    i += __kctx.gridsize_1d();
                }
            }),
            // Another step.
            syn::parse_quote!({
                let mut i = __kctx.grid_1d();
                while i < y.len() {
                    y[i] = 0.0;
                    i += 2;
                }
            }),
            // A `let` that reads the thread's index.
            syn::parse_quote!({
                let t = __kctx.grid_1d();
                let mut i = __kctx.grid_1d();
                while i < y.len() {
                    y[i] = t as f32;
                    i += __kctx.gridsize_1d();
                }
            }),
            // The index changed in the loop.
            syn::parse_quote!({
                let mut i = __kctx.grid_1d();
                while i < y.len() {
                    i += 1;
                    y[i] = 0.0;
                    i += __kctx.gridsize_1d();
                }
            }),
        ];
        for block in cases {
            assert!(stride(&block).is_none(), "{}", block.to_token_stream());
        }
    }
}
