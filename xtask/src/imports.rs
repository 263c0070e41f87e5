//! `cargo xtask imports`: each library crate's files as a graph of imports, and its circles.
//!
//! File A imports file B when a path in A (a `use`, a type, an expression, a path inside a macro
//! call or a `macro_rules!` body's `$crate::`) names B's module or an item in it. Test modules
//! (`#[cfg(test)]`) are left out, and so is a module's use of its own submodules: a parent that
//! declares `mod b;` and uses `b::f` composes its children, while a child that names its parent
//! (`super::Error`) imports it. A circle is a strongly connected set of two files or more; each is printed with
//! the names that tie it, file to file.
//!
//! Written here rather than taken from `cargo-modules`, which draws the same graph (and checks
//! it with `--acyclic`) but builds rust-analyzer to do it, minutes on every fresh clone: this
//! needs only the `syn` that the workspace builds anyway.
//!
//! ```text
//! $ cargo xtask imports
//! kernel-runtime: 89 files, 350 imports, no circle
//! kernel-build: 13 files, 16 imports, no circle
//! ...
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use crate::util::{self, Result};

/// Check the workspace's library crates for import circles between their files
#[derive(Debug, Default, clap::Args)]
pub struct Args {}

/// The crates whose files are checked, by folder (`.`: the root package, `src/`).
pub const CRATES: &[&str] = &[
    "kernel-runtime",
    "kernel-build",
    "kernel-macros",
    "gpu-kernels",
    "hopper-kernels",
    "foreign-kernels",
    "suite-kernels",
    "fake-cuda",
    ".",
    "examples",
    "xtask",
];

/// Runs `cargo xtask imports`.
pub fn run(_: Args) -> Result {
    let summary = check(&util::workspace_root())?;
    println!("{summary}");
    Ok(())
}

/// Checks every crate of [`CRATES`]: a line per crate, or an error that lists the circles.
pub fn check(root: &Path) -> Result<String> {
    let mut lines = Vec::new();
    let mut circles = Vec::new();
    for name in CRATES {
        let graph = Graph::of_crate(&root.join(name))?;
        let mut found: Vec<String> = graph
            .circles()
            .iter()
            .map(|c| graph.describe(c, root))
            .collect();
        found.extend(graph.folder_circles(root));
        let name = if *name == "." {
            "the root package"
        } else {
            name
        };
        lines.push(format!(
            "{name}: {} files, {} imports, {}",
            graph.files.len(),
            graph.edges.len(),
            match found.len() {
                0 => "no circle".to_string(),
                n => format!("{n} circle(s)"),
            }
        ));
        circles.extend(found);
    }
    if circles.is_empty() {
        Ok(lines.join("\n"))
    } else {
        Err(format!("{}\n{}", lines.join("\n"), circles.join("\n")))
    }
}

/// One crate's files, each with its module path, and the imports between them.
#[derive(Debug, Default)]
struct Graph {
    /// Module path (without `crate`) → the file that holds it. Inline modules map to their file.
    modules: BTreeMap<Vec<String>, usize>,
    files: Vec<PathBuf>,
    /// Each file's own (outermost) module, by file index.
    file_modules: Vec<Vec<String>>,
    /// (from, to) → the names that `from` takes from `to`.
    edges: BTreeMap<(usize, usize), BTreeSet<String>>,
}

impl Graph {
    fn of_crate(dir: &Path) -> Result<Graph> {
        let root = ["src/lib.rs", "src/main.rs"]
            .iter()
            .map(|r| dir.join(r))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("{} has no src/lib.rs or src/main.rs", dir.display()))?;
        let mut graph = Graph::default();
        let mut parsed = Vec::new();
        graph.load(&root, dir.join("src"), Vec::new(), &mut parsed)?;
        // Each module's children, looked up once for all the paths written in it.
        let children: BTreeMap<Vec<String>, BTreeSet<String>> = graph
            .modules
            .keys()
            .map(|m| (m.clone(), graph.children(m)))
            .collect();
        for (file, ast, module) in &parsed {
            let mut refs = References::new(module.clone());
            refs.visit_file(ast);
            for (path, inner) in refs.paths {
                let Some(children) = children.get(&inner) else {
                    continue;
                };
                if let Some(abs) = resolve(&path, &inner, &refs.aliases, children) {
                    graph.add_edge(*file, &abs);
                }
            }
        }
        Ok(graph)
    }

    /// Parses `file` (module `module`, whose child files live in `dir`) and its child files.
    fn load(
        &mut self,
        file: &Path,
        dir: PathBuf,
        module: Vec<String>,
        parsed: &mut Vec<(usize, syn::File, Vec<String>)>,
    ) -> Result {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let index = self.files.len();
        self.files.push(file.to_path_buf());
        self.file_modules.push(module.clone());
        self.modules.insert(module.clone(), index);
        let mut children = Vec::new();
        collect_mods(&ast.items, &dir, &module, &mut children, &mut |m| {
            self.modules.insert(m, index);
        });
        parsed.push((index, ast, module));
        for (child_module, child_file) in children {
            let child_dir = if child_file.ends_with("mod.rs") {
                child_file.parent().unwrap_or(&dir).to_path_buf()
            } else {
                child_file.with_extension("")
            };
            self.load(&child_file, child_dir, child_module, parsed)?;
        }
        Ok(())
    }

    /// The names of the modules directly inside `module`.
    fn children(&self, module: &[String]) -> BTreeSet<String> {
        self.modules
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m[module.len()].clone())
            .collect()
    }

    /// Adds the import of the longest module prefix of `path` to `from`.
    fn add_edge(&mut self, from: usize, path: &[String]) {
        let Some(len) = (0..=path.len())
            .rev()
            .find(|&n| self.modules.contains_key(&path[..n]))
        else {
            return;
        };
        let to = self.modules[&path[..len]];
        let inside = self.module_of(to).starts_with(self.module_of(from));
        if to != from && !inside {
            let name = path.get(len).cloned().unwrap_or_else(|| "*".into());
            self.edges.entry((from, to)).or_default().insert(name);
        }
    }

    /// The module path of a file's own (outermost) module.
    fn module_of(&self, file: usize) -> &[String] {
        &self.file_modules[file]
    }

    /// The strongly connected sets of two files or more.
    fn circles(&self) -> Vec<Vec<usize>> {
        Tarjan::components(self.files.len(), &self.edges)
    }

    /// Circles between sibling modules, each standing for its whole folder, where one of them is
    /// a folder: `check/launch.rs` importing `exec.rs`, which imports `check/mod.rs`, ties the
    /// folder `check` and `exec` in a circle that no two files show alone.
    fn folder_circles(&self, root: &Path) -> Vec<String> {
        let mut nodes: Vec<Vec<String>> = Vec::new();
        let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
        for (from, to) in self.edges.keys() {
            let (a, b) = (self.module_of(*from), self.module_of(*to));
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common == a.len() || common == b.len() {
                continue;
            }
            let mut node = |m: &[String]| match nodes.iter().position(|n| n == m) {
                Some(i) => i,
                None => {
                    nodes.push(m.to_vec());
                    nodes.len() - 1
                }
            };
            let (x, y) = (node(&a[..=common]), node(&b[..=common]));
            let what = format!("{} -> {}", self.name(*from, root), self.name(*to, root));
            edges.entry((x, y)).or_default().insert(what);
        }
        let folder = |m: &Vec<String>| !self.children(m).is_empty();
        Tarjan::components(nodes.len(), &edges)
            .into_iter()
            .filter(|c| c.iter().any(|&i| folder(&nodes[i])))
            .map(|c| {
                let names: Vec<_> = c.iter().map(|&i| nodes[i].join("::")).collect();
                let mut out = format!("circle of modules {}:", names.join(", "));
                for ((x, y), files) in &edges {
                    if c.contains(x) && c.contains(y) {
                        for f in files {
                            out += &format!("\n  {f}");
                        }
                    }
                }
                out
            })
            .collect()
    }

    fn name(&self, file: usize, root: &Path) -> String {
        let path = &self.files[file];
        path.strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    fn describe(&self, circle: &[usize], root: &Path) -> String {
        let mut out = format!("circle of {} files:", circle.len());
        for ((from, to), names) in &self.edges {
            if circle.contains(from) && circle.contains(to) {
                let names: Vec<_> = names.iter().map(String::as_str).collect();
                let (a, b) = (self.name(*from, root), self.name(*to, root));
                out += &format!("\n  {a} -> {b}: {}", names.join(", "));
            }
        }
        out
    }
}

/// Finds the `mod` items of a file: files to load go to `children`, inline modules to `inline`.
fn collect_mods(
    items: &[syn::Item],
    dir: &Path,
    module: &[String],
    children: &mut Vec<(Vec<String>, PathBuf)>,
    inline: &mut dyn FnMut(Vec<String>),
) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if is_cfg_test(&m.attrs) {
            continue;
        }
        let mut path = module.to_vec();
        path.push(m.ident.to_string());
        match &m.content {
            Some((_, items)) => {
                inline(path.clone());
                collect_mods(
                    items,
                    &dir.join(m.ident.to_string()),
                    &path,
                    children,
                    inline,
                );
            }
            None => {
                let name = m.ident.to_string();
                let flat = dir.join(format!("{name}.rs"));
                let file = if flat.is_file() {
                    flat
                } else {
                    dir.join(&name).join("mod.rs")
                };
                children.push((path, file));
            }
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

/// Resolves `path`, written in module `at`, to an absolute module path, or `None` for a path
/// outside the crate.
fn resolve(
    path: &[String],
    at: &[String],
    aliases: &BTreeMap<String, Vec<String>>,
    children: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut base, rest) = match first.as_str() {
        "crate" | "$crate" => (Vec::new(), &path[1..]),
        "self" => (at.to_vec(), &path[1..]),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = at[..at.len().checked_sub(ups)?].to_vec();
            (base, &path[ups..])
        }
        name if children.contains(name) => (at.to_vec(), path),
        name => {
            let target = aliases.get(name)?;
            (target.clone(), &path[1..])
        }
    };
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// The paths a file names, each with the (inline) module it is written in, and its `use`
/// bindings resolved to absolute paths.
struct References {
    module: Vec<String>,
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// Local name → absolute path, from the file's `use` items whose path starts in the crate.
    aliases: BTreeMap<String, Vec<String>>,
}

impl References {
    fn new(module: Vec<String>) -> Self {
        References {
            module,
            paths: Vec::new(),
            aliases: BTreeMap::new(),
        }
    }

    fn push(&mut self, path: Vec<String>) {
        self.paths.push((path, self.module.clone()));
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.bind(prefix, n.ident.to_string(), &n.ident),
            syn::UseTree::Rename(r) => self.bind(prefix, r.rename.to_string(), &r.ident),
            syn::UseTree::Glob(_) => self.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn bind(&mut self, prefix: &[String], local: String, ident: &syn::Ident) {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        let local = if local == "self" {
            prefix.last().cloned().unwrap_or_default()
        } else {
            local
        };
        if let Some(abs) = resolve(&path, &self.module, &BTreeMap::new(), &BTreeSet::new()) {
            self.aliases.insert(local, abs);
        }
        self.push(path);
    }

    /// The paths in a macro's tokens: `a::b::c` sequences, `$crate::` included.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut path: Vec<String> = Vec::new();
        let mut colons = 0;
        let mut dollar = false;
        for tree in tokens {
            match tree {
                TokenTree::Ident(ident) => {
                    if colons != 2 && path.len() > 1 {
                        self.push(std::mem::take(&mut path));
                    } else if colons != 2 {
                        path.clear();
                    }
                    let name = ident.to_string();
                    path.push(if dollar { format!("${name}") } else { name });
                    colons = 0;
                    dollar = false;
                }
                TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
                TokenTree::Punct(p) => {
                    dollar = p.as_char() == '$';
                    self.flush(&mut path);
                    colons = 0;
                }
                TokenTree::Group(g) => {
                    self.flush(&mut path);
                    colons = 0;
                    self.tokens(g.stream());
                }
                TokenTree::Literal(_) => {
                    self.flush(&mut path);
                    colons = 0;
                }
            }
        }
        self.flush(&mut path);
    }

    fn flush(&mut self, path: &mut Vec<String>) {
        if path.len() > 1 {
            self.push(std::mem::take(path));
        }
        path.clear();
    }
}

impl<'ast> Visit<'ast> for References {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_cfg_test(&m.attrs) {
            return;
        }
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_cfg_test(&u.attrs) {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 {
            self.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}

/// Tarjan's strongly connected components over the edge map's keys.
struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    /// The strongly connected sets of two nodes or more of the graph `0..n`, `edges`.
    fn components<T>(n: usize, edges: &BTreeMap<(usize, usize), T>) -> Vec<Vec<usize>> {
        let mut tarjan = Tarjan::new(n, edges);
        for v in 0..n {
            if tarjan.index[v].is_none() {
                tarjan.connect(v);
            }
        }
        tarjan.components
    }

    fn new<T>(n: usize, edges: &BTreeMap<(usize, usize), T>) -> Self {
        let mut next = vec![Vec::new(); n];
        for (from, to) in edges.keys() {
            next[*from].push(*to);
        }
        Tarjan {
            next,
            index: vec![None; n],
            low: vec![0; n],
            stack: Vec::new(),
            on_stack: vec![false; n],
            counter: 0,
            components: Vec::new(),
        }
    }

    fn connect(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in self.next[v].clone() {
            match self.index[w] {
                None => {
                    self.connect(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                self.components.push(component);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph_of(files: &[(&str, &str)]) -> (tempdir::Dir, Graph) {
        let dir = tempdir::Dir::new();
        for (path, text) in files {
            let path = dir.0.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let graph = Graph::of_crate(&dir.0).unwrap();
        (dir, graph)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let n = N.fetch_add(1, Ordering::Relaxed);
                let path =
                    std::env::temp_dir().join(format!("xtask-imports-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&path);
                Dir(path)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn finds_a_circle_through_use_super_and_an_inline_path() {
        let (_dir, graph) = graph_of(&[
            ("src/lib.rs", "mod a; mod b; mod c;"),
            ("src/a.rs", "use super::b::B; pub struct A;"),
            ("src/b.rs", "pub struct B(crate::c::C);"),
            ("src/c.rs", "pub struct C; fn f() { let _ = super::a::A; }"),
        ]);
        let circles = graph.circles();
        assert_eq!(circles, vec![vec![1, 2, 3]]);
        let text = graph.describe(&circles[0], Path::new(""));
        assert!(
            text.contains("src/c.rs -> ") && text.contains("a.rs: A"),
            "{text}"
        );
    }

    #[test]
    fn follows_aliases_macros_and_nested_folders_but_not_tests() {
        let (_dir, graph) = graph_of(&[
            ("src/lib.rs", "pub mod cpu; mod base;"),
            (
                "src/base.rs",
                "#[cfg(test)] mod tests { use crate::cpu::run; }",
            ),
            ("src/cpu/mod.rs", "pub mod run; mod check;"),
            (
                "src/cpu/run.rs",
                "use super::check; fn f() { check::lane::go(); } \
                 macro_rules! m { () => { $crate::base::X } }",
            ),
            ("src/cpu/check/mod.rs", "pub mod lane;"),
            (
                "src/cpu/check/lane.rs",
                "pub fn go() { format!(\"{}\", crate::cpu::run::Y); }",
            ),
        ]);
        let names: Vec<_> = graph
            .edges
            .iter()
            .map(|((a, b), n)| {
                let f = |i: usize| graph.files[i].file_name().unwrap().to_str().unwrap();
                format!(
                    "{}>{}:{}",
                    f(*a),
                    f(*b),
                    n.iter().cloned().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                "run.rs>mod.rs:*",
                "run.rs>lane.rs:go",
                "run.rs>base.rs:X",
                "lane.rs>run.rs:Y"
            ]
        );
        assert_eq!(graph.circles(), vec![vec![2, 4]]);
    }

    #[test]
    fn finds_a_circle_between_a_folder_and_a_file() {
        // No two files import each other, but the folder `check` and `exec` do.
        let (_dir, graph) = graph_of(&[
            ("src/lib.rs", "mod check; mod exec;"),
            ("src/check/mod.rs", "mod run; pub struct Lane;"),
            ("src/check/run.rs", "fn f() { crate::exec::go(); }"),
            (
                "src/exec.rs",
                "pub fn go() {} fn g(_: &crate::check::Lane) {}",
            ),
        ]);
        assert!(graph.circles().is_empty());
        let found = graph.folder_circles(Path::new(""));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("circle of modules check, exec:")
                || found[0].starts_with("circle of modules exec, check:"),
            "{}",
            found[0]
        );
        assert!(
            found[0].contains("run.rs -> ") && found[0].contains("exec.rs -> "),
            "{}",
            found[0]
        );
    }

    #[test]
    fn the_workspace_has_no_circle() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        if let Err(circles) = check(root) {
            panic!("{circles}");
        }
    }
}
