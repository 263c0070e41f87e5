//! Faults of a kernel on the CPU backend: they stop the thread by unwinding with a
//! [`KernelFault`] payload (without the panic hook's noise); the launch turns it into an error.

use super::finding::Finding;
use super::launch::tls;
use std::cell::{Cell, RefCell};
use std::sync::Once;

thread_local! {
    /// Whether a panic on this thread is a kernel's (see [`KernelPanics`]).
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
    /// Where the last kernel panic on this thread happened, as `file:line:column`.
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// While this lives, a panic on this thread is a kernel's: the launch returns it as an error
/// with its source line, and the panic hook prints nothing (the hook in place before is kept
/// for every other panic).
pub(crate) struct KernelPanics {
    was: bool,
}

impl KernelPanics {
    /// Panics on this thread are a kernel's until the result is dropped.
    pub(crate) fn begin() -> KernelPanics {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if IN_KERNEL.with(Cell::get) {
                    let at = info.location().map(|l| l.to_string());
                    PANIC_AT.with(|p| *p.borrow_mut() = at);
                } else {
                    previous(info)
                }
            }));
        });
        KernelPanics {
            was: IN_KERNEL.with(|k| k.replace(true)),
        }
    }
}

impl Drop for KernelPanics {
    fn drop(&mut self) {
        IN_KERNEL.with(|k| k.set(self.was));
    }
}

/// ` at file:line:column` of the last kernel panic on this thread, once.
fn panic_location() -> String {
    PANIC_AT
        .with(|p| p.borrow_mut().take())
        .map(|at| format!(" at {at}"))
        .unwrap_or_default()
}

/// The payload a kernel fault unwinds with, and what a failed CPU launch returns.
#[derive(Debug)]
pub enum KernelFault {
    /// A fault described in words, with its block and thread.
    Message(String),
    /// A bug found by checked mode.
    Finding(Box<Finding>),
}

impl KernelFault {
    /// The error a launch of `kernel` returns for this fault.
    pub fn into_error(self, kernel: &'static str) -> crate::Error {
        match self {
            KernelFault::Message(message) => crate::Error::KernelFault { kernel, message },
            KernelFault::Finding(finding) => crate::Error::CheckFailed { kernel, finding },
        }
    }
}

/// Stops the running kernel thread with `message`, adding the kernel, block and thread.
#[cold]
#[inline(never)]
pub fn raise_with_coordinates(message: String) -> ! {
    std::panic::resume_unwind(Box::new(KernelFault::Message(format!(
        "{message} ({})",
        tls::coordinates_text()
    ))))
}

/// Stops the running kernel with `message` as it is.
#[cold]
#[inline(never)]
pub fn raise(message: String) -> ! {
    std::panic::resume_unwind(Box::new(KernelFault::Message(message)))
}

/// Stops the running kernel with a bug checked mode found.
#[cold]
#[inline(never)]
pub fn raise_finding(finding: Finding) -> ! {
    std::panic::resume_unwind(Box::new(KernelFault::Finding(Box::new(finding))))
}

/// Stops the running block with `finding`: as a finding in checked mode, as a fault's message
/// on the fast path.
#[cold]
pub(crate) fn stop(checked: bool, finding: Finding) -> ! {
    if checked {
        raise_finding(finding)
    }
    raise(finding.to_string())
}

/// The text a panic payload carries: `panic!`'s message, when it is a string.
pub(crate) fn payload_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// The message of a caught panic payload, without coordinates.
pub(crate) fn describe_panic(payload: Box<dyn std::any::Any + Send>) -> String {
    let at = panic_location();
    match payload_text(&*payload) {
        Some(s) => format!("panicked{at}: {s}"),
        None => format!("panicked{at} with a non-string payload"),
    }
}

/// The fault of a caught unwinding payload: a kernel fault, or a panic with the coordinates of
/// the thread that panicked.
pub(crate) fn describe(payload: Box<dyn std::any::Any + Send>) -> KernelFault {
    match payload.downcast::<KernelFault>() {
        Ok(fault) => *fault,
        Err(payload) => KernelFault::Message(format!(
            "panicked{}: {} ({})",
            panic_location(),
            payload_text(&*payload).unwrap_or("a panic with a non-string payload"),
            tls::coordinates_text()
        )),
    }
}
