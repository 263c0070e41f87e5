//! Splitting the device code out of a crate.
//!
//! The `#[kernel]` and `#[device]` functions are kept, with the `const`s, `static`s, module
//! arrays (`constant_array!`, `global_array!`), types, empty-bodied (marker trait) `impl`s of
//! those types and `macro_rules!` macros they mention (found by a fixpoint over identifiers),
//! the `use` items that can resolve on the device, and the modules that contain any of these.
//! Every generated
//! file mirrors one source file line for line: a kept item is copied to the very lines and
//! columns it has in the original, everything else becomes blank. A compile error in the
//! device crate therefore carries the user's own line and column numbers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use proc_macro2::{LineColumn, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Item, UseTree};

use crate::source::{item_key, ItemKey, SourceTree};

/// The crate attributes of a device crate, placed on line 1 of its root file. The features are
/// the device's only: a host check of the crate needs none.
pub(crate) const ROOT_PREFIX: &str = "#![no_std] \
    #![cfg_attr(target_arch = \"nvptx64\", \
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_float_math, nvptx_target_feature))] \
    #![allow(unused, non_snake_case)]";

/// Attribute names that mark a function as device code.
const MARKERS: [&str; 6] = [
    "kernel",
    "device",
    "vectorize",
    "guvectorize",
    "reduce",
    "stencil",
];

/// Macros that declare a module array, kept with the kernels that read it.
const MODULE_ARRAYS: [&str; 2] = ["constant_array", "global_array"];

/// Crates whose paths resolve the same on the device as on the host.
const DEVICE_CRATES: [&str; 2] = ["kernel_runtime", "core"];

/// One file of the device crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GeneratedFile {
    /// The user's file it mirrors.
    pub original: PathBuf,
    /// Its path inside the device crate.
    pub rel: PathBuf,
    /// Its text.
    pub text: String,
}

/// The device crate's sources.
#[derive(Debug, Clone)]
pub(crate) struct Extraction {
    /// The generated files; the first is the crate root.
    pub files: Vec<GeneratedFile>,
    /// The names of the `#[kernel]`/`#[device]` functions found.
    pub functions: Vec<String>,
}

/// The names of the free functions of `tree` that are not marked as device code: a kernel that
/// calls one is told to mark it `#[device]`.
pub(crate) fn host_functions(tree: &SourceTree) -> HashSet<String> {
    let mut names = HashSet::new();
    for file in &tree.files {
        walk(&file.ast.items, &mut |item| {
            if let Item::Fn(f) = item {
                if !is_marked(item) {
                    names.insert(f.sig.ident.unraw().to_string());
                }
            }
        });
    }
    names
}

/// Whether `item` is a function marked `#[kernel]` or `#[device]` (any path ending so, with or
/// without arguments).
pub(crate) fn is_marked(item: &Item) -> bool {
    let attrs = match item {
        Item::Fn(f) => f.attrs.clone(),
        Item::Verbatim(_) => match foreign_declaration(item) {
            Some(f) => f.attrs,
            None => return false,
        },
        _ => return false,
    };
    attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|seg| MARKERS.iter().any(|m| seg.ident == m))
    })
}

/// Whether any file of `tree` holds device code: a function [`is_marked`].
pub(crate) fn has_device_code(tree: &SourceTree) -> bool {
    let mut found = false;
    for file in &tree.files {
        walk(&file.ast.items, &mut |item| found |= is_marked(item));
    }
    found
}

/// The name under which other items can refer to `item`, when it is an item kind the device
/// code may depend on.
///
/// An `impl` with an empty body (a marker trait such as `unsafe impl DeviceCopy for T {}`)
/// goes with the type it is for: it cannot hold host-only code. Other `impl` blocks are not
/// taken, as their methods may use `std`.
fn candidate_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Impl(i) if i.items.is_empty() => match &*i.self_ty {
            syn::Type::Path(p) => &p.path.segments.last()?.ident,
            _ => return None,
        },
        Item::Const(i) => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Macro(i) if i.mac.path.is_ident("macro_rules") => i.ident.as_ref()?,
        Item::Macro(i) => return module_array_name(&i.mac),
        _ => return None,
    };
    Some(ident.unraw().to_string())
}

/// The name a `constant_array!` / `global_array!` call declares (`static NAME: [T; N]`).
fn module_array_name(mac: &syn::Macro) -> Option<String> {
    let last = mac.path.segments.last()?;
    if !MODULE_ARRAYS.iter().any(|m| last.ident == m) {
        return None;
    }
    let mut tokens = mac.tokens.clone().into_iter();
    tokens.find(|t| matches!(t, TokenTree::Ident(i) if i == "static"))?;
    match tokens.next()? {
        TokenTree::Ident(name) => Some(name.unraw().to_string()),
        _ => None,
    }
}

/// A function without a body (`#[device(extern)] fn name(..);`, a foreign declaration), which
/// syn leaves as tokens.
fn foreign_declaration(item: &Item) -> Option<syn::ForeignItemFn> {
    match item {
        Item::Verbatim(tokens) => syn::parse2(tokens.clone()).ok(),
        _ => None,
    }
}

/// The name an item declares, for the items that can be selected.
fn declared_name(item: &Item) -> Option<String> {
    match item {
        Item::Fn(f) => Some(f.sig.ident.unraw().to_string()),
        Item::Verbatim(_) => foreign_declaration(item).map(|f| f.sig.ident.unraw().to_string()),
        Item::Impl(_) => None,
        other => candidate_name(other),
    }
}

/// Every identifier in `tokens`, recursively.
fn collect_idents(tokens: TokenStream, out: &mut HashSet<String>) {
    for tt in tokens {
        match tt {
            TokenTree::Ident(i) => {
                out.insert(i.unraw().to_string());
            }
            TokenTree::Group(g) => collect_idents(g.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

/// Calls `f` on every item of `items`, descending into inline modules.
pub(crate) fn walk<'a>(items: &'a [Item], f: &mut dyn FnMut(&'a Item)) {
    for item in items {
        f(item);
        if let Item::Mod(m) = item {
            if let Some((_, inner)) = &m.content {
                walk(inner, f);
            }
        }
    }
}

/// What survives of the crate: the selected items and the modules that must exist.
struct Selection {
    /// The paths `kernel_runtime` exports to the host alone: imports of them are left out.
    host_only: HashSet<String>,
    items: HashSet<ItemKey>,
    item_names: HashSet<String>,
    module_names: HashSet<String>,
    /// The inline modules (`mod m { ... }`) that hold anything selected.
    inline_modules: HashSet<ItemKey>,
    /// Per file: whether it holds anything selected (and so is generated).
    file_kept: Vec<bool>,
    functions: Vec<String>,
}

fn select(tree: &SourceTree) -> Selection {
    // Seeds and candidates, over every item of every file.
    let mut worklist: Vec<(usize, &Item)> = Vec::new();
    let mut candidates: HashMap<String, Vec<(usize, &Item)>> = HashMap::new();
    for (index, file) in tree.files.iter().enumerate() {
        walk(&file.ast.items, &mut |item| {
            if is_marked(item) {
                worklist.push((index, item));
            } else if let Some(name) = candidate_name(item) {
                candidates.entry(name).or_default().push((index, item));
            }
        });
    }
    let functions = worklist
        .iter()
        .filter_map(|(_, item)| declared_name(item))
        .collect();

    let mut items = HashSet::new();
    let mut item_names = HashSet::new();
    let mut seen_idents = HashSet::new();
    while let Some((file, item)) = worklist.pop() {
        if !items.insert(item_key(file, item)) {
            continue;
        }
        item_names.extend(declared_name(item));
        let mut idents = HashSet::new();
        collect_idents(item.to_token_stream(), &mut idents);
        for ident in idents {
            if seen_idents.insert(ident.clone()) {
                if let Some(found) = candidates.get(&ident) {
                    worklist.extend(found.iter().copied());
                }
            }
        }
    }

    let mut selection = Selection {
        host_only: HashSet::new(),
        items,
        item_names,
        module_names: HashSet::new(),
        inline_modules: HashSet::new(),
        file_kept: vec![false; tree.files.len()],
        functions,
    };
    let mut visiting = vec![false; tree.files.len()];
    file_kept(tree, 0, &mut selection, &mut visiting);
    selection
}

/// Whether file `file` holds anything selected; fills `selection.file_kept` and
/// `selection.module_names` on the way.
fn file_kept(
    tree: &SourceTree,
    file: usize,
    selection: &mut Selection,
    visiting: &mut [bool],
) -> bool {
    if visiting[file] {
        return selection.file_kept[file];
    }
    visiting[file] = true;
    let kept = items_kept(tree, file, &tree.files[file].ast.items, selection, visiting);
    selection.file_kept[file] = kept;
    kept
}

fn items_kept(
    tree: &SourceTree,
    file: usize,
    items: &[Item],
    selection: &mut Selection,
    visiting: &mut [bool],
) -> bool {
    let mut any = false;
    for item in items {
        let kept = match item {
            Item::Mod(m) => {
                let kept = match &m.content {
                    Some((_, inner)) => {
                        let kept = items_kept(tree, file, inner, selection, visiting);
                        if kept {
                            selection.inline_modules.insert(item_key(file, item));
                        }
                        kept
                    }
                    None => match tree.children.get(&item_key(file, item)) {
                        Some(&child) => file_kept(tree, child, selection, visiting),
                        None => false,
                    },
                };
                if kept {
                    selection.module_names.insert(m.ident.unraw().to_string());
                }
                kept
            }
            other => selection.items.contains(&item_key(file, other)),
        };
        any |= kept;
    }
    any
}

/// What to do with a `use` item.
#[derive(Debug, PartialEq)]
enum UseDecision {
    Keep,
    Rewrite(UseTree),
    Drop,
}

impl Selection {
    fn resolves_on_device(&self, prefix: &[String], name: Option<&str>) -> bool {
        let Some(first) = prefix.first().map(String::as_str).or(name) else {
            return false;
        };
        if DEVICE_CRATES.contains(&first) {
            // The path below `kernel_runtime::`, and each path above it (`host` of `host::X`).
            let below: Vec<&str> = prefix
                .iter()
                .skip(1)
                .map(String::as_str)
                .chain(name)
                .collect();
            let host_import = first == "kernel_runtime"
                && (1..=below.len()).any(|n| self.host_only.contains(&below[..n].join("::")));
            return !host_import;
        }
        // Paths from the crate root or a module, or (edition 2018 and later) from a module
        // declared next to the `use`.
        let relative = matches!(first, "crate" | "self" | "super")
            || (!prefix.is_empty() && self.module_names.contains(first));
        if !relative {
            return false;
        }
        // The name imported (a glob imports from the last segment of the prefix).
        let target = match name {
            Some("self") | None => prefix.last().map(String::as_str),
            Some(n) => Some(n),
        };
        match target {
            Some("crate" | "self" | "super") => true,
            Some(t) => self.item_names.contains(t) || self.module_names.contains(t),
            None => false,
        }
    }

    fn filter_use(&self, tree: &UseTree, prefix: &mut Vec<String>) -> Option<UseTree> {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.unraw().to_string());
                let inner = self.filter_use(&p.tree, prefix);
                prefix.pop();
                inner.map(|t| {
                    let mut p = p.clone();
                    *p.tree = t;
                    UseTree::Path(p)
                })
            }
            UseTree::Name(n) => self
                .resolves_on_device(prefix, Some(&n.ident.unraw().to_string()))
                .then(|| tree.clone()),
            UseTree::Rename(r) => self
                .resolves_on_device(prefix, Some(&r.ident.unraw().to_string()))
                .then(|| tree.clone()),
            UseTree::Glob(_) => self.resolves_on_device(prefix, None).then(|| tree.clone()),
            UseTree::Group(g) => {
                let mut g = g.clone();
                g.items = g
                    .items
                    .iter()
                    .filter_map(|t| self.filter_use(t, prefix))
                    .collect();
                (!g.items.is_empty()).then_some(UseTree::Group(g))
            }
        }
    }

    fn use_decision(&self, tree: &UseTree) -> UseDecision {
        match self.filter_use(tree, &mut Vec::new()) {
            None => UseDecision::Drop,
            Some(t) if t == *tree => UseDecision::Keep,
            Some(t) => UseDecision::Rewrite(t),
        }
    }
}

/// A piece of a generated file.
enum Piece {
    /// The original text between two positions, copied to the same positions.
    Copy(LineColumn, LineColumn),
    /// Generated text (one line) placed at a position.
    Text(LineColumn, String),
}

impl Piece {
    fn start(&self) -> LineColumn {
        match self {
            Piece::Copy(start, _) | Piece::Text(start, _) => *start,
        }
    }
}

struct Emitter<'a> {
    tree: &'a SourceTree,
    selection: &'a Selection,
    /// Where each kept file is written, absolute.
    generated_paths: &'a [Option<PathBuf>],
}

impl Emitter<'_> {
    fn items(&self, file: usize, items: &[Item], out: &mut Vec<Piece>) {
        for item in items {
            let span = item.span();
            if self.selection.items.contains(&item_key(file, item)) {
                out.push(Piece::Copy(span.start(), span.end()));
                continue;
            }
            match item {
                Item::Use(u) => match self.selection.use_decision(&u.tree) {
                    UseDecision::Keep => out.push(Piece::Copy(span.start(), span.end())),
                    UseDecision::Rewrite(tree) => {
                        let (attrs, vis, colon) = (&u.attrs, &u.vis, &u.leading_colon);
                        let text = quote!(#(#attrs)* #vis use #colon #tree;).to_string();
                        out.push(Piece::Text(span.start(), text));
                    }
                    UseDecision::Drop => {}
                },
                Item::Mod(m) => match &m.content {
                    Some((brace, inner)) => {
                        if self
                            .selection
                            .inline_modules
                            .contains(&item_key(file, item))
                        {
                            let (open, close) = (brace.span.open(), brace.span.close());
                            out.push(Piece::Copy(span.start(), open.end()));
                            self.items(file, inner, out);
                            out.push(Piece::Copy(close.start(), close.end()));
                        }
                    }
                    None => {
                        let child = self.tree.children.get(&item_key(file, item));
                        if let Some(path) = child.and_then(|&c| self.generated_paths[c].as_ref()) {
                            // The declaration as written, its own `#[path]` replaced by one
                            // naming the generated file.
                            for attr in m.attrs.iter().filter(|a| !a.path().is_ident("path")) {
                                let span = attr.span();
                                out.push(Piece::Copy(span.start(), span.end()));
                            }
                            let rest = match &m.vis {
                                syn::Visibility::Inherited => m.mod_token.span.start(),
                                vis => vis.span().start(),
                            };
                            let path = syn::LitStr::new(&path.to_string_lossy(), m.ident.span());
                            let attr = format!("#[path = {}]", path.to_token_stream());
                            out.push(Piece::Text(rest, attr));
                            out.push(Piece::Copy(rest, span.end()));
                        }
                    }
                },
                _ => {}
            }
        }
    }
}

/// Writes `pieces` of `original` into a text of the same number of lines, each piece at its
/// original line and column.
fn render(original: &str, mut pieces: Vec<Piece>, prefix: Option<&str>) -> String {
    let lines: Vec<&str> = original.split('\n').collect();
    let mut out: Vec<String> = vec![String::new(); lines.len()];
    pieces.sort_by_key(|p| {
        let s = p.start();
        (s.line, s.column)
    });

    fn place(out: &mut [String], line: usize, column: usize, text: &str) {
        let Some(target) = out.get_mut(line.saturating_sub(1)) else {
            return;
        };
        let len = target.chars().count();
        if len < column {
            target.extend(std::iter::repeat_n(' ', column - len));
        } else if len > column {
            target.push(' ');
        }
        target.push_str(text);
    }

    fn char_slice(line: &str, from: usize, to: Option<usize>) -> &str {
        let byte = |n: usize| line.char_indices().nth(n).map_or(line.len(), |(b, _)| b);
        let start = byte(from);
        let end = to.map_or(line.len(), byte);
        &line[start..end.max(start)]
    }

    for piece in pieces {
        match piece {
            Piece::Copy(start, end) => {
                for line in start.line..=end.line {
                    let Some(text) = lines.get(line.saturating_sub(1)) else {
                        break;
                    };
                    let from = if line == start.line { start.column } else { 0 };
                    let to = (line == end.line).then_some(end.column);
                    place(&mut out, line, from, char_slice(text, from, to));
                }
            }
            Piece::Text(at, text) => place(&mut out, at.line, at.column, &text.replace('\n', " ")),
        }
    }

    if let Some(prefix) = prefix {
        out[0] = if out[0].is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix} {}", out[0])
        };
    }
    out.join("\n")
}

/// Where the device crate keeps the mirror of `path`: the same path relative to the manifest
/// directory, or a flat `ext/` name for files outside it.
fn mirror_path(path: &Path, manifest_dir: &Path, index: usize) -> PathBuf {
    match path.strip_prefix(manifest_dir) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => {
            let name = path
                .file_name()
                .map_or_else(|| "module.rs".into(), |n| n.to_string_lossy().into_owned());
            Path::new("ext").join(format!("{index}-{name}"))
        }
    }
}

/// Splits the device code out of `tree`, to be written into `device_dir`.
///
/// `host_only` names what `kernel_runtime` exports to the host alone
/// ([`crate::host_only::runtime_host_paths`]).
pub(crate) fn extract(
    tree: &SourceTree,
    manifest_dir: &Path,
    device_dir: &Path,
    host_only: &HashSet<String>,
) -> Extraction {
    let mut selection = select(tree);
    selection.host_only = host_only.clone();
    let mut rels: Vec<Option<PathBuf>> = vec![None; tree.files.len()];
    for (index, file) in tree.files.iter().enumerate() {
        if index == 0 || selection.file_kept[index] {
            rels[index] = Some(mirror_path(&file.path, manifest_dir, index));
        }
    }
    let absolute: Vec<Option<PathBuf>> = rels
        .iter()
        .map(|r| r.as_ref().map(|r| device_dir.join(r)))
        .collect();
    let emitter = Emitter {
        tree,
        selection: &selection,
        generated_paths: &absolute,
    };

    let mut files = Vec::new();
    for (index, file) in tree.files.iter().enumerate() {
        let Some(rel) = &rels[index] else { continue };
        let mut pieces = Vec::new();
        emitter.items(index, &file.ast.items, &mut pieces);
        let prefix = (index == 0).then_some(ROOT_PREFIX);
        files.push(GeneratedFile {
            original: file.path.clone(),
            rel: rel.clone(),
            text: render(&file.text, pieces, prefix),
        });
    }
    Extraction {
        files,
        functions: selection.functions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::tests::load_map;

    const LIB: &str = r#"use std::collections::HashMap;
use kernel_runtime::prelude::*;
use crate::helpers::{scale, host_only};
use crate::host::Report;

/// Threads per block.
const N: usize = 16;
const UNUSED: usize = 3;
static TABLE: [f32; 2] = [1.0, 2.0];

pub fn host_side() -> HashMap<u32, u32> {
    HashMap::new()
}

#[kernel]
pub fn add(a: &[f32], out: &mut [f32]) {
    let i = grid(1);
    // a comment inside the kernel stays
    out[i] = a[i] * N as f32 + scale(TABLE[0]) + Point { x: 1.0 }.x;
}

struct Point { x: f32 } fn on_the_same_line_as_point() {}

mod helpers;
mod host;
pub mod inline {
    use super::*;
    fn host_fn() {}
    #[kernel_runtime::device]
    pub fn twice(x: f32) -> f32 { x * 2.0 }
}
mod empty_inline { fn nothing() {} }
pub use helpers::scale as scale2;
pub use host::Report as R;
"#;

    const HELPERS: &str = "use std::println;\n\
        #[device]\n\
        pub fn scale(x: f32) -> f32 { x * FACTOR }\n\
        const FACTOR: f32 = 2.0;\n\
        pub fn host_only() { println!(\"host\"); }\n";

    const HOST: &str = "pub struct Report;\n";

    fn extract_fixture() -> Extraction {
        let tree = load_map(
            "/c/src/lib.rs",
            &[
                ("/c/src/lib.rs", LIB),
                ("/c/src/helpers.rs", HELPERS),
                ("/c/src/host.rs", HOST),
            ],
        )
        .unwrap();
        extract(&tree, Path::new("/c"), Path::new("/dev"), &HashSet::new())
    }

    fn line(text: &str, n: usize) -> &str {
        text.split('\n').nth(n - 1).unwrap()
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.contains(needle)).unwrap() + 1
    }

    #[test]
    fn keeps_line_numbers_and_columns() {
        let ex = extract_fixture();
        let lib = &ex.files[0];
        assert_eq!(lib.rel, Path::new("src/lib.rs"));
        assert_eq!(lib.text.split('\n').count(), LIB.split('\n').count());
        for needle in [
            "let i = grid(1);",
            "// a comment inside the kernel stays",
            "const N: usize = 16;",
            "/// Threads per block.",
            "static TABLE",
            "pub fn twice",
            "use super::*;",
        ] {
            let n = line_of(LIB, needle);
            assert_eq!(line(&lib.text, n), line(LIB, n), "line {n}");
        }
        // A kept item shares its line with a dropped one: the kept one keeps its columns.
        let n = line_of(LIB, "struct Point");
        assert_eq!(line(&lib.text, n), "struct Point { x: f32 }");
    }

    #[test]
    fn blanks_host_code_and_drops_std_uses() {
        let ex = extract_fixture();
        let lib = &ex.files[0].text;
        for gone in [
            "HashMap",
            "UNUSED",
            "host_side",
            "host_fn",
            "on_the_same_line",
            "Report",
            "mod host",
            "empty_inline",
        ] {
            assert!(!lib.contains(gone), "{gone} survived:\n{lib}");
        }
        assert!(lib.starts_with(ROOT_PREFIX), "{lib}");
        // Line 1 held only a std import: it is the prefix alone.
        assert_eq!(line(lib, 1), ROOT_PREFIX);
        assert_eq!(line(lib, 2), "use kernel_runtime::prelude::*;");
        // A mixed import keeps only what exists on the device, on its own line.
        let n = line_of(LIB, "use crate::helpers");
        assert_eq!(
            line(lib, n).split_whitespace().collect::<String>(),
            "usecrate::helpers::{scale};"
        );
        assert!(line(lib, line_of(LIB, "use crate::host")).is_empty());
        // Paths relative to a sibling module (edition 2018 and later) count too.
        let n = line_of(LIB, "pub use helpers::scale");
        assert_eq!(line(lib, n), line(LIB, n));
        // Blank lines are empty, not padded.
        assert!(line(lib, line_of(LIB, "HashMap::new()")).is_empty());
    }

    #[test]
    fn follows_modules_and_points_at_the_generated_files() {
        let ex = extract_fixture();
        let names: Vec<_> = ex.files.iter().map(|f| f.rel.clone()).collect();
        assert_eq!(
            names,
            [PathBuf::from("src/lib.rs"), PathBuf::from("src/helpers.rs")]
        );
        let lib = &ex.files[0].text;
        let decl = line(lib, line_of(LIB, "mod helpers;"));
        assert_eq!(decl, "#[path = \"/dev/src/helpers.rs\"] mod helpers;");

        let helpers = &ex.files[1];
        assert_eq!(helpers.original, Path::new("/c/src/helpers.rs"));
        assert_eq!(
            helpers.text,
            "\n#[device]\npub fn scale(x: f32) -> f32 { x * FACTOR }\nconst FACTOR: f32 = 2.0;\n\n"
        );
        let mut fns = ex.functions.clone();
        fns.sort();
        assert_eq!(fns, ["add", "scale", "twice"]);
    }

    #[test]
    fn module_declarations_keep_their_attributes_and_lines() {
        let src = "/// Kernels.\n#[cfg(any())]\n#[path = \"k/impl.rs\"]\npub(crate) mod k;\n";
        let tree = load_map(
            "/c/src/lib.rs",
            &[
                ("/c/src/lib.rs", src),
                ("/c/src/k/impl.rs", "#[kernel] fn f() {}\n"),
            ],
        )
        .unwrap();
        let ex = extract(&tree, Path::new("/c"), Path::new("/dev"), &HashSet::new());
        assert_eq!(
            ex.files[0].text,
            format!(
                "{ROOT_PREFIX} /// Kernels.\n#[cfg(any())]\n\n\
                 #[path = \"/dev/src/k/impl.rs\"] pub(crate) mod k;\n"
            )
        );
        assert_eq!(ex.files[1].rel, Path::new("src/k/impl.rs"));
    }

    #[test]
    fn inline_modules_keep_header_and_closing_brace() {
        let ex = extract_fixture();
        let lib = &ex.files[0].text;
        assert_eq!(
            line(lib, line_of(LIB, "pub mod inline")),
            "pub mod inline {"
        );
        let close = line_of(LIB, "pub fn twice") + 1;
        assert_eq!(line(lib, close), "}");
    }

    #[test]
    fn module_arrays_go_with_the_kernels_that_read_them() {
        let lib = "use kernel_runtime::prelude::*;\n\
            constant_array!(pub static TAPS: [f32; 3]);\n\
            kernel_runtime::global_array!(static UNREAD: [u32; 8]);\n\
            #[kernel] pub fn k(out: &mut [f32]) { out[0] = TAPS.read()[0]; }\n";
        let tree = load_map("/c/src/lib.rs", &[("/c/src/lib.rs", lib)]).unwrap();
        let text =
            &extract(&tree, Path::new("/c"), Path::new("/dev"), &HashSet::new()).files[0].text;
        assert_eq!(line(text, 2), "constant_array!(pub static TAPS: [f32; 3]);");
        assert_eq!(line(text, 3).trim(), "");
    }

    #[test]
    fn attribute_forms_that_mark_device_code() {
        for (src, marked) in [
            ("#[kernel] fn f() {}", true),
            ("#[kernel(boundscheck = false)] fn f() {}", true),
            ("#[kernel_runtime::device] fn f() {}", true),
            ("#[inline] fn f() {}", false),
            ("#[kernel] struct S;", false),
            (
                "#[device(extern, cpu = m)] pub fn mul(a: f32) -> f32;",
                true,
            ),
            ("#[inline] fn mul(a: f32) -> f32;", false),
        ] {
            let item: Item = syn::parse_str(src).unwrap();
            assert_eq!(is_marked(&item), marked, "{src}");
        }
    }

    #[test]
    fn a_crate_without_device_code_yields_just_the_prefix() {
        let tree = load_map("/c/src/main.rs", &[("/c/src/main.rs", "fn main() {}\n")]).unwrap();
        let ex = extract(&tree, Path::new("/c"), Path::new("/dev"), &HashSet::new());
        assert_eq!(ex.files.len(), 1);
        assert_eq!(ex.files[0].rel, Path::new("src/main.rs"));
        assert_eq!(ex.files[0].text, format!("{ROOT_PREFIX}\n"));
    }

    #[test]
    fn imports_of_the_runtimes_host_api_stay_on_the_host() {
        let src = "use kernel_runtime::prelude::*;\n\
            use kernel_runtime::{Device, DeviceNumber};\n\
            use kernel_runtime::Finding;\n\
            use kernel_runtime::ndarray::{s, Array2};\n\
            use kernel_runtime::random::{create_xoroshiro128p_states, Xoroshiro128pState};\n\
            #[kernel] fn k(x: &mut [f32]) { x[0] = 1.0; }\n\
            fn host(dev: &Device) -> Option<Finding> { None }\n";
        let tree = load_map("/c/tests/it.rs", &[("/c/tests/it.rs", src)]).unwrap();
        let host_only = [
            "Device",
            "Finding",
            "ndarray",
            "random::create_xoroshiro128p_states",
        ]
        .map(String::from)
        .into();
        let ex = extract(&tree, Path::new("/c"), Path::new("/dev"), &host_only);
        let text = &ex.files[0].text;
        assert!(text.contains("use kernel_runtime::prelude::*;"), "{text}");
        assert!(
            text.contains("use kernel_runtime :: { DeviceNumber } ;"),
            "{text}"
        );
        assert!(
            !text.contains("Device,") && !text.contains("Finding"),
            "{text}"
        );
        assert!(!text.contains("ndarray"), "{text}");
        assert!(text.contains("random :: { Xoroshiro128pState }"), "{text}");
        assert!(!text.contains("create_"), "{text}");
        assert_eq!(host_functions(&tree), HashSet::from(["host".to_string()]));
    }

    #[test]
    fn macros_types_and_enum_globs_are_followed() {
        let src = "macro_rules! sq { ($x:expr) => { $x * $x } }\n\
            #[derive(Clone, Copy)] enum Mode { A, B }\n\
            type Real = f32;\n\
            use crate::Mode::*;\n\
            use self::Unused::*;\n\
            enum Unused { C }\n\
            unsafe impl Send for Mode {}\n\
            impl Mode { fn show(&self) { std::println!(\"mode\") } }\n\
            #[kernel] fn k(m: Mode, x: Real) -> Real { match m { A => sq!(x), B => x } }\n";
        let tree = load_map("/c/src/lib.rs", &[("/c/src/lib.rs", src)]).unwrap();
        let ex = extract(&tree, Path::new("/c"), Path::new("/dev"), &HashSet::new());
        let text = &ex.files[0].text;
        for kept in [
            "macro_rules! sq",
            "enum Mode",
            "type Real",
            "use crate::Mode::*;",
            "unsafe impl Send for Mode {}",
        ] {
            assert!(text.contains(kept), "{kept} missing:\n{text}");
        }
        assert!(!text.contains("Unused"), "{text}");
        assert!(!text.contains("fn show"), "{text}");
    }
}
