//! The CPU benchmark report: criterion's medians of the kernels and their rayon baselines, the
//! Numba peers' lines, each program's ratios against its goals, as `benches/results/cpu-DATE.md`
//! (and the figures as JSON, which the chart script reads).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a program is measured against, and how far it may be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Goal {
    /// At most this many times the rayon baseline's time.
    Rayon(f64),
    /// At most this many times `numba.njit(parallel=True)`'s time.
    Numba(f64),
    /// At least this many times the CUDA simulator's speed (elements per second).
    Simulator(f64),
}

/// One reference program of `benches/cpu_backend.rs`.
pub struct Program {
    /// The row's name.
    pub name: &'static str,
    /// The program of the Numba peers' lines that it is measured against, where there is one.
    pub peer: Option<&'static str>,
    /// The criterion group (its `rayon` function, and the kernel's).
    pub group: &'static str,
    /// The kernel's function in the group.
    pub function: &'static str,
    /// The size the Rust benches run.
    pub size: &'static str,
    /// Elements at that size (for speeds against a peer measured at another size).
    pub elements: f64,
    /// The goals of the project for it.
    pub goals: &'static [Goal],
}

/// The programs, their sizes as `benches/cpu_backend.rs` runs them, and their goals: those of
/// the CPU backend (smooth against Numba and its simulator; add, matmul, quicksort, the
/// grid-stride loop and smooth with index checks, its guard spelled either way, against rayon;
/// smooth as a `#[stencil]` against rayon and Numba's `@stencil`)
/// and the barrier kernels' bound (integrate2d within 3× rayon).
pub const PROGRAMS: &[Program] = &[
    Program {
        name: "add",
        peer: Some("add"),
        group: "add",
        function: "kernel",
        size: "10^7 f32",
        elements: 1e7,
        goals: &[Goal::Rayon(1.1)],
    },
    Program {
        name: "smooth",
        peer: Some("smooth"),
        group: "smooth",
        function: "kernel",
        size: "10000^2 i8",
        elements: 1e8,
        goals: &[Goal::Rayon(1.25), Goal::Numba(1.0), Goal::Simulator(1e4)],
    },
    Program {
        name: "smooth, guard `j < m - 1`",
        peer: None,
        group: "smooth",
        function: "kernel_numba_guard",
        size: "10000^2 i8",
        elements: 1e8,
        goals: &[Goal::Rayon(1.5)],
    },
    Program {
        name: "smooth, `#[stencil]`",
        peer: Some("smooth"),
        group: "smooth",
        function: "stencil",
        size: "10000^2 i8",
        elements: 1e8,
        goals: &[Goal::Rayon(1.0), Goal::Numba(0.5)],
    },
    Program {
        name: "gaussian 5×5, `#[stencil]`",
        peer: Some("gaussian"),
        group: "gaussian",
        function: "stencil",
        size: "10000^2 u8",
        elements: 1e8,
        goals: &[Goal::Rayon(1.0), Goal::Numba(0.5)],
    },
    Program {
        name: "Laplacian 7-point, `#[stencil]`",
        peer: Some("laplace3d"),
        group: "laplace3d",
        function: "stencil",
        size: "256^3 f32",
        elements: 16_777_216.0,
        goals: &[Goal::Rayon(1.0), Goal::Numba(0.5)],
    },
    Program {
        name: "integrate2d",
        peer: Some("integrate2d"),
        group: "integrate2d_shared",
        function: "kernel",
        size: "n = 2048, shared",
        elements: 2048.0 * 2048.0,
        goals: &[Goal::Rayon(3.0)],
    },
    Program {
        name: "matmul",
        peer: Some("matmul"),
        group: "matmul",
        function: "kernel",
        size: "512^2 f32, tiled",
        elements: 512.0 * 512.0,
        goals: &[Goal::Rayon(1.1)],
    },
    Program {
        name: "quicksort",
        peer: Some("quicksort"),
        group: "quicksort",
        function: "kernel",
        size: "2^22 u32",
        elements: 4194304.0,
        goals: &[Goal::Rayon(5.0)],
    },
    Program {
        name: "grid-stride saxpy",
        peer: None,
        group: "grid_stride",
        function: "kernel",
        size: "10^7 f32, 256 × 256 threads",
        elements: 1e7,
        goals: &[Goal::Rayon(1.2)],
    },
    Program {
        name: "grid-stride saxpy, 2-D nest",
        peer: None,
        group: "grid_stride",
        function: "kernel_2d",
        size: "2500 × 4000 f32, 16² × 16² threads",
        elements: 1e7,
        goals: &[Goal::Rayon(1.2)],
    },
];

/// A peer's time for a program, from a line of `benches/peers/numba_cpu.py`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PeerTime {
    pub peer: String,
    pub program: String,
    pub size: String,
    pub elements: f64,
    pub ms: f64,
}

/// The peer lines of the script's output (other lines are ignored).
pub fn parse_peer_lines(stdout: &str) -> Vec<PeerTime> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The part of criterion's `estimates.json` that the report reads.
#[derive(Deserialize)]
struct Estimates {
    median: Estimate,
}

/// One of criterion's estimates, in nanoseconds.
#[derive(Deserialize)]
struct Estimate {
    point_estimate: f64,
}

/// Criterion's median of `group/function` in milliseconds, from its `estimates.json`.
pub fn criterion_median_ms(criterion_dir: &Path, group: &str, function: &str) -> Option<f64> {
    let path = criterion_dir
        .join(group)
        .join(function)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let estimates: Estimates = serde_json::from_str(&text).ok()?;
    Some(estimates.median.point_estimate / 1e6)
}

/// One program's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub ours_ms: Option<f64>,
    pub rayon_ms: Option<f64>,
    pub numba: Option<PeerTime>,
    pub simulator: Option<PeerTime>,
    /// SciPy's `ndimage` filter of the same program (the stencils only).
    pub scipy: Option<PeerTime>,
}

impl Row {
    /// Ours over rayon.
    pub fn vs_rayon(&self) -> Option<f64> {
        Some(self.ours_ms? / self.rayon_ms?)
    }
    /// Ours over numba.njit(parallel).
    pub fn vs_numba(&self) -> Option<f64> {
        Some(self.ours_ms? / self.numba.as_ref()?.ms)
    }
    /// How many times faster per element than the simulator.
    pub fn simulator_speedup(&self, elements: f64) -> Option<f64> {
        let sim = self.simulator.as_ref()?;
        Some((sim.ms / sim.elements) / (self.ours_ms? / elements))
    }
    /// Whether the goal is met; `None` when a figure is missing.
    pub fn meets(&self, goal: Goal, elements: f64) -> Option<bool> {
        match goal {
            Goal::Rayon(r) => self.vs_rayon().map(|v| v <= r),
            Goal::Numba(r) => self.vs_numba().map(|v| v <= r),
            Goal::Simulator(s) => self.simulator_speedup(elements).map(|v| v >= s),
        }
    }
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0} ms"),
        Some(v) if v >= 10.0 => format!("{v:.1} ms"),
        Some(v) => format!("{v:.2} ms"),
        None => "—".into(),
    }
}

fn ratio(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.1e}×"),
        Some(v) => format!("{v:.2}×"),
        None => "—".into(),
    }
}

fn goal_text(goal: Goal) -> String {
    match goal {
        Goal::Rayon(r) => format!("≤ {r}× rayon"),
        Goal::Numba(r) => format!("≤ {r}× numba"),
        Goal::Simulator(s) => format!("≥ {s:.0e}× simulator"),
    }
}

/// The report in Markdown: `machine` and `commands` describe the run, `peers_note` says whether
/// the Numba peers ran.
pub fn markdown(date: &str, machine: &str, peers_note: &str, rows: &[(&Program, Row)]) -> String {
    let mut out = format!("# CPU backend against rayon and Numba — {date}\n\n");
    out.push_str(&format!(
        "Machine: {machine}. Command: `cargo xtask bench`, which runs `cargo bench --bench \
         cpu_backend` (criterion medians, launch only, arrays already on the device, the rayon \
         baseline of the same algorithm in the same group) and then \
         `benches/peers/numba_cpu.py` ({peers_note}).\n\n"
    ));
    out.push_str(
        "The simulator runs `cuda.jit` kernels at small sizes, so its column compares speeds \
         (elements per second), not times.\n\n",
    );
    out.push_str("| program | size | ours | rayon | × rayon | numba.njit(parallel) | × numba | simulator (size) | speed × simulator | goals |\n");
    out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (p, r) in rows {
        let sim = r
            .simulator
            .as_ref()
            .map(|s| format!("{} ({})", ms(Some(s.ms)), s.size))
            .unwrap_or_else(|| "—".into());
        let goals: Vec<String> = p
            .goals
            .iter()
            .map(|&g| {
                let verdict = match r.meets(g, p.elements) {
                    Some(true) => "met",
                    Some(false) => "not met",
                    None => "not measured",
                };
                format!("{}: {verdict}", goal_text(g))
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            p.name,
            p.size,
            ms(r.ours_ms),
            ms(r.rayon_ms),
            ratio(r.vs_rayon()),
            ms(r.numba.as_ref().map(|n| n.ms)),
            ratio(r.vs_numba()),
            sim,
            ratio(r.simulator_speedup(p.elements)),
            if goals.is_empty() {
                "—".to_string()
            } else {
                goals.join("; ")
            },
        ));
    }
    out
}

/// The most checked mode may cost, in times the fast backend's time on the same program.
pub const CHECKED_GOAL: f64 = 5.0;

/// The programs checked mode is timed on beside the fast backend (criterion's `checked` group,
/// functions `NAME_fast` and `NAME_checked`), with their sizes.
pub const CHECKED_PROGRAMS: &[(&str, &str)] = &[
    ("smooth", "1024² i8"),
    ("add", "2²⁰ f32"),
    ("accumulate", "2²⁰ f32, `c[i] += a[i]`"),
    ("integrate2d", "n = 1024, shared memory and barriers"),
];

/// The report's table on checked mode: each program's time in checked mode against the fast
/// backend's, `(name, size, fast, checked)`, and the goal.
pub fn checked_section(rows: &[(&str, &str, Option<f64>, Option<f64>)]) -> String {
    let mut out = format!(
        "\nChecked mode (`Device::cpu_checked()`) against the fast backend, same program and \
         size (goal ≤ {CHECKED_GOAL}×):\n\n| program | size | fast | checked | × fast | goal |\n\
         | --- | --- | --- | --- | --- | --- |\n"
    );
    for (name, size, fast_ms, checked_ms) in rows {
        let ratio_v = checked_ms.zip(*fast_ms).map(|(c, f)| c / f);
        let verdict = match ratio_v {
            Some(r) if r <= CHECKED_GOAL => "met",
            Some(_) => "not met",
            None => "not measured",
        };
        out += &format!(
            "| {name} | {size} | {} | {} | {} | {verdict} |\n",
            ms(*fast_ms),
            ms(*checked_ms),
            ratio(ratio_v)
        );
    }
    out
}

/// The report's table on SciPy's `ndimage` filters (one thread, in C) beside the rows that
/// have one (the `#[stencil]` programs): no goal, a peer that users of SciPy know.
pub fn scipy_section(rows: &[(&Program, Row)]) -> String {
    let with: Vec<_> = rows
        .iter()
        .filter_map(|(p, r)| Some((p, r, r.scipy.as_ref()?)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nSciPy's `ndimage` filters (`correlate` with the program's weights, then its \
         division; `laplace`), one thread, same sizes:\n\n\
         | program | size | ours | scipy.ndimage | × scipy |\n| --- | --- | --- | --- | --- |\n",
    );
    for (p, r, scipy) in with {
        let vs = r.ours_ms.map(|o| o / scipy.ms);
        out += &format!(
            "| {} | {} | {} | {} | {} |\n",
            p.name,
            p.size,
            ms(r.ours_ms),
            ms(Some(scipy.ms)),
            ratio(vs)
        );
    }
    out
}

/// One program's ratios, as the chart reads them.
#[derive(Serialize)]
struct Ratios<'a> {
    program: &'a str,
    vs_rayon: Option<f64>,
    vs_numba: Option<f64>,
}

/// The ratios as JSON, for the chart: `[{"program", "vs_rayon", "vs_numba"}]`.
pub fn ratios_json(rows: &[(&Program, Row)]) -> String {
    let ratios: Vec<_> = rows
        .iter()
        .map(|(p, r)| Ratios {
            program: p.name,
            vs_rayon: r.vs_rayon(),
            vs_numba: r.vs_numba(),
        })
        .collect();
    let json = serde_json::to_string(&ratios).expect("plain structs serialise");
    format!("{json}\n")
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date((secs / 86_400) as i64)
}

/// The date `days` after 1970-01-01 in the proleptic Gregorian calendar.
fn civil_date(days: i64) -> String {
    // Howard Hinnant's days-to-civil algorithm (eras of 400 years, March-based years).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_mode_is_judged_against_its_goal() {
        let table = checked_section(&[
            ("smooth", "1024²", Some(0.25), Some(1.0)),
            ("add", "2²⁰", Some(0.25), Some(5.0)),
            ("integrate2d", "1024", None, Some(10.0)),
        ]);
        assert!(
            table.contains("| smooth | 1024² | 0.25 ms | 1.00 ms | 4.00× | met |"),
            "{table}"
        );
        assert!(table.contains("| 20.00× | not met |"), "{table}");
        assert!(table.contains("| — | not measured |"), "{table}");
    }

    #[test]
    fn ratios_are_json_for_the_chart() {
        let row = Row {
            ours_ms: Some(3.0),
            rayon_ms: Some(2.0),
            ..Row::default()
        };
        assert_eq!(
            ratios_json(&[(&PROGRAMS[0], row)]),
            "[{\"program\":\"add\",\"vs_rayon\":1.5,\"vs_numba\":null}]\n"
        );
    }

    #[test]
    fn scipy_filters_have_a_table_of_their_own_where_they_ran() {
        let line = "{\"peer\": \"scipy.ndimage\", \"program\": \"smooth\", \"size\": \"10000^2 i8\", \"elements\": 100000000, \"ms\": 900.0}";
        let scipy = parse_peer_lines(line).pop();
        let stencil = PROGRAMS
            .iter()
            .find(|p| p.name.contains("#[stencil]"))
            .unwrap();
        let row = Row {
            ours_ms: Some(9.0),
            scipy,
            ..Row::default()
        };
        let table = scipy_section(&[(stencil, row), (&PROGRAMS[0], Row::default())]);
        assert!(table.contains("| 9.00 ms | 900 ms | 0.01× |"), "{table}");
        let lines = table.lines().filter(|l| l.starts_with("| ")).count();
        assert_eq!(lines, 3, "the header, its rule and one row: {table}");
        assert_eq!(scipy_section(&[(&PROGRAMS[0], Row::default())]), "");
    }

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(19_723), "2024-01-01");
        assert_eq!(civil_date(20_414), "2025-11-22");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }

    #[test]
    fn reads_peer_lines_and_judges_goals() {
        let out = "# numba 0.68\nnoise\n\
            {\"peer\": \"numba.njit(parallel)\", \"program\": \"smooth\", \"size\": \"10000^2 i8\", \"elements\": 100000000, \"ms\": 180.0}\n\
            {\"peer\": \"numba CUDA simulator\", \"program\": \"smooth\", \"size\": \"64^2 i8\", \"elements\": 4096, \"ms\": 1000.0}\n";
        let peers = parse_peer_lines(out);
        assert_eq!(peers.len(), 2);
        assert_eq!(peers[0].ms, 180.0);
        let row = Row {
            ours_ms: Some(30.0),
            rayon_ms: Some(32.0),
            numba: Some(peers[0].clone()),
            simulator: Some(peers[1].clone()),
            scipy: None,
        };
        assert_eq!(row.meets(Goal::Numba(1.0), 1e8), Some(true));
        assert_eq!(row.meets(Goal::Rayon(0.5), 1e8), Some(false));
        // 1000 ms / 4096 elements against 30 ms / 10^8 elements.
        let speedup = row.simulator_speedup(1e8).unwrap();
        assert!((speedup - 1000.0 / 4096.0 / (30.0 / 1e8)).abs() < 1.0);
        assert_eq!(Row::default().meets(Goal::Rayon(1.0), 1.0), None);
        let md = markdown("2026-11-22", "test", "ran", &[(&PROGRAMS[1], row)]);
        assert!(
            md.contains("| smooth | 10000^2 i8 | 30.0 ms | 32.0 ms | 0.94× | 180 ms | 0.17× |"),
            "{md}"
        );
        assert!(md.contains("≤ 1× numba: met"), "{md}");
    }
}
