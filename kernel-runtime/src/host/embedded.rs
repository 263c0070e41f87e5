//! The PTX modules embedded in the program, gathered at link time, and whether a GPU can run
//! them.

use super::link::{Code, Pieces};
use std::sync::Mutex;

/// The PTX modules embedded in the program: one entry per kernel whose crate's `build.rs`
/// compiled PTX (the `#[kernel]` macro adds them). `Device::default()` picks a GPU only when
/// there is PTX to run on it.
#[linkme::distributed_slice]
pub static PTX_MODULES: [&'static str];

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
