//! The CPU backend's fast body of a kernel, once: a function of a thread's context and the
//! views (split at its barriers and warp collectives into a function of a block where the shape
//! allows, see [`crate::split`]), in the form (`CpuPlan::form`) that tells the runtime how to
//! run it.

use crate::kernel::params::Kind;
use crate::kernel::rewrite::SharedDecl;
use crate::kernel::validate::Kernel;
use crate::split::guard::{Checks, Guard};
use crate::split::stride::{self, Stride};
use crate::split::Hint;
use crate::syntax::mentions;
use crate::vocab::ATOMIC_PREFIX;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

/// How the CPU backend runs one kernel.
pub struct CpuPlan {
    /// The block-level body split at barriers, or `None` (coroutines, or no barrier).
    pub split: Option<TokenStream>,
    /// Whether the body reads the thread's coordinates through calls the CPU backend answers
    /// per thread (else only through `grid`, `thread_idx()`, ... as the loops give them).
    pub thread_context: bool,
    /// Whether only grid-level indices tell the kernel's threads apart: the CPU backend may
    /// then run a run of 1-D blocks as one loop.
    pub grid_level: bool,
    /// The guard of a grid-level body, where it has one: its rows run the threads inside its
    /// span without it. A body with index checks has one only where the span also proves every
    /// access of the guarded statement (see `split::proof`): elsewhere it keeps its tests, for
    /// what they tell the optimiser (`1 <= j`, `j + 1 < m`) about the indices they guard.
    pub guard: Option<Guard>,
    /// The grid-stride loop (or 2-D nest) of a grid-level body, where it is one: the CPU
    /// backend runs its body once per index instead (`__rt::Strided`, `__rt::Strided2`).
    pub stride: Option<Stride>,
    /// Whether a split body is compiled a second time for AVX-512 CPUs: only where no atomic
    /// operation orders its threads' work (tiles, reductions), which is where wide vectors pay
    /// for the second copy's compile time.
    pub wide: bool,
}

impl CpuPlan {
    /// A kernel whose barriers the macro sees is split at them into thread loops when its
    /// shape allows (and at its warp collectives); other barrier kernels run their threads as
    /// coroutines.
    pub fn of(k: &Kernel) -> CpuPlan {
        let body = &k.body;
        let grid_level =
            !body.block_local && !k.has_barriers() && !body.thread_context && !body.warp_context;
        let split = (body.barriers && !k.options.barriers && body.opaque.is_none())
            .then(|| {
                let read_only: Vec<String> = k
                    .params
                    .iter()
                    .filter(|p| matches!(p.kind, Kind::Array { mutable: false, .. }))
                    .map(|p| p.name.to_string())
                    .collect();
                let params: Vec<(String, bool)> = k
                    .params
                    .iter()
                    .map(|p| (p.name.to_string(), p.declared_mut))
                    .collect();
                crate::split::split(&k.func.block, block_hint(&body.shared), &params, &read_only)
            })
            .flatten();
        let atomics = mentions(k.func.block.to_token_stream(), &|i| {
            i.to_string().starts_with(ATOMIC_PREFIX)
        });
        let checks = k.options.boundscheck.then(|| guard_checks(k));
        let guard = grid_level
            .then(|| crate::split::guard::guard(&k.func.block, checks.as_ref()))
            .flatten();
        let stride = (grid_level && !body.cooperative && guard.is_none())
            .then(|| crate::split::stride::stride(&k.func.block))
            .flatten();
        CpuPlan {
            thread_context: body.thread_context || body.warp_context && split.is_none(),
            guard,
            stride,
            wide: split.is_some() && !atomics,
            split,
            grid_level,
        }
    }

    /// The statements of a fast body of one thread: the kernel's, but for a guarded grid-level
    /// kernel's guard, which the rows may decide (`__inner`); `None` for a split kernel.
    pub fn fast_block<'k>(&'k self, k: &'k Kernel) -> &'k syn::Block {
        match (&self.guard, self.grid_level && !k.body.cooperative) {
            (Some(g), true) => &g.body,
            _ => &k.func.block,
        }
    }

    /// The form the runtime runs the fast body in (`__rt::Grid`, `Blocks`, `Split`, ...), of
    /// the bodies [`bodies`] binds.
    pub fn form(&self, k: &Kernel) -> TokenStream {
        let fast = quote!(__fast);
        let rt = quote!(__rt);
        let cooperative = k.body.cooperative;
        match (&self.split, cooperative) {
            (Some(_), true) => quote!(#rt::SplitCooperative(#fast)),
            (Some(_), false) => {
                let wide = self.wide;
                quote!(#rt::Split::<_, #wide>(#fast))
            }
            (None, true) => quote!(#rt::Cooperative(#fast)),
            (None, false) if k.has_barriers() => {
                quote!(#rt::Coroutines(#fast))
            }
            (None, false) if self.grid_level => match (&self.guard, &self.stride) {
                (Some(g), _) => match &g.record {
                    Some(_) => quote!(#rt::Grid(#fast, __span, __record)),
                    None => quote!(#rt::Grid(#fast, __span, #rt::NoRecord)),
                },
                (None, Some(s)) => match &s.inner {
                    None => quote!(#rt::Strided(#fast, __index, __bound)),
                    Some(_) => {
                        let outer_y = s.outer.axis == stride::Axis::Y;
                        quote!(#rt::Strided2(#fast, __index, __bound, __inner_bound, #outer_y))
                    }
                },
                (None, None) => quote!(#rt::Grid(#fast, #rt::WholeRow, #rt::NoRecord)),
            },
            (None, false) => quote!(#rt::Blocks(#fast)),
        }
    }
}

/// What the guard's proofs need of a kernel with index checks: its arrays and `mut` parameters.
fn guard_checks(k: &Kernel) -> Checks {
    Checks {
        arrays: k
            .params
            .iter()
            .filter_map(|p| match p.kind {
                Kind::Array { rank, .. } => Some((p.name.to_string(), rank)),
                _ => None,
            })
            .collect(),
        mutable: k
            .params
            .iter()
            .filter(|p| p.declared_mut)
            .map(|p| p.name.to_string())
            .collect(),
        writable: k
            .params
            .iter()
            .filter(|p| matches!(p.kind, Kind::Array { mutable: true, .. }))
            .map(|p| p.name.to_string())
            .collect(),
    }
}

/// The fast body of `k` as the runtime's form of it takes it (see [`CpuPlan::form`]): `__fast`,
/// and a guarded grid-level kernel's `__span` and, where it has one, checked mode's `__record`.
pub fn bodies(k: &Kernel, plan: &CpuPlan) -> TokenStream {
    let views = views(k);
    let prelude = prelude(k);
    if let Some(split) = &plan.split {
        return body_closure(
            quote!(__fast),
            quote!(|__blk: &__rt::BlockRun<'_>, #views| { #prelude #split }),
        );
    }
    let grid = grid_binding(k);
    let block = plan.fast_block(k);
    let span = plan.guard.as_ref().map(|g| {
        let narrow = &g.span;
        body_closure(
            quote!(__span),
            quote!(|__kctx: __rt::Ctx, #views, __span: __rt::Span| -> __rt::Span { #prelude #narrow }),
        )
    });
    let record = plan.guard.as_ref().and_then(|g| g.record.as_ref()).map(|record| {
        body_closure(
            quote!(__record),
            quote!(|__kctx: __rt::Ctx, #views, __span: __rt::Span, __rec: &mut __rt::SpanRecord<'_>| {
                #prelude #record
            }),
        )
    });
    let fast = body_closure(
        quote!(__fast),
        quote!(|__kctx: __rt::Ctx, #views, __inner: bool| { #prelude #grid #block }),
    );
    let stride = plan.stride.as_ref().map(|s| {
        let (index, bound) = (stride::index_body(s), stride::bound_body(s));
        let inner = s.inner.as_ref().map(|_| quote!(__inner: usize));
        let index = body_closure(
            quote!(__index),
            quote!(|__kctx: __rt::Ctx, #views, __index: usize, #inner| { #prelude #index }),
        );
        let bound = body_closure(
            quote!(__bound),
            quote!(|__kctx: __rt::Ctx, #views| -> usize { #prelude #bound }),
        );
        let inner_bound = stride::inner_bound_body(s).map(|b| {
            body_closure(
                quote!(__inner_bound),
                quote!(|__kctx: __rt::Ctx, #views, __index: usize| -> usize { #prelude #b }),
            )
        });
        quote!(#index #bound #inner_bound)
    });
    quote!(#fast #span #record #stride)
}

/// `let name = closure;`: a body, as a closure that the runtime's thread loops inline (each
/// its own type, called directly, where a function would go through a shim of its own).
pub fn body_closure(name: TokenStream, closure: TokenStream) -> TokenStream {
    quote! {
        #[allow(unused_variables, unused_mut, non_snake_case, clippy::all)]
        let #name = __rt::body(#[inline(always)] #closure);
    }
}

/// The views parameter of a body: the parameters' pattern, of type `__Views` (see
/// `launcher`).
pub fn views(k: &Kernel) -> TokenStream {
    let patterns = k.params.iter().map(|p| p.pattern(k.generic_in(p)));
    let names = k.generic.as_ref().map(|g| g.names()).unwrap_or_default();
    quote!((#(#patterns,)*): __Views<'_, #(#names),*>)
}

/// What a CPU body binds before the kernel's statements: each raw pointer from the runtime's
/// `SyncPtr`, and what the views and shared arrays of the launch borrow, so that nothing
/// outlives it.
pub fn prelude(k: &Kernel) -> TokenStream {
    let pointers = k
        .params
        .iter()
        .filter(|p| p.is_pointer())
        .map(|p| p.cpu_rebinding(true));
    let scope = mentions(k.func.block.to_token_stream(), &|i| i == "__launch").then(|| {
        quote! {
            let __launch_scope = ();
            let __launch = &__launch_scope;
        }
    });
    quote!(#(#pointers)* #scope)
}

/// A cooperative kernel's grid (`this_grid()`) on the CPU backend.
pub fn grid_binding(k: &Kernel) -> TokenStream {
    if !k.body.cooperative {
        return quote!();
    }
    quote! {
        let __kgrid = ::kernel_runtime::__rt::cpu_grid();
    }
}

/// The block shape a kernel's first static shared array suggests (its last extent along x): a
/// tile `[TPB, TPB]` suggests `TPB × TPB` threads.
fn block_hint(shared: &[SharedDecl]) -> Option<Hint> {
    let first = shared.first()?;
    let mut dims: Vec<TokenStream> = first
        .dims
        .iter()
        .rev()
        .map(|d| quote!({ ::kernel_runtime::__rt::hint_extent(#d) }))
        .collect();
    dims.resize(3, quote!(1u32));
    Some((dims[0].clone(), dims[1].clone(), dims[2].clone()))
}
