//! The crate roots of a package whose kernels are built, each into a PTX module of its own: the
//! library (or, without one, `src/main.rs`), and the binaries, examples, tests and benches that
//! cargo finds by its conventions (`src/bin/`, `examples/`, `tests/`, `benches/`: a file, or a
//! directory with a `main.rs`) or that `Cargo.toml` declares at a `path` of their own
//! (`[[example]]`), less the conventional ones its `autoexamples = false` (and the like) turns
//! off. A kernel written in a test or an example is then as much a GPU kernel as one in the
//! library.
//!
//! `#[kernel]` finds a target's module by the names cargo gives the target's compilation:
//! `kernel_ptx.bin-<crate>.txt` where `CARGO_BIN_NAME` is set (binaries and examples),
//! `kernel_ptx.test-<crate>.txt` where `CARGO_TARGET_TMPDIR` is (tests and benches), with
//! `<crate>` its `CARGO_CRATE_NAME`; and the library's module, [`crate::PTX_FILE_NAME`],
//! everywhere else.

use std::fs;
use std::path::{Path, PathBuf};

use crate::PTX_FILE_NAME;

/// One crate root whose kernels get a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The root source file.
    pub root: PathBuf,
    /// `None` for the library's (or the lone binary's) module; else `<kind>-<crate>`, which
    /// names its module file and its device crate.
    pub key: Option<String>,
}

impl Target {
    /// The name of its module file in `OUT_DIR`.
    pub(crate) fn ptx_file(&self) -> String {
        match &self.key {
            None => PTX_FILE_NAME.to_string(),
            Some(key) => format!("kernel_ptx.{key}.txt"),
        }
    }
}

/// The key of a target's module file other than the library's, as the build names them
/// (`kernel_ptx.<key>.txt`): `kernel_ptx.test-it.txt` → `test-it`; `None` for the library's
/// and other files.
pub fn module_key(name: &str) -> Option<&str> {
    let key = name.strip_prefix("kernel_ptx.")?.strip_suffix(".txt")?;
    (!key.is_empty()).then_some(key)
}

/// Whether `name` is a module file of a target other than the library's.
pub(crate) fn is_target_module(name: &str) -> bool {
    module_key(name).is_some()
}

/// The crate roots of the package in `manifest_dir`: the primary one first (`src/lib.rs`, else
/// `src/main.rs`), or `None` where there is neither.
pub(crate) fn discover(manifest_dir: &Path, package: &str) -> Option<Vec<Target>> {
    let lib = manifest_dir.join("src/lib.rs");
    let main = manifest_dir.join("src/main.rs");
    let primary = [&lib, &main].into_iter().find(|p| p.is_file())?.clone();
    let mut targets = vec![Target {
        root: primary,
        key: None,
    }];
    if lib.is_file() && main.is_file() {
        targets.push(keyed(main, "bin", package));
    }
    let manifest = fs::read_to_string(manifest_dir.join("Cargo.toml")).unwrap_or_default();
    let declared = Declared::read(&manifest);
    for (dir, table, kind) in [
        ("src/bin", "bin", "bin"),
        ("examples", "example", "bin"),
        ("tests", "test", "test"),
        ("benches", "bench", "test"),
    ] {
        let mut roots = match declared.auto(table) {
            true => roots_in(&manifest_dir.join(dir)),
            false => Vec::new(),
        };
        for (name, path) in declared.of(table) {
            roots.retain(|(_, n)| *n != name);
            let root = match path {
                Some(path) => manifest_dir.join(path),
                None => conventional(&manifest_dir.join(dir), &name),
            };
            roots.push((root, name));
        }
        roots.sort();
        for (root, name) in roots {
            // A declared target whose file is not there is cargo's to report; one that is the
            // library or the package's own binary (`[[bin]] path = "src/main.rs"`) has its
            // module already.
            if root.is_file() && !targets.iter().any(|t| t.root == root) {
                targets.push(keyed(root, kind, &name));
            }
        }
    }
    Some(targets)
}

/// Where cargo looks for target `name` in `dir` when its table gives no `path`.
fn conventional(dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(format!("{name}.rs"));
    match file.is_file() {
        true => file,
        false => dir.join(name).join("main.rs"),
    }
}

/// What a `Cargo.toml` says of its targets: the `auto*` switches of `[package]`, and each
/// `[[bin]]`, `[[example]]`, `[[test]]` and `[[bench]]` table's `name` and `path`. Read line by
/// line, as cargo's own manifests of packages with kernels write them (a key per line).
#[derive(Debug, Default)]
struct Declared {
    /// `(table, name, path)` of each target table.
    targets: Vec<(String, String, Option<String>)>,
    /// The tables (`example`, ..) whose `auto*` switch is `false`.
    off: Vec<String>,
}

impl Declared {
    fn read(manifest: &str) -> Declared {
        let mut declared = Declared::default();
        let mut table = String::new();
        for line in manifest.lines() {
            let line = line.split(" #").next().unwrap_or("").trim();
            if line.starts_with('#') {
                continue;
            }
            if let Some(header) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
                table = header.trim().to_string();
                declared.targets.push((table.clone(), String::new(), None));
                continue;
            }
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                table = header.trim().to_string();
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim().trim_matches('"'));
            let switch = ["bin", "example", "test", "bench"]
                .into_iter()
                .find(|t| key == format!("auto{t}s") || key == format!("auto{t}es"));
            if let (true, Some(t), "false") = (table == "package", switch, value) {
                declared.off.push(t.to_string());
            }
            if let Some((t, name, path)) = declared.targets.last_mut() {
                if *t == table && key == "name" {
                    *name = value.to_string();
                } else if *t == table && key == "path" {
                    *path = Some(value.to_string());
                }
            }
        }
        declared.targets.retain(|(_, name, _)| !name.is_empty());
        declared
    }

    /// Whether cargo finds the targets of `table` by its conventions.
    fn auto(&self, table: &str) -> bool {
        !self.off.iter().any(|t| t == table)
    }

    /// The name and path of each `[[table]]`.
    fn of(&self, table: &str) -> Vec<(String, Option<String>)> {
        self.targets
            .iter()
            .filter(|(t, _, _)| t == table)
            .map(|(_, name, path)| (name.clone(), path.clone()))
            .collect()
    }
}

fn keyed(root: PathBuf, kind: &str, name: &str) -> Target {
    Target {
        root,
        key: Some(format!("{kind}-{}", name.replace('-', "_"))),
    }
}

/// The crate roots cargo finds in `dir`, each with its target's name, in name order: `x.rs`,
/// and `x/main.rs`.
fn roots_in(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut roots: Vec<(PathBuf, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let name = path.file_stem()?.to_str()?.to_string();
            if path.is_dir() {
                let main = path.join("main.rs");
                main.is_file().then_some((main, name))
            } else {
                (path.extension()? == "rs").then_some((path, name))
            }
        })
        .collect();
    roots.sort();
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_target_cargo_would() {
        let dir = std::env::temp_dir().join(format!("kernel-build-targets-{}", std::process::id()));
        for file in [
            "src/lib.rs",
            "src/main.rs",
            "src/bin/tool-a.rs",
            "examples/demo.rs",
            "examples/multi/main.rs",
            "tests/it.rs",
            "tests/common/mod.rs",
            "benches/speed.rs",
            "tools/tool.rs",
        ] {
            let path = dir.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        let targets = discover(&dir, "my-crate").unwrap();
        let found: Vec<(String, String)> = targets
            .iter()
            .map(|t| {
                let rel = t.root.strip_prefix(&dir).unwrap().display().to_string();
                (rel, t.ptx_file())
            })
            .collect();
        let expected = [
            ("src/lib.rs", "kernel_ptx.txt"),
            ("src/main.rs", "kernel_ptx.bin-my_crate.txt"),
            ("src/bin/tool-a.rs", "kernel_ptx.bin-tool_a.txt"),
            ("examples/demo.rs", "kernel_ptx.bin-demo.txt"),
            ("examples/multi/main.rs", "kernel_ptx.bin-multi.txt"),
            ("tests/it.rs", "kernel_ptx.test-it.txt"),
            ("benches/speed.rs", "kernel_ptx.test-speed.txt"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(found, expected);
        assert!(targets
            .iter()
            .skip(1)
            .all(|t| is_target_module(&t.ptx_file())));
        assert!(!is_target_module(PTX_FILE_NAME));
        assert_eq!(module_key("kernel_ptx.test-it.txt"), Some("test-it"));
        assert_eq!(module_key("notes.txt"), None);

        // Declared targets: at paths of their own, and the conventional ones turned off.
        fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"my-crate\"\nautoexamples = false # declared below\nautobenches = false\n\n\
             [[example]]\nname = \"tool\"\npath = \"tools/tool.rs\"\n\n\
             [[test]]\nname = \"it\"\nharness = false\n",
        )
        .unwrap();
        let targets = discover(&dir, "my-crate").unwrap();
        let roots: Vec<String> = targets
            .iter()
            .map(|t| t.root.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        assert_eq!(
            roots,
            [
                "src/lib.rs",
                "src/main.rs",
                "src/bin/tool-a.rs",
                "tools/tool.rs",
                "tests/it.rs",
            ]
        );
        assert_eq!(targets[3].ptx_file(), "kernel_ptx.bin-tool.txt");
        // The package's own binary declared, by path or by name alone, and a test whose file is
        // missing: no target of their own.
        fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"my-crate\"\n\n[[bin]]\nname = \"my-crate\"\n\n\
             [[bin]]\nname = \"main\"\npath = \"src/main.rs\"\n\n[[test]]\nname = \"gone\"\n",
        )
        .unwrap();
        let keys: Vec<String> = discover(&dir, "my-crate")
            .unwrap()
            .iter()
            .map(Target::ptx_file)
            .collect();
        assert_eq!(keys.iter().filter(|k| k.contains("my_crate")).count(), 1);
        assert!(!keys
            .iter()
            .any(|k| k.contains("bin-main") || k.contains("gone")));
        fs::remove_file(dir.join("Cargo.toml")).unwrap();

        fs::remove_file(dir.join("src/lib.rs")).unwrap();
        let targets = discover(&dir, "my-crate").unwrap();
        assert_eq!(targets[0].root, dir.join("src/main.rs"));
        assert_eq!(targets[0].key, None);
        fs::remove_dir_all(&dir).unwrap();
        assert!(discover(&dir, "my-crate").is_none());
    }
}
