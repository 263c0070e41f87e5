//! [`GpuParams`]: what a GPU launch passes, a pointer per PTX parameter, and how it uses the
//! arrays among them, by which the launch is ordered with other streams' work ([`order`]).
//!
//! [`order`]: super::order

use super::order::{Access, Span, Use};
use core::ffi::c_void;

/// A GPU launch's parameters (see the module doc). They point into the arguments, which the
/// lifetime keeps borrowed until the launch is queued.
pub struct GpuParams<'a> {
    pub(crate) pointers: Vec<*mut c_void>,
    pub(crate) uses: Vec<Use<'a>>,
}

impl<'a> GpuParams<'a> {
    /// Room for `count` parameters.
    pub fn with_capacity(count: usize) -> Self {
        GpuParams {
            pointers: Vec::with_capacity(count),
            uses: Vec::new(),
        }
    }

    /// Appends a parameter: the value `value` points at.
    pub fn push<T>(&mut self, value: &'a T) {
        self.pointers.push(value as *const T as *mut c_void);
    }

    /// Records that the launch uses the bytes `span` of an array by `access`.
    pub(crate) fn uses(&mut self, span: Span<'a>, access: Access) {
        self.uses.push((span, access));
    }
}
