//! `cargo xtask ptx`: builds the kernels to PTX and reports, per kernel and architecture, what
//! ptxas makes of them: registers, spills, stack frame and static shared memory.
//!
//! Every crate with kernels writes its library's PTX module to `kernel_ptx.txt` in its
//! build-script `OUT_DIR`, and each binary's, example's, test's or bench's with kernels of its
//! own to `kernel_ptx.<kind>-<name>.txt` beside it; this command takes the newest such directory
//! per package and reports each of its modules. An empty module is a target without kernels.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use crate::provision;
use crate::ptxas_info::{self, Report};
use crate::sass;
use crate::util::{self, Context, Result};

/// The architectures reported when none is given.
const DEFAULT_ARCHS: [&str; 3] = ["sm_70", "sm_80", "sm_90"];

/// The file each kernel crate's build script writes into its `OUT_DIR`.
const PTX_FILE: &str = "kernel_ptx.txt";

/// Builds the kernels and reports what ptxas makes of them
///
/// Builds gpu-kernels and hopper-kernels with KERNEL_REQUIRE_PTX=1, assembles the PTX of every
/// crate with kernels (and its arch-specific variants) using ptxas and prints registers, spill
/// stores/loads, stack frame and static shared memory per kernel; with --sass, its machine
/// code's instructions by kind too.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// An architecture to assemble for (repeatable)
    #[arg(long = "arch", value_name = "sm_XX", default_values = DEFAULT_ARCHS)]
    archs: Vec<String>,
    /// Use the PTX already built instead of building first
    #[arg(long)]
    no_build: bool,
    /// Also count each kernel's machine code (SASS) by kind, its listing written beside the
    /// cubin (fetches NVIDIA's cuobjdump and nvdisasm)
    #[arg(long)]
    sass: bool,
    /// With --sass, count only these kernels (repeatable)
    #[arg(long = "kernel", value_name = "NAME")]
    kernels: Vec<String>,
    /// With --sass and --kernel, list each named kernel's basic blocks that load, store or
    /// multiply on tensor cores: a stencil's interior tile is one block
    #[arg(long)]
    blocks: bool,
}

/// Runs `cargo xtask ptx`.
pub fn run(options: Args) -> Result {
    let mut ctx = Context::new();
    let ptxas = provision::ptxas(&ctx.root)?;
    let cuobjdump = if options.sass {
        Some(provision::cuobjdump(&ctx.root)?)
    } else {
        None
    };
    ctx.set_env("KERNEL_PTXAS", &ptxas);
    ctx.set_env("KERNEL_REQUIRE_PTX", "1");

    if !options.no_build {
        util::run_status(&mut ctx.cargo(["build", "-p", "gpu-kernels", "-p", "hopper-kernels"]))?;
    }
    let build_dir = util::target_dir(&ctx.root).join("debug").join("build");
    let modules = find_ptx_modules(&build_dir);
    if modules.is_empty() {
        return Err(format!(
            "no {PTX_FILE} under {}/*/out: no crate produced PTX",
            build_dir.display()
        ));
    }

    let scratch = util::target_dir(&ctx.root).join("xtask").join("ptx");
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let tools = Tools {
        ptxas: &ptxas,
        cuobjdump: cuobjdump.as_deref(),
        scratch: &scratch,
    };
    let mut failures = Vec::new();
    for (package, file) in &modules {
        let resolved = match resolve_ptx(file) {
            Ok(Some(resolved)) => resolved,
            Ok(None) => {
                println!();
                println!("{package}: no kernels");
                continue;
            }
            Err(message) => {
                eprintln!("{package}: {message}");
                failures.push(format!("{package} (no PTX)"));
                continue;
            }
        };
        let ptx = match own_module(&resolved, &scratch, package) {
            Ok(ptx) => ptx,
            Err(message) => {
                eprintln!("{package}: {message}");
                failures.push(format!("{package} (no PTX)"));
                continue;
            }
        };
        println!();
        println!("{package}: {}", ptx.path.display());
        if ptx.relocatable {
            println!("  (the crate's own module, assembled with -c: the device code linked into it is not)");
        }
        failures.extend(tools.report(package, &ptx, &options.archs, &options));
        for (arch, module) in variants(&resolved, &scratch, package).unwrap_or_default() {
            println!();
            println!("{package}, its {arch} variant: {}", module.path.display());
            let label = format!("{package}-{arch}-variant");
            failures.extend(tools.report(&label, &module, &[arch], &options));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("no complete report for: {}", failures.join(", ")))
    }
}

/// What assembles and lists the modules, and where their outputs go.
struct Tools<'a> {
    ptxas: &'a Path,
    cuobjdump: Option<&'a Path>,
    scratch: &'a Path,
}

impl Tools<'_> {
    /// Assembles `ptx` (`label`'s) for each of `archs` from its target on and prints what
    /// ptxas, and with `--sass` the machine code, say of it: the failures.
    fn report(&self, label: &str, ptx: &Module, archs: &[String], options: &Args) -> Vec<String> {
        let (mut reports, mut counts, mut failures) = (Vec::new(), Vec::new(), Vec::new());
        let target = module_target(&ptx.path);
        for arch in archs {
            if let (Some(t), Some(a)) = (target, sm_number(arch)) {
                if a < t {
                    println!("  {arch}: skipped, the module is built for sm_{t}");
                    continue;
                }
            }
            let output = self
                .scratch
                .join(format!("{}-{arch}.cubin", file_stem(label)));
            match assemble(self.ptxas, ptx, arch, &output) {
                Ok(report) => reports.push(report),
                Err(message) => {
                    eprintln!("{message}");
                    failures.push(format!("{label} for {arch}"));
                    continue;
                }
            }
            if let Some(cuobjdump) = self.cuobjdump {
                let listing = output.with_extension("sass");
                match sass::count(cuobjdump, &output, arch, &listing) {
                    Ok(c) => counts.extend(c),
                    Err(message) => {
                        eprintln!("{message}");
                        failures.push(format!("{label}'s SASS for {arch}"));
                    }
                }
            }
        }
        print!("{}", format_table(&reports));
        if let Some(table) = sass::format_table(&counts, &options.kernels) {
            println!(
                "  machine code (listings: {}/{}-ARCH.sass):",
                self.scratch.display(),
                file_stem(label)
            );
            print!("{table}");
        }
        if options.blocks {
            print!("{}", sass::format_blocks(&counts, &options.kernels));
        }
        failures
    }
}

/// The modules in the newest build directory per package
/// (`build_dir/<package>-<hash>/out/`, by its `kernel_ptx.txt`), each named by its package, and
/// a target's by its key too: `kernel-suite (test-stencil)`.
fn find_ptx_modules(build_dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut newest: BTreeMap<String, (SystemTime, PathBuf)> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(build_dir) else {
        return BTreeMap::new();
    };
    for entry in entries.flatten() {
        let dir_name = entry.file_name().to_string_lossy().into_owned();
        let out = entry.path().join("out");
        let Ok(modified) = out.join(PTX_FILE).metadata().and_then(|m| m.modified()) else {
            continue;
        };
        let package = package_of_build_dir(&dir_name).to_string();
        match newest.get(&package) {
            Some((time, _)) if *time >= modified => {}
            _ => {
                newest.insert(package, (modified, out));
            }
        }
    }
    let mut modules = BTreeMap::new();
    for (package, (_, out)) in newest {
        for file in std::fs::read_dir(&out).into_iter().flatten().flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if let Some(label) = module_label(&package, &name) {
                modules.insert(label, file.path());
            }
        }
    }
    modules
}

/// The name a module file `name` of `package` is reported by: the package for the library's,
/// `package (key)` for a target's (`kernel_build::module_key`); `None` for other files.
fn module_label(package: &str, name: &str) -> Option<String> {
    if name == PTX_FILE {
        return Some(package.to_string());
    }
    kernel_build::module_key(name).map(|key| format!("{package} ({key})"))
}

/// A module's label as a file name: `kernel-suite (test-stencil)` → `kernel-suite-test-stencil`.
fn file_stem(label: &str) -> String {
    label.replace(" (", "-").replace(
        |c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "",
    )
}

/// `gpu-kernels-0123abcd4567ef89` → `gpu-kernels` (the part before the last `-<hex hash>`).
fn package_of_build_dir(dir_name: &str) -> &str {
    match dir_name.rsplit_once('-') {
        Some((package, hash))
            if !package.is_empty()
                && !hash.is_empty()
                && hash.chars().all(|c| c.is_ascii_hexdigit()) =>
        {
            package
        }
        _ => dir_name,
    }
}

/// The PTX module named by `file`: the file itself when it holds PTX, or the file whose path it
/// holds on its first line; `None` where it is empty, its target without kernels (without a
/// device toolchain the build writes no file at all).
fn resolve_ptx(file: &Path) -> Result<Option<PathBuf>> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if looks_like_ptx(&text) {
        return Ok(Some(file.to_path_buf()));
    }
    if text.trim().is_empty() {
        return Ok(None);
    }
    let first = text.lines().next().unwrap_or("").trim();
    if !first.is_empty() && Path::new(first).is_file() {
        return Ok(Some(PathBuf::from(first)));
    }
    Err(format!(
        "{} holds neither PTX nor the path of a PTX file (was the device toolchain missing?)",
        file.display()
    ))
}

/// A PTX module to assemble: a file, and whether it calls device code linked in from elsewhere
/// (then assembled with `-c`, its calls left for the link).
struct Module {
    path: PathBuf,
    relocatable: bool,
}

/// The crate's own module in the PTX file `ptx`: the file itself, or, where the build appended
/// the device code it links (`kernel_build::LINK_SECTION`), cubins (`CUBIN_SECTION`) or
/// variants (`VARIANT_SECTION`), what precedes them, written to `scratch` as `<package>.ptx`.
fn own_module(ptx: &Path, scratch: &Path, package: &str) -> Result<Module> {
    let text =
        std::fs::read_to_string(ptx).map_err(|e| format!("cannot read {}: {e}", ptx.display()))?;
    let end = [
        kernel_build::LINK_SECTION,
        kernel_build::CUBIN_SECTION,
        kernel_build::VARIANT_SECTION,
    ]
    .iter()
    .filter_map(|section| text.find(section))
    .min();
    let Some(end) = end else {
        return Ok(Module {
            path: ptx.to_path_buf(),
            relocatable: false,
        });
    };
    let path = scratch.join(format!("{}.ptx", file_stem(package)));
    std::fs::write(&path, &text[..end])
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Module {
        path,
        relocatable: text[end..].contains(kernel_build::LINK_SECTION),
    })
}

/// The architecture-specific variants in the PTX file `ptx` (`kernel_build::VARIANT_SECTION`
/// lines), each decoded and written to `scratch` as `<package>-<arch>.ptx`.
fn variants(ptx: &Path, scratch: &Path, package: &str) -> Result<Vec<(String, Module)>> {
    use base64::Engine;
    let text =
        std::fs::read_to_string(ptx).map_err(|e| format!("cannot read {}: {e}", ptx.display()))?;
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(kernel_build::VARIANT_SECTION) else {
            continue;
        };
        let Some((arch, encoded)) = rest.split_once(' ') else {
            continue;
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| format!("{package}'s {arch} variant is not base64: {e}"))?;
        let path = scratch.join(format!("{}-{arch}.ptx", file_stem(package)));
        std::fs::write(&path, decoded)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let module = Module {
            path,
            relocatable: false,
        };
        found.push((arch.to_string(), module));
    }
    Ok(found)
}

/// Whether `text` is a PTX module (it has a `.version` or `.target` directive).
fn looks_like_ptx(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with(".version") || l.starts_with(".target")
    })
}

/// Runs `ptxas -arch=ARCH -v [-c] PTX -o OUTPUT` and parses its report.
fn assemble(ptxas: &Path, ptx: &Module, arch: &str, output: &Path) -> Result<Report> {
    let mut cmd = Command::new(ptxas);
    cmd.arg(format!("-arch={arch}")).arg("-v");
    if ptx.relocatable {
        cmd.arg("-c");
    }
    cmd.arg(&ptx.path)
        .arg("-o")
        .arg(output)
        .stdin(Stdio::null());
    let line = util::display_command(&cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("could not start `{line}`: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(format!("`{line}` failed ({}):\n{text}", out.status));
    }
    Ok(ptxas_info::parse(&text))
}

/// The number of the GPU a PTX module is built for (its `.target sm_90` line), where it says.
fn module_target(ptx: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(ptx).ok()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(".target"))?;
    let arch = line.split_whitespace().nth(1)?.trim_end_matches(',');
    sm_number(arch)
}

/// `sm_90a` → 90.
fn sm_number(arch: &str) -> Option<u32> {
    let digits: String = arch
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The table of one module: a row per kernel and architecture, then the non-entry functions
/// with a stack frame, then ptxas' warnings.
fn format_table(reports: &[Report]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut entries: Vec<_> = reports.iter().flat_map(|r| &r.entries).collect();
    // Kernels in name order, each with its architectures in the order given.
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for e in entries {
        rows.push(vec![
            e.name.clone(),
            e.arch.clone(),
            e.registers.map_or("?".into(), |r| r.to_string()),
            e.spill_stores.to_string(),
            e.spill_loads.to_string(),
            match e.cumulative_stack {
                Some(total) if total != e.stack_frame => format!("{} ({total})", e.stack_frame),
                _ => e.stack_frame.to_string(),
            },
            e.shared_bytes.to_string(),
            e.barriers.map_or("-".into(), |b| b.to_string()),
        ]);
    }
    let header = [
        "kernel",
        "arch",
        "registers",
        "spill st",
        "spill ld",
        "stack",
        "smem",
        "barriers",
    ]
    .map(String::from);
    let mut out = util::columns(&header, &rows);
    if rows.is_empty() {
        out.push_str("  (ptxas reported no entry functions)\n");
    }
    let mut functions: Vec<_> = reports
        .iter()
        .flat_map(|r| &r.functions)
        .filter(|f| f.stack_frame + f.spill_stores + f.spill_loads > 0)
        .collect();
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    functions.dedup();
    for f in functions {
        out.push_str(&format!(
            "  device function {}: {} bytes stack frame, {} bytes spill stores, {} bytes spill loads\n",
            f.name, f.stack_frame, f.spill_stores, f.spill_loads
        ));
    }
    for d in reports.iter().flat_map(|r| &r.diagnostics) {
        out.push_str(&format!("  {d}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_below_a_modules_target_are_known() {
        assert_eq!(sm_number("sm_90a"), Some(90));
        assert_eq!(sm_number("compute_70"), None);
        let dir = std::env::temp_dir().join(format!("xtask-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.ptx");
        std::fs::write(&file, ".version 7.0\n.target sm_80\n.address_size 64\n").unwrap();
        assert_eq!(module_target(&file), Some(80));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn package_names_from_build_dirs() {
        assert_eq!(
            package_of_build_dir("gpu-kernels-0123abcd4567ef89"),
            "gpu-kernels"
        );
        assert_eq!(package_of_build_dir("kernel-suite-ffff"), "kernel-suite");
        assert_eq!(package_of_build_dir("weird"), "weird");
        assert_eq!(package_of_build_dir("name-notahash"), "name-notahash");
    }

    #[test]
    fn parses_arch_options() {
        let o: Args = util::parse_args(&[]).unwrap();
        assert_eq!(o.archs, ["sm_70", "sm_80", "sm_90"]);
        assert!(!o.no_build);
        let o: Args = util::parse_args(&["--arch", "sm_86", "--arch=sm_89", "--no-build"]).unwrap();
        assert_eq!(o.archs, ["sm_86", "sm_89"]);
        assert!(o.no_build);
        assert!(util::parse_args::<Args>(&["--arch"]).is_err());
        assert!(util::parse_args::<Args>(&["--bogus"]).is_err());
    }

    #[test]
    fn finds_newest_module_per_package() {
        let dir = std::env::temp_dir().join(format!("xtask-ptx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for name in [
            "gpu-kernels-aaaa",
            "gpu-kernels-bbbb",
            "other-cccc",
            "nothing-dddd",
        ] {
            std::fs::create_dir_all(dir.join(name).join("out")).unwrap();
        }
        std::fs::write(dir.join("gpu-kernels-aaaa/out").join(PTX_FILE), "old").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("gpu-kernels-bbbb/out").join(PTX_FILE), "new").unwrap();
        std::fs::write(dir.join("other-cccc/out").join(PTX_FILE), "x").unwrap();
        let target = dir.join("other-cccc/out/kernel_ptx.test-it.txt");
        std::fs::write(target, "y").unwrap();
        std::fs::write(dir.join("other-cccc/out/notes.txt"), "z").unwrap();
        let found = find_ptx_modules(&dir);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found["gpu-kernels"].ends_with("gpu-kernels-bbbb/out/kernel_ptx.txt"));
        assert!(found.contains_key("other"));
        assert!(found["other (test-it)"].ends_with("other-cccc/out/kernel_ptx.test-it.txt"));
        assert!(
            resolve_ptx(&found["other (test-it)"]).is_err(),
            "neither PTX nor a path"
        );
        assert_eq!(file_stem("other (test-it)"), "other-test-it");
        std::fs::write(&found["other"], "\n").unwrap();
        assert_eq!(resolve_ptx(&found["other"]), Ok(None));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_crates_own_module_leaves_the_linked_code_out() {
        let dir = std::env::temp_dir().join(format!("xtask-ptx-own-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let own = ".version 6.3\n.target sm_70\n.extern .func add();\n";
        let linked = dir.join("linked.txt");
        let link = format!(
            "{own}\n{}ptx add.ptx\n.version 6.3\n",
            kernel_build::LINK_SECTION
        );
        std::fs::write(&linked, link).unwrap();
        let module = own_module(&linked, &dir, "foreign").unwrap();
        assert!(module.relocatable);
        assert_eq!(
            std::fs::read_to_string(&module.path).unwrap(),
            format!("{own}\n")
        );

        let plain = dir.join("plain.txt");
        std::fs::write(&plain, own).unwrap();
        let module = own_module(&plain, &dir, "plain").unwrap();
        assert!(!module.relocatable);
        assert_eq!(module.path, plain);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn variants_are_decoded_beside_the_module() {
        use base64::Engine;
        let dir = std::env::temp_dir().join(format!("xtask-ptx-variant-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let own = ".version 7.0\n.target sm_80\n";
        let variant = ".version 8.0\n.target sm_90a\n";
        let encoded = base64::engine::general_purpose::STANDARD.encode(variant);
        let file = dir.join("kernel_ptx.txt");
        let section = kernel_build::VARIANT_SECTION;
        std::fs::write(&file, format!("{own}{section}sm_90a {encoded}\n")).unwrap();
        let found = variants(&file, &dir, "gpu-kernels").unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "sm_90a");
        assert_eq!(std::fs::read_to_string(&found[0].1.path).unwrap(), variant);
        let module = own_module(&file, &dir, "gpu-kernels").unwrap();
        assert_eq!(std::fs::read_to_string(&module.path).unwrap(), own);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn recognises_ptx() {
        assert!(looks_like_ptx("//\n.version 8.0\n.target sm_70\n"));
        assert!(!looks_like_ptx("/some/path.s\n"));
    }

    #[test]
    fn formats_a_table() {
        let text = "\
ptxas info    : Compiling entry function 'smooth' for 'sm_70'
ptxas info    : Function properties for smooth
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'add' for 'sm_70'
ptxas info    : Function properties for add
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 6 registers, used 1 barriers, 256 bytes smem, 364 bytes cmem[0]
";
        let table = format_table(&[ptxas_info::parse(text)]);
        let lines: Vec<_> = table.lines().collect();
        assert!(lines[0].contains("kernel") && lines[0].contains("registers"));
        assert!(lines[1].starts_with("  add") && lines[1].contains("256"));
        assert!(lines[2].starts_with("  smooth") && lines[2].contains("24"));
        assert_eq!(lines.len(), 3);
        assert!(format_table(&[]).contains("no entry functions"));
    }
}
