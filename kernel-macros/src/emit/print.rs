//! `kprintln!`: printing from a kernel. The format string is read here, with Rust's syntax; the
//! C format string is built at compile time by the runtime's `Format` from its pieces,
//! the specs and the arguments' types, one per call site and instance.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Lit, LitStr, Token};

/// `kprintln!("format", args..)`.
struct Call {
    format: LitStr,
    args: Vec<Expr>,
}

impl Parse for Call {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let format: LitStr = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "kprintln! takes a format string literal first")
        })?;
        let mut args = Vec::new();
        if input.parse::<Option<Token![,]>>()?.is_some() {
            args = Punctuated::<Expr, Token![,]>::parse_terminated(input)?
                .into_iter()
                .collect();
        }
        Ok(Call { format, args })
    }
}

/// One `{..}` of the format string.
struct Hole {
    /// The argument: `None` for the next one, or the name it captures.
    name: Option<String>,
    /// `<`, `>`, or `' '` for the type's default.
    align: u8,
    zero: bool,
    alternate: bool,
    width: u32,
    precision: Option<u32>,
    kind: u8,
}

/// A NUL character ends a C format string: what follows it would not print.
fn refuse_nul(text: &str, span: Span) -> syn::Result<()> {
    match text.contains('\0') {
        true => Err(syn::Error::new(
            span,
            "kprintln!: a NUL character (`\\0`) would end printf's format string there: the \
             rest of the line would not print",
        )),
        false => Ok(()),
    }
}

/// The format string's literal text between its holes (`%` doubled), and the holes.
fn parse_format(text: &str, span: Span) -> syn::Result<(Vec<String>, Vec<Hole>)> {
    refuse_nul(text, span)?;
    let err = |msg: String| syn::Error::new(span, msg);
    let (mut pieces, mut holes, mut piece) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                piece.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                piece.push('}');
            }
            '}' => {
                return Err(err(
                    "kprintln!: an unmatched `}` (write `}}` for one)".into()
                ))
            }
            '%' => piece.push_str("%%"),
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => inner.push(c),
                        None => return Err(err("kprintln!: an unclosed `{`".into())),
                    }
                }
                holes.push(parse_hole(&inner).map_err(err)?);
                pieces.push(std::mem::take(&mut piece));
            }
            c => piece.push(c),
        }
    }
    pieces.push(piece);
    Ok((pieces, holes))
}

/// `name:spec` inside braces: `[<][#][0][width][.precision][x|X|o|e]`.
fn parse_hole(inner: &str) -> Result<Hole, String> {
    let (name, spec) = inner.split_once(':').unwrap_or((inner, ""));
    let name = name.trim();
    if !name.is_empty() && syn::parse_str::<syn::Ident>(name).is_err() {
        return Err(format!(
            "kprintln!: `{{{inner}}}`: a hole takes the next argument (`{{}}`) or names a variable (`{{x}}`)"
        ));
    }
    let mut hole = Hole {
        name: (!name.is_empty()).then(|| name.to_string()),
        align: b' ',
        zero: false,
        alternate: false,
        width: 0,
        precision: None,
        kind: b' ',
    };
    let mut rest = spec;
    let mut take = |prefix: char| {
        let found = rest.starts_with(prefix);
        if found {
            rest = &rest[1..];
        }
        found
    };
    if take('<') {
        hole.align = b'<';
    } else if take('>') {
        hole.align = b'>';
    }
    hole.alternate = take('#');
    hole.zero = take('0');
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = digits(rest);
    if n > 0 {
        hole.width = rest[..n]
            .parse()
            .map_err(|_| format!("kprintln!: width in `{{{inner}}}`"))?;
        rest = &rest[n..];
    }
    if let Some(after) = rest.strip_prefix('.') {
        let n = digits(after);
        hole.precision = Some(
            after[..n]
                .parse()
                .map_err(|_| format!("kprintln!: precision in `{{{inner}}}`"))?,
        );
        rest = &after[n..];
    }
    // Rust's own limit: `format!` refuses wider.
    let limit = u32::from(u16::MAX);
    if hole.width > limit || hole.precision.is_some_and(|p| p > limit) {
        return Err(format!(
            "kprintln!: `{{{inner}}}`: widths and precisions are at most {limit}, as in `format!`"
        ));
    }
    match rest {
        "" => {}
        "x" | "X" | "o" | "e" => hole.kind = rest.as_bytes()[0],
        _ => {
            return Err(format!(
                "kprintln!: `{{{inner}}}` is not a format kprintln! prints: it takes `{{}}`, a width \
                 (`{{:5}}`, `{{:<5}}`, `{{:05}}`), a precision (`{{:.3}}`), `{{:x}}`, `{{:X}}`, `{{:#x}}`, \
                 `{{:o}}` and `{{:e}}`"
            ))
        }
    }
    let prefixed = hole.alternate && matches!(hole.kind, b'x' | b'X' | b'o');
    if prefixed && hole.width > 0 && hole.align != b'<' && !hole.zero {
        return Err(format!(
            "kprintln!: `{{{inner}}}` pads with spaces before its `0x`, which printf cannot: \
             write `{{:#0{w}{k}}}` (zeros after `0x`) or `{{:<#{w}{k}}}`",
            w = hole.width,
            k = hole.kind as char
        ));
    }
    Ok(hole)
}

/// The expansion of `kprintln!`.
pub fn kprintln(input: TokenStream) -> syn::Result<TokenStream> {
    let call: Call = syn::parse2(input)?;
    let span = call.format.span();
    let (mut pieces, holes) = parse_format(&call.format.value(), span)?;
    let mut positional = call.args.into_iter();
    // Each hole's argument; string literals go into the text at compile time.
    let mut args: Vec<Expr> = Vec::new();
    let mut specs = Vec::new();
    let mut bounds = Vec::new();
    // Whether each argument prints as its bits (`{:x}`, `{:X}`, `{:o}`).
    let mut bits = Vec::new();
    let mut merged = vec![pieces.remove(0)];
    for (hole, next) in holes.into_iter().zip(pieces) {
        let arg: Expr = match &hole.name {
            Some(name) => {
                let ident = format_ident!("{}", name, span = span);
                syn::parse_quote!(#ident)
            }
            None => positional.next().ok_or_else(|| {
                syn::Error::new(span, "kprintln!: more `{}` holes than arguments")
            })?,
        };
        if let Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) = &arg
        {
            if hole.kind == b' ' && hole.width == 0 && hole.precision.is_none() {
                refuse_nul(&s.value(), s.span())?;
                let last = merged.last_mut().expect("one piece at least");
                last.push_str(&s.value().replace('%', "%%"));
                last.push_str(&next);
                continue;
            }
        }
        args.push(arg);
        bits.push(matches!(hole.kind, b'x' | b'X' | b'o'));
        bounds.push(match (hole.kind, hole.precision) {
            (b'x' | b'X' | b'o', _) => quote!(::kernel_runtime::__rt::PrintInteger),
            (b'e', _) | (_, Some(_)) => quote!(::kernel_runtime::__rt::PrintFloat),
            _ => quote!(::kernel_runtime::__rt::KernelPrint),
        });
        specs.push(spec_tokens(&hole));
        merged.push(next);
    }
    if let Some(extra) = positional.next() {
        return Err(syn::Error::new_spanned(
            extra,
            "kprintln!: an argument that no `{}` prints",
        ));
    }
    Ok(expansion(&merged, &specs, &bounds, &bits, &args))
}

/// The runtime's `Spec { .. }` of a hole.
fn spec_tokens(h: &Hole) -> TokenStream {
    let (align, zero, alternate, width, kind) = (h.align, h.zero, h.alternate, h.width, h.kind);
    let precision = match h.precision {
        Some(p) => quote!(::core::option::Option::Some(#p)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::kernel_runtime::__rt::Spec {
            align: #align, zero: #zero, alternate: #alternate, width: #width,
            precision: #precision, kind: #kind,
        }
    }
}

/// A block with a generic function of the arguments' types, which builds the format string at
/// compile time and prints through `vprintf` on the GPU, `snprintf` on the CPU backend.
fn expansion(
    pieces: &[String],
    specs: &[TokenStream],
    bounds: &[TokenStream],
    bits: &[bool],
    args: &[Expr],
) -> TokenStream {
    let n = args.len();
    let types: Vec<_> = (0..n).map(|k| format_ident!("__A{}", k)).collect();
    let fields: Vec<_> = (0..n).map(|k| format_ident!("__B{}", k)).collect();
    let values: Vec<_> = (0..n).map(|k| format_ident!("__a{}", k)).collect();
    let passed: Vec<_> = (0..n).map(|k| format_ident!("__b{}", k)).collect();
    let rt = quote!(::kernel_runtime::__rt);
    // An argument printed as its bits passes its unsigned twin, of that type's class.
    let (classes, printed): (Vec<_>, Vec<_>) = (0..n)
        .map(|k| {
            let (ty, value) = (&types[k], &values[k]);
            match bits[k] {
                true => (
                    quote!(<<#ty as #rt::PrintInteger>::Bits as #rt::KernelPrint>::CLASS),
                    quote!(#rt::PrintInteger::bits(#value)),
                ),
                false => (quote!(#ty::CLASS), quote!(#value)),
            }
        })
        .unzip();
    quote! {{
        #[inline(always)]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        fn __kprint<#(#types: #bounds),*>(#(#values: #types),*) {
            let format: &'static #rt::Format = const {
                &#rt::Format::build(&[#(#pieces),*], &[#(#specs),*], &[#(#classes),*])
            };
            #(let #passed = #rt::KernelPrint::arg(#printed);)*
            #[cfg(target_arch = "nvptx64")]
            {
                #[repr(C)]
                struct Args<#(#fields),*>(#(#fields),*);
                let args = Args(#(#passed),*);
                // SAFETY: the format was built for these arguments' classes, and `Args` lays
                // them out at their alignments, as `vprintf` reads them.
                unsafe { #rt::gpu_print(format, &args as *const _ as *const u8) };
            }
            #[cfg(not(target_arch = "nvptx64"))]
            // SAFETY: the format was built for these arguments' classes, which pass them as the
            // C types its conversions read; `buf` holds `size` bytes.
            #rt::cpu_print(|buf, size| unsafe {
                #rt::snprintf(buf, size, format.as_ptr() #(, #passed)*)
            });
        }
        __kprint(#(#args),*)
    }}
}
