//! CUDA's fast `f32` intrinsics (`__expf`, `__fdividef`, `__sinf`, ..., Numba's
//! `cuda.libdevice.fast_expf`, ...): on a GPU each is one or two of PTX's approximate
//! instructions (`ex2.approx`, `lg2.approx`, `sin.approx`, `cos.approx`, `div.approx`), several
//! times faster than the correctly rounded functions, and less accurate; this is what Numba's
//! `fastmath=True` turns `math.exp` and the others into, and what a crate built with
//! `KERNEL_FAST_MATH=1` (`kernel_build::Builder::fast_math`) makes of `x.exp()` and the others
//! on `f32` (with approximate `/` and `sqrt`).
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! fn softplus(x: &[f32], out: &mut [f32]) {
//!     let i = grid(1);
//!     if i < x.len() {
//!         out[i] = math::fast::log(1.0 + math::fast::exp(x[i])); // __logf(1 + __expf(x))
//!     }
//! }
//!
//! let dev = Device::default();
//! let x = dev.to_device(&[0.0f32, 1.0, -2.0])?;
//! let mut out = dev.zeros::<f32, _>(3)?;
//! softplus.launch(1, 32, (&x, &mut out))?;
//! let want = [2.0f32.ln(), (1.0 + 1.0f32.exp()).ln(), (1.0 + (-2.0f32).exp()).ln()];
//! for (o, w) in out.to_vec()?.iter().zip(want) {
//!     assert!((o - w).abs() < 1e-5);
//! }
//! # Ok::<(), kernel_runtime::Error>(())
//! ```
//!
//! The CPU backend computes each function correctly rounded (the host's `f32` methods), which is
//! within the error CUDA documents for the intrinsic of the GPU's result, where the GPU's is
//! the less accurate one:
//!
//! | here | CUDA | the GPU's error (CUDA's programming guide) |
//! | --- | --- | --- |
//! | `div(x, y)` | `__fdividef` | 2 ulp for `2⁻¹²⁶ ≤ |y| ≤ 2¹²⁶`; 0 where `2¹²⁶ < |y| < 2¹²⁸` |
//! | `sqrt(x)` | `sqrtf` under `-prec-sqrt=false` | approximate (PTX's `sqrt.approx.f32`) |
//! | `exp(x)` | `__expf` | `2 + floor(|1.173 x|)` ulp |
//! | `exp10(x)` | `__exp10f` | `2 + floor(|2.97 x|)` ulp |
//! | `log(x)`, `log2(x)`, `log10(x)` | `__logf`, `__log2f`, `__log10f` | `2⁻²¹·⁴¹`, `2⁻²²`, `2⁻²⁴` absolute in `[0.5, 2]`; 3, 2, 3 ulp elsewhere |
//! | `sin(x)`, `cos(x)`, `sincos(x)` | `__sinf`, `__cosf`, `__sincosf` | `2⁻²¹·⁴¹`, `2⁻²¹·¹⁹` absolute in `[-π, π]`, more outside |
//! | `tan(x)` | `__tanf` | `sin(x) / cos(x)` of the above |
//! | `pow(x, y)` | `__powf` | `exp2(y · log2(x))` of the above |
//! | `saturate(x)` | `__saturatef` | exact: `x` clamped to `[0, 1]`, NaN to 0 |
//!
//! Denormal numbers are kept, as without `-ftz` (Numba's default): a GPU and the CPU backend
//! then differ only by the approximation. The functions are for `f32`, as CUDA's are; `f64`
//! code keeps the methods.
//!
//! `#[kernel(fastmath)]` (Numba's `@cuda.jit(fastmath=True)`) gives one kernel's `f32` `/` and
//! methods these forms on a GPU, without naming them:
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel(fastmath)]
//! fn half_norms(x: &[f32], y: &[f32], out: &mut [f32]) {
//!     let i = grid(1);
//!     if i < out.len() {
//!         out[i] = (x[i] * x[i] + y[i] * y[i]).sqrt() / 2.0; // sqrt.approx, div.approx
//!     }
//! }
//!
//! let dev = Device::default();
//! let (x, y) = (dev.to_device(&[3.0f32, 5.0])?, dev.to_device(&[4.0f32, 12.0])?);
//! let mut out = dev.zeros::<f32, _>(2)?;
//! half_norms.launch(1, 32, (&x, &y, &mut out))?;
//! let out = out.to_vec()?;
//! assert!((out[0] - 2.5).abs() < 1e-5 && (out[1] - 6.5).abs() < 1e-5);
//! # Ok::<(), kernel_runtime::Error>(())
//! ```

/// One PTX instruction on `f32` registers: `$instr d, x;` or `$instr d, x, y;`.
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_f32 {
    ($instr:literal, $x:expr $(, $y:expr)?) => {{
        let out: u32;
        // SAFETY: an arithmetic instruction on registers: it reads and writes no memory.
        unsafe {
            core::arch::asm!(
                concat!($instr, " {o}, {x}", $(ptx_f32!(@second $y),)? ";"),
                o = out(reg32) out,
                x = in(reg32) f32::to_bits($x),
                $(y = in(reg32) f32::to_bits($y),)?
                options(pure, nomem, nostack)
            )
        };
        f32::from_bits(out)
    }};
    (@second $y:expr) => {
        ", {y}"
    };
}

/// `2^x`, approximately.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn ex2(x: f32) -> f32 {
    ptx_f32!("ex2.approx.f32", x)
}

/// `log2(x)`, approximately.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn lg2(x: f32) -> f32 {
    ptx_f32!("lg2.approx.f32", x)
}

/// `x / y` as CUDA's `__fdividef`: PTX's `div.approx.f32`.
#[inline(always)]
pub fn div(x: f32, y: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ptx_f32!("div.approx.f32", x, y);
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x / y
    }
}

/// `e^x` as CUDA's `__expf`: `2^(x · log2 e)`.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ex2(x * core::f32::consts::LOG2_E);
    #[cfg(not(target_arch = "nvptx64"))]
    x.exp()
}

/// `10^x` as CUDA's `__exp10f`: `2^(x · log2 10)`.
#[inline(always)]
pub fn exp10(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ex2(x * core::f32::consts::LOG2_10);
    #[cfg(not(target_arch = "nvptx64"))]
    super::exp10(x)
}

/// The natural logarithm as CUDA's `__logf`: `log2(x) · ln 2`.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return lg2(x) * core::f32::consts::LN_2;
    #[cfg(not(target_arch = "nvptx64"))]
    x.ln()
}

/// `log2(x)` as CUDA's `__log2f`.
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return lg2(x);
    #[cfg(not(target_arch = "nvptx64"))]
    x.log2()
}

/// `log10(x)` as CUDA's `__log10f`: `log2(x) · log10 2`.
#[inline(always)]
pub fn log10(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return lg2(x) * core::f32::consts::LOG10_2;
    #[cfg(not(target_arch = "nvptx64"))]
    x.log10()
}

/// The square root as nvcc's `-prec-sqrt=false` computes it: PTX's `sqrt.approx.f32`.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ptx_f32!("sqrt.approx.f32", x);
    #[cfg(not(target_arch = "nvptx64"))]
    x.sqrt()
}

/// The sine as CUDA's `__sinf`: PTX's `sin.approx.f32`.
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ptx_f32!("sin.approx.f32", x);
    #[cfg(not(target_arch = "nvptx64"))]
    x.sin()
}

/// The cosine as CUDA's `__cosf`: PTX's `cos.approx.f32`.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ptx_f32!("cos.approx.f32", x);
    #[cfg(not(target_arch = "nvptx64"))]
    x.cos()
}

/// The sine and the cosine as CUDA's `__sincosf`.
#[inline(always)]
pub fn sincos(x: f32) -> (f32, f32) {
    (sin(x), cos(x))
}

/// The tangent as CUDA's `__tanf`: `__sinf(x) / __cosf(x)`, divided approximately.
#[inline(always)]
pub fn tan(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return div(sin(x), cos(x));
    #[cfg(not(target_arch = "nvptx64"))]
    x.tan()
}

/// `x^y` as CUDA's `__powf`: `2^(y · log2 x)`, so NaN for a negative `x`.
#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ex2(y * lg2(x));
    #[cfg(not(target_arch = "nvptx64"))]
    match x < 0.0 {
        true => f32::NAN,
        false => x.powf(y),
    }
}

/// `x` clamped to `[0, 1]`, NaN to 0, as CUDA's `__saturatef` (PTX's `cvt.sat`).
#[inline(always)]
pub fn saturate(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    return ptx_f32!("cvt.sat.f32.f32", x);
    #[cfg(not(target_arch = "nvptx64"))]
    match x.is_nan() {
        true => 0.0,
        false => x.clamp(0.0, 1.0),
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_backend_computes_each_function_correctly_rounded() {
        assert_eq!(div(1.0, 3.0), 1.0 / 3.0);
        assert_eq!(sqrt(2.0), 2f32.sqrt());
        assert_eq!(exp(1.5), 1.5f32.exp());
        assert_eq!(exp10(2.0), 100.0);
        assert_eq!((log(8.0), log2(8.0), log10(1000.0)), (8f32.ln(), 3.0, 3.0));
        assert_eq!(sincos(0.5), (0.5f32.sin(), 0.5f32.cos()));
        assert_eq!(tan(0.25), 0.25f32.tan());
        assert_eq!(pow(2.0, 10.0), 1024.0);
        assert!(pow(-2.0, 2.0).is_nan(), "2^(y log2 x) of a negative x");
        assert_eq!(pow(0.0, 3.0), 0.0);
        let clamped = [-1.0, 0.25, 7.0, f32::NAN, f32::INFINITY].map(saturate);
        assert_eq!(clamped, [0.0, 0.25, 1.0, 0.0, 1.0]);
    }
}
