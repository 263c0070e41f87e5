//! Faults of a kernel on the CPU backend: they stop the thread by unwinding with a
//! [`KernelFault`] payload (without the panic hook's noise); the launch turns it into an error.

use super::finding::Finding;
use super::tls;

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

/// The message of a caught panic payload, without coordinates.
pub(crate) fn describe_panic(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked with a non-string payload".to_string()
    }
}

/// The fault of a caught unwinding payload: a kernel fault, or a panic with the coordinates of
/// the thread that panicked.
pub(crate) fn describe(payload: Box<dyn std::any::Any + Send>) -> KernelFault {
    match payload.downcast::<KernelFault>() {
        Ok(fault) => *fault,
        Err(payload) => {
            let msg = if let Some(s) = payload.downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "a panic with a non-string payload".to_string()
            };
            KernelFault::Message(format!("panicked: {msg} ({})", tls::coordinates_text()))
        }
    }
}
