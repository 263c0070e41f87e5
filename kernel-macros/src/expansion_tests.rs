//! Expansion snapshots: what `#[kernel]`, `#[vectorize]` and `#[guvectorize]` make of eight
//! typical kernels, and `#[device(extern)]` of a foreign declaration,
//! pretty-printed under `src/snapshots/`, so that a change to the generated code shows in
//! review. `cargo insta review` (or `INSTA_UPDATE=always cargo test -p kernel-macros`)
//! accepts a deliberate change.

use proc_macro2::TokenStream;
use quote::quote;

/// The pretty-printed expansion of `#[kernel(attr)] item`.
fn kernel(attr: TokenStream, item: TokenStream) -> String {
    let out = crate::kernel::parse::kernel(attr, item)
        .and_then(crate::kernel::validate::kernel)
        .map(crate::emit::kernel)
        .unwrap_or_else(|e| panic!("the kernel does not expand: {e}"));
    pretty(out)
}

fn pretty(tokens: TokenStream) -> String {
    let file = syn::parse2(tokens).expect("the expansion parses as items");
    prettyplease::unparse(&file)
}

#[test]
fn a_plain_kernel() {
    let expanded = kernel(
        quote!(),
        quote! {
            /// Adds two vectors.
            pub fn add(a: &[f32], b: &[f32], c: &mut [f32]) {
                let i = grid(1);
                if i < c.len() {
                    c[i] = a[i] + b[i];
                }
            }
        },
    );
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_stencil_without_index_checks() {
    let expanded = kernel(
        quote!(boundscheck = false),
        quote! {
            /// The 3-point mean of the interior of each row.
            pub fn mean3(x: &Array2<f32>, out: &mut Array2<f32>) {
                let (j, i) = grid(2);
                let (n, m) = x.dim();
                if i < n && 1 <= j && j + 1 < m {
                    out[[i, j]] = (x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]]) / 3.0;
                }
            }
        },
    );
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_kernel_with_barriers() {
    let expanded = kernel(
        quote!(launch_bounds = 256),
        quote! {
            pub fn block_sums(x: &[f32], sums: &mut [f32]) {
                let mut s = shared_array![f32; 256];
                let t = thread_idx().x as usize;
                let i = grid(1);
                s[t] = if i < x.len() { x[i] } else { 0.0 };
                sync_threads();
                let mut stride = block_dim().x as usize / 2;
                while stride > 0 {
                    if t < stride {
                        s[t] += s[t + stride];
                    }
                    sync_threads();
                    stride /= 2;
                }
                if t == 0 {
                    sums[block_idx().x as usize] = s[0];
                }
            }
        },
    );
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_warp_kernel() {
    let expanded = kernel(
        quote!(),
        quote! {
            pub fn warp_sums(x: &[f32], sums: &mut [f32]) {
                let i = grid(1);
                let mut v = if i < x.len() { x[i] } else { 0.0 };
                let mut offset = 16;
                while offset > 0 {
                    v += shfl_down_sync(0xffff_ffff, v, offset);
                    offset /= 2;
                }
                if lane_id() == 0 && i < x.len() {
                    sums[i / 32] = v;
                }
            }
        },
    );
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_generic_kernel() {
    let expanded = kernel(
        quote!(instances(f32, i64)),
        quote! {
            /// `y += a x`, for two types.
            pub fn axpy<T: DeviceNumber>(a: T, x: &[T], y: &mut [T]) {
                let i = grid(1);
                if i < y.len() {
                    y[i] += a * x[i];
                }
            }
        },
    );
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_cooperative_kernel() {
    let expanded = kernel(
        quote!(),
        quote! {
            /// Each thread reads what its neighbour wrote before the grid barrier.
            pub fn shift(a: &mut [u32], b: &mut [u32]) {
                let i = grid(1);
                a[i] = i as u32;
                grid_sync();
                b[i] = a[(i + 1) % a.len()];
            }
        },
    );
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_vectorized_function() {
    let out = crate::emit::vectorize::vectorize(
        quote!(),
        quote! {
            /// `a·x + y`.
            pub fn saxpy(a: f32, x: f32, y: f32) -> f32 {
                a * x + y
            }
        },
    )
    .unwrap_or_else(|e| panic!("the function does not expand: {e}"));
    let expanded = pretty(out);
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_generalized_ufunc() {
    let out = crate::guvectorize::guvectorize(
        quote!("(n),()->(n)"),
        quote! {
            /// A vector plus a scalar.
            pub fn shift(x: &[f32], y: f32, out: &mut [f32]) {
                for i in 0..x.len() {
                    out[i] = x[i] + y;
                }
            }
        },
    )
    .unwrap_or_else(|e| panic!("the function does not expand: {e}"));
    let expanded = pretty(out);
    insta::assert_snapshot!(expanded);
}

#[test]
fn a_stencil_function() {
    let out = crate::stencil::stencil(
        quote!(cval = 0.0),
        quote! {
            /// The mean of a point's row neighbours.
            pub fn mean3(x: &Array2<f32>) -> f32 {
                (x[[0, -1]] + x[[0, 0]] + x[[0, 1]]) / 3.0
            }
        },
    )
    .unwrap_or_else(|e| panic!("the stencil does not expand: {e}"));
    let expanded = pretty(out);
    insta::assert_snapshot!(expanded);
}

#[test]
fn only_split_kernels_without_atomics_get_a_wide_copy() {
    let with_atomics = kernel(
        quote!(),
        quote! {
            pub fn histogram(x: &[u32], counts: &mut [u32]) {
                let mut tally = shared_array![u32; 16];
                let t = thread_idx().x as usize;
                if t < 16 {
                    tally[t] = 0;
                }
                sync_threads();
                let i = grid(1);
                if i < x.len() {
                    atomic_add(&tally, (x[i] % 16) as usize, 1);
                }
                sync_threads();
                if t < 16 {
                    atomic_add(&counts, t, tally[t]);
                }
            }
        },
    );
    assert!(with_atomics.contains("Split::<_, false>"), "{with_atomics}");
    assert!(!with_atomics.contains("Split::<_, true>"), "{with_atomics}");
}

#[test]
fn a_foreign_declaration() {
    let out = crate::emit::foreign::declaration(
        quote!(extern, cpu = mul_on_cpu, name = "mul_f32"),
        quote! {
            /// The product, from CUDA C++.
            pub fn mul(a: f32, b: f32) -> f32;
        },
    )
    .unwrap_or_else(|e| panic!("the declaration does not expand: {e}"));
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn a_stencil_with_index_checks_checks_them_once_per_span() {
    // Numba's spelling of the guard, as early returns.
    let expanded = kernel(
        quote!(),
        quote! {
            pub fn mean3(x: &Array2<f32>, out: &mut Array2<f32>) {
                let (j, i) = grid(2);
                let (n, m) = x.dim();
                if i >= n || j < 1 || j >= m - 1 {
                    return;
                }
                out[[i, j]] = (x[[i, j - 1]] + x[[i, j]] + x[[i, j + 1]]) / 3.0;
            }
        },
    );
    assert!(
        expanded.contains("__rt::Grid(__fast, __span, __record)"),
        "{expanded}"
    );
    assert_eq!(
        expanded.matches("__rt::Span::within").count(),
        4,
        "{expanded}"
    );
    assert_eq!(
        expanded.matches("__rt::Proven::new").count(),
        4,
        "{expanded}"
    );
    // The checked body is the fast one, its rows' decisions false there.
    assert!(!expanded.contains("let __checked"), "{expanded}");
}

#[test]
fn copies_of_other_sizes_are_refused_with_the_sizes_that_fit() {
    // The macro's error, if any.
    let refusal = |call: &str| {
        let call: syn::Expr = syn::parse_str(call).unwrap();
        let item = quote! {
            fn staged(x: &Array2<f32>) {
                let mut tile = shared_array![f32; [4, 8]];
                #call;
            }
        };
        crate::kernel::parse::kernel(quote!(), item)
            .and_then(crate::kernel::validate::kernel)
            .map(crate::emit::kernel)
            .err()
            .map(|e| e.to_string())
    };
    for (call, refused) in [
        ("memcpy_async::<i8, 3>(&mut tile, [0, 0], &x, [0, 0], 3)", Some("copies 3 bytes, and a copy moves 4, 8 or 16 (cp.async): copy 4, 8 or 16 elements of `i8`")),
        ("memcpy_async::<f64, 4>(&mut tile, [0, 0], &x, [0, 0], 4)", Some("copies 32 bytes, and a copy moves 4, 8 or 16 (cp.async): copy 1 or 2 elements of `f64`")),
        ("pipeline::memcpy_async::<u32, 3>(&mut tile, [0, 0], &x, [0, 0], 3)", Some("copy 1, 2 or 4 elements of `u32`")),
        ("memcpy_async::<f32, 4>(&mut tile, [0, 0], &x, [0, 0], 4)", None),
        ("memcpy_async::<T, 3>(&mut tile, [0, 0], &x, [0, 0], 3)", None),
    ] {
        let error = refusal(call);
        match refused {
            Some(message) => assert!(
                error.as_deref().is_some_and(|e| e.contains(message)),
                "{call}: {error:?}"
            ),
            None => assert_eq!(error, None, "{call}"),
        }
    }
}
