//! A new user's crate, made outside the workspace from the README's own snippets, built with its
//! build script and run; and the mistakes a new user makes in device code, each of which must
//! fail the build with rustc's error at the user's file and line, near the top, without a panic.
//!
//! The crates live in the system's temporary directory (a crate under this workspace would
//! belong to it) and build in `<target>/own-crate`, sharing the workspace's device builds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const README: &str = include_str!("../README.md");

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The README's fenced blocks: each one's info string (`rust src/main.rs`) and text.
fn readme_blocks() -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in README.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some("")) => blocks.extend(open.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The text of the README's block whose info string is `info`.
fn readme_block(info: &str) -> String {
    readme_blocks()
        .into_iter()
        .find(|(i, _)| i == info)
        .unwrap_or_else(|| panic!("the README has no ```{info} block"))
        .1
}

/// A crate named `name` in the temporary directory, from the README's manifest and build script,
/// with the workspace where the README says the repository is cloned.
fn new_crate(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-suite-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let manifest = readme_block("toml Cargo.toml")
        .replace("../kernels/", &format!("{}/", workspace().display()))
        .replace("name = \"saxpy\"", &format!("name = \"{name}\""));
    write(&dir, "Cargo.toml", &manifest);
    write(&dir, "build.rs", &readme_block("rust build.rs"));
    // The workspace's lock: the same versions, resolved without the network.
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Cargo in `dir`, with none of the variables the test's own cargo set but the toolchain's.
fn cargo(dir: &Path, args: &[&str]) -> Output {
    cargo_command(dir, args).output().unwrap()
}

/// The command [`cargo`] runs.
fn cargo_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let cargo_set = key.starts_with("CARGO_") && key != "CARGO_HOME";
        if cargo_set
            || [
                "RUSTFLAGS",
                "RUSTDOCFLAGS",
                "KERNEL_DEVICE",
                "KERNEL_BUILD",
                "KERNEL_PTX_ARCH",
            ]
            .contains(&&*key)
        {
            cmd.env_remove(&*key);
        }
    }
    cmd.current_dir(dir)
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir().join("own-crate"))
        .env(
            "KERNEL_DEVICE_TARGET_DIR",
            target_dir().join("kernel-device"),
        );
    cmd
}

fn succeeded(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A kernel in the crate's tests: its own module, where the crate has PTX.
const A_TEST: &str = r#"use kernel_runtime::prelude::*;

#[kernel]
fn fill(x: &mut [u32]) {
    let i = grid(1);
    if i < x.len() {
        x[i] = i as u32;
    }
}

#[test]
fn a_kernel_in_a_test() {
    let dev = Device::default();
    let mut x = dev.zeros::<u32, _>(100).unwrap();
    fill.launch(1, 128, &mut x).unwrap();
    assert_eq!(x.to_vec().unwrap()[99], 99);
    if std::env::var("KERNEL_REQUIRE_PTX").as_deref() == Ok("1") {
        assert!(fill.ptx().unwrap().contains(".entry fill("));
    }
}
"#;

#[test]
fn the_readme_quick_start_builds_and_runs() {
    let dir = new_crate("quick-start");
    write(&dir, "src/main.rs", &readme_block("rust src/main.rs"));
    // The README's first program, as an example of the crate.
    write(&dir, "examples/first.rs", &readme_block("rust"));
    write(&dir, "tests/in_a_test.rs", A_TEST);

    let stdout = succeeded(&cargo(&dir, &["run", "--quiet"]), "cargo run");
    assert!(
        stdout.starts_with("y[..4] = [2, 3, 4, 2] ("),
        "the README says `cargo run` prints `y[..4] = [2, 3, 4, 2] (Cpu)`:\n{stdout}"
    );
    succeeded(
        &cargo(&dir, &["run", "--quiet", "--example", "first"]),
        "the README's first program",
    );
    succeeded(&cargo(&dir, &["test", "--quiet"]), "a kernel in tests/");
}

/// The program each mistake is made in: `MISTAKE` is replaced by one line.
const KERNEL: &str = "use kernel_runtime::prelude::*;

#[kernel]
pub fn add(a: &[f32], c: &mut [f32]) {
    let i = grid(1);
    if i < c.len() {
        c[i] = a[i];
        MISTAKE
    }
}

fn helper(x: f32) -> f32 {
    x * 2.0
}

fn main() {
    println!(\"{}\", helper(1.0));
}
";

#[test]
fn device_build_errors_read_as_compiler_errors() {
    let dir = new_crate("mistakes");
    let line = KERNEL.lines().position(|l| l.contains("MISTAKE")).unwrap() + 1;
    let mistakes = [
        (
            "println!(\"{}\", c[i]);",
            "`println!` is not available in kernels",
        ),
        ("let v: Vec<f32> = Vec::new();", "`Vec` needs a heap"),
        (
            "let s = std::fs::read_to_string(\"x\");",
            "`std::` is not available",
        ),
        ("c[i] = helper(a[i]);", "mark it `#[device]`"),
        ("let x: u32 = a[i];", "mismatched types"),
        (
            "c[i] = Complex32::new(a[i], 0.0).exp().re;",
            "kernels compute it as `cmath::exp(z)`",
        ),
        // The README's build script builds for sm_70, which has no `mma.sync.m16n8k16`.
        (
            "{ use kernel_runtime::wmma::*; let z = Accumulator::<M16N8K16>::new(); let mut d = z; \
             mma_sync(&mut d, &MatrixA::<M16N8K16, f16>::new(), &MatrixB::new(), &z); }",
            "mma_sync needs a GPU of sm_80 or later",
        ),
    ];
    for (mistake, says) in mistakes {
        write(&dir, "src/main.rs", &KERNEL.replace("MISTAKE", mistake));
        let out = cargo(&dir, &["build", "--quiet"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "`{mistake}` built:\n{stderr}");
        let errors: Vec<&str> = stderr
            .lines()
            .skip_while(|l| !l.starts_with("error"))
            .collect();
        let location = format!("src/main.rs:{line}:");
        assert!(
            errors.iter().take(5).any(|l| l.contains(&location)),
            "`{mistake}`: {location} is not within the first 5 lines of the errors:\n{stderr}"
        );
        assert!(
            stderr.contains(says),
            "`{mistake}` does not say {says:?}:\n{stderr}"
        );
        for noise in [
            "panicked",
            "stack backtrace",
            "RUST_BACKTRACE",
            "multiple build targets",
        ] {
            assert!(
                !stderr.contains(noise),
                "`{mistake}`: {noise:?} in\n{stderr}"
            );
        }
    }
}

#[test]
fn a_kernel_in_a_crate_without_the_build_step_is_refused() {
    let dir = new_crate("no-build-script");
    std::fs::remove_file(dir.join("build.rs")).unwrap();
    write(&dir, "src/main.rs", &readme_block("rust src/main.rs"));
    let out = cargo(&dir, &["build", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "built without a build script:\n{stderr}"
    );
    assert!(
        stderr.contains("`#[kernel]` needs the crate's build script")
            && stderr.contains("kernel_build::build()")
            && stderr.contains("src/main.rs:6:8"),
        "{stderr}"
    );
}

/// What the crate in `dir` prints (its kernel's PTX) run with `variable=value`.
fn printed_with(dir: &Path, variable: &str, value: &str) -> String {
    let mut run = cargo_command(dir, &["run", "--quiet"]);
    let out = run.env(variable, value).output().unwrap();
    succeeded(&out, &format!("cargo run with {variable}={value}"))
}

/// A program that prints its kernel's PTX.
const PRINTS_ITS_PTX: &str = r#"use kernel_runtime::prelude::*;

#[kernel]
fn fill(x: &mut [u32]) {
    let i = grid(1);
    if i < x.len() {
        x[i] = i as u32 * 3;
    }
}

fn main() {
    print!("{}", fill.ptx().unwrap_or(""));
}
"#;

#[test]
fn line_info_names_the_users_own_file_and_lines() {
    let dir = new_crate("line-info");
    write(&dir, "src/main.rs", PRINTS_ITS_PTX);
    let ptx = printed_with(&dir, "KERNEL_LINEINFO", "1");
    if ptx.is_empty() {
        assert_ne!(std::env::var("KERNEL_REQUIRE_PTX").as_deref(), Ok("1"));
        return;
    }
    // `.file 2 "/tmp/.../src/main.rs"`: the user's file, not the device crate's mirror of it.
    let main = format!("\"{}\"", dir.join("src/main.rs").display());
    let file = ptx
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".file"))
        .find_map(|rest| {
            let (n, path) = rest.trim().split_once(char::is_whitespace)?;
            path.trim().starts_with(&main).then(|| n.to_string())
        })
        .unwrap_or_else(|| panic!("no `.file` names {main}:\n{ptx}"));
    assert!(!ptx.contains("kernel-device/src-"), "{ptx}");
    // `.loc 2 8 14`: the store's own line.
    let line = PRINTS_ITS_PTX
        .lines()
        .position(|l| l.contains("x[i] = "))
        .unwrap()
        + 1;
    let at_line = |l: &str| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.len() >= 3 && words[0] == ".loc" && words[1] == file && words[2] == line.to_string()
    };
    assert!(
        ptx.lines().any(at_line),
        ".loc {file} {line} is missing:\n{ptx}"
    );
    // And ptxas keeps them.
    if let Some(ptxas) = std::env::var_os("KERNEL_PTXAS") {
        let (input, cubin) = (dir.join("fill.ptx"), dir.join("fill.cubin"));
        std::fs::write(&input, &ptx).unwrap();
        let mut ptxas = Command::new(ptxas);
        ptxas.args(["-arch=sm_70", "-lineinfo", "-o"]).arg(&cubin);
        succeeded(&ptxas.arg(&input).output().unwrap(), "ptxas -lineinfo");
    }
}

/// A program that prints its kernel's PTX: `f32` division, square root and math functions.
const FLOAT_MATH: &str = r#"use kernel_runtime::prelude::*;

#[kernel]
fn shade(x: &[f32], out: &mut [f32]) {
    let i = grid(1);
    if i < x.len() {
        out[i] = x[i].exp() * x[i].sin() / (1.0 + x[i] * x[i]).sqrt();
    }
}

fn main() {
    print!("{}", shade.ptx().unwrap_or(""));
}
"#;

#[test]
fn fast_math_makes_f32_division_square_roots_and_functions_approximate() {
    let dir = new_crate("fast-math");
    write(&dir, "src/main.rs", FLOAT_MATH);
    let ptx_with = |fast: &str| printed_with(&dir, "KERNEL_FAST_MATH", fast);
    let fast = ptx_with("1");
    if fast.is_empty() {
        assert_ne!(std::env::var("KERNEL_REQUIRE_PTX").as_deref(), Ok("1"));
        return;
    }
    for instr in [
        "div.approx.f32",
        "sqrt.approx.f32",
        "ex2.approx",
        "sin.approx",
    ] {
        assert!(fast.contains(instr), "no `{instr}` with fast math:\n{fast}");
    }
    // Without it, Rust's correctly rounded division and square root, and no approximation.
    let precise = ptx_with("0");
    for instr in ["div.rn.f32", "sqrt.rn.f32"] {
        assert!(
            precise.contains(instr),
            "no `{instr}` without fast math:\n{precise}"
        );
    }
    assert!(!precise.contains(".approx"), "{precise}");
}
