//! Warp collectives in a split kernel: each becomes an exchange between two thread loops.
//!
//! Before splitting, every collective call is hoisted out of its statement:
//!
//! ```text
//! v += shfl_xor_sync(FULL, v, offset);
//! ```
//!
//! becomes the operands, evaluated by each lane in a thread loop, the exchange, which the
//! splitter turns into a step of its own between thread loops, and the statement, which reads
//! the lane's result:
//!
//! ```text
//! let __wargs0 = ::kernel_runtime::__rt::operands::shfl_xor_sync(FULL, v, offset);
//! __kernel_exchange!(__wargs0, __wres0);
//! v += __wres0;
//! ```
//!
//! A collective is hoisted only where hoisting keeps the statement's meaning: nothing that
//! calls a function or writes is evaluated before it in its statement, a read of memory only
//! where the collective's operands are plain locals (the read then sees the same memory after
//! the exchange, in a program without races), and it is not in a branch of an expression, a
//! closure or a macro. Statements that hold collectives keep
//! their shape: an `if` statement's branches are hoisted each on its own (the splitter runs
//! each with the lanes that take it), a `while` loop whose condition calls a collective
//! evaluates the condition into a local before the loop and again at the end of its body, and
//! a `for` loop over a range becomes a `while` loop, so that lanes may leave it at different
//! times. Statements of any other shape leave the kernel to the coroutines.

use crate::syntax::{assigns, mentions, mentions_sync, private_expr, pure_method};
use crate::vocab::WARP_COLLECTIVES;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, Pat, RangeLimits, Stmt};

/// The marker statement of an exchange.
const MARKER: &str = "__kernel_exchange";

/// An exchange: the binding of its operands (which name the collective) and that of its
/// result.
pub struct Exchange {
    pub operands: syn::Ident,
    pub result: syn::Ident,
    pub span: Span,
}

/// `stmts` with every collective hoisted into an exchange, or `None` when one cannot be.
pub fn hoist(stmts: &[Stmt]) -> Option<Vec<Stmt>> {
    Hoister { next: 0 }.sequence(stmts)
}

/// Whether `tokens` call a collective (`activemask` included).
pub fn mentions_collective(tokens: TokenStream) -> bool {
    mentions(tokens, &|i| {
        WARP_COLLECTIVES.contains(&i.to_string().as_str())
    })
}

/// Whether `tokens` hold an exchange marker.
pub fn mentions_exchange(tokens: TokenStream) -> bool {
    mentions(tokens, &|i| i == MARKER)
}

/// The exchange `stmt` marks, if it is a marker.
pub fn exchange(stmt: &Stmt) -> Option<Exchange> {
    let Stmt::Macro(m) = stmt else { return None };
    if !m.mac.path.is_ident(MARKER) {
        return None;
    }
    let parser = syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated;
    let idents: Vec<_> = m.mac.parse_body_with(parser).ok()?.into_iter().collect();
    let [operands, result] = idents.as_slice() else {
        return None;
    };
    Some(Exchange {
        operands: operands.clone(),
        result: result.clone(),
        span: operands.span(),
    })
}

/// Every collective call in `block` (`activemask()` aside) as its operands met at once:
/// `NAME(args)` becomes `::kernel_runtime::__rt::operands::NAME(args).meet()`, the form the
/// checked (coroutine) version of a split kernel calls, so that a misuse of a collective reads
/// the same in both versions and is reported once.
pub fn meet_operands(block: &mut syn::Block) {
    struct Calls;
    impl syn::visit_mut::VisitMut for Calls {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            syn::visit_mut::visit_expr_mut(self, e);
            if let Expr::Call(c) = e {
                if let Some(op) = collective(c) {
                    let span = c.span();
                    let op = format_ident!("{}", op, span = span);
                    let args = &c.args;
                    *e = syn::parse_quote_spanned!(span=>
                        ::kernel_runtime::__rt::operands::#op(#args).meet()
                    );
                }
            }
        }
    }
    syn::visit_mut::VisitMut::visit_block_mut(&mut Calls, block);
}

struct Hoister {
    /// The number of the next exchange, loop or condition.
    next: usize,
}

impl Hoister {
    /// A number for the names of one exchange or loop.
    fn number(&mut self) -> usize {
        self.next += 1;
        self.next - 1
    }

    fn sequence(&mut self, stmts: &[Stmt]) -> Option<Vec<Stmt>> {
        let mut out = Vec::new();
        for stmt in stmts {
            if !mentions_collective(quote!(#stmt)) {
                out.push(stmt.clone());
                continue;
            }
            match stmt {
                Stmt::Expr(Expr::ForLoop(f), semi) if f.label.is_none() => {
                    let header = &f.expr;
                    if mentions_collective(quote!(#header)) {
                        return None;
                    }
                    let body = self.sequence(&f.body.stmts)?;
                    if mentions_sync(quote!(#stmt)) {
                        // A loop holding a barrier runs once per block, as it is.
                        let mut f = f.clone();
                        f.body.stmts = body;
                        out.push(Stmt::Expr(Expr::ForLoop(f), *semi));
                    } else {
                        out.extend(self.for_as_while(f, body)?);
                    }
                }
                Stmt::Expr(Expr::While(w), semi) if w.label.is_none() => {
                    let mut body = self.sequence(&w.body.stmts)?;
                    let mut w = w.clone();
                    let cond = &*w.cond;
                    if mentions_collective(quote!(#cond)) {
                        if matches!(cond, Expr::Let(_)) || mentions_sync(quote!(#w)) {
                            return None;
                        }
                        let c = format_ident!("__while{}", self.number(), span = cond.span());
                        let first: Stmt = syn::parse_quote_spanned!(cond.span()=>
                            let mut #c: bool = #cond;
                        );
                        let again: Stmt = syn::parse_quote_spanned!(cond.span()=> #c = #cond;);
                        out.extend(self.sequence(&[first])?);
                        body.extend(self.sequence(&[again])?);
                        w.cond = Box::new(syn::parse_quote!(#c));
                    }
                    w.body.stmts = body;
                    out.push(Stmt::Expr(Expr::While(w), *semi));
                }
                Stmt::Expr(Expr::If(i), semi) if branches_mention_collective(i) => {
                    out.extend(self.branches(i, *semi)?);
                }
                _ => out.extend(self.statement(stmt)?),
            }
        }
        Some(out)
    }

    /// An `if` statement whose branches call collectives, with them hoisted in each branch (an
    /// `else if` becomes an `else` holding the next `if`) and a condition that calls one
    /// evaluated into a local first.
    fn branches(&mut self, i: &syn::ExprIf, semi: Option<syn::Token![;]>) -> Option<Vec<Stmt>> {
        let mut i = i.clone();
        let mut out = Vec::new();
        let cond = &*i.cond;
        if matches!(cond, Expr::Let(_)) || mentions_sync(quote!(#i)) {
            return None;
        }
        if mentions_collective(quote!(#cond)) {
            let c = format_ident!("__if{}", self.number(), span = cond.span());
            let first: Stmt = syn::parse_quote_spanned!(cond.span()=> let #c: bool = #cond;);
            out.extend(self.sequence(&[first])?);
            i.cond = Box::new(syn::parse_quote!(#c));
        }
        i.then_branch.stmts = self.sequence(&i.then_branch.stmts)?;
        if let Some((_, other)) = &mut i.else_branch {
            let stmts = match &**other {
                Expr::Block(b) if b.label.is_none() => b.block.stmts.clone(),
                Expr::If(_) => vec![Stmt::Expr((**other).clone(), None)],
                _ => return None,
            };
            let stmts = self.sequence(&stmts)?;
            **other = syn::parse_quote!({ #(#stmts)* });
        }
        out.push(Stmt::Expr(Expr::If(i), semi));
        Some(out)
    }

    /// `for v in start..end { body }` as `let mut i = start; let e = end; while i < e { let v
    /// = i; i += 1; body }` (the splitter refuses a `continue` that would skip the step).
    fn for_as_while(&mut self, f: &syn::ExprForLoop, body: Vec<Stmt>) -> Option<Vec<Stmt>> {
        let Pat::Ident(pi) = &*f.pat else { return None };
        let Expr::Range(r) = &*f.expr else {
            return None;
        };
        let (Some(start), Some(end), RangeLimits::HalfOpen(_)) = (&r.start, &r.end, &r.limits)
        else {
            return None;
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() {
            return None;
        }
        let span = f.for_token.span;
        let k = self.number();
        let (i, e) = (
            format_ident!("__for{k}", span = span),
            format_ident!("__end{k}", span = span),
        );
        let var = &pi.ident;
        let mutability = &pi.mutability;
        Some(vec![
            syn::parse_quote_spanned!(span=> let mut #i = #start;),
            syn::parse_quote_spanned!(span=> let #e = #end;),
            syn::parse_quote_spanned!(span=> while #i < #e {
                let #mutability #var = #i;
                #i += 1;
                #(#body)*
            }),
        ])
    }

    /// The statements of `stmt` with its collectives hoisted.
    fn statement(&mut self, stmt: &Stmt) -> Option<Vec<Stmt>> {
        let mut stmt = stmt.clone();
        let mut walk = Walk {
            hoister: self,
            found: Vec::new(),
            impure: false,
            reads: false,
            ok: true,
        };
        match &mut stmt {
            Stmt::Local(l) => {
                let init = l.init.as_mut()?;
                walk.expr(&mut init.expr);
            }
            Stmt::Expr(e, _) => walk.expr(e),
            _ => return None,
        }
        let (found, ok) = (walk.found, walk.ok);
        if !ok || mentions_collective(quote!(#stmt)) {
            return None;
        }
        // A collective alone as a statement (`syncwarp(FULL);`) leaves nothing after it.
        let bare = match (&stmt, found.last()) {
            (Stmt::Expr(Expr::Path(p), Some(_)), Some((_, _, k, _))) => {
                p.path.is_ident(&format_ident!("__wres{k}"))
            }
            _ => false,
        };
        let mut out = Vec::new();
        for (op, args, k, span) in found {
            let operands = format_ident!("__wargs{k}", span = span);
            let result = format_ident!("__wres{k}", span = span);
            let path = quote_spanned!(span=> ::kernel_runtime::__rt::operands::#op);
            out.push(syn::parse_quote_spanned!(span=> let #operands = #path(#args);));
            out.push(syn::parse_quote_spanned!(span=> __kernel_exchange!(#operands, #result);));
        }
        if !bare {
            out.push(stmt);
        }
        Some(out)
    }
}

/// A hoisted collective: its name, arguments, number and span.
type Found = (syn::Ident, TokenStream, usize, Span);

/// Walks an expression in evaluation order, replacing each collective call with its result.
struct Walk<'a> {
    hoister: &'a mut Hoister,
    found: Vec<Found>,
    /// Whether something evaluated so far calls a function, writes or leaves: a collective
    /// after it cannot be hoisted above it.
    impure: bool,
    /// Whether something evaluated so far reads memory (`s[i]`, `*p`): a collective after it is
    /// hoisted above it only where its operands read nothing but locals, so that the read sees
    /// the same memory either way in a program without races.
    reads: bool,
    ok: bool,
}

impl Walk<'_> {
    fn expr(&mut self, e: &mut Expr) {
        match e {
            Expr::Call(c) => {
                let Some(op) = collective(c) else {
                    self.expr(&mut c.func);
                    for a in c.args.iter_mut() {
                        self.expr(a);
                    }
                    self.impure = true;
                    return;
                };
                let private = || c.args.iter().all(|a| private_expr(&quote!(#a)));
                if self.impure || self.reads && !private() {
                    self.ok = false;
                    return;
                }
                for a in c.args.iter_mut() {
                    if mutates(a) {
                        self.ok = false;
                    }
                    self.expr(a);
                }
                // The operands are evaluated just before the exchange, in order: what they
                // read or call does not keep a later collective from being hoisted.
                (self.impure, self.reads) = (false, false);
                let span = c.span();
                let k = self.hoister.number();
                let result = format_ident!("__wres{k}", span = span);
                let args = &c.args;
                let op = format_ident!("{}", op, span = span);
                self.found.push((op, quote!(#args), k, span));
                *e = syn::parse_quote_spanned!(span=> #result);
            }
            Expr::MethodCall(m) => {
                self.expr(&mut m.receiver);
                for a in m.args.iter_mut() {
                    self.expr(a);
                }
                // The thread's coordinates and numbers' methods change nothing.
                self.impure |= !pure_method(&m.method);
            }
            Expr::Index(i) => {
                self.expr(&mut i.expr);
                self.expr(&mut i.index);
                self.reads = true;
            }
            Expr::Binary(b) => match b.op {
                syn::BinOp::And(_) | syn::BinOp::Or(_) => {
                    self.expr(&mut b.left);
                    self.opaque(&b.right);
                }
                // An assignment evaluates its right side first (for the primitive types
                // kernels compute with).
                op if assigns(&op) => {
                    self.expr(&mut b.right);
                    self.expr(&mut b.left);
                }
                _ => {
                    self.expr(&mut b.left);
                    self.expr(&mut b.right);
                }
            },
            Expr::Assign(a) => {
                self.expr(&mut a.right);
                self.expr(&mut a.left);
            }
            Expr::Unary(u) => {
                self.expr(&mut u.expr);
                if matches!(u.op, syn::UnOp::Deref(_)) {
                    self.reads = true;
                }
            }
            Expr::Reference(r) => {
                self.expr(&mut r.expr);
                if r.mutability.is_some() {
                    self.impure = true;
                }
            }
            Expr::Cast(c) => self.expr(&mut c.expr),
            Expr::Paren(p) => self.expr(&mut p.expr),
            Expr::Group(g) => self.expr(&mut g.expr),
            Expr::Field(f) => self.expr(&mut f.base),
            Expr::Tuple(t) => t.elems.iter_mut().for_each(|e| self.expr(e)),
            Expr::Array(a) => a.elems.iter_mut().for_each(|e| self.expr(e)),
            Expr::Repeat(r) => self.expr(&mut r.expr),
            Expr::Range(r) => {
                if let Some(s) = r.start.as_mut() {
                    self.expr(s);
                }
                if let Some(s) = r.end.as_mut() {
                    self.expr(s);
                }
            }
            Expr::Struct(s) => s.fields.iter_mut().for_each(|f| self.expr(&mut f.expr)),
            Expr::If(i) => {
                self.expr(&mut i.cond);
                self.opaque(&i.then_branch);
                if let Some((_, other)) = &i.else_branch {
                    self.opaque(other);
                }
            }
            Expr::Match(m) => {
                self.expr(&mut m.expr);
                for arm in &m.arms {
                    if let Some((_, guard)) = &arm.guard {
                        self.opaque(guard);
                    }
                    self.opaque(&arm.body);
                }
            }
            Expr::Lit(_) | Expr::Path(_) => {}
            other => self.opaque(&*other),
        }
    }

    /// Code not walked into (a branch, a closure, a block): any collective in it stays, which
    /// fails the statement; anything but plain computation on locals makes it impure.
    fn opaque(&mut self, code: &dyn quote::ToTokens) {
        let tokens = code.to_token_stream();
        let pure = syn::parse2::<Expr>(tokens.clone()).is_ok_and(|e| private_expr(&quote!(#e)));
        if !pure {
            self.impure = true;
        }
    }
}

/// Whether the branches of `i` (not its condition) call a collective.
fn branches_mention_collective(i: &syn::ExprIf) -> bool {
    let then = &i.then_branch;
    let other = i.else_branch.as_ref().map(|(_, e)| e);
    mentions_collective(quote!(#then #other))
}

/// The collective `c` calls, if it calls one (`shfl_sync(..)`, `warp::shfl_sync(..)`).
fn collective(c: &syn::ExprCall) -> Option<String> {
    let Expr::Path(p) = &*c.func else { return None };
    // `activemask()` is not hoisted: it asks which lanes have returned.
    let name = p.path.segments.last()?.ident.to_string();
    (name != "activemask" && WARP_COLLECTIVES.contains(&name.as_str())).then_some(name)
}

/// Whether `e` assigns or borrows mutably: as a collective's operand it could change what the
/// rest of its statement reads.
fn mutates(e: &Expr) -> bool {
    struct Mutates(bool);
    impl<'ast> Visit<'ast> for Mutates {
        fn visit_expr(&mut self, e: &'ast Expr) {
            self.0 |= match e {
                Expr::Assign(_) => true,
                Expr::Binary(b) => assigns(&b.op),
                Expr::Reference(r) => r.mutability.is_some(),
                _ => false,
            };
            syn::visit::visit_expr(self, e);
        }
    }
    let mut m = Mutates(false);
    m.visit_expr(e);
    m.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statements `body` hoists into, as strings, or `None`.
    fn hoisted(body: syn::Block) -> Option<Vec<String>> {
        let stmts = hoist(&body.stmts)?;
        Some(stmts.iter().map(|s| quote!(#s).to_string()).collect())
    }

    #[test]
    fn a_collective_becomes_operands_an_exchange_and_its_result() {
        let out = hoisted(syn::parse_quote!({
            v += shfl_xor_sync(FULL, v, offset);
        }))
        .unwrap();
        assert_eq!(
            out,
            [
                "let __wargs0 = :: kernel_runtime :: __rt :: operands :: shfl_xor_sync (FULL , v , offset) ;",
                "__kernel_exchange ! (__wargs0 , __wres0) ;",
                "v += __wres0 ;",
            ]
        );
        let x = exchange(&syn::parse_str(&out[1]).unwrap()).unwrap();
        assert_eq!(
            (x.operands.to_string(), x.result.to_string()),
            ("__wargs0".into(), "__wres0".into())
        );
        // Alone as a statement, a collective leaves nothing after its exchange.
        let out = hoisted(syn::parse_quote!({
            syncwarp(FULL);
        }))
        .unwrap();
        assert_eq!(out.len(), 2);
        // Nested collectives go in the order they are evaluated.
        let out = hoisted(syn::parse_quote!({
            let y = shfl_sync(FULL, shfl_up_sync(FULL, v, 1), 0) + x[i];
        }))
        .unwrap();
        assert!(out[0].contains("shfl_up_sync (FULL , v , 1)"), "{out:?}");
        assert!(out[1].contains("(__wargs0 , __wres0)"), "{out:?}");
        assert!(out[2].contains("shfl_sync (FULL , __wres0 , 0)"), "{out:?}");
        assert_eq!(out[4], "let y = __wres1 + x [i] ;");
        // A read before a collective whose operands are locals: in a program without races,
        // the read sees the same memory after the exchange.
        let out = hoisted(syn::parse_quote!({
            v = s[(t + 1) % __kctx.block_dim().x] + shfl_xor_sync(FULL, v, 1);
        }))
        .unwrap();
        assert_eq!(
            out[2],
            "v = s [(t + 1) % __kctx . block_dim () . x] + __wres0 ;"
        );
    }

    #[test]
    fn loops_around_collectives_become_while_loops() {
        let out = hoisted(syn::parse_quote!({
            for k in 0..5 {
                t += shfl_xor_sync(FULL, t, 1 << k);
            }
        }))
        .unwrap();
        assert_eq!(out[0], "let mut __for1 = 0 ;");
        assert_eq!(out[1], "let __end1 = 5 ;");
        assert!(out[2].starts_with("while __for1 < __end1 { let k = __for1 ; __for1 += 1 ;"));
        // A condition with a collective is evaluated before the loop and at the end of its
        // body.
        let out = hoisted(syn::parse_quote!({
            while any_sync(FULL, x > 0) {
                x -= 1;
            }
        }))
        .unwrap();
        assert_eq!(out[2], "let mut __while0 : bool = __wres1 ;");
        assert!(out[3].starts_with("while __while0 { x -= 1 ;"), "{out:?}");
        assert!(out[3].ends_with("__while0 = __wres2 ; }"), "{out:?}");
        // A loop holding a barrier stays a `for` loop, run once per block.
        let out = hoisted(syn::parse_quote!({
            for k in 0..5 {
                v += shfl_down_sync(FULL, v, 1);
                sync_threads();
            }
        }))
        .unwrap();
        assert!(out[0].starts_with("for k in 0 .. 5"), "{out:?}");
    }

    #[test]
    fn branches_around_collectives_keep_their_shape() {
        let out = hoisted(syn::parse_quote!({
            if any_sync(FULL, lane < 16) {
                v = shfl_sync(FULL, v, 0);
            } else if lane < 24 {
                syncwarp(0x00ff_0000);
            }
        }))
        .unwrap();
        assert_eq!(out[2], "let __if0 : bool = __wres1 ;");
        let branch = &out[3];
        assert!(branch.starts_with("if __if0 { let __wargs2"), "{branch}");
        assert!(
            branch.contains("} else { if lane < 24 { let __wargs3"),
            "{branch}"
        );
        // A condition alone with a collective is hoisted as any statement's.
        let out = hoisted(syn::parse_quote!({
            if any_sync(FULL, p) {
                x[i] = 1;
            }
        }))
        .unwrap();
        assert_eq!(out[2], "if __wres0 { x [i] = 1 ; }");
    }

    #[test]
    fn collectives_that_cannot_be_hoisted_leave_the_kernel_to_coroutines() {
        for stmt in [
            // After a read, with operands that read memory or call functions, which it would
            // evaluate before the read.
            quote!(let y = x[i] + shfl_sync(FULL, s[j], 0);),
            quote!(let y = x[i] + shfl_sync(FULL, g(v), 0);),
            quote!(let y = f(v) * ballot_sync(FULL, p);),
            // Evaluated only sometimes, in an expression.
            quote!(let y = if lane == 0 { shfl_sync(FULL, v, 0) } else { v };),
            quote!(if let Some(w) = o {
                v = shfl_sync(FULL, w, 0);
            }),
            quote!(let b = p && any_sync(FULL, q);),
            quote!(let y = match k { 0 => shfl_sync(FULL, v, 0), _ => v };),
            quote!(let g = || shfl_sync(FULL, v, 0);),
            // In a macro.
            quote!(println!("{}", shfl_sync(FULL, v, 0));),
            // An operand that writes what the statement reads.
            quote!(let y = shfl_sync(FULL, { v += 1; v }, 0);),
            // A loop over anything but a range.
            quote!(for o in [16, 8, 4, 2, 1] {
                v += shfl_xor_sync(FULL, v, o);
            }),
        ] {
            let body: syn::Block = syn::parse_quote!({ #stmt });
            assert!(hoisted(body).is_none(), "{stmt}");
        }
    }
}
