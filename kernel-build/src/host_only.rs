//! The paths `kernel_runtime` exports to the host alone (`Device`, `Error`, `Finding`, its
//! `host` module, `ndarray`, `random::create_xoroshiro128p_states`, ...), read from its root file
//! and the files of its public modules: a `use kernel_runtime::Device;` in a file that also holds
//! kernels serves the host code there, and is left out of the device crate, where the name does
//! not exist.

use std::collections::HashSet;
use std::path::Path;

use syn::ext::IdentExt;
use syn::{Item, UseTree};

/// The paths, below `kernel_runtime::` (`Device`, `random::create_xoroshiro128p_states`), that
/// the runtime at `runtime_dir` declares or re-exports only off the device
/// (`#[cfg(not(target_arch = "nvptx64"))]`, alone or in an `all(..)`): in `src/lib.rs`, and one
/// module down in the files of its public modules. Empty where the files cannot be read or
/// parsed: every import is then kept.
pub(crate) fn runtime_host_paths(runtime_dir: &Path) -> HashSet<String> {
    let src = runtime_dir.join("src");
    let Some(root) = parse(&src.join("lib.rs")) else {
        return HashSet::new();
    };
    let mut paths = host_names(&root);
    for item in &root.items {
        let Item::Mod(m) = item else { continue };
        let public = matches!(m.vis, syn::Visibility::Public(_));
        if !public || m.content.is_some() || host_only(item) {
            continue;
        }
        let name = m.ident.unraw().to_string();
        let file = [
            src.join(format!("{name}.rs")),
            src.join(&name).join("mod.rs"),
        ]
        .into_iter()
        .find_map(|f| parse(&f));
        if let Some(file) = file {
            paths.extend(
                host_names(&file)
                    .into_iter()
                    .map(|n| format!("{name}::{n}")),
            );
        }
    }
    paths
}

fn parse(path: &Path) -> Option<syn::File> {
    syn::parse_file(&std::fs::read_to_string(path).ok()?).ok()
}

/// The names `file` declares or re-exports off the device only.
fn host_names(file: &syn::File) -> HashSet<String> {
    let mut names = HashSet::new();
    for item in file.items.iter().filter(|item| host_only(item)) {
        match item {
            Item::Use(u) => leaf_names(&u.tree, &mut names),
            Item::Mod(m) => drop(names.insert(m.ident.unraw().to_string())),
            Item::Fn(f) => drop(names.insert(f.sig.ident.unraw().to_string())),
            Item::Struct(s) => drop(names.insert(s.ident.unraw().to_string())),
            Item::Enum(e) => drop(names.insert(e.ident.unraw().to_string())),
            Item::Trait(t) => drop(names.insert(t.ident.unraw().to_string())),
            _ => {}
        }
    }
    names
}

/// Whether `item` carries a `cfg` that leaves it out on nvptx64.
fn host_only(item: &Item) -> bool {
    let attrs = match item {
        Item::Use(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && quote::ToTokens::to_token_stream(&attr.meta)
                .to_string()
                .contains("not (target_arch = \"nvptx64\")")
    })
}

/// The names a `use` tree brings into scope.
fn leaf_names(tree: &UseTree, names: &mut HashSet<String>) {
    match tree {
        UseTree::Path(p) => leaf_names(&p.tree, names),
        UseTree::Name(n) => drop(names.insert(n.ident.unraw().to_string())),
        UseTree::Rename(r) => drop(names.insert(r.rename.unraw().to_string())),
        UseTree::Glob(_) => {}
        UseTree::Group(g) => g.items.iter().for_each(|t| leaf_names(t, names)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_only_exports() {
        let lib = r#"
            pub mod prelude {}
            #[cfg(not(target_arch = "nvptx64"))]
            pub mod host;
            pub use dim::Dim3;
            #[cfg(not(target_arch = "nvptx64"))]
            pub use host::{device::{Device, DeviceKind}, error::Error as HostError};
            #[cfg(all(feature = "mpi", not(target_arch = "nvptx64")))]
            pub use host::cluster;
            #[cfg(target_arch = "nvptx64")]
            pub use device::Only;
        "#;
        let names = host_names(&syn::parse_file(lib).unwrap());
        let mut sorted: Vec<_> = names.into_iter().collect();
        sorted.sort();
        assert_eq!(
            sorted,
            ["Device", "DeviceKind", "HostError", "cluster", "host"]
        );
    }

    #[test]
    fn reads_the_runtime_of_this_workspace() {
        let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-runtime");
        let paths = runtime_host_paths(&runtime);
        for host in [
            "Device",
            "Error",
            "Finding",
            "ndarray",
            "host",
            "DeviceArray",
            "random::create_xoroshiro128p_states",
            "random::xoroshiro128p_states",
        ] {
            assert!(paths.contains(host), "{host}: {paths:?}");
        }
        for device in [
            "prelude",
            "Dim3",
            "DeviceNumber",
            "kernel",
            "random::Xoroshiro128pState",
        ] {
            assert!(!paths.contains(device), "{device}");
        }
    }
}
