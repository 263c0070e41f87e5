//! The `fastmath` option (`#[kernel(fastmath)]`, `#[device(fastmath)]`, Numba's
//! `@cuda.jit(fastmath=True)`): the device build's body has each `/`, `/=` and call of the float
//! methods `sqrt`, `sin`, `cos`, `tan`, `exp`, `ln`, `log2`, `log10` and `powf` (and of the
//! functions `math::sqrt`, ..., `math::log`, `math::pow`) rewritten into a call of the
//! runtime's `__rt::fastmath`, which is approximate on `f32` (CUDA's `__fdividef`,
//! `__expf`, ..., the crate-wide `KERNEL_FAST_MATH` switch's instructions) and the operation
//! itself on every other type. Nested items keep their arithmetic; macros' arguments are not
//! read. The CPU backend's body is the one written. (The option itself: `parse::fastmath`.)

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr};

/// The methods rewritten, with the arguments each takes besides its receiver.
const METHODS: [(&str, usize); 9] = [
    ("sqrt", 0),
    ("sin", 0),
    ("cos", 0),
    ("tan", 0),
    ("exp", 0),
    ("ln", 0),
    ("log2", 0),
    ("log10", 0),
    ("powf", 1),
];

/// The free functions of `math` rewritten (Numba's `math.sqrt(x)`, ..., called as
/// `math::sqrt(x)`), with the method each is.
const FUNCTIONS: [(&str, &str); 9] = [
    ("sqrt", "sqrt"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("tan", "tan"),
    ("exp", "exp"),
    ("log", "ln"),
    ("log2", "log2"),
    ("log10", "log10"),
    ("pow", "powf"),
];

/// Rewrites `block` for a `fastmath` device build.
pub fn rewrite(block: &mut syn::Block) {
    FastMath.visit_block_mut(block);
}

/// The function `func` with the attributes `attrs`: where `fast`, twice, the device build's
/// with its body rewritten and the CPU backend's as written.
pub fn function(func: &syn::ItemFn, attrs: TokenStream, fast: bool) -> TokenStream {
    if !fast {
        return quote!(#attrs #func);
    }
    let mut device = func.clone();
    rewrite(&mut device.block);
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #attrs
        #device
        #[cfg(not(target_arch = "nvptx64"))]
        #attrs
        #func
    }
}

struct FastMath;

impl VisitMut for FastMath {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        visit_mut::visit_expr_mut(self, expr);
        if let Some(fast) = fast_form(expr) {
            *expr = fast;
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// What `expr` (its operands already rewritten) becomes in a `fastmath` body, if anything.
fn fast_form(expr: &Expr) -> Option<Expr> {
    let call = |tokens| syn::parse2::<Expr>(tokens).ok();
    match expr {
        Expr::Binary(b) if matches!(b.op, BinOp::Div(_)) => {
            let (l, r) = (&b.left, &b.right);
            call(quote_spanned!(b.span()=> ::kernel_runtime::__rt::fastmath::div(#l, #r)))
        }
        Expr::Binary(b) if matches!(b.op, BinOp::DivAssign(_)) => {
            let (l, r) = (&b.left, &b.right);
            call(quote_spanned!(b.span()=>
                ::kernel_runtime::__rt::fastmath::div_assign(&mut #l, #r)
            ))
        }
        Expr::MethodCall(m) if m.turbofish.is_none() => {
            let name = m.method.to_string();
            METHODS
                .iter()
                .any(|&(method, args)| method == name && args == m.args.len())
                .then_some(())?;
            let (method, receiver, args) = (&m.method, &m.receiver, m.args.iter());
            call(quote_spanned!(m.method.span()=>
                ::kernel_runtime::__rt::fastmath::#method(#receiver #(, #args)*)
            ))
        }
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else { return None };
            let segments = crate::syntax::segment_names(&p.path);
            let [.., module, name] = &segments[..] else {
                return None;
            };
            let &(_, method) = FUNCTIONS
                .iter()
                .find(|(f, _)| f == name && module == "math")?;
            let (method, args) = (syn::Ident::new(method, c.span()), c.args.iter());
            call(quote_spanned!(c.span()=> ::kernel_runtime::__rt::fastmath::#method(#(#args),*)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn rewritten(body: proc_macro2::TokenStream) -> String {
        let mut block: syn::Block = syn::parse2(quote!({ #body })).unwrap();
        super::rewrite(&mut block);
        quote!(#block)
            .to_string()
            .replace(":: kernel_runtime :: __rt :: fastmath :: ", "fm::")
    }

    #[test]
    fn divisions_and_float_methods_become_fast_calls() {
        let out = rewritten(quote! {
            let r = (a / b).sqrt() + x.powf(y / 2.0);
            c[i] /= d.exp();
            let n = v.len() / 2;
            let m = math::log(x) + kernel_runtime::math::pow(x, 2.0);
        });
        assert_eq!(
            out,
            "{ let r = fm::sqrt ((fm::div (a , b))) + fm::powf (x , fm::div (y , 2.0)) ; \
             fm::div_assign (& mut c [i] , fm::exp (d)) ; \
             let n = fm::div (v . len () , 2) ; \
             let m = fm::ln (x) + fm::powf (x , 2.0) ; }"
        );
    }

    #[test]
    fn other_calls_nested_items_and_macros_are_left_as_they_are() {
        let body = quote! {
            let a = x.abs() + x.powi(2) + x.sin::<f32>() + f32::sqrt(x) + y.powf()
                + math::fast::exp(x) + math::gamma(x) + sqrt(x);
            fn helper(a: f32) -> f32 { a / 2.0 }
            kprintln!("{}", a / 2.0);
        };
        let expected = {
            let block: syn::Block = syn::parse2(quote!({ #body })).unwrap();
            quote!(#block).to_string()
        };
        assert_eq!(rewritten(body), expected);
    }
}
