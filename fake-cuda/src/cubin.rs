//! What the driver reads from a cubin, the ELF file of machine code that ptxas writes: the GPU
//! it is for (the header's flags), each kernel's parameters (the `KPARAM_INFO` attributes of
//! its `.nv.info.NAME` section) and static shared memory (the size of `.nv.shared.NAME`, less
//! the 1 KiB a block of a GPU from sm_80 on keeps for the system there), and
//! the module's variables (its object symbols in `.nv.global*` and `.nv.constant*` sections).
//! The result is the PTX parser's [`Module`], so the fake checks launches of either alike.
//!
//! Written by hand: the layout of NVIDIA's ELF attributes is documented by no crate, and the
//! fake needs only these few fields. Parameters read from a cubin are not known to be pointers.

use crate::ptx::{Entry, Module, Param};
use std::collections::HashMap;

/// `\x7fELF`.
const MAGIC: &[u8] = b"\x7fELF";
/// An attribute with a value of its own length (`EIFMT_SVAL`).
const SVAL: u8 = 4;
/// A kernel parameter's ordinal, offset and size (`EIATTR_KPARAM_INFO`).
const KPARAM_INFO: u8 = 0x17;
/// `SHT_SYMTAB`.
const SYMTAB: u32 = 2;
/// `SHT_NOBITS`: a section with a size and no bytes in the file.
const NOBITS: u32 = 8;
/// The shared memory of each block that GPUs from sm_80 on keep for the system, which ptxas
/// counts in each kernel's `.nv.shared.NAME`.
const SYSTEM_SHARED: usize = 1024;

/// Whether `image` starts as an ELF file.
pub fn is_elf(image: &[u8]) -> bool {
    image.starts_with(MAGIC)
}

/// The length of the ELF image whose first bytes `read(n)` gives: the end of its section
/// header table or of its last section, whichever is later.
pub fn image_len(read: impl Fn(usize) -> Vec<u8>) -> Result<usize, String> {
    let header = read(64);
    let (shoff, shnum) = (
        u64_at(&header, 0x28)? as usize,
        u16_at(&header, 0x3c)? as usize,
    );
    let table_end = shoff + shnum * 64;
    let head = read(table_end);
    let mut sections = (0..shnum).map(|i| section(&head, shoff + i * 64));
    sections.try_fold(table_end, |end, s| {
        let s = s?;
        Ok(if s.kind == NOBITS {
            end
        } else {
            end.max(s.offset + s.size)
        })
    })
}

/// Parses a cubin.
pub fn parse(image: &[u8]) -> Result<Module, String> {
    if !is_elf(image) || image.get(4) != Some(&2) {
        return Err("not a 64-bit ELF file".into());
    }
    let flags = u32_at(image, 0x30)?;
    // ABI version 8 (CUDA 13) moved the GPU's number from the low byte to the next one.
    let target = match image.get(8) {
        Some(&abi) if abi >= 8 => (flags >> 8) & 0xff,
        _ => flags & 0xff,
    };
    let (shoff, shnum) = (u64_at(image, 0x28)? as usize, u16_at(image, 0x3c)? as usize);
    let shstrndx = u16_at(image, 0x3e)? as usize;
    let sections: Vec<Section> = (0..shnum)
        .map(|i| section(image, shoff + i * 64))
        .collect::<Result<_, _>>()?;
    let names = sections.get(shstrndx).ok_or("no section name table")?;
    let name_of = |s: &Section| string(image, names.offset + s.name as usize);
    let mut entries = HashMap::new();
    let mut shared = HashMap::new();
    for s in &sections {
        let name = name_of(s)?;
        if let Some(kernel) = name.strip_prefix(".nv.info.") {
            let params = kernel_params(bytes(image, s)?)?;
            entries.insert(kernel.to_string(), params);
        } else if let Some(kernel) = name.strip_prefix(".nv.shared.") {
            shared.insert(kernel.to_string(), s.size);
        }
    }
    let reserved = if target >= 80 { SYSTEM_SHARED } else { 0 };
    let entries = entries
        .into_iter()
        .map(|(name, params)| {
            let static_shared = shared.get(&name).map_or(0, |s| s.saturating_sub(reserved));
            (
                name,
                Entry {
                    params,
                    static_shared,
                    max_threads: None,
                    max_registers: None,
                },
            )
        })
        .collect();
    Ok(Module {
        version: 0,
        target,
        specific: false,
        entries,
        variables: variables(image, &sections, &name_of)?,
    })
}

/// A kernel's parameters, in order, from the attributes of its `.nv.info.NAME` section.
fn kernel_params(info: &[u8]) -> Result<Vec<Param>, String> {
    let mut params = Vec::new();
    let mut at = 0;
    while at + 4 <= info.len() {
        let (format, attribute) = (info[at], info[at + 1]);
        let len = match format {
            SVAL => u16_at(info, at + 2)? as usize,
            _ => 0,
        };
        let value = info
            .get(at + 4..at + 4 + len)
            .ok_or("an attribute runs past its section")?;
        if format == SVAL && attribute == KPARAM_INFO && len >= 12 {
            let ordinal = u16_at(value, 4)? as usize;
            let bytes = ((u32_at(value, 8)? >> 18) & 0x3fff) as usize;
            params.push((
                ordinal,
                Param {
                    bytes,
                    pointer: false,
                },
            ));
        }
        at += 4 + len;
    }
    params.sort_by_key(|&(ordinal, _)| ordinal);
    Ok(params.into_iter().map(|(_, p)| p).collect())
}

/// The module's variables and their sizes: object symbols in global or constant sections.
fn variables(
    image: &[u8],
    sections: &[Section],
    name_of: &dyn Fn(&Section) -> Result<String, String>,
) -> Result<HashMap<String, usize>, String> {
    let mut variables = HashMap::new();
    let Some(symtab) = sections.iter().find(|s| s.kind == SYMTAB) else {
        return Ok(variables);
    };
    let strings = sections
        .get(symtab.link as usize)
        .ok_or("no symbol name table")?;
    for symbol in bytes(image, symtab)?.chunks_exact(24) {
        let (info, index) = (symbol[4], u16_at(symbol, 6)? as usize);
        let size = u64_at(symbol, 16)? as usize;
        // Objects (type 1), of any binding, as PTX's variables are visible or not.
        if info & 0xf != 1 || size == 0 {
            continue;
        }
        let Some(home) = sections.get(index) else {
            continue;
        };
        let home = name_of(home)?;
        if home.starts_with(".nv.global") || home.starts_with(".nv.constant") {
            let name = string(image, strings.offset + u32_at(symbol, 0)? as usize)?;
            variables.insert(name, size);
        }
    }
    Ok(variables)
}

/// What the fake reads of a section header.
struct Section {
    name: u32,
    kind: u32,
    offset: usize,
    size: usize,
    link: u32,
}

fn section(image: &[u8], at: usize) -> Result<Section, String> {
    Ok(Section {
        name: u32_at(image, at)?,
        kind: u32_at(image, at + 4)?,
        offset: u64_at(image, at + 24)? as usize,
        size: u64_at(image, at + 32)? as usize,
        link: u32_at(image, at + 40)?,
    })
}

fn bytes<'a>(image: &'a [u8], s: &Section) -> Result<&'a [u8], String> {
    image
        .get(s.offset..s.offset + s.size)
        .ok_or_else(|| "a section runs past the file".into())
}

fn string(image: &[u8], at: usize) -> Result<String, String> {
    let tail = image.get(at..).ok_or("a name past the file")?;
    let end = tail
        .iter()
        .position(|&b| b == 0)
        .ok_or("an unterminated name")?;
    Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
}

fn field<const N: usize>(image: &[u8], at: usize) -> Result<[u8; N], String> {
    image
        .get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("the file ends before byte {}", at + N))
}

fn u16_at(image: &[u8], at: usize) -> Result<u16, String> {
    field(image, at).map(u16::from_le_bytes)
}

fn u32_at(image: &[u8], at: usize) -> Result<u32, String> {
    field(image, at).map(u32::from_le_bytes)
}

fn u64_at(image: &[u8], at: usize) -> Result<u64, String> {
    field(image, at).map(u64::from_le_bytes)
}
