//! One model of a kernel: its options and function (`parse`), its type parameters and instances
//! (`generic`), its parameters and their forms on each target (`params`), its body with the
//! runtime's names resolved (`rewrite`), all checked (`validate`); and the device body of a
//! `fastmath` one (`fastmath`).

pub mod fastmath;
pub mod generic;
pub mod params;
pub mod parse;
pub mod rewrite;
pub mod validate;
