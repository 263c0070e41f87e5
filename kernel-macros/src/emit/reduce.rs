//! `#[reduce]`: a reduction over a whole array by a binary operation, as Numba's
//! `cuda.reduce`.
//!
//! `#[reduce] fn sum(a: f32, b: f32) -> f32 { a + b }` keeps the operation and makes `sum` a
//! kernel of one pass (block `b` writes the reduction of its elements to `partials[b]`: each
//! thread folds its grid-stride elements, each warp folds its lanes' values with shuffles, and
//! the block's first thread folds its warps' values) with `sum.reduce(&array)` and
//! `sum.fold(&array, init)` on top. On a GPU `reduce` runs the pass over the array, then over
//! the blocks' values when there is more than one; on the CPU backend it folds chunks of the
//! array in parallel, then their results in order. The operation is taken to be associative
//! and commutative, as Numba takes it: the order in which values meet differs between devices.

use crate::kernel::params::{self, Kind};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType, Type};

/// Threads per block of the pass, a multiple of the warp's 32.
const THREADS: usize = 256;

pub fn reduce(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "`#[reduce]` takes no options",
        ));
    }
    let mut func: ItemFn = syn::parse2(item)?;
    let ty = signature(&func.sig)?;
    let crate::emit::Scalar {
        name,
        vis,
        docs,
        scalar,
    } = crate::emit::Scalar::take(&mut func, "__reduce_scalar_");
    let params: Vec<String> = func
        .sig
        .inputs
        .iter()
        .filter_map(|a| params::parse(a).ok().map(|p| p.name.to_string()))
        .collect();
    crate::kernel::rewrite::mapped_body(&mut func, &params)?;
    let pass = pass(&name, &vis, &docs, &scalar, &ty);
    let shuffled = quote_spanned! {ty.span()=>
        const _: () = ::kernel_runtime::__rt::assert_reducible::<#ty>();
    };
    let host = host(&name, &scalar, &ty);
    Ok(quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(non_snake_case)]
        #func

        #shuffled
        #pass
        #host
    })
}

/// The element type of `fn f(a: T, b: T) -> T`, or the error that refuses the signature.
fn signature(sig: &syn::Signature) -> syn::Result<Type> {
    let refuse = |span: &dyn quote::ToTokens, what: &str| Err(syn::Error::new_spanned(span, what));
    if sig.asyncness.is_some() || !sig.generics.params.is_empty() {
        return refuse(
            &sig.ident,
            "a reduction is a plain function of two values: `fn sum(a: f32, b: f32) -> f32`",
        );
    }
    let ret =
        match &sig.output {
            ReturnType::Type(_, t) => (**t).clone(),
            ReturnType::Default => return refuse(
                &sig.ident,
                "a reduction returns the value it makes of two: `fn sum(a: f32, b: f32) -> f32`",
            ),
        };
    let tys = sig
        .inputs
        .iter()
        .map(|a| {
            let p = params::parse(a)?;
            // Values, not arrays or references: which of them a warp moves is the compiler's
            // check of `Reducible`.
            match p.kind {
                Kind::Scalar(t) if quote!(#t).to_string() == "bool" => Err(syn::Error::new(
                    p.ty_span,
                    "a reduction's values move between a warp's lanes as their bytes, and only \
                     0 and 1 are `bool`s: reduce `u8`s of 0 and 1 (`max` for `any`, `min` for \
                     `all`)",
                )),
                Kind::Scalar(t) | Kind::Struct(t) => Ok(t),
                _ => Err(syn::Error::new(
                    p.ty_span,
                    "a reduction combines two values: numbers, complex numbers or \
                     `#[repr(C)]` structs of them, not arrays or references",
                )),
            }
        })
        .collect::<syn::Result<Vec<Type>>>()?;
    let same = |t: &Type| quote!(#t).to_string() == quote!(#ret).to_string();
    if tys.len() != 2 || !tys.iter().all(same) {
        return refuse(
            &sig.inputs,
            "a reduction takes two values of the type it returns: `fn sum(a: f32, b: f32) -> f32`",
        );
    }
    Ok(ret)
}

/// The pass, a `#[kernel]`: block `b` writes the reduction of its elements to `partials[b]`.
fn pass(
    name: &syn::Ident,
    vis: &syn::Visibility,
    docs: &[syn::Attribute],
    op: &syn::Ident,
    ty: &Type,
) -> TokenStream {
    let rt = quote!(::kernel_runtime::__rt);
    quote! {
        #(#docs)*
        ///
        /// One pass of the reduction: block `b` (by linear index) writes to `partials[b]` the
        /// reduction of the elements of `x` that its threads visit in a grid-stride loop over
        /// the launch's threads by linear index (nothing where they visit none). `reduce` and `fold` run it for a
        /// whole array.
        #[::kernel_runtime::__rt::kernel]
        #vis fn #name(x: &[#ty], partials: &mut [#ty]) {
            // Threads and blocks by linear index (x fastest), as warps are formed, so that a
            // launch of any shape folds each element once and each block into its own value.
            let (th, d) = (#rt::thread_idx(), #rt::block_dim());
            let (b, g) = (#rt::block_idx(), #rt::grid_dim());
            let t = (th.z as usize * d.y as usize + th.y as usize) * d.x as usize + th.x as usize;
            let width = d.x as usize * d.y as usize * d.z as usize;
            let block = (b.z as usize * g.y as usize + b.y as usize) * g.x as usize + b.x as usize;
            let stride = g.x as usize * g.y as usize * g.z as usize * width;
            let mut acc: #ty = #rt::zero();
            let mut have = 0u32;
            let mut i = block * width + t;
            while i < x.len() {
                acc = if have == 1 { #op(acc, x[i]) } else { x[i] };
                have = 1;
                i += stride;
            }
            // The lanes of this thread's warp: all 32 but in a last, partial warp.
            let lanes = (width - t / 32 * 32).min(32) as u32;
            let mask = if lanes == 32 { u32::MAX } else { (1u32 << lanes) - 1 };
            let lane = #rt::lane_id();
            let mut offset = 16u32;
            while offset > 0 {
                let other = #rt::shfl_down_words(mask, acc, offset);
                let other_has = #rt::shfl_down_sync(mask, have, offset);
                if lane + offset < lanes && other_has == 1 {
                    acc = if have == 1 { #op(acc, other) } else { other };
                    have = 1;
                }
                offset /= 2;
            }
            let mut values = shared_array![#ty; 32];
            let mut has = shared_array![u32; 32];
            if lane == 0 {
                values[t / 32] = acc;
                has[t / 32] = have;
            }
            #rt::sync_threads();
            if t == 0 {
                let mut total = values[0];
                let mut some = has[0];
                for w in 1..width.div_ceil(32) {
                    if has[w] == 1 {
                        total = if some == 1 { #op(total, values[w]) } else { values[w] };
                        some = 1;
                    }
                }
                if some == 1 && block < partials.len() {
                    partials[block] = total;
                }
            }
        }
    }
}

/// `reduce`, `fold` and the operation on two values, beside the pass's launcher.
fn host(name: &syn::Ident, op: &syn::Ident, ty: &Type) -> TokenStream {
    let threads = THREADS as u32;
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        impl #name {
            /// The operation on two values.
            #[inline(always)]
            pub fn scalar(&self, a: #ty, b: #ty) -> #ty {
                #op(a, b)
            }

            /// The reduction of every element of `array` (a device array or a view of one)
            /// by the operation, on the array's device; `None` for an empty array.
            pub fn reduce<'a>(
                &self,
                array: impl ::kernel_runtime::__rt::IntoDeviceView<'a, #ty, ::kernel_runtime::__rt::Ix1>,
            ) -> ::core::result::Result<::core::option::Option<#ty>, ::kernel_runtime::__rt::Error> {
                let array = array.into_view();
                let device = array.device().clone();
                if array.is_empty() {
                    return Ok(None);
                }
                if ::kernel_runtime::__rt::on_gpu(&device) {
                    // Enough blocks for one element per thread, at most four per multiprocessor
                    // of the largest GPUs: the pass's values then fit one more block.
                    let blocks = array.len().div_ceil(#threads as usize).min(1024);
                    let mut partials = device.empty::<#ty, _>(blocks)?;
                    self.launch(blocks, #threads, (array, &mut partials))?;
                    if blocks > 1 {
                        let mut total = device.empty::<#ty, _>(1)?;
                        self.launch(1u32, #threads, (&partials, &mut total))?;
                        partials = total;
                    }
                    return Ok(partials.to_vec()?.first().copied());
                }
                self.on_host(::kernel_runtime::__rt::host_elements(&array))
            }

            /// `op(init, reduce(array))`, or `init` for an empty array: Numba's
            /// `reduce(array, init=init)`.
            pub fn fold<'a>(
                &self,
                array: impl ::kernel_runtime::__rt::IntoDeviceView<'a, #ty, ::kernel_runtime::__rt::Ix1>,
                init: #ty,
            ) -> ::core::result::Result<#ty, ::kernel_runtime::__rt::Error> {
                match self.reduce(array)? {
                    ::core::option::Option::Some(r) => Ok(self.on_host(&[init, r])?.unwrap_or(init)),
                    ::core::option::Option::None => Ok(init),
                }
            }

            /// The reduction of `xs` on the host, where a panic of the operation (an overflow)
            /// is an error, not a crash.
            fn on_host(
                &self,
                xs: &[#ty],
            ) -> ::core::result::Result<::core::option::Option<#ty>, ::kernel_runtime::__rt::Error> {
                ::kernel_runtime::__rt::reduce_host(xs, #op).map_err(|message| {
                    ::kernel_runtime::__rt::Error::KernelFault {
                        kernel: <Self as ::kernel_runtime::__rt::Kernel>::META.name,
                        message,
                    }
                })
            }
        }
    }
}
