//! A kernel's PTX cut out of its crate's module, as Numba's `kernel.inspect_asm()` gives a
//! kernel's PTX: the module's header, then every item that the kernel's entries use, directly
//! or through one another (the functions they call, the variables and shared memory they name,
//! the prototypes of foreign functions), in the module's order, so that the listing is a module
//! `ptxas` assembles by itself.
//!
//! Written here, as no crate reads PTX. The top level of a module is a list of items: a header
//! directive that ends with its line (`.version`, `.target`, `.address_size`, `.file`), a
//! declaration that ends with `;`, or a definition that ends with the brace closing its body
//! (or with the `;` after an initializer's braces). An item is named by the identifier it
//! declares, and uses each other item whose name it holds.

use std::collections::HashMap;

/// The header directives, each a line of its own.
const HEADER: [&str; 4] = [".version", ".target", ".address_size", ".file"];

/// One top-level item of a module: its text and the identifier it declares (none for a header
/// directive or a section).
#[derive(Debug, PartialEq, Eq)]
struct Item<'a> {
    text: &'a str,
    name: Option<&'a str>,
    header: bool,
}

/// The listing of the entries `entries` of the PTX module `module` (its own text, without the
/// pieces linked after it); `None` where the module has no entry of one of those names.
pub(crate) fn listing(module: &str, entries: &[&str]) -> Option<String> {
    let items = items(module);
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, item) in items.iter().enumerate() {
        if let Some(name) = item.name {
            by_name.entry(name).or_default().push(k);
        }
    }
    let mut used = vec![false; items.len()];
    let mut todo = Vec::new();
    for entry in entries {
        let found = by_name.get(entry)?;
        let k = *found.iter().find(|&&k| is_entry(items[k].text))?;
        todo.push(k);
    }
    while let Some(k) = todo.pop() {
        if std::mem::replace(&mut used[k], true) {
            continue;
        }
        for name in references(items[k].text) {
            if Some(name) == items[k].name {
                continue;
            }
            todo.extend(by_name.get(name).into_iter().flatten().copied());
        }
    }
    let header = items.iter().filter(|i| i.header).map(|i| i.text);
    let body = items
        .iter()
        .zip(&used)
        .filter(|(_, &u)| u)
        .map(|(i, _)| i.text);
    let mut text = header.collect::<Vec<_>>().join("\n");
    for item in body {
        text.push_str("\n\n");
        text.push_str(item);
    }
    text.push('\n');
    Some(text)
}

/// Whether an item is a kernel's entry.
fn is_entry(text: &str) -> bool {
    keyword_end(head(text), ".entry").is_some()
}

/// The module's top-level items, comments between them left out.
fn items(module: &str) -> Vec<Item<'_>> {
    let bytes = module.as_bytes();
    let mut items = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            c if c.is_ascii_whitespace() => at += 1,
            b'/' if bytes.get(at + 1) == Some(&b'/') => at = line_end(module, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at = module[at + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| at + 2 + e + 2)
            }
            _ => {
                let header = HEADER.iter().any(|h| module[at..].starts_with(h));
                let end = if header {
                    line_end(module, at)
                } else {
                    item_end(module, at)
                };
                let text = module[at..end].trim_end();
                let name = (!header).then(|| declared(text)).flatten();
                items.push(Item { text, name, header });
                at = end;
            }
        }
    }
    items
}

/// Where the line holding `at` ends (after its newline).
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |e| at + e + 1)
}

/// Where the item starting at `start` ends: after its `;` outside braces, or after the brace
/// that closes its body (with a `;` that follows it, for an initializer).
fn item_end(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = start;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => at = text[at + 1..].find('"').map_or(bytes.len(), |e| at + 1 + e),
            b'/' if bytes.get(at + 1) == Some(&b'/') => at = line_end(text, at) - 1,
            b'{' => depth += 1,
            b'}' if depth == 1 => {
                let rest = text[at + 1..].trim_start();
                return match rest.strip_prefix(';') {
                    Some(after) => text.len() - after.len(),
                    None => at + 1,
                };
            }
            b'}' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return at + 1,
            _ => {}
        }
        at += 1;
    }
    bytes.len()
}

/// An item's text before its body or initializer.
fn head(text: &str) -> &str {
    let end = text.find(['{', '=']).unwrap_or(text.len());
    &text[..end]
}

/// The identifier an item declares: a function's or entry's name (after its return
/// parameters), or a variable's (the last identifier before its extent, initializer or `;`).
fn declared(text: &str) -> Option<&str> {
    let head = head(text);
    if let Some(at) = [".entry", ".func"]
        .iter()
        .find_map(|k| keyword_end(head, k))
    {
        let mut rest = head[at..].trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
        return identifiers(rest).next();
    }
    let end = head.find(['[', ';']).unwrap_or(head.len());
    identifiers(&head[..end]).last()
}

/// Where the keyword `keyword` ends in `head`, where it stands as a word of its own.
fn keyword_end(head: &str, keyword: &str) -> Option<usize> {
    head.match_indices(keyword)
        .map(|(at, _)| at + keyword.len())
        .find(|&end| head[end..].starts_with(|c: char| c.is_whitespace() || c == '('))
}

/// The identifiers of a text, as PTX spells them (a letter, `_`, `$` or `%` first, then
/// letters, digits, `_` and `$`), outside comments and strings; directives (`.func`) and
/// numbers are not identifiers.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    identifiers_at(text).map(|(_, id)| id)
}

/// The identifiers an item's text names other items by: its identifiers but instructions'
/// names, which are the first word of their line (after a predicate, `@%p1`) or go on with
/// their modifiers (`add.s32`), so that a kernel named `add` is not taken for an addition.
fn references(text: &str) -> impl Iterator<Item = &str> {
    identifiers_at(text).filter_map(move |(at, id)| {
        let after = text[at + id.len()..].chars().next();
        let line = &text[text[..at].rfind('\n').map_or(0, |n| n + 1)..at];
        let prefix = line.trim();
        let first = prefix.is_empty() || (prefix.starts_with('@') && !prefix.contains(' '));
        let instruction =
            after == Some('.') || (first && after.is_none_or(|c| c == ';' || c.is_whitespace()));
        (!instruction).then_some(id)
    })
}

/// [`identifiers`] with where each starts.
fn identifiers_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$');
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let (c, start) = (bytes[at], at);
            if c == b'"' {
                at = text[at + 1..].find('"').map_or(bytes.len(), |e| at + e + 2);
            } else if c == b'/' && bytes.get(at + 1) == Some(&b'/') {
                at = line_end(text, at);
            } else if c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%') {
                at += 1;
                while at < bytes.len() && word(bytes[at]) {
                    at += 1;
                }
                if start == 0 || bytes[start - 1] != b'.' {
                    return Some((start, &text[start..at]));
                }
            } else if c.is_ascii_digit() {
                while at < bytes.len() && word(bytes[at]) {
                    at += 1;
                }
            } else {
                at += 1;
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.0\n.target sm_80\n.address_size 64\n\n\
        .extern .shared .align 16 .b8 __kernel_shared[];\n\n\
        \t// .globl\tadd\n\
        .func _panic\n()\n.noreturn;\n\
        .func  (.param .b64 func_retval0) _sin\n(\n\t.param .b64 _sin_param_0\n)\n;\n\
        .extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n;\n\
        .global .align 8 .b8 _table[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};\n\
        .global .align 1 .b8 $str[4] = {104, 105, 10};\n\
        .visible .entry add(\n\t.param .u64 add_param_0\n)\n{\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [add_param_0];\n\tcall.uni _panic, ();\n\tret;\n}\n\
        \t// .globl\tsine\n\
        .visible .entry sine(\n\t.param .u64 sine_param_0\n)\n.maxntid 128, 1, 1\n{\n\t.reg .b64 %rd<3>;\n\tmov.u64 %rd1, _table;\n\
        \tmov.u64 %rd2, $str;\n\t{ // callseq 0\n\t.param .b64 param0;\n\tcall.uni (retval0), _sin, (param0);\n\t} // callseq 0\n\
        \tcall.uni (retval0), vprintf, (param0, param1);\n\tst.shared.u32 [__kernel_shared], %r1;\n\tret;\n}\n\
        .func  (.param .b64 func_retval0) _sin(\n\t.param .b64 _sin_param_0\n)\n{\n\tmov.u64 %rd1, _table;\n\tret;\n}\n\
        .func _panic()\n.noreturn\n{\n\ttrap;\n}\n";

    fn names(text: &str) -> Vec<Option<&str>> {
        items(text).iter().map(|i| i.name).collect()
    }

    #[test]
    fn a_module_is_read_as_its_items_with_their_names() {
        assert_eq!(
            names(MODULE),
            [
                None,
                None,
                None,
                Some("__kernel_shared"),
                Some("_panic"),
                Some("_sin"),
                Some("vprintf"),
                Some("_table"),
                Some("$str"),
                Some("add"),
                Some("sine"),
                Some("_sin"),
                Some("_panic"),
            ]
        );
        let all = items(MODULE);
        assert!(all[..3].iter().all(|i| i.header));
        assert!(all[7].text.ends_with("16};"), "{}", all[7].text);
        assert!(all[10].text.starts_with(".visible .entry sine(") && all[10].text.ends_with('}'));
    }

    #[test]
    fn an_entry_comes_with_what_it_uses_and_nothing_else() {
        let add = listing(MODULE, &["add"]).unwrap();
        assert!(
            add.starts_with(".version 8.0\n.target sm_80\n.address_size 64\n\n"),
            "{add}"
        );
        // Its call of `_panic`: the prototype and the definition, in the module's order.
        let panic_at = add.find(".func _panic\n()").unwrap();
        assert!(panic_at < add.find(".entry add(").unwrap());
        assert!(add.trim_end().ends_with("trap;\n}"), "{add}");
        for other in [
            ".entry sine",
            "_sin",
            "vprintf",
            "_table",
            "__kernel_shared",
            "globl",
        ] {
            assert!(!add.contains(other), "{other} in {add}");
        }
    }

    #[test]
    fn what_an_entry_uses_through_a_function_is_listed_too() {
        let sine = listing(MODULE, &["sine"]).unwrap();
        for used in [
            "__kernel_shared[]",
            "_sin\n(",
            "_sin(\n",
            ".extern .func",
            "_table[16]",
            "$str[4]",
            ".maxntid 128",
        ] {
            assert!(sine.contains(used), "{used} not in {sine}");
        }
        assert!(
            !sine.contains("_panic") && !sine.contains(".entry add"),
            "{sine}"
        );
        let both = listing(MODULE, &["sine", "add"]).unwrap();
        assert!(both.find(".entry add").unwrap() < both.find(".entry sine").unwrap());
    }

    #[test]
    fn a_missing_entry_or_a_function_of_its_name_is_none() {
        assert_eq!(listing(MODULE, &["mul"]), None);
        assert_eq!(listing(MODULE, &["_sin"]), None);
    }

    #[test]
    fn an_instruction_is_no_reference_to_a_kernel_of_its_name() {
        let body = "{\n\tadd.s32 %r1, %r2, 1;\n\t@%p1 bra $L__BB0_2;\n\tcall.uni (retval0),\n\tadd,\n\t(\n\tparam0\n\t);\n\tret;\n}";
        let found: Vec<_> = references(body).collect();
        assert_eq!(found, ["%r1", "%r2", "$L__BB0_2", "retval0", "add"]);
    }

    #[test]
    fn directives_numbers_and_strings_are_not_identifiers() {
        let found: Vec<_> =
            identifiers(".file 1 \"/src/a.rs\"\n\tmov.u64 %rd1, x$1; // y\n\tadd.s32 0x1f, b_2;")
                .collect();
        assert_eq!(found, ["mov", "%rd1", "x$1", "add", "b_2"]);
    }
}
