//! Checked mode's body of a kernel: one thread, its views traced by the runtime, the kernel's
//! own statements, except that
//! - a compound assignment to an array element (`a[i] += x`) first reads the element, so that
//!   checked mode sees the read that `IndexMut` alone hides (a sum into shared memory nobody
//!   cleared is then a read of uninitialized memory, not a plain write);
//! - each shared array is wrapped in the runtime's `traced_shared`, which records its accesses
//!   (the fast backend's are never traced, at no cost).

use crate::emit::cpu::CpuPlan;
use crate::kernel::validate::Kernel;
use crate::syntax::{assigns, segment_names};
use crate::vocab::SHARED_ARRAYS;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::Expr;

/// Checked mode's body, `__checked`: one thread of the kernel, its views traced by the
/// runtime; `None` where the fast body (`__fast`) is the same one thread, which then serves.
pub fn body(k: &Kernel, plan: &CpuPlan) -> Option<TokenStream> {
    // A guarded body serves: its rows' decisions (`__inner`) are false for every thread there.
    let block = checked_block(plan.fast_block(k), plan.split.is_some());
    let same = plan.split.is_none()
        && block.to_token_stream().to_string() == plan.fast_block(k).to_token_stream().to_string();
    if same {
        return None;
    }
    let views = crate::emit::cpu::views(k);
    let prelude = crate::emit::cpu::prelude(k);
    let grid = crate::emit::cpu::grid_binding(k);
    Some(crate::emit::cpu::body_closure(
        quote!(__checked),
        quote!(|__kctx: __rt::Ctx, #views, __inner: bool| { #prelude #grid #block }),
    ))
}

/// The checked-mode version of a kernel's body; one that is `split` calls its collectives
/// through the operands the split one gathers.
fn checked_block(block: &syn::Block, split: bool) -> syn::Block {
    let mut block = block.clone();
    ReadBeforeUpdate.visit_block_mut(&mut block);
    if split {
        crate::split::lockstep::meet_operands(&mut block);
    }
    block
}

struct ReadBeforeUpdate;

impl VisitMut for ReadBeforeUpdate {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        visit_mut::visit_expr_mut(self, expr);
        if is_shared_array(expr) {
            *expr = syn::parse_quote!(::kernel_runtime::__rt::traced_shared(&__kctx, #expr));
            return;
        }
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

/// Whether `expr` makes a shared array: a call of the runtime's `shared_array1`,
/// `shared_array2` or `dynamic_shared`, as the body pass writes `shared_array!` and
/// `dynamic_shared!`.
fn is_shared_array(expr: &Expr) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    let Expr::Path(p) = &*call.func else {
        return false;
    };
    let names = segment_names(&p.path);
    p.path.leading_colon.is_some()
        && names.len() == 3
        && names[0] == "kernel_runtime"
        && names[1] == "__rt"
        && SHARED_ARRAYS.contains(&names[2].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    #[test]
    fn compound_assignments_to_elements_read_first() {
        let b: syn::Block = syn::parse_quote!({
            let s = ::kernel_runtime::__rt::shared_array1::<f32>(&__kctx, 0, 4, "s");
            s[t] += x[t];
            s[[i, j]] *= 2;
            y += 1;
            f(a)[0] += 1;
        });
        let out = checked_block(&b, false).to_token_stream().to_string();
        assert!(out.contains("let _ = & s [__kernel_index]"), "{out}");
        assert!(
            out.contains("s [__kernel_index] *= __kernel_value"),
            "{out}"
        );
        assert!(out.contains("y += 1"), "{out}");
        assert!(
            out.contains(
                ":: __rt :: traced_shared (& __kctx , :: kernel_runtime :: __rt :: shared_array1"
            ),
            "{out}"
        );
        assert!(out.contains("f (a) [0] += 1"), "{out}");
    }
}
