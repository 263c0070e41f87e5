//! The launch-overhead probe: a kernel with three array parameters that does nothing.

use kernel_runtime::prelude::*;

/// Does nothing: timing many launches of it measures what a launch costs.
#[kernel]
pub fn empty3(a: &[f32], b: &[f32], c: &mut [f32]) {
    let _ = (a.len(), b.len(), c.len());
}
