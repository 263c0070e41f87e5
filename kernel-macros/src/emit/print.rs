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
    left: bool,
    zero: bool,
    alternate: bool,
    width: u32,
    precision: Option<u32>,
    kind: u8,
}

/// The format string's literal text between its holes (`%` doubled), and the holes.
fn parse_format(text: &str, span: Span) -> syn::Result<(Vec<String>, Vec<Hole>)> {
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
        left: false,
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
    hole.left = take('<');
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
                let last = merged.last_mut().expect("one piece at least");
                last.push_str(&s.value().replace('%', "%%"));
                last.push_str(&next);
                continue;
            }
        }
        args.push(arg);
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
    Ok(expansion(&merged, &specs, &bounds, &args))
}

/// The runtime's `Spec { .. }` of a hole.
fn spec_tokens(h: &Hole) -> TokenStream {
    let (left, zero, alternate, width, kind) = (h.left, h.zero, h.alternate, h.width, h.kind);
    let precision = match h.precision {
        Some(p) => quote!(::core::option::Option::Some(#p)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::kernel_runtime::__rt::Spec {
            left: #left, zero: #zero, alternate: #alternate, width: #width,
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
    args: &[Expr],
) -> TokenStream {
    let n = args.len();
    let types: Vec<_> = (0..n).map(|k| format_ident!("__A{}", k)).collect();
    let fields: Vec<_> = (0..n).map(|k| format_ident!("__B{}", k)).collect();
    let values: Vec<_> = (0..n).map(|k| format_ident!("__a{}", k)).collect();
    let passed: Vec<_> = (0..n).map(|k| format_ident!("__b{}", k)).collect();
    let rt = quote!(::kernel_runtime::__rt);
    quote! {{
        #[inline(always)]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        fn __kprint<#(#types: #bounds),*>(#(#values: #types),*) {
            let format: &'static #rt::Format = const {
                &#rt::Format::build(&[#(#pieces),*], &[#(#specs),*], &[#(#types::CLASS),*])
            };
            #(let #passed = #rt::KernelPrint::arg(#values);)*
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
