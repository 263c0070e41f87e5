//! Reductions on the CPU backend (`#[reduce]`): chunks folded in parallel, then the chunks'
//! results folded in order, so that a run gives the same value every time, whatever the
//! threads.

use super::tasks::{guarded, message, SharedPtr};

/// Elements per chunk.
const CHUNK: usize = 1 << 15;

/// `xs` folded with `op`, `None` when empty; a panic of `op` becomes the returned message,
/// with its source line.
pub fn reduce<T, F>(xs: &[T], op: F) -> Result<Option<T>, String>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let fold = |c: &[T]| guarded(|| c.iter().copied().reduce(&op));
    let mut parts: Vec<Option<T>> = vec![None; xs.len().div_ceil(CHUNK)];
    let slots = SharedPtr(parts.as_mut_ptr());
    let chunk = |c: usize| {
        let folded = fold(&xs[c * CHUNK..((c + 1) * CHUNK).min(xs.len())])?;
        // SAFETY: slot `c` is this task's alone, in `parts`, which outlives the tasks.
        unsafe { slots.slice(c, 1)[0] = folded };
        Ok(())
    };
    super::tasks::run(parts.len(), &chunk).map_err(message)?;
    let parts: Vec<T> = parts.into_iter().flatten().collect();
    fold(&parts).map_err(message)
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
