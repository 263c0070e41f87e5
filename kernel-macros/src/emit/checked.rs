//! Checked mode's run of a kernel: each argument's traced view, then a body that is the
//! kernel's own, except that
//! - a compound assignment to an array element (`a[i] += x`) first reads the element, so that
//!   checked mode sees the read that `IndexMut` alone hides (a sum into shared memory nobody
//!   cleared is then a read of uninitialized memory, not a plain write);
//! - shared arrays are made by the `traced_` versions of `kernel_runtime::shared`'s functions,
//!   which record their accesses (the fast backend's are never traced, at no cost).

use crate::emit::cpu::CpuPlan;
use crate::kernel::validate::Kernel;
use crate::syntax::assigns;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::Expr;

/// Checked mode's run: the launch's shadows, the traced views, the body in their closure.
pub fn launch(k: &Kernel, plan: &CpuPlan) -> TokenStream {
    let check = k.options.boundscheck;
    let views = k.params.iter().map(|p| {
        let (n, n_str) = (&p.name, p.name.to_string());
        quote! {
            // SAFETY: the launch runs on the CPU backend, where every array argument lives; the
            // views live in the closure that `__shadows.run` takes, which `__shadows` outlives.
            let #n = unsafe {
                ::kernel_runtime::__rt::KernelArg::traced_view::<#check>(#n, #n_str, &mut __shadows)
            };
        }
    });
    let rebinds = k.params.iter().map(|p| p.cpu_rebinding(false));
    let block = body(&k.func.block, plan.split.is_some());
    let grid = crate::emit::cpu::grid_binding(k);
    let run = match k.body.cooperative {
        true => quote!(run_cooperative),
        false => quote!(run),
    };
    quote! {
        let mut __shadows = ::kernel_runtime::__rt::LaunchShadows::new(&__spec)
            .map_err(|fault| fault.into_error(Self::NAME))?;
        #(#views)*
        // Inlined into the thread loop, with the views' inline record of plain writes.
        return __shadows.#run(&__spec, #[inline(always)] move |__kctx: ::kernel_runtime::Ctx| {
            #(#rebinds)*
            #grid
            #block
        })
        .map_err(|fault| fault.into_error(Self::NAME));
    }
}

/// The checked-mode version of a kernel's body; one that is `split` calls its collectives
/// through the operands the split one gathers.
fn body(block: &syn::Block, split: bool) -> syn::Block {
    let mut block = block.clone();
    ReadBeforeUpdate.visit_block_mut(&mut block);
    if split {
        crate::split::lockstep::meet_operands(&mut block);
    }
    block
}

struct ReadBeforeUpdate;

impl VisitMut for ReadBeforeUpdate {
    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        visit_mut::visit_path_mut(self, path);
        let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if path.leading_colon.is_some()
            && names.len() == 3
            && names[0] == "kernel_runtime"
            && names[1] == "shared"
            && matches!(names[2].as_str(), "array1" | "array2" | "dynamic")
        {
            let last = &mut path.segments[2].ident;
            *last = syn::Ident::new(&format!("traced_{last}"), last.span());
        }
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        visit_mut::visit_expr_mut(self, expr);
        let Expr::Binary(bin) = expr else { return };
        if !assigns(&bin.op) {
            return;
        }
        let Expr::Index(place) = &*bin.left else {
            return;
        };
        // Only an array named by a path: evaluating it twice has no effect.
        if !matches!(&*place.expr, Expr::Path(_)) {
            return;
        }
        let (array, index, op, value) = (&place.expr, &place.index, &bin.op, &bin.right);
        let span: Span = bin.span();
        // The value first, then the index, as Rust evaluates a compound assignment of
        // primitive operands; the read and the write are reported at the user's line.
        let checked = quote_spanned! {span=>
            {
                let __kernel_value = #value;
                let __kernel_index = #index;
                let _ = &#array[__kernel_index];
                #array[__kernel_index] #op __kernel_value
            }
        };
        // Tokens made from parsed expressions parse again; if not, the body stays as written.
        if let Ok(e) = syn::parse2(checked) {
            *expr = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    #[test]
    fn compound_assignments_to_elements_read_first() {
        let b: syn::Block = syn::parse_quote!({
            let s = ::kernel_runtime::shared::array1::<f32>(&__kctx, 0, 4, "s");
            s[t] += x[t];
            s[[i, j]] *= 2;
            y += 1;
            f(a)[0] += 1;
        });
        let out = body(&b, false).to_token_stream().to_string();
        assert!(out.contains("let _ = & s [__kernel_index]"), "{out}");
        assert!(
            out.contains("s [__kernel_index] *= __kernel_value"),
            "{out}"
        );
        assert!(out.contains("y += 1"), "{out}");
        assert!(
            out.contains(":: shared :: traced_array1 :: < f32 >"),
            "{out}"
        );
        assert!(out.contains("f (a) [0] += 1"), "{out}");
    }
}
