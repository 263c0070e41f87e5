//! A stencil's expansion: the function of one point (its arrays become neighbour readers), its
//! PTX entry (the runtime's walk over tiles), and the value that applies it on a device.

use crate::kernel::params::{Kind, Param};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, Type};

/// A validated stencil.
pub struct Stencil {
    /// The function, its indices rewritten.
    pub func: ItemFn,
    pub params: Vec<Param>,
    pub ret: Type,
    /// The input arrays' rank.
    pub rank: usize,
    /// The neighbourhood, `(lo, hi)` per axis.
    pub bounds: Vec<(i64, i64)>,
    /// Its reach below and above the centre per axis.
    pub below: Vec<usize>,
    pub above: Vec<usize>,
    /// The border's value, where given.
    pub cval: Option<syn::Expr>,
    /// The GPU tile, planes × rows × columns, where given.
    pub tile: Option<[usize; 3]>,
    /// The arrays indexed as usual (`standard_indexing`), by name.
    pub standard: Vec<String>,
    /// Whether every relative index is a constant.
    pub constant: bool,
}

/// What a parameter is to the stencil.
enum Role<'p> {
    /// An input array read at relative indices, of this element type.
    Relative(&'p Type),
    /// An array indexed as usual, of this rank and element type.
    Standard(usize, &'p Type),
    /// A value, of this type.
    Value(&'p Type),
}

/// The name of parameter `p` in the generated functions, apart from theirs.
fn local(p: &Param) -> syn::Ident {
    format_ident!("__arg_{}", p.name)
}

/// The name of the pointer to the elements of input array `p` (apart from the output's,
/// `__out_ptr`, whatever the input's name).
fn ptr(p: &Param) -> syn::Ident {
    format_ident!("__in_{}", p.name)
}

/// The view type of a read-only array of `rank` axes of `elem`, as the point function takes a
/// `standard_indexing` array.
fn view_ty(rank: usize, elem: &Type) -> TokenStream {
    let view = format_ident!("View{}", rank);
    quote!(::kernel_runtime::__rt::#view<'_, #elem>)
}

/// The names of the extents of standard array `p`, one per axis.
fn dims(p: &Param, rank: usize) -> Vec<syn::Ident> {
    (0..rank)
        .map(|k| format_ident!("__{}_d{}", p.name, k))
        .collect()
}

/// The runtime's door for generated code.
fn rt() -> TokenStream {
    quote!(::kernel_runtime::__rt)
}

impl Stencil {
    /// What parameter `p` is to the stencil.
    fn role<'p>(&self, p: &'p Param) -> Role<'p> {
        match &p.kind {
            Kind::Array { rank, elem, .. } if self.standard.contains(&p.name.to_string()) => {
                Role::Standard(*rank, elem)
            }
            Kind::Array { elem, .. } => Role::Relative(elem),
            Kind::Scalar(t) | Kind::Struct(t) | Kind::Pointer { elem: t, .. } => Role::Value(t),
        }
    }

    pub fn expand(mut self) -> TokenStream {
        let crate::emit::Scalar {
            name,
            vis,
            docs,
            scalar,
        } = crate::emit::Scalar::take(&mut self.func, "__stencil_");
        let point = self.point_fn();
        let checks = self.type_checks();
        let entry = self.entry(&name, &vis, &scalar);
        let host = self.host(&name, &scalar);
        let registration = crate::emit::launcher::register_ptx(&name);
        let how = format!(
            " A stencil: `{name}.apply(args, &mut out)` writes its value at each point of `out` \
             whose neighbourhood lies in the arrays, `{name}.run(args)` returns a new array."
        );
        let value = crate::emit::launcher::value_struct(&docs, &how, &vis, &name);
        quote! {
            #checks
            #point
            #entry
            #value
            #registration
            #host
        }
    }

    /// The function of one point: each input array a reader of relative indices.
    fn point_fn(&mut self) -> TokenStream {
        let rt = rt();
        let rank = self.rank;
        let tys: Vec<Option<TokenStream>> = self
            .params
            .iter()
            .map(|p| match self.role(p) {
                Role::Relative(elem) => Some(quote!(impl #rt::StencilNeighbours<#elem, #rank>)),
                Role::Standard(r, elem) => Some(view_ty(r, elem)),
                Role::Value(_) => None,
            })
            .collect();
        for ((arg, p), ty) in self.func.sig.inputs.iter_mut().zip(&self.params).zip(tys) {
            if let (syn::FnArg::Typed(pt), Some(ty)) = (arg, ty) {
                let name = &p.name;
                *pt.pat = syn::parse_quote!(#name);
                *pt.ty = syn::parse_quote!(#ty);
            }
        }
        let reach = self.reach_of_rank();
        let body = &self.func.block;
        self.func.block = syn::parse_quote!({
            #[allow(dead_code)]
            const __REACH: #rt::StencilReach<#rank> = #reach;
            #body
        });
        let func = &self.func;
        quote! {
            #[doc(hidden)]
            #[inline(always)]
            #[allow(non_snake_case, clippy::too_many_arguments)]
            #func
        }
    }

    /// The input arrays read at relative indices.
    fn arrays(&self) -> Vec<&Param> {
        self.params
            .iter()
            .filter(|p| matches!(self.role(p), Role::Relative(_)))
            .collect()
    }

    /// The arrays indexed as usual.
    fn standard_arrays(&self) -> Vec<&Param> {
        self.params
            .iter()
            .filter(|p| matches!(self.role(p), Role::Standard(..)))
            .collect()
    }

    /// The type `apply` takes for parameter `p`: for an input array, a device array or a view
    /// of one of the inputs' rank; for a standard one, of its own rank; or the value.
    fn arg_ty(&self, p: &Param) -> TokenStream {
        match self.array_of(p) {
            Ok((rank, elem)) => {
                let ix = format_ident!("Ix{}", rank);
                quote!(impl ::kernel_runtime::__rt::IntoDeviceView<'__a, #elem, ::kernel_runtime::ndarray::#ix>)
            }
            Err(t) => quote!(#t),
        }
    }

    /// The type `__launch` takes for parameter `p`: an array's view, or the value.
    fn launch_ty(&self, p: &Param) -> TokenStream {
        match self.array_of(p) {
            Ok((rank, elem)) => {
                let ix = format_ident!("Ix{}", rank);
                quote!(::kernel_runtime::__rt::DeviceView<'_, #elem, ::kernel_runtime::ndarray::#ix>)
            }
            Err(t) => quote!(#t),
        }
    }

    /// The rank and element type of array parameter `p`, an input or a standard one; or the
    /// type of a value.
    fn array_of<'p>(&self, p: &'p Param) -> Result<(usize, &'p Type), &'p Type> {
        match self.role(p) {
            Role::Relative(elem) => Ok((self.rank, elem)),
            Role::Standard(rank, elem) => Ok((rank, elem)),
            Role::Value(t) => Err(t),
        }
    }

    /// The neighbourhood's reach as the runtime's `Reach` of the arrays' rank.
    fn reach_of_rank(&self) -> TokenStream {
        let (below, above) = (&self.below, &self.above);
        quote!(::kernel_runtime::__rt::StencilReach { below: [#(#below),*], above: [#(#above),*] })
    }

    /// The reach padded to three axes, as the geometry holds it.
    fn reach3(&self) -> (TokenStream, TokenStream) {
        let pad = |v: &[usize]| {
            let mut out = vec![0usize; 3 - v.len()];
            out.extend_from_slice(v);
            quote!([#(#out),*])
        };
        (pad(&self.below), pad(&self.above))
    }

    /// Each element, value and result type must be plain device data; the error points at it.
    fn type_checks(&self) -> TokenStream {
        let rt = rt();
        let tys = self.params.iter().map(|p| match self.role(p) {
            Role::Relative(t) | Role::Standard(_, t) | Role::Value(t) => (p.ty_span, t.clone()),
        });
        let ret = &self.ret;
        let checks = tys.map(|(span, t)| {
            quote_spanned! {span=> const _: () = #rt::assert_device_copy::<#t>(); }
        });
        quote! {
            #(#checks)*
            const _: () = #rt::assert_device_copy::<#ret>();
        }
    }

    /// The border's value as an `Option` of the result type.
    fn border(&self) -> TokenStream {
        let ret = &self.ret;
        match &self.cval {
            Some(c) => quote_spanned!(c.span()=> ::core::option::Option::<#ret>::Some(#c)),
            None => quote!(::core::option::Option::<#ret>::None),
        }
    }

    /// The tile of one GPU thread: planes, rows, columns.
    fn tile(&self) -> (TokenStream, TokenStream, TokenStream) {
        if let Some([planes, rows, cols]) = self.tile {
            let rows = if self.rank == 1 { 1 } else { rows };
            return (quote!(#planes), quote!(#rows), quote!(#cols));
        }
        let (rt, rank, ret) = (rt(), self.rank, &self.ret);
        let planes = if rank < 3 {
            quote!(1)
        } else {
            quote!({ #rt::stencil_tile_planes(#rank) })
        };
        (
            planes,
            quote!({ #rt::stencil_tile_rows(#rank) }),
            quote!({ #rt::stencil_tile_cols(::core::mem::size_of::<#ret>()) }),
        )
    }

    /// The call of the point function at the point `__p` on a GPU, each array read through its
    /// pointer.
    fn call_point(&self, scalar: &syn::Ident) -> TokenStream {
        let rank = self.rank;
        self.call_with(scalar, |_, p| {
            let ptr = ptr(p);
            // SAFETY: `__p` is an interior point and every relative index lies in the
            // neighbourhood (a constant the macro checked, or one `stencil_within` checks), so
            // the element read is in the array, which has `__g`'s shape.
            quote!(|__d: [isize; #rank]| unsafe { *#ptr.offset(__p.neighbour(&__g, __d)) })
        })
    }

    /// The call of the point function, its `k`th relative array `p` read by `reader(k, p)`.
    fn call_with(
        &self,
        scalar: &syn::Ident,
        reader: impl Fn(usize, &Param) -> TokenStream,
    ) -> TokenStream {
        let mut k = 0;
        let args = self.params.iter().map(|p| match self.role(p) {
            Role::Relative(_) => {
                k += 1;
                reader(k - 1, p)
            }
            _ => {
                let local = local(p);
                quote!(#local)
            }
        });
        let args: Vec<TokenStream> = args.collect();
        quote!(#scalar(#(#args),*))
    }

    /// What an interior GPU tile reads its inputs through, `(windows, at)`, and whether the
    /// inputs can be read in words: each relative array's `Window` loaded once per tile, its
    /// points read from them; or, where an index is computed at run time (a window is read at
    /// constant places alone) or the arrays have three axes, no windows and the points read
    /// memory.
    fn windowed(
        &self,
        scalar: &syn::Ident,
        rows: &TokenStream,
        cols: &TokenStream,
    ) -> (TokenStream, TokenStream) {
        let (rt, rank) = (rt(), self.rank);
        if !self.constant || rank > 2 {
            let call = self.call_point(scalar);
            let windowed = quote!((
                move |_: #rt::StencilPoint, _: bool| (),
                move |_: &(), __p: #rt::StencilPoint| #call,
            ));
            return (windowed, quote!(true));
        }
        let reach = |axis: usize| self.below[axis] + self.above[axis];
        let wr = if rank == 2 { reach(0) } else { 0 };
        let wc = reach(rank - 1);
        let windows: Vec<TokenStream> = self
            .arrays()
            .into_iter()
            .map(|p| {
                let Role::Relative(elem) = self.role(p) else {
                    unreachable!("relative arrays only")
                };
                quote!(#rt::StencilWindow<#elem, { (#rows) + #wr }, { (#cols) + #wc }>)
            })
            .collect();
        let loads = self.arrays().into_iter().zip(&windows).map(|(p, w)| {
            let ptr = ptr(p);
            // SAFETY: the walk asks for the windows of interior tiles alone, at their first
            // points, each a multiple of the tile's columns, and in words where every array
            // passes `words_fit`; the array has `__g`'s shape.
            quote!(unsafe { <#w>::load::<#cols>(&__g, #ptr, __t, __wide) })
        });
        let call = self.call_with(scalar, |k, _| {
            let k = syn::Index::from(k);
            quote!(|__d: [isize; #rank]| __w.#k.at(__p, __d))
        });
        let windowed = quote!((
            move |__t: #rt::StencilPoint, __wide: bool| (#(#loads,)*),
            move |__w: &_, __p: #rt::StencilPoint| #call,
        ));
        let fit = self.arrays().into_iter().map(|p| {
            let (ptr, Role::Relative(elem)) = (ptr(p), self.role(p)) else {
                unreachable!("relative arrays only")
            };
            quote!(#rt::stencil_words_fit::<#elem, #cols>(__g.shape[2], #ptr))
        });
        (windowed, quote!(#(#fit)&&*))
    }

    /// The PTX entry: the runtime's walk over the thread's tiles.
    fn entry(&self, name: &syn::Ident, vis: &syn::Visibility, scalar: &syn::Ident) -> TokenStream {
        let (rt, ret) = (rt(), &self.ret);
        let params = self.params.iter().map(|p| match self.role(p) {
            Role::Relative(elem) => {
                let ptr = ptr(p);
                quote!(#ptr: *const #elem)
            }
            Role::Standard(rank, elem) => {
                let (ptr, dims) = (ptr(p), dims(p, rank));
                quote!(#ptr: *const #elem, #(#dims: usize),*)
            }
            Role::Value(t) => {
                let local = local(p);
                quote!(#local: #t)
            }
        });
        let views = self.standard_arrays().into_iter().map(|p| {
            let Role::Standard(rank, elem) = self.role(p) else {
                unreachable!("standard arrays only")
            };
            let (local, ptr, dims, name) = (local(p), ptr(p), dims(p, rank), p.name.to_string());
            let view = format_ident!("View{}", rank);
            // SAFETY: the launcher passed the array's pointer and extents; it outlives the
            // launch.
            quote!(let #local = unsafe { #rt::#view::<#elem>::from_raw(#ptr as *mut #elem, [#(#dims),*], #name) };)
        });
        let (below, above) = self.reach3();
        let (planes, rows, cols) = self.tile();
        let call = self.call_point(scalar);
        let f = quote!(move |__p: #rt::StencilPoint| #call);
        let (windowed, inputs_wide) = self.windowed(scalar, &rows, &cols);
        let border = self.border();
        quote! {
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(no_mangle)]
            #[allow(non_snake_case)]
            #vis unsafe extern "ptx-kernel" fn #name(#(#params,)* __out: *mut #ret, __d0: usize, __d1: usize, __d2: usize) {
                let __g = #rt::StencilGeometry { shape: [__d0, __d1, __d2], below: #below, above: #above };
                #(#views)*
                // SAFETY: the launcher passed arrays of `g`'s shape and a launch of the walk's
                // blocks.
                unsafe { #rt::stencil_gpu_walk::<#ret, _, #planes, #rows, #cols>(&__g, #f, #windowed, (__out, #inputs_wide), #border) }
            }
        }
    }

    /// `apply`, `run` and the launch on a GPU or the CPU backend.
    fn host(&self, name: &syn::Ident, scalar: &syn::Ident) -> TokenStream {
        let (rt, ret, rank) = (rt(), &self.ret, self.rank);
        let name_str = name.to_string();
        let ix = format_ident!("Ix{}", rank);
        let out_ty = quote!(#rt::DeviceArray<#ret, ::kernel_runtime::ndarray::#ix>);
        let out_arg =
            quote!(impl #rt::IntoDeviceViewMut<'__o, #ret, ::kernel_runtime::ndarray::#ix>);
        let names: Vec<syn::Ident> = self.params.iter().map(local).collect();
        let tys: Vec<TokenStream> = self.params.iter().map(|p| self.arg_ty(p)).collect();
        let (args_ty, destructure) = if names.len() == 1 {
            let (t, n) = (&tys[0], &names[0]);
            (quote!(#t), quote!(let #n = args;))
        } else {
            (quote!((#(#tys,)*)), quote!(let (#(#names,)*) = args;))
        };
        let arrays: Vec<syn::Ident> = self.arrays().into_iter().map(local).collect();
        let first = &arrays[0];
        let viewed: Vec<syn::Ident> = (self.params.iter())
            .filter(|p| self.array_of(p).is_ok())
            .map(local)
            .collect();
        let meta = self.meta(&name_str);
        let launch = self.launch(scalar);
        let bounds = self
            .bounds
            .iter()
            .map(|&(lo, hi)| (lo as isize, hi as isize))
            .map(|(lo, hi)| quote!((#lo, #hi)));
        quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            impl #rt::Kernel for #name {
                #meta
            }

            #[cfg(not(target_arch = "nvptx64"))]
            impl #name {
                const NAME: &'static str = #name_str;

                /// The neighbourhood, Numba's `neighborhood`: `(lo, hi)` relative indices per
                /// axis.
                pub const NEIGHBORHOOD: [(isize, isize); #rank] = [#(#bounds),*];

                /// Writes the stencil's value at each point of `out` whose neighbourhood lies in
                /// the arrays, and the `cval` given at the others (without one, they keep their
                /// values), on the arrays' device; `out` has the input arrays' shape. Arrays and
                /// views of them alike (`&x`, `x.slice(1..9)?`, `&mut out`, `out.slice_mut(..)?`).
                pub fn apply<'__a, '__o>(&self, args: #args_ty, out: #out_arg) -> ::core::result::Result<(), #rt::Error> {
                    #destructure
                    #(let #viewed = #viewed.into_view();)*
                    self.__launch(#(#names,)* out.into_view_mut())
                }

                /// A new array of the stencil's value at each point whose neighbourhood lies in
                /// the arrays, and the `cval` (without one, zero) at the others.
                pub fn run<'__a>(&self, args: #args_ty) -> ::core::result::Result<#out_ty, #rt::Error> {
                    #destructure
                    #(let #viewed = #viewed.into_view();)*
                    let mut out = #first.device().zeros::<#ret, _>(#first.dim())?;
                    self.__launch(#(#names,)* out.view_mut())?;
                    ::core::result::Result::Ok(out)
                }

                #launch
            }
        }
    }

    /// What the runtime records of the stencil's PTX entry.
    fn meta(&self, name_str: &str) -> TokenStream {
        let mut params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
        let mut abi: Vec<String> = self
            .params
            .iter()
            .flat_map(|p| match self.role(p) {
                Role::Relative(_) => vec!["ptr".to_string()],
                Role::Standard(rank, _) => std::iter::once("ptr".to_string())
                    .chain((0..rank).map(|_| "usize".to_string()))
                    .collect(),
                Role::Value(t) => vec![quote!(#t).to_string().replace(' ', "")],
            })
            .collect();
        params.extend(["out", "d0", "d1", "d2"].map(String::from));
        abi.extend(["ptr", "usize", "usize", "usize"].map(String::from));
        crate::emit::launcher::grid_level_meta(name_str, &params, &abi)
    }

    /// The launch, after the checks of the arrays' device and shapes: the PTX entry on a GPU,
    /// the rows on the CPU backend.
    fn launch(&self, scalar: &syn::Ident) -> TokenStream {
        let (rt, ret, rank) = (rt(), &self.ret, self.rank);
        let params = self.params.iter().map(|p| {
            let (n, t) = (local(p), self.launch_ty(p));
            quote!(#n: #t)
        });
        let ix = format_ident!("Ix{}", self.rank);
        let inputs = self.arrays();
        let array_strs: Vec<String> = inputs.iter().map(|p| p.name.to_string()).collect();
        let ptrs: Vec<syn::Ident> = inputs.iter().map(|p| ptr(p)).collect();
        let arrays: Vec<syn::Ident> = inputs.into_iter().map(local).collect();
        let pushed: Vec<syn::Ident> = self
            .params
            .iter()
            .flat_map(|p| match self.role(p) {
                Role::Relative(_) => vec![ptr(p)],
                Role::Standard(rank, _) => std::iter::once(ptr(p)).chain(dims(p, rank)).collect(),
                Role::Value(_) => vec![local(p)],
            })
            .collect();
        let count = pushed.len() + 4;
        let standard = self.standard_arrays();
        let std_strs: Vec<String> = standard.iter().map(|p| p.name.to_string()).collect();
        let std_locals: Vec<syn::Ident> = standard.iter().map(|p| local(p)).collect();
        let std_ptrs: Vec<syn::Ident> = standard.iter().map(|p| ptr(p)).collect();
        let std_dims = standard.iter().map(|p| {
            let Role::Standard(rank, _) = self.role(p) else {
                unreachable!("standard arrays only")
            };
            let (local, dims) = (local(p), dims(p, rank));
            let k = 0..rank;
            quote!(#(let #dims = #local.shape()[#k];)*)
        });
        let std_views = standard.iter().map(|p| {
            let Role::Standard(rank, _) = self.role(p) else {
                unreachable!("standard arrays only")
            };
            let (local, name) = (local(p), p.name.to_string());
            let view = format_ident!("stencil_standard{}", rank);
            let marks = format_ident!("{}_marks", local);
            quote! {
                let #marks = #rt::stencil_marks(&#local);
                let #local = #rt::#view(&#local, &#marks, #name);
            }
        });
        let (below, above) = self.reach3();
        let (planes, rows, cols) = self.tile();
        // SAFETY: the rows call the point function at interior points alone, and every
        // relative index lies in the neighbourhood (a constant the macro checked, or one
        // `stencil_within` checks); the arrays have `__g`'s shape and outlive the rows.
        let call = self.call_with(scalar, |_, p| {
            let ptr = ptr(p);
            quote!(unsafe { #ptr.around::<__C>(&__g, __p) })
        });
        let names: Vec<String> = self.arrays().iter().map(|p| p.name.to_string()).collect();
        let border_given = self.cval.is_some();
        // What the point function takes in place of a closure's captures: the inputs' pointers
        // and the values, then the geometry.
        let captures: Vec<syn::Ident> = self
            .params
            .iter()
            .map(|p| match self.role(p) {
                Role::Relative(_) => ptr(p),
                _ => local(p),
            })
            .collect();
        let capture_tys = self.params.iter().map(|p| match self.role(p) {
            Role::Relative(elem) => quote!(#rt::StencilInput<#elem>),
            Role::Standard(rank, elem) => view_ty(rank, elem),
            Role::Value(t) => quote!(#t),
        });
        let border = self.border();
        quote! {
            #[allow(clippy::too_many_arguments)]
            fn __launch(&self, #(#params,)* mut __out: #rt::DeviceViewMut<'_, #ret, ::kernel_runtime::ndarray::#ix>) -> ::core::result::Result<(), #rt::Error> {
                #rt::common_device(Self::NAME, &[#((#array_strs, #arrays.device()),)* #((#std_strs, #std_locals.device()),)* ("out", __out.device())])?;
                #(#rt::same_shape(Self::NAME, #array_strs, __out.shape(), #arrays.shape())?;)*
                let __g = #rt::StencilGeometry::padded(__out.shape(), #below, #above);
                let __device = __out.device().clone();
                if #rt::on_gpu(&__device) {
                    let __config = #rt::stencil_config::<#planes, #rows, #cols>(Self::NAME, &__g)?;
                    #(let #ptrs: u64 = #rt::device_addr(&#arrays);)*
                    #(let #std_ptrs: u64 = #rt::device_addr(&#std_locals);)*
                    #(#std_dims)*
                    let __out_ptr: u64 = #rt::device_addr(&__out);
                    let mut __params = #rt::gpu_params(#count);
                    #(__params.push(&#pushed);)*
                    __params.push(&__out_ptr);
                    __params.push(&__g.shape[0]);
                    __params.push(&__g.shape[1]);
                    __params.push(&__g.shape[2]);
                    #(#rt::reads(&mut __params, &#arrays);)*
                    #(#rt::reads(&mut __params, &#std_locals);)*
                    #rt::writes(&mut __params, &__out);
                    // SAFETY: the entry's parameters: each input's pointer or value, the
                    // output's pointer, the three axes; every array lives on the device and has
                    // `g`'s shape (checked by the caller).
                    return unsafe {
                        #rt::cuda_launch(&__device, Self::NAME, <Self as #rt::Kernel>::META.ptx, &__config, &mut __params)
                    };
                }
                #(let #ptrs = #rt::stencil_input(&#arrays, #names);)*
                #(#std_views)*
                let __out = #rt::stencil_out(&mut __out, &__g, #border_given, Self::NAME);
                #[inline(always)]
                fn __point<const __C: bool>(__args: &(#(#capture_tys,)* #rt::StencilGeometry), __p: #rt::StencilPoint) -> #ret {
                    let (#(#captures,)* __g) = *__args;
                    #(let #std_locals = #rt::stencil_view_mode::<__C, _>(#std_locals);)*
                    #call
                }
                let (__args, __border) = ((#(#captures,)* __g), #border);
                let __views = false #(|| #rt::stencil_view_tested(&#std_locals))*;
                // Checked mode tests each read where an array holds elements nothing wrote.
                if __views #(|| #ptrs.checked())* {
                    #rt::stencil_checked_rows((&__g, #rank, __views), &__args, __point::<true>, __out, __border)
                } else {
                    #rt::stencil_rows(&__g, &__args, __point::<false>, __out, __border)
                }
                .map_err(|fault| fault.into_error(Self::NAME))
            }
        }
    }
}
