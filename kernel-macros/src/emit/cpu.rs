//! The CPU backend's fast run of a kernel: its views, then the body in thread loops (split at
//! its barriers and warp collectives where the shape allows, see [`crate::split`]) or as
//! coroutines, with a version for launches whose arrays of one rank share one shape.

use crate::kernel::params::Kind;
use crate::kernel::rewrite::SharedDecl;
use crate::kernel::validate::Kernel;
use crate::split::guard::Guard;
use crate::split::Hint;
use crate::syntax::mentions;
use crate::vocab::ATOMIC_PREFIX;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use std::collections::BTreeMap;

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
    /// The guard of a grid-level `boundscheck = false` body, where it has one: its rows run the
    /// threads inside its span without it. A checked body keeps its tests: what they tell the
    /// optimiser (`1 <= j`, `j + 1 < m`) is what lets it drop the index checks they guard.
    pub guard: Option<Guard>,
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
        let barriers = k.options.barriers || body.barriers;
        let grid_level =
            !body.block_local && !barriers && !body.thread_context && !body.warp_context;
        let split = (body.barriers && !k.options.barriers)
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
        let guard = (grid_level && !k.options.boundscheck)
            .then(|| crate::split::guard::guard(&k.func.block))
            .flatten();
        CpuPlan {
            thread_context: body.thread_context || body.warp_context && split.is_none(),
            guard,
            wide: split.is_some() && !atomics,
            split,
            grid_level,
        }
    }

    /// The fast run: the arguments' views, then the run that fits the launch's shapes.
    pub fn launch(&self, k: &Kernel) -> TokenStream {
        let check = k.options.boundscheck;
        let views = k.params.iter().map(|p| {
            let (n, n_str) = (&p.name, p.name.to_string());
            // SAFETY (of the generated block): the launch runs on the CPU backend, where every
            // array argument lives (`launch_device` checked); `boundscheck = false` is the
            // kernel author's promise.
            quote!(let #n = unsafe { ::kernel_runtime::__rt::KernelArg::view::<#check>(#n, #n_str) };)
        });
        let run = self.shaped_runs(k);
        quote! {
            #(#views)*
            #run
            .map_err(|fault| fault.into_error(Self::NAME))
        }
    }

    /// Checked kernels get a second version for the common launch whose arrays of one rank all
    /// have one shape: there the views share their extents, so an index the kernel checked
    /// against one array (`if i < c.len()`) is known valid for the others, the optimiser drops
    /// those index checks and can vectorize the thread loop. A grid-level kernel's 1-D arrays,
    /// even a single one, also take their length from the launch's bound, which its thread loop
    /// runs up to first (see `__rt::run_grid`).
    fn shaped_runs(&self, k: &Kernel) -> TokenStream {
        let mut by_rank: BTreeMap<usize, Vec<&syn::Ident>> = BTreeMap::new();
        for p in &k.params {
            if let Kind::Array { rank, .. } = p.kind {
                by_rank.entry(rank).or_default().push(&p.name);
            }
        }
        let groups: Vec<_> = by_rank
            .iter()
            .filter(|(rank, names)| {
                (k.options.boundscheck && names.len() > 1) || (**rank == 1 && self.grid_level)
            })
            .collect();
        if groups.is_empty() {
            return self.run(k, &quote!(), &[], false);
        }
        // One shared shape per rank, named `__same_dimsR`.
        let named: Vec<_> = groups
            .iter()
            .map(|(rank, _)| (format_ident!("__same_dims{}", rank), **rank))
            .collect();
        let dims: Vec<_> = named.iter().map(|(d, _)| d).collect();
        let commons = groups.iter().map(|(rank, names)| {
            quote!(::kernel_runtime::__rt::common_dims::<#rank>(&[#(#names.shape()),*]))
        });
        let bounded = self.grid_level && by_rank.contains_key(&1);
        let reshapes = groups.iter().zip(&dims).flat_map(|((rank, names), d)| {
            let d = if **rank == 1 && bounded {
                quote!([__bound])
            } else {
                quote!(#d)
            };
            names.iter().map(move |n| {
                quote! {
                    // SAFETY: `common_dims` found that every array of this rank has this shape
                    // (for 1-D arrays, `__bound` is that length).
                    let #n = unsafe { ::kernel_runtime::__rt::LaunchView::with_dims(#n, #d) };
                }
            })
        });
        let shared = self.run(k, &quote!(#(#reshapes)*), &named, bounded);
        let plain = self.run(k, &quote!(), &[], false);
        quote! {
            match (#(#commons,)*) {
                (#(::core::option::Option::Some(#dims),)*) => #shared,
                _ => #plain,
            }
        }
    }

    /// One run of the kernel; `prelude` rebinds views, `dims` names the shared extents it uses,
    /// `bounded` passes the arrays' common length to the body as `__bound`.
    fn run(
        &self,
        k: &Kernel,
        prelude: &TokenStream,
        dims: &[(syn::Ident, usize)],
        bounded: bool,
    ) -> TokenStream {
        let rebinds = k.params.iter().map(|p| p.cpu_rebinding(true));
        if let Some(split) = &self.split {
            return split_run(k, quote!(#prelude #(#rebinds)* #split), dims, self.wide);
        }
        let block = &k.func.block;
        if self.grid_level {
            return grid_run(
                k,
                self.guard.as_ref(),
                quote!(#prelude #(#rebinds)*),
                bounded,
            );
        }
        let grid = grid_binding(k);
        let run = match k.body.cooperative {
            true => quote!(run_cooperative),
            false => quote!(run),
        };
        quote! {
            ::kernel_runtime::__rt::#run(&__spec, move |__kctx: ::kernel_runtime::Ctx| {
                #prelude
                #(#rebinds)*
                #grid
                #block
            })
        }
    }
}

/// A cooperative kernel's grid (`this_grid()`) on the CPU backend.
pub fn grid_binding(k: &Kernel) -> TokenStream {
    if !k.body.cooperative {
        return quote!();
    }
    quote! {
        #[allow(unused_variables)]
        let __kgrid = ::kernel_runtime::__rt::cpu_grid();
    }
}

/// A grid-level kernel's run, row by row (`__rt::run_grid`): `views` binds its views; with
/// `bounded`, the 1-D arrays' common length is `__bound`. With a `guard` (see
/// [`crate::split::guard`]), the rows learn the span of each in which it holds.
fn grid_run(k: &Kernel, guard: Option<&Guard>, views: TokenStream, bounded: bool) -> TokenStream {
    let bound = if bounded {
        quote!(__same_dims1[0])
    } else {
        quote!(::core::primitive::usize::MAX)
    };
    let span = match guard {
        Some(g) => {
            let span = &g.span;
            quote! {
                move |__kctx: ::kernel_runtime::Ctx, __bound: usize, __span: ::kernel_runtime::__rt::Span| {
                    #views
                    #span
                }
            }
        }
        None => quote!(|_, _, __row| __row),
    };
    let block = guard.map_or(&*k.func.block, |g| &g.body);
    quote! {{
        // The span's copy of the kernel's `let`s may leave some of them unused.
        #[allow(unused_variables, unused_mut)]
        let __span = #span;
        ::kernel_runtime::__rt::run_grid(
            &__spec,
            #bound,
            __span,
            move |__kctx: ::kernel_runtime::Ctx, __bound: usize, __inner: bool| {
                #views
                #block
            },
        )
    }}
}

/// A split kernel's run, whose thread loops are in its body (`body`): where `wide`, compiled
/// twice, once for CPUs with AVX-512 (closures inherit their function's target features).
fn split_run(
    k: &Kernel,
    body: TokenStream,
    dims: &[(syn::Ident, usize)],
    wide: bool,
) -> TokenStream {
    let name = &k.func.sig.ident;
    let check = k.options.boundscheck;
    let names: Vec<_> = k.params.iter().map(|p| &p.name).collect();
    let tys = k.params.iter().map(|p| p.view_ty(check));
    let run_split = match k.body.cooperative {
        true => quote!(run_split_cooperative),
        false => quote!(run_split),
    };
    let run = quote! {
        ::kernel_runtime::__rt::#run_split(__spec, move |__blk: &::kernel_runtime::__rt::BlockRun<'_>| {
            #body
        })
    };
    let (dn, dr): (Vec<_>, Vec<_>) = dims.iter().cloned().unzip();
    // A generic kernel's functions take its type parameters.
    let (decl, clause) = k.generic.as_ref().map(|g| g.decl()).unwrap_or_default();
    let sig = quote! {
        #decl (
            __spec: &::kernel_runtime::__rt::LaunchSpec,
            __launch: &#name,
            (#(#names,)*): (#(#tys,)*),
            (#(#dn,)*): (#([usize; #dr],)*),
        ) -> ::core::result::Result<(), ::kernel_runtime::__rt::KernelFault>
        where #clause
    };
    if !wide {
        return quote! {{
            fn __plain #sig { #run }
            __plain(&__spec, __launch, (#(#names,)*), (#(#dn,)*))
        }};
    }
    quote! {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
        unsafe fn __wide #sig { #run }
        fn __plain #sig { #run }
        #[cfg(target_arch = "x86_64")]
        if ::kernel_runtime::__rt::wide_vectors() {
            // SAFETY: the CPU has the features `__wide` is compiled for.
            unsafe { __wide(&__spec, __launch, (#(#names,)*), (#(#dn,)*)) }
        } else {
            __plain(&__spec, __launch, (#(#names,)*), (#(#dn,)*))
        }
        #[cfg(not(target_arch = "x86_64"))]
        __plain(&__spec, __launch, (#(#names,)*), (#(#dn,)*))
    }}
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
