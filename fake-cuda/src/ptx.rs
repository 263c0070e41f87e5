//! What the driver reads from a PTX module before it runs a kernel: the ISA version, the target
//! GPU, each entry point's parameters and static shared memory, and the module's variables.

use std::collections::HashMap;

/// A parsed module.
#[derive(Debug)]
pub struct Module {
    /// `.version MAJOR.MINOR`, as `10 * MAJOR + MINOR`.
    pub version: u32,
    /// `.target sm_XY`, as `XY`.
    pub target: u32,
    /// Whether the target is arch-specific (`sm_90a`): for that GPU alone.
    pub specific: bool,
    /// The `.entry` points by name.
    pub entries: HashMap<String, Entry>,
    /// The module-level `.const` and `.global` variables, by name, with their sizes.
    pub variables: HashMap<String, usize>,
}

/// A kernel entry point.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// Bytes of `.shared` memory it declares itself.
    pub static_shared: usize,
    /// The threads of a block its `.maxntid` allows, if it has one.
    pub max_threads: Option<usize>,
    /// Its `.maxnreg`, if it has one.
    pub max_registers: Option<u32>,
}

/// One `.param` of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its size.
    pub bytes: usize,
    /// Declared `.ptr`: a global-memory address.
    pub pointer: bool,
}

/// Parses `text`; `Err` says what a driver's JIT compiler would refuse.
pub fn parse(text: &str) -> Result<Module, String> {
    let directive = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
            .ok_or_else(|| format!("no `{}` directive", name.trim()))
    };
    let version = directive(".version ")?;
    let (major, minor) = version
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| format!("bad `.version {version}`"))?;
    let target = directive(".target ")?;
    let specific = target
        .split(',')
        .next()
        .is_some_and(|t| t.trim().ends_with(|c: char| c.is_ascii_alphabetic()));
    let target = target
        .split(',')
        .next()
        .and_then(|t| t.trim().strip_prefix("sm_"))
        .and_then(|t| {
            t.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse()
                .ok()
        })
        .ok_or_else(|| format!("bad `.target {target}`"))?;
    let mut entries = HashMap::new();
    let mut rest = text;
    while let Some(at) = rest.find(".entry ") {
        rest = &rest[at + ".entry ".len()..];
        let open = rest.find('(').ok_or("an `.entry` without parameters")?;
        let name = rest[..open].trim().to_string();
        let close = rest.find(')').ok_or("an unterminated parameter list")?;
        let params = rest[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(param)
            .collect::<Result<Vec<_>, _>>()?;
        rest = &rest[close..];
        let header = &rest[..rest.find('{').unwrap_or(rest.len())];
        let body = body(rest).ok_or_else(|| format!("entry `{name}` has no body"))?;
        let static_shared = body
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with(".shared"))
            .map(|l| declared_bytes(l).ok_or_else(|| format!("bad declaration `{l}`")))
            .sum::<Result<usize, _>>()?;
        entries.insert(
            name,
            Entry {
                params,
                static_shared,
                max_threads: performance_directive(header, ".maxntid")
                    .map(|dims| dims.iter().product()),
                max_registers: performance_directive(header, ".maxnreg")
                    .and_then(|n| u32::try_from(n[0]).ok()),
            },
        );
    }
    Ok(Module {
        version: 10 * major + minor,
        target,
        specific,
        entries,
        variables: variables(text)?,
    })
}

/// The numbers of the performance-tuning directive `name` (`.maxntid 256, 1, 1`) in an entry's
/// header, the text between its parameters and its body.
fn performance_directive(header: &str, name: &str) -> Option<Vec<usize>> {
    let line = header
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(name))?;
    line.split(',').map(|n| n.trim().parse().ok()).collect()
}

/// The module-level `.const` and `.global` variables of `text`, such as
/// `.visible .const .align 4 .b8 taps[12];`.
fn variables(text: &str) -> Result<HashMap<String, usize>, String> {
    let mut out = HashMap::new();
    for line in text.lines().map(str::trim) {
        let decl = line.strip_prefix(".visible ").unwrap_or(line);
        if !(decl.starts_with(".const ") || decl.starts_with(".global ")) {
            continue;
        }
        // Without its initialiser, `= {1, 2, ..}`.
        let decl = decl.split('=').next().unwrap_or(decl).trim();
        let bytes = declared_bytes(decl).ok_or_else(|| format!("bad declaration `{line}`"))?;
        let last = decl.trim_end_matches(';').split_whitespace().last();
        let name = last.and_then(|w| w.split('[').next()).unwrap_or_default();
        out.insert(name.to_string(), bytes);
    }
    Ok(out)
}

/// The text between the first `{` of `text` and its matching `}`.
fn body(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start + 1..start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The size in bytes of a scalar PTX type such as `.u64` or `.b8`.
fn type_bytes(word: &str) -> Option<usize> {
    let bits: usize = word
        .strip_prefix(".u")
        .or_else(|| word.strip_prefix(".s"))
        .or_else(|| word.strip_prefix(".b"))
        .or_else(|| word.strip_prefix(".f"))?
        .parse()
        .ok()?;
    matches!(bits, 8 | 16 | 32 | 64).then_some(bits / 8)
}

/// The bytes a declaration such as `.param .b8 p[12]` or `.shared .align 4 .b8 s[64];` holds.
fn declared_bytes(decl: &str) -> Option<usize> {
    let words: Vec<&str> = decl.trim_end_matches(';').split_whitespace().collect();
    let elem = words.iter().find_map(|w| type_bytes(w))?;
    let name = words.last()?;
    match name.find('[') {
        None => Some(elem),
        Some(open) => {
            let count = name[open + 1..].strip_suffix(']')?.parse::<usize>().ok()?;
            Some(elem * count)
        }
    }
}

fn param(decl: &str) -> Result<Param, String> {
    Ok(Param {
        bytes: declared_bytes(decl).ok_or_else(|| format!("bad parameter `{decl}`"))?,
        pointer: decl.split_whitespace().any(|w| w == ".ptr"),
    })
}

/// A device function's prototype: `.extern` (declared, to be linked) or defined, its name and
/// the types of its return value and parameters (`.b32`, `.align 8 .b8 [16]`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Declared `.extern`, without a body here.
    pub external: bool,
    /// Its name.
    pub name: String,
    /// The types of the return value (if any) then of each parameter.
    pub types: Vec<String>,
}

/// The device functions (`.func`) that `text` declares or defines.
pub fn functions(text: &str) -> Vec<Function> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(".func ") {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let prefix = &text[line_start..at];
        if prefix.trim_start().starts_with("//") || prefix.contains("call") {
            continue;
        }
        let mut rest = text[at + ".func ".len()..].trim_start();
        let mut types = Vec::new();
        if rest.starts_with('(') {
            let Some(close) = rest.find(')') else {
                continue;
            };
            types.extend(param_types(&rest[1..close]));
            rest = rest[close + 1..].trim_start();
        }
        let Some(open) = rest.find('(') else { continue };
        let name = rest[..open].trim().to_string();
        let Some(close) = rest.find(')') else {
            continue;
        };
        types.extend(param_types(&rest[open + 1..close]));
        out.push(Function {
            external: prefix.contains(".extern"),
            name,
            types,
        });
    }
    out
}

/// The types of a comma-separated parameter list, without the parameters' names.
fn param_types(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            let (name, kinds) = words.split_last().unwrap_or((&"", &[]));
            let array = name.find('[').map_or("", |i| &name[i..]);
            format!("{}{array}", kinds.join(" "))
        })
        .collect()
}

/// The functions the driver provides to every module.
const BUILTINS: [&str; 4] = ["vprintf", "malloc", "free", "__assertfail"];

/// Why the functions of `texts` (one program) do not link: an `.extern` function defined
/// nowhere, or defined with other types than it is declared with.
pub fn link_errors(texts: &[&str]) -> Vec<String> {
    let all: Vec<Function> = texts.iter().flat_map(|t| functions(t)).collect();
    let mut errors = Vec::new();
    for declared in all.iter().filter(|f| f.external) {
        if BUILTINS.contains(&declared.name.as_str()) {
            continue;
        }
        match all.iter().find(|f| !f.external && f.name == declared.name) {
            None => errors.push(format!("Unresolved extern function '{}'", declared.name)),
            Some(defined) if defined.types != declared.types => errors.push(format!(
                "Prototype doesn't match for '{}': declared {:?}, defined {:?}",
                declared.name, declared.types, defined.types
            )),
            Some(_) => {}
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "
.version 7.8
.target sm_70
.address_size 64

.visible .entry pair(
	.param .u64 .ptr .global .align 4 pair_param_0,
	.param .u64 pair_param_1,
	.param .align 4 .b8 pair_param_2[12],
	.param .f32 pair_param_3
)
{
	.shared .align 4 .b8 tile[64];
	{ ret; }
}

.visible .entry none()
.maxntid 128, 2, 1
.maxnreg 40
{
	ret;
}
";

    #[test]
    fn entries_list_their_parameters_and_shared_memory() {
        let m = parse(PTX).unwrap();
        assert_eq!((m.version, m.target, m.specific), (78, 70, false));
        let a = parse(".version 8.0\n.target sm_90a\n.address_size 64\n").unwrap();
        assert_eq!((a.target, a.specific), (90, true));
        let pair = &m.entries["pair"];
        let sizes: Vec<_> = pair.params.iter().map(|p| (p.bytes, p.pointer)).collect();
        assert_eq!(sizes, [(8, true), (8, false), (12, false), (4, false)]);
        assert_eq!(pair.static_shared, 64);
        assert!(m.entries["none"].params.is_empty());
        let none = &m.entries["none"];
        assert_eq!(
            (none.max_threads, none.max_registers),
            (Some(256), Some(40))
        );
        assert_eq!((pair.max_threads, pair.max_registers), (None, None));
    }

    #[test]
    fn module_variables_are_listed_with_their_sizes() {
        let text = ".version 7.8\n.target sm_70\n.address_size 64\n\
            .visible .const .align 4 .b8 taps[20];\n\
            .visible .global .align 8 .b8 table[4000];\n\
            .extern .shared .align 16 .b8 dynamic[];\n";
        let m = parse(text).unwrap();
        assert_eq!(m.variables.len(), 2);
        assert_eq!((m.variables["taps"], m.variables["table"]), (20, 4000));
    }

    #[test]
    fn a_module_without_a_target_is_refused() {
        assert!(parse(".version 7.8\n").unwrap_err().contains(".target"));
    }

    #[test]
    fn links_externs_to_definitions_of_the_same_types() {
        let caller = ".extern .func  (.param .b32 func_retval0) mul(\n\t.param .b32 mul_param_0,\n\t.param .b32 mul_param_1\n)\n;\n.extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n\tcall.uni (retval0), mul, (param0, param1);\n";
        let good = ".visible .func  (.param .b32 func_retval0) mul(\n\t.param .b32 a,\n\t.param .b32 b\n)\n{\n}\n";
        let wide = ".visible .func (.param .b64 r) mul(.param .b32 a, .param .b32 b)\n{\n}\n";
        assert_eq!(link_errors(&[caller, good]), Vec::<String>::new());
        assert_eq!(link_errors(&[caller]), ["Unresolved extern function 'mul'"]);
        let mismatch = link_errors(&[caller, wide]);
        assert!(
            mismatch[0].starts_with("Prototype doesn't match for 'mul'"),
            "{mismatch:?}"
        );
    }
}
