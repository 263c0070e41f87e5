//! Reductions on the CPU backend (`#[reduce]`): chunks folded in parallel, then the chunks'
//! results folded in order, so that a run gives the same value every time, whatever the
//! threads.

use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Elements per chunk.
const CHUNK: usize = 1 << 15;

/// `xs` folded with `op`, `None` when empty; a panic of `op` becomes the returned message,
/// with its source line.
pub fn reduce<T, F>(xs: &[T], op: F) -> Result<Option<T>, String>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let fold = |c: &[T]| {
        let _panics = crate::cpu::fault::KernelPanics::begin();
        catch_unwind(AssertUnwindSafe(|| c.iter().copied().reduce(&op)))
            .map_err(crate::cpu::fault::describe_panic)
    };
    let parts: Vec<Option<T>> = xs.par_chunks(CHUNK).map(fold).collect::<Result<_, _>>()?;
    let parts: Vec<T> = parts.into_iter().flatten().collect();
    fold(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fold_in_order_and_empty_is_none() {
        let xs: Vec<u64> = (1..=100_000).collect();
        assert_eq!(reduce(&xs, |a, b| a + b), Ok(Some(5_000_050_000)));
        // Not commutative: the chunks' results are folded in order.
        let first = reduce(&xs, |a, _| a).unwrap();
        assert_eq!(first, Some(1));
        assert_eq!(reduce(&[] as &[u64], |a, b| a + b), Ok(None));
        let msg = reduce(&xs, |a, b| if b == 77_777 { panic!("bad") } else { a + b });
        assert!(msg.unwrap_err().contains("bad"));
    }
}
