//! The device side: a kernel's PTX entry point, and `#[device]` functions.

use crate::emit::launch_bounds;
use crate::kernel::fastmath;
use crate::kernel::rewrite::{self, Scope};
use crate::kernel::validate::{DeviceFn, Kernel};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The kernel's PTX entry (`extern "ptx-kernel"`, built only for nvptx64): each array arrives as
/// a pointer and its extents and is bound as a view tied to the launch, then the body runs. A
/// generic kernel's body is a generic function, and each instance an entry that calls it.
pub fn entry(k: &Kernel) -> TokenStream {
    let name = &k.func.sig.ident;
    let vis = &k.func.vis;
    let mut params: Vec<TokenStream> = k.params.iter().map(|p| p.ptx_params()).collect();
    let body = body(k, &mut params);
    let target = sm80_target(&k.body);
    let Some(g) = &k.generic else {
        let bounds = launch_bounds::statics(k, &[name.to_string()]);
        return device_block(quote! {
            #bounds
            #target
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, unused_unsafe, unused_mut, unused_variables)]
            #[allow(clippy::missing_safety_doc)]
            #vis unsafe extern "ptx-kernel" fn #name(#(#params),*) {
                #body
            }
        });
    };
    let inner = format_ident!("__kernel_body_{}", name);
    let (decl, clause) = g.decl();
    let counter = k.body.cooperative.then(|| format_ident!("__kgrid_barrier"));
    let args: Vec<_> = k
        .params
        .iter()
        .flat_map(|p| p.ptx_names())
        .chain(counter)
        .collect();
    let entries = g.instances.iter().map(|inst| {
        let entry = format_ident!("{}", inst.entry);
        let types = &inst.types;
        let mut params: Vec<TokenStream> = g
            .params_in(inst, &k.params)
            .iter()
            .map(|p| p.ptx_params())
            .collect();
        if k.body.cooperative {
            params.push(quote!(__kgrid_barrier: *mut u32));
        }
        quote! {
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, clippy::missing_safety_doc)]
            #vis unsafe extern "ptx-kernel" fn #entry(#(#params),*) {
                // SAFETY: the launcher passes this instance's parameters, as to any entry.
                unsafe { #inner::<#(#types),*>(#(#args),*) }
            }
        }
    });
    let entry_names: Vec<String> = g.instances.iter().map(|i| i.entry.clone()).collect();
    let bounds = launch_bounds::statics(k, &entry_names);
    device_block(quote! {
        #bounds
        #target
        #[inline(always)]
        #[allow(non_snake_case, unused_unsafe, unused_mut, unused_variables)]
        #[allow(clippy::missing_safety_doc)]
        unsafe fn #inner #decl (#(#params),*) where #clause {
            #body
        }
        #(#entries)*
    })
}

/// The device build's items, each for nvptx64 alone; at the module's level, where the crate's
/// `pub use` of a kernel finds its entry.
fn device_block(items: TokenStream) -> TokenStream {
    let items = syn::parse2::<syn::File>(items).map(|f| f.items);
    match items {
        Ok(items) => quote!(#(#[cfg(target_arch = "nvptx64")] #items)*),
        Err(e) => e.into_compile_error(),
    }
}

/// The statements of an entry: the context, the grid of a cooperative kernel (whose counter
/// joins `params`), the views, the body.
fn body(k: &Kernel, params: &mut Vec<TokenStream>) -> TokenStream {
    let mut block = k.func.block.clone();
    if k.options.fastmath {
        fastmath::rewrite(&mut block);
    }
    let check = k.options.boundscheck;
    let bindings = k.params.iter().map(|p| p.device_binding(check));
    let ctx_binding = rewrite::ctx_binding(Scope::Kernel);
    // A cooperative kernel's last parameter: the counter of its grid barriers.
    let grid = k.body.cooperative.then(|| {
        params.push(quote!(__kgrid_barrier: *mut u32));
        quote! {
            // SAFETY: the launcher passes the launch's zeroed counter, and launches this kernel
            // cooperatively only.
            let __kgrid = unsafe { __rt::gpu_grid(__kgrid_barrier) };
        }
    });
    quote! {
        use ::kernel_runtime::__rt;
        let __kctx = __rt::Ctx;
        // What the views and shared arrays of the launch borrow: nothing outlives it.
        let __launch_scope = ();
        let __launch = &__launch_scope;
        #ctx_binding
        #grid
        #(#bindings)*
        #block
    }
}

/// Where `body` calls what needs sm_80 (`mma_sync`, `memcpy_async`), the device build's refusal
/// of an older GPU. The check is the calling crate's, which the device build compiles for the
/// GPU chosen (its dependencies are compiled for none).
fn sm80_target(body: &crate::kernel::rewrite::Rewritten) -> TokenStream {
    let Some((span, name, what)) = body.sm80 else {
        return quote!();
    };
    let message = format!(
        "{name} needs a GPU of sm_80 or later ({what}): build the kernels for one: \
         `Builder::new().default_arch(\"sm_80\")` in build.rs, or KERNEL_PTX_ARCH=sm_80"
    );
    quote::quote_spanned! {span=>
        #[cfg(not(target_feature = "sm_80"))]
        ::core::compile_error!(#message);
    }
}

/// A `#[device]` function: `#[inline]`, unless it says otherwise (`#[inline(always)]`, Numba's
/// `forceinline`, CUDA's `__forceinline__`; `#[inline(never)]`, `__noinline__`), with the
/// thread's context bound where its body reads it.
pub fn function(d: DeviceFn) -> TokenStream {
    let DeviceFn {
        fastmath,
        mut func,
        body,
    } = d;
    let target = device_block(sm80_target(&body));
    if body.uses_ctx {
        let binding = rewrite::ctx_binding(Scope::Function);
        let block = &func.block;
        func.block = syn::parse_quote!({ #binding #block });
    }
    let inline =
        (!func.attrs.iter().any(|a| a.path().is_ident("inline"))).then(|| quote!(#[inline]));
    let checks = &body.checks;
    let func = fastmath::function(&func, quote!(#inline), fastmath);
    quote! {
        #target
        #(#checks)*
        #func
    }
}

/// What a `#[device]` function with an error leaves beside its `compile_error!`: a function of
/// its signature, so that its callers add no errors of their own.
pub fn stand_in(func: &syn::ItemFn) -> TokenStream {
    let sig = &func.sig;
    let vis = &func.vis;
    quote! {
        #[allow(dead_code, unused_variables)]
        #vis #sig {
            ::core::unreachable!()
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The `#[inline]` attributes of what `#[device]` makes of `item`.
    fn inlines(item: proc_macro2::TokenStream) -> Vec<String> {
        let d = crate::kernel::parse::device(quote!(), item)
            .and_then(crate::kernel::validate::device)
            .unwrap_or_else(|e| panic!("the function does not expand: {e}"));
        let file: syn::File = syn::parse2(super::function(d)).unwrap();
        let syn::Item::Fn(f) = &file.items[0] else {
            panic!("a function first")
        };
        f.attrs
            .iter()
            .filter(|a| a.path().is_ident("inline"))
            .map(|a| quote!(#a).to_string())
            .collect()
    }

    #[test]
    fn a_device_function_is_inline_unless_it_says_how() {
        let plain = inlines(quote!(
            fn twice(x: f32) -> f32 {
                2.0 * x
            }
        ));
        assert_eq!(plain, ["# [inline]"]);
        let always = inlines(quote!(
            #[inline(always)]
            fn twice(x: f32) -> f32 {
                2.0 * x
            }
        ));
        assert_eq!(always, ["# [inline (always)]"]);
        let never = inlines(quote!(
            #[inline(never)]
            fn twice(x: f32) -> f32 {
                2.0 * x
            }
        ));
        assert_eq!(never, ["# [inline (never)]"]);
    }
}
