//! `#[vectorize]`: an element-wise function over arrays, as Numba's `@vectorize`.
//!
//! `#[vectorize] fn add(a: f32, b: f32) -> f32 { a + b }` keeps the scalar function and adds a
//! launcher that applies it to every element of arrays of one shape: on the GPU a grid-stride
//! kernel, on the CPU backend a parallel loop over slices that the compiler vectorizes. Shapes
//! are checked once at the call, so no element access needs a check.

use crate::kernel::params::{self, Kind};
use crate::kernel::rewrite;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, Type};

pub fn vectorize(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let fastmath = crate::kernel::parse::fastmath_only(
        attr,
        "unknown `#[vectorize]` option: expected `fastmath` (the element types come from the \
         signature)",
    )?;
    let mut func: ItemFn = syn::parse2(item)?;
    let (params, ret) = signature(&func.sig)?;
    let names: Vec<String> = params.iter().map(|p| p.name.to_string()).collect();
    rewrite::mapped_body(&mut func, &names)?;
    let v = Vectorized::new(func, params, ret);
    let (name, args, tys, ret, scalar) = (&v.name, &v.names, &v.tys, &v.ret, &v.scalar);
    // One pointer per input, the output pointer, the element count.
    let abi: Vec<String> = std::iter::repeat_n("ptr", args.len() + 1)
        .chain(["usize"])
        .map(String::from)
        .collect();
    let params: Vec<String> = args
        .iter()
        .map(|a| a.to_string())
        .chain(["out".into(), "n".into()])
        .collect();
    let (apply, call) = (v.apply(), v.call());
    Ok(crate::emit::launcher::array_function(
        crate::emit::launcher::ArrayFunction {
            name,
            checks: v.type_checks(),
            func: &v.func,
            fastmath,
            entry: v.entry(),
            value: crate::emit::launcher::launcher_struct(&v.docs, &v.vis, name),
            params: &params,
            abi: &abi,
            methods: quote! {
                /// The function on one element.
                #[inline(always)]
                pub fn scalar(&self, #(#args: #tys),*) -> #ret {
                    #scalar(#(#args),*)
                }

                #apply
                #call
            },
        },
    ))
}

/// The element-wise signature's parameters and result, or the error that refuses it.
fn signature(sig: &syn::Signature) -> syn::Result<(Vec<params::Param>, Type)> {
    crate::emit::plain_signature(sig, "a vectorized function")?;
    let ret = crate::emit::returned(sig).ok_or_else(|| {
        syn::Error::new_spanned(
            &sig.ident,
            "a vectorized function returns the element it computes: `fn f(a: f32, b: f32) -> f32`",
        )
    })?;
    if sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.ident,
            "a vectorized function takes at least one element",
        ));
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        let p = params::parse(arg)?;
        match &p.kind {
            Kind::Scalar(_) | Kind::Struct(_) => params.push(p),
            Kind::Array { .. } | Kind::Pointer { .. } => {
                return Err(syn::Error::new(
                    p.ty_span,
                    "a vectorized function takes elements, not arrays or pointers: the launcher \
                     maps it over arrays",
                ))
            }
        }
    }
    Ok((params, ret))
}

/// A vectorized function: the scalar function, renamed, and the names its launcher uses.
struct Vectorized {
    name: syn::Ident,
    vis: syn::Visibility,
    docs: Vec<syn::Attribute>,
    /// The scalar function, under the name `scalar`, its docs moved to the launcher.
    func: ItemFn,
    scalar: syn::Ident,
    params: Vec<params::Param>,
    /// The parameters' names, for messages and the scalar method.
    names: Vec<syn::Ident>,
    /// The generated code's names of the arguments: positional, so that no parameter's name
    /// meets one of the expansion's own (`out`, `n`, ...).
    args: Vec<syn::Ident>,
    tys: Vec<Type>,
    ret: Type,
}

impl Vectorized {
    fn new(mut func: ItemFn, params: Vec<params::Param>, ret: Type) -> Vectorized {
        let crate::emit::Scalar {
            name,
            vis,
            docs,
            scalar,
        } = crate::emit::Scalar::take(&mut func, "__vectorize_scalar_");
        let tys = params
            .iter()
            .map(|p| match &p.kind {
                Kind::Scalar(t) | Kind::Struct(t) => t.clone(),
                Kind::Array { .. } | Kind::Pointer { .. } => {
                    unreachable!("arrays and pointers were refused by `signature`")
                }
            })
            .collect();
        let names = params.iter().map(|p| p.name.clone()).collect();
        let args = (0..params.len())
            .map(|k| format_ident!("__in{}", k))
            .collect();
        Vectorized {
            name,
            vis,
            docs,
            func,
            scalar,
            params,
            names,
            args,
            tys,
            ret,
        }
    }

    /// Every element type must be plain device data; the error points at the type.
    fn type_checks(&self) -> TokenStream {
        let ret = &self.ret;
        let type_checks = self.params.iter().zip(&self.tys).map(|(p, t)| {
            quote_spanned! {p.ty_span=> const _: () = ::kernel_runtime::__rt::assert_device_copy::<#t>(); }
        });
        let ret_check = quote_spanned! {ret.span()=>
            const _: () = ::kernel_runtime::__rt::assert_device_copy::<#ret>();
        };
        quote! {
            #(#type_checks)*
            #ret_check
        }
    }

    /// The pointers' names, one per input.
    fn ptrs(&self) -> Vec<syn::Ident> {
        self.args
            .iter()
            .map(|a| format_ident!("{}_ptr", a))
            .collect()
    }

    /// The argument type of `apply` and `call` (arrays or views, each anything that reads as a
    /// view), the statement that names its parts as views, and the parts passed on as `args`.
    fn args_ty(&self) -> (TokenStream, TokenStream, TokenStream) {
        let args = &self.args;
        let arg_tys: Vec<_> = self
            .tys
            .iter()
            .map(|t| quote!(impl ::kernel_runtime::__rt::IntoDeviceView<'__a, #t, D>))
            .collect();
        if args.len() == 1 {
            let (t, a) = (&arg_tys[0], &args[0]);
            (quote!(#t), quote!(let #a = args.into_view();), quote!(#a))
        } else {
            (
                quote!((#(#arg_tys,)*)),
                quote! {
                    let (#(#args,)*) = args;
                    #[allow(unused_variables)]
                    let (#(#args,)*) = (#(#args.into_view(),)*);
                },
                quote!((#(#args,)*)),
            )
        }
    }

    /// The PTX entry: a grid-stride loop applying the scalar function.
    fn entry(&self) -> TokenStream {
        let (name, vis, scalar, ret) = (&self.name, &self.vis, &self.scalar, &self.ret);
        let (ptrs, tys) = (self.ptrs(), &self.tys);
        quote! {
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(no_mangle)]
            #[allow(non_snake_case)]
            #vis unsafe extern "ptx-kernel" fn #name(#(#ptrs: *const #tys,)* __out_ptr: *mut #ret, n: usize) {
                let ctx = ::kernel_runtime::__rt::Ctx;
                let mut i = ctx.grid_1d();
                let step = ctx.gridsize_1d();
                while i < n {
                    // SAFETY: the launcher checked that every array has `n` elements.
                    unsafe { *__out_ptr.add(i) = #scalar(#(*#ptrs.add(i)),*); }
                    i += step;
                }
            }
        }
    }

    /// `apply`: the arrays' device and shapes checked, then the GPU's launch or the CPU's
    /// parallel loop.
    fn apply(&self) -> TokenStream {
        let (args, scalar, ret) = (&self.args, &self.scalar, &self.ret);
        let ptrs = self.ptrs();
        let count = args.len() + 2;
        let arg_strs: Vec<String> = self.names.iter().map(|a| a.to_string()).collect();
        let (args_ty, destructure, _) = self.args_ty();
        quote! {
            /// `out[i] = f(args[i]..)` for arrays (or views) of one shape, on their device.
            pub fn apply<'__a, '__o, D: ::kernel_runtime::__rt::Rank>(
                &self,
                args: #args_ty,
                out: impl ::kernel_runtime::__rt::IntoDeviceViewMut<'__o, #ret, D>,
            ) -> ::core::result::Result<(), ::kernel_runtime::__rt::Error> {
                #destructure
                let mut out = out.into_view_mut();
                ::kernel_runtime::__rt::common_device(Self::NAME, &[#((#arg_strs, #args.device()),)* ("out", out.device())])?;
                #(::kernel_runtime::__rt::same_shape(Self::NAME, #arg_strs, out.shape(), #args.shape())?;)*
                let __n = out.len();
                let __device = out.device().clone();
                if ::kernel_runtime::__rt::on_gpu(&__device) {
                    #(let #ptrs: u64 = ::kernel_runtime::__rt::device_addr(&#args);)*
                    let __out_ptr: u64 = ::kernel_runtime::__rt::device_addr(&out);
                    let mut __params = ::kernel_runtime::__rt::gpu_params(#count);
                    #(__params.push(&#ptrs);)*
                    __params.push(&__out_ptr);
                    __params.push(&__n);
                    #(::kernel_runtime::__rt::reads(&mut __params, &#args);)*
                    ::kernel_runtime::__rt::writes(&mut __params, &out);
                    // SAFETY: the entry's parameters: one pointer per input, the output's, `n`;
                    // every array lives on the device and has `n` elements (checked above). A
                    // grid-stride loop in blocks of 256 threads.
                    return unsafe {
                        ::kernel_runtime::__rt::grid_stride_launch(&__device, Self::NAME, <Self as ::kernel_runtime::__rt::Kernel>::META.ptx, (__n, 256), &mut __params)
                    };
                }
                #(::kernel_runtime::__rt::reads_whole(Self::NAME, #arg_strs, &#args)?;)*
                #(let #ptrs = ::kernel_runtime::__rt::SharedPtr(::kernel_runtime::__rt::host_ptr(&#args));)*
                let __out_ptr = ::kernel_runtime::__rt::SharedPtr(::kernel_runtime::__rt::host_ptr_mut(&mut out));
                ::kernel_runtime::__rt::elementwise(__n, move |__lo, __hi| {
                    // SAFETY: every array has `n` elements (checked above) and the ranges given
                    // to the workers are disjoint, so each output element has one writer.
                    let __out = unsafe { ::core::slice::from_raw_parts_mut(__out_ptr.get().add(__lo), __hi - __lo) };
                    #(let #args = unsafe { ::core::slice::from_raw_parts(#ptrs.get().add(__lo), __hi - __lo) };)*
                    let __len = __out.len();
                    #(let #args = &#args[..__len];)*
                    for __k in 0..__len {
                        __out[__k] = #scalar(#(#args[__k]),*);
                    }
                })
                .map_err(|message| ::kernel_runtime::__rt::Error::KernelFault { kernel: Self::NAME, message })
            }
        }
    }

    /// `call`: a new array of the result.
    fn call(&self) -> TokenStream {
        let ret = &self.ret;
        let first = &self.args[0];
        let (args_ty, destructure, passed) = self.args_ty();
        quote! {
            /// A new array `f(args)`, as calling a Numba ufunc.
            pub fn call<'__a, D: ::kernel_runtime::__rt::Rank>(
                &self,
                args: #args_ty,
            ) -> ::core::result::Result<::kernel_runtime::__rt::DeviceArray<#ret, D>, ::kernel_runtime::__rt::Error> {
                #destructure
                let mut out = ::kernel_runtime::__rt::zeros_like(&#first)?;
                self.apply(#passed, &mut out)?;
                Ok(out)
            }
        }
    }
}
