//! The body pass shared by `#[kernel]` and `#[device]`: rewrites `grid(n)`, `thread_idx()`,
//! `shared_array![..]` and friends, notices barriers, and rejects what a `no_std` device cannot
//! do, each with an error at the offending span.

use crate::vocab::{
    ELEMENT_BYTES, FLOAT_METHODS, GRID_CALLS, HEAP_PATHS, OPAQUE_COLLECTIVES, RANDOM_PREFIX,
    SM80_CALLS, STD_MACROS, WARP_COLLECTIVES,
};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use std::collections::HashSet;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, ExprCall, ExprMacro, Local, Macro, Pat, Stmt, Token, Type};

/// A static shared array found in a kernel body.
pub struct SharedDecl {
    pub span: Span,
    pub elem: Type,
    pub dims: Vec<Expr>,
}

/// What the pass found.
pub struct Rewritten {
    pub uses_ctx: bool,
    /// Whether the body calls functions that might ask for the thread's coordinates themselves
    /// (a `#[device]` function using `thread_idx()`, say): the CPU backend then records them.
    pub thread_context: bool,
    /// Whether the body calls a warp collective, which asks who runs when the kernel runs as
    /// coroutines (a split kernel's exchanges do not).
    pub warp_context: bool,
    pub barriers: bool,
    /// Whether the body calls `this_grid()` or `grid_sync()`: the kernel is cooperative.
    pub cooperative: bool,
    /// Whether the body reads a coordinate of its block (`thread_idx()`, `block_idx()`) or the
    /// block's shared memory; if not, only grid-level indices (`grid(n)`) tell threads apart.
    pub block_local: bool,
    /// The first call of a collective the CPU backend's split does not take apart
    /// (`mma_sync`), where the body makes one: the kernel runs its threads as coroutines.
    pub opaque: Option<Span>,
    /// The first call that needs a GPU of sm_80 or later, and what it runs there.
    pub sm80: Option<(Span, &'static str, &'static str)>,
    pub shared: Vec<SharedDecl>,
    /// Constant items that check the body's calls at compile time, for the module's level.
    pub checks: Vec<TokenStream>,
}

/// Where the body lives: a kernel may declare shared memory of every kind, a `#[device]`
/// function static shared arrays (one per block, whoever calls it), a point function
/// (`#[stencil]`, `#[vectorize]`, `#[reduce]`) none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Kernel,
    Function,
    Device,
}

struct Pass {
    scope: Scope,
    layout: syn::Ident,
    locals: HashSet<String>,
    out: Rewritten,
    errors: Vec<syn::Error>,
    pending_name: Option<String>,
    /// The shared arrays of a `#[device]` function so far, which number their PTX variables.
    function_arrays: usize,
    /// The function's generic parameters: a constant item cannot name them.
    generics: HashSet<String>,
}

/// Rewrites `block` in place. `layout` names the kernel's shared-layout constant; `params` are
/// the parameter names (runtime values, never valid as shared array sizes); `generics` the
/// function's generic parameters.
/// The pass over the body of `func`, a function that a launcher maps over arrays
/// (`#[vectorize]`, `#[guvectorize]`, `#[reduce]`) and whose parameters are named `params`:
/// device code with no shared memory of its own.
pub fn mapped_body(func: &mut syn::ItemFn, params: &[String]) -> syn::Result<Rewritten> {
    let generics = func.sig.generics.clone();
    rewrite(
        &mut func.block,
        Scope::Device,
        quote::format_ident!("__KERNEL_SHARED_NONE"),
        params,
        &generics,
    )
}

pub fn rewrite(
    block: &mut Block,
    scope: Scope,
    layout: syn::Ident,
    params: &[String],
    generics: &syn::Generics,
) -> syn::Result<Rewritten> {
    let mut locals: HashSet<String> = params.iter().cloned().collect();
    let mut collect = LocalNames(&mut locals);
    collect.visit_block(block);
    // Items declared in the body are out of the module's sight too.
    let mut items = BodyItems(&mut locals);
    items.visit_block(block);
    let mut pass = Pass {
        scope,
        layout,
        locals,
        out: Rewritten {
            uses_ctx: false,
            thread_context: false,
            warp_context: false,
            barriers: false,
            cooperative: false,
            block_local: false,
            opaque: None,
            sm80: None,
            shared: Vec::new(),
            checks: Vec::new(),
        },
        errors: Vec::new(),
        pending_name: None,
        function_arrays: 0,
        generics: crate::syntax::generic_names(generics).collect(),
    };
    pass.visit_block_mut(block);
    let mut errors = pass.errors.into_iter();
    match errors.next() {
        None => Ok(pass.out),
        Some(mut first) => {
            for e in errors {
                first.combine(e);
            }
            Err(first)
        }
    }
}

/// The names of the items a block declares (constants, statics, imports, functions), at any
/// depth.
struct BodyItems<'a>(&'a mut HashSet<String>);
impl<'ast> Visit<'ast> for BodyItems<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let name = match item {
            syn::Item::Const(c) => Some(&c.ident),
            syn::Item::Static(s) => Some(&s.ident),
            syn::Item::Fn(f) => Some(&f.sig.ident),
            syn::Item::Use(u) => {
                use_names(&u.tree, self.0);
                None
            }
            _ => None,
        };
        if let Some(name) = name {
            self.0.insert(name.to_string());
        }
    }
}

/// The names an import brings in; `*` for a glob, whose names are not known.
fn use_names(tree: &syn::UseTree, names: &mut HashSet<String>) {
    match tree {
        syn::UseTree::Path(p) => use_names(&p.tree, names),
        syn::UseTree::Name(n) => {
            names.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            names.insert(r.rename.to_string());
        }
        syn::UseTree::Glob(_) => {
            names.insert("*".to_string());
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, names)),
    }
}

struct LocalNames<'a>(&'a mut HashSet<String>);
impl<'ast> Visit<'ast> for LocalNames<'_> {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

fn single_ident(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(p.path.segments[0].ident.to_string())
        }
        _ => None,
    }
}

fn macro_name(m: &Macro) -> String {
    m.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

/// `shared_array![T; N]` or `shared_array![T; [R, C]]`.
struct SharedArgs {
    elem: Type,
    dims: Vec<Expr>,
}
impl Parse for SharedArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let elem: Type = input.parse()?;
        input.parse::<Token![;]>()?;
        let size: Expr = input.parse()?;
        let dims = match size {
            Expr::Array(a) => a.elems.into_iter().collect(),
            other => vec![other],
        };
        Ok(SharedArgs { elem, dims })
    }
}

/// The call that makes a `shared_array!`'s view (see `Pass::constructor`).
struct Constructor {
    make: syn::Ident,
    elem: TokenStream,
    store: TokenStream,
    len: TokenStream,
    shape: TokenStream,
    name: String,
}

/// `dynamic_shared![T]`, or `dynamic_shared![T; at BYTES]`: the dynamic shared memory as `T`s,
/// from its byte `BYTES` on.
struct DynamicArgs {
    elem: Type,
    at: Option<Expr>,
}
impl Parse for DynamicArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let elem: Type = input.parse()?;
        if input.is_empty() {
            return Ok(DynamicArgs { elem, at: None });
        }
        input.parse::<Token![;]>()?;
        let word: syn::Ident = input.parse()?;
        if word != "at" {
            return Err(syn::Error::new(
                word.span(),
                "`dynamic_shared!` takes an element type, and a byte offset after `at`: \
                 `dynamic_shared![f32]`, `dynamic_shared![u32; at 1024]`",
            ));
        }
        Ok(DynamicArgs {
            elem,
            at: Some(input.parse()?),
        })
    }
}

impl Pass {
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.errors.push(syn::Error::new(span, msg.into()));
    }

    fn ctx_call(&mut self, span: Span, method: &str) -> Expr {
        self.out.uses_ctx = true;
        if matches!(
            method,
            "thread_idx" | "block_idx" | "lane_id" | "lanemask_lt"
        ) {
            self.out.block_local = true;
        }
        let m = syn::Ident::new(method, span);
        syn::parse_quote_spanned!(span=> __kctx.#m())
    }

    /// Refuses a `memcpy_async::<T, N>` or `memcpy_async_tile::<T, N, ..>` whose `N` elements of a type of known size are not 4, 8
    /// or 16 bytes, at the call (the runtime's own check of other types fires when the kernel
    /// is built, after `cargo check`).
    fn copy_size(&mut self, seg: &syn::PathSegment) {
        let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
            return;
        };
        let mut args = args.args.iter();
        let (Some(syn::GenericArgument::Type(syn::Type::Path(t))), Some(n)) =
            (args.next(), args.next())
        else {
            return;
        };
        let syn::GenericArgument::Const(Expr::Lit(n)) = n else {
            return;
        };
        let (Some(ty), syn::Lit::Int(n)) = (t.path.get_ident(), &n.lit) else {
            return;
        };
        let name = ty.to_string();
        let (Some(&(_, bytes)), Ok(n)) = (
            ELEMENT_BYTES.iter().find(|(t, _)| *t == name),
            n.base10_parse::<usize>(),
        ) else {
            return;
        };
        if !matches!(n * bytes, 4 | 8 | 16) {
            let mut fits: Vec<String> = [4, 8, 16]
                .iter()
                .filter(|b| *b % bytes == 0)
                .map(|b| (b / bytes).to_string())
                .collect();
            let last = fits.pop().unwrap_or_default();
            let fits = match fits.is_empty() {
                true => last,
                false => format!("{} or {last}", fits.join(", ")),
            };
            self.error(
                seg.span(),
                format!(
                    "`{}::<{name}, {n}{}>` copies {} bytes, and a copy moves 4, 8 or 16 \
                     (cp.async): copy {fits} elements of `{name}` at a time",
                    seg.ident,
                    if seg.ident == "memcpy_async" {
                        ""
                    } else {
                        ", .."
                    },
                    n * bytes,
                ),
            );
        }
    }

    /// For a `memcpy_async_tile::<T, N, R, C, THREADS>` call whose sizes name no runtime value,
    /// generic parameter or item of the body, a constant item for the module's level that
    /// refuses, at the call and under `cargo check`, a tile whose runs the block's threads
    /// cannot share out evenly (the runtime's own check of that fires when the kernel is built,
    /// in the runtime's source).
    fn tile_share_check(&self, call: &ExprCall) -> Option<TokenStream> {
        let Expr::Path(p) = &*call.func else {
            return None;
        };
        let seg = p.path.segments.last()?;
        let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
            return None;
        };
        if seg.ident != "memcpy_async_tile" || args.args.len() != 5 {
            return None;
        }
        let sizes: Vec<TokenStream> = args.args.iter().skip(1).map(|a| quote!(#a)).collect();
        let local = |i: &proc_macro2::Ident| {
            let i = i.to_string();
            self.locals.contains(&i) || self.generics.contains(&i)
        };
        if self.locals.contains("*")
            || sizes
                .iter()
                .any(|t| crate::syntax::mentions(t.clone(), &local))
        {
            return None;
        }
        let [n, r, c, threads] = [&sizes[0], &sizes[1], &sizes[2], &sizes[3]];
        let message =
            format!(
            "`memcpy_async_tile::<{}>` copies its {r} × {c} tile in runs of {n} elements, which \
             the block's {threads} threads cannot share out evenly: each thread starts as many \
             runs, so R × C / N must be a multiple of THREADS",
            args.args.iter().map(|a| quote!(#a).to_string()).collect::<Vec<_>>().join(", "),
        )
            // A format string: its braces (a `{ N }` argument) are written doubled.
            .replace('{', "{{")
            .replace('}', "}}");
        Some(quote_spanned! {seg.span()=>
            const _: () = ::core::assert!(
                ::kernel_runtime::__rt::tile_runs_shared(#n, #r, #c, #threads),
                #message
            );
        })
    }

    fn rewrite_call(&mut self, call: &ExprCall) -> Option<Expr> {
        let name = match &*call.func {
            Expr::Path(p) if p.qself.is_none() => {
                let segs = &p.path.segments;
                let first = segs.first()?.ident.to_string();
                if segs.len() == 2 && (first == "f32" || first == "f64") {
                    // `f32::sin(x)` is std-only: route it through `DeviceFloat`.
                    let method = &segs[1].ident;
                    if FLOAT_METHODS.contains(&method.to_string().as_str()) {
                        let ty = &segs[0].ident;
                        let args = &call.args;
                        let mut args: syn::punctuated::Punctuated<Expr, Token![,]> = args.clone();
                        for a in args.iter_mut() {
                            self.visit_expr_mut(a);
                        }
                        return Some(syn::parse_quote_spanned!(call.span()=>
                            <#ty as ::kernel_runtime::__rt::DeviceFloat>::#method(#args)
                        ));
                    }
                }
                let last = segs.last()?.ident.to_string();
                if let Some((name, what)) = SM80_CALLS.iter().find(|(n, _)| *n == last) {
                    self.out.sm80 = self.out.sm80.or(Some((call.span(), name, what)));
                }
                if last == "memcpy_async" || last == "memcpy_async_tile" {
                    self.copy_size(segs.last()?);
                }
                if OPAQUE_COLLECTIVES.contains(&last.as_str()) {
                    self.out.barriers = true;
                    self.out.warp_context = true;
                    self.out.opaque = self.out.opaque.or(Some(call.span()));
                }
                if last.starts_with("sync_threads")
                    || WARP_COLLECTIVES.contains(&last.as_str())
                    || GRID_CALLS.contains(&last.as_str())
                {
                    self.out.barriers = true;
                }
                if segs.len() == 1
                    && last != "activemask"
                    && WARP_COLLECTIVES.contains(&last.as_str())
                {
                    // A collective asks who runs only when its kernel runs as coroutines.
                    self.out.warp_context = true;
                } else if may_read_thread_context(&first, &last, segs.len()) {
                    self.out.thread_context = true;
                }
                if segs.len() != 1 {
                    return None;
                }
                last
            }
            _ => return None,
        };
        let span = call.span();
        match name.as_str() {
            "grid" | "gridsize" => {
                let n = match (call.args.len(), call.args.first()) {
                    (1, Some(Expr::Lit(l))) => match &l.lit {
                        syn::Lit::Int(i) => i.base10_parse::<u32>().ok(),
                        _ => None,
                    },
                    _ => None,
                };
                match n {
                    Some(n @ 1..=3) => Some(self.ctx_call(span, &format!("{name}_{n}d"))),
                    _ => {
                        let at = call.args.first().map(|a| a.span()).unwrap_or(span);
                        self.error(
                            at,
                            format!("`{name}(n)` takes the number of dimensions as a literal 1, 2 or 3, as Numba's `cuda.{name}(ndim)`"),
                        );
                        None
                    }
                }
            }
            "thread_idx" | "block_idx" | "block_dim" | "grid_dim" | "lane_id" | "lanemask_lt"
                if call.args.is_empty() =>
            {
                Some(self.ctx_call(span, &name))
            }
            "this_grid" | "grid_sync" => self.grid_call(call, &name),
            _ => None,
        }
    }

    /// `this_grid()` as the launch's grid, `grid_sync()` as its `sync()`: in a kernel's body
    /// only, which is then cooperative.
    fn grid_call(&mut self, call: &ExprCall, name: &str) -> Option<Expr> {
        let span = call.span();
        if !call.args.is_empty() {
            self.error(span, format!("`{name}()` takes no arguments"));
            return None;
        }
        if self.scope != Scope::Kernel {
            self.error(
                span,
                format!(
                    "`{name}()` is understood in a #[kernel] body only: take the grid as a \
                     parameter (`grid: GridGroup`), pass it `this_grid()` from the kernel, and \
                     call `grid.sync()`"
                ),
            );
            return None;
        }
        self.out.cooperative = true;
        Some(match name {
            "this_grid" => syn::parse_quote_spanned!(span=> __kgrid),
            _ => syn::parse_quote_spanned!(span=> __kgrid.sync()),
        })
    }

    fn rewrite_macro(&mut self, mac: &mut Macro) -> Option<Expr> {
        let name = macro_name(mac);
        let span = mac.path.span();
        if STD_MACROS.contains(&name.as_str()) {
            let print = if name.contains("print") {
                ": print with `kprintln!`, CUDA's printf"
            } else {
                ""
            };
            self.error(
                span,
                format!("`{name}!` is not available in kernels: device code is `no_std` and has no heap or stdout{print}"),
            );
            return None;
        }
        match name.as_str() {
            "shared_array" if self.scope == Scope::Device => {
                self.error(
                    span,
                    "`shared_array!` belongs to a block of threads: declare it in a #[kernel] or a #[device] function",
                );
                None
            }
            "dynamic_shared" if self.scope != Scope::Kernel => {
                self.error(
                    span,
                    "`dynamic_shared!` must be used in the `#[kernel]` itself, which knows where its static arrays end; pass the view to device functions as a parameter",
                );
                None
            }
            "shared_array" if self.scope == Scope::Function => self.function_shared_array(mac),
            "shared_array" => self.shared_array(mac),
            "dynamic_shared" => {
                let DynamicArgs { elem, at } = match mac.parse_body() {
                    Ok(a) => a,
                    Err(e) => {
                        self.errors.push(e);
                        return None;
                    }
                };
                let mut at = at.unwrap_or_else(|| syn::parse_quote!(0usize));
                self.visit_expr_mut(&mut at);
                self.out.uses_ctx = true;
                self.out.block_local = true;
                let layout = &self.layout;
                let name = self
                    .pending_name
                    .take()
                    .unwrap_or_else(|| "dynamic shared".into());
                Some(syn::parse_quote_spanned!(span=>
                    unsafe { ::kernel_runtime::__rt::dynamic_shared::<#elem, _>(&__kctx, __launch, #layout.1, #at, #name) }
                ))
            }
            _ => {
                // Other macros (`assert!`, `debug_assert!`, ...): rewrite their arguments when
                // they read as expressions.
                let parser = syn::punctuated::Punctuated::<Expr, Token![,]>::parse_terminated;
                if let Ok(mut args) = mac.parse_body_with(parser) {
                    for a in args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                    mac.tokens = quote!(#args);
                }
                None
            }
        }
    }

    /// The arguments of `shared_array![..]`, or the error that refuses them.
    fn shared_args(&mut self, mac: &Macro) -> Option<SharedArgs> {
        let args: SharedArgs = match mac.parse_body() {
            Ok(a) => a,
            Err(e) => {
                self.errors.push(e);
                return None;
            }
        };
        if args.dims.is_empty() || args.dims.len() > 3 {
            self.error(
                mac.tokens.span(),
                "shared arrays have one to three dimensions: `shared_array![T; N]`, `shared_array![T; [R, C]]` or `shared_array![T; [D, R, C]]`",
            );
            return None;
        }
        for d in &args.dims {
            let mut finder = RuntimeNames {
                locals: &self.locals,
                found: None,
            };
            finder.visit_expr(d);
            if let Some((name, at)) = finder.found {
                self.error(
                    at,
                    format!("the size of a shared array must be a compile-time constant (a literal or a `const`), but `{name}` is a runtime value"),
                );
                return None;
            }
        }
        Some(args)
    }

    /// What both forms of `shared_array!` call: the runtime's constructor (`shared_array2`,
    /// `shared_bools1`, ..) with its element type argument (none for `bool`s, kept in bytes:
    /// `__rt::Bools`), the type whose elements its bytes hold, its shape (`extent(n)`, or
    /// `[extent(r), extent(c)]`) and the array's name.
    fn constructor(&mut self, args: &SharedArgs, span: Span) -> Constructor {
        self.out.uses_ctx = true;
        self.out.block_local = true;
        let elem = &args.elem;
        let bools =
            matches!(elem, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("bool"));
        let (kind, turbofish, store) = match bools {
            false => ("array", quote!(#elem,), quote!(#elem)),
            true => ("bools", quote!(), quote!(u8)),
        };
        let dims: Vec<TokenStream> = args
            .dims
            .iter()
            .map(|d| quote_spanned!(span=> ::kernel_runtime::__rt::extent(#d)))
            .collect();
        let shape = match dims.as_slice() {
            [n] => quote!(#n),
            _ => quote!([#(#dims),*]),
        };
        Constructor {
            make: quote::format_ident!("shared_{kind}{}", args.dims.len()),
            elem: turbofish,
            store,
            len: quote!(1usize #(* #dims)*),
            shape,
            name: self.pending_name.take().unwrap_or_else(|| "shared".into()),
        }
    }

    fn shared_array(&mut self, mac: &Macro) -> Option<Expr> {
        let span = mac.path.span();
        let args = self.shared_args(mac)?;
        let Constructor {
            make,
            elem,
            shape,
            name,
            ..
        } = self.constructor(&args, span);
        let (k, layout) = (self.out.shared.len(), &self.layout);
        let expr: Expr = syn::parse_quote_spanned!(span=>
            unsafe { ::kernel_runtime::__rt::#make::<#elem _>(&__kctx, __launch, #layout.0[#k], #shape, #name) }
        );
        self.out.shared.push(SharedDecl {
            span,
            elem: args.elem,
            dims: args.dims,
        });
        Some(expr)
    }

    /// `shared_array!` in a `#[device]` function: the array of the running block, at the place
    /// of its `.shared` variable on a GPU, of its site on the CPU backend (see the runtime's
    /// `function_shared`).
    fn function_shared_array(&mut self, mac: &Macro) -> Option<Expr> {
        let span = mac.path.span();
        let args = self.shared_args(mac)?;
        let rt = quote::quote_spanned!(span=> ::kernel_runtime::__rt);
        let Constructor {
            make,
            elem,
            store,
            len,
            shape,
            name,
        } = self.constructor(&args, span);
        let symbol = format!("{}_{}", self.layout, self.function_arrays);
        self.function_arrays += 1;
        let decl = format!(".shared .align {{a}} .b8 {symbol}[{{b}}];");
        let module = quote::format_ident!("{symbol}");
        let cvta = format!("cvta.shared.u64 {{p}}, {symbol};\nmov.u64 {{z}}, 0;");
        Some(syn::parse_quote_spanned!(span=> {
            #[cfg(not(target_arch = "nvptx64"))]
            #[#rt::linkme::distributed_slice(#rt::FUNCTION_SHARED)]
            #[linkme(crate = #rt::linkme)]
            static __SITE: #rt::SharedSite = #rt::shared_site::<#store>(#len);
            #[cfg(not(target_arch = "nvptx64"))]
            let __at = #rt::shared_place(&__kctx, &__SITE);
            // The variable, at the module's level (an item of the function's body that sees
            // the types and constants of the function's module).
            #[cfg(target_arch = "nvptx64")]
            #[allow(non_snake_case)]
            mod #module {
                #[allow(unused_imports)]
                use super::*;
                ::core::arch::global_asm!(
                    #decl,
                    a = const ::core::mem::align_of::<#store>(),
                    b = const #rt::shared_site_bytes::<#store>(#len),
                );
            }
            #[cfg(target_arch = "nvptx64")]
            let __at = {
                let (__p, __z): (*mut u8, usize);
                // SAFETY: takes the generic address of the array's `.shared` variable; no
                // memory access.
                unsafe {
                    ::core::arch::asm!(#cvta, p = out(reg64) __p, z = out(reg64) __z, options(pure, nomem, nostack));
                    #rt::shared_symbol(__p, __z)
                }
            };
            // SAFETY: the array's place in the block's shared memory, of its bytes.
            unsafe { #rt::function_traced(&__kctx, #rt::#make::<#elem _>(__at, __launch, 0, #shape, #name)) }
        }))
    }
}

/// Whether a call to the function `first::..::last` might read the thread's coordinates itself:
/// any function but the device API's own, constructors, and associated functions of
/// primitive types or `core`.
fn may_read_thread_context(first: &str, last: &str, segments: usize) -> bool {
    const PRIMITIVE: &[&str] = &[
        "core", "math", "f32", "f64", "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32",
        "u64", "usize", "bool",
    ];
    // These are rewritten into the kernel's own context, or touch no coordinates.
    const DEVICE_API: &[&str] = &[
        "grid",
        "gridsize",
        "thread_idx",
        "block_idx",
        "block_dim",
        "grid_dim",
        "threadfence",
        "threadfence_block",
        "threadfence_system",
        "popc",
        "brev",
        "clz",
        "ffs",
        "selp",
        "lane_id",
        "lanemask_lt",
        "this_grid",
        "grid_sync",
    ];
    if last.starts_with(|c: char| c.is_ascii_uppercase()) {
        return false;
    }
    if segments > 1 {
        return !PRIMITIVE.contains(&first);
    }
    !(last.starts_with("atomic_")
        || last.starts_with(RANDOM_PREFIX)
        || last.starts_with("sync_threads")
        || DEVICE_API.contains(&last))
}

struct RuntimeNames<'a> {
    locals: &'a HashSet<String>,
    found: Option<(String, Span)>,
}
impl<'ast> Visit<'ast> for RuntimeNames<'_> {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(name) = single_ident(&Expr::Path(p.clone())) {
            if self.locals.contains(&name) && self.found.is_none() {
                self.found = Some((name, p.span()));
            }
        }
    }
}

impl VisitMut for Pass {
    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        if let Some(first) = path.segments.first() {
            let name = first.ident.to_string();
            if path.segments.len() > 1 && (name == "std" || name == "alloc") {
                self.error(
                    first.ident.span(),
                    format!("`{name}::` is not available in kernels: device code is `no_std` (use `core::`)"),
                );
            } else if HEAP_PATHS.contains(&name.as_str()) {
                self.error(
                    first.ident.span(),
                    format!("`{name}` needs a heap, which kernels do not have: device code is `no_std`; use shared arrays, local arrays or device arrays"),
                );
            }
        }
        visit_mut::visit_path_mut(self, path);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // Nested items are compiled on their own; they see no thread context.
    }

    fn visit_local_mut(&mut self, local: &mut Local) {
        if let Pat::Ident(pi) = &local.pat {
            self.pending_name = Some(pi.ident.to_string());
        } else if let Pat::Type(pt) = &local.pat {
            if let Pat::Ident(pi) = &*pt.pat {
                self.pending_name = Some(pi.ident.to_string());
            }
        }
        visit_mut::visit_local_mut(self, local);
        self.pending_name = None;
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(sm) = stmt {
            if let Some(expr) = self.rewrite_macro(&mut sm.mac) {
                *stmt = Stmt::Expr(expr, sm.semi_token);
            }
            return;
        }
        visit_mut::visit_stmt_mut(self, stmt);
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Call(call) => {
                if let Some(new) = self.rewrite_call(call) {
                    *expr = new;
                    return;
                }
                if let Some(check) = self.tile_share_check(call) {
                    self.out.checks.push(check);
                }
            }
            Expr::Macro(ExprMacro { mac, .. }) => {
                if let Some(new) = self.rewrite_macro(mac) {
                    *expr = new;
                }
                return;
            }
            Expr::Async(a) => {
                self.error(a.span(), "`async` is not available in kernels");
                return;
            }
            Expr::Await(a) => {
                self.error(a.await_token.span(), "`.await` is not available in kernels");
                return;
            }
            Expr::Index(index) => {
                visit_mut::visit_expr_index_mut(self, index);
                wrap_index(&mut index.index);
                return;
            }
            _ => {}
        }
        visit_mut::visit_expr_mut(self, expr);
    }
}

/// Makes the subtractions that compute an index wrap: `x[[i - 1, j]]` at `i = 0` then asks for
/// an index past the end, which the view reports naming the array, the index as `-1` and the
/// line, in a debug build as in a release one (where the subtraction would otherwise panic
/// with no word of either). Only the arithmetic that forms the index itself is touched, through
/// parentheses, arrays and tuples of indices: there every operand is a `usize`.
fn wrap_index(e: &mut Expr) {
    match e {
        Expr::Paren(p) => wrap_index(&mut p.expr),
        Expr::Group(g) => wrap_index(&mut g.expr),
        Expr::Array(a) => a.elems.iter_mut().for_each(wrap_index),
        Expr::Tuple(t) => t.elems.iter_mut().for_each(wrap_index),
        Expr::Binary(b) => {
            wrap_index(&mut b.left);
            wrap_index(&mut b.right);
            if let syn::BinOp::Sub(minus) = b.op {
                let right = &b.right;
                // An integer literal alone has no type to call a method on: it is a `usize`.
                let left = match &*b.left {
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) if i.suffix().is_empty() => {
                        let typed =
                            syn::LitInt::new(&format!("{}usize", i.base10_digits()), i.span());
                        quote!(#typed)
                    }
                    left => quote!(#left),
                };
                *e = syn::parse_quote_spanned!(minus.span=> (#left).wrapping_sub(#right));
            }
        }
        _ => {}
    }
}

/// `let __kctx = ...;` for bodies that use the thread context.
pub fn ctx_binding(kind: Scope) -> TokenStream {
    match kind {
        Scope::Device => quote! {
            #[allow(unused_variables)]
            let __kctx = ::kernel_runtime::__rt::Ctx::current();
        },
        // What a `#[device]` function's shared arrays borrow: nothing outlives the call.
        Scope::Function => quote! {
            #[allow(unused_variables)]
            let __kctx = ::kernel_runtime::__rt::Ctx::current();
            let __launch_scope = ();
            #[allow(unused_variables)]
            let __launch = &__launch_scope;
        },
        Scope::Kernel => quote_spanned! {Span::call_site()=>},
    }
}
