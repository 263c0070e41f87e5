//! PTX entry points: each `#[kernel]`, `#[vectorize]`, `#[guvectorize]`, `#[reduce]` and
//! `#[stencil]` function becomes one named like it, so two of one name anywhere in a crate would
//! clash in its PTX module. The clash is refused here, on every build (with or without the
//! nvptx toolchain), naming both places.

use std::collections::HashMap;

use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::Item;

use crate::error::Error;
use crate::extract::walk;
use crate::source::SourceTree;

/// Attribute names whose functions become PTX entry points.
const ENTRY_MARKERS: [&str; 5] = ["kernel", "vectorize", "guvectorize", "reduce", "stencil"];

/// `Ok` where every entry point of the crate has a name of its own.
pub(crate) fn check_unique(tree: &SourceTree) -> Result<(), Error> {
    let mut seen: HashMap<String, String> = HashMap::new();
    for file in &tree.files {
        let mut clash = None;
        walk(&file.ast.items, &mut |item| {
            let Some(name) = entry_name(item) else { return };
            let place = format!("{}:{}", file.path.display(), item.span().start().line);
            if let Some(first) = seen.get(&name) {
                clash.get_or_insert(Error::DuplicateKernel {
                    name,
                    first: first.clone(),
                    second: place,
                });
            } else {
                seen.insert(name, place);
            }
        });
        if let Some(e) = clash {
            return Err(e);
        }
    }
    Ok(())
}

/// The name of the entry point `item` becomes, if it becomes one.
fn entry_name(item: &Item) -> Option<String> {
    let Item::Fn(f) = item else { return None };
    let marked = f.attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|seg| ENTRY_MARKERS.iter().any(|m| seg.ident == m))
    });
    marked.then(|| f.sig.ident.unraw().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::tests::load_map;

    #[test]
    fn two_kernels_of_one_name_are_refused_naming_both() {
        let tree = load_map(
            "/c/src/lib.rs",
            &[
                (
                    "/c/src/lib.rs",
                    "mod a;\nmod b {\n    #[kernel] fn add(x: &[f32]) {}\n}\n",
                ),
                ("/c/src/a.rs", "\n#[kernel]\nfn add(y: &mut [f32]) {}\n"),
            ],
        )
        .unwrap();
        let err = check_unique(&tree).unwrap_err().to_string();
        assert!(err.contains("two kernels are named `add`"), "{err}");
        assert!(
            err.contains("/c/src/lib.rs:3") && err.contains("/c/src/a.rs:2"),
            "{err}"
        );
    }

    #[test]
    fn device_functions_and_other_items_may_share_names() {
        let tree = load_map(
            "/c/src/lib.rs",
            &[(
                "/c/src/lib.rs",
                "#[kernel] fn add(x: &[f32]) {}\nmod m { #[device] fn add() {} fn add2() {} }\n\
                 #[vectorize] fn scale(x: f32) -> f32 { x }\n",
            )],
        )
        .unwrap();
        check_unique(&tree).unwrap();
    }
}
