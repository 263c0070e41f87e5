//! `#[guvectorize("(n),(n)->()")]`: a function of core arrays applied at every index of the
//! loop dimensions in front of them, as Numba's `@guvectorize` (a generalized ufunc).
//!
//! The function keeps its body; its array parameters become bounds-checked views of one loop
//! index's cores (`&[T]` a `View1`, `&Array2<T>` a `View2`, an output's `&mut` a mutable view),
//! a `()` input stays a scalar, and one `()` output is the return value (among several, a
//! `&mut T`). What it expands to:
//! - the core function;
//! - the PTX entry: each operand's pointer and the rest of it as parameters, then a grid-stride
//!   loop over the loop indices calling the core function on the runtime's `Cores`;
//! - on the host, the layout as a `const`, and `apply`, `call` and a private `run` that checks
//!   the shapes against the layout (the runtime's `gufunc::plan`), then launches the entry on a
//!   GPU or runs the loop indices in parallel on the CPU backend (a second loop in checked
//!   mode, whose views test their reads).

mod layout;

use crate::kernel::params::{self, Kind};
use crate::kernel::rewrite;
use layout::Layout;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, ReturnType, Type};

pub fn guvectorize(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let (text, options) = attribute.parse2(attr).map_err(|e| {
        syn::Error::new(
            e.span(),
            "`#[guvectorize]` takes its layout, then its options: \
             `#[guvectorize(\"(n),(n)->()\")]`, `#[guvectorize(\"(n)->(n)\", fastmath)]`",
        )
    })?;
    let fastmath = crate::kernel::parse::fastmath_only(
        options,
        "unknown `#[guvectorize]` option: expected `fastmath` after the layout",
    )?;
    let layout = Layout::parse(&text.value()).map_err(|m| syn::Error::new(text.span(), m))?;
    let mut func: ItemFn = syn::parse2(item)?;
    let (inputs, outputs) = operands(&func.sig, &layout)?;
    let names: Vec<String> = func.sig.inputs.iter().filter_map(arg_name).collect();
    let found = rewrite::mapped_body(&mut func, &names)?;
    if found.barriers || found.cooperative || found.warp_context || !found.shared.is_empty() {
        return Err(syn::Error::new_spanned(
            &func.sig.ident,
            "a generalized ufunc runs each loop index on its own: it has no block or warp to \
             synchronise or share memory with; write a `#[kernel]` for that",
        ));
    }
    let scalar = crate::emit::Scalar::take(&mut func, "__guvectorize_core_");
    as_views(&mut func, &inputs, &outputs);
    let g = Gufunc {
        scalar,
        func,
        fastmath,
        layout,
        text: text.value(),
        inputs,
        outputs,
    };
    Ok(g.emit())
}

/// The attribute's layout string and the options after it.
fn attribute(input: syn::parse::ParseStream) -> syn::Result<(syn::LitStr, TokenStream)> {
    let text = input.parse()?;
    if input.is_empty() {
        return Ok((text, TokenStream::new()));
    }
    input.parse::<syn::Token![,]>()?;
    Ok((text, input.parse()?))
}

/// The name a parameter binds, where it is a plain name.
fn arg_name(arg: &FnArg) -> Option<String> {
    match arg {
        FnArg::Typed(pt) => match &*pt.pat {
            syn::Pat::Ident(pi) => Some(pi.ident.to_string()),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    }
}

/// One operand: its parameter's name, element type, core rank, and the span of its type.
struct Operand {
    name: Ident,
    elem: Type,
    rank: usize,
    span: Span,
}

/// The outputs: one that is the return value, where the layout's one output is `()`; else the
/// last parameters, one each.
struct Outputs {
    ops: Vec<Operand>,
    returned: bool,
}

/// How an operand of `rank` core dimensions is written: `T`, `&[T]`, `&mut Array2<T>` (an
/// output's `()`: `&mut T`).
fn written(rank: usize, mutable: bool) -> String {
    let amp = if mutable { "&mut " } else { "&" };
    match rank {
        0 if mutable => "&mut T".into(),
        0 => "T".into(),
        1 => format!("{amp}[T]"),
        r => format!("{amp}Array{r}<T>"),
    }
}

/// What the layout makes of the outputs, for the error of a signature that has another count.
fn outputs_text(layout: &Layout) -> String {
    match &layout.outputs[..] {
        [core] if core.is_empty() => "its output `()` is the return value".into(),
        [core] => format!(
            "its output is the last parameter, `{}`",
            written(core.len(), true)
        ),
        outs => format!(
            "its {} outputs are the last parameters, `{}`",
            outs.len(),
            outs.iter()
                .map(|c| written(c.len(), true))
                .collect::<Vec<_>>()
                .join("`, `")
        ),
    }
}

/// The inputs and the outputs of the signature, each checked against the layout.
fn operands(sig: &syn::Signature, layout: &Layout) -> syn::Result<(Vec<Operand>, Outputs)> {
    crate::emit::plain_signature(sig, "a generalized ufunc")?;
    let returned = matches!(&layout.outputs[..], [core] if core.is_empty());
    let n_in = layout.inputs.len();
    let count = n_in + if returned { 0 } else { layout.outputs.len() };
    if sig.inputs.len() != count {
        return Err(syn::Error::new_spanned(
            &sig.ident,
            format!(
                "the layout has {n_in} inputs and {}: the function takes {count} parameters, not {}",
                outputs_text(layout),
                sig.inputs.len()
            ),
        ));
    }
    let args: Vec<&FnArg> = sig.inputs.iter().collect();
    let inputs = args[..n_in]
        .iter()
        .zip(&layout.inputs)
        .map(|(a, core)| operand(&params::parse(a)?, core.len(), false))
        .collect::<syn::Result<Vec<_>>>()?;
    let ops = if returned {
        let elem = crate::emit::returned(sig).ok_or_else(|| {
            syn::Error::new_spanned(
                &sig.ident,
                "the layout's output `()` is the function's return value: `-> T`",
            )
        })?;
        vec![Operand {
            // Not `out`, which an input may be called.
            name: format_ident!("__out"),
            span: elem.span(),
            elem,
            rank: 0,
        }]
    } else {
        if let ReturnType::Type(_, t) = &sig.output {
            return Err(syn::Error::new_spanned(
                t,
                "the outputs are the last parameters, which the function writes: it returns \
                 nothing",
            ));
        }
        args[n_in..]
            .iter()
            .zip(&layout.outputs)
            .map(|(a, core)| match core.len() {
                0 => element_out(a),
                r => operand(&params::parse(a)?, r, true),
            })
            .collect::<syn::Result<Vec<_>>>()?
    };
    Ok((inputs, Outputs { ops, returned }))
}

/// An output of core `()` among the parameters: `name: &mut T`.
fn element_out(arg: &FnArg) -> syn::Result<Operand> {
    if let FnArg::Typed(pt) = arg {
        if let (syn::Pat::Ident(pi), Type::Reference(r)) = (&*pt.pat, &*pt.ty) {
            if r.mutability.is_some() {
                return Ok(Operand {
                    name: pi.ident.clone(),
                    elem: (*r.elem).clone(),
                    rank: 0,
                    span: pt.ty.span(),
                });
            }
        }
    }
    Err(syn::Error::new_spanned(
        arg,
        "the layout gives this output no core dimension: write it `name: &mut T`",
    ))
}

/// The operand of parameter `p`, which the layout gives `rank` core dimensions.
fn operand(p: &params::Param, rank: usize, output: bool) -> syn::Result<Operand> {
    let elem = match (&p.kind, rank) {
        (Kind::Scalar(t) | Kind::Struct(t), 0) if !output => t.clone(),
        (
            Kind::Array {
                rank: r,
                mutable,
                elem,
            },
            _,
        ) if *r == rank && *mutable == output && rank > 0 => elem.clone(),
        _ => {
            let want = written(rank, output);
            return Err(syn::Error::new(
                p.ty_span,
                format!(
                    "the layout gives `{}` {}: write it `{}: {want}`",
                    p.name,
                    match rank {
                        0 => "no core dimension".to_string(),
                        1 => "one core dimension".to_string(),
                        r => format!("{r} core dimensions"),
                    },
                    p.name
                ),
            ));
        }
    };
    Ok(Operand {
        name: p.name.clone(),
        elem,
        rank,
        span: p.ty_span,
    })
}

/// The core function's array parameters as views (`mut` for the outputs), so that the body
/// indexes one loop index's cores with its indices checked; a `()` output stays `&mut T`.
fn as_views(func: &mut ItemFn, inputs: &[Operand], outputs: &Outputs) {
    let ops = inputs.iter().map(|o| (o, false));
    let outs = outputs.ops.iter().filter(|_| !outputs.returned);
    let ops = ops.chain(outs.map(|o| (o, true)));
    for (arg, (op, mutable)) in func.sig.inputs.iter_mut().zip(ops) {
        let FnArg::Typed(pt) = arg else { continue };
        if op.rank == 0 {
            continue;
        }
        let view = format_ident!("View{}{}", op.rank, if mutable { "Mut" } else { "" });
        let elem = &op.elem;
        *pt.ty = syn::parse_quote!(::kernel_runtime::__rt::#view<'_, #elem, true>);
        if mutable {
            let name = &op.name;
            *pt.pat = syn::parse_quote!(mut #name);
        }
    }
}

struct Gufunc {
    scalar: crate::emit::Scalar,
    func: ItemFn,
    /// The device build's core is `fastmath`'s.
    fastmath: bool,
    layout: Layout,
    text: String,
    inputs: Vec<Operand>,
    outputs: Outputs,
}

impl Gufunc {
    /// Every operand, the outputs last.
    fn all(&self) -> impl Iterator<Item = &Operand> {
        self.inputs.iter().chain(&self.outputs.ops)
    }

    /// Every operand with whether it is a `()` input, passed as `Scalars`.
    fn kinds(&self) -> impl Iterator<Item = (&Operand, bool)> {
        let ins = self.inputs.iter().map(|op| (op, op.rank == 0));
        ins.chain(self.outputs.ops.iter().map(|op| (op, false)))
    }

    /// The outputs' names in the generated code.
    fn out_names(&self) -> Vec<&Ident> {
        self.outputs.ops.iter().map(|o| &o.name).collect()
    }

    /// The entry's parameters of each operand: its pointer, of its name, then the rest of it,
    /// `NAME__shape` (see the runtime's `Cores`); then the loop count.
    fn params(&self) -> Vec<TokenStream> {
        self.kinds()
            .map(|(op, scalar)| {
                let (n, e, r) = (&op.name, &op.elem, op.rank);
                let shape = format_ident!("{}__shape", n);
                let ty = if scalar {
                    quote!(::kernel_runtime::__rt::ScalarShape<#e>)
                } else {
                    quote!(::kernel_runtime::__rt::CoreShape<#r>)
                };
                quote!(#n: *mut #e, #shape: #ty)
            })
            .collect()
    }

    /// The entry's operands rebuilt from their parameters.
    fn rebuilt(&self) -> Vec<TokenStream> {
        self.kinds()
            .map(|(op, scalar)| {
                let n = &op.name;
                let shape = format_ident!("{}__shape", n);
                let ty = if scalar {
                    quote!(Scalars)
                } else {
                    quote!(Cores)
                };
                quote!(let #n = ::kernel_runtime::__rt::#ty::from_parts(#n, #shape);)
            })
            .collect()
    }

    /// The function at loop index `__i`, from the operands as passed; its inputs' reads tested
    /// against the elements nothing has written where `checked` (the CPU backend's checked
    /// mode), else not, with nothing to test.
    fn call_at(&self, checked: bool) -> TokenStream {
        let core = &self.scalar.scalar;
        let view = if checked {
            quote!(view_checked)
        } else {
            quote!(view)
        };
        let args = self.inputs.iter().map(|op| {
            let (n, s) = (&op.name, label(op));
            if op.rank == 0 {
                quote!(#n.get(__i))
            } else {
                quote!(#n.#view(__i, #s))
            }
        });
        let outs = self.outputs.ops.iter().map(|op| {
            let (n, s) = (&op.name, label(op));
            if op.rank == 0 {
                quote!(#n.element(__i))
            } else {
                quote!(#n.view_mut(__i, #s))
            }
        });
        if self.outputs.returned {
            let on = &self.outputs.ops[0].name;
            quote!(#on.set(__i, #core(#(#args),*)))
        } else {
            quote!(#core(#(#args,)* #(#outs),*))
        }
    }

    fn emit(&self) -> TokenStream {
        let name = &self.scalar.name;
        // Each operand's pointer and the rest of it, then the loop count.
        let mut params: Vec<String> = Vec::new();
        let mut abi: Vec<String> = Vec::new();
        for op in self.all() {
            params.extend([op.name.to_string(), format!("{}__shape", op.name)]);
            abi.extend(["ptr".to_string(), "struct".to_string()]);
        }
        params.push("loops".into());
        abi.push("usize".into());
        let how = format!(
            " A generalized ufunc of layout `{}`: `{name}.apply((args..), &mut out)` or \
             `{name}.call((args..))` on arrays, Numba's `{name}(args..)`.",
            self.text
        );
        let (layout, apply, call, run) =
            (self.layout_const(), self.apply(), self.call(), self.run());
        crate::emit::launcher::array_function(crate::emit::launcher::ArrayFunction {
            name,
            checks: self.type_checks(),
            func: &self.func,
            fastmath: self.fastmath,
            entry: self.entry(),
            value: crate::emit::launcher::value_struct(
                &self.scalar.docs,
                &how,
                &self.scalar.vis,
                name,
            ),
            params: &params,
            abi: &abi,
            methods: quote! {
                #layout
                #apply
                #call
                #run
            },
        })
    }

    /// Every element type must be plain device data; the error points at the type.
    fn type_checks(&self) -> TokenStream {
        let checks = self.all().map(|op| {
            let elem = &op.elem;
            quote_spanned! {op.span=> const _: () = ::kernel_runtime::__rt::assert_device_copy::<#elem>(); }
        });
        quote!(#(#checks)*)
    }

    /// The PTX entry: a grid-stride loop over the loop indices.
    fn entry(&self) -> TokenStream {
        let (name, vis) = (&self.scalar.name, &self.scalar.vis);
        let params = self.params();
        let rebuilt = self.rebuilt();
        let call = self.call_at(false);
        quote! {
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(no_mangle)]
            #[allow(non_snake_case)]
            #vis unsafe extern "ptx-kernel" fn #name(#(#params,)* __loops: usize) {
                #(#rebuilt)*
                let __ctx = ::kernel_runtime::__rt::Ctx;
                let mut __i = __ctx.grid_1d();
                let __step = __ctx.gridsize_1d();
                while __i < __loops {
                    // SAFETY: the host checked every operand against the layout (its `plan`),
                    // and each loop index has one thread.
                    unsafe { #call };
                    __i += __step;
                }
            }
        }
    }

    /// The layout as the runtime reads it.
    fn layout_const(&self) -> TokenStream {
        let text = &self.text;
        let names = &self.layout.names;
        let ins = self
            .inputs
            .iter()
            .zip(&self.layout.inputs)
            .map(|(op, core)| {
                let n = op.name.to_string();
                quote!((#n, &[#(#core),*]))
            });
        let outs = self
            .outputs
            .ops
            .iter()
            .zip(&self.layout.outputs)
            .map(|(op, core)| {
                let n = label(op);
                quote!((#n, &[#(#core),*]))
            });
        quote! {
            const LAYOUT: ::kernel_runtime::__rt::GuLayout = ::kernel_runtime::__rt::GuLayout {
                text: #text,
                names: &[#(#names),*],
                inputs: &[#(#ins),*],
                outputs: &[#(#outs),*],
            };
        }
    }

    /// The type of the inputs' argument with each input's type, and the statement that turns
    /// `args` into the runtime's operands, `__ops`.
    fn args(&self, tys: &[TokenStream]) -> (TokenStream, TokenStream) {
        let names: Vec<&Ident> = self.inputs.iter().map(|o| &o.name).collect();
        let ops = self.inputs.iter().map(|op| {
            let (n, e, r) = (&op.name, &op.elem, op.rank);
            quote!(<_ as ::kernel_runtime::__rt::GuInput<'a, #e, #r>>::operand(#n))
        });
        let ty = if tys.len() == 1 {
            tys[0].clone()
        } else {
            quote!((#(#tys,)*))
        };
        let pattern = if names.len() == 1 {
            quote!(#(#names)*)
        } else {
            quote!((#(#names,)*))
        };
        (ty, quote!(let #pattern = args; let __ops = (#(#ops,)*);))
    }

    /// The type of the outputs' argument of `apply`, with `out(elem)` each output's type, and
    /// the runtime's operands of it (`outs`), as `run` takes them.
    fn outs_arg(&self, out: impl Fn(&Type) -> TokenStream) -> (TokenStream, TokenStream) {
        let tys: Vec<TokenStream> = self.outputs.ops.iter().map(|o| out(&o.elem)).collect();
        let made = |e: TokenStream| quote!(::kernel_runtime::__rt::GuOutput::operand(#e));
        if let [ty] = &tys[..] {
            return (ty.clone(), made(quote!(outs)));
        }
        let idx = (0..tys.len()).map(syn::Index::from);
        let ops = idx.map(|k| made(quote!(outs.#k)));
        (quote!((#(#tys,)*)), quote!((#(#ops,)*)))
    }

    /// `apply`: the arrays checked against the layout, then the launch or the CPU's loop.
    fn apply(&self) -> TokenStream {
        let tys: Vec<TokenStream> = self
            .inputs
            .iter()
            .map(|op| {
                let (e, r) = (&op.elem, op.rank);
                quote!(impl ::kernel_runtime::__rt::GuInput<'a, #e, #r>)
            })
            .collect();
        let (args_ty, ops) = self.args(&tys);
        let (outs_ty, outs) =
            self.outs_arg(|e| quote!(impl ::kernel_runtime::__rt::GuOutput<'a, #e>));
        let outs = if self.outputs.ops.len() == 1 {
            quote!((#outs,))
        } else {
            outs
        };
        quote! {
            /// The function at every loop index: `out[i..] = f(args[i..]..)`, the inputs'
            /// loop dimensions broadcast to the outputs' as NumPy's, a `()` input an array
            /// or a scalar; on the arrays' device. Several outputs are a tuple.
            pub fn apply<'a>(
                &self,
                args: #args_ty,
                outs: #outs_ty,
            ) -> ::core::result::Result<(), ::kernel_runtime::__rt::Error> {
                #ops
                self.run(__ops, #outs)
            }
        }
    }

    /// The rank of the output `op` that `call` makes: the first input's, less its core and
    /// with the output's.
    fn made_dim(&self, op: &Operand) -> TokenStream {
        let first = &self.inputs[0];
        let (fe, fr) = (&first.elem, first.rank);
        let mut dim = quote!(<__A0 as ::kernel_runtime::__rt::GuInput<'a, #fe, #fr>>::Dim);
        let delta = op.rank as isize - fr as isize;
        let step = if delta < 0 {
            quote!(Smaller)
        } else {
            quote!(Larger)
        };
        for _ in 0..delta.unsigned_abs() {
            dim = quote!(<#dim as ::kernel_runtime::ndarray::Dimension>::#step);
        }
        dim
    }

    /// `call`: new arrays of the results, each of rank [`made_dim`](Self::made_dim).
    fn call(&self) -> TokenStream {
        let gens: Vec<Ident> = (0..self.inputs.len())
            .map(|k| format_ident!("__A{}", k))
            .collect();
        let bounds = self.inputs.iter().zip(&gens).map(|(op, g)| {
            let (e, r) = (&op.elem, op.rank);
            quote!(#g: ::kernel_runtime::__rt::GuInput<'a, #e, #r>)
        });
        let tys: Vec<TokenStream> = gens.iter().map(|g| quote!(#g)).collect();
        let (args_ty, ops) = self.args(&tys);
        let dims: Vec<TokenStream> = self.outputs.ops.iter().map(|o| self.made_dim(o)).collect();
        let arrays: Vec<TokenStream> = self
            .outputs
            .ops
            .iter()
            .zip(&dims)
            .map(|(o, d)| {
                let e = &o.elem;
                quote!(::kernel_runtime::__rt::DeviceArray<#e, #d>)
            })
            .collect();
        let made: Vec<Ident> = (0..dims.len())
            .map(|k| format_ident!("__made{}", k))
            .collect();
        let ks = 0..dims.len();
        let (ret, value) = if let [array] = &arrays[..] {
            (array.clone(), quote!(__made0))
        } else {
            (quote!((#(#arrays,)*)), quote!((#(#made,)*)))
        };
        let idx: Vec<syn::Index> = (0..self.inputs.len()).map(syn::Index::from).collect();
        let names: Vec<String> = self.inputs.iter().map(|o| o.name.to_string()).collect();
        quote! {
            /// New arrays of the function at every loop index, as calling a Numba gufunc:
            /// the inputs' loop dimensions, then each output's core.
            pub fn call<'a, #(#bounds),*>(
                &self,
                args: #args_ty,
            ) -> ::core::result::Result<#ret, ::kernel_runtime::__rt::Error>
            where
                #(#dims: ::kernel_runtime::__rt::Rank,)*
            {
                #ops
                let __device = ::kernel_runtime::__rt::gu_device(Self::NAME, &[#((#names, __ops.#idx.device())),*])?;
                let __shapes = ::kernel_runtime::__rt::gu_shapes(Self::NAME, &Self::LAYOUT, &[#(__ops.#idx.shape()),*])?;
                #(let mut #made = ::kernel_runtime::__rt::gu_output(Self::NAME, &Self::LAYOUT, &__shapes[#ks], &__device)?;)*
                self.run(__ops, (#(::kernel_runtime::__rt::GuOutput::operand(&mut #made),)*))?;
                Ok(#value)
            }
        }
    }

    /// `run`: the operands checked against the layout, then the GPU's launch or the CPU's
    /// parallel loop over the loop indices.
    fn run(&self) -> TokenStream {
        let names: Vec<&Ident> = self.inputs.iter().map(|o| &o.name).collect();
        let labels: Vec<String> = self.inputs.iter().map(label).collect();
        let elems = self.inputs.iter().map(|o| &o.elem);
        let outs = self.out_names();
        let out_labels: Vec<String> = self.outputs.ops.iter().map(label).collect();
        let out_elems = self.outputs.ops.iter().map(|o| &o.elem);
        let passed = self.inputs.iter().enumerate().map(|(k, op)| {
            let (n, r) = (&op.name, op.rank);
            if r == 0 {
                let s = label(op);
                quote!(let #n = #n.scalars(&__plan.inputs[#k], __gpu, (Self::NAME, #s))?;)
            } else {
                quote!(let #n = #n.cores::<#r>(&__plan.inputs[#k], __gpu);)
            }
        });
        let out_passed = self.outputs.ops.iter().enumerate().map(|(k, op)| {
            let (n, r) = (&op.name, op.rank);
            quote!(let #n = #n.cores::<#r>(&__plan.outputs[#k], __gpu);)
        });
        let count = 2 * (self.inputs.len() + outs.len()) + 1;
        let (call, checked) = (self.call_at(false), self.call_at(true));
        quote! {
            fn run(
                &self,
                (#(#names,)*): (#(::kernel_runtime::__rt::GuOperand<'_, #elems>,)*),
                (#(#outs,)*): (#(::kernel_runtime::__rt::GuOperand<'_, #out_elems>,)*),
            ) -> ::core::result::Result<(), ::kernel_runtime::__rt::Error> {
                let __device = ::kernel_runtime::__rt::gu_device(
                    Self::NAME,
                    &[#((#labels, #names.device()),)* #((#out_labels, #outs.device()),)*],
                )?;
                let __plan = ::kernel_runtime::__rt::gu_plan(
                    Self::NAME,
                    &Self::LAYOUT,
                    &[#(#names.shape()),*],
                    &[#(#outs.shape()),*],
                )?;
                if __plan.loops == 0 {
                    return Ok(());
                }
                let __gpu = ::kernel_runtime::__rt::on_gpu(&__device);
                let __operands = (#(&#names,)* #(&#outs,)*);
                #(#passed)*
                #(#out_passed)*
                if __gpu {
                    let mut __params = ::kernel_runtime::__rt::gpu_params(#count);
                    #(
                        let (__ptr, __shape) = #names.parts();
                        __params.push(__ptr);
                        __params.push(__shape);
                    )*
                    #(
                        let (__ptr, __shape) = #outs.parts();
                        __params.push(__ptr);
                        __params.push(__shape);
                    )*
                    __params.push(&__plan.loops);
                    let (#(#names,)* #(#outs,)*) = __operands;
                    #(#names.record(&mut __params, false);)*
                    #(#outs.record(&mut __params, true);)*
                    // SAFETY: the entry's parameters in order, each operand as the entry takes
                    // it; every array lives on the device and fits the layout (`plan`). One
                    // thread a loop index, in blocks of 128.
                    return unsafe {
                        ::kernel_runtime::__rt::grid_stride_launch(&__device, Self::NAME, <Self as ::kernel_runtime::__rt::Kernel>::META.ptx, (__plan.loops, 128), &mut __params)
                    };
                }
                let __checked = __device.is_checked();
                ::kernel_runtime::__rt::gu_cpu(Self::NAME, &__plan, &move |__lo, __hi| {
                    // Copies of the captures, which no store through a core can change, so
                    // that their steps stay in registers over the loop.
                    let (#(#names,)* #(#outs,)*) = (#(#names,)* #(#outs,)*);
                    // SAFETY: every array fits the layout (`plan`), and the tasks' loop indices
                    // are disjoint, so each output core has one writer.
                    if __checked {
                        for __i in __lo..__hi {
                            unsafe { #checked };
                        }
                    } else {
                        for __i in __lo..__hi {
                            unsafe { #call };
                        }
                    }
                })
            }
        }
    }
}

/// The operand's name in errors: the parameter's, `out` for the return value.
fn label(op: &Operand) -> String {
    op.name.to_string().trim_start_matches("__").to_string()
}
