//! The attributes of the kernel DSL: `#[kernel]`, `#[device]` and `#[derive(DeviceCopy)]`.
//!
//! A kernel is parsed and validated once into a model (`kernel`), from which each target is
//! emitted side by side (`emit`); the CPU backend's transforms of the body live in `split`, over
//! the syntax helpers they share (`syntax`) and the runtime's names (`vocab`). Every error is a
//! spanned `syn::Error` pointing at the user's own code, never a panic; an item with an error
//! leaves a stand-in of its name, so that its uses add no errors of their own.
//! Use them through `kernel_runtime` (`use kernel_runtime::prelude::*;`).

mod emit;
mod guvectorize;
mod kernel;
mod split;
mod stencil;
mod syntax;
mod vocab;

#[cfg(test)]
mod expansion_tests;

use proc_macro::TokenStream;

/// Marks a function as a kernel, launched over a grid of blocks of threads.
///
/// The function becomes a value named like it, with `launch(blocks, threads, (args..))` and
/// `launch_with(config, (args..))`; its body is compiled for the CPU backend and, from the
/// crate's `build.rs`, to PTX. Options: `#[kernel(boundscheck = false)]` drops index checks,
/// `#[kernel(barriers)]` forces barrier support when `sync_threads()` is only called from
/// `#[device]` functions, `#[kernel(fastmath)]` makes its `f32` division and functions CUDA's
/// approximate ones on a GPU, `#[kernel(instances(f32, f64))]` lists the types a generic kernel is
/// compiled for (one PTX entry each; tuples for several type parameters). A kernel whose body
/// calls `grid_sync()` or `this_grid()` is cooperative.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut out = build_script_check(&item, "kernel");
    out.extend(
        kernel::parse::kernel(attr.into(), item.clone())
            .and_then(kernel::validate::kernel)
            .map(emit::kernel)
            .unwrap_or_else(|e| with_stand_in(e, &item, emit::launcher::stand_in)),
    );
    out.into()
}

/// The variable kernel-build sets for the compilation of a crate whose build script builds its
/// kernels (and for the device crates it builds); the runtime's build script sets it for its
/// own documentation's examples.
const BUILD_MARKER: &str = "KERNEL_BUILD";

/// A compile error at a `#[attr]` function's name where the crate has no build script that
/// builds its kernels: such a kernel could never become PTX, and would fail only the day the
/// crate got one.
fn build_script_check(item: &proc_macro2::TokenStream, attr: &str) -> proc_macro2::TokenStream {
    if std::env::var_os(BUILD_MARKER).is_some() {
        return proc_macro2::TokenStream::new();
    }
    let span = syn::parse2::<syn::ItemFn>(item.clone())
        .map_or_else(|_| proc_macro2::Span::call_site(), |f| f.sig.ident.span());
    syn::Error::new(
        span,
        format!(
            "`#[{attr}]` needs the crate's build script to build its kernels for the GPU, and \
             this crate has none that does: add `kernel-build` to `[build-dependencies]` and a \
             `build.rs` with `fn main() {{ kernel_build::build(); }}` (the README's \"Your own \
             crate\"); without an nvptx64 toolchain the crate still builds, for the CPU backend"
        ),
    )
    .into_compile_error()
}

/// Marks a function callable from kernels (and from host code): the build-time compiler takes
/// it into the device crate; `grid(n)`, `thread_idx()` and friends work inside it.
///
/// `#[device(fastmath)]` makes its `f32` division and functions approximate on a GPU, as
/// `#[kernel(fastmath)]` does a kernel's.
///
/// `#[device(extern, cpu = path)] fn name(a: f32, b: f32) -> f32;` declares a device function
/// whose body is CUDA C++ or PTX that `build.rs` links (`kernel_build::Builder::link_cuda`,
/// `link_ptx`); the CPU backend runs the Rust function `path` in its place. It passes 32- and
/// 64-bit integers and floats, and raw pointers in an `unsafe fn`; `name = "symbol"` links a C
/// name other than the Rust one.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (attr, item) = (
        proc_macro2::TokenStream::from(attr),
        proc_macro2::TokenStream::from(item),
    );
    if emit::foreign::is_foreign(&attr) {
        return emit::foreign::declaration(attr, item.clone())
            .unwrap_or_else(|e| {
                let mut out = e.into_compile_error();
                out.extend(emit::foreign::stand_in(&item));
                out
            })
            .into();
    }
    kernel::parse::device(attr, item.clone())
        .and_then(kernel::validate::device)
        .map(emit::device::function)
        .unwrap_or_else(|e| with_stand_in(e, &item, emit::device::stand_in))
        .into()
}

/// The error, and where the item parses as a function, the stand-in `make` writes for it: the
/// user then sees the error, not a second one at each use of the name.
fn with_stand_in(
    error: syn::Error,
    item: &proc_macro2::TokenStream,
    make: fn(&syn::ItemFn) -> proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let mut out = error.into_compile_error();
    if let Ok(func) = syn::parse2::<syn::ItemFn>(item.clone()) {
        out.extend(make(&func));
    }
    out
}

/// Makes an element-wise function applicable to whole arrays, as Numba's `@vectorize`:
/// `#[vectorize] fn add(a: f32, b: f32) -> f32 { a + b }` gives `add.apply((&a, &b), &mut c)`,
/// `add.call((&a, &b))` (a new array) and `add.scalar(x, y)`. `#[vectorize(fastmath)]` makes
/// its `f32` division and functions approximate on a GPU, as `#[kernel(fastmath)]`.
#[proc_macro_attribute]
pub fn vectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut out = build_script_check(&item, "vectorize");
    out.extend(
        emit::vectorize::vectorize(attr.into(), item)
            .unwrap_or_else(syn::Error::into_compile_error),
    );
    out.into()
}

/// Applies a function of core arrays at every index of the loop dimensions in front of them, as
/// Numba's `@guvectorize` (a generalized ufunc): `#[guvectorize("(n),(n)->()")] fn dot(a: &[f32],
/// b: &[f32]) -> f32` gives `dot.apply((&a, &b), &mut out)` and `dot.call((&a, &b))` (a new
/// array), on the arrays' device. The layout names each input's core dimensions, then the
/// outputs': a `()` input is a scalar (an array of the loop dimensions, or one value for all), a
/// `(n)` one `&[T]`, a `(m,n)` one `&Array2<T>`; one `()` output is the return value, other
/// outputs the last parameters, `&mut [T]`, `&mut Array2<T>`, or `&mut T` for a `()` one.
/// `#[guvectorize("(n)->()", fastmath)]` makes its `f32` division and functions approximate on
/// a GPU, as `#[kernel(fastmath)]`.
#[proc_macro_attribute]
pub fn guvectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut out = build_script_check(&item, "guvectorize");
    out.extend(
        guvectorize::guvectorize(attr.into(), item).unwrap_or_else(syn::Error::into_compile_error),
    );
    out.into()
}

/// Applies a function of one point and its neighbours to whole arrays, as Numba's `@stencil`:
/// `#[stencil] fn smooth(x: &Array2<i8>) -> i8 { .. x[[-1, 0]] .. }` reads `x` through relative
/// indices and gives `smooth.apply(&x, &mut out)` and `smooth.run(&x)` (a new array), on the
/// arrays' device. The value is written at each point whose neighbourhood lies in the arrays;
/// the others get `cval` (`#[stencil(cval = -1)]`), or keep their values where none is given
/// (zero in a new array). `neighborhood = ((-2, 2), ..)` bounds relative indices computed at run
/// time; `standard_indexing = (w, ..)` names arrays indexed as usual, of any shape. Loops over
/// constant ranges are written out, so relative indices made of their counters are constants.
/// `tile = (rows, cols)` sets the outputs of one GPU thread, for tuning (the default comes from
/// the element size and the rank; one row for one axis).
#[proc_macro_attribute]
pub fn stencil(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut out = build_script_check(&item, "stencil");
    out.extend(stencil::stencil(attr.into(), item).unwrap_or_else(syn::Error::into_compile_error));
    out.into()
}

/// Makes a binary operation a reduction over whole arrays, as Numba's `cuda.reduce`:
/// `#[reduce] fn sum(a: f32, b: f32) -> f32 { a + b }` gives `sum.reduce(&array)` (`None` for an
/// empty array) and `sum.fold(&array, init)`, on the array's device (on a GPU, a tree of warp
/// shuffles per block), for `i32`, `u32`, `i64`, `u64`, `f32` and `f64`.
#[proc_macro_attribute]
pub fn reduce(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut out = build_script_check(&item, "reduce");
    out.extend(
        emit::reduce::reduce(attr.into(), item).unwrap_or_else(syn::Error::into_compile_error),
    );
    out.into()
}

/// Implements `DeviceCopy` for a `#[repr(C)]` struct whose fields are all `DeviceCopy`.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(item: TokenStream) -> TokenStream {
    emit::derive::device_copy(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares an array in constant memory that kernels read and host code fills at run time
/// (CUDA's `__constant__`, Numba's `cuda.const.array_like`):
/// `constant_array!(pub static TAPS: [f32; 16]);` declares `TAPS`, a
/// `kernel_runtime::ModuleArray<f32, 16>`. It holds at most 64 KiB; kernels index
/// `TAPS.read()`, host code calls `TAPS.set(&device, &values)`.
#[proc_macro]
pub fn constant_array(input: TokenStream) -> TokenStream {
    emit::module_array::module_array(input.into(), emit::module_array::Space::Constant)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares an array in global memory that kernels read and host code fills at run time
/// (CUDA's `__device__` arrays): `global_array!(pub static TABLE: [u32; 4096]);` declares
/// `TABLE`, a `kernel_runtime::ModuleArray<u32, 4096>`; kernels index `TABLE.read()`, host code
/// calls `TABLE.set(&device, &values)`.
#[proc_macro]
pub fn global_array(input: TokenStream) -> TokenStream {
    emit::module_array::module_array(input.into(), emit::module_array::Space::Global)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Prints a line from a kernel (or a `#[device]` function), as CUDA's `printf`:
/// `kprintln!("thread {}: x = {:.3}", thread_idx().x, x)`. The format string takes Rust's
/// syntax and is checked at compile time; integers, floats, `bool`s and string literals print.
/// On a GPU a line goes through `vprintf`, on the CPU backend through `snprintf`, with the
/// same C format string, built at compile time.
#[proc_macro]
pub fn kprintln(input: TokenStream) -> TokenStream {
    emit::print::kprintln(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
