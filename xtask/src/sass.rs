//! What the GPU runs of each kernel: the machine code (SASS) of the cubins `cargo xtask ptx`
//! assembles, as `cuobjdump -sass` prints it, counted per kernel: all its instructions, and
//! those of the kinds that bound a kernel's speed (tensor-core multiplies, shared and global
//! loads and stores, asynchronous copies, barriers). The counts are of the code, not of a run:
//! compare them between two versions of one kernel, and read the whole listing (written beside
//! the cubin) for the instructions of its hot loop.
//!
//! Written by hand: the listing's format is NVIDIA's, and no crate reads it.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{self, Result};

/// The kinds of instruction counted apart, each by the start of its opcode.
const KINDS: [&str; 9] = [
    "HMMA", "LDSM", "LDGSTS", "LDG", "STG", "LDS", "STS", "BAR", "BRA",
];

/// One kernel's instructions.
#[derive(Debug, PartialEq, Eq)]
pub struct Counts {
    /// The kernel (or device function) name.
    pub name: String,
    /// The architecture of the cubin.
    pub arch: String,
    /// All its instructions.
    pub total: usize,
    /// How many of each of [`KINDS`].
    pub kinds: [usize; KINDS.len()],
}

/// Disassembles `cubin` (built for `arch`) with `cuobjdump`, writes the listing to `listing`,
/// and counts each function's instructions.
pub fn count(cuobjdump: &Path, cubin: &Path, arch: &str, listing: &Path) -> Result<Vec<Counts>> {
    let mut cmd = Command::new(cuobjdump);
    cmd.arg("-sass").arg(cubin).stdin(Stdio::null());
    // It runs the `nvdisasm` beside it.
    if let Some(dir) = cuobjdump.parent() {
        cmd.env("NVDISASM_PATH", dir);
    }
    let line = util::display_command(&cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("could not start `{line}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{line}` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    std::fs::write(listing, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", listing.display()))?;
    Ok(parse(&text, arch))
}

/// Each function's counts in a `cuobjdump -sass` listing, in the listing's order.
pub fn parse(text: &str, arch: &str) -> Vec<Counts> {
    let mut out: Vec<Counts> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            out.push(Counts {
                name: name.trim().to_string(),
                arch: arch.to_string(),
                total: 0,
                kinds: [0; KINDS.len()],
            });
        } else if let (Some(f), Some(op)) = (out.last_mut(), opcode(line)) {
            f.total += 1;
            if let Some(k) = KINDS.iter().position(|k| op.split('.').next() == Some(*k)) {
                f.kinds[k] += 1;
            }
        }
    }
    out
}

/// The opcode of an instruction line, `        /*0110*/  @!P0 LDG.E R2, [R4.64] ;  /* 0x… */`,
/// without its predicate; `None` for other lines.
fn opcode(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (address, rest) = rest.split_once("*/")?;
    if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut words = rest.split_whitespace();
    let first = words.next()?;
    if first.starts_with('@') {
        words.next()
    } else {
        Some(first)
    }
}

/// The table of `counts`: a row per function, kernels named in `only` alone where it is not
/// empty; none where no function is left.
pub fn format_table(counts: &[Counts], only: &[String]) -> Option<String> {
    let header: Vec<String> = ["function", "arch", "instructions"]
        .into_iter()
        .chain(KINDS)
        .map(String::from)
        .collect();
    let rows: Vec<Vec<String>> = counts
        .iter()
        .filter(|c| only.is_empty() || only.contains(&c.name))
        .map(|c| {
            [c.name.clone(), c.arch.clone(), c.total.to_string()]
                .into_iter()
                .chain(c.kinds.iter().map(usize::to_string))
                .collect()
        })
        .collect();
    (!rows.is_empty()).then(|| util::columns(&header, &rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "
Fatbin elf code:
================
arch = sm_90
	code for sm_90
		Function : smooth_words
	.headerflags	@\"EF_CUDA_SM90\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
                                                                          /* 0x000e300000000800 */
        /*0010*/               @P0 LDG.E.U8 R3, desc[UR4][R4.64] ;       /* 0x0000000404030981 */
        /*0020*/                   HMMA.16816.F32 R4, R8, R12, R4 ;      /* 0x000000000c04723c */
        /*0030*/              @!P1 BRA 0x60 ;                            /* 0x0000000000009947 */
		..........
		Function : other
        /*0000*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR6][R4.64] ;  /* 0x0 */
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;         /* 0x0 */
        /*0020*/                   EXIT ;                                 /* 0x0 */
";

    #[test]
    fn counts_each_functions_instructions_by_kind() {
        let counts = parse(LISTING, "sm_90");
        let kind = |c: &Counts, k: &str| c.kinds[KINDS.iter().position(|x| *x == k).unwrap()];
        assert_eq!(counts.len(), 2);
        let (words, other) = (&counts[0], &counts[1]);
        assert_eq!((words.name.as_str(), words.total), ("smooth_words", 4));
        assert_eq!(
            [kind(words, "LDG"), kind(words, "HMMA"), kind(words, "BRA")],
            [1, 1, 1]
        );
        // LDGSTS is not an LDG.
        assert_eq!((kind(other, "LDGSTS"), kind(other, "LDG")), (1, 0));
        assert_eq!((kind(other, "BAR"), other.total), (1, 3));
        let table = format_table(&counts, &["other".to_string()]).unwrap();
        assert!(
            table.contains("other") && !table.contains("smooth_words"),
            "{table}"
        );
        assert_eq!(format_table(&counts, &["absent".to_string()]), None);
    }

    #[test]
    fn reads_opcodes_past_predicates() {
        assert_eq!(opcode("  /*0a10*/   @!P4 LDG.E R3, [R2] ;"), Some("LDG.E"));
        assert_eq!(opcode("  /*0a10*/   IADD3 R1, R2, R3, RZ ;"), Some("IADD3"));
        assert_eq!(opcode("        /* 0x000e300000000800 */"), None);
        assert_eq!(opcode("Function : x"), None);
    }
}
