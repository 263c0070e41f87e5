//! Builds the fixture crates under `tests/fixtures/` to PTX through the public API, against a
//! stub runtime. Each test is skipped (with a message) when no nvptx64 toolchain is found,
//! unless `KERNEL_REQUIRE_PTX=1`, which makes a missing toolchain a failure.

use std::fs;
use std::path::{Path, PathBuf};

use kernel_build::{Builder, Error};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Shared by the tests (and kept between runs), so that `core` is built for nvptx64 once: the
/// workspace's own device directory where the workspace's build made one, which has built it.
fn device_root() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let workspace = tmp.parent().unwrap().join("kernel-device");
    if workspace.is_dir() {
        workspace
    } else {
        tmp.join("kernel-device")
    }
}

fn builder(fixture: &str) -> Builder {
    Builder::new()
        .manifest_dir(fixtures().join(fixture))
        .package_name(format!("fixture-{fixture}"))
        .out_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("out-{fixture}")))
        .target_dir(device_root())
        .runtime_path(fixtures().join("stub-runtime"))
        .cargo_directives(false)
}

/// `file` as the diagnostics name it: relative to the workspace's root, as rustc's own are.
fn as_shown(file: &Path) -> &Path {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    file.strip_prefix(root).unwrap()
}

fn skip() {
    println!("skipped: no toolchain that can compile for nvptx64-nvidia-cuda was found");
}

fn line_of(file: &Path, needle: &str) -> usize {
    let text = fs::read_to_string(file).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn builds_ptx_for_the_kernels_only() {
    let ptx_path = match builder("add").build() {
        Ok(Some(path)) => path,
        Ok(None) => return skip(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(ptx_path.file_name().unwrap(), "kernel_ptx.txt");
    let ptx = fs::read_to_string(&ptx_path).unwrap();
    assert!(ptx.contains(".target sm_70"), "{ptx}");
    assert!(ptx.contains(".entry add("), "{ptx}");

    // The generated crate mirrors the fixture line for line, without the host code.
    let generated = device_root().join("src-fixture_add");
    let lib = fs::read_to_string(generated.join("src/lib.rs")).unwrap();
    let original = fs::read_to_string(fixtures().join("add/src/lib.rs")).unwrap();
    assert_eq!(lib.lines().count(), original.lines().count());
    assert!(!lib.contains("HashMap"), "{lib}");
    assert!(!lib.contains("mod host"), "{lib}");
    let kernel_line = line_of(&fixtures().join("add/src/lib.rs"), "let i = thread_idx()");
    assert_eq!(
        lib.lines().nth(kernel_line - 1),
        original.lines().nth(kernel_line - 1)
    );
    let math = fs::read_to_string(generated.join("src/math.rs")).unwrap();
    assert!(math.contains("pub fn scaled_sum"), "{math}");
    assert!(!math.contains("fmt"), "{math}");
    assert!(!generated.join("src/host.rs").exists());

    // A second build rewrites nothing and gives the same PTX.
    let modified = fs::metadata(generated.join("src/lib.rs"))
        .unwrap()
        .modified()
        .unwrap();
    let again = builder("add").build().unwrap().unwrap();
    assert_eq!(fs::read_to_string(again).unwrap(), ptx);
    let modified_again = fs::metadata(generated.join("src/lib.rs"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(modified, modified_again);
}

#[test]
fn a_device_only_error_names_the_users_file_and_line() {
    let fixture_lib = fixtures().join("device-error/src/lib.rs");
    let line = line_of(&fixture_lib, "std does not exist on the device");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("out-device-error");
    // A stale PTX from an earlier build must not survive a failed one.
    fs::create_dir_all(&out_dir).unwrap();
    fs::write(out_dir.join("kernel_ptx.txt"), "stale").unwrap();

    let diagnostics = match builder("device-error").build() {
        Err(Error::DeviceCompile { diagnostics }) => diagnostics,
        Ok(None) => return skip(),
        Ok(Some(_)) => panic!("a kernel using std compiled for the device"),
        Err(e) => panic!("unexpected error: {e}"),
    };
    println!("{diagnostics}");
    let location = format!("{}:{line}:", as_shown(&fixture_lib).display());
    assert!(
        diagnostics.contains(&location),
        "diagnostics do not name {location}:\n{diagnostics}"
    );
    assert!(diagnostics.contains("std"), "{diagnostics}");
    let generated = device_root().join("src-fixture_device_error");
    assert!(
        !diagnostics.contains(&generated.join("src/lib.rs").display().to_string()),
        "{diagnostics}"
    );
    assert!(!out_dir.join("kernel_ptx.txt").exists());
}

/// Without a device toolchain the device crate is still checked, for the host, as `no_std`:
/// what only the host has fails there, at the user's line.
#[test]
fn host_only_code_is_refused_without_a_toolchain() {
    let fixture_lib = fixtures().join("host-only/src/lib.rs");
    let diagnostics = match builder("host-only").check_only().build() {
        Err(Error::DeviceCompile { diagnostics }) => diagnostics,
        other => panic!("host-only code passed the check: {other:?}"),
    };
    println!("{diagnostics}");
    // The static is refused where it is declared.
    for needle in [
        "host: a std function through `use`",
        "host: a function that is not #[device]",
        "static SEEN",
    ] {
        let location = format!(
            "{}:{}:",
            as_shown(&fixture_lib).display(),
            line_of(&fixture_lib, needle)
        );
        assert!(
            diagnostics.contains(&location),
            "diagnostics do not name {location}:\n{diagnostics}"
        );
    }
}

/// The reference kernels, with the real runtime and macros, pass the host check: it refuses
/// only what the device cannot build.
#[test]
fn the_reference_kernels_pass_the_host_check() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let checked = Builder::new()
        .manifest_dir(workspace.join("gpu-kernels"))
        .package_name("gpu-kernels-checked")
        .out_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join("out-gpu-kernels-checked"))
        .target_dir(device_root())
        .runtime_path(workspace.join("kernel-runtime"))
        .cargo_directives(false)
        .check_only()
        .build();
    assert!(matches!(checked, Ok(None)), "{checked:?}");
}

#[test]
fn without_a_runtime_path_the_error_says_what_to_do() {
    if std::env::var_os("DEP_KERNEL_RUNTIME_MANIFEST_DIR").is_some() {
        return;
    }
    let tc = kernel_build::Toolchain {
        rustc: "rustc".into(),
        cargo: "cargo".into(),
        build_std: false,
        llvm: None,
        origin: "test".into(),
    };
    let err = Builder::new()
        .manifest_dir(fixtures().join("add"))
        .package_name("fixture-add")
        .out_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join("out-no-runtime"))
        .target_dir(device_root())
        .toolchain(tc)
        .cargo_directives(false)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::MissingRuntimePath), "{err}");
    assert!(err.to_string().contains("runtime_path"), "{err}");
}
