//! Kernel parameters: which Rust types a kernel may take and what each becomes.

use crate::vocab::{ARRAY_TYPES, HEAP_TYPES, PRIMITIVES};
use proc_macro2::Span;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, Pat, PathArguments, Type};

/// What a parameter is, for lowering.
#[derive(Clone)]
pub enum Kind {
    /// An array view: `&[T]`, `&mut [T]`, `&Array2<T>`, ...
    Array {
        rank: usize,
        mutable: bool,
        elem: Type,
    },
    /// A primitive scalar, by value.
    Scalar(Type),
    /// A `DeviceCopy` struct, by value.
    Struct(Type),
    /// A raw pointer (`*const T`, `*mut T`), of an `unsafe` kernel: the launcher takes a
    /// `DevicePtr<T>`.
    Pointer { mutable: bool, elem: Type },
}

/// One kernel parameter.
#[derive(Clone)]
pub struct Param {
    pub name: Ident,
    pub kind: Kind,
    pub ty_span: Span,
    /// Declared `mut` (`mut n: u32`): the body may reassign it.
    pub declared_mut: bool,
}

/// Each parameter's form on each target: the launcher's argument, the PTX entry's parameters,
/// the views the device entry and the CPU backend bind.
impl Param {
    /// The type the CPU backend's bodies see for the parameter, for the launch `'v`: a view
    /// (`View2Mut<'v, T, CHECK>`, ...), the value's own type (a struct's in a `ByValue`, see
    /// [`param_ty`](Self::param_ty)), or a pointer's `SyncPtr`.
    pub fn view_ty(&self, check: bool, generic: bool) -> TokenStream {
        match &self.kind {
            Kind::Array {
                rank,
                mutable,
                elem,
            } => {
                let view = view_name(*rank, *mutable);
                quote!(__rt::#view<'v, #elem, #check>)
            }
            Kind::Struct(ty) if !generic => quote!(__rt::ByValue<#ty>),
            Kind::Scalar(ty) | Kind::Struct(ty) => quote!(#ty),
            Kind::Pointer { elem, .. } => quote!(__rt::SyncPtr<#elem>),
        }
    }

    /// The parameter's type as the launcher's signature names it (the runtime's `Param`):
    /// `&'static [T]`, `&'static mut Array2<T>`, `T`, `*mut T`, and `ByValue<S>` for a struct
    /// `S` (not a type parameter, `generic`: its instances are plain device data).
    pub fn param_ty(&self, generic: bool) -> TokenStream {
        match &self.kind {
            Kind::Array {
                rank,
                mutable,
                elem,
            } => {
                let amp = if *mutable {
                    quote!(&'static mut)
                } else {
                    quote!(&'static)
                };
                if *rank == 1 {
                    return quote!(#amp [#elem]);
                }
                let array = format_ident!("Array{}", rank);
                quote!(#amp ::kernel_runtime::__rt::#array<#elem>)
            }
            Kind::Struct(ty) if !generic => quote!(::kernel_runtime::__rt::ByValue<#ty>),
            Kind::Scalar(ty) | Kind::Struct(ty) => quote!(#ty),
            Kind::Pointer { .. } => self.pointer_ty(),
        }
    }

    /// The body's pattern for the parameter: its name, `mut` where the body writes through it;
    /// a struct's unwraps its `ByValue` (see [`view_ty`](Self::view_ty)).
    pub fn pattern(&self, generic: bool) -> TokenStream {
        let (n, m) = (&self.name, self.binding_mut());
        match self.kind {
            Kind::Struct(_) if !generic => quote!(__rt::ByValue(#m #n)),
            _ => quote!(#m #n),
        }
    }

    /// `mut` where the body writes through the binding: a writable view, a value declared `mut`.
    pub fn binding_mut(&self) -> TokenStream {
        let mutable = match &self.kind {
            Kind::Array { mutable, .. } => *mutable,
            Kind::Scalar(_) | Kind::Struct(_) | Kind::Pointer { .. } => self.declared_mut,
        };
        if mutable {
            quote!(mut)
        } else {
            quote!()
        }
    }

    /// The PTX entry's parameters: an array's pointer and extents, a value.
    pub fn ptx_params(&self) -> TokenStream {
        let n = &self.name;
        match &self.kind {
            Kind::Array { rank, elem, .. } => {
                let ptr = format_ident!("{}__ptr", n);
                let dims = self.dim_names(*rank);
                quote!(#ptr: *mut #elem #(, #dims: usize)*)
            }
            Kind::Scalar(ty) | Kind::Struct(ty) => quote!(#n: #ty),
            Kind::Pointer { .. } => {
                let ty = self.pointer_ty();
                quote!(#n: #ty)
            }
        }
    }

    /// The names of the PTX entry's parameters, in order (see [`ptx_params`](Self::ptx_params)).
    pub fn ptx_names(&self) -> Vec<Ident> {
        match &self.kind {
            Kind::Array { rank, .. } => std::iter::once(format_ident!("{}__ptr", self.name))
                .chain(self.dim_names(*rank))
                .collect(),
            Kind::Scalar(_) | Kind::Struct(_) | Kind::Pointer { .. } => vec![self.name.clone()],
        }
    }

    /// The parameter with its type `ty` (or element type) mapped by `f`: a generic kernel's
    /// parameter in one of its instances.
    pub fn map_type(&self, f: impl Fn(&Type) -> Type) -> Param {
        let kind = match &self.kind {
            Kind::Array {
                rank,
                mutable,
                elem,
            } => Kind::Array {
                rank: *rank,
                mutable: *mutable,
                elem: f(elem),
            },
            Kind::Scalar(ty) => Kind::Scalar(f(ty)),
            Kind::Struct(ty) => Kind::Struct(f(ty)),
            Kind::Pointer { mutable, elem } => Kind::Pointer {
                mutable: *mutable,
                elem: f(elem),
            },
        };
        Param {
            kind,
            ..self.clone()
        }
    }

    /// The element type of an array or pointer, the type of a value.
    pub fn data_ty(&self) -> &Type {
        match &self.kind {
            Kind::Array { elem, .. } | Kind::Pointer { elem, .. } => elem,
            Kind::Scalar(ty) | Kind::Struct(ty) => ty,
        }
    }

    /// A pointer parameter's type, as declared: `*const T` or `*mut T`.
    fn pointer_ty(&self) -> TokenStream {
        let elem = self.data_ty();
        match self.kind {
            Kind::Pointer { mutable: true, .. } => quote!(*mut #elem),
            _ => quote!(*const #elem),
        }
    }

    /// The PTX entry's parameter kinds, as the PTX tests compare them: `ptr` and a `usize` per
    /// extent for an array, the type's name for a value.
    pub fn abi(&self) -> Vec<String> {
        match &self.kind {
            Kind::Array { rank, .. } => std::iter::once("ptr".to_string())
                .chain((0..*rank).map(|_| "usize".to_string()))
                .collect(),
            Kind::Scalar(ty) | Kind::Struct(ty) => vec![quote!(#ty).to_string().replace(' ', "")],
            Kind::Pointer { .. } => vec!["ptr".to_string()],
        }
    }

    /// The device entry's binding of the parameter, for the body: an array's view of its
    /// pointer and extents, tied to the launch.
    pub fn device_binding(&self, check: bool) -> TokenStream {
        let (n, m) = (&self.name, self.binding_mut());
        let Kind::Array {
            rank,
            mutable,
            elem,
        } = &self.kind
        else {
            return quote!(let #m #n = #n;);
        };
        let n_str = n.to_string();
        let view = view_name(*rank, *mutable);
        let ptr = format_ident!("{}__ptr", n);
        let dims = self.dim_names(*rank);
        quote! {
            let #m #n = unsafe { __rt::#view::<#elem, #check>::at(#ptr, [#(#dims),*], #n_str, __launch) };
        }
    }

    /// The rebinding inside the CPU backend's closure: unchanged in checked mode, an untraced
    /// view on the fast backend (so that the optimiser sees that no access is traced).
    pub fn cpu_rebinding(&self, fast: bool) -> TokenStream {
        let (n, m) = (&self.name, self.binding_mut());
        if let Kind::Pointer { .. } = self.kind {
            let ty = self.pointer_ty();
            return quote!(#[allow(unused_mut)] let #m #n = ::kernel_runtime::__rt::SyncPtr::get(#n) as #ty;);
        }
        if fast && self.is_array() {
            quote!(#[allow(unused_mut)] let #m #n = ::kernel_runtime::__rt::LaunchView::untraced(#n);)
        } else {
            quote!(#[allow(unused_mut)] let #m #n = #n;)
        }
    }

    /// Whether the parameter is an array (else a value or a pointer).
    pub fn is_array(&self) -> bool {
        matches!(self.kind, Kind::Array { .. })
    }

    /// Whether the parameter is a raw pointer.
    pub fn is_pointer(&self) -> bool {
        matches!(self.kind, Kind::Pointer { .. })
    }

    fn dim_names(&self, rank: usize) -> Vec<Ident> {
        (0..rank)
            .map(|d| format_ident!("{}__d{}", self.name, d))
            .collect()
    }
}

/// The view type of an array of `rank` axes.
fn view_name(rank: usize, mutable: bool) -> Ident {
    let suffix = if mutable { "Mut" } else { "" };
    format_ident!("View{}{}", rank, suffix)
}

const ACCEPTED: &str =
    "kernels take scalars, `#[repr(C)]` structs deriving `DeviceCopy`, and arrays \
     (`&[T]`, `&mut [T]`, `&Array2<T>`, `&mut Array3<T>`, ...)";

pub fn parse(arg: &FnArg) -> syn::Result<Param> {
    let pt = match arg {
        FnArg::Receiver(r) => {
            return Err(syn::Error::new_spanned(
                r,
                "a kernel is a free function: it cannot take `self`",
            ))
        }
        FnArg::Typed(pt) => pt,
    };
    let (name, declared_mut) = match &*pt.pat {
        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
            (pi.ident.clone(), pi.mutability.is_some())
        }
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "kernel parameters must be plain names (no patterns)",
            ))
        }
    };
    let kind = classify(&pt.ty)?;
    Ok(Param {
        name,
        kind,
        ty_span: pt.ty.span(),
        declared_mut,
    })
}

/// `ty` without the parentheses and the invisible groups around it (a `macro_rules!` macro's
/// `$t:ty` reaches the attribute as a group).
fn plain(ty: &Type) -> &Type {
    match ty {
        Type::Paren(p) => plain(&p.elem),
        Type::Group(g) => plain(&g.elem),
        ty => ty,
    }
}

fn last_ident(ty: &Type) -> Option<(String, &syn::PathSegment)> {
    match plain(ty) {
        Type::Path(tp) if tp.qself.is_none() => {
            let seg = tp.path.segments.last()?;
            Some((seg.ident.to_string(), seg))
        }
        _ => None,
    }
}

fn single_type_arg(seg: &syn::PathSegment) -> Option<Type> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first()? {
            GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn classify(ty: &Type) -> syn::Result<Kind> {
    let ty = plain(ty);
    match ty {
        Type::Reference(r) => {
            let mutable = r.mutability.is_some();
            match plain(&r.elem) {
                Type::Slice(s) => Ok(Kind::Array {
                    rank: 1,
                    mutable,
                    elem: element(&s.elem)?,
                }),
                Type::Reference(_) => Err(syn::Error::new_spanned(
                    ty,
                    format!("a reference to a reference cannot be a kernel parameter; {ACCEPTED}"),
                )),
                Type::TraitObject(_) | Type::ImplTrait(_) => Err(code_error(ty)),
                inner => {
                    if let Some((name, seg)) = last_ident(inner) {
                        if let Some(&(_, rank)) = ARRAY_TYPES.iter().find(|(n, _)| *n == name) {
                            let elem = single_type_arg(seg).ok_or_else(|| {
                                syn::Error::new_spanned(
                                    inner,
                                    format!("`{name}` takes one element type: `{name}<f32>`"),
                                )
                            })?;
                            return Ok(Kind::Array {
                                rank,
                                mutable,
                                elem: element(&elem)?,
                            });
                        }
                        if name == "str" || name == "String" {
                            return Err(syn::Error::new_spanned(
                                ty,
                                format!("strings cannot be kernel parameters; {ACCEPTED}"),
                            ));
                        }
                        if HEAP_TYPES.contains(&name.as_str()) {
                            return Err(heap_error(inner, &name));
                        }
                    }
                    Err(syn::Error::new_spanned(
                        ty,
                        "pass scalars and structs to a kernel by value (`T`, not `&T`); \
                         only arrays are passed by reference",
                    ))
                }
            }
        }
        Type::Path(_) => {
            let (name, seg) = last_ident(ty).ok_or_else(|| unsupported(ty))?;
            if HEAP_TYPES.contains(&name.as_str()) {
                return Err(heap_error(ty, &name));
            }
            if ARRAY_TYPES.iter().any(|(n, _)| *n == name) {
                return Err(syn::Error::new_spanned(
                    ty,
                    format!(
                        "pass arrays by reference: `&{name}<T>` to read, `&mut {name}<T>` to write"
                    ),
                ));
            }
            if PRIMITIVES.contains(&name.as_str()) && seg.arguments.is_none() {
                return Ok(Kind::Scalar(ty.clone()));
            }
            // A struct, generic ones (`Complex<f32>`) included: `DeviceCopy` decides.
            Ok(Kind::Struct(ty.clone()))
        }
        Type::TraitObject(_) | Type::ImplTrait(_) | Type::BareFn(_) => Err(code_error(ty)),
        Type::Ptr(p) => Ok(Kind::Pointer {
            mutable: p.mutability.is_some(),
            elem: element(&p.elem)?,
        }),
        Type::Array(_) => Err(syn::Error::new_spanned(
            ty,
            "fixed-size arrays cannot be passed by value; wrap them in a `#[repr(C)]` struct \
             deriving `DeviceCopy`, or pass a `&[T]`",
        )),
        _ => Err(unsupported(ty)),
    }
}

fn element(ty: &Type) -> syn::Result<Type> {
    let ty = plain(ty);
    match ty {
        Type::Path(_) => {
            if let Some((name, _)) = last_ident(ty) {
                if HEAP_TYPES.contains(&name.as_str()) {
                    return Err(heap_error(ty, &name));
                }
            }
            Ok(ty.clone())
        }
        _ => Err(syn::Error::new_spanned(
            ty,
            "array elements must be primitive numbers, `bool` or `DeviceCopy` structs",
        )),
    }
}

fn heap_error(ty: &Type, name: &str) -> syn::Error {
    syn::Error::new_spanned(
        ty,
        format!(
            "`{name}` cannot be a kernel parameter: kernels have no heap; copy the data to the \
             device (`dev.to_device(..)`) and take it as `&[T]` or `&mut [T]`"
        ),
    )
}

/// Closures, function pointers and trait objects: code, which a launch cannot carry to a GPU.
fn code_error(ty: &Type) -> syn::Error {
    syn::Error::new_spanned(
        ty,
        "closures, function pointers and trait objects cannot be kernel parameters: a GPU cannot \
         call host code; call a `#[device]` function from the kernel, and pass it the data it \
         needs",
    )
}

fn unsupported(ty: &Type) -> syn::Error {
    syn::Error::new_spanned(ty, format!("unsupported kernel parameter type; {ACCEPTED}"))
}
