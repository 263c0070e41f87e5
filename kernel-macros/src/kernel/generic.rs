//! Generic kernels: the type parameters, the instances `#[kernel(instances(..))]` lists (one
//! PTX entry each, named `kernel__type`), and the generic parameter lists that the launcher's
//! methods and the CPU backend's functions take.

use crate::kernel::params::Param;
use crate::kernel::parse::Instances;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{GenericParam, Ident, Signature, Type, TypeParam, WhereClause};

/// A generic kernel's type parameters and instances.
pub struct Generic {
    /// The type parameters, with the bounds the kernel gives them.
    pub params: Vec<TypeParam>,
    pub where_clause: Option<WhereClause>,
    pub instances: Vec<Instance>,
}

/// One instance: a type per type parameter, and its PTX entry.
pub struct Instance {
    pub types: Vec<Type>,
    pub entry: String,
}

impl Generic {
    /// The generics of a kernel named `name` with signature `sig` and `instances`: `None` for a
    /// kernel without type parameters; an error for lifetime or const parameters, type
    /// parameters without instances, or instances that do not fit them.
    pub fn of(sig: &Signature, instances: Option<&Instances>) -> syn::Result<Option<Generic>> {
        let g = &sig.generics;
        let mut params = Vec::new();
        for p in &g.params {
            match p {
                GenericParam::Type(t) => params.push(t.clone()),
                GenericParam::Lifetime(_) => {
                    return Err(syn::Error::new_spanned(
                        p,
                        "a kernel takes no lifetime parameters: write its arrays as `&[T]` and \
                         `&mut [T]`; each launch ties them to its arguments",
                    ))
                }
                GenericParam::Const(_) => {
                    return Err(syn::Error::new_spanned(
                        p,
                        "a kernel takes no const parameters: pass the value as an argument, or \
                         write one kernel per value",
                    ))
                }
            }
        }
        match (params.is_empty(), instances) {
            (true, None) if g.where_clause.is_none() => Ok(None),
            (true, _) => Err(syn::Error::new(
                instances.map_or_else(|| g.span(), |i| i.span),
                "`instances(..)` lists the types of a generic kernel's type parameters; this \
                 kernel has none",
            )),
            (false, None) => Err(syn::Error::new_spanned(
                g,
                format!(
                    "a generic kernel lists the types it is compiled for, one PTX entry each: \
                     `#[kernel(instances({}))]`",
                    example(&params)
                ),
            )),
            (false, Some(list)) if list.types.is_empty() => Err(syn::Error::new(
                list.span,
                format!(
                    "`instances()` lists no types: name at least one, as \
                     `instances({})`",
                    example(&params)
                ),
            )),
            (false, Some(list)) => {
                let instances = list
                    .types
                    .iter()
                    .map(|ty| Instance::of(&sig.ident, ty, params.len()))
                    .collect::<syn::Result<Vec<_>>>()?;
                Ok(Some(Generic {
                    params,
                    where_clause: g.where_clause.clone(),
                    instances,
                }))
            }
        }
    }

    /// The type parameters' names: `T, U`.
    pub fn names(&self) -> Vec<&Ident> {
        self.params.iter().map(|p| &p.ident).collect()
    }

    /// The parameter list of a function generic like the kernel, `<T, U>`, and its where
    /// clause's predicates, each parameter's bounds (inline and from the kernel's where clause)
    /// in one place, with `DeviceCopy` added: `T: Bounds + DeviceCopy, ..`.
    pub fn decl(&self) -> (TokenStream, TokenStream) {
        let names = self.names();
        let mut others = Vec::new();
        let mut bounds: Vec<Vec<&syn::TypeParamBound>> = self
            .params
            .iter()
            .map(|p| p.bounds.iter().collect())
            .collect();
        for pred in self.where_clause.iter().flat_map(|w| &w.predicates) {
            let own = match pred {
                syn::WherePredicate::Type(t) if t.lifetimes.is_none() => match &t.bounded_ty {
                    Type::Path(p) if p.qself.is_none() => p
                        .path
                        .get_ident()
                        .and_then(|i| names.iter().position(|n| *n == i)),
                    _ => None,
                },
                _ => None,
            };
            match (own, pred) {
                (Some(k), syn::WherePredicate::Type(t)) => bounds[k].extend(&t.bounds),
                _ => others.push(pred),
            }
        }
        let own = names
            .iter()
            .zip(&bounds)
            .map(|(n, b)| quote!(#n: #(#b +)* ::kernel_runtime::__rt::DeviceCopy));
        (quote!(<#(#names),*>), quote!(#(#own,)* #(#others,)*))
    }

    /// The tuple of the type parameters, which implements `KernelInstance` for each instance.
    pub fn tuple(&self) -> TokenStream {
        let names = self.names();
        quote!((#(#names,)*))
    }

    /// Whether `ty` names a type parameter.
    pub fn mentions(&self, ty: &Type) -> bool {
        let mut found = Mentions(self.names(), false);
        found.visit_type(ty);
        found.1
    }

    /// The kernel's parameters `params` in `instance`: each type parameter replaced by its type.
    pub fn params_in(&self, instance: &Instance, params: &[Param]) -> Vec<Param> {
        params
            .iter()
            .map(|p| p.map_type(|ty| self.substitute(instance, ty)))
            .collect()
    }

    /// `ty` with each type parameter replaced by its type in `instance`.
    pub fn substitute(&self, instance: &Instance, ty: &Type) -> Type {
        let mut ty = ty.clone();
        Substitute(self.names(), &instance.types).visit_type_mut(&mut ty);
        ty
    }
}

impl Instance {
    /// The instance `ty` (a tuple where there are several type parameters) of the kernel
    /// `kernel` with `arity` type parameters.
    fn of(kernel: &Ident, ty: &Type, arity: usize) -> syn::Result<Instance> {
        let types: Vec<Type> = match ty {
            Type::Tuple(t) if arity > 1 => t.elems.iter().cloned().collect(),
            _ => vec![ty.clone()],
        };
        if types.len() != arity {
            return Err(syn::Error::new_spanned(
                ty,
                format!("the kernel has {arity} type parameters: list each instance as a tuple of {arity} types"),
            ));
        }
        let names: Vec<String> = types.iter().map(type_name).collect();
        Ok(Instance {
            entry: format!("{kernel}__{}", names.join("__")),
            types,
        })
    }
}

/// `ty` as a part of an entry's name: its path's identifiers joined by `_`.
fn type_name(ty: &Type) -> String {
    let text = ty.to_token_stream().to_string();
    let mut name = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    name.trim_end_matches('_').to_string()
}

/// `f32, f64`, or tuples for several parameters, for an error's example.
fn example(params: &[TypeParam]) -> String {
    match params.len() {
        1 => "f32, f64".into(),
        n => {
            let one = vec!["f32"; n].join(", ");
            format!("({one}), ..")
        }
    }
}

struct Mentions<'a>(Vec<&'a Ident>, bool);
impl<'ast> Visit<'ast> for Mentions<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() == 1 && self.0.contains(&&p.segments[0].ident) {
            self.1 = true;
        }
        syn::visit::visit_path(self, p);
    }
}

struct Substitute<'a>(Vec<&'a Ident>, &'a [Type]);
impl VisitMut for Substitute<'_> {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::Path(p) = ty {
            if p.qself.is_none() && p.path.segments.len() == 1 {
                let seg = &p.path.segments[0];
                if seg.arguments.is_none() {
                    if let Some(k) = self.0.iter().position(|n| **n == seg.ident) {
                        *ty = self.1[k].clone();
                        return;
                    }
                }
            }
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(sig: &str, instances: &str) -> syn::Result<Option<Generic>> {
        let sig: Signature = syn::parse_str(sig).unwrap();
        let list: syn::punctuated::Punctuated<Type, syn::Token![,]> =
            syn::parse::Parser::parse_str(syn::punctuated::Punctuated::parse_terminated, instances)
                .unwrap();
        let instances = Instances {
            span: proc_macro2::Span::call_site(),
            types: list.into_iter().collect(),
        };
        Generic::of(&sig, Some(&instances))
    }

    #[test]
    fn instances_name_their_entries_and_substitute_their_types() {
        let g = generic("fn axpy<T: Copy>(a: T, x: &[T])", "f32, my::Pair")
            .unwrap()
            .unwrap();
        let entries: Vec<_> = g.instances.iter().map(|i| i.entry.as_str()).collect();
        assert_eq!(entries, ["axpy__f32", "axpy__my_Pair"]);
        let ty: Type = syn::parse_str("*mut View1<T, true>").unwrap();
        let got = g.substitute(&g.instances[0], &ty);
        assert_eq!(
            got.to_token_stream().to_string(),
            "* mut View1 < f32 , true >"
        );
        assert!(g.mentions(&ty));
        assert!(!g.mentions(&syn::parse_str("u32").unwrap()));
        let g = generic("fn f<T, U>(a: T, b: U)", "(f32, u8), (f64, u16)")
            .unwrap()
            .unwrap();
        assert_eq!(g.instances[1].entry, "f__f64__u16");
    }

    #[test]
    fn instances_must_fit_the_type_parameters() {
        assert!(generic("fn f<T, U>(a: T, b: U)", "f32").is_err());
        assert!(generic("fn f(a: f32)", "f32").is_err());
        assert!(generic("fn f<const N: usize>(a: f32)", "f32").is_err());
        let sig: Signature = syn::parse_str("fn f<T>(a: T)").unwrap();
        let e = Generic::of(&sig, None).err().unwrap();
        assert!(e.to_string().contains("instances(f32, f64)"), "{e}");
    }
}
