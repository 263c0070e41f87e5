//! Printing from kernels: [`kprintln!`](crate::kprintln), as CUDA C++'s `printf` and Numba's
//! `print` in a kernel.
//!
//! ```
//! use kernel_runtime::prelude::*;
//!
//! #[kernel]
//! pub fn hello(x: &[f32]) {
//!     let i = grid(1);
//!     if i < x.len() {
//!         kprintln!("block {}, thread {}: x[{i}] = {:.2}", block_idx().x, thread_idx().x, x[i]);
//!     }
//! }
//! # fn main() -> Result<(), kernel_runtime::Error> {
//! let dev = Device::cpu();
//! hello.launch(2, 2, &dev.to_device(&[0.5f32, 1.0, 1.5, 2.0][..])?)?;
//! # Ok(())
//! # }
//! ```
//!
//! The macro reads the format string at compile time, with Rust's syntax (`{}`, `{name}`,
//! `{:5}`, `{:<5}`, `{:>5}`, `{:05}`, `{:.3}`, `{:x}`, `{:#X}`, `{:o}`, `{:e}`, `{{`, `}}`), and
//! turns it into one C format string per call site and argument types, built at compile time.
//! Integers, `bool`s and the `#` forms print as `format!` prints them: `{:#x}` of 0 is `0x0`,
//! `{:x}` of `-1i8` is `ff`, a `bool` is left-aligned in its width. What `printf` cannot print
//! as Rust does is a compile error: `{:#8x}` (spaces before the `0x`), a NUL in the format,
//! widths past 65535. Integers, floats, `bool`s and string literals print; anything else is a
//! compile error at its argument.
//! On a GPU the line goes through `vprintf`, CUDA's own `printf`, which the driver shows when the
//! host next waits for the device; on the CPU backend through the C library's `snprintf` with the
//! same format string, written to stdout whole, so both print the same text and a thread's lines
//! come in its order. Floats print as C prints them: `{}` as `%g` (six significant digits),
//! `{:.3}` as `%.3f`, `{:e}` as `%e`.

/// How a type reaches the C format string: its argument class and the value passed.
///
/// # Safety
/// `Arg` must be what `CLASS`'s conversions read from C's variadic arguments (after the default
/// argument promotions): `i32`, `u32`, `i64`, `u64`, `f64`, or a pointer to a NUL-terminated
/// string that lives as long as the program.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be printed from a kernel",
    label = "not an integer, float, bool or string literal",
    note = "kprintln! prints integers, floats and bools, and string literals written in the call"
)]
pub unsafe trait KernelPrint: Copy {
    /// The value in the argument list.
    type Arg: Copy;
    /// Which conversions it takes.
    const CLASS: Class;
    /// The value to pass.
    fn arg(self) -> Self::Arg;
}

/// The integers, which `{:x}`, `{:X}` and `{:o}` print: as Rust does, the bits of the value in
/// its own width (`{:x}` of `-1i8` is `ff`), where C would print the `int` it promotes to.
#[diagnostic::on_unimplemented(
    message = "`{{:x}}`, `{{:X}}` and `{{:o}}` print integers, not `{Self}`",
    label = "not an integer"
)]
pub trait PrintInteger: KernelPrint {
    /// The unsigned integer of the same width.
    type Bits: KernelPrint;
    /// The value's bits, as that unsigned integer.
    fn bits(self) -> Self::Bits;
}

/// The floats, which `{:.N}` and `{:e}` print.
#[diagnostic::on_unimplemented(
    message = "a precision (`{{:.N}}`) and `{{:e}}` print floats, not `{Self}`",
    label = "not a float"
)]
pub trait PrintFloat: KernelPrint {}

macro_rules! print_bits {
    ($($t:ty => $bits:ty),*) => {$(
        impl PrintInteger for $t {
            type Bits = $bits;
            #[inline(always)]
            fn bits(self) -> $bits {
                self as $bits
            }
        }
    )*};
}

print_bits!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, isize => usize);
print_bits!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, usize => usize);
impl PrintFloat for f32 {}
impl PrintFloat for f64 {}

/// The kinds of argument a C format string distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `int` (`%d`).
    I32,
    /// `unsigned int` (`%u`).
    U32,
    /// `long long` (`%lld`).
    I64,
    /// `unsigned long long` (`%llu`).
    U64,
    /// `double` (`%g`).
    F64,
    /// A C string (`%s`).
    Str,
}

macro_rules! print_as {
    ($class:ident, $arg:ty: $($t:ty),*) => {$(
        // SAFETY: the value is passed as the C type that the class's conversions read.
        unsafe impl KernelPrint for $t {
            type Arg = $arg;
            const CLASS: Class = Class::$class;
            #[inline(always)]
            fn arg(self) -> $arg {
                self as $arg
            }
        }
    )*};
}

print_as!(I32, i32: i8, i16, i32);
print_as!(U32, u32: u8, u16, u32);
print_as!(I64, i64: i64, isize);
print_as!(U64, u64: u64, usize);
print_as!(F64, f64: f32, f64);

macro_rules! print_half {
    ($($t:ty),*) => {$(
        // SAFETY: passed as a `double`, the class's conversions' type.
        unsafe impl KernelPrint for $t {
            type Arg = f64;
            const CLASS: Class = Class::F64;
            #[inline(always)]
            fn arg(self) -> f64 {
                self.to_f64()
            }
        }
        impl PrintFloat for $t {}
    )*};
}

print_half!(crate::f16, half::bf16);

// SAFETY: passed as a pointer to one of two NUL-terminated static strings.
unsafe impl KernelPrint for bool {
    type Arg = *const u8;
    const CLASS: Class = Class::Str;
    #[inline(always)]
    fn arg(self) -> *const u8 {
        if self {
            c"true".as_ptr().cast()
        } else {
            c"false".as_ptr().cast()
        }
    }
}

/// What a `{..}` asks for: flags, width, precision and the conversion.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// `<` (left), `>` (right), or `' '`: Rust's default, right for numbers and left for
    /// `bool`s and strings.
    pub align: u8,
    /// `0`: padded with zeros.
    pub zero: bool,
    /// `#`: the alternate form (`0x` before hex digits).
    pub alternate: bool,
    /// The least width, or 0.
    pub width: u32,
    /// The digits after the point, where given.
    pub precision: Option<u32>,
    /// `x`, `X`, `o`, `e`, or `' '` for `{}`.
    pub kind: u8,
}

/// The most bytes of a kernel's format string, with its NUL.
pub const FORMAT_BYTES: usize = 256;

/// A C format string built at compile time from a call's literal pieces, its `{..}` specs and
/// its arguments' classes; NUL-terminated.
pub struct Format {
    bytes: [u8; FORMAT_BYTES],
    len: usize,
}

impl Format {
    /// `pieces[0] spec[0] pieces[1] … spec[n-1] pieces[n]`, then a newline. The pieces have
    /// their `%` doubled already. Panics (a compile error, in a `const`) for a conversion the
    /// argument cannot take, or a string longer than [`FORMAT_BYTES`].
    pub const fn build(pieces: &[&str], specs: &[Spec], classes: &[Class]) -> Format {
        let mut f = Format {
            bytes: [0; FORMAT_BYTES],
            len: 0,
        };
        let mut k = 0;
        while k < specs.len() {
            f.push(pieces[k].as_bytes());
            f.conversion(specs[k], classes[k]);
            k += 1;
        }
        f.push(pieces[k].as_bytes());
        f.push(b"\n\0");
        f
    }

    const fn push(&mut self, text: &[u8]) {
        let mut i = 0;
        while i < text.len() {
            assert!(
                self.len < FORMAT_BYTES,
                "kprintln!: the format string is longer than 255 bytes"
            );
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
    }

    const fn number(&mut self, n: u32) {
        let (digits, start) = crate::base::decimal(n as u64);
        self.push(digits.split_at(start).1);
    }

    const fn conversion(&mut self, spec: Spec, class: Class) {
        let left = spec.align == b'<' || (spec.align == b' ' && matches!(class, Class::Str));
        let mut width = spec.width;
        // Rust's `#` writes `0x` or `0o` before the digits, `0` included, where C's writes
        // `0x` (`0X` for `%#X`) or a `0`, and none for zero: the prefix is written here.
        let prefix: &[u8] = match (spec.alternate, spec.kind) {
            (true, b'x' | b'X') => b"0x",
            (true, b'o') => b"0o",
            _ => b"",
        };
        if !prefix.is_empty() {
            assert!(
                width == 0 || left || spec.zero,
                "kprintln!: `{{:#Nx}}` pads with spaces before its `0x`, which printf cannot: \
                 write `{{:#0Nx}}` or `{{:<#Nx}}`"
            );
            self.push(prefix);
            width = width.saturating_sub(2);
        }
        self.push(b"%");
        if left && width > 0 {
            self.push(b"-");
        }
        if spec.zero {
            self.push(b"0");
        }
        if width > 0 {
            self.number(width);
        }
        if let Some(p) = spec.precision {
            assert!(
                matches!(class, Class::F64 | Class::Str),
                "kprintln!: a precision (`{{:.N}}`) is for floats"
            );
            self.push(b".");
            self.number(p);
        }
        let integer = !matches!(class, Class::F64 | Class::Str);
        let length: &[u8] = match class {
            Class::I64 | Class::U64 => b"ll",
            _ => b"",
        };
        let conversion: &[u8] = match (spec.kind, class) {
            (b' ', Class::I32 | Class::I64) => b"d",
            (b' ', Class::U32 | Class::U64) => b"u",
            (b' ', Class::F64) if spec.precision.is_some() => b"f",
            (b' ', Class::F64) => b"g",
            (b' ', Class::Str) => b"s",
            (b'e', Class::F64) => b"e",
            (b'x', _) if integer => b"x",
            (b'X', _) if integer => b"X",
            (b'o', _) if integer => b"o",
            (b'e', _) => panic!("kprintln!: `{{:e}}` is for floats"),
            _ => panic!("kprintln!: `{{:x}}`, `{{:X}}` and `{{:o}}` are for integers"),
        };
        self.push(length);
        self.push(conversion);
    }

    /// The NUL-terminated string, for `printf`.
    pub const fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }

    /// The string without its NUL.
    pub fn text(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len - 1]).unwrap_or("")
    }
}

#[cfg(target_arch = "nvptx64")]
extern "C" {
    /// CUDA's device-side `printf`: a format string and a buffer of its arguments, each at its
    /// own alignment.
    fn vprintf(format: *const u8, args: *const u8) -> i32;
}

/// Prints on the GPU: `args` points at the arguments laid out as a `#[repr(C)]` struct of
/// their [`KernelPrint::Arg`]s, as `vprintf` reads them.
///
/// # Safety
/// `format` is a [`Format`] built for these arguments' classes, and `args` is such a struct.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn gpu_print(format: &'static Format, args: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { vprintf(format.as_ptr(), args) };
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::{cpu_print, snprintf};

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use std::io::Write;

    extern "C" {
        /// The C library's `snprintf`, which formats the CPU backend's lines as the GPU's
        /// `printf` does.
        pub fn snprintf(buf: *mut u8, size: usize, format: *const u8, ...) -> i32;
    }

    /// Prints one line on the CPU backend: `write(buf, size)` formats it as `snprintf` does
    /// and returns the bytes it needed; the line goes to stdout in one piece.
    pub fn cpu_print(write: impl Fn(*mut u8, usize) -> i32) {
        let mut buf = [0u8; 512];
        let needed = write(buf.as_mut_ptr(), buf.len());
        let Ok(needed) = usize::try_from(needed) else {
            return;
        };
        let mut out = std::io::stdout().lock();
        // A line that cannot be written (a closed stdout) is dropped, as a GPU drops what
        // overflows its printf buffer.
        if needed < buf.len() {
            let _ = out.write_all(&buf[..needed]);
        } else {
            let mut long = vec![0u8; needed + 1];
            let written = write(long.as_mut_ptr(), long.len());
            let end = usize::try_from(written).unwrap_or(0).min(needed);
            let _ = out.write_all(&long[..end]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn spec(kind: u8) -> Spec {
        Spec {
            align: b' ',
            zero: false,
            alternate: false,
            width: 0,
            precision: None,
            kind,
        }
    }

    #[test]
    fn formats_take_each_class_its_conversion() {
        let f = Format::build(
            &["a ", " b ", " c ", " d%% ", " e ", ""],
            &[spec(b' '), spec(b' '), spec(b'x'), spec(b' '), spec(b' ')],
            &[Class::I32, Class::U64, Class::I64, Class::F64, Class::Str],
        );
        assert_eq!(f.text(), "a %d b %llu c %llx d%% %g e %s\n");
        let wide = Spec {
            align: b'<',
            width: 12,
            precision: Some(3),
            ..spec(b' ')
        };
        let f = Format::build(&["[", "]"], &[wide], &[Class::F64]);
        assert_eq!(f.text(), "[%-12.3f]\n");
    }

    /// What `snprintf` makes of `format` with one argument.
    fn printed(format: &Format, arg: impl Copy) -> String {
        let mut buf = [0u8; 64];
        // SAFETY: each call passes the class the format was built for.
        let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), format.as_ptr(), arg) };
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    }

    #[test]
    fn alternate_forms_alignment_and_widths_print_as_rust_does() {
        let one = |spec: Spec, class: Class| Format::build(&["[", "]"], &[spec], &[class]);
        let alt = |kind: u8| Spec {
            alternate: true,
            ..spec(kind)
        };
        assert_eq!(
            printed(&one(alt(b'x'), Class::U32), 0u32),
            format!("[{:#x}]\n", 0)
        );
        assert_eq!(
            printed(&one(alt(b'X'), Class::U32), 255u32),
            format!("[{:#X}]\n", 255)
        );
        assert_eq!(
            printed(&one(alt(b'o'), Class::U32), 8u32),
            format!("[{:#o}]\n", 8)
        );
        let zero_padded = Spec {
            zero: true,
            width: 8,
            ..alt(b'x')
        };
        assert_eq!(
            printed(&one(zero_padded, Class::U32), 255u32),
            format!("[{:#08x}]\n", 255)
        );
        let wide = Spec {
            width: 6,
            ..spec(b' ')
        };
        assert_eq!(
            printed(&one(wide, Class::Str), true.arg()),
            format!("[{:6}]\n", true)
        );
        assert_eq!(printed(&one(wide, Class::I32), 42), format!("[{:6}]\n", 42));
        let right = Spec {
            align: b'>',
            ..wide
        };
        assert_eq!(
            printed(&one(right, Class::Str), true.arg()),
            format!("[{:>6}]\n", true)
        );
        assert_eq!(
            printed(&one(spec(b'x'), Class::U32), (-1i8).bits().arg()),
            format!("[{:x}]\n", -1i8)
        );
    }

    #[test]
    fn the_cpu_prints_what_snprintf_formats() {
        let f = Format::build(
            &["", " and ", ""],
            &[spec(b' '), spec(b' ')],
            &[Class::I64, Class::Str],
        );
        let mut buf = [0u8; 64];
        // SAFETY: the format takes a `long long` and a C string.
        let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), f.as_ptr(), -7i64, true.arg()) };
        assert_eq!(&buf[..n as usize], b"-7 and true\n");
    }
}
