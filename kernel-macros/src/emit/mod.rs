//! Expansion: each `#[kernel]` becomes a device entry point (for nvptx64), a typed host
//! launcher named like the kernel, and the body the CPU backend runs.

pub mod checked;
pub mod derive;
pub mod vectorize;

use crate::kernel::params::Kind;
use crate::kernel::rewrite::{self, Scope};
use crate::kernel::validate::{DeviceFn, Kernel};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

pub fn kernel(k: Kernel) -> TokenStream {
    let Kernel {
        options,
        func,
        params,
        body,
        layout,
    } = k;
    let name = &func.sig.ident;
    let name_str = name.to_string();
    let vis = &func.vis;
    let block = &func.block;
    let check = options.boundscheck;
    let barriers = options.barriers || body.barriers;
    // Only grid-level indices tell this kernel's threads apart: the CPU backend may run a run of
    // 1-D blocks as one loop.
    let grid_level = !body.block_local && !barriers && !body.thread_context && !body.warp_context;
    let docs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();

    // The static shared-memory layout, computed and checked at compile time.
    let nshared = body.shared.len();
    let entries = body.shared.iter().map(|d| {
        let elem = &d.elem;
        let dims = &d.dims;
        quote!((
            ::kernel_runtime::__rt::array_bytes(::core::mem::size_of::<#elem>(), &[#(::kernel_runtime::__rt::extent(#dims)),*]),
            ::core::mem::align_of::<#elem>(),
        ))
    });
    let too_big = format!("kernel `{name_str}`: its static shared arrays take more than 48 KiB");
    // A total over the limit is reported at the last shared array, the one that tips it over.
    let at = body
        .shared
        .last()
        .map(|d| d.span)
        .unwrap_or_else(proc_macro2::Span::call_site);
    let shared_check = quote_spanned! {at=>
        const _: () = ::core::assert!(#layout.1 <= ::kernel_runtime::__rt::STATIC_LIMIT, #too_big);
    };
    let layout_items = quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const #layout: ([usize; #nshared], usize) = ::kernel_runtime::__rt::layout::<#nshared>([#(#entries),*]);
        #shared_check
    };

    // Every element and by-value type must be plain device data; the error points at the type.
    let type_checks = params.iter().map(|p| {
        let ty = match &p.kind {
            Kind::Array { elem, .. } => elem,
            Kind::Struct(ty) | Kind::Scalar(ty) => ty,
        };
        quote_spanned! {p.ty_span=>
            const _: () = ::kernel_runtime::__rt::assert_device_copy::<#ty>();
        }
    });

    let view_type = |rank: usize, mutable: bool| {
        let v = match (rank, mutable) {
            (1, false) => "View1",
            (1, true) => "View1Mut",
            (2, false) => "View2",
            (2, true) => "View2Mut",
            (3, false) => "View3",
            _ => "View3Mut",
        };
        format_ident!("{}", v)
    };

    // Host launcher: argument types, views, devices to check.
    let mut arg_tys = Vec::new();
    let mut host_views = Vec::new();
    let mut checked_views = Vec::new();
    let mut arrays = Vec::new();
    let mut rebinds = Vec::new();
    // The fast backend's closures rebind each view untraced (see `View1::__fast`).
    let mut fast_rebinds = Vec::new();
    let mut ptx_params = Vec::new();
    let mut device_views = Vec::new();
    let mut abi: Vec<String> = Vec::new();
    let mut by_rank: std::collections::BTreeMap<usize, Vec<&syn::Ident>> = Default::default();
    let mut cpu_tys = Vec::new();
    // A GPU launch: each parameter's values in locals, and a pointer to each, in PTX order.
    let mut gpu_values = Vec::new();
    let mut gpu_params = Vec::new();
    for p in &params {
        let n = &p.name;
        let n_str = n.to_string();
        match &p.kind {
            Kind::Array {
                rank,
                mutable,
                elem,
            } => {
                let ix = format_ident!("Ix{}", rank);
                let view = view_type(*rank, *mutable);
                let (amp, ptr) = if *mutable {
                    (quote!(&mut), quote!(__ptr_mut))
                } else {
                    (quote!(&), quote!(__ptr))
                };
                arg_tys.push(quote!(#amp ::kernel_runtime::DeviceArray<#elem, ::kernel_runtime::ndarray::#ix>));
                host_views.push(quote! {
                    // SAFETY: the view covers the array, which the launch borrows until the
                    // CPU backend has run every thread.
                    let #n = unsafe {
                        ::kernel_runtime::#view::<#elem, #check>::from_raw(#n.#ptr(), #n.__dims::<#rank>(), #n_str)
                    }
                    .within(#n);
                });
                let trace = if *mutable {
                    quote!(__shadows.writable(#n_str, &#n.shape()))
                } else {
                    quote!(__shadows.read_only())
                };
                checked_views.push(quote! {
                    // SAFETY: as for the plain view; the trace's shadow lives until the launch
                    // has run every thread.
                    let #n = unsafe {
                        let #n = ::kernel_runtime::#view::<#elem, #check>::from_raw(#n.#ptr(), #n.__dims::<#rank>(), #n_str);
                        #n.__traced(#trace)
                    }
                    .within(#n);
                });
                arrays.push(quote!((#n_str, #n.device())));
                by_rank.entry(*rank).or_default().push(n);
                cpu_tys.push(quote!(::kernel_runtime::#view<#elem, #check>));
                let mutability = if *mutable { quote!(mut) } else { quote!() };
                rebinds.push(quote!(#[allow(unused_mut)] let #mutability #n = #n;));
                fast_rebinds.push(quote!(#[allow(unused_mut)] let #mutability #n = #n.__fast();));
                let ptr_name = format_ident!("{}__ptr", n);
                let dims: Vec<_> = (0..*rank).map(|d| format_ident!("{}__d{}", n, d)).collect();
                ptx_params.push(quote!(#ptr_name: *mut #elem #(, #dims: usize)*));
                abi.push("ptr".into());
                abi.extend((0..*rank).map(|_| "usize".to_string()));
                let (gp, gd) = (
                    format_ident!("__gpu_{}", n),
                    format_ident!("__gpu_{}_dims", n),
                );
                gpu_values.push(quote! {
                    let #gp: u64 = #n.__device_ptr();
                    let #gd: [usize; #rank] = #n.__dims::<#rank>();
                });
                gpu_params.push(quote!(&#gp as *const u64 as *mut ::core::ffi::c_void));
                gpu_params.extend(
                    (0..*rank)
                        .map(|d| quote!(&#gd[#d] as *const usize as *mut ::core::ffi::c_void)),
                );
                device_views.push(quote! {
                    #[allow(unused_mut)]
                    let #mutability #n = unsafe {
                        ::kernel_runtime::#view::<#elem, #check>::from_raw(#ptr_name, [#(#dims),*], #n_str)
                    }
                    .within(__launch);
                });
            }
            Kind::Scalar(ty) | Kind::Struct(ty) => {
                arg_tys.push(quote!(#ty));
                cpu_tys.push(quote!(#ty));
                let m = user_mut(&func, n);
                rebinds.push(quote!(#[allow(unused_mut)] let #m #n = #n;));
                fast_rebinds.push(quote!(#[allow(unused_mut)] let #m #n = #n;));
                ptx_params.push(quote!(#n: #ty));
                abi.push(quote!(#ty).to_string().replace(' ', ""));
                gpu_params.push(quote!(&#n as *const #ty as *mut ::core::ffi::c_void));
                device_views.push(quote!(#[allow(unused_mut)] let #m #n = #n;));
            }
        }
    }
    let names: Vec<_> = params.iter().map(|p| &p.name).collect();
    let nparams = gpu_params.len();
    let (args_ty, destructure) = if params.len() == 1 {
        let t = &arg_tys[0];
        let n = names[0];
        (quote!(#t), quote!(let #n = args;))
    } else {
        (
            quote!((#(#arg_tys,)*)),
            quote!(#[allow(unused_variables)] let (#(#names,)*) = args;),
        )
    };

    let mut checked_block = crate::emit::checked::body(block);
    let ptx = embedded_ptx();
    let registration = register_ptx(name);
    let launcher = launcher_struct(&docs, vis, name);
    let ctx_binding = rewrite::ctx_binding(Scope::Kernel);

    // On the CPU: a kernel whose barriers the macro sees is split at them into thread loops when
    // its shape allows (and at its warp collectives); other barrier kernels run their threads
    // as coroutines.
    let split = if body.barriers && !options.barriers {
        let read_only: Vec<String> = params
            .iter()
            .filter(|p| matches!(p.kind, Kind::Array { mutable: false, .. }))
            .map(|p| p.name.to_string())
            .collect();
        let params: Vec<(String, bool)> = params
            .iter()
            .map(|p| (p.name.to_string(), !user_mut(&func, &p.name).is_empty()))
            .collect();
        crate::split::split(block, block_hint(&body.shared), &params, &read_only)
    } else {
        None
    };
    let split_at_barriers = split.is_some();
    if split_at_barriers {
        // The checked version calls collectives through the operands the split one gathers.
        crate::split::lockstep::meet_operands(&mut checked_block);
    }
    let thread_context = body.thread_context || body.warp_context && !split_at_barriers;
    // The CPU run of the kernel; `prelude` rebinds views, `dims` names the shared extents it uses.
    let cpu_run = |prelude: &TokenStream, dims: &[(syn::Ident, usize)], bounded: bool| match &split
    {
        Some(split) => {
            // A split kernel's thread loops are in its body: the body is compiled twice, once
            // for CPUs with AVX-512 (closures inherit their function's target features).
            let run = quote! {
                ::kernel_runtime::__rt::run_split(__spec, move |__blk: &::kernel_runtime::__rt::BlockRun<'_>| {
                    #prelude
                    #(#fast_rebinds)*
                    #split
                })
            };
            let (dn, dr): (Vec<_>, Vec<_>) = dims.iter().cloned().unzip();
            let sig = quote! {
                (
                    __spec: &::kernel_runtime::__rt::LaunchSpec,
                    __launch: &#name,
                    (#(#names,)*): (#(#cpu_tys,)*),
                    (#(#dn,)*): (#([usize; #dr],)*),
                ) -> ::core::result::Result<(), ::kernel_runtime::__rt::KernelFault>
            };
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
        None => {
            // A bounded run passes the arrays' common length to the body as `__bound`.
            let (run, bound, bound_param) = if bounded {
                (
                    quote!(run_bounded),
                    quote!(__same_dims1[0],),
                    quote!(, __bound: usize),
                )
            } else {
                (quote!(run), quote!(), quote!())
            };
            quote! {
                ::kernel_runtime::__rt::#run(&__spec, #bound move |__kctx: ::kernel_runtime::Ctx #bound_param| {
                    #prelude
                    #(#fast_rebinds)*
                    #block
                })
            }
        }
    };
    // Checked kernels get a second CPU version for the common launch whose arrays of one rank
    // all have one shape: there the views share their extents, so an index the kernel checked
    // against one array (`if i < c.len()`) is known valid for the others, the optimiser drops
    // those index checks and can vectorize the thread loop.
    // A grid-level kernel's 1-D arrays, even a single one, also take their length from the
    // launch's bound, which its thread loop runs up to first (see `__rt::run_bounded`).
    let groups: Vec<_> = by_rank
        .iter()
        .filter(|(rank, names)| (check && names.len() > 1) || (**rank == 1 && grid_level))
        .collect();
    let cpu_launch = if !groups.is_empty() {
        // One shared shape per rank, named `__same_dimsR`.
        let named: Vec<_> = groups
            .iter()
            .map(|(rank, _)| (format_ident!("__same_dims{}", rank), **rank))
            .collect();
        let dims: Vec<_> = named.iter().map(|(d, _)| d).collect();
        let commons = groups.iter().map(|(rank, names)| {
            quote!(::kernel_runtime::__rt::common_dims::<#rank>(&[#(#names.shape()),*]))
        });
        let bounded = grid_level && by_rank.contains_key(&1);
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
                    let #n = unsafe { #n.__with_dims(#d) };
                }
            })
        });
        let shared = cpu_run(&quote!(#(#reshapes)*), &named, bounded);
        let plain = cpu_run(&quote!(), &[], false);
        quote! {
            match (#(#commons,)*) {
                (#(::core::option::Option::Some(#dims),)*) => #shared,
                _ => #plain,
            }
        }
    } else {
        cpu_run(&quote!(), &[], false)
    };

    quote! {
        #layout_items
        #(#type_checks)*

        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, unused_unsafe, clippy::missing_safety_doc)]
        #vis unsafe extern "ptx-kernel" fn #name(#(#ptx_params),*) {
            #[allow(unused_variables)]
            let __kctx = ::kernel_runtime::Ctx;
            // What the views and shared arrays of the launch borrow: nothing outlives it.
            let __launch_scope = ();
            #[allow(unused_variables)]
            let __launch = &__launch_scope;
            #ctx_binding
            #(#device_views)*
            #block
        }

        #launcher
        #registration

        #[cfg(not(target_arch = "nvptx64"))]
        impl #name {
            /// The kernel's name: its PTX entry point.
            pub const NAME: &'static str = #name_str;
            /// The bytes of static shared memory its `shared_array!`s take.
            pub const STATIC_SHARED_BYTES: usize = #layout.1;
            /// The parameters of the PTX entry point, in order: `ptr` and one `usize` per
            /// dimension for each array, the type's name for each scalar or struct.
            pub const PTX_PARAMS: &'static [&'static str] = &[#(#abi),*];
            /// Whether the CPU backend runs this kernel split at its barriers and warp
            /// collectives into thread loops (else, with either, as coroutines).
            pub const SPLIT_AT_BARRIERS: bool = #split_at_barriers;
            /// Whether the kernel has barriers or warp collectives (the CPU backend then splits
            /// it or runs its threads as coroutines).
            pub const USES_BARRIERS: bool = #barriers;

            /// The PTX module holding this kernel (its crate's kernels), when the crate's
            /// `build.rs` compiled one.
            pub fn ptx(&self) -> ::core::option::Option<&'static str> {
                #ptx
            }

            /// Launches `blocks` blocks of `threads` threads (each an integer or a tuple of
            /// two or three), as Numba's `kernel[blocks, threads](args)`.
            pub fn launch(
                &self,
                blocks: impl ::kernel_runtime::IntoDim3,
                threads: impl ::kernel_runtime::IntoDim3,
                args: #args_ty,
            ) -> ::core::result::Result<(), ::kernel_runtime::Error> {
                let config = ::kernel_runtime::LaunchConfig::new(blocks, threads).map_err(|reason| {
                    ::kernel_runtime::Error::InvalidLaunch { kernel: Self::NAME, reason }
                })?;
                self.launch_with(config, args)
            }

            /// Launches with a full configuration: dynamic shared memory, explicit device.
            pub fn launch_with(
                &self,
                config: ::kernel_runtime::LaunchConfig,
                args: #args_ty,
            ) -> ::core::result::Result<(), ::kernel_runtime::Error> {
                #destructure
                // What the shared arrays of the launch borrow (the views borrow the arrays): a
                // kernel cannot keep either past the launch.
                #[allow(unused_variables)]
                let __launch = self;
                let __device = ::kernel_runtime::__rt::launch_device(Self::NAME, &config, &[#(#arrays),*])?;
                config
                    .validate(__device.limits(), Self::STATIC_SHARED_BYTES)
                    .map_err(|reason| ::kernel_runtime::Error::InvalidLaunch { kernel: Self::NAME, reason })?;
                if ::kernel_runtime::__rt::on_gpu(&__device) {
                    #(#gpu_values)*
                    let mut __params: [*mut ::core::ffi::c_void; #nparams] = [#(#gpu_params),*];
                    // SAFETY: one pointer per PTX parameter, of its type, in order; the arrays
                    // live on the launch's device, borrowed for the launch.
                    return unsafe {
                        ::kernel_runtime::__rt::cuda_launch(
                            &__device, Self::NAME, self.ptx(), &config, Self::STATIC_SHARED_BYTES, &mut __params,
                        )
                    };
                }
                let __spec = ::kernel_runtime::__rt::LaunchSpec {
                    kernel: Self::NAME,
                    grid: config.grid,
                    block: config.block,
                    shared_bytes: config.block_shared_bytes(Self::STATIC_SHARED_BYTES),
                    barriers: Self::USES_BARRIERS,
                    thread_context: #thread_context,
                    grid_level: #grid_level,
                };
                if ::kernel_runtime::__rt::checked(&__device) {
                    let mut __shadows = ::kernel_runtime::__rt::LaunchShadows::new(&__spec)
                        .map_err(|fault| fault.into_error(Self::NAME))?;
                    #(#checked_views)*
                    // Inlined into the thread loop, with the views' inline record of plain writes.
                    return __shadows.run(&__spec, #[inline(always)] move |__kctx: ::kernel_runtime::Ctx| {
                        #(#rebinds)*
                        #checked_block
                    })
                    .map_err(|fault| fault.into_error(Self::NAME));
                }
                #(#host_views)*
                #cpu_launch
                .map_err(|fault| fault.into_error(Self::NAME))
            }
        }
    }
}

/// The host-side value named like the kernel: a unit struct (documented as the function was)
/// whose methods launch it; absent from the device build, where the name is the PTX entry.
pub fn launcher_struct(
    docs: &[impl quote::ToTokens],
    vis: &syn::Visibility,
    name: &syn::Ident,
) -> TokenStream {
    quote! {
        #(#docs)*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;
    }
}

/// Adds the crate's PTX module, when its `build.rs` wrote one, to the program's list of
/// embedded modules (`__rt::PTX_MODULES`), under a name made from `kernel`.
pub fn register_ptx(kernel: &syn::Ident) -> TokenStream {
    let Some(path) = ptx_path() else {
        return quote!();
    };
    let item = format_ident!("__KERNEL_PTX_OF_{}", kernel);
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #[::kernel_runtime::__rt::linkme::distributed_slice(::kernel_runtime::__rt::PTX_MODULES)]
        #[linkme(crate = ::kernel_runtime::__rt::linkme)]
        #[allow(non_upper_case_globals)]
        #[doc(hidden)]
        static #item: &'static str = ::core::include_str!(#path);
    }
}

/// `Some(include_str!(..))` of the PTX module the crate's `build.rs` wrote, or `None`.
pub fn embedded_ptx() -> TokenStream {
    match ptx_path() {
        Some(p) => quote!(::core::option::Option::Some(::core::include_str!(#p))),
        None => quote!(::core::option::Option::None),
    }
}

/// The PTX module the crate's `build.rs` wrote (`OUT_DIR/kernel_ptx.txt`), if there is one.
fn ptx_path() -> Option<String> {
    let dir = std::env::var_os("OUT_DIR")?;
    let path = std::path::Path::new(&dir).join("kernel_ptx.txt");
    path.is_file().then(|| path.to_str().map(str::to_string))?
}

/// The block shape a kernel's first static shared array suggests (its last extent along x): a
/// tile `[TPB, TPB]` suggests `TPB × TPB` threads.
fn block_hint(shared: &[crate::kernel::rewrite::SharedDecl]) -> Option<crate::split::Hint> {
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

fn user_mut(func: &syn::ItemFn, name: &syn::Ident) -> TokenStream {
    for arg in &func.sig.inputs {
        if let syn::FnArg::Typed(pt) = arg {
            if let syn::Pat::Ident(pi) = &*pt.pat {
                if &pi.ident == name && pi.mutability.is_some() {
                    return quote!(mut);
                }
            }
        }
    }
    quote!()
}

pub fn device(d: DeviceFn) -> TokenStream {
    let DeviceFn { mut func, body } = d;
    if body.uses_ctx {
        let binding = rewrite::ctx_binding(Scope::Device);
        let block = &func.block;
        func.block = syn::parse_quote!({ #binding #block });
    }
    quote! {
        #[inline]
        #func
    }
}

/// What a `#[kernel]` with an error leaves beside its `compile_error!`: the launcher's name with
/// methods that take any arguments, so that the user's `kernel.launch(..)` calls add no errors
/// of their own to the one that matters.
pub fn kernel_stand_in(func: &syn::ItemFn) -> TokenStream {
    let name = &func.sig.ident;
    let docs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let launcher = launcher_struct(&docs, &func.vis, name);
    let name_str = name.to_string();
    quote! {
        #launcher
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(dead_code, unused_variables)]
        impl #name {
            pub const NAME: &'static str = #name_str;
            pub const STATIC_SHARED_BYTES: usize = 0;
            pub const SPLIT_AT_BARRIERS: bool = false;
            pub const USES_BARRIERS: bool = false;
            pub fn ptx(&self) -> ::core::option::Option<&'static str> {
                ::core::option::Option::None
            }
            pub fn launch<B, T, A>(&self, blocks: B, threads: T, args: A)
                -> ::core::result::Result<(), ::kernel_runtime::Error>
            {
                ::core::result::Result::Ok(())
            }
            pub fn launch_with<C, A>(&self, config: C, args: A)
                -> ::core::result::Result<(), ::kernel_runtime::Error>
            {
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// What a `#[device]` function with an error leaves beside its `compile_error!`: a function of
/// its signature, so that its callers add no errors of their own.
pub fn device_stand_in(func: &syn::ItemFn) -> TokenStream {
    let sig = &func.sig;
    let vis = &func.vis;
    quote! {
        #[allow(dead_code, unused_variables)]
        #vis #sig {
            ::core::unreachable!()
        }
    }
}
