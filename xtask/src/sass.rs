//! What the GPU runs of each kernel: the machine code (SASS) of the cubins `cargo xtask ptx`
//! assembles, as `cuobjdump -sass` prints it, counted per kernel: all its instructions, and
//! those of the kinds that bound a kernel's speed (tensor-core multiplies, shared and global
//! loads and stores, asynchronous copies, barriers), and its basic blocks that load, store or
//! multiply on tensor cores: a stencil's interior tile is one such block, whose size over the
//! tile's points is what it issues a point. The counts are of the code, not of a run: compare
//! them between two versions of one kernel, and read the whole listing (written beside the
//! cubin) for the instructions of its hot loop.
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
    /// Its basic blocks that load, store or multiply on tensor cores, in address order.
    pub blocks: Vec<Block>,
}

/// A basic block: where it starts, its instructions, and the global and shared loads and
/// stores and the tensor-core multiplies among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Block {
    pub start: u64,
    pub instructions: usize,
    pub loads: usize,
    pub stores: usize,
    pub mmas: usize,
}

/// One instruction of a listing: its address, opcode and the target of a branch.
struct Instruction<'a> {
    address: u64,
    op: &'a str,
    target: Option<u64>,
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
    let mut code: Vec<Instruction> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            if let Some(f) = out.last_mut() {
                f.blocks = blocks(&std::mem::take(&mut code));
            }
            out.push(Counts {
                name: name.trim().to_string(),
                arch: arch.to_string(),
                total: 0,
                kinds: [0; KINDS.len()],
                blocks: Vec::new(),
            });
        } else if let (Some(f), Some(i)) = (out.last_mut(), instruction(line)) {
            f.total += 1;
            if let Some(k) = KINDS.iter().position(|k| kind(i.op) == *k) {
                f.kinds[k] += 1;
            }
            code.push(i);
        }
    }
    if let Some(f) = out.last_mut() {
        f.blocks = blocks(&code);
    }
    out
}

/// The basic blocks of `code` that load, store or multiply on tensor cores: blocks start at
/// branch targets and after branches and exits.
fn blocks(code: &[Instruction]) -> Vec<Block> {
    let targets: std::collections::HashSet<u64> = code.iter().filter_map(|i| i.target).collect();
    let mut blocks: Vec<Block> = Vec::new();
    let mut open = false;
    for i in code {
        let kind = kind(i.op);
        if !open || targets.contains(&i.address) {
            blocks.push(Block {
                start: i.address,
                ..Block::default()
            });
        }
        if let Some(b) = blocks.last_mut() {
            b.instructions += 1;
            match kind {
                "LDG" | "LDS" | "LDSM" | "LDGSTS" => b.loads += 1,
                "STG" | "STS" => b.stores += 1,
                "HMMA" | "HGMMA" | "IMMA" => b.mmas += 1,
                _ => {}
            }
        }
        open = !matches!(kind, "BRA" | "EXIT" | "RET" | "BRX" | "JMP");
    }
    blocks.retain(|b| b.loads + b.stores + b.mmas > 0);
    blocks
}

/// The blocks of the functions of `counts` named in `only`, a line each: where it starts, its
/// instructions, loads, stores and tensor-core multiplies.
pub fn format_blocks(counts: &[Counts], only: &[String]) -> String {
    let mut out = String::new();
    for c in counts.iter().filter(|c| only.contains(&c.name)) {
        out.push_str(&format!(
            "  {} ({}), blocks that load, store or multiply:\n",
            c.name, c.arch
        ));
        for b in &c.blocks {
            out.push_str(&format!(
                "    at {:#06x}: {} instructions, {} loads, {} stores, {} mma\n",
                b.start, b.instructions, b.loads, b.stores, b.mmas
            ));
        }
    }
    out
}

/// The instruction of a line, `        /*0110*/  @!P0 BRA 0x60 ;  /* 0x… */`: its address,
/// its opcode without the predicate, and a branch's target; `None` for other lines.
fn instruction(line: &str) -> Option<Instruction<'_>> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (address, rest) = rest.split_once("*/")?;
    if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let text = rest.split(';').next().unwrap_or_default();
    let mut words = text.split_whitespace().skip_while(|w| w.starts_with('@'));
    let op = words.next()?;
    let target = op
        .starts_with("BRA")
        .then(|| words.last())
        .flatten()
        .and_then(|t| u64::from_str_radix(t.strip_prefix("0x")?, 16).ok());
    Some(Instruction {
        address: u64::from_str_radix(address, 16).ok()?,
        op,
        target,
    })
}

/// An opcode's kind: its name before the first modifier (`LDG` of `LDG.E.128`).
fn kind(op: &str) -> &str {
    op.split('.').next().unwrap_or_default()
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
    fn splits_the_code_into_blocks_at_branches_and_their_targets() {
        let listing = "
		Function : tile
        /*0000*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0010*/              @P0 BRA 0x50 ;
        /*0020*/                   LDG.E R3, desc[UR4][R4.64] ;
        /*0030*/                   LDG.E.S8 R5, desc[UR4][R4.64+0x4] ;
        /*0040*/                   IADD3 R3, R3, R5, RZ ;
        /*0050*/                   STG.E desc[UR4][R6.64], R3 ;
        /*0060*/                   EXIT ;
		Function : none
        /*0000*/                   EXIT ;
";
        let counts = parse(listing, "sm_90");
        // The branch ends one block, its target 0x50 starts another.
        let block = |start, instructions, loads, stores| Block {
            start,
            instructions,
            loads,
            stores,
            mmas: 0,
        };
        assert_eq!(
            counts[0].blocks,
            [
                block(0x0, 2, 1, 0),
                block(0x20, 3, 2, 0),
                block(0x50, 2, 0, 1)
            ]
        );
        assert!(counts[1].blocks.is_empty());
        let text = format_blocks(&counts, &["tile".to_string()]);
        assert!(
            text.contains("at 0x0020: 3 instructions, 2 loads, 0 stores"),
            "{text}"
        );
    }

    #[test]
    fn reads_opcodes_past_predicates() {
        let opcode = |line| instruction(line).map(|i| i.op);
        assert_eq!(opcode("  /*0a10*/   @!P4 LDG.E R3, [R2] ;"), Some("LDG.E"));
        assert_eq!(opcode("  /*0a10*/   IADD3 R1, R2, R3, RZ ;"), Some("IADD3"));
        assert_eq!(opcode("        /* 0x000e300000000800 */"), None);
        assert_eq!(opcode("Function : x"), None);
        assert_eq!(kind("LDG.E.128"), "LDG");
    }
}
