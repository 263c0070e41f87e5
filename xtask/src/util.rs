//! Helpers shared by the commands: locating the workspace, building child commands, running
//! timed steps and printing their summary.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// Result type of the commands: the error is a message for the user.
pub type Result<T = ()> = std::result::Result<T, String>;

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// The cargo target directory: `$CARGO_TARGET_DIR` (relative to the workspace root when
/// relative) or `<workspace>/target`.
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Variables that `cargo run` sets for the xtask binary itself and that must not leak into the
/// cargo processes it starts.
fn is_leaked_cargo_var(key: &OsStr) -> bool {
    let key = key.to_string_lossy();
    key.starts_with("CARGO_PKG_")
        || matches!(
            key.as_ref(),
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
        )
}

/// Where child processes run and which environment they get.
#[derive(Clone, Debug)]
pub struct Context {
    /// The workspace root, the working directory of every child.
    pub root: PathBuf,
    /// Variables set for every child.
    pub env: Vec<(OsString, OsString)>,
}

impl Context {
    /// A context rooted at the workspace, with no extra variables.
    pub fn new() -> Self {
        Context {
            root: workspace_root(),
            env: Vec::new(),
        }
    }

    /// Sets `key=value` for every child started from now on.
    pub fn set_env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
    }

    /// A command for `program` in the workspace root with this context's environment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.root);
        for (key, _) in std::env::vars_os() {
            if is_leaked_cargo_var(&key) {
                cmd.env_remove(key);
            }
        }
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd
    }

    /// A cargo command (`$CARGO`, as set by `cargo run`, else `cargo` from PATH) with `args`.
    pub fn cargo<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = self.command(cargo);
        cmd.args(args);
        cmd
    }
}

/// `cmd` as a shell-like line for messages (program name without its directory).
pub fn display_command(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program());
    let mut line = program
        .file_name()
        .unwrap_or(program.as_os_str())
        .to_string_lossy()
        .into_owned();
    for arg in cmd.get_args() {
        line.push(' ');
        let arg = arg.to_string_lossy();
        if arg.is_empty() || arg.contains(char::is_whitespace) {
            line.push_str(&format!("'{arg}'"));
        } else {
            line.push_str(&arg);
        }
    }
    line
}

/// Runs `cmd` with inherited stdio and reports a failure to start or a non-zero exit as an error
/// naming the command.
pub fn run_status(cmd: &mut Command) -> Result {
    let line = display_command(cmd);
    let status = cmd
        .status()
        .map_err(|e| format!("could not start `{line}`: {e}"))?;
    check_status(&line, status)
}

/// Turns a non-zero exit status into an error naming `what`.
pub fn check_status(what: &str, status: ExitStatus) -> Result {
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{what}` failed ({status})"))
    }
}

/// Finds `name` in the directories of `PATH`.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The stems of the Rust programs in `dir`: `NAME.rs` files and `NAME/main.rs` directories,
/// sorted. A missing directory gives an empty list.
pub fn discover_targets(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return names;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_file() {
            if let Some(stem) = name.strip_suffix(".rs") {
                names.push(stem.to_string());
            }
        } else if path.join("main.rs").is_file() {
            names.push(name);
        }
    }
    names.sort();
    names
}

/// Parses `args` as the options of one command, as the command line would (for tests).
/// `rows` under `header` in aligned columns, each line indented by two spaces: the first
/// column to the left, the others to the right, trailing blanks trimmed.
pub fn columns(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = format!("  {:<w$}", row[0], w = widths[0]);
        for (cell, w) in row.iter().zip(&widths).skip(1) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
pub fn parse_args<A: clap::Args + clap::FromArgMatches>(args: &[&str]) -> clap::error::Result<A> {
    let command = A::augment_args(clap::Command::new("xtask"));
    let matches =
        command.try_get_matches_from(std::iter::once("xtask").chain(args.iter().copied()))?;
    A::from_arg_matches(&matches)
}

/// Formats a duration as seconds with one decimal, or minutes and seconds above a minute.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = d.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Pass,
    /// It failed; the run fails.
    Fail,
    /// It failed, but the run goes on (provisioning that later steps will judge).
    Warn,
    /// It did not run.
    Skip,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Warn => "WARN",
            Outcome::Skip => "SKIP",
        }
    }
}

/// One line of the summary.
#[derive(Debug)]
struct StepRecord {
    name: String,
    outcome: Outcome,
    time: Option<Duration>,
    note: String,
}

/// Runs named steps in order, times them and prints a summary.
#[derive(Debug, Default)]
pub struct Steps {
    records: Vec<StepRecord>,
}

impl Steps {
    /// An empty list of steps.
    pub fn new() -> Self {
        Steps::default()
    }

    /// Runs `action` as the step `name`, printing a header first, and records its outcome and
    /// wall time. A failing step is recorded as [`Outcome::Fail`] and returns `false`.
    pub fn run(&mut self, name: &str, action: impl FnOnce() -> Result) -> bool {
        self.run_with(name, Outcome::Fail, || action().map(|()| String::new()))
    }

    /// Like [`Steps::run`] for a command, run with inherited stdio.
    pub fn run_command(&mut self, name: &str, cmd: &mut Command) -> bool {
        self.run(name, || {
            let status = cmd
                .status()
                .map_err(|e| format!("could not start `{}`: {e}", display_command(cmd)))?;
            if status.success() {
                Ok(())
            } else {
                Err(status.to_string())
            }
        })
    }

    /// Runs `action` as the step `name`; a failure is recorded as `on_error` and the message is
    /// kept as the step's note; on success the returned text is the note. Returns whether the
    /// action succeeded.
    pub fn run_with(
        &mut self,
        name: &str,
        on_error: Outcome,
        action: impl FnOnce() -> Result<String>,
    ) -> bool {
        println!();
        println!("==> [xtask] {name}");
        let start = Instant::now();
        let result = action();
        let time = start.elapsed();
        let (outcome, note) = match result {
            Ok(note) => (Outcome::Pass, note),
            Err(message) => {
                match on_error {
                    Outcome::Fail => eprintln!("xtask: step `{name}` FAILED: {message}"),
                    _ => eprintln!("xtask: step `{name}` did not succeed: {message}"),
                }
                (on_error, message)
            }
        };
        self.records.push(StepRecord {
            name: name.to_string(),
            outcome,
            time: Some(time),
            note,
        });
        outcome == Outcome::Pass
    }

    /// Records a step that was not run.
    pub fn skip(&mut self, name: &str, note: &str) {
        self.records.push(StepRecord {
            name: name.to_string(),
            outcome: Outcome::Skip,
            time: None,
            note: note.to_string(),
        });
    }

    /// Whether any step failed.
    pub fn failed(&self) -> bool {
        self.records.iter().any(|r| r.outcome == Outcome::Fail)
    }

    /// The summary table: one line per step with outcome, wall time and note.
    pub fn summary(&self, title: &str) -> String {
        let width = self.records.iter().map(|r| r.name.len()).max().unwrap_or(0);
        let mut out = format!("==> [xtask] {title} summary\n");
        for r in &self.records {
            let time = r.time.map(format_duration).unwrap_or_else(|| "-".into());
            let note = if r.note.is_empty() {
                String::new()
            } else {
                format!("  ({})", r.note.lines().next().unwrap_or(""))
            };
            let line = format!(
                "  {}  {time:>7}  {:<width$}{note}",
                r.outcome.label(),
                r.name
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
        let total: Duration = self.records.iter().filter_map(|r| r.time).sum();
        let verdict = if self.failed() { "FAILED" } else { "ok" };
        out.push_str(&format!("  total {}: {verdict}\n", format_duration(total)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_durations() {
        assert_eq!(format_duration(Duration::from_millis(1234)), "1.2s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2m05s");
    }

    #[test]
    fn summary_lists_every_step() {
        let mut steps = Steps::new();
        assert!(steps.run("first", || Ok(())));
        assert!(!steps.run("second", || Err("boom".into())));
        steps.skip("third", "not run");
        assert!(steps.failed());
        let text = steps.summary("test");
        assert!(text.contains("PASS") && text.contains("first"));
        assert!(text.contains("FAIL") && text.contains("second") && text.contains("(boom)"));
        assert!(text.contains("SKIP") && text.contains("third"));
        assert!(text.contains("FAILED"));
    }

    #[test]
    fn discovers_rs_files_and_main_dirs() {
        let dir = std::env::temp_dir().join(format!("xtask-discover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("multi")).unwrap();
        std::fs::write(dir.join("b.rs"), "").unwrap();
        std::fs::write(dir.join("a.rs"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        std::fs::write(dir.join("multi/main.rs"), "").unwrap();
        assert_eq!(discover_targets(&dir), ["a", "b", "multi"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(discover_targets(&dir).is_empty());
    }

    #[test]
    fn displays_commands() {
        let mut cmd = Command::new("/usr/bin/cargo");
        cmd.args(["test", "a b"]);
        assert_eq!(display_command(&cmd), "cargo test 'a b'");
    }
}
