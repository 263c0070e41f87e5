//! Barrier splitting, for the CPU backend: a kernel body whose `sync_threads();` statements sit
//! at its top level or at the top level of `for`/`while` loops becomes a sequence of thread
//! loops, one per region between barriers.
//!
//! Locals that live across a barrier are kept per thread (restored at the start of a region,
//! saved at its end where it may have changed them: see `Changes`), but for block-uniform ones
//! (see [`uniform`]), kept once per block and computed outside the thread loops; a loop
//! that holds a barrier is run once per block after checking that every thread agrees on its
//! bounds or condition, so a divergent barrier is still reported. A region after a barrier that
//! touches nothing but the thread's own locals runs before the barrier instead, in the thread
//! loop of the region there (see `hoist_private`). Bodies of any other shape (barriers in
//! branches, `sync_threads_count`, `break` out of a split loop, ...) are not split: the CPU
//! backend then runs their threads as coroutines.
//!
//! Warp collectives split the same way, warp by warp (see [`lockstep`]): the statements
//! between two barriers that hold a collective run once per warp, as thread loops over the
//! warp's lanes with an exchange between them at each collective. A `while` loop among them
//! runs while any lane's condition holds, with the lanes whose condition held, so that lanes
//! may leave it at different iterations, as on a GPU; an `if` runs its first branch with the
//! lanes whose condition holds, then its second with the others.
//!
//! A kernel with neither, whose threads only grid-level indices tell apart, keeps its body; its
//! guard (see [`guard`]) tells the CPU backend where along a row of threads the guard holds.

pub mod guard;
pub mod lockstep;
pub mod proof;
pub mod record;
pub mod stride;
pub mod uniform;

use crate::syntax::{
    assigns, count_idents, mentions, mentions_sync, private, private_expr, pure_method, Changes,
    GRID,
};
use crate::vocab::SHARED_ARRAYS;
use lockstep::{mentions_exchange, Exchange};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Pat, RangeLimits, Stmt};
use uniform::Uniform;

/// The block-level body for `run_split`, or `None` when the body's shape does not allow it.
///
/// `hint` is the block shape `(x, y, z)` (constant `u32` expressions) whose launches get thread
/// loops with constant bounds.
///
/// `params` are the kernel's parameters, each with whether it is declared `mut`.
/// `read_only` names the parameters that are read-only arrays.
pub fn split(
    block: &Block,
    hint: Option<Hint>,
    params: &[(String, bool)],
    read_only: &[String],
) -> Option<TokenStream> {
    // `activemask()` asks which lanes have returned so far: only coroutines answer it.
    if mentions_activemask(quote!(#block)) {
        return None;
    }
    // A parameter the body reassigns is a per-thread local: each thread starts from the
    // launch's value.
    let mut stmts: Vec<Stmt> = params
        .iter()
        .filter(|(_, mutable)| *mutable)
        .map(|(name, _)| {
            let name = format_ident!("{}", name);
            syn::parse_quote!(let mut #name = #name;)
        })
        .collect();
    stmts.extend(block.stmts.iter().cloned());
    let stmts = crate::split::lockstep::hoist(&stmts)?;
    let block = Block {
        brace_token: block.brace_token,
        stmts,
    };
    let mut counts = HashMap::new();
    count_idents(quote!(#block), &mut counts);
    let mut names = Names(Vec::new());
    names.visit_block(&block);
    let mut decls = HashMap::new();
    for n in names.0 {
        *decls.entry(n.to_string()).or_insert(0usize) += 1;
    }
    let mut reassigned = Reassigned(Vec::new());
    reassigned.visit_block(&block);
    // Warp runs give each lane its own path through loops: no local is uniform there (but a
    // local is never taken for a constant).
    let uniform = if mentions_exchange(quote!(#block)) {
        Uniform::without_locals(params, read_only, &decls)
    } else {
        Uniform::of(&block, params, read_only, &decls)
    };
    let mut s = Splitter {
        uniform,
        counts,
        decls,
        reassigned: reassigned.0,
        params: params.to_vec(),
        scopes: Vec::new(),
        remat: Vec::new(),
        storage: Vec::new(),
        items: Vec::new(),
        hint,
        warp: false,
        tail_meets: false,
        leaving_loop: false,
    };
    let code = s.sequence(&block.stmts)?;
    let (storage, items) = (&s.storage, &s.items);
    Some(quote! {
        #(#items)*
        let __n = __blk.threads();
        let mut __exited = ::kernel_runtime::__rt::flags(__n);
        // Whether any thread has exited (then `__exited` says which).
        let mut __some_exited = false;
        #(#storage)*
        #code
    })
}

/// Whether `tokens` call `activemask`.
fn mentions_activemask(tokens: TokenStream) -> bool {
    mentions(tokens, &|i| i == "activemask")
}

/// `sync_threads();` or a cooperative launch's `grid_sync();` (rewritten as `__kgrid.sync()`)
/// as a statement: the span of the call, and which barrier it is.
fn barrier(stmt: &Stmt) -> Option<(Span, Wait)> {
    match stmt {
        Stmt::Expr(Expr::Call(call), _) if call.args.is_empty() => {
            let Expr::Path(p) = &*call.func else {
                return None;
            };
            let last = p.path.segments.last()?;
            (last.ident == "sync_threads").then(|| (call.span(), Wait::Block))
        }
        Stmt::Expr(Expr::MethodCall(call), _) if call.args.is_empty() => {
            let Expr::Path(p) = &*call.receiver else {
                return None;
            };
            (p.path.is_ident(GRID) && call.method == "sync").then(|| (call.span(), Wait::Grid))
        }
        _ => None,
    }
}

/// Who waits at a barrier: the block's threads, or the grid's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    Block,
    Grid,
}

enum Piece<'a> {
    Region(Vec<&'a Stmt>),
    /// Statements between barriers that hold a warp collective: run warp by warp.
    Warp(Vec<Stmt>),
    /// A warp collective's exchange (in a warp's statements).
    Exchange(Exchange),
    Barrier(Span, Wait),
    For {
        /// The loop variable (`_` becomes one that nothing reads).
        var: syn::Ident,
        start: &'a Expr,
        end: &'a Expr,
        body: &'a Block,
        span: Span,
    },
    While {
        cond: &'a Expr,
        body: &'a Block,
        span: Span,
    },
    /// An `if` whose branches hold warp collectives (in a warp's statements).
    If {
        cond: &'a Expr,
        then: &'a Block,
        other: Option<&'a Block>,
    },
}

impl Piece<'_> {
    /// Whether running the piece may meet at a collective or barrier.
    fn meets(&self) -> bool {
        match self {
            Piece::Exchange(_) | Piece::Barrier(..) => true,
            Piece::Region(stmts) => meets_in(stmts.iter().copied()),
            Piece::Warp(stmts) => meets_in(stmts),
            Piece::For { body, .. } | Piece::While { body, .. } => meets_in(&body.stmts),
            Piece::If { then, other, .. } => {
                meets_in(&then.stmts) || other.is_some_and(|b| meets_in(&b.stmts))
            }
        }
    }
}

/// Whether `stmts` hold a collective's exchange or a barrier.
fn meets_in<'a>(stmts: impl IntoIterator<Item = &'a Stmt>) -> bool {
    let tokens: TokenStream = stmts
        .into_iter()
        .map(quote::ToTokens::to_token_stream)
        .collect();
    mentions_exchange(tokens.clone()) || mentions_sync(tokens)
}

/// The pieces of `stmts`: in a block's statements (`warp` false) split at barriers, the
/// statements between two that hold an exchange grouped as a [`Piece::Warp`]; in a warp's,
/// split at exchanges.
fn pieces<'a>(stmts: &'a [Stmt], warp: bool) -> Option<Vec<Piece<'a>>> {
    let mut out = Vec::new();
    let mut region = Vec::new();
    let flush = |region: &mut Vec<&'a Stmt>, out: &mut Vec<Piece<'a>>| {
        if region.is_empty() {
            return;
        }
        let run = std::mem::take(region);
        if !warp && run.iter().any(|s| mentions_exchange(quote!(#s))) {
            out.push(Piece::Warp(run.into_iter().cloned().collect()));
        } else {
            out.push(Piece::Region(run));
        }
    };
    for stmt in stmts {
        let boundary = if warp {
            mentions_exchange(quote!(#stmt))
        } else {
            mentions_sync(quote!(#stmt))
        };
        if !boundary {
            region.push(stmt);
            continue;
        }
        flush(&mut region, &mut out);
        if warp {
            if let Some(x) = crate::split::lockstep::exchange(stmt) {
                out.push(Piece::Exchange(x));
                continue;
            }
            match stmt {
                Stmt::Expr(Expr::While(w), _)
                    if w.label.is_none() && !matches!(&*w.cond, Expr::Let(_)) =>
                {
                    out.push(Piece::While {
                        cond: &w.cond,
                        body: &w.body,
                        span: w.while_token.span,
                    })
                }
                Stmt::Expr(Expr::If(i), _) if !matches!(&*i.cond, Expr::Let(_)) => {
                    let other = match i.else_branch.as_ref().map(|(_, e)| &**e) {
                        None => None,
                        Some(Expr::Block(b)) if b.label.is_none() => Some(&b.block),
                        Some(_) => return None,
                    };
                    out.push(Piece::If {
                        cond: &i.cond,
                        then: &i.then_branch,
                        other,
                    })
                }
                _ => return None,
            }
            continue;
        }
        if let Some((span, wait)) = barrier(stmt) {
            out.push(Piece::Barrier(span, wait));
            continue;
        }
        match stmt {
            Stmt::Expr(Expr::ForLoop(f), _) if f.label.is_none() => {
                let var = match &*f.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        pi.ident.clone()
                    }
                    Pat::Wild(w) => format_ident!("_unused", span = w.underscore_token.span),
                    _ => return None,
                };
                let Expr::Range(r) = &*f.expr else {
                    return None;
                };
                let (Some(start), Some(end), RangeLimits::HalfOpen(_)) =
                    (&r.start, &r.end, &r.limits)
                else {
                    return None;
                };
                if mentions_sync(quote!(#r)) {
                    return None;
                }
                out.push(Piece::For {
                    var,
                    start,
                    end,
                    body: &f.body,
                    span: f.for_token.span,
                });
            }
            Stmt::Expr(Expr::While(w), _) if w.label.is_none() => {
                let cond = &*w.cond;
                if matches!(cond, Expr::Let(_)) || mentions_sync(quote!(#cond)) {
                    return None;
                }
                out.push(Piece::While {
                    cond,
                    body: &w.body,
                    span: w.while_token.span,
                });
            }
            _ => return None,
        }
    }
    flush(&mut region, &mut out);
    Some(if warp { out } else { hoist_private(out) })
}

/// Moves a region that only computes with the thread's own locals from just after a barrier to
/// the end of the region before it (`sync_threads(); stride /= 2;` at the end of a loop body):
/// a barrier orders memory, which such a region does not touch, and one thread loop is saved.
fn hoist_private(pieces: Vec<Piece<'_>>) -> Vec<Piece<'_>> {
    let mut out: Vec<Piece<'_>> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if let (Piece::Region(stmts), [.., Piece::Region(before), Piece::Barrier(..)]) =
            (&piece, out.as_mut_slice())
        {
            if stmts.iter().all(|s| private(s)) {
                before.extend(stmts);
                continue;
            }
        }
        out.push(piece);
    }
    out
}

/// Refuses regions that `break`/`continue` out of their own statements (they would have to
/// leave a thread loop) and rewrites `return;` into a thread exit.
struct RegionCheck {
    loops: usize,
    ok: bool,
}
impl VisitMut for RegionCheck {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Closure(_) | Expr::Async(_) => {}
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.loops += 1;
                syn::visit_mut::visit_expr_mut(self, e);
                self.loops -= 1;
            }
            Expr::Break(b) => {
                if self.loops == 0 || b.label.is_some() {
                    self.ok = false;
                }
                syn::visit_mut::visit_expr_mut(self, e);
            }
            Expr::Continue(c) => {
                if self.loops == 0 || c.label.is_some() {
                    self.ok = false;
                }
            }
            Expr::Return(r) => {
                if r.expr.is_some() {
                    self.ok = false;
                }
                *e = syn::parse_quote_spanned!(r.span()=> return true);
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

struct Names(Vec<syn::Ident>);
impl<'ast> Visit<'ast> for Names {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.0.push(p.ident.clone());
        syn::visit::visit_pat_ident(self, p);
    }
}

struct Splitter {
    /// The locals kept once per block (see [`uniform`]).
    uniform: Uniform,
    /// How often each identifier occurs in the whole body.
    counts: HashMap<String, usize>,
    /// How often each name is bound (by `let`, a pattern, a closure parameter) in the body.
    decls: HashMap<String, usize>,
    /// Names the body assigns to as a whole (`x = ..`, `x += ..`) or borrows as `&mut x`.
    reassigned: Vec<String>,
    /// The kernel's parameters, each with whether the body may reassign it (declared `mut`).
    params: Vec<(String, bool)>,
    /// Bindings in scope, with where a later region finds them.
    scopes: Vec<Vec<(syn::Ident, Bind)>>,
    /// The `let` statements of rematerialized bindings, by index.
    remat: Vec<Remat>,
    storage: Vec<TokenStream>,
    items: Vec<Stmt>,
    hint: Option<Hint>,
    /// Whether the code being generated runs for one warp (`__lo` its first thread, `__active`
    /// its lanes that run) rather than for the whole block.
    warp: bool,
    /// Whether the code after the piece being generated, up to the kernel's end (a loop's body
    /// counting again after itself), may meet at a collective or barrier. Where it cannot, the
    /// lanes of a warp that took the other way around a collective return without meeting
    /// again: they take no part in it (`__gone`), as lanes that returned do.
    tail_meets: bool,
    /// Whether the code being generated is in a loop whose body may `return` or `break`: its
    /// lanes may leave in a later round.
    leaving_loop: bool,
}

/// Where a region finds a binding declared in an earlier one.
#[derive(Clone)]
enum Bind {
    /// A uniform loop variable or block-uniform local, in scope as it is.
    Uniform,
    /// Per-thread slots, restored at the start of the region.
    Slot(syn::Ident),
    /// A pure function of the thread's coordinates, the parameters, constants and other such
    /// bindings (`let tx = thread_idx().x as usize;`, a shared array): evaluated again, so that
    /// the optimiser sees it as the thread loop sees it (an index affine in the thread, one
    /// shared base pointer) and it costs no memory.
    Remat(usize),
}

/// A rematerialized `let` and the rematerialized bindings it reads.
struct Remat {
    stmt: Stmt,
    deps: Vec<usize>,
}

/// A block shape as three constant `u32` expressions.
pub type Hint = (TokenStream, TokenStream, TokenStream);

impl Splitter {
    /// The bindings in scope, the innermost of each name.
    fn visible(&self) -> Vec<(syn::Ident, Bind)> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for scope in self.scopes.iter().rev() {
            for (name, bind) in scope.iter().rev() {
                if seen.insert(name.to_string()) {
                    out.push((name.clone(), bind.clone()));
                }
            }
        }
        out
    }

    /// The binding `name` refers to, if it is a local in scope.
    fn lookup(&self, name: &str) -> Option<Bind> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|scope| scope.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
    }

    /// What a region that mentions `used` must do first: evaluate again the rematerialized
    /// bindings it reads (with those they read, in order), restore the ones kept in slots.
    fn restores(&self, used: &HashMap<String, usize>) -> TokenStream {
        let mut remat = std::collections::BTreeSet::new();
        let mut slots = TokenStream::new();
        for (name, bind) in self.visible() {
            if !used.contains_key(&name.to_string()) {
                continue;
            }
            match bind {
                Bind::Slot(slot) => slots.extend(quote! {
                    // SAFETY: thread `__t` saved it in an earlier region (see `Slots`).
                    #[allow(unused_mut, unused_variables)]
                    let mut #name = unsafe { #slot.get(__t) };
                }),
                Bind::Remat(i) => self.with_deps(i, &mut remat),
                Bind::Uniform => {}
            }
        }
        let remat = remat.into_iter().map(|i| &self.remat[i].stmt);
        quote!(#(#remat)* #slots)
    }

    fn with_deps(&self, i: usize, out: &mut std::collections::BTreeSet<usize>) {
        if out.insert(i) {
            for &d in &self.remat[i].deps {
                self.with_deps(d, out);
            }
        }
    }

    /// Whether `local` can be evaluated again in a later region with the same result: its
    /// names are bound once in the body and immutable, and its value is a pure function of
    /// the thread's context, parameters the body cannot reassign, constants and other such
    /// bindings. Returns the rematerialized bindings it reads.
    fn rematerializable(&self, local: &syn::Local) -> Option<Vec<usize>> {
        let init = local.init.as_ref()?;
        // A shared array is bound `mut` to be written through; the view itself never changes
        // unless the body assigns to the name.
        let view = shared_array_call(&init.expr);
        if init.diverge.is_some() || !self.plain_pattern(&local.pat, view) {
            return None;
        }
        let mut deps = Vec::new();
        self.pure(&init.expr, &mut deps).then_some(deps)
    }

    fn plain_pattern(&self, pat: &Pat, allow_mut: bool) -> bool {
        match pat {
            Pat::Ident(p) => {
                let name = p.ident.to_string();
                p.by_ref.is_none()
                    && (p.mutability.is_none() || allow_mut && !self.reassigned.contains(&name))
                    && p.subpat.is_none()
                    && self.decls.get(&name) == Some(&1)
            }
            Pat::Tuple(t) => t.elems.iter().all(|p| self.plain_pattern(p, false)),
            Pat::Type(t) => self.plain_pattern(&t.pat, allow_mut),
            Pat::Wild(_) => true,
            _ => false,
        }
    }

    fn pure(&self, e: &Expr, deps: &mut Vec<usize>) -> bool {
        match e {
            Expr::Lit(_) => true,
            Expr::Paren(p) => self.pure(&p.expr, deps),
            Expr::Group(g) => self.pure(&g.expr, deps),
            Expr::Cast(c) => self.pure(&c.expr, deps),
            Expr::Unary(u) => {
                matches!(u.op, syn::UnOp::Neg(_) | syn::UnOp::Not(_)) && self.pure(&u.expr, deps)
            }
            Expr::Binary(b) => {
                !assigns(&b.op) && self.pure(&b.left, deps) && self.pure(&b.right, deps)
            }
            Expr::Tuple(t) => t.elems.iter().all(|e| self.pure(e, deps)),
            Expr::Array(a) => a.elems.iter().all(|e| self.pure(e, deps)),
            Expr::Field(f) => self.pure(&f.base, deps),
            Expr::Reference(r) => r.mutability.is_none() && self.pure(&r.expr, deps),
            Expr::MethodCall(m) => {
                pure_method(&m.method)
                    && self.pure(&m.receiver, deps)
                    && m.args.iter().all(|a| self.pure(a, deps))
            }
            // The shared-array constructors the `shared_array!` rewrite emits, and constants.
            Expr::Call(c) => self.pure_call(c, deps),
            Expr::Unsafe(u) => match u.block.stmts.as_slice() {
                [Stmt::Expr(Expr::Call(c), None)] => self.pure_call(c, deps),
                _ => false,
            },
            // Indexing a constant (the shared layout's offsets), not an array parameter.
            Expr::Index(i) => self.constant(&i.expr) && self.pure(&i.index, deps),
            Expr::Path(p) => self.pure_path(p, deps),
            _ => false,
        }
    }

    /// A call of the runtime's shared-array constructors or of `extent`, with pure arguments.
    fn pure_call(&self, c: &syn::ExprCall, deps: &mut Vec<usize>) -> bool {
        runtime_fn(&c.func).is_some_and(|f| SHARED_ARRAYS.contains(&f.as_str()) || f == "extent")
            && c.args.iter().all(|a| self.pure(a, deps))
    }

    /// A constant item (or a field of one), not a local or a parameter.
    fn constant(&self, e: &Expr) -> bool {
        match e {
            Expr::Field(f) => self.constant(&f.base),
            Expr::Path(p) => match p.path.get_ident() {
                Some(id) => self.unbound(&id.to_string()),
                None => p.qself.is_none(),
            },
            _ => false,
        }
    }

    /// A name that is neither a parameter nor bound anywhere in the body: a constant item.
    fn unbound(&self, name: &str) -> bool {
        self.lookup(name).is_none()
            && !self.params.iter().any(|(p, _)| p == name)
            && !self.decls.contains_key(name)
    }

    fn pure_path(&self, p: &syn::ExprPath, deps: &mut Vec<usize>) -> bool {
        let Some(id) = p.path.get_ident() else {
            // `TPB`, `module::CONST`, `f32::MAX`: constants.
            return p.qself.is_none();
        };
        let name = id.to_string();
        if name == "__kctx" {
            return true;
        }
        if let Some((_, mutable)) = self.params.iter().find(|(p, _)| *p == name) {
            return !mutable && !self.decls.contains_key(&name);
        }
        match self.lookup(&name) {
            Some(Bind::Remat(i)) => {
                deps.push(i);
                true
            }
            Some(_) => false,
            None => self.unbound(&name),
        }
    }

    fn sequence(&mut self, stmts: &[Stmt]) -> Option<TokenStream> {
        self.scopes.push(Vec::new());
        let code = self.pieces_code(stmts);
        self.scopes.pop();
        code
    }

    /// The code of `stmts`, whose bindings go into the innermost scope.
    fn pieces_code(&mut self, stmts: &[Stmt]) -> Option<TokenStream> {
        let pieces = pieces(stmts, self.warp)?;
        let mut out = TokenStream::new();
        let tail = self.tail_meets;
        let meets: Vec<bool> = pieces.iter().map(Piece::meets).collect();
        for (k, piece) in pieces.into_iter().enumerate() {
            self.tail_meets = tail || meets[k + 1..].iter().any(|&m| m);
            let code = match piece {
                Piece::Region(stmts) => {
                    out.extend(self.segments(&stmts)?);
                    continue;
                }
                Piece::Warp(stmts) => self.warp_code(&stmts)?,
                Piece::Exchange(x) => self.exchange(&x)?,
                Piece::Barrier(span, Wait::Block) => {
                    let loc = location(span);
                    quote!(__blk.barrier(&__exited, __some_exited, #loc);)
                }
                Piece::Barrier(span, Wait::Grid) => {
                    let loc = location(span);
                    quote!(__blk.grid_barrier(&__exited, __some_exited, #loc);)
                }
                Piece::For {
                    var,
                    start,
                    end,
                    body,
                    span,
                } => {
                    let header = quote!((#start, #end));
                    let once = self.uniform.expr(start) && self.uniform.expr(end);
                    let check = self.uniform(header, span, once);
                    self.scopes.push(vec![(var.clone(), Bind::Uniform)]);
                    self.tail_meets |= meets_in(&body.stmts);
                    let inner = self.loop_body(body);
                    self.scopes.pop();
                    let inner = inner?;
                    quote! {
                        #check
                        if let ::core::option::Option::Some((__start, __end)) = __uniform {
                            for #var in __start..__end {
                                #inner
                            }
                        }
                    }
                }
                Piece::While { cond, body, .. } if self.warp => self.warp_while_code(cond, body)?,
                Piece::If { cond, then, other } => self.if_code(cond, then, other)?,
                Piece::While { cond, body, span } => {
                    let check = self.uniform(quote!((#cond)), span, self.uniform.expr(cond));
                    self.tail_meets |= meets_in(&body.stmts);
                    let inner = self.loop_body(body)?;
                    quote! {
                        loop {
                            #check
                            if __uniform != ::core::option::Option::Some(true) {
                                break;
                            }
                            #inner
                        }
                    }
                }
            };
            out.extend(quote!({ #code }));
        }
        self.tail_meets = tail;
        Some(out)
    }

    /// The code of a loop's `body`, which lanes leave where it may `return` or `break`.
    fn loop_body(&mut self, body: &Block) -> Option<TokenStream> {
        let outer = self.leaving_loop;
        self.leaving_loop |= mentions(quote!(#body), &|i| i == "return" || i == "break");
        let inner = self.sequence(&body.stmts);
        self.leaving_loop = outer;
        inner
    }

    /// A block-level piece of statements that hold warp collectives: run warp by warp.
    fn warp_code(&mut self, stmts: &[Stmt]) -> Option<TokenStream> {
        self.warp = true;
        let inner = self.pieces_code(stmts);
        self.warp = false;
        let inner = inner?;
        Some(quote! {
            for __w in 0..__n.div_ceil(32) {
                let __lo = __w * 32;
                // The warp's lanes that run the next statement.
                let mut __active = __blk.live_lanes(&__exited, __some_exited, __lo);
                if __active == 0 {
                    continue;
                }
                // The lanes that will return without meeting again.
                let __gone = 0u32;
                #inner
            }
        })
    }

    /// A `while` loop around warp collectives: its lanes loop until every lane has left.
    fn warp_while_code(&mut self, cond: &Expr, body: &Block) -> Option<TokenStream> {
        let holds = self.holds(quote!((#cond)));
        // Lanes that left the loop, where nothing after it meets.
        let left = (!self.tail_meets).then(|| quote!(| (__outer & !__active)));
        self.tail_meets |= meets_in(&body.stmts);
        let inner = self.loop_body(body)?;
        Some(quote! {
            let __outer = __active;
            // The lanes whose condition holds run the body; the others wait until
            // every lane has left the loop.
            loop {
                __active = #holds;
                if __active == 0 {
                    break;
                }
                let __gone = __gone #left;
                #inner
            }
            // Lanes that returned in the loop stay out.
            __active = __outer & __blk.live_lanes(&__exited, __some_exited, __lo);
        })
    }

    /// An `if` whose branches hold warp collectives: the lanes of each branch in turn.
    fn if_code(&mut self, cond: &Expr, then: &Block, other: Option<&Block>) -> Option<TokenStream> {
        // In a loop that lanes may leave, whose next round meets again, the lanes of one branch
        // may meet a collective of the other only once the others have run on, rounds later, to
        // their return: as on a GPU, only coroutines run them so. Not split.
        let branches_meet = meets_in(&then.stmts) || other.is_some_and(|b| meets_in(&b.stmts));
        if self.leaving_loop && self.tail_meets && branches_meet && !self.uniform.expr(cond) {
            return None;
        }
        let holds = self.holds(quote!((#cond)));
        // Where nothing after the `if` meets, the lanes of the other branch return
        // without meeting the collectives of this one.
        let (gone_then, gone_other) = match self.tail_meets {
            false => (
                quote!(| (__outer & !__holds)),
                quote!(| (__outer & __holds)),
            ),
            true => (TokenStream::new(), TokenStream::new()),
        };
        let then = self.sequence(&then.stmts)?;
        let other = match other {
            Some(b) => {
                let other = self.sequence(&b.stmts)?;
                quote! {
                    __active = __outer & !__holds
                        & __blk.live_lanes(&__exited, __some_exited, __lo);
                    if __active != 0 {
                        let __gone = __gone #gone_other;
                        #other
                    }
                }
            }
            None => TokenStream::new(),
        };
        Some(quote! {
            // The lanes whose condition holds run the first branch, then the others
            // the second.
            let __outer = __active;
            let __holds = #holds;
            __active = __holds;
            if __active != 0 {
                let __gone = __gone #gone_then;
                #then
            }
            #other
            __active = __outer & __blk.live_lanes(&__exited, __some_exited, __lo);
        })
    }

    /// The exchange of a warp collective: each active lane's result, from the operands the
    /// lanes saved, into the slots of the result's binding (when anything reads it).
    fn exchange(&mut self, x: &Exchange) -> Option<TokenStream> {
        let Some(Bind::Slot(operands)) = self.lookup(&x.operands.to_string()) else {
            return None;
        };
        let exchange =
            quote_spanned!(x.span=> __blk.exchange(__lo, __active, __gone, &__exited, &#operands));
        let result = &x.result;
        if self.counts.get(&result.to_string()).copied().unwrap_or(0) < 2 {
            return Some(quote!(#exchange;));
        }
        let slot = format_ident!("__slot{}", self.storage.len());
        self.storage.push(quote! {
            let mut #slot = ::kernel_runtime::__rt::Slots::new(__n);
        });
        self.scopes
            .last_mut()?
            .push((result.clone(), Bind::Slot(slot.clone())));
        Some(quote! {
            if let ::core::option::Option::Some(__values) = #exchange {
                for (__l, __value) in __values.into_iter().enumerate() {
                    if __active & 1 << __l != 0 {
                        // SAFETY: `__lo + __l`, an active lane, is a thread of the block.
                        unsafe { #slot.set(__lo + __l, __value) };
                    }
                }
            }
        })
    }

    /// The lanes of `__active` for which `cond` holds, as a mask.
    fn holds(&self, cond: TokenStream) -> TokenStream {
        let eval = self.evaluator(cond);
        quote!({
            #eval
            let mut __holds = 0u32;
            for __l in ::kernel_runtime::__rt::each_lane(__active) {
                if __eval(__lo + __l) {
                    __holds |= 1 << __l;
                }
            }
            __holds
        })
    }

    /// `let __eval = |__t| ..`: the value of `header` for thread `__t`.
    ///
    /// A header that cannot depend on the current thread (no call, macro or indexing, no
    /// rematerialized binding) is evaluated without making each thread the current one.
    fn evaluator(&self, header: TokenStream) -> TokenStream {
        let mut used = HashMap::new();
        count_idents(header.clone(), &mut used);
        let restores = self.restores(&used);
        let remat = self.visible().iter().any(|(name, bind)| {
            matches!(bind, Bind::Remat(_)) && used.contains_key(&name.to_string())
        });
        let enter = if remat || !private_expr(&header) {
            quote!(let __kctx = __blk.enter(__t);)
        } else {
            TokenStream::new()
        };
        quote! {
            // The header's value for thread `__t`.
            #[allow(unused_variables)]
            let __eval = |__t: usize| {
                #enter
                #restores
                #header
            };
        }
    }

    /// Evaluates `header` for every live thread into `__uniform`, checking they agree (the
    /// threads after the first are compared without a branch on the outcome); only once where
    /// it is made of uniform values (`once`), while any thread is live.
    fn uniform(&self, header: TokenStream, span: Span, once: bool) -> TokenStream {
        if once {
            let context = self.block_context(header.clone());
            return quote! {
                #context
                // SAFETY: `__t` is below the block's thread count, `__exited`'s length.
                let __uniform = (!__some_exited
                    || (0..__n).any(|__t| !unsafe { *__exited.get_unchecked(__t) }))
                .then(|| #header);
            };
        }
        let eval = self.evaluator(header);
        let loc = location(span);
        quote! {
            #eval
            // SAFETY: `__t` is below the block's thread count, `__exited`'s length.
            let __live = |__t: usize| !__some_exited || !unsafe { *__exited.get_unchecked(__t) };
            let mut __uniform = ::core::option::Option::None;
            if let ::core::option::Option::Some(__first) = (0..__n).find(|&__t| __live(__t)) {
                let __value = __eval(__first);
                // The first thread that disagrees, if any.
                let mut __other = __n;
                for __t in __first + 1..__n {
                    if __live(__t) {
                        let __differs = __eval(__t) != __value;
                        __other = if __differs && __other == __n { __t } else { __other };
                    }
                }
                if __other < __n {
                    __blk.nonuniform(__first, __other, #loc);
                }
                __uniform = ::core::option::Option::Some(__value);
            }
        }
    }

    /// What a block-level evaluation of uniform `code` needs first: the block's context where it
    /// reads it, and where it reads an array (which may fault), the first live thread made the
    /// current one, whom a fault report names (every thread would read the same element).
    fn block_context(&self, code: TokenStream) -> TokenStream {
        if mentions(code.clone(), &|id| self.uniform.is_read_only(id)) {
            quote! {
                // SAFETY: `__t` is below the block's thread count, `__exited`'s length.
                let __kctx = __blk.enter(
                    (0..__n)
                        .find(|&__t| !unsafe { *__exited.get_unchecked(__t) })
                        .unwrap_or(0),
                );
            }
        } else if mentions(code, &|id| id == "__kctx") {
            // The block's context: a uniform value reads no thread's coordinates.
            quote!(let __kctx = __blk.base().0;)
        } else {
            TokenStream::new()
        }
    }

    /// The code of a region: its statements that declare or assign uniform locals once, for
    /// the block (before the thread loop where no statement before them in the region reads
    /// what they write), the others in thread loops.
    fn segments(&mut self, stmts: &[&Stmt]) -> Option<TokenStream> {
        let mut out = TokenStream::new();
        let mut threads: Vec<&Stmt> = Vec::new();
        for &stmt in stmts {
            if !self.uniform.statement(stmt) {
                threads.push(stmt);
                continue;
            }
            let written = match stmt {
                Stmt::Local(l) => {
                    let mut names = Names(Vec::new());
                    names.visit_pat(&l.pat);
                    names.0.iter().map(|n| (n.to_string(), 1)).collect()
                }
                _ => Changes::of(std::slice::from_ref(stmt)).names,
            };
            // It waits for the thread statements before it that read what it writes, or that
            // may leave (after which it must not run, or fault, for threads that are gone).
            let waits = |s: &&Stmt| {
                mentions(quote!(#s), &|id: &proc_macro2::Ident| {
                    id == "return" || written.contains_key(&id.to_string())
                })
            };
            if threads.iter().any(waits) {
                let code = self.region(&threads)?;
                out.extend(quote!({ #code }));
                threads.clear();
            }
            out.extend(self.block_context(quote!(#stmt)));
            if let Stmt::Local(l) = stmt {
                let mut names = Names(Vec::new());
                names.visit_pat(&l.pat);
                for name in names.0 {
                    self.scopes.last_mut()?.push((name, Bind::Uniform));
                }
                out.extend(quote!(#[allow(unused_mut, unused_variables)] #stmt));
            } else {
                out.extend(quote!(#stmt));
            }
        }
        if !threads.is_empty() {
            let code = self.region(&threads)?;
            out.extend(quote!({ #code }));
        }
        Some(out)
    }

    fn region(&mut self, stmts: &[&Stmt]) -> Option<TokenStream> {
        let mut body = self.region_statements(stmts)?;
        let mut used = HashMap::new();
        for s in &body {
            count_idents(quote!(#s), &mut used);
        }
        let restores = self.restores(&used);
        let slots_here = self.bind_locals(&mut body, &used)?;
        let saves = self.saves(&body, &used, &slots_here);
        // Thread `__t` runs the region, in `__kctx`; what it gives says whether it returned.
        let thread = quote! {
            #restores
            #(#body)*
            #saves
            false
        };
        Some(match self.warp {
            true => warp_lanes(&quote!(let __gone = (|| -> bool { #thread })();)),
            false => self.thread_loops(&thread),
        })
    }

    /// The region's statements, items set aside; `None` where one leaves the region by `break`
    /// or `continue` (see [`RegionCheck`]).
    fn region_statements(&mut self, stmts: &[&Stmt]) -> Option<Vec<Stmt>> {
        let mut body = Vec::new();
        for stmt in stmts {
            if let Stmt::Item(_) = stmt {
                self.items.push((*stmt).clone());
                continue;
            }
            let mut stmt = (*stmt).clone();
            let mut check = RegionCheck { loops: 0, ok: true };
            check.visit_stmt_mut(&mut stmt);
            if !check.ok {
                return None;
            }
            body.push(stmt);
        }
        Some(body)
    }

    /// Binds the locals the region declares at its top level: rematerialized, kept in
    /// per-thread slots where other regions mention them, or in scope as they are. Returns the
    /// slots made here, by name, with their index in `storage`.
    fn bind_locals(
        &mut self,
        body: &mut [Stmt],
        used: &HashMap<String, usize>,
    ) -> Option<HashMap<String, usize>> {
        // Bindings this region declares at its top level get per-thread slots.
        let mut slots_here: HashMap<String, usize> = HashMap::new();
        for stmt in body.iter_mut() {
            if let Stmt::Local(local) = stmt {
                local.init.as_ref()?;
                let mut names = Names(Vec::new());
                names.visit_pat(&local.pat);
                // A binding shadowed in the region that declared it is never saved: its slot,
                // whose type nothing would fix, goes.
                for name in &names.0 {
                    if let Some(index) = slots_here.remove(&name.to_string()) {
                        self.storage[index] = TokenStream::new();
                    }
                }
                if let Some(deps) = self.rematerializable(local) {
                    // Later regions evaluate it again; this region may not use it.
                    local
                        .attrs
                        .push(syn::parse_quote!(#[allow(unused_variables, unused_mut)]));
                    let index = self.remat.len();
                    self.remat.push(Remat {
                        stmt: Stmt::Local(local.clone()),
                        deps,
                    });
                    for name in names.0 {
                        self.scopes.last_mut()?.push((name, Bind::Remat(index)));
                    }
                    continue;
                }
                // A `let mut` may only be mutated in a later region, through its restored copy.
                local.attrs.push(syn::parse_quote!(#[allow(unused_mut)]));
                for name in names.0 {
                    // Only a binding mentioned outside this region needs slots.
                    let key = name.to_string();
                    let here = used.get(&key).copied().unwrap_or(0);
                    let slot = (self.counts.get(&key).copied().unwrap_or(0) > here).then(|| {
                        let slot = format_ident!("__slot{}", self.storage.len());
                        slots_here.insert(key, self.storage.len());
                        self.storage.push(quote! {
                            let mut #slot = ::kernel_runtime::__rt::Slots::new(__n);
                        });
                        slot
                    });
                    let bind = slot.map_or(Bind::Uniform, Bind::Slot);
                    self.scopes.last_mut()?.push((name, bind));
                }
            }
        }
        Some(slots_here)
    }

    /// What the region saves at its end: the bindings it declares or may change that are
    /// mentioned elsewhere too. One it only reads keeps the value its slot holds.
    fn saves(
        &self,
        body: &[Stmt],
        used: &HashMap<String, usize>,
        slots_here: &HashMap<String, usize>,
    ) -> TokenStream {
        let changes = Changes::of(body);
        self.visible()
            .into_iter()
            .filter_map(|(name, bind)| {
                let key = name.to_string();
                let here = used.get(&key).copied().unwrap_or(0);
                let elsewhere = self.counts.get(&key).copied().unwrap_or(0) > here;
                let written = slots_here.contains_key(&key) || changes.may_change(&key);
                match bind {
                    Bind::Slot(slot) if here > 0 && elsewhere && written => Some((name, slot)),
                    _ => None,
                }
            })
            // SAFETY: `__t` is below the thread count.
            .map(|(name, slot)| quote!(unsafe { #slot.set(__t, #name) };))
            .collect()
    }

    /// The thread loops of a region over the whole block, `thread` their body (one thread,
    /// which gives whether it returned): the runtime's `BlockRun::region`, which runs a launch
    /// of the block shape the kernel hints with constant bounds.
    fn thread_loops(&self, thread: &TokenStream) -> TokenStream {
        let (x, y, z) = self
            .hint
            .clone()
            .unwrap_or_else(|| (quote!(0u32), quote!(0u32), quote!(0u32)));
        quote! {
            let __hint: (u32, u32, u32) = (#x, #y, #z);
            let __run = ::kernel_runtime::__rt::body(
                #[inline(always)]
                |__kctx: ::kernel_runtime::__rt::Ctx, __t: usize| -> bool { #thread },
            );
            // Once every thread has left, nothing more of the block runs: not even its
            // uniform statements, which no thread would have reached.
            if __blk.region(__hint, &mut __exited, &mut __some_exited, __run) {
                return;
            }
        }
    }
}

/// A region run by the warp's active lanes, one after another, `run_thread` for each.
fn warp_lanes(run_thread: &TokenStream) -> TokenStream {
    quote! {
                #[allow(unused_variables)]
                let (__base, __track) = __blk.base();
                for __l in ::kernel_runtime::__rt::each_lane(__active) {
                    let __t = __lo + __l;
                    let __c = __blk.coord(__t);
                    #[allow(unused_variables)]
                    let __kctx =
                        ::kernel_runtime::__rt::enter_thread(__base, __track, __c.x, __c.y, __c.z);
                    #run_thread
                    if __gone {
                        // SAFETY: `__t` is below the block's thread count, `__exited`'s length.
                        unsafe { *__exited.get_unchecked_mut(__t) = true };
                        __active &= !(1 << __l);
                        __some_exited = true;
                    }
                }
    }
}

/// `unsafe { ::kernel_runtime::__rt::shared_array1(..) }` (see [`SHARED_ARRAYS`]).
fn shared_array_call(e: &Expr) -> bool {
    let Expr::Unsafe(u) = e else { return false };
    let [Stmt::Expr(Expr::Call(c), None)] = u.block.stmts.as_slice() else {
        return false;
    };
    runtime_fn(&c.func).is_some_and(|f| SHARED_ARRAYS.contains(&f.as_str()))
}

/// The name of the function `func` is when it is a path `::kernel_runtime::...::name`.
fn runtime_fn(func: &Expr) -> Option<String> {
    let Expr::Path(f) = func else { return None };
    let path = &f.path;
    let first = path.segments.first()?;
    (path.leading_colon.is_some() && first.ident == "kernel_runtime")
        .then(|| path.segments.last().map(|s| s.ident.to_string()))
        .flatten()
}

/// Collects the names assigned to as a whole or borrowed mutably.
struct Reassigned(Vec<String>);
impl<'ast> Visit<'ast> for Reassigned {
    fn visit_expr(&mut self, e: &'ast Expr) {
        let target = match e {
            Expr::Assign(a) => Some(&*a.left),
            Expr::Binary(b) if assigns(&b.op) => Some(&*b.left),
            Expr::Reference(r) if r.mutability.is_some() => Some(&*r.expr),
            _ => None,
        };
        if let Some(Expr::Path(p)) = target {
            if let Some(id) = p.path.get_ident() {
                self.0.push(id.to_string());
            }
        }
        syn::visit::visit_expr(self, e);
    }
}

fn location(span: Span) -> TokenStream {
    quote_spanned!(span=> ::core::concat!(::core::file!(), ":", ::core::line!(), ":", ::core::column!()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of `body` as `R<n>` (a region of `n` statements), `B`, `For` and `While`.
    fn shape(body: &Block) -> Vec<String> {
        pieces(&body.stmts, false)
            .unwrap()
            .iter()
            .map(|p| match p {
                Piece::Region(stmts) => format!("R{}", stmts.len()),
                Piece::Barrier(_, Wait::Block) => "B".into(),
                Piece::Barrier(_, Wait::Grid) => "G".into(),
                Piece::For { .. } => "For".into(),
                Piece::While { .. } => "While".into(),
                Piece::Warp(stmts) => format!("W{}", stmts.len()),
                Piece::Exchange(x) => format!("X {}", x.operands),
                Piece::If { .. } => "If".into(),
            })
            .collect()
    }

    #[test]
    fn private_statements_after_a_barrier_join_the_region_before_it() {
        let body: Block = syn::parse_quote!({
            s[t] = x;
            sync_threads();
            stride /= 2;
            let mut k = stride * 2;
            for i in 0..3 {
                k += i;
            }
        });
        assert_eq!(shape(&body), ["R4", "B"]);
        // Nothing to join: a barrier first, or after a loop.
        let body: Block = syn::parse_quote!({
            sync_threads();
            stride /= 2;
        });
        assert_eq!(shape(&body), ["B", "R1"]);
        let body: Block = syn::parse_quote!({
            while stride > 0 {
                sync_threads();
            }
            sync_threads();
            stride /= 2;
        });
        assert_eq!(shape(&body), ["While", "B", "R1"]);
    }

    #[test]
    fn statements_that_touch_memory_or_leave_stay_after_the_barrier() {
        for stmt in [
            quote!(y = s[t];),
            quote!(y = f(t);),
            quote!(y = x.len();),
            quote!(y = unsafe { *p };),
            quote!(println!("{}", t);),
            quote!(if t == 0 {
                return;
            }),
            quote!(for v in xs {
                y += v;
            }),
            quote!(let Some(v) = o else { return };),
        ] {
            let body: Block = syn::parse_quote!({
                s[t] = x;
                sync_threads();
                #stmt
            });
            assert_eq!(shape(&body), ["R1", "B", "R1"], "{stmt}");
        }
    }
}
