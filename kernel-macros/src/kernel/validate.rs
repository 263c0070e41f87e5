//! Validation: the rules a kernel's signature and body must follow, checked before expansion.

use crate::kernel::generic::Generic;
use crate::kernel::params::{self, Param};
use crate::kernel::parse::{DeviceItem, KernelItem, KernelOptions};
use crate::kernel::rewrite::{self, Rewritten, Scope};
use quote::format_ident;
use syn::{ItemFn, ReturnType, Signature, Type};

/// A kernel that passed validation, body already rewritten.
pub struct Kernel {
    pub options: KernelOptions,
    /// The type parameters and instances of a generic kernel.
    pub generic: Option<Generic>,
    pub func: ItemFn,
    pub params: Vec<Param>,
    pub body: Rewritten,
    pub layout: syn::Ident,
}

impl Kernel {
    /// Whether the type of `p` names one of a generic kernel's type parameters.
    pub fn generic_in(&self, p: &Param) -> bool {
        self.generic
            .as_ref()
            .is_some_and(|g| g.mentions(p.data_ty()))
    }

    /// Whether its threads may meet at barriers or warp collectives: its body has some, or its
    /// `barriers` option says so.
    pub fn has_barriers(&self) -> bool {
        self.options.barriers || self.body.barriers
    }
}

/// A device function that passed validation, body already rewritten.
pub struct DeviceFn {
    /// Its device build's body is `fastmath`'s.
    pub fastmath: bool,
    pub func: ItemFn,
    pub body: Rewritten,
}

fn common(sig: &Signature, what: &str) -> syn::Result<()> {
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new_spanned(
            a,
            format!(
                "{what} cannot be `async`: device code runs to completion, there is no executor"
            ),
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            v,
            format!("{what} cannot be variadic"),
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new_spanned(
            abi,
            format!("{what} cannot name an ABI: the macro chooses it"),
        ));
    }
    Ok(())
}

fn join(errors: Vec<syn::Error>) -> syn::Result<()> {
    let mut it = errors.into_iter();
    match it.next() {
        None => Ok(()),
        Some(mut first) => {
            for e in it {
                first.combine(e);
            }
            Err(first)
        }
    }
}

pub fn kernel(item: KernelItem) -> syn::Result<Kernel> {
    let KernelItem { options, mut func } = item;
    let sig = &func.sig;
    common(sig, "a kernel")?;
    let mut errors = Vec::new();
    if let Some(c) = &sig.constness {
        errors.push(syn::Error::new_spanned(c, "a kernel cannot be `const fn`"));
    }
    let generic = match Generic::of(sig, options.instances.as_ref()) {
        Ok(g) => g,
        Err(e) => {
            errors.push(e);
            None
        }
    };
    if let ReturnType::Type(_, ty) = &sig.output {
        let unit = matches!(&**ty, Type::Tuple(t) if t.elems.is_empty());
        if !unit {
            errors.push(syn::Error::new_spanned(
                ty,
                "a kernel returns nothing: write its results into a `&mut` array parameter",
            ));
        }
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match params::parse(arg) {
            Ok(p) => params.push(p),
            Err(e) => errors.push(e),
        }
    }
    join(errors)?;
    raw_pointers(sig, &params)?;
    read_only_writes(&func.block, &params)?;
    let layout = format_ident!("__KERNEL_SHARED_{}", func.sig.ident);
    let names: Vec<String> = params.iter().map(|p| p.name.to_string()).collect();
    let body = rewrite::rewrite(
        &mut func.block,
        Scope::Kernel,
        layout.clone(),
        &names,
        &func.sig.generics,
    )?;
    if let Some(g) = &generic {
        if let Some(d) = body.shared.iter().find(|d| g.mentions(&d.elem)) {
            return Err(syn::Error::new(
                d.span,
                "a generic kernel's shared arrays take a concrete element type: their layout is \
                 fixed before the kernel is instantiated",
            ));
        }
    }
    Ok(Kernel {
        options,
        generic,
        func,
        params,
        body,
        layout,
    })
}

pub fn device(item: DeviceItem) -> syn::Result<DeviceFn> {
    let DeviceItem { fastmath, mut func } = item;
    common(&func.sig, "a device function")?;
    generic_shared(&func)?;
    // The prefix of the names of its shared arrays' PTX variables: the function's, and a hash
    // of its text, apart from a function of the same name in another module.
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        quote::quote!(#func).to_string().hash(&mut h);
        h.finish()
    };
    let layout = format_ident!("__fshared_{}_{:016x}", func.sig.ident, hash);
    let body = rewrite::rewrite(
        &mut func.block,
        Scope::Function,
        layout,
        &[],
        &func.sig.generics,
    )?;
    Ok(DeviceFn {
        fastmath,
        func,
        body,
    })
}

/// Refuses a shared array of a generic device function whose type or size names one of the
/// function's parameters: the array is one per block, a `.shared` variable of the module,
/// whatever the instance.
fn generic_shared(func: &ItemFn) -> syn::Result<()> {
    use syn::visit::Visit;
    struct Uses<'a> {
        generics: Vec<String>,
        func: &'a str,
        error: Option<syn::Error>,
    }
    fn names(tokens: proc_macro2::TokenStream, generics: &[String]) -> Option<String> {
        tokens.into_iter().find_map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if generics.contains(&i.to_string()) => {
                Some(i.to_string())
            }
            proc_macro2::TokenTree::Group(g) => names(g.stream(), generics),
            _ => None,
        })
    }
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if self.error.is_none() && m.path.is_ident("shared_array") {
                if let Some(g) = names(m.tokens.clone(), &self.generics) {
                    self.error = Some(syn::Error::new_spanned(
                        m,
                        format!(
                            "a shared array of a #[device] function is one per block, the same \
                             for every instance of `{}`: its type and size cannot name the \
                             parameter `{g}`; declare the array in the kernel and pass it in",
                            self.func
                        ),
                    ));
                }
            }
        }
    }
    let generics: Vec<String> = crate::syntax::generic_names(&func.sig.generics).collect();
    if generics.is_empty() {
        return Ok(());
    }
    let name = func.sig.ident.to_string();
    let mut uses = Uses {
        generics,
        func: &name,
        error: None,
    };
    uses.visit_block(&func.block);
    uses.error.map_or(Ok(()), Err)
}

/// Refuses `a[i] = ..` and `a[i] += ..` where `a` is a read-only array parameter (not rebound
/// in the body), with the rule in the message rather than the compiler's `IndexMut` note.
/// A kernel that takes raw pointers is `unsafe fn` (its launches are `unsafe`, their pointers'
/// validity the caller's promise), and only such a kernel is.
fn raw_pointers(sig: &Signature, params: &[Param]) -> syn::Result<()> {
    let pointer = params.iter().find(|p| p.is_pointer());
    match (&sig.unsafety, pointer) {
        (None, Some(p)) => Err(syn::Error::new(
            p.ty_span,
            "a kernel that takes raw pointers is an `unsafe fn`: its launches are `unsafe`, the \
             caller promising that each pointer addresses the launch's device memory, valid for \
             what the kernel does with it; or take the array as `&[T]` / `&mut [T]`",
        )),
        (Some(u), None) => Err(syn::Error::new_spanned(
            u,
            "a kernel is `unsafe fn` only when it takes raw pointers: launching it is safe; put \
             unsafe operations in `unsafe {}` blocks",
        )),
        _ => Ok(()),
    }
}

fn read_only_writes(block: &syn::Block, params: &[Param]) -> syn::Result<()> {
    use syn::visit::Visit;
    struct Bound(std::collections::HashSet<String>);
    impl<'ast> Visit<'ast> for Bound {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.insert(p.ident.to_string());
        }
    }
    struct Writes<'a> {
        read_only: &'a [String],
        errors: Vec<syn::Error>,
    }
    impl Writes<'_> {
        fn target(&mut self, place: &syn::Expr) {
            let mut base = place;
            while let syn::Expr::Index(i) = base {
                base = &i.expr;
            }
            if !matches!(place, syn::Expr::Index(_)) {
                return;
            }
            if let syn::Expr::Path(p) = base {
                if let Some(name) = p.path.get_ident().map(|i| i.to_string()) {
                    if self.read_only.contains(&name) {
                        self.errors.push(syn::Error::new_spanned(
                            place,
                            format!("`{name}` is a read-only array parameter: declare it `&mut` (`&mut [T]`, `&mut Array2<T>`) to write into it"),
                        ));
                    }
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Writes<'_> {
        fn visit_expr_assign(&mut self, e: &'ast syn::ExprAssign) {
            self.target(&e.left);
            syn::visit::visit_expr_assign(self, e);
        }
        fn visit_expr_binary(&mut self, e: &'ast syn::ExprBinary) {
            if crate::syntax::assigns(&e.op) {
                self.target(&e.left);
            }
            syn::visit::visit_expr_binary(self, e);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut bound = Bound(Default::default());
    bound.visit_block(block);
    let read_only: Vec<String> = params
        .iter()
        .filter(|p| {
            matches!(
                p.kind,
                crate::kernel::params::Kind::Array { mutable: false, .. }
            )
        })
        .map(|p| p.name.to_string())
        .filter(|n| !bound.0.contains(n))
        .collect();
    let mut w = Writes {
        read_only: &read_only,
        errors: Vec::new(),
    };
    w.visit_block(block);
    join(w.errors)
}
