//! Barrier splitting, for the CPU backend: a kernel body whose `sync_threads();` statements sit
//! at its top level or at the top level of `for`/`while` loops becomes a sequence of thread
//! loops, one per region between barriers.
//!
//! Locals that live across a barrier are kept per thread (restored at the start of a region,
//! saved at its end); a loop that holds a barrier is run once per block after checking that every
//! thread agrees on its bounds or condition, so a divergent barrier is still reported. Bodies of
//! any other shape (barriers in branches, `sync_threads_count`, `break` out of a split loop, ...)
//! are not split: the CPU backend then runs their threads as coroutines.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Pat, RangeLimits, Stmt};

/// The block-level body for `run_split`, or `None` when the body's shape does not allow it.
pub fn split(block: &Block) -> Option<TokenStream> {
    let mut counts = HashMap::new();
    count_idents(quote!(#block), &mut counts);
    let mut s = Splitter {
        counts,
        scopes: Vec::new(),
        storage: Vec::new(),
        items: Vec::new(),
    };
    let code = s.sequence(&block.stmts)?;
    let (storage, items) = (&s.storage, &s.items);
    Some(quote! {
        #(#items)*
        let __n = __blk.threads();
        let mut __exited = ::kernel_runtime::__rt::flags(__n);
        #(#storage)*
        #code
    })
}

fn count_idents(tokens: TokenStream, counts: &mut HashMap<String, usize>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => *counts.entry(i.to_string()).or_default() += 1,
            TokenTree::Group(g) => count_idents(g.stream(), counts),
            _ => {}
        }
    }
}

fn mentions_sync(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i.to_string().starts_with("sync_threads"),
        TokenTree::Group(g) => mentions_sync(g.stream()),
        _ => false,
    })
}

/// `sync_threads();` as a statement: the span of the call.
fn barrier(stmt: &Stmt) -> Option<Span> {
    let Stmt::Expr(Expr::Call(call), _) = stmt else {
        return None;
    };
    let Expr::Path(p) = &*call.func else {
        return None;
    };
    let last = p.path.segments.last()?;
    (last.ident == "sync_threads" && call.args.is_empty()).then(|| call.span())
}

enum Piece<'a> {
    Region(Vec<&'a Stmt>),
    Barrier(Span),
    For {
        var: &'a syn::Ident,
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
}

fn pieces(stmts: &[Stmt]) -> Option<Vec<Piece<'_>>> {
    let mut out = Vec::new();
    let mut region = Vec::new();
    for stmt in stmts {
        if !mentions_sync(quote!(#stmt)) {
            region.push(stmt);
            continue;
        }
        if !region.is_empty() {
            out.push(Piece::Region(std::mem::take(&mut region)));
        }
        if let Some(span) = barrier(stmt) {
            out.push(Piece::Barrier(span));
            continue;
        }
        match stmt {
            Stmt::Expr(Expr::ForLoop(f), _) if f.label.is_none() => {
                let Pat::Ident(pi) = &*f.pat else { return None };
                let Expr::Range(r) = &*f.expr else {
                    return None;
                };
                let (Some(start), Some(end), RangeLimits::HalfOpen(_)) =
                    (&r.start, &r.end, &r.limits)
                else {
                    return None;
                };
                if pi.by_ref.is_some() || pi.subpat.is_some() || mentions_sync(quote!(#r)) {
                    return None;
                }
                out.push(Piece::For {
                    var: &pi.ident,
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
    if !region.is_empty() {
        out.push(Piece::Region(region));
    }
    Some(out)
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
    /// How often each identifier occurs in the whole body.
    counts: HashMap<String, usize>,
    /// Bindings in scope: name, and its per-thread slots (`None` for a uniform loop variable).
    scopes: Vec<Vec<(syn::Ident, Option<syn::Ident>)>>,
    storage: Vec<TokenStream>,
    items: Vec<Stmt>,
}

impl Splitter {
    fn visible(&self) -> Vec<(syn::Ident, syn::Ident)> {
        let mut seen: HashMap<String, Option<syn::Ident>> = HashMap::new();
        let mut out = Vec::new();
        for scope in self.scopes.iter().rev() {
            for (name, slot) in scope.iter().rev() {
                let key = name.to_string();
                if seen.contains_key(&key) {
                    continue;
                }
                seen.insert(key, slot.clone());
                if let Some(slot) = slot {
                    out.push((name.clone(), slot.clone()));
                }
            }
        }
        out
    }

    fn restores(&self, used: &HashMap<String, usize>) -> TokenStream {
        self.visible()
            .into_iter()
            .filter(|(name, _)| used.contains_key(&name.to_string()))
            .map(|(name, slot)| {
                quote! {
                    #[allow(unused_mut, unused_variables)]
                    let mut #name = ::kernel_runtime::__rt::restore(&#slot[__t]);
                }
            })
            .collect()
    }

    fn sequence(&mut self, stmts: &[Stmt]) -> Option<TokenStream> {
        let pieces = pieces(stmts)?;
        self.scopes.push(Vec::new());
        let mut out = TokenStream::new();
        for piece in pieces {
            let code = match piece {
                Piece::Region(stmts) => self.region(&stmts)?,
                Piece::Barrier(span) => {
                    let loc = location(span);
                    quote!(__blk.barrier(&__exited, #loc);)
                }
                Piece::For {
                    var,
                    start,
                    end,
                    body,
                    span,
                } => {
                    let header = quote!((#start, #end));
                    let check = self.uniform(header, span);
                    self.scopes.push(vec![(var.clone(), None)]);
                    let inner = self.sequence(&body.stmts);
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
                Piece::While { cond, body, span } => {
                    let check = self.uniform(quote!((#cond)), span);
                    let inner = self.sequence(&body.stmts)?;
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
        self.scopes.pop();
        Some(out)
    }

    /// Evaluates `header` for every live thread into `__uniform`, checking they agree.
    fn uniform(&self, header: TokenStream, span: Span) -> TokenStream {
        let mut used = HashMap::new();
        count_idents(header.clone(), &mut used);
        let restores = self.restores(&used);
        let loc = location(span);
        quote! {
            let mut __uniform = ::core::option::Option::None;
            let mut __first = 0usize;
            for __t in 0..__n {
                if __exited[__t] {
                    continue;
                }
                #[allow(unused_variables)]
                let __kctx = __blk.enter(__t);
                let __value = (|| { #restores #header })();
                match &__uniform {
                    ::core::option::Option::None => {
                        __uniform = ::core::option::Option::Some(__value);
                        __first = __t;
                    }
                    ::core::option::Option::Some(v) => {
                        if *v != __value {
                            __blk.nonuniform(__first, __t, #loc);
                        }
                    }
                }
            }
        }
    }

    fn region(&mut self, stmts: &[&Stmt]) -> Option<TokenStream> {
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
        let mut used = HashMap::new();
        for s in &body {
            count_idents(quote!(#s), &mut used);
        }
        let restores = self.restores(&used);
        // Bindings this region declares at its top level get per-thread slots.
        for stmt in &mut body {
            if let Stmt::Local(local) = stmt {
                local.init.as_ref()?;
                // A `let mut` may only be mutated in a later region, through its restored copy.
                local.attrs.push(syn::parse_quote!(#[allow(unused_mut)]));
                let mut names = Names(Vec::new());
                names.visit_pat(&local.pat);
                for name in names.0 {
                    // Only a binding mentioned outside this region needs slots.
                    let key = name.to_string();
                    let here = used.get(&key).copied().unwrap_or(0);
                    let slot = (self.counts.get(&key).copied().unwrap_or(0) > here).then(|| {
                        let slot = format_ident!("__slot{}", self.storage.len());
                        self.storage.push(quote! {
                            let mut #slot = ::kernel_runtime::__rt::slots(__n);
                        });
                        slot
                    });
                    self.scopes.last_mut()?.push((name, slot));
                }
            }
        }
        // Saved: the bindings this region mentions that are mentioned elsewhere too.
        let saves: TokenStream = self
            .visible()
            .into_iter()
            .filter(|(name, _)| {
                let key = name.to_string();
                let here = used.get(&key).copied().unwrap_or(0);
                here > 0 && self.counts.get(&key).copied().unwrap_or(0) > here
            })
            .map(|(name, slot)| quote!(#slot[__t] = ::core::option::Option::Some(#name);))
            .collect();
        Some(quote! {
            for __t in 0..__n {
                if __exited[__t] {
                    continue;
                }
                #[allow(unused_variables)]
                let __kctx = __blk.enter(__t);
                __exited[__t] = (|| -> bool {
                    #restores
                    #(#body)*
                    #saves
                    false
                })();
            }
        })
    }
}

fn location(span: Span) -> TokenStream {
    quote_spanned!(span=> ::core::concat!(::core::file!(), ":", ::core::line!(), ":", ::core::column!()))
}
