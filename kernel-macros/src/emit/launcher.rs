//! The host side: the value named like the kernel, whose `launch` and `launch_with` check a
//! launch and send it to a GPU or to the CPU backend. What each argument does at each step is
//! the runtime's `KernelArg`; what is written here is what is specific to the kernel.

use crate::emit::cpu::CpuPlan;
use crate::kernel::params::Param;
use crate::kernel::validate::Kernel;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The launcher of `k`: its value, its PTX registration, its constants and launch methods.
pub fn launcher(k: &Kernel, plan: &CpuPlan) -> TokenStream {
    let name = &k.func.sig.ident;
    let value = launcher_struct(&docs(&k.func), &k.func.vis, name);
    let registration = register_ptx(name);
    let consts = consts(k, plan);
    let m = Methods::of(k);
    let ptx = embedded_ptx(&m.first_entry);
    let launch_with = launch_with(k, plan, &m);
    let forall = forall(k, &m);
    let cooperative = k.body.cooperative.then(max_cooperative_grid_blocks);
    let instances = instances(k);
    let args_ty = args_ty(k);
    let Methods {
        decl,
        bound,
        unsafety,
        safety,
        relaunch,
        ..
    } = &m;
    quote! {
        #value
        #registration
        #instances

        #[cfg(not(target_arch = "nvptx64"))]
        impl #name {
            #consts

            /// The PTX module holding this kernel (its crate's kernels), when the crate's
            /// `build.rs` compiled one.
            pub fn ptx(&self) -> ::core::option::Option<&'static str> {
                #ptx
            }

            /// Launches `blocks` blocks of `threads` threads (each an integer or a tuple of
            /// two or three), as Numba's `kernel[blocks, threads](args)`.
            #safety
            pub #unsafety fn launch #decl (
                &self,
                blocks: impl ::kernel_runtime::IntoDim3,
                threads: impl ::kernel_runtime::IntoDim3,
                args: #args_ty,
            ) -> ::core::result::Result<(), ::kernel_runtime::Error> #bound {
                let config = ::kernel_runtime::LaunchConfig::new(blocks, threads).map_err(|reason| {
                    ::kernel_runtime::Error::InvalidLaunch { kernel: Self::NAME, reason }
                })?;
                #relaunch
            }

            #forall
            #cooperative
            #launch_with
        }
    }
}

/// How the launcher's methods are generic: not at all for a plain kernel; over a generic
/// kernel's type parameters, bounded by its instances, each of which picks its PTX entry.
struct Methods {
    /// `<T: Bounds + DeviceCopy>`.
    decl: TokenStream,
    /// `where (T,): KernelInstance<kernel>`.
    bound: TokenStream,
    /// The entry the launch's types pick.
    entry: TokenStream,
    /// The first entry's name, which tells whether the crate's PTX module holds the kernel.
    first_entry: String,
    /// `unsafe` for a kernel that takes raw pointers, and the `# Safety` section of its
    /// launches' docs.
    unsafety: TokenStream,
    safety: TokenStream,
    /// `launch` and `forall`'s call of `launch_with(config, args)`.
    relaunch: TokenStream,
}

impl Methods {
    fn of(k: &Kernel) -> Methods {
        let name = &k.func.sig.ident;
        let (unsafety, safety) = match k.func.sig.unsafety {
            Some(u) => (
                quote!(#u),
                quote! {
                    ///
                    /// # Safety
                    /// Each raw pointer argument must address memory of the launch's device,
                    /// valid for every access the kernel makes through it until the launch
                    /// returns (on a GPU, until the work queued before the next wait is done),
                    /// and the launch's threads must not race on it (see
                    /// `kernel_runtime::host::ptr`).
                },
            ),
            None => (quote!(), quote!()),
        };
        let relaunch = match k.func.sig.unsafety {
            // SAFETY (of the generated block): the caller's promise, as `launch_with` asks.
            Some(_) => quote!(unsafe { self.launch_with(config, args) }),
            None => quote!(self.launch_with(config, args)),
        };
        let Some(g) = &k.generic else {
            return Methods {
                decl: quote!(),
                bound: quote!(),
                entry: quote!(Self::NAME),
                first_entry: name.to_string(),
                unsafety,
                safety,
                relaunch,
            };
        };
        let (decl, clause) = g.decl();
        let tuple = g.tuple();
        let instance = quote!(::kernel_runtime::KernelInstance<#name>);
        Methods {
            decl,
            bound: quote!(where #clause #tuple: #instance),
            entry: quote!(<#tuple as #instance>::ENTRY),
            first_entry: g.instances[0].entry.clone(),
            unsafety,
            safety,
            relaunch,
        }
    }
}

/// A generic kernel's instances: the PTX entry each type tuple picks.
fn instances(k: &Kernel) -> TokenStream {
    let Some(g) = &k.generic else {
        return quote!();
    };
    let name = &k.func.sig.ident;
    let impls = g.instances.iter().map(|i| {
        let (types, entry) = (&i.types, &i.entry);
        quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            impl ::kernel_runtime::KernelInstance<#name> for (#(#types,)*) {
                const ENTRY: &'static str = #entry;
            }
        }
    });
    quote!(#(#impls)*)
}

/// A cooperative kernel's `max_cooperative_grid_blocks`, as Numba's; a generic kernel's is the
/// least of its instances'.
fn max_cooperative_grid_blocks() -> TokenStream {
    let no_ptx = no_ptx_reason();
    quote! {
        /// The most blocks of `threads` threads (with `dynamic_shared_bytes` of dynamic shared
        /// memory each) that a launch of this cooperative kernel may have on `device`: what
        /// can be resident at once, as Numba's `kernel.max_cooperative_grid_blocks(blockdim,
        /// dynsmemsize)`.
        pub fn max_cooperative_grid_blocks(
            &self,
            device: &::kernel_runtime::Device,
            threads: impl ::kernel_runtime::IntoDim3 + ::core::marker::Copy,
            dynamic_shared_bytes: usize,
        ) -> ::core::result::Result<u32, ::kernel_runtime::Error> {
            let mut blocks = u32::MAX;
            for &(entry, _) in Self::INSTANCES {
                blocks = blocks.min(::kernel_runtime::__rt::max_cooperative_grid_blocks(
                    device,
                    entry,
                    self.ptx().ok_or(#no_ptx),
                    threads,
                    dynamic_shared_bytes,
                    Self::STATIC_SHARED_BYTES,
                )?);
            }
            ::core::result::Result::Ok(blocks)
        }
    }
}

/// `forall`: the configuration Numba's `kernel.forall(tasks)` takes, then `launch_with`.
fn forall(k: &Kernel, m: &Methods) -> TokenStream {
    let Methods {
        decl,
        bound,
        entry,
        unsafety,
        safety,
        relaunch,
        ..
    } = m;
    let (parts, devices) = arg_parts(k, true);
    let args_ty = args_ty(k);
    let no_ptx = no_ptx_reason();
    quote! {
        /// Launches a thread per task for `tasks` tasks, as Numba's
        /// `kernel.forall(tasks)(args)`: one-dimensional blocks of the size the GPU's occupancy
        /// calculator gives this kernel (256 threads on the CPU backend), enough of them to
        /// cover the tasks; the kernel tests `grid(1) < tasks` itself. No task, no launch.
        #safety
        pub #unsafety fn forall #decl (
            &self,
            tasks: usize,
            args: #args_ty,
        ) -> ::core::result::Result<(), ::kernel_runtime::Error> #bound {
            let config = {
                #parts
                ::kernel_runtime::__rt::forall_config(
                    #entry,
                    self.ptx().ok_or(#no_ptx),
                    tasks,
                    #devices,
                )?
            };
            match config {
                ::core::option::Option::Some(config) => #relaunch,
                ::core::option::Option::None => ::core::result::Result::Ok(()),
            }
        }
    }
}

/// The kernel's constants: its name, shared bytes, PTX parameters and how the CPU runs it.
fn consts(k: &Kernel, plan: &CpuPlan) -> TokenStream {
    let name_str = k.func.sig.ident.to_string();
    let layout = &k.layout;
    let cooperative = k.body.cooperative;
    let instances = ptx_instances(k);
    let split = plan.split.is_some();
    let barriers = k.options.barriers || k.body.barriers;
    quote! {
        /// The kernel's name: its PTX entry point.
        pub const NAME: &'static str = #name_str;
        /// The bytes of static shared memory its `shared_array!`s take.
        pub const STATIC_SHARED_BYTES: usize = #layout.1;
        /// The PTX entry points (one, or one per instance of a generic kernel) and the
        /// parameters of each, in order: `ptr` and one `usize` per dimension for each array,
        /// the type's name for each scalar or struct, and `ptr` for a cooperative kernel's
        /// grid barrier counter.
        pub const INSTANCES: &'static [(&'static str, &'static [&'static str])] = &[#instances];
        /// Whether the CPU backend runs this kernel split at its barriers and warp
        /// collectives into thread loops (else, with either, as coroutines).
        pub const SPLIT_AT_BARRIERS: bool = #split;
        /// Whether the kernel has barriers or warp collectives (the CPU backend then splits
        /// it or runs its threads as coroutines).
        pub const USES_BARRIERS: bool = #barriers;
        /// Whether the kernel waits at grid barriers (`grid_sync()`): every launch of it is
        /// cooperative, its grid no larger than what can be resident at once.
        pub const COOPERATIVE: bool = #cooperative;
    }
}

/// `INSTANCES`: each PTX entry of `k` and its parameters.
fn ptx_instances(k: &Kernel) -> TokenStream {
    // A cooperative kernel's grid barriers take a counter, after the arguments.
    let counter = k.body.cooperative.then(|| "ptr".to_string());
    let entry = |name: &str, params: &[Param]| {
        let abi = params.iter().flat_map(|p| p.abi()).chain(counter.clone());
        quote!((#name, &[#(#abi),*]))
    };
    let Some(g) = &k.generic else {
        return entry(&k.func.sig.ident.to_string(), &k.params);
    };
    let each = g
        .instances
        .iter()
        .map(|i| entry(&i.entry, &g.params_in(i, &k.params)));
    quote!(#(#each),*)
}

/// The argument type of `launch`: one argument's, or a tuple of them.
fn args_ty(k: &Kernel) -> TokenStream {
    let tys: Vec<_> = k.params.iter().map(|p| p.arg_ty()).collect();
    match tys.as_slice() {
        [one] => one.clone(),
        _ => quote!((#(#tys,)*)),
    }
}

/// The statements that name the parts of `args` (borrowed from it where `by_ref`), by-value
/// arguments as the runtime's `Value`s, and the list of the parts' names and devices that
/// `launch_device` and `forall_config` take.
fn arg_parts(k: &Kernel, by_ref: bool) -> (TokenStream, TokenStream) {
    let names: Vec<_> = k.params.iter().map(|p| &p.name).collect();
    let args = if by_ref { quote!(&args) } else { quote!(args) };
    let destructure = match names.as_slice() {
        [one] => quote!(let #one = #args;),
        _ => quote!(#[allow(unused_variables)] let (#(#names,)*) = #args;),
    };
    let values = k.params.iter().filter(|p| p.is_value()).map(|p| {
        let n = &p.name;
        if by_ref {
            quote! {
                let #n = ::kernel_runtime::__rt::Value(*#n);
                let #n = &#n;
            }
        } else {
            quote!(let #n = ::kernel_runtime::__rt::Value(#n);)
        }
    });
    // A part borrowed from `args` is a reference already.
    let borrow = if by_ref { quote!() } else { quote!(&) };
    let devices = names.iter().map(|n| {
        let n_str = n.to_string();
        quote!((#n_str, ::kernel_runtime::__rt::KernelArg::device(#borrow #n)))
    });
    (quote!(#destructure #(#values)*), quote!(&[#(#devices),*]))
}

/// `launch_with`: the device and configuration checked, then the GPU's launch, checked mode's
/// run or the fast CPU run.
fn launch_with(k: &Kernel, plan: &CpuPlan, m: &Methods) -> TokenStream {
    let Methods {
        decl,
        bound,
        entry,
        unsafety,
        safety,
        ..
    } = m;
    let (parts, devices) = arg_parts(k, false);
    let args_ty = args_ty(k);
    let thread_context = plan.thread_context;
    let grid_level = plan.grid_level;
    let cooperative = k.body.cooperative;
    let no_ptx = no_ptx_reason();
    let check_cooperative = cooperative.then(|| {
        quote! {
            ::kernel_runtime::__rt::check_cooperative(
                &__device, #entry, self.ptx().ok_or(#no_ptx), &config, Self::STATIC_SHARED_BYTES,
            )?;
        }
    });
    let gpu = gpu_launch(k, entry);
    let checked = crate::emit::checked::launch(k, plan);
    let fast = plan.launch(k);
    quote! {
        /// Launches with a full configuration: dynamic shared memory, explicit device.
        #safety
        pub #unsafety fn launch_with #decl (
            &self,
            config: ::kernel_runtime::LaunchConfig,
            args: #args_ty,
        ) -> ::core::result::Result<(), ::kernel_runtime::Error> #bound {
            #parts
            // What the shared arrays of the launch borrow (the views borrow the arrays): a
            // kernel cannot keep either past the launch.
            #[allow(unused_variables)]
            let __launch = self;
            let __device = ::kernel_runtime::__rt::launch_device(Self::NAME, &config, #devices)?;
            config
                .validate(__device.limits(), Self::STATIC_SHARED_BYTES)
                .map_err(|reason| ::kernel_runtime::Error::InvalidLaunch { kernel: Self::NAME, reason })?;
            #check_cooperative
            if ::kernel_runtime::__rt::on_gpu(&__device) {
                #gpu
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
                #checked
            }
            #fast
        }
    }
}

/// A GPU launch: a pointer to each PTX parameter, in order, as the arguments give them.
fn gpu_launch(k: &Kernel, entry: &TokenStream) -> TokenStream {
    let no_ptx = no_ptx_reason();
    let names = k.params.iter().map(|p| &p.name);
    // A cooperative launch adds the counter of its grid barriers.
    let count = k.params.iter().map(|p| p.abi().len()).sum::<usize>() + k.body.cooperative as usize;
    let pushes = quote! {
        let mut __params = ::kernel_runtime::__rt::gpu_params(#count);
        #(::kernel_runtime::__rt::KernelArg::push_gpu(&#names, &mut __params);)*
    };
    if k.body.cooperative {
        return quote! {
            #pushes
            // SAFETY: one pointer per PTX parameter but the grid barriers' counter, which the
            // cooperative launch adds, of its type, in order (`INSTANCES`); the arrays live
            // on the launch's device, borrowed for the launch.
            return unsafe {
                ::kernel_runtime::__rt::cuda_launch_cooperative(
                    &__device, #entry, self.ptx().ok_or(#no_ptx), &config, Self::STATIC_SHARED_BYTES, &mut __params,
                )
            };
        };
    }
    quote! {
        #pushes
        // SAFETY: one pointer per PTX parameter, of its type, in order (`INSTANCES`); the
        // arrays live on the launch's device, borrowed for the launch.
        return unsafe {
            ::kernel_runtime::__rt::cuda_launch(
                &__device, #entry, self.ptx().ok_or(#no_ptx), &config, Self::STATIC_SHARED_BYTES, &mut __params,
            )
        };
    }
}

/// The function's doc attributes, which the launcher's value takes over.
pub fn docs(func: &syn::ItemFn) -> Vec<&syn::Attribute> {
    func.attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect()
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

/// `Some(include_str!(..))` of the PTX module the crate's `build.rs` wrote, where it holds
/// `kernel`'s entry point, or `None`.
pub fn embedded_ptx(kernel: &impl std::fmt::Display) -> TokenStream {
    match ptx_holding(&format!(".entry {kernel}(")) {
        Some(p) => quote!(::core::option::Option::Some(::core::include_str!(#p))),
        None => quote!(::core::option::Option::None),
    }
}

/// Why a kernel whose [`embedded_ptx`] is `None` has none, for the error of a GPU launch.
pub fn no_ptx_reason() -> &'static str {
    match ptx_path() {
        None => {
            "its crate's build.rs wrote no PTX module: it must call `kernel_build::build()`, on a \
             machine with the nvptx64 toolchain (see kernel-build)"
        }
        Some(_) => {
            "the PTX module its crate's build.rs compiled from the library (src/) does not hold \
             it: a kernel in tests/, examples/ or benches/ gets none; define it in the library"
        }
    }
}

/// The path of the PTX module the crate's `build.rs` wrote, where its text holds `needle`.
pub fn ptx_holding(needle: &str) -> Option<String> {
    ptx_path().filter(|p| std::fs::read_to_string(p).is_ok_and(|ptx| ptx.contains(needle)))
}

/// The PTX module the crate's `build.rs` wrote (`OUT_DIR/kernel_ptx.txt`), if there is one.
fn ptx_path() -> Option<String> {
    let dir = std::env::var_os("OUT_DIR")?;
    let path = std::path::Path::new(&dir).join("kernel_ptx.txt");
    path.is_file().then(|| path.to_str().map(str::to_string))?
}

/// What a `#[kernel]` with an error leaves beside its `compile_error!`: the launcher's name with
/// methods that take any arguments, so that the user's `kernel.launch(..)` calls add no errors
/// of their own to the one that matters.
pub fn stand_in(func: &syn::ItemFn) -> TokenStream {
    let name = &func.sig.ident;
    let value = launcher_struct(&docs(func), &func.vis, name);
    let name_str = name.to_string();
    quote! {
        #value
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(dead_code, unused_variables)]
        impl #name {
            pub const NAME: &'static str = #name_str;
            pub const STATIC_SHARED_BYTES: usize = 0;
            pub const SPLIT_AT_BARRIERS: bool = false;
            pub const USES_BARRIERS: bool = false;
            pub const COOPERATIVE: bool = false;
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
            pub fn forall<A>(&self, tasks: usize, args: A)
                -> ::core::result::Result<(), ::kernel_runtime::Error>
            {
                ::core::result::Result::Ok(())
            }
        }
    }
}
