//! Faults of a kernel on the CPU backend: they stop the thread by unwinding with a
//! [`KernelFault`] payload (without the panic hook's noise); the launch turns it into an error.

use super::tls;

/// The payload a kernel fault unwinds with.
#[derive(Debug)]
pub struct KernelFault(pub String);

/// Stops the running kernel thread with `message`, adding the kernel, block and thread.
#[cold]
#[inline(never)]
pub fn raise_with_coordinates(message: String) -> ! {
    std::panic::resume_unwind(Box::new(KernelFault(format!(
        "{message} ({})",
        tls::coordinates_text()
    ))))
}

/// Stops the running kernel with `message` as it is.
#[cold]
#[inline(never)]
pub fn raise(message: String) -> ! {
    std::panic::resume_unwind(Box::new(KernelFault(message)))
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

/// The message of a caught unwinding payload: a kernel fault's, or a panic's with the
/// coordinates of the thread that panicked.
pub(crate) fn describe(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(f) = payload.downcast_ref::<KernelFault>() {
        return f.0.clone();
    }
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    };
    format!("panicked: {msg} ({})", tls::coordinates_text())
}
