//! What a failed device build says, made into what the user reads: rustc's own rendered errors,
//! at the user's files and lines, without the nested cargo's progress lines and warnings.
//!
//! The nested cargo runs with `--message-format=json`: each compiler message arrives as one
//! JSON object on stdout, with rustc's `rendered` text, so that the errors can be told from the
//! warnings (which the host build reports itself) without parsing rustc's human output.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The errors of a failed nested build, each as rustc rendered it, in order. Where rustc
/// reported none (cargo itself failed: a dependency that does not resolve, a missing library
/// source), cargo's stderr, less its progress lines.
pub(crate) fn errors(stdout: &str, stderr: &str) -> String {
    let rendered: Vec<String> = stdout.lines().filter_map(rendered_error).collect();
    if rendered.is_empty() {
        return without_progress(stderr);
    }
    let mut text = rendered.join("\n");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The rendered text of one line of cargo's JSON output, when it is a compiler error that names
/// something (not rustc's closing "aborting due to" count).
fn rendered_error(line: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("reason")?.as_str()? != "compiler-message" {
        return None;
    }
    let message = value.get("message")?;
    let level = message.get("level")?.as_str()?;
    let text = message.get("message")?.as_str()?;
    if !level.starts_with("error") || text.starts_with("aborting due to") {
        return None;
    }
    let rendered = message.get("rendered")?.as_str()?;
    Some(rendered.trim_end().to_string() + "\n")
}

/// Cargo's stderr without its progress lines (`Compiling`, `Updating`, `Locking`, ...: a
/// capitalised verb indented to the right) and its count of warnings.
fn without_progress(stderr: &str) -> String {
    let progress = |line: &str| {
        let trimmed = line.trim_start();
        line.starts_with("  ") && trimmed.starts_with(|c: char| c.is_ascii_uppercase())
            || (trimmed.starts_with("warning: `") && trimmed.contains(" generated "))
    };
    let mut out = String::with_capacity(stderr.len());
    for line in stderr.lines().filter(|l| !progress(l)) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `text` with a help line under each "cannot find function `f`" error where `f` is one of the
/// crate's host functions: rustc knows only that the device crate lacks it, the build knows why.
///
/// A complex method that `num_complex` has only with a float library (`z.exp()`) gets the
/// `cmath` function to call instead.
pub(crate) fn with_device_hints(text: &str, host_functions: &HashSet<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending: Option<String> = None;
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            push_hint(&mut out, pending.take());
        } else if let Some(name) = missing_function(line) {
            push_hint(&mut out, pending.take());
            pending = host_functions.contains(name).then(|| {
                format!("`{name}` is a host function: mark it `#[device]` to call it from kernels")
            });
        } else if let Some(function) = cmath_for_missing_method(line) {
            push_hint(&mut out, pending.take());
            pending = Some(format!(
                "kernels compute it as `cmath::{function}(z)`: `num_complex`'s float methods \
                 need a float library that device code has not"
            ));
        }
        out.push_str(line);
    }
    push_hint(&mut out, pending);
    out
}

/// `num_complex`'s methods that need its `std` or `libm` feature, each with the `cmath`
/// function that computes it.
const CMATH_FOR_METHOD: [(&str, &str); 23] = [
    ("exp", "exp"),
    ("ln", "log"),
    ("log10", "log10"),
    ("log", "log_base"),
    ("sqrt", "sqrt"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("tan", "tan"),
    ("sinh", "sinh"),
    ("cosh", "cosh"),
    ("tanh", "tanh"),
    ("asin", "asin"),
    ("acos", "acos"),
    ("atan", "atan"),
    ("asinh", "asinh"),
    ("acosh", "acosh"),
    ("atanh", "atanh"),
    ("norm", "abs"),
    ("arg", "phase"),
    ("to_polar", "polar"),
    ("from_polar", "rect"),
    ("powf", "pow"),
    ("powc", "pow"),
];

/// The `cmath` function of the method of a `Complex` that an E0599 headline says cannot be
/// found, where it is one of `num_complex`'s float methods.
fn cmath_for_missing_method(line: &str) -> Option<&'static str> {
    let rest = line.strip_prefix("error[E0599]: no method named `")?;
    let (name, rest) = rest.split_once('`')?;
    if !(rest.contains("`Complex`") || rest.contains("`Complex<")) {
        return None;
    }
    let (_, function) = CMATH_FOR_METHOD
        .iter()
        .find(|(method, _)| *method == name)?;
    Some(function)
}

/// The function an E0425 headline says cannot be found.
fn missing_function(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("error[E0425]: cannot find function `")?;
    rest.split('`').next()
}

fn push_hint(out: &mut String, help: Option<String>) {
    if let Some(help) = help {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("  = help: {help}\n"));
    }
}

/// The directory rustc's paths are relative to in the host build of the crate in
/// `manifest_dir`: cargo runs it from the workspace's root, the nearest directory above (or
/// at) the crate whose manifest has a `[workspace]` table, else the crate's own.
pub(crate) fn workspace_root(manifest_dir: &Path) -> PathBuf {
    manifest_dir
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|m| m.lines().any(|l| l.trim() == "[workspace]"))
        })
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

/// `file` as rustc names it in the host build: relative to the workspace's `root` where it
/// lies under it, so that a device error reads as the host's own would.
pub(crate) fn as_rustc_shows(file: &Path, root: &Path) -> PathBuf {
    file.strip_prefix(root)
        .map_or_else(|_| file.to_path_buf(), Path::to_path_buf)
}

/// Whether the errors come from code that reaches for `std`, which device code does not have.
pub(crate) fn reaches_std(diagnostics: &str) -> bool {
    diagnostics.contains("`std`")
}

/// Replaces the paths of generated files in compiler output with the user's files they mirror.
///
/// `files` holds, for each generated file, its path relative to the device crate, its absolute
/// path, and the original file. Line and column numbers need no change: the generated files
/// keep them.
pub(crate) fn rewrite_paths(text: &str, files: &[(PathBuf, PathBuf, PathBuf)]) -> String {
    let mut text = text.to_string();
    // Longest first, so that `src/a/b.rs` is not half-replaced by a rule for `b.rs`.
    let mut files: Vec<_> = files.iter().collect();
    files.sort_by_key(|(rel, abs, _)| {
        std::cmp::Reverse((abs.as_os_str().len(), rel.as_os_str().len()))
    });
    for (rel, abs, original) in files {
        let original = original.display().to_string();
        text = text.replace(&abs.display().to_string(), &original);
        let rel = rel.display().to_string();
        for lead in ["--> ", "::: "] {
            text = text.replace(&format!("{lead}{rel}:"), &format!("{lead}{original}:"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(level: &str, text: &str, rendered: &str) -> String {
        serde_json::json!({
            "reason": "compiler-message",
            "message": { "level": level, "message": text, "rendered": rendered },
        })
        .to_string()
    }

    #[test]
    fn keeps_the_errors_only() {
        let stdout = [
            message(
                "warning",
                "unstable feature",
                "warning: unstable feature\n\n",
            ),
            message(
                "error",
                "cannot find function `helper`",
                "error[E0425]: cannot find function `helper`\n --> src/lib.rs:3:5\n\n",
            ),
            r#"{"reason":"build-finished","success":false}"#.to_string(),
            message(
                "error",
                "aborting due to 1 previous error",
                "error: aborting\n\n",
            ),
        ]
        .join("\n");
        let stderr = "   Compiling x_device v0.0.0\nerror: could not compile `x_device`\n";
        assert_eq!(
            errors(&stdout, stderr),
            "error[E0425]: cannot find function `helper`\n --> src/lib.rs:3:5\n"
        );
    }

    #[test]
    fn a_host_function_called_from_a_kernel_gets_a_hint() {
        let text = "error[E0425]: cannot find function `helper` in this scope\n --> src/main.rs:5:9\n  \
                    |\n5 |     helper(x)\n  |     ^^^^^^ not found in this scope\n\n\
                    error[E0425]: cannot find function `nowhere` in this scope\n --> src/main.rs:6:9\n";
        let host = HashSet::from(["helper".to_string(), "main".to_string()]);
        let out = with_device_hints(text, &host);
        assert_eq!(out.matches("= help").count(), 1, "{out}");
        let hint = out
            .find("= help: `helper` is a host function: mark it `#[device]`")
            .unwrap();
        assert!(hint < out.find("nowhere").unwrap(), "{out}");
    }

    #[test]
    fn a_float_method_of_a_complex_number_gets_its_cmath_function() {
        let text = "error[E0599]: no method named `ln` found for struct `Complex<f64>` in the \
                    current scope\n --> src/lib.rs:7:15\n\n\
                    error[E0599]: no method named `frobnicate` found for struct `Complex<f32>`\n\n";
        let out = with_device_hints(text, &HashSet::new());
        assert_eq!(out.matches("= help").count(), 1, "{out}");
        assert!(
            out.contains("= help: kernels compute it as `cmath::log(z)`"),
            "{out}"
        );
    }

    #[test]
    fn paths_read_as_the_host_builds_do() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = workspace_root(here);
        assert_eq!(root, here.parent().unwrap());
        assert_eq!(
            as_rustc_shows(&here.join("src/lib.rs"), &root),
            Path::new("kernel-build/src/lib.rs")
        );
        assert_eq!(
            as_rustc_shows(Path::new("/elsewhere/a.rs"), &root),
            Path::new("/elsewhere/a.rs")
        );
    }

    #[test]
    fn without_compiler_errors_cargo_speaks() {
        let stderr = "    Updating index\n     Locking 3 packages\nerror: failed to load \
                      source for dependency `core`\n\nCaused by:\n  no such file\n";
        let out = errors("", stderr);
        assert!(out.starts_with("error: failed to load source"), "{out}");
        assert!(out.contains("Caused by:\n  no such file"), "{out}");
        assert!(!out.contains("Locking"), "{out}");
    }

    #[test]
    fn diagnostics_name_the_original_files() {
        let stderr = "error[E0433]: cannot find module or crate `std` in this scope\n \
                      --> src/lib.rs:12:9\n   |\nnote: defined here\n   \
                      ::: /dev/src/helpers.rs:3:1\n   \
                      --> src/helpers.rs:4:2\n";
        let files = [
            (
                PathBuf::from("src/lib.rs"),
                PathBuf::from("/dev/src/lib.rs"),
                PathBuf::from("/user/src/lib.rs"),
            ),
            (
                PathBuf::from("src/helpers.rs"),
                PathBuf::from("/dev/src/helpers.rs"),
                PathBuf::from("/user/src/helpers.rs"),
            ),
        ];
        let out = rewrite_paths(stderr, &files);
        assert!(out.contains(" --> /user/src/lib.rs:12:9"), "{out}");
        assert!(out.contains("::: /user/src/helpers.rs:3:1"), "{out}");
        assert!(out.contains("--> /user/src/helpers.rs:4:2"), "{out}");
        assert!(!out.contains("/dev/"), "{out}");
        assert!(reaches_std(&out));
    }
}
