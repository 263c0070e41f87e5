//! Launch bounds in the PTX. `#[kernel(launch_bounds = (threads, blocks), max_registers = n)]`
//! leaves, for each of the kernel's entries, a static `__kernel_launch_bounds_<entry>` of three
//! `u32`s in the device build's PTX (Rust has no attribute for the PTX directives). [`apply`]
//! writes them as the entry's `.maxntid threads, 1, 1`, `.minnctapersm blocks` and
//! `.maxnreg n` (each left out for 0), which ptxas and the driver read, and removes the statics.

use std::collections::HashMap;

/// The prefix of the statics' names; the entry's name follows.
const PREFIX: &str = "__kernel_launch_bounds_";

/// `ptx` with every entry that has a bounds static given its directives, and the statics (and
/// the comments that announce them) removed. PTX without such statics comes back unchanged.
pub(crate) fn apply(ptx: &str) -> String {
    if !ptx.contains(PREFIX) {
        return ptx.to_string();
    }
    let mut bounds = HashMap::new();
    let mut kept = Vec::new();
    for line in ptx.split_inclusive('\n') {
        match bounds_static(line) {
            Some((entry, b)) => {
                bounds.insert(entry, b);
            }
            None if line.trim_start().starts_with("//") && line.contains(PREFIX) => {}
            None => kept.push(line),
        }
    }
    let mut out = String::with_capacity(ptx.len());
    let mut pending = None;
    for line in kept {
        if let Some(name) = entry_name(line) {
            pending = bounds.get(name).copied();
        }
        if line.trim() == "{" {
            if let Some([threads, blocks, registers]) = pending.take() {
                if threads > 0 {
                    out.push_str(&format!(".maxntid {threads}, 1, 1\n"));
                }
                if blocks > 0 {
                    out.push_str(&format!(".minnctapersm {blocks}\n"));
                }
                if registers > 0 {
                    out.push_str(&format!(".maxnreg {registers}\n"));
                }
            }
        }
        out.push_str(line);
    }
    out
}

/// The entry and the bounds of a line that defines a bounds static:
/// `.visible .global .align 4 .b8 __kernel_launch_bounds_k[12] = {0, 1, 0, 0, 2};`, its bytes
/// little-endian, the trailing zeros left out.
fn bounds_static(line: &str) -> Option<(String, [u32; 3])> {
    let rest = &line[line.find(PREFIX)? + PREFIX.len()..];
    let (entry, rest) = rest.split_once("[12]")?;
    if !line.contains(".global") {
        return None;
    }
    let list = rest.split_once('{')?.1.split_once('}')?.0;
    let mut bytes = [0u8; 12];
    for (i, b) in list
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .enumerate()
    {
        *bytes.get_mut(i)? = b.parse().ok()?;
    }
    let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Some((entry.to_string(), [word(0), word(4), word(8)]))
}

/// The name of the entry a line declares (`.visible .entry name(` or `.entry name(`).
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.split_once(".entry ")?.1;
    Some(rest.split(['(', ' ', '\n']).next()?.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64

\t// .globl\t__kernel_launch_bounds_mm
.visible .global .align 4 .b8 __kernel_launch_bounds_mm[12] = {0, 1, 0, 0, 2};
.visible .global .align 4 .b8 __kernel_launch_bounds_small[12] = {64};
.visible .global .align 4 .b8 __kernel_launch_bounds_capped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 40};
\t// .globl\tmm
.visible .entry mm(
\t.param .u64 mm_param_0
)
{
\tret;
}
.visible .entry small()
{
\tret;
}
.visible .entry plain()
{
\tret;
}
.visible .entry capped()
{
\tret;
}
";

    #[test]
    fn each_entry_gets_its_bounds_and_the_statics_go() {
        let out = apply(PTX);
        assert!(!out.contains(PREFIX), "{out}");
        assert!(out.contains(
            ".visible .entry mm(\n\t.param .u64 mm_param_0\n)\n.maxntid 256, 1, 1\n\
             .minnctapersm 2\n{"
        ));
        assert!(
            out.contains(".visible .entry small()\n.maxntid 64, 1, 1\n{"),
            "{out}"
        );
        assert!(out.contains(".visible .entry plain()\n{"), "{out}");
        assert!(
            out.contains(".visible .entry capped()\n.maxnreg 40\n{"),
            "{out}"
        );
        assert_eq!(out.matches(".maxntid").count(), 2);
        assert!(out.contains("\t// .globl\tmm\n"));
    }

    #[test]
    fn ptx_without_bounds_is_unchanged() {
        let ptx = ".visible .entry plain()\n{\n\tret;\n}\n";
        assert_eq!(apply(ptx), ptx);
    }
}
