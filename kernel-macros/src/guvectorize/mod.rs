//! `#[guvectorize("(n),(n)->()")]`: a function of core arrays applied at every index of the
//! loop dimensions in front of them, as Numba's `@guvectorize` (a generalized ufunc).
//!
//! The function keeps its body; its array parameters become bounds-checked views of one loop
//! index's cores (`&[T]` a `View1`, `&Array2<T>` a `View2`, the output's `&mut` a mutable
//! view), a `()` input stays a scalar, and a `()` output is the return value. What it expands
//! to:
//! - the core function, and `__guvectorize_at_NAME(i, ..)`: its call at loop index `i`, from
//!   raw pointers, steps and extents, the same on both targets;
//! - the PTX entry, a grid-stride loop over the loop indices calling it;
//! - on the host, the layout as a `const`, and `apply`, `call` and a private `run` that checks
//!   the shapes against the layout (the runtime's `gufunc::plan`), then launches the entry on a
//!   GPU or runs the loop indices in parallel on the CPU backend.

mod layout;

use crate::kernel::params::{self, Kind};
use crate::kernel::rewrite;
use layout::Layout;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, ReturnType, Type};

pub fn guvectorize(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let text: syn::LitStr = syn::parse2(attr).map_err(|e| {
        syn::Error::new(
            e.span(),
            "`#[guvectorize]` takes its layout: `#[guvectorize(\"(n),(n)->()\")]`",
        )
    })?;
    let layout = Layout::parse(&text.value()).map_err(|m| syn::Error::new(text.span(), m))?;
    let mut func: ItemFn = syn::parse2(item)?;
    let (inputs, output) = operands(&func.sig, &layout)?;
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
    as_views(&mut func, &inputs, &output);
    let g = Gufunc {
        scalar,
        func,
        layout,
        text: text.value(),
        inputs,
        output,
    };
    Ok(g.emit())
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

/// The output: an operand that is the return value where its core is `()`, else the last
/// parameter.
struct Output {
    op: Operand,
    returned: bool,
}

/// How an operand of `rank` core dimensions is written: `f32`, `&[f32]`, `&mut Array2<f32>`.
fn written(rank: usize, mutable: bool) -> String {
    let amp = if mutable { "&mut " } else { "&" };
    match rank {
        0 => "T".into(),
        1 => format!("{amp}[T]"),
        r => format!("{amp}Array{r}<T>"),
    }
}

/// The inputs and the output of the signature, each checked against the layout.
fn operands(sig: &syn::Signature, layout: &Layout) -> syn::Result<(Vec<Operand>, Output)> {
    crate::emit::plain_signature(sig, "a generalized ufunc")?;
    let returned = layout.output.is_empty();
    let count = layout.inputs.len() + usize::from(!returned);
    if sig.inputs.len() != count {
        let out = if returned {
            "its output `()` is the return value".to_string()
        } else {
            format!(
                "its output is the last parameter, `{}`",
                written(layout.output.len(), true)
            )
        };
        return Err(syn::Error::new_spanned(
            &sig.ident,
            format!(
                "the layout has {} inputs and {out}: the function takes {count} parameters, not {}",
                layout.inputs.len(),
                sig.inputs.len()
            ),
        ));
    }
    let params: Vec<params::Param> = sig
        .inputs
        .iter()
        .map(params::parse)
        .collect::<Result<_, _>>()?;
    let inputs = params
        .iter()
        .zip(&layout.inputs)
        .map(|(p, core)| operand(p, core.len(), false))
        .collect::<syn::Result<Vec<_>>>()?;
    let output = if returned {
        let elem = crate::emit::returned(sig).ok_or_else(|| {
            syn::Error::new_spanned(
                &sig.ident,
                "the layout's output `()` is the function's return value: `-> T`",
            )
        })?;
        Operand {
            // Not `out`, which an input may be called.
            name: format_ident!("__out"),
            span: elem.span(),
            elem,
            rank: 0,
        }
    } else {
        if let ReturnType::Type(_, t) = &sig.output {
            return Err(syn::Error::new_spanned(
                t,
                "the output is the last parameter, which the function writes: it returns nothing",
            ));
        }
        operand(&params[count - 1], layout.output.len(), true)?
    };
    Ok((
        inputs,
        Output {
            op: output,
            returned,
        },
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

/// The core function's array parameters as views (`mut` for the output), so that the body
/// indexes one loop index's cores with its indices checked.
fn as_views(func: &mut ItemFn, inputs: &[Operand], output: &Output) {
    let ops = inputs.iter().map(|o| (o, false));
    let ops = ops.chain((!output.returned).then_some((&output.op, true)));
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
    layout: Layout,
    text: String,
    inputs: Vec<Operand>,
    output: Output,
}

impl Gufunc {
    /// Every operand, the output last.
    fn all(&self) -> impl Iterator<Item = &Operand> {
        self.inputs.iter().chain([&self.output.op])
    }

    /// Every operand with whether it is a `()` input, passed as `Scalars`.
    fn kinds(&self) -> impl Iterator<Item = (&Operand, bool)> {
        let ins = self.inputs.iter().map(|op| (op, op.rank == 0));
        ins.chain([(&self.output.op, false)])
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
        let o = &self.output.op;
        let (on, os) = (&o.name, label(o));
        if self.output.returned {
            quote!(#on.set(__i, #core(#(#args),*)))
        } else {
            quote!(#core(#(#args,)* #on.view_mut(__i, #os)))
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
        let on = label(&self.output.op);
        let oc = &self.layout.output;
        quote! {
            const LAYOUT: ::kernel_runtime::__rt::GuLayout = ::kernel_runtime::__rt::GuLayout {
                text: #text,
                names: &[#(#names),*],
                inputs: &[#(#ins),*],
                output: (#on, &[#(#oc),*]),
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
        let oe = &self.output.op.elem;
        quote! {
            /// The function at every loop index: `out[i..] = f(args[i..]..)`, each input an
            /// array with the loop dimensions of `out` or none, or a scalar where its core is
            /// `()`; on the arrays' device.
            pub fn apply<'a>(
                &self,
                args: #args_ty,
                out: &mut ::kernel_runtime::__rt::DeviceArray<#oe, impl ::kernel_runtime::__rt::Rank>,
            ) -> ::core::result::Result<(), ::kernel_runtime::__rt::Error> {
                #ops
                self.run(__ops, ::kernel_runtime::__rt::GuOperand::output(out))
            }
        }
    }

    /// `call`: a new array of the result, its rank the first input's, less its core and with
    /// the output's.
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
        let first = &self.inputs[0];
        let (fe, fr) = (&first.elem, first.rank);
        let mut dim = quote!(<__A0 as ::kernel_runtime::__rt::GuInput<'a, #fe, #fr>>::Dim);
        let delta = self.output.op.rank as isize - fr as isize;
        let step = if delta < 0 {
            quote!(Smaller)
        } else {
            quote!(Larger)
        };
        for _ in 0..delta.unsigned_abs() {
            dim = quote!(<#dim as ::kernel_runtime::ndarray::Dimension>::#step);
        }
        let oe = &self.output.op.elem;
        let idx: Vec<syn::Index> = (0..self.inputs.len()).map(syn::Index::from).collect();
        let names: Vec<String> = self.inputs.iter().map(|o| o.name.to_string()).collect();
        quote! {
            /// A new array of the function at every loop index, as calling a Numba gufunc:
            /// the inputs' loop dimensions, then the output's core.
            pub fn call<'a, #(#bounds),*>(
                &self,
                args: #args_ty,
            ) -> ::core::result::Result<::kernel_runtime::__rt::DeviceArray<#oe, #dim>, ::kernel_runtime::__rt::Error>
            where
                #dim: ::kernel_runtime::__rt::Rank,
            {
                #ops
                let __device = ::kernel_runtime::__rt::gu_device(Self::NAME, &[#((#names, __ops.#idx.device())),*])?;
                let mut __made = ::kernel_runtime::__rt::gu_output(Self::NAME, &Self::LAYOUT, &[#(__ops.#idx.shape()),*], &__device)?;
                self.run(__ops, ::kernel_runtime::__rt::GuOperand::output(&mut __made))?;
                Ok(__made)
            }
        }
    }

    /// `run`: the operands checked against the layout, then the GPU's launch or the CPU's
    /// parallel loop over the loop indices.
    fn run(&self) -> TokenStream {
        let names: Vec<&Ident> = self.inputs.iter().map(|o| &o.name).collect();
        let labels: Vec<String> = self.inputs.iter().map(label).collect();
        let elems = self.inputs.iter().map(|o| &o.elem);
        let o = &self.output.op;
        let (on, on_str, oe) = (&o.name, label(o), &o.elem);
        let passed = self.inputs.iter().enumerate().map(|(k, op)| {
            let (n, r) = (&op.name, op.rank);
            if r == 0 {
                let s = label(op);
                quote!(let #n = #n.scalars(&__plan.inputs[#k], __gpu, (Self::NAME, #s))?;)
            } else {
                quote!(let #n = #n.cores::<#r>(&__plan.inputs[#k], __gpu);)
            }
        });
        let or = o.rank;
        let count = 2 * self.inputs.len() + 3;
        let (call, checked) = (self.call_at(false), self.call_at(true));
        quote! {
            fn run(
                &self,
                (#(#names,)*): (#(::kernel_runtime::__rt::GuOperand<'_, #elems>,)*),
                #on: ::kernel_runtime::__rt::GuOperand<'_, #oe>,
            ) -> ::core::result::Result<(), ::kernel_runtime::__rt::Error> {
                let __device = ::kernel_runtime::__rt::gu_device(
                    Self::NAME,
                    &[#((#labels, #names.device()),)* (#on_str, #on.device())],
                )?;
                let __plan = ::kernel_runtime::__rt::gu_plan(Self::NAME, &Self::LAYOUT, &[#(#names.shape()),*], #on.shape())?;
                if __plan.loops == 0 {
                    return Ok(());
                }
                let __gpu = ::kernel_runtime::__rt::on_gpu(&__device);
                let __operands = (#(&#names,)* &#on);
                #(#passed)*
                let #on = #on.cores::<#or>(&__plan.output, __gpu);
                if __gpu {
                    let mut __params = ::kernel_runtime::__rt::gpu_params(#count);
                    #(
                        let (__ptr, __shape) = #names.parts();
                        __params.push(__ptr);
                        __params.push(__shape);
                    )*
                    let (__ptr, __shape) = #on.parts();
                    __params.push(__ptr);
                    __params.push(__shape);
                    __params.push(&__plan.loops);
                    let (#(#names,)* #on) = __operands;
                    #(#names.record(&mut __params, false);)*
                    #on.record(&mut __params, true);
                    // SAFETY: the entry's parameters in order, each operand as the entry takes
                    // it; every array lives on the device and fits the layout (`plan`).
                    return unsafe {
                        ::kernel_runtime::__rt::gu_launch(&__device, Self::NAME, <Self as ::kernel_runtime::__rt::Kernel>::META.ptx, __plan.loops, &mut __params)
                    };
                }
                let __checked = __device.is_checked();
                ::kernel_runtime::__rt::gu_cpu(Self::NAME, &__plan, &move |__lo, __hi| {
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
