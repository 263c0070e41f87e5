//! A parser for the resource report that `ptxas -v` prints, e.g.:
//!
//! ```text
//! ptxas info    : 0 bytes gmem
//! ptxas info    : Compiling entry function 'add' for 'sm_70'
//! ptxas info    : Function properties for add
//!     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ptxas info    : Used 6 registers, used 1 barriers, 256 bytes smem, 364 bytes cmem[0]
//! ptxas info    : Function properties for helper
//!     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ```
//!
//! Entry functions (kernels) get registers, barriers, shared memory, stack frame and spills;
//! non-entry functions (`.func`) that ptxas reports on get their stack frame and spills.

/// What ptxas reports about one kernel (`.entry`) for one architecture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryInfo {
    /// The `.entry` name.
    pub name: String,
    /// The architecture it was compiled for (`sm_70`).
    pub arch: String,
    /// Registers per thread.
    pub registers: Option<u64>,
    /// Named barriers used (recent ptxas only).
    pub barriers: Option<u64>,
    /// Static shared memory in bytes.
    pub shared_bytes: u64,
    /// Constant bank 0 bytes (the parameters and literals).
    pub constant_bytes: u64,
    /// Local stack frame in bytes.
    pub stack_frame: u64,
    /// Bytes of registers spilled to local memory (stores).
    pub spill_stores: u64,
    /// Bytes reloaded from spilled registers (loads).
    pub spill_loads: u64,
    /// Stack including called functions, when ptxas reports it.
    pub cumulative_stack: Option<u64>,
}

/// Stack frame and spills of a non-entry function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionInfo {
    /// The `.func` name.
    pub name: String,
    /// Local stack frame in bytes.
    pub stack_frame: u64,
    /// Spill stores in bytes.
    pub spill_stores: u64,
    /// Spill loads in bytes.
    pub spill_loads: u64,
}

/// Everything parsed from one ptxas run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Kernels in the order ptxas compiled them.
    pub entries: Vec<EntryInfo>,
    /// Non-entry functions ptxas reported properties for.
    pub functions: Vec<FunctionInfo>,
    /// `ptxas warning`, `ptxas error` and `ptxas fatal` lines, as printed.
    pub diagnostics: Vec<String>,
}

/// Which record a "Function properties for NAME" header opened.
#[derive(Clone, Copy, Debug)]
enum PropsTarget {
    Entry(usize),
    Function(usize),
}

/// Parses the combined stdout and stderr of `ptxas -v`. Lines it does not know are ignored.
pub fn parse(text: &str) -> Report {
    let mut report = Report::default();
    let mut current_entry: Option<usize> = None;
    let mut props: Option<PropsTarget> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(message) = info_message(line) {
            if let Some((name, arch)) = parse_compiling_entry(message) {
                report.entries.push(EntryInfo {
                    name,
                    arch,
                    ..EntryInfo::default()
                });
                current_entry = Some(report.entries.len() - 1);
                props = None;
            } else if let Some(name) = message.strip_prefix("Function properties for ") {
                let name = name.trim();
                props = Some(match report.entries.iter().rposition(|e| e.name == name) {
                    Some(i) => PropsTarget::Entry(i),
                    None => {
                        report.functions.push(FunctionInfo {
                            name: name.to_string(),
                            ..FunctionInfo::default()
                        });
                        PropsTarget::Function(report.functions.len() - 1)
                    }
                });
            } else if message.starts_with("Used ") {
                if let Some(i) = current_entry {
                    apply_usage(&mut report.entries[i], message);
                }
            }
        } else if line.contains("bytes stack frame") {
            let (stack, stores, loads) = parse_stack_line(line);
            match props.take() {
                Some(PropsTarget::Entry(i)) => {
                    let e = &mut report.entries[i];
                    (e.stack_frame, e.spill_stores, e.spill_loads) = (stack, stores, loads);
                }
                Some(PropsTarget::Function(i)) => {
                    let f = &mut report.functions[i];
                    (f.stack_frame, f.spill_stores, f.spill_loads) = (stack, stores, loads);
                }
                None => {}
            }
        } else if line.starts_with("ptxas warning")
            || line.starts_with("ptxas error")
            || line.starts_with("ptxas fatal")
        {
            report.diagnostics.push(line.to_string());
        }
    }
    report
}

/// The text after `ptxas info    :`.
fn info_message(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("ptxas info")?;
    let (_, message) = rest.split_once(':')?;
    Some(message.trim())
}

/// `Compiling entry function 'NAME' for 'ARCH'` → (NAME, ARCH).
fn parse_compiling_entry(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("Compiling entry function ")?;
    let (name, rest) = quoted(rest)?;
    let arch = rest
        .trim_start()
        .strip_prefix("for ")
        .and_then(|r| quoted(r.trim_start()))
        .map(|(arch, _)| arch)
        .unwrap_or_default();
    Some((name.to_string(), arch.to_string()))
}

/// Splits `'text' rest` into (`text`, `rest`).
fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.strip_prefix('\'')?;
    let end = s.find('\'')?;
    Some((&s[..end], &s[end + 1..]))
}

/// The first number in a comma-separated part and the words after it:
/// `Used 6 registers` → (6, "registers"), `256 bytes smem` → (256, "bytes smem").
fn quantity(part: &str) -> Option<(u64, String)> {
    let mut words = part.split_whitespace();
    let number = words.by_ref().find_map(|w| w.parse::<u64>().ok())?;
    Some((number, words.collect::<Vec<_>>().join(" ")))
}

/// Applies a `Used N registers, used N barriers, N bytes smem, N bytes cmem[0]` line.
fn apply_usage(entry: &mut EntryInfo, message: &str) {
    for part in message.split(',') {
        let Some((n, what)) = quantity(part) else {
            continue;
        };
        match what.as_str() {
            "registers" => entry.registers = Some(n),
            "barriers" => entry.barriers = Some(n),
            "bytes smem" => entry.shared_bytes = n,
            "bytes cmem[0]" => entry.constant_bytes = n,
            "bytes cumulative stack size" => entry.cumulative_stack = Some(n),
            _ => {}
        }
    }
}

/// `N bytes stack frame, N bytes spill stores, N bytes spill loads` → the three numbers.
fn parse_stack_line(line: &str) -> (u64, u64, u64) {
    let (mut stack, mut stores, mut loads) = (0, 0, 0);
    for part in line.split(',') {
        match quantity(part) {
            Some((n, what)) if what == "bytes stack frame" => stack = n,
            Some((n, what)) if what == "bytes spill stores" => stores = n,
            Some((n, what)) if what == "bytes spill loads" => loads = n,
            _ => {}
        }
    }
    (stack, stores, loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output of ptxas 12.9 for a module with two kernels and a called `.func`.
    const SM70: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'second' for 'sm_70'
ptxas info    : Function properties for second
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 4 registers, used 0 barriers, 352 bytes cmem[0]
ptxas info    : Compile time = 0.971 ms
ptxas info    : Compiling entry function 'add' for 'sm_70'
ptxas info    : Function properties for add
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 6 registers, used 1 barriers, 256 bytes smem, 364 bytes cmem[0]
ptxas info    : Compile time = 1.402 ms
ptxas info    : Function properties for helper
    584 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";

    #[test]
    fn parses_entries_and_functions() {
        let report = parse(SM70);
        assert_eq!(report.entries.len(), 2);
        assert_eq!(
            report.entries[0],
            EntryInfo {
                name: "second".into(),
                arch: "sm_70".into(),
                registers: Some(4),
                barriers: Some(0),
                constant_bytes: 352,
                ..EntryInfo::default()
            }
        );
        assert_eq!(
            report.entries[1],
            EntryInfo {
                name: "add".into(),
                arch: "sm_70".into(),
                registers: Some(6),
                barriers: Some(1),
                shared_bytes: 256,
                constant_bytes: 364,
                stack_frame: 8,
                spill_stores: 4,
                spill_loads: 12,
                cumulative_stack: None,
            }
        );
        assert_eq!(
            report.functions,
            [FunctionInfo {
                name: "helper".into(),
                stack_frame: 584,
                spill_stores: 0,
                spill_loads: 0,
            }]
        );
        assert!(report.diagnostics.is_empty());
    }

    #[test]
    fn parses_older_format_and_diagnostics() {
        // Older ptxas: no barrier count, a cumulative stack size, and a spill warning.
        let text = "\
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPf
    32 bytes stack frame, 28 bytes spill stores, 28 bytes spill loads
ptxas warning : Registers are spilled to local memory in function '_Z6kernelPf', 28 bytes spill stores, 28 bytes spill loads
ptxas info    : Used 255 registers, 32 bytes cumulative stack size, 1024 bytes smem, 380 bytes cmem[0]
";
        let report = parse(text);
        let e = &report.entries[0];
        assert_eq!(e.name, "_Z6kernelPf");
        assert_eq!(e.arch, "sm_80");
        assert_eq!(e.registers, Some(255));
        assert_eq!(e.barriers, None);
        assert_eq!(e.cumulative_stack, Some(32));
        assert_eq!(e.shared_bytes, 1024);
        assert_eq!((e.stack_frame, e.spill_stores, e.spill_loads), (32, 28, 28));
        assert_eq!(report.diagnostics.len(), 1);
        assert!(report.diagnostics[0].starts_with("ptxas warning"));
    }

    #[test]
    fn sm90_without_cmem_and_fatal_errors() {
        let text = "\
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 8 bytes smem
";
        let e = &parse(text).entries[0];
        assert_eq!(
            (e.registers, e.barriers, e.shared_bytes),
            (Some(10), Some(1), 8)
        );
        assert_eq!(e.constant_bytes, 0);

        let fatal = "ptxas fatal   : SM version specified by .target is higher than default\n";
        let report = parse(fatal);
        assert!(report.entries.is_empty());
        assert_eq!(report.diagnostics.len(), 1);
    }

    #[test]
    fn ignores_noise() {
        assert_eq!(parse(""), Report::default());
        assert_eq!(parse("random text\n  17 apples\n"), Report::default());
        // A stack line without a header belongs to nothing.
        assert_eq!(
            parse("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"),
            Report::default()
        );
    }
}
