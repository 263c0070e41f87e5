//! The grid-stride loops of a grid-level kernel, for the CPU backend's flat runs
//! (`__rt::Strided`, `__rt::Strided2`).
//!
//! Where a kernel's body is `let`s that only compute, then a grid-stride loop and nothing after
//! (CUDA's and Numba's idiom), its threads between them visit every index below the bound once.
//! The CPU backend then runs the loop's body once per index, in index order, split over the
//! cores, where the threads would each walk the array a grid's stride at a time. The forms:
//!
//! - 1-D: `let mut i = grid(1); while i < n { ..; i += gridsize(1); }`, or
//!   `for i in (grid(1)..n).step_by(gridsize(1)) { .. }`;
//! - 2-D: two such loops, one along each of the grid's x and y, the outer's body the inner
//!   loop and `let`s that compute:
//!   `for y in (y0..h).step_by(sy) { for x in (x0..w).step_by(sx) { .. } }`, after
//!   `let (x0, y0) = grid(2); let (sx, sy) = gridsize(2);`, or as `while` loops.
//!
//! A loop starts at `grid(1)`, `grid(2).0` or `.1`, or a name bound to one (`let (x0, y0) =
//! grid(2)`), and steps by the `gridsize` of the same axis, or a name bound to it. The bodies may
//! not change the indices, nor anything the bounds or the `let`s compute from, nor leave a loop
//! early, nor read the thread's own grid index in another way.

use crate::split::guard::{computes, computes_expr};
use crate::syntax::mentions;
use crate::syntax::{is_name, unparen};
use quote::{quote, ToTokens};
use std::collections::{HashMap, HashSet};
use syn::visit::Visit;
use syn::{BinOp, Block, Expr, Local, Pat, Stmt};

/// The axis of the grid a loop walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
}

/// One loop of a grid-stride nest: its index, which starts at the thread's grid index along
/// `axis` and steps by the grid's size along it, and its bound.
pub struct Walk {
    pub index: syn::Ident,
    pub bound: Expr,
    pub axis: Axis,
}

/// A grid-stride loop, or a nest of two, taken apart.
pub struct Stride {
    /// The `let`s before it, which compute the same for every thread.
    pub lets: Vec<Local>,
    /// The loop, or the outer loop of a nest.
    pub outer: Walk,
    /// A 2-D nest's inner loop, with the `let`s before it in the outer loop's body.
    pub inner: Option<(Vec<Local>, Walk)>,
    /// The innermost loop's statements, but a `while` loop's step.
    pub body: Vec<Stmt>,
}

/// The names the `let`s have bound so far to the thread's grid index (`starts`) and to the
/// grid's size (`steps`), by axis; and every name ever bound to a grid index (`ever`), which the
/// flat run does not bind.
#[derive(Default)]
struct Names {
    starts: HashMap<String, Axis>,
    steps: HashMap<String, Axis>,
    ever: HashSet<String>,
}

/// One loop level: the `let`s kept before it, the loop and its body.
struct Level {
    lets: Vec<Local>,
    walk: Walk,
    body: Vec<Stmt>,
}

/// The grid-stride loop or nest of a body of the shape the module describes.
pub fn stride(block: &Block) -> Option<Stride> {
    let mut names = Names::default();
    let outer = level(&block.stmts, &mut names, &[])?;
    let enclosing = [outer.walk.index.to_string()];
    let (inner, body) = match level(&outer.body, &mut names, &enclosing) {
        Some(inner) if inner.walk.axis != outer.walk.axis => {
            (Some((inner.lets, inner.walk)), inner.body)
        }
        _ if outer.walk.axis == Axis::X => (None, outer.body),
        _ => return None,
    };
    let s = Stride {
        lets: outer.lets,
        outer: outer.walk,
        inner,
        body,
    };
    s.follows(&names).then_some(s)
}

/// A level of the nest: `let`s, then a loop and nothing after; `enclosing`: the indices of the
/// loops around it, which its `let`s may read.
fn level(stmts: &[Stmt], names: &mut Names, enclosing: &[String]) -> Option<Level> {
    let (last, prefix) = stmts.split_last()?;
    let mut lets = Vec::new();
    let mut local = HashSet::new();
    for s in prefix {
        let Stmt::Local(l) = s else { return None };
        if names.bind(l, &mut local, enclosing)? {
            lets.push(l.clone());
        }
    }
    let (walk, body) = match last {
        Stmt::Expr(Expr::ForLoop(f), _) => stepped(f, names)?,
        Stmt::Expr(Expr::While(w), _) => walking(w, names, &local)?,
        _ => return None,
    };
    Some(Level { lets, walk, body })
}

impl Names {
    /// Notes what `l` binds; whether the flat run keeps it (a `let` that computes the same for
    /// every thread, reading no grid index but the `enclosing` loops') or drops it (one that
    /// binds grid indices, `local` noting them). `None` where it is neither.
    fn bind(
        &mut self,
        l: &Local,
        local: &mut HashSet<String>,
        enclosing: &[String],
    ) -> Option<bool> {
        let init = &l.init.as_ref().filter(|i| i.diverge.is_none())?.expr;
        let bound = pattern_names(&l.pat)?;
        let starts = axes(init, "grid_1d", "grid_2d", &self.starts);
        let steps = axes(init, "gridsize_1d", "gridsize_2d", &self.steps);
        let reads_start = mentions(l.to_token_stream(), &|i| {
            let i = i.to_string();
            self.starts.contains_key(&i) && !enclosing.contains(&i)
        });
        let keep = computes(l) && !mentions_grid(l.to_token_stream()) && !reads_start;
        for n in bound.iter().flatten() {
            self.starts.remove(n);
            self.steps.remove(n);
        }
        let fits = |axes: &Vec<Axis>| axes.len() == bound.len();
        if let Some(axes) = starts.filter(fits) {
            for (n, a) in bound.into_iter().zip(axes) {
                if let Some(n) = n {
                    self.ever.insert(n.clone());
                    local.insert(n.clone());
                    self.starts.insert(n, a);
                }
            }
            return Some(false);
        }
        if let Some(axes) = steps.filter(fits) {
            for (n, a) in bound.into_iter().zip(axes) {
                self.steps.extend(n.map(|n| (n, a)));
            }
            return Some(true);
        }
        keep.then_some(true)
    }
}

/// The axes `e` gives: both of the context's two-axis call `two` (`grid_2d()`), or the one of
/// [`axis_of`].
fn axes(e: &Expr, one: &str, two: &str, names: &HashMap<String, Axis>) -> Option<Vec<Axis>> {
    if ctx_call(e, two) {
        return Some(vec![Axis::X, Axis::Y]);
    }
    axis_of(e, one, two, names).map(|a| vec![a])
}

/// The names a `let`'s pattern binds, in order: one name, or a tuple of names and `_` (`None`);
/// `None` for other patterns.
fn pattern_names(p: &Pat) -> Option<Vec<Option<String>>> {
    let one = |p: &Pat| match p {
        Pat::Ident(i) if i.subpat.is_none() && i.by_ref.is_none() => {
            Some(Some(i.ident.to_string()))
        }
        Pat::Wild(_) => Some(None),
        _ => None,
    };
    match p {
        Pat::Type(t) => pattern_names(&t.pat),
        Pat::Tuple(t) => t.elems.iter().map(one).collect(),
        p => Some(vec![one(p)?]),
    }
}

/// The axis of `e` where it is the one-axis form `one` of the context's call (`grid_1d`), a
/// field of its two-axis form `two` (`grid_2d().0`), or a name `names` maps.
fn axis_of(e: &Expr, one: &str, two: &str, names: &HashMap<String, Axis>) -> Option<Axis> {
    match unparen(e) {
        e if ctx_call(e, one) => Some(Axis::X),
        Expr::Field(f) if ctx_call(&f.base, two) => match &f.member {
            syn::Member::Unnamed(i) if i.index == 0 => Some(Axis::X),
            syn::Member::Unnamed(i) if i.index == 1 => Some(Axis::Y),
            _ => None,
        },
        Expr::Path(p) => names.get(&p.path.get_ident()?.to_string()).copied(),
        _ => None,
    }
}

/// `for i in (START..n).step_by(STEP) { .. }`, START and STEP of one axis.
fn stepped(f: &syn::ExprForLoop, names: &Names) -> Option<(Walk, Vec<Stmt>)> {
    let Pat::Ident(p) = &*f.pat else { return None };
    let Expr::MethodCall(step) = unparen(&f.expr) else {
        return None;
    };
    if step.method != "step_by" || step.args.len() != 1 || p.subpat.is_some() {
        return None;
    }
    let Expr::Range(r) = unparen(&step.receiver) else {
        return None;
    };
    if !matches!(r.limits, syn::RangeLimits::HalfOpen(_)) {
        return None;
    }
    let axis = axis_of(r.start.as_deref()?, "grid_1d", "grid_2d", &names.starts)?;
    let by = axis_of(&step.args[0], "gridsize_1d", "gridsize_2d", &names.steps)?;
    let walk = Walk {
        index: p.ident.clone(),
        bound: (**r.end.as_ref()?).clone(),
        axis,
    };
    (axis == by).then(|| (walk, f.body.stmts.clone()))
}

/// `while i < n { ..; i += STEP; }`, where `i` is a grid index that the `let`s of this level
/// (`local`) bound, and STEP the grid's size along the same axis.
fn walking(
    w: &syn::ExprWhile,
    names: &Names,
    local: &HashSet<String>,
) -> Option<(Walk, Vec<Stmt>)> {
    let Expr::Binary(cond) = unparen(&w.cond) else {
        return None;
    };
    let Expr::Path(index) = unparen(&cond.left) else {
        return None;
    };
    let index = index.path.get_ident()?.clone();
    let name = index.to_string();
    let axis = *names.starts.get(&name).filter(|_| local.contains(&name))?;
    if !matches!(cond.op, BinOp::Lt(_)) {
        return None;
    }
    let (step, body) = w.body.stmts.split_last()?;
    let Stmt::Expr(Expr::Binary(b), Some(_)) = step else {
        return None;
    };
    let by = axis_of(&b.right, "gridsize_1d", "gridsize_2d", &names.steps);
    if !matches!(b.op, BinOp::AddAssign(_)) || !is_name(unparen(&b.left), &name) || by != Some(axis)
    {
        return None;
    }
    let walk = Walk {
        index,
        bound: (*cond.right).clone(),
        axis,
    };
    Some((walk, body.to_vec()))
}

impl Stride {
    /// Whether the flat run can follow the loops: their bounds only compute and read neither
    /// their own index nor an inner loop's; nothing reads a grid index but through the loops'
    /// indices; and the innermost body changes neither an index, nor a name the bounds or
    /// `let`s read or bind, nor leaves a loop early.
    fn follows(&self, names: &Names) -> bool {
        let walks = self.walks();
        let indices: HashSet<String> = walks.iter().map(|w| w.index.to_string()).collect();
        let dropped: HashSet<&String> = names.ever.difference(&indices).collect();
        let Some(assigned) = Assigned::of(&self.body) else {
            return false;
        };
        let mut read = HashMap::new();
        let between = self.inner.iter().flat_map(|(lets, _)| lets);
        for l in self.lets.iter().chain(between) {
            crate::syntax::count_idents(l.to_token_stream(), &mut read);
        }
        for w in &walks {
            crate::syntax::count_idents(w.bound.to_token_stream(), &mut read);
        }
        let bounds_fixed = walks.iter().enumerate().all(|(k, w)| {
            let own: Vec<String> = walks[k..].iter().map(|w| w.index.to_string()).collect();
            computes_expr(&w.bound)
                && !mentions(w.bound.to_token_stream(), &|i| {
                    let i = i.to_string();
                    own.contains(&i) || dropped.contains(&i)
                })
        });
        let body = &self.body;
        let body = quote!(#(#body)*);
        let body_reads_grid =
            mentions_grid(body.clone()) || mentions(body, &|i| dropped.contains(&i.to_string()));
        let changes_fixed = assigned
            .0
            .iter()
            .any(|n| indices.contains(n) || read.contains_key(n));
        bounds_fixed && !body_reads_grid && !changes_fixed
    }

    /// The loops, outer first.
    pub fn walks(&self) -> Vec<&Walk> {
        let inner = self.inner.as_ref().map(|(_, w)| w);
        [Some(&self.outer), inner].into_iter().flatten().collect()
    }
}

/// Whether `e` is `__kctx.method()`: what the body pass makes of `grid(1)` (`grid_1d`) and
/// `gridsize(1)` (`gridsize_1d`).
fn ctx_call(e: &Expr, method: &str) -> bool {
    matches!(unparen(e), Expr::MethodCall(m)
        if m.method == method && m.args.is_empty() && is_name(&m.receiver, "__kctx"))
}

/// Whether `tokens` read the thread's grid index (its value differs between threads).
fn mentions_grid(tokens: proc_macro2::TokenStream) -> bool {
    mentions(tokens, &|i| {
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

/// The statements of the flat run's body of one index (`__index`, and a nest's inner index
/// `__inner`): the `let`s, the indices, the loop's body under the loops' own tests, which always
/// hold there and tell the optimiser that the indices are below the bounds (an array's extents,
/// as a rule: its index checks then go).
pub fn index_body(s: &Stride) -> proc_macro2::TokenStream {
    let (lets, body) = (&s.lets, &s.body);
    let (index, bound) = (&s.outer.index, &s.outer.bound);
    let inner = match &s.inner {
        None => quote!(#(#body)*),
        Some((between, w)) => {
            let (index, bound) = (&w.index, &w.bound);
            quote! {
                #(#between)*
                let #index: usize = __inner;
                if #index < #bound {
                    #(#body)*
                }
            }
        }
    };
    quote! {
        #(#lets)*
        let #index: usize = __index;
        if #index < #bound {
            #inner
        }
    }
}

/// The statements of the flat run's bound: the `let`s, then `n`.
pub fn bound_body(s: &Stride) -> proc_macro2::TokenStream {
    let (lets, bound) = (&s.lets, &s.outer.bound);
    quote! {
        #(#lets)*
        #bound
    }
}

/// The statements of a nest's inner bound for the outer index `__index`: the `let`s, the
/// index and the `let`s of the outer body, then the bound.
pub fn inner_bound_body(s: &Stride) -> Option<proc_macro2::TokenStream> {
    let (between, w) = s.inner.as_ref()?;
    let (lets, index, bound) = (&s.lets, &s.outer.index, &w.bound);
    Some(quote! {
        #(#lets)*
        let #index: usize = __index;
        #(#between)*
        #bound
    })
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
        assert_eq!(s.outer.index, "i");
        assert_eq!(s.outer.bound.to_token_stream().to_string(), "n");
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
        assert_eq!(s.outer.index, "i");
        assert_eq!(s.outer.bound.to_token_stream().to_string(), "y . len ()");
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

    #[test]
    fn a_start_and_stride_bound_by_name_read_as_numbas_range() {
        // Numba's `start = cuda.grid(1); stride = cuda.gridsize(1)` and
        // `for i in range(start, n, stride)`.
        let block: Block = syn::parse_quote!({
            let start = __kctx.grid_1d();
            let stride = __kctx.gridsize_1d();
            for i in (start..y.len()).step_by(stride) {
                y[i] = 2.0 * y[i];
            }
        });
        let s = stride(&block).unwrap();
        assert_eq!((s.outer.index.to_string(), s.lets.len()), ("i".into(), 1));
        assert!(s.inner.is_none());
    }

    #[test]
    fn two_axis_nests_are_found_in_every_spelling() {
        let cases: [Block; 4] = [
            syn::parse_quote!({
                let (x0, y0) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                let (h, w) = out.dim();
                for y in (y0..h).step_by(sy) {
                    let row = y * w;
                    for x in (x0..w).step_by(sx) {
                        out[[y, x]] = (row + x) as f32;
                    }
                }
            }),
            syn::parse_quote!({
                let (h, w) = out.dim();
                for y in (__kctx.grid_2d().1..h).step_by(__kctx.gridsize_2d().1) {
                    for x in (__kctx.grid_2d().0..w).step_by(__kctx.gridsize_2d().0) {
                        out[[y, x]] = 1.0;
                    }
                }
            }),
            syn::parse_quote!({
                let (x0, y0) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                let (h, w) = out.dim();
                let mut y = y0;
                while y < h {
                    let mut x = x0;
                    while x < w {
                        out[[y, x]] = 1.0;
                        x += sx;
                    }
                    y += sy;
                }
            }),
            // Numba's order: the outer loop along x, over the first axis.
            syn::parse_quote!({
                let (x, y) = __kctx.grid_2d();
                let (gx, gy) = __kctx.gridsize_2d();
                for i in (x..a.dim().0).step_by(gx) {
                    for j in (y..a.dim().1).step_by(gy) {
                        a[[i, j]] = 1.0;
                    }
                }
            }),
        ];
        for (k, block) in cases.iter().enumerate() {
            let s = stride(block).unwrap_or_else(|| panic!("case {k}"));
            let (between, inner) = s.inner.as_ref().expect("a nest");
            let outer_x = k == 3;
            assert_eq!(s.outer.axis == Axis::X, outer_x, "case {k}");
            assert_eq!(inner.axis == Axis::X, !outer_x, "case {k}");
            assert_eq!(between.len(), usize::from(k == 0), "case {k}");
        }
    }

    #[test]
    fn nests_the_flat_run_cannot_follow_are_left_alone() {
        let cases: [Block; 7] = [
            // Both loops along x.
            syn::parse_quote!({
                let (x0, y0) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                for y in (x0..h).step_by(sx) {
                    for x in (x0..w).step_by(sx) {
                        out[[y, x]] = 1.0;
                    }
                }
            }),
            // A start with another axis' step.
            syn::parse_quote!({
                let (x0, y0) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                for y in (y0..h).step_by(sx) {
                    for x in (x0..w).step_by(sx) {
                        out[[y, x]] = 1.0;
                    }
                }
            }),
            // The body reads a start.
            syn::parse_quote!({
                let (x0, y0) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                for y in (y0..h).step_by(sy) {
                    for x in (x0..w).step_by(sx) {
                        out[[y, x]] = x0 as f32;
                    }
                }
            }),
            // The inner while loop's index is bound once, outside the outer loop: each thread
            // walks one row only.
            syn::parse_quote!({
                let (mut x, mut y) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                while y < h {
                    while x < w {
                        out[[y, x]] = 1.0;
                        x += sx;
                    }
                    y += sy;
                }
            }),
            // The outer bound reads the inner index.
            syn::parse_quote!({
                let (x0, y0) = __kctx.grid_2d();
                let (sx, sy) = __kctx.gridsize_2d();
                let x = 4;
                for y in (y0..x).step_by(sy) {
                    for x in (x0..w).step_by(sx) {
                        out[[y, x]] = 1.0;
                    }
                }
            }),
            // A count kept across the thread's indices.
            syn::parse_quote!({
                let mut count = 0;
                for i in (__kctx.grid_1d()..n).step_by(__kctx.gridsize_1d()) {
                    count += 1;
                    out[i] = count;
                }
            }),
            // A lone loop along y.
            syn::parse_quote!({
                for y in (__kctx.grid_2d().1..h).step_by(__kctx.gridsize_2d().1) {
                    out[y] = 1.0;
                }
            }),
        ];
        for block in cases {
            assert!(stride(&block).is_none(), "{}", block.to_token_stream());
        }
    }
}
