//! The PTX modules embedded in the program, gathered at link time, and whether a GPU can run
//! them.

use super::link::{Code, Pieces};
use std::sync::Mutex;

/// The PTX modules embedded in the program: one entry per kernel whose crate's `build.rs`
/// compiled PTX (the `#[kernel]` macro adds them). `Device::default()` picks a GPU only when
/// there is PTX to run on it.
#[linkme::distributed_slice]
pub static PTX_MODULES: [&'static str];

/// A module's text as `#[kernel]` embeds it, `include_bytes!` of the copy of the module file
/// that `kernel-build` writes with a NUL after the text, less that NUL. The NUL makes the bytes
/// a C string, which the compiler places in a section of mergeable strings, so that the linker
/// keeps one copy of each module however many code units and crates of the program embed it
/// (one per kernel's code unit, and every binary of a package the library's). `include_bytes!`
/// costs the compiler no escaping of the text, which `include_str!` did for every kernel: half
/// of a debug build of a crate of 150 kernels.
///
/// ```
/// use kernel_runtime::__rt::module_text;
///
/// // SAFETY: both are UTF-8.
/// const TEXT: &str = unsafe { module_text(b".version 8.0\n\0") };
/// assert_eq!(TEXT, ".version 8.0\n");
/// assert_eq!(unsafe { module_text(b"no NUL") }, "no NUL");
/// ```
///
/// # Safety
/// `embedded` must be UTF-8: the macro embeds only a file it has read as such.
pub const unsafe fn module_text(embedded: &'static [u8]) -> &'static str {
    let text = match embedded {
        [text @ .., 0] => text,
        _ => embedded,
    };
    // SAFETY: the caller's; and a UTF-8 text less a final NUL, a character of its own, is UTF-8
    // still (checking it here would cost the compiler a pass over the whole text per kernel).
    unsafe { core::str::from_utf8_unchecked(text) }
}

/// The program's distinct modules: [`PTX_MODULES`] holds one entry per kernel, each kernel's
/// copy of its crate's module text.
pub(crate) fn modules() -> Vec<&'static str> {
    let mut seen: Vec<&'static str> = Vec::new();
    for &text in PTX_MODULES.iter() {
        let same = |s: &&str| s.len() == text.len() && (std::ptr::eq(*s, text) || *s == text);
        if !seen.iter().any(same) {
            seen.push(text);
        }
    }
    seen
}

/// Why a GPU of compute capability `major.minor` runs none of the program's modules, where it
/// runs none: their PTX is for newer GPUs, and no cubin or variant is for it. Read from the
/// modules once per compute capability: `Device::default()` asks it at every call.
pub(crate) fn runs_none(major: u32, minor: u32) -> Option<String> {
    type Seen = Vec<((u32, u32), Option<String>)>;
    static SEEN: Mutex<Seen> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, why)) = seen.iter().find(|(cc, _)| *cc == (major, minor)) {
        return why.clone();
    }
    let why = read_runs_none(major, minor);
    seen.push(((major, minor), why.clone()));
    why
}

/// [`runs_none`], read from the modules.
fn read_runs_none(major: u32, minor: u32) -> Option<String> {
    let mut targets = Vec::new();
    for text in modules() {
        match Pieces::of(text).code_for(major, minor) {
            Code::TooNew(t) => targets.push(t),
            _ => return None,
        }
    }
    let newest = targets.into_iter().max()?;
    Some(format!(
        "the program's PTX is for sm_{newest} and this GPU is sm_{major}{minor}: build it with \
         KERNEL_PTX_ARCH=sm_{major}{minor} to run the kernels on this GPU"
    ))
}
