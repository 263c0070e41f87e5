//! The host side: the value named like the kernel, which implements the runtime's `Kernel`
//! (what the kernel is: `META`) and whose `launch`, `launch_with` and `forall` hand the
//! launch to the runtime (`__rt::launch`), with the kernel's bodies. The runtime drives every
//! launch; what is written here is what is specific to the kernel.

use crate::emit::cpu::CpuPlan;
use crate::kernel::params::Param;
use crate::kernel::validate::Kernel;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The launcher of `k`: its value, its PTX registration, its description, its launch methods
/// and its CPU bodies.
pub fn launcher(k: &Kernel, plan: &CpuPlan) -> TokenStream {
    let name = &k.func.sig.ident;
    let value = launcher_struct(&docs(&k.func), &k.func.vis, name);
    let registration = register_ptx(name);
    let meta = meta(k, plan);
    let m = Methods::of(k);
    let methods = methods(k, &m);
    let run = run(k, plan, &m);
    let instances = instances(k);
    let aliases = aliases(k);
    quote! {
        #value
        #registration
        #[cfg(not(target_arch = "nvptx64"))]
        impl #name {
            #methods
        }
        // The rest of the host's items, in a block that names the runtime once (as serde's
        // derives do).
        #[cfg(not(target_arch = "nvptx64"))]
        const _: () = {
            use ::kernel_runtime::__rt;
            #instances
            impl __rt::Kernel for #name {
                const META: __rt::KernelMeta = #meta;
            }
            #aliases
            impl #name {
                #run
            }
        };
    }
}

/// `__Sig`, the parameters' types as a tuple, and `__Views`, the bodies' views of them (whose
/// types the compiler's messages about a body then name); a generic kernel's take its type
/// parameters.
fn aliases(k: &Kernel) -> TokenStream {
    let params = k.params.iter().map(|p| p.param_ty(k.generic_in(p)));
    let views = k
        .params
        .iter()
        .map(|p| p.view_ty(k.options.boundscheck, k.generic_in(p)));
    let names = k.generic.as_ref().map(|g| g.names()).unwrap_or_default();
    quote! {
        type __Sig<#(#names),*> = (#(#params,)*);
        type __Views<'v, #(#names),*> = (#(#views,)*);
    }
}

/// How the launcher's methods are generic: not at all for a plain kernel; over a generic
/// kernel's type parameters, bounded by its instances, each of which picks its PTX entry.
struct Methods {
    /// `<T: Bounds + DeviceCopy>`.
    decl: TokenStream,
    /// `where (T,): KernelInstance<kernel>`.
    bound: TokenStream,
    /// `::<T>`, naming the bodies of an instance.
    turbofish: TokenStream,
    /// The entry the launch's types pick.
    entry: TokenStream,
    /// `unsafe` for a kernel that takes raw pointers, and the `# Safety` section of its
    /// launches' docs.
    unsafety: TokenStream,
    safety: TokenStream,
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
        let name_str = name.to_string();
        let Some(g) = &k.generic else {
            return Methods {
                decl: quote!(),
                bound: quote!(),
                turbofish: quote!(),
                entry: quote!(#name_str),
                unsafety,
                safety,
            };
        };
        let (decl, clause) = g.decl();
        let tuple = g.tuple();
        let names = g.names();
        let instance = quote!(::kernel_runtime::__rt::KernelInstance<#name>);
        Methods {
            decl,
            bound: quote!(where #clause #tuple: #instance),
            turbofish: quote!(::<#(#names),*>),
            entry: quote!(<#tuple as #instance>::ENTRY),
            unsafety,
            safety,
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
            impl __rt::KernelInstance<#name> for (#(#types,)*) {
                const ENTRY: &'static str = #entry;
            }
        }
    });
    // Each instance meets the type parameters' bounds, checked where it is listed, whether
    // or not anything launches it.
    let (params, predicates) = g.decl();
    let checks = g.instances.iter().map(|i| {
        let types = &i.types;
        let span = types.first().map_or_else(Span::call_site, |t| t.span());
        quote_spanned!(span=> __bounds::<#(#types),*>();)
    });
    quote! {
        #(#impls)*
        const _: () = {
            #[allow(dead_code)]
            fn __bounds #params () where #predicates {}
            #[allow(dead_code)]
            fn __instances() { #(#checks)* }
        };
    }
}

/// The kernel's description: its name, parameters, PTX entries, shared bytes, PTX module and
/// how the CPU backend runs it.
fn meta(k: &Kernel, plan: &CpuPlan) -> TokenStream {
    let name_str = k.func.sig.ident.to_string();
    let params = k.params.iter().map(|p| p.name.to_string());
    let instances = ptx_instances(k);
    let shared = crate::emit::has_layout(k).then(|| {
        let layout = &k.layout;
        quote!(static_shared_bytes: #layout.1,)
    });
    let first = match &k.generic {
        Some(g) => g.instances[0].entry.clone(),
        None => name_str.clone(),
    };
    let ptx = embedded_ptx(&first);
    let bounds = crate::emit::launch_bounds::meta_field(k);
    let dynamic = k
        .options
        .dynamic_shared
        .as_ref()
        .map(|bytes| quote_spanned!(bytes.span()=> dynamic_shared_bytes: #bytes,));
    let flags = [
        ("barriers", k.has_barriers()),
        ("split", plan.split.is_some()),
        ("cooperative", k.body.cooperative),
        ("thread_context", plan.thread_context),
        ("grid_level", plan.grid_level),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(flag, _)| {
        let flag = format_ident!("{}", flag);
        quote!(#flag: true,)
    });
    quote! {
        __rt::KernelMeta {
            name: #name_str,
            params: &[#(#params),*],
            instances: &[#instances],
            ptx: #ptx,
            #shared
            #bounds
            #dynamic
            #(#flags)*
            ..__rt::KernelMeta::BASE
        }
    }
}

/// `launch`, `forall` and `launch_with`, each handing its sizing and its arguments to `__go`
/// (see [`run`]).
fn methods(k: &Kernel, m: &Methods) -> TokenStream {
    let Methods {
        decl,
        bound,
        unsafety,
        safety,
        turbofish,
        ..
    } = m;
    let rt = quote!(::kernel_runtime::__rt);
    let params: Vec<_> = k
        .params
        .iter()
        .map(|p| p.param_ty(k.generic_in(p)))
        .collect();
    let (args_ty, args) = match params.as_slice() {
        [one] => (quote!(impl #rt::KernelArg<#one>), quote!((args,))),
        _ => (quote!(impl #rt::KernelArgs<(#(#params,)*)>), quote!(args)),
    };
    let go = |sizing: TokenStream| {
        let call = quote!(self.__go #turbofish (#rt::Sizing::#sizing, #args));
        match unsafety.is_empty() {
            true => call,
            // SAFETY (of the generated block): the caller's promise, passed on.
            false => quote!(unsafe { #call }),
        }
    };
    let (launch, forall, launch_with) = (
        go(quote!(blocks(blocks, threads))),
        go(quote!(Tasks(tasks))),
        go(quote!(Config(config))),
    );
    let result = quote!(::core::result::Result<(), #rt::Error>);
    quote! {
        /// Launches `blocks` blocks of `threads` threads, as Numba's `kernel[blocks, threads](args)`.
        #safety
        pub #unsafety fn launch #decl (
            &self,
            blocks: impl #rt::IntoDim3,
            threads: impl #rt::IntoDim3,
            args: #args_ty,
        ) -> #result #bound {
            #launch
        }

        /// Launches a thread per task, in blocks the occupancy calculator sizes, as Numba's
        /// `kernel.forall(tasks)(args)`; the kernel tests `grid(1) < tasks` itself.
        #safety
        pub #unsafety fn forall #decl (&self, tasks: usize, args: #args_ty) -> #result #bound {
            #forall
        }

        /// Launches with a full configuration: dynamic shared memory, a device or a stream.
        #safety
        pub #unsafety fn launch_with #decl (
            &self,
            config: #rt::LaunchConfig,
            args: #args_ty,
        ) -> #result #bound {
            #launch_with
        }
    }
}

/// `__go`, what the launch methods call: their arguments as the launch holds them, to `__run`,
/// which runs the kernel's instance through the runtime's `launch`. `__go` is generic over what
/// the caller passes; `__run` is not (but for a generic kernel's type parameters), so the
/// kernel's CPU code is compiled once, in its crate.
fn run(k: &Kernel, plan: &CpuPlan, m: &Methods) -> TokenStream {
    let Methods {
        decl,
        bound,
        unsafety,
        turbofish,
        ..
    } = m;
    let sig = match &k.generic {
        Some(g) => {
            let names = g.names();
            quote!(__Sig<#(#names),*>)
        }
        None => quote!(__Sig),
    };
    let bodies = crate::emit::cpu::bodies(k, plan);
    let checked = crate::emit::checked::body(k, plan);
    let instance = instance(k, plan, m, checked.is_some());
    // A kernel whose views do not say whether they check indices (one without arrays) names it.
    let check = k.params.iter().all(|p| !p.is_array()).then(|| {
        let check = k.options.boundscheck;
        quote!(::<_, _, _, _, #check>)
    });
    let result = quote!(::core::result::Result<(), __rt::Error>);
    quote! {
        #unsafety fn __go #decl (&self, sizing: __rt::Sizing, args: impl __rt::KernelArgs<#sig>) -> #result #bound {
            // SAFETY: no promise for a kernel without raw pointers; the caller's for one with them.
            unsafe { self.__run #turbofish (sizing, __rt::Args::new(args)) }
        }

        unsafe fn __run #decl (&self, sizing: __rt::Sizing, args: __rt::Args<'_, #sig>) -> #result #bound {
            #bodies
            #checked
            #instance
            // SAFETY: the instance is this kernel's; pointers are the caller's promise.
            unsafe { __rt::launch #check (self, sizing, args, instance) }
        }
    }
}

/// The instance a launch runs: its PTX entry and its CPU bodies (`own_checked`: checked mode's
/// differs from the fast one).
fn instance(k: &Kernel, plan: &CpuPlan, m: &Methods, own_checked: bool) -> TokenStream {
    let entry = &m.entry;
    let fast = plan.form(k);
    let checked = match own_checked {
        true => quote!(__checked),
        false => quote!(__fast),
    };
    quote! {
        let (entry, fast) = (#entry, #fast);
        let instance = __rt::Instance::new(entry, fast, #checked);
    }
}

/// `META.instances`: each PTX entry of `k` and its parameters.
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
    let how = format!(
        " A kernel: launch it with `{name}.launch(blocks, threads, (args..))`, Numba's \
         `{name}[blocks, threads](args)`; it is not called as a function."
    );
    value_struct(docs, &how, vis, name)
}

/// The unit struct `name`, the value host code calls a kernel's (or a `#[vectorize]`,
/// `#[stencil]` function's) methods on, with the function's `docs` and `how` it is called.
pub fn value_struct(
    docs: &[impl quote::ToTokens],
    how: &str,
    vis: &syn::Visibility,
    name: &syn::Ident,
) -> TokenStream {
    quote! {
        #(#docs)*
        #[doc = #how]
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;
    }
}

/// What a function that its launcher maps over whole arrays expands to (`#[vectorize]`,
/// `#[guvectorize]`): its element types' `checks`, the function `func` it keeps (renamed,
/// hidden), the PTX `entry`, the unit struct `value` named `name`, the `Kernel` record of
/// `params` of kinds `abi`, and the `methods` host code calls on the value.
pub struct ArrayFunction<'a> {
    pub name: &'a syn::Ident,
    pub checks: TokenStream,
    pub func: &'a syn::ItemFn,
    /// The device build's `func` is `fastmath`'s.
    pub fastmath: bool,
    pub entry: TokenStream,
    pub value: TokenStream,
    pub params: &'a [String],
    pub abi: &'a [String],
    pub methods: TokenStream,
}

/// The items of an [`ArrayFunction`].
pub fn array_function(f: ArrayFunction<'_>) -> TokenStream {
    let ArrayFunction {
        name,
        checks,
        func,
        fastmath,
        entry,
        value,
        params,
        abi,
        methods,
    } = f;
    let name_str = name.to_string();
    let meta = grid_level_meta(&name_str, params, abi);
    let registration = register_ptx(name);
    let attrs = quote!(#[doc(hidden)] #[inline(always)] #[allow(non_snake_case)]);
    let func = crate::kernel::fastmath::function(func, attrs, fastmath);
    quote! {
        #checks

        #func

        #entry

        #value
        #registration

        #[cfg(not(target_arch = "nvptx64"))]
        impl ::kernel_runtime::__rt::Kernel for #name {
            #meta
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl #name {
            const NAME: &'static str = #name_str;
            #methods
        }
    }
}

/// The `Kernel` record of a function with one PTX entry `name` of parameters `params` (their
/// names) and `abi` (their PTX types), without shared memory or barriers, whose threads need
/// only their grid-level indices: a `#[vectorize]` or `#[stencil]` function's.
pub fn grid_level_meta(name: &str, params: &[String], abi: &[String]) -> TokenStream {
    let ptx = embedded_ptx(&name);
    quote! {
        const META: ::kernel_runtime::__rt::KernelMeta = ::kernel_runtime::__rt::KernelMeta {
            name: #name,
            params: &[#(#params),*],
            instances: &[(#name, &[#(#abi),*])],
            ptx: #ptx,
            grid_level: true,
            ..::kernel_runtime::__rt::KernelMeta::BASE
        };
    }
}

/// Adds the crate's PTX module, when its `build.rs` wrote one, to the program's list of
/// embedded modules (`__rt::PTX_MODULES`), under a name made from `kernel`.
pub fn register_ptx(kernel: &syn::Ident) -> TokenStream {
    let Some(path) = ptx_holding("") else {
        return quote!();
    };
    let item = format_ident!("__KERNEL_PTX_OF_{}", kernel);
    let text = module_text(&path);
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #[::kernel_runtime::__rt::linkme::distributed_slice(::kernel_runtime::__rt::PTX_MODULES)]
        #[linkme(crate = ::kernel_runtime::__rt::linkme)]
        #[allow(non_upper_case_globals)]
        #[doc(hidden)]
        static #item: &'static str = #text;
    }
}

/// `Ok(include_str!(..))` of the PTX module the crate's `build.rs` wrote, where it holds
/// `kernel`'s entry point, or `Err` of why there is none (the runtime's `NO_MODULE` or
/// `NOT_IN_MODULE`).
pub fn embedded_ptx(kernel: &impl std::fmt::Display) -> TokenStream {
    let rt = quote!(::kernel_runtime::__rt);
    match ptx_holding(&format!(".entry {kernel}(")) {
        Some(p) => {
            let text = module_text(&p);
            quote!(::core::result::Result::Ok(#text))
        }
        None if ptx_path().is_some() => quote!(::core::result::Result::Err(#rt::NOT_IN_MODULE)),
        None => quote!(::core::result::Result::Err(#rt::NO_MODULE)),
    }
}

/// The text of the module at `path` (the copy kernel-build writes with a NUL after it, which
/// [`ptx_holding`] gives and read as UTF-8), embedded as a C string by `include_bytes!` (see
/// `__rt::module_text`): no escaping of the text per kernel, and one copy of it in the program
/// however many kernels and crates embed it.
pub fn module_text(path: &str) -> TokenStream {
    quote! {
        // SAFETY: the macro read the file as UTF-8 (`ptx_holding`).
        unsafe { ::kernel_runtime::__rt::module_text(::core::include_bytes!(#path)) }
    }
}

/// The path of the embedded copy of the PTX module the crate's `build.rs` wrote (its file with
/// the extension `nul`, as kernel-build's `write_module` names it), where that copy is UTF-8
/// and its text holds `needle`.
pub fn ptx_holding(needle: &str) -> Option<String> {
    let embedded = std::path::Path::new(&ptx_path()?).with_extension("nul");
    let text = module_file(&embedded)?;
    text.contains(needle)
        .then(|| embedded.to_str().map(str::to_string))?
}

/// The text of the module file at `path`, read once for all the kernels of a crate: the last
/// file read is kept, with its length and modification time, while the compiler keeps this
/// macro loaded (a crate's expansions).
fn module_file(path: &std::path::Path) -> Option<std::sync::Arc<str>> {
    type Kept = Option<(
        std::path::PathBuf,
        u64,
        std::time::SystemTime,
        std::sync::Arc<str>,
    )>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(None);
    let meta = std::fs::metadata(path).ok()?;
    let (len, modified) = (meta.len(), meta.modified().ok()?);
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((p, l, m, text)) = &*kept {
        if (p.as_path(), *l, *m) == (path, len, modified) {
            return Some(text.clone());
        }
    }
    let text: std::sync::Arc<str> = std::fs::read_to_string(path).ok()?.into();
    *kept = Some((path.to_path_buf(), len, modified, text.clone()));
    Some(text)
}

/// The PTX module the crate's `build.rs` wrote for the target being compiled, if there is one:
/// `OUT_DIR/kernel_ptx.bin-<crate>.txt` for a binary or an example (cargo sets
/// `CARGO_BIN_NAME`), `kernel_ptx.test-<crate>.txt` for a test or a bench (cargo sets
/// `CARGO_TARGET_TMPDIR`), where that target has kernels of its own; else the library's,
/// `OUT_DIR/kernel_ptx.txt` (kernel-build's `targets` names them alike).
fn ptx_path() -> Option<String> {
    let dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR")?);
    let kind = if std::env::var_os("CARGO_BIN_NAME").is_some() {
        Some("bin")
    } else if std::env::var_os("CARGO_TARGET_TMPDIR").is_some() {
        Some("test")
    } else {
        None
    };
    let own = kind.zip(std::env::var("CARGO_CRATE_NAME").ok());
    let own = own.map(|(kind, krate)| dir.join(format!("kernel_ptx.{kind}-{krate}.txt")));
    let path = own
        .filter(|p| p.is_file())
        .unwrap_or_else(|| dir.join("kernel_ptx.txt"));
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
        impl ::kernel_runtime::__rt::Kernel for #name {
            const META: ::kernel_runtime::__rt::KernelMeta = ::kernel_runtime::__rt::KernelMeta {
                name: #name_str,
                params: &[],
                ptx: ::core::result::Result::Err("the kernel did not compile"),
                ..::kernel_runtime::__rt::KernelMeta::BASE
            };
        }
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(dead_code, unused_variables)]
        impl #name {
            pub fn launch<B, T, A>(&self, blocks: B, threads: T, args: A)
                -> ::core::result::Result<(), ::kernel_runtime::__rt::Error>
            {
                ::core::result::Result::Ok(())
            }
            pub fn launch_with<C, A>(&self, config: C, args: A)
                -> ::core::result::Result<(), ::kernel_runtime::__rt::Error>
            {
                ::core::result::Result::Ok(())
            }
            pub fn forall<A>(&self, tasks: usize, args: A)
                -> ::core::result::Result<(), ::kernel_runtime::__rt::Error>
            {
                ::core::result::Result::Ok(())
            }
        }
    }
}
