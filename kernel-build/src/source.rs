//! Loading a crate's module tree: the root file, then every `mod x;` it declares, recursively,
//! following the compiler's rules for where module files live (`x.rs`, `x/mod.rs`, `#[path]`,
//! inline modules as directories).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use proc_macro2::LineColumn;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Item, ItemMod};

use crate::Error;

/// Identifies an item: the index of its file and the position of its first character.
pub(crate) type ItemKey = (usize, usize, usize);

/// The key of `item`, which lies in file `file`.
pub(crate) fn item_key(file: usize, item: &Item) -> ItemKey {
    let LineColumn { line, column } = item.span().start();
    (file, line, column)
}

/// One parsed source file.
pub(crate) struct SourceFile {
    /// The path it was read from.
    pub path: PathBuf,
    /// Its text (a leading byte-order mark removed).
    pub text: String,
    /// Its syntax tree.
    pub ast: syn::File,
}

/// All the files of a crate's module tree.
pub(crate) struct SourceTree {
    /// The files; index 0 is the crate root.
    pub files: Vec<SourceFile>,
    /// Each out-of-line module declaration (`mod x;`) that was found, to the file it loads.
    pub children: HashMap<ItemKey, usize>,
}

/// A module file to load: the places it may be (first that exists wins), each with the
/// directory its own `mod y;` declarations are looked up in.
struct Pending {
    declared_by: Option<ItemKey>,
    candidates: Vec<(PathBuf, PathBuf)>,
}

/// Loads the module tree that starts at `root`, reading files with `read`.
///
/// A declared module whose file does not exist is skipped: it is either configured out or an
/// error the host compiler will report better.
pub(crate) fn load(
    root: &Path,
    read: &mut dyn FnMut(&Path) -> io::Result<String>,
) -> Result<SourceTree, Error> {
    let root_dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut tree = SourceTree {
        files: Vec::new(),
        children: HashMap::new(),
    };
    let mut queue = vec![Pending {
        declared_by: None,
        candidates: vec![(root.to_path_buf(), root_dir)],
    }];
    while let Some(pending) = queue.pop() {
        let mut found = None;
        for (path, child_dir) in pending.candidates {
            match read(&path) {
                Ok(text) => {
                    found = Some((path, child_dir, text));
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && pending.declared_by.is_some() => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        let Some((path, child_dir, text)) = found else {
            continue;
        };
        let text = match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        };
        let ast = syn::parse_file(&text).map_err(|e| Error::Parse {
            file: path.clone(),
            line: e.span().start().line,
            msg: e.to_string(),
        })?;
        let index = tree.files.len();
        if let Some(key) = pending.declared_by {
            tree.children.insert(key, index);
        }
        let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let mut found_mods = Vec::new();
        declared_modules(index, &ast.items, &child_dir, &base, &mut found_mods);
        tree.files.push(SourceFile { path, text, ast });
        // Reverse so that files load in source order (the queue is a stack).
        queue.extend(found_mods.into_iter().rev());
    }
    Ok(tree)
}

/// Collects the `mod x;` declarations among `items` (recursing into inline modules).
///
/// `dir` is where `x.rs` / `x/mod.rs` are looked for; `path_base` is what a `#[path]` on the
/// declaration is relative to.
fn declared_modules(
    file: usize,
    items: &[Item],
    dir: &Path,
    path_base: &Path,
    out: &mut Vec<Pending>,
) {
    for item in items {
        let Item::Mod(m) = item else { continue };
        let name = m.ident.unraw().to_string();
        let path_attr = path_attribute(m);
        match &m.content {
            Some((_, inner)) => {
                let nested = dir.join(path_attr.unwrap_or(name));
                declared_modules(file, inner, &nested, &nested, out);
            }
            None => {
                let candidates = match path_attr {
                    Some(p) => {
                        let file_path = path_base.join(p);
                        let child_dir = file_path.parent().unwrap_or(Path::new("")).to_path_buf();
                        vec![(file_path, child_dir)]
                    }
                    None => vec![
                        (dir.join(format!("{name}.rs")), dir.join(&name)),
                        (dir.join(&name).join("mod.rs"), dir.join(&name)),
                    ],
                };
                out.push(Pending {
                    declared_by: Some(item_key(file, item)),
                    candidates,
                });
            }
        }
    }
}

/// The value of a `#[path = "..."]` attribute on a module, if any.
pub(crate) fn path_attribute(m: &ItemMod) -> Option<String> {
    m.attrs.iter().find_map(|attr| {
        if !attr.path().is_ident("path") {
            return None;
        }
        let syn::Meta::NameValue(nv) = &attr.meta else {
            return None;
        };
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Loads a module tree from in-memory files.
    pub(crate) fn load_map(root: &str, files: &[(&str, &str)]) -> Result<SourceTree, Error> {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        load(Path::new(root), &mut |p: &Path| {
            map.get(p)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        })
    }

    fn paths(tree: &SourceTree) -> Vec<String> {
        tree.files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect()
    }

    #[test]
    fn follows_module_files_like_the_compiler() {
        let tree = load_map(
            "/c/src/lib.rs",
            &[
                ("/c/src/lib.rs", "mod a; mod b; mod inline { mod c; } #[path = \"other/d.rs\"] mod d; mod missing;"),
                ("/c/src/a.rs", "mod nested;"),
                ("/c/src/a/nested.rs", ""),
                ("/c/src/b/mod.rs", "mod e;"),
                ("/c/src/b/e.rs", ""),
                ("/c/src/inline/c.rs", ""),
                ("/c/src/other/d.rs", "mod f;"),
                ("/c/src/other/f.rs", ""),
            ],
        )
        .unwrap();
        assert_eq!(
            paths(&tree),
            [
                "/c/src/lib.rs",
                "/c/src/a.rs",
                "/c/src/a/nested.rs",
                "/c/src/b/mod.rs",
                "/c/src/b/e.rs",
                "/c/src/inline/c.rs",
                "/c/src/other/d.rs",
                "/c/src/other/f.rs",
            ]
        );
        assert_eq!(tree.children.len(), 7);
    }

    #[test]
    fn parse_errors_name_file_and_line() {
        let err = load_map(
            "/c/src/lib.rs",
            &[("/c/src/lib.rs", "fn ok() {}\n\nfn broken( {\n")],
        )
        .err()
        .unwrap();
        match err {
            Error::Parse { file, line, .. } => {
                assert_eq!(file, Path::new("/c/src/lib.rs"));
                assert!(line >= 3, "line {line}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn missing_root_is_an_error() {
        assert!(matches!(
            load_map("/c/src/lib.rs", &[]),
            Err(Error::Io { .. })
        ));
    }
}
